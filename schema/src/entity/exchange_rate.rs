//! One of the operator's exchange rates: units of `to_currency` per unit of
//! `from_currency` from `effective_from` until the pair's next rate. Never changed.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "exchange_rates")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// ISO 4217.
    pub from_currency: String,
    /// ISO 4217.
    pub to_currency: String,
    pub rate: super::Exact,
    pub effective_from: DateTimeUtc,
    /// Where the rate comes from, e.g. `ECB reference rate 2026-11-30`.
    pub source: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
