//! Payment terms: each tenant's net terms (`tenants.net_terms_days`, 30 by default), each
//! finalized invoice's due date (`invoices.due_at`, frozen with the rest of it; invoices
//! finalized before get their finalization plus 30 days), and `invoice_reminders`: which
//! reminder of an owed invoice (due soon, overdue, 7/14/30 days overdue) went out, once
//! each. The invoice triggers of migration 004 are made again to freeze `due_at` too.

use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};
use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::{INVOICE_FROZEN_028, freeze_invoices};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    NetTermsDays,
}

#[derive(DeriveIden)]
enum Invoices {
    Table,
    DueAt,
}

#[derive(DeriveIden)]
enum InvoiceReminders {
    Table,
    InvoiceId,
    Kind,
    SentAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Tenants::Table)
                    .add_column(integer(Tenants::NetTermsDays).default(30))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Invoices::Table)
                    .add_column(timestamp_with_time_zone_null(Invoices::DueAt))
                    .to_owned(),
            )
            .await?;
        let backfill = match manager.get_database_backend() {
            DbBackend::Postgres => {
                "UPDATE invoices SET due_at = finalized_at + INTERVAL '30 days' WHERE finalized_at IS NOT NULL"
            }
            _ => {
                "UPDATE invoices SET due_at = strftime('%Y-%m-%dT%H:%M:%f', finalized_at, '+30 days') || '+00:00' WHERE finalized_at IS NOT NULL"
            }
        };
        manager
            .get_connection()
            .execute_unprepared(backfill)
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(InvoiceReminders::Table)
                    .col(uuid(InvoiceReminders::InvoiceId))
                    .col(string(InvoiceReminders::Kind))
                    .col(timestamp_with_time_zone(InvoiceReminders::SentAt))
                    .primary_key(
                        Index::create()
                            .name("pk_invoice_reminders")
                            .col(InvoiceReminders::InvoiceId)
                            .col(InvoiceReminders::Kind),
                    )
                    .to_owned(),
            )
            .await?;
        freeze_invoices(manager, INVOICE_FROZEN_028, &["rating"]).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let before = &INVOICE_FROZEN_028[..INVOICE_FROZEN_028.len() - 1];
        freeze_invoices(manager, before, &["rating"]).await?;
        manager
            .drop_table(Table::drop().table(InvoiceReminders::Table).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Invoices::Table)
                    .drop_column(Invoices::DueAt)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Tenants::Table)
                    .drop_column(Tenants::NetTermsDays)
                    .to_owned(),
            )
            .await
    }
}
