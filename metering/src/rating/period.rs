//! Rating a billing period into invoice lines (pure). The input is what the store read:
//! the period's segments (one per plan version in force; a mid-period `assignPlan` splits
//! the period in two), each with per-allocation usage; the tenant's credit grants; and
//! the late usage of earlier, already closed periods. The output is the invoice: lines
//! with their trace, and the credit each grant gives.
//!
//! Rules (docs/architecture.md, billing; docs/invoicing.md, including "Units"):
//! - Quantities are summed in seconds and converted to hours once, so rating a period
//!   minute by minute and rating it at once give the same lines.
//! - One line per (segment, SKU, metric, price, tier); a tier's flat fee is a line of its
//!   own, so every line is `quantity × unitPrice` rounded half-even to the minor unit.
//! - ALLOCATED includes each allocation's top-up to the plan's minimum billable duration
//!   (in the segment the allocation ended in, once its lifetime is final). Spot allocations are priced at the
//!   rate's spot price where it has one.
//! - An SLA_CREDIT rate credits (negative line) each failed GPU-hour; failed time is never
//!   billed as ALLOCATED in any case.
//! - Usage of a SKU the plan has no rate for is billed ALLOCATED at the SKU's list price.
//! - A commitment (the plan in force at the period's end): its discount is a negative line
//!   on the usage subtotal, and if the discounted usage falls short of the monthly minimum
//!   (prorated to the period's share of a month) a true-up line makes up the difference.
//! - Late usage of a closed period: one adjustment line per line whose quantity changed,
//!   at that line's unit price.
//! - Credits apply to what is owed after all of the above, oldest expiry first, each at most
//!   what is left of it and at most the charges accrued within its coverage.
//! - The total is the sum of the rounded lines; `subtotal` is the sum of the lines before
//!   credits, `credits` what the credits took off.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use neocloud_schema::ids::InvoiceId;
use neocloud_schema::vocabulary::{LineKind, Metric};
use rust_decimal::{Decimal, RoundingStrategy};
use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

use super::{ChargePart, PriceModel, RateError, seconds_to_hours};
use crate::tax::{LineTax, TaxSummary, Treatment};

/// One rate of a plan version, for one SKU and metric.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rate {
    pub sku: Uuid,
    pub metric: Metric,
    pub model: PriceModel,
    #[serde(default)]
    pub spot_unit_price: Option<Decimal>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commitment {
    pub monthly_minimum: Decimal,
    pub discount_pct: Decimal,
}

/// The terms of one plan version (or the list prices, for a tenant without a plan).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanTerms {
    /// How the plan is named on the invoice, e.g. `standard v2`.
    pub label: String,
    #[serde(default)]
    pub version_id: Option<Uuid>,
    #[serde(default)]
    pub minimum_billable_seconds: i64,
    pub rates: Vec<Rate>,
    #[serde(default)]
    pub commitment: Option<Commitment>,
}

/// What one allocation used within one segment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocationUsage {
    pub allocation: Uuid,
    pub sku: Uuid,
    #[serde(default)]
    pub spot: bool,
    /// Units of the SKU held: GPUs for whole GPUs, 1 for a MIG slice, a fraction or a node.
    /// (Rating inputs stored before units were per SKU name this `gpus`, in GPU shares.)
    #[serde(alias = "gpus")]
    pub units: Decimal,
    /// Unit-seconds held in the segment, without time on failed hardware.
    #[serde(default)]
    pub allocated_seconds: Decimal,
    /// Unit-seconds held on failed hardware in the segment (a node: its failed GPUs'
    /// share).
    #[serde(default)]
    pub sla_credit_seconds: Decimal,
    #[serde(default)]
    pub active_seconds: Decimal,
    #[serde(default)]
    pub memory_gib_seconds: Decimal,
    #[serde(default)]
    pub energy_kwh: Decimal,
    /// The allocation's whole lifetime, in seconds, when it ended in this segment (the
    /// minimum billable duration is topped up there, once, when it is final).
    #[serde(default)]
    pub lifetime_seconds_if_ended: Option<i64>,
    /// The part of the segment it was held, `[from, to)` (what its charges are for).
    #[serde(default)]
    pub held: Option<(DateTime<Utc>, DateTime<Utc>)>,
}

