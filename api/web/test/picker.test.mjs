import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const p = await load('src/lib/picker.ts');
const l = await load('src/console/ledgerOwner.ts');

test('search term: trimmed, empty is no filter, at most the limit in code points', () => {
  assert.equal(p.searchTerm('  acme '), 'acme');
  assert.equal(p.searchTerm(''), null);
  assert.equal(p.searchTerm('   '), null);
  assert.equal(p.searchTerm('x'.repeat(150)), 'x'.repeat(100));
  assert.equal(p.searchTerm('😀'.repeat(101)), '😀'.repeat(100));
  assert.equal(p.searchTerm('abcdef', 3), 'abc');
  assert.equal(p.searchTerm('ab cd', 3), 'ab');
});

test('active option: down from none is the first, up the last; both wrap', () => {
  assert.equal(p.moveActive(-1, 3, 'ArrowDown'), 0);
  assert.equal(p.moveActive(0, 3, 'ArrowDown'), 1);
  assert.equal(p.moveActive(2, 3, 'ArrowDown'), 0);
  assert.equal(p.moveActive(-1, 3, 'ArrowUp'), 2);
  assert.equal(p.moveActive(0, 3, 'ArrowUp'), 2);
  assert.equal(p.moveActive(2, 3, 'ArrowUp'), 1);
  assert.equal(p.moveActive(-1, 0, 'ArrowDown'), -1);
  assert.equal(p.moveActive(5, 0, 'ArrowUp'), -1);
  // An index left over from longer matches.
  assert.equal(p.moveActive(7, 3, 'ArrowDown'), 0);
  assert.equal(p.moveActive(7, 3, 'ArrowUp'), 2);
});

test('picker status: searching, none, how many, more than shown', () => {
  assert.equal(p.pickerStatus({ pending: true, count: 4, more: false, noun: 'tenant' }), 'Searching…');
  assert.equal(p.pickerStatus({ pending: false, count: 0, more: false, noun: 'tenant' }), 'No tenant matches');
  assert.equal(p.pickerStatus({ pending: false, count: 1, more: false, noun: 'tenant' }), '1 match');
  assert.equal(p.pickerStatus({ pending: false, count: 7, more: false, noun: 'tenant' }), '7 matches');
  assert.equal(p.pickerStatus({ pending: false, count: 20, more: true, noun: 'tenant' }), 'First 20 matches: type more to narrow.');
});

test('ledger owners: tenant accounts to the tenant page, provider accounts to the provider page', () => {
  const id = '0b8f2f1e-5d2a-4c51-9a43-1f0e6a7d9c11';
  for (const kind of ['RECEIVABLE', 'WALLET', 'REFUNDS_PAYABLE']) {
    assert.equal(l.ownerKind(kind), 'tenant');
    assert.equal(l.ownerPath(kind, id), `/tenants/${id}`);
  }
  assert.equal(l.ownerKind('PROVIDER_PAYABLE'), 'provider');
  assert.equal(l.ownerPath('PROVIDER_PAYABLE', id), `/providers/${id}`);
  for (const kind of ['REVENUE', 'STRIPE_CASH', 'PROVIDER_EARNINGS', 'PAYOUTS_IN_TRANSIT', 'BANK_CASH']) {
    assert.equal(l.ownerKind(kind), 'platform');
    assert.equal(l.ownerPath(kind, null), null);
  }
  assert.equal(l.ownerPath('WALLET', null), null);
  assert.equal(l.ownerPath('PROVIDER_PAYABLE', ''), null);
  assert.equal(l.ownerKind('SOMETHING_NEW'), 'platform');
});
