import { useId } from 'preact/hooks';
import { niceCeiling, tickLabel, valueLabel } from '../lib/ticks';

export interface Series {
  label: string;
  kind: 'bar' | 'line';
  /**
   * One value per x label (chart positions only: amounts are shown as strings
   * elsewhere); null for none yet (a day still to come): no bar, a gap in the line.
   */
  values: (number | null)[];
}

interface ChartProps {
  title: string;
  /** What the chart shows, for screen readers (the table beside it has the numbers). */
  description: string;
  labels: string[];
  series: Series[];
  /** The y axis unit, e.g. "GPU-h". */
  unit: string;
}

const W = 880;
const H = 280;
const M = { top: 16, right: 16, bottom: 36, left: 72 };
const PLOT_W = W - M.left - M.right;
const PLOT_H = H - M.top - M.bottom;
const TICKS = 4;

/** A bar and line chart in SVG with axes, gridlines, a legend, and a title and description. */
export function Chart({ title, description, labels, series, unit }: ChartProps) {
  const id = useId();
  // With nothing to show yet, the axis still runs 0 to 1 (five distinct ticks).
  const max = niceCeiling(Math.max(0, ...series.flatMap((s) => s.values.filter((v) => v !== null))), TICKS) || 1;
  const y = (v: number) => M.top + PLOT_H - (v / max) * PLOT_H;
  const band = PLOT_W / Math.max(1, labels.length);
  const x = (i: number) => M.left + band * i + band / 2;
  const bars = series.filter((s) => s.kind === 'bar');
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={`${id}-t ${id}-d`} class="chart-svg">
        <title id={`${id}-t`}>{title}</title>
        <desc id={`${id}-d`}>{description}</desc>
        <YAxis max={max} y={y} unit={unit} />
        <XAxis labels={labels} x={x} />
        {bars.map((s, k) => (
          <Bars key={s.label} series={s} index={series.indexOf(s)} slot={k} slots={bars.length} band={band} x={x} y={y} unit={unit} labels={labels} />
        ))}
        {series.map((s, i) => s.kind === 'line' && <Line key={s.label} series={s} index={i} x={x} y={y} />)}
      </svg>
      <figcaption class="chart-legend">
        {series.map((s, i) => (
          <span key={s.label} class="legend-item">
            <span class={`swatch series-${i} ${s.kind}`} aria-hidden="true" />
            {s.label}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}

function YAxis({ max, y, unit }: { max: number; y: (v: number) => number; unit: string }) {
  const step = max / TICKS;
  const ticks = Array.from({ length: TICKS + 1 }, (_, i) => step * i);
  return (
    <g class="axis axis-y">
      {ticks.map((t) => (
        <g key={t}>
          <line x1={M.left} x2={W - M.right} y1={y(t)} y2={y(t)} class={t === 0 ? 'axis-line' : 'grid-line'} />
          <text x={M.left - 8} y={y(t)} dy="0.32em" text-anchor="end">
            {tickLabel(t, step)}
          </text>
        </g>
      ))}
      <text x={12} y={M.top + PLOT_H / 2} transform={`rotate(-90 12 ${M.top + PLOT_H / 2})`} text-anchor="middle">
        {unit}
      </text>
    </g>
  );
}

function XAxis({ labels, x }: { labels: string[]; x: (i: number) => number }) {
  const every = Math.max(1, Math.ceil(labels.length / 10));
  return (
    <g class="axis axis-x">
      {labels.map(
        (label, i) =>
          i % every === 0 && (
            <text key={label} x={x(i)} y={H - M.bottom + 18} text-anchor="middle">
              {label}
            </text>
          ),
      )}
    </g>
  );
}

interface BarsProps {
  series: Series;
  index: number;
  slot: number;
  slots: number;
  band: number;
  labels: string[];
  unit: string;
  x: (i: number) => number;
  y: (v: number) => number;
}

function Bars({ series, index, slot, slots, band, labels, unit, x, y }: BarsProps) {
  const width = Math.max(1, (band * 0.7) / slots);
  const base = y(0);
  return (
    <g class={`bars series-${index}`}>
      {series.values.map(
        (v, i) =>
          v !== null && (
            <rect key={labels[i]} x={x(i) - (width * slots) / 2 + width * slot} y={y(v)} width={width} height={Math.max(0, base - y(v))}>
              <title>{`${labels[i]}: ${valueLabel(v)} ${unit}, ${series.label}`}</title>
            </rect>
          ),
      )}
    </g>
  );
}

function Line({ series, index, x, y }: { series: Series; index: number; x: (i: number) => number; y: (v: number) => number }) {
  const runs = segments(series.values);
  return (
    <g class={`line series-${index}`}>
      {runs.map((run) => (
        <polyline key={run[0]} points={run.map((i) => `${x(i).toFixed(1)},${y(series.values[i] ?? 0).toFixed(1)}`).join(' ')} fill="none" />
      ))}
      {series.values.map((v, i) => v !== null && <circle key={i} cx={x(i)} cy={y(v)} r={2.5} />)}
    </g>
  );
}

/** The index runs of consecutive non-null values. */
function segments(values: (number | null)[]): number[][] {
  const runs: number[][] = [];
  let run: number[] = [];
  values.forEach((v, i) => {
    if (v === null) {
      if (run.length) runs.push(run);
      run = [];
    } else run.push(i);
  });
  if (run.length) runs.push(run);
  return runs;
}
