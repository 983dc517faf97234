//! Credit granted to a tenant (prepaid or promotional), usable from `effective_at` until
//! `expires_at`, on the charges from `covers_from` (none: from `effective_at`, as grants
//! made before coverage was recorded). Never changed: what is left is the amount minus its applications on
//! invoices that were not voided.

use crate::ids::CreditGrantId;
use crate::ids::TenantId;
pub use crate::vocabulary::CreditKind;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "credit_grants")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: CreditGrantId,
    pub tenant_id: TenantId,
    pub kind: CreditKind,
    pub currency: String,
    pub amount: super::Exact,
    pub effective_at: DateTimeUtc,
    pub expires_at: Option<DateTimeUtc>,
    pub reason: String,
    pub created_at: DateTimeUtc,
    /// The start of the charges the grant pays; null on grants older than this column.
    pub covers_from: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
