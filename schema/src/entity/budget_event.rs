//! A budget threshold crossed in one billing period (once per threshold, period and limit
//! version), or allocations stopped at the limit, with the event that carried it.

use crate::ids::{EventId, TenantId};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "budget_events")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub tenant_id: TenantId,
    pub period_start: DateTimeUtc,
    /// `threshold_crossed` or `allocations_stopped`.
    pub kind: String,
    /// Percent of the limit (for `threshold_crossed`; 100 for `allocations_stopped`).
    pub threshold: i32,
    pub spend: super::Exact,
    pub monthly_limit: super::Exact,
    pub created_at: DateTimeUtc,
    /// How its webhook went before budget alerts were events (`none`, `pending`,
    /// `delivered`, `failed`); since, the status of `event_id`'s delivery.
    pub webhook_status: String,
    pub webhook_attempts: i32,
    /// The budget's `limit_version` the spend was judged against.
    pub limit_version: i32,
    /// The event of the log that carried it (none before budget alerts were events).
    pub event_id: Option<EventId>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
