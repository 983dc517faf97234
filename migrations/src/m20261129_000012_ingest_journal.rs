//! The ingest journal: a batch is acknowledged once its id and its payload are committed
//! (`ingest_pending`, in the transaction that records the id), and aggregated into
//! minute buckets later, many batches at a time; the journal row is deleted in the
//! transaction that writes the batch's buckets, so each batch is aggregated exactly once.
//! Aggregation finds the allocations of a pass's GPUs by GPU: `allocation_gpus` gets an
//! index on `gpu_id` (its key leads with the allocation).

use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::index;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum IngestPending {
    Table,
    BatchId,
    NodeId,
    Payload,
}

#[derive(DeriveIden)]
enum AllocationGpus {
    Table,
    GpuId,
}

const GPU_INDEX: &str = "idx_allocation_gpus_gpu";

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
            .await?;
        manager
            .create_index(index(
                GPU_INDEX,
                AllocationGpus::Table,
                vec![AllocationGpus::GpuId.into_iden()],
                false,
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name(GPU_INDEX)
                    .table(AllocationGpus::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(IngestPending::Table).to_owned())
            .await
    }
}
