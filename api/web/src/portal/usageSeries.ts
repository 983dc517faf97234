/**
 * The usage page's series, from the API's buckets: the leading groups of a month and
 * "Other" per day (by allocated unit-seconds or by cost), the hours of the last two days,
 * charges per SKU from the upcoming invoice. Quantities and amounts stay exact decimal
 * strings; only lib/decimal sums them.
 */

import { abs, compare, sum } from '../lib/decimal';

/** How many groups a stacked chart shows before the rest go under "Other". */
export const TOP_GROUPS = 8;

/** What a stacked chart measures: a row's allocated unit-seconds or its cost. */
export type Measure = 'allocatedSeconds' | 'cost';

/** A usage row's value of `measure` ("0" when it has none). */
type Measured = Partial<Record<Measure, string>>;

const value = (r: Measured, measure: Measure): string => r[measure] ?? '0';

const byKey = (a: { key: string }, b: { key: string }) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/** A series of the stacked chart: a group's key, or every other group's. */
export interface StackGroup {
  /** The group's key; null for "Other". */
  key: string | null;
}

export interface Stack {
  groups: StackGroup[];
  /** Per group (in `groups` order), per day (in `days` order): allocated unit-seconds or cost. */
  values: string[][];
}

/**
 * The `n` groups with the most of `measure` in `totals` (the API's rows grouped by the
 * dimension alone), most first, ties by key; groups with none (zero) are left out. The
 * remaining groups with any are one group, "Other", last.
 *
 * A cost can be negative (SLA credit outweighing a group's charges): groups are chosen by
 * size, so a large credit is shown as itself rather than hidden in Other, then ordered by
 * value, most first, so credits come last (the stack's first segments below zero).
 */
export function topGroups(totals: readonly ({ key: string } & Measured)[], n: number = TOP_GROUPS, measure: Measure = 'allocatedSeconds'): StackGroup[] {
  const ranked = totals.filter((r) => compare(value(r, measure), '0') !== 0).sort((a, b) => compare(abs(value(b, measure)), abs(value(a, measure))) || byKey(a, b));
  const shown = ranked.slice(0, n).sort((a, b) => compare(value(b, measure), value(a, measure)) || byKey(a, b));
  const groups: StackGroup[] = shown.map((r) => ({ key: r.key }));
  return ranked.length > n ? [...groups, { key: null }] : groups;
}

/** How many groups of `totals` with any of `measure` are in "Other" (not among `groups`). */
export function otherCount(totals: readonly ({ key: string } & Measured)[], groups: readonly StackGroup[], measure: Measure = 'allocatedSeconds'): number {
  const named = new Set(groups.flatMap((g) => (g.key === null ? [] : [g.key])));
  return totals.filter((r) => compare(value(r, measure), '0') !== 0 && !named.has(r.key)).length;
}

/**
 * The stacked chart's values: `rows` are the API's rows grouped by [DAY, dimension]
 * (`keys` = [day, group]). Each day of `days` gets each group's `measure` ("0" for none);
 * "Other" is the exact sum of that day's other groups (a cost's credits netted). Nothing
 * is summed across days.
 */
export function stackByDay(rows: readonly ({ keys: readonly string[] } & Measured)[], days: readonly string[], groups: readonly StackGroup[], measure: Measure = 'allocatedSeconds'): Stack {
  const named = new Set(groups.flatMap((g) => (g.key === null ? [] : [g.key])));
  const cell = new Map<string, string>();
  const others = new Map<string, string[]>();
  for (const r of rows) {
    const [day = '', group = ''] = r.keys;
    if (named.has(group)) cell.set(`${day}\n${group}`, value(r, measure));
    else others.set(day, [...(others.get(day) ?? []), value(r, measure)]);
  }
  const values = groups.map((g) => days.map((d) => (g.key === null ? sum(others.get(d) ?? []) : cell.get(`${d}\n${g.key}`) ?? '0')));
  return { groups: [...groups], values };
}

/** A LABEL key ("team=ml,env=prod") as shown; "unlabeled" for allocations without labels. */
export function labelSet(key: string): string {
  return key === '' ? 'unlabeled' : key.split(',').join(', ');
}

/** An hour bucket's key as the API writes it: "2026-12-06T14:00:00Z". */
export function hourKey(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 13)}:00:00Z`;
}

const HOUR = 3_600_000;

/**
 * The last `hours` UTC hours up to `now`, the current one included (so far): the range to
 * ask for (`to` is the next hour's start; the API counts nothing past now) and each
 * hour's key, oldest first.
 */
export function lastHours(now: number, hours: number): { from: string; to: string; keys: string[] } {
  const end = Math.floor(now / HOUR) * HOUR + HOUR;
  const start = end - hours * HOUR;
  const keys = Array.from({ length: hours }, (_, i) => hourKey(start + i * HOUR));
  return { from: new Date(start).toISOString(), to: new Date(end).toISOString(), keys };
}

export interface SkuCharge {
  /** The SKU's name; null for lines of no SKU (commitments, credits). */
  sku: string | null;
  amount: string;
}

/**
 * The upcoming invoice's line amounts summed exactly per SKU (SLA credits net against
 * their SKU), the largest first, lines of no SKU last as one row (when there are any).
 */
export function chargesBySku(lines: readonly { sku: string | null; amount: string }[]): SkuCharge[] {
  const amounts = new Map<string | null, string[]>();
  for (const l of lines) amounts.set(l.sku, [...(amounts.get(l.sku) ?? []), l.amount]);
  const rows = [...amounts].map(([sku, list]) => ({ sku, amount: sum(list) }));
  const bySku = rows.filter((r) => r.sku !== null).sort((a, b) => compare(b.amount, a.amount) || ((a.sku ?? '') < (b.sku ?? '') ? -1 : 1));
  return [...bySku, ...rows.filter((r) => r.sku === null)];
}
