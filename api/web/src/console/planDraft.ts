/**
 * The "New version" form's draft and its conversion to `PlanVersionInput`. Prices stay
 * the strings typed (or carried over), never numbers. No runtime import: unit-tested.
 */

import type { Metric, PlanVersionInput, RateInput, SkuForm, TierInput, TiersMode } from '../gql/schema';
import { compare } from '../lib/decimal';

export interface SourceTier {
  upTo: string | null;
  unitPrice: string;
  flatFee: string | null;
}

/** A rate as `plans` answers it. */
export interface SourceRate {
  sku: string;
  metric: Metric;
  tiersMode: TiersMode;
  unitPrice: string | null;
  spotUnitPrice: string | null;
  packageSize: string | null;
  packagePrice: string | null;
  tiers: SourceTier[];
}

export interface SourceVersion {
  version: number;
  currency: string;
  minimumBillableSeconds: number;
  commitment: { monthlyMinimum: string; discountPct: string } | null;
  rates: SourceRate[];
}

/** A tier of the draft, as typed: an empty fee is none; the last tier's bound is not used (no limit). */
export interface DraftTier {
  upTo: string;
  unitPrice: string;
  flatFee: string;
}

/**
 * A rate of the draft, every price as typed (an empty spot price: none). It keeps the
 * fields of every mode, so switching modes back and forth loses nothing; only those of
 * its mode are sent.
 */
export interface DraftRate {
  sku: string;
  metric: Metric;
  tiersMode: TiersMode;
  unitPrice: string;
  spotUnitPrice: string;
  tiers: DraftTier[];
  packageSize: string;
  packagePrice: string;
}

/** The most tiers a rate may have (as the API checks). */
export const MAX_TIERS = 32;

/** The value of the plan choice that names a new plan. */
export const NEW_PLAN = '__new';

export interface Draft {
  /** An existing plan's name, or NEW_PLAN. */
  plan: string;
  /** The name typed for a new plan. */
  newPlan: string;
  currency: string;
  /** A `datetime-local` value ("2026-06-01T00:00"), read as UTC. */
  effectiveFrom: string;
  minimumBillableSeconds: string;
  /** Empty: no commitment. */
  monthlyMinimum: string;
  discountPct: string;
  rates: DraftRate[];
}

/** The version with the highest number (null for none). */
export function latestVersion<V extends { version: number }>(versions: readonly V[]): V | null {
  return versions.reduce<V | null>((best, v) => (best === null || v.version > best.version ? v : best), null);
}

export function draftRate(r: SourceRate): DraftRate {
  return {
    sku: r.sku,
    metric: r.metric,
    tiersMode: r.tiersMode,
    unitPrice: r.unitPrice ?? '',
    spotUnitPrice: r.spotUnitPrice ?? '',
    tiers: r.tiers.map((t) => ({ upTo: t.upTo ?? '', unitPrice: t.unitPrice, flatFee: t.flatFee ?? '' })),
    packageSize: r.packageSize ?? '',
    packagePrice: r.packagePrice ?? '',
  };
}

/** A new PER_UNIT rate ("Add rate"). */
export function perUnitRate(sku: string, metric: Metric, unitPrice: string, spotUnitPrice: string): DraftRate {
  return { sku, metric, tiersMode: 'PER_UNIT', unitPrice: unitPrice.trim(), spotUnitPrice: spotUnitPrice.trim(), tiers: [], packageSize: '', packagePrice: '' };
}

/** A new rate of `mode` with its prices still to fill in (a tiered one has one tier, without limit). */
export function emptyRate(sku: string, metric: Metric, mode: TiersMode): DraftRate {
  return withMode(perUnitRate(sku, metric, '', ''), mode);
}

export function emptyTier(): DraftTier {
  return { upTo: '', unitPrice: '', flatFee: '' };
}

export function isTiered(mode: TiersMode): boolean {
  return mode === 'GRADUATED' || mode === 'VOLUME';
}

/**
 * `r` priced by `mode`. A tiered mode without tiers yet starts with one tier without
 * limit at the rate's unit price (the same prices as per unit); the rest is kept.
 */
export function withMode(r: DraftRate, mode: TiersMode): DraftRate {
  const tiers = isTiered(mode) && r.tiers.length === 0 ? [{ ...emptyTier(), unitPrice: r.unitPrice }] : r.tiers;
  return { ...r, tiersMode: mode, tiers };
}

