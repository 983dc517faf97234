//! A credit note: money given back against a finalized invoice, numbered in its own
//! gapless series. Never changed once issued, except its refund's progress; its lines are
//! `credit_note_lines`.

use crate::ids::{InvoiceId, TenantId};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "credit_notes")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub tenant_id: TenantId,
    pub invoice_id: InvoiceId,
    /// `NC-CN-2026-000001`.
    pub number: String,
    pub currency: String,
    pub reason: String,
    /// `full`, `lines` or `amount`.
    pub form: String,
    /// Net amount credited.
    pub subtotal: super::Exact,
    pub tax: super::Exact,
    /// `subtotal + tax`.
    pub total: super::Exact,
    /// Per rate: `[{category, percent, net, tax}]`.
    pub taxes: Json,
    /// Of `total`: what reduced the invoice's amount due.
    pub applied: super::Exact,
    /// Of `total`: what went to the tenant's balance (as a prepaid credit grant).
    pub to_balance: super::Exact,
    /// Of `total`: what is refunded through the payment provider.
    pub refunded: super::Exact,
    pub credit_grant_id: Option<Uuid>,
    /// `pending`, `done` or `failed` while a refund is under way or after.
    pub refund_state: Option<String>,
    pub issued_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
