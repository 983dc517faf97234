import { useId } from 'preact/hooks';
import type { GpuHealth } from '../gql/schema';
import { dateTime } from '../lib/format';
import { eventKindLabel } from '../provider-shared/node';
import { StatusBadge } from '../ui/Badge';
import { type Column, DataTable } from '../ui/DataTable';
import type { GpuHistoryResult } from './operations';

type History = GpuHistoryResult['gpuHistory'][number];
type GpuEvent = History['events'][number];
type Span = History['healthHistory'][number];

interface Props {
  history: readonly History[];
  days: number;
  /** The right edge of the timeline (when the history was read), in ms since the epoch. */
  now: number;
}

const W = 880;
const ROW = 30;
const M = { top: 8, right: 16, bottom: 30, left: 64 };
const PLOT_W = W - M.left - M.right;
const DAY = 86_400_000;
const DAY_LABEL = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', timeZone: 'UTC' });

/**
 * One row per GPU over the last `days`: degraded (solid, narrower) and failed (hatched)
 * stretches as bars, each XID or ECC event as a tick with its time, code and effect in a
 * tooltip; dates on the axis. The same facts are in the tables under "Show the events".
 */
export function XidTimeline({ history, days, now }: Props) {
  const id = useId();
  const gpus = [...history].sort((a, b) => a.index - b.index);
  const start = now - days * DAY;
  const height = M.top + gpus.length * ROW + M.bottom;
  const x = (t: number) => M.left + ((Math.min(now, Math.max(start, t)) - start) / (now - start)) * PLOT_W;
  const events = gpus.flatMap((g) => g.events.map((e) => ({ gpu: g.index, ...e }))).sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
  const spans = gpus.flatMap((g) => g.healthHistory.map((s) => ({ gpu: g.index, ...s }))).sort((a, b) => Date.parse(a.from) - Date.parse(b.from) || a.gpu - b.gpu);
  const hatch = `${id}-hatch`;
  return (
    <>
      <figure class="chart timeline">
        <svg viewBox={`0 0 ${W} ${height}`} role="img" aria-labelledby={`${id}-t ${id}-d`} class="chart-svg">
          <title id={`${id}-t`}>{`XID events and GPU health over the last ${days} days`}</title>
          <desc id={`${id}-d`}>{`${events.length} ${events.length === 1 ? 'event' : 'events'} and ${spans.length} degraded or failed ${spans.length === 1 ? 'period' : 'periods'} on ${gpus.length} GPUs. "Show the events" lists them.`}</desc>
          <defs>
            <pattern id={hatch} patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">
              <rect width="6" height="6" class="tl-hatch-bg" />
              <line x1="1" y1="0" x2="1" y2="6" class="tl-hatch-line" />
            </pattern>
          </defs>
          <DayAxis start={start} now={now} days={days} x={x} bottom={M.top + gpus.length * ROW} />
          {gpus.map((g, i) => (
            <GpuRow key={g.uuid} gpu={g} top={M.top + i * ROW} x={x} start={start} now={now} hatch={hatch} />
          ))}
        </svg>
        <figcaption class="chart-legend">
          <span class="legend-item">
            <span class="swatch tl-swatch-degraded" aria-hidden="true" />
            Degraded
          </span>
          <span class="legend-item">
            <span class="swatch tl-swatch-failed" aria-hidden="true" />
            Failed (hatched)
          </span>
          <span class="legend-item">
            <span class="swatch tl-swatch-event" aria-hidden="true" />
            XID or ECC event
          </span>
          <span class="legend-item">
            <span class="swatch tl-swatch-harm" aria-hidden="true" />
            Event that degraded or failed the GPU (diamond)
          </span>
        </figcaption>
      </figure>
      <details class="details">
        <summary>Show the events</summary>
        <h3 class="subhead">Events</h3>
        <DataTable virtual caption={`XID and ECC events of the last ${days} days, newest first`} hideCaption columns={EVENT_COLUMNS} rows={events} rowKey={(e) => `${e.gpu}-${e.at}-${e.kind}-${e.code}`} empty={`No XID or ECC event in the last ${days} days.`} />
        <h3 class="subhead">Degraded and failed periods</h3>
        <DataTable caption="Degraded and failed periods, oldest first" hideCaption columns={SPAN_COLUMNS} rows={spans} rowKey={(s) => `${s.gpu}-${s.from}-${s.health}`} empty={`No GPU was degraded or failed in the last ${days} days.`} />
      </details>
    </>
  );
}

function DayAxis({ start, now, days, x, bottom }: { start: number; now: number; days: number; x: (t: number) => number; bottom: number }) {
  const step = Math.max(1, Math.round(days / 6)) * DAY;
  const first = Math.ceil(start / DAY) * DAY;
  const ticks: number[] = [];
  for (let t = first; t <= now; t += step) ticks.push(t);
  return (
    <g class="axis axis-x">
      {ticks.map((t) => (
        <g key={t}>
          <line x1={x(t)} x2={x(t)} y1={M.top} y2={bottom} class="grid-line" />
          <text x={x(t)} y={bottom + 18} text-anchor="middle">
            {DAY_LABEL.format(new Date(t))}
          </text>
        </g>
      ))}
      <line x1={M.left} x2={W - M.right} y1={bottom} y2={bottom} class="axis-line" />
      <text x={W - M.right} y={bottom + 18} text-anchor="end">
        now
      </text>
    </g>
  );
}

