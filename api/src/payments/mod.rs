//! Payments as the API serves them: a tenant's payment account (`paymentAccount`,
//! `setDefaultPaymentMethod`) and the outbox worker that charges finalized invoices. The
//! Stripe calls, the outbox and webhook handling live in `neocloud_metering::payments`.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use neocloud_metering::payments::gateway::{Gateway, GatewayError};
use neocloud_metering::payments::outbox;
use neocloud_schema::entity::payment_account;
use neocloud_schema::vocabulary::Role;
use sea_orm::{ActiveModelTrait, DatabaseConnection, EntityTrait, IntoActiveModel, Set};
use serde_json::json;

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::tenancy;

fn unavailable() -> ApiError {
    ApiError::Unavailable {
        message: "payments are not configured on this installation".into(),
    }
}

impl From<GatewayError> for ApiError {
    fn from(e: GatewayError) -> Self {
        match e {
            GatewayError::Refused(reason) => ApiError::invalid("paymentMethodId", reason),
            GatewayError::Transient(reason) => ApiError::Unavailable {
                message: format!("the payment provider did not answer: {reason}"),
            },
        }
    }
}

/// A tenant's first payment account: charged automatically, nothing set yet.
fn new_account(tenant: uuid::Uuid, now: chrono::DateTime<Utc>) -> payment_account::ActiveModel {
    payment_account::ActiveModel {
        tenant_id: Set(tenant),
        stripe_customer_id: Set(None),
        default_payment_method: Set(None),
        collection_mode: Set("charge_automatically".to_owned()),
        updated_at: Set(now),
        dunning_suspended_at: Set(None),
    }
}

/// `paymentAccount`: the caller's tenant's account (operators name the tenant).
pub async fn account(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<neocloud_schema::ids::TenantId>,
) -> ApiResult<Option<payment_account::Model>> {
    let tenant = actor.acting_tenant(asked)?;
    Ok(payment_account::Entity::find_by_id(tenant.0)
        .one(db)
        .await?)
}

/// `setDefaultPaymentMethod` (tenant admin): attaches a payment method collected by the
/// portal (Stripe.js) to the tenant's Stripe customer, created on first use, and makes it
/// the default; invoices waiting for a payment method are charged next.
pub async fn set_default_payment_method(
    db: &DatabaseConnection,
    actor: &Principal,
    gateway: Option<&Gateway>,
    payment_method: &str,
) -> ApiResult<payment_account::Model> {
    let tenant = actor.tenant()?;
    if actor.role != Role::TenantAdmin {
        return Err(ApiError::forbidden(
            "payment methods are set by tenant admins",
        ));
    }
    let method = payment_method.trim();
    if !method.starts_with("pm_")
        || method.len() > 255
        || !method
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(ApiError::invalid(
            "paymentMethodId",
            "a Stripe payment method id (pm_…)",
        ));
    }
    let gateway = gateway.ok_or_else(unavailable)?;
    let owner = tenancy::store::find(db, tenant)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    let existing = payment_account::Entity::find_by_id(owner.id)
        .one(db)
        .await?;
    // Stripe is called outside any transaction; its idempotency keys make a repeat safe.
    let customer = match existing.as_ref().and_then(|a| a.stripe_customer_id.clone()) {
        Some(customer) => customer,
        None => gateway.create_customer(owner.id, &owner.name).await?,
    };
    gateway
        .set_default_payment_method(&customer, method)
        .await?;
    let now = Utc::now();
    let txn = crate::db::begin_write(db).await?;
    let saved = match existing {
        Some(found) => {
            let mut active = found.into_active_model();
            active.stripe_customer_id = Set(Some(customer.clone()));
            active.default_payment_method = Set(Some(method.to_owned()));
            active.updated_at = Set(now);
            active.update(&txn).await?
        }
        None => {
            let mut account = new_account(owner.id, now);
            account.stripe_customer_id = Set(Some(customer.clone()));
            account.default_payment_method = Set(Some(method.to_owned()));
            account.insert(&txn).await?
        }
    };
    outbox::wake(&txn, owner.id, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(tenant),
            action: "payment_method.set_default",
            object_type: "payment_account",
            object_id: owner.id.to_string(),
            before: None,
            after: Some(json!({"customer": customer, "payment_method": method})),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(saved)
}

/// Dunning, after a payment event changed an invoice: a tenant whose invoice failed
/// `failures` times is suspended for new orders (audit-logged); once it has paid, a tenant
/// that dunning suspended is resumed. Runs in the webhook's transaction.
pub async fn dunning<C: sea_orm::ConnectionTrait>(
    conn: &C,
    event: &neocloud_metering::payments::Event,
    failures: i32,
) -> ApiResult<()> {
    use neocloud_schema::entity::invoice;
    use neocloud_schema::vocabulary::{InvoiceStatus, TenantStatus};
    let Some(found) = (match event.invoice {
        Some(id) => invoice::Entity::find_by_id(id).one(conn).await?,
        None => None,
    }) else {
        return Ok(());
    };
    let tenant_id = neocloud_schema::ids::TenantId(found.tenant_id);
    let Some(tenant) = tenancy::store::find(conn, tenant_id).await? else {
        return Ok(());
    };
    let account = payment_account::Entity::find_by_id(found.tenant_id)
        .one(conn)
        .await?;
    let now = Utc::now();
    let suspend = failures > 0
        && found.status == InvoiceStatus::Open
        && found.payment_failures >= failures
        && tenant.status == TenantStatus::Active;
    let resume = found.status == InvoiceStatus::Paid
        && tenant.status == TenantStatus::Suspended
        && account
            .as_ref()
            .is_some_and(|a| a.dunning_suspended_at.is_some());
    if !(suspend || resume) {
        return Ok(());
    }
    let status = if suspend {
        TenantStatus::Suspended
    } else {
        TenantStatus::Active
    };
    tenancy::store::set_status(conn, &tenant, status).await?;
    match account {
        Some(found_account) => {
            let mut active = found_account.into_active_model();
            active.dunning_suspended_at = Set(suspend.then_some(now));
            active.updated_at = Set(now);
            active.update(conn).await?;
        }
        None => {
            let mut account = new_account(found.tenant_id, now);
            account.dunning_suspended_at = Set(suspend.then_some(now));
            account.insert(conn).await?;
        }
    }
    audit::record_as(
        conn,
        None,
        audit::Entry {
            tenant_id: Some(tenant_id),
            action: if suspend { "tenant.suspend" } else { "tenant.resume" },
            object_type: "tenant",
            object_id: tenant.id.to_string(),
            before: Some(json!({"status": tenant.status})),
            after: Some(json!({
                "status": status,
                "reason": if suspend { "dunning: payments of an invoice kept failing" } else { "dunning: paid" },
                "invoice": found.id,
                "payment_failures": found.payment_failures,
            })),
        },
    )
    .await?;
    tracing::warn!(tenant = %tenant.id, suspended = suspend, invoice = %found.id, "Dunning changed a tenant's status.");
    Ok(())
}

/// Delivers the payment outbox every `every` (only when payments are configured).
pub fn spawn_outbox_worker(db: DatabaseConnection, gateway: Arc<Gateway>, every: Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            if let Err(err) = outbox::deliver_due(&db, &gateway, Utc::now()).await {
                tracing::warn!(error = %err, "Delivering the payment outbox failed.");
            }
        }
    });
}
