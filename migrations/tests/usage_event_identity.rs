//! Migration 024 keys usage events by their identity: the events stored before are all
//! there after it (and after its `down`), and a second row with one identity is refused
//! by the key itself (SQLite, with a pool of connections as the server opens it, foreign
//! keys on as the server has them: every event's tenant is a stored tenant). Migration
//! 026 moves them into keys and batches, and its `down` moves them back (on SQLite and
//! PostgreSQL).

mod support;

use neocloud_migrations::{Migrator, MigratorTrait};
use neocloud_schema::entity::usage_event_batch::decode;
use neocloud_schema::entity::usage_event_key::key_of;
use sea_orm::sea_query::{Alias, Query, SqliteQueryBuilder};
use sea_orm::{ConnectionTrait, DatabaseConnection};

fn event(
    id: Option<uuid::Uuid>,
    tenant: uuid::Uuid,
    event_id: &str,
) -> sea_orm::sea_query::InsertStatement {
    received(id, tenant, event_id, 0)
}

/// An event received `later` seconds after the others.
fn received(
    id: Option<uuid::Uuid>,
    tenant: uuid::Uuid,
    event_id: &str,
    later: i64,
) -> sea_orm::sea_query::InsertStatement {
    let at: chrono::DateTime<chrono::Utc> = "2026-12-04T10:00:00Z".parse().expect("time");
    let mut columns = vec![
        "tenant_id",
        "source",
        "event_id",
        "event_type",
        "time",
        "data",
        "meters",
        "received_at",
    ];
    let mut values: Vec<sea_orm::sea_query::SimpleExpr> = vec![
        tenant.into(),
        "gateway-1".into(),
        event_id.into(),
        "llm.request".into(),
        at.into(),
        serde_json::json!({"tokens": 5}).into(),
        1i32.into(),
        (at + chrono::Duration::seconds(later)).into(),
    ];
    if let Some(id) = id {
        columns.insert(0, "id");
        values.insert(0, id.into());
    }
    Query::insert()
        .into_table(Alias::new("usage_events"))
        .columns(columns.into_iter().map(Alias::new))
        .values_panic(values)
        .to_owned()
}

/// Runs `insert` with its values as literals, so every id is stored alike.
async fn insert(
    db: &DatabaseConnection,
    insert: &sea_orm::sea_query::InsertStatement,
) -> Result<(), sea_orm::DbErr> {
    let sql = insert.to_string(SqliteQueryBuilder);
    db.execute_unprepared(&sql).await.map(|_| ())
}

/// Stores a tenant and returns its id.
async fn tenant(db: &DatabaseConnection) -> uuid::Uuid {
    let id = uuid::Uuid::now_v7();
    let at: chrono::DateTime<chrono::Utc> = "2026-12-04T09:00:00Z".parse().expect("time");
    let row = Query::insert()
        .into_table(Alias::new("tenants"))
        .columns(["id", "name", "currency", "status", "created_at"].map(Alias::new))
        .values_panic([
            id.into(),
            format!("tenant-{id}").into(),
            "EUR".into(),
            "active".into(),
            at.into(),
        ])
        .to_owned();
    insert(db, &row).await.expect("tenant");
    id
}

async fn stored(db: &DatabaseConnection) -> Vec<String> {
    let select = Query::select()
        .column(Alias::new("event_id"))
        .from(Alias::new("usage_events"))
        .order_by(Alias::new("event_id"), sea_orm::Order::Asc)
        .to_owned();
    db.query_all_raw(db.get_database_backend().build(&select))
        .await
        .expect("rows")
        .iter()
        .map(|r| r.try_get("", "event_id").expect("event_id"))
        .collect()
}

#[tokio::test]
async fn usage_events_keep_their_rows_under_their_identity() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = support::sqlite(&dir).await;
    db.execute_unprepared("PRAGMA journal_mode = WAL")
        .await
        .expect("pragma");
    Migrator::up(&db, Some(23)).await.expect("up to 023");
    let (tenant, other) = (tenant(&db).await, tenant(&db).await);
    for id in ["req-1", "req-2"] {
        insert(&db, &event(Some(uuid::Uuid::now_v7()), tenant, id))
            .await
            .expect("event");
    }

    Migrator::up(&db, Some(1)).await.expect("up 024");
    assert_eq!(stored(&db).await, ["req-1", "req-2"]);
    assert!(
        insert(&db, &event(None, tenant, "req-1")).await.is_err(),
        "one row per identity"
    );
    insert(&db, &event(None, other, "req-1"))
        .await
        .expect("another tenant's req-1 is another event");

    Migrator::down(&db, Some(1)).await.expect("down");
    assert_eq!(stored(&db).await, ["req-1", "req-1", "req-2"]);
    assert!(
        insert(&db, &event(Some(uuid::Uuid::now_v7()), tenant, "req-2"))
            .await
            .is_err(),
        "the identity is unique again"
    );
    assert!(
        insert(
            &db,
            &event(Some(uuid::Uuid::now_v7()), uuid::Uuid::now_v7(), "req-3")
        )
        .await
        .is_err(),
        "the tenant is checked again"
    );
}

