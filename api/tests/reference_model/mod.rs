//! A reference model of the invoice, written from the rule in `docs/invoicing.md` and
//! sharing no code with the server's rating, invoicing or usage modules: what a period of
//! orders should cost, line by line, computed from first principles.
//!
//! The rule it encodes:
//! - one unit of a SKU is one GPU, one MIG slice, one fraction or one node; an order of
//!   `count` units held `T` seconds is `count × T` unit-seconds, and an allocation that
//!   ended before the plan's minimum billable duration is topped up to it, per unit;
//! - time on a failed GPU is not billed as ALLOCATED: a GPU, slice or fraction loses the
//!   failed seconds, a node the failed GPUs' share of them; an SLA_CREDIT rate credits that
//!   time (a negative price);
//! - SM-active GPU-seconds are what the agent reported: utilization / 100 × the seconds it
//!   sampled, per GPU (a node: each of its GPUs), MIG instance or fraction's process; GiB-
//!   seconds likewise, memory used × seconds; ACTIVE and MEMORY are billed only where the
//!   plan has a rate for them;
//! - per (SKU, metric, spot-priced?) the seconds are summed, then turned into hours once:
//!   `seconds / 3600`, kept to 20 decimal places, half-even;
//! - spot usage is priced at the rate's spot price where it has one, otherwise with (and
//!   counted into the tiers of) on-demand usage; a SKU without an ALLOCATED rate bills at
//!   its list price per unit-hour;
//! - per-unit: `quantity × price`; graduated: each unit at its tier's price plus each
//!   touched tier's flat fee (a line of its own); volume: every unit at the price of the
//!   tier the total reaches, plus that tier's flat fee; package: `ceil(quantity / size)`
//!   packages at the package price;
//! - every line is rounded half-even to cents; a plan's commitment discount is a line of
//!   the subtotal so far × −discount; a credit grant pays at most what is owed, as a line
//!   of 1 × −amount; the total is the sum of rounded lines.

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
    /// GPUs one unit spans (8 for a node of 8, else 1).
    pub gpus_per_unit: i64,
    /// `None`: the plan has no ALLOCATED rate for the SKU (list price).
    pub pricing: Option<Pricing>,
    pub spot_price: Option<Decimal>,
    /// Per SM-active GPU-hour.
    pub active_price: Option<Decimal>,
    /// Per GiB-hour of GPU memory.
    pub memory_price: Option<Decimal>,
    /// Per unit-hour on failed hardware (credited).
    pub sla_price: Option<Decimal>,
}

/// The plan: its SKUs' prices and the plan-wide terms.
#[derive(Debug, Clone)]
pub struct Plan {
    pub skus: Vec<SkuPlan>,
    pub minimum_seconds: i64,
    /// Percent off the subtotal.
    pub discount_pct: Option<Decimal>,
    /// A credit grant covering the period.
    pub credit: Option<Decimal>,
}

/// One order as it ran: units of a SKU, held `seconds`, on spot or not.
#[derive(Debug, Clone)]
pub struct HeldOrder {
    pub sku: String,
    pub count: i64,
    pub seconds: i64,
    pub spot: bool,
    /// Seconds of each unit the agent sampled, at `utilization_pct` per GPU (instance,
    /// process).
    pub sampled_seconds: i64,
    pub utilization_pct: Decimal,
    /// GiB of GPU memory each GPU (instance, process) used while sampled.
    pub memory_gib: i64,
    /// GPU-seconds of the order's GPUs spent failed.
    pub failed_gpu_seconds: i64,
}

/// An expected invoice line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ModelLine {
    pub kind: String,
    pub sku: String,
    pub metric: String,
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

fn line(kind: &str, sku: &str, metric: &str, quantity: Decimal, unit_price: Decimal) -> ModelLine {
    ModelLine {
        kind: kind.to_owned(),
        sku: sku.to_owned(),
        metric: metric.to_owned(),
        quantity: quantity.normalize(),
        unit_price: unit_price.normalize(),
        amount: cents(quantity * unit_price),
    }
}

fn usage(sku: &str, quantity: Decimal, unit_price: Decimal) -> ModelLine {
    line("USAGE", sku, "ALLOCATED", quantity, unit_price)
}

fn fee(sku: &str, fee: Decimal) -> ModelLine {
    line("FLAT_FEE", sku, "ALLOCATED", Decimal::ONE, fee)
}

