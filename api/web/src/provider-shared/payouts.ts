/** Pure helpers of provider statements and payouts (the console's and the provider console's), by the API's lower-case words. */

import { multiply, sum } from '../lib/decimal';
import { shortId } from '../lib/ids';
import type { Tone } from '../ui/Badge';

/** A statement line's kind, in the order a statement reads. */
export const LINE_KINDS = ['earning', 'reversal', 'credit_note'] as const;

const LINE_KIND_LABELS: Record<string, string> = { earning: 'Earning', reversal: 'Reversal', credit_note: 'Credit note' };
const LINE_KIND_TONES: Record<string, Tone> = { earning: 'good', reversal: 'bad', credit_note: 'warn' };

/** "credit_note" → "Credit note" (an unknown kind as it is). */
export function lineKindLabel(kind: string): string {
  return LINE_KIND_LABELS[kind] ?? kind;
}

export function lineKindTone(kind: string): Tone {
  return LINE_KIND_TONES[kind] ?? 'neutral';
}

export interface KindTotal {
  kind: string;
  count: number;
  /** The lines' net, summed exactly. */
  net: string;
}

/** The lines grouped by kind (statement order first, any other kind after), with their count and net. */
export function linesByKind(lines: readonly { kind: string; net: string }[]): KindTotal[] {
  const groups = new Map<string, string[]>();
  for (const kind of LINE_KINDS) groups.set(kind, []);
  for (const l of lines) {
    const nets = groups.get(l.kind) ?? [];
    nets.push(l.net);
    groups.set(l.kind, nets);
  }
  return [...groups]
    .filter(([, nets]) => nets.length > 0)
    .map(([kind, nets]) => ({ kind, count: nets.length, net: sum(nets) }));
}

/** "3 earnings", "1 credit note". */
export function kindCount(kind: string, count: number): string {
  const label = lineKindLabel(kind).toLowerCase();
  return `${count} ${label}${count === 1 ? '' : 's'}`;
}

export const MANUAL = 'manual';
export const SEPA = 'sepa_credit_transfer';
export const QUEUED = 'queued';

const STATUS_TONES: Record<string, Tone> = { queued: 'info', sent: 'good', failed: 'bad' };
const METHOD_LABELS: Record<string, string> = { manual: 'Manual', stripe_connect: 'Stripe Connect', sepa_credit_transfer: 'SEPA credit transfer' };

export function payoutTone(status: string): Tone {
  return STATUS_TONES[status] ?? 'neutral';
}

/** "queued" → "Queued". */
export function payoutStatusLabel(status: string): string {
  return status ? status.charAt(0).toUpperCase() + status.slice(1).replace(/_/g, ' ') : status;
}

/** "sepa_credit_transfer" → "SEPA credit transfer". */
export function payoutMethodLabel(method: string): string {
  return METHOD_LABELS[method] ?? method;
}

interface PayoutLike {
  method: string;
  status: string;
}

/** A queued payout of a manual provider: the operator records the bank payment by hand. */
export function recordable(p: PayoutLike): boolean {
  return p.method === MANUAL && p.status === QUEUED;
}

/** Whether a SEPA file would pay any of these payouts. */
export function sepaQueued(payouts: readonly PayoutLike[]): boolean {
  return payouts.some((p) => p.method === SEPA && p.status === QUEUED);
}

/** The statement a payout came from, by its number where it is known, else by a short id. */
export function statementLabel(statementId: string, numbers: ReadonlyMap<string, string>): string {
  return numbers.get(statementId) ?? shortId(statementId);
}

/** "Closed 2 statements", "Closed 1 statement"; none: every ended month has one already. */
export function closedNote(count: number): string {
  if (count === 0) return 'Closed 0 statements: every ended month has one already.';
  return `Closed ${count} statement${count === 1 ? '' : 's'}.`;
}

/** The SEPA file's download name: its message id (what the bank reports back), as a safe file name. */
export function sepaFileName(messageId: string): string {
  const safe = messageId.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[.-]+/, '');
  return `${safe || 'payouts'}.xml`;
}

/** A fraction of 0 to 1 ("0.9876") as a percentage ("98.76%"), exactly, without trailing zeros. */
export function percent(fraction: string): string {
  const p = multiply(fraction, 100);
  const trimmed = p.includes('.') ? p.replace(/0+$/, '').replace(/\.$/, '') : p;
  return `${trimmed}%`;
}
