//! Usage queries: what a tenant used between two instants, grouped by SKU, allocation,
//! label and/or day. Sampled metrics (active seconds, memory, energy) come from the minute
//! buckets (a bucket belongs to the range if its minute starts in it); allocated and
//! SLA-credit seconds come from allocation lifetimes in the database, per whole second,
//! with the time a GPU spent failed moved from allocated to SLA credit.
//!
//! Units (docs/invoicing.md, "Units"): allocated and SLA-credit seconds are *unit-seconds
//! of the SKU* — one whole GPU, one MIG slice, one fraction or one node held for a second
//! is one — what the catalog's list price is per hour of. A node's failed time counts the
//! share of its GPUs that failed. Active seconds (SM-active GPU-seconds), memory
//! (GiB-seconds) and energy (kWh) stay physical quantities.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use neocloud_schema::entity::{allocation, allocation_gpu, sku, usage_minute};
use rust_decimal::Decimal;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect};
use uuid::Uuid;

use crate::health;
use crate::ingest::fold::label_key;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupBy {
    Sku,
    Allocation,
    Label,
    Day,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageRow {
    /// One part per `groupBy` entry, in order.
    pub key: Vec<String>,
    /// Unit-seconds of the SKU held, without failed time.
    pub allocated_seconds: Decimal,
    pub active_seconds: Decimal,
    pub memory_gib_seconds: Decimal,
    pub energy_kwh: Decimal,
    /// Unit-seconds held on failed hardware.
    pub sla_credit_seconds: Decimal,
}

/// (SKU, allocation, label, minute, active seconds, memory GiB-seconds, energy kWh) of a
/// minute bucket, as stored.
type BucketRow = (
    Option<Uuid>,
    Uuid,
    String,
    DateTime<Utc>,
    String,
    String,
    String,
);

/// Most days one query may span (a year and a bit).
pub const MAX_RANGE_DAYS: i64 = 400;

struct Parts<'a> {
    sku: &'a str,
    allocation: Uuid,
    label: &'a str,
    day: NaiveDate,
}

fn key_of(group_by: &[GroupBy], parts: &Parts<'_>) -> Vec<String> {
    group_by
        .iter()
        .map(|g| match g {
            GroupBy::Sku => parts.sku.to_owned(),
            GroupBy::Allocation => parts.allocation.to_string(),
            GroupBy::Label => parts.label.to_owned(),
            GroupBy::Day => parts.day.to_string(),
        })
        .collect()
}

/// Seconds of `[a, b)` per UTC day.
fn seconds_per_day(a: DateTime<Utc>, b: DateTime<Utc>) -> Vec<(NaiveDate, i64)> {
    let mut out = Vec::new();
    let mut t = a;
    while t < b {
        let day = t.date_naive();
        let next = day
            .succ_opt()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map_or(b, |n| n.and_utc());
        let stop = b.min(next);
        out.push((day, (stop - t).num_seconds()));
        t = stop;
    }
    out
}

/// How many units of its SKU an allocation holds: one per GPU for whole GPUs (a MIG
/// slice and a fraction hold one GPU row each, and are one unit), one for a whole node
/// whatever its GPUs.
pub fn units_held(a: &allocation::Model, gpus_held: usize) -> Decimal {
    if a.whole_node {
        Decimal::ONE
    } else {
        Decimal::from(gpus_held)
    }
}

fn overlap(
    a: (DateTime<Utc>, DateTime<Utc>),
    b: (DateTime<Utc>, DateTime<Utc>),
) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
    let lo = a.0.max(b.0);
    let hi = a.1.min(b.1);
    (lo < hi).then_some((lo, hi))
}