/// One allocation's usage in one minute bucket.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MinuteUsage {
    pub allocation: Uuid,
    pub sku: Uuid,
    pub spot: bool,
    pub units: Decimal,
    pub allocated_seconds: Decimal,
    pub sla_credit_seconds: Decimal,
    pub active_seconds: Decimal,
    pub memory_gib_seconds: Decimal,
    pub energy_kwh: Decimal,
}

/// Folds minute buckets (in any order) into per-allocation usage: sums of seconds, so
/// that rating the result equals rating the period at once.
pub fn fold_minutes<'a>(
    minutes: impl IntoIterator<Item = &'a MinuteUsage>,
) -> Vec<AllocationUsage> {
    let mut by_allocation: BTreeMap<Uuid, AllocationUsage> = BTreeMap::new();
    for m in minutes {
        let u = by_allocation
            .entry(m.allocation)
            .or_insert_with(|| AllocationUsage {
                allocation: m.allocation,
                sku: m.sku,
                spot: m.spot,
                units: m.units,
                ..AllocationUsage::default()
            });
        u.allocated_seconds += m.allocated_seconds;
        u.sla_credit_seconds += m.sla_credit_seconds;
        u.active_seconds += m.active_seconds;
        u.memory_gib_seconds += m.memory_gib_seconds;
        u.energy_kwh += m.energy_kwh;
    }
    by_allocation.into_values().collect()
}

/// A SKU as the invoice names it, with its unit and list price per unit-hour.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkuInfo {
    pub name: String,
    pub list_price_per_hour: Decimal,
    /// What one unit is (`GPU`, `MIG slice 3g.40gb`, `250 milli-GPU`, `node`).
    #[serde(default = "default_unit")]
    pub unit: String,
    /// Where it runs (`eu-west`); empty in ratings stored before regions were recorded.
    #[serde(default)]
    pub region: String,
    /// What a metered SKU sells; none for GPU SKUs (compute) and in ratings stored before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<neocloud_schema::vocabulary::ServiceCategory>,
    /// What a volume SKU stores; none for the other forms and in ratings stored before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<neocloud_schema::vocabulary::StorageClass>,
}

/// What an ALLOCATED quantity counts, recorded with every finalized invoice's rating.
/// Invoices finalized without it billed GPU shares (a node per GPU, a MIG slice at its
/// compute share, a fraction at its milli-GPUs); they are not re-rated for late usage,
/// since the difference would be the change of rule, not late usage (docs/invoicing.md).
pub const ALLOCATED_UNIT_RULE: &str = "unit-hours of the SKU";

/// The unit of a SKU not named otherwise (rating inputs stored before units were named):
/// a whole GPU, the one form both rules bill alike.
pub const DEFAULT_UNIT: &str = neocloud_schema::vocabulary::GPU_UNIT;

fn default_unit() -> String {
    DEFAULT_UNIT.to_owned()
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub plan: PlanTerms,
    pub usage: Vec<AllocationUsage>,
    /// What meters counted in the segment, per metered SKU.
    #[serde(default)]
    pub metered: Vec<MeteredUsage>,
}

/// A metered SKU's quantity in one segment, in the SKU's unit: what its meters counted
/// (per meter and group, aggregated as each meter says, then summed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeteredUsage {
    pub sku: Uuid,
    pub quantity: Decimal,
    /// The meter versions that counted it (`key v2`).
    #[serde(default)]
    pub meters: Vec<String>,
}

/// A credit grant as it stands before this invoice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantBalance {
    pub grant: Uuid,
    pub description: String,
    pub available: Decimal,
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
    /// Charges accrued in this period within the grant's coverage (from its
    /// `covers_from` to its expiry, when that window is narrower than the period);
    /// `None`: it covers the whole period.
    #[serde(default)]
    pub accrued_cap: Option<Decimal>,
}

/// Lines of an earlier, closed period: what was billed for it (its invoice and the
/// adjustments since) and what rating it again today gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LateUsage {
    pub invoice: InvoiceId,
    pub number: String,
    pub billed: Vec<Line>,
    pub rerated: Vec<Line>,
    /// The tax of that invoice, which its adjustments keep.
    #[serde(default)]
    pub tax: Option<Treatment>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeriodInput {
    pub currency: String,
    pub minor_digits: u32,
    pub skus: BTreeMap<Uuid, SkuInfo>,
    pub segments: Vec<Segment>,
    /// The period's length as a share of a full month (for prorating a commitment).
    #[serde(default = "one")]
    pub month_fraction: Decimal,
    #[serde(default)]
    pub late: Vec<LateUsage>,
    #[serde(default)]
    pub grants: Vec<GrantBalance>,
    /// The tax of the period's supply; `None`: untaxed.
    #[serde(default)]
    pub tax: Option<Treatment>,
}

