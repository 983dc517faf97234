//! Migration 027 makes the audit log append-only and adds its chain columns; its `down`
//! lifts both, and `up` again restores them (SQLite and PostgreSQL).

mod support;

use neocloud_migrations::{Migrator, MigratorTrait};
use sea_orm::{ConnectionTrait, DatabaseConnection};

const ENTRY: &str = "INSERT INTO audit_log (id, at, actor_role, action, object_type, object_id) \
    VALUES ('0193a0b0-0000-7000-8000-000000000001', '2026-12-06T10:00:00Z', 'system', \
    'tenant.create', 'tenant', 't')";
const SEAL: &str = "UPDATE audit_log SET seq = 1, hash = 'h' WHERE seq IS NULL";
const CHANGE: &str = "UPDATE audit_log SET action = 'tenant.forged'";
const DELETE: &str = "DELETE FROM audit_log";

async fn guarded_and_back(db: &DatabaseConnection) {
    Migrator::up(db, Some(27)).await.expect("up to 027");
    db.execute_unprepared(ENTRY).await.expect("an entry");
    db.execute_unprepared(SEAL).await.expect("sealed once");
    for sql in [
        SEAL.replace("seq IS NULL", "1 = 1").as_str(),
        CHANGE,
        DELETE,
    ] {
        assert!(db.execute_unprepared(sql).await.is_err(), "{sql}");
    }

    Migrator::down(db, Some(1)).await.expect("down");
    assert!(db.execute_unprepared(SEAL).await.is_err(), "no seq column");
    db.execute_unprepared(CHANGE).await.expect("no guard");
    db.execute_unprepared(DELETE).await.expect("no guard");

    Migrator::up(db, Some(1)).await.expect("027 again");
    db.execute_unprepared(ENTRY).await.expect("an entry");
    assert!(
        db.execute_unprepared(DELETE).await.is_err(),
        "guarded again"
    );
}

#[tokio::test]
async fn the_audit_guard_comes_and_goes_with_the_migration_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    guarded_and_back(&support::sqlite(&dir).await).await;
}

#[tokio::test]
async fn the_audit_guard_comes_and_goes_with_the_migration_on_postgres() {
    let Some(pg) = support::Pg::create().await else {
        return;
    };
    guarded_and_back(&pg.db).await;
    pg.drop().await;
}
