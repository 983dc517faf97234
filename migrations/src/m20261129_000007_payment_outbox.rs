//! Payment accounts (a tenant's Stripe customer and default payment method) and the
//! payment outbox (provider calls written with the change that needs them).

use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::{fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum PaymentAccounts {
    Table,
    TenantId,
    StripeCustomerId,
    DefaultPaymentMethod,
    CollectionMode,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum PaymentOutbox {
    Table,
    Id,
    Kind,
    TenantId,
    InvoiceId,
    IdempotencyKey,
    Status,
    Attempts,
    NextAttemptAt,
    LastError,
    StripeId,
    CreatedAt,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(PaymentAccounts::Table)
                    .col(uuid(PaymentAccounts::TenantId).primary_key())
                    .col(string_null(PaymentAccounts::StripeCustomerId))
                    .col(string_null(PaymentAccounts::DefaultPaymentMethod))
                    .col(string(PaymentAccounts::CollectionMode))
                    .col(timestamp_with_time_zone(PaymentAccounts::UpdatedAt))
                    .foreign_key(&mut fk(
                        PaymentAccounts::Table,
                        PaymentAccounts::TenantId,
                        Tenants::Table,
                        Tenants::Id,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(PaymentOutbox::Table)
                    .col(pk_uuid(PaymentOutbox::Id))
                    .col(string(PaymentOutbox::Kind))
                    .col(uuid(PaymentOutbox::TenantId))
                    .col(uuid_null(PaymentOutbox::InvoiceId))
                    .col(string(PaymentOutbox::IdempotencyKey).unique_key())
                    .col(string(PaymentOutbox::Status))
                    .col(integer(PaymentOutbox::Attempts))
                    .col(timestamp_with_time_zone(PaymentOutbox::NextAttemptAt))
                    .col(string_null(PaymentOutbox::LastError))
                    .col(string_null(PaymentOutbox::StripeId))
                    .col(timestamp_with_time_zone(PaymentOutbox::CreatedAt))
                    .col(timestamp_with_time_zone(PaymentOutbox::UpdatedAt))
                    .foreign_key(&mut fk(
                        PaymentOutbox::Table,
                        PaymentOutbox::TenantId,
                        Tenants::Table,
                        Tenants::Id,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "idx_payment_outbox_due",
                PaymentOutbox::Table,
                vec![
                    PaymentOutbox::Status.into_iden(),
                    PaymentOutbox::NextAttemptAt.into_iden(),
                ],
                false,
            ))
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            PaymentOutbox::Table.into_iden(),
            PaymentAccounts::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
