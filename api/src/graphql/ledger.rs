//! The money ledger: `ledgerBalances` (a tenant its own accounts, operators any) and
//! `ledgerCheck` (operators). Money is a decimal string in the account's currency.

use std::collections::{HashMap, HashSet};

use async_graphql::{Context, Enum, ID, Object, Result, SimpleObject};
use neocloud_metering::ledger::store::Balance;
use neocloud_metering::ledger::{AccountKind, from_minor};
use uuid::Uuid;

use super::scalars::{tenant_arg, to_id};
use crate::ledger;

/// What a ledger account holds.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
pub enum LedgerAccountKind {
    /// What a tenant owes on its finalized invoices.
    Receivable,
    /// A tenant's credit not used yet (prepaid and promotional).
    Wallet,
    /// Refunds owed to a tenant's card until Stripe has sent them.
    RefundsPayable,
    /// What invoices earned, net of credit notes.
    Revenue,
    /// Promotional credit given away.
    Promotions,
    /// Tax invoiced, owed to tax authorities.
    TaxPayable,
    /// Money collected through Stripe and not refunded.
    StripeCash,
    /// Money recorded as received outside Stripe (prepaid credit granted by an operator).
    ExternalCash,
    /// What the platform owes a provider on its closed statements, not paid out yet.
    ProviderPayable,
    /// What providers earned, before fees and chargebacks (the cost of resold capacity).
    ProviderEarnings,
    /// The platform's fees taken from providers' earnings.
    PlatformFees,
    /// SLA credits charged back to the providers whose hardware failed.
    SlaChargebacks,
    /// Payouts queued to providers and not sent yet.
    PayoutsInTransit,
    /// The operator's bank account, which SEPA payout files are paid from.
    BankCash,
}

impl From<AccountKind> for LedgerAccountKind {
    fn from(kind: AccountKind) -> Self {
        match kind {
            AccountKind::Receivable => LedgerAccountKind::Receivable,
            AccountKind::Wallet => LedgerAccountKind::Wallet,
            AccountKind::RefundsPayable => LedgerAccountKind::RefundsPayable,
            AccountKind::Revenue => LedgerAccountKind::Revenue,
            AccountKind::Promotions => LedgerAccountKind::Promotions,
            AccountKind::TaxPayable => LedgerAccountKind::TaxPayable,
            AccountKind::StripeCash => LedgerAccountKind::StripeCash,
            AccountKind::ExternalCash => LedgerAccountKind::ExternalCash,
            AccountKind::ProviderPayable => LedgerAccountKind::ProviderPayable,
            AccountKind::ProviderEarnings => LedgerAccountKind::ProviderEarnings,
            AccountKind::PlatformFees => LedgerAccountKind::PlatformFees,
            AccountKind::SlaChargebacks => LedgerAccountKind::SlaChargebacks,
            AccountKind::PayoutsInTransit => LedgerAccountKind::PayoutsInTransit,
            AccountKind::BankCash => LedgerAccountKind::BankCash,
        }
    }
}

/// One account's totals.
#[derive(SimpleObject)]
pub struct LedgerBalance {
    pub account: LedgerAccountKind,
    /// The tenant (or provider) that owns the account; null for the platform's own.
    pub owner_id: Option<ID>,
    /// That tenant's (or provider's) name; null for the platform's own.
    pub owner_name: Option<String>,
    pub currency: String,
    pub debits: String,
    pub credits: String,
    /// Debits minus credits for receivables, cash, promotions and provider earnings;
    /// credits minus debits for the others.
    pub balance: String,
}

impl LedgerBalance {
    fn new(b: Balance, names: &HashMap<Uuid, String>) -> Self {
        let money = |minor: i64| from_minor(minor, &b.currency).to_string();
        let owner = (!b.account.owner.is_nil()).then_some(b.account.owner);
        LedgerBalance {
            account: b.account.kind.into(),
            owner_id: owner.map(to_id),
            owner_name: owner.and_then(|o| names.get(&o).cloned()),
            debits: money(b.debits),
            credits: money(b.credits),
            balance: money(b.balance()),
            currency: b.currency,
        }
    }
}

/// A currency whose entries do not sum to zero.
#[derive(SimpleObject)]
pub struct LedgerImbalance {
    pub currency: String,
    /// Debits minus credits.
    pub off_by: String,
}

/// The whole-ledger check.
#[derive(SimpleObject)]
pub struct LedgerCheck {
    /// Debits equal credits in every currency and every transfer.
    pub balanced: bool,
    pub transfers: u64,
    pub entries: u64,
    pub unbalanced_currencies: Vec<LedgerImbalance>,
    pub unbalanced_transfers: Vec<ID>,
}

#[derive(Default)]
pub struct LedgerQuery;

#[Object]
impl LedgerQuery {
    /// A tenant's ledger accounts: receivable, wallet, refunds payable (a tenant key: its
    /// own). Operators without `tenantId`: every account, the platform's included.
    async fn ledger_balances(
        &self,
        ctx: &Context<'_>,
        tenant_id: Option<ID>,
    ) -> Result<Vec<LedgerBalance>> {
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let found = ledger::balances(db, principal, tenant_arg(tenant_id)?).await?;
        let owners: Vec<Uuid> = found
            .iter()
            .map(|b| b.account.owner)
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let names = ledger::owner_names(db, &owners).await?;
        Ok(found
            .into_iter()
            .map(|b| LedgerBalance::new(b, &names))
            .collect())
    }

    /// Checks the whole ledger (operator).
    async fn ledger_check(&self, ctx: &Context<'_>) -> Result<LedgerCheck> {
        let check = ledger::check(super::db(ctx)?, super::principal(ctx)?).await?;
        Ok(LedgerCheck {
            balanced: check.balanced(),
            transfers: check.transfers,
            entries: check.entries,
            unbalanced_currencies: check
                .unbalanced_currencies
                .into_iter()
                .map(|(currency, sum)| LedgerImbalance {
                    off_by: from_minor(sum, &currency).to_string(),
                    currency,
                })
                .collect(),
            unbalanced_transfers: check.unbalanced_transfers.into_iter().map(to_id).collect(),
        })
    }
}
