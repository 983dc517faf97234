//! Plans and their versions (contract: docs/architecture.md, billing). A version is
//! never edited: a new one is created with an effective date, and a tenant moves to a
//! version only by an explicit assignment, from the later of now and the version's
//! effective date. Rates are validated by the rating engine's own rules.

pub(crate) mod store;

use chrono::{DateTime, Utc};
use neocloud_metering::rating::{PriceModel, Tier};
use neocloud_schema::entity::{plan_rate, plan_version, tenant_plan};
use neocloud_schema::ids::{PlanVersionId, TenantId};
use neocloud_schema::money::parse_plain_decimal;
use neocloud_schema::slug::Slug;
use neocloud_schema::vocabulary::{Metric, TiersMode};
use rust_decimal::Decimal;
use sea_orm::DatabaseConnection;
use serde_json::json;
use uuid::Uuid;

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::tenancy;

pub const MAX_RATES: usize = 500;
pub const MAX_TIERS: usize = 32;

#[derive(Debug, Clone)]
pub struct TierInput {
    pub up_to: Option<String>,
    pub unit_price: String,
    pub flat_fee: Option<String>,
}

#[derive(Debug, Clone)]
pub struct RateInput {
    pub sku: Uuid,
    pub metric: Metric,
    pub tiers_mode: TiersMode,
    pub unit_price: Option<String>,
    pub spot_unit_price: Option<String>,
    pub tiers: Option<Vec<TierInput>>,
    pub package_size: Option<String>,
    pub package_price: Option<String>,
}

#[derive(Debug, Clone)]
pub struct NewPlanVersion {
    pub plan: String,
    pub currency: String,
    pub effective_from: DateTime<Utc>,
    pub minimum_billable_seconds: i64,
    pub rates: Vec<RateInput>,
    pub commitment: Option<(String, String)>,
}

fn price(field: &str, value: &str) -> ApiResult<Decimal> {
    let d = parse_plain_decimal(value.trim()).map_err(|e| ApiError::invalid(field, e))?;
    if d.is_sign_negative() {
        return Err(ApiError::invalid(field, "must not be negative"));
    }
    Ok(d)
}

/// A rate's price model, from its input; every field that does not belong to the mode
/// must be absent.
pub(crate) fn model_of(i: usize, rate: &RateInput) -> ApiResult<PriceModel> {
    let at = |name: &str| format!("rates[{i}].{name}");
    let absent = |name: &str, present: bool| {
        if present {
            Err(ApiError::invalid(
                at(name),
                format!("not used by {}", rate.tiers_mode),
            ))
        } else {
            Ok(())
        }
    };
    let required = |name: &str, value: &Option<String>| {
        value
            .as_deref()
            .ok_or_else(|| ApiError::invalid(at(name), format!("required by {}", rate.tiers_mode)))
            .and_then(|v| price(&at(name), v))
    };
    let model = match rate.tiers_mode {
        TiersMode::PerUnit => {
            absent("tiers", rate.tiers.is_some())?;
            absent("packageSize", rate.package_size.is_some())?;
            PriceModel::PerUnit {
                unit_price: required("unitPrice", &rate.unit_price)?,
            }
        }
        TiersMode::Graduated | TiersMode::Volume => {
            absent("unitPrice", rate.unit_price.is_some())?;
            absent("spotUnitPrice", rate.spot_unit_price.is_some())?;
            absent("packageSize", rate.package_size.is_some())?;
            let inputs = rate
                .tiers
                .as_ref()
                .ok_or_else(|| ApiError::invalid(at("tiers"), "required by tiered modes"))?;
            if inputs.is_empty() || inputs.len() > MAX_TIERS {
                return Err(ApiError::invalid(
                    at("tiers"),
                    format!("1 to {MAX_TIERS} tiers"),
                ));
            }
            let mut tiers = Vec::new();
            for (j, t) in inputs.iter().enumerate() {
                let tf = |name: &str| format!("rates[{i}].tiers[{j}].{name}");
                tiers.push(Tier {
                    up_to: t
                        .up_to
                        .as_deref()
                        .map(|u| price(&tf("upTo"), u))
                        .transpose()?,
                    unit_price: price(&tf("unitPrice"), &t.unit_price)?,
                    flat_fee: t
                        .flat_fee
                        .as_deref()
                        .map(|f| price(&tf("flatFee"), f))
                        .transpose()?
                        .unwrap_or_default(),
                });
            }
            if rate.tiers_mode == TiersMode::Graduated {
                PriceModel::Graduated { tiers }
            } else {
                PriceModel::Volume { tiers }
            }
        }
        TiersMode::Package => {
            absent("unitPrice", rate.unit_price.is_some())?;
            absent("spotUnitPrice", rate.spot_unit_price.is_some())?;
            absent("tiers", rate.tiers.is_some())?;
            PriceModel::Package {
                size: required("packageSize", &rate.package_size)?,
                price: required("packagePrice", &rate.package_price)?,
            }
        }
    };
    model
        .validate()
        .map_err(|e| ApiError::invalid(at("tiers"), e.to_string()))?;
    if let Some(spot) = &rate.spot_unit_price {
        price(&at("spotUnitPrice"), spot)?;
    }
    Ok(model)
}

