//! Currencies on the supply side: the operator's exchange rates (`exchange_rates`, one
//! per pair and start, never changed), the rate a statement line converted its invoice's
//! amounts at, and why a provider's next statement is held (a rate missing).

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

use crate::helpers::{exact, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ExchangeRates {
    Table,
    Id,
    FromCurrency,
    ToCurrency,
    Rate,
    EffectiveFrom,
    Source,
    CreatedAt,
}

#[derive(DeriveIden)]
enum ProviderStatementLines {
    Table,
    ExchangeRate,
}

#[derive(DeriveIden)]
enum Providers {
    Table,
    StatementHeld,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        manager
            .create_table(
                Table::create()
                    .table(ExchangeRates::Table)
                    .col(uuid(ExchangeRates::Id).primary_key())
                    .col(string_len(ExchangeRates::FromCurrency, 3))
                    .col(string_len(ExchangeRates::ToCurrency, 3))
                    .col(exact(backend, ExchangeRates::Rate).not_null())
                    .col(timestamp_with_time_zone(ExchangeRates::EffectiveFrom))
                    .col(string(ExchangeRates::Source))
                    .col(timestamp_with_time_zone(ExchangeRates::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "idx_exchange_rates_pair_start",
                ExchangeRates::Table,
                vec![
                    ExchangeRates::FromCurrency.into_iden(),
                    ExchangeRates::ToCurrency.into_iden(),
                    ExchangeRates::EffectiveFrom.into_iden(),
                ],
                true,
            ))
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(ProviderStatementLines::Table)
                    .add_column(
                        exact(backend, ProviderStatementLines::ExchangeRate)
                            .null()
                            .to_owned(),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Providers::Table)
                    .add_column(text_null(Providers::StatementHeld))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Providers::Table)
                    .drop_column(Providers::StatementHeld)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(ProviderStatementLines::Table)
                    .drop_column(ProviderStatementLines::ExchangeRate)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(ExchangeRates::Table).to_owned())
            .await
    }
}
