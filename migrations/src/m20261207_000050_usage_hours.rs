//! Hourly roll-ups of the minute buckets (`usage_hours`): per allocation and UTC hour,
//! the sum of its minute buckets over devices and label sets. Filled from the minute
//! buckets already stored; from then on the aggregation pass adds to both in one
//! transaction. Seconds no allocation held (the nil allocation) are not rolled up.

use std::collections::BTreeMap;
use std::str::FromStr;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DbBackend};
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

use crate::helpers::{exact, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum UsageHours {
    Table,
    AllocationId,
    HourStart,
    TenantId,
    SkuId,
    ActiveSeconds,
    MemoryGibSeconds,
    EnergyKwh,
    SampledSeconds,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        manager
            .create_table(
                Table::create()
                    .table(UsageHours::Table)
                    .col(uuid(UsageHours::AllocationId))
                    .col(timestamp_with_time_zone(UsageHours::HourStart))
                    .col(uuid_null(UsageHours::TenantId))
                    .col(uuid_null(UsageHours::SkuId))
                    .col(exact(backend, UsageHours::ActiveSeconds).not_null())
                    .col(exact(backend, UsageHours::MemoryGibSeconds).not_null())
                    .col(exact(backend, UsageHours::EnergyKwh).not_null())
                    .col(big_integer(UsageHours::SampledSeconds))
                    .primary_key(
                        Index::create()
                            .col(UsageHours::AllocationId)
                            .col(UsageHours::HourStart),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "idx_usage_hours_tenant",
                UsageHours::Table,
                vec![
                    UsageHours::TenantId.into_iden(),
                    UsageHours::HourStart.into_iden(),
                ],
                false,
            ))
            .await?;
        if backend == DbBackend::Postgres {
            fill_in_database(manager).await
        } else {
            fill_by_reading(manager).await
        }
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(UsageHours::Table).to_owned())
            .await
    }
}

/// PostgreSQL sums `NUMERIC` exactly: one statement.
async fn fill_in_database(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let hour = "date_trunc('hour', minute_start, 'UTC')";
    let sql = format!(
        "INSERT INTO usage_hours (allocation_id, hour_start, tenant_id, sku_id, \
         active_seconds, memory_gib_seconds, energy_kwh, sampled_seconds) \
         SELECT allocation_id, {hour}, tenant_id, sku_id, sum(active_seconds), \
         sum(memory_gib_seconds), sum(energy_kwh), sum(sampled_seconds) FROM usage_minutes \
         WHERE allocation_id <> '00000000-0000-0000-0000-000000000000' \
         GROUP BY allocation_id, {hour}, tenant_id, sku_id"
    );
    manager.get_connection().execute_unprepared(&sql).await?;
    Ok(())
}

/// One hour's sums, with the tenant and SKU of its allocation.
type Sums = (Option<uuid::Uuid>, Option<uuid::Uuid>, [Decimal; 3], i64);

/// Minute buckets read at a time: a year of an embedded deployment's minutes need not
/// fit in memory, only its hours.
const PAGE: u64 = 10_000;

/// SQLite keeps the decimals as text and has no exact arithmetic: sum them here, reading
/// the minutes a page at a time in id order.
async fn fill_by_reading(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let db = manager.get_connection();
    let mut hours: BTreeMap<(uuid::Uuid, DateTime<Utc>), Sums> = BTreeMap::new();
    let mut after: Option<uuid::Uuid> = None;
    loop {
        let mut page = Query::select();
        page.columns(
            [
                "id",
                "allocation_id",
                "minute_start",
                "tenant_id",
                "sku_id",
                "active_seconds",
                "memory_gib_seconds",
                "energy_kwh",
                "sampled_seconds",
            ]
            .map(Alias::new),
        )
        .from(Alias::new("usage_minutes"))
        .order_by(Alias::new("id"), Order::Asc)
        .limit(PAGE);
        if let Some(id) = after {
            page.and_where(Expr::col(Alias::new("id")).gt(id));
        }
        let rows = db.query_all_raw(DbBackend::Sqlite.build(&page)).await?;
        let Some(last) = rows.last() else {
            break;
        };
        after = Some(last.try_get("", "id")?);
        for row in &rows {
            add_minute(&mut hours, row)?;
        }
    }
    insert_hours(db, hours).await
}

/// Adds a minute bucket's row to its allocation's hour (none for the nil allocation).
fn add_minute(
    hours: &mut BTreeMap<(uuid::Uuid, DateTime<Utc>), Sums>,
    row: &sea_orm::QueryResult,
) -> Result<(), DbErr> {
    let allocation: uuid::Uuid = row.try_get("", "allocation_id")?;
    if allocation.is_nil() {
        return Ok(());
    }
    let minute: DateTime<Utc> = row.try_get("", "minute_start")?;
    let hour = minute.duration_trunc(TimeDelta::hours(1)).unwrap_or(minute);
    let sums = hours.entry((allocation, hour)).or_insert((
        row.try_get("", "tenant_id")?,
        row.try_get("", "sku_id")?,
        [Decimal::ZERO; 3],
        0,
    ));
    for (sum, column) in
        sums.2
            .iter_mut()
            .zip(["active_seconds", "memory_gib_seconds", "energy_kwh"])
    {
        let text: String = row.try_get("", column)?;
        *sum += Decimal::from_str(&text)
            .map_err(|e| DbErr::Custom(format!("usage_minutes.{column} {text:?}: {e}")))?;
    }
    sums.3 += row.try_get::<i64>("", "sampled_seconds")?;
    Ok(())
}

/// Writes the summed hours, 500 rows a statement.
async fn insert_hours(
    db: &SchemaManagerConnection<'_>,
    hours: BTreeMap<(uuid::Uuid, DateTime<Utc>), Sums>,
) -> Result<(), DbErr> {
    let rows: Vec<_> = hours.into_iter().collect();
    for chunk in rows.chunks(500) {
        let mut insert = Query::insert();
        insert.into_table(UsageHours::Table).columns([
            UsageHours::AllocationId,
            UsageHours::HourStart,
            UsageHours::TenantId,
            UsageHours::SkuId,
            UsageHours::ActiveSeconds,
            UsageHours::MemoryGibSeconds,
            UsageHours::EnergyKwh,
            UsageHours::SampledSeconds,
        ]);
        for ((allocation, hour), (tenant, sku, [active, memory, energy], sampled)) in chunk {
            insert.values_panic([
                (*allocation).into(),
                (*hour).into(),
                (*tenant).into(),
                (*sku).into(),
                active.to_string().into(),
                memory.to_string().into(),
                energy.to_string().into(),
                (*sampled).into(),
            ]);
        }
        db.execute_raw(DbBackend::Sqlite.build(&insert)).await?;
    }
    Ok(())
}
