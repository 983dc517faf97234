import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const p = await load('src/provider-shared/payouts.ts');

test('statement lines: grouped by kind in statement order, nets summed exactly', () => {
  const lines = [
    { kind: 'credit_note', net: '-1.10' },
    { kind: 'earning', net: '10.005' },
    { kind: 'earning', net: '0.1' },
    { kind: 'reversal', net: '-0.2' },
    { kind: 'earning', net: '0.2' },
    { kind: 'adjustment', net: '3' },
  ];
  assert.deepEqual(p.linesByKind(lines), [
    { kind: 'earning', count: 3, net: '10.305' },
    { kind: 'reversal', count: 1, net: '-0.2' },
    { kind: 'credit_note', count: 1, net: '-1.10' },
    { kind: 'adjustment', count: 1, net: '3' },
  ]);
  assert.deepEqual(p.linesByKind([]), []);
});

test('statement lines: kinds labelled, unknown ones as they are', () => {
  assert.equal(p.lineKindLabel('credit_note'), 'Credit note');
  assert.equal(p.lineKindTone('earning'), 'good');
  assert.equal(p.lineKindTone('reversal'), 'bad');
  assert.equal(p.lineKindLabel('adjustment'), 'adjustment');
  assert.equal(p.lineKindTone('adjustment'), 'neutral');
  assert.equal(p.kindCount('earning', 1), '1 earning');
  assert.equal(p.kindCount('credit_note', 2), '2 credit notes');
});

test('payouts: status tones, method labels', () => {
  assert.equal(p.payoutTone('queued'), 'info');
  assert.equal(p.payoutTone('sent'), 'good');
  assert.equal(p.payoutTone('failed'), 'bad');
  assert.equal(p.payoutTone('other'), 'neutral');
  assert.equal(p.payoutStatusLabel('queued'), 'Queued');
  assert.equal(p.payoutMethodLabel('sepa_credit_transfer'), 'SEPA credit transfer');
  assert.equal(p.payoutMethodLabel('stripe_connect'), 'Stripe Connect');
  assert.equal(p.payoutMethodLabel('manual'), 'Manual');
});

test('payouts: what the operator can act on', () => {
  assert.ok(p.recordable({ method: 'manual', status: 'queued' }));
  assert.ok(!p.recordable({ method: 'manual', status: 'sent' }));
  assert.ok(!p.recordable({ method: 'sepa_credit_transfer', status: 'queued' }));
  assert.ok(p.sepaQueued([{ method: 'manual', status: 'queued' }, { method: 'sepa_credit_transfer', status: 'queued' }]));
  assert.ok(!p.sepaQueued([{ method: 'sepa_credit_transfer', status: 'sent' }, { method: 'sepa_credit_transfer', status: 'failed' }]));
  assert.ok(!p.sepaQueued([]));
});

test('payouts: the statement by number, else by a short id', () => {
  const numbers = new Map([['0190a1b2-0000-7000-8000-00000000abcd', 'PS-ACME-0001']]);
  assert.equal(p.statementLabel('0190a1b2-0000-7000-8000-00000000abcd', numbers), 'PS-ACME-0001');
  assert.equal(p.statementLabel('0190a1b2-0000-7000-8000-0000deadbeef', numbers), 'deadbeef');
});

test('closing statements and SEPA files: what the operator reads', () => {
  assert.equal(p.closedNote(1), 'Closed 1 statement.');
  assert.equal(p.closedNote(3), 'Closed 3 statements.');
  assert.match(p.closedNote(0), /^Closed 0 statements/);
  assert.equal(p.sepaFileName('NEO-20261201-0001'), 'NEO-20261201-0001.xml');
  assert.equal(p.sepaFileName('../a b/c'), 'a-b-c.xml');
  assert.equal(p.sepaFileName(''), 'payouts.xml');
});

test('reliability as an exact percentage', () => {
  assert.equal(p.percent('0.9876'), '98.76%');
  assert.equal(p.percent('1.0000'), '100%');
  assert.equal(p.percent('0.5'), '50%');
  assert.equal(p.percent('0'), '0%');
});
