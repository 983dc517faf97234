import { useQuery } from '../lib/hooks';
import { Chart } from '../ui/Chart';
import { type Column, DataTable } from '../ui/DataTable';
import { ErrorNotice, Loading } from '../ui/Notice';
import { Section } from '../ui/Page';
import { RecentUsage as RecentUsageQuery, type RecentUsageResult } from './operations';
import { chartHours, hours } from './quantities';
import { lastHours } from './usageSeries';

type Row = RecentUsageResult['usage']['rows'][number];

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

/** Allocated and active hours per UTC hour over the last 48, from the API's hour buckets; asked again every minute. */
export function RecentUsage() {
  // The range moves on at each hour; within one, the same variables are asked again.
  const range = lastHours(Date.now(), HOURS);
  const q = useQuery(RecentUsageQuery, { from: range.from, to: range.to }, { pollMs: POLL_MS });
  const rows = q.data?.usage.rows ?? [];
  const byKey = new Map(rows.map((r) => [r.key, r]));
  const at = range.keys.map((k) => Date.parse(k));
  const pick = (f: (r: Row) => string) => range.keys.map((k) => chartHours(f(byKey.get(k) ?? ZERO)));
  return (
    <Section title="Last 48 hours">
      <ErrorNotice error={q.error} onRetry={q.reload} />
      {!q.data && q.loading && <Loading label="Loading the last 48 hours…" />}
      {q.data && (
        <>
          <Chart
            title="Usage per hour, last 48 hours"
            description="Bars: unit-hours allocated each hour (UTC), the current hour so far. Line: GPU-hours the GPUs were active. Refreshed every minute; the table below has the numbers."
            labels={at.map((t) => HOUR_LABEL.format(t))}
            ticks={at.map((t) => (new Date(t).getUTCHours() % 6 === 0 ? (new Date(t).getUTCHours() === 0 ? DAY.format(t) : CLOCK.format(t)) : null))}
            unit="hours"
            height={240}
            series={[
              { label: 'Allocated unit-hours', kind: 'bar', values: pick((r) => r.allocatedSeconds) },
              { label: 'Active GPU-hours', kind: 'line', values: pick((r) => r.activeSeconds) },
            ]}
          />
          <details class="details">
            <summary>Show the numbers</summary>
            <DataTable caption="Usage per hour, last 48 hours (UTC)" columns={COLUMNS} rows={[...rows].sort((a, b) => (a.key < b.key ? -1 : 1))} rowKey={(r) => r.key} empty="No usage in the last 48 hours." />
          </details>
        </>
      )}
    </Section>
  );
}

const ZERO: Row = { key: '', allocatedSeconds: '0', activeSeconds: '0' };
