//! A prepaid top-up: a tenant admin buys credit, paid through Stripe; the payment's
//! success grants the credit (once).
use crate::ids::CreditGrantId;
use crate::ids::TenantId;
pub use crate::vocabulary::TopUpStatus;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "top_ups")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub tenant_id: TenantId,
    /// Exact decimal in `currency`.
    pub amount: super::Exact,
    pub currency: String,
    pub status: TopUpStatus,
    /// The caller's idempotency key: the same key finds the same top-up.
    pub client_key: Option<String>,
    pub stripe_payment_intent: Option<String>,
    /// The credit grant the payment bought.
    pub credit_grant_id: Option<CreditGrantId>,
    /// Why the payment was refused.
    pub failure: Option<String>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
