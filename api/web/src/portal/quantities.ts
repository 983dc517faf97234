import { abs, compare, divide } from '../lib/decimal';
import { groupDigits, money } from '../lib/format';
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

/**
 * A usage row's cost (the API's exact decimal, up to 6 places) as money: to the cent
 * ("$1,234.57"); under a cent to 4 places ("$0.0042"), or as the API wrote it when even
 * those are zeros ("$0.000004"), so an hour of a small SKU never reads as nothing. It is
 * what the usage cost at its period's average prices, an estimate beside the invoice's
 * lines: rounding it for display loses nothing the invoice states.
 */
export function usageCost(amount: string, currency: string): string {
  if (compare(amount, '0') === 0) return money('0.00', currency);
  if (compare(abs(amount), '0.01') >= 0) return money(divide(amount, '1', 2), currency);
  const four = divide(amount, '1', 4);
  return money(compare(four, '0') === 0 ? amount : four, currency);
}

/** A cost for a chart's position (never summed). */
export function chartCost(amount: string): number {
  return Number(divide(amount, '1', 6));
}

/** The column of a usage row's cost, in `currency`. */
export function costColumn(currency: string): Column<{ cost: string }> {
  return { header: 'Cost', numeric: true, cell: (r) => usageCost(r.cost, currency) };
}

/** The columns of a usage row's quantities. */
export const QUANTITY_COLUMNS: Column<UsageQuantitiesFragment>[] = [
  { header: 'Allocated (h)', numeric: true, cell: (r) => hours(r.allocatedSeconds) },
  { header: 'Active (GPU-h)', numeric: true, cell: (r) => hours(r.activeSeconds) },
  { header: 'SLA credit (h)', numeric: true, cell: (r) => hours(r.slaCreditSeconds) },
  { header: 'Energy (kWh)', numeric: true, cell: (r) => quantity(r.energyKwh, 1) },
];

/** A usage row's quantities and its cost in `currency`. */
export function usageColumns(currency: string): Column<UsageQuantitiesFragment>[] {
  return [...QUANTITY_COLUMNS, costColumn(currency)];
}
