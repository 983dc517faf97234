//! Invoices as the API serves them: the open period's draft (`upcomingInvoice`), finalized
//! invoices (tenant-scoped in the store), closing a period, voiding, credit grants, the
//! closing of periods whose grace has passed, and exports. Pricing and the invoice rules
//! live in `neocloud_metering::invoicing` and `rating::period`.

pub mod credit_note_export;
pub mod credit_notes;
pub mod einvoice;
pub mod export;
mod focus;
pub mod pdf;
mod pdfa;
pub mod taxes;

use chrono::{DateTime, TimeDelta, Utc};
use neocloud_metering::ingest;
use neocloud_metering::invoicing::{self as billing, BillingPolicy, NewGrant};
use neocloud_metering::parties::Seller;
use neocloud_metering::payments::outbox::RetrySchedule;
use neocloud_metering::rating::period::Line;
use neocloud_metering::tax::TaxSummary;
use neocloud_schema::clock::SharedClock;
use neocloud_schema::entity::{credit_grant, invoice};
use neocloud_schema::ids::{InvoiceId, TenantId};
use neocloud_schema::money::parse_plain_decimal;
use neocloud_schema::vocabulary::{CreditKind, InvoiceStatus};
use rust_decimal::Decimal;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use serde_json::json;

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::pagination::{Page, PageOf};
use crate::settings::BillingSettings;
use crate::tenancy;

/// Billing configuration the handlers share.
#[derive(Debug, Clone)]
pub struct Billing {
    pub policy: BillingPolicy,
    pub operator_name: String,
    /// Failed payments of one invoice that suspend its tenant (0: never).
    pub dunning_failures: i32,
    /// When a refused charge is tried again.
    pub retries: RetrySchedule,
    /// What time it is, for the background work.
    pub clock: SharedClock,
    /// Who pays SEPA payout files (`billing.payout_account`).
    pub payout_debtor: Option<neocloud_metering::payouts::Debtor>,
}

impl Billing {
    pub fn new(settings: &BillingSettings, payments: bool, clock: SharedClock) -> Billing {
        Billing {
            clock,
            policy: BillingPolicy {
                payments,
                invoice_prefix: settings.invoice_prefix.clone(),
                close_grace: TimeDelta::seconds(
                    i64::try_from(settings.close_grace_seconds).unwrap_or(3600),
                ),
                seller: neocloud_metering::parties::Seller {
                    legal_name: settings.operator_name.clone(),
                    address_lines: settings.seller_address.clone(),
                    country: settings.seller_country.clone(),
                    vat_id: settings.seller_vat_id.clone(),
                    registration: settings.seller_registration.clone(),
                    email: settings.seller_email.clone(),
                    bank: settings.seller_bank.clone(),
                },
            },
            operator_name: settings.operator_name.clone(),
            payout_debtor: settings.payout_debtor().ok().flatten(),
            dunning_failures: i32::try_from(settings.dunning_failures).unwrap_or(3),
            retries: RetrySchedule(
                settings
                    .charge_retry_delays()
                    .into_iter()
                    .map(|s| TimeDelta::seconds(i64::try_from(s).unwrap_or(86_400)))
                    .collect(),
            ),
        }
    }
}

/// An invoice with its lines: stored for finalized invoices, rated now for a draft.
#[derive(Debug, Clone)]
pub struct InvoiceView {
    pub invoice: invoice::Model,
    pub lines: Vec<Line>,
    /// For a draft: its amounts as rated now (a stored draft keeps zeros).
    pub subtotal: Decimal,
    /// The tax per rate and their sum (none when untaxed).
    pub taxes: Vec<TaxSummary>,
    pub tax: Decimal,
    pub credits: Decimal,
    pub total: Decimal,
    /// Credit notes issued against it: (number, total).
    pub credit_notes: Vec<(String, Decimal)>,
    /// What is still owed: `total` less what credit notes took off (zero once paid).
    pub amount_due: Decimal,
    /// Rating input and output (the JSON export's content).
    pub rating: serde_json::Value,
}

fn draft_view(draft: billing::Draft) -> InvoiceView {
    let mut invoice = draft.invoice;
    invoice.plan = draft
        .input
        .segments
        .iter()
        .map(|s| s.plan.label.clone())
        .collect::<Vec<_>>()
        .join(", then ");
    InvoiceView {
        invoice,
        subtotal: draft.rated.subtotal,
        taxes: draft.rated.taxes.clone(),
        tax: draft.rated.tax,
        credits: draft.rated.credits,
        total: draft.rated.total,
        credit_notes: Vec::new(),
        amount_due: draft.rated.total,
        rating: json!({"input": draft.input, "output": draft.rated}),
        lines: draft.rated.lines,
    }
}

