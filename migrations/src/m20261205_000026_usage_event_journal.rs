//! A usage event's identity and what it said are stored apart: `usage_event_keys` holds
//! `(tenant_id, key)` (the key hashes `source` and `id`), one narrow row an event, and
//! `usage_event_batches` holds what the events recorded in one transaction said, per
//! tenant, as one compressed body. `usage_events` (a wide row an event) goes; its rows are
//! moved, an original batch (tenant and receipt time) to a batch row.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::usage_event_batch::{decode, encode};
use neocloud_schema::entity::usage_event_key::key_of;
use sea_orm_migration::SchemaManagerConnection;
use sea_orm_migration::sea_orm::{ConnectionTrait, QueryResult};
use sea_orm_migration::{prelude::*, schema::*};
use serde_json::{Value, json};

use crate::helpers::index;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum UsageEventKeys {
    Table,
    TenantId,
    Key,
}

#[derive(DeriveIden)]
enum UsageEventBatches {
    Table,
    Id,
    TenantId,
    ReceivedAt,
    Events,
    Body,
}

#[derive(DeriveIden, Clone, Copy)]
enum UsageEvents {
    Table,
    TenantId,
    Source,
    EventId,
    EventType,
    Time,
    Data,
    Meters,
    ReceivedAt,
}

/// The old table's columns, as read when moving and written when moving back.
const OLD_COLUMNS: [UsageEvents; 8] = [
    UsageEvents::TenantId,
    UsageEvents::Source,
    UsageEvents::EventId,
    UsageEvents::EventType,
    UsageEvents::Time,
    UsageEvents::Data,
    UsageEvents::Meters,
    UsageEvents::ReceivedAt,
];

const BATCH_INDEX: &str = "idx_usage_event_batches_tenant_received";
/// Events moved per read.
const PAGE: u64 = 500;
/// Batches moved back per read.
const BATCH_PAGE: u64 = 20;
/// Most bytes of JSON a batch body may expand to when moved back.
const MAX_BODY_JSON: usize = 64 << 20;

/// A stored event, as the old table held it.
struct OldEvent {
    tenant: uuid::Uuid,
    received_at: DateTime<Utc>,
    source: String,
    id: String,
    journaled: Value,
}

impl OldEvent {
    /// The event's place in the order pages are read in.
    fn position(&self) -> [Expr; 4] {
        [
            Expr::val(self.tenant),
            Expr::val(self.received_at),
            Expr::val(self.source.as_str()),
            Expr::val(self.id.as_str()),
        ]
    }
}

async fn create_tables(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(UsageEventKeys::Table)
                .col(uuid(UsageEventKeys::TenantId))
                .col(uuid(UsageEventKeys::Key))
                .primary_key(
                    Index::create()
                        .name("pk_usage_event_keys")
                        .col(UsageEventKeys::TenantId)
                        .col(UsageEventKeys::Key),
                )
                .to_owned(),
        )
        .await?;
    manager
        .create_table(
            Table::create()
                .table(UsageEventBatches::Table)
                .col(uuid(UsageEventBatches::Id).primary_key())
                .col(uuid(UsageEventBatches::TenantId))
                .col(timestamp_with_time_zone(UsageEventBatches::ReceivedAt))
                .col(integer(UsageEventBatches::Events))
                .col(blob(UsageEventBatches::Body))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            BATCH_INDEX,
            UsageEventBatches::Table,
            vec![
                UsageEventBatches::TenantId.into_iden(),
                UsageEventBatches::ReceivedAt.into_iden(),
            ],
            false,
        ))
        .await
}

/// The page of the old table after the event at `after`, in (tenant, receipt time,
/// identity) order.
async fn old_events(
    manager: &SchemaManager<'_>,
    after: Option<&OldEvent>,
) -> Result<Vec<OldEvent>, DbErr> {
    let order = [
        UsageEvents::TenantId,
        UsageEvents::ReceivedAt,
        UsageEvents::Source,
        UsageEvents::EventId,
    ];
    let mut select = Query::select();
    select
        .columns(OLD_COLUMNS)
        .from(UsageEvents::Table)
        .limit(PAGE);
    for column in order {
        select.order_by(column, Order::Asc);
    }
    if let Some(last) = after {
        let columns = Expr::tuple(order.map(Expr::col));
        select.and_where(columns.gt(Expr::tuple(last.position())));
    }
    let conn = manager.get_connection();
    let rows = conn.query_all(&select).await?;
    rows.iter()
        .map(|row| {
            let source: String = row.try_get("", "source")?;
            let id: String = row.try_get("", "event_id")?;
            let journaled = json!({
                "id": &id, "source": &source,
                "type": row.try_get::<String>("", "event_type")?,
                "time": row.try_get::<DateTime<Utc>>("", "time")?,
                "subject": Value::Null,
                "data": row.try_get::<Value>("", "data")?,
                "meters": row.try_get::<i32>("", "meters")?,
            });
            Ok(OldEvent {
                tenant: row.try_get("", "tenant_id")?,
                received_at: row.try_get("", "received_at")?,
                source,
                id,
                journaled,
            })
        })
        .collect()
}

