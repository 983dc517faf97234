//! Taxes on invoices (docs/invoicing.md, "Taxes"). Which tax applies to a supply — its
//! [`Treatment`]: category, rate and the legal note the invoice must carry — is decided by
//! [`determine`] from the seller, the buyer, the tax point and the operator's rate table;
//! the rating takes treatments as input and never decides one, so an external tax service
//! can replace `determine` without touching how lines are taxed. [`apply`] taxes lines and
//! sums the tax per rate.
//!
//! Rules (seller in country S, buyer in country B, a business when it gave a VAT id):
//! - B = S (or the buyer has no billing profile): S's rate (domestic, B2B and B2C alike).
//! - S and B both in the EU, a business: reverse charge, 0 %, with the note of Art. 196.
//! - S and B both in the EU, a consumer: B's rate (electronically supplied services are
//!   taxed where the consumer is, Art. 58, declared through the One-Stop Shop).
//! - B outside S's tax area (outside the EU for an EU seller): export, 0 %.
//! - A seller without a country configured charges no tax at all.
//!
//! Rounding: each rate's tax is `taxable × rate / 100`, rounded once, half away from zero,
//! to the currency's minor unit (EN 16931 BR-CO-17); a line's own tax is rounded the same
//! way and shown for information, so the lines' taxes may differ from the rate's tax by
//! rounding.

pub mod store;

use chrono::{DateTime, Utc};
use rust_decimal::{Decimal, RoundingStrategy};
use serde::{Deserialize, Serialize};

use crate::parties::{Buyer, Seller, vat_id};

/// How a supply is taxed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaxCategory {
    /// Taxed at the rate of the jurisdiction.
    Standard,
    /// Intra-EU business customer: the buyer accounts for the VAT.
    ReverseCharge,
    /// Customer outside the seller's tax area: no tax.
    Export,
}

impl TaxCategory {
    pub fn as_str(self) -> &'static str {
        match self {
            TaxCategory::Standard => "standard",
            TaxCategory::ReverseCharge => "reverse_charge",
            TaxCategory::Export => "export",
        }
    }
}

/// One rate of the operator's table: `percent` in `jurisdiction` (an ISO 3166-1 alpha-2
/// country) over `[valid_from, valid_until)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaxRate {
    pub jurisdiction: String,
    pub percent: Decimal,
    pub valid_from: DateTime<Utc>,
    pub valid_until: Option<DateTime<Utc>>,
}

impl TaxRate {
    pub fn in_force(&self, at: DateTime<Utc>) -> bool {
        self.valid_from <= at && self.valid_until.is_none_or(|u| at < u)
    }
}

/// The tax of a supply, as frozen into an invoice's rating.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Treatment {
    pub category: TaxCategory,
    /// The country whose rate applies (the seller's for an export or reverse charge).
    pub jurisdiction: String,
    pub percent: Decimal,
    /// What the invoice must say about it (reverse charge, export), if anything.
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaxError {
    #[error("no tax rate of {jurisdiction} is in force on {at}: add one with addTaxRate")]
    NoRate {
        jurisdiction: String,
        at: DateTime<Utc>,
    },
}

pub const REVERSE_CHARGE_NOTE: &str = "Reverse charge: VAT to be accounted for by the recipient (Article 196, Council Directive 2006/112/EC)";
pub const EU_EXPORT_NOTE: &str = "Not subject to EU VAT: services supplied to a customer outside the EU (Articles 44 and 59, Council Directive 2006/112/EC)";
pub const OSS_NOTE: &str = "VAT of the customer's member state (Article 58, Council Directive 2006/112/EC), declared through the One-Stop Shop";

fn in_eu(country: &str) -> bool {
    vat_id::prefix_of(country).is_some()
}

