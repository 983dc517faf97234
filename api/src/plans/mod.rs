//! Plans as the API serves them: who may create and assign plan versions, the catalog's
//! check that every rated SKU exists in the plan's currency, and the audit trail. The
//! rules and the tables are `neocloud_metering::plans`'.

use neocloud_metering::plans::{self, NewPlanVersion};
use neocloud_schema::entity::{plan_rate, plan_version, tenant_plan};
use neocloud_schema::ids::{PlanVersionId, TenantId};
use neocloud_schema::vocabulary::{Metric, SkuForm};
use sea_orm::{ConnectionTrait, DatabaseConnection};
use serde_json::json;

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::tenancy;

/// `createPlanVersion` (operator): the plan is created with its first version.
#[tracing::instrument(name = "plans.create_version", skip_all, fields(plan = %input.plan))]
pub async fn create_version(
    db: &DatabaseConnection,
    actor: &Principal,
    input: NewPlanVersion,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<(plan_version::Model, Vec<plan_rate::Model>, String)> {
    actor.require_operator()?;
    let valid = plans::validate(&input)?;
    let txn = crate::db::begin_write(db).await?;
    check_skus(&txn, &valid).await?;
    let (version, rates) = plans::create(&txn, &valid, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "plan_version.create",
            object_type: "plan_version",
            object_id: version.id.to_string(),
            before: None,
            after: Some(
                json!({"plan": valid.plan, "version": version.version, "rates": rates.len()}),
            ),
        },
    )
    .await?;
    txn.commit().await?;
    Ok((version, rates, valid.plan))
}

/// Every rated SKU is in the catalog, listed in the plan's currency, and rated by a metric
/// of its form (a metered SKU by METERED only).
pub(crate) async fn check_skus<C: ConnectionTrait>(
    conn: &C,
    version: &plans::PlanVersion,
) -> ApiResult<()> {
    for (i, rate) in version.rates.iter().enumerate() {
        let sku = crate::catalog::store::find(conn, rate.sku)
            .await?
            .ok_or_else(|| ApiError::invalid(format!("rates[{i}].sku"), "no such SKU"))?;
        if sku.currency != version.currency.code() {
            return Err(ApiError::invalid(
                format!("rates[{i}].sku"),
                format!(
                    "the SKU is listed in {}, the plan in {}",
                    sku.currency, version.currency
                ),
            ));
        }
        let fits = match sku.form {
            SkuForm::Metered => rate.metric == Metric::Metered,
            SkuForm::Volume => rate.metric == Metric::Allocated,
            _ => rate.metric != Metric::Metered,
        };
        if !fits {
            return Err(ApiError::invalid(
                format!("rates[{i}].metric"),
                "a METERED SKU is rated by METERED (and METERED rates only METERED SKUs); a VOLUME SKU by ALLOCATED, its GB-hours",
            ));
        }
    }
    Ok(())
}

/// What a proposed version would have charged for a tenant's latest finalized invoice.
pub struct Preview {
    pub invoice: neocloud_schema::entity::invoice::Model,
    pub rated: neocloud_metering::rating::period::RatedInvoice,
}

/// `previewPlanVersion` (operator): the tenant's latest finalized invoice rated again with
/// the proposed version in force over its whole period. Nothing is stored.
pub async fn preview_version(
    db: &DatabaseConnection,
    actor: &Principal,
    tenant: TenantId,
    input: NewPlanVersion,
) -> ApiResult<Preview> {
    use neocloud_metering::plans::preview::{self, PreviewError};
    actor.require_operator()?;
    let valid = plans::validate(&input)?;
    check_skus(db, &valid).await?;
    tenancy::store::find(db, tenant)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    let invoice = neocloud_metering::invoicing::store::latest_finalized(db, tenant)
        .await?
        .ok_or_else(|| ApiError::InvalidState {
            message: "the tenant has no finalized invoice to compare with".into(),
        })?;
    let rated = preview::rerate(&invoice, &valid).map_err(|e| match e {
        PreviewError::Currency { .. } => ApiError::invalid("input.currency", e.to_string()),
        PreviewError::NotRerated(message) => ApiError::InvalidState { message },
        PreviewError::Rate(e) => ApiError::InvalidState {
            message: format!("the invoice cannot be rated again: {e}"),
        },
    })?;
    Ok(Preview { invoice, rated })
}

/// `assignPlan` (operator): the tenant is rated by this version from the later of now and
/// the version's effective date (from the start of that minute).
#[tracing::instrument(name = "plans.assign", skip_all, fields(tenant = %tenant))]
pub async fn assign(
    db: &DatabaseConnection,
    actor: &Principal,
    tenant: TenantId,
    version: PlanVersionId,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<tenant_plan::Model> {
    actor.require_operator()?;
    let txn = crate::db::begin_write(db).await?;
    let tenant_row = tenancy::store::find(&txn, tenant)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    let version = plans::store::version(&txn, version.into())
        .await?
        .ok_or_else(|| ApiError::not_found("plan version"))?;
    if version.currency != tenant_row.currency {
        return Err(ApiError::invalid(
            "planVersionId",
            format!(
                "the plan is in {}, the tenant is billed in {}",
                version.currency, tenant_row.currency
            ),
        ));
    }
    let assigned = plans::assign(&txn, tenant, &version, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(tenant),
            action: "plan.assign",
            object_type: "tenant",
            object_id: tenant.to_string(),
            before: None,
            after: Some(
                json!({"plan_version": version.id, "effective_from": assigned.effective_from}),
            ),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(assigned)
}

/// A plan with its versions and their rates.
pub type PlanView = (
    neocloud_schema::entity::plan::Model,
    Vec<(plan_version::Model, Vec<plan_rate::Model>)>,
);

/// `plans`: every plan, published to every user (customers re-derive charges from them).
pub async fn list(db: &DatabaseConnection, actor: &Principal) -> ApiResult<Vec<PlanView>> {
    actor.require_user()?;
    Ok(plans::store::all(db).await?)
}
