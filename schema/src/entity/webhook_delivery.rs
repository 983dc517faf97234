//! One event owed to one endpoint: the delivery outbox. `claim` and a `next_attempt_at`
//! moved past the send's time limit mark a delivery in flight, so a second worker leaves
//! it alone and a worker that died leaves it due again.

use crate::ids::{EventId, TenantId, WebhookEndpointId};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "webhook_deliveries")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub event_id: EventId,
    pub endpoint_id: WebhookEndpointId,
    /// The endpoint's tenant (null: the operator's endpoint).
    pub tenant_id: Option<TenantId>,
    /// `pending`, `delivered` or `failed` (retries ran out).
    pub status: String,
    pub attempts: i32,
    pub next_attempt_at: DateTimeUtc,
    /// Retries stop after this.
    pub retry_until: DateTimeUtc,
    /// The worker holding it in flight, if any.
    pub claim: Option<Uuid>,
    pub last_status_code: Option<i32>,
    pub last_error: Option<String>,
    pub delivered_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
