//! Provider statements (docs/providers.md, "Statements"): what each provider earned, per
//! allocation its hardware served, on the tenants' invoices a month brought in. This
//! module is pure: `attribute` splits a finalized invoice's lines over the allocations
//! they charged for, and `earn` prices one allocation's share under a provider agreement.
//! `store` reads the invoices, writes the statements and posts them to the ledger.
//!
//! Rules:
//! - An allocation's revenue is its share of the usage and flat-fee lines that priced its
//!   SKU and metric in a segment, in proportion to the quantity it counted there (tiers
//!   and packages are averaged over the allocations that filled them). SLA credit lines
//!   are shared the same way, by failed unit-seconds. Commitment discounts, true-ups,
//!   late-usage adjustments and credits stay the platform's.
//! - Revenue share: gross = share % of the revenue. Fixed rate: gross = the unit-hours
//!   served on working hardware (no minimum top-up) × the rate for the SKU's form and
//!   region. Fee = fee % of the gross. Chargeback = the allocation's SLA credit when the
//!   provider bears it. Net = gross − fee − chargeback. Each is rounded half-even to the
//!   provider currency's minor unit; a statement's totals are sums of rounded lines.
//! - Revenue and SLA credit in another currency than the provider's are converted at the
//!   operator's exchange rate in force at the invoice's period end (`crate::exchange`);
//!   without one, the provider's statement is held until the rate is added.

pub mod credited;
pub mod store;

use std::collections::BTreeMap;

use neocloud_schema::entity::provider_agreement;
use neocloud_schema::money::minor_unit_digits_of;
use neocloud_schema::vocabulary::{Metric, SkuForm};
use rust_decimal::Decimal;
use serde::Deserialize;
use uuid::Uuid;

use crate::rating::period::{Line, PeriodInput, allocation_quantities, round};
use crate::rating::seconds_to_hours;
use crate::rating::unit_cost::{charged_by_segment, spot_billed_as_on_demand};

/// What one allocation was invoiced for on one invoice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Served {
    pub allocation: Uuid,
    pub sku: Uuid,
    /// Unit-seconds held on working hardware (no minimum top-up, no failed time).
    pub unit_seconds: Decimal,
    /// Its share of the usage and flat-fee lines, exact.
    pub revenue: Decimal,
    /// Its share of the SLA credit lines, as a positive amount, exact.
    pub sla_credit: Decimal,
}

/// Splits an invoice's lines over the allocations they charged for (the rule above).
/// Allocations of a segment are matched by the segment and the spot flag each line's trace
/// records; spot usage priced with on-demand usage (a rate without a spot price) shares
/// the on-demand lines.
pub fn attribute(input: &PeriodInput, lines: &[Line]) -> Vec<Served> {
    let groups = charged_by_segment(input, lines);
    let mut served: BTreeMap<Uuid, Served> = BTreeMap::new();
    for segment in &input.segments {
        for u in &segment.usage {
            let entry = served.entry(u.allocation).or_insert_with(|| Served {
                allocation: u.allocation,
                sku: u.sku,
                ..Served::default()
            });
            entry.unit_seconds += u.allocated_seconds;
        }
    }
    for (&(index, sku, metric, spot), &amount) in &groups {
        let merged_spot = !spot && spot_billed_as_on_demand(&groups, (index, sku, metric));
        let segment = &input.segments[index];
        let weights: Vec<(Uuid, Decimal)> = segment
            .usage
            .iter()
            .filter(|u| u.sku == sku && (u.spot == spot || (merged_spot && u.spot)))
            .filter_map(|u| {
                let (_, quantity, _) = allocation_quantities(segment, u)
                    .into_iter()
                    .find(|(m, _, _)| *m == metric)?;
                (quantity > Decimal::ZERO).then_some((u.allocation, quantity))
            })
            .collect();
        let total: Decimal = weights.iter().map(|(_, w)| *w).sum();
        if total.is_zero() {
            continue;
        }
        for (allocation, weight) in weights {
            // Multiplied first, so a share that is a terminating decimal is exact (a
            // half-cent share must round as the rule says, not as a rounding error does).
            let share = amount
                .checked_mul(weight)
                .map_or_else(|| amount * (weight / total), |product| product / total);
            if let Some(entry) = served.get_mut(&allocation) {
                if metric == Metric::SlaCredit {
                    entry.sla_credit -= share;
                } else {
                    entry.revenue += share;
                }
            }
        }
    }
    served
        .into_values()
        .filter(|s| !(s.unit_seconds.is_zero() && s.revenue.is_zero() && s.sla_credit.is_zero()))
        .collect()
}

/// How an agreement prices what its provider's hardware served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pricing {
    /// The provider's share of the revenue, in percent.
    RevenueShare(Decimal),
    /// A price per unit-hour per SKU form and region, in the provider's currency.
    FixedRate(Vec<FixedRate>),
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct FixedRate {
    pub form: SkuForm,
    pub region: String,
    pub price_per_unit_hour: Decimal,
}

/// A provider agreement, as statements apply it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarningTerms {
    pub version: i32,
    pub currency: String,
    pub pricing: Pricing,
    pub fee_percent: Decimal,
    pub provider_bears_sla: bool,
    pub hold_until_paid: bool,
    /// Nothing is paid out below it.
    pub payout_minimum: Decimal,
    /// For a fixed rate: credit notes take back part of what was earned (`take_back`).
    pub credit_notes_shared: bool,
}

