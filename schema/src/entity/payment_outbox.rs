//! A call to the payment provider that a committed change needs (e.g. charging a
//! finalized invoice), written in the same transaction as that change and delivered by a
//! worker with retries. Its idempotency key makes a repeated delivery create nothing new.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "payment_outbox")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// `charge_invoice`.
    pub kind: String,
    pub tenant_id: Uuid,
    pub invoice_id: Option<Uuid>,
    #[sea_orm(unique)]
    pub idempotency_key: String,
    /// `pending`, `done` or `failed`.
    pub status: String,
    pub attempts: i32,
    pub next_attempt_at: DateTimeUtc,
    pub last_error: Option<String>,
    /// The provider's object it created (a PaymentIntent id).
    pub stripe_id: Option<String>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