/** `r` with a tier appended: the tier that was last needs a bound then. */
export function addTier(r: DraftRate): DraftRate {
  return { ...r, tiers: [...r.tiers, emptyTier()] };
}

export function removeTier(r: DraftRate, index: number): DraftRate {
  return { ...r, tiers: r.tiers.filter((_, j) => j !== index) };
}

export function editTier(r: DraftRate, index: number, change: Partial<DraftTier>): DraftRate {
  return { ...r, tiers: r.tiers.map((t, j) => (j === index ? { ...t, ...change } : t)) };
}

/** A draft that starts from `from` (a plan's latest version), or an empty new plan. */
export function draftFrom(plan: string, from: SourceVersion | null, effectiveFrom: string): Draft {
  return {
    plan,
    newPlan: '',
    currency: from?.currency ?? 'USD',
    effectiveFrom,
    minimumBillableSeconds: String(from?.minimumBillableSeconds ?? 60),
    monthlyMinimum: from?.commitment?.monthlyMinimum ?? '',
    discountPct: from?.commitment?.discountPct ?? '',
    rates: (from?.rates ?? []).map(draftRate),
  };
}

/** The plan's name: the one chosen, or the one typed for a new plan. */
export function planName(d: Draft): string {
  return (d.plan === NEW_PLAN ? d.newPlan : d.plan).trim();
}

/** The start of the next whole hour, as a `datetime-local` value in UTC. */
export function nextHourUtc(now: Date): string {
  const next = new Date(Math.floor(now.getTime() / 3_600_000) * 3_600_000 + 3_600_000);
  return next.toISOString().slice(0, 16);
}

/** A `datetime-local` value read as UTC ("2026-06-01T00:00" → "2026-06-01T00:00:00Z"). */
export function utcInstant(local: string): string {
  return `${local}${local.length === 16 ? ':00' : ''}Z`;
}

/** The draft as the API takes it. Fields a rate's mode does not use are left out. */
export function toInput(d: Draft): PlanVersionInput {
  const minimum = d.monthlyMinimum.trim();
  return {
    plan: planName(d),
    currency: d.currency.trim().toUpperCase(),
    effectiveFrom: utcInstant(d.effectiveFrom),
    minimumBillableSeconds: Number(d.minimumBillableSeconds.trim()),
    rates: d.rates.map(rateInput),
    ...(minimum ? { commitment: { monthlyMinimum: minimum, discountPct: d.discountPct.trim() || '0' } } : {}),
  };
}

export function rateInput(r: DraftRate): RateInput {
  const head = { sku: r.sku, metric: r.metric, tiersMode: r.tiersMode };
  switch (r.tiersMode) {
    case 'PER_UNIT': {
      const spot = r.spotUnitPrice.trim();
      return { ...head, unitPrice: r.unitPrice.trim(), ...(spot ? { spotUnitPrice: spot } : {}) };
    }
    case 'PACKAGE':
      return { ...head, packageSize: r.packageSize.trim(), packagePrice: r.packagePrice.trim() };
    default:
      return { ...head, tiers: r.tiers.map((t, j) => tierInput(t, j === r.tiers.length - 1)) };
  }
}

/** A tier as typed, trimmed: the last one without bound, an empty fee null. */
function tierInput(t: DraftTier, last: boolean): TierInput {
  return { upTo: last ? null : t.upTo.trim(), unitPrice: t.unitPrice.trim(), flatFee: t.flatFee.trim() || null };
}

/** Whether `s` (trimmed) is a price as the API takes it: a plain decimal, 0 or more ("2.10", "0", "12"). */
export function isPrice(s: string): boolean {
  return /^\d+(\.\d+)?$/.test(s.trim());
}

/**
 * The problems of the draft's rates, by field name as the API names them
 * (`rates[2].tiers[1].upTo`): prices that are empty or not decimals, tiers whose bounds
 * do not increase, a package size not above 0.
 */
export function rateProblems(rates: readonly DraftRate[]): Record<string, string> {
  const found: Record<string, string> = {};
  rates.forEach((r, i) => {
    for (const [field, message] of problemsOf(r)) found[`rates[${i}].${field}`] = message;
  });
  return found;
}

