//! Migration 028: tenants get 30-day net terms, invoices finalized before it fall due 30
//! days after their finalization, and the due date is frozen with the invoice; its `down`
//! takes both away. Migration 029 freezes the invoice's parties too; 030 reads an
//! earlier invoice as untaxed and freezes its tax (SQLite and PostgreSQL).

mod support;

use chrono::{DateTime, Duration, Utc};
use neocloud_migrations::{Migrator, MigratorTrait};
use sea_orm::sea_query::{Alias, Expr, Query};
use sea_orm::{ConnectionTrait, DatabaseConnection};

async fn finalized_invoice(db: &DatabaseConnection, finalized: DateTime<Utc>) {
    let tenant = uuid::Uuid::now_v7();
    let tenant_row = Query::insert()
        .into_table(Alias::new("tenants"))
        .columns(["id", "name", "currency", "status", "created_at"].map(Alias::new))
        .values_panic([
            tenant.into(),
            "acme".into(),
            "EUR".into(),
            "active".into(),
            finalized.into(),
        ])
        .to_owned();
    db.execute(&tenant_row).await.expect("tenant");
    let money = || Expr::cust("'12.50'");
    let invoice = Query::insert()
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
                "finalized_at",
                "created_at",
            ]
            .map(Alias::new),
        )
        .values_panic([
            uuid::Uuid::now_v7().into(),
            tenant.into(),
            "open".into(),
            "NC-2026-000001".into(),
            "EUR".into(),
            (finalized - Duration::days(30)).into(),
            finalized.into(),
            money(),
            money(),
            money(),
            "standard v1".into(),
            finalized.into(),
            finalized.into(),
        ])
        .to_owned();
    db.execute(&invoice).await.expect("invoice");
}

async fn due_at(db: &DatabaseConnection) -> Result<DateTime<Utc>, sea_orm::DbErr> {
    let select = Query::select()
        .column(Alias::new("due_at"))
        .from(Alias::new("invoices"))
        .to_owned();
    let row = db.query_one(&select).await?.expect("the invoice");
    row.try_get("", "due_at")
}

async fn terms_come_and_go(db: &DatabaseConnection) {
    Migrator::up(db, Some(27)).await.expect("up to 027");
    let finalized: DateTime<Utc> = "2026-11-01T10:00:00.250Z".parse().expect("time");
    finalized_invoice(db, finalized).await;

    Migrator::up(db, Some(1)).await.expect("up 028");
    assert_eq!(
        due_at(db).await.expect("due_at"),
        finalized + Duration::days(30)
    );
    let moved = db
        .execute_unprepared("UPDATE invoices SET due_at = finalized_at")
        .await;
    assert!(moved.is_err(), "a finalized invoice's due date is frozen");
    let terms = db
        .query_one(
            &Query::select()
                .column(Alias::new("net_terms_days"))
                .from(Alias::new("tenants"))
                .to_owned(),
        )
        .await
        .expect("read")
        .expect("a tenant");
    assert_eq!(terms.try_get::<i32>("", "net_terms_days").ok(), Some(30));

    Migrator::down(db, Some(1)).await.expect("down");
    assert!(due_at(db).await.is_err(), "no due_at column");
    db.execute_unprepared("UPDATE invoices SET paid_at = finalized_at, status = 'paid'")
        .await
        .expect("payment still moves on");
}

/// Migration 029 freezes `invoices.parties`; its `down` keeps 028's freeze of `due_at`.
async fn parties_are_frozen_and_the_down_keeps_due_dates_frozen(db: &DatabaseConnection) {
    Migrator::up(db, Some(27)).await.expect("up to 027");
    finalized_invoice(db, "2026-11-01T10:00:00Z".parse().expect("time")).await;
    Migrator::up(db, Some(2)).await.expect("up 028 and 029");
    let set_parties = "UPDATE invoices SET parties = '{\"seller\": {}}'";
    assert!(db.execute_unprepared(set_parties).await.is_err(), "frozen");
    Migrator::down(db, Some(1)).await.expect("down 029");
    let moved = db
        .execute_unprepared("UPDATE invoices SET due_at = finalized_at")
        .await;
    assert!(moved.is_err(), "due_at is still frozen");
}

/// Migration 030: an invoice from before reads untaxed, its tax is frozen, and the down
/// keeps the parties frozen.
async fn taxes_come_frozen_and_go(db: &DatabaseConnection) {
    Migrator::up(db, Some(27)).await.expect("up to 027");
    finalized_invoice(db, "2026-11-01T10:00:00Z".parse().expect("time")).await;
    Migrator::up(db, Some(3)).await.expect("up 028 to 030");
    let select = Query::select()
        .expr(Expr::cust("CAST(tax AS TEXT)"))
        .from(Alias::new("invoices"))
        .to_owned();
    let row = db.query_one(&select).await.expect("read").expect("a row");
    let tax: String = row.try_get_by_index(0).expect("tax");
    assert_eq!(tax, "0", "an earlier invoice is untaxed");
    for change in [
        "UPDATE invoices SET tax = '1.00'",
        "UPDATE invoices SET taxes = '[]'",
    ] {
        assert!(
            db.execute_unprepared(change).await.is_err(),
            "{change}: frozen"
        );
    }
    Migrator::down(db, Some(1)).await.expect("down 030");
    let set_parties = "UPDATE invoices SET parties = '{\"seller\": {}}'";
    assert!(
        db.execute_unprepared(set_parties).await.is_err(),
        "still frozen"
    );
    db.execute_unprepared("UPDATE invoices SET paid_at = finalized_at, status = 'paid'")
        .await
        .expect("payment still moves on");
}

#[tokio::test]
async fn taxes_are_frozen_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    taxes_come_frozen_and_go(&support::sqlite(&dir).await).await;
}

#[tokio::test]
async fn taxes_are_frozen_on_postgres() {
    let Some(pg) = support::Pg::create().await else {
        return;
    };
    taxes_come_frozen_and_go(&pg.db).await;
    pg.drop().await;
}

#[tokio::test]
async fn parties_are_frozen_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    parties_are_frozen_and_the_down_keeps_due_dates_frozen(&support::sqlite(&dir).await).await;
}

#[tokio::test]
async fn parties_are_frozen_on_postgres() {
    let Some(pg) = support::Pg::create().await else {
        return;
    };
    parties_are_frozen_and_the_down_keeps_due_dates_frozen(&pg.db).await;
    pg.drop().await;
}

#[tokio::test]
async fn payment_terms_come_and_go_with_the_migration_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    terms_come_and_go(&support::sqlite(&dir).await).await;
}

#[tokio::test]
async fn payment_terms_come_and_go_with_the_migration_on_postgres() {
    let Some(pg) = support::Pg::create().await else {
        return;
    };
    terms_come_and_go(&pg.db).await;
    pg.drop().await;
}
