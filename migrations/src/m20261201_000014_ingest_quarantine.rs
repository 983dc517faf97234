//! Ingest's safety valves: a journaled batch that cannot be aggregated is moved aside into
//! `ingest_quarantine` (payload kept, with the reason) so the batches behind it go on; and
//! `ingest_anomalies` records every value ingest clamped or refused to count (an energy
//! reading above the board's power limit, a MIG instance claiming an allocation another
//! instance holds), so operators see a lying or broken agent instead of a log line.

use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::index;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum IngestQuarantine {
    Table,
    BatchId,
    NodeId,
    Payload,
    Reason,
    QuarantinedAt,
}

#[derive(DeriveIden)]
enum IngestAnomalies {
    Table,
    Id,
    BatchId,
    NodeId,
    Kind,
    Device,
    Detail,
    RecordedAt,
}

const ANOMALY_INDEX: &str = "idx_ingest_anomalies_recorded_at";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(IngestQuarantine::Table)
                    .col(uuid(IngestQuarantine::BatchId).primary_key())
                    .col(uuid(IngestQuarantine::NodeId))
                    .col(blob(IngestQuarantine::Payload))
                    .col(string(IngestQuarantine::Reason))
                    .col(timestamp_with_time_zone(IngestQuarantine::QuarantinedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(IngestAnomalies::Table)
                    .col(uuid(IngestAnomalies::Id).primary_key())
                    .col(uuid(IngestAnomalies::BatchId))
                    .col(uuid(IngestAnomalies::NodeId))
                    .col(string(IngestAnomalies::Kind))
                    .col(string(IngestAnomalies::Device))
                    .col(string(IngestAnomalies::Detail))
                    .col(timestamp_with_time_zone(IngestAnomalies::RecordedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                ANOMALY_INDEX,
                IngestAnomalies::Table,
                vec![IngestAnomalies::RecordedAt.into_iden()],
                false,
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(IngestAnomalies::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(IngestQuarantine::Table).to_owned())
            .await
    }
}