/// Usage of `tenant` in `[from, to)`.
pub async fn usage<C: ConnectionTrait>(
    conn: &C,
    tenant: Uuid,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    group_by: &[GroupBy],
    now: DateTime<Utc>,
) -> Result<Vec<UsageRow>, DbErr> {
    let mut rows: BTreeMap<Vec<String>, UsageRow> = BTreeMap::new();
    let skus: HashMap<Uuid, String> = sku::Entity::find()
        .all(conn)
        .await?
        .into_iter()
        .map(|s| (s.id, s.name))
        .collect();
    let sku_name = |id: Option<Uuid>| id.and_then(|i| skus.get(&i).cloned()).unwrap_or_default();

    // Only the columns the sums need, as tuples: a month of a busy tenant is many rows.
    let buckets: Vec<BucketRow> = usage_minute::Entity::find()
        .select_only()
        .columns([
            usage_minute::Column::SkuId,
            usage_minute::Column::AllocationId,
            usage_minute::Column::Label,
            usage_minute::Column::MinuteStart,
            usage_minute::Column::ActiveSeconds,
            usage_minute::Column::MemoryGibSeconds,
            usage_minute::Column::EnergyKwh,
        ])
        .filter(usage_minute::Column::TenantId.eq(tenant))
        .filter(usage_minute::Column::MinuteStart.gte(from))
        .filter(usage_minute::Column::MinuteStart.lt(to))
        .into_tuple()
        .all(conn)
        .await?;
    for (sku_id, allocation_id, label, minute_start, active, memory, energy) in buckets {
        let name = sku_name(sku_id);
        let key = key_of(
            group_by,
            &Parts {
                sku: &name,
                allocation: allocation_id,
                label: &label,
                day: minute_start.date_naive(),
            },
        );
        let row = rows.entry(key.clone()).or_insert_with(|| UsageRow {
            key,
            ..UsageRow::default()
        });
        row.active_seconds += active.parse::<Decimal>().unwrap_or_default();
        row.memory_gib_seconds += memory.parse::<Decimal>().unwrap_or_default();
        row.energy_kwh += energy.parse::<Decimal>().unwrap_or_default();
    }

    let end_of = |a: &allocation::Model| a.ended_at.unwrap_or(now).min(to);
    let allocations: Vec<allocation::Model> = allocation::Entity::find()
        .filter(allocation::Column::TenantId.eq(tenant))
        .filter(allocation::Column::StartedAt.lt(to))
        .all(conn)
        .await?
        .into_iter()
        .filter(|a| a.ended_at.is_none_or(|e| e > from))
        .collect();
    let holdings = allocation_gpu::Entity::find()
        .filter(allocation_gpu::Column::AllocationId.is_in(allocations.iter().map(|a| a.id)))
        .all(conn)
        .await?;
    let gpu_ids: Vec<Uuid> = holdings.iter().map(|h| h.gpu_id).collect();
    let failed = health::failed_intervals(conn, &gpu_ids, from, to).await?;
    for a in &allocations {
        let Some((lo, hi)) = overlap((a.started_at, end_of(a)), (from, to)) else {
            continue;
        };
        let held: Vec<Uuid> = holdings
            .iter()
            .filter(|h| h.allocation_id == a.id)
            .map(|h| h.gpu_id)
            .collect();
        if held.is_empty() {
            continue;
        }
        let units = units_held(a, held.len());
        let gpus = Decimal::from(held.len());
        let failed_spans: Vec<(DateTime<Utc>, DateTime<Utc>)> = failed
            .iter()
            .filter(|f| held.contains(&f.gpu_id))
            .filter_map(|f| overlap((f.started_at, f.ended_at.unwrap_or(now)), (lo, hi)))
            .collect();
        let label = label_key(
            &serde_json::from_value::<BTreeMap<String, String>>(a.labels.clone())
                .unwrap_or_default(),
        );
        let name = sku_name(Some(a.sku_id));
        for (day, secs) in seconds_per_day(lo, hi) {
            let day_start = day.and_hms_opt(0, 0, 0).map_or(lo, |d| d.and_utc());
            let day_span = (day_start.max(lo), (day_start + TimeDelta::days(1)).min(hi));
            // GPU-seconds held and failed this day, summed over the allocation's GPUs, then
            // turned into unit-seconds once (exact unless a node's GPU count does not
            // divide them; then 28 significant digits).
            let failed_gpu_secs: i64 = failed_spans
                .iter()
                .filter_map(|f| overlap(*f, day_span))
                .map(|(x, y)| (y - x).num_seconds())
                .sum();
            let held_gpu_secs = Decimal::from(secs) * gpus;
            let failed_gpu_secs = Decimal::from(failed_gpu_secs);
            let key = key_of(
                group_by,
                &Parts {
                    sku: &name,
                    allocation: a.id,
                    label: &label,
                    day,
                },
            );
            let row = rows.entry(key.clone()).or_insert_with(|| UsageRow {
                key,
                ..UsageRow::default()
            });
            row.allocated_seconds += (held_gpu_secs - failed_gpu_secs) * units / gpus;
            row.sla_credit_seconds += failed_gpu_secs * units / gpus;
        }
    }
    Ok(rows.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().expect("time")
    }

    #[test]
    fn a_span_across_midnight_splits_by_day() {
        let days = seconds_per_day(t("2026-11-29T23:59:50Z"), t("2026-11-30T00:00:20Z"));
        assert_eq!(days.len(), 2);
        assert_eq!(days[0].1, 10);
        assert_eq!(days[1].1, 20);
    }
}
