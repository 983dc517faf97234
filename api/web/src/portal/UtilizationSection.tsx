import { useEffect, useState } from 'preact/hooks';
import type { AllocationStatus } from '../gql/schema';
import { groupDigits } from '../lib/format';
import { useQuery } from '../lib/hooks';
import { shortId } from '../lib/ids';
import { Chart } from '../ui/Chart';
import { type Column, DataTable } from '../ui/DataTable';
import { ErrorNotice, Loading } from '../ui/Notice';
import { Section } from '../ui/Page';
import { Segmented } from '../ui/Segmented';
import { Stat } from '../ui/Stat';
import { AllocationUtilization, type AllocationUtilizationResult } from './operations';
import {
  acrossGpus,
  chartedGpus,
  GPU_LINES,
  latestSample,
  lived,
  MINUTE,
  type MinuteWindow,
  minuteSlots,
  minuteStep,
  minuteWindow,
  type Stretch,
  stretches,
} from './utilization';

type Found = AllocationUtilizationResult['allocation'];
type Sample = Found['utilization'][number];
type Gpu = Found['gpus'][number];
type GpuSample = Gpu['utilization'][number];

const RANGES = [
  { value: 60, label: '1 h', name: 'hour' },
  { value: 360, label: '6 h', name: '6 hours' },
  { value: 1440, label: '24 h', name: '24 hours' },
] as const;

const POLL_MS = 15_000;

const CLOCK = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', timeZone: 'UTC' });
const DAY_CLOCK = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', timeZone: 'UTC' });

interface Props {
  a: { id: string; status: AllocationStatus; startedAt: string; endedAt: string | null; gpus: readonly unknown[] };
}

/**
 * The allocation's GPUs minute by minute over the last hour, 6 or 24 hours of its life:
 * SM activity over all of them and memory in use per GPU (`Allocation.utilization`); with
 * more than one GPU also each GPU's own SM activity (`AllocatedGpu.utilization`: a line
 * per GPU, at most 8, the busiest in their latest minute) and a table of every GPU's
 * latest minute. Asked again every 15 s while it runs. Minutes without samples are gaps.
 */
export function UtilizationSection({ a }: Props) {
  const [minutes, setMinutes] = useState<number>(60);
  // The answer carries the allocation's state: once it has ended, the page stops asking.
  const [seenEnded, setSeenEnded] = useState(false);
  const ended = seenEnded || hasEnded(a);
  const q = useQuery(AllocationUtilization, { id: a.id, minutes }, { pollMs: ended ? undefined : POLL_MS });
  const found = q.data?.allocation ?? null;
  useEffect(() => {
    if (found && hasEnded(found)) setSeenEnded(true);
  }, [found]);
  const range = RANGES.find((r) => r.value === minutes) ?? RANGES[0];
  const gpus = a.gpus.length;
  return (
    <Section title="Utilization" actions={<Segmented label="Time range" options={RANGES} value={minutes} onChange={setMinutes} />}>
      <p class="section-lead muted">
        {`SM activity of ${whose(gpus)} and memory in use per GPU, minute by minute (UTC)${ended ? ', over the last minutes of its life' : ', refreshed every 15 s'}.`}
      </p>
      <ErrorNotice error={q.error} onRetry={q.reload} />
      {!found && q.loading && <Loading label="Loading utilization…" />}
      {found && <UtilizationCharts found={found} minutes={minutes} rangeName={range.name} ended={ended} busy={q.loading} />}
    </Section>
  );
}

/** Whose SM activity the section shows: its GPU, or its GPUs together and each one's. */
function whose(gpus: number): string {
  if (gpus === 1) return 'its GPU';
  return `its ${gpus} GPUs together and of each GPU${gpus > GPU_LINES ? ` (a line for the ${GPU_LINES} busiest, a table for all)` : ''},`;
}

function hasEnded(a: { status: AllocationStatus; endedAt: string | null }): boolean {
  return a.endedAt !== null || a.status === 'RELEASED';
}

interface ChartsProps {
  found: Found;
  minutes: number;
  rangeName: string;
  ended: boolean;
  busy: boolean;
}

/** The time axis the charts share: a slot per minute of the window, its labels and ticks. */
interface Axis {
  window: MinuteWindow;
  labels: string[];
  ticks: (string | null)[];
  markers: { index: number; label: string }[];
}

function minuteAxis(window: MinuteWindow): Axis {
  const at = (i: number) => window.start + i * MINUTE;
  const labels = Array.from({ length: window.count }, (_, i) => CLOCK.format(at(i)));
  const step = minuteStep(window.count);
  const ticks = labels.map((l, i) => (Math.round(at(i) / MINUTE) % step === 0 ? l : null));
  // Before it started there is nothing to sample: no gap, and the chart marks the start.
  const markers = window.first > 0 ? [{ index: window.first, label: `started ${labels[window.first] ?? ''}` }] : [];
  return { window, labels, ticks, markers };
}

