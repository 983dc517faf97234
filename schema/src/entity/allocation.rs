//! A placed piece of an order on one node: GPUs, a MIG instance, a GPU fraction or the
//! whole node. Its lifetime is what `allocated_seconds` bills.

use crate::ids::AllocationId;
use crate::ids::NodeId;
use crate::ids::OrderId;
use crate::ids::SkuId;
use crate::ids::TenantId;
pub use crate::vocabulary::{AccessState, AllocationClass, AllocationStatus};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "allocations")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: AllocationId,
    pub order_id: OrderId,
    pub tenant_id: TenantId,
    pub sku_id: SkuId,
    pub node_id: NodeId,
    pub class: AllocationClass,
    pub status: AllocationStatus,
    pub mig_profile: Option<String>,
    pub mig_start_slot: Option<i32>,
    pub milli_gpu: Option<i32>,
    pub labels: Json,
    pub started_at: DateTimeUtc,
    pub preempt_at: Option<DateTimeUtc>,
    pub ended_at: Option<DateTimeUtc>,
    pub cpu_milli: i64,
    pub memory_mib: i64,
    /// `node` or `nvlink_domain` when the order asked to be alone there.
    pub exclusive: Option<String>,
    /// Bare metal: the node is held whole.
    pub whole_node: bool,
    /// Whether the operator's provisioner has handed it to the customer.
    pub access_state: AccessState,
    /// Where the customer connects once `ready`: `[{kind, host, port, username?, description?}]`.
    pub access_endpoints: Option<Json>,
    /// Why provisioning failed.
    pub access_reason: Option<String>,
    pub access_changed_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::sku::Entity",
        from = "Column::SkuId",
        to = "super::sku::Column::Id"
    )]
    Sku,
}

impl Related<super::sku::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Sku.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}

impl Model {
    /// Milli-GPUs this allocation holds on each of its GPUs: 1000 for a whole GPU, a MIG
    /// instance's compute share (`n/7`, truncated), a fraction's milli-GPUs.
    pub fn milli_per_gpu(&self) -> u64 {
        use crate::mig::{COMPUTE_SLICES_PER_GPU, MigProfile};
        match (&self.mig_profile, self.milli_gpu) {
            (Some(name), _) => MigProfile::compute_slices_in_name(name).map_or(0, |c| {
                u64::from(c) * 1000 / u64::from(COMPUTE_SLICES_PER_GPU)
            }),
            (None, Some(milli)) => u64::try_from(milli).unwrap_or(0),
            (None, None) => 1000,
        }
    }
}
