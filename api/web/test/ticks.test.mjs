import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const t = await load('src/lib/ticks.ts');

const labels = (max) => {
  const top = t.niceCeiling(max, 4);
  const step = top / 4;
  return [0, 1, 2, 3, 4].map((i) => t.tickLabel(step * i, step));
};

test('niceCeiling: 1, 2, 2.5 or 5 × 10^n per step', () => {
  assert.equal(t.niceCeiling(0, 4), 0);
  assert.equal(t.niceCeiling(7, 4), 8);
  assert.equal(t.niceCeiling(9, 4), 10);
  assert.equal(t.niceCeiling(0.01, 4), 0.01);
  assert.equal(t.niceCeiling(130, 4), 200);
});

test('small values get the decimals that tell ticks apart', () => {
  assert.deepEqual(labels(0.01), ['0', '0.0025', '0.005', '0.0075', '0.01']);
  assert.deepEqual(labels(0.3), ['0', '0.1', '0.2', '0.3', '0.4']);
  assert.deepEqual(labels(0.008), ['0', '0.002', '0.004', '0.006', '0.008']);
});

test('every label of an axis differs', () => {
  for (const max of [0.001, 0.004, 0.01, 0.07, 0.9, 3, 9.5, 42, 130, 999, 12345]) {
    const l = labels(max);
    assert.equal(new Set(l).size, l.length, `${max}: ${l.join(' ')}`);
  }
});

test('large values are grouped, whole when the step is', () => {
  assert.deepEqual(labels(9000), ['0', '2,500', '5,000', '7,500', '10,000']);
  assert.equal(t.decimalsOf(250), 0);
  assert.equal(t.decimalsOf(0.25), 2);
  assert.equal(t.valueLabel(0.0123456), '0.012');
});

test('axisRange: without negatives, 0 to the nice ceiling (0 to 1 for nothing), or the fixed top', () => {
  assert.deepEqual(t.axisRange(7, 0, 4), { min: 0, max: 8, step: 2, ticks: [0, 2, 4, 6, 8] });
  assert.deepEqual(t.axisRange(0, 0, 4), { min: 0, max: 1, step: 0.25, ticks: [0, 0.25, 0.5, 0.75, 1] });
  assert.deepEqual(t.axisRange(42, 0, 4, 100), { min: 0, max: 100, step: 25, ticks: [0, 25, 50, 75, 100] });
});

test('axisRange: with negatives, the same nice step both ways from 0', () => {
  // Charges of 7, a credit of 1.5: steps of 2, one below zero.
  assert.deepEqual(t.axisRange(7, 1.5, 4), { min: -2, max: 8, step: 2, ticks: [-2, 0, 2, 4, 6, 8] });
  // A credit larger than the charges: the step fits the larger side.
  assert.deepEqual(t.axisRange(3, 9, 4), { min: -10, max: 5, step: 2.5, ticks: [-10, -7.5, -5, -2.5, 0, 2.5, 5] });
  // Only credit: the axis ends at 0.
  assert.deepEqual(t.axisRange(0, 0.3, 4), { min: -0.3, max: 0, step: 0.1, ticks: [-0.3, -0.2, -0.1, 0] });
  assert.ok(Object.is(t.axisRange(0, 0.3, 4).max, 0));
  // A fixed top stays; the credit gets whole steps below.
  assert.deepEqual(t.axisRange(42, 30, 4, 100), { min: -50, max: 100, step: 25, ticks: [-50, -25, 0, 25, 50, 75, 100] });
});
