//! One entry of the event log: a change a tenant or the operator may care about, written
//! in the transaction of the change. `seq` numbers entries in commit order (the feed's
//! cursor); `tenant_id` is null for operator-only events.

use crate::ids::{EventId, TenantId};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "events")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: EventId,
    pub seq: i64,
    /// A catalog name, e.g. `allocation.placed`.
    pub event_type: String,
    pub tenant_id: Option<TenantId>,
    pub occurred_at: DateTimeUtc,
    /// The event's `data`, as its type's JSON Schema describes it.
    pub payload: Json,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
