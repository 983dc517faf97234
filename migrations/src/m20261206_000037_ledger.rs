//! The money ledger: double-entry, append-only. `ledger_accounts`: one per kind, owner
//! (a tenant, a provider, or the nil id for the platform's own) and currency.
//! `ledger_transfers`: one business event that moved money, at most once per
//! (kind, reference). `ledger_entries`: its legs, in minor units of the currency (signed:
//! a debit is positive, a credit negative), summing to zero per transfer. Neither
//! transfers nor entries are ever updated or deleted: a correction is a new transfer.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

use crate::helpers::{fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum LedgerAccounts {
    Table,
    Id,
    Kind,
    OwnerId,
    Currency,
    CreatedAt,
}

#[derive(DeriveIden)]
enum LedgerTransfers {
    Table,
    Id,
    Kind,
    Reference,
    Currency,
    TenantId,
    Description,
    PostedAt,
}

#[derive(DeriveIden)]
enum LedgerEntries {
    Table,
    Id,
    TransferId,
    AccountId,
    Currency,
    Amount,
}

const TABLES: [&str; 2] = ["ledger_transfers", "ledger_entries"];

fn postgres_guard(table: &str) -> String {
    format!(
        "CREATE FUNCTION {table}_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the ledger is append-only: % on {table} refused', TG_OP;
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table}
    FOR EACH ROW EXECUTE FUNCTION {table}_append_only();"
    )
}

fn sqlite_guard(table: &str) -> [String; 2] {
    [
        format!(
            "CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table}
             BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END"
        ),
        format!(
            "CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table}
             BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END"
        ),
    ]
}

async fn guard(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let conn = manager.get_connection();
    for table in TABLES {
        match manager.get_database_backend() {
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

async fn create_accounts(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(LedgerAccounts::Table)
                .col(uuid(LedgerAccounts::Id).primary_key())
                .col(string(LedgerAccounts::Kind))
                .col(uuid(LedgerAccounts::OwnerId))
                .col(string_len(LedgerAccounts::Currency, 3))
                .col(timestamp_with_time_zone(LedgerAccounts::CreatedAt))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "ledger_accounts_identity",
            LedgerAccounts::Table,
            vec![
                LedgerAccounts::Kind.into_iden(),
                LedgerAccounts::OwnerId.into_iden(),
                LedgerAccounts::Currency.into_iden(),
            ],
            true,
        ))
        .await?;
    Ok(())
}

async fn create_transfers(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(LedgerTransfers::Table)
                .col(uuid(LedgerTransfers::Id).primary_key())
                .col(string(LedgerTransfers::Kind))
                .col(string(LedgerTransfers::Reference))
                .col(string_len(LedgerTransfers::Currency, 3))
                .col(uuid_null(LedgerTransfers::TenantId))
                .col(string(LedgerTransfers::Description))
                .col(timestamp_with_time_zone(LedgerTransfers::PostedAt))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "ledger_transfers_once",
            LedgerTransfers::Table,
            vec![
                LedgerTransfers::Kind.into_iden(),
                LedgerTransfers::Reference.into_iden(),
            ],
            true,
        ))
        .await?;
    manager
        .create_index(index(
            "ledger_transfers_tenant",
            LedgerTransfers::Table,
            vec![
                LedgerTransfers::TenantId.into_iden(),
                LedgerTransfers::Id.into_iden(),
            ],
            false,
        ))
        .await?;
    Ok(())
}

async fn create_entries(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(LedgerEntries::Table)
                .col(uuid(LedgerEntries::Id).primary_key())
                .col(uuid(LedgerEntries::TransferId))
                .col(uuid(LedgerEntries::AccountId))
                .col(string_len(LedgerEntries::Currency, 3))
                .col(big_integer(LedgerEntries::Amount))
                .foreign_key(&mut fk(
                    LedgerEntries::Table,
                    LedgerEntries::TransferId,
                    LedgerTransfers::Table,
                    LedgerTransfers::Id,
                ))
                .foreign_key(&mut fk(
                    LedgerEntries::Table,
                    LedgerEntries::AccountId,
                    LedgerAccounts::Table,
                    LedgerAccounts::Id,
                ))
                .to_owned(),
        )
        .await?;
    for (name, col) in [
        ("ledger_entries_transfer", LedgerEntries::TransferId),
        ("ledger_entries_account", LedgerEntries::AccountId),
    ] {
        manager
            .create_index(index(
                name,
                LedgerEntries::Table,
                vec![col.into_iden()],
                false,
            ))
            .await?;
    }
    Ok(())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        create_accounts(manager).await?;
        create_transfers(manager).await?;
        create_entries(manager).await?;
        guard(manager).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() == DbBackend::Postgres {
            for table in TABLES {
                manager
                    .get_connection()
                    .execute_unprepared(&format!("DROP FUNCTION {table}_append_only() CASCADE"))
                    .await?;
            }
        }
        for table in [
            LedgerEntries::Table.into_iden(),
            LedgerTransfers::Table.into_iden(),
            LedgerAccounts::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
