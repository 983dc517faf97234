//! A provider may require a second factor of every one of its users
//! (`providers.second_factor_required`): until a user has one, its sessions may only set
//! one up. Off for every provider to begin with, as for tenants (migration 051).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Providers {
    Table,
    SecondFactorRequired,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Providers::Table)
                    .add_column(boolean(Providers::SecondFactorRequired).default(false))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Providers::Table)
                    .drop_column(Providers::SecondFactorRequired)
                    .to_owned(),
            )
            .await
    }
}
