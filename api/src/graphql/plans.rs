//! Plans: `plans` (any user), `createPlanVersion` and `assignPlan` (operator).

use async_graphql::{Context, Enum, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_schema::entity::{plan_rate, plan_version, tenant_plan};
use neocloud_schema::ids::{PlanVersionId, TenantId};

use super::scalars::{parse_id, to_id};
use crate::plans;
use neocloud_metering::plans::{NewPlanVersion, RateInput, TierInput};

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "neocloud_schema::vocabulary::Metric", name = "Metric")]
pub enum GqlMetric {
    Allocated,
    Active,
    Memory,
    Energy,
    SlaCredit,
    /// What a meter counted from usage events, in the unit of its METERED SKU.
    Metered,
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "neocloud_schema::vocabulary::TiersMode", name = "TiersMode")]
pub enum GqlTiersMode {
    PerUnit,
    Graduated,
    Volume,
    Package,
}

#[derive(InputObject, SimpleObject, Clone)]
#[graphql(input_name = "TierInput")]
pub struct Tier {
    /// Cumulative upper bound in the rate's unit; null = no bound.
    pub up_to: Option<String>,
    pub unit_price: String,
    pub flat_fee: Option<String>,
}

#[derive(InputObject)]
#[graphql(name = "RateInput")]
pub struct RateInputGql {
    pub sku: ID,
    pub metric: GqlMetric,
    pub tiers_mode: GqlTiersMode,
    pub unit_price: Option<String>,
    pub spot_unit_price: Option<String>,
    pub tiers: Option<Vec<Tier>>,
    pub package_size: Option<String>,
    pub package_price: Option<String>,
}

#[derive(InputObject, SimpleObject, Clone)]
#[graphql(input_name = "CommitmentInput")]
pub struct Commitment {
    pub monthly_minimum: String,
    pub discount_pct: String,
}

#[derive(InputObject)]
pub struct PlanVersionInput {
    pub plan: String,
    pub currency: String,
    pub effective_from: DateTime<Utc>,
    #[graphql(default = 60)]
    pub minimum_billable_seconds: i64,
    pub rates: Vec<RateInputGql>,
    pub commitment: Option<Commitment>,
}

impl PlanVersionInput {
    /// The version as the plans service takes it (ids parsed, prices still text).
    fn into_new(self) -> Result<NewPlanVersion> {
        let mut rates = Vec::new();
        for (i, r) in self.rates.into_iter().enumerate() {
            rates.push(RateInput {
                sku: parse_id(&format!("rates[{i}].sku"), &r.sku)?,
                metric: r.metric.into(),
                tiers_mode: r.tiers_mode.into(),
                unit_price: r.unit_price,
                spot_unit_price: r.spot_unit_price,
                tiers: r.tiers.map(|ts| {
                    ts.into_iter()
                        .map(|t| TierInput {
                            up_to: t.up_to,
                            unit_price: t.unit_price,
                            flat_fee: t.flat_fee,
                        })
                        .collect()
                }),
                package_size: r.package_size,
                package_price: r.package_price,
            });
        }
        Ok(NewPlanVersion {
            plan: self.plan,
            currency: self.currency,
            effective_from: self.effective_from,
            minimum_billable_seconds: self.minimum_billable_seconds,
            rates,
            commitment: self.commitment.map(|c| (c.monthly_minimum, c.discount_pct)),
        })
    }
}

#[derive(SimpleObject)]
pub struct Rate {
    pub sku: ID,
    pub metric: GqlMetric,
    pub tiers_mode: GqlTiersMode,
    pub unit_price: Option<String>,
    pub spot_unit_price: Option<String>,
    pub tiers: Vec<Tier>,
    pub package_size: Option<String>,
    pub package_price: Option<String>,
}

impl From<plan_rate::Model> for Rate {
    fn from(r: plan_rate::Model) -> Self {
        let tiers: Vec<neocloud_metering::rating::Tier> = r
            .tiers
            .and_then(|t| serde_json::from_value(t).ok())
            .unwrap_or_default();
        Rate {
            sku: to_id(r.sku_id),
            metric: r.metric.into(),
            tiers_mode: r.tiers_mode.into(),
            unit_price: r.unit_price.map(|p| p.to_string()),
            spot_unit_price: r.spot_unit_price.map(|p| p.to_string()),
            tiers: tiers
                .into_iter()
                .map(|t| Tier {
                    up_to: t.up_to.map(|u| u.to_string()),
                    unit_price: t.unit_price.to_string(),
                    flat_fee: Some(t.flat_fee.to_string()),
                })
                .collect(),
            package_size: r.package_size.map(|p| p.to_string()),
            package_price: r.package_price.map(|p| p.to_string()),
        }
    }
}

#[derive(SimpleObject)]
pub struct PlanVersion {
    pub id: ID,
    pub plan: String,
    pub version: i32,
    pub currency: String,
    pub effective_from: DateTime<Utc>,
    pub minimum_billable_seconds: i64,
    pub commitment: Option<Commitment>,
    pub rates: Vec<Rate>,
}

