//! Plans and their versions: the tenant-facing price lists that rating reads. A version is
//! never edited: a new one is created with an effective date, and a tenant moves to a
//! version only by an explicit assignment, from the later of now and the version's
//! effective date (from the start of that minute). Rates are checked by the rating
//! engine's own rules before anything is stored; `store` owns the four plan tables.

pub mod preview;
pub mod store;

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{plan_rate, plan_version, tenant_plan};
use neocloud_schema::ids::TenantId;
use neocloud_schema::money::{Currency, parse_plain_decimal};
use neocloud_schema::slug::Slug;
use neocloud_schema::vocabulary::{Metric, TiersMode};
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DbErr};
use uuid::Uuid;

use crate::MeteringError;
use crate::invoicing::whole_minute;
use crate::rating::{PriceModel, Tier};

pub const MAX_RATES: usize = 500;
pub const MAX_TIERS: usize = 32;
/// The longest minimum billable time of an allocation.
pub const MAX_MINIMUM_BILLABLE_SECONDS: i64 = 86_400;

#[derive(Debug, Clone)]
pub struct TierInput {
    pub up_to: Option<String>,
    pub unit_price: String,
    pub flat_fee: Option<String>,
}

/// A rate as a client sends it: prices as decimal text, checked by [`validate`].
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
    /// (monthly minimum, discount %), as decimal text.
    pub commitment: Option<(String, String)>,
}

/// A rate that passed validation.
#[derive(Debug, Clone)]
pub struct Rate {
    pub sku: Uuid,
    pub metric: Metric,
    pub model: PriceModel,
    pub spot_unit_price: Option<Decimal>,
}

/// A plan version that passed validation, ready to store.
#[derive(Debug, Clone)]
pub struct PlanVersion {
    pub plan: String,
    pub currency: Currency,
    pub effective_from: DateTime<Utc>,
    pub minimum_billable_seconds: i64,
    pub rates: Vec<Rate>,
    /// (monthly minimum, discount %).
    pub commitment: Option<(Decimal, Decimal)>,
}

fn price(field: &str, value: &str) -> Result<Decimal, MeteringError> {
    let d = parse_plain_decimal(value.trim()).map_err(|e| MeteringError::invalid(field, e))?;
    if d.is_sign_negative() {
        return Err(MeteringError::invalid(field, "must not be negative"));
    }
    Ok(d)
}

