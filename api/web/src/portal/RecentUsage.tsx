import { useState } from 'preact/hooks';
import { useQuery } from '../lib/hooks';
import { Chart, type Series } from '../ui/Chart';
import { type Column, DataTable } from '../ui/DataTable';
import { ErrorNotice, Loading } from '../ui/Notice';
import { Section } from '../ui/Page';
import { Segmented } from '../ui/Segmented';
import { RecentUsage as RecentUsageQuery, type RecentUsageResult } from './operations';
import { chartCost, chartHours, costColumn, hours } from './quantities';
import { lastHours } from './usageSeries';

type Row = RecentUsageResult['usage']['rows'][number];
type Show = 'HOURS' | 'COST';

const SHOWS: { value: Show; label: string }[] = [
  { value: 'HOURS', label: 'Unit-hours' },
  { value: 'COST', label: 'Cost' },
];

const HOURS = 48;
const POLL_MS = 60_000;

const HOUR_LABEL = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', timeZone: 'UTC' });
const CLOCK = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', timeZone: 'UTC' });
const DAY = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', timeZone: 'UTC' });

const COLUMNS: Column<Row>[] = [
  { header: 'Hour (UTC)', cell: (r) => HOUR_LABEL.format(Date.parse(r.key)) },
  { header: 'Allocated (h)', numeric: true, cell: (r) => hours(r.allocatedSeconds) },
  { header: 'Active (GPU-h)', numeric: true, cell: (r) => hours(r.activeSeconds) },
];

/**
 * Allocated and active hours, or what they cost, per UTC hour over the last 48, from the
 * API's hour buckets; asked again every minute.
 */
export function RecentUsage() {
  const [show, setShow] = useState<Show>('HOURS');
  // The range moves on at each hour; within one, the same variables are asked again.
  const range = lastHours(Date.now(), HOURS);
  const q = useQuery(RecentUsageQuery, { from: range.from, to: range.to }, { pollMs: POLL_MS });
  const rows = q.data?.usage.rows ?? [];
  const currency = q.data?.usage.currency ?? '';
  const byKey = new Map(rows.map((r) => [r.key, r]));
  const at = range.keys.map((k) => Date.parse(k));
  const pick = (f: (r: Row) => string, position: (v: string) => number = chartHours) => range.keys.map((k) => position(f(byKey.get(k) ?? ZERO)));
  const cost = show === 'COST';
  const chart: { title: string; description: string; unit: string; series: Series[] } = cost
    ? {
        title: 'Cost per hour, last 48 hours',
        description: `Bars: what each hour's usage cost (UTC) in ${currency}, the current hour so far, at its billing period's average prices, before commitment discounts, credits and tax. Refreshed every minute; the table below has the numbers.`,
        unit: currency,
        series: [{ label: `Usage cost (${currency})`, kind: 'bar', colour: 2, values: pick((r) => r.cost, chartCost) }],
      }
    : {
        title: 'Usage per hour, last 48 hours',
        description: 'Bars: unit-hours allocated each hour (UTC), the current hour so far. Line: GPU-hours the GPUs were active. Refreshed every minute; the table below has the numbers.',
        unit: 'hours',
        series: [
          { label: 'Allocated unit-hours', kind: 'bar', values: pick((r) => r.allocatedSeconds) },
          { label: 'Active GPU-hours', kind: 'line', values: pick((r) => r.activeSeconds) },
        ],
      };
  return (
    <Section title="Last 48 hours" actions={<Segmented label="Show" options={SHOWS} value={show} onChange={setShow} />}>
      <ErrorNotice error={q.error} onRetry={q.reload} />
      {!q.data && q.loading && <Loading label="Loading the last 48 hours…" />}
      {q.data && (
        <>
          <Chart
            title={chart.title}
            description={chart.description}
            labels={at.map((t) => HOUR_LABEL.format(t))}
            ticks={at.map((t) => (new Date(t).getUTCHours() % 6 === 0 ? (new Date(t).getUTCHours() === 0 ? DAY.format(t) : CLOCK.format(t)) : null))}
            unit={chart.unit}
            height={240}
            series={chart.series}
          />
          <details class="details">
            <summary>Show the numbers</summary>
            <DataTable caption="Usage per hour, last 48 hours (UTC)" columns={[...COLUMNS, costColumn(currency)]} rows={[...rows].sort((a, b) => (a.key < b.key ? -1 : 1))} rowKey={(r) => r.key} empty="No usage in the last 48 hours." />
          </details>
        </>
      )}
    </Section>
  );
}

const ZERO: Row = { key: '', allocatedSeconds: '0', activeSeconds: '0', cost: '0' };