/// The stored keys and, from the batches, each event's tenant, id and data, sorted.
async fn journaled(
    db: &DatabaseConnection,
) -> (Vec<uuid::Uuid>, Vec<(uuid::Uuid, String, String)>) {
    let rows = |table: &str, columns: &[&str]| {
        Query::select()
            .columns(columns.iter().map(|c| Alias::new(*c)))
            .from(Alias::new(table))
            .to_owned()
    };
    let backend = db.get_database_backend();
    let mut keys: Vec<uuid::Uuid> = db
        .query_all_raw(backend.build(&rows("usage_event_keys", &["key"])))
        .await
        .expect("keys")
        .iter()
        .map(|r| r.try_get("", "key").expect("key"))
        .collect();
    keys.sort();
    let mut events = Vec::new();
    for r in db
        .query_all_raw(backend.build(&rows(
            "usage_event_batches",
            &["tenant_id", "events", "body"],
        )))
        .await
        .expect("batches")
    {
        let tenant: uuid::Uuid = r.try_get("", "tenant_id").expect("tenant");
        let body: Vec<u8> = r.try_get("", "body").expect("body");
        let held = decode(&body, 1 << 20).expect("a body");
        assert_eq!(
            i32::try_from(held.len()).ok(),
            r.try_get::<i32>("", "events").ok()
        );
        events.extend(held.iter().map(|e| {
            (
                tenant,
                e["id"].as_str().unwrap_or("").to_owned(),
                e["data"].to_string(),
            )
        }));
    }
    events.sort();
    (keys, events)
}

/// Migration 026 on `db` (migrated up to 025): stored events move into keys and batches
/// of their tenants, and back.
async fn events_move_into_keys_and_batches_and_back(db: &DatabaseConnection) {
    let (tenant, other) = (tenant(db).await, tenant(db).await);
    // More events (and original batches: one a receipt time) than the migration reads at
    // once, so it pages both ways.
    let bulk = (0..1_234).map(|n| (tenant, format!("bulk-{n:04}")));
    let mut held: Vec<(uuid::Uuid, String)> =
        [(tenant, "req-1"), (tenant, "req-2"), (other, "req-1")]
            .map(|(t, id)| (t, id.to_owned()))
            .into_iter()
            .chain(bulk)
            .collect();
    for (n, (t, id)) in (0..).zip(&held) {
        // Values bound, as the server stores them.
        let event = received(None, *t, id, n / 7);
        db.execute(&event).await.expect("event");
    }

    Migrator::up(db, Some(1)).await.expect("up 026");
    let (keys, events) = journaled(db).await;
    let mut want_keys: Vec<uuid::Uuid> =
        held.iter().map(|(_, id)| key_of("gateway-1", id)).collect();
    want_keys.sort();
    assert_eq!(keys, want_keys);
    let data = serde_json::json!({"tokens": 5}).to_string();
    let mut want: Vec<_> = held
        .iter()
        .map(|(t, id)| (*t, id.clone(), data.clone()))
        .collect();
    want.sort();
    assert_eq!(events, want, "every event in a batch of its tenant");

    Migrator::down(db, Some(1)).await.expect("down");
    held.sort_by(|a, b| a.1.cmp(&b.1));
    let ids: Vec<String> = held.into_iter().map(|(_, id)| id).collect();
    assert_eq!(stored(db).await, ids);
}

#[tokio::test]
async fn usage_events_move_into_keys_and_batches_and_back_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = support::sqlite(&dir).await;
    Migrator::up(&db, Some(25)).await.expect("up to 025");
    events_move_into_keys_and_batches_and_back(&db).await;
}

#[tokio::test]
async fn usage_events_move_into_keys_and_batches_and_back_on_postgres() {
    let Some(pg) = support::Pg::create().await else {
        return;
    };
    Migrator::up(&pg.db, Some(25)).await.expect("up to 025");
    events_move_into_keys_and_batches_and_back(&pg.db).await;
    pg.drop().await;
}
