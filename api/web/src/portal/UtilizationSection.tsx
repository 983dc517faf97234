import { useEffect, useState } from 'preact/hooks';
import type { AllocationStatus } from '../gql/schema';
import { groupDigits } from '../lib/format';
import { useQuery } from '../lib/hooks';
import { Chart } from '../ui/Chart';
import { type Column, DataTable } from '../ui/DataTable';
import { ErrorNotice, Loading } from '../ui/Notice';
import { Section } from '../ui/Page';
import { Segmented } from '../ui/Segmented';
import { Stat } from '../ui/Stat';
import { AllocationUtilization, type AllocationUtilizationResult } from './operations';
import { lived, MINUTE, type MinuteWindow, minuteSlots, minuteStep, minuteWindow, type Stretch, stretches } from './utilization';

type Found = AllocationUtilizationResult['allocation'];
type Sample = Found['utilization'][number];

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
 * The allocation's GPUs minute by minute (`Allocation.utilization`): SM activity over all
 * of them and memory in use per GPU, over the last hour, 6 or 24 hours of its life;
 * asked again every 15 s while it runs. Minutes without samples are gaps.
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
        {`SM activity of its ${gpus === 1 ? 'GPU' : `${gpus} GPUs together`} and memory in use per GPU, minute by minute (UTC)${ended ? ', over the last minutes of its life' : ', refreshed every 15 s'}.`}
      </p>
      <ErrorNotice error={q.error} onRetry={q.reload} />
      {!found && q.loading && <Loading label="Loading utilization…" />}
      {found && <UtilizationCharts found={found} minutes={minutes} rangeName={range.name} ended={ended} busy={q.loading} />}
    </Section>
  );
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

function UtilizationCharts({ found, minutes, rangeName, ended, busy }: ChartsProps) {
  const samples = found.utilization;
  if (samples.length === 0) {
    return <p class="empty">{ended ? `No samples were reported in the last ${rangeName} of its life.` : "No samples yet: the node's agent reports every few seconds."}</p>;
  }
  const window = minuteWindow(found, minutes, Date.now(), samples);
  const slots = minuteSlots(samples, window);
  const at = (i: number) => window.start + i * MINUTE;
  const labels = slots.map((_, i) => CLOCK.format(at(i)));
  const step = minuteStep(window.count);
  const ticks = labels.map((l, i) => (Math.round(at(i) / MINUTE) % step === 0 ? l : null));
  // Before it started there is nothing to sample: no gap, and the chart marks the start.
  const markers = window.first > 0 ? [{ index: window.first, label: `started ${labels[window.first] ?? ''}` }] : [];
  const latest = samples.reduce((l, s) => (Date.parse(s.minute) > Date.parse(l.minute) ? s : l));
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
    </div>
  );
}

/** The table behind the charts, built only once opened (a day is 1,440 minutes). */
function Numbers({ slots, window, rangeName }: { slots: (Sample | null)[]; window: MinuteWindow; rangeName: string }) {
  const [open, setOpen] = useState(false);
  // Past midnight (UTC), each minute says its day.
  const days = new Date(window.start).getUTCDate() !== new Date(window.start + (window.count - 1) * MINUTE).getUTCDate();
  const time = (ms: number) => (days ? DAY_CLOCK : CLOCK).format(ms);
  const columns: Column<Stretch<Sample>>[] = [
    { header: 'Minute (UTC)', cell: (r) => (r.kind === 'sample' ? time(r.at) : r.minutes === 1 ? time(r.from) : `${time(r.from)} – ${time(r.from + (r.minutes - 1) * MINUTE)}`) },
    { header: 'SM active (%)', numeric: true, cell: (r) => (r.kind === 'sample' ? r.sample.smActivePct : <span class="muted">{`no samples (${r.minutes} min)`}</span>) },
    { header: 'Memory (GiB per GPU)', numeric: true, cell: (r) => (r.kind === 'sample' ? groupDigits(r.sample.memoryGib) : '—') },
    { header: 'Sampled (device-seconds)', numeric: true, cell: (r) => (r.kind === 'sample' ? groupDigits(String(r.sample.sampledSeconds)) : '—') },
  ];
  return (
    <details class="details" onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>Show the numbers</summary>
      {open && (
        <DataTable
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
