//! Prepaid top-ups paid through Stripe, Stripe-hosted invoices (`send_invoice` collection
//! with its payment terms and the hosted page's address), and what the payment outbox
//! needs to retry refused charges on a schedule and to recognise a call whose answer was
//! lost (`sent_at`).

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
enum TopUps {
    Table,
    Id,
    TenantId,
    Amount,
    Currency,
    Status,
    ClientKey,
    StripePaymentIntent,
    CreditGrantId,
    Failure,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum PaymentOutbox {
    Table,
    TopUpId,
    SentAt,
    Refusals,
    RetryStep,
}

#[derive(DeriveIden)]
enum PaymentAccounts {
    Table,
    DaysUntilDue,
}

#[derive(DeriveIden)]
enum Invoices {
    Table,
    PaymentUrl,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        create_top_ups(manager).await?;
        add_payment_columns(manager).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let columns = [
            (
                PaymentOutbox::Table.into_iden(),
                PaymentOutbox::TopUpId.into_iden(),
            ),
            (
                PaymentOutbox::Table.into_iden(),
                PaymentOutbox::SentAt.into_iden(),
            ),
            (
                PaymentOutbox::Table.into_iden(),
                PaymentOutbox::Refusals.into_iden(),
            ),
            (
                PaymentOutbox::Table.into_iden(),
                PaymentOutbox::RetryStep.into_iden(),
            ),
            (
                PaymentAccounts::Table.into_iden(),
                PaymentAccounts::DaysUntilDue.into_iden(),
            ),
            (
                Invoices::Table.into_iden(),
                Invoices::PaymentUrl.into_iden(),
            ),
        ];
        for (table, column) in columns {
            manager
                .alter_table(Table::alter().table(table).drop_column(column).to_owned())
                .await?;
        }
        manager
            .drop_table(Table::drop().table(TopUps::Table).to_owned())
            .await
    }
}

async fn create_top_ups(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(TopUps::Table)
                .col(pk_uuid(TopUps::Id))
                .col(uuid(TopUps::TenantId))
                .col(string(TopUps::Amount))
                .col(string(TopUps::Currency))
                .col(string(TopUps::Status))
                .col(string_null(TopUps::ClientKey))
                .col(string_null(TopUps::StripePaymentIntent))
                .col(uuid_null(TopUps::CreditGrantId))
                .col(string_null(TopUps::Failure))
                .col(timestamp_with_time_zone(TopUps::CreatedAt))
                .col(timestamp_with_time_zone(TopUps::UpdatedAt))
                .foreign_key(&mut fk(
                    TopUps::Table,
                    TopUps::TenantId,
                    Tenants::Table,
                    Tenants::Id,
                ))
                .to_owned(),
        )
        .await?;
    // A retried `startTopUp` with the same key finds the first one.
    manager
        .create_index(index(
            "idx_top_ups_client_key",
            TopUps::Table,
            vec![TopUps::TenantId.into_iden(), TopUps::ClientKey.into_iden()],
            true,
        ))
        .await?;
    Ok(())
}

async fn add_payment_columns(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    // SQLite takes one column per ALTER TABLE.
    let columns = [
        (
            PaymentOutbox::Table.into_iden(),
            uuid_null(PaymentOutbox::TopUpId),
        ),
        (
            PaymentOutbox::Table.into_iden(),
            timestamp_with_time_zone_null(PaymentOutbox::SentAt),
        ),
        (
            PaymentOutbox::Table.into_iden(),
            integer(PaymentOutbox::Refusals).default(0).to_owned(),
        ),
        (
            PaymentOutbox::Table.into_iden(),
            integer(PaymentOutbox::RetryStep).default(0).to_owned(),
        ),
        (
            PaymentAccounts::Table.into_iden(),
            integer(PaymentAccounts::DaysUntilDue)
                .default(30)
                .to_owned(),
        ),
        (
            Invoices::Table.into_iden(),
            string_null(Invoices::PaymentUrl),
        ),
    ];
    for (table, mut column) in columns {
        manager
            .alter_table(
                Table::alter()
                    .table(table)
                    .add_column(&mut column)
                    .to_owned(),
            )
            .await?;
    }
    Ok(())
}
