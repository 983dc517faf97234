//! Tenants: customer organisations. Creating one also mints its first `tenant_admin` key,
//! in one transaction, so no tenant exists that nobody can log in to.

mod archive;
pub mod erasure;
pub mod export;
pub mod profile;
pub mod residency;
pub(crate) mod store;

use neocloud_schema::entity::tenant;
use neocloud_schema::ids::TenantId;
use neocloud_schema::money::Currency;
use neocloud_schema::vocabulary::Role;
use rust_decimal::Decimal;
use sea_orm::DatabaseConnection;

use crate::audit;
use crate::auth::{self, Principal};
use crate::error::{ApiError, ApiResult};
use crate::pagination::{Page, PageOf};

/// A validated tenant name: 1–100 printable characters, trimmed.
#[derive(Debug, Clone)]
pub struct TenantName(String);

impl TenantName {
    pub fn parse(raw: &str) -> ApiResult<TenantName> {
        let name = raw.trim();
        if name.is_empty() || name.chars().count() > 100 {
            return Err(ApiError::invalid("name", "must be 1 to 100 characters"));
        }
        if name.chars().any(char::is_control) {
            return Err(ApiError::invalid(
                "name",
                "must not contain control characters",
            ));
        }
        Ok(TenantName(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

pub fn parse_currency(raw: &str) -> ApiResult<Currency> {
    raw.parse()
        .map_err(|e: neocloud_schema::money::UnknownCurrency| {
            ApiError::invalid("currency", e.to_string())
        })
}

/// `amount` in the tenant's `currency`: at most its minor-unit digits (`field` names it).
pub fn in_currency(field: &str, amount: Decimal, currency: &str) -> ApiResult<Decimal> {
    let currency = parse_currency(currency)?;
    let digits = currency.minor_unit_digits();
    if amount.scale() > digits {
        return Err(ApiError::invalid(
            field,
            format!("{currency} has {digits} decimal places"),
        ));
    }
    Ok(amount)
}

#[derive(Debug)]
pub struct CreatedTenant {
    pub tenant: tenant::Model,
    pub admin_key: auth::MintedKey,
}

/// `createTenant` (operator): the tenant and its first admin key.
pub async fn create_tenant(
    db: &DatabaseConnection,
    actor: &Principal,
    name: &str,
    currency: &str,
    billing_anchor_day: i32,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<CreatedTenant> {
    actor.require_operator()?;
    let name = TenantName::parse(name)?;
    let currency = parse_currency(currency)?;
    if !(1..=28).contains(&billing_anchor_day) {
        return Err(ApiError::invalid(
            "billingAnchorDay",
            "a day of the month from 1 to 28",
        ));
    }
    let txn = crate::db::begin_write(db).await?;
    let created = create_in(&txn, Some(actor), &name, currency, billing_anchor_day, now).await?;
    txn.commit().await?;
    Ok(created)
}

/// Creates a tenant inside a transaction; `actor` is `None` when the system seeds it.
pub(crate) async fn create_in(
    txn: &sea_orm::DatabaseTransaction,
    actor: Option<&Principal>,
    name: &TenantName,
    currency: Currency,
    billing_anchor_day: i32,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<CreatedTenant> {
    if store::find_by_name(txn, name.as_str()).await?.is_some() {
        return Err(ApiError::AlreadyExists {
            what: format!("tenant `{}`", name.as_str()),
        });
    }
    let tenant = store::insert(txn, name.as_str(), currency, billing_anchor_day, now).await?;
    let tenant_id = tenant.id;
    let admin_key = auth::mint(
        txn,
        Role::TenantAdmin,
        Some(tenant_id),
        None,
        "first admin key",
        actor.map(|a| a.key_id),
    )
    .await?;
    audit::record_as(
        txn,
        actor,
        audit::Entry {
            tenant_id: Some(tenant_id),
            action: "tenant.create",
            object_type: "tenant",
            object_id: tenant.id.to_string(),
            before: None,
            after: Some(store::describe(&tenant)),
        },
    )
    .await?;
    Ok(CreatedTenant { tenant, admin_key })
}

/// The longest `nameContains` a tenant search takes.
const MAX_SEARCH_CHARS: usize = 100;

/// `tenants` (operators): oldest first, those whose name contains `name_contains` (any
/// case) when given.
pub async fn list_tenants(
    db: &DatabaseConnection,
    actor: &Principal,
    page: Page,
    name_contains: Option<&str>,
) -> ApiResult<PageOf<tenant::Model>> {
    actor.require_operator()?;
    let search = name_contains.map(str::trim).filter(|s| !s.is_empty());
    if search.is_some_and(|s| s.chars().count() > MAX_SEARCH_CHARS) {
        return Err(ApiError::invalid(
            "nameContains",
            format!("at most {MAX_SEARCH_CHARS} characters"),
        ));
    }
    Ok(store::page(db, page, search).await?)
}

/// `tenant(id)`: a tenant by id, for an operator or for the tenant's own users (another
/// tenant's id is `NOT_FOUND`, as if it did not exist).
pub async fn tenant(
    db: &DatabaseConnection,
    actor: &Principal,
    id: TenantId,
) -> ApiResult<tenant::Model> {
    let id = actor.acting_tenant(Some(id))?;
    store::find(db, id)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))
}

/// The caller's own tenant (none for operators and agents).
pub async fn own_tenant(
    db: &DatabaseConnection,
    actor: &Principal,
) -> ApiResult<Option<tenant::Model>> {
    match actor.tenant_id {
        Some(id) => Ok(store::find(db, id).await?),
        None => Ok(None),
    }
}

/// Why a suspended tenant is suspended: the reason its newest suspension recorded (the
/// operator's, or dunning's). `None` for an active tenant.
pub async fn suspension_reason<C: sea_orm::ConnectionTrait>(
    conn: &C,
    tenant: &tenant::Model,
) -> ApiResult<Option<String>> {
    if tenant.status != neocloud_schema::vocabulary::TenantStatus::Suspended {
        return Ok(None);
    }
    let entry = audit::latest(conn, tenant.id, "tenant.suspend").await?;
    let reason = entry
        .and_then(|e| e.after)
        .and_then(|after| after.get("reason")?.as_str().map(str::to_owned))
        .filter(|r| !r.trim().is_empty())
        .unwrap_or_else(|| "no reason was given; contact the operator".to_owned());
    Ok(Some(reason))
}

/// `suspendTenant` / `resumeTenant` (operator): a suspended tenant places no new orders;
/// what runs keeps running.
pub async fn set_status(
    db: &DatabaseConnection,
    actor: &Principal,
    id: TenantId,
    status: neocloud_schema::vocabulary::TenantStatus,
    reason: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<tenant::Model> {
    actor.require_operator()?;
    let txn = crate::db::begin_write(db).await?;
    let tenant = store::find(&txn, id)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    if tenant.status == status {
        return Ok(tenant);
    }
    let updated = change_status(&txn, &tenant, status, reason, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(id),
            action: match status {
                neocloud_schema::vocabulary::TenantStatus::Suspended => "tenant.suspend",
                neocloud_schema::vocabulary::TenantStatus::Active => "tenant.resume",
            },
            object_type: "tenant",
            object_id: id.to_string(),
            before: Some(serde_json::json!({"status": tenant.status})),
            after: Some(serde_json::json!({"status": status, "reason": reason})),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(updated)
}

/// Longest net terms an operator may grant.
pub const MAX_NET_TERMS_DAYS: i32 = 120;

/// `setPaymentTerms` (operator): the days from an invoice's finalization to its due date,
/// for the tenant's invoices finalized from now on.
pub async fn set_payment_terms(
    db: &DatabaseConnection,
    actor: &Principal,
    id: TenantId,
    net_terms_days: i32,
) -> ApiResult<tenant::Model> {
    actor.require_operator()?;
    if !(0..=MAX_NET_TERMS_DAYS).contains(&net_terms_days) {
        return Err(ApiError::invalid(
            "netTermsDays",
            format!("from 0 (due on receipt) to {MAX_NET_TERMS_DAYS} days"),
        ));
    }
    let txn = crate::db::begin_write(db).await?;
    let tenant = store::find(&txn, id)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    let updated = store::set_net_terms(&txn, &tenant, net_terms_days).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(id),
            action: "tenant.payment_terms",
            object_type: "tenant",
            object_id: id.to_string(),
            before: Some(serde_json::json!({"net_terms_days": tenant.net_terms_days})),
            after: Some(serde_json::json!({"net_terms_days": net_terms_days})),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(updated)
}

/// Sets a tenant's status and tells the tenant (`tenant.suspended` with the reason, or
/// `tenant.resumed`), in the caller's transaction.
pub(crate) async fn change_status<C: sea_orm::ConnectionTrait>(
    conn: &C,
    tenant: &tenant::Model,
    status: neocloud_schema::vocabulary::TenantStatus,
    reason: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<tenant::Model, sea_orm::DbErr> {
    use neocloud_metering::events::{self, NewEvent};
    use neocloud_schema::vocabulary::TenantStatus;
    let updated = store::set_status(conn, tenant, status).await?;
    let event = match status {
        TenantStatus::Suspended => {
            let reason = if reason.trim().is_empty() {
                "no reason was given"
            } else {
                reason
            };
            NewEvent::tenant(
                "tenant.suspended",
                tenant.id,
                now,
                serde_json::json!({"reason": reason}),
            )
        }
        TenantStatus::Active => {
            NewEvent::tenant("tenant.resumed", tenant.id, now, serde_json::json!({}))
        }
    };
    events::record(conn, event, now).await?;
    Ok(updated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_names_are_trimmed_and_bounded() {
        assert_eq!(
            TenantName::parse("  Acme  ").expect("valid").as_str(),
            "Acme"
        );
        assert!(TenantName::parse("   ").is_err());
        assert!(TenantName::parse(&"x".repeat(101)).is_err());
        assert!(TenantName::parse("a\u{0}b").is_err());
    }

    #[test]
    fn only_iso_currencies_are_accepted() {
        assert!(parse_currency("USD").is_ok());
        assert!(parse_currency("usd").is_err());
        assert!(parse_currency("BTC").is_err());
    }
}
