//! A reference model of the invoice, written from the rule in `docs/invoicing.md` and
//! sharing no code with the server's rating, invoicing or usage modules: what a period of
//! orders should cost, line by line, computed from first principles.
//!
//! The rule it encodes:
//! - one unit of a SKU is one GPU, one MIG slice, one fraction or one node; an order of
//!   `count` units held `T` seconds is `count × T` unit-seconds, and an allocation that
//!   ended before the plan's minimum billable duration is topped up to it, per unit;
//! - per (SKU, spot-priced?) the unit-seconds are summed, then turned into unit-hours
//!   once: `seconds / 3600`, kept to 20 decimal places, half-even;
//! - spot usage is priced at the rate's spot price where it has one, otherwise with (and
//!   counted into the tiers of) on-demand usage; a SKU without a rate bills at its list
//!   price per unit-hour;
//! - per-unit: `quantity × price`; graduated: each unit at its tier's price plus each
//!   touched tier's flat fee (a line of its own); volume: every unit at the price of the
//!   tier the total reaches, plus that tier's flat fee; package: `ceil(quantity / size)`
//!   packages at the package price;
//! - every line is rounded half-even to cents; the total is the sum of rounded lines.

use std::collections::BTreeMap;

use rust_decimal::{Decimal, RoundingStrategy};

/// How the plan prices one SKU's unit-hours.
#[derive(Debug, Clone)]
pub enum Pricing {
    PerUnit(Decimal),
    /// (up to, unit price, flat fee); the last tier has no bound.
    Graduated(Vec<(Option<Decimal>, Decimal, Decimal)>),
    Volume(Vec<(Option<Decimal>, Decimal, Decimal)>),
    /// (size, price).
    Package(Decimal, Decimal),
}

#[derive(Debug, Clone)]
pub struct SkuPlan {
    pub name: String,
    pub list_price: Decimal,
    /// `None`: the plan has no rate for the SKU (list price).
    pub pricing: Option<Pricing>,
    pub spot_price: Option<Decimal>,
}

/// One order as it ran: units of a SKU, held `seconds`, on spot or not.
#[derive(Debug, Clone)]
pub struct HeldOrder {
    pub sku: String,
    pub count: i64,
    pub seconds: i64,
    pub spot: bool,
}

/// An expected invoice line: (SKU name, unit price) → quantity and rounded amount.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ModelLine {
    pub sku: String,
    pub quantity: Decimal,
    pub unit_price: Decimal,
    pub amount: Decimal,
}

fn cents(amount: Decimal) -> Decimal {
    amount.round_dp_with_strategy(2, RoundingStrategy::MidpointNearestEven)
}

fn hours(seconds: Decimal) -> Decimal {
    (seconds / Decimal::from(3600))
        .round_dp_with_strategy(20, RoundingStrategy::MidpointNearestEven)
        .normalize()
}

fn line(sku: &str, quantity: Decimal, unit_price: Decimal) -> ModelLine {
    ModelLine {
        sku: sku.to_owned(),
        quantity: quantity.normalize(),
        unit_price: unit_price.normalize(),
        amount: cents(quantity * unit_price),
    }
}

fn priced(sku: &str, quantity: Decimal, pricing: &Pricing) -> Vec<ModelLine> {
    match pricing {
        Pricing::PerUnit(price) => vec![line(sku, quantity, *price)],
        Pricing::Package(size, price) => vec![line(sku, (quantity / size).ceil(), *price)],
        Pricing::Graduated(tiers) => {
            let mut out = Vec::new();
            let mut below = Decimal::ZERO;
            for (up_to, price, fee) in tiers {
                if quantity <= below {
                    break;
                }
                let top = up_to.map_or(quantity, |u| u.min(quantity));
                out.push(line(sku, top - below, *price));
                if !fee.is_zero() {
                    out.push(line(sku, Decimal::ONE, *fee));
                }
                below = top;
            }
            out
        }
        Pricing::Volume(tiers) => {
            let (_, price, fee) = tiers
                .iter()
                .find(|(up_to, _, _)| up_to.is_none_or(|u| quantity <= u))
                .expect("the last tier is unbounded");
            let mut out = vec![line(sku, quantity, *price)];
            if !fee.is_zero() {
                out.push(line(sku, Decimal::ONE, *fee));
            }
            out
        }
    }
}

/// The lines and total the period should be invoiced.
pub fn invoice(
    skus: &[SkuPlan],
    orders: &[HeldOrder],
    minimum_seconds: i64,
) -> (Vec<ModelLine>, Decimal) {
    // Unit-seconds per (SKU, priced as spot?).
    let mut seconds: BTreeMap<(String, bool), Decimal> = BTreeMap::new();
    for order in orders {
        let sku = skus
            .iter()
            .find(|s| s.name == order.sku)
            .expect("known SKU");
        let spot_priced = order.spot && sku.pricing.is_some() && sku.spot_price.is_some();
        let billed = order.seconds.max(minimum_seconds.max(0));
        *seconds.entry((order.sku.clone(), spot_priced)).or_default() +=
            Decimal::from(order.count * billed);
    }
    let mut lines = Vec::new();
    for ((name, spot_priced), secs) in seconds {
        if secs.is_zero() {
            continue;
        }
        let sku = skus.iter().find(|s| s.name == name).expect("known SKU");
        let quantity = hours(secs);
        match (&sku.pricing, spot_priced) {
            (Some(_), true) => lines.push(line(&name, quantity, sku.spot_price.expect("spot"))),
            (Some(pricing), false) => lines.extend(priced(&name, quantity, pricing)),
            (None, _) => lines.push(line(&name, quantity, sku.list_price)),
        }
    }
    lines.sort();
    let total = lines.iter().map(|l| l.amount).sum();
    (lines, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().expect("decimal")
    }

    #[test]
    fn a_node_held_299_seconds_costs_its_hourly_price_once() {
        let skus = [SkuPlan {
            name: "h100-node".into(),
            list_price: d("19.92"),
            pricing: None,
            spot_price: None,
        }];
        let orders = [HeldOrder {
            sku: "h100-node".into(),
            count: 1,
            seconds: 299,
            spot: false,
        }];
        let (lines, total) = invoice(&skus, &orders, 0);
        assert_eq!(lines.len(), 1);
        assert_eq!(total, d("1.65"));
    }

    #[test]
    fn graduated_tiers_split_the_quantity_and_add_fees() {
        let pricing = Pricing::Graduated(vec![
            (Some(d("1")), d("2.00"), d("0")),
            (None, d("1.00"), d("0.50")),
        ]);
        let lines = priced("x", d("3"), &pricing);
        let amounts: Vec<Decimal> = lines.iter().map(|l| l.amount).collect();
        assert_eq!(amounts, vec![d("2.00"), d("2.00"), d("0.50")]);
    }
}
