//! Metering: batch ids kept for ever (exactly-once ingest), per-device second coverage
//! (a device's usage counts at most once per second), energy counter cursors, per-minute
//! usage buckets per allocation and label, GPU health events and health intervals.

use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::index;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum IngestBatches {
    Table,
    Id,
    NodeId,
    AgentId,
    BootId,
    Seq,
    WindowStart,
    WindowEnd,
    ReceivedAt,
    Devices,
    OverlapSeconds,
}

#[derive(DeriveIden)]
enum DeviceCoverage {
    Table,
    DeviceUuid,
    MinuteStart,
    Mask,
}

#[derive(DeriveIden)]
enum DeviceEnergy {
    Table,
    DeviceUuid,
    LastEnergyMj,
    LastAt,
}

#[derive(DeriveIden)]
enum UsageMinutes {
    Table,
    Id,
    MinuteStart,
    DeviceUuid,
    AllocationId,
    TenantId,
    SkuId,
    Label,
    ActiveSeconds,
    MemoryGibSeconds,
    EnergyKwh,
    SampledSeconds,
}

#[derive(DeriveIden)]
enum GpuEvents {
    Table,
    Id,
    NodeId,
    DeviceUuid,
    Kind,
    Code,
    At,
    ReceivedAt,
}

#[derive(DeriveIden)]
enum GpuHealthIntervals {
    Table,
    Id,
    GpuId,
    Health,
    StartedAt,
    EndedAt,
    Cause,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        create_ingest_batches(manager).await?;
        create_device_coverage(manager).await?;
        create_device_energy(manager).await?;
        create_usage_minutes(manager).await?;
        create_gpu_events(manager).await?;
        create_gpu_health_intervals(manager).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            GpuHealthIntervals::Table.into_iden(),
            GpuEvents::Table.into_iden(),
            UsageMinutes::Table.into_iden(),
            DeviceEnergy::Table.into_iden(),
            DeviceCoverage::Table.into_iden(),
            IngestBatches::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}

async fn create_ingest_batches(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(IngestBatches::Table)
                .col(pk_uuid(IngestBatches::Id))
                .col(uuid(IngestBatches::NodeId))
                .col(string(IngestBatches::AgentId))
                .col(uuid(IngestBatches::BootId))
                .col(big_integer(IngestBatches::Seq))
                .col(timestamp_with_time_zone(IngestBatches::WindowStart))
                .col(timestamp_with_time_zone(IngestBatches::WindowEnd))
                .col(timestamp_with_time_zone(IngestBatches::ReceivedAt))
                .col(integer(IngestBatches::Devices))
                .col(big_integer(IngestBatches::OverlapSeconds))
                .to_owned(),
        )
        .await?;
    // The batch identity, for ever: a unique constraint, not a time window.
    manager
        .create_index(index(
            "idx_ingest_batches_identity",
            IngestBatches::Table,
            vec![
                IngestBatches::AgentId.into_iden(),
                IngestBatches::BootId.into_iden(),
                IngestBatches::Seq.into_iden(),
            ],
            true,
        ))
        .await?;
    Ok(())
}

async fn create_device_coverage(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(DeviceCoverage::Table)
                .col(string(DeviceCoverage::DeviceUuid))
                .col(timestamp_with_time_zone(DeviceCoverage::MinuteStart))
                .col(big_integer(DeviceCoverage::Mask))
                .primary_key(
                    Index::create()
                        .col(DeviceCoverage::DeviceUuid)
                        .col(DeviceCoverage::MinuteStart),
                )
                .to_owned(),
        )
        .await?;
    Ok(())
}

async fn create_device_energy(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(DeviceEnergy::Table)
                .col(string(DeviceEnergy::DeviceUuid).primary_key())
                .col(big_integer(DeviceEnergy::LastEnergyMj))
                .col(timestamp_with_time_zone(DeviceEnergy::LastAt))
                .to_owned(),
        )
        .await?;
    Ok(())
}

async fn create_usage_minutes(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(UsageMinutes::Table)
                .col(pk_uuid(UsageMinutes::Id))
                .col(timestamp_with_time_zone(UsageMinutes::MinuteStart))
                .col(string(UsageMinutes::DeviceUuid))
                .col(uuid(UsageMinutes::AllocationId))
                .col(uuid_null(UsageMinutes::TenantId))
                .col(uuid_null(UsageMinutes::SkuId))
                .col(string(UsageMinutes::Label))
                .col(string(UsageMinutes::ActiveSeconds))
                .col(string(UsageMinutes::MemoryGibSeconds))
                .col(string(UsageMinutes::EnergyKwh))
                .col(big_integer(UsageMinutes::SampledSeconds))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_usage_minutes_bucket",
            UsageMinutes::Table,
            vec![
                UsageMinutes::AllocationId.into_iden(),
                UsageMinutes::MinuteStart.into_iden(),
                UsageMinutes::DeviceUuid.into_iden(),
                UsageMinutes::Label.into_iden(),
            ],
            true,
        ))
        .await?;
    manager
        .create_index(index(
            "idx_usage_minutes_tenant",
            UsageMinutes::Table,
            vec![
                UsageMinutes::TenantId.into_iden(),
                UsageMinutes::MinuteStart.into_iden(),
            ],
            false,
        ))
        .await?;
    Ok(())
}

async fn create_gpu_events(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(GpuEvents::Table)
                .col(pk_uuid(GpuEvents::Id))
                .col(uuid(GpuEvents::NodeId))
                .col(string(GpuEvents::DeviceUuid))
                .col(string(GpuEvents::Kind))
                .col(integer(GpuEvents::Code))
                .col(timestamp_with_time_zone(GpuEvents::At))
                .col(timestamp_with_time_zone(GpuEvents::ReceivedAt))
                .to_owned(),
        )
        .await?;
    Ok(())
}

async fn create_gpu_health_intervals(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(GpuHealthIntervals::Table)
                .col(pk_uuid(GpuHealthIntervals::Id))
                .col(uuid(GpuHealthIntervals::GpuId))
                .col(string(GpuHealthIntervals::Health))
                .col(timestamp_with_time_zone(GpuHealthIntervals::StartedAt))
                .col(timestamp_with_time_zone_null(GpuHealthIntervals::EndedAt))
                .col(string(GpuHealthIntervals::Cause))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_gpu_health_intervals_gpu",
            GpuHealthIntervals::Table,
            vec![
                GpuHealthIntervals::GpuId.into_iden(),
                GpuHealthIntervals::StartedAt.into_iden(),
            ],
            false,
        ))
        .await?;
    Ok(())
}
