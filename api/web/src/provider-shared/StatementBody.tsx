import { dateTime, enumLabel, groupDigits, money, period } from '../lib/format';
import { shortId } from '../lib/ids';
import { type Column, DataTable } from '../ui/DataTable';
import { DescriptionList } from '../ui/DescriptionList';
import { Link } from '../ui/Link';
import { Section } from '../ui/Page';
import { type KindTotal, kindCount, linesByKind } from './payouts';
import { LineKindBadge, type StatementRow, statementMonth } from './statements';

/** A line of a provider statement (`ProviderStatementLine`). */
export interface StatementLine {
  position: number;
  kind: string;
  allocationId: string;
  nodeId: string;
  sku: string;
  form: string;
  region: string;
  agreementVersion: number;
  unitHours: string;
  revenue: string;
  revenueCurrency: string;
  gross: string;
  fee: string;
  slaChargeback: string;
  net: string;
  note: string | null;
  exchangeRate: string | null;
}

/** One statement read with its lines (`providerStatement`). */
export interface StatementDetail extends StatementRow {
  periodStart: string;
  periodEnd: string;
  lines: StatementLine[] | null;
}

/**
 * A statement's totals, its lines by kind and every line (a node's id links to the
 * app's `/nodes/:id`; an allocation shows only as its id).
 */
export function StatementBody({ statement: s }: { statement: StatementDetail }) {
  const m = (amount: string) => money(amount, s.currency);
  const lines = s.lines ?? [];
  // The rate column only when a line was converted (a provider paid in its tenants' currency has none).
  const converted = lines.some((l) => l.exchangeRate);
  return (
    <>
      <Section title="Summary">
        <DescriptionList
          items={[
            ['Month', statementMonth(s.month)],
            ['Period', period(s.periodStart, s.periodEnd)],
            ['Currency', s.currency],
            ['Gross', m(s.gross)],
            ['Fees', m(s.fees)],
            ['SLA chargebacks', m(s.slaChargebacks)],
            ['Net', <strong>{m(s.net)}</strong>],
            ['Lines', s.lineCount],
            ['Closed', dateTime(s.closedAt)],
          ]}
        />
      </Section>
      <Section title="Lines">
        {lines.length > 0 && (
          <>
            <h3 class="subhead">By kind</h3>
            <DataTable caption="Lines by kind" hideCaption columns={kindColumns(s.currency)} rows={linesByKind(lines)} rowKey={(k) => k.kind} empty="" compact />
            <h3 class="subhead">Every line</h3>
          </>
        )}
        {converted && (
          <p class="muted small">
            Revenue invoiced in another currency was converted into {s.currency}, with its SLA credit, at the line's rate ({s.currency} per unit of the revenue's currency): the rate in force at the end of its invoice's period.
          </p>
        )}
        <DataTable virtual caption={`Lines of statement ${s.number}`} hideCaption columns={lineColumns(s.currency, converted)} rows={lines} rowKey={(l) => String(l.position)} empty="No lines: nothing was earned this month." />
      </Section>
    </>
  );
}

function kindColumns(currency: string): Column<KindTotal>[] {
  return [
    { header: 'Kind', cell: (k) => <LineKindBadge kind={k.kind} /> },
    { header: 'Lines', numeric: true, cell: (k) => kindCount(k.kind, k.count) },
    { header: 'Net', numeric: true, cell: (k) => money(k.net, currency) },
  ];
}

function lineColumns(currency: string, converted: boolean): Column<StatementLine>[] {
  const m = (amount: string) => money(amount, currency);
  const rate: Column<StatementLine>[] = converted ? [{ header: `Rate to ${currency}`, numeric: true, cell: (l) => (l.exchangeRate ? `× ${groupDigits(l.exchangeRate)}` : '—') }] : [];
  return [
    { header: '#', numeric: true, cell: (l) => l.position },
    { header: 'Kind', cell: (l) => <LineKindBadge kind={l.kind} /> },
    { header: 'Allocation', cell: (l) => <code title={l.allocationId}>{shortId(l.allocationId)}</code> },
    {
      header: 'Node',
      cell: (l) => (
        <Link to={`/nodes/${encodeURIComponent(l.nodeId)}`}>
          <code>{shortId(l.nodeId)}</code>
        </Link>
      ),
    },
    { header: 'SKU', cell: (l) => l.sku },
    { header: 'Form', cell: (l) => enumLabel(l.form) },
    { header: 'Region', cell: (l) => l.region },
    { header: 'Terms', cell: (l) => `v${l.agreementVersion}` },
    { header: 'Unit-hours', numeric: true, cell: (l) => groupDigits(l.unitHours) },
    { header: 'Revenue', numeric: true, cell: (l) => money(l.revenue, l.revenueCurrency) },
    ...rate,
    { header: 'Gross', numeric: true, cell: (l) => m(l.gross) },
    { header: 'Fee', numeric: true, cell: (l) => m(l.fee) },
    { header: 'SLA chargeback', numeric: true, cell: (l) => m(l.slaChargeback) },
    { header: 'Net', numeric: true, cell: (l) => <strong>{m(l.net)}</strong> },
    { header: 'Note', cell: (l) => (l.note ? <span class="small">{l.note}</span> : '—') },
  ];
}
