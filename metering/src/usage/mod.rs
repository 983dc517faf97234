//! Usage queries: what a tenant used between two instants, grouped by SKU, allocation,
//! label and/or day. Sampled metrics (active seconds, memory, energy) come from the minute
//! buckets (a bucket belongs to the range if its minute starts in it), whole hours of them
//! from their hourly roll-ups ([`hours`]); allocated and
//! SLA-credit seconds come from allocation lifetimes in the database, per whole second,
//! with the time a GPU spent failed moved from allocated to SLA credit.
//!
//! Units (docs/invoicing.md, "Units"): allocated and SLA-credit seconds are *unit-seconds
//! of the SKU* — one whole GPU, one MIG slice, one fraction or one node held for a second
//! is one — what the catalog's list price is per hour of. A node's failed time counts the
//! share of its GPUs that failed. Active seconds (SM-active GPU-seconds), memory
//! (GiB-seconds) and energy (kWh) stay physical quantities: an allocation's active
//! seconds are at most its allocated plus SLA-credit seconds times the GPUs one unit
//! spans (a node's GPU count, else one; ingest scales a shared GPU's processes down to
//! 100% together).
//!
//! Grouping (docs/metering.md, "Usage"): every quantity of an allocation goes under the
//! same key — its SKU, its id, its order's labels (`LABEL`; the labels agents report per
//! process stay in the buckets, not in this key) and the UTC day — so the rows of any
//! `groupBy` add up to the ungrouped totals.

pub mod hours;

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use neocloud_schema::entity::{
    Exact, allocation, allocation_gpu, gpu_health_interval, sku, usage_hour, usage_minute,
};
use neocloud_schema::ids::TenantId;
use neocloud_schema::vocabulary::{AllocationClass, Metric};
use rust_decimal::Decimal;
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect,
};
use uuid::Uuid;

use crate::health;
use crate::ingest::fold::label_key;
use crate::rating::unit_cost::UnitCosts;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupBy {
    Sku,
    Allocation,
    Label,
    Day,
    /// The UTC hour (`2026-12-06T14:00:00Z`); a query grouped by hour spans at most
    /// [`MAX_HOURLY_RANGE_DAYS`].
    Hour,
}

/// Most days a query grouped by hour may span (744 hours).
pub const MAX_HOURLY_RANGE_DAYS: i64 = 31;

/// The time buckets a grouping splits quantities into: hours when it groups by hour,
/// otherwise UTC days (what `DAY` shows; without a time part the rows sum them anyway).
fn step_of(group_by: &[GroupBy]) -> TimeDelta {
    if group_by.contains(&GroupBy::Hour) {
        TimeDelta::hours(1)
    } else {
        TimeDelta::days(1)
    }
}

/// The start of the bucket of `step` that `t` falls in (UTC days start at midnight).
fn bucket_of(t: DateTime<Utc>, step: TimeDelta) -> DateTime<Utc> {
    t.duration_trunc(step).unwrap_or(t)
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
    /// What the row's usage cost at the unit costs of the periods it falls in, exact
    /// (zero when read without them).
    pub cost: Decimal,
}

/// (SKU, allocation, start, active seconds, memory GiB-seconds, energy kWh) of a minute
/// bucket or an hour's roll-up, as stored.
type BucketRow = (Option<Uuid>, Uuid, DateTime<Utc>, Exact, Exact, Exact);

/// Most days one query may span (a year and a bit).
pub const MAX_RANGE_DAYS: i64 = 400;

struct Parts<'a> {
    sku: &'a str,
    allocation: Uuid,
    label: &'a str,
    /// The start of the time bucket (an hour or a UTC day).
    at: DateTime<Utc>,
}

fn key_of(group_by: &[GroupBy], parts: &Parts<'_>) -> Vec<String> {
    group_by
        .iter()
        .map(|g| match g {
            GroupBy::Sku => parts.sku.to_owned(),
            GroupBy::Allocation => parts.allocation.to_string(),
            GroupBy::Label => parts.label.to_owned(),
            GroupBy::Day => parts.at.date_naive().to_string(),
            GroupBy::Hour => parts.at.format("%Y-%m-%dT%H:00:00Z").to_string(),
        })
        .collect()
}

