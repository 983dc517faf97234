/**
 * Row windowing for long tables: which rows to render for a scroll position, and how
 * tall the gaps that stand in for the others are. Pure (no DOM): DataTable measures, this
 * decides. Positions are pixels from the top of the table body; row i spans
 * [offsets[i], offsets[i + 1]).
 */

/** A table windows its rows only above this many; smaller tables render every row. */
export const VIRTUAL_THRESHOLD = 200;

/** Rows rendered beyond each edge of the visible part, so Tab and a quick scroll find them there. */
export const OVERSCAN = 12;

/** The height assumed for a row before any has been measured (a two-line cell: 20 + 2 × 20 px). */
export const DEFAULT_ROW_HEIGHT = 61;

/** Rows rendered before the first measurement (enough for a tall window). */
export const INITIAL_ROWS = 40;

/** The estimate for rows not measured yet: the mean of those measured, else `fallback`. */
export function estimateHeight(measured: Iterable<number>, fallback: number = DEFAULT_ROW_HEIGHT): number {
  let sum = 0;
  let n = 0;
  for (const h of measured) {
    if (h > 0 && Number.isFinite(h)) {
      sum += h;
      n += 1;
    }
  }
  return n ? sum / n : fallback;
}

/**
 * The top of every row and, last, the total height: `count + 1` numbers. A row's height
 * is its measured one where known (a positive number), else `estimate`.
 */
export function rowOffsets(count: number, heights: (index: number) => number | undefined, estimate: number): Float64Array {
  const offsets = new Float64Array(count + 1);
  let y = 0;
  for (let i = 0; i < count; i += 1) {
    offsets[i] = y;
    const h = heights(i);
    y += h !== undefined && h > 0 && Number.isFinite(h) ? h : estimate;
  }
  offsets[count] = y;
  return offsets;
}

/** `offsets[i]`, for an index known to be in range. */
const at = (offsets: ArrayLike<number>, i: number): number => offsets[i] ?? 0;

/** The row at `y`: the last row whose top is at or above it, clamped to the rows there are (0 when none). */
export function rowAt(offsets: ArrayLike<number>, y: number): number {
  const count = offsets.length - 1;
  if (count <= 0) return 0;
  let lo = 0;
  let hi = count - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (at(offsets, mid) <= y) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Rows [start, end). */
export interface RowRange {
  start: number;
  end: number;
}

/**
 * The rows that meet the visible band [top, top + height) of the table body, widened by
 * `overscan` rows each side and clamped to [0, count). A body wholly below the band gives
 * its first rows, one wholly above it its last: something is always rendered.
 */
export function visibleRange(offsets: ArrayLike<number>, top: number, height: number, overscan: number = OVERSCAN): RowRange {
  const count = offsets.length - 1;
  if (count <= 0) return { start: 0, end: 0 };
  const total = at(offsets, count);
  const from = Math.min(Math.max(top, 0), total);
  const to = Math.min(Math.max(top + Math.max(height, 0), 0), total);
  const first = rowAt(offsets, from);
  // The last row that starts before the band's end (a band ending on a row's top excludes it).
  const last = to > from ? Math.max(first, rowAt(offsets, to - 0.001)) : first;
  return { start: Math.max(0, first - overscan), end: Math.min(count, last + 1 + overscan) };
}

export type Segment = { row: number } | { gap: number; from: number; to: number };

/**
 * What the body renders, top to bottom: the rows of `range`, the `pinned` rows outside it
 * (the row holding focus stays, wherever it is scrolled to), and a gap of the right
 * height for each run of rows in between. Rows are in order; gaps of no rows are left out.
 */
export function segments(offsets: ArrayLike<number>, range: RowRange, pinned: readonly number[] = []): Segment[] {
  const count = offsets.length - 1;
  const start = Math.max(0, Math.min(range.start, count));
  const end = Math.max(start, Math.min(range.end, count));
  const rows: number[] = [];
  for (const p of pinned) if (Number.isInteger(p) && p >= 0 && p < count && (p < start || p >= end)) rows.push(p);
  for (let i = start; i < end; i += 1) rows.push(i);
  rows.sort((a, b) => a - b);
  const out: Segment[] = [];
  let next = 0;
  for (const row of rows) {
    if (row < next) continue; // a pinned row given twice
    if (row > next) out.push({ gap: at(offsets, row) - at(offsets, next), from: next, to: row });
    out.push({ row });
    next = row + 1;
  }
  if (next < count) out.push({ gap: at(offsets, count) - at(offsets, next), from: next, to: count });
  return out;
}

/** Whether two ranges are the same rows. */
export function sameRange(a: RowRange, b: RowRange): boolean {
  return a.start === b.start && a.end === b.end;
}
