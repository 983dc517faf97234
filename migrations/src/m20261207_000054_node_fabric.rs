//! The NVLink fabric a node's agent last reported for all of its GPUs
//! (`nodes.nvlink_fabric`: `<cluster uuid>/<clique>`), against which the other trays of a
//! multi-node NVLink domain are verified. Empty until its agent reports one.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Nodes {
    Table,
    NvlinkFabric,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Nodes::Table)
                    .add_column(string_len_null(Nodes::NvlinkFabric, 80))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Nodes::Table)
                    .drop_column(Nodes::NvlinkFabric)
                    .to_owned(),
            )
            .await
    }
}
