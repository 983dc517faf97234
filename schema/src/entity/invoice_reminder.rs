//! A reminder about an owed invoice that went out (`due_soon`, `overdue`, `overdue_7`,
//! `overdue_14`, `overdue_30`): one row each, so each goes out once.

use crate::ids::InvoiceId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "invoice_reminders")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub invoice_id: InvoiceId,
    #[sea_orm(primary_key, auto_increment = false)]
    pub kind: String,
    pub sent_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
