//! Credit notes on provider statements: a `credit_note` line names the credit note that
//! reduced what an allocation earned. Each (credit note, allocation) is on at most one
//! statement; earnings and reversals stay unique per (invoice, allocation, kind).

use sea_orm_migration::sea_orm::TransactionTrait;
use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProviderStatementLines {
    Table,
    CreditNoteId,
}

const ONCE_PER_INVOICE: &str = "CREATE UNIQUE INDEX provider_statement_lines_once \
     ON provider_statement_lines (invoice_id, allocation_id, kind) WHERE credit_note_id IS NULL";
const ONCE_PER_NOTE: &str = "CREATE UNIQUE INDEX provider_statement_lines_credit_note \
     ON provider_statement_lines (credit_note_id, allocation_id) WHERE credit_note_id IS NOT NULL";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ProviderStatementLines::Table)
                    .add_column(uuid_null(ProviderStatementLines::CreditNoteId))
                    .to_owned(),
            )
            .await?;
        // One connection: SQLite's pool would otherwise create the index on a connection
        // that has not seen it dropped.
        let txn = manager.get_connection().begin().await?;
        txn.execute_unprepared("DROP INDEX provider_statement_lines_once")
            .await?;
        txn.execute_unprepared(ONCE_PER_INVOICE).await?;
        txn.execute_unprepared(ONCE_PER_NOTE).await?;
        txn.commit().await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let txn = manager.get_connection().begin().await?;
        txn.execute_unprepared("DROP INDEX provider_statement_lines_credit_note")
            .await?;
        txn.execute_unprepared("DROP INDEX provider_statement_lines_once")
            .await?;
        txn.commit().await?;
        manager
            .alter_table(
                Table::alter()
                    .table(ProviderStatementLines::Table)
                    .drop_column(ProviderStatementLines::CreditNoteId)
                    .to_owned(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX provider_statement_lines_once \
             ON provider_statement_lines (invoice_id, allocation_id, kind)",
            )
            .await?;
        Ok(())
    }
}
