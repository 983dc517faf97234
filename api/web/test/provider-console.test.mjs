import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const fleet = await load('src/provider/fleet.ts');
const v = await load('src/provider-shared/versions.ts');
const ag = await load('src/provider-shared/agreements.ts');
const reg = await load('src/provider/registration.ts');

const node = (state, verification, gpus, gpusInUse) => ({ state, verification, gpus: Array.from({ length: gpus }, (_, index) => ({ index })), gpusInUse });

test('nodes: counted without the retired ones; mismatched and pending ones need attention', () => {
  const nodes = [node('ACTIVE', 'VERIFIED', 8, 5), node('DRAINING', 'MISMATCH', 8, 1), node('ACTIVE', 'PENDING', 4, 0), node('RETIRED', 'MISMATCH', 8, 0), node('DOWN', 'TRUSTED', 2, 0)];
  assert.deepEqual(fleet.fleetSummary(nodes), { nodes: 4, retired: 1, gpus: 22, gpusInUse: 6, attention: 2 });
  assert.deepEqual(fleet.fleetSummary([]), { nodes: 0, retired: 0, gpus: 0, gpusInUse: 0, attention: 0 });
  assert.equal(fleet.needsAttention({ verification: 'VERIFIED' }), false);
});

test('seconds read as hours to a tenth', () => {
  assert.equal(fleet.hours(2_592_000), '720.0');
  assert.equal(fleet.hours(5_400), '1.5');
  assert.equal(fleet.hours(0), '0.0');
  assert.equal(fleet.hours(36_000_000), '10,000.0');
});

test('agreements: the latest start at or before now is in force, later ones upcoming, earlier ones replaced', () => {
  const a1 = { id: '1', effectiveFrom: '2026-01-01T00:00:00Z' };
  const a2 = { id: '2', effectiveFrom: '2026-06-01T00:00:00Z' };
  const a3 = { id: '3', effectiveFrom: '2027-01-01T00:00:00Z' };
  const versions = v.newestFirst([a1, a3, a2]);
  assert.deepEqual(versions, [a3, a2, a1]);
  const states = v.versionStates(versions, new Date('2026-07-01T00:00:00Z'));
  assert.deepEqual([a1, a2, a3].map((a) => states.get(a)), ['replaced', 'in_force', 'upcoming']);
  const early = v.versionStates(versions, new Date('2025-12-31T23:59:59Z'));
  assert.deepEqual([a1, a2, a3].map((a) => early.get(a)), ['upcoming', 'upcoming', 'upcoming']);
  const atStart = v.versionStates(versions, new Date('2026-06-01T00:00:00Z'));
  assert.equal(atStart.get(a2), 'in_force', 'in force from its very start');
  assert.equal(v.versionStateLabel('in_force'), 'In force');
});

test('agreements in words: a revenue share, or each fixed rate; the payout terms', () => {
  const base = { currency: 'EUR', payoutMinimum: '100.00', holdUntilPaid: true, fixedRates: [] };
  assert.equal(ag.earns({ ...base, revenueSharePercent: '70' }), '70% of revenue');
  const fixed = { ...base, revenueSharePercent: null, fixedRates: [{ form: 'WHOLE_GPU', region: 'eu-west', pricePerUnitHour: '1.20' }, { form: 'MIG', region: 'eu-west', pricePerUnitHour: '0.30' }] };
  assert.equal(ag.earns(fixed), 'Whole gpu in eu-west: 1.20 EUR/unit-hour; Mig in eu-west: 0.30 EUR/unit-hour');
  assert.equal(ag.payoutTerms(base), '100.00 EUR minimum, once tenants paid');
  assert.equal(ag.payoutTerms({ ...base, holdUntilPaid: false }), '100.00 EUR minimum');
  assert.equal(ag.creditNotes({ ...base, revenueSharePercent: '70', creditNotesShared: true }), 'Shared (a share of revenue)');
  assert.equal(ag.creditNotes({ ...fixed, creditNotesShared: false }), 'Not shared');
  assert.equal(ag.creditNotes({ ...fixed, creditNotesShared: true }), 'Shared pro rata');
});

test('registration: one GPU per non-blank line, indexed in order; an error about a GPU names its line', () => {
  assert.deepEqual(reg.gpusOf(' GPU-a \n\nGPU-b\r\n  \nGPU-c'), [
    { uuid: 'GPU-a', index: 0 },
    { uuid: 'GPU-b', index: 1 },
    { uuid: 'GPU-c', index: 2 },
  ]);
  assert.deepEqual(reg.gpusOf('\n  \n'), []);
  const invalid = (field) => ({ code: 'INVALID_INPUT', field, message: 'appears twice' });
  assert.equal(reg.gpuLineError(invalid('input.gpus[2].uuid')), 'Line 3: appears twice');
  assert.equal(reg.gpuLineError(invalid('gpus[0].index')), 'Line 1: appears twice');
  assert.equal(reg.gpuLineError({ ...invalid('gpus[1].uuid'), message: 'gpus[1].uuid: appears twice' }), 'Line 2: appears twice');
  assert.equal(reg.gpuLineError(invalid('hostname')), null);
  assert.equal(reg.gpuLineError({ code: 'ALREADY_EXISTS', field: 'gpus[0].uuid', message: 'x' }), null);
  assert.equal(reg.gpuLineError(null), null);
});
