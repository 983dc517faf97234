//! Dunning: when a tenant was suspended for failed payments (so that paying resumes it,
//! and only a suspension dunning made).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum PaymentAccounts {
    Table,
    DunningSuspendedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(PaymentAccounts::Table)
                    .add_column(timestamp_with_time_zone_null(
                        PaymentAccounts::DunningSuspendedAt,
                    ))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(PaymentAccounts::Table)
                    .drop_column(PaymentAccounts::DunningSuspendedAt)
                    .to_owned(),
            )
            .await
    }
}
