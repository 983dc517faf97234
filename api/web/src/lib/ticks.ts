/** Y-axis ticks: a "nice" top value and labels with just enough decimals to differ. */

/** The smallest 1, 2, 2.5 or 5 × 10^n at or above `v`, divisible into `ticks` steps. */
export function niceCeiling(v: number, ticks: number): number {
  if (v <= 0) return 0;
  const step = v / ticks;
  const mag = 10 ** Math.floor(Math.log10(step));
  const nice = [1, 2, 2.5, 5, 10].find((m) => m * mag >= step) ?? 10;
  return nice * mag * ticks;
}

/** How many decimals `step` needs (0.0025 → 4, 250 → 0), at most 10. */
export function decimalsOf(step: number): number {
  for (let d = 0; d < 10; d += 1) {
    const scaled = step * 10 ** d;
    if (Math.abs(scaled - Math.round(scaled)) < 1e-6 * Math.max(1, scaled)) return d;
  }
  return 10;
}

/**
 * The label of tick `v` on an axis whose ticks are `step` apart ("0", "0.0025", "0.005",
 * "1,250"): up to the decimals the step needs, so no two ticks read the same.
 */
export function tickLabel(v: number, step: number): string {
  return v.toLocaleString('en', { maximumFractionDigits: decimalsOf(step) });
}

/** A value off the axis (a bar's tooltip), to 3 decimals at most. */
export function valueLabel(v: number): string {
  return v.toLocaleString('en', { maximumFractionDigits: 3 });
}

export interface AxisRange {
  min: number;
  max: number;
  /** The distance between ticks. */
  step: number;
  /** Each tick's value, lowest first; 0 is one of them. */
  ticks: number[];
}

/**
 * A y axis for data reaching up to `hi` (0 for nothing above zero) and down to `-lo` (0 for
 * nothing below). Without negatives: 0 to `fixedMax` or a nice ceiling of `hi` (0 to 1
 * for no data) in `ticks` steps. With negatives (an SLA credit's cost) the same nice step
 * runs both ways from 0, as many whole steps as each side needs.
 */
export function axisRange(hi: number, lo: number, ticks: number, fixedMax?: number): AxisRange {
  if (lo <= 0) {
    const max = fixedMax ?? (niceCeiling(hi, ticks) || 1);
    const step = max / ticks;
    return { min: 0, max, step, ticks: Array.from({ length: ticks + 1 }, (_, i) => step * i) };
  }
  const step = (fixedMax ?? niceCeiling(Math.max(hi, lo), ticks)) / ticks;
  const above = fixedMax !== undefined ? ticks : Math.max(0, Math.ceil(hi / step - 1e-9));
  const below = Math.max(1, Math.ceil(lo / step - 1e-9));
  // Whole steps from 0, without a float's tail (-3 × 0.1 is -0.30000000000000004).
  const at = (k: number) => (k === 0 ? 0 : Number((k * step).toPrecision(12)));
  return { min: at(-below), max: at(above), step, ticks: Array.from({ length: below + above + 1 }, (_, i) => at(i - below)) };
}