/// Checks a new plan version: the name, currency, limits, one rate per SKU and metric,
/// every price model by rating's rules, the commitment. The SKUs themselves are the
/// catalog's to check.
pub fn validate(input: &NewPlanVersion) -> Result<PlanVersion, MeteringError> {
    let plan = Slug::parse(&input.plan)
        .map_err(|rule| MeteringError::invalid("plan", rule))?
        .into_string();
    let currency: Currency =
        input
            .currency
            .parse()
            .map_err(|e: neocloud_schema::money::UnknownCurrency| {
                MeteringError::invalid("currency", e.to_string())
            })?;
    if !(0..=MAX_MINIMUM_BILLABLE_SECONDS).contains(&input.minimum_billable_seconds) {
        return Err(MeteringError::invalid(
            "minimumBillableSeconds",
            format!("0 to {MAX_MINIMUM_BILLABLE_SECONDS}"),
        ));
    }
    if input.rates.is_empty() || input.rates.len() > MAX_RATES {
        return Err(MeteringError::invalid(
            "rates",
            format!("1 to {MAX_RATES} rates"),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    let mut rates = Vec::new();
    for (i, rate) in input.rates.iter().enumerate() {
        if !seen.insert((rate.sku, rate.metric)) {
            return Err(MeteringError::invalid(
                format!("rates[{i}]"),
                "one rate per SKU and metric",
            ));
        }
        rates.push(rate_of(i, rate)?);
    }
    Ok(PlanVersion {
        plan,
        currency,
        effective_from: input.effective_from,
        minimum_billable_seconds: input.minimum_billable_seconds,
        rates,
        commitment: input.commitment.as_ref().map(commitment).transpose()?,
    })
}

fn commitment((minimum, discount): &(String, String)) -> Result<(Decimal, Decimal), MeteringError> {
    let minimum = price("commitment.monthlyMinimum", minimum)?;
    let discount = price("commitment.discountPct", discount)?;
    if discount > Decimal::ONE_HUNDRED {
        return Err(MeteringError::invalid("commitment.discountPct", "0 to 100"));
    }
    Ok((minimum, discount))
}

fn rate_of(i: usize, rate: &RateInput) -> Result<Rate, MeteringError> {
    let model = model_of(i, rate)?;
    let spot_unit_price = rate
        .spot_unit_price
        .as_deref()
        .map(|spot| price(&format!("rates[{i}].spotUnitPrice"), spot))
        .transpose()?;
    Ok(Rate {
        sku: rate.sku,
        metric: rate.metric,
        model,
        spot_unit_price,
    })
}

/// A rate's price model, from its input; every field that does not belong to the mode
/// must be absent.
fn model_of(i: usize, rate: &RateInput) -> Result<PriceModel, MeteringError> {
    let at = |name: &str| format!("rates[{i}].{name}");
    let absent = |name: &str, present: bool| {
        if present {
            Err(MeteringError::invalid(
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
            .ok_or_else(|| {
                MeteringError::invalid(at(name), format!("required by {}", rate.tiers_mode))
            })
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
            let tiers = tiers_of(i, rate.tiers.as_deref())?;
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
        .map_err(|e| MeteringError::invalid(at("tiers"), e.to_string()))?;
    Ok(model)
}

fn tiers_of(i: usize, inputs: Option<&[TierInput]>) -> Result<Vec<Tier>, MeteringError> {
    let inputs = inputs.ok_or_else(|| {
        MeteringError::invalid(format!("rates[{i}].tiers"), "required by tiered modes")
    })?;
    if inputs.is_empty() || inputs.len() > MAX_TIERS {
        return Err(MeteringError::invalid(
            format!("rates[{i}].tiers"),
            format!("1 to {MAX_TIERS} tiers"),
        ));
    }
    let mut tiers = Vec::new();
    for (j, t) in inputs.iter().enumerate() {
        let field = |name: &str| format!("rates[{i}].tiers[{j}].{name}");
        let optional = |name: &str, value: &Option<String>| {
            value.as_deref().map(|v| price(&field(name), v)).transpose()
        };
        tiers.push(Tier {
            up_to: optional("upTo", &t.up_to)?,
            unit_price: price(&field("unitPrice"), &t.unit_price)?,
            flat_fee: optional("flatFee", &t.flat_fee)?.unwrap_or_default(),
        });
    }
    Ok(tiers)
}

/// Stores a validated version (and its plan, on first use) with its rates.
pub async fn create<C: ConnectionTrait>(
    conn: &C,
    version: &PlanVersion,
    now: DateTime<Utc>,
) -> Result<(plan_version::Model, Vec<plan_rate::Model>), DbErr> {
    let plan = store::plan_by_name_or_create(conn, &version.plan, now).await?;
    let stored = store::insert_version(conn, plan, version, now).await?;
    let mut rates = Vec::new();
    for rate in &version.rates {
        rates.push(store::insert_rate(conn, stored.id, rate).await?);
    }
    Ok((stored, rates))
}

/// Moves `tenant` to `version` from the later of `now` and the version's effective date,
/// from the start of that minute: usage buckets are per minute, so a plan change on a
/// minute boundary splits them exactly.
pub async fn assign<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    version: &plan_version::Model,
    now: DateTime<Utc>,
) -> Result<tenant_plan::Model, DbErr> {
    let from = whole_minute(now.max(version.effective_from));
    store::assign(conn, tenant, version.id, from, now).await
}
