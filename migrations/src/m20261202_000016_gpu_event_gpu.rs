//! The physical GPU of each XID/ECC event: a MIG instance reports under its own uuid, so
//! without this a GPU's history could not show what its instances reported. Events stored
//! before have it only where the device was a whole GPU.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum GpuEvents {
    Table,
    GpuUuid,
    DeviceUuid,
    At,
}

const INDEX: &str = "idx_gpu_events_gpu_at";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(GpuEvents::Table)
                    .add_column(string_null(GpuEvents::GpuUuid))
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::update()
                    .table(GpuEvents::Table)
                    .value(GpuEvents::GpuUuid, Expr::col(GpuEvents::DeviceUuid))
                    .and_where(Expr::col(GpuEvents::DeviceUuid).not_like("MIG-%"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(INDEX)
                    .table(GpuEvents::Table)
                    .col(GpuEvents::GpuUuid)
                    .col(GpuEvents::At)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(Index::drop().name(INDEX).table(GpuEvents::Table).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(GpuEvents::Table)
                    .drop_column(GpuEvents::GpuUuid)
                    .to_owned(),
            )
            .await
    }
}
