//! A device's counted seconds are read from the windows of the batches that carried it,
//! instead of a mask row per device and minute written by every batch: each batch now
//! records its devices, batches are found by node and window end, and
//! `device_coverage` goes. A batch recorded before this migration has no device list and
//! counts as covering every device of its node over its window (what its agent sent).

use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::index;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum IngestBatches {
    Table,
    NodeId,
    WindowEnd,
    DeviceUuids,
}

#[derive(DeriveIden)]
enum DeviceCoverage {
    Table,
    DeviceUuid,
    MinuteStart,
    Mask,
}

const NODE_WINDOW_INDEX: &str = "idx_ingest_batches_node_window_end";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(IngestBatches::Table)
                    .add_column(string_null(IngestBatches::DeviceUuids))
                    .to_owned(),
            )
            .await?;
        // The batches ending after a new window starts: none, for an agent shipping in order.
        manager
            .create_index(index(
                NODE_WINDOW_INDEX,
                IngestBatches::Table,
                vec![
                    IngestBatches::NodeId.into_iden(),
                    IngestBatches::WindowEnd.into_iden(),
                ],
                false,
            ))
            .await?;
        manager
            .drop_table(Table::drop().table(DeviceCoverage::Table).to_owned())
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
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
        manager
            .drop_index(
                Index::drop()
                    .name(NODE_WINDOW_INDEX)
                    .table(IngestBatches::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(IngestBatches::Table)
                    .drop_column(IngestBatches::DeviceUuids)
                    .to_owned(),
            )
            .await
    }
}
