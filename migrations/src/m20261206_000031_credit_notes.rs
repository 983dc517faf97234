//! Credit notes: `credit_notes` (numbered in their own series, what each credits and how
//! it was settled) and `credit_note_lines` (the invoice lines credited), both never
//! changed or deleted once written except a note's refund progress (a trigger on each
//! engine refuses the rest); `payment_outbox.credit_note_id` for refunds.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

use crate::helpers::{exact, fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum CreditNotes {
    Table,
    Id,
    TenantId,
    InvoiceId,
    Number,
    Currency,
    Reason,
    Form,
    Subtotal,
    Tax,
    Total,
    Taxes,
    Applied,
    ToBalance,
    Refunded,
    CreditGrantId,
    RefundState,
    IssuedAt,
}

#[derive(DeriveIden)]
enum CreditNoteLines {
    Table,
    Id,
    CreditNoteId,
    TenantId,
    InvoiceLineId,
    LineNumber,
    Description,
    Amount,
    TaxCategory,
    TaxPercent,
}

#[derive(DeriveIden)]
enum Invoices {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum PaymentOutbox {
    Table,
    CreditNoteId,
}

/// The triggers: every column of a note but `refund_state` is frozen; nothing is deleted.
fn frozen_sql(backend: DbBackend) -> Vec<String> {
    let note_columns = [
        "tenant_id",
        "invoice_id",
        "number",
        "currency",
        "reason",
        "form",
        "subtotal",
        "tax",
        "total",
        "applied",
        "to_balance",
        "refunded",
        "credit_grant_id",
        "issued_at",
    ];
    match backend {
        DbBackend::Postgres => vec![
            "CREATE OR REPLACE FUNCTION credit_notes_frozen() RETURNS trigger AS $$
BEGIN
  RAISE EXCEPTION 'credit notes and their lines are never changed or deleted' USING ERRCODE = 'check_violation';
END $$ LANGUAGE plpgsql"
                .to_owned(),
            format!(
                "CREATE TRIGGER credit_notes_frozen BEFORE UPDATE OF {} OR DELETE ON credit_notes FOR EACH ROW EXECUTE FUNCTION credit_notes_frozen()",
                note_columns.join(", ")
            ),
            "CREATE TRIGGER credit_note_lines_frozen BEFORE UPDATE OR DELETE ON credit_note_lines FOR EACH ROW EXECUTE FUNCTION credit_notes_frozen()".to_owned(),
        ],
        _ => vec![
            format!(
                "CREATE TRIGGER credit_notes_frozen BEFORE UPDATE OF {} ON credit_notes BEGIN SELECT RAISE(ABORT, 'credit notes are never changed'); END",
                note_columns.join(", ")
            ),
            "CREATE TRIGGER credit_notes_kept BEFORE DELETE ON credit_notes BEGIN SELECT RAISE(ABORT, 'credit notes are never deleted'); END".to_owned(),
            "CREATE TRIGGER credit_note_lines_frozen BEFORE UPDATE ON credit_note_lines BEGIN SELECT RAISE(ABORT, 'credit note lines are never changed'); END".to_owned(),
            "CREATE TRIGGER credit_note_lines_kept BEFORE DELETE ON credit_note_lines BEGIN SELECT RAISE(ABORT, 'credit note lines are never deleted'); END".to_owned(),
        ],
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        create_notes(manager).await?;
        create_lines(manager).await?;
        manager
            .alter_table(
                Table::alter()
                    .table(PaymentOutbox::Table)
                    .add_column(uuid_null(PaymentOutbox::CreditNoteId))
                    .to_owned(),
            )
            .await?;
        let db = manager.get_connection();
        for sql in frozen_sql(manager.get_database_backend()) {
            db.execute_unprepared(&sql).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(PaymentOutbox::Table)
                    .drop_column(PaymentOutbox::CreditNoteId)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(CreditNoteLines::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(CreditNotes::Table).to_owned())
            .await?;
        if manager.get_database_backend() == DbBackend::Postgres {
            manager
                .get_connection()
                .execute_unprepared("DROP FUNCTION credit_notes_frozen()")
                .await?;
        }
        Ok(())
    }
}

async fn create_notes(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let backend = manager.get_database_backend();
    let money = |col| exact(backend, col).not_null().to_owned();
    manager
        .create_table(
            Table::create()
                .table(CreditNotes::Table)
                .col(uuid(CreditNotes::Id).primary_key())
                .col(uuid(CreditNotes::TenantId))
                .col(uuid(CreditNotes::InvoiceId))
                .col(string(CreditNotes::Number))
                .col(string_len(CreditNotes::Currency, 3))
                .col(string(CreditNotes::Reason))
                .col(string(CreditNotes::Form))
                .col(money(CreditNotes::Subtotal))
                .col(money(CreditNotes::Tax))
                .col(money(CreditNotes::Total))
                .col(json(CreditNotes::Taxes))
                .col(money(CreditNotes::Applied))
                .col(money(CreditNotes::ToBalance))
                .col(money(CreditNotes::Refunded))
                .col(uuid_null(CreditNotes::CreditGrantId))
                .col(string_null(CreditNotes::RefundState))
                .col(timestamp_with_time_zone(CreditNotes::IssuedAt))
                .foreign_key(&mut fk(
                    CreditNotes::Table,
                    CreditNotes::InvoiceId,
                    Invoices::Table,
                    Invoices::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "credit_notes_number",
            CreditNotes::Table,
            vec![CreditNotes::Number.into_iden()],
            true,
        ))
        .await?;
    manager
        .create_index(index(
            "credit_notes_invoice",
            CreditNotes::Table,
            vec![
                CreditNotes::TenantId.into_iden(),
                CreditNotes::InvoiceId.into_iden(),
            ],
            false,
        ))
        .await
}

async fn create_lines(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let backend = manager.get_database_backend();
    manager
        .create_table(
            Table::create()
                .table(CreditNoteLines::Table)
                .col(uuid(CreditNoteLines::Id).primary_key())
                .col(uuid(CreditNoteLines::CreditNoteId))
                .col(uuid(CreditNoteLines::TenantId))
                .col(uuid(CreditNoteLines::InvoiceLineId))
                .col(integer(CreditNoteLines::LineNumber))
                .col(string(CreditNoteLines::Description))
                .col(exact(backend, CreditNoteLines::Amount).not_null())
                .col(string_null(CreditNoteLines::TaxCategory))
                .col(exact(backend, CreditNoteLines::TaxPercent).null())
                .foreign_key(&mut fk(
                    CreditNoteLines::Table,
                    CreditNoteLines::CreditNoteId,
                    CreditNotes::Table,
                    CreditNotes::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "credit_note_lines_note",
            CreditNoteLines::Table,
            vec![CreditNoteLines::CreditNoteId.into_iden()],
            false,
        ))
        .await
}
