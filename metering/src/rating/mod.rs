//! Rating (pure): a quantity of one SKU × metric in a billing period, priced by a rate of
//! a plan version, into an exact charge with its trace — which tiers, how much in each,
//! at what unit price. Vocabulary follows Stripe's prices (docs/architecture.md, "Plans and
//! rates"): per-unit, graduated, volume and package.
//!
//! Exactness: quantities and prices are `Decimal`; a charge keeps full precision (28
//! significant digits; GPU-seconds become GPU-hours by an exact division where the
//! decimal terminates, and to 20 decimal places where it does not, e.g. 1 s = 1/3600 h).
//! Rounding happens once, on an invoice line: half-even to the currency's minor unit, and
//! an invoice total is the sum of its rounded lines (`round_lines`).
//!
//! `period` rates a whole billing period into invoice lines (segments, minimums, spot,
//! SLA credits, commitments, late usage, credits); reading it from the database is the
//! `invoicing` module's job.

use rust_decimal::{Decimal, RoundingStrategy};
use serde::{Deserialize, Serialize};

pub mod period;
pub mod unit_cost;

/// Decimal places kept when a quantity conversion does not terminate.
pub const QUANTITY_DP: u32 = 20;

/// One tier: units up to `up_to` (cumulative, inclusive; `None` = no bound).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tier {
    pub up_to: Option<Decimal>,
    pub unit_price: Decimal,
    #[serde(default)]
    pub flat_fee: Decimal,
}

/// How a rate turns a quantity into money.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum PriceModel {
    PerUnit {
        unit_price: Decimal,
    },
    /// Each unit priced by the tier it falls in, plus each touched tier's flat fee.
    Graduated {
        tiers: Vec<Tier>,
    },
    /// The whole quantity priced by the tier the total falls in, plus its flat fee.
    Volume {
        tiers: Vec<Tier>,
    },
    /// `ceil(quantity / size) × price`.
    Package {
        size: Decimal,
        price: Decimal,
    },
}

/// One priced part of a charge (one tier, or the whole quantity).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChargePart {
    /// Index of the tier (0 for per-unit and package).
    pub tier: usize,
    pub quantity: Decimal,
    pub unit_price: Decimal,
    pub flat_fee: Decimal,
    /// `quantity × unit_price + flat_fee`, exact.
    pub amount: Decimal,
}

/// An exact charge with its trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Charge {
    pub quantity: Decimal,
    pub parts: Vec<ChargePart>,
    pub amount: Decimal,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateError {
    #[error("a quantity cannot be negative ({0})")]
    NegativeQuantity(Decimal),
    #[error("tiers must be non-empty, increasing, and end with an unbounded tier")]
    BadTiers,
    #[error("a package size must be positive")]
    BadPackage,
    #[error("prices cannot be negative")]
    NegativePrice,
    #[error("the amount overflows")]
    Overflow,
}

impl PriceModel {
    /// Checks the model's shape once, when a plan version is created.
    pub fn validate(&self) -> Result<(), RateError> {
        let check_tiers = |tiers: &[Tier]| {
            let Some(last) = tiers.last() else {
                return Err(RateError::BadTiers);
            };
            if last.up_to.is_some() {
                return Err(RateError::BadTiers);
            }
            let mut previous = Decimal::ZERO;
            for tier in &tiers[..tiers.len() - 1] {
                match tier.up_to {
                    Some(up_to) if up_to > previous => previous = up_to,
                    _ => return Err(RateError::BadTiers),
                }
            }
            if tiers
                .iter()
                .any(|t| t.unit_price.is_sign_negative() || t.flat_fee.is_sign_negative())
            {
                return Err(RateError::NegativePrice);
            }
            Ok(())
        };
        match self {
            PriceModel::PerUnit { unit_price } if unit_price.is_sign_negative() => {
                Err(RateError::NegativePrice)
            }
            PriceModel::PerUnit { .. } => Ok(()),
            PriceModel::Graduated { tiers } | PriceModel::Volume { tiers } => check_tiers(tiers),
            PriceModel::Package { size, price } => {
                if *size <= Decimal::ZERO {
                    Err(RateError::BadPackage)
                } else if price.is_sign_negative() {
                    Err(RateError::NegativePrice)
                } else {
                    Ok(())
                }
            }
        }
    }

