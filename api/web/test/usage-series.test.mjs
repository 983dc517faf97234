import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const u = await load('src/portal/usageSeries.ts');

const row = (key, allocatedSeconds) => ({ key, allocatedSeconds });

test('topGroups: the most allocated first, ties by key, the rest as one Other', () => {
  const totals = [row('c', '10'), row('a', '30'), row('b', '30'), row('d', '5'), row('e', '0.000001')];
  assert.deepEqual(u.topGroups(totals, 2), [{ key: 'a' }, { key: 'b' }, { key: null }]);
  assert.deepEqual(u.topGroups(totals, 5), [{ key: 'a' }, { key: 'b' }, { key: 'c' }, { key: 'd' }, { key: 'e' }]);
});

test('topGroups: groups with nothing allocated are left out, and make no Other', () => {
  assert.deepEqual(u.topGroups([row('x', '0'), row('y', '7200'), row('z', '0.000')], 1), [{ key: 'y' }]);
  assert.deepEqual(u.topGroups([]), []);
});

test('topGroups: compares exact decimals, not floats', () => {
  // As floats both are 9007199254740992; as decimals the second is larger.
  const totals = [row('small', '9007199254740992'), row('large', '9007199254740993')];
  assert.deepEqual(u.topGroups(totals, 1), [{ key: 'large' }, { key: null }]);
  assert.deepEqual(u.topGroups([row('p', '0.1'), row('q', '0.10000000000000001')], 1)[0], { key: 'q' });
});

test('topGroups: eight by default', () => {
  const totals = Array.from({ length: 12 }, (_, i) => row(`g${String(i).padStart(2, '0')}`, String(100 - i)));
  const groups = u.topGroups(totals);
  assert.equal(groups.length, 9);
  assert.deepEqual(groups[7], { key: 'g07' });
  assert.deepEqual(groups[8], { key: null });
});

test('stackByDay: each group per day, Other the exact sum of the rest of that day', () => {
  const days = ['2026-12-01', '2026-12-02', '2026-12-03'];
  const rows = [
    { keys: ['2026-12-01', 'a'], allocatedSeconds: '3600' },
    { keys: ['2026-12-01', 'x'], allocatedSeconds: '0.1' },
    { keys: ['2026-12-01', 'y'], allocatedSeconds: '0.2' },
    { keys: ['2026-12-02', 'y'], allocatedSeconds: '5' },
    { keys: ['2026-12-03', 'a'], allocatedSeconds: '7' },
  ];
  const stack = u.stackByDay(rows, days, [{ key: 'a' }, { key: null }]);
  assert.deepEqual(stack.groups, [{ key: 'a' }, { key: null }]);
  assert.deepEqual(stack.values, [
    ['3600', '0', '7'],
    ['0.3', '5', '0'],
  ]);
});

test('stackByDay: an unlabeled group (empty key) is a group like any other', () => {
  const rows = [
    { keys: ['2026-12-01', ''], allocatedSeconds: '10' },
    { keys: ['2026-12-01', 'team=ml'], allocatedSeconds: '20' },
  ];
  const stack = u.stackByDay(rows, ['2026-12-01'], [{ key: 'team=ml' }, { key: '' }]);
  assert.deepEqual(stack.values, [['20'], ['10']]);
});

test('labelSet: a label key as shown, unlabeled for none', () => {
  assert.equal(u.labelSet(''), 'unlabeled');
  assert.equal(u.labelSet('env=prod,team=ml'), 'env=prod, team=ml');
});

test('lastHours: whole UTC hours, the current one last, keyed as the API keys them', () => {
  const now = Date.parse('2026-12-06T14:25:31Z');
  const h = u.lastHours(now, 48);
  assert.equal(h.to, '2026-12-06T15:00:00.000Z');
  assert.equal(h.from, '2026-12-04T15:00:00.000Z');
  assert.equal(h.keys.length, 48);
  assert.equal(h.keys[0], '2026-12-04T15:00:00Z');
  assert.equal(h.keys[47], '2026-12-06T14:00:00Z');
  assert.equal(new Set(h.keys).size, 48);
  // On the hour, that hour is the current one.
  assert.equal(u.lastHours(Date.parse('2026-12-06T00:00:00Z'), 2).keys.join(' '), '2026-12-05T23:00:00Z 2026-12-06T00:00:00Z');
});

