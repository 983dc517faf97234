//! Billing profiles at the api's edge: a tenant's admins (and operators) set the legal
//! identity its invoices are addressed to; its users read it. Checks are
//! `neocloud_metering::parties`.

use neocloud_metering::parties::{self, Buyer, BuyerInput};
use neocloud_schema::ids::TenantId;
use neocloud_schema::vocabulary::Role;
use sea_orm::DatabaseConnection;
use serde_json::json;

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};

/// `billingProfile`: the caller's tenant's (or, for operators, `tenant`'s); `None` until
/// one is set.
pub async fn get(
    db: &DatabaseConnection,
    actor: &Principal,
    tenant: Option<TenantId>,
) -> ApiResult<Option<Buyer>> {
    let tenant = actor.acting_tenant(tenant)?;
    Ok(parties::store::find(db, tenant).await?)
}

/// `setBillingProfile` (tenant admin for its own tenant, operator for any): replaces the
/// profile; invoices already finalized keep the one they were issued with.
pub async fn set(
    db: &DatabaseConnection,
    actor: &Principal,
    tenant: Option<TenantId>,
    input: &BuyerInput,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<Buyer> {
    let tenant = actor.acting_tenant(tenant)?;
    if !matches!(actor.role, Role::Operator | Role::TenantAdmin) {
        return Err(ApiError::forbidden(
            "billing profiles are set by tenant admins and operators",
        ));
    }
    let buyer = Buyer::parse(input).map_err(|r| ApiError::invalid(r.field, r.reason))?;
    let txn = crate::db::begin_write(db).await?;
    if super::store::find(&txn, tenant).await?.is_none() {
        return Err(ApiError::not_found("tenant"));
    }
    let before = parties::store::find(&txn, tenant).await?;
    parties::store::save(&txn, tenant, &buyer, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(tenant),
            action: "tenant.billing_profile",
            object_type: "tenant",
            object_id: tenant.to_string(),
            before: before.map(|b| json!(b)),
            after: Some(json!(buyer)),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(buyer)
}
