/** Pure helpers of the ledger page: who owns an account and where the console shows them. */

import type { LedgerAccountKind } from '../gql/schema';

export type OwnerKind = 'tenant' | 'provider' | 'platform';

/**
 * Whose an account of each kind is: a tenant's (what it owes, its wallet, its refunds), a
 * provider's (what the platform owes it), or the platform's own. A `Record` over the
 * enum, so a kind added to the schema fails the typecheck until it is placed here.
 */
const OWNERS: Record<LedgerAccountKind, OwnerKind> = {
  RECEIVABLE: 'tenant',
  WALLET: 'tenant',
  REFUNDS_PAYABLE: 'tenant',
  REVENUE: 'platform',
  PROMOTIONS: 'platform',
  TAX_PAYABLE: 'platform',
  STRIPE_CASH: 'platform',
  EXTERNAL_CASH: 'platform',
  PROVIDER_PAYABLE: 'provider',
  PROVIDER_EARNINGS: 'platform',
  PLATFORM_FEES: 'platform',
  SLA_CHARGEBACKS: 'platform',
  PAYOUTS_IN_TRANSIT: 'platform',
  BANK_CASH: 'platform',
};

/** Who owns accounts of `kind` (an unknown kind: the platform). */
export function ownerKind(kind: LedgerAccountKind): OwnerKind {
  return OWNERS[kind] ?? 'platform';
}

/**
 * The console page of an account's owner: `/tenants/<id>` for a tenant's account,
 * `/providers/<id>` for a provider's; null for the platform's own (no owner) or an owner
 * of a kind the console has no page for.
 */
export function ownerPath(kind: LedgerAccountKind, ownerId: string | null): string | null {
  if (!ownerId) return null;
  const owner = ownerKind(kind);
  if (owner === 'tenant') return `/tenants/${encodeURIComponent(ownerId)}`;
  if (owner === 'provider') return `/providers/${encodeURIComponent(ownerId)}`;
  return null;
}