fn one() -> Decimal {
    Decimal::ONE
}

/// One invoice line with its trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    pub kind: LineKind,
    #[serde(default)]
    pub description: String,
    pub sku: Option<Uuid>,
    pub sku_name: Option<String>,
    pub metric: Option<Metric>,
    /// The tier of a tiered rate: counted from 0 here, written out from 1 (as GraphQL,
    /// the CSV and the description number it).
    #[serde(default, with = "tier_from_one")]
    pub tier: Option<usize>,
    pub quantity: Decimal,
    pub unit: String,
    pub unit_price: Decimal,
    /// `quantity × unit_price`, exact.
    #[serde(default)]
    pub amount_exact: Decimal,
    /// Rounded half-even to the currency's minor unit.
    #[serde(default)]
    pub amount: Decimal,
    #[serde(default)]
    pub adjusts_invoice: Option<InvoiceId>,
    #[serde(default)]
    pub trace: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tax: Option<LineTax>,
}

/// A line's tier as it is written out: the first tier is 1.
mod tier_from_one {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(tier: &Option<usize>, out: S) -> Result<S::Ok, S::Error> {
        match tier {
            Some(t) => out.serialize_some(&(t + 1)),
            None => out.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(input: D) -> Result<Option<usize>, D::Error> {
        Option::<usize>::deserialize(input)?
            .map(|n| {
                n.checked_sub(1)
                    .ok_or_else(|| serde::de::Error::custom("tiers are numbered from 1"))
            })
            .transpose()
    }
}

/// How a stored rating numbers tiers; ratings without it counted from 0.
pub const TIER_NUMBERING_RULE: &str = "tiers numbered from 1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RatedInvoice {
    pub lines: Vec<Line>,
    pub subtotal: Decimal,
    /// The tax per rate, and their sum.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taxes: Vec<TaxSummary>,
    #[serde(default)]
    pub tax: Decimal,
    pub credits: Decimal,
    /// `subtotal + tax − credits`.
    pub total: Decimal,
    /// (grant, amount it gives to this invoice).
    pub credit_uses: Vec<(Uuid, Decimal)>,
}

impl RatedInvoice {
    /// What the period's usage costs so far: the lines of usage, fees, SLA credits,
    /// adjustments and the commitment discount — not the commitment's true-up (owed
    /// whatever is used) nor credits (a way of paying). What budgets compare.
    pub fn spend(&self) -> Decimal {
        self.lines
            .iter()
            .filter(|l| !matches!(l.kind, LineKind::CommitmentTrueUp | LineKind::Credit))
            .map(|l| l.amount)
            .sum()
    }
}

/// Half-even to `digits` places, written with exactly that many (`2.00`, not `2`).
pub fn round(amount: Decimal, digits: u32) -> Decimal {
    let mut rounded = amount.round_dp_with_strategy(digits, RoundingStrategy::MidpointNearestEven);
    rounded.rescale(digits);
    rounded
}

/// The unit a line of `metric` counts, for a SKU whose unit is `sku_unit`: unit-hours of
/// the SKU for ALLOCATED and SLA_CREDIT, physical quantities for the sampled metrics.
fn unit_of(metric: Metric, sku_unit: &str) -> String {
    match metric {
        Metric::Allocated | Metric::SlaCredit => format!("{sku_unit}-hour"),
        Metric::Metered => sku_unit.to_owned(),
        Metric::Active => "SM-active GPU-hour".to_owned(),
        Metric::Memory => "GiB-hour".to_owned(),
        Metric::Energy => "kWh".to_owned(),
    }
}

fn metric_text(metric: Metric, sku_unit: &str) -> String {
    match metric {
        Metric::Allocated => format!("{sku_unit}-hours allocated"),
        Metric::Active => "SM-active GPU-hours".to_owned(),
        Metric::Memory => "GiB-hours of GPU memory".to_owned(),
        Metric::Energy => "energy, kWh".to_owned(),
        Metric::SlaCredit => format!("SLA credit, {sku_unit}-hours on failed hardware"),
        Metric::Metered => format!("metered ({sku_unit})"),
    }
}

/// Per (SKU, metric, spot?) raw quantities of a segment: seconds, or kWh for energy.
#[derive(Default)]
struct Raw {
    amount: Decimal,
    allocations: usize,
    top_up_seconds: Decimal,
    /// The allocations that used something of it, and the span they were held.
    used_by: Vec<Uuid>,
    held: Option<(DateTime<Utc>, DateTime<Utc>)>,
    /// The meters that counted a metered quantity.
    meters: Vec<String>,
}

impl Raw {
    fn add_user(&mut self, u: &AllocationUsage) {
        self.used_by.push(u.allocation);
        self.held = match (self.held, u.held) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (known, None) | (None, known) => known,
        };
    }

