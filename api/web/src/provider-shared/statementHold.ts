/** Why a provider's next statement is held, as a sentence. No runtime import but lib/format: unit-tested. */

import { dateTime } from '../lib/format';

/** Why a provider's next statement is held (`Provider.statementHeld`, a `StatementHold`). */
export interface StatementHoldLike {
  reason: string;
  from: string;
  to: string;
  /** An RFC 3339 instant. */
  at: string;
}

const INSTANT = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})/g;

/**
 * A held statement's reason as a sentence to show: capitalized, its instants as the
 * consoles write them ("No USD→EUR exchange rate in force at 1 Dec 2026, 00:00 UTC, the
 * end of an invoice's period."), ending with a full stop.
 */
export function readableReason(reason: string): string {
  const s = reason.trim().replace(INSTANT, (instant) => dateTime(instant));
  if (!s) return s;
  return `${s.charAt(0).toUpperCase()}${s.slice(1)}${/[.!?]$/.test(s) ? '' : '.'}`;
}
