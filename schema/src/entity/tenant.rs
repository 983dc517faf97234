//! A customer organisation. Every tenant-owned row carries `tenant_id`.

use crate::ids::TenantId;
pub use crate::vocabulary::TenantStatus;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tenants")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: TenantId,
    #[sea_orm(unique)]
    pub name: String,
    pub currency: String,
    pub status: TenantStatus,
    pub created_at: DateTimeUtc,
    /// Day of the month (1–28, UTC) on which the tenant's billing periods start.
    pub billing_anchor_day: i32,
    /// Days from an invoice's finalization to its due date (net terms).
    pub net_terms_days: i32,
    /// When its personal data was erased on request (it is kept suspended, under a
    /// pseudonym).
    pub erased_at: Option<DateTimeUtc>,
    /// The region its data lives in (docs/compliance.md, "Data residency").
    pub home_region: Option<String>,
    /// The regions it may order GPUs and volumes in (a JSON array); null: any.
    pub allowed_regions: Option<Json>,
    /// Every portal user must have a second factor: one without it may only set it up.
    pub second_factor_required: bool,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
