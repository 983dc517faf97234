//! A node's reliability over its window (the last 30 days, from its first covered hour),
//! as the periodic reliability pass last computed it.

use crate::ids::NodeId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "node_reliability")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub node_id: NodeId,
    pub window_start: DateTimeUtc,
    pub window_end: DateTimeUtc,
    /// Seconds of the window some agent batch covered.
    pub covered_seconds: i64,
    pub gpu_count: i32,
    /// GPU-seconds of the window its GPUs spent failed.
    pub failed_gpu_seconds: i64,
    /// XID and ECC events of the window that fail a GPU.
    pub faults: i32,
    /// XID events of the window that degrade a GPU.
    pub degradations: i32,
    /// Allocations a GPU failure hit in the window.
    pub preemptions_by_fault: i32,
    /// Availability × GPU health in basis points; null while the window is empty.
    pub score_bp: Option<i32>,
    pub computed_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
