//! Data residency (docs/compliance.md, "Data residency"): a tenant's home region and the
//! regions it allows; orders and volumes outside them are refused before anything is
//! placed or written.

use neocloud_schema::entity::tenant;
use neocloud_schema::ids::TenantId;
use sea_orm::{ConnectionTrait, DatabaseConnection};
use serde_json::json;

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};

/// Most regions a tenant may allow.
pub const MAX_REGIONS: usize = 32;

/// A region name as the catalog writes them: 1–64 of `a-z`, `0-9`, `-`.
fn region(field: &'static str, name: &str) -> ApiResult<String> {
    let name = name.trim();
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if valid {
        Ok(name.to_owned())
    } else {
        Err(ApiError::invalid(
            field,
            "a region name: 1 to 64 of a-z, 0-9 and -",
        ))
    }
}

/// The regions a tenant allows; `None`: any.
pub fn allowed(tenant: &tenant::Model) -> Option<Vec<String>> {
    tenant
        .allowed_regions
        .as_ref()
        .and_then(|a| serde_json::from_value(a.clone()).ok())
}

/// Refuses `region` (of `field`: the SKU or the volume) when the tenant does not allow it.
pub async fn check<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    field: &'static str,
    region: &str,
) -> ApiResult<()> {
    let Some(row) = super::store::find(conn, tenant).await? else {
        return Ok(());
    };
    match allowed(&row) {
        Some(regions) if !regions.iter().any(|r| r == region) => Err(ApiError::invalid(
            field,
            format!(
                "`{region}` is outside the regions this tenant's data may be in ({})",
                regions.join(", ")
            ),
        )),
        _ => Ok(()),
    }
}

/// `setDataResidency` (operator): the home region and the allowed regions (null: any);
/// the home region must be one of them. Audited.
pub async fn set(
    db: &DatabaseConnection,
    actor: &Principal,
    id: TenantId,
    home: Option<&str>,
    allowed: Option<&[String]>,
) -> ApiResult<tenant::Model> {
    actor.require_operator()?;
    let home = home.map(|h| region("homeRegion", h)).transpose()?;
    let allowed = match allowed {
        Some(list) => {
            if list.is_empty() || list.len() > MAX_REGIONS {
                return Err(ApiError::invalid(
                    "allowedRegions",
                    format!("1 to {MAX_REGIONS} regions, or null for any"),
                ));
            }
            let mut regions = list
                .iter()
                .map(|r| region("allowedRegions", r))
                .collect::<ApiResult<Vec<_>>>()?;
            regions.sort();
            regions.dedup();
            Some(regions)
        }
        None => None,
    };
    if let (Some(home), Some(allowed)) = (&home, &allowed)
        && !allowed.contains(home)
    {
        return Err(ApiError::invalid(
            "homeRegion",
            "must be one of the allowed regions",
        ));
    }
    let txn = crate::db::begin_write(db).await?;
    let found = super::store::find(&txn, id)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    let updated = super::store::set_residency(&txn, &found, home.clone(), allowed.clone()).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(id),
            action: "tenant.data_residency",
            object_type: "tenant",
            object_id: id.to_string(),
            before: Some(
                json!({"home_region": found.home_region, "allowed_regions": found.allowed_regions}),
            ),
            after: Some(json!({"home_region": home, "allowed_regions": allowed})),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(updated)
}
