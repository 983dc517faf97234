//! Migration 056: a user belongs to a tenant or to a provider, never both nor neither.
//! A tenant's user from before keeps every column; its `down` takes provider users away
//! (SQLite and PostgreSQL).

mod support;

use neocloud_migrations::{Migrator, MigratorTrait};
use sea_orm::sea_query::{Alias, Query, SimpleExpr};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr};
use uuid::Uuid;

const NOW: &str = "2026-12-01T00:00:00Z";

async fn insert(
    db: &DatabaseConnection,
    table: &str,
    row: &[(&str, SimpleExpr)],
) -> Result<(), DbErr> {
    let (columns, values): (Vec<_>, Vec<_>) = row.iter().cloned().unzip();
    let stmt = Query::insert()
        .into_table(Alias::new(table))
        .columns(columns.into_iter().map(Alias::new))
        .values_panic(values)
        .to_owned();
    db.execute(&stmt).await.map(|_| ())
}

fn time() -> SimpleExpr {
    NOW.parse::<chrono::DateTime<chrono::Utc>>()
        .expect("time")
        .into()
}

/// A tenant, a provider and a key; their ids.
async fn owners(db: &DatabaseConnection) -> (Uuid, Uuid, Uuid) {
    let (tenant, provider, key) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let tenant_row = [
        ("id", tenant.into()),
        ("name", "acme".into()),
        ("currency", "EUR".into()),
        ("status", "active".into()),
        ("created_at", time()),
    ];
    insert(db, "tenants", &tenant_row).await.expect("tenant");
    let provider_row = [
        ("id", provider.into()),
        ("name", "gridco".into()),
        ("created_at", time()),
    ];
    insert(db, "providers", &provider_row)
        .await
        .expect("provider");
    let key_row = [
        ("id", key.into()),
        ("prefix", "nc_test".into()),
        ("secret_hash", "x".into()),
        ("role", "provider".into()),
        ("label", "a user's".into()),
        ("created_at", time()),
    ];
    insert(db, "api_keys", &key_row).await.expect("key");
    (tenant, provider, key)
}

async fn user(
    db: &DatabaseConnection,
    email: &str,
    key: Uuid,
    owner: &[(&str, SimpleExpr)],
) -> Result<(), DbErr> {
    let mut row = vec![
        ("id", Uuid::new_v4().into()),
        ("email", email.into()),
        ("role", "tenant_member".into()),
        ("api_key_id", key.into()),
        (
            "password_hash",
            "$argon2id$v=19$m=1,t=1,p=1$c2FsdA$aGFzaA".into(),
        ),
        ("failed_sign_ins", 2.into()),
        ("created_at", time()),
        ("totp_secret", "JBSWY3DPEHPK3PXP".into()),
    ];
    row.extend(owner.iter().cloned());
    insert(db, "portal_users", &row).await
}

async fn count(db: &DatabaseConnection, filter: &str) -> i64 {
    let row = db
        .query_one_raw(sea_orm::Statement::from_string(
            db.get_database_backend(),
            format!("SELECT COUNT(*) AS n FROM portal_users WHERE {filter}"),
        ))
        .await
        .expect("count")
        .expect("a row");
    row.try_get("", "n").expect("n")
}

async fn a_user_has_one_owner(db: &DatabaseConnection) {
    Migrator::up(db, Some(55)).await.expect("up to 055");
    let (tenant, provider, key) = owners(db).await;
    user(db, "ada@acme.io", key, &[("tenant_id", tenant.into())])
        .await
        .expect("a tenant's user before 056");
    Migrator::up(db, Some(1)).await.expect("up 056");

    let kept = "email = 'ada@acme.io' AND failed_sign_ins = 2 AND totp_secret = 'JBSWY3DPEHPK3PXP' \
                AND password_hash LIKE '$argon2id$%' AND provider_id IS NULL";
    assert_eq!(
        count(db, kept).await,
        1,
        "the tenant's user keeps its columns"
    );
    user(db, "bo@gridco.io", key, &[("provider_id", provider.into())])
        .await
        .expect("a provider's user");
    let both = [
        ("tenant_id", tenant.into()),
        ("provider_id", provider.into()),
    ];
    assert!(
        user(db, "both@x.io", key, &both).await.is_err(),
        "two owners"
    );
    assert!(user(db, "none@x.io", key, &[]).await.is_err(), "no owner");
    let unknown = [("provider_id", Uuid::new_v4().into())];
    assert!(
        user(db, "ghost@x.io", key, &unknown).await.is_err(),
        "an unknown provider"
    );
    // One active user per email, as before.
    let again = [("provider_id", provider.into())];
    assert!(
        user(db, "ada@acme.io", key, &again).await.is_err(),
        "a taken email"
    );

    Migrator::down(db, Some(1)).await.expect("down 056");
    assert_eq!(
        count(db, "1 = 1").await,
        1,
        "only the tenant's user is left"
    );
}

#[tokio::test]
async fn a_user_has_one_owner_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    a_user_has_one_owner(&support::sqlite(&dir).await).await;
}

#[tokio::test]
async fn a_user_has_one_owner_on_postgres() {
    let Some(pg) = support::Pg::create().await else {
        return;
    };
    a_user_has_one_owner(&pg.db).await;
    pg.drop().await;
}
