import { divide } from '../lib/decimal';
import { groupDigits } from '../lib/format';
import type { Column } from '../ui/DataTable';
import type { UsageQuantitiesFragment } from './operations';

/** A quantity rounded to `places` decimals, digits grouped ("1,234.5"). */
export function quantity(decimal: string, places: number): string {
  return groupDigits(divide(decimal, '1', places));
}

/** Seconds as hours to 2 decimals ("1,234.57"). */
export function hours(seconds: string | undefined): string {
  return quantity(divide(seconds ?? '0', '3600', 2), 2);
}

/** Seconds as hours for a chart's position (3 decimals; never summed). */
export function chartHours(seconds: string): number {
  return Number(divide(seconds, '3600', 3));
}

/** The columns of a usage row's quantities. */
export const QUANTITY_COLUMNS: Column<UsageQuantitiesFragment>[] = [
  { header: 'Allocated (h)', numeric: true, cell: (r) => hours(r.allocatedSeconds) },
  { header: 'Active (GPU-h)', numeric: true, cell: (r) => hours(r.activeSeconds) },
  { header: 'SLA credit (h)', numeric: true, cell: (r) => hours(r.slaCreditSeconds) },
  { header: 'Energy (kWh)', numeric: true, cell: (r) => quantity(r.energyKwh, 1) },
];
