//! Provider payouts: what a closed statement left owed to a provider, at or above its
//! agreement's payout minimum, paid once — a Stripe Connect transfer or a line of a SEPA
//! credit-transfer file. One payout per statement at most (unique), so closing a
//! statement can queue its payout in the same transaction without ever queuing two.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

use crate::helpers::{exact, fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProviderPayouts {
    Table,
    Id,
    ProviderId,
    StatementId,
    Number,
    Currency,
    Amount,
    Method,
    Destination,
    Status,
    Reference,
    Attempts,
    NextAttemptAt,
    LastError,
    CreatedAt,
    SentAt,
}

#[derive(DeriveIden)]
enum Providers {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        manager
            .create_table(
                Table::create()
                    .table(ProviderPayouts::Table)
                    .col(uuid(ProviderPayouts::Id).primary_key())
                    .col(uuid(ProviderPayouts::ProviderId))
                    .col(uuid(ProviderPayouts::StatementId))
                    .col(string(ProviderPayouts::Number).unique_key())
                    .col(string_len(ProviderPayouts::Currency, 3))
                    .col(exact(backend, ProviderPayouts::Amount).not_null())
                    .col(string(ProviderPayouts::Method))
                    .col(string(ProviderPayouts::Destination))
                    .col(string(ProviderPayouts::Status))
                    .col(string_null(ProviderPayouts::Reference))
                    .col(integer(ProviderPayouts::Attempts))
                    .col(timestamp_with_time_zone(ProviderPayouts::NextAttemptAt))
                    .col(string_null(ProviderPayouts::LastError))
                    .col(timestamp_with_time_zone(ProviderPayouts::CreatedAt))
                    .col(timestamp_with_time_zone_null(ProviderPayouts::SentAt))
                    .foreign_key(&mut fk(
                        ProviderPayouts::Table,
                        ProviderPayouts::ProviderId,
                        Providers::Table,
                        Providers::Id,
                    ))
                    .to_owned(),
            )
            .await?;
        for (name, cols, unique) in [
            (
                "provider_payouts_statement",
                vec![ProviderPayouts::StatementId.into_iden()],
                true,
            ),
            (
                "provider_payouts_due",
                vec![
                    ProviderPayouts::Status.into_iden(),
                    ProviderPayouts::NextAttemptAt.into_iden(),
                ],
                false,
            ),
        ] {
            manager
                .create_index(index(name, ProviderPayouts::Table, cols, unique))
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(ProviderPayouts::Table).to_owned())
            .await
    }
}
