//! Migration 020 turns each budget's webhook URL into a webhook endpoint of its tenant
//! that signs with the budget's secret and keeps the older signature header; a budget
//! without a URL gets none (SQLite, foreign keys off on its one connection, so a budget
//! needs no tenant row behind it).

use neocloud_migrations::{Migrator, MigratorTrait};
use sea_orm::sea_query::{Alias, Query};
use sea_orm::{ConnectOptions, ConnectionTrait, Database};

#[tokio::test]
async fn a_budget_webhook_url_becomes_its_tenants_endpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("m.db").display());
    let mut options = ConnectOptions::new(url);
    options.max_connections(1);
    let db = Database::connect(options).await.expect("connect");
    db.execute_unprepared("PRAGMA foreign_keys = OFF")
        .await
        .expect("pragma");
    Migrator::up(&db, Some(19)).await.expect("up to 019");

    let with_url = uuid::Uuid::now_v7();
    let without = uuid::Uuid::now_v7();
    let at: chrono::DateTime<chrono::Utc> = "2026-12-01T10:00:00Z".parse().expect("time");
    for (tenant, hook) in [
        (with_url, Some("https://hooks.example.com/budget")),
        (without, None),
    ] {
        let budget = Query::insert()
            .into_table(Alias::new("budgets"))
            .columns(
                [
                    "tenant_id",
                    "monthly_limit",
                    "currency",
                    "alert_thresholds",
                    "webhook_url",
                    "webhook_secret",
                    "hard_cap",
                    "stop_allocations",
                    "updated_at",
                    "limit_version",
                ]
                .map(Alias::new),
            )
            .values_panic([
                tenant.into(),
                "100".into(),
                "EUR".into(),
                "[50,100]".into(),
                hook.map(str::to_owned).into(),
                format!("whsec_secret-of-{tenant}").into(),
                true.into(),
                false.into(),
                at.into(),
                1i32.into(),
            ])
            .to_owned();
        db.execute(&budget).await.expect("budget");
    }

    Migrator::up(&db, None).await.expect("up");
    let backend = db.get_database_backend();
    let select = Query::select()
        .columns(
            [
                "tenant_id",
                "url",
                "secret",
                "legacy_signature",
                "enabled",
                "event_types",
            ]
            .map(Alias::new),
        )
        .from(Alias::new("webhook_endpoints"))
        .to_owned();
    let rows = db
        .query_all_raw(backend.build(&select))
        .await
        .expect("rows");
    assert_eq!(rows.len(), 1, "one endpoint, for the budget with a URL");
    let row = &rows[0];
    let tenant: uuid::Uuid = row.try_get("", "tenant_id").expect("tenant");
    let url: String = row.try_get("", "url").expect("url");
    let secret: String = row.try_get("", "secret").expect("secret");
    let legacy: bool = row.try_get("", "legacy_signature").expect("legacy");
    let enabled: bool = row.try_get("", "enabled").expect("enabled");
    let types: serde_json::Value = row.try_get("", "event_types").expect("types");
    assert_eq!(tenant, with_url);
    assert_eq!(url, "https://hooks.example.com/budget");
    assert_eq!(secret, format!("whsec_secret-of-{with_url}"));
    assert!(legacy && enabled);
    assert!(
        types
            .as_array()
            .expect("types")
            .contains(&"budget.threshold_crossed".into()),
        "{types}"
    );
    Migrator::down(&db, Some(1)).await.expect("down");
}
