//! Invoices: `invoices`, `invoice`, `upcomingInvoice` and `creditGrants` (tenants see
//! their own; operators name the tenant), and for operators `closeBillingPeriod`,
//! `voidInvoice` and `grantCredits`. Money is a decimal string.

use async_graphql::connection::Connection;
use async_graphql::{ComplexObject, Context, Enum, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_metering::rating::period::Line;
use neocloud_schema::entity::{credit_grant, invoice};
use neocloud_schema::ids::{InvoiceId, TenantId};

use super::plans::GqlMetric;
use super::scalars::{connection, parse_id, tenant_arg, to_id};
use crate::invoicing::{self, GrantInput, InvoiceView};
use crate::pagination::Page;

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::InvoiceStatus",
    name = "InvoiceStatus"
)]
pub enum GqlInvoiceStatus {
    Draft,
    Open,
    Paid,
    Void,
    Uncollectible,
    /// Finalized, owed and past its due date.
    Overdue,
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::PaymentState",
    name = "PaymentState"
)]
pub enum GqlPaymentState {
    External,
    Pending,
    Paid,
    PaymentFailed,
    Uncollectible,
    Void,
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "neocloud_schema::vocabulary::LineKind", name = "LineKind")]
pub enum GqlLineKind {
    Usage,
    FlatFee,
    SlaCredit,
    CommitmentDiscount,
    CommitmentTrueUp,
    Adjustment,
    Credit,
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::CreditKind",
    name = "CreditKind"
)]
pub enum GqlCreditKind {
    Prepaid,
    Promotional,
}

/// One line: `amount` = `quantity × unitPrice` rounded half-even to the minor unit.
#[derive(SimpleObject)]
pub struct InvoiceLine {
    pub kind: GqlLineKind,
    pub description: String,
    /// The SKU's name (null for commitment and credit lines).
    pub sku: Option<String>,
    pub sku_id: Option<ID>,
    pub metric: Option<GqlMetric>,
    /// 1-based tier of a tiered rate.
    pub tier: Option<i32>,
    pub quantity: String,
    pub unit: String,
    pub unit_price: String,
    pub amount: String,
    /// The amount before rounding.
    pub amount_exact: String,
    /// For late usage: the invoice whose period it belongs to.
    pub adjusts_invoice_id: Option<ID>,
    /// How it is taxed (null when the invoice is untaxed, and for credits: they pay).
    pub tax_category: Option<GqlTaxCategory>,
    pub tax_percent: Option<String>,
    /// The line's own tax, for information: the invoice's tax is computed per rate.
    pub tax_amount: Option<String>,
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "neocloud_metering::tax::TaxCategory", name = "TaxCategory")]
pub enum GqlTaxCategory {
    /// Taxed at the jurisdiction's rate.
    Standard,
    /// EU business customer abroad: the customer accounts for the VAT.
    ReverseCharge,
    /// Customer outside the seller's tax area: no tax.
    Export,
}

/// The tax of one rate on an invoice: `tax` = `taxable × percent / 100`, rounded half away
/// from zero to the minor unit.
#[derive(SimpleObject)]
pub struct InvoiceTax {
    pub category: GqlTaxCategory,
    /// The country whose rate applies.
    pub jurisdiction: String,
    pub percent: String,
    pub taxable: String,
    pub tax: String,
    /// What the invoice says about it (the reverse-charge or export note).
    pub note: Option<String>,
}

impl From<&neocloud_metering::tax::TaxSummary> for InvoiceTax {
    fn from(t: &neocloud_metering::tax::TaxSummary) -> Self {
        InvoiceTax {
            category: t.category.into(),
            jurisdiction: t.jurisdiction.clone(),
            percent: t.percent.normalize().to_string(),
            taxable: t.taxable.to_string(),
            tax: t.tax.to_string(),
            note: t.note.clone(),
        }
    }
}

