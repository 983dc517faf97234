//! Migration 011 moves each GPU's energy cursor into its node's row, so no reading is lost
//! across the upgrade (SQLite, with foreign keys off on its one connection, so a GPU row
//! needs no node or provider behind it).

use neocloud_migrations::{Migrator, MigratorTrait};
use sea_orm::sea_query::{Alias, Query};
use sea_orm::{ConnectOptions, ConnectionTrait, Database};

#[tokio::test]
async fn energy_cursors_move_from_gpus_to_their_nodes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("m.db").display());
    let mut options = ConnectOptions::new(url);
    options.max_connections(1);
    let db = Database::connect(options).await.expect("connect");
    db.execute_unprepared("PRAGMA foreign_keys = OFF")
        .await
        .expect("pragma");
    Migrator::up(&db, Some(10)).await.expect("up to 010");

    let node = uuid::Uuid::now_v7();
    let at: chrono::DateTime<chrono::Utc> = "2026-11-29T14:00:10Z".parse().expect("time");
    let backend = db.get_database_backend();
    for (i, device) in ["GPU-a", "GPU-b"].into_iter().enumerate() {
        let gpu = Query::insert()
            .into_table(Alias::new("gpus"))
            .columns(
                [
                    "id",
                    "node_id",
                    "uuid",
                    "index",
                    "model",
                    "memory_mib",
                    "mig_enabled",
                    "health",
                    "health_changed_at",
                ]
                .map(Alias::new),
            )
            .values_panic([
                uuid::Uuid::now_v7().into(),
                node.into(),
                device.into(),
                (i as i32).into(),
                "H100".into(),
                81_559i64.into(),
                false.into(),
                "ok".into(),
                at.into(),
            ])
            .to_owned();
        db.execute(&gpu).await.expect("gpu");
        let cursor = Query::insert()
            .into_table(Alias::new("device_energy"))
            .columns(["device_uuid", "last_energy_mj", "last_at"].map(Alias::new))
            .values_panic([device.into(), (1_000 * (i as i64 + 1)).into(), at.into()])
            .to_owned();
        db.execute(&cursor).await.expect("cursor");
    }
    // A cursor of a device no GPU row names (none should exist) is dropped.
    let orphan = Query::insert()
        .into_table(Alias::new("device_energy"))
        .columns(["device_uuid", "last_energy_mj", "last_at"].map(Alias::new))
        .values_panic(["GPU-gone".into(), 5i64.into(), at.into()])
        .to_owned();
    db.execute(&orphan).await.expect("orphan");

    Migrator::up(&db, None).await.expect("up");
    let select = Query::select()
        .columns(["node_id", "cursors"].map(Alias::new))
        .from(Alias::new("node_energy"))
        .to_owned();
    let rows = db
        .query_all_raw(backend.build(&select))
        .await
        .expect("rows");
    assert_eq!(rows.len(), 1);
    let got: uuid::Uuid = rows[0].try_get("", "node_id").expect("node");
    assert_eq!(got, node);
    let cursors: serde_json::Value =
        serde_json::from_str(&rows[0].try_get::<String>("", "cursors").expect("cursors"))
            .expect("json");
    assert_eq!(cursors["GPU-a"]["mj"], 1_000);
    assert_eq!(cursors["GPU-b"]["mj"], 2_000);
    let read: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(cursors["GPU-b"]["at"].clone()).expect("at");
    assert_eq!(read, at);
    assert!(cursors.get("GPU-gone").is_none());
}