/// Writes one original batch (one tenant, one receipt time): its keys and its body.
async fn write_batch(manager: &SchemaManager<'_>, events: &[OldEvent]) -> Result<(), DbErr> {
    let Some(first) = events.first() else {
        return Ok(());
    };
    let mut keys = Query::insert();
    keys.into_table(UsageEventKeys::Table)
        .columns([UsageEventKeys::TenantId, UsageEventKeys::Key])
        .on_conflict(
            OnConflict::columns([UsageEventKeys::TenantId, UsageEventKeys::Key])
                .do_nothing()
                .to_owned(),
        );
    for e in events {
        keys.values_panic([e.tenant.into(), key_of(&e.source, &e.id).into()]);
    }
    manager.exec_stmt(keys).await?;
    let bodies: Vec<Value> = events.iter().map(|e| e.journaled.clone()).collect();
    let body = encode(&bodies).map_err(|e| DbErr::Custom(format!("a batch body: {e}")))?;
    let count = <i32 as TryFrom<_>>::try_from(events.len()).unwrap_or(i32::MAX);
    let batch = Query::insert()
        .into_table(UsageEventBatches::Table)
        .columns([
            UsageEventBatches::Id,
            UsageEventBatches::TenantId,
            UsageEventBatches::ReceivedAt,
            UsageEventBatches::Events,
            UsageEventBatches::Body,
        ])
        .values_panic([
            uuid::Uuid::now_v7().into(),
            first.tenant.into(),
            first.received_at.into(),
            count.into(),
            body.into(),
        ])
        .to_owned();
    manager.exec_stmt(batch).await
}

/// Moves every stored event into keys and batches.
async fn move_events(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let mut page = old_events(manager, None).await?;
    while let Some(last) = page.last() {
        for batch in page.chunk_by(|a, b| (a.tenant, a.received_at) == (b.tenant, b.received_at)) {
            write_batch(manager, batch).await?;
        }
        page = old_events(manager, Some(last)).await?;
    }
    Ok(())
}

/// The old table's row of a journaled event.
fn restored(
    tenant: uuid::Uuid,
    received_at: DateTime<Utc>,
    e: &Value,
) -> Result<InsertStatement, DbErr> {
    let text = |f: &str| e[f].as_str().unwrap_or_default().to_owned();
    let time: DateTime<Utc> = serde_json::from_value(e["time"].clone())
        .map_err(|err| DbErr::Custom(format!("an event's time: {err}")))?;
    let meters = <i32 as TryFrom<_>>::try_from(e["meters"].as_i64().unwrap_or(0)).unwrap_or(0);
    Ok(Query::insert()
        .into_table(UsageEvents::Table)
        .columns(OLD_COLUMNS)
        .values_panic([
            tenant.into(),
            text("source").into(),
            text("id").into(),
            text("type").into(),
            time.into(),
            e["data"].clone().into(),
            meters.into(),
            received_at.into(),
        ])
        .to_owned())
}

/// The old table (as migration 024 left it), filled back from the batches.
async fn restore_events(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(UsageEvents::Table)
                .col(uuid(UsageEvents::TenantId))
                .col(string(UsageEvents::Source))
                .col(string(UsageEvents::EventId))
                .col(string(UsageEvents::EventType))
                .col(timestamp_with_time_zone(UsageEvents::Time))
                .col(json(UsageEvents::Data))
                .col(integer(UsageEvents::Meters))
                .col(timestamp_with_time_zone(UsageEvents::ReceivedAt))
                .primary_key(
                    Index::create()
                        .name("pk_usage_events")
                        .col(UsageEvents::TenantId)
                        .col(UsageEvents::Source)
                        .col(UsageEvents::EventId),
                )
                .to_owned(),
        )
        .await?;
    let conn = manager.get_connection();
    let mut after = None;
    loop {
        let mut select = Query::select();
        select
            .columns([
                UsageEventBatches::Id,
                UsageEventBatches::TenantId,
                UsageEventBatches::ReceivedAt,
                UsageEventBatches::Body,
            ])
            .from(UsageEventBatches::Table)
            .order_by(UsageEventBatches::Id, Order::Asc)
            .limit(BATCH_PAGE);
        if let Some(last) = after {
            select.and_where(Expr::col(UsageEventBatches::Id).gt(Expr::val::<uuid::Uuid>(last)));
        }
        let rows = conn.query_all(&select).await?;
        let Some(last) = rows.last() else {
            return Ok(());
        };
        after = Some(last.try_get("", "id")?);
        for row in rows {
            restore_batch(conn, &row).await?;
        }
    }
}

/// Writes back the old table's rows of one batch.
async fn restore_batch(conn: &SchemaManagerConnection<'_>, row: &QueryResult) -> Result<(), DbErr> {
    let tenant: uuid::Uuid = row.try_get("", "tenant_id")?;
    let received_at: DateTime<Utc> = row.try_get("", "received_at")?;
    let body: Vec<u8> = row.try_get("", "body")?;
    let events =
        decode(&body, MAX_BODY_JSON).map_err(|e| DbErr::Custom(format!("a batch body: {e}")))?;
    for e in events {
        conn.execute(&restored(tenant, received_at, &e)?).await?;
    }
    Ok(())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        create_tables(manager).await?;
        move_events(manager).await?;
        manager
            .drop_table(Table::drop().table(UsageEvents::Table).to_owned())
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        restore_events(manager).await?;
        manager
            .drop_table(Table::drop().table(UsageEventBatches::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(UsageEventKeys::Table).to_owned())
            .await
    }
}
