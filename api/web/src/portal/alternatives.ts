/**
 * The nearest alternatives of a refused order: `placeOrder` failing with
 * INSUFFICIENT_CAPACITY carries `extensions.alternatives`, orders that would be placed
 * now — the same order (class, placement, exclusivity, labels) with another SKU or count.
 */

import type { AllocationClass, TopologyLevel } from '../gql/schema';

export interface Alternative {
  /** The SKU id. */
  sku: string;
  skuName: string;
  region: string | null;
  gpuModel: string | null;
  count: number;
  /** Why it is offered: "fewer units", "other region", "other model". */
  reason: string | null;
}

/** What was asked, which every alternative keeps. */
export interface Asked {
  cls: AllocationClass;
  level: TopologyLevel | '';
  required: boolean;
  exclusive: boolean;
}

const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** The alternatives of an error's extensions; anything malformed is left out. */
export function parseAlternatives(value: unknown): Alternative[] {
  if (!Array.isArray(value)) return [];
  const out: Alternative[] = [];
  for (const item of value) {
    if (typeof item !== 'object' || item === null) continue;
    const o = item as Record<string, unknown>;
    const sku = text(o.sku);
    const count = o.count;
    if (!sku || typeof count !== 'number' || !Number.isInteger(count) || count < 1) continue;
    out.push({ sku, skuName: text(o.skuName) ?? sku, region: text(o.region), gpuModel: text(o.gpuModel), count, reason: text(o.reason) });
  }
  return out;
}

const LEVELS: Record<TopologyLevel, string> = {
  NODE: 'one node',
  NVLINK_DOMAIN: 'one NVLink domain',
  RACK: 'one rack',
  ANY: 'anywhere in the region',
};

const REASONS: Record<string, string> = {
  'fewer units': 'fewer units than you asked for',
  'other region': 'another region',
  'other model': 'another GPU model',
};

/** Where the units go, as asked: "in one NVLink domain", "preferably on one node". */
function placement(asked: Asked): string | null {
  if (asked.level === '') return null;
  if (asked.level === 'ANY') return LEVELS.ANY;
  const where = `${asked.level === 'NODE' ? 'on' : 'in'} ${LEVELS[asked.level]}`;
  return asked.required ? where : `preferably ${where}`;
}

/**
 * An alternative as a sentence: "4 × h100-eu-west (H100 in eu-west), on demand, in one
 * NVLink domain, exclusive — fewer units than you asked for".
 */
export function describeAlternative(alt: Alternative, asked: Asked): string {
  const what = [alt.gpuModel, alt.region && `in ${alt.region}`].filter(Boolean).join(' ');
  const parts = [
    `${alt.count} × ${alt.skuName}${what ? ` (${what})` : ''}`,
    asked.cls === 'SPOT' ? 'spot' : 'on demand',
    placement(asked),
    asked.exclusive ? 'exclusive' : null,
  ].filter((p): p is string => !!p);
  const reason = alt.reason ? (REASONS[alt.reason] ?? alt.reason) : null;
  return reason ? `${parts.join(', ')} — ${reason}` : parts.join(', ');
}
