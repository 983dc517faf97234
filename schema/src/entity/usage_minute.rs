//! Usage folded into minute buckets per (allocation, device, label set). Seconds no
//! allocation held are kept under the nil allocation id, for utilization reports, never
//! billed.
//! Quantities are exact decimals stored as TEXT.

use crate::ids::AllocationId;
use crate::ids::SkuId;
use crate::ids::TenantId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "usage_minutes")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub minute_start: DateTimeUtc,
    /// The GPU or MIG slice sampled; empty in an allocation's buckets folded before
    /// buckets were kept per device (those sum all its devices).
    pub device_uuid: String,
    pub allocation_id: AllocationId,
    pub tenant_id: Option<TenantId>,
    pub sku_id: Option<SkuId>,
    pub label: String,
    pub active_seconds: super::Exact,
    pub memory_gib_seconds: super::Exact,
    pub energy_kwh: super::Exact,
    pub sampled_seconds: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
