//! Erasing a tenant's personal data on request (GDPR Art. 17), by an operator, in one
//! transaction (docs/compliance.md, "Erasure"). What identifies people goes: the billing
//! profile, SSH keys, the labels of orders, allocations and volumes, API key labels,
//! portal users' emails and passwords, webhook URLs, the payment method, the payloads of its events; its keys are revoked and
//! the tenant is renamed to a pseudonym and suspended. What the law requires to be kept
//! stays as it was: finalized invoices and credit notes (with the parties they were issued
//! to, 10 years of tax law), payments, usage and the audit log (append-only evidence).
//! Refused while anything of the tenant still runs, so nothing billed loses its owner.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::tenant;
use neocloud_schema::ids::TenantId;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr};
use serde_json::json;

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};

/// What an erasure changed, by table (rows).
pub type Erased = Vec<(&'static str, u64)>;

/// `eraseTenantData(tenantId, confirmName)` (operator): `confirm_name` must be the
/// tenant's current name, so a wrong id erases nothing.
pub async fn erase(
    db: &DatabaseConnection,
    actor: &Principal,
    id: TenantId,
    confirm_name: &str,
    now: DateTime<Utc>,
) -> ApiResult<(tenant::Model, Erased)> {
    actor.require_operator()?;
    let txn = crate::db::begin_write(db).await?;
    let found = super::store::find(&txn, id)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    if found.name != confirm_name {
        return Err(ApiError::invalid(
            "confirmName",
            "must be the tenant's current name",
        ));
    }
    if still_running(&txn, id).await? {
        return Err(ApiError::InvalidState {
            message: "the tenant still has running allocations or volumes: end them first".into(),
        });
    }
    let erased = erase_rows(&txn, id, now).await?;
    let pseudonym = format!("erased-{}", id.0.simple());
    let updated = super::store::erase(&txn, &found, &pseudonym, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(id),
            action: "tenant.erase",
            object_type: "tenant",
            object_id: id.to_string(),
            before: None,
            after: Some(json!({
                "name": pseudonym,
                "rows": erased.iter().map(|(t, n)| json!({"table": t, "rows": n})).collect::<Vec<_>>(),
            })),
        },
    )
    .await?;
    txn.commit().await?;
    Ok((updated, erased))
}

async fn still_running<C: ConnectionTrait>(conn: &C, id: TenantId) -> Result<bool, DbErr> {
    Ok(crate::ordering::store::any_running(conn, id).await?
        || crate::volumes::store::any_kept(conn, id).await?)
}

/// Every change but the tenant's own row, each by the module that owns its table, with
/// the rows it touched.
async fn erase_rows<C: ConnectionTrait>(
    conn: &C,
    id: TenantId,
    now: DateTime<Utc>,
) -> Result<Erased, DbErr> {
    use neocloud_metering::{events, parties, payments};
    Ok(vec![
        ("billing_profiles", parties::store::erase(conn, id).await?),
        ("ssh_keys", crate::access::store::erase(conn, id).await?),
        (
            "orders and allocations",
            crate::ordering::store::erase(conn, id).await?,
        ),
        ("volumes", crate::volumes::store::erase(conn, id).await?),
        ("api_keys", crate::auth::store::erase(conn, id, now).await?),
        (
            "portal_users",
            crate::auth::users::store::erase(conn, id, now).await?,
        ),
        ("mail_outbox", crate::mail::store::erase(conn, id).await?),
        (
            "webhook_endpoints",
            events::webhooks::erase(conn, id).await?,
        ),
        (
            "payment_accounts",
            payments::accounts::erase(conn, id).await?,
        ),
        ("events", events::store::erase(conn, id).await?),
    ])
}
