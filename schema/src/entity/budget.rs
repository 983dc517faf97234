//! A tenant's monthly spend limit: alert thresholds (percent of the limit), where alerts
//! go, and what happens at the limit. `blocked_since` is set while a hard cap holds.
//! `limit_version` moves whenever the limit changes, so the limit's alerts start afresh.

use crate::ids::TenantId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "budgets")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant_id: TenantId,
    pub monthly_limit: super::Exact,
    pub currency: String,
    /// Percentages of the limit, ascending, e.g. `[50, 80, 100]`.
    pub alert_thresholds: Json,
    pub webhook_url: Option<String>,
    /// Signs webhook deliveries (HMAC-SHA256); shown to the tenant once.
    pub webhook_secret: String,
    /// At the limit, new orders are refused.
    pub hard_cap: bool,
    /// At the limit and with no prepaid credit left, running allocations get the notice
    /// window and end.
    pub stop_allocations: bool,
    pub blocked_since: Option<DateTimeUtc>,
    pub updated_at: DateTimeUtc,
    /// Moves whenever the limit changes; alerts are judged once per limit version.
    pub limit_version: i32,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
