//! One rate of a plan version: a SKU × metric with its pricing model. Money and
//! quantities are decimal strings; `tiers` is a JSON list of `{up_to, unit_price, flat_fee}`.

use crate::ids::PlanVersionId;
use crate::ids::SkuId;
pub use crate::vocabulary::{Metric, TiersMode};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "plan_rates")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub plan_version_id: PlanVersionId,
    pub sku_id: SkuId,
    pub metric: Metric,
    pub tiers_mode: TiersMode,
    pub unit_price: Option<super::Exact>,
    pub spot_unit_price: Option<super::Exact>,
    pub tiers: Option<Json>,
    pub package_size: Option<super::Exact>,
    pub package_price: Option<super::Exact>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
