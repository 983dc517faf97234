//! `neocloud demo`: a fresh, runnable marketplace on the embedded defaults. Seeds an
//! operator, two tenants on two plans (tiers, spot prices, a commitment, credits) and a
//! fleet that exercises the scheduler, then serves.
//!
//! Seeding is idempotent: a second start on the same database creates nothing twice. Keys
//! are stored hashed, so each start issues fresh demo credentials and revokes the ones
//! the previous start issued.

mod fleet_layout;

use std::path::Path;

use chrono::{TimeDelta, TimeZone, Utc};
use neocloud_metering::rating::{PriceModel, Tier};
use neocloud_metering::{invoicing, plans};
use neocloud_schema::entity::{api_key, sku, tenant};
use neocloud_schema::ids::PlanVersionId;
use neocloud_schema::money::Currency;
use neocloud_schema::vocabulary::{CreditKind, Metric, Role, SkuForm};
use rust_decimal::Decimal;
use sea_orm::{ColumnTrait, DatabaseConnection, DatabaseTransaction, EntityTrait, QueryFilter};
use serde::Serialize;

use crate::auth;
use crate::catalog;
use crate::error::{ApiError, ApiResult};
use crate::fleet;
use crate::tenancy::{self, TenantName};

/// Label of keys the demo issues; the next start revokes them.
const DEMO_LABEL: &str = "demo credentials";
pub const DEMO_TENANTS: [&str; 2] = ["acme-ai", "globex-research"];
const DEMO_PLAN: &str = "standard";

#[derive(Debug, Serialize)]
pub struct Credentials {
    pub url: String,
    pub graphiql: String,
    pub operator_key: String,
    pub tenants: Vec<TenantCredentials>,
    pub agents: Vec<AgentCredentials>,
    pub providers: Vec<ProviderCredentials>,
}

#[derive(Debug, Serialize)]
pub struct ProviderCredentials {
    pub name: String,
    pub id: String,
    /// A `provider` key: the provider's own nodes.
    pub key: String,
}

#[derive(Debug, Serialize)]
pub struct TenantCredentials {
    pub name: String,
    pub id: String,
    pub key: String,
    /// A usage reporter key of the tenant (`POST /v1/events`).
    pub usage_reporter: String,
}

#[derive(Debug, Serialize)]
pub struct AgentCredentials {
    pub node: String,
    pub token: String,
}

/// Seeds what is missing and issues fresh credentials, in one transaction.
pub async fn seed(db: &DatabaseConnection, url: &str) -> ApiResult<Credentials> {
    let txn = crate::db::begin_write(db).await?;
    revoke_previous_demo_keys(&txn).await?;
    let partner = ensure_partner(&txn).await?;
    seed_fleet(&txn).await?;
    let skus = seed_catalog(&txn).await?;
    let plan_versions = seed_plans(&txn, &skus).await?;
    let operator = auth::mint(&txn, Role::Operator, None, None, DEMO_LABEL, None).await?;
    let mut tenants = Vec::new();
    for (i, name) in DEMO_TENANTS.iter().enumerate() {
        // acme-ai on `standard`; globex-research on `enterprise`, with credits.
        let plan_version = plan_versions[i.min(plan_versions.len() - 1)];
        let tenant = ensure_tenant(&txn, name, plan_version, i == 1).await?;
        let key = auth::mint(
            &txn,
            Role::TenantAdmin,
            Some(tenant.id),
            None,
            DEMO_LABEL,
            None,
        )
        .await?;
        let reporter = auth::mint(
            &txn,
            Role::UsageReporter,
            Some(tenant.id),
            None,
            DEMO_LABEL,
            None,
        )
        .await?;
        tenants.push(TenantCredentials {
            name: tenant.name,
            id: tenant.id.to_string(),
            key: key.secret,
            usage_reporter: reporter.secret,
        });
    }
    let mut agents = Vec::new();
    for node in neocloud_schema::entity::node::Entity::find()
        .all(&txn)
        .await?
    {
        let token = auth::mint(&txn, Role::Agent, None, Some(node.id), DEMO_LABEL, None).await?;
        agents.push(AgentCredentials {
            node: node.hostname,
            token: token.secret,
        });
    }
    let owner = auth::KeyOwner {
        provider_id: Some(partner.id),
        ..auth::KeyOwner::default()
    };
    let partner_key = auth::mint_for(&txn, Role::Provider, owner, DEMO_LABEL, None).await?;
    txn.commit().await?;
    agents.sort_by(|a, b| a.node.cmp(&b.node));
    Ok(Credentials {
        url: url.to_owned(),
        graphiql: format!("{url}/graphql"),
        operator_key: operator.secret,
        tenants,
        agents,
        providers: vec![ProviderCredentials {
            name: partner.name,
            id: partner.id.to_string(),
            key: partner_key.secret,
        }],
    })
}

