/**
 * Pure helpers of the exchange rates page and of the notices of a held statement. No
 * runtime import but lib/decimal and provider-shared/versions: unit-tested.
 */

import { compare, isDecimal } from '../lib/decimal';
import type { StatementHoldLike } from '../provider-shared/statementHold';
import { type VersionState, versionStateLabel, versionStates } from '../provider-shared/versions';

/** Where the rates are read and added. */
export const EXCHANGE_RATES_PATH = '/providers/exchange-rates';

/** What the form can start from: a pair and the instant its rate must be in force at. */
export interface RateNeeded {
  from: string;
  to: string;
  /** An RFC 3339 instant, or empty. */
  at: string;
}

/** The rate a held statement waits for: its pair and the instant the rate must be in force at. */
export function rateNeeded(hold: StatementHoldLike): RateNeeded {
  return { from: hold.from, to: hold.to, at: hold.at };
}

/** The page's path, with the pair (and instant) the form starts from when one is needed. */
export function exchangeRatesPath(needed: RateNeeded | null): string {
  if (!needed) return EXCHANGE_RATES_PATH;
  const params = new URLSearchParams({ from: needed.from, to: needed.to });
  if (needed.at) params.set('at', needed.at);
  return `${EXCHANGE_RATES_PATH}?${params.toString()}`;
}

/** The rate a page's query asks the form to start from (`?from=USD&to=EUR&at=…`). */
export function neededFrom(query: URLSearchParams): RateNeeded | null {
  const from = code(query.get('from') ?? '');
  const to = code(query.get('to') ?? '');
  if (!from && !to) return null;
  const at = query.get('at') ?? '';
  return { from, to, at: Number.isNaN(Date.parse(at)) ? '' : at };
}

function code(s: string): string {
  const c = s.trim().toUpperCase();
  return isCurrencyCode(c) ? c : '';
}

/** Three letters, as ISO 4217 codes are (which ones the API supports is its to say). */
export function isCurrencyCode(s: string): boolean {
  return /^[A-Za-z]{3}$/.test(s.trim());
}

/** "USD → EUR". */
export function pairLabel(from: string, to: string): string {
  return `${from} → ${to}`;
}

/**
 * An RFC 3339 instant as a `datetime-local` value in UTC, to the minute, rounded down (a
 * rate from then is in force at the instant): "2026-12-01T00:00:00+00:00" →
 * "2026-12-01T00:00"; empty when it is not an instant.
 */
export function localUtc(instant: string): string {
  const ms = Date.parse(instant);
  if (!instant || Number.isNaN(ms)) return '';
  return new Date(Math.floor(ms / 60_000) * 60_000).toISOString().slice(0, 16);
}

/**
 * A `datetime-local` value ("2026-11-30T16:00", seconds optional) read as UTC, as RFC 3339
 * ("2026-11-30T16:00:00Z"); null when it is not a real date and time.
 */
export function utcInstantOf(local: string): string | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,3})?)?$/.exec(local.trim());
  if (!m) return null;
  const [, y, mo, d, h, mi, s = '00', frac = ''] = m;
  const plain = `${y}-${mo}-${d}T${h}:${mi}:${s}`;
  // Date.UTC rolls 31 November over into December: such a value is not a date.
  const ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 19) !== plain) return null;
  return `${plain}${frac}Z`;
}

/** The API's bounds of a rate: above 0, at most 1,000,000, at most 10 decimals. */
export function rateProblem(rate: string): string | null {
  const r = rate.trim();
  if (!isDecimal(r) || compare(r, '0') <= 0) return 'Enter a rate above zero, such as 0.9215.';
  if (compare(r, '1000000') > 0) return 'At most 1,000,000.';
  if ((r.split('.')[1] ?? '').replace(/0+$/, '').length > 10) return 'At most 10 decimal places.';
  return null;
}

export interface RateLike {
  from: string;
  to: string;
  effectiveFrom: string;
}

/** Where a rate stands now: the pair's rate in force, one that starts later, or one replaced. */
export type RateState = VersionState;

/** The rates by pair (as the API lists them, by source then target), each pair's newest first. */
export function byPairNewestFirst<R extends RateLike>(rates: readonly R[]): R[] {
  return [...rates].sort((a, b) => a.from.localeCompare(b.from) || a.to.localeCompare(b.to) || Date.parse(b.effectiveFrom) - Date.parse(a.effectiveFrom));
}

/** Each rate's state at `now`, by the rate (the pair's latest start at or before now is in force). */
export function rateStates<R extends RateLike>(rates: readonly R[], now: Date): Map<R, RateState> {
  return versionStates(byPairNewestFirst(rates), now, (r) => `${r.from}\u0000${r.to}`);
}

/** Whether a rate of the pair is in force at `at` (the pair's with a start at or before it). */
export function coveredBy(rates: readonly RateLike[], needed: RateNeeded): boolean {
  const at = Date.parse(needed.at);
  if (Number.isNaN(at)) return false;
  return rates.some((r) => r.from === needed.from && r.to === needed.to && Date.parse(r.effectiveFrom) <= at);
}

/** "In force", "Upcoming", "Replaced". */
export const rateStateLabel = versionStateLabel;

/** The codes worth offering in the form: those of the rates and the providers, sorted, once each. */
export function knownCodes(rates: readonly RateLike[], currencies: readonly string[]): string[] {
  const codes = new Set<string>(currencies.filter(isCurrencyCode).map((c) => c.toUpperCase()));
  for (const r of rates) {
    codes.add(r.from);
    codes.add(r.to);
  }
  return [...codes].sort();
}
