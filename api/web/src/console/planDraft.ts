/**
 * The "New version" form's draft and its conversion to `PlanVersionInput`. Prices stay
 * the strings typed (or carried over), never numbers. No runtime import: unit-tested.
 */

import type { Metric, PlanVersionInput, RateInput, SkuForm, TiersMode } from '../gql/schema';

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

/**
 * A rate of the draft: a PER_UNIT rate's prices are edited as text (an empty spot price:
 * none); any other mode's tiers or package are carried over as they are.
 */
export interface DraftRate {
  sku: string;
  metric: Metric;
  tiersMode: TiersMode;
  unitPrice: string;
  spotUnitPrice: string;
  tiers: SourceTier[];
  packageSize: string | null;
  packagePrice: string | null;
}

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
    tiers: r.tiers.map((t) => ({ upTo: t.upTo, unitPrice: t.unitPrice, flatFee: t.flatFee })),
    packageSize: r.packageSize,
    packagePrice: r.packagePrice,
  };
}

/** A new PER_UNIT rate ("Add rate"). */
export function perUnitRate(sku: string, metric: Metric, unitPrice: string, spotUnitPrice: string): DraftRate {
  return { sku, metric, tiersMode: 'PER_UNIT', unitPrice: unitPrice.trim(), spotUnitPrice: spotUnitPrice.trim(), tiers: [], packageSize: null, packagePrice: null };
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
      return { ...head, packageSize: r.packageSize, packagePrice: r.packagePrice };
    default:
      return { ...head, tiers: r.tiers.map((t) => ({ upTo: t.upTo, unitPrice: t.unitPrice, flatFee: t.flatFee })) };
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
