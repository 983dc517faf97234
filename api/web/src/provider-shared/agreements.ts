/** A provider agreement in words and as table columns. No runtime import but lib/format: unit-tested. */

import { date, enumLabel } from '../lib/format';
import type { Column } from '../ui/DataTable';

/** What the console and the provider console show of a `ProviderAgreement`. */
export interface AgreementRow {
  id: string;
  version: number;
  effectiveFrom: string;
  currency: string;
  revenueSharePercent: string | null;
  fixedRates: { form: string; region: string; pricePerUnitHour: string }[];
  platformFeePercent: string;
  slaCreditsBorneBy: string;
  payoutMinimum: string;
  holdUntilPaid: boolean;
  creditNotesShared: boolean;
}

/** "70% of revenue", or each fixed price ("Whole gpu in eu-west: 1.20 EUR/unit-hour; …"). */
export function earns(a: AgreementRow): string {
  if (a.revenueSharePercent) return `${a.revenueSharePercent}% of revenue`;
  return a.fixedRates.map((r) => `${enumLabel(r.form)} in ${r.region}: ${r.pricePerUnitHour} ${a.currency}/unit-hour`).join('; ');
}

/** "100 EUR minimum, once tenants paid". */
export function payoutTerms(a: AgreementRow): string {
  return `${a.payoutMinimum} ${a.currency} minimum${a.holdUntilPaid ? ', once tenants paid' : ''}`;
}

/** What a credit note to a tenant does to the provider's earnings. */
export function creditNotes(a: AgreementRow): string {
  if (a.revenueSharePercent) return 'Shared (a share of revenue)';
  return a.creditNotesShared ? 'Shared pro rata' : 'Not shared';
}

export const AGREEMENT_COLUMNS: Column<AgreementRow>[] = [
  { header: 'Version', cell: (a) => `v${a.version}` },
  { header: 'From', cell: (a) => date(a.effectiveFrom) },
  { header: 'Earns', cell: earns },
  { header: 'Platform fee', numeric: true, cell: (a) => `${a.platformFeePercent}%` },
  { header: 'SLA credits borne by', cell: (a) => enumLabel(a.slaCreditsBorneBy) },
  { header: 'Credit notes', cell: creditNotes },
  { header: 'Payout', cell: payoutTerms },
];
