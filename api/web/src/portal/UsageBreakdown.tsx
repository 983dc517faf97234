import { useState } from 'preact/hooks';
import { compare } from '../lib/decimal';
import { date } from '../lib/format';
import { useQuery } from '../lib/hooks';
import { shortId } from '../lib/ids';
import { daysOf, type Month, monthKey, monthName, monthRange } from '../lib/month';
import { Chart } from '../ui/Chart';
import { type Column, DataTable } from '../ui/DataTable';
import { Link } from '../ui/Link';
import { ErrorNotice, Loading } from '../ui/Notice';
import { Section } from '../ui/Page';
import { Segmented } from '../ui/Segmented';
import { UsageBreakdown as UsageBreakdownQuery, type UsageBreakdownResult } from './operations';
import { chartCost, chartHours, hours, usageColumns, usageCost } from './quantities';
import { labelSet, type Measure, otherCount, type StackGroup, stackByDay, TOP_GROUPS, topGroups } from './usageSeries';

type Dimension = 'SKU' | 'ALLOCATION' | 'LABEL';
type Show = 'HOURS' | 'COST';
type GroupRow = UsageBreakdownResult['groups']['rows'][number];

const DIMENSIONS: { value: Dimension; label: string }[] = [
  { value: 'SKU', label: 'SKU' },
  { value: 'ALLOCATION', label: 'Allocation' },
  { value: 'LABEL', label: 'Label' },
];

const SHOWS: { value: Show; label: string }[] = [
  { value: 'HOURS', label: 'Unit-hours' },
  { value: 'COST', label: 'Cost' },
];

const NOUN: Record<Dimension, string> = { SKU: 'SKU', ALLOCATION: 'allocation', LABEL: 'label set' };

/** A month's allocated hours or usage cost per day, stacked by SKU, allocation or label set. */
export function UsageBreakdown({ month }: { month: Month }) {
  const [by, setBy] = useState<Dimension>('SKU');
  const [show, setShow] = useState<Show>('HOURS');
  return (
    <Section
      title="By SKU, allocation or label"
      actions={
        <div class="section-actions">
          <Segmented label="Group by" options={DIMENSIONS} value={by} onChange={setBy} />
          <Segmented label="Show" options={SHOWS} value={show} onChange={setShow} />
        </div>
      }
    >
      {/* A new dimension or month starts afresh: no chart of one grouping with another's keys.
          Hours and cost are the same rows: switching between them asks nothing again. */}
      <Breakdown key={`${by} ${monthKey(month)}`} month={month} by={by} show={show} />
    </Section>
  );
}

/** What a group is called: a SKU's name, an allocation's short id, a label set. */
function groupName(by: Dimension, key: string): string {
  if (by === 'ALLOCATION') return key ? shortId(key) : '—';
  if (by === 'LABEL') return labelSet(key);
  return key || '—';
}

function GroupCell({ by, id }: { by: Dimension; id: string }) {
  if (by === 'ALLOCATION' && id) return <Link to={`/allocations/${id}`} aria-label={`Allocation ${shortId(id)}`}>{shortId(id)}</Link>;
  return <>{groupName(by, id)}</>;
}

function Breakdown({ month, by, show }: { month: Month; by: Dimension; show: Show }) {
  const q = useQuery(UsageBreakdownQuery, { ...monthRange(month), by });
  if (!q.data) return q.error ? <ErrorNotice error={q.error} onRetry={q.reload} /> : <Loading label="Loading usage…" />;
  const cost = show === 'COST';
  const measure: Measure = cost ? 'cost' : 'allocatedSeconds';
  const currency = q.data.groups.currency;
  const groups = topGroups(q.data.groups.rows, TOP_GROUPS, measure);
  if (groups.length === 0) return <p class="empty">{cost ? 'No usage cost this month.' : 'No allocated hours this month.'}</p>;
  const days = daysOf(month);
  const stack = stackByDay(q.data.perDay.rows, days, groups, measure);
  const today = new Date().toISOString().slice(0, 10);
  const others = otherCount(q.data.groups.rows, groups, measure);
  const credit = cost && stack.values.some((v) => v.some((c) => compare(c, '0') < 0));
  const seriesName = (g: StackGroup) => (g.key === null ? `Other (${others} ${others === 1 ? NOUN[by] : `${NOUN[by]}s`})` : groupName(by, g.key));
  const position = cost ? chartCost : chartHours;
  const shownValue = (v: string | undefined) => (cost ? usageCost(v ?? '0', currency) : hours(v));
  const series = stack.groups.map((g, k) => ({
    label: seriesName(g),
    kind: 'bar' as const,
    colour: g.key === null ? ('other' as const) : k,
    values: (stack.values[k] ?? []).map((s, i) => ((days[i] ?? '') > today ? null : position(s))),
    ...(by === 'ALLOCATION' && g.key ? { to: `/allocations/${g.key}` } : {}),
  }));
  const shown = days.map((day, i) => ({ day, i })).filter(({ i }) => stack.values.some((v) => compare(v[i] ?? '0', '0') !== 0));
  const dayColumns: Column<{ day: string; i: number }>[] = [
    { header: 'Day', cell: (r) => r.day },
    ...stack.groups.map((g, k) => ({ header: seriesName(g), numeric: true, cell: (r: { i: number }) => shownValue(stack.values[k]?.[r.i]) })),
  ];
  const totalColumns: Column<GroupRow>[] = [{ header: by === 'LABEL' ? 'Label set' : by === 'SKU' ? 'SKU' : 'Allocation', cell: (r) => <GroupCell by={by} id={r.key} /> }, ...usageColumns(currency)];
  const title = cost ? `Cost per day by ${NOUN[by]}, ${monthName(month)}` : `Allocated unit-hours per day by ${NOUN[by]}, ${monthName(month)}`;
  const description = cost
    ? `Stacked bars: what each day's usage cost (UTC) in ${currency}, at its billing period's average prices, before commitment discounts, credits and tax; one colour per ${NOUN[by]}${others > 0 ? ` for the ${TOP_GROUPS} with the largest cost this month (a credit by its size), the rest together as Other` : ''}.${credit ? ' SLA credit is negative: its bars hang below the zero line.' : ''} "Show the numbers" has them per day and the month's totals.`
    : `Stacked bars: unit-hours allocated each day (UTC), one colour per ${NOUN[by]}${others > 0 ? ` for the ${TOP_GROUPS} with the most this month, the rest together as Other` : ''}. "Show the numbers" has them per day and the month's totals.`;
  return (
    <>
      <Chart title={title} description={description} labels={days.map((d) => date(d).replace(/ \d{4}$/, ''))} unit={cost ? currency : 'unit-hours'} stacked series={series} />
      <details class="details">
        <summary>Show the numbers</summary>
        <h3 class="subhead">Per day</h3>
        <DataTable caption={`${title}, in ${cost ? currency : 'hours'}`} hideCaption columns={dayColumns} rows={shown} rowKey={(r) => r.day} empty={cost ? 'No usage cost this month.' : 'No allocated hours this month.'} />
        <h3 class="subhead">{`The month per ${NOUN[by]}`}</h3>
        <DataTable virtual caption={`Usage per ${NOUN[by]}, ${monthName(month)}`} hideCaption columns={totalColumns} rows={q.data.groups.rows} rowKey={(r) => r.key} empty="No usage this month." />
      </details>
    </>
  );
}