impl From<&Line> for InvoiceLine {
    fn from(l: &Line) -> Self {
        InvoiceLine {
            kind: l.kind.into(),
            description: l.description.clone(),
            sku: l.sku_name.clone(),
            sku_id: l.sku.map(to_id),
            metric: l.metric.map(Into::into),
            tier: l.tier.and_then(|t| i32::try_from(t + 1).ok()),
            quantity: l.quantity.to_string(),
            unit: l.unit.clone(),
            unit_price: l.unit_price.to_string(),
            amount: l.amount.to_string(),
            amount_exact: l.amount_exact.to_string(),
            adjusts_invoice_id: l.adjusts_invoice.map(to_id),
            tax_category: l.tax.as_ref().map(|t| t.category.into()),
            tax_percent: l.tax.as_ref().map(|t| t.percent.normalize().to_string()),
            tax_amount: l.tax.as_ref().map(|t| t.amount.to_string()),
        }
    }
}

/// A credit note as an invoice lists it (`creditNote(id)` has the rest).
/// Which EN 16931 e-invoices an invoice exports as
/// (`GET /v1/invoices/{id}/export?format=…`).
#[derive(SimpleObject)]
pub struct EInvoice {
    /// Of `facturx` (PDF/A-3 with the CII inside), `ubl` (Peppol BIS 3.0), `cii`.
    pub formats: Vec<&'static str>,
    /// What keeps it from the others (e.g. "the buyer had no billing profile …").
    pub missing: Vec<String>,
}

#[derive(SimpleObject)]
pub struct InvoiceCreditNote {
    pub number: String,
    pub total: String,
}

/// An invoice. A `DRAFT` is the open period's, rated as of the request.
pub struct Invoice(InvoiceView);

#[Object]
impl Invoice {
    async fn id(&self) -> ID {
        to_id(self.0.invoice.id)
    }
    /// `NC-2026-000123`; null while a draft.
    async fn number(&self) -> Option<&str> {
        self.0.invoice.number.as_deref()
    }
    async fn status(&self) -> GqlInvoiceStatus {
        self.0.invoice.status.into()
    }
    /// Where collecting it stands (`EXTERNAL` when payments are not configured).
    async fn payment_state(&self) -> GqlPaymentState {
        self.0.invoice.payment_state.into()
    }
    /// Failed collection attempts so far.
    async fn payment_failures(&self) -> i32 {
        self.0.invoice.payment_failures
    }
    /// The Stripe-hosted page where it is paid (tenants collected by `SEND_INVOICE`).
    async fn payment_url(&self) -> Option<&str> {
        self.0.invoice.payment_url.as_deref()
    }
    async fn tenant_id(&self) -> ID {
        to_id(self.0.invoice.tenant_id)
    }
    async fn currency(&self) -> &str {
        &self.0.invoice.currency
    }
    async fn period_start(&self) -> DateTime<Utc> {
        self.0.invoice.period_start
    }
    async fn period_end(&self) -> DateTime<Utc> {
        self.0.invoice.period_end
    }
    /// The plan version(s) the period is rated with.
    async fn plan(&self) -> &str {
        &self.0.invoice.plan
    }
    /// The lines before credits.
    async fn subtotal(&self) -> String {
        self.0.subtotal.to_string()
    }
    /// The tax charged: the sum of `taxes` ("0.00" when untaxed).
    async fn tax(&self) -> String {
        self.0.tax.to_string()
    }
    /// The tax per rate (empty when the operator charges no tax).
    async fn taxes(&self) -> Vec<InvoiceTax> {
        self.0.taxes.iter().map(InvoiceTax::from).collect()
    }
    /// What prepaid and promotional credits paid (of the charges and their tax).
    async fn credits(&self) -> String {
        self.0.credits.to_string()
    }
    /// What is owed: `subtotal + tax − credits` (the sum of all rounded lines plus tax).
    async fn total(&self) -> String {
        self.0.total.to_string()
    }
    async fn finalized_at(&self) -> Option<DateTime<Utc>> {
        self.0.invoice.finalized_at
    }
    /// When it falls due: finalization plus the tenant's net terms (null while a draft).
    async fn due_at(&self) -> Option<DateTime<Utc>> {
        self.0.invoice.due_at
    }
    async fn paid_at(&self) -> Option<DateTime<Utc>> {
        self.0.invoice.paid_at
    }
    async fn voided_at(&self) -> Option<DateTime<Utc>> {
        self.0.invoice.voided_at
    }
    async fn void_reason(&self) -> Option<&str> {
        self.0.invoice.void_reason.as_deref()
    }
    /// The e-invoice formats it exports as, and what keeps it from the others.
    async fn e_invoice(&self) -> EInvoice {
        let (formats, missing) = crate::invoicing::einvoice::availability(&self.0);
        EInvoice { formats, missing }
    }
    /// Credit notes issued against it: number and total, oldest first.
    async fn credit_notes(&self) -> Vec<InvoiceCreditNote> {
        self.0
            .credit_notes
            .iter()
            .map(|(number, total)| InvoiceCreditNote {
                number: number.clone(),
                total: total.to_string(),
            })
            .collect()
    }
    /// What its credit notes credited together, tax included.
    async fn credited_total(&self) -> String {
        let credited: rust_decimal::Decimal = self.0.credit_notes.iter().map(|(_, t)| t).sum();
        crate::invoicing::in_minor_units(&self.0.invoice.currency)(credited).to_string()
    }
    /// What is still owed: `total` less what credit notes took off it ("0.00" once paid
    /// or void; a draft's total as of now).
    async fn amount_due(&self) -> String {
        self.0.amount_due.to_string()
    }
    async fn lines(&self) -> Vec<InvoiceLine> {
        self.0.lines.iter().map(InvoiceLine::from).collect()
    }
}

