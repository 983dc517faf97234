//! One line of a credit note: a net amount credited against a line of its invoice.

use crate::ids::TenantId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "credit_note_lines")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub credit_note_id: Uuid,
    pub tenant_id: TenantId,
    pub invoice_line_id: Uuid,
    /// The credited line's number on its invoice (from 1).
    pub line_number: i32,
    pub description: String,
    pub amount: super::Exact,
    pub tax_category: Option<String>,
    pub tax_percent: Option<super::Exact>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
