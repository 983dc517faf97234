//! Payment terms: each tenant's net terms (`tenants.net_terms_days`, 30 by default), each
//! finalized invoice's due date (`invoices.due_at`, frozen with the rest of it; invoices
//! finalized before get their finalization plus 30 days), and `invoice_reminders`: which
//! reminder of an owed invoice (due soon, overdue, 7/14/30 days overdue) went out, once
//! each. The invoice triggers of migration 004 are made again to freeze `due_at` too.

use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};
use sea_orm_migration::{prelude::*, schema::*};

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

/// Columns of a finalized invoice that never change again (migration 004's, and `due_at`).
const FROZEN: &[&str] = &[
    "tenant_id",
    "number",
    "currency",
    "period_start",
    "period_end",
    "subtotal",
    "credits",
    "total",
    "plan",
    "finalized_at",
    "due_at",
];

fn postgres_function(frozen: &[&str]) -> String {
    let changed = frozen
        .iter()
        .map(|c| format!("NEW.{c} IS DISTINCT FROM OLD.{c}"))
        .chain(["NEW.rating::text IS DISTINCT FROM OLD.rating::text".to_owned()])
        .collect::<Vec<_>>()
        .join(" OR ");
    format!(
        "CREATE OR REPLACE FUNCTION invoices_frozen() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF OLD.status <> 'draft' THEN
      RAISE EXCEPTION 'invoice % is finalized and cannot be deleted', OLD.id USING ERRCODE = 'check_violation';
    END IF;
    RETURN OLD;
  END IF;
  IF OLD.status <> 'draft' AND ({changed}) THEN
    RAISE EXCEPTION 'invoice % is finalized and cannot be changed', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF OLD.status = 'void' AND NEW.status <> 'void' THEN
    RAISE EXCEPTION 'invoice % is void', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql"
    )
}

/// Replaces the update trigger, in one execution (one connection of the pool).
fn sqlite_update_trigger(frozen: &[&str]) -> String {
    let changed = frozen
        .iter()
        .chain(&["rating"])
        .map(|c| format!("NEW.{c} IS NOT OLD.{c}"))
        .collect::<Vec<_>>()
        .join(" OR ");
    format!(
        "DROP TRIGGER invoices_frozen_update; \
         CREATE TRIGGER invoices_frozen_update BEFORE UPDATE ON invoices \
         WHEN OLD.status <> 'draft' AND ({changed} OR (OLD.status = 'void' AND NEW.status <> 'void')) \
         BEGIN SELECT RAISE(ABORT, 'invoice is finalized and cannot be changed'); END"
    )
}

/// Makes the invoice triggers freeze `frozen`.
async fn freeze(manager: &SchemaManager<'_>, frozen: &[&str]) -> Result<(), DbErr> {
    let sql = match manager.get_database_backend() {
        DbBackend::Postgres => postgres_function(frozen),
        _ => sqlite_update_trigger(frozen),
    };
    manager.get_connection().execute_unprepared(&sql).await?;
    Ok(())
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
        freeze(manager, FROZEN).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        freeze(manager, &FROZEN[..FROZEN.len() - 1]).await?;
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
