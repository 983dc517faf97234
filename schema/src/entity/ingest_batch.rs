//! Every accepted ingest batch, by its identity `(agent_id, boot_id, seq)`, kept for ever:
//! a batch seen once is answered `duplicate` and changes nothing, however late it comes.

use crate::ids::NodeId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "ingest_batches")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub node_id: NodeId,
    pub agent_id: String,
    pub boot_id: Uuid,
    pub seq: i64,
    pub window_start: DateTimeUtc,
    pub window_end: DateTimeUtc,
    pub received_at: DateTimeUtc,
    pub devices: i32,
    pub overlap_seconds: i64,
    /// The batch's device UUIDs (a JSON array): whose seconds its window covered. `None`
    /// for batches recorded before devices were listed: they cover all their node's.
    pub device_uuids: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
