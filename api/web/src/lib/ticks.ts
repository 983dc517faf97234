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