async fn finalized_view(
    db: &DatabaseConnection,
    invoice: invoice::Model,
) -> ApiResult<InvoiceView> {
    let legacy_tiers = counts_tiers_from_zero(&invoice);
    let money = in_minor_units(&invoice.currency);
    let lines = billing::store::lines(db, invoice.tenant_id, invoice.id)
        .await?
        .iter()
        .map(billing::store::line_of)
        .map(|mut line| {
            if legacy_tiers {
                number_trace_tier_from_one(&mut line);
            }
            line.amount = money(line.amount);
            line
        })
        .collect();
    let taxes = invoice
        .taxes
        .clone()
        .and_then(|t| serde_json::from_value(t).ok())
        .unwrap_or_default();
    let credited = credit_notes::of_invoice(db, &invoice).await?;
    Ok(InvoiceView {
        credit_notes: credited
            .notes
            .iter()
            .map(|n| (n.number.clone(), money(n.total.get())))
            .collect(),
        amount_due: money(credited.amount_due),
        subtotal: money(invoice.subtotal.get()),
        taxes,
        tax: money(invoice.tax.get()),
        credits: money(invoice.credits.get()),
        total: money(invoice.total.get()),
        rating: invoice.rating.clone().unwrap_or_default(),
        invoice,
        lines,
    })
}

/// Stored money as an invoice shows it, in its currency's minor units: `0.00`, not `0`
/// (PostgreSQL's `NUMERIC` keeps a zero without its digits). Stored amounts are already
/// rounded to the minor unit, so this only adds the digits.
pub(crate) fn in_minor_units(currency: &str) -> impl Fn(Decimal) -> Decimal + use<> {
    let digits = neocloud_schema::money::minor_unit_digits_of(currency);
    move |amount| neocloud_metering::rating::period::round(amount, digits)
}

/// Whether a finalized invoice's stored traces count tiers from 0 (finalized before tiers
/// were numbered from 1 everywhere). Its stored rating stays as it was.
fn counts_tiers_from_zero(invoice: &invoice::Model) -> bool {
    invoice.rating.as_ref().is_some_and(|r| {
        r.get("tier_numbering").and_then(serde_json::Value::as_str)
            != Some(neocloud_metering::rating::period::TIER_NUMBERING_RULE)
    })
}

fn number_trace_tier_from_one(line: &mut Line) {
    if let Some(tier) = line.trace.get("tier").and_then(serde_json::Value::as_u64) {
        line.trace["tier"] = json!(tier + 1);
    }
}

/// `upcomingInvoice`: the open period's draft, rated as of now.
pub async fn upcoming(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
    now: DateTime<Utc>,
    seller: &Seller,
) -> ApiResult<InvoiceView> {
    let tenant = actor.acting_tenant(asked)?;
    tenancy::store::find(db, tenant)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    Ok(draft_view(rated_draft(db, tenant, now, seller).await?))
}

/// The tenant's open period, rated (and taxed) as of now with all usage received so far.
async fn rated_draft(
    db: &DatabaseConnection,
    tenant: TenantId,
    now: DateTime<Utc>,
    seller: &Seller,
) -> ApiResult<billing::Draft> {
    ingest::settle(db).await?;
    // Opening a missing draft is one idempotent insert: no transaction to hold while rating.
    Ok(billing::rate_open(db, tenant, now, Some(seller)).await?)
}

/// `invoice(id)`: one of the caller's invoices (any, for operators).
pub async fn get(
    db: &DatabaseConnection,
    actor: &Principal,
    id: InvoiceId,
    now: DateTime<Utc>,
    seller: &Seller,
) -> ApiResult<InvoiceView> {
    actor.require_user()?;
    let scope = actor.tenant_scope_or_all();
    let found = billing::store::find(db, scope, id.into())
        .await?
        .ok_or_else(|| ApiError::not_found("invoice"))?;
    if found.status == InvoiceStatus::Draft {
        let draft = rated_draft(db, found.tenant_id, now, seller).await?;
        if draft.invoice.id == found.id {
            return Ok(draft_view(draft));
        }
    }
    finalized_view(db, found).await
}

