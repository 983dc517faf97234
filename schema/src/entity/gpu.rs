//! Physical GPUs of registered nodes, with their health.

use crate::ids::GpuId;
use crate::ids::NodeId;
pub use crate::vocabulary::GpuHealth;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "gpus")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: GpuId,
    pub node_id: NodeId,
    #[sea_orm(unique)]
    pub uuid: String,
    #[sea_orm(column_name = "index")]
    pub index: i32,
    pub model: String,
    pub memory_mib: i64,
    pub mig_enabled: bool,
    pub health: GpuHealth,
    pub health_changed_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::node::Entity",
        from = "Column::NodeId",
        to = "super::node::Column::Id"
    )]
    Node,
}

impl Related<super::node::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Node.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