    fn merge(&mut self, other: Raw) {
        self.amount += other.amount;
        self.allocations += other.allocations;
        self.top_up_seconds += other.top_up_seconds;
        self.used_by.extend(other.used_by);
        self.meters.extend(other.meters);
        self.held = match (self.held, other.held) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (known, None) | (None, known) => known,
        };
    }

    /// What the trace says the charge is for: the allocation, when it is one, and the
    /// span the allocations were held.
    fn trace_into(&self, trace: &mut serde_json::Value) {
        if let [one] = self.used_by.as_slice() {
            trace["allocation"] = json!(one);
        }
        if let Some(held) = self.held {
            trace["held"] = json!([held.0, held.1]);
        }
        if !self.meters.is_empty() {
            trace["meters"] = json!(self.meters);
        }
    }
}

/// What one allocation counts towards each sampled metric of a segment: `(metric, raw
/// quantity, of which the top-up to the plan's minimum billable duration)`, in seconds
/// (unit-seconds, GiB-seconds), or kWh for energy.
pub fn allocation_quantities(
    segment: &Segment,
    u: &AllocationUsage,
) -> [(Metric, Decimal, Decimal); 5] {
    let minimum = Decimal::from(segment.plan.minimum_billable_seconds.max(0));
    let top_up = u.lifetime_seconds_if_ended.map_or(Decimal::ZERO, |life| {
        (minimum - Decimal::from(life)).max(Decimal::ZERO) * u.units
    });
    [
        (Metric::Allocated, u.allocated_seconds + top_up, top_up),
        (Metric::Active, u.active_seconds, Decimal::ZERO),
        (Metric::Memory, u.memory_gib_seconds, Decimal::ZERO),
        (Metric::Energy, u.energy_kwh, Decimal::ZERO),
        (Metric::SlaCredit, u.sla_credit_seconds, Decimal::ZERO),
    ]
}

fn raw_quantities(segment: &Segment) -> BTreeMap<(Uuid, Metric, bool), Raw> {
    let mut raw: BTreeMap<(Uuid, Metric, bool), Raw> = BTreeMap::new();
    for u in &segment.usage {
        for (metric, total, extra) in allocation_quantities(segment, u) {
            let entry = raw.entry((u.sku, metric, u.spot)).or_default();
            entry.amount += total;
            entry.top_up_seconds += extra;
            entry.allocations += 1;
            if !total.is_zero() {
                entry.add_user(u);
            }
        }
    }
    for m in &segment.metered {
        let entry = raw.entry((m.sku, Metric::Metered, false)).or_default();
        entry.amount += m.quantity;
        entry.meters.extend(m.meters.iter().cloned());
    }
    raw
}

fn to_unit(metric: Metric, raw: Decimal) -> Decimal {
    match metric {
        Metric::Energy | Metric::Metered => raw,
        _ => seconds_to_hours(raw),
    }
}

struct LineBuilder<'a> {
    input: &'a PeriodInput,
    lines: Vec<Line>,
}

