//! Ordering: what each allocation holds on its node (CPU, memory, exclusivity) so the
//! scheduler's state can be rebuilt from the database, and the fleet epoch that
//! serializes placement across api replicas.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Allocations {
    Table,
    CpuMilli,
    MemoryMib,
    Exclusive,
    WholeNode,
}

#[derive(DeriveIden)]
enum FleetEpoch {
    Table,
    Id,
    Epoch,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // SQLite adds one column per ALTER TABLE.
        for column in [
            big_integer(Allocations::CpuMilli).default(0).to_owned(),
            big_integer(Allocations::MemoryMib).default(0).to_owned(),
            string_null(Allocations::Exclusive).to_owned(),
            boolean(Allocations::WholeNode).default(false).to_owned(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Allocations::Table)
                        .add_column(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .create_table(
                Table::create()
                    .table(FleetEpoch::Table)
                    .col(integer(FleetEpoch::Id).primary_key())
                    .col(big_integer(FleetEpoch::Epoch))
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::insert()
                    .into_table(FleetEpoch::Table)
                    .columns([FleetEpoch::Id, FleetEpoch::Epoch])
                    .values_panic([1.into(), 0.into()])
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(FleetEpoch::Table).to_owned())
            .await?;
        for column in [
            Allocations::CpuMilli,
            Allocations::MemoryMib,
            Allocations::Exclusive,
            Allocations::WholeNode,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Allocations::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
