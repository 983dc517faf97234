//! What a unit of usage cost in a rated period (pure; docs/metering.md, "Cost"). Per
//! segment, SKU, metric and spot flag: the amount of the usage, flat-fee and SLA-credit
//! lines that priced it, over the quantity used (without the minimum billable duration's
//! top-ups). Tiers, packages, flat fees and top-ups are so averaged over the usage they
//! priced, and a period's usage priced at these costs adds up to those lines. Spot usage
//! that a rate without a spot price billed with on-demand usage shares its cost.
//! Commitment discounts, true-ups, late-usage adjustments, credits and tax are not
//! usage's cost: they stay on the invoice.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use neocloud_schema::vocabulary::{LineKind, Metric};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::period::{Line, PeriodInput, allocation_quantities};

/// (segment index, SKU, metric, spot) → the amount of the lines that charged for it.
pub type ChargedBySegment = BTreeMap<(usize, Uuid, Metric, bool), Decimal>;

/// The amounts of `lines` that charged (or credited) for allocations' own use, per
/// segment of `input`, SKU, metric and spot flag (as each line's trace records them).
pub fn charged_by_segment(input: &PeriodInput, lines: &[Line]) -> ChargedBySegment {
    let spans: Vec<serde_json::Value> = input
        .segments
        .iter()
        .map(|s| serde_json::json!([s.from, s.to]))
        .collect();
    let kinds = [LineKind::Usage, LineKind::FlatFee, LineKind::SlaCredit];
    let mut groups = ChargedBySegment::new();
    for line in lines {
        let (Some(sku), Some(metric)) = (line.sku, line.metric) else {
            continue;
        };
        if !kinds.contains(&line.kind) || metric == Metric::Metered {
            continue;
        }
        let segment = line.trace.get("segment");
        let Some(index) = spans.iter().position(|s| Some(s) == segment) else {
            continue;
        };
        let spot = line.trace.get("spot").and_then(serde_json::Value::as_bool) == Some(true);
        *groups.entry((index, sku, metric, spot)).or_default() += line.amount;
    }
    groups
}

/// Whether spot usage of `(segment, sku, metric)` was billed on the on-demand lines (its
/// rate has no spot price): true when no line charged for it as spot.
pub fn spot_billed_as_on_demand(
    groups: &ChargedBySegment,
    (segment, sku, metric): (usize, Uuid, Metric),
) -> bool {
    !groups.contains_key(&(segment, sku, metric, true))
}

/// Per (SKU, metric, spot): the amount charged and the quantity it priced (unit-seconds
/// for ALLOCATED and SLA_CREDIT, SM-active seconds, GiB-seconds, kWh).
type PerUnit = BTreeMap<(Uuid, Metric, bool), (Decimal, Decimal)>;

#[derive(Debug, Clone, PartialEq, Eq)]
struct SegmentCost {
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    per_unit: PerUnit,
}

/// Unit costs of the rated periods a usage read spans, by time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnitCosts {
    segments: Vec<SegmentCost>,
}

impl UnitCosts {
    /// Adds a rated period: its input and the lines rating it gave.
    pub fn add_period(&mut self, input: &PeriodInput, lines: &[Line]) {
        let groups = charged_by_segment(input, lines);
        for (index, segment) in input.segments.iter().enumerate() {
            let mut used: BTreeMap<(Uuid, Metric, bool), Decimal> = BTreeMap::new();
            for u in &segment.usage {
                for (metric, total, top_up) in allocation_quantities(segment, u) {
                    *used.entry((u.sku, metric, u.spot)).or_default() += total - top_up;
                }
            }
            let mut per_unit = PerUnit::new();
            for (&(i, sku, metric, spot), &amount) in &groups {
                if i != index {
                    continue;
                }
                let shared = !spot && spot_billed_as_on_demand(&groups, (index, sku, metric));
                let spot_used = used.get(&(sku, metric, true)).copied().unwrap_or_default();
                let quantity = used.get(&(sku, metric, spot)).copied().unwrap_or_default()
                    + if shared { spot_used } else { Decimal::ZERO };
                if quantity <= Decimal::ZERO {
                    continue;
                }
                per_unit.insert((sku, metric, spot), (amount, quantity));
                if shared {
                    per_unit.insert((sku, metric, true), (amount, quantity));
                }
            }
            self.segments.push(SegmentCost {
                from: segment.from,
                to: segment.to,
                per_unit,
            });
        }
        self.segments.sort_by_key(|s| s.from);
    }

    /// What `quantity` of `metric` of `sku` used at `at` cost; zero where no rated period
    /// priced it.
    pub fn cost(
        &self,
        at: DateTime<Utc>,
        (sku, spot): (Uuid, bool),
        metric: Metric,
        quantity: Decimal,
    ) -> Decimal {
        if quantity.is_zero() {
            return Decimal::ZERO;
        }
        self.segments
            .iter()
            .find(|s| s.from <= at && at < s.to)
            .and_then(|s| s.per_unit.get(&(sku, metric, spot)))
            .map_or(Decimal::ZERO, |&(amount, priced)| {
                // Multiplied first, so a cost that is a terminating decimal is exact.
                amount
                    .checked_mul(quantity)
                    .map_or_else(|| amount * (quantity / priced), |product| product / priced)
            })
    }

    /// `[lo, hi)` cut where a segment begins or ends, in time order: each part is priced
    /// by one segment at most.
    pub fn cut(&self, lo: DateTime<Utc>, hi: DateTime<Utc>) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        let mut cuts: Vec<DateTime<Utc>> = self
            .segments
            .iter()
            .flat_map(|s| [s.from, s.to])
            .filter(|t| lo < *t && *t < hi)
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut parts = Vec::with_capacity(cuts.len() + 1);
        let mut start = lo;
        for t in cuts.into_iter().chain([hi]) {
            parts.push((start, t));
            start = t;
        }
        parts
    }
}

#[cfg(test)]
mod tests;
