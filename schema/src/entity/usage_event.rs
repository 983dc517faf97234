//! A usage event as received (CloudEvents 1.0), once: `(tenant_id, source, event_id)` is
//! unique for ever, so a resent event changes nothing.

use crate::ids::{TenantId, UsageEventId};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "usage_events")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: UsageEventId,
    pub tenant_id: TenantId,
    pub source: String,
    pub event_id: String,
    pub event_type: String,
    pub time: DateTimeUtc,
    pub data: Json,
    /// How many meters counted it.
    pub meters: i32,
    pub received_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
