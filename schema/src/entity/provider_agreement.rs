//! A version of the terms a provider's capacity is resold on; never changed once written.

use crate::ids::ProviderId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "provider_agreements")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub provider_id: ProviderId,
    /// 1, 2, … per provider.
    pub version: i32,
    pub effective_from: DateTimeUtc,
    /// The provider's currency.
    pub currency: String,
    /// `revenue_share` or `fixed_rate`.
    pub model: String,
    /// For `revenue_share`: the provider's share of what tenants are invoiced, in percent.
    pub revenue_share_percent: Option<super::Exact>,
    /// For `fixed_rate`: `[{form, region, price_per_unit_hour}]`.
    pub fixed_rates: Json,
    /// Taken from the provider's gross, in percent.
    pub platform_fee_percent: super::Exact,
    /// `provider` or `platform`.
    pub sla_credits_borne_by: String,
    /// `monthly`.
    pub payout_schedule: String,
    /// Nothing is paid out below it (it carries over).
    pub payout_minimum: super::Exact,
    /// Pay out only what tenants' paid invoices earned.
    pub hold_until_paid: bool,
    /// For `fixed_rate`: a credit note takes back the same part of what an allocation
    /// earned as it gave back of what the allocation was invoiced (a revenue share always
    /// does).
    pub credit_notes_shared: bool,
    pub created_at: DateTimeUtc,
    pub created_by: Option<Uuid>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