/// `createPlanVersion` (operator): the plan is created with its first version.
pub async fn create_version(
    db: &DatabaseConnection,
    actor: &Principal,
    input: NewPlanVersion,
) -> ApiResult<(plan_version::Model, Vec<plan_rate::Model>, String)> {
    actor.require_operator()?;
    let name = Slug::parse(&input.plan)
        .map_err(|rule| ApiError::invalid("plan", rule))?
        .into_string();
    let currency = tenancy::parse_currency(&input.currency)?;
    if !(0..=86_400).contains(&input.minimum_billable_seconds) {
        return Err(ApiError::invalid("minimumBillableSeconds", "0 to 86400"));
    }
    if input.rates.is_empty() || input.rates.len() > MAX_RATES {
        return Err(ApiError::invalid(
            "rates",
            format!("1 to {MAX_RATES} rates"),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    let mut models = Vec::new();
    for (i, rate) in input.rates.iter().enumerate() {
        if !seen.insert((rate.sku, rate.metric)) {
            return Err(ApiError::invalid(
                format!("rates[{i}]"),
                "one rate per SKU and metric",
            ));
        }
        models.push(model_of(i, rate)?);
    }
    let commitment = match &input.commitment {
        Some((minimum, discount)) => {
            let minimum = price("commitment.monthlyMinimum", minimum)?;
            let discount = price("commitment.discountPct", discount)?;
            if discount > Decimal::ONE_HUNDRED {
                return Err(ApiError::invalid("commitment.discountPct", "0 to 100"));
            }
            Some((minimum, discount))
        }
        None => None,
    };
    let txn = crate::db::begin_write(db).await?;
    for (i, rate) in input.rates.iter().enumerate() {
        let sku = crate::catalog::store::find(&txn, rate.sku)
            .await?
            .ok_or_else(|| ApiError::invalid(format!("rates[{i}].sku"), "no such SKU"))?;
        if sku.currency != currency.code() {
            return Err(ApiError::invalid(
                format!("rates[{i}].sku"),
                format!(
                    "the SKU is listed in {}, the plan in {currency}",
                    sku.currency
                ),
            ));
        }
    }
    let plan = store::plan_by_name_or_create(&txn, &name).await?;
    let version = store::insert_version(
        &txn,
        plan,
        currency.code(),
        input.effective_from,
        input.minimum_billable_seconds,
        commitment,
    )
    .await?;
    let mut rates = Vec::new();
    for (rate, model) in input.rates.iter().zip(&models) {
        rates.push(store::insert_rate(&txn, version.id, rate, model).await?);
    }
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "plan_version.create",
            object_type: "plan_version",
            object_id: version.id.to_string(),
            before: None,
            after: Some(json!({"plan": name, "version": version.version, "rates": rates.len()})),
        },
    )
    .await?;
    txn.commit().await?;
    Ok((version, rates, name))
}

/// `assignPlan` (operator): the tenant is rated by this version from the later of now and
/// the version's effective date (from the start of that minute).
pub async fn assign(
    db: &DatabaseConnection,
    actor: &Principal,
    tenant: TenantId,
    version: PlanVersionId,
) -> ApiResult<tenant_plan::Model> {
    actor.require_operator()?;
    let txn = crate::db::begin_write(db).await?;
    let tenant_row = tenancy::store::find(&txn, tenant)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    let version = store::version(&txn, version.into())
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
    // From the start of the minute: usage buckets are per minute, so a plan change on a
    // minute boundary splits them exactly.
    let from = neocloud_metering::invoicing::whole_minute(Utc::now().max(version.effective_from));
    let assigned = store::assign(&txn, tenant.into(), version.id, from).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(tenant),
            action: "plan.assign",
            object_type: "tenant",
            object_id: tenant.to_string(),
            before: None,
            after: Some(json!({"plan_version": version.id, "effective_from": from})),
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
    Ok(store::all(db).await?)
}
