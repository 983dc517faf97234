//! A call to the payment provider that a committed change needs (e.g. charging a
//! finalized invoice), written in the same transaction as that change and delivered by a
//! worker with retries. Its idempotency key makes a repeated delivery create nothing new.

use crate::ids::InvoiceId;
use crate::ids::TenantId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "payment_outbox")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// `charge_invoice`, `send_invoice` or `charge_top_up`.
    pub kind: String,
    pub tenant_id: TenantId,
    pub invoice_id: Option<InvoiceId>,
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
    pub top_up_id: Option<Uuid>,
    /// When the current attempt was sent. Set while its answer is unknown: after a crash
    /// the provider's events tell whether it arrived before it is sent again.
    pub sent_at: Option<DateTimeUtc>,
    /// Charges refused so far (each retry after a refusal has a key of its own).
    pub refusals: i32,
    /// Where the row is in the retry schedule (restarted by a new payment method).
    pub retry_step: i32,
    /// The token of the worker delivering it now: only that worker records the outcome.
    pub claim: Option<Uuid>,
    /// For `refund_credit_note`: the credit note refunded.
    pub credit_note_id: Option<Uuid>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
