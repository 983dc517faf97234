//! One line of a provider statement: what one allocation earned on one tenant invoice
//! (`earning`), the reverse of such a line when the invoice was voided later
//! (`reversal`), or what a credit note on that invoice took back (`credit_note`). Each
//! (invoice, allocation, kind) of earnings and reversals, and each (credit note,
//! allocation), is on at most one statement.

use crate::ids::{InvoiceId, ProviderId};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "provider_statement_lines")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub statement_id: Uuid,
    pub provider_id: ProviderId,
    pub position: i32,
    /// `earning`, `reversal` or `credit_note`.
    pub kind: String,
    /// The tenant invoice it was earned on (never shown to the provider).
    pub invoice_id: InvoiceId,
    pub allocation_id: Uuid,
    pub node_id: Uuid,
    pub sku_name: String,
    pub form: String,
    pub region: String,
    /// The agreement version that priced it.
    pub agreement_version: i32,
    pub unit_hours: super::Exact,
    /// What tenants were invoiced for it, in `revenue_currency` (exact).
    pub revenue: super::Exact,
    pub revenue_currency: String,
    /// The SLA credit tenants got for its failed time, in `revenue_currency` (exact).
    pub sla_credit: super::Exact,
    pub gross: super::Exact,
    pub fee: super::Exact,
    pub sla_chargeback: super::Exact,
    pub net: super::Exact,
    pub note: Option<String>,
    /// The credit note of a `credit_note` line.
    pub credit_note_id: Option<Uuid>,
    /// Units of the statement's currency per unit of `revenue_currency` its revenue and
    /// SLA credit were converted at; `None` when they were not converted.
    pub exchange_rate: Option<super::Exact>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