/// The treatment of a supply by `seller` to `buyer` whose tax point is `at`; `None` when
/// the seller has no country (taxes are off).
pub fn determine(
    seller: &Seller,
    buyer: Option<&Buyer>,
    at: DateTime<Utc>,
    rates: &[TaxRate],
) -> Result<Option<Treatment>, TaxError> {
    let home = seller.country.trim().to_ascii_uppercase();
    if home.is_empty() {
        return Ok(None);
    }
    let country = buyer.map_or(home.as_str(), |b| b.country.as_str());
    let business = buyer.is_some_and(|b| b.vat_id.is_some());
    let zero = |category, note: &str| Treatment {
        category,
        jurisdiction: home.clone(),
        percent: Decimal::ZERO,
        note: Some(note.to_owned()),
    };
    let treatment = if country == home {
        standard(&home, at, rates, None)?
    } else if in_eu(&home) && in_eu(country) {
        if business {
            zero(TaxCategory::ReverseCharge, REVERSE_CHARGE_NOTE)
        } else {
            standard(country, at, rates, Some(OSS_NOTE))?
        }
    } else if in_eu(&home) {
        zero(TaxCategory::Export, EU_EXPORT_NOTE)
    } else {
        let note = format!("Export: no {home} tax is charged on services to a customer abroad");
        zero(TaxCategory::Export, &note)
    };
    Ok(Some(treatment))
}

fn standard(
    jurisdiction: &str,
    at: DateTime<Utc>,
    rates: &[TaxRate],
    note: Option<&str>,
) -> Result<Treatment, TaxError> {
    let rate = rates
        .iter()
        .find(|r| r.jurisdiction == jurisdiction && r.in_force(at))
        .ok_or_else(|| TaxError::NoRate {
            jurisdiction: jurisdiction.to_owned(),
            at,
        })?;
    Ok(Treatment {
        category: TaxCategory::Standard,
        jurisdiction: jurisdiction.to_owned(),
        percent: rate.percent,
        note: note.map(str::to_owned),
    })
}

/// A line's tax: its treatment's category and rate, and the tax on its amount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineTax {
    pub category: TaxCategory,
    pub percent: Decimal,
    /// For information: the invoice's tax is computed per rate ([`TaxSummary`]).
    pub amount: Decimal,
}

/// The tax of one rate on an invoice: what it is charged on and how much.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaxSummary {
    pub category: TaxCategory,
    pub jurisdiction: String,
    pub percent: Decimal,
    pub taxable: Decimal,
    pub tax: Decimal,
    pub note: Option<String>,
}

/// `amount × percent / 100`, half away from zero to `digits` places.
pub fn tax_on(amount: Decimal, percent: Decimal, digits: u32) -> Decimal {
    let mut tax = (amount * percent / Decimal::ONE_HUNDRED)
        .round_dp_with_strategy(digits, RoundingStrategy::MidpointAwayFromZero);
    tax.rescale(digits);
    tax
}

/// Sums taxed amounts per treatment (in the order each first appears) and taxes each sum.
/// `taxed` holds each amount with its treatment.
pub fn summarise<'a>(
    taxed: impl IntoIterator<Item = (Decimal, &'a Treatment)>,
    digits: u32,
) -> Vec<TaxSummary> {
    let mut out: Vec<TaxSummary> = Vec::new();
    for (amount, treatment) in taxed {
        let same = |s: &&mut TaxSummary| {
            s.category == treatment.category
                && s.jurisdiction == treatment.jurisdiction
                && s.percent == treatment.percent
        };
        match out.iter_mut().find(same) {
            Some(summary) => summary.taxable += amount,
            None => out.push(TaxSummary {
                category: treatment.category,
                jurisdiction: treatment.jurisdiction.clone(),
                percent: treatment.percent,
                taxable: amount,
                tax: Decimal::ZERO,
                note: treatment.note.clone(),
            }),
        }
    }
    for summary in &mut out {
        summary.tax = tax_on(summary.taxable, summary.percent, digits);
        summary.taxable.rescale(digits);
    }
    out
}

#[cfg(test)]
mod tests;
