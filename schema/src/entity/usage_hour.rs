//! Usage summed per allocation and UTC hour: the minute buckets of an allocation in one
//! hour, over its devices and label sets, kept up to date by the same aggregation pass
//! that writes the minutes (in its transaction), so a month's usage reads 720 rows an
//! allocation rather than 43,200. Seconds no allocation held are not rolled up.
//! Quantities are exact decimals (`NUMERIC` on PostgreSQL, TEXT on SQLite).

use crate::ids::AllocationId;
use crate::ids::SkuId;
use crate::ids::TenantId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "usage_hours")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub allocation_id: AllocationId,
    #[sea_orm(primary_key, auto_increment = false)]
    pub hour_start: DateTimeUtc,
    pub tenant_id: Option<TenantId>,
    pub sku_id: Option<SkuId>,
    pub active_seconds: super::Exact,
    pub memory_gib_seconds: super::Exact,
    pub energy_kwh: super::Exact,
    pub sampled_seconds: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
