//! The money ledger (docs/ledger.md): every movement of money — an invoice finalized,
//! paid or voided, credit granted, a credit note, a refund sent — is one balanced
//! transfer of two or more entries, posted in the same transaction as the change it
//! records, at most once per (kind, reference), and never changed afterwards (a
//! correction is a new transfer). Amounts are integers in the currency's minor unit, as
//! in TigerBeetle: a debit is positive, a credit negative, and a transfer's entries sum to
//! zero.
//!
//! This module is pure: the accounts, building a transfer and checking it. `postings`
//! says what each business event posts; `store` writes and reads the tables.

pub mod backfill;
pub mod postings;
pub mod store;

use neocloud_schema::ids::{ProviderId, TenantId};
use neocloud_schema::money::minor_unit_digits_of;
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
use uuid::Uuid;

/// What an account holds. Tenant accounts are owned by a tenant; the others by the
/// platform (the nil owner).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AccountKind {
    /// What a tenant owes on its finalized invoices (an asset: debit-normal).
    Receivable,
    /// A tenant's credit not used yet: prepaid and promotional grants (a liability).
    Wallet,
    /// Refunds owed to a tenant's card until Stripe has sent them (a liability).
    RefundsPayable,
    /// What invoices earned, net of credit notes (income: credit-normal).
    Revenue,
    /// Promotional credit given away (an expense: debit-normal).
    Promotions,
    /// Tax invoiced, owed to tax authorities (a liability).
    TaxPayable,
    /// Money collected through Stripe and not refunded (an asset).
    StripeCash,
    /// Money an operator recorded as received outside Stripe: prepaid credit it granted
    /// (an asset).
    ExternalCash,
    /// What the platform owes a provider on its closed statements and has not paid out
    /// (a liability, owned by the provider).
    ProviderPayable,
    /// What providers earned on the platform's revenue, before fees and chargebacks (an
    /// expense: the cost of resold capacity).
    ProviderEarnings,
    /// The platform's fees taken from providers' earnings (income).
    PlatformFees,
    /// SLA credits charged back to the providers whose hardware failed (income: the
    /// credits given to tenants, recovered).
    SlaChargebacks,
    /// Payouts queued to providers and not sent yet (a liability).
    PayoutsInTransit,
    /// The operator's bank account, which SEPA payout files are paid from (an asset).
    BankCash,
}

impl AccountKind {
    pub const ALL: [AccountKind; 14] = [
        AccountKind::Receivable,
        AccountKind::Wallet,
        AccountKind::RefundsPayable,
        AccountKind::Revenue,
        AccountKind::Promotions,
        AccountKind::TaxPayable,
        AccountKind::StripeCash,
        AccountKind::ExternalCash,
        AccountKind::ProviderPayable,
        AccountKind::ProviderEarnings,
        AccountKind::PlatformFees,
        AccountKind::SlaChargebacks,
        AccountKind::PayoutsInTransit,
        AccountKind::BankCash,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AccountKind::Receivable => "receivable",
            AccountKind::Wallet => "wallet",
            AccountKind::RefundsPayable => "refunds_payable",
            AccountKind::Revenue => "revenue",
            AccountKind::Promotions => "promotions",
            AccountKind::TaxPayable => "tax_payable",
            AccountKind::StripeCash => "stripe_cash",
            AccountKind::ExternalCash => "external_cash",
            AccountKind::ProviderPayable => "provider_payable",
            AccountKind::ProviderEarnings => "provider_earnings",
            AccountKind::PlatformFees => "platform_fees",
            AccountKind::SlaChargebacks => "sla_chargebacks",
            AccountKind::PayoutsInTransit => "payouts_in_transit",
            AccountKind::BankCash => "bank_cash",
        }
    }

    pub fn parse(stored: &str) -> Option<AccountKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == stored)
    }

    /// Whether the account's balance is read as debits minus credits (assets, expenses)
    /// rather than credits minus debits (liabilities, income).
    pub fn debit_normal(self) -> bool {
        matches!(
            self,
            AccountKind::Receivable
                | AccountKind::Promotions
                | AccountKind::StripeCash
                | AccountKind::ExternalCash
                | AccountKind::ProviderEarnings
                | AccountKind::BankCash
        )
    }
}

/// An account, without its currency (a transfer has one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Account {
    pub kind: AccountKind,
    /// The tenant (or provider) that owns it; nil for the platform's own accounts.
    pub owner: Uuid,
}

impl Account {
    pub fn tenant(kind: AccountKind, tenant: TenantId) -> Account {
        Account {
            kind,
            owner: tenant.0,
        }
    }

    pub fn provider(kind: AccountKind, provider: ProviderId) -> Account {
        Account {
            kind,
            owner: provider.0,
        }
    }

    pub fn platform(kind: AccountKind) -> Account {
        Account {
            kind,
            owner: Uuid::nil(),
        }
    }
}

/// A transfer to post: what happened, to which object, and its legs in the currency's
/// units (debits positive).
#[derive(Clone, Debug, PartialEq)]
pub struct Transfer {
    pub kind: &'static str,
    pub reference: String,
    pub currency: String,
    pub tenant: Option<TenantId>,
    pub description: String,
    pub legs: Vec<(Account, Decimal)>,
}

