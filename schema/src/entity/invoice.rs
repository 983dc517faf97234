//! An invoice: the draft of a tenant's open billing period, or a finalized one. Once
//! finalized (`status` left `draft`) its number, period, amounts and rating are frozen —
//! by the store, and on PostgreSQL and SQLite by a trigger as well; only the payment state
//! (`paid_at`, `voided_at`, `void_reason`, `status`) moves on.

use crate::ids::InvoiceId;
use crate::ids::TenantId;
pub use crate::vocabulary::{InvoiceStatus, PaymentState};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "invoices")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: InvoiceId,
    pub tenant_id: TenantId,
    pub status: InvoiceStatus,
    /// `NC-2026-000123`, gapless per operator and year; set when finalized.
    pub number: Option<String>,
    pub currency: String,
    pub period_start: DateTimeUtc,
    pub period_end: DateTimeUtc,
    pub subtotal: super::Exact,
    pub credits: super::Exact,
    /// The tax charged (the sum of `taxes`); `total` = `subtotal` + `tax` − `credits`.
    pub tax: super::Exact,
    pub total: super::Exact,
    /// The plan version(s) the period was rated with, e.g. `standard v2`.
    pub plan: String,
    /// Everything needed to recompute the total: usage, plan terms, rounding, trace.
    pub rating: Option<Json>,
    pub finalized_at: Option<DateTimeUtc>,
    /// When it falls due: finalization plus the tenant's net terms, frozen with it.
    pub due_at: Option<DateTimeUtc>,
    /// Seller and buyer as they were when it was finalized (`neocloud_metering::parties`).
    pub parties: Option<Json>,
    /// The tax per rate (`neocloud_metering::tax::TaxSummary`), frozen when finalized.
    pub taxes: Option<Json>,
    pub paid_at: Option<DateTimeUtc>,
    pub voided_at: Option<DateTimeUtc>,
    pub void_reason: Option<String>,
    pub created_at: DateTimeUtc,
    pub payment_state: PaymentState,
    /// Failed collection attempts so far (dunning counts them).
    pub payment_failures: i32,
    /// The Stripe-hosted page where a `send_invoice` customer pays it.
    pub payment_url: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
