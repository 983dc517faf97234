//! Provider statements: per provider and month, what its hardware earned on the tenants'
//! invoices, with a line per (invoice, allocation) earned or reversed. A line's
//! (invoice, allocation, kind) is unique, so nothing is earned twice; statements and
//! their lines are never changed or deleted (triggers on both databases).

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

use crate::helpers::{exact, fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProviderStatements {
    Table,
    Id,
    ProviderId,
    Sequence,
    Number,
    PeriodStart,
    PeriodEnd,
    Currency,
    Gross,
    Fees,
    SlaChargebacks,
    Net,
    Lines,
    ClosedAt,
}

#[derive(DeriveIden)]
enum ProviderStatementLines {
    Table,
    Id,
    StatementId,
    ProviderId,
    Position,
    Kind,
    InvoiceId,
    AllocationId,
    NodeId,
    SkuName,
    Form,
    Region,
    AgreementVersion,
    UnitHours,
    Revenue,
    RevenueCurrency,
    SlaCredit,
    Gross,
    Fee,
    SlaChargeback,
    Net,
    Note,
}

#[derive(DeriveIden)]
enum Providers {
    Table,
    Id,
}

const TABLES: [&str; 2] = ["provider_statements", "provider_statement_lines"];

fn postgres_guard(table: &str) -> String {
    format!(
        "CREATE FUNCTION {table}_frozen() RETURNS trigger AS $$
         BEGIN RAISE EXCEPTION 'a closed provider statement is never changed'; END
         $$ LANGUAGE plpgsql;
         CREATE TRIGGER {table}_frozen BEFORE UPDATE OR DELETE ON {table}
             FOR EACH ROW EXECUTE FUNCTION {table}_frozen();"
    )
}

fn sqlite_guard(table: &str) -> [String; 2] {
    ["UPDATE", "DELETE"].map(|op| {
        format!(
            "CREATE TRIGGER {table}_no_{} BEFORE {op} ON {table}
             BEGIN SELECT RAISE(ABORT, 'a closed provider statement is never changed'); END",
            op.to_lowercase()
        )
    })
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        create_statements(manager).await?;
        create_lines(manager).await?;
        guard(manager).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() == DbBackend::Postgres {
            for table in TABLES {
                manager
                    .get_connection()
                    .execute_unprepared(&format!("DROP FUNCTION {table}_frozen() CASCADE"))
                    .await?;
            }
        }
        manager
            .drop_table(
                Table::drop()
                    .table(ProviderStatementLines::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(ProviderStatements::Table).to_owned())
            .await
    }
}

fn money(manager: &SchemaManager, col: DynIden) -> ColumnDef {
    exact(manager.get_database_backend(), col)
        .not_null()
        .to_owned()
}

async fn create_statements(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let money = |col: DynIden| money(manager, col);
    manager
        .create_table(
            Table::create()
                .table(ProviderStatements::Table)
                .col(uuid(ProviderStatements::Id).primary_key())
                .col(uuid(ProviderStatements::ProviderId))
                .col(integer(ProviderStatements::Sequence))
                .col(string(ProviderStatements::Number).unique_key())
                .col(timestamp_with_time_zone(ProviderStatements::PeriodStart))
                .col(timestamp_with_time_zone(ProviderStatements::PeriodEnd))
                .col(string_len(ProviderStatements::Currency, 3))
                .col(money(ProviderStatements::Gross.into_iden()))
                .col(money(ProviderStatements::Fees.into_iden()))
                .col(money(ProviderStatements::SlaChargebacks.into_iden()))
                .col(money(ProviderStatements::Net.into_iden()))
                .col(integer(ProviderStatements::Lines))
                .col(timestamp_with_time_zone(ProviderStatements::ClosedAt))
                .foreign_key(&mut fk(
                    ProviderStatements::Table,
                    ProviderStatements::ProviderId,
                    Providers::Table,
                    Providers::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "provider_statements_month",
            ProviderStatements::Table,
            vec![
                ProviderStatements::ProviderId.into_iden(),
                ProviderStatements::PeriodStart.into_iden(),
            ],
            true,
        ))
        .await
}

async fn create_lines(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let money = |col: DynIden| money(manager, col);
    manager
        .create_table(
            Table::create()
                .table(ProviderStatementLines::Table)
                .col(uuid(ProviderStatementLines::Id).primary_key())
                .col(uuid(ProviderStatementLines::StatementId))
                .col(uuid(ProviderStatementLines::ProviderId))
                .col(integer(ProviderStatementLines::Position))
                .col(string(ProviderStatementLines::Kind))
                .col(uuid(ProviderStatementLines::InvoiceId))
                .col(uuid(ProviderStatementLines::AllocationId))
                .col(uuid(ProviderStatementLines::NodeId))
                .col(string(ProviderStatementLines::SkuName))
                .col(string(ProviderStatementLines::Form))
                .col(string(ProviderStatementLines::Region))
                .col(integer(ProviderStatementLines::AgreementVersion))
                .col(money(ProviderStatementLines::UnitHours.into_iden()))
                .col(money(ProviderStatementLines::Revenue.into_iden()))
                .col(string_len(ProviderStatementLines::RevenueCurrency, 3))
                .col(money(ProviderStatementLines::SlaCredit.into_iden()))
                .col(money(ProviderStatementLines::Gross.into_iden()))
                .col(money(ProviderStatementLines::Fee.into_iden()))
                .col(money(ProviderStatementLines::SlaChargeback.into_iden()))
                .col(money(ProviderStatementLines::Net.into_iden()))
                .col(string_null(ProviderStatementLines::Note))
                .foreign_key(&mut fk(
                    ProviderStatementLines::Table,
                    ProviderStatementLines::StatementId,
                    ProviderStatements::Table,
                    ProviderStatements::Id,
                ))
                .to_owned(),
        )
        .await?;
    for (name, cols, unique) in [
        (
            "provider_statement_lines_once",
            vec![
                ProviderStatementLines::InvoiceId.into_iden(),
                ProviderStatementLines::AllocationId.into_iden(),
                ProviderStatementLines::Kind.into_iden(),
            ],
            true,
        ),
        (
            "provider_statement_lines_statement",
            vec![
                ProviderStatementLines::StatementId.into_iden(),
                ProviderStatementLines::Position.into_iden(),
            ],
            true,
        ),
    ] {
        manager
            .create_index(index(name, ProviderStatementLines::Table, cols, unique))
            .await?;
    }
    Ok(())
}

/// Statements and their lines are never changed or deleted.
async fn guard(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let backend = manager.get_database_backend();
    let conn = manager.get_connection();
    for table in TABLES {
        match backend {
            DbBackend::Postgres => {
                conn.execute_unprepared(&postgres_guard(table)).await?;
            }
            _ => {
                for sql in sqlite_guard(table) {
                    conn.execute_unprepared(&sql).await?;
                }
            }
        }
    }
    Ok(())
}
