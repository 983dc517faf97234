import { date, money, period } from '../../lib/format';
import { useQuery } from '../../lib/hooks';
import { addMonths, daysOf, type Month, monthKey, monthName, monthRange, parseMonth, thisMonth } from '../../lib/month';
import { useLocation } from '../../lib/router';
import { Chart } from '../../ui/Chart';
import { DataTable } from '../../ui/DataTable';
import { Stat } from '../../ui/Stat';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { ChargesBySku } from '../ChargesBySku';
import { SpendSummary, type SpendSummaryResult, UsageReport, type UsageReportResult } from '../operations';
import { chartCost, chartHours, hours, quantity, usageColumns, usageCost } from '../quantities';
import { RecentUsage } from '../RecentUsage';
import { UsageBreakdown } from '../UsageBreakdown';

type Row = UsageReportResult['byDay']['rows'][number];

/**
 * A month's usage: totals (its cost included), allocated and active hours and the cost
 * per day, the last 48 hours by the hour (this month), hours or cost per day by SKU,
 * allocation or label, and per SKU with the charges so far (this month).
 */
export function UsagePage() {
  const { query } = useLocation();
  const month = parseMonth(query.get('month')) ?? thisMonth();
  const current = monthKey(month) === monthKey(thisMonth());
  const report = useQuery(UsageReport, monthRange(month));
  const spend = useQuery(SpendSummary, {}, { skip: !current });
  const data = report.data;
  return (
    <Page title="Usage" lead={<MonthNav month={month} />}>
      <ErrorNotice error={report.error} onRetry={report.reload} />
      {!data && report.loading && <Loading label="Loading usage…" />}
      {data && (
        <>
          <Totals report={data} spend={current ? spend.data : null} />
          <Section title="Daily usage">
            <DailyChart month={month} rows={data.byDay.rows} />
            <DailyCostChart month={month} rows={data.byDay.rows} currency={data.byDay.currency} />
            <details class="details">
              <summary>Show the numbers</summary>
              <DataTable caption={`Usage per day, ${monthName(month)}`} columns={[{ header: 'Day', cell: (r: Row) => r.key }, ...usageColumns(data.byDay.currency)]} rows={data.byDay.rows} rowKey={(r) => r.key} empty="No usage this month." />
            </details>
          </Section>
          {current && <RecentUsage />}
          <UsageBreakdown month={month} />
          <div class={current && spend.data ? 'side-by-side' : undefined}>
            <Section title="By SKU">
              <DataTable caption={`Usage per SKU, ${monthName(month)}`} hideCaption columns={[{ header: 'SKU', cell: (r: Row) => r.key || '—' }, ...usageColumns(data.bySku.currency)]} rows={data.bySku.rows} rowKey={(r) => r.key} empty="No usage this month." />
            </Section>
            {current && spend.data && <ChargesBySku invoice={spend.data.upcomingInvoice} />}
          </div>
        </>
      )}
    </Page>
  );
}

function MonthNav({ month }: { month: Month }) {
  const prev = addMonths(month, -1);
  const next = addMonths(month, 1);
  const future = monthKey(next) > monthKey(thisMonth());
  return (
    <span class="month-nav">
      <Link to={`/usage?month=${monthKey(prev)}`} aria-label={`Previous month, ${monthName(prev)}`}>
        ←
      </Link>
      <strong>{monthName(month)}</strong> (UTC)
      {!future && (
        <Link to={`/usage?month=${monthKey(next)}`} aria-label={`Next month, ${monthName(next)}`}>
          →
        </Link>
      )}
    </span>
  );
}

function Totals({ report, spend }: { report: UsageReportResult; spend: SpendSummaryResult | null }) {
  const total = report.total.rows[0];
  return (
    <div class="stats">
      <Stat label="Allocated" value={`${hours(total?.allocatedSeconds)} h`} note="unit-hours, billed" />
      <Stat label="GPU active" value={`${hours(total?.activeSeconds)} h`} note="SM-active GPU-hours" />
      <Stat label="SLA credit" value={`${hours(total?.slaCreditSeconds)} h`} note="on failed hardware, not billed" />
      <Stat label="Energy" value={`${quantity(total?.energyKwh ?? '0', 1)} kWh`} />
      <Stat label="Usage cost" value={usageCost(total?.cost ?? '0', report.total.currency)} note="before discounts, credits and tax" />
      {spend && (
        <Stat label="Charges so far" value={money(spend.upcomingInvoice.total, spend.upcomingInvoice.currency)} note={`billing period ${period(spend.upcomingInvoice.periodStart, spend.upcomingInvoice.periodEnd)}`} />
      )}
      {spend?.budget && (
        <Stat
          label="Budget"
          value={money(spend.budget.spend, spend.budget.currency)}
          note={`of ${money(spend.budget.monthlyLimit, spend.budget.currency)} · ${spend.budget.blockedSince ? 'limit reached: new orders are refused' : spend.budget.hardCap ? 'hard cap' : 'alerts only'}`}
        />
      )}
    </div>
  );
}

function DailyChart({ month, rows }: { month: Month; rows: Row[] }) {
  const days = daysOf(month);
  const byKey = new Map(rows.map((r) => [r.key, r]));
  const today = new Date().toISOString().slice(0, 10);
  const series = (pick: (r: Row) => string) =>
    days.map((d) => (d > today ? null : chartHours(pick(byKey.get(d) ?? ZERO))));
  return (
    <Chart
      title={`Usage per day, ${monthName(month)}`}
      description="Bars: unit-hours allocated each day (UTC). Line: GPU-hours the GPUs were active. The table below has the numbers."
      labels={days.map((d) => date(d).replace(/ \d{4}$/, ''))}
      unit="hours"
      series={[
        { label: 'Allocated unit-hours', kind: 'bar', values: series((r) => r.allocatedSeconds) },
        { label: 'Active GPU-hours', kind: 'line', values: series((r) => r.activeSeconds) },
      ]}
    />
  );
}

/** What each day's usage cost: bars in the currency, below zero for a day of more SLA credit than charges. */
function DailyCostChart({ month, rows, currency }: { month: Month; rows: Row[]; currency: string }) {
  const days = daysOf(month);
  const byKey = new Map(rows.map((r) => [r.key, r]));
  const today = new Date().toISOString().slice(0, 10);
  return (
    <Chart
      title={`Cost per day, ${monthName(month)}`}
      description={`Bars: what each day's usage cost (UTC) in ${currency}, at its billing period's average prices, before commitment discounts, credits and tax; SLA credit counts against it. The table below has the numbers.`}
      labels={days.map((d) => date(d).replace(/ \d{4}$/, ''))}
      unit={currency}
      height={220}
      series={[{ label: `Usage cost (${currency})`, kind: 'bar', colour: 2, values: days.map((d) => (d > today ? null : chartCost((byKey.get(d) ?? ZERO).cost))) }]}
    />
  );
}

const ZERO: Row = { key: '', allocatedSeconds: '0', activeSeconds: '0', energyKwh: '0', slaCreditSeconds: '0', cost: '0' };