/// The partner whose rack the demo resells, with its legal and payout details.
async fn ensure_partner(
    txn: &DatabaseTransaction,
) -> ApiResult<neocloud_schema::entity::provider::Model> {
    use crate::providers::store;
    if let Some(found) = store::find_by_name(txn, fleet_layout::PARTNER).await? {
        return Ok(found);
    }
    let partner = store::NewProvider {
        name: fleet_layout::PARTNER.to_owned(),
        legal_name: "Atlantic GPU Partners LLC".to_owned(),
        country: "US".to_owned(),
        currency: "USD".to_owned(),
        payout_method: "stripe_connect",
        payout_account: Some("acct_1DemoAtlanticGpu".to_owned()),
    };
    let now = Utc::now();
    let partner = store::insert(txn, partner, now).await?;
    // A 70 % revenue share less a 5 % fee, paid out of paid invoices: its first statement
    // closes when the month it was seeded in ends.
    let terms = crate::providers::terms::check(
        crate::providers::terms::TermsInput {
            effective_from: None,
            model: crate::providers::terms::EarningModel::RevenueShare,
            revenue_share_percent: Some("70".to_owned()),
            fixed_rates: Vec::new(),
            platform_fee_percent: "5".to_owned(),
            sla_credits_borne_by: crate::providers::terms::SlaBearer::Provider,
            payout_minimum: "100.00".to_owned(),
            hold_until_paid: true,
            share_credit_notes: None,
        },
        &partner.currency,
        None,
        now,
    )?;
    store::insert_agreement(txn, &partner, 1, &terms, uuid::Uuid::nil(), now).await?;
    Ok(partner)
}

async fn revoke_previous_demo_keys(txn: &DatabaseTransaction) -> ApiResult<()> {
    api_key::Entity::update_many()
        .col_expr(
            api_key::Column::RevokedAt,
            sea_orm::sea_query::Expr::value(Utc::now()),
        )
        .filter(api_key::Column::Label.eq(DEMO_LABEL))
        .filter(api_key::Column::RevokedAt.is_null())
        .exec(txn)
        .await?;
    // Agent tokens issued at registration are superseded too: one live token per node.
    api_key::Entity::update_many()
        .col_expr(
            api_key::Column::RevokedAt,
            sea_orm::sea_query::Expr::value(Utc::now()),
        )
        .filter(api_key::Column::Role.eq(Role::Agent))
        .filter(api_key::Column::RevokedAt.is_null())
        .exec(txn)
        .await?;
    Ok(())
}

async fn seed_fleet(txn: &DatabaseTransaction) -> ApiResult<()> {
    for registration in fleet_layout::nodes() {
        if fleet::store::find_by_hostname(txn, &registration.hostname)
            .await?
            .is_some()
        {
            continue;
        }
        let valid = registration.validate()?;
        fleet::register_in(txn, None, &valid).await?;
    }
    Ok(())
}

async fn seed_catalog(txn: &DatabaseTransaction) -> ApiResult<Vec<sku::Model>> {
    for new in fleet_layout::skus() {
        if catalog::store::find_by_name(txn, &new.name)
            .await?
            .is_none()
        {
            catalog::create_in(txn, None, &new.validate()?).await?;
        }
    }
    seed_meters(txn).await?;
    let model = fleet_layout::model_offering();
    if crate::models::store::find(txn, &model.name, &model.region)
        .await?
        .is_none()
    {
        crate::models::create_in(txn, None, &model, Utc::now()).await?;
    }
    Ok(catalog::store::active(txn).await?)
}

/// The metered SKUs and their meters (created once).
async fn seed_meters(txn: &DatabaseTransaction) -> ApiResult<()> {
    for (new_sku, mut meter) in fleet_layout::metered() {
        let sku = match catalog::store::find_by_name(txn, &new_sku.name).await? {
            Some(sku) => sku,
            None => catalog::create_in(txn, None, &new_sku.validate()?).await?,
        };
        if neocloud_metering::meters::store::latest_version(txn, &meter.key)
            .await?
            .is_none()
        {
            meter.sku = sku.id;
            neocloud_metering::meters::create(txn, &meter, Utc::now()).await?;
        }
    }
    Ok(())
}

/// A demo plan: its name and, for the enterprise plan, a commitment.
struct DemoPlan {
    name: &'static str,
    /// (monthly minimum, discount %).
    commitment: Option<(Decimal, Decimal)>,
}

/// `standard` (acme-ai) and `enterprise` (globex-research, a 1,000 USD monthly commitment
/// at 10 % off). Both price whole GPUs and nodes per GPU-hour at list price with spot at
/// 40 % of list, energy at 0.18 USD/kWh and a service credit of 10 % of list per failed
/// GPU-hour; MIG slices and fractions in graduated tiers (15 % off beyond 100 GPU-hours).
const DEMO_PLANS: [DemoPlan; 2] = [
    DemoPlan {
        name: DEMO_PLAN,
        commitment: None,
    },
    DemoPlan {
        name: "enterprise",
        commitment: Some((Decimal::from_parts(100_000, 0, 0, false, 2), Decimal::TEN)),
    },
];

