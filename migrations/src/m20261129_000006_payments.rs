//! Payments: where collecting each invoice stands (`external` while payments are not
//! configured), failed attempts, and the Stripe webhook events already handled.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Invoices {
    Table,
    PaymentState,
    PaymentFailures,
}

#[derive(DeriveIden)]
enum StripeEvents {
    Table,
    Id,
    EventType,
    Created,
    InvoiceId,
    Outcome,
    ReceivedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // SQLite adds one column per ALTER TABLE.
        manager
            .alter_table(
                Table::alter()
                    .table(Invoices::Table)
                    .add_column(string(Invoices::PaymentState).default("external"))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Invoices::Table)
                    .add_column(integer(Invoices::PaymentFailures).default(0))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(StripeEvents::Table)
                    .col(string(StripeEvents::Id).primary_key())
                    .col(string(StripeEvents::EventType))
                    .col(big_integer(StripeEvents::Created))
                    .col(uuid_null(StripeEvents::InvoiceId))
                    .col(string(StripeEvents::Outcome))
                    .col(timestamp_with_time_zone(StripeEvents::ReceivedAt))
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(StripeEvents::Table).to_owned())
            .await?;
        for column in [Invoices::PaymentFailures, Invoices::PaymentState] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Invoices::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
