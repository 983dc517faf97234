//! Providers as parties the operator pays: their legal name, country, the currency they
//! are paid in and how (`manual`, `stripe_connect`, `sepa_credit_transfer`), with the
//! payout details that method needs (a connected account id, an IBAN and BIC). Rows from
//! before (named on node registration) keep their name as legal name, the operator's
//! default currency and `manual` payouts. `api_keys.provider_id`: the provider a
//! `provider` key acts for.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;
use sea_orm_migration::sea_orm::ConnectionTrait;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Providers {
    Table,
    LegalName,
    Country,
    Currency,
    PayoutMethod,
    PayoutAccount,
}

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    ProviderId,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let columns = [
            string(Providers::LegalName).default("").to_owned(),
            string(Providers::Country).default("").to_owned(),
            string_len(Providers::Currency, 3).default("USD").to_owned(),
            string(Providers::PayoutMethod).default("manual").to_owned(),
            string_null(Providers::PayoutAccount),
        ];
        // One column a statement: SQLite adds no more at once.
        for mut column in columns {
            manager
                .alter_table(
                    Table::alter()
                        .table(Providers::Table)
                        .add_column(&mut column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .get_connection()
            .execute_unprepared("UPDATE providers SET legal_name = name")
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(ApiKeys::Table)
                    .add_column(uuid_null(ApiKeys::ProviderId))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ApiKeys::Table)
                    .drop_column(ApiKeys::ProviderId)
                    .to_owned(),
            )
            .await?;
        for column in [
            Providers::LegalName,
            Providers::Country,
            Providers::Currency,
            Providers::PayoutMethod,
            Providers::PayoutAccount,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Providers::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
