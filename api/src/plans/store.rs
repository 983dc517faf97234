//! SQL for plans, versions, rates and assignments. Versions and rates are only ever
//! inserted.

use chrono::{DateTime, Utc};
use neocloud_metering::rating::PriceModel;
use neocloud_schema::entity::{Exact, plan, plan_rate, plan_version, tenant_plan};
use neocloud_schema::ids::{PlanId, PlanVersionId};
use rust_decimal::Decimal;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    Set,
};
use uuid::Uuid;

use super::RateInput;

pub(crate) async fn plan_by_name_or_create<C: ConnectionTrait>(
    conn: &C,
    name: &str,
) -> Result<Uuid, DbErr> {
    if let Some(found) = plan::Entity::find()
        .filter(plan::Column::Name.eq(name))
        .one(conn)
        .await?
    {
        return Ok(found.id);
    }
    Ok(plan::ActiveModel {
        id: Set(PlanId::new().into()),
        name: Set(name.to_owned()),
        created_at: Set(Utc::now()),
    }
    .insert(conn)
    .await?
    .id)
}

pub(crate) async fn insert_version<C: ConnectionTrait>(
    conn: &C,
    plan: Uuid,
    currency: &str,
    effective_from: DateTime<Utc>,
    minimum_billable_seconds: i64,
    commitment: Option<(Decimal, Decimal)>,
) -> Result<plan_version::Model, DbErr> {
    let latest = plan_version::Entity::find()
        .filter(plan_version::Column::PlanId.eq(plan))
        .order_by_desc(plan_version::Column::Version)
        .one(conn)
        .await?
        .map_or(0, |v| v.version);
    plan_version::ActiveModel {
        id: Set(PlanVersionId::new().into()),
        plan_id: Set(plan),
        version: Set(latest + 1),
        currency: Set(currency.to_owned()),
        effective_from: Set(effective_from),
        minimum_billable_seconds: Set(minimum_billable_seconds),
        commitment_monthly_minimum: Set(commitment.map(|c| c.0.into())),
        commitment_discount_pct: Set(commitment.map(|c| c.1.into())),
        created_at: Set(Utc::now()),
    }
    .insert(conn)
    .await
}

pub(crate) async fn insert_rate<C: ConnectionTrait>(
    conn: &C,
    version: Uuid,
    rate: &RateInput,
    model: &PriceModel,
) -> Result<plan_rate::Model, DbErr> {
    let (unit_price, tiers, package_size, package_price) = match model {
        PriceModel::PerUnit { unit_price } => (Some((*unit_price).into()), None, None, None),
        PriceModel::Graduated { tiers } | PriceModel::Volume { tiers } => {
            (None, serde_json::to_value(tiers).ok(), None, None)
        }
        PriceModel::Package { size, price } => {
            (None, None, Some((*size).into()), Some((*price).into()))
        }
    };
    plan_rate::ActiveModel {
        id: Set(Uuid::now_v7()),
        plan_version_id: Set(version),
        sku_id: Set(rate.sku),
        metric: Set(rate.metric),
        tiers_mode: Set(rate.tiers_mode),
        unit_price: Set(unit_price),
        spot_unit_price: Set(rate
            .spot_unit_price
            .as_deref()
            .map(|s| s.trim().parse::<Exact>())
            .transpose()
            .map_err(|e| DbErr::Custom(e.to_string()))?),
        tiers: Set(tiers),
        package_size: Set(package_size),
        package_price: Set(package_price),
    }
    .insert(conn)
    .await
}

pub(crate) async fn version<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
) -> Result<Option<plan_version::Model>, DbErr> {
    plan_version::Entity::find_by_id(id).one(conn).await
}

pub(crate) async fn assign<C: ConnectionTrait>(
    conn: &C,
    tenant: Uuid,
    version: Uuid,
    from: DateTime<Utc>,
) -> Result<tenant_plan::Model, DbErr> {
    tenant_plan::ActiveModel {
        id: Set(Uuid::now_v7()),
        tenant_id: Set(tenant),
        plan_version_id: Set(version),
        effective_from: Set(from),
        created_at: Set(Utc::now()),
    }
    .insert(conn)
    .await
}

/// Every plan with its versions (oldest first) and their rates.
pub(crate) async fn all<C: ConnectionTrait>(
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