impl LineBuilder<'_> {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        kind: LineKind,
        description: String,
        sku: Option<Uuid>,
        metric: Option<Metric>,
        tier: Option<usize>,
        quantity: Decimal,
        unit: &str,
        unit_price: Decimal,
        trace: serde_json::Value,
    ) -> Result<(), RateError> {
        let amount_exact = quantity
            .checked_mul(unit_price)
            .ok_or(RateError::Overflow)?;
        self.lines.push(Line {
            kind,
            description,
            sku,
            sku_name: sku.and_then(|s| self.input.skus.get(&s).map(|i| i.name.clone())),
            metric,
            tier,
            quantity: quantity.normalize(),
            unit: unit.to_owned(),
            unit_price,
            amount_exact: amount_exact.normalize(),
            amount: round(amount_exact, self.input.minor_digits),
            adjusts_invoice: None,
            trace,
            tax: None,
        });
        Ok(())
    }

    fn segment(&mut self, segment: &Segment, label_segments: bool) -> Result<(), RateError> {
        let plan = &segment.plan;
        let suffix = if label_segments {
            format!(
                " ({}, {} to {})",
                plan.label,
                segment.from.format("%Y-%m-%d %H:%M"),
                segment.to.format("%Y-%m-%d %H:%M")
            )
        } else {
            String::new()
        };
        let mut quantities = raw_quantities(segment);
        merge_unpriced_spot(plan, &mut quantities);
        for (key, raw) in quantities {
            if !raw.amount.is_zero() {
                self.quantity_lines(segment, &suffix, key, raw)?;
            }
        }
        Ok(())
    }

    /// The lines one (SKU, metric, spot?) quantity of a segment is billed as: its usage
    /// (per tier, or in packages) and any tier's flat fee.
    fn quantity_lines(
        &mut self,
        segment: &Segment,
        suffix: &str,
        (sku, metric, spot): (Uuid, Metric, bool),
        raw: Raw,
    ) -> Result<(), RateError> {
        let info = self.input.skus.get(&sku);
        let rate = segment
            .plan
            .rates
            .iter()
            .find(|r| r.sku == sku && r.metric == metric);
        let list_price = info.map(|i| i.list_price_per_hour);
        let Some((model, priced_as)) = price_model(rate, metric, spot, list_price) else {
            return Ok(());
        };
        let quantity = to_unit(metric, raw.amount);
        let billed = Billed::new(sku, info, (metric, spot), priced_as, suffix);
        let charge = model.rate(quantity)?;
        let rated = Rated {
            priced_as,
            model: &model,
            quantity,
            unit: &billed.unit,
        };
        let base_trace = quantity_trace(segment, (metric, spot), &raw, &rated);
        for part in &charge.parts {
            let mut trace = base_trace.clone();
            trace["tier"] = json!(part.tier + 1);
            if let PriceModel::Package { size, price } = &model {
                self.package_line(&billed, quantity, (*size, *price), trace)?;
            } else {
                self.tier_lines(&billed, &model, part, trace)?;
            }
        }
        Ok(())
    }

    /// A packaged quantity: the whole packages it takes, at the package price.
    fn package_line(
        &mut self,
        billed: &Billed<'_>,
        quantity: Decimal,
        (size, price): (Decimal, Decimal),
        mut trace: serde_json::Value,
    ) -> Result<(), RateError> {
        let packages = (quantity / size).ceil();
        trace["packages"] = json!(packages.to_string());
        trace["package_size"] = json!(size.normalize().to_string());
        self.push(
            billed.kind,
            format!(
                "{} · packages of {}{}",
                billed.what,
                size.normalize(),
                billed.suffix
            ),
            Some(billed.sku),
            Some(billed.metric),
            Some(0),
            packages,
            &format!("package of {} {}", size.normalize(), billed.unit),
            price * billed.sign,
            trace,
        )
    }

    /// One part of a charge: its usage line (naming its tier, when the rate is tiered)
    /// and its tier's flat fee, if any.
    fn tier_lines(
        &mut self,
        billed: &Billed<'_>,
        model: &PriceModel,
        part: &ChargePart,
        trace: serde_json::Value,
    ) -> Result<(), RateError> {
        let tiered = matches!(
            model,
            PriceModel::Graduated { .. } | PriceModel::Volume { .. }
        );
        let tier_text = if tiered {
            format!(" · tier {}", part.tier + 1)
        } else {
            String::new()
        };
        self.push(
            billed.kind,
            format!("{}{tier_text}{}", billed.what, billed.suffix),
            Some(billed.sku),
            Some(billed.metric),
            tiered.then_some(part.tier),
            part.quantity,
            &billed.unit,
            part.unit_price * billed.sign,
            trace.clone(),
        )?;
        if part.flat_fee.is_zero() {
            return Ok(());
        }
        self.push(
            LineKind::FlatFee,
            format!(
                "{} · {} · tier {} flat fee{}",
                billed.name,
                metric_text(billed.metric, billed.sku_unit),
                part.tier + 1,
                billed.suffix
            ),
            Some(billed.sku),
            Some(billed.metric),
            Some(part.tier),
            Decimal::ONE,
            "fee",
            part.flat_fee * billed.sign,
            trace,
        )
    }
}

