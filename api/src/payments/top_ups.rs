//! Prepaid top-ups (tenant admin): `startTopUp` checks who asks and what, then records the
//! top-up with its payment queued in one transaction (`neocloud_metering::payments::top_ups`); the outbox worker charges the tenant's default payment method and
//! the payment's `payment_intent.succeeded` event grants the credit, once
//! (`neocloud_metering::payments`). The same `idempotencyKey` returns the same top-up.

use chrono::Utc;
use neocloud_metering::payments::{accounts, top_ups};
use neocloud_schema::entity::top_up;
use neocloud_schema::ids::TenantId;
use neocloud_schema::money::parse_plain_decimal;
use neocloud_schema::vocabulary::Role;
use rust_decimal::Decimal;
use sea_orm::DatabaseConnection;
use serde_json::json;

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::ordering::MAX_IDEMPOTENCY_KEY_BYTES;
use crate::tenancy;

/// The most one top-up may buy, in the tenant's currency.
pub const MAX_TOP_UP: Decimal = Decimal::from_parts(1_000_000, 0, 0, false, 0);
/// The least: Stripe's smallest charge is about half a unit of most currencies.
pub const MIN_TOP_UP: Decimal = Decimal::ONE;
/// Top-ups listed, newest first.
const LISTED: u64 = 100;

/// `startTopUp(amount, idempotencyKey)`.
#[tracing::instrument(name = "payments.start_top_up", skip_all)]
pub async fn start(
    db: &DatabaseConnection,
    actor: &Principal,
    payments_configured: bool,
    amount: &str,
    idempotency_key: Option<String>,
    now: chrono::DateTime<Utc>,
) -> ApiResult<top_up::Model> {
    let (tenant, amount) = checked_request(actor, amount, idempotency_key.as_deref())?;
    if !payments_configured {
        return Err(ApiError::Unavailable {
            message: "payments are not configured on this installation".into(),
        });
    }
    let txn = crate::db::begin_write(db).await?;
    let owner = tenancy::store::find(&txn, tenant)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    let mut amount = tenancy::in_currency("amount", amount, &owner.currency)?;
    amount.rescale(neocloud_schema::money::minor_unit_digits_of(
        &owner.currency,
    ));
    if let Some(key) = &idempotency_key
        && let Some(found) = top_ups::find_by_key(&txn, owner.id, key).await?
    {
        if found.amount.get() != amount {
            return Err(ApiError::IdempotencyConflict {
                message: "this idempotencyKey was used for a top-up of another amount".into(),
            });
        }
        return Ok(found);
    }
    let has_method = accounts::find(&txn, owner.id)
        .await?
        .is_some_and(|a| a.default_payment_method.is_some());
    if !has_method {
        return Err(ApiError::InvalidState {
            message: "set a default payment method (setDefaultPaymentMethod) before a top-up"
                .into(),
        });
    }
    let created = top_ups::start(
        &txn,
        owner.id,
        (amount, &owner.currency),
        idempotency_key,
        now,
    )
    .await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(tenant),
            action: "top_up.start",
            object_type: "top_up",
            object_id: created.id.to_string(),
            before: None,
            after: Some(json!({"amount": created.amount, "currency": created.currency})),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(created)
}

/// Who asks (a tenant admin) and for what: an amount within bounds, a usable key.
fn checked_request(
    actor: &Principal,
    amount: &str,
    idempotency_key: Option<&str>,
) -> ApiResult<(TenantId, Decimal)> {
    let tenant = actor.tenant()?;
    if actor.role != Role::TenantAdmin {
        return Err(ApiError::forbidden("top-ups are bought by tenant admins"));
    }
    let amount = parse_plain_decimal(amount.trim()).map_err(|e| ApiError::invalid("amount", e))?;
    if !(MIN_TOP_UP..=MAX_TOP_UP).contains(&amount) {
        return Err(ApiError::invalid(
            "amount",
            format!("between {MIN_TOP_UP} and {MAX_TOP_UP}"),
        ));
    }
    if let Some(key) = idempotency_key
        && (key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY_BYTES)
    {
        return Err(ApiError::invalid(
            "idempotencyKey",
            format!("1 to {MAX_IDEMPOTENCY_KEY_BYTES} bytes"),
        ));
    }
    Ok((tenant, amount))
}

/// `topUps`: the tenant's top-ups, newest first (operators name the tenant).
pub async fn list(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
) -> ApiResult<Vec<top_up::Model>> {
    let tenant = actor.acting_tenant(asked)?;
    Ok(top_ups::latest(db, tenant, LISTED).await?)
}