test('chargesBySku: amounts summed exactly per SKU, largest first, no-SKU lines last', () => {
  const lines = [
    { sku: 'h100', amount: '0.1' },
    { sku: 'a100', amount: '12.50' },
    { sku: 'h100', amount: '0.2' },
    { sku: null, amount: '-5.00' },
    { sku: 'h100', amount: '100.000000001' },
    { sku: 'h100', amount: '-0.3' },
    { sku: 'l4', amount: '12.50' },
  ];
  assert.deepEqual(u.chargesBySku(lines), [
    { sku: 'h100', amount: '100.000000001' },
    { sku: 'a100', amount: '12.50' },
    { sku: 'l4', amount: '12.50' },
    { sku: null, amount: '-5.00' },
  ]);
  assert.deepEqual(u.chargesBySku([]), []);
});

const costRow = (key, cost) => ({ key, allocatedSeconds: '3600', cost });

test('topGroups by cost: the most first, ties by key, groups costing nothing left out', () => {
  const totals = [costRow('c', '10.5'), costRow('a', '30'), costRow('b', '30.000000'), costRow('d', '0.000417'), costRow('z', '0.000000')];
  assert.deepEqual(u.topGroups(totals, 2, 'cost'), [{ key: 'a' }, { key: 'b' }, { key: null }]);
  assert.deepEqual(u.topGroups(totals, 8, 'cost'), [{ key: 'a' }, { key: 'b' }, { key: 'c' }, { key: 'd' }]);
  // The same rows by hours: all allocated alike, so by key.
  assert.deepEqual(u.topGroups(totals, 2), [{ key: 'a' }, { key: 'b' }, { key: null }]);
  assert.deepEqual(u.topGroups(totals, 8).length, 5);
});

test('topGroups by cost: a credit is chosen by its size and ordered last', () => {
  // "x" only had SLA credit: -40 outweighs 10.5 and 5, so it is shown, below the others.
  const totals = [costRow('a', '30'), costRow('c', '10.5'), costRow('x', '-40'), costRow('d', '5'), costRow('e', '-0.5')];
  assert.deepEqual(u.topGroups(totals, 3, 'cost'), [{ key: 'a' }, { key: 'c' }, { key: 'x' }, { key: null }]);
  assert.deepEqual(u.topGroups(totals, 8, 'cost'), [{ key: 'a' }, { key: 'c' }, { key: 'd' }, { key: 'e' }, { key: 'x' }]);
  // Exact decimals, not floats.
  assert.deepEqual(u.topGroups([costRow('p', '-0.1'), costRow('q', '0.10000000000000001')], 1, 'cost'), [{ key: 'q' }, { key: null }]);
});

test('otherCount: the groups with any of the measure not shown', () => {
  const totals = [costRow('a', '30'), costRow('b', '0'), costRow('c', '-1'), costRow('d', '2')];
  assert.equal(u.otherCount(totals, [{ key: 'a' }, { key: null }], 'cost'), 2);
  assert.equal(u.otherCount(totals, [{ key: 'a' }, { key: 'b' }, { key: 'c' }, { key: 'd' }], 'cost'), 0);
  // By hours every one of them has some.
  assert.equal(u.otherCount(totals, [{ key: 'a' }, { key: null }]), 3);
  assert.equal(u.otherCount([{ key: 'n', allocatedSeconds: '0' }], []), 0);
});

test('stackByDay by cost: each group per day, Other the exact sum with credits netted', () => {
  const days = ['2026-12-01', '2026-12-02'];
  const rows = [
    { keys: ['2026-12-01', 'a'], allocatedSeconds: '3600', cost: '2.5' },
    { keys: ['2026-12-01', 'x'], allocatedSeconds: '60', cost: '0.1' },
    { keys: ['2026-12-01', 'y'], allocatedSeconds: '0', cost: '-0.3' },
    { keys: ['2026-12-02', 'x'], allocatedSeconds: '1', cost: '0.000417' },
    { keys: ['2026-12-02', 'y'], allocatedSeconds: '1', cost: '0.000001' },
    { keys: ['2026-12-02', 'a'], allocatedSeconds: '0', cost: '-1.5' },
  ];
  const stack = u.stackByDay(rows, days, [{ key: 'a' }, { key: null }], 'cost');
  assert.deepEqual(stack.values, [
    ['2.5', '-1.5'],
    ['-0.2', '0.000418'],
  ]);
  // The same rows by hours, unchanged.
  assert.deepEqual(u.stackByDay(rows, days, [{ key: 'a' }, { key: null }]).values, [
    ['3600', '0'],
    ['60', '2'],
  ]);
});
