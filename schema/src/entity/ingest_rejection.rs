//! Messages a transport delivered that can never be ingested, set aside with the reason
//! (and at most 64 KiB of the payload) so the stream behind them goes on.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "ingest_rejections")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// `nats` (HTTP answers its refusals to the agent instead).
    pub transport: String,
    pub subject: String,
    pub message_id: Option<String>,
    /// The node the subject names, when it names one.
    pub node_id: Option<Uuid>,
    pub reason: String,
    pub payload: Vec<u8>,
    pub rejected_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