fn priced(sku: &str, quantity: Decimal, pricing: &Pricing) -> Vec<ModelLine> {
    match pricing {
        Pricing::PerUnit(price) => vec![usage(sku, quantity, *price)],
        Pricing::Package(size, price) => vec![usage(sku, (quantity / size).ceil(), *price)],
        Pricing::Graduated(tiers) => {
            let mut out = Vec::new();
            let mut below = Decimal::ZERO;
            for (up_to, price, flat) in tiers {
                if quantity <= below {
                    break;
                }
                let top = up_to.map_or(quantity, |u| u.min(quantity));
                out.push(usage(sku, top - below, *price));
                if !flat.is_zero() {
                    out.push(fee(sku, *flat));
                }
                below = top;
            }
            out
        }
        Pricing::Volume(tiers) => {
            let (_, price, flat) = tiers
                .iter()
                .find(|(up_to, _, _)| up_to.is_none_or(|u| quantity <= u))
                .expect("the last tier is unbounded");
            let mut out = vec![usage(sku, quantity, *price)];
            if !flat.is_zero() {
                out.push(fee(sku, *flat));
            }
            out
        }
    }
}

/// Seconds per SKU and quantity.
#[derive(Default)]
struct Seconds {
    /// Unit-seconds billed as ALLOCATED, by priced-as-spot.
    allocated: BTreeMap<bool, Decimal>,
    failed_units: Decimal,
    active: Decimal,
    memory: Decimal,
}

fn seconds_per_sku(plan: &Plan, orders: &[HeldOrder]) -> BTreeMap<String, Seconds> {
    let mut out: BTreeMap<String, Seconds> = BTreeMap::new();
    for order in orders {
        let sku = sku(plan, &order.sku);
        let spot_priced = spot_priced(sku, order);
        let billed = order.seconds.max(plan.minimum_seconds.max(0));
        let failed_units =
            Decimal::from(order.failed_gpu_seconds) / Decimal::from(sku.gpus_per_unit);
        let s = out.entry(order.sku.clone()).or_default();
        *s.allocated.entry(spot_priced).or_default() +=
            Decimal::from(order.count * billed) - failed_units;
        s.failed_units += failed_units;
        let sampled = Decimal::from(order.count * sku.gpus_per_unit * order.sampled_seconds);
        s.active += sampled * order.utilization_pct / Decimal::ONE_HUNDRED;
        s.memory += sampled * Decimal::from(order.memory_gib);
    }
    out
}

fn sku<'p>(plan: &'p Plan, name: &str) -> &'p SkuPlan {
    plan.skus
        .iter()
        .find(|s| s.name == name)
        .expect("known SKU")
}

/// What usage of one SKU and metric a group of lines priced: the SKU, the metric and
/// whether it was priced as spot (at the rate's spot price).
type Class = (String, &'static str, bool);

fn spot_priced(sku: &SkuPlan, order: &HeldOrder) -> bool {
    order.spot && sku.pricing.is_some() && sku.spot_price.is_some()
}

/// The usage lines of the period (before discounts and credits), by what they priced.
fn usage_lines(plan: &Plan, orders: &[HeldOrder]) -> Vec<(Class, Vec<ModelLine>)> {
    let mut out = Vec::new();
    for (name, secs) in seconds_per_sku(plan, orders) {
        let sku = sku(plan, &name);
        for (spot_priced, unit_secs) in secs.allocated {
            if unit_secs.is_zero() {
                continue;
            }
            let quantity = hours(unit_secs);
            let lines = match (&sku.pricing, spot_priced) {
                (Some(_), true) => vec![usage(&name, quantity, sku.spot_price.expect("spot"))],
                (Some(pricing), false) => priced(&name, quantity, pricing),
                (None, _) => vec![usage(&name, quantity, sku.list_price)],
            };
            out.push(((name.clone(), "ALLOCATED", spot_priced), lines));
        }
        let mut per_metric =
            |metric: &'static str, kind: &str, price: Option<Decimal>, q: Decimal| {
                if let Some(price) = price.filter(|_| !q.is_zero()) {
                    let line = line(kind, &name, metric, hours(q), price);
                    out.push(((name.clone(), metric, false), vec![line]));
                }
            };
        per_metric("ACTIVE", "USAGE", sku.active_price, secs.active);
        per_metric("MEMORY", "USAGE", sku.memory_price, secs.memory);
        per_metric(
            "SLA_CREDIT",
            "SLA_CREDIT",
            sku.sla_price.map(|p| -p),
            secs.failed_units,
        );
    }
    out
}

