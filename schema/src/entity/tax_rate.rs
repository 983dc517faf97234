//! One rate of the operator's tax table: the percentage charged in a jurisdiction over
//! `[valid_from, valid_until)`. Rates of one jurisdiction never overlap; a rate is never
//! changed once added, only given an end (invoices freeze the rate they were taxed at).

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tax_rates")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// ISO 3166-1 alpha-2.
    pub jurisdiction: String,
    /// Percent, e.g. `19` or `25.5`.
    pub percent: super::Exact,
    pub valid_from: DateTimeUtc,
    pub valid_until: Option<DateTimeUtc>,
    pub description: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