impl Transfer {
    pub fn new(
        kind: &'static str,
        reference: impl ToString,
        currency: &str,
        tenant: Option<TenantId>,
        description: impl Into<String>,
    ) -> Transfer {
        Transfer {
            kind,
            reference: reference.to_string(),
            currency: currency.to_owned(),
            tenant,
            description: description.into(),
            legs: Vec::new(),
        }
    }

    #[must_use]
    pub fn debit(mut self, account: Account, amount: Decimal) -> Transfer {
        self.legs.push((account, amount));
        self
    }

    #[must_use]
    pub fn credit(mut self, account: Account, amount: Decimal) -> Transfer {
        self.legs.push((account, -amount));
        self
    }

    /// The entries to write: one per account (legs on one account netted), debits first,
    /// in minor units, zero ones left out. Refused when an amount is not a whole number of minor
    /// units or the entries do not sum to zero. Empty when nothing moves.
    pub fn entries(&self) -> Result<Vec<(Account, i64)>, LedgerError> {
        let mut netted: std::collections::BTreeMap<Account, i64> = Default::default();
        for (account, amount) in &self.legs {
            let minor = to_minor(*amount, &self.currency)?;
            let sum = netted.entry(*account).or_default();
            *sum = sum.checked_add(minor).ok_or(LedgerError::TooLarge)?;
        }
        let mut entries: Vec<(Account, i64)> =
            netted.into_iter().filter(|(_, a)| *a != 0).collect();
        // Debits first, as a journal is read.
        entries.sort_by_key(|(account, amount)| (*amount < 0, *account));
        let sum = entries
            .iter()
            .try_fold(0i64, |s, (_, a)| s.checked_add(*a))
            .ok_or(LedgerError::TooLarge)?;
        if sum != 0 {
            return Err(LedgerError::Unbalanced {
                kind: self.kind,
                reference: self.reference.clone(),
                off_by: sum,
            });
        }
        Ok(entries)
    }
}

/// A transfer that cannot be posted: a bug in what posted it, never a value to round.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LedgerError {
    #[error("ledger transfer {kind} {reference} is unbalanced by {off_by} minor units")]
    Unbalanced {
        kind: &'static str,
        reference: String,
        off_by: i64,
    },
    #[error("{amount} {currency} is not a whole number of minor units")]
    NotMinorUnits { amount: Decimal, currency: String },
    #[error("an amount does not fit the ledger's 64-bit minor units")]
    TooLarge,
}

impl From<LedgerError> for sea_orm::DbErr {
    fn from(e: LedgerError) -> Self {
        sea_orm::DbErr::Custom(e.to_string())
    }
}

/// `amount` in the minor units of `currency`, refused unless whole.
pub fn to_minor(amount: Decimal, currency: &str) -> Result<i64, LedgerError> {
    let scale = Decimal::from(10i64.pow(minor_unit_digits_of(currency)));
    let scaled = amount.checked_mul(scale).ok_or(LedgerError::TooLarge)?;
    if !scaled.fract().is_zero() {
        return Err(LedgerError::NotMinorUnits {
            amount,
            currency: currency.to_owned(),
        });
    }
    scaled.to_i64().ok_or(LedgerError::TooLarge)
}

/// `minor` units of `currency` as an amount written with the currency's digits.
pub fn from_minor(minor: i64, currency: &str) -> Decimal {
    Decimal::new(minor, minor_unit_digits_of(currency))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn a_transfer_is_netted_per_account_and_must_balance() {
        let t = TenantId::new();
        let receivable = Account::tenant(AccountKind::Receivable, t);
        let revenue = Account::platform(AccountKind::Revenue);
        let ok = Transfer::new("x", "r", "EUR", Some(t), "")
            .debit(receivable, d("10.00"))
            .debit(receivable, d("2.50"))
            .credit(revenue, d("12.50"));
        assert_eq!(
            ok.entries().unwrap(),
            vec![(receivable, 1250), (revenue, -1250)]
        );

        let off = Transfer::new("x", "r", "EUR", Some(t), "")
            .debit(receivable, d("10.00"))
            .credit(revenue, d("9.99"));
        assert_eq!(
            off.entries(),
            Err(LedgerError::Unbalanced {
                kind: "x",
                reference: "r".into(),
                off_by: 1
            })
        );
    }

    #[test]
    fn fractions_of_a_minor_unit_are_refused_never_rounded() {
        assert_eq!(to_minor(d("1.23"), "EUR"), Ok(123));
        assert_eq!(to_minor(d("-5"), "JPY"), Ok(-5));
        assert!(matches!(
            to_minor(d("1.234"), "EUR"),
            Err(LedgerError::NotMinorUnits { .. })
        ));
        assert!(matches!(
            to_minor(d("0.5"), "JPY"),
            Err(LedgerError::NotMinorUnits { .. })
        ));
        assert_eq!(from_minor(123, "EUR"), d("1.23"));
        assert_eq!(from_minor(-7, "JPY"), d("-7"));
    }

    #[test]
    fn kinds_round_trip_through_their_stored_names() {
        for kind in AccountKind::ALL {
            assert_eq!(AccountKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(AccountKind::parse("cash"), None);
    }
}
