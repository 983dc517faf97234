//! Meters and usage events. A metered SKU names its unit (`skus.unit_name`) and what
//! kind of service it sells (`skus.service_category`). `meters`
//! holds operator-defined meter versions; `usage_events` every usage event received,
//! unique per `(tenant_id, source, event_id)`; `meter_minutes` what each meter version
//! counted per tenant, minute and group (in up to 16 shards, so
//! concurrent batches rarely wait on one row); `meter_uniques` the distinct values of
//! `unique_count` meters; `meter_groups` the groups each meter has seen per tenant (what
//! bounds its cardinality). Quantities are `NUMERIC` on PostgreSQL and the decimal's text
//! on SQLite, as every exact column.

use sea_orm_migration::sea_orm::DbBackend;
use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::{fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Skus {
    Table,
    Id,
    UnitName,
    ServiceCategory,
}

#[derive(DeriveIden)]
enum Meters {
    Table,
    Id,
    Key,
    Version,
    EventType,
    ValuePath,
    Aggregation,
    GroupBy,
    MaxValue,
    SkuId,
    Description,
    CreatedAt,
}

#[derive(DeriveIden)]
enum UsageEvents {
    Table,
    Id,
    TenantId,
    Source,
    EventId,
    EventType,
    Time,
    Data,
    Meters,
    ReceivedAt,
}

#[derive(DeriveIden)]
enum MeterMinutes {
    Table,
    TenantId,
    MeterId,
    MinuteStart,
    GroupKey,
    Shard,
    Sum,
    Count,
    Max,
    LatestAt,
    Latest,
}

#[derive(DeriveIden)]
enum MeterUniques {
    Table,
    TenantId,
    MeterId,
    MinuteStart,
    GroupKey,
    Value,
}

#[derive(DeriveIden)]
enum MeterGroups {
    Table,
    TenantId,
    MeterId,
    GroupKey,
}

/// An exact-decimal column: `NUMERIC` on PostgreSQL, text on SQLite.
fn exact(backend: DbBackend, col: impl IntoIden) -> ColumnDef {
    let mut def = ColumnDef::new(col);
    if backend == DbBackend::Postgres {
        def.custom(Alias::new("numeric"));
    } else {
        def.text();
    }
    def.not_null().to_owned()
}

async fn meters(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let backend = manager.get_database_backend();
    manager
        .create_table(
            Table::create()
                .table(Meters::Table)
                .col(uuid(Meters::Id).primary_key())
                .col(string(Meters::Key))
                .col(integer(Meters::Version))
                .col(string(Meters::EventType))
                .col(string_null(Meters::ValuePath))
                .col(string(Meters::Aggregation))
                .col(json(Meters::GroupBy))
                .col(exact(backend, Meters::MaxValue))
                .col(uuid(Meters::SkuId))
                .col(string(Meters::Description))
                .col(timestamp_with_time_zone(Meters::CreatedAt))
                .foreign_key(&mut fk(Meters::Table, Meters::SkuId, Skus::Table, Skus::Id))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_meters_key_version",
            Meters::Table,
            vec![Meters::Key.into_iden(), Meters::Version.into_iden()],
            true,
        ))
        .await?;
    manager
        .create_index(index(
            "idx_meters_event_type",
            Meters::Table,
            vec![Meters::EventType.into_iden()],
            false,
        ))
        .await
}

async fn usage_events(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(UsageEvents::Table)
                .col(uuid(UsageEvents::Id).primary_key())
                .col(uuid(UsageEvents::TenantId))
                .col(string(UsageEvents::Source))
                .col(string(UsageEvents::EventId))
                .col(string(UsageEvents::EventType))
                .col(timestamp_with_time_zone(UsageEvents::Time))
                .col(json(UsageEvents::Data))
                .col(integer(UsageEvents::Meters))
                .col(timestamp_with_time_zone(UsageEvents::ReceivedAt))
                .foreign_key(&mut fk(
                    UsageEvents::Table,
                    UsageEvents::TenantId,
                    Tenants::Table,
                    Tenants::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_usage_events_identity",
            UsageEvents::Table,
            vec![
                UsageEvents::TenantId.into_iden(),
                UsageEvents::Source.into_iden(),
                UsageEvents::EventId.into_iden(),
            ],
            true,
        ))
        .await
}

async fn aggregates(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let backend = manager.get_database_backend();
    manager
        .create_table(
            Table::create()
                .table(MeterMinutes::Table)
                .col(uuid(MeterMinutes::TenantId))
                .col(uuid(MeterMinutes::MeterId))
                .col(timestamp_with_time_zone(MeterMinutes::MinuteStart))
                .col(string(MeterMinutes::GroupKey))
                .col(small_integer(MeterMinutes::Shard))
                .col(exact(backend, MeterMinutes::Sum))
                .col(big_integer(MeterMinutes::Count))
                .col(exact(backend, MeterMinutes::Max))
                .col(timestamp_with_time_zone(MeterMinutes::LatestAt))
                .col(exact(backend, MeterMinutes::Latest))
                .primary_key(
                    Index::create()
                        .col(MeterMinutes::TenantId)
                        .col(MeterMinutes::MeterId)
                        .col(MeterMinutes::MinuteStart)
                        .col(MeterMinutes::GroupKey)
                        .col(MeterMinutes::Shard),
                )
                .to_owned(),
        )
        .await?;
    manager
        .create_table(
            Table::create()
                .table(MeterUniques::Table)
                .col(uuid(MeterUniques::TenantId))
                .col(uuid(MeterUniques::MeterId))
                .col(timestamp_with_time_zone(MeterUniques::MinuteStart))
                .col(string(MeterUniques::GroupKey))
                .col(string(MeterUniques::Value))
                .primary_key(
                    Index::create()
                        .col(MeterUniques::TenantId)
                        .col(MeterUniques::MeterId)
                        .col(MeterUniques::MinuteStart)
                        .col(MeterUniques::GroupKey)
                        .col(MeterUniques::Value),
                )
                .to_owned(),
        )
        .await?;
    manager
        .create_table(
            Table::create()
                .table(MeterGroups::Table)
                .col(uuid(MeterGroups::TenantId))
                .col(uuid(MeterGroups::MeterId))
                .col(string(MeterGroups::GroupKey))
                .primary_key(
                    Index::create()
                        .col(MeterGroups::TenantId)
                        .col(MeterGroups::MeterId)
                        .col(MeterGroups::GroupKey),
                )
                .to_owned(),
        )
        .await
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Skus::Table)
                    .add_column(string_null(Skus::UnitName))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Skus::Table)
                    .add_column(string_null(Skus::ServiceCategory))
                    .to_owned(),
            )
            .await?;
        meters(manager).await?;
        usage_events(manager).await?;
        aggregates(manager).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            MeterGroups::Table.into_iden(),
            MeterUniques::Table.into_iden(),
            MeterMinutes::Table.into_iden(),
            UsageEvents::Table.into_iden(),
            Meters::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        for column in [Skus::UnitName, Skus::ServiceCategory] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Skus::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
