//! Each node's last cumulative energy reading per GPU, to turn counters into deltas: one
//! row per node (a JSON object of device UUID → `{"mj", "at"}`), so a batch updates one
//! row rather than one per GPU.

use crate::ids::NodeId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "node_energy")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub node_id: NodeId,
    pub cursors: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
