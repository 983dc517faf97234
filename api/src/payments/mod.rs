//! Payments as the API serves them: a tenant's payment account (`paymentAccount`,
//! `setDefaultPaymentMethod`, `removePaymentMethod`, `setCollectionMode`), prepaid top-ups (`top_ups`), dunning,
//! and the worker that delivers the payment outbox and catches up on Stripe events a
//! webhook missed. The Stripe calls, the outbox and event handling live in
//! `neocloud_metering::payments`.

pub mod cards;
pub mod top_ups;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use neocloud_metering::payments::accounts::{self, DEFAULT_DAYS_UNTIL_DUE, MAX_DAYS_UNTIL_DUE};
use neocloud_metering::payments::gateway::Gateway;
use neocloud_metering::payments::{self as stripe_events, dunning, outbox};
use neocloud_schema::entity::{payment_account, stripe_event};
use neocloud_schema::ids::TenantId;
use neocloud_schema::vocabulary::{CollectionMode, Role};
use sea_orm::{DatabaseConnection, EntityTrait, QueryOrder};
use serde_json::json;

use crate::invoicing::Billing;

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::tenancy;

fn unavailable() -> ApiError {
    ApiError::Unavailable {
        message: "payments are not configured on this installation".into(),
    }
}

/// `paymentAccount`: the caller's tenant's account (operators name the tenant).
pub async fn account(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<neocloud_schema::ids::TenantId>,
) -> ApiResult<Option<payment_account::Model>> {
    let tenant = actor.acting_tenant(asked)?;
    Ok(accounts::find(db, tenant).await?)
}

/// `setDefaultPaymentMethod` (tenant admin): attaches a payment method collected by the
/// portal (Stripe.js) to the tenant's Stripe customer, created on first use, and makes it
/// the default; invoices waiting for a payment method are charged next.
#[tracing::instrument(name = "payments.set_default_payment_method", skip_all)]
pub async fn set_default_payment_method(
    db: &DatabaseConnection,
    actor: &Principal,
    gateway: Option<&Gateway>,
    payment_method: &str,
    now: DateTime<Utc>,
) -> ApiResult<payment_account::Model> {
    let tenant = admin_tenant(actor)?;
    let method = payment_method.trim();
    if !method.starts_with("pm_") || !stripe_id(method) {
        return Err(ApiError::invalid(
            "paymentMethodId",
            "a Stripe payment method id (pm_…)",
        ));
    }
    let gateway = gateway.ok_or_else(unavailable)?;
    let customer = customer_of(db, gateway, tenant, now).await?;
    make_default(db, actor, gateway, tenant, &customer, method, now).await
}

/// `removePaymentMethod` (tenant admin): the default card is detached from the tenant's
/// Stripe customer and no longer charged; invoices and top-ups due wait for a new one.
/// `NOT_FOUND` when there is none. Audit-logged with what it was.
#[tracing::instrument(name = "payments.remove_payment_method", skip_all)]
pub async fn remove_payment_method(
    db: &DatabaseConnection,
    actor: &Principal,
    gateway: Option<&Gateway>,
    now: DateTime<Utc>,
) -> ApiResult<payment_account::Model> {
    let tenant = admin_tenant(actor)?;
    let gateway = gateway.ok_or_else(unavailable)?;
    let account = accounts::find(db, tenant).await?;
    let (Some(customer), Some(method)) = account.as_ref().map_or((None, None), |a| {
        (
            a.stripe_customer_id.as_deref(),
            a.default_payment_method.as_deref(),
        )
    }) else {
        return Err(ApiError::not_found("payment method"));
    };
    gateway.remove_payment_method(customer, method).await?;
    let txn = crate::db::begin_write(db).await?;
    let saved = accounts::clear_payment_method(&txn, tenant, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(tenant),
            action: "payment_method.remove",
            object_type: "payment_account",
            object_id: tenant.to_string(),
            before: Some(json!({
                "customer": customer,
                "payment_method": method,
                "label": account.as_ref().and_then(|a| a.default_payment_method_label.clone()),
            })),
            after: None,
        },
    )
    .await?;
    txn.commit().await?;
    Ok(saved)
}

/// The tenant that a tenant admin pays for; anyone else is refused.
fn admin_tenant(actor: &Principal) -> ApiResult<TenantId> {
    let tenant = actor.tenant()?;
    if actor.role != Role::TenantAdmin {
        return Err(ApiError::forbidden(
            "payment methods are set by tenant admins",
        ));
    }
    Ok(tenant)
}

