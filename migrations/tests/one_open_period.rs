//! Migration 047: a tenant left with two drafts (its open period and, opened by a race,
//! the one after it) keeps the earliest; finalized invoices and other tenants' drafts stay
//! (SQLite and PostgreSQL).

mod support;

use chrono::{DateTime, Utc};
use neocloud_migrations::{Migrator, MigratorTrait};
use sea_orm::sea_query::{Alias, Expr, Query};
use sea_orm::{ConnectionTrait, DatabaseConnection};
use uuid::Uuid;

fn t(s: &str) -> DateTime<Utc> {
    s.parse().expect("time")
}

async fn tenant(db: &DatabaseConnection) -> Uuid {
    let id = Uuid::now_v7();
    let row = Query::insert()
        .into_table(Alias::new("tenants"))
        .columns(["id", "name", "currency", "status", "created_at"].map(Alias::new))
        .values_panic([
            id.into(),
            format!("t-{id}").into(),
            "EUR".into(),
            "active".into(),
            t("2026-11-01T00:00:00Z").into(),
        ])
        .to_owned();
    db.execute(&row).await.expect("tenant");
    id
}

async fn invoice(
    db: &DatabaseConnection,
    tenant: Uuid,
    status: &str,
    start: &str,
    end: &str,
) -> Uuid {
    let id = Uuid::now_v7();
    let zero = || Expr::cust("'0'");
    let number = (status != "draft").then(|| format!("NC-2026-{id}"));
    let row = Query::insert()
        .into_table(Alias::new("invoices"))
        .columns(
            [
                "id",
                "tenant_id",
                "status",
                "number",
                "currency",
                "period_start",
                "period_end",
                "subtotal",
                "credits",
                "total",
                "plan",
                "created_at",
            ]
            .map(Alias::new),
        )
        .values_panic([
            id.into(),
            tenant.into(),
            status.into(),
            number.into(),
            "EUR".into(),
            t(start).into(),
            t(end).into(),
            zero(),
            zero(),
            zero(),
            "".into(),
            t(start).into(),
        ])
        .to_owned();
    db.execute(&row).await.expect("invoice");
    id
}

async fn ids(db: &DatabaseConnection) -> Vec<Uuid> {
    let select = Query::select()
        .column(Alias::new("id"))
        .from(Alias::new("invoices"))
        .order_by(Alias::new("id"), sea_orm::Order::Asc)
        .to_owned();
    db.query_all(&select)
        .await
        .expect("read")
        .iter()
        .map(|r| r.try_get("", "id").expect("id"))
        .collect()
}

async fn the_earliest_draft_stays(db: &DatabaseConnection) {
    Migrator::up(db, Some(46)).await.expect("up to 046");
    let raced = tenant(db).await;
    let closed = invoice(
        db,
        raced,
        "open",
        "2026-10-01T00:00:00Z",
        "2026-11-01T00:00:00Z",
    )
    .await;
    let open = invoice(
        db,
        raced,
        "draft",
        "2026-11-01T00:00:00Z",
        "2026-12-01T00:00:00Z",
    )
    .await;
    invoice(
        db,
        raced,
        "draft",
        "2026-12-01T00:00:00Z",
        "2027-01-01T00:00:00Z",
    )
    .await;
    let other = tenant(db).await;
    let theirs = invoice(
        db,
        other,
        "draft",
        "2026-11-01T00:00:00Z",
        "2026-12-01T00:00:00Z",
    )
    .await;
    Migrator::up(db, None).await.expect("up 047");
    let mut want = vec![closed, open, theirs];
    want.sort();
    assert_eq!(ids(db).await, want);
}

#[tokio::test]
async fn the_earliest_draft_stays_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    the_earliest_draft_stays(&support::sqlite(&dir).await).await;
}

#[tokio::test]
async fn the_earliest_draft_stays_on_postgres() {
    let Some(pg) = support::Pg::create().await else {
        return;
    };
    the_earliest_draft_stays(&pg.db).await;
    pg.drop().await;
}
