import { useId } from 'preact/hooks';
import { axisRange, tickLabel, valueLabel } from '../lib/ticks';
import { Link } from './Link';

export interface Series {
  label: string;
  /** Bars; a line; a line with the area under it filled. */
  kind: 'bar' | 'line' | 'area';
  /**
   * One value per x label (chart positions only: amounts are shown as strings
   * elsewhere); null for none (a day still to come, a minute without samples): no bar,
   * a gap in the line. A negative value (a credit) draws below the zero line.
   */
  values: (number | null)[];
  /** Its colour, `series-<colour>` in styles.css: 0 to 7, or "other" (default: its index). */
  colour?: number | 'other';
  /** An in-app page the legend links to (an allocation's). */
  to?: string;
}

interface ChartProps {
  title: string;
  /** What the chart shows, for screen readers (the table beside it has the numbers). */
  description: string;
  labels: string[];
  series: Series[];
  /** The y axis unit, e.g. "GPU-h". */
  unit: string;
  /** Bars stacked into one column per label (else side by side). */
  stacked?: boolean;
  /** A fixed top of the y axis (100 for a percentage); else a nice value above the data. */
  max?: number;
  /** The x axis's label per position, null for none (default: about ten of `labels`). */
  ticks?: (string | null)[];
  /** Height in the drawing's units (its width is 880). */
  height?: number;
  /** Dashed vertical lines at the left edge of a position, labelled (an allocation's start). */
  markers?: { index: number; label: string }[];
}

const W = 880;
const M = { top: 16, right: 16, bottom: 36, left: 72 };
const PLOT_W = W - M.left - M.right;
const TICKS = 4;
/** Up to this many positions a line marks each value with a dot (with its value as a tooltip). */
const DOTS_UP_TO = 62;

/**
 * A bar (side by side or stacked), line and area chart in SVG with axes, gridlines, a
 * legend, and a title and description. Stacked bars stack positive values up from zero
 * and negative ones down from it; the y axis goes below zero only for negative values.
 */