function UtilizationCharts({ found, minutes, rangeName, ended, busy }: ChartsProps) {
  const samples = found.utilization;
  const latest = latestSample(samples);
  if (latest === null) {
    return <p class="empty">{ended ? `No samples were reported in the last ${rangeName} of its life.` : "No samples yet: the node's agent reports every few seconds."}</p>;
  }
  const window = minuteWindow(found, minutes, Date.now(), [...samples, ...found.gpus.flatMap((g) => g.utilization)]);
  const axis = minuteAxis(window);
  const { labels, ticks, markers } = axis;
  const slots = minuteSlots(samples, window);
  const sampled = slots.filter((s) => s !== null).length;
  const since = window.count - window.first;
  const coverage = `${sampled} of the ${since} ${since === 1 ? 'minute' : 'minutes'} ${window.first > 0 ? 'since it started' : 'shown'} ${sampled === 1 ? 'has' : 'have'} samples; minutes without are gaps in the lines.${window.first > 0 ? ' A dashed line marks when it started.' : ''}`;
  return (
    <div aria-busy={busy || undefined}>
      <div class="stats">
        <Stat label="SM active" value={`${latest.smActivePct} %`} note={`latest minute with samples, ${CLOCK.format(Date.parse(latest.minute))} UTC`} />
        <Stat label="Memory in use" value={`${groupDigits(latest.memoryGib)} GiB`} note="per GPU, average over that minute" />
        <Stat label="Minutes with samples" value={`${sampled} of ${since}`} note={window.first > 0 ? 'since it started' : `over the last ${rangeName}`} />
      </div>
      <Chart
        title={`SM activity per minute, last ${rangeName}`}
        description={`Area: the percentage of time the GPUs' streaming multiprocessors were active each minute (UTC), 0 to 100 %. ${coverage} "Show the numbers" lists each minute.`}
        labels={labels}
        ticks={ticks}
        unit="% SM active"
        max={100}
        height={240}
        markers={markers}
        series={[{ label: 'SM active (%)', kind: 'area', values: slots.map((s) => (s ? Number(s.smActivePct) : null)) }]}
      />
      <Chart
        title={`Memory in use per minute, last ${rangeName}`}
        description={`Line: the average GiB of memory in use per GPU each minute (UTC). ${coverage}`}
        labels={labels}
        ticks={ticks}
        unit="GiB per GPU"
        height={180}
        markers={markers}
        series={[{ label: 'Memory in use (GiB per GPU)', kind: 'line', colour: 1, values: slots.map((s) => (s ? Number(s.memoryGib) : null)) }]}
      />
      <Numbers slots={slots.slice(window.first)} window={lived(window)} rangeName={rangeName} />
      {found.gpus.length > 1 && <PerGpu gpus={found.gpus} axis={axis} rangeName={rangeName} />}
    </div>
  );
}

/** A table row's minute, or its gap's first and last; past midnight (UTC) each says its day. */
function minuteOf(window: MinuteWindow): (r: Stretch<unknown>) => string {
  const days = new Date(window.start).getUTCDate() !== new Date(window.start + (window.count - 1) * MINUTE).getUTCDate();
  const time = (ms: number) => (days ? DAY_CLOCK : CLOCK).format(ms);
  return (r) => (r.kind === 'sample' ? time(r.at) : r.minutes === 1 ? time(r.from) : `${time(r.from)} – ${time(r.from + (r.minutes - 1) * MINUTE)}`);
}

/** The table behind the charts, built only once opened (a day is 1,440 minutes). */
function Numbers({ slots, window, rangeName }: { slots: (Sample | null)[]; window: MinuteWindow; rangeName: string }) {
  const [open, setOpen] = useState(false);
  const when = minuteOf(window);
  const columns: Column<Stretch<Sample>>[] = [
    { header: 'Minute (UTC)', cell: when },
    { header: 'SM active (%)', numeric: true, cell: (r) => (r.kind === 'sample' ? r.sample.smActivePct : <span class="muted">{`no samples (${r.minutes} min)`}</span>) },
    { header: 'Memory (GiB per GPU)', numeric: true, cell: (r) => (r.kind === 'sample' ? groupDigits(r.sample.memoryGib) : '—') },
    { header: 'Sampled (device-seconds)', numeric: true, cell: (r) => (r.kind === 'sample' ? groupDigits(String(r.sample.sampledSeconds)) : '—') },
  ];
  return (
    <details class="details" onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>Show the numbers</summary>
      {open && (
        <DataTable
          virtual
          caption={`Utilization per minute, last ${rangeName}, oldest first`}
          columns={columns}
          rows={stretches(slots, window)}
          rowKey={(r) => String(r.kind === 'sample' ? r.at : r.from)}
          empty="No minutes."
        />
      )}
    </details>
  );
}