function problemsOf(r: DraftRate): [string, string][] {
  switch (r.tiersMode) {
    case 'PER_UNIT':
      return perUnitProblems(r);
    case 'PACKAGE':
      return packageProblems(r);
    default:
      return tierProblems(r.tiers);
  }
}

function perUnitProblems(r: DraftRate): [string, string][] {
  const found: [string, string][] = [];
  if (!isPrice(r.unitPrice)) found.push(['unitPrice', 'A price, 0 or more, such as 2.49.']);
  const spot = r.spotUnitPrice.trim();
  if (spot && !isPrice(spot)) found.push(['spotUnitPrice', 'A price, 0 or more, or empty for none.']);
  return found;
}

function packageProblems(r: DraftRate): [string, string][] {
  const found: [string, string][] = [];
  if (!isPrice(r.packageSize) || compare(r.packageSize, '0') <= 0) found.push(['packageSize', 'A number of units above 0, such as 1000.']);
  if (!isPrice(r.packagePrice)) found.push(['packagePrice', 'A price, 0 or more, such as 5.00.']);
  return found;
}

/** Every tier's prices; each bound but the last's above the one before (the first above 0). */
function tierProblems(tiers: readonly DraftTier[]): [string, string][] {
  if (tiers.length === 0) return [['tiers', 'Add at least one tier.']];
  const found: [string, string][] = [];
  if (tiers.length > MAX_TIERS) found.push(['tiers', `At most ${MAX_TIERS} tiers.`]);
  let below = '0';
  tiers.forEach((t, j) => {
    const at = (name: string) => `tiers[${j}].${name}`;
    const upTo = t.upTo.trim();
    if (j < tiers.length - 1) {
      if (!isPrice(upTo)) found.push([at('upTo'), 'A number of units, such as 100.']);
      else if (compare(upTo, below) <= 0) found.push([at('upTo'), j === 0 ? 'Above 0.' : `Above ${below}, the bound of the tier before.`]);
      else below = upTo;
    }
    if (!isPrice(t.unitPrice)) found.push([at('unitPrice'), 'A price, 0 or more, such as 0.5.']);
    const fee = t.flatFee.trim();
    if (fee && !isPrice(fee)) found.push([at('flatFee'), 'A fee, 0 or more, or empty for none.']);
  });
  return found;
}

/** Whether `b` has the fields of `a`: the same rates, modes and numbers of tiers (only values edited). */
export function sameShape(a: readonly DraftRate[], b: readonly DraftRate[]): boolean {
  return a.length === b.length && a.every((r, i) => r.tiersMode === b[i]?.tiersMode && r.tiers.length === b[i]?.tiers.length);
}

/**
 * The fields of `r` (relative to the rate, as `rateField` answers them) that the form
 * shows an input or a list for: a server error about any other is shown at the rate.
 */
export function shownFields(r: DraftRate): string[] {
  switch (r.tiersMode) {
    case 'PER_UNIT':
      return ['unitPrice', 'spotUnitPrice'];
    case 'PACKAGE':
      return ['packageSize', 'packagePrice'];
    default:
      return ['tiers', ...r.tiers.flatMap((_, j) => [...(j < r.tiers.length - 1 ? [`tiers[${j}].upTo`] : []), `tiers[${j}].unitPrice`, `tiers[${j}].flatFee`])];
  }
}

/** The metrics a SKU of `form` may be rated by (as the API checks). */
export function metricsFor(form: SkuForm, all: readonly Metric[]): Metric[] {
  if (form === 'METERED') return ['METERED'];
  if (form === 'VOLUME') return ['ALLOCATED'];
  return all.filter((m) => m !== 'METERED');
}

/**
 * Where an INVALID_INPUT field points within the rates: the rate's index and the rest
 * ("rates[2].unitPrice" → [2, "unitPrice"]; "rates" → [-1, ""]); null when elsewhere.
 */
export function rateField(field: string | undefined): [number, string] | null {
  if (!field) return null;
  const path = field.replace(/^input\./, '');
  if (path === 'rates') return [-1, ''];
  const m = /^rates\[(\d+)\]\.?(.*)$/.exec(path);
  return m ? [Number(m[1]), m[2] ?? ''] : null;
}
