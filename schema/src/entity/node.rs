//! Registered hosts with their place in the topology: region → zone → rack → NVLink domain.

use crate::ids::NodeId;
use crate::ids::ProviderId;
pub use crate::vocabulary::{NodeState, NodeVerification};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "nodes")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: NodeId,
    pub provider_id: ProviderId,
    #[sea_orm(unique)]
    pub hostname: String,
    pub region: String,
    pub zone: String,
    pub rack: String,
    pub nvlink_domain: String,
    pub gpu_model: String,
    pub gpu_count: i32,
    pub mig_enabled: bool,
    pub shared_gpus: bool,
    pub cpu_milli: i64,
    pub memory_mib: i64,
    pub state: NodeState,
    pub created_at: DateTimeUtc,
    /// Whether the hardware its agent reports is what was registered.
    pub verification: NodeVerification,
    /// What differs, while `mismatch`.
    pub verification_reason: Option<String>,
    /// When its agent last reported the registered hardware.
    pub verified_at: Option<DateTimeUtc>,
    /// When it was retired (`retired`).
    pub retired_at: Option<DateTimeUtc>,
    /// The NVLink fabric its agent last reported for all of its GPUs,
    /// `<cluster uuid>/<clique>`.
    pub nvlink_fabric: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(has_many = "super::gpu::Entity")]
    Gpu,
}

impl Related<super::gpu::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Gpu.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