/** A GPU with its slots over the charts' window. */
interface GpuRow {
  gpu: Gpu;
  slots: (GpuSample | null)[];
  latest: GpuSample | null;
  /** Minutes of the window with a sample. */
  sampled: number;
  charted: boolean;
}

/**
 * Each GPU's own SM activity (more than one GPU): a line per GPU, at most GPU_LINES (the
 * busiest in their latest minute), every GPU's latest minute in a table, and the
 * numbers per minute.
 */
function PerGpu({ gpus, axis, rangeName }: { gpus: readonly Gpu[]; axis: Axis; rangeName: string }) {
  const { window } = axis;
  const charted = new Set(chartedGpus(gpus));
  const rows: GpuRow[] = [...gpus]
    .sort((a, b) => a.index - b.index)
    .map((gpu) => {
      const slots = minuteSlots(gpu.utilization, window);
      return { gpu, slots, latest: latestSample(gpu.utilization), sampled: slots.filter((s) => s !== null).length, charted: charted.has(gpu) };
    });
  const drawn = rows.filter((r) => r.charted);
  const some = drawn.length < rows.length;
  const title = `SM activity per GPU, last ${rangeName}`;
  const which = some
    ? `the ${drawn.length} of its ${rows.length} GPUs with the highest SM activity in their latest minute with samples (the table below lists every GPU)`
    : `each of its ${rows.length} GPUs`;
  return (
    <>
      <h3 class="subhead">Per GPU</h3>
      <Chart
        title={title}
        description={`Lines: the percentage of time the streaming multiprocessors were active each minute (UTC), 0 to 100 %, one line for ${which}. Minutes without samples are gaps in a line.${window.first > 0 ? ' A dashed line marks when it started.' : ''} "Show the numbers per GPU" lists each minute.`}
        labels={axis.labels}
        ticks={axis.ticks}
        unit="% SM active"
        max={100}
        height={240}
        markers={axis.markers}
        series={drawn.map((r, k) => ({ label: `GPU ${r.gpu.index}`, kind: 'line' as const, colour: k, values: r.slots.map((s) => (s ? Number(s.smActivePct) : null)) }))}
      />
      <DataTable
        caption={`Each GPU's latest minute with samples, last ${rangeName}${some ? `; the chart draws ${drawn.length} of the ${rows.length}` : ''}`}
        columns={gpuColumns(window, some)}
        rows={rows}
        rowKey={(r) => r.gpu.uuid}
        empty="No GPUs."
      />
      <GpuNumbers rows={rows} window={window} rangeName={rangeName} />
    </>
  );
}

function gpuColumns(window: MinuteWindow, some: boolean): Column<GpuRow>[] {
  const since = window.count - window.first;
  const columns: Column<GpuRow>[] = [
    {
      header: 'GPU',
      cell: (r) => (
        <>
          {`GPU ${r.gpu.index} `}
          <code class="muted" title={r.gpu.uuid}>
            {shortId(r.gpu.uuid)}
          </code>
        </>
      ),
    },
    { header: 'Latest minute (UTC)', cell: (r) => (r.latest ? CLOCK.format(Date.parse(r.latest.minute)) : <span class="muted">no samples</span>) },
    { header: 'SM active (%)', numeric: true, cell: (r) => r.latest?.smActivePct ?? '—' },
    { header: 'Memory in use (GiB)', numeric: true, cell: (r) => (r.latest ? groupDigits(r.latest.memoryGib) : '—') },
    { header: 'Minutes with samples', numeric: true, cell: (r) => `${r.sampled} of ${since}` },
  ];
  return some ? [...columns, { header: 'In the chart', cell: (r) => (r.charted ? 'Yes' : 'No') }] : columns;
}

/** The per-GPU chart's table, a column per GPU, built only once opened. */
function GpuNumbers({ rows, window, rangeName }: { rows: GpuRow[]; window: MinuteWindow; rangeName: string }) {
  const [open, setOpen] = useState(false);
  const span = lived(window);
  const when = minuteOf(span);
  const perMinute = acrossGpus(rows.map((r) => r.slots.slice(window.first)), span.count);
  const columns: Column<Stretch<(GpuSample | null)[]>>[] = [
    { header: 'Minute (UTC)', cell: (r) => (r.kind === 'sample' ? when(r) : `${when(r)}, no samples`) },
    ...rows.map((g, k) => ({
      header: `GPU ${g.gpu.index} SM active (%)`,
      numeric: true,
      cell: (r: Stretch<(GpuSample | null)[]>) => (r.kind === 'sample' ? (r.sample[k]?.smActivePct ?? '—') : '—'),
    })),
  ];
  return (
    <details class="details" onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>Show the numbers per GPU</summary>
      {open && (
        <DataTable
          virtual
          caption={`SM activity per GPU per minute, last ${rangeName}, oldest first`}
          columns={columns}
          rows={stretches(perMinute, span)}
          rowKey={(r) => String(r.kind === 'sample' ? r.at : r.from)}
          empty="No minutes."
        />
      )}
    </details>
  );
}
