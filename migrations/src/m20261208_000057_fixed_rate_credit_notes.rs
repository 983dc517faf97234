//! `provider_agreements.credit_notes_shared`: whether a fixed-rate provider gives back, of
//! what an allocation earned it, the part of the invoice a credit note gave back. The
//! versions from before keep what their hours earned, as they were agreed (`false`; the
//! column is only read for fixed rates: a revenue share always shares, being a share of
//! what tenants pay). Agreements are never updated, so nothing is back-filled.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProviderAgreements {
    Table,
    CreditNotesShared,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ProviderAgreements::Table)
                    .add_column(boolean(ProviderAgreements::CreditNotesShared).default(false))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ProviderAgreements::Table)
                    .drop_column(ProviderAgreements::CreditNotesShared)
                    .to_owned(),
            )
            .await
    }
}
