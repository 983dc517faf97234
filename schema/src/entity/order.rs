//! A tenant's order: what was asked for, under which idempotency key.

use crate::ids::ApiKeyId;
use crate::ids::OrderId;
use crate::ids::SkuId;
use crate::ids::TenantId;
pub use crate::vocabulary::{AllocationClass, OrderStatus, TopologyLevel};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "orders")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: OrderId,
    pub tenant_id: TenantId,
    pub sku_id: SkuId,
    pub count: i32,
    pub class: AllocationClass,
    pub topology_level: TopologyLevel,
    pub topology_required: bool,
    pub exclusive: bool,
    pub max_price_per_hour: Option<super::Exact>,
    pub labels: Json,
    /// The SSH keys handed to its provisioner, as ids (null on orders from before keys).
    pub ssh_key_ids: Option<Json>,
    pub idempotency_key: String,
    pub request_hash: String,
    pub status: OrderStatus,
    pub created_by: Option<ApiKeyId>,
    pub created_at: DateTimeUtc,
    pub ended_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
