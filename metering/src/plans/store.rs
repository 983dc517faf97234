//! The plan tables (`plans`, `plan_versions`, `plan_rates`, `tenant_plans`): the only
//! module that writes them. Versions, rates and assignments are only ever inserted.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{plan, plan_rate, plan_version, tenant_plan};
use neocloud_schema::ids::TenantId;
use neocloud_schema::ids::{PlanId, PlanVersionId};
use neocloud_schema::vocabulary::TiersMode;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    Set,
};
use uuid::Uuid;

use super::{PlanVersion, Rate};
use crate::rating::PriceModel;

pub(crate) async fn plan_by_name_or_create<C: ConnectionTrait>(
    conn: &C,
    name: &str,
    now: DateTime<Utc>,
) -> Result<PlanId, DbErr> {
    if let Some(found) = plan::Entity::find()
        .filter(plan::Column::Name.eq(name))
        .one(conn)
        .await?
    {
        return Ok(found.id);
    }
    Ok(plan::ActiveModel {
        id: Set(PlanId::new()),
        name: Set(name.to_owned()),
        created_at: Set(now),
    }
    .insert(conn)
    .await?
    .id)
}

pub(crate) async fn insert_version<C: ConnectionTrait>(
    conn: &C,
    plan: PlanId,
    new: &PlanVersion,
    now: DateTime<Utc>,
) -> Result<plan_version::Model, DbErr> {
    let latest = plan_version::Entity::find()
        .filter(plan_version::Column::PlanId.eq(plan))
        .order_by_desc(plan_version::Column::Version)
        .one(conn)
        .await?
        .map_or(0, |v| v.version);
    plan_version::ActiveModel {
        id: Set(PlanVersionId::new()),
        plan_id: Set(plan),
        version: Set(latest + 1),
        currency: Set(new.currency.code().to_owned()),
        effective_from: Set(new.effective_from),
        minimum_billable_seconds: Set(new.minimum_billable_seconds),
        commitment_monthly_minimum: Set(new.commitment.map(|c| c.0.into())),
        commitment_discount_pct: Set(new.commitment.map(|c| c.1.into())),
        created_at: Set(now),
    }
    .insert(conn)
    .await
}

pub(crate) async fn insert_rate<C: ConnectionTrait>(
    conn: &C,
    version: PlanVersionId,
    rate: &Rate,
) -> Result<plan_rate::Model, DbErr> {
    let tiers_json = |tiers| serde_json::to_value(tiers).map_err(|e| DbErr::Custom(e.to_string()));
    let (mode, unit_price, tiers, package_size, package_price) = match &rate.model {
        PriceModel::PerUnit { unit_price } => (
            TiersMode::PerUnit,
            Some((*unit_price).into()),
            None,
            None,
            None,
        ),
        PriceModel::Graduated { tiers } => (
            TiersMode::Graduated,
            None,
            Some(tiers_json(tiers)?),
            None,
            None,
        ),
        PriceModel::Volume { tiers } => (
            TiersMode::Volume,
            None,
            Some(tiers_json(tiers)?),
            None,
            None,
        ),
        PriceModel::Package { size, price } => (
            TiersMode::Package,
            None,
            None,
            Some((*size).into()),
            Some((*price).into()),
        ),
    };
    plan_rate::ActiveModel {
        id: Set(Uuid::now_v7()),
        plan_version_id: Set(version),
        sku_id: Set(rate.sku.into()),
        metric: Set(rate.metric),
        tiers_mode: Set(mode),
        unit_price: Set(unit_price),
        spot_unit_price: Set(rate.spot_unit_price.map(Into::into)),
        tiers: Set(tiers),
        package_size: Set(package_size),
        package_price: Set(package_price),
    }
    .insert(conn)
    .await
}

pub async fn version<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
) -> Result<Option<plan_version::Model>, DbErr> {
    plan_version::Entity::find_by_id(id).one(conn).await
}

pub async fn assign<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    version: PlanVersionId,
    from: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<tenant_plan::Model, DbErr> {
    tenant_plan::ActiveModel {
        id: Set(Uuid::now_v7()),
        tenant_id: Set(tenant),
        plan_version_id: Set(version),
        effective_from: Set(from),
        created_at: Set(now),
    }
    .insert(conn)
    .await
}

/// Every plan with its versions (oldest first) and their rates.
pub async fn all<C: ConnectionTrait>(
    conn: &C,
) -> Result<
    Vec<(
        plan::Model,
        Vec<(plan_version::Model, Vec<plan_rate::Model>)>,
    )>,
    DbErr,
> {
    let plans = plan::Entity::find()
        .order_by_asc(plan::Column::Name)
        .all(conn)
        .await?;
    let versions = plan_version::Entity::find()
        .order_by_asc(plan_version::Column::Version)
        .all(conn)
        .await?;
    let rates = plan_rate::Entity::find().all(conn).await?;
    Ok(plans
        .into_iter()
        .map(|p| {
            let vs = versions
                .iter()
                .filter(|v| v.plan_id == p.id)
                .map(|v| {
                    let rs = rates
                        .iter()
                        .filter(|r| r.plan_version_id == v.id)
                        .cloned()
                        .collect();
                    (v.clone(), rs)
                })
                .collect();
            (p, vs)
        })
        .collect())
}

/// The first version of the plan named `name`, if there is one.
pub async fn first_version_named<C: ConnectionTrait>(
    conn: &C,
    name: &str,
) -> Result<Option<PlanVersionId>, DbErr> {
    let Some(found) = plan::Entity::find()
        .filter(plan::Column::Name.eq(name))
        .one(conn)
        .await?
    else {
        return Ok(None);
    };
    Ok(plan_version::Entity::find()
        .filter(plan_version::Column::PlanId.eq(found.id))
        .order_by_asc(plan_version::Column::Version)
        .one(conn)
        .await?
        .map(|v| v.id))
}

/// The tenant's assignments that start before `to`, in the order they take effect.
pub(crate) async fn assignments_before<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    to: DateTime<Utc>,
) -> Result<Vec<tenant_plan::Model>, DbErr> {
    tenant_plan::Entity::find()
        .filter(tenant_plan::Column::TenantId.eq(tenant))
        .filter(tenant_plan::Column::EffectiveFrom.lt(to))
        .order_by_asc(tenant_plan::Column::EffectiveFrom)
        .order_by_asc(tenant_plan::Column::CreatedAt)
        .all(conn)
        .await
}

/// The versions `ids`, by id.
pub(crate) async fn versions<C: ConnectionTrait>(
    conn: &C,
    ids: &[PlanVersionId],
) -> Result<HashMap<PlanVersionId, plan_version::Model>, DbErr> {
    Ok(plan_version::Entity::find()
        .filter(plan_version::Column::Id.is_in(ids.iter().copied()))
        .all(conn)
        .await?
        .into_iter()
        .map(|v| (v.id, v))
        .collect())
}

/// Every plan's name, by id.
pub(crate) async fn names<C: ConnectionTrait>(conn: &C) -> Result<HashMap<PlanId, String>, DbErr> {
    Ok(plan::Entity::find()
        .all(conn)
        .await?
        .into_iter()
        .map(|p| (p.id, p.name))
        .collect())
}

/// The rates of the versions `ids`.
pub(crate) async fn rates_of<C: ConnectionTrait>(
    conn: &C,
    ids: &[PlanVersionId],
) -> Result<Vec<plan_rate::Model>, DbErr> {
    plan_rate::Entity::find()
        .filter(plan_rate::Column::PlanVersionId.is_in(ids.iter().copied()))
        .all(conn)
        .await
}
