import type { AllocationClass, SkuForm } from '../gql/schema';
import type { CatalogResult } from './operations';

export type Sku = CatalogResult['catalog']['skus'][number];

/** The forms `placeOrder` takes (METERED and VOLUME SKUs are never ordered). */
const ORDERABLE: readonly SkuForm[] = ['WHOLE_GPU', 'MIG', 'FRACTIONAL', 'WHOLE_NODE'];

export function orderable(skus: readonly Sku[]): Sku[] {
  return skus.filter((s) => ORDERABLE.includes(s.form));
}

/** What one unit-hour of `sku` costs the caller on `cls`. */
export function unitPrice(sku: Sku, cls: AllocationClass): string {
  return cls === 'SPOT' ? sku.spotPricePerHour : sku.pricePerHour;
}

const FORMS: Record<SkuForm, string> = {
  WHOLE_GPU: 'Whole GPU',
  MIG: 'MIG slice',
  FRACTIONAL: 'GPU fraction',
  WHOLE_NODE: 'Whole node',
  METERED: 'Metered',
  VOLUME: 'Volume',
};

export function formLabel(form: SkuForm): string {
  return FORMS[form];
}
