//! Credit notes (docs/invoicing.md, "Credit notes"): money given back against a finalized
//! invoice that is not void — all of it, some of its lines, or an amount — with a reason,
//! numbered in their own gapless series `{prefix}-CN-{year}-{seq:06}`. What a note credits
//! is [`allocate`]d (pure); how it is settled follows the invoice:
//!
//! - still owed: it reduces the amount due first (an invoice whose due reaches zero is
//!   settled), and the rest goes to the tenant's balance as prepaid credit;
//! - paid: to the balance, or with `refund` back to the card through the payment outbox
//!   (at most what Stripe collected for it and was not refunded yet).

pub mod allocate;
pub mod store;

use chrono::{DateTime, Datelike, Utc};
use neocloud_schema::entity::{credit_note, credit_note_line, invoice};
use neocloud_schema::ids::{InvoiceId, TenantId};
use neocloud_schema::vocabulary::{CreditKind, InvoiceStatus};
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DbErr};
use serde_json::json;

use self::allocate::{Allocation, Refusal, Request};
use crate::invoicing::{InvoicingError, NewGrant};

/// A credit note to issue.
#[derive(Debug, Clone)]
pub struct NewCreditNote {
    pub invoice: InvoiceId,
    pub request: Request,
    pub reason: String,
    /// Refund what is not applied to the amount due (else it goes to the balance).
    pub refund: bool,
}

/// A note as issued: the row and its lines.
#[derive(Debug, Clone)]
pub struct Issued {
    pub note: credit_note::Model,
    pub lines: Vec<credit_note_line::Model>,
}

/// How a note's total is settled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settlement {
    pub applied: Decimal,
    pub to_balance: Decimal,
    pub refunded: Decimal,
}

fn invalid(field: &'static str, message: impl Into<String>) -> InvoicingError {
    InvoicingError::Invalid {
        field,
        message: message.into(),
    }
}

impl From<Refusal> for InvoicingError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::Invalid { field, message } => InvoicingError::Invalid { field, message },
            Refusal::NothingLeft => InvoicingError::Conflict(r.to_string()),
        }
    }
}

/// Issues a credit note against one of `tenant`'s invoices (any tenant's with `None`).
/// Run inside a write transaction: the note, its lines, its settlement (a grant, a refund
/// queued, the invoice settled) and its event commit together or not at all.
pub async fn issue<C: ConnectionTrait>(
    conn: &C,
    tenant: Option<TenantId>,
    new: NewCreditNote,
    prefix: &str,
    now: DateTime<Utc>,
) -> Result<Issued, InvoicingError> {
    let reason = new.reason.trim();
    if reason.is_empty() || reason.chars().count() > 500 || reason.chars().any(char::is_control) {
        return Err(invalid(
            "reason",
            "1 to 500 characters, no control characters",
        ));
    }
    let invoice = crate::invoicing::store::find(conn, tenant, new.invoice.into())
        .await?
        .ok_or(InvoicingError::NotFound("invoice"))?;
    // Notes of one tenant are issued one at a time: each sees what the last one took.
    crate::invoicing::store::lock_tenant(conn, invoice.tenant_id).await?;
    if matches!(invoice.status, InvoiceStatus::Draft | InvoiceStatus::Void) {
        return Err(InvoicingError::Conflict(format!(
            "only a finalized invoice that is not void can be credited; this one is {}",
            invoice.status
        )));
    }
    let creditable = store::creditable(conn, &invoice).await?;
    let digits = neocloud_schema::money::minor_unit_digits_of(&invoice.currency);
    let view = allocate::Invoice {
        lines: &creditable,
        minor_digits: digits,
    };
    let allocation = allocate::allocate(&view, &new.request)?;
    let settlement = settle(conn, &invoice, &allocation, new.refund).await?;
    let number =
        crate::invoicing::store::next_number(conn, &format!("{prefix}-CN"), now.year()).await?;
    let grant = balance_grant(conn, &invoice, &number, settlement.to_balance, now).await?;
    let form = match new.request {
        Request::Full => "full",
        Request::Lines(_) => "lines",
        Request::Amount(_) => "amount",
    };
    let note = store::Note {
        number: &number,
        form,
        reason,
        allocation: &allocation,
        settlement,
        grant,
    };
    let issued = store::insert(conn, &invoice, note, now).await?;
    let posting = crate::ledger::postings::credit_note_issued(&issued.note);
    crate::ledger::store::post(conn, &posting, now).await?;
    if settlement.applied > Decimal::ZERO
        && store::amount_due(conn, &invoice).await? <= Decimal::ZERO
    {
        let settled = crate::invoicing::store::mark_settled(conn, invoice.clone(), now).await?;
        crate::invoicing::record_invoice_event(conn, "invoice.paid", &settled, json!({}), now)
            .await?;
    }
    if settlement.refunded > Decimal::ZERO {
        crate::payments::outbox::queue_refund(
            conn,
            invoice.tenant_id,
            invoice.id,
            issued.note.id,
            now,
        )
        .await?;
    }
    record_event(conn, &issued.note, &invoice, now).await?;
    Ok(issued)
}

