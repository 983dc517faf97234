//! Values ingest clamped or did not count, one row each, for operators (`ingestHealth`).

use crate::ids::NodeId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "ingest_anomalies")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub batch_id: Uuid,
    pub node_id: NodeId,
    /// `energy_clamped`, `mig_instance_unattributed`.
    pub kind: String,
    /// The device UUID the value came from.
    pub device: String,
    pub detail: String,
    pub recorded_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
