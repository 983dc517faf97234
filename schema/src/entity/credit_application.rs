//! How much of a credit grant one finalized invoice used.

use crate::ids::CreditGrantId;
use crate::ids::InvoiceId;
use crate::ids::TenantId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "credit_applications")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub grant_id: CreditGrantId,
    pub invoice_id: InvoiceId,
    pub tenant_id: TenantId,
    pub amount: super::Exact,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
