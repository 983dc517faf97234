//! The last invoice number issued per prefix and year (`NC-2026`): taken and incremented
//! in the transaction that finalizes an invoice, so numbers have no gaps.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "invoice_sequences")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub series: String,
    pub last_value: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