/// An invoice in a list: a finalized invoice's amounts as billed; the open period's
/// draft rated as of the request (as `upcomingInvoice` rates it).
#[derive(SimpleObject)]
#[graphql(complex)]
pub struct InvoiceSummary {
    pub id: ID,
    pub number: Option<String>,
    pub status: GqlInvoiceStatus,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    pub currency: String,
    pub total: String,
    /// When it falls due (null while a draft).
    pub due_at: Option<DateTime<Utc>>,
    #[graphql(skip)]
    pub draft: bool,
}

#[ComplexObject]
impl InvoiceSummary {
    /// Whether `total` is final (false for the open period's draft).
    async fn finalized(&self) -> bool {
        !self.draft
    }
}

impl From<invoice::Model> for InvoiceSummary {
    fn from(i: invoice::Model) -> Self {
        let draft = i.status == neocloud_schema::vocabulary::InvoiceStatus::Draft;
        InvoiceSummary {
            id: to_id(i.id),
            number: i.number,
            status: i.status.into(),
            period_start: i.period_start,
            period_end: i.period_end,
            currency: i.currency,
            total: i.total.to_string(),
            due_at: i.due_at,
            draft,
        }
    }
}

#[derive(SimpleObject)]
pub struct CreditGrant {
    pub id: ID,
    pub kind: GqlCreditKind,
    pub currency: String,
    pub amount: String,
    /// What is left (the amount minus what finalized, not voided invoices used).
    pub remaining: String,
    pub effective_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    /// The start of the charges it pays (charges before it, in the period it pays, are
    /// not covered).
    pub covers_from: DateTime<Utc>,
    pub reason: String,
}

fn grant_of((g, remaining): (credit_grant::Model, rust_decimal::Decimal)) -> CreditGrant {
    let in_minor_units = crate::invoicing::in_minor_units(&g.currency);
    let money = |amount| in_minor_units(amount).to_string();
    CreditGrant {
        id: to_id(g.id),
        kind: g.kind.into(),
        amount: money(g.amount.get()),
        remaining: money(remaining),
        currency: g.currency,
        effective_at: g.effective_at,
        expires_at: g.expires_at,
        covers_from: g.covers_from.unwrap_or(g.effective_at),
        reason: g.reason,
    }
}

#[derive(InputObject)]
pub struct GrantCreditsInput {
    pub tenant_id: ID,
    pub kind: GqlCreditKind,
    /// In the tenant's currency, at most its minor unit's digits.
    pub amount: String,
    /// When it can be used. Default: now.
    pub effective_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
    /// The start of the charges it pays. Default: the start of the open billing period,
    /// so it pays that whole period's charges, those before the grant included. Not
    /// before the open period (closed invoices are final).
    pub covers_from: Option<DateTime<Utc>>,
    #[graphql(default)]
    pub reason: String,
}

