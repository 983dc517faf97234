//! Hourly roll-ups of the minute buckets (`usage_hours`): per allocation and UTC hour,
//! the sum of its minutes over devices and label sets. The aggregation pass adds to them
//! in the transaction that adds to the minutes, so they never lag or disagree; a usage
//! read takes whole hours from them and only the minutes at its edges (and of an hour a
//! rated segment starts or ends inside, so every quantity is still priced by the
//! segment its minute falls in).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use neocloud_schema::entity::usage_hour;
use neocloud_schema::ids::{SkuId, TenantId};
use rust_decimal::Decimal;
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, QueryFilter, Set, Statement,
};
use uuid::Uuid;

use super::Span;

/// What a pass adds to one allocation's hour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HourSums {
    pub tenant: Option<TenantId>,
    pub sku: Option<Uuid>,
    pub active_seconds: Decimal,
    pub memory_gib_seconds: Decimal,
    pub energy_kwh: Decimal,
    pub sampled_seconds: i64,
}

/// An allocation's hour: (allocation, hour start).
pub type HourKey = (Uuid, DateTime<Utc>);

/// Additions by allocation and hour.
pub type Hours = BTreeMap<HourKey, HourSums>;

/// The UTC hour `t` falls in.
pub fn hour_of(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(TimeDelta::hours(1)).unwrap_or(t)
}

/// Adds `sums` of a minute of `allocation` to its hour in `hours`; the nil allocation
/// (seconds nobody held) is never billed and not rolled up.
pub fn add_minute(hours: &mut Hours, allocation: Uuid, minute: DateTime<Utc>, sums: HourSums) {
    if allocation.is_nil() {
        return;
    }
    hours
        .entry((allocation, hour_of(minute)))
        .and_modify(|h| {
            h.active_seconds += sums.active_seconds;
            h.memory_gib_seconds += sums.memory_gib_seconds;
            h.energy_kwh += sums.energy_kwh;
            h.sampled_seconds += sums.sampled_seconds;
        })
        .or_insert(sums);
}

/// Adds `hours` to the stored roll-ups: on PostgreSQL in the database (`NUMERIC`, exact),
/// elsewhere by reading the touched hours and writing their new totals (the aggregation
/// pass that calls this runs alone there).
pub async fn add<C: ConnectionTrait>(conn: &C, hours: &Hours) -> Result<(), DbErr> {
    if hours.is_empty() {
        return Ok(());
    }
    if conn.get_database_backend() == DbBackend::Postgres {
        return add_in_database(conn, hours).await;
    }
    let stored = stored(conn, hours).await?;
    let rows = hours.iter().map(|(&(allocation, hour), add)| {
        let mut sums = add.clone();
        if let Some(old) = stored.get(&(allocation, hour)) {
            sums.active_seconds += old.active_seconds.get();
            sums.memory_gib_seconds += old.memory_gib_seconds.get();
            sums.energy_kwh += old.energy_kwh.get();
            sums.sampled_seconds += old.sampled_seconds;
        }
        usage_hour::ActiveModel {
            allocation_id: Set(allocation.into()),
            hour_start: Set(hour),
            tenant_id: Set(sums.tenant),
            sku_id: Set(sums.sku.map(SkuId)),
            active_seconds: Set(sums.active_seconds.into()),
            memory_gib_seconds: Set(sums.memory_gib_seconds.into()),
            energy_kwh: Set(sums.energy_kwh.into()),
            sampled_seconds: Set(sums.sampled_seconds),
        }
    });
    let conflict = OnConflict::columns([
        usage_hour::Column::AllocationId,
        usage_hour::Column::HourStart,
    ])
    .update_columns([
        usage_hour::Column::ActiveSeconds,
        usage_hour::Column::MemoryGibSeconds,
        usage_hour::Column::EnergyKwh,
        usage_hour::Column::SampledSeconds,
    ])
    .to_owned();
    let mut rows = rows.collect::<Vec<_>>().into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<_> = rows.by_ref().take(500).collect();
        usage_hour::Entity::insert_many(chunk)
            .on_conflict(conflict.clone())
            .exec_without_returning(conn)
            .await?;
    }
    Ok(())
}

/// The stored roll-ups of the hours in `hours`, by key.
async fn stored<C: ConnectionTrait>(
    conn: &C,
    hours: &Hours,
) -> Result<HashMap<HourKey, usage_hour::Model>, DbErr> {
    let allocations: BTreeSet<Uuid> = hours.keys().map(|k| k.0).collect();
    let starts: BTreeSet<DateTime<Utc>> = hours.keys().map(|k| k.1).collect();
    Ok(usage_hour::Entity::find()
        .filter(usage_hour::Column::AllocationId.is_in(allocations))
        .filter(usage_hour::Column::HourStart.is_in(starts))
        .all(conn)
        .await?
        .into_iter()
        .map(|row| ((row.allocation_id.into(), row.hour_start), row))
        .collect())
}

