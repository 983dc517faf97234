//! XID and ECC events as agents reported them.

use crate::ids::NodeId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "gpu_events")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub node_id: NodeId,
    pub device_uuid: String,
    /// The physical GPU (a MIG instance's parent); none on events stored before it was kept
    /// from MIG instances.
    pub gpu_uuid: Option<String>,
    pub kind: String,
    pub code: i32,
    pub at: DateTimeUtc,
    pub received_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
