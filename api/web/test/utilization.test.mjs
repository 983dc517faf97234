import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const u = await load('src/portal/utilization.ts');

const MIN = 60_000;
const at = (iso) => Date.parse(iso);
const sample = (minute, pct = '50.0') => ({ minute, smActivePct: pct, memoryGib: '10.00', sampledSeconds: 480 });

test('minuteWindow: the last minutes up to now, the minute begun included', () => {
  const w = u.minuteWindow({ startedAt: '2026-12-06T10:00:00Z', endedAt: null }, 60, at('2026-12-06T14:25:31Z'));
  assert.deepEqual(w, { start: at('2026-12-06T13:26:00Z'), count: 60, first: 0 });
});

test('minuteWindow: a recent allocation starts inside it, at its first minute', () => {
  const w = u.minuteWindow({ startedAt: '2026-12-06T14:20:10Z', endedAt: null }, 60, at('2026-12-06T14:25:31Z'));
  assert.equal(w.start, at('2026-12-06T13:26:00Z'));
  assert.equal(w.count, 60);
  assert.equal(w.first, 54);
  assert.deepEqual(u.lived(w), { start: at('2026-12-06T14:20:00Z'), count: 6, first: 0 });
});

test('minuteWindow: an ended allocation ends at its end', () => {
  const w = u.minuteWindow({ startedAt: '2026-12-05T00:00:00Z', endedAt: '2026-12-06T09:30:20Z' }, 360, at('2026-12-06T14:25:31Z'));
  assert.equal(w.start + w.count * MIN, at('2026-12-06T09:31:00Z'));
  assert.equal(w.count, 360);
  assert.equal(w.first, 0);
});

test('minuteWindow: samples past this browser’s clock widen it', () => {
  const w = u.minuteWindow({ startedAt: '2026-12-06T10:00:00Z', endedAt: null }, 60, at('2026-12-06T14:25:31Z'), [sample('2026-12-06T14:27:00Z')]);
  assert.equal(w.start + w.count * MIN, at('2026-12-06T14:28:00Z'));
  const early = u.minuteWindow({ startedAt: '2026-12-06T14:20:00Z', endedAt: null }, 60, at('2026-12-06T14:25:31Z'), [sample('2026-12-06T14:19:00+00:00')]);
  assert.equal(early.start + early.first * MIN, at('2026-12-06T14:19:00Z'));
});

test('minuteSlots: minutes without samples are null, never zero', () => {
  const window = { start: at('2026-12-06T14:00:00Z'), count: 6, first: 0 };
  const samples = [sample('2026-12-06T14:00:00Z', '10.0'), sample('2026-12-06T14:03:00+00:00', '0.0'), sample('2026-12-06T14:05:00Z', '30.5'), sample('2026-12-06T15:00:00Z')];
  const slots = u.minuteSlots(samples, window);
  assert.deepEqual(slots.map((s) => s && s.smActivePct), ['10.0', null, null, '0.0', null, '30.5']);
});

test('stretches: each sampled minute, each gap once with its length', () => {
  const window = { start: at('2026-12-06T14:00:00Z'), count: 7, first: 0 };
  const slots = u.minuteSlots([sample('2026-12-06T14:00:00Z'), sample('2026-12-06T14:03:00Z'), sample('2026-12-06T14:04:00Z')], window);
  const runs = u.stretches(slots, window).map((r) => (r.kind === 'gap' ? `gap ${new Date(r.from).toISOString().slice(11, 16)} ${r.minutes}` : `sample ${new Date(r.at).toISOString().slice(11, 16)}`));
  assert.deepEqual(runs, ['sample 14:00', 'gap 14:01 2', 'sample 14:03', 'sample 14:04', 'gap 14:05 2']);
  assert.deepEqual(u.stretches([null, null], window), [{ kind: 'gap', from: window.start, minutes: 2 }]);
});

test('minuteStep: about eight labels at most', () => {
  assert.equal(u.minuteStep(6), 1);
  assert.equal(u.minuteStep(60), 10);
  assert.equal(u.minuteStep(360), 60);
  assert.equal(u.minuteStep(1440), 180);
});

test('latestSample: the latest minute, whatever the order; null for none', () => {
  const samples = [sample('2026-12-06T14:03:00Z', '30.0'), sample('2026-12-06T14:05:00+00:00', '50.0'), sample('2026-12-06T14:04:00Z', '40.0')];
  assert.equal(u.latestSample(samples).smActivePct, '50.0');
  assert.equal(u.latestSample([]), null);
});

const gpu = (index, ...pcts) => ({ index, uuid: `GPU-${index}`, utilization: pcts.map((p, i) => sample(`2026-12-06T14:0${i}:00Z`, p)) });

test('chartedGpus: up to eight, all of them in index order', () => {
  const gpus = [gpu(3, '10.0'), gpu(1), gpu(2, '90.0')];
  assert.deepEqual(u.chartedGpus(gpus).map((g) => g.index), [1, 2, 3]);
  assert.equal(u.GPU_LINES, 8);
});

test('chartedGpus: more than eight, the busiest in their latest minute, in index order', () => {
  // GPU 0 was busy, but its latest minute is idle; GPU 9 has no samples at all.
  const gpus = [gpu(0, '99.0', '5.0'), ...[1, 2, 3, 4, 5, 6, 7, 8].map((i) => gpu(i, `${10 * i}.5`)), gpu(9), gpu(10, '100.0'), gpu(11, '20.5')];
  assert.deepEqual(u.chartedGpus(gpus).map((g) => g.index), [2, 3, 4, 5, 6, 7, 8, 10]);
  assert.deepEqual(u.chartedGpus(gpus, 3).map((g) => g.index), [7, 8, 10]);
  // Ties by index; GPUs without samples come last.
  const idle = [gpu(5, '0.0'), gpu(4), gpu(2, '0.0'), gpu(1, '0.0')];
  assert.deepEqual(u.chartedGpus(idle, 2).map((g) => g.index), [1, 2]);
  assert.deepEqual(u.chartedGpus(idle, 3).map((g) => g.index), [1, 2, 5]);
});

test('acrossGpus: each GPU per minute; a minute none has is one null', () => {
  const rows = u.acrossGpus([['a0', null, null, 'a3'], [null, null, 'b2']], 4);
  assert.deepEqual(rows, [['a0', null], null, [null, 'b2'], ['a3', null]]);
  const window = { start: at('2026-12-06T14:00:00Z'), count: 4, first: 0 };
  assert.deepEqual(u.stretches(rows, window).map((r) => r.kind), ['sample', 'gap', 'sample', 'sample']);
  assert.deepEqual(u.acrossGpus([], 2), [null, null]);
});