interface RowProps {
  gpu: History;
  top: number;
  x: (t: number) => number;
  start: number;
  now: number;
  hatch: string;
}

function GpuRow({ gpu, top, x, start, now, hatch }: RowProps) {
  const mid = top + ROW / 2;
  return (
    <g class="tl-row">
      <text x={M.left - 8} y={mid} dy="0.32em" text-anchor="end" class="tl-label">
        {`GPU ${gpu.index}`}
      </text>
      <rect x={M.left} y={top + 3} width={PLOT_W} height={ROW - 6} class="tl-track" />
      {gpu.healthHistory.map((s) => {
        const from = Date.parse(s.from);
        const to = s.to ? Date.parse(s.to) : now;
        if (to < start || from > now) return null;
        return <SpanBar key={`${s.from}-${s.health}`} gpu={gpu.index} span={s} x0={x(from)} x1={x(to)} top={top} hatch={hatch} />;
      })}
      {gpu.events.map((e) => {
        const at = Date.parse(e.at);
        if (at < start || at > now) return null;
        return <Tick key={`${e.at}-${e.kind}-${e.code}`} gpu={gpu.index} event={e} cx={x(at)} top={top} />;
      })}
    </g>
  );
}

function SpanBar({ gpu, span: s, x0, x1, top, hatch }: { gpu: number; span: Span; x0: number; x1: number; top: number; hatch: string }) {
  const failed = s.health === 'FAILED';
  const width = Math.max(2, x1 - x0);
  // A stretch of a moment still shows, inside the plot.
  const left = Math.min(x0, M.left + PLOT_W - width);
  // Failed fills the row (hatched); degraded is a narrower solid bar.
  const inset = failed ? 5 : 9;
  const word = failed ? 'failed' : 'degraded';
  return (
    <g class={`tl-span tl-${word}`}>
      <title>{`GPU ${gpu} ${word} from ${dateTime(s.from)} ${s.to ? `to ${dateTime(s.to)}` : '(still)'} · ${s.cause || 'no cause given'}`}</title>
      <rect x={left} y={top + inset} width={width} height={ROW - inset * 2} fill={failed ? `url(#${hatch})` : undefined} />
      {width > 64 && (
        <text x={left + 6} y={top + ROW / 2} dy="0.32em" class="tl-span-label">
          {word}
        </text>
      )}
    </g>
  );
}

function Tick({ gpu, event: e, cx, top }: { gpu: number; event: GpuEvent; cx: number; top: number }) {
  const harm = e.effect && e.effect !== 'OK';
  return (
    <g class={`tl-event${harm ? ` tl-event-${(e.effect as GpuHealth).toLowerCase()}` : ''}`}>
      <title>{`${dateTime(e.at)} · GPU ${gpu} · ${eventName(e)} · ${effectWords(e.effect)}`}</title>
      <rect x={cx - 3} y={top + 1} width="6" height={ROW - 2} class="tl-hit" />
      <line x1={cx} x2={cx} y1={top + 3} y2={top + ROW - 3} />
      {harm && <path d={`M${cx} ${top} l4 4 l-4 4 l-4 -4 z`} />}
    </g>
  );
}

/** "xid 79", "ECC double-bit 2". */
export function eventName(e: { kind: string; code: number }): string {
  if (e.kind === 'xid') return `xid ${e.code}`;
  if (e.kind === 'ecc_double_bit') return `ECC double-bit ${e.code}`;
  if (e.kind === 'ecc_single_bit') return `ECC single-bit ${e.code}`;
  return `${e.kind} ${e.code}`;
}

function effectWords(effect: GpuHealth | null): string {
  if (effect === 'FAILED') return 'failed the GPU';
  if (effect === 'DEGRADED') return 'degraded the GPU';
  return 'no effect on health';
}

type EventRow = GpuEvent & { gpu: number };
type SpanRow = Span & { gpu: number };

const EVENT_COLUMNS: Column<EventRow>[] = [
  { header: 'GPU', numeric: true, cell: (e) => e.gpu },
  { header: 'Time', cell: (e) => dateTime(e.at) },
  { header: 'Kind', cell: (e) => eventKindLabel(e.kind) },
  { header: 'Code', numeric: true, cell: (e) => e.code },
  { header: 'Effect', cell: (e) => (e.effect ? <StatusBadge value={e.effect} /> : <span class="muted">None</span>) },
];

const SPAN_COLUMNS: Column<SpanRow>[] = [
  { header: 'GPU', numeric: true, cell: (s) => s.gpu },
  { header: 'Health', cell: (s) => <StatusBadge value={s.health} /> },
  { header: 'From', cell: (s) => dateTime(s.from) },
  { header: 'To', cell: (s) => (s.to ? dateTime(s.to) : 'still') },
  { header: 'Cause', cell: (s) => s.cause || '—' },
];