/// Whether `id` looks like a Stripe object id (letters, digits and `_`, at most 255).
fn stripe_id(id: &str) -> bool {
    id.len() <= 255 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The tenant's Stripe customer, created (and recorded) on first use.
async fn customer_of(
    db: &DatabaseConnection,
    gateway: &Gateway,
    tenant: TenantId,
    now: DateTime<Utc>,
) -> ApiResult<String> {
    let owner = tenancy::store::find(db, tenant)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    if let Some(customer) = accounts::find(db, owner.id)
        .await?
        .and_then(|a| a.stripe_customer_id)
    {
        return Ok(customer);
    }
    // Stripe is called outside any transaction; the idempotency key (the tenant's id)
    // makes a repeat return the same customer.
    let customer = gateway.create_customer(owner.id, &owner.name).await?;
    let txn = crate::db::begin_write(db).await?;
    accounts::set_customer(&txn, owner.id, &customer, now).await?;
    txn.commit().await?;
    Ok(customer)
}

/// Makes `method` the default of the tenant's `customer` at Stripe and here, wakes the
/// invoices waiting for a payment method, audit-logged.
async fn make_default(
    db: &DatabaseConnection,
    actor: &Principal,
    gateway: &Gateway,
    tenant: TenantId,
    customer: &str,
    method: &str,
    now: DateTime<Utc>,
) -> ApiResult<payment_account::Model> {
    let label = gateway.set_default_payment_method(customer, method).await?;
    let txn = crate::db::begin_write(db).await?;
    let saved =
        accounts::set_payment_method(&txn, tenant, customer, method, label.clone(), now).await?;
    outbox::wake(&txn, tenant, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(tenant),
            action: "payment_method.set_default",
            object_type: "payment_account",
            object_id: tenant.to_string(),
            before: None,
            after: Some(json!({"customer": customer, "payment_method": method, "label": label})),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(saved)
}

/// Dunning, after a payment event changed an invoice (see
/// `neocloud_metering::payments::dunning`): applies the verdict to the tenant's status,
/// audit-logged. Runs in the webhook's transaction.
pub async fn dunning<C: sea_orm::ConnectionTrait>(
    conn: &C,
    event: &stripe_events::Event,
    failures: i32,
    now: DateTime<Utc>,
) -> ApiResult<()> {
    let Some(verdict) = dunning::judge(conn, event, failures, now).await? else {
        return Ok(());
    };
    let (tenant, invoice, suspend) = (&verdict.tenant, &verdict.invoice, verdict.suspends());
    let reason = if suspend {
        "dunning: payments of an invoice kept failing"
    } else {
        "dunning: paid"
    };
    tenancy::change_status(conn, tenant, verdict.status, reason, now).await?;
    audit::record_as(
        conn,
        None,
        audit::Entry {
            tenant_id: Some(tenant.id),
            action: if suspend {
                "tenant.suspend"
            } else {
                "tenant.resume"
            },
            object_type: "tenant",
            object_id: tenant.id.to_string(),
            before: Some(json!({"status": tenant.status})),
            after: Some(json!({
                "status": verdict.status,
                "reason": reason,
                "invoice": invoice.id,
                "payment_failures": invoice.payment_failures,
            })),
        },
    )
    .await?;
    tracing::warn!(tenant = %tenant.id, suspended = suspend, invoice = %invoice.id, "Dunning changed a tenant's status.");
    Ok(())
}

/// `setCollectionMode(tenantId, mode, daysUntilDue)` (operator): how the tenant's next
/// finalized invoices are collected — charged to its card, or sent as a Stripe-hosted
/// invoice payable by transfer within `daysUntilDue` days.
#[tracing::instrument(name = "payments.set_collection_mode", skip_all, fields(tenant = %tenant))]
pub async fn set_collection_mode(
    db: &DatabaseConnection,
    actor: &Principal,
    tenant: TenantId,
    mode: CollectionMode,
    days_until_due: Option<i32>,
    now: DateTime<Utc>,
) -> ApiResult<payment_account::Model> {
    actor.require_operator()?;
    let days = days_until_due.unwrap_or(DEFAULT_DAYS_UNTIL_DUE);
    if !(1..=MAX_DAYS_UNTIL_DUE).contains(&days) {
        return Err(ApiError::invalid(
            "daysUntilDue",
            format!("1 to {MAX_DAYS_UNTIL_DUE} days"),
        ));
    }
    let txn = crate::db::begin_write(db).await?;
    let owner = tenancy::store::find(&txn, tenant)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    let before = accounts::find(&txn, owner.id)
        .await?
        .map(|a| json!({"collection_mode": a.collection_mode, "days_until_due": a.days_until_due}));
    let saved = accounts::set_collection_mode(&txn, owner.id, mode, days, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(tenant),
            action: "payment_account.collection_mode",
            object_type: "payment_account",
            object_id: owner.id.to_string(),
            before,
            after: Some(json!({"collection_mode": mode, "days_until_due": days})),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(saved)
}

/// Applies one verified Stripe event (from the webhook or the event log) in its own
/// transaction, with dunning when it changed an invoice.
#[tracing::instrument(name = "payments.handle_event", skip_all, fields(event = %event.id, kind = %event.kind))]
pub async fn handle_event(
    db: &DatabaseConnection,
    event: &stripe_events::Event,
    dunning_failures: i32,
    now: DateTime<Utc>,
) -> ApiResult<stripe_events::Outcome> {
    let txn = crate::db::begin_write(db).await?;
    let outcome = stripe_events::apply_event(&txn, event, now).await?;
    if outcome == stripe_events::Outcome::Applied {
        dunning(&txn, event, dunning_failures, now).await?;
    }
    txn.commit().await?;
    Ok(outcome)
}

/// How far back a catch-up reads before the newest event already recorded (Stripe's
/// `created` is in whole seconds and deliveries overlap).
const CATCH_UP_OVERLAP: TimeDelta = TimeDelta::minutes(5);
/// How far back the first catch-up of a fresh installation reads.
const FIRST_CATCH_UP: TimeDelta = TimeDelta::days(1);
/// How often Stripe's event log is read for events a webhook missed.
const CATCH_UP_EVERY: TimeDelta = TimeDelta::minutes(5);

/// Reads Stripe's events since `since` and applies the ones neocloud acts on that it has
/// not recorded yet (a redelivered id changes nothing); returns how many it applied.
pub async fn catch_up(
    db: &DatabaseConnection,
    gateway: &Gateway,
    since: DateTime<Utc>,
    dunning_failures: i32,
    now: DateTime<Utc>,
) -> ApiResult<usize> {
    let events = gateway.list_events(since.timestamp()).await?;
    let mut applied = 0;
    for value in &events {
        let Ok(event) = stripe_events::event_from(value) else {
            continue;
        };
        if !stripe_events::HANDLED.contains(&event.kind.as_str()) {
            continue;
        }
        if handle_event(db, &event, dunning_failures, now).await? == stripe_events::Outcome::Applied
        {
            applied += 1;
        }
    }
    Ok(applied)
}

/// Where the periodic catch-up starts: a little before the newest event recorded.
async fn catch_up_start(db: &DatabaseConnection, now: DateTime<Utc>) -> ApiResult<DateTime<Utc>> {
    let newest = stripe_event::Entity::find()
        .order_by_desc(stripe_event::Column::Created)
        .one(db)
        .await?
        .and_then(|e| DateTime::from_timestamp(e.created, 0));
    Ok(newest.map_or(now - FIRST_CATCH_UP, |t| t - CATCH_UP_OVERLAP))
}

/// One round of the payment worker: read Stripe's events for calls whose answer was lost
/// (and every few minutes for missed webhooks), then deliver the due outbox rows.
async fn work(
    db: &DatabaseConnection,
    gateway: &Gateway,
    billing: &Billing,
    last_catch_up: &mut Option<DateTime<Utc>>,
) -> ApiResult<()> {
    let now = billing.clock.now();
    let unanswered = outbox::unanswered_since(db, now).await?;
    let periodic = last_catch_up.is_none_or(|t| now - t >= CATCH_UP_EVERY);
    if unanswered.is_some() || periodic {
        let mut since = catch_up_start(db, now).await?;
        if let Some(sent) = unanswered {
            since = since.min(sent - CATCH_UP_OVERLAP);
        }
        // Without Stripe's events the rows are still delivered: their idempotency keys
        // keep a repeated call from creating anything twice at Stripe.
        match catch_up(db, gateway, since, billing.dunning_failures, now).await {
            Ok(0) => {}
            Ok(applied) => {
                tracing::info!(applied, "Applied Stripe events that no webhook delivered.")
            }
            Err(err) => {
                tracing::warn!(code = err.code().as_str(), message = %err.message(), "Reading Stripe's events failed.")
            }
        }
        *last_catch_up = Some(now);
    }
    outbox::deliver_due(db, gateway, &billing.retries, billing.clock.as_ref()).await?;
    crate::providers::payouts::deliver_due(db, gateway, billing.clock.now()).await?;
    Ok(())
}

/// Runs the payment worker every `every` (only when payments are configured).
pub fn spawn_outbox_worker(
    db: DatabaseConnection,
    gateway: Arc<Gateway>,
    billing: Arc<Billing>,
    every: Duration,
) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        let mut last_catch_up = None;
        loop {
            tick.tick().await;
            if let Err(err) = work(&db, &gateway, &billing, &mut last_catch_up).await {
                tracing::warn!(code = err.code().as_str(), message = %err.message(), "The payment worker failed a round.");
            }
        }
    });
}