/// `[a, b)` cut at the bucket boundaries of `step`: (bucket start, the part in it).
fn spans_per_bucket(
    a: DateTime<Utc>,
    b: DateTime<Utc>,
    step: TimeDelta,
) -> Vec<(DateTime<Utc>, Span)> {
    let mut out = Vec::new();
    let mut t = a;
    while t < b {
        let start = bucket_of(t, step);
        let stop = b.min(start + step);
        out.push((start, (t, stop)));
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

type Span = (DateTime<Utc>, DateTime<Utc>);

fn overlap(a: Span, b: Span) -> Option<Span> {
    let lo = a.0.max(b.0);
    let hi = a.1.min(b.1);
    (lo < hi).then_some((lo, hi))
}

/// What a tenant's allocations overlapping `[from, to)` held, and what failed under them.
struct Holdings {
    allocations: Vec<allocation::Model>,
    gpus: Vec<allocation_gpu::Model>,
    failed: Vec<gpu_health_interval::Model>,
}

async fn holdings<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Holdings, DbErr> {
    let allocations: Vec<allocation::Model> = allocation::Entity::find()
        .filter(allocation::Column::TenantId.eq(tenant))
        .filter(allocation::Column::StartedAt.lt(to))
        .all(conn)
        .await?
        .into_iter()
        .filter(|a| a.ended_at.is_none_or(|e| e > from))
        .collect();
    let gpus = allocation_gpu::Entity::find()
        .filter(allocation_gpu::Column::AllocationId.is_in(allocations.iter().map(|a| a.id)))
        .all(conn)
        .await?;
    let gpu_ids: Vec<Uuid> = gpus.iter().map(|h| Uuid::from(h.gpu_id)).collect();
    let failed = health::failed_intervals(conn, &gpu_ids, from, to).await?;
    Ok(Holdings {
        allocations,
        gpus,
        failed,
    })
}

/// What a usage row needs of an allocation besides its SKU and id.
struct AllocationFacts {
    /// The label key of its order labels (`label_key` of `placeOrder`'s labels): what
    /// `LABEL` groups every quantity by.
    label: String,
    spot: bool,
}

/// The facts of each allocation with usage in the read.
async fn allocation_facts<C: ConnectionTrait>(
    conn: &C,
    held: &[allocation::Model],
    buckets: &[BucketRow],
) -> Result<HashMap<Uuid, AllocationFacts>, DbErr> {
    let key = |a: &allocation::Model| {
        let labels = serde_json::from_value::<BTreeMap<String, String>>(a.labels.clone())
            .unwrap_or_default();
        let facts = AllocationFacts {
            label: label_key(&labels),
            spot: a.class == AllocationClass::Spot,
        };
        (a.id.into(), facts)
    };
    let mut facts: HashMap<Uuid, AllocationFacts> = held.iter().map(key).collect();
    // A bucket of the range's last minute may belong to an allocation that started after
    // `to` within that minute.
    let missing: Vec<Uuid> = buckets
        .iter()
        .map(|b| b.1)
        .filter(|id| !facts.contains_key(id))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !missing.is_empty() {
        let more = allocation::Entity::find()
            .filter(allocation::Column::Id.is_in(missing))
            .all(conn)
            .await?;
        facts.extend(more.iter().map(key));
    }
    Ok(facts)
}

fn row_for(rows: &mut BTreeMap<Vec<String>, UsageRow>, key: Vec<String>) -> &mut UsageRow {
    rows.entry(key.clone()).or_insert_with(|| UsageRow {
        key,
        ..UsageRow::default()
    })
}

/// The union of `spans`, as disjoint spans in time order.
fn merged(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_unstable();
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    for (lo, hi) in spans {
        match out.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// Usage of `tenant` in `[from, to)`. Every quantity of an allocation is grouped by the
/// same parts (its SKU, its id, its order's labels, the UTC day of the second), so the
/// rows of any grouping add up to the ungrouped totals.
pub async fn usage<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    group_by: &[GroupBy],
    now: DateTime<Utc>,
) -> Result<Vec<UsageRow>, DbErr> {
    let costs = UnitCosts::default();
    usage_costed(conn, tenant, (from, to), group_by, now, &costs).await
}

/// `usage`, with each row's cost at `costs` (every quantity priced by the segment its
/// second or minute falls in).
pub async fn usage_costed<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    group_by: &[GroupBy],
    now: DateTime<Utc>,
    costs: &UnitCosts,
) -> Result<Vec<UsageRow>, DbErr> {
    let skus: HashMap<Uuid, String> = sku::Entity::find()
        .all(conn)
        .await?
        .into_iter()
        .map(|s| (s.id.into(), s.name))
        .collect();
    let buckets = sampled(conn, tenant, (from, to), costs).await?;
    let held = holdings(conn, tenant, from, to).await?;
    let facts = allocation_facts(conn, &held.allocations, &buckets).await?;
    let step = step_of(group_by);
    let mut rows = Rows {
        group_by,
        step,
        skus: &skus,
        facts: &facts,
        costs,
        rows: BTreeMap::new(),
    };
    for (sku_id, allocation_id, start, active, memory, energy) in buckets {
        let sampled = [
            (Metric::Active, active.get()),
            (Metric::Memory, memory.get()),
            (Metric::Energy, energy.get()),
        ];
        let cost = rows.cost(sku_id, allocation_id, start, &sampled);
        let row = rows.row(sku_id, allocation_id, bucket_of(start, step));
        row.active_seconds += active.get();
        row.memory_gib_seconds += memory.get();
        row.energy_kwh += energy.get();
        row.cost += cost;
    }
    for a in &held.allocations {
        let Some(span) = overlap(
            (a.started_at, a.ended_at.unwrap_or(now).min(to)),
            (from, to),
        ) else {
            continue;
        };
        rows.add_held_time(a, &held, span, now);
    }
    Ok(rows.rows.into_values().collect())
}

/// The tenant's sampled usage in `[from, to)`: whole hours from their roll-ups, the rest
/// (the range's partial hours, and hours a rated segment of `costs` starts or ends
/// inside) from the minute buckets; only the columns the sums need, as tuples.
async fn sampled<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    costs: &UnitCosts,
) -> Result<Vec<BucketRow>, DbErr> {
    let cuts: Vec<DateTime<Utc>> = costs.cut(from, to).iter().skip(1).map(|p| p.0).collect();
    let plan = hours::plan(from, to, &cuts);
    let mut rows = minute_buckets(conn, tenant, &plan.minutes).await?;
    if let Some((first, last)) = plan.hours {
        let whole: Vec<BucketRow> = usage_hour::Entity::find()
            .select_only()
            .columns([
                usage_hour::Column::SkuId,
                usage_hour::Column::AllocationId,
                usage_hour::Column::HourStart,
                usage_hour::Column::ActiveSeconds,
                usage_hour::Column::MemoryGibSeconds,
                usage_hour::Column::EnergyKwh,
            ])
            .filter(usage_hour::Column::TenantId.eq(tenant))
            .filter(usage_hour::Column::HourStart.gte(first))
            .filter(usage_hour::Column::HourStart.lt(last))
            .into_tuple()
            .all(conn)
            .await?;
        rows.extend(
            whole
                .into_iter()
                .filter(|row| !plan.split_hours.contains(&row.2)),
        );
    }
    Ok(rows)
}

/// The tenant's minute buckets in `spans`.
async fn minute_buckets<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    spans: &[Span],
) -> Result<Vec<BucketRow>, DbErr> {
    if spans.is_empty() {
        return Ok(Vec::new());
    }
    let within = spans.iter().fold(Condition::any(), |any, &(a, b)| {
        any.add(
            Condition::all()
                .add(usage_minute::Column::MinuteStart.gte(a))
                .add(usage_minute::Column::MinuteStart.lt(b)),
        )
    });
    usage_minute::Entity::find()
        .select_only()
        .columns([
            usage_minute::Column::SkuId,
            usage_minute::Column::AllocationId,
            usage_minute::Column::MinuteStart,
            usage_minute::Column::ActiveSeconds,
            usage_minute::Column::MemoryGibSeconds,
            usage_minute::Column::EnergyKwh,
        ])
        .filter(usage_minute::Column::TenantId.eq(tenant))
        .filter(within)
        .into_tuple()
        .all(conn)
        .await
}

