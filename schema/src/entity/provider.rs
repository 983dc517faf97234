//! The company that owns hardware in the fleet: the operator itself, or a partner whose
//! capacity the operator resells.

use crate::ids::ProviderId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "providers")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: ProviderId,
    #[sea_orm(unique)]
    pub name: String,
    pub created_at: DateTimeUtc,
    /// The company's registered name (statements and payouts are made out to it).
    pub legal_name: String,
    /// ISO 3166-1 alpha-2; empty for providers named before it was asked.
    pub country: String,
    /// ISO 4217: what the provider is paid in.
    pub currency: String,
    /// `manual`, `stripe_connect` or `sepa_credit_transfer`.
    pub payout_method: String,
    /// The Stripe connected account (`acct_…`), or `IBAN BIC` for SEPA.
    pub payout_account: Option<String>,
    /// Why its next statement has not closed, as JSON (`statements::store::Held`: the
    /// exchange rate missing, its pair and instant); `None` when nothing holds it.
    pub statement_held: Option<String>,
    /// Every one of its users must have a second factor (as `tenant.second_factor_required`).
    pub second_factor_required: bool,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
