import { parseMonth, monthName } from '../lib/month';
import { Badge } from '../ui/Badge';
import { Downloads } from '../ui/Downloads';
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

/** Where a provider's statement is read, with its lines. */
export function statementPath(providerId: string, statementId: string): string {
  return `/providers/${encodeURIComponent(providerId)}/statements/${encodeURIComponent(statementId)}`;
}