impl EarningTerms {
    /// The stored agreement's terms; `None` when it cannot be read (never written so).
    pub fn from_stored(m: &provider_agreement::Model) -> Option<EarningTerms> {
        let pricing = match m.model.as_str() {
            "revenue_share" => Pricing::RevenueShare(m.revenue_share_percent?.get()),
            "fixed_rate" => Pricing::FixedRate(serde_json::from_value(m.fixed_rates.clone()).ok()?),
            _ => return None,
        };
        Some(EarningTerms {
            version: m.version,
            currency: m.currency.clone(),
            pricing,
            fee_percent: m.platform_fee_percent.get(),
            provider_bears_sla: m.sla_credits_borne_by == "provider",
            hold_until_paid: m.hold_until_paid,
            payout_minimum: m.payout_minimum.get(),
            credit_notes_shared: m.credit_notes_shared,
        })
    }
}

/// What one allocation earned its provider on one invoice, in the provider's currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Earned {
    pub unit_hours: Decimal,
    pub gross: Decimal,
    pub fee: Decimal,
    pub sla_chargeback: Decimal,
    pub net: Decimal,
    /// Why the gross is zero where it is not obvious (no fixed rate for the form).
    pub note: Option<String>,
    /// Units of the provider's currency per unit of the invoice's that the revenue and
    /// SLA credit were converted at; `None` when nothing was converted.
    pub exchange_rate: Option<Decimal>,
}

/// Where an allocation ran and what it was, for pricing.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    pub form: SkuForm,
    pub region: &'a str,
    /// The currency of the invoice it was served on.
    pub invoice_currency: &'a str,
    /// Units of the provider's currency per unit of the invoice's, where known.
    pub exchange_rate: Option<Decimal>,
}

/// Prices `served` under `terms`, converting the revenue and SLA credit from the invoice's
/// currency at the place's exchange rate. `None` when they must be converted and there is
/// no rate.
pub fn earn(terms: &EarningTerms, served: &Served, place: Place<'_>) -> Option<Earned> {
    let revenue_shared = matches!(terms.pricing, Pricing::RevenueShare(_));
    let charged_back = terms.provider_bears_sla && served.sla_credit > Decimal::ZERO;
    let converted = place.invoice_currency != terms.currency && (revenue_shared || charged_back);
    let rate = if converted {
        place.exchange_rate?
    } else {
        Decimal::ONE
    };
    let digits = minor_unit_digits_of(&terms.currency);
    let unit_hours = seconds_to_hours(served.unit_seconds);
    let mut note = None;
    let gross = match &terms.pricing {
        Pricing::RevenueShare(percent) => served.revenue * rate * *percent / Decimal::ONE_HUNDRED,
        Pricing::FixedRate(rates) => {
            let rate = rates
                .iter()
                .find(|r| r.form == place.form && r.region == place.region);
            match rate {
                Some(r) => unit_hours * r.price_per_unit_hour,
                None => {
                    note = Some(format!(
                        "no fixed rate for {} in {}",
                        place.form.as_str(),
                        place.region
                    ));
                    Decimal::ZERO
                }
            }
        }
    };
    let gross = round(gross, digits);
    let fee = round(gross * terms.fee_percent / Decimal::ONE_HUNDRED, digits);
    let sla_chargeback = if terms.provider_bears_sla {
        round(served.sla_credit * rate, digits)
    } else {
        round(Decimal::ZERO, digits)
    };
    Some(Earned {
        unit_hours,
        net: gross - fee - sla_chargeback,
        gross,
        fee,
        sla_chargeback,
        note,
        exchange_rate: converted.then_some(rate),
    })
}

/// What one allocation earned on one invoice, as its earning line has it: what a credit
/// note on that invoice takes back from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// The exchange rate the earning converted at, where it converted.
    pub exchange_rate: Option<Decimal>,
    /// The revenue it earned on, in the invoice's currency.
    pub revenue: Decimal,
    /// What it earned, in the provider's currency.
    pub gross: Decimal,
}

/// What a credit note's share (`credited`: the revenue and SLA credit it gave back, no
/// hours) takes back of what `claim` earned, before it is negated: priced as an earning
/// (`earn`), and for a fixed rate whose agreement shares credit notes, the part of the
/// claim's gross that the revenue given back is of the revenue earned on (the fee on it
/// with it).
pub fn take_back(
    terms: &EarningTerms,
    credited: &Served,
    place: Place<'_>,
    claim: &Claim,
) -> Option<Earned> {
    let mut earned = earn(terms, credited, place)?;
    let shared = matches!(terms.pricing, Pricing::FixedRate(_)) && terms.credit_notes_shared;
    if shared && claim.revenue > Decimal::ZERO {
        let digits = minor_unit_digits_of(&terms.currency);
        let part = (credited.revenue / claim.revenue).min(Decimal::ONE);
        earned.gross = round(claim.gross * part, digits);
        earned.fee = round(
            earned.gross * terms.fee_percent / Decimal::ONE_HUNDRED,
            digits,
        );
        earned.net = earned.gross - earned.fee - earned.sla_chargeback;
        earned.note = None;
    }
    Some(earned)
}

#[cfg(test)]
pub(crate) mod tests;