/// One minute of an allocation's samples, summed over its label sets and over its devices
/// (or one of them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampledMinute {
    pub minute: DateTime<Utc>,
    /// SM-active device-seconds.
    pub active_seconds: Decimal,
    pub memory_gib_seconds: Decimal,
    /// Device-seconds sampled (a second of each of eight GPUs is eight).
    pub sampled_seconds: i64,
}

impl SampledMinute {
    fn add(&mut self, active: Decimal, memory: Decimal, sampled: i64) {
        self.active_seconds += active;
        self.memory_gib_seconds += memory;
        self.sampled_seconds += sampled;
    }
}

/// Minutes with samples, by minute.
type Minutes = BTreeMap<DateTime<Utc>, SampledMinute>;

fn add_to(
    minutes: &mut Minutes,
    minute: DateTime<Utc>,
    active: Decimal,
    memory: Decimal,
    sampled: i64,
) {
    minutes
        .entry(minute)
        .or_insert(SampledMinute {
            minute,
            active_seconds: Decimal::ZERO,
            memory_gib_seconds: Decimal::ZERO,
            sampled_seconds: 0,
        })
        .add(active, memory, sampled);
}

/// The minutes of `[from, to)` in which agents reported samples of `allocation` (of
/// `tenant`), oldest first, per device: a GPU's or MIG slice's UUID, empty for buckets
/// folded before they were kept per device.
pub async fn sampled_minutes_by_device<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    allocation: Uuid,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
) -> Result<BTreeMap<String, Vec<SampledMinute>>, DbErr> {
    let rows: Vec<(String, DateTime<Utc>, Exact, Exact, i64)> = usage_minute::Entity::find()
        .select_only()
        .columns([
            usage_minute::Column::DeviceUuid,
            usage_minute::Column::MinuteStart,
            usage_minute::Column::ActiveSeconds,
            usage_minute::Column::MemoryGibSeconds,
            usage_minute::Column::SampledSeconds,
        ])
        .filter(usage_minute::Column::TenantId.eq(tenant))
        .filter(usage_minute::Column::AllocationId.eq(allocation))
        .filter(usage_minute::Column::MinuteStart.gte(from))
        .filter(usage_minute::Column::MinuteStart.lt(to))
        .into_tuple()
        .all(conn)
        .await?;
    let mut devices: BTreeMap<String, Minutes> = BTreeMap::new();
    for (device, minute, active, memory, sampled) in rows {
        let minutes = devices.entry(device).or_default();
        add_to(minutes, minute, active.get(), memory.get(), sampled);
    }
    Ok(devices
        .into_iter()
        .map(|(device, minutes)| (device, minutes.into_values().collect()))
        .collect())
}

