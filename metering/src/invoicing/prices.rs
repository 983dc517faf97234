//! What one unit-hour of a SKU costs a tenant at an instant: what the catalog shows it,
//! what `placeOrder` quotes and checks `maxPricePerHour` against, and what an ALLOCATED
//! line bills — the plan version in force's ALLOCATED rate for the SKU (its METERED rate,
//! per unit, for a metered SKU), or the SKU's list price where the plan has none.

use std::collections::HashMap;

use chrono::{DateTime, TimeDelta, Utc};
use neocloud_schema::entity::sku;
use neocloud_schema::ids::TenantId;
use neocloud_schema::vocabulary::{Metric, SkuForm};
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DbErr};
use uuid::Uuid;

use super::input::{list_prices, plan_in_force};
use crate::rating::PriceModel;
use crate::rating::period::PlanTerms;

/// The hourly price of one unit, on demand and on spot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitPrice {
    pub on_demand: Decimal,
    /// The rate's spot price; the on-demand price where it has none.
    pub spot: Decimal,
    /// The plan version that sets it (`standard v2`), or `list price`.
    pub source: String,
}

/// The price of the first unit of a rate: a per-unit price, the first tier's, or a
/// package's price per unit.
fn first_unit_price(model: &PriceModel) -> Decimal {
    match model {
        PriceModel::PerUnit { unit_price } => *unit_price,
        PriceModel::Graduated { tiers } | PriceModel::Volume { tiers } => {
            tiers.first().map_or(Decimal::ZERO, |t| t.unit_price)
        }
        PriceModel::Package { size, price } => price
            .checked_div(*size)
            .unwrap_or(Decimal::ZERO)
            .normalize(),
    }
}

fn price_of(plan: &PlanTerms, sku: &sku::Model, list_price: Decimal) -> UnitPrice {
    // What a unit of the SKU bills as: its METERED rate for a metered SKU, else ALLOCATED.
    let metric = if sku.form == SkuForm::Metered {
        Metric::Metered
    } else {
        Metric::Allocated
    };
    let rate = plan
        .rates
        .iter()
        .find(|r| r.sku == Uuid::from(sku.id) && r.metric == metric);
    match rate {
        Some(rate) => {
            let on_demand = first_unit_price(&rate.model);
            UnitPrice {
                on_demand,
                spot: rate.spot_unit_price.unwrap_or(on_demand),
                source: plan.label.clone(),
            }
        }
        None => UnitPrice {
            on_demand: list_price,
            spot: list_price,
            source: "list price".to_owned(),
        },
    }
}

/// The unit prices of `skus` for `tenant` at `at` (the list prices without a tenant), by
/// SKU id. A SKU whose stored list price does not parse is an error, never a price of zero.
pub async fn unit_prices<C: ConnectionTrait>(
    conn: &C,
    tenant: Option<TenantId>,
    at: DateTime<Utc>,
    skus: &[sku::Model],
) -> Result<HashMap<Uuid, UnitPrice>, DbErr> {
    let plan = match tenant {
        Some(tenant) => plan_in_force(conn, tenant, at, at + TimeDelta::seconds(1)).await?,
        None => list_prices(),
    };
    skus.iter()
        .map(|sku| {
            Ok((
                sku.id.into(),
                price_of(&plan, sku, sku.list_price_per_hour.get()),
            ))
        })
        .collect()
}