/// PostgreSQL: one upsert, the rows as eight array parameters, the sums in `NUMERIC`.
async fn add_in_database<C: ConnectionTrait>(conn: &C, hours: &Hours) -> Result<(), DbErr> {
    let column = |f: &dyn Fn(&HourKey, &HourSums) -> Option<String>| {
        crate::pg::text_array(hours.iter().map(|(key, sums)| f(key, sums)))
    };
    let values = [
        column(&|k, _| Some(k.0.to_string())),
        column(&|k, _| Some(k.1.to_rfc3339())),
        column(&|_, s| s.tenant.map(|t| t.to_string())),
        column(&|_, s| s.sku.map(|s| s.to_string())),
        column(&|_, s| Some(s.active_seconds.to_string())),
        column(&|_, s| Some(s.memory_gib_seconds.to_string())),
        column(&|_, s| Some(s.energy_kwh.to_string())),
        column(&|_, s| Some(s.sampled_seconds.to_string())),
    ];
    let sum = |c: &str| format!("{c} = usage_hours.{c} + excluded.{c}");
    let sql = format!(
        "INSERT INTO usage_hours (allocation_id, hour_start, tenant_id, sku_id, \
         active_seconds, memory_gib_seconds, energy_kwh, sampled_seconds) \
         SELECT * FROM unnest($1::text::uuid[], $2::text::timestamptz[], $3::text::uuid[], \
         $4::text::uuid[], $5::text::numeric[], $6::text::numeric[], $7::text::numeric[], \
         $8::text::bigint[]) \
         ON CONFLICT (allocation_id, hour_start) DO UPDATE SET {}, {}, {}, {}",
        sum("active_seconds"),
        sum("memory_gib_seconds"),
        sum("energy_kwh"),
        sum("sampled_seconds"),
    );
    conn.execute_raw(Statement::from_sql_and_values(
        DbBackend::Postgres,
        sql,
        values.map(sea_orm::Value::from),
    ))
    .await
    .map(|_| ())
}

/// How a read of `[from, to)` splits between roll-ups and minute buckets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ReadPlan {
    /// The whole hours read from roll-ups (their starts in this span)…
    pub hours: Option<Span>,
    /// …but these, which a rated segment starts or ends inside.
    pub split_hours: BTreeSet<DateTime<Utc>>,
    /// What is read minute by minute: the range's partial first and last hours and the
    /// split hours.
    pub minutes: Vec<Span>,
}

/// The plan of a read of `[from, to)`, where rated segments start or end at `cuts`.
pub(super) fn plan(from: DateTime<Utc>, to: DateTime<Utc>, cuts: &[DateTime<Utc>]) -> ReadPlan {
    let first = match hour_of(from) {
        h if h == from => h,
        h => h + TimeDelta::hours(1),
    };
    let last = hour_of(to);
    if first >= last {
        return ReadPlan {
            hours: None,
            split_hours: BTreeSet::new(),
            minutes: vec![(from, to)],
        };
    }
    let split_hours: BTreeSet<DateTime<Utc>> = cuts
        .iter()
        .filter(|&&t| first < t && t < last && hour_of(t) != t)
        .map(|&t| hour_of(t))
        .collect();
    let edges = [(from, first), (last, to)];
    let minutes = edges
        .into_iter()
        .filter(|(a, b)| a < b)
        .chain(split_hours.iter().map(|&h| (h, h + TimeDelta::hours(1))))
        .collect();
    ReadPlan {
        hours: Some((first, last)),
        split_hours,
        minutes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().expect("time")
    }

    #[test]
    fn whole_hours_come_from_roll_ups_and_the_edges_from_minutes() {
        let p = plan(t("2026-12-01T09:17:00Z"), t("2026-12-01T13:05:00Z"), &[]);
        assert_eq!(
            p.hours,
            Some((t("2026-12-01T10:00:00Z"), t("2026-12-01T13:00:00Z")))
        );
        assert_eq!(
            p.minutes,
            vec![
                (t("2026-12-01T09:17:00Z"), t("2026-12-01T10:00:00Z")),
                (t("2026-12-01T13:00:00Z"), t("2026-12-01T13:05:00Z")),
            ]
        );
    }

    #[test]
    fn an_hour_a_segment_starts_inside_is_read_by_the_minute() {
        let cuts = [
            t("2026-12-01T11:42:00Z"),
            // On an hour: no hour is split by it.
            t("2026-12-01T12:00:00Z"),
            // Inside the range's first hour.
            t("2026-12-01T09:30:00Z"),
        ];
        let p = plan(t("2026-12-01T09:00:00Z"), t("2026-12-01T14:00:00Z"), &cuts);
        assert_eq!(
            p.hours,
            Some((t("2026-12-01T09:00:00Z"), t("2026-12-01T14:00:00Z")))
        );
        assert_eq!(
            p.split_hours.into_iter().collect::<Vec<_>>(),
            vec![t("2026-12-01T09:00:00Z"), t("2026-12-01T11:00:00Z")]
        );
        assert_eq!(
            p.minutes,
            vec![
                (t("2026-12-01T09:00:00Z"), t("2026-12-01T10:00:00Z")),
                (t("2026-12-01T11:00:00Z"), t("2026-12-01T12:00:00Z")),
            ]
        );
    }

    #[test]
    fn a_range_inside_one_hour_is_all_minutes() {
        let (from, to) = (t("2026-12-01T09:17:00Z"), t("2026-12-01T09:45:00Z"));
        let p = plan(from, to, &[]);
        assert_eq!(p.hours, None);
        assert_eq!(p.minutes, vec![(from, to)]);
    }
}