/// What the lines of one (SKU, metric, spot?) quantity say they bill, and with which sign.
struct Billed<'a> {
    sku: Uuid,
    metric: Metric,
    name: String,
    sku_unit: &'a str,
    /// The unit the quantity counts in.
    unit: String,
    /// The SKU, metric and how it was priced, e.g. `H100 · GPU-hours allocated · spot`.
    what: String,
    /// The segment's plan and span, when the period has several.
    suffix: &'a str,
    kind: LineKind,
    sign: Decimal,
}

impl<'a> Billed<'a> {
    fn new(
        sku: Uuid,
        info: Option<&'a SkuInfo>,
        (metric, spot): (Metric, bool),
        priced_as: &str,
        suffix: &'a str,
    ) -> Self {
        let name = info.map_or_else(|| sku.to_string(), |i| i.name.clone());
        let sku_unit = info.map_or(DEFAULT_UNIT, |i| i.unit.as_str());
        let mut what = format!("{name} · {}", metric_text(metric, sku_unit));
        if spot && priced_as == "spot" {
            what.push_str(" · spot");
        }
        if priced_as == "list price" {
            what.push_str(" · list price");
        }
        // SLA credit is held time given back: the same pricing, negative.
        let (kind, sign) = if metric == Metric::SlaCredit {
            (LineKind::SlaCredit, Decimal::NEGATIVE_ONE)
        } else {
            (LineKind::Usage, Decimal::ONE)
        };
        Billed {
            sku,
            metric,
            name,
            sku_unit,
            unit: unit_of(metric, sku_unit),
            what,
            suffix,
            kind,
            sign,
        }
    }
}

/// How a quantity was priced, for its trace.
struct Rated<'a> {
    priced_as: &'a str,
    model: &'a PriceModel,
    /// In `unit`s: hours, GiB-hours or kWh.
    quantity: Decimal,
    unit: &'a str,
}

/// What every line of a quantity records of how it was rated.
fn quantity_trace(
    segment: &Segment,
    (metric, spot): (Metric, bool),
    raw: &Raw,
    rated: &Rated<'_>,
) -> serde_json::Value {
    let plan = &segment.plan;
    let mut trace = json!({
        "plan": plan.label,
        "plan_version": plan.version_id,
        "segment": [segment.from, segment.to],
        "metric": metric,
        "priced_as": rated.priced_as,
        "spot": spot,
        "raw": raw.amount.normalize().to_string(),
        "raw_unit": match metric {
            Metric::Allocated | Metric::SlaCredit => "unit-seconds",
            Metric::Active => "SM-active GPU-seconds",
            Metric::Memory => "GiB-seconds",
            Metric::Energy => "kWh",
            Metric::Metered => rated.unit,
        },
        "allocations": raw.allocations,
        "minimum_top_up_seconds": raw.top_up_seconds.normalize().to_string(),
        "model": rated.model,
        "period_quantity": rated.quantity.normalize().to_string(),
        "unit": rated.unit,
    });
    raw.trace_into(&mut trace);
    trace
}

/// Spot usage of a rate without a spot price is priced, and counts towards tiers, with
/// the on-demand usage.
fn merge_unpriced_spot(plan: &PlanTerms, quantities: &mut BTreeMap<(Uuid, Metric, bool), Raw>) {
    let merged: Vec<(Uuid, Metric, bool)> = quantities
        .keys()
        .filter(|(sku, metric, spot)| {
            *spot
                && !plan
                    .rates
                    .iter()
                    .any(|r| r.sku == *sku && r.metric == *metric && r.spot_unit_price.is_some())
        })
        .copied()
        .collect();
    for key in merged {
        if let Some(spot) = quantities.remove(&key) {
            quantities
                .entry((key.0, key.1, false))
                .or_default()
                .merge(spot);
        }
    }
}

