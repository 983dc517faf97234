//! Node reliability: `node_coverage_hours` holds, per node and UTC hour, the seconds some
//! agent batch covered (each second once, counted as batches are aggregated), and
//! `node_reliability` the figures a periodic pass derives from it, from GPU health and
//! from faults over the last 30 days, so the catalog and the scheduler read one row per
//! node.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum NodeCoverageHours {
    Table,
    NodeId,
    HourStart,
    Seconds,
}

#[derive(DeriveIden)]
enum NodeReliability {
    Table,
    NodeId,
    WindowStart,
    WindowEnd,
    CoveredSeconds,
    GpuCount,
    FailedGpuSeconds,
    Faults,
    Degradations,
    PreemptionsByFault,
    ScoreBp,
    ComputedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(NodeCoverageHours::Table)
                    .col(uuid(NodeCoverageHours::NodeId))
                    .col(timestamp_with_time_zone(NodeCoverageHours::HourStart))
                    .col(big_integer(NodeCoverageHours::Seconds))
                    .primary_key(
                        Index::create()
                            .col(NodeCoverageHours::NodeId)
                            .col(NodeCoverageHours::HourStart),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(NodeReliability::Table)
                    .col(uuid(NodeReliability::NodeId).primary_key())
                    .col(timestamp_with_time_zone(NodeReliability::WindowStart))
                    .col(timestamp_with_time_zone(NodeReliability::WindowEnd))
                    .col(big_integer(NodeReliability::CoveredSeconds))
                    .col(integer(NodeReliability::GpuCount))
                    .col(big_integer(NodeReliability::FailedGpuSeconds))
                    .col(integer(NodeReliability::Faults))
                    .col(integer(NodeReliability::Degradations))
                    .col(integer(NodeReliability::PreemptionsByFault))
                    .col(integer_null(NodeReliability::ScoreBp))
                    .col(timestamp_with_time_zone(NodeReliability::ComputedAt))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(NodeReliability::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(NodeCoverageHours::Table).to_owned())
            .await
    }
}
