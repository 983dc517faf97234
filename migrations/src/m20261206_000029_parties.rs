//! The parties of an invoice: `billing_profiles` (a tenant's legal identity as buyer: name,
//! address, country, VAT id with how far it was checked, PO number, billing email) and
//! `invoices.parties`, the seller and buyer as they were when the invoice was finalized,
//! frozen with the rest of it (the invoice triggers are made again to cover it).

use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::{INVOICE_FROZEN_028, freeze_invoices};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum BillingProfiles {
    Table,
    TenantId,
    LegalName,
    AddressLines,
    PostalCode,
    City,
    Country,
    VatId,
    VatIdStatus,
    PoNumber,
    BillingEmail,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Invoices {
    Table,
    Parties,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(BillingProfiles::Table)
                    .col(uuid(BillingProfiles::TenantId).primary_key())
                    .col(string(BillingProfiles::LegalName))
                    .col(json(BillingProfiles::AddressLines))
                    .col(string(BillingProfiles::PostalCode))
                    .col(string(BillingProfiles::City))
                    .col(string_len(BillingProfiles::Country, 2))
                    .col(string_null(BillingProfiles::VatId))
                    .col(string_null(BillingProfiles::VatIdStatus))
                    .col(string_null(BillingProfiles::PoNumber))
                    .col(string_null(BillingProfiles::BillingEmail))
                    .col(timestamp_with_time_zone(BillingProfiles::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Invoices::Table)
                    .add_column(json_null(Invoices::Parties))
                    .to_owned(),
            )
            .await?;
        freeze_invoices(manager, INVOICE_FROZEN_028, &["rating", "parties"]).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        freeze_invoices(manager, INVOICE_FROZEN_028, &["rating"]).await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Invoices::Table)
                    .drop_column(Invoices::Parties)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(BillingProfiles::Table).to_owned())
            .await
    }
}