/// `invoices(first, after)`: the tenant's invoices, oldest first. The open period's draft
/// is always there (opened if need be) with its total rated now, as `upcomingInvoice`
/// rates it; finalized invoices show their stored amounts.
pub async fn list(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
    page: Page,
    now: DateTime<Utc>,
    seller: &Seller,
) -> ApiResult<PageOf<invoice::Model>> {
    let tenant = actor.acting_tenant(asked)?;
    tenancy::store::find(db, tenant)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    let open = billing::store::open_draft(db, tenant).await?;
    let select = invoice::Entity::find().filter(invoice::Column::TenantId.eq(tenant.0));
    let mut found = page.fetch(db, select, invoice::Column::Id).await?;
    if let Some(listed) = found.items.iter_mut().find(|i| i.id == open.id) {
        let draft = rated_draft(db, tenant, now, seller).await?;
        listed.subtotal = draft.rated.subtotal.into();
        listed.tax = draft.rated.tax.into();
        listed.credits = draft.rated.credits.into();
        listed.total = draft.rated.total.into();
    }
    for listed in &mut found.items {
        let money = in_minor_units(&listed.currency);
        listed.subtotal = money(listed.subtotal.get()).into();
        listed.tax = money(listed.tax.get()).into();
        listed.credits = money(listed.credits.get()).into();
        listed.total = money(listed.total.get()).into();
    }
    Ok(found)
}

/// `closeBillingPeriod` (operator): ends the tenant's open period now and finalizes it.
#[tracing::instrument(name = "invoicing.close", skip_all, fields(tenant = %tenant))]
pub async fn close(
    db: &DatabaseConnection,
    actor: &Principal,
    billing_config: &Billing,
    tenant: TenantId,
    now: DateTime<Utc>,
) -> ApiResult<InvoiceView> {
    actor.require_operator()?;
    ingest::settle(db).await?;
    let txn = crate::db::begin_write(db).await?;
    tenancy::store::find(&txn, tenant)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    let (invoice, _) =
        billing::close_period(&txn, tenant, now, now, &billing_config.policy).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(tenant),
            action: "invoice.finalize",
            object_type: "invoice",
            object_id: invoice.id.to_string(),
            before: None,
            after: Some(json!({"number": invoice.number, "total": invoice.total})),
        },
    )
    .await?;
    txn.commit().await?;
    finalized_view(db, invoice).await
}

/// Closes every period whose end plus the grace has passed (run periodically). Returns
/// how many invoices were finalized.
#[tracing::instrument(name = "invoicing.close_due", skip_all)]
pub async fn close_due(db: &DatabaseConnection, billing_config: &Billing) -> ApiResult<usize> {
    ingest::settle(db).await?;
    let now = billing_config.clock.now();
    let mut closed = 0;
    // One tenant whose close fails (bad data, a conflict) is logged and retried on the
    // next sweep; it never holds back the others.
    for (tenant, end) in billing::due_for_close(db, now, &billing_config.policy).await? {
        match close_one(db, billing_config, tenant, end, now).await {
            Ok(()) => closed += 1,
            Err(err) => tracing::error!(
                tenant = %tenant,
                code = err.code().as_str(),
                message = %err.message(),
                "Closing a billing period failed; the other tenants go on."
            ),
        }
    }
    Ok(closed)
}

/// Sends the reminders of owed invoices due now, and moves invoices past their due date
/// to `overdue` (run periodically, after `close_due`). Returns how many went out.
#[tracing::instrument(name = "invoicing.send_reminders", skip_all)]
pub async fn send_reminders(db: &DatabaseConnection, billing_config: &Billing) -> ApiResult<usize> {
    let txn = crate::db::begin_write(db).await?;
    let sent =
        neocloud_metering::invoicing::reminders::send_due(&txn, billing_config.clock.now()).await?;
    txn.commit().await?;
    Ok(sent)
}

async fn close_one(
    db: &DatabaseConnection,
    billing_config: &Billing,
    tenant: TenantId,
    end: chrono::DateTime<Utc>,
    now: chrono::DateTime<Utc>,
) -> ApiResult<()> {
    let txn = crate::db::begin_write(db).await?;
    let (invoice, _) =
        billing::close_period(&txn, tenant, end, now, &billing_config.policy).await?;
    txn.commit().await?;
    tracing::info!(tenant = %tenant, number = ?invoice.number, total = %invoice.total, "Billing period closed.");
    Ok(())
}

