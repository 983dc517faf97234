import { dateTime, money } from '../lib/format';
import { parseMonth, monthName } from '../lib/month';
import { Badge } from '../ui/Badge';
import type { Column } from '../ui/DataTable';
import { Downloads } from '../ui/Downloads';
import { Link } from '../ui/Link';
import { lineKindLabel, lineKindTone } from './payouts';

const STATEMENT_FORMATS = [
  ['csv', 'CSV'],
  ['pdf', 'PDF'],
] as const;

/** Download links of a provider statement (cookie auth): /v1/provider-statements/{id}/export?format=… */
export function StatementDownloads({ id, number, full }: { id: string; number: string; full?: boolean }) {
  return <Downloads base={`/v1/provider-statements/${encodeURIComponent(id)}/export`} what={`statement ${number}`} formats={STATEMENT_FORMATS} full={full} />;
}

/** "2026-11" → "November 2026" (anything else as it is). */
export function statementMonth(month: string): string {
  const m = parseMonth(month);
  return m ? monthName(m) : month;
}

/** A statement line's kind (`earning`, `reversal`, `credit_note`) as a badge. */
export function LineKindBadge({ kind }: { kind: string }) {
  return <Badge tone={lineKindTone(kind)}>{lineKindLabel(kind)}</Badge>;
}

/** What a row of a statement list shows (`ProviderStatement` without its lines). */
export interface StatementRow {
  id: string;
  number: string;
  month: string;
  currency: string;
  gross: string;
  fees: string;
  slaChargebacks: string;
  net: string;
  lineCount: number;
  closedAt: string;
}

/** The columns of a statement list; `path` is where a statement is read, with its lines. */
export function statementColumns<S extends StatementRow>(path: (statementId: string) => string): Column<S>[] {
  const m = (s: S, amount: string) => money(amount, s.currency);
  return [
    { header: 'Statement', cell: (s) => <Link to={path(s.id)}>{s.number}</Link> },
    { header: 'Month', cell: (s) => statementMonth(s.month) },
    { header: 'Currency', cell: (s) => s.currency },
    { header: 'Gross', numeric: true, cell: (s) => m(s, s.gross) },
    { header: 'Fees', numeric: true, cell: (s) => m(s, s.fees) },
    { header: 'SLA chargebacks', numeric: true, cell: (s) => m(s, s.slaChargebacks) },
    { header: 'Net', numeric: true, cell: (s) => <strong>{m(s, s.net)}</strong> },
    { header: 'Lines', numeric: true, cell: (s) => s.lineCount },
    { header: 'Closed', cell: (s) => dateTime(s.closedAt) },
    { header: 'Downloads', hiddenHeader: true, cell: (s) => <StatementDownloads id={s.id} number={s.number} /> },
  ];
}