/// Per minute, the sum of the devices' minutes, oldest first.
pub fn summed<'a>(devices: impl IntoIterator<Item = &'a Vec<SampledMinute>>) -> Vec<SampledMinute> {
    let mut sum = Minutes::new();
    for m in devices.into_iter().flatten() {
        add_to(
            &mut sum,
            m.minute,
            m.active_seconds,
            m.memory_gib_seconds,
            m.sampled_seconds,
        );
    }
    sum.into_values().collect()
}

/// The usage rows of one query, by key, with what their keys are made of.
struct Rows<'a> {
    group_by: &'a [GroupBy],
    step: TimeDelta,
    skus: &'a HashMap<Uuid, String>,
    facts: &'a HashMap<Uuid, AllocationFacts>,
    costs: &'a UnitCosts,
    rows: BTreeMap<Vec<String>, UsageRow>,
}

impl Rows<'_> {
    /// The row an allocation's usage of a SKU in the bucket starting `at` goes to.
    fn row(&mut self, sku: Option<Uuid>, allocation: Uuid, at: DateTime<Utc>) -> &mut UsageRow {
        let name = sku
            .and_then(|i| self.skus.get(&i).cloned())
            .unwrap_or_default();
        let parts = Parts {
            sku: &name,
            allocation,
            label: self.facts.get(&allocation).map_or("", |f| f.label.as_str()),
            at,
        };
        row_for(&mut self.rows, key_of(self.group_by, &parts))
    }

    /// What `quantities` of an allocation's SKU used at `at` cost.
    fn cost(
        &self,
        sku: Option<Uuid>,
        allocation: Uuid,
        at: DateTime<Utc>,
        quantities: &[(Metric, Decimal)],
    ) -> Decimal {
        let Some(sku) = sku else {
            return Decimal::ZERO;
        };
        let spot = self.facts.get(&allocation).is_some_and(|f| f.spot);
        quantities
            .iter()
            .map(|&(metric, q)| self.costs.cost(at, (sku, spot), metric, q))
            .sum()
    }

    /// The unit-seconds allocation `a` held in `[lo, hi)`, per time bucket: allocated, and
    /// SLA credit for the time its GPUs were failed.
    fn add_held_time(
        &mut self,
        a: &allocation::Model,
        held: &Holdings,
        (lo, hi): Span,
        now: DateTime<Utc>,
    ) {
        let gpus: Vec<Uuid> = held
            .gpus
            .iter()
            .filter(|h| h.allocation_id == a.id)
            .map(|h| Uuid::from(h.gpu_id))
            .collect();
        if gpus.is_empty() {
            return;
        }
        let failed_spans = failed_spans(&gpus, &held.failed, (lo, hi), now);
        let units = units_held(a, gpus.len());
        let gpus = Decimal::from(gpus.len());
        let step = self.step;
        let parts = self.costs.cut(lo, hi).into_iter();
        for (at, part) in parts.flat_map(|(a, b)| spans_per_bucket(a, b, step)) {
            // GPU-seconds held and failed in the bucket, summed over the allocation's GPUs,
            // then turned into unit-seconds once (exact unless a node's GPU count does not
            // divide them; then 28 significant digits).
            let failed_gpu_secs: i64 = failed_spans
                .iter()
                .filter_map(|f| overlap(*f, part))
                .map(|(x, y)| (y - x).num_seconds())
                .sum();
            let held_gpu_secs = Decimal::from((part.1 - part.0).num_seconds()) * gpus;
            let failed_gpu_secs = Decimal::from(failed_gpu_secs);
            let allocated = (held_gpu_secs - failed_gpu_secs) * units / gpus;
            let sla_credit = failed_gpu_secs * units / gpus;
            let held = [
                (Metric::Allocated, allocated),
                (Metric::SlaCredit, sla_credit),
            ];
            let cost = self.cost(Some(a.sku_id.into()), a.id.into(), part.0, &held);
            let row = self.row(Some(a.sku_id.into()), a.id.into(), at);
            row.allocated_seconds += allocated;
            row.sla_credit_seconds += sla_credit;
            row.cost += cost;
        }
    }
}