/// Splits the note's total: the invoice's amount due first, then refund or balance.
async fn settle<C: ConnectionTrait>(
    conn: &C,
    invoice: &invoice::Model,
    allocation: &Allocation,
    refund: bool,
) -> Result<Settlement, InvoicingError> {
    let owed = invoice.status.is_owed() || invoice.status == InvoiceStatus::Uncollectible;
    let due = if owed {
        store::amount_due(conn, invoice).await?
    } else {
        Decimal::ZERO
    };
    if owed && due > Decimal::ZERO && invoice.payment_url.is_some() {
        return Err(InvoicingError::Conflict(
            "this invoice was sent as a Stripe-hosted invoice and is not paid yet: it can be credited once paid"
                .into(),
        ));
    }
    let applied = allocation.total.min(due).max(Decimal::ZERO);
    let rest = allocation.total - applied;
    if !refund || rest.is_zero() {
        return Ok(Settlement {
            applied,
            to_balance: rest,
            refunded: Decimal::ZERO,
        });
    }
    let refundable = store::refundable(conn, invoice).await?;
    if rest > refundable {
        return Err(invalid(
            "refund",
            format!(
                "{rest} would be refunded, but only {refundable} was collected through Stripe for this invoice and not yet refunded"
            ),
        ));
    }
    Ok(Settlement {
        applied,
        to_balance: Decimal::ZERO,
        refunded: rest,
    })
}

/// The prepaid grant that takes what goes to the balance, if anything does.
async fn balance_grant<C: ConnectionTrait>(
    conn: &C,
    invoice: &invoice::Model,
    number: &str,
    amount: Decimal,
    now: DateTime<Utc>,
) -> Result<Option<uuid::Uuid>, InvoicingError> {
    if amount <= Decimal::ZERO {
        return Ok(None);
    }
    let grant = NewGrant {
        tenant: invoice.tenant_id,
        kind: CreditKind::Prepaid,
        currency: invoice.currency.clone(),
        amount,
        effective_at: now,
        expires_at: None,
        covers_from: None,
        reason: format!("credit note {number}"),
        funding: crate::ledger::postings::Funding::CreditNote,
    };
    let granted = crate::invoicing::grant_credits(conn, grant, now).await?;
    Ok(Some(granted.id.into()))
}

async fn record_event<C: ConnectionTrait>(
    conn: &C,
    note: &credit_note::Model,
    invoice: &invoice::Model,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let data = json!({
        "credit_note_id": note.id,
        "number": note.number,
        "invoice_id": invoice.id,
        "invoice_number": invoice.number.clone().unwrap_or_default(),
        "total": note.total.get().to_string(),
        "currency": note.currency,
        "applied": note.applied.get().to_string(),
        "to_balance": note.to_balance.get().to_string(),
        "refunded": note.refunded.get().to_string(),
        "reason": note.reason,
    });
    let event = crate::events::NewEvent::tenant("credit_note.issued", invoice.tenant_id, now, data);
    crate::events::record(conn, event, now).await.map(|_| ())
}
