//! A tenant may require a second factor of every portal user
//! (`tenants.second_factor_required`): until a user has one, its sessions may only set
//! one up. Off for every tenant to begin with.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    SecondFactorRequired,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Tenants::Table)
                    .add_column(boolean(Tenants::SecondFactorRequired).default(false))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Tenants::Table)
                    .drop_column(Tenants::SecondFactorRequired)
                    .to_owned(),
            )
            .await
    }
}
