import { dateTime, money } from '../lib/format';
import { Badge } from '../ui/Badge';
import type { Column } from '../ui/DataTable';
import { Link } from '../ui/Link';
import { payoutMethodLabel, payoutStatusLabel, payoutTone, statementLabel } from './payouts';

/** What a row of a payout list shows (`ProviderPayout`). */
export interface PayoutRow {
  id: string;
  number: string;
  statementId: string;
  currency: string;
  amount: string;
  method: string;
  status: string;
  reference: string | null;
  attempts: number;
  lastError: string | null;
  createdAt: string;
  sentAt: string | null;
}

function PayoutStatus({ status }: { status: string }) {
  return <Badge tone={payoutTone(status)}>{payoutStatusLabel(status)}</Badge>;
}

/**
 * The columns of a payout list: `path` is where a statement is read, `numbers` the
 * statement numbers by id (to name the statement each payout pays).
 */
export function payoutColumns<P extends PayoutRow>(path: (statementId: string) => string, numbers: ReadonlyMap<string, string>): Column<P>[] {
  return [
    { header: 'Payout', cell: (p) => p.number },
    { header: 'Statement', cell: (p) => <Link to={path(p.statementId)}>{statementLabel(p.statementId, numbers)}</Link> },
    { header: 'Currency', cell: (p) => p.currency },
    { header: 'Amount', numeric: true, cell: (p) => money(p.amount, p.currency) },
    { header: 'Method', cell: (p) => payoutMethodLabel(p.method) },
    { header: 'Status', cell: (p) => <PayoutStatus status={p.status} /> },
    { header: 'Reference', cell: (p) => (p.reference ? <code class="wrap">{p.reference}</code> : '—') },
    { header: 'Attempts', numeric: true, cell: (p) => p.attempts },
    { header: 'Last error', cell: (p) => (p.lastError ? <span class="small">{p.lastError}</span> : '—') },
    { header: 'Created', cell: (p) => dateTime(p.createdAt) },
    { header: 'Sent', cell: (p) => dateTime(p.sentAt) },
  ];
}