/// The demo plans' versions (created once), in `DEMO_PLANS` order.
async fn seed_plans(
    txn: &DatabaseTransaction,
    skus: &[sku::Model],
) -> ApiResult<Vec<PlanVersionId>> {
    let mut versions = Vec::new();
    for demo in &DEMO_PLANS {
        versions.push(seed_plan(txn, demo, skus).await?);
    }
    Ok(versions)
}

async fn seed_plan(
    txn: &DatabaseTransaction,
    demo: &DemoPlan,
    skus: &[sku::Model],
) -> ApiResult<PlanVersionId> {
    if let Some(version) = plans::store::first_version_named(txn, demo.name).await? {
        return Ok(version);
    }
    let now = Utc::now();
    let version = plans::PlanVersion {
        plan: demo.name.to_owned(),
        currency: Currency::USD,
        effective_from: Utc
            .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
            .single()
            .unwrap_or(now),
        minimum_billable_seconds: 60,
        rates: skus.iter().flat_map(demo_rates).collect(),
        commitment: demo.commitment,
    };
    crate::plans::check_skus(txn, &version).await?;
    let (stored, _) = plans::create(txn, &version, now).await?;
    Ok(stored.id)
}

/// A SKU's demo rates (see `DEMO_PLANS`).
fn demo_rates(sku: &sku::Model) -> Vec<plans::Rate> {
    let share = |pct: i64, price: Decimal| (price * Decimal::new(pct, 2)).round_dp(6).normalize();
    let list = sku.list_price_per_hour.get();
    let rate = |metric, model, spot| plans::Rate {
        sku: sku.id.into(),
        metric,
        model,
        spot_unit_price: spot,
    };
    let per_unit = |unit_price| PriceModel::PerUnit { unit_price };
    match sku.form {
        SkuForm::WholeGpu | SkuForm::WholeNode => {
            let mut rates = vec![
                rate(Metric::Allocated, per_unit(list), Some(share(40, list))),
                rate(Metric::SlaCredit, per_unit(share(10, list)), None),
            ];
            if sku.form == SkuForm::WholeGpu {
                rates.push(rate(Metric::Energy, per_unit(Decimal::new(18, 2)), None));
            }
            rates
        }
        SkuForm::Mig | SkuForm::Fractional => {
            let tier = |up_to, unit_price| Tier {
                up_to,
                unit_price,
                flat_fee: Decimal::ZERO,
            };
            let tiers = vec![
                tier(Some(Decimal::from(100)), list),
                tier(None, share(85, list)),
            ];
            vec![rate(
                Metric::Allocated,
                PriceModel::Graduated { tiers },
                None,
            )]
        }
        // Egress: the first 100 GB of a period free.
        SkuForm::Metered if sku.name.starts_with("egress") => {
            let tiers = vec![
                Tier {
                    up_to: Some(Decimal::ONE_HUNDRED),
                    unit_price: Decimal::ZERO,
                    flat_fee: Decimal::ZERO,
                },
                Tier {
                    up_to: None,
                    unit_price: list,
                    flat_fee: Decimal::ZERO,
                },
            ];
            vec![rate(Metric::Metered, PriceModel::Graduated { tiers }, None)]
        }
        SkuForm::Metered => vec![rate(Metric::Metered, per_unit(list), None)],
        SkuForm::Volume => vec![rate(Metric::Allocated, per_unit(list), None)],
    }
}

async fn ensure_tenant(
    txn: &DatabaseTransaction,
    name: &str,
    plan_version: PlanVersionId,
    credits: bool,
) -> ApiResult<tenant::Model> {
    if let Some(existing) = tenancy::store::find_by_name(txn, name).await? {
        return Ok(existing);
    }
    let created = tenancy::create_in(
        txn,
        None,
        &TenantName::parse(name)?,
        Currency::USD,
        1,
        Utc::now(),
    )
    .await?;
    let from = invoicing::whole_minute(created.tenant.created_at);
    plans::store::assign(
        txn,
        created.tenant.id,
        plan_version,
        from,
        created.tenant.created_at,
    )
    .await?;
    if credits {
        let now = Utc::now();
        for (kind, amount, expires, reason) in [
            (CreditKind::Prepaid, 250, None, "prepaid top-up"),
            (
                CreditKind::Promotional,
                25,
                Some(now + TimeDelta::days(30)),
                "welcome credit",
            ),
        ] {
            invoicing::grant_credits(
                txn,
                invoicing::NewGrant {
                    tenant: created.tenant.id,
                    kind,
                    currency: Currency::USD.code().to_owned(),
                    amount: Decimal::from(amount),
                    effective_at: from,
                    expires_at: expires,
                    covers_from: Some(from),
                    reason: reason.to_owned(),
                    funding: neocloud_metering::ledger::postings::Funding::Operator,
                },
                now,
            )
            .await
            .map_err(ApiError::from)?;
        }
    }
    Ok(created.tenant)
}

/// Writes the credentials file atomically (a reader never sees half a file).
pub fn write_credentials(path: &Path, credentials: &Credentials) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(credentials)?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, json)?;
    std::fs::rename(&tmp, path)
}