/// `voidInvoice` (operator).
#[tracing::instrument(name = "invoicing.void", skip_all, fields(invoice = %id))]
pub async fn void(
    db: &DatabaseConnection,
    actor: &Principal,
    id: InvoiceId,
    reason: &str,
    now: DateTime<Utc>,
) -> ApiResult<InvoiceView> {
    actor.require_operator()?;
    let reason = reason.trim();
    if reason.is_empty() || reason.len() > 500 {
        return Err(ApiError::invalid("reason", "1 to 500 characters"));
    }
    let txn = crate::db::begin_write(db).await?;
    let invoice = billing::void(&txn, None, id, reason, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(invoice.tenant_id),
            action: "invoice.void",
            object_type: "invoice",
            object_id: invoice.id.to_string(),
            before: None,
            after: Some(json!({"number": invoice.number, "reason": reason})),
        },
    )
    .await?;
    txn.commit().await?;
    finalized_view(db, invoice).await
}

/// `markInvoicePaid` (operator): an invoice collected outside Stripe (`EXTERNAL`), e.g.
/// by a bank transfer the operator received, recorded as paid with the operator's
/// reference. Any other invoice, or one already paid: `INVALID_STATE`.
#[tracing::instrument(name = "invoicing.mark_paid", skip_all, fields(invoice = %id))]
pub async fn mark_paid(
    db: &DatabaseConnection,
    actor: &Principal,
    id: InvoiceId,
    reference: &str,
    now: DateTime<Utc>,
) -> ApiResult<InvoiceView> {
    actor.require_operator()?;
    let reference = reference.trim();
    if reference.is_empty() || reference.len() > 200 || reference.chars().any(char::is_control) {
        return Err(ApiError::invalid(
            "reference",
            "1 to 200 characters, no control characters",
        ));
    }
    let txn = crate::db::begin_write(db).await?;
    if !neocloud_metering::payments::paid_outside(&txn, id, now).await? {
        return Err(ApiError::InvalidState {
            message: "only a finalized invoice collected outside Stripe and still owed can be marked paid".into(),
        });
    }
    let invoice = invoice::Entity::find_by_id(id)
        .one(&txn)
        .await?
        .ok_or_else(|| ApiError::not_found("invoice"))?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(invoice.tenant_id),
            action: "invoice.mark_paid",
            object_type: "invoice",
            object_id: invoice.id.to_string(),
            before: None,
            after: Some(json!({"number": invoice.number, "reference": reference})),
        },
    )
    .await?;
    txn.commit().await?;
    finalized_view(db, invoice).await
}

/// A credit grant as given to `grantCredits`.
pub struct GrantInput {
    pub tenant: TenantId,
    pub kind: CreditKind,
    pub amount: String,
    pub effective_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
    /// The start of the charges it pays; `None`: the whole open billing period.
    pub covers_from: Option<DateTime<Utc>>,
    pub reason: String,
}

/// `grantCredits` (operator).
#[tracing::instrument(name = "invoicing.grant", skip_all, fields(tenant = %input.tenant))]
pub async fn grant(
    db: &DatabaseConnection,
    actor: &Principal,
    input: GrantInput,
    now: DateTime<Utc>,
) -> ApiResult<(credit_grant::Model, Decimal)> {
    actor.require_operator()?;
    let amount =
        parse_plain_decimal(input.amount.trim()).map_err(|e| ApiError::invalid("amount", e))?;
    if input.reason.len() > 500 {
        return Err(ApiError::invalid("reason", "at most 500 characters"));
    }
    let txn = crate::db::begin_write(db).await?;
    let tenant = tenancy::store::find(&txn, input.tenant)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    tenancy::in_currency("amount", amount, &tenant.currency)?;
    let created = billing::grant_credits(
        &txn,
        NewGrant {
            tenant: tenant.id,
            kind: input.kind,
            currency: tenant.currency.clone(),
            amount,
            effective_at: input.effective_at.unwrap_or(now),
            expires_at: input.expires_at,
            covers_from: input.covers_from,
            reason: input.reason.trim().to_owned(),
            funding: neocloud_metering::ledger::postings::Funding::Operator,
        },
        now,
    )
    .await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(input.tenant),
            action: "credit.grant",
            object_type: "credit_grant",
            object_id: created.id.to_string(),
            before: None,
            after: Some(json!({"amount": created.amount, "kind": created.kind, "expires_at": created.expires_at, "covers_from": created.covers_from})),
        },
    )
    .await?;
    txn.commit().await?;
    Ok((created, amount))
}

/// `creditGrants`: the tenant's grants with what is left of each.
pub async fn grants(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
) -> ApiResult<Vec<(credit_grant::Model, Decimal)>> {
    let tenant = actor.acting_tenant(asked)?;
    Ok(billing::grant_balances(db, tenant).await?)
}
