//! A provider's monthly statement: what its hardware earned on the tenants' invoices the
//! month brought in, numbered per provider and never changed once closed.

use crate::ids::ProviderId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "provider_statements")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub provider_id: ProviderId,
    /// 1, 2, … per provider.
    pub sequence: i32,
    /// `PS-<PROVIDER>-0001`.
    pub number: String,
    /// The month, `[period_start, period_end)` in UTC.
    pub period_start: DateTimeUtc,
    pub period_end: DateTimeUtc,
    /// The provider's currency.
    pub currency: String,
    pub gross: super::Exact,
    pub fees: super::Exact,
    pub sla_chargebacks: super::Exact,
    /// `gross − fees − sla_chargebacks`: what the statement adds to the provider's payable.
    pub net: super::Exact,
    pub lines: i32,
    pub closed_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
