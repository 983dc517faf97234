//! What meters counted over a span: per meter version and group, each aggregated as its
//! meter says from the minute buckets (the distinct values for `unique_count`), and per
//! metered SKU, the sum over its meters and groups (what rating bills).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{meter, meter_minute};
use neocloud_schema::ids::{MeterId, TenantId};
use neocloud_schema::vocabulary::MeterAggregation;
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DbErr};
use uuid::Uuid;

use super::store;
use crate::rating::period::MeteredUsage;

/// One meter version's quantity for one group over a span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeterQuantity {
    pub meter: meter::Model,
    /// The group's values, in the meter's `group_by` order (empty text: not in the event).
    pub group: Vec<String>,
    pub quantity: Decimal,
    /// The events counted.
    pub events: i64,
}

/// What the buckets of one (meter, group) come to.
#[derive(Default)]
struct Tally {
    sum: Decimal,
    count: i64,
    max: Decimal,
    latest: Option<(DateTime<Utc>, Decimal)>,
}

impl Tally {
    fn add(&mut self, b: &meter_minute::Model) {
        if b.count == 0 {
            return;
        }
        self.sum += b.sum.get();
        self.count += b.count;
        self.max = self.max.max(b.max.get());
        self.latest = self.latest.max(Some((b.latest_at, b.latest.get())));
    }

    fn quantity(&self, aggregation: MeterAggregation, distinct: i64) -> Decimal {
        match aggregation {
            MeterAggregation::Sum => self.sum,
            MeterAggregation::Count => Decimal::from(self.count),
            MeterAggregation::Max => self.max,
            MeterAggregation::Latest => self.latest.map_or(Decimal::ZERO, |(_, v)| v),
            MeterAggregation::UniqueCount => Decimal::from(distinct),
        }
    }
}

/// Every (meter version, group) the tenant has usage of in `[from, to)`, by meter key,
/// version and group.
pub async fn by_group<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<MeterQuantity>, DbErr> {
    let mut tallies: BTreeMap<(MeterId, String), Tally> = BTreeMap::new();
    for b in store::minutes(conn, tenant, from, to).await? {
        tallies
            .entry((b.meter_id, b.group_key.clone()))
            .or_default()
            .add(&b);
    }
    if tallies.is_empty() {
        return Ok(Vec::new());
    }
    let distinct: HashMap<(MeterId, String), i64> = store::distinct_counts(conn, tenant, from, to)
        .await?
        .into_iter()
        .map(|(m, g, n)| ((m, g), n))
        .collect();
    let ids: Vec<MeterId> = tallies.keys().map(|k| k.0).collect();
    let meters = store::versions(conn, &ids).await?;
    let mut out: Vec<MeterQuantity> = tallies
        .into_iter()
        .filter_map(|((id, group_key), tally)| {
            let meter = meters.get(&id)?.clone();
            let n = distinct.get(&(id, group_key.clone())).copied().unwrap_or(0);
            Some(MeterQuantity {
                quantity: tally.quantity(meter.aggregation, n),
                group: serde_json::from_str(&group_key).unwrap_or_default(),
                events: tally.count,
                meter,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        (&a.meter.key, a.meter.version, &a.group).cmp(&(&b.meter.key, b.meter.version, &b.group))
    });
    Ok(out)
}

/// Per metered SKU, what its meters counted in `[from, to)`: what a segment bills.
pub async fn per_sku<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<MeteredUsage>, DbErr> {
    let mut skus: BTreeMap<Uuid, MeteredUsage> = BTreeMap::new();
    for q in by_group(conn, tenant, from, to).await? {
        let sku = Uuid::from(q.meter.sku_id);
        let entry = skus.entry(sku).or_insert_with(|| MeteredUsage {
            sku,
            quantity: Decimal::ZERO,
            meters: Vec::new(),
        });
        entry.quantity += q.quantity;
        let name = format!("{} v{}", q.meter.key, q.meter.version);
        if !entry.meters.contains(&name) {
            entry.meters.push(name);
        }
    }
    Ok(skus
        .into_values()
        .filter(|m| !m.quantity.is_zero())
        .collect())
}
