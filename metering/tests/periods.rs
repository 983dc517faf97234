//! Billing periods against a real (SQLite) database with a controlled clock: a period
//! closes itself only after its end plus the grace, at its end; periods missed while the
//! server was down close one after another; numbers run without gaps.

use chrono::{DateTime, Utc};
use neocloud_metering::invoicing::{self, BillingPolicy, store};
use neocloud_migrations::{Migrator, MigratorTrait};
use neocloud_schema::entity::tenant;
use neocloud_schema::ids::TenantId;
use neocloud_schema::vocabulary::{InvoiceStatus, TenantStatus};
use sea_orm::{ActiveModelTrait, Database, DatabaseConnection, Set};

fn t(s: &str) -> DateTime<Utc> {
    s.parse().expect("time")
}

async fn tenant_created_at(created: &str, anchor: i32) -> (DatabaseConnection, TenantId) {
    let db = Database::connect("sqlite::memory:").await.expect("sqlite");
    Migrator::up(&db, None).await.expect("migrate");
    let id = TenantId::new();
    tenant::ActiveModel {
        id: Set(id),
        name: Set("acme".into()),
        currency: Set("USD".into()),
        status: Set(TenantStatus::Active),
        created_at: Set(t(created)),
        billing_anchor_day: Set(anchor),
        ..Default::default()
    }
    .insert(&db)
    .await
    .expect("tenant");
    (db, id)
}

#[tokio::test]
async fn a_period_closes_itself_after_the_grace_and_missed_ones_follow() {
    let (db, tenant) = tenant_created_at("2026-10-15T10:20:30Z", 1).await;
    let policy = BillingPolicy::default();
    let draft = store::open_draft(&db, tenant).await.expect("draft");
    assert_eq!(draft.period_start, t("2026-10-15T10:20:00Z"));
    assert_eq!(draft.period_end, t("2026-11-01T00:00:00Z"));

    let due = |now: &str| invoicing::due_for_close(&db, t(now), &policy);
    assert!(due("2026-11-01T00:59:59Z").await.expect("due").is_empty());
    let now = "2026-11-01T01:00:00Z";
    assert_eq!(
        due(now).await.expect("due"),
        vec![(tenant, t("2026-11-01T00:00:00Z"))]
    );
    let (first, _) =
        invoicing::close_period(&db, tenant, t("2026-11-01T00:00:00Z"), t(now), &policy)
            .await
            .expect("close");
    // Nothing was used: settled as it is finalized.
    assert_eq!(first.status, InvoiceStatus::Paid);
    assert_eq!(first.number.as_deref(), Some("NC-2026-000001"));
    assert_eq!(first.period_end, t("2026-11-01T00:00:00Z"));
    assert!(due(now).await.expect("due").is_empty());

    // The server was down for two months: each missed period closes at its own end.
    let late = "2027-01-05T00:00:00Z";
    let mut numbers = Vec::new();
    while let Some((id, end)) = due(late).await.expect("due").first().copied() {
        let (invoice, _) = invoicing::close_period(&db, id, end, t(late), &policy)
            .await
            .expect("close");
        numbers.push((invoice.period_start, invoice.period_end, invoice.number));
    }
    assert_eq!(
        numbers,
        vec![
            (
                t("2026-11-01T00:00:00Z"),
                t("2026-12-01T00:00:00Z"),
                Some("NC-2027-000001".into())
            ),
            (
                t("2026-12-01T00:00:00Z"),
                t("2027-01-01T00:00:00Z"),
                Some("NC-2027-000002".into())
            ),
        ]
    );
    let open = store::open_draft(&db, tenant).await.expect("draft");
    assert_eq!(
        (open.period_start, open.period_end),
        (t("2027-01-01T00:00:00Z"), t("2027-02-01T00:00:00Z"))
    );
}

#[tokio::test]
async fn an_anchor_day_sets_the_period_and_a_period_cannot_close_twice_in_a_second() {
    let (db, tenant) = tenant_created_at("2026-11-20T08:00:00Z", 15).await;
    let draft = store::open_draft(&db, tenant).await.expect("draft");
    assert_eq!(draft.period_end, t("2026-12-15T00:00:00Z"));
    let policy = BillingPolicy::default();
    let now = t("2026-11-29T12:00:00.750Z");
    let (closed, _) = invoicing::close_period(&db, tenant, now, now, &policy)
        .await
        .expect("close");
    assert_eq!(closed.period_end, t("2026-11-29T12:00:01Z"));
    let again = invoicing::close_period(&db, tenant, now, now, &policy).await;
    assert!(
        matches!(again, Err(invoicing::InvoicingError::Conflict(_))),
        "{again:?}"
    );
}
