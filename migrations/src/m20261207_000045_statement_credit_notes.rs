//! Credit notes on provider statements: a `credit_note` line names the credit note that
//! reduced what an allocation earned. Each (credit note, allocation) is on at most one
//! statement; earnings and reversals stay unique per (invoice, allocation, kind).

use sea_orm_migration::sea_orm::{ConnectionTrait, TransactionTrait};
use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProviderStatementLines {
    Table,
    CreditNoteId,
}

const DROP_ONCE: &str = "DROP INDEX provider_statement_lines_once";
const ONCE: &str = "CREATE UNIQUE INDEX provider_statement_lines_once \
     ON provider_statement_lines (invoice_id, allocation_id, kind)";
const ONCE_PER_INVOICE: &str = "CREATE UNIQUE INDEX provider_statement_lines_once \
     ON provider_statement_lines (invoice_id, allocation_id, kind) WHERE credit_note_id IS NULL";
const ONCE_PER_NOTE: &str = "CREATE UNIQUE INDEX provider_statement_lines_credit_note \
     ON provider_statement_lines (credit_note_id, allocation_id) WHERE credit_note_id IS NOT NULL";

/// Runs the column change and the index statements on one connection, in one
/// transaction: SQLite's pool would otherwise create an index on a connection that has
/// not seen it dropped.
async fn change(
    manager: &SchemaManager<'_>,
    column: TableAlterStatement,
    before: &[&str],
    after: &[&str],
) -> Result<(), DbErr> {
    let txn = manager.get_connection().begin().await?;
    for sql in before {
        txn.execute_unprepared(sql).await?;
    }
    txn.execute(&column).await?;
    for sql in after {
        txn.execute_unprepared(sql).await?;
    }
    txn.commit().await
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let add = Table::alter()
            .table(ProviderStatementLines::Table)
            .add_column(uuid_null(ProviderStatementLines::CreditNoteId))
            .to_owned();
        change(
            manager,
            add,
            &[DROP_ONCE],
            &[ONCE_PER_INVOICE, ONCE_PER_NOTE],
        )
        .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let drop = Table::alter()
            .table(ProviderStatementLines::Table)
            .drop_column(ProviderStatementLines::CreditNoteId)
            .to_owned();
        let drops = [DROP_ONCE, "DROP INDEX provider_statement_lines_credit_note"];
        change(manager, drop, &drops, &[ONCE]).await
    }
}
