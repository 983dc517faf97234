//! The ingest journal: a batch is acknowledged once its id and its payload are committed
//! (`ingest_pending`, in the transaction that records the id), and aggregated into
//! minute buckets later, many batches at a time; the journal row is deleted in the
//! transaction that writes the batch's buckets, so each batch is aggregated exactly once.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum IngestPending {
    Table,
    BatchId,
    NodeId,
    Payload,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(IngestPending::Table)
                    .col(uuid(IngestPending::BatchId).primary_key())
                    .col(uuid(IngestPending::NodeId))
                    .col(blob(IngestPending::Payload))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(IngestPending::Table).to_owned())
            .await
    }
}