/// How a quantity is priced and what the line says it was priced as: the plan's rate
/// (its spot price for spot usage where it has one), else the SKU's list price for held
/// time or a metered quantity; `None`: not billed.
fn price_model(
    rate: Option<&Rate>,
    metric: Metric,
    spot: bool,
    list_price: Option<Decimal>,
) -> Option<(PriceModel, &'static str)> {
    match (rate, metric, list_price) {
        (Some(rate), _, _) => Some(match (spot, rate.spot_unit_price) {
            (true, Some(price)) => (PriceModel::PerUnit { unit_price: price }, "spot"),
            _ => (rate.model.clone(), "plan"),
        }),
        (None, Metric::Allocated | Metric::Metered, Some(price)) => {
            Some((PriceModel::PerUnit { unit_price: price }, "list price"))
        }
        _ => None,
    }
}

/// What identifies a line of a closed period when it is compared with its re-rating: a
/// tier's usage or flat fee of one SKU and metric at one unit price.
type LateKey = (Option<Uuid>, Option<Metric>, Option<usize>, String, Decimal);

/// Adjustments for one closed period: for each line whose quantity changed since it was
/// billed (on its invoice and by earlier adjustments), the difference and the line.
fn adjustments(late: &LateUsage) -> BTreeMap<LateKey, (Decimal, Line)> {
    let mut diff: BTreeMap<LateKey, (Decimal, Line)> = BTreeMap::new();
    let adjustable = |l: &&Line| {
        matches!(
            l.kind,
            LineKind::Usage | LineKind::FlatFee | LineKind::SlaCredit | LineKind::Adjustment
        )
    };
    let key = |l: &Line| (l.sku, l.metric, l.tier, l.unit.clone(), l.unit_price);
    for (sign, lines) in [
        (Decimal::ONE, &late.rerated),
        (Decimal::NEGATIVE_ONE, &late.billed),
    ] {
        for line in lines.iter().filter(adjustable) {
            diff.entry(key(line))
                .or_insert_with(|| (Decimal::ZERO, line.clone()))
                .0 += sign * line.quantity;
        }
    }
    diff
}

/// Rates a billing period: the invoice's lines, subtotal, credits and total.
pub fn rate_period(input: &PeriodInput) -> Result<RatedInvoice, RateError> {
    let mut builder = LineBuilder {
        input,
        lines: Vec::new(),
    };
    let several = input.segments.len() > 1;
    for segment in &input.segments {
        builder.segment(segment, several)?;
    }
    // Commitment: of the plan in force at the period's end.
    if let Some(commitment) = input
        .segments
        .last()
        .and_then(|s| s.plan.commitment.as_ref())
    {
        builder.commitment(commitment)?;
    }
    for late in &input.late {
        builder.late_adjustments(late)?;
    }
    let subtotal = builder.rounded_sum();
    let taxes = builder.taxes();
    let tax: Decimal = taxes.iter().map(|t| t.tax).sum();
    let (credits, credit_uses) = builder.credits(subtotal + tax)?;
    let total = builder.rounded_sum() + tax;
    Ok(RatedInvoice {
        lines: builder.lines,
        subtotal,
        taxes,
        tax: round(tax, input.minor_digits),
        credits,
        total: round(total, input.minor_digits),
        credit_uses,
    })
}