    /// Prices `quantity` (in the rate's unit, for the whole billing period).
    pub fn rate(&self, quantity: Decimal) -> Result<Charge, RateError> {
        if quantity.is_sign_negative() && !quantity.is_zero() {
            return Err(RateError::NegativeQuantity(quantity));
        }
        self.validate()?;
        let parts = match self {
            PriceModel::PerUnit { unit_price } => {
                vec![charge_part(0, quantity, *unit_price, Decimal::ZERO)?]
            }
            PriceModel::Graduated { tiers } => graduated_parts(tiers, quantity)?,
            PriceModel::Volume { tiers } => vec![volume_part(tiers, quantity)?],
            PriceModel::Package { size, price } => vec![package_part(*size, *price, quantity)?],
        };
        let amount = parts
            .iter()
            .try_fold(Decimal::ZERO, |sum, p| sum.checked_add(p.amount))
            .ok_or(RateError::Overflow)?;
        Ok(Charge {
            quantity,
            parts,
            amount,
        })
    }
}

/// `quantity` at `unit_price` in one tier, plus its flat fee.
fn charge_part(
    tier: usize,
    quantity: Decimal,
    unit_price: Decimal,
    flat_fee: Decimal,
) -> Result<ChargePart, RateError> {
    let amount = quantity
        .checked_mul(unit_price)
        .and_then(|a| a.checked_add(flat_fee))
        .ok_or(RateError::Overflow)?;
    Ok(ChargePart {
        tier,
        quantity,
        unit_price,
        flat_fee,
        amount,
    })
}

/// A tier's flat fee is owed once anything is used.
fn fee_if_used(tier: &Tier, quantity: Decimal) -> Decimal {
    if quantity.is_zero() {
        Decimal::ZERO
    } else {
        tier.flat_fee
    }
}

/// Graduated: each tier the quantity reaches prices the units within it (a zero quantity
/// is one part of the first tier).
fn graduated_parts(tiers: &[Tier], quantity: Decimal) -> Result<Vec<ChargePart>, RateError> {
    let mut parts = Vec::new();
    let mut floor = Decimal::ZERO;
    for (i, tier) in tiers.iter().enumerate() {
        if quantity <= floor && !(i == 0 && quantity.is_zero()) {
            break;
        }
        let ceiling = tier.up_to.map_or(quantity, |u| u.min(quantity));
        let in_tier = (ceiling - floor).max(Decimal::ZERO);
        if in_tier.is_zero() && !quantity.is_zero() {
            break;
        }
        let fee = fee_if_used(tier, quantity);
        parts.push(charge_part(i, in_tier, tier.unit_price, fee)?);
        match tier.up_to {
            Some(up_to) => floor = up_to,
            None => break,
        }
    }
    Ok(parts)
}

/// Volume: the whole quantity at the price of the tier it falls in.
fn volume_part(tiers: &[Tier], quantity: Decimal) -> Result<ChargePart, RateError> {
    let (i, tier) = tiers
        .iter()
        .enumerate()
        .find(|(_, t)| t.up_to.is_none_or(|u| quantity <= u))
        .ok_or(RateError::BadTiers)?;
    charge_part(i, quantity, tier.unit_price, fee_if_used(tier, quantity))
}

/// Package: whole packages of `size`, each at `price`.
fn package_part(size: Decimal, price: Decimal, quantity: Decimal) -> Result<ChargePart, RateError> {
    let packages = (quantity / size).ceil();
    Ok(ChargePart {
        tier: 0,
        quantity,
        unit_price: price,
        flat_fee: Decimal::ZERO,
        amount: packages.checked_mul(price).ok_or(RateError::Overflow)?,
    })
}

/// GPU-seconds (or GiB-seconds) to hours, exact where the decimal terminates.
pub fn seconds_to_hours(seconds: Decimal) -> Decimal {
    (seconds / Decimal::from(3600)).round_dp(QUANTITY_DP)
}

/// Billable seconds of one allocation: its lifetime, but at least the plan's minimum.
pub fn billable_seconds(lifetime_seconds: i64, minimum_seconds: i64) -> i64 {
    lifetime_seconds.max(minimum_seconds).max(0)
}

/// Rounds invoice lines half-even to `minor_digits` and returns them with their total —
/// the sum of the rounded lines, never a separately rounded sum.
pub fn round_lines(amounts: &[Decimal], minor_digits: u32) -> (Vec<Decimal>, Decimal) {
    let rounded: Vec<Decimal> = amounts
        .iter()
        .map(|a| a.round_dp_with_strategy(minor_digits, RoundingStrategy::MidpointNearestEven))
        .collect();
    let total = rounded.iter().sum();
    (rounded, total)
}

#[cfg(test)]
mod tests;
