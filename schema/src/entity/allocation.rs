//! A placed piece of an order on one node: GPUs, a MIG instance, a GPU fraction or the
//! whole node. Its lifetime is what `allocated_seconds` bills.

pub use crate::vocabulary::{AllocationClass, AllocationStatus};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "allocations")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub order_id: Uuid,
    pub tenant_id: Uuid,
    pub sku_id: Uuid,
    pub node_id: Uuid,
    pub class: AllocationClass,
    pub status: AllocationStatus,
    pub mig_profile: Option<String>,
    pub mig_start_slot: Option<i32>,
    pub milli_gpu: Option<i32>,
    pub labels: Json,
    pub started_at: DateTimeUtc,
    pub preempt_at: Option<DateTimeUtc>,
    pub ended_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
