//! What a meter version counted for a tenant in one minute (by event time) and group: the
//! sum, count and largest of the values, and the latest value with its time. Updated in
//! the transaction that records the events, under the row's lock, in one of 16 shards.

use crate::ids::{MeterId, TenantId};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "meter_minutes")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant_id: TenantId,
    #[sea_orm(primary_key, auto_increment = false)]
    pub meter_id: MeterId,
    #[sea_orm(primary_key, auto_increment = false)]
    pub minute_start: DateTimeUtc,
    /// The group's values as a JSON array of strings, in the meter's `group_by` order.
    #[sea_orm(primary_key, auto_increment = false)]
    pub group_key: String,
    /// Which of a bucket's rows: each recording transaction adds to one shard of its own
    /// choosing, so concurrent batches of one tenant rarely wait on one row; a bucket is
    /// the sum of its shards.
    #[sea_orm(primary_key, auto_increment = false)]
    pub shard: i16,
    pub sum: super::Exact,
    pub count: i64,
    pub max: super::Exact,
    pub latest_at: DateTimeUtc,
    pub latest: super::Exact,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
