//! `neocloud demo`: a fresh, runnable marketplace on the embedded defaults. Seeds an
//! operator, two tenants, a plan and a fleet that exercises the scheduler, then serves.
//!
//! Seeding is idempotent: a second start on the same database creates nothing twice. Keys
//! are stored hashed, so each start issues fresh demo credentials and revokes the ones
//! the previous start issued.

mod fleet_layout;

use std::path::Path;

use chrono::{TimeZone, Utc};
use neocloud_schema::entity::{api_key, plan, plan_rate, plan_version, sku, tenant, tenant_plan};
use neocloud_schema::ids::{NodeId, PlanId, PlanVersionId, TenantId};
use neocloud_schema::money::Currency;
use neocloud_schema::vocabulary::{Metric, Role, TiersMode};
use rust_decimal::Decimal;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, DatabaseTransaction, EntityTrait,
    QueryFilter, Set,
};
use serde::Serialize;
use uuid::Uuid;

use crate::auth;
use crate::catalog;
use crate::error::ApiResult;
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
}

#[derive(Debug, Serialize)]
pub struct TenantCredentials {
    pub name: String,
    pub id: String,
    pub key: String,
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
    seed_fleet(&txn).await?;
    let skus = seed_catalog(&txn).await?;
    let plan_version = seed_plan(&txn, &skus).await?;
    let operator = auth::mint(&txn, Role::Operator, None, None, DEMO_LABEL, None).await?;
    let mut tenants = Vec::new();
    for name in DEMO_TENANTS {
        let tenant = ensure_tenant(&txn, name, plan_version).await?;
        let key = auth::mint(
            &txn,
            Role::TenantAdmin,
            Some(TenantId::from(tenant.id)),
            None,
            DEMO_LABEL,
            None,
        )
        .await?;
        tenants.push(TenantCredentials {
            name: tenant.name,
            id: tenant.id.to_string(),
            key: key.secret,
        });
    }
    let mut agents = Vec::new();
    for node in neocloud_schema::entity::node::Entity::find()
        .all(&txn)
        .await?
    {
        let token = auth::mint(
            &txn,
            Role::Agent,
            None,
            Some(NodeId::from(node.id)),
            DEMO_LABEL,
            None,
        )
        .await?;
        agents.push(AgentCredentials {
            node: node.hostname,
            token: token.secret,
        });
    }
    txn.commit().await?;
    agents.sort_by(|a, b| a.node.cmp(&b.node));
    Ok(Credentials {
        url: url.to_owned(),
        graphiql: format!("{url}/graphql"),
        operator_key: operator.secret,
        tenants,
        agents,
    })
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
    Ok(catalog::store::active(txn).await?)
}

/// The `standard` plan, version 1: list prices per GPU-hour, spot at 40% of list.
async fn seed_plan(txn: &DatabaseTransaction, skus: &[sku::Model]) -> ApiResult<Uuid> {
    if let Some(existing) = plan::Entity::find()
        .filter(plan::Column::Name.eq(DEMO_PLAN))
        .one(txn)
        .await?
        && let Some(version) = plan_version::Entity::find()
            .filter(plan_version::Column::PlanId.eq(existing.id))
            .one(txn)
            .await?
    {
        return Ok(version.id);
    }
    let now = Utc::now();
    let plan = plan::ActiveModel {
        id: Set(PlanId::new().into()),
        name: Set(DEMO_PLAN.to_owned()),
        created_at: Set(now),
    }
    .insert(txn)
    .await?;
    let version = plan_version::ActiveModel {
        id: Set(PlanVersionId::new().into()),
        plan_id: Set(plan.id),
        version: Set(1),
        currency: Set(Currency::USD.code().to_owned()),
        effective_from: Set(Utc
            .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
            .single()
            .unwrap_or(now)),
        minimum_billable_seconds: Set(60),
        commitment_monthly_minimum: Set(None),
        commitment_discount_pct: Set(None),
        created_at: Set(now),
    }
    .insert(txn)
    .await?;
    let spot_share = Decimal::new(40, 2);
    for sku in skus {
        let price: Decimal = sku.list_price_per_hour.parse().unwrap_or_default();
        plan_rate::ActiveModel {
            id: Set(Uuid::now_v7()),
            plan_version_id: Set(version.id),
            sku_id: Set(sku.id),
            metric: Set(Metric::Allocated),
            tiers_mode: Set(TiersMode::PerUnit),
            unit_price: Set(Some(price.to_string())),
            spot_unit_price: Set(Some(
                (price * spot_share).round_dp(6).normalize().to_string(),
            )),
            tiers: Set(None),
            package_size: Set(None),
            package_price: Set(None),
        }
        .insert(txn)
        .await?;
    }
    Ok(version.id)
}

async fn ensure_tenant(
    txn: &DatabaseTransaction,
    name: &str,
    plan_version: Uuid,
) -> ApiResult<tenant::Model> {
    if let Some(existing) = tenancy::store::find_by_name(txn, name).await? {
        return Ok(existing);
    }
    let created = tenancy::create_in(txn, None, &TenantName::parse(name)?, Currency::USD).await?;
    tenant_plan::ActiveModel {
        id: Set(Uuid::now_v7()),
        tenant_id: Set(created.tenant.id),
        plan_version_id: Set(plan_version),
        effective_from: Set(created.tenant.created_at),
        created_at: Set(created.tenant.created_at),
    }
    .insert(txn)
    .await?;
    Ok(created.tenant)
}

/// Writes the credentials file atomically (a reader never sees half a file).
pub fn write_credentials(path: &Path, credentials: &Credentials) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(credentials)?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, json)?;
    std::fs::rename(&tmp, path)
}
