//! SQL of meters and usage events: `meters`, `usage_event_keys`, `usage_event_batches`,
//! `meter_minutes`, `meter_uniques`, `meter_groups`. Every read of a tenant's usage filters
//! by tenant here.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{
    meter, meter_group, meter_minute, meter_unique, usage_event_batch, usage_event_key,
};
use neocloud_schema::ids::{MeterId, TenantId};
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, FromQueryResult,
    IntoActiveModel, Iterable, ModelTrait, PrimaryKeyToColumn, QueryFilter, QueryOrder,
    QuerySelect,
};

/// Rows per multi-row statement (the tables have at most 9 columns; 900 bind values).
const CHUNK: usize = 100;

pub async fn latest_version<C: ConnectionTrait>(conn: &C, key: &str) -> Result<Option<i32>, DbErr> {
    Ok(meter::Entity::find()
        .filter(meter::Column::Key.eq(key))
        .order_by_desc(meter::Column::Version)
        .one(conn)
        .await?
        .map(|m| m.version))
}

pub async fn insert_meter<C: ConnectionTrait>(conn: &C, row: meter::Model) -> Result<(), DbErr> {
    meter::Entity::insert(row.into_active_model())
        .exec_without_returning(conn)
        .await
        .map(|_| ())
}

/// Every meter version, oldest first.
pub async fn all_versions<C: ConnectionTrait>(conn: &C) -> Result<Vec<meter::Model>, DbErr> {
    meter::Entity::find()
        .order_by_asc(meter::Column::Key)
        .order_by_asc(meter::Column::Version)
        .all(conn)
        .await
}

/// The current version of each meter: the highest under its key.
pub async fn current<C: ConnectionTrait>(conn: &C) -> Result<Vec<meter::Model>, DbErr> {
    let mut latest: BTreeMap<String, meter::Model> = BTreeMap::new();
    for m in all_versions(conn).await? {
        latest.insert(m.key.clone(), m);
    }
    Ok(latest.into_values().collect())
}

pub async fn versions<C: ConnectionTrait>(
    conn: &C,
    ids: &[MeterId],
) -> Result<HashMap<MeterId, meter::Model>, DbErr> {
    Ok(meter::Entity::find()
        .filter(meter::Column::Id.is_in(ids.iter().copied()))
        .all(conn)
        .await?
        .into_iter()
        .map(|m| (m.id, m))
        .collect())
}

/// Most bytes a statement sends. A statement's messages then fit one TLS record (16 KiB):
/// sqlx does not set `TCP_NODELAY`, so a statement split over two records waits for the
/// server's delayed ACK (about 40 ms) before its tail is sent.
const STATEMENT_BYTES: usize = 12 * 1024;

/// What identifies a usage event for ever: its tenant and key (`usage_event_key::key_of`).
pub type EventKey = (TenantId, uuid::Uuid);

/// Records the keys not recorded before, in key order (two transactions recording the
/// same keys wait for one another, never in a cycle); returns those recorded now.
pub async fn insert_keys<C: ConnectionTrait>(
    conn: &C,
    mut keys: Vec<EventKey>,
) -> Result<HashSet<EventKey>, DbErr> {
    keys.sort_unstable();
    if conn.get_database_backend() == sea_orm::DbBackend::Postgres {
        return insert_keys_pg(conn, &keys).await;
    }
    let mut fresh = HashSet::new();
    for chunk in keys.chunks(CHUNK) {
        let rows = chunk
            .iter()
            .map(|&(tenant_id, key)| usage_event_key::Model { tenant_id, key }.into_active_model());
        let inserted = usage_event_key::Entity::insert_many(rows)
            .on_conflict(
                OnConflict::columns([
                    usage_event_key::Column::TenantId,
                    usage_event_key::Column::Key,
                ])
                .do_nothing()
                .to_owned(),
            )
            .exec_with_returning_keys(conn)
            .await;
        match inserted {
            Ok(keys) => fresh.extend(keys),
            Err(DbErr::RecordNotInserted) => {}
            Err(err) => return Err(err),
        }
    }
    Ok(fresh)
}

