//! The periodic period closer (`invoicing::close_due`) against a tenant whose close fails:
//! the others still close, and the failing one is tried again on the next sweep.

mod support;

use chrono::{Duration, Utc};
use neocloud_api::invoicing::{Billing, close_due};
use neocloud_api::settings::Settings;
use neocloud_schema::entity::invoice;
use neocloud_schema::vocabulary::InvoiceStatus;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, sea_query::Expr};
use serde_json::json;
use support::{Backend, TestApp};

/// Opens the tenant's draft and moves it to `[start, end)`.
async fn draft_between(
    app: &TestApp,
    key: &str,
    tenant: &str,
    start: chrono::DateTime<Utc>,
    end: chrono::DateTime<Utc>,
) {
    let r = app
        .gql(Some(key), "{ upcomingInvoice { total } }", json!({}))
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let tenant: uuid::Uuid = tenant.parse().expect("uuid");
    invoice::Entity::update_many()
        .col_expr(invoice::Column::PeriodStart, Expr::value(start))
        .col_expr(invoice::Column::PeriodEnd, Expr::value(end))
        .filter(invoice::Column::TenantId.eq(tenant))
        .filter(invoice::Column::Status.eq(InvoiceStatus::Draft))
        .exec(&app.db)
        .await
        .expect("move the draft");
}

async fn statuses(app: &TestApp, tenant: &str) -> Vec<InvoiceStatus> {
    let tenant: uuid::Uuid = tenant.parse().expect("uuid");
    invoice::Entity::find()
        .filter(invoice::Column::TenantId.eq(tenant))
        .all(&app.db)
        .await
        .expect("invoices")
        .into_iter()
        .map(|i| i.status)
        .collect()
}

async fn one_tenant_that_cannot_close_does_not_hold_back_the_others(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (broken, broken_key) = app.create_tenant("broken").await;
    let (fine, fine_key) = app.create_tenant("fine").await;
    let ended = Utc::now() - Duration::days(2);
    // An empty period cannot close ("began less than a second ago"): a failing tenant.
    draft_between(&app, &broken_key, &broken, ended, ended).await;
    draft_between(&app, &fine_key, &fine, ended - Duration::days(30), ended).await;

    let settings = Settings::for_tests("sqlite::memory:");
    let billing = Billing::new(&settings.billing, false, app.clock.clone());
    let closed = close_due(&app.db, &billing).await.expect("the sweep runs");
    assert_eq!(closed, 1);
    let finalized = statuses(&app, &fine)
        .await
        .into_iter()
        .filter(|s| *s != InvoiceStatus::Draft)
        .count();
    assert_eq!(finalized, 1, "the other tenant's period closed");
    assert_eq!(statuses(&app, &broken).await, vec![InvoiceStatus::Draft]);
}

on_both_databases!(one_tenant_that_cannot_close_does_not_hold_back_the_others);
