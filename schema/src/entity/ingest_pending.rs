//! The ingest journal: batches acknowledged but not yet aggregated, by their id in
//! `ingest_batches`. A row is deleted in the transaction that aggregates its batch.

use crate::ids::NodeId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "ingest_pending")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub batch_id: Uuid,
    pub node_id: NodeId,
    /// The validated batch, encoded by the metering crate (`ingest::journal`).
    pub payload: Vec<u8>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