/// PostgreSQL: a tenant's keys as one text parameter per statement (`uuid,uuid,…`, at
/// most `STATEMENT_BYTES`), split in SQL: one statement text whatever their number, and
/// about 300 keys a statement.
async fn insert_keys_pg<C: ConnectionTrait>(
    conn: &C,
    keys: &[EventKey],
) -> Result<HashSet<EventKey>, DbErr> {
    const SQL: &str = "INSERT INTO usage_event_keys (tenant_id, key) \
        SELECT $1::uuid, k::uuid FROM unnest(string_to_array($2, ',')) AS k \
        ON CONFLICT (tenant_id, key) DO NOTHING RETURNING key";
    // A key is 36 characters of text and a comma.
    const PER_STATEMENT: usize = STATEMENT_BYTES / (36 + 1);
    let mut fresh = HashSet::new();
    for tenant_keys in keys.chunk_by(|a, b| a.0 == b.0) {
        let tenant = tenant_keys[0].0;
        for chunk in tenant_keys.chunks(PER_STATEMENT) {
            let list = chunk
                .iter()
                .map(|(_, key)| key.to_string())
                .collect::<Vec<_>>()
                .join(",");
            let stmt = sea_orm::Statement::from_sql_and_values(
                sea_orm::DbBackend::Postgres,
                SQL,
                [uuid::Uuid::from(tenant).into(), list.into()],
            );
            for row in conn.query_all_raw(stmt).await? {
                fresh.insert((tenant, row.try_get::<uuid::Uuid>("", "key")?));
            }
        }
    }
    Ok(fresh)
}

/// Journals what a tenant's events recorded now said (`usage_event_batch`), in rows of at
/// most `STATEMENT_BYTES` compressed (a larger event alone).
pub async fn journal<C: ConnectionTrait, E: serde::Serialize>(
    conn: &C,
    tenant: TenantId,
    events: &[E],
    received_at: DateTime<Utc>,
) -> Result<(), DbErr> {
    for (count, body) in bodies(events)? {
        usage_event_batch::Entity::insert(
            usage_event_batch::Model {
                id: uuid::Uuid::now_v7(),
                tenant_id: tenant,
                received_at,
                events: i32::try_from(count).unwrap_or(i32::MAX),
                body,
            }
            .into_active_model(),
        )
        .exec_without_returning(conn)
        .await?;
    }
    Ok(())
}

/// `events` as batch bodies of at most `STATEMENT_BYTES` each (halving a run that
/// compresses larger, down to one event), in order, each with its count.
fn bodies<E: serde::Serialize>(events: &[E]) -> Result<Vec<(usize, Vec<u8>)>, DbErr> {
    let mut out = Vec::new();
    let mut pending = vec![events];
    while let Some(run) = pending.pop() {
        if run.is_empty() {
            continue;
        }
        let body = usage_event_batch::encode(run)
            .map_err(|e| DbErr::Custom(format!("a usage event batch body: {e}")))?;
        if body.len() <= STATEMENT_BYTES || run.len() == 1 {
            out.push((run.len(), body));
        } else {
            let (first, second) = run.split_at(run.len() / 2);
            pending.push(second);
            pending.push(first);
        }
    }
    Ok(out)
}

/// Which of `wanted` (tenant, meter, group key) are counted groups already: one read of
/// just those rows, however many groups the meters have.
pub async fn known_groups<C: ConnectionTrait>(
    conn: &C,
    wanted: &HashSet<(TenantId, MeterId, String)>,
) -> Result<HashSet<(TenantId, MeterId, String)>, DbErr> {
    let tenants: HashSet<TenantId> = wanted.iter().map(|w| w.0).collect();
    let meters: HashSet<MeterId> = wanted.iter().map(|w| w.1).collect();
    let keys: HashSet<&str> = wanted.iter().map(|w| w.2.as_str()).collect();
    let rows = meter_group::Entity::find()
        .filter(meter_group::Column::TenantId.is_in(tenants))
        .filter(meter_group::Column::MeterId.is_in(meters))
        .filter(meter_group::Column::GroupKey.is_in(keys))
        .all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.tenant_id, r.meter_id, r.group_key))
        .filter(|k| wanted.contains(k))
        .collect())
}

/// How many groups each of `meters` has counted for each of `tenants`.
pub async fn group_counts<C: ConnectionTrait>(
    conn: &C,
    tenants: &HashSet<TenantId>,
    meters: &HashSet<MeterId>,
) -> Result<HashMap<(TenantId, MeterId), u64>, DbErr> {
    use sea_orm::sea_query::{Expr, ExprTrait};
    let rows: Vec<(TenantId, MeterId, i64)> = meter_group::Entity::find()
        .select_only()
        .column(meter_group::Column::TenantId)
        .column(meter_group::Column::MeterId)
        .column_as(Expr::col(meter_group::Column::GroupKey).count(), "groups")
        .filter(meter_group::Column::TenantId.is_in(tenants.iter().copied()))
        .filter(meter_group::Column::MeterId.is_in(meters.iter().copied()))
        .group_by(meter_group::Column::TenantId)
        .group_by(meter_group::Column::MeterId)
        .into_tuple()
        .all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(t, m, n)| ((t, m), u64::try_from(n).unwrap_or(0)))
        .collect())
}

