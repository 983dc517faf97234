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
            payment_account::ActiveModel {
                tenant_id: Set(owner.id),
                stripe_customer_id: Set(Some(customer.clone())),
                default_payment_method: Set(Some(method.to_owned())),
                collection_mode: Set("charge_automatically".to_owned()),
                updated_at: Set(now),
            }
            .insert(&txn)
            .await?
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