export function Chart({ title, description, labels, series, unit, stacked = false, max: fixedMax, ticks, height = 280, markers = [] }: ChartProps) {
  const id = useId();
  const plotH = height - M.top - M.bottom;
  const bars = series.filter((s) => s.kind === 'bar');
  const stackOf = (i: number, sign: 1 | -1) => bars.reduce((t, s) => t + (sign > 0 ? Math.max(0, s.values[i] ?? 0) : Math.min(0, s.values[i] ?? 0)), 0);
  const tops = stacked ? labels.map((_, i) => stackOf(i, 1)) : [];
  const bottoms = stacked ? labels.map((_, i) => stackOf(i, -1)) : [];
  const lines = series.filter((s) => s.kind !== 'bar' || !stacked);
  const free = lines.flatMap((s) => s.values.filter((v): v is number => v !== null));
  // With nothing to show yet, the axis still runs 0 to 1 (five distinct ticks).
  const axis = axisRange(Math.max(0, ...tops, ...free), -Math.min(0, ...bottoms, ...free), TICKS, fixedMax);
  const y = (v: number) => M.top + plotH - ((Math.min(Math.max(v, axis.min), axis.max) - axis.min) / (axis.max - axis.min)) * plotH;
  const band = PLOT_W / Math.max(1, labels.length);
  const x = (i: number) => M.left + band * i + band / 2;
  const colour = (s: Series) => `series-${s.colour ?? series.indexOf(s)}`;
  const tip = (i: number, v: number, s: Series) => `${labels[i]}: ${valueLabel(v)} ${unit}, ${s.label}`;
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${height}`} role="img" aria-labelledby={`${id}-t ${id}-d`} class="chart-svg">
        <title id={`${id}-t`}>{title}</title>
        <desc id={`${id}-d`}>{description}</desc>
        <YAxis ticks={axis.ticks} step={axis.step} y={y} unit={unit} plotH={plotH} />
        <XAxis labels={ticks ?? thinned(labels)} x={x} bottom={M.top + plotH} />
        {markers.map((m) => (
          <g key={m.index} class="marker">
            <line x1={x(m.index) - band / 2} x2={x(m.index) - band / 2} y1={M.top} y2={M.top + plotH} />
            <text x={x(m.index) - band / 2 - 4} y={M.top + 10} text-anchor="end">
              {m.label}
            </text>
          </g>
        ))}
        {stacked ? (
          <Stack bars={bars} band={band} x={x} y={y} colour={colour} tip={tip} />
        ) : (
          bars.map((s, k) => <Bars key={s.label} series={s} colour={colour(s)} slot={k} slots={bars.length} band={band} x={x} y={y} tip={tip} />)
        )}
        {series.map((s) => s.kind !== 'bar' && <Line key={s.label} series={s} colour={colour(s)} dots={labels.length <= DOTS_UP_TO} x={x} y={y} tip={tip} />)}
      </svg>
      <figcaption class="chart-legend">
        {series.map((s) => (
          <span key={s.label} class="legend-item">
            <span class={`swatch ${colour(s)} ${s.kind === 'bar' ? 'bar' : 'line'}`} aria-hidden="true" />
            {s.to ? <Link to={s.to}>{s.label}</Link> : s.label}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}

/** About ten of the labels, evenly spaced, for an axis that has no ticks of its own. */
function thinned(labels: string[]): (string | null)[] {
  const every = Math.max(1, Math.ceil(labels.length / 10));
  return labels.map((l, i) => (i % every === 0 ? l : null));
}

function YAxis({ ticks, step, y, unit, plotH }: { ticks: number[]; step: number; y: (v: number) => number; unit: string; plotH: number }) {
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
      <text x={12} y={M.top + plotH / 2} transform={`rotate(-90 12 ${M.top + plotH / 2})`} text-anchor="middle">
        {unit}
      </text>
    </g>
  );
}

function XAxis({ labels, x, bottom }: { labels: (string | null)[]; x: (i: number) => number; bottom: number }) {
  return (
    <g class="axis axis-x">
      {labels.map(
        (label, i) =>
          label !== null && (
            <text key={i} x={x(i)} y={bottom + 18} text-anchor="middle">
              {label}
            </text>
          ),
      )}
    </g>
  );
}

type Tip = (i: number, v: number, s: Series) => string;

interface BarsProps {
  series: Series;
  colour: string;
  slot: number;
  slots: number;
  band: number;
  x: (i: number) => number;
  y: (v: number) => number;
  tip: Tip;
}

function Bars({ series, colour, slot, slots, band, x, y, tip }: BarsProps) {
  const width = Math.max(1, (band * 0.7) / slots);
  const base = y(0);
  return (
    <g class={`bars ${colour}`}>
      {series.values.map(
        (v, i) =>
          v !== null && (
            <rect key={i} x={x(i) - (width * slots) / 2 + width * slot} y={y(Math.max(0, v))} width={width} height={Math.abs(base - y(v))}>
              <title>{tip(i, v, series)}</title>
            </rect>
          ),
      )}
    </g>
  );
}

interface StackProps {
  bars: Series[];
  band: number;
  x: (i: number) => number;
  y: (v: number) => number;
  colour: (s: Series) => string;
  tip: Tip;
}

/**
 * One column per position, the series on top of each other in their order (first at the
 * bottom); negative values hang below zero in the same order (first at the top).
 */
function Stack({ bars, band, x, y, colour, tip }: StackProps) {
  const width = Math.max(1, band * 0.7);
  const above: number[] = [];
  const below: number[] = [];
  return (
    <g class="stack">
      {bars.map((s) => (
        <g key={s.label} class={`bars ${colour(s)}`}>
          {s.values.map((v, i) => {
            if (v === null || v === 0) return null;
            const side = v > 0 ? above : below;
            const from = side[i] ?? 0;
            side[i] = from + v;
            return (
              <rect key={i} x={x(i) - width / 2} y={y(Math.max(from, from + v))} width={width} height={Math.abs(y(from) - y(from + v))}>
                <title>{tip(i, v, s)}</title>
              </rect>
            );
          })}
        </g>
      ))}
    </g>
  );
}

interface LineProps {
  series: Series;
  colour: string;
  dots: boolean;
  x: (i: number) => number;
  y: (v: number) => number;
  tip: Tip;
}

/** A line broken where values are null, its area filled for `area`; a lone value is a dot. */
function Line({ series, colour, dots, x, y, tip }: LineProps) {
  const runs = segments(series.values);
  const at = (i: number) => `${x(i).toFixed(1)},${y(series.values[i] ?? 0).toFixed(1)}`;
  const base = y(0).toFixed(1);
  return (
    <g class={`line ${colour}`}>
      {series.kind === 'area' &&
        runs.map(
          (run) =>
            run.length > 1 && (
              <polygon key={`a${run[0]}`} class="area" points={`${x(run[0] ?? 0).toFixed(1)},${base} ${run.map(at).join(' ')} ${x(run[run.length - 1] ?? 0).toFixed(1)},${base}`} />
            ),
        )}
      {runs.map((run) => (
        <polyline key={run[0]} points={run.map(at).join(' ')} fill="none" />
      ))}
      {runs.flatMap((run) =>
        dots || run.length === 1
          ? run.map((i) => (
              <circle key={`d${i}`} cx={x(i)} cy={y(series.values[i] ?? 0)} r={2.5}>
                <title>{tip(i, series.values[i] ?? 0, series)}</title>
              </circle>
            ))
          : [],
      )}
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
