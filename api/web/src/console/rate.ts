import { compare } from '../lib/decimal';
import { groupDigits, money } from '../lib/format';
import type { PlansResult } from './operations';

export type Rate = PlansResult['plans'][number]['versions'][number]['rates'][number];

/** A rate's price in words: "$0.25", "up to 100: $0.2271; then $0.193035", "$5.00 per 1,000". */
export function ratePrice(rate: Rate, currency: string): string {
  const m = (amount: string) => money(amount, currency);
  switch (rate.tiersMode) {
    case 'PER_UNIT':
      return rate.unitPrice ? m(rate.unitPrice) : '—';
    case 'PACKAGE':
      return rate.packagePrice && rate.packageSize ? `${m(rate.packagePrice)} per ${groupDigits(rate.packageSize)}` : '—';
    default:
      return rate.tiers.map((t) => `${t.upTo ? `up to ${groupDigits(t.upTo)}:` : 'then'} ${m(t.unitPrice)}${flat(t.flatFee, m)}`).join('; ');
  }
}

function flat(fee: string | null, m: (a: string) => string): string {
  return fee && compare(fee, '0') !== 0 ? ` + ${m(fee)} flat` : '';
}

const METRICS: Record<Rate['metric'], string> = {
  ALLOCATED: 'Allocated',
  ACTIVE: 'Active',
  MEMORY: 'Memory',
  ENERGY: 'Energy',
  SLA_CREDIT: 'SLA credit',
  METERED: 'Metered',
};

export function metricLabel(metric: Rate['metric']): string {
  return METRICS[metric];
}

const MODES: Record<Rate['tiersMode'], { label: string; hint: string }> = {
  PER_UNIT: { label: 'Per unit', hint: 'Every unit at one price; spot allocations at the spot price if set.' },
  GRADUATED: { label: 'Graduated', hint: "Each tier's units at its price, plus the flat fee of each tier reached." },
  VOLUME: { label: 'Volume', hint: 'All units at the price of the tier the total reaches, plus its flat fee.' },
  PACKAGE: { label: 'Package', hint: 'Each package started at the package price.' },
};

export function modeLabel(mode: Rate['tiersMode']): string {
  return MODES[mode].label;
}

/** How a mode prices the quantity, in a sentence. */
export function modeHint(mode: Rate['tiersMode']): string {
  return MODES[mode].hint;
}