/// The lines and total the period should be invoiced.
pub fn invoice(plan: &Plan, orders: &[HeldOrder]) -> (Vec<ModelLine>, Decimal) {
    let mut lines: Vec<ModelLine> = usage_lines(plan, orders)
        .into_iter()
        .flat_map(|(_, lines)| lines)
        .collect();
    let subtotal: Decimal = lines.iter().map(|l| l.amount).sum();
    if let Some(pct) = plan.discount_pct.filter(|_| !subtotal.is_zero()) {
        lines.push(line(
            "COMMITMENT_DISCOUNT",
            "",
            "",
            subtotal,
            -pct / Decimal::ONE_HUNDRED,
        ));
    }
    let owed: Decimal = lines.iter().map(|l| l.amount).sum();
    if let Some(credit) = plan
        .credit
        .map(|c| c.min(owed))
        .filter(|c| *c > Decimal::ZERO)
    {
        lines.push(line("CREDIT", "", "", Decimal::ONE, -credit));
    }
    lines.sort();
    let total = lines.iter().map(|l| l.amount).sum();
    (lines, total)
}

/// What each order's usage cost, as a usage read prices it (`docs/metering.md`, "Cost"):
/// the rounded lines of each SKU, metric and price class shared by the orders in
/// proportion to what each used of it (unit-seconds without the minimum's top-up, SM-active
/// and GiB-seconds, failed unit-seconds), exact.
pub fn order_costs(plan: &Plan, orders: &[HeldOrder]) -> Vec<Decimal> {
    let used = |order: &HeldOrder, (name, metric, spot): &Class| -> Decimal {
        let sku = sku(plan, name);
        if order.sku != *name || (*metric == "ALLOCATED" && spot_priced(sku, order) != *spot) {
            return Decimal::ZERO;
        }
        let failed = Decimal::from(order.failed_gpu_seconds) / Decimal::from(sku.gpus_per_unit);
        let sampled = Decimal::from(order.count * sku.gpus_per_unit * order.sampled_seconds);
        match *metric {
            "ALLOCATED" => Decimal::from(order.count * order.seconds) - failed,
            "ACTIVE" => sampled * order.utilization_pct / Decimal::ONE_HUNDRED,
            "MEMORY" => sampled * Decimal::from(order.memory_gib),
            _ => failed,
        }
    };
    let mut costs = vec![Decimal::ZERO; orders.len()];
    for (class, lines) in usage_lines(plan, orders) {
        let amount: Decimal = lines.iter().map(|l| l.amount).sum();
        let total: Decimal = orders.iter().map(|o| used(o, &class)).sum();
        if total.is_zero() {
            continue;
        }
        for (cost, order) in costs.iter_mut().zip(orders) {
            *cost += amount * used(order, &class) / total;
        }
    }
    costs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().expect("decimal")
    }

    fn node(pricing: Option<Pricing>, sla_price: Option<Decimal>) -> Plan {
        Plan {
            skus: vec![SkuPlan {
                name: "h100-node".into(),
                list_price: d("19.92"),
                gpus_per_unit: 8,
                pricing,
                spot_price: None,
                active_price: None,
                memory_price: None,
                sla_price,
            }],
            minimum_seconds: 0,
            discount_pct: None,
            credit: None,
        }
    }

    fn held(seconds: i64, failed_gpu_seconds: i64) -> HeldOrder {
        HeldOrder {
            sku: "h100-node".into(),
            count: 1,
            seconds,
            spot: false,
            sampled_seconds: 0,
            utilization_pct: Decimal::ZERO,
            memory_gib: 0,
            failed_gpu_seconds,
        }
    }

    #[test]
    fn a_node_held_299_seconds_costs_its_hourly_price_once() {
        let (lines, total) = invoice(&node(None, None), &[held(299, 0)]);
        assert_eq!(lines.len(), 1);
        assert_eq!(total, d("1.65"));
    }

    #[test]
    fn a_node_with_two_of_eight_gpus_failed_an_hour_credits_a_quarter_node_hour() {
        let plan = node(Some(Pricing::PerUnit(d("20"))), Some(d("20")));
        let (lines, total) = invoice(&plan, &[held(7200, 2 * 3600)]);
        let amounts: Vec<(String, Decimal)> =
            lines.iter().map(|l| (l.kind.clone(), l.amount)).collect();
        assert_eq!(
            amounts,
            vec![
                ("SLA_CREDIT".into(), d("-5.00")),
                ("USAGE".into(), d("35.00"))
            ]
        );
        assert_eq!(total, d("30.00"));
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
