//! A payout of what a closed statement left owed to a provider: queued with the
//! statement, then sent once (a Stripe Connect transfer, or a SEPA credit-transfer file).

use crate::ids::ProviderId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "provider_payouts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub provider_id: ProviderId,
    /// The statement whose close queued it (one payout per statement at most).
    pub statement_id: Uuid,
    /// `PO-<PROVIDER>-0001`: the statement's number with `PO` for `PS`.
    pub number: String,
    pub currency: String,
    pub amount: super::Exact,
    /// `stripe_connect` or `sepa_credit_transfer`.
    pub method: String,
    /// The connected account (`acct_…`), or `IBAN BIC`, as it was when queued.
    pub destination: String,
    /// `queued`, `sent` or `failed`.
    pub status: String,
    /// The Stripe transfer (`tr_…`), or the SEPA file's message id.
    pub reference: Option<String>,
    pub attempts: i32,
    pub next_attempt_at: DateTimeUtc,
    pub last_error: Option<String>,
    pub created_at: DateTimeUtc,
    pub sent_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