/// Inserts `rows`, leaving those whose primary key is already stored as they are.
pub async fn insert_missing<M, C>(conn: &C, rows: &[M]) -> Result<(), DbErr>
where
    M: ModelTrait + IntoActiveModel<<M::Entity as EntityTrait>::ActiveModel> + Clone,
    C: ConnectionTrait,
{
    let key: Vec<_> = <<M::Entity as EntityTrait>::PrimaryKey as Iterable>::iter()
        .map(PrimaryKeyToColumn::into_column)
        .collect();
    for chunk in rows.chunks(CHUNK) {
        let inserted = M::Entity::insert_many(
            chunk
                .iter()
                .cloned()
                .map(IntoActiveModel::into_active_model),
        )
        .on_conflict(OnConflict::columns(key.clone()).do_nothing().to_owned())
        .exec_without_returning(conn)
        .await;
        match inserted {
            Ok(_) | Err(DbErr::RecordNotInserted) => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// Adds `buckets` (sorted by key, all of one shard) into `meter_minutes`, rows in key
/// order (so two batches never wait on each other in a cycle). On PostgreSQL, whose
/// columns are `NUMERIC`, one upsert per chunk adds them in SQL, exactly; on SQLite, whose
/// decimals are text, each row is created empty if missing, then locked, merged by
/// `merge` and written back.
pub async fn add_buckets<C: ConnectionTrait>(
    conn: &C,
    buckets: Vec<meter_minute::Model>,
    merge: impl Fn(&meter_minute::Model, &meter_minute::Model) -> Option<meter_minute::Model>,
) -> Result<(), DbErr> {
    if conn.get_database_backend() == sea_orm::DbBackend::Postgres {
        return upsert_buckets(conn, buckets).await;
    }
    create_empty(conn, &buckets).await?;
    let stored = lock(conn, &buckets).await?;
    for bucket in &buckets {
        let Some(old) = stored.get(&bucket_key(bucket)) else {
            return Err(DbErr::RecordNotFound(
                "a meter bucket just created".to_owned(),
            ));
        };
        let Some(merged) = merge(old, bucket) else {
            return Err(DbErr::Custom("a meter's total overflows".to_owned()));
        };
        let mut active = merged.into_active_model();
        for column in [
            meter_minute::Column::Sum,
            meter_minute::Column::Count,
            meter_minute::Column::Max,
            meter_minute::Column::LatestAt,
            meter_minute::Column::Latest,
        ] {
            active.reset(column);
        }
        active.update(conn).await?;
    }
    Ok(())
}

/// PostgreSQL: inserts `buckets`, adding each into the stored row of its key as `merge`
/// does (sums and counts add, the larger maximum, the latest value by time and then by
/// value), in one statement per chunk.
async fn upsert_buckets<C: ConnectionTrait>(
    conn: &C,
    buckets: Vec<meter_minute::Model>,
) -> Result<(), DbErr> {
    use meter_minute::Column;
    use sea_orm::sea_query::Expr;
    let mut conflict = OnConflict::columns([
        Column::TenantId,
        Column::MeterId,
        Column::MinuteStart,
        Column::GroupKey,
        Column::Shard,
    ]);
    conflict
        .value(Column::Sum, Expr::cust("meter_minutes.sum + excluded.sum"))
        .value(Column::Count, Expr::cust("meter_minutes.count + excluded.count"))
        .value(Column::Max, Expr::cust("GREATEST(meter_minutes.max, excluded.max)"))
        .value(
            Column::Latest,
            Expr::cust(
                "CASE WHEN (excluded.latest_at, excluded.latest) > (meter_minutes.latest_at, meter_minutes.latest) \
                 THEN excluded.latest ELSE meter_minutes.latest END",
            ),
        )
        .value(
            Column::LatestAt,
            Expr::cust("GREATEST(meter_minutes.latest_at, excluded.latest_at)"),
        );
    for chunk in buckets.chunks(CHUNK) {
        meter_minute::Entity::insert_many(
            chunk
                .iter()
                .cloned()
                .map(IntoActiveModel::into_active_model),
        )
        .on_conflict(conflict.clone())
        .exec_without_returning(conn)
        .await?;
    }
    Ok(())
}

/// Creates the buckets missing among `buckets`, empty.
async fn create_empty<C: ConnectionTrait>(
    conn: &C,
    buckets: &[meter_minute::Model],
) -> Result<(), DbErr> {
    let empty: Vec<meter_minute::Model> = buckets.iter().map(empty_like).collect();
    insert_missing(conn, &empty).await
}

/// Reads `buckets`' rows locked (`FOR UPDATE` on PostgreSQL), in key order.
async fn lock<C: ConnectionTrait>(
    conn: &C,
    buckets: &[meter_minute::Model],
) -> Result<HashMap<BucketKey, meter_minute::Model>, DbErr> {
    let tenants: HashSet<TenantId> = buckets.iter().map(|b| b.tenant_id).collect();
    let meters: HashSet<MeterId> = buckets.iter().map(|b| b.meter_id).collect();
    let minutes: HashSet<DateTime<Utc>> = buckets.iter().map(|b| b.minute_start).collect();
    let shards: HashSet<i16> = buckets.iter().map(|b| b.shard).collect();
    let stored = meter_minute::Entity::find()
        .filter(meter_minute::Column::TenantId.is_in(tenants))
        .filter(meter_minute::Column::Shard.is_in(shards))
        .filter(meter_minute::Column::MeterId.is_in(meters))
        .filter(meter_minute::Column::MinuteStart.is_in(minutes))
        .order_by_asc(meter_minute::Column::TenantId)
        .order_by_asc(meter_minute::Column::MeterId)
        .order_by_asc(meter_minute::Column::MinuteStart)
        .order_by_asc(meter_minute::Column::GroupKey)
        .order_by_asc(meter_minute::Column::Shard)
        .lock_exclusive()
        .all(conn)
        .await?;
    Ok(stored
        .into_iter()
        .map(|row| (bucket_key(&row), row))
        .collect())
}

type BucketKey = (TenantId, MeterId, DateTime<Utc>, String, i16);

fn bucket_key(row: &meter_minute::Model) -> BucketKey {
    (
        row.tenant_id,
        row.meter_id,
        row.minute_start,
        row.group_key.clone(),
        row.shard,
    )
}

fn empty_like(b: &meter_minute::Model) -> meter_minute::Model {
    meter_minute::Model {
        sum: rust_decimal::Decimal::ZERO.into(),
        count: 0,
        max: rust_decimal::Decimal::ZERO.into(),
        latest_at: b.minute_start,
        latest: rust_decimal::Decimal::ZERO.into(),
        ..b.clone()
    }
}

/// A tenant's buckets with `from <= minute_start < to`.
pub async fn minutes<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<meter_minute::Model>, DbErr> {
    meter_minute::Entity::find()
        .filter(meter_minute::Column::TenantId.eq(tenant))
        .filter(meter_minute::Column::MinuteStart.gte(from))
        .filter(meter_minute::Column::MinuteStart.lt(to))
        .all(conn)
        .await
}

#[derive(Debug, FromQueryResult)]
struct DistinctCount {
    meter_id: MeterId,
    group_key: String,
    distinct: i64,
}

/// The distinct values each `unique_count` meter saw for a tenant over `[from, to)`, per
/// group.
pub async fn distinct_counts<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<(MeterId, String, i64)>, DbErr> {
    use sea_orm::sea_query::{Expr, ExprTrait};
    let rows = meter_unique::Entity::find()
        .select_only()
        .column(meter_unique::Column::MeterId)
        .column(meter_unique::Column::GroupKey)
        .column_as(
            Expr::col(meter_unique::Column::Value).count_distinct(),
            "distinct",
        )
        .filter(meter_unique::Column::TenantId.eq(tenant))
        .filter(meter_unique::Column::MinuteStart.gte(from))
        .filter(meter_unique::Column::MinuteStart.lt(to))
        .group_by(meter_unique::Column::MeterId)
        .group_by(meter_unique::Column::GroupKey)
        .into_model::<DistinctCount>()
        .all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.meter_id, r.group_key, r.distinct))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(n: usize, data_bytes: usize) -> serde_json::Value {
        // Data that does not compress: a run of distinct numbers.
        let data: String = (0..data_bytes)
            .map(|i| char::from(b'a' + u8::try_from((i * 7 + n * 13) % 26).unwrap()))
            .collect();
        serde_json::json!({"id": format!("e{n}"), "source": "gateway", "data": {"v": data}})
    }

    #[test]
    fn batch_bodies_fit_one_tls_record_and_keep_every_event_in_order() {
        let events: Vec<serde_json::Value> = [10, 9000, 10, 5000, 5000, 20_000, 10]
            .iter()
            .chain(&[10; 250])
            .enumerate()
            .map(|(i, n)| event(i, *n))
            .collect();
        let bodies = bodies(&events).expect("bodies");
        assert!(
            bodies
                .iter()
                .all(|(n, body)| *n == 1 || body.len() <= STATEMENT_BYTES),
            "{:?}",
            bodies.iter().map(|(n, b)| (n, b.len())).collect::<Vec<_>>()
        );
        assert!(
            bodies.len() < events.len() / 10,
            "runs, not one row an event"
        );
        let back: Vec<serde_json::Value> = bodies
            .iter()
            .flat_map(|(n, body)| {
                let got = usage_event_batch::decode(body, 1 << 22).expect("decodes");
                assert_eq!(got.len(), *n);
                got
            })
            .collect();
        assert_eq!(back, events, "every event once, in order");
    }
}
