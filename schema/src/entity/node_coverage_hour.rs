//! The seconds of one UTC hour some agent batch covered on a node, each second counted
//! once however many batches carried it: what a node's availability is measured from.

use crate::ids::NodeId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "node_coverage_hours")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub node_id: NodeId,
    #[sea_orm(primary_key, auto_increment = false)]
    pub hour_start: DateTimeUtc,
    pub seconds: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