fn version_of(v: plan_version::Model, plan: &str, rates: Vec<plan_rate::Model>) -> PlanVersion {
    PlanVersion {
        id: to_id(v.id),
        plan: plan.to_owned(),
        version: v.version,
        currency: v.currency,
        effective_from: v.effective_from,
        minimum_billable_seconds: v.minimum_billable_seconds,
        commitment: v
            .commitment_monthly_minimum
            .zip(v.commitment_discount_pct)
            .map(|(monthly_minimum, discount_pct)| Commitment {
                monthly_minimum: monthly_minimum.to_string(),
                discount_pct: discount_pct.to_string(),
            }),
        rates: rates.into_iter().map(Rate::from).collect(),
    }
}

#[derive(SimpleObject)]
pub struct Plan {
    pub name: String,
    pub versions: Vec<PlanVersion>,
}

#[derive(SimpleObject)]
pub struct CreatePlanVersionPayload {
    pub plan_version: PlanVersion,
}

#[derive(SimpleObject)]
pub struct PlanAssignment {
    pub tenant_id: ID,
    pub plan_version_id: ID,
    pub effective_from: DateTime<Utc>,
}

impl From<tenant_plan::Model> for PlanAssignment {
    fn from(a: tenant_plan::Model) -> Self {
        PlanAssignment {
            tenant_id: to_id(a.tenant_id),
            plan_version_id: to_id(a.plan_version_id),
            effective_from: a.effective_from,
        }
    }
}

/// What a proposed plan version would have charged for a tenant's latest finalized
/// invoice: the same usage, tax treatment, credits and late usage, the proposed rates.
#[derive(SimpleObject)]
pub struct PlanVersionPreview {
    pub invoice_id: ID,
    pub invoice_number: Option<String>,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    pub currency: String,
    /// The plan version(s) the invoice was rated with, e.g. `standard v2`.
    pub current_plan: String,
    pub current_subtotal: String,
    pub current_total: String,
    pub subtotal: String,
    pub tax: String,
    pub credits: String,
    pub total: String,
    /// `subtotal − currentSubtotal`: what the plan alone changes, before tax and credits.
    pub difference: String,
    pub lines: Vec<super::invoices::InvoiceLine>,
}

impl From<plans::Preview> for PlanVersionPreview {
    fn from(p: plans::Preview) -> Self {
        let difference = neocloud_metering::plans::preview::difference(&p.invoice, &p.rated);
        PlanVersionPreview {
            invoice_id: to_id(p.invoice.id),
            invoice_number: p.invoice.number,
            period_start: p.invoice.period_start,
            period_end: p.invoice.period_end,
            currency: p.invoice.currency,
            current_plan: p.invoice.plan,
            current_subtotal: p.invoice.subtotal.to_string(),
            current_total: p.invoice.total.to_string(),
            subtotal: p.rated.subtotal.to_string(),
            tax: p.rated.tax.to_string(),
            credits: p.rated.credits.to_string(),
            total: p.rated.total.to_string(),
            difference: difference.to_string(),
            lines: p.rated.lines.iter().map(Into::into).collect(),
        }
    }
}

#[derive(Default)]
pub struct PlanQuery;

#[Object]
impl PlanQuery {
    /// Every plan with its versions and rates (published to every user).
    async fn plans(&self, ctx: &Context<'_>) -> Result<Vec<Plan>> {
        let plans = plans::list(super::db(ctx)?, super::principal(ctx)?).await?;
        Ok(plans
            .into_iter()
            .map(|(plan, versions)| Plan {
                versions: versions
                    .into_iter()
                    .map(|(v, rates)| version_of(v, &plan.name, rates))
                    .collect(),
                name: plan.name,
            })
            .collect())
    }

    /// What `input` would have charged for the tenant's latest finalized invoice, had it
    /// been in force over that whole period (operator). Nothing is stored. `INVALID_STATE`
    /// when the tenant has no finalized invoice.
    async fn preview_plan_version(
        &self,
        ctx: &Context<'_>,
        input: PlanVersionInput,
        tenant_id: ID,
    ) -> Result<PlanVersionPreview> {
        let tenant: TenantId = parse_id("tenantId", &tenant_id)?;
        let preview = plans::preview_version(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant,
            input.into_new()?,
        )
        .await?;
        Ok(preview.into())
    }
}

#[derive(Default)]
pub struct PlanMutation;

#[Object]
impl PlanMutation {
    /// A new, immutable version of a plan (the plan is created with its first version).
    async fn create_plan_version(
        &self,
        ctx: &Context<'_>,
        input: PlanVersionInput,
    ) -> Result<CreatePlanVersionPayload> {
        let (version, rates, plan) = plans::create_version(
            super::db(ctx)?,
            super::principal(ctx)?,
            input.into_new()?,
            super::now(ctx)?,
        )
        .await?;
        Ok(CreatePlanVersionPayload {
            plan_version: version_of(version, &plan, rates),
        })
    }

    /// Moves a tenant to a plan version from the later of now and its effective date.
    async fn assign_plan(
        &self,
        ctx: &Context<'_>,
        tenant_id: ID,
        plan_version_id: ID,
    ) -> Result<PlanAssignment> {
        let tenant: TenantId = parse_id("tenantId", &tenant_id)?;
        let version: PlanVersionId = parse_id("planVersionId", &plan_version_id)?;
        let assigned = plans::assign(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant,
            version,
            super::now(ctx)?,
        )
        .await?;
        Ok(assigned.into())
    }
}
