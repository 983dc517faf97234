//! Taxes: `tax_rates` (the operator's rate per jurisdiction and validity), each invoice's
//! `tax` and its `taxes` per rate, and each line's category, rate and tax. Existing invoices
//! read as untaxed (`tax` 0, no `taxes`); the invoice triggers are made again to freeze the
//! new columns with the rest.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

use crate::helpers::{INVOICE_FROZEN_028, exact, freeze_invoices, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum TaxRates {
    Table,
    Id,
    Jurisdiction,
    Percent,
    ValidFrom,
    ValidUntil,
    Description,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Invoices {
    Table,
    Tax,
    Taxes,
}

#[derive(DeriveIden)]
enum InvoiceLines {
    Table,
    TaxCategory,
    TaxPercent,
    TaxAmount,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        manager
            .create_table(
                Table::create()
                    .table(TaxRates::Table)
                    .col(uuid(TaxRates::Id).primary_key())
                    .col(string_len(TaxRates::Jurisdiction, 2))
                    .col(exact(backend, TaxRates::Percent).not_null())
                    .col(timestamp_with_time_zone(TaxRates::ValidFrom))
                    .col(timestamp_with_time_zone_null(TaxRates::ValidUntil))
                    .col(string(TaxRates::Description))
                    .col(timestamp_with_time_zone(TaxRates::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "tax_rates_from",
                TaxRates::Table,
                vec![
                    TaxRates::Jurisdiction.into_iden(),
                    TaxRates::ValidFrom.into_iden(),
                ],
                true,
            ))
            .await?;
        // One column per statement: SQLite alters one at a time.
        let invoice_columns = [
            exact(backend, Invoices::Tax)
                .not_null()
                .default("0")
                .to_owned(),
            json_null(Invoices::Taxes),
        ];
        for col in invoice_columns {
            alter(manager, Invoices::Table, col).await?;
        }
        let line_columns = [
            string_null(InvoiceLines::TaxCategory),
            exact(backend, InvoiceLines::TaxPercent).null().to_owned(),
            exact(backend, InvoiceLines::TaxAmount).null().to_owned(),
        ];
        for col in line_columns {
            alter(manager, InvoiceLines::Table, col).await?;
        }
        let mut frozen = INVOICE_FROZEN_028.to_vec();
        frozen.push("tax");
        freeze_invoices(manager, &frozen, &["rating", "parties", "taxes"]).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        freeze_invoices(manager, INVOICE_FROZEN_028, &["rating", "parties"]).await?;
        for col in [
            InvoiceLines::TaxCategory,
            InvoiceLines::TaxPercent,
            InvoiceLines::TaxAmount,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(InvoiceLines::Table)
                        .drop_column(col)
                        .to_owned(),
                )
                .await?;
        }
        for col in [Invoices::Tax, Invoices::Taxes] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Invoices::Table)
                        .drop_column(col)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .drop_table(Table::drop().table(TaxRates::Table).to_owned())
            .await
    }
}

async fn alter(
    manager: &SchemaManager<'_>,
    table: impl IntoIden + 'static,
    mut col: ColumnDef,
) -> Result<(), DbErr> {
    manager
        .alter_table(Table::alter().table(table).add_column(&mut col).to_owned())
        .await
}
