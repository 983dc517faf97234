import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const v = await load('src/lib/virtual.ts');

const fixed = (count, h) => v.rowOffsets(count, () => undefined, h);

test('rowOffsets: measured heights where known, the estimate elsewhere, the total last', () => {
  const heights = [40, undefined, 0, 100];
  const o = v.rowOffsets(4, (i) => heights[i], 50);
  assert.deepEqual(Array.from(o), [0, 40, 90, 140, 240]);
  assert.deepEqual(Array.from(v.rowOffsets(0, () => 1, 50)), [0]);
});

test('estimateHeight: the mean of the measured rows, else the fallback', () => {
  assert.equal(v.estimateHeight([], 61), 61);
  assert.equal(v.estimateHeight([40, 60]), 50);
  assert.equal(v.estimateHeight([0, Number.NaN, 30], 61), 30);
  assert.equal(v.estimateHeight(new Map([['a', 20], ['b', 40]]).values(), 61), 30);
  assert.equal(v.estimateHeight([]), v.DEFAULT_ROW_HEIGHT);
});

test('rowAt: the row under a pixel, clamped to the rows there are', () => {
  const o = fixed(10, 50);
  assert.equal(v.rowAt(o, 0), 0);
  assert.equal(v.rowAt(o, 49.9), 0);
  assert.equal(v.rowAt(o, 50), 1);
  assert.equal(v.rowAt(o, 499), 9);
  assert.equal(v.rowAt(o, 10_000), 9);
  assert.equal(v.rowAt(o, -20), 0);
  assert.equal(v.rowAt(fixed(0, 50), 100), 0);
});

test('visibleRange: the rows that meet the band, with overscan, clamped', () => {
  const o = fixed(1000, 50);
  // 900 px of viewport from 5,000 px down: rows 100 to 117.
  assert.deepEqual(v.visibleRange(o, 5000, 900, 0), { start: 100, end: 118 });
  assert.deepEqual(v.visibleRange(o, 5000, 900, 12), { start: 88, end: 130 });
  // A band that ends on a row's top leaves that row out; one inside a row keeps it.
  assert.deepEqual(v.visibleRange(o, 5010, 900, 0), { start: 100, end: 119 });
  // The body starts below the viewport's top (negative top): from its first row.
  assert.deepEqual(v.visibleRange(o, -300, 900, 5), { start: 0, end: 17 });
  // Near the end, and scrolled past it.
  assert.deepEqual(v.visibleRange(o, 49_500, 900, 5), { start: 985, end: 1000 });
  assert.deepEqual(v.visibleRange(o, 80_000, 900, 5), { start: 994, end: 1000 });
  // Wholly below the viewport: its first rows.
  assert.deepEqual(v.visibleRange(o, -5000, 900, 5), { start: 0, end: 6 });
  assert.deepEqual(v.visibleRange(fixed(0, 50), 0, 900), { start: 0, end: 0 });
  assert.equal(v.visibleRange(o, 5000, 900).start, 100 - v.OVERSCAN);
});

test('visibleRange: rows of different heights', () => {
  const heights = [100, 20, 20, 20, 300, 20, 20];
  const o = v.rowOffsets(heights.length, (i) => heights[i], 50);
  // Offsets 0,100,120,140,160,460,480,500. A band of [130, 470) meets rows 2..5.
  assert.deepEqual(v.visibleRange(o, 130, 340, 0), { start: 2, end: 6 });
});

test('segments: rows of the range between gaps that add up to the total', () => {
  const o = fixed(1000, 50);
  const parts = v.segments(o, { start: 100, end: 130 });
  assert.deepEqual(parts[0], { gap: 5000, from: 0, to: 100 });
  assert.deepEqual(parts[1], { row: 100 });
  assert.deepEqual(parts.at(-2), { row: 129 });
  assert.deepEqual(parts.at(-1), { gap: 870 * 50, from: 130, to: 1000 });
  assert.equal(parts.length, 32);
  const height = parts.reduce((sum, p) => sum + ('gap' in p ? p.gap : 50), 0);
  assert.equal(height, o[1000]);
});

test('segments: no gap at an end the range reaches; every row of a small range', () => {
  const o = fixed(5, 10);
  assert.deepEqual(v.segments(o, { start: 0, end: 5 }), [0, 1, 2, 3, 4].map((row) => ({ row })));
  assert.deepEqual(v.segments(o, { start: 0, end: 2 }), [{ row: 0 }, { row: 1 }, { gap: 30, from: 2, to: 5 }]);
  assert.deepEqual(v.segments(o, { start: 3, end: 99 }), [{ gap: 30, from: 0, to: 3 }, { row: 3 }, { row: 4 }]);
  assert.deepEqual(v.segments(fixed(0, 10), { start: 0, end: 40 }), []);
});

test('segments: a pinned row (the one with the focus) stays rendered outside the range', () => {
  const o = fixed(100, 10);
  assert.deepEqual(v.segments(o, { start: 50, end: 52 }, [10]), [
    { gap: 100, from: 0, to: 10 },
    { row: 10 },
    { gap: 390, from: 11, to: 50 },
    { row: 50 },
    { row: 51 },
    { gap: 480, from: 52, to: 100 },
  ]);
  // Pinned after the range, next to it, inside it, twice, or gone: no duplicates, no empty gaps.
  assert.deepEqual(v.segments(o, { start: 0, end: 2 }, [2, 2]), [{ row: 0 }, { row: 1 }, { row: 2 }, { gap: 970, from: 3, to: 100 }]);
  assert.deepEqual(v.segments(o, { start: 0, end: 2 }, [1, -1, 100, 2.5]), [{ row: 0 }, { row: 1 }, { gap: 980, from: 2, to: 100 }]);
  assert.deepEqual(v.segments(o, { start: 98, end: 100 }, [99]).at(-1), { row: 99 });
});

test('the threshold and the window stay small next to 10,000 rows', () => {
  assert.equal(v.VIRTUAL_THRESHOLD, 200);
  const o = fixed(10_000, 61);
  const parts = v.segments(o, v.visibleRange(o, 300_000, 1080));
  const rows = parts.filter((p) => 'row' in p).length;
  assert.ok(rows < 60, `${rows} rows rendered`);
  assert.ok(parts.filter((p) => 'gap' in p).length === 2);
  assert.ok(v.sameRange({ start: 1, end: 2 }, { start: 1, end: 2 }));
  assert.ok(!v.sameRange({ start: 1, end: 2 }, { start: 1, end: 3 }));
});