#[derive(Default)]
pub struct InvoiceQuery;

#[Object]
impl InvoiceQuery {
    /// The tenant's invoices, oldest first; the open period's draft is always among them,
    /// with its total as of now.
    #[graphql(complexity = "first.unwrap_or(20).max(0) as usize * child_complexity")]
    async fn invoices(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        tenant_id: Option<ID>,
    ) -> Result<Connection<String, InvoiceSummary>> {
        let page = Page::from_args(first, after.as_deref(), super::page_limit(ctx))?;
        let result = invoicing::list(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
            page,
            super::now(ctx)?,
            &super::billing(ctx)?.policy.seller,
        )
        .await?;
        Ok(connection(result, |i| i.id.into(), InvoiceSummary::from))
    }

    /// One invoice with its lines (a draft is rated as of now).
    async fn invoice(&self, ctx: &Context<'_>, id: ID) -> Result<Invoice> {
        let id: InvoiceId = parse_id("id", &id)?;
        let view = invoicing::get(
            super::db(ctx)?,
            super::principal(ctx)?,
            id,
            super::now(ctx)?,
            &super::billing(ctx)?.policy.seller,
        )
        .await?;
        Ok(Invoice(view))
    }

    /// The open period's invoice as it stands now.
    async fn upcoming_invoice(&self, ctx: &Context<'_>, tenant_id: Option<ID>) -> Result<Invoice> {
        let view = invoicing::upcoming(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
            super::now(ctx)?,
            &super::billing(ctx)?.policy.seller,
        )
        .await?;
        Ok(Invoice(view))
    }

    /// The tenant's credit grants with what is left of each.
    async fn credit_grants(
        &self,
        ctx: &Context<'_>,
        tenant_id: Option<ID>,
    ) -> Result<Vec<CreditGrant>> {
        let grants = invoicing::grants(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
        )
        .await?;
        Ok(grants.into_iter().map(grant_of).collect())
    }
}

#[derive(Default)]
pub struct InvoiceMutation;

#[Object]
impl InvoiceMutation {
    /// Ends the tenant's open billing period now, finalizes its invoice and returns it;
    /// the next period starts at once (operator).
    async fn close_billing_period(&self, ctx: &Context<'_>, tenant_id: ID) -> Result<Invoice> {
        let tenant: TenantId = parse_id("tenantId", &tenant_id)?;
        let view = invoicing::close(
            super::db(ctx)?,
            super::principal(ctx)?,
            super::billing(ctx)?,
            tenant,
            super::now(ctx)?,
        )
        .await?;
        Ok(Invoice(view))
    }

    /// Voids an open invoice (operator). Its number stays taken; credits it used return.
    async fn void_invoice(&self, ctx: &Context<'_>, id: ID, reason: String) -> Result<Invoice> {
        let id: InvoiceId = parse_id("id", &id)?;
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let view = invoicing::void(db, principal, id, &reason, super::now(ctx)?).await?;
        Ok(Invoice(view))
    }

    /// Records an invoice collected outside Stripe (`EXTERNAL`) as paid, with the
    /// operator's reference for the payment, e.g. the bank transfer's (operator).
    async fn mark_invoice_paid(
        &self,
        ctx: &Context<'_>,
        id: ID,
        reference: String,
    ) -> Result<Invoice> {
        let id: InvoiceId = parse_id("id", &id)?;
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let view = invoicing::mark_paid(db, principal, id, &reference, super::now(ctx)?).await?;
        Ok(Invoice(view))
    }

    /// Grants prepaid or promotional credit to a tenant (operator).
    async fn grant_credits(
        &self,
        ctx: &Context<'_>,
        input: GrantCreditsInput,
    ) -> Result<CreditGrant> {
        let grant = invoicing::grant(
            super::db(ctx)?,
            super::principal(ctx)?,
            GrantInput {
                tenant: parse_id("tenantId", &input.tenant_id)?,
                kind: input.kind.into(),
                amount: input.amount,
                effective_at: input.effective_at,
                expires_at: input.expires_at,
                covers_from: input.covers_from,
                reason: input.reason,
            },
            super::now(ctx)?,
        )
        .await?;
        Ok(grant_of(grant))
    }
}