impl LineBuilder<'_> {
    /// The sum of the lines so far, at the currency's minor unit.
    fn rounded_sum(&self) -> Decimal {
        round(
            self.lines.iter().map(|l| l.amount).sum(),
            self.input.minor_digits,
        )
    }

    /// The commitment's discount on the usage so far, and its true-up when the discounted
    /// usage falls short of the prorated minimum.
    fn commitment(&mut self, commitment: &Commitment) -> Result<(), RateError> {
        let input = self.input;
        let usage: Decimal = self.lines.iter().map(|l| l.amount).sum();
        let pct = commitment.discount_pct / Decimal::ONE_HUNDRED;
        let mut discounted = usage;
        if !pct.is_zero() && !usage.is_zero() {
            self.push(
                LineKind::CommitmentDiscount,
                format!(
                    "Commitment discount {}% on usage",
                    commitment.discount_pct.normalize()
                ),
                None,
                None,
                None,
                usage,
                &input.currency,
                -pct,
                json!({"usage": usage.to_string(), "discount_pct": commitment.discount_pct}),
            )?;
            discounted += self.lines.last().map_or(Decimal::ZERO, |l| l.amount);
        }
        let minimum = round(
            commitment.monthly_minimum * input.month_fraction,
            input.minor_digits,
        );
        if discounted < minimum {
            self.push(
                LineKind::CommitmentTrueUp,
                format!(
                    "Commitment true-up to the minimum of {} {} ({}% of a month)",
                    minimum,
                    input.currency,
                    round(input.month_fraction * Decimal::ONE_HUNDRED, 2)
                ),
                None,
                None,
                None,
                Decimal::ONE,
                "commitment",
                minimum - discounted,
                json!({
                    "monthly_minimum": commitment.monthly_minimum,
                    "month_fraction": input.month_fraction.to_string(),
                    "prorated_minimum": minimum,
                    "discounted_usage": discounted,
                }),
            )?;
        }
        Ok(())
    }

    /// One adjustment line for each line of a closed period whose quantity changed.
    fn late_adjustments(&mut self, late: &LateUsage) -> Result<(), RateError> {
        for (quantity, line) in adjustments(late).into_values() {
            if quantity.is_zero() {
                continue;
            }
            let original = match line.description.strip_prefix("Late usage for ") {
                Some(rest) => rest.split_once(": ").map_or(rest, |(_, d)| d),
                None => &line.description,
            };
            let description = format!("Late usage for {}: {original}", late.number);
            self.push(
                LineKind::Adjustment,
                description,
                line.sku,
                line.metric,
                line.tier,
                quantity,
                &line.unit,
                line.unit_price,
                json!({"adjusts": late.invoice, "number": late.number, "original": line.trace}),
            )?;
            if let Some(last) = self.lines.last_mut() {
                last.adjusts_invoice = Some(late.invoice);
            }
        }
        Ok(())
    }

    /// Taxes each line by its treatment (an adjustment by its invoice's, the rest by the
    /// period's) and sums the tax per rate. Credits are not taxed: they pay.
    fn taxes(&mut self) -> Vec<TaxSummary> {
        let input = self.input;
        let treatment_of = |line: &Line| match line.adjusts_invoice {
            Some(closed) => input
                .late
                .iter()
                .find(|l| l.invoice == closed)
                .and_then(|l| l.tax.as_ref()),
            None => input.tax.as_ref(),
        };
        let mut taxed = Vec::new();
        for line in &mut self.lines {
            if let Some(treatment) = treatment_of(line) {
                line.tax = Some(LineTax {
                    category: treatment.category,
                    percent: treatment.percent,
                    amount: crate::tax::tax_on(line.amount, treatment.percent, input.minor_digits),
                });
                taxed.push((line.amount, treatment));
            }
        }
        crate::tax::summarise(taxed, input.minor_digits)
    }

    /// Applies the grants to what is owed (`owed`: the subtotal with its tax), oldest
    /// expiry first: what they took off together, and what each gave. A grant's cap (the
    /// charges accrued within its coverage, before tax) takes the period's tax on.
    fn credits(&mut self, due: Decimal) -> Result<(Decimal, Vec<(Uuid, Decimal)>), RateError> {
        let input = self.input;
        let digits = input.minor_digits;
        let with_tax = |net: Decimal| match &input.tax {
            Some(t) => net + crate::tax::tax_on(net, t.percent, digits),
            None => net,
        };
        let mut credit_uses = Vec::new();
        let mut grants: Vec<&GrantBalance> = input.grants.iter().collect();
        grants.sort_by_key(|g| (g.expires_at.is_none(), g.expires_at, g.grant));
        let mut applied = round(Decimal::ZERO, digits);
        for grant in grants {
            let owed = due - applied;
            let cap = grant
                .accrued_cap
                .map_or(owed, |cap| (with_tax(cap) - applied).min(owed));
            let take = round(grant.available.min(cap), digits).max(Decimal::ZERO);
            if take.is_zero() {
                continue;
            }
            applied += take;
            credit_uses.push((grant.grant, take));
            self.push(
                LineKind::Credit,
                grant.description.clone(),
                None,
                None,
                None,
                Decimal::ONE,
                "credit",
                -take,
                json!({"grant": grant.grant, "available": grant.available, "accrued_cap": grant.accrued_cap}),
            )?;
        }
        Ok((applied, credit_uses))
    }
}

#[cfg(test)]
pub(crate) mod tests;
