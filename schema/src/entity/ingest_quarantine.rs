//! Journaled batches that could not be aggregated, moved aside with the reason so the rest
//! of the journal goes on. Nothing is dropped: an operator can put a batch back in the
//! journal once the cause is fixed.

use crate::ids::NodeId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "ingest_quarantine")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub batch_id: Uuid,
    pub node_id: NodeId,
    /// The journal payload, unchanged.
    pub payload: Vec<u8>,
    pub reason: String,
    pub quarantined_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