/// The stretches each of `gpus` was failed within `span`. Per GPU, its failed stretches
/// are merged: a late event can open a stretch inside one an operator already closed, and
/// a second counted would credit time twice.
fn failed_spans(
    gpus: &[Uuid],
    failed: &[gpu_health_interval::Model],
    span: Span,
    now: DateTime<Utc>,
) -> Vec<Span> {
    gpus.iter()
        .flat_map(|gpu| {
            merged(
                failed
                    .iter()
                    .filter(|f| Uuid::from(f.gpu_id) == *gpu)
                    .filter_map(|f| overlap((f.started_at, f.ended_at.unwrap_or(now)), span))
                    .collect(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().expect("time")
    }

    #[test]
    fn overlapping_failures_count_once() {
        let spans = merged(vec![
            (t("2026-11-30T10:00:00Z"), t("2026-11-30T12:00:00Z")),
            (t("2026-11-30T09:00:00Z"), t("2026-11-30T10:30:00Z")),
            (t("2026-11-30T13:00:00Z"), t("2026-11-30T14:00:00Z")),
        ]);
        assert_eq!(
            spans,
            vec![
                (t("2026-11-30T09:00:00Z"), t("2026-11-30T12:00:00Z")),
                (t("2026-11-30T13:00:00Z"), t("2026-11-30T14:00:00Z")),
            ]
        );
    }

    #[test]
    fn a_span_across_midnight_splits_by_day() {
        let (a, b) = (t("2026-11-29T23:59:50Z"), t("2026-11-30T00:00:20Z"));
        let days = spans_per_bucket(a, b, TimeDelta::days(1));
        assert_eq!(
            days,
            vec![
                (t("2026-11-29T00:00:00Z"), (a, t("2026-11-30T00:00:00Z"))),
                (t("2026-11-30T00:00:00Z"), (t("2026-11-30T00:00:00Z"), b)),
            ]
        );
    }

    #[test]
    fn a_span_splits_by_hour_at_whole_hours() {
        let (a, b) = (t("2026-11-30T09:59:30Z"), t("2026-11-30T12:00:00Z"));
        let hours = spans_per_bucket(a, b, TimeDelta::hours(1));
        let starts: Vec<_> = hours.iter().map(|(at, _)| at.to_rfc3339()).collect();
        assert_eq!(
            starts,
            [
                "2026-11-30T09:00:00+00:00",
                "2026-11-30T10:00:00+00:00",
                "2026-11-30T11:00:00+00:00"
            ]
        );
        assert_eq!(hours[0].1, (a, t("2026-11-30T10:00:00Z")));
        assert_eq!(hours[2].1, (t("2026-11-30T11:00:00Z"), b));
    }
}
