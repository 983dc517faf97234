//! One attempt at a delivery, as the endpoint's delivery log shows it.

use crate::ids::{EventId, WebhookEndpointId};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "webhook_attempts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub delivery_id: Uuid,
    pub endpoint_id: WebhookEndpointId,
    pub event_id: EventId,
    /// 1 for the first attempt of the delivery.
    pub attempt: i32,
    pub at: DateTimeUtc,
    /// The answer's HTTP status; none when no answer came.
    pub status_code: Option<i32>,
    pub latency_ms: i64,
    pub error: Option<String>,
    /// The first bytes of the answer's body.
    pub response_head: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
