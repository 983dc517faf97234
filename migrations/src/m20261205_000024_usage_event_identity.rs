//! A usage event is stored under its identity: `(tenant_id, source, event_id)` becomes the
//! primary key of `usage_events`, in place of a surrogate id and a second unique index,
//! and the row no longer checks its tenant against `tenants` (events are admitted only
//! for a tenant read in the same transaction, and tenants are never deleted). Each event
//! then costs one index entry and no foreign-key check. The rows are copied as they are.

use sea_orm_migration::sea_orm::DbBackend;
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
enum UsageEvents {
    Table,
    Id,
    TenantId,
    Source,
    EventId,
    EventType,
    Time,
    Data,
    Meters,
    ReceivedAt,
}

#[derive(DeriveIden)]
enum UsageEventsNew {
    Table,
}

const COLUMNS: &str = "tenant_id, source, event_id, event_type, time, data, meters, received_at";

fn keyed_table() -> TableCreateStatement {
    let mut table = Table::create();
    table.table(UsageEventsNew::Table);
    payload(&mut table)
        .primary_key(
            Index::create()
                .name("pk_usage_events")
                .col(UsageEvents::TenantId)
                .col(UsageEvents::Source)
                .col(UsageEvents::EventId),
        )
        .to_owned()
}

/// The shape before: a surrogate id, the identity as a unique index, the tenant checked.
fn surrogate_table() -> TableCreateStatement {
    let mut table = Table::create();
    table
        .table(UsageEventsNew::Table)
        .col(uuid(UsageEvents::Id).primary_key());
    payload(&mut table)
        .foreign_key(&mut fk(
            UsageEventsNew::Table,
            UsageEvents::TenantId,
            Tenants::Table,
            Tenants::Id,
        ))
        .to_owned()
}

fn payload(table: &mut TableCreateStatement) -> &mut TableCreateStatement {
    table
        .col(uuid(UsageEvents::TenantId))
        .col(string(UsageEvents::Source))
        .col(string(UsageEvents::EventId))
        .col(string(UsageEvents::EventType))
        .col(timestamp_with_time_zone(UsageEvents::Time))
        .col(json(UsageEvents::Data))
        .col(integer(UsageEvents::Meters))
        .col(timestamp_with_time_zone(UsageEvents::ReceivedAt))
}

/// Creates `usage_events_new` as `table`, fills it from `usage_events` (`ids`: the new
/// table's surrogate id expression, when it has one), puts it in its place and runs
/// `after`: one script, on one connection (SQLite sees a table dropped on one connection of
/// the pool late on another) and, on PostgreSQL, in one transaction.
async fn replace(
    manager: &SchemaManager<'_>,
    table: TableCreateStatement,
    ids: Option<&str>,
    after: Option<IndexCreateStatement>,
) -> Result<(), DbErr> {
    let backend = manager.get_database_backend();
    let sql = |create: String, index: Option<String>| {
        let (into, from) = match ids {
            Some(expr) => (format!("id, {COLUMNS}"), format!("{expr}, {COLUMNS}")),
            None => (COLUMNS.to_owned(), COLUMNS.to_owned()),
        };
        let mut script = format!(
            "{create}; INSERT INTO usage_events_new ({into}) SELECT {from} FROM usage_events; \
             DROP TABLE usage_events; ALTER TABLE usage_events_new RENAME TO usage_events"
        );
        if let Some(index) = index {
            script.push_str("; ");
            script.push_str(&index);
        }
        script
    };
    let script = match backend {
        DbBackend::Postgres => sql(
            table.to_string(PostgresQueryBuilder),
            after.map(|i| i.to_string(PostgresQueryBuilder)),
        ),
        _ => sql(
            table.to_string(SqliteQueryBuilder),
            after.map(|i| i.to_string(SqliteQueryBuilder)),
        ),
    };
    manager
        .get_connection()
        .execute_unprepared(&script)
        .await
        .map(|_| ())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        replace(manager, keyed_table(), None, None).await
    }

    /// Back to surrogate ids, new ones: nothing referred to the old.
    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let ids = match manager.get_database_backend() {
            DbBackend::Postgres => "gen_random_uuid()",
            _ => "randomblob(16)",
        };
        let identity = index(
            "idx_usage_events_identity",
            UsageEvents::Table,
            vec![
                UsageEvents::TenantId.into_iden(),
                UsageEvents::Source.into_iden(),
                UsageEvents::EventId.into_iden(),
            ],
            true,
        );
        replace(manager, surrogate_table(), Some(ids), Some(identity)).await
    }
}
