//! Invoicing: each tenant has one open billing period at a time, held by its draft
//! invoice; the draft is rated on every read (`rate_open`), and finalizing it
//! (`close_period`) freezes the rated lines, takes the next gapless number and opens the
//! next period at once. Usage that reaches a closed period later becomes adjustment lines
//! on the next invoice; `void` cancels a finalized invoice and keeps its number.
//!
//! The pricing itself is `rating::period::rate_period`, a pure function; this module
//! reads its input (usage, plan versions in force, credit grants, earlier invoices) and
//! writes the result. Callers pass `now`, so tests and the benchmark control the clock.

pub mod costs;
mod input;
pub mod prices;
pub mod reminders;
pub mod store;
pub mod volumes;

use chrono::{DateTime, Datelike, DurationRound, NaiveDate, TimeDelta, Utc};
use neocloud_schema::entity::{credit_grant, invoice, invoice_line};
use neocloud_schema::ids::TenantId;
use neocloud_schema::ids::{CreditGrantId, InvoiceId};
use neocloud_schema::vocabulary::{CreditKind, InvoiceStatus, PaymentState};
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DbErr};
use serde_json::json;

use crate::rating::RateError;
use crate::rating::period::{PeriodInput, RatedInvoice, rate_period};

pub use input::LATE_WINDOW_DAYS;

#[derive(Debug, thiserror::Error)]
pub enum InvoicingError {
    #[error("no such {0}")]
    NotFound(&'static str),
    /// The invoice is not in a state that allows this.
    #[error("{0}")]
    Conflict(String),
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
    #[error("rating: {0}")]
    Rate(#[from] RateError),
    #[error("tax: {0}")]
    Tax(#[from] crate::tax::TaxError),
    #[error("database: {0}")]
    Database(#[from] DbErr),
}

/// How invoices are numbered and when periods close.
#[derive(Debug, Clone)]
pub struct BillingPolicy {
    /// Invoice numbers read `{prefix}-{year}-{seq:06}`.
    pub invoice_prefix: String,
    /// Late data is waited for this long after a period's end before it closes itself.
    pub close_grace: TimeDelta,
    /// Whether finalized invoices are collected through Stripe (`pending`) or outside
    /// neocloud (`external`).
    pub payments: bool,
    /// The operator as seller, frozen onto each invoice it finalizes.
    pub seller: crate::parties::Seller,
}

impl Default for BillingPolicy {
    fn default() -> Self {
        BillingPolicy {
            invoice_prefix: "NC".to_owned(),
            close_grace: TimeDelta::hours(1),
            payments: false,
            seller: crate::parties::Seller {
                legal_name: "neocloud".to_owned(),
                ..Default::default()
            },
        }
    }
}

/// The first period boundary (day `anchor_day`, 00:00 UTC) strictly after `t`.
pub fn next_anchor(t: DateTime<Utc>, anchor_day: u32) -> DateTime<Utc> {
    let day = anchor_day.clamp(1, 28);
    let date = t.date_naive();
    let this_month = NaiveDate::from_ymd_opt(date.year(), date.month(), day);
    let candidate = this_month
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|d| d.and_utc());
    match candidate {
        Some(c) if c > t => c,
        _ => {
            let (y, m) = if date.month() == 12 {
                (date.year() + 1, 1)
            } else {
                (date.year(), date.month() + 1)
            };
            NaiveDate::from_ymd_opt(y, m, day)
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map_or(t + TimeDelta::days(28), |d| d.and_utc())
        }
    }
}

/// The first whole second at or after `t`: periods run between whole seconds, and a
/// period closed now includes everything that ended before the call.
pub fn whole_second_up(t: DateTime<Utc>) -> DateTime<Utc> {
    use chrono::Timelike;
    match t.nanosecond() {
        0 => t,
        _ => t.with_nanosecond(0).unwrap_or(t) + TimeDelta::seconds(1),
    }
}

/// The start of `t`'s minute: the granularity of usage buckets. A tenant's first period
/// and every plan change begin on one, so each bucket falls in exactly one period and
/// one plan segment.
pub fn whole_minute(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(TimeDelta::minutes(1)).unwrap_or(t)
}

/// The last period boundary at or before `t`.
pub fn anchor_at_or_before(t: DateTime<Utc>, anchor_day: u32) -> DateTime<Utc> {
    let next = next_anchor(t, anchor_day);
    let back = next_anchor(next - TimeDelta::days(32), anchor_day);
    if back <= t {
        back
    } else {
        next_anchor(back - TimeDelta::days(32), anchor_day)
    }
}

/// `[start, end)` as a share of the monthly cycle it lies in (at most 1).
pub fn month_fraction(start: DateTime<Utc>, end: DateTime<Utc>, anchor_day: u32) -> Decimal {
    let cycle_start = anchor_at_or_before(start, anchor_day);
    let cycle = (next_anchor(cycle_start, anchor_day) - cycle_start).num_seconds();
    let length = (end - start).num_seconds().max(0);
    if cycle <= 0 {
        return Decimal::ONE;
    }
    (Decimal::from(length) / Decimal::from(cycle))
        .round_dp(12)
        .min(Decimal::ONE)
}

/// The open period's draft, rated as of `now`.
pub struct Draft {
    pub invoice: invoice::Model,
    pub input: PeriodInput,
    pub rated: RatedInvoice,
}

/// The tenant's draft invoice (opening its first period if it has none), rated up to
/// `now` (or to the period's end, if that has passed). With `seller`, taxed as it would be
/// if the period ended now; a tax that cannot be determined (a rate missing) leaves the
/// draft untaxed, as finalizing it would be refused until the rate is added.
pub async fn rate_open<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    now: DateTime<Utc>,
    seller: Option<&crate::parties::Seller>,
) -> Result<Draft, InvoicingError> {
    let invoice = store::open_draft(conn, tenant).await?;
    let until = now.min(invoice.period_end).max(invoice.period_start);
    let mut input = input::period_input(conn, &invoice, until, now, true).await?;
    if let Some(seller) = seller {
        let buyer = crate::parties::store::find(conn, tenant).await?;
        input.tax = match treatment(conn, seller, buyer.as_ref(), until).await {
            Ok(found) => found,
            Err(InvoicingError::Tax(err)) => {
                tracing::warn!(%tenant, error = %err, "draft left untaxed");
                None
            }
            Err(err) => return Err(err),
        };
    }
    let rated = rate_period(&input)?;
    Ok(Draft {
        invoice,
        input,
        rated,
    })
}

/// Closes the tenant's open period at `end` (now for `closeBillingPeriod`, the period's
/// end when it closes by itself): the draft is rated one last time and finalized with
/// its lines, credit applications and number, and the next period opens at `end`. Run
/// inside a write transaction.
#[tracing::instrument(name = "invoicing.close_period", skip_all, fields(tenant = %tenant))]
pub async fn close_period<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    end: DateTime<Utc>,
    now: DateTime<Utc>,
    policy: &BillingPolicy,
) -> Result<(invoice::Model, Vec<invoice_line::Model>), InvoicingError> {
    let net_terms_days = store::lock_tenant(conn, tenant).await?;
    let mut draft = store::open_draft(conn, tenant).await?;
    let end = whole_second_up(end).min(draft.period_end);
    if end <= draft.period_start {
        return Err(InvoicingError::Conflict(
            "the open billing period began less than a second ago".into(),
        ));
    }
    draft.period_end = end;
    // The period may end up to a second after `now`: allocations still running are held
    // to its end, so rating it again later (for late usage) finds the same seconds.
    let mut input = input::period_input(conn, &draft, end, now.max(end), true).await?;
    let buyer = crate::parties::store::find(conn, tenant).await?;
    // The tax point of a period's supply is its end (continuous supply, Art. 64).
    input.tax = treatment(conn, &policy.seller, buyer.as_ref(), end).await?;
    let rated = rate_period(&input)?;
    let number = store::next_number(conn, &policy.invoice_prefix, now.year()).await?;
    let payment_state = if rated.total <= Decimal::ZERO {
        // Nothing to collect: settled as it is finalized.
        PaymentState::Paid
    } else if policy.payments {
        PaymentState::Pending
    } else {
        PaymentState::External
    };
    let due_at = now + chrono::Duration::days(net_terms_days);
    let issue = store::Issue {
        at: now,
        due_at,
        parties: crate::parties::Parties {
            seller: policy.seller.clone(),
            buyer,
        },
    };
    let finalized =
        store::finalize(conn, draft, &number, &input, &rated, payment_state, &issue).await?;
    let posting = crate::ledger::postings::invoice_finalized(&finalized);
    crate::ledger::store::post(conn, &posting, now).await?;
    if payment_state == PaymentState::Pending {
        // Charged through the outbox: committed with the invoice, or not at all.
        crate::payments::outbox::queue_invoice(conn, tenant, finalized.id, now).await?;
    }
    let period = json!({
        "period_start": finalized.period_start,
        "period_end": finalized.period_end,
        "due_at": finalized.due_at,
    });
    record_invoice_event(conn, "invoice.finalized", &finalized, period, now).await?;
    if payment_state == PaymentState::Paid {
        record_invoice_event(conn, "invoice.paid", &finalized, json!({}), now).await?;
    }
    let lines = store::lines(conn, tenant, finalized.id).await?;
    store::open_draft(conn, tenant).await?;
    Ok((finalized, lines))
}

/// The tax of a supply by `seller` to `buyer` at `at`, by the operator's rate table.
async fn treatment<C: ConnectionTrait>(
    conn: &C,
    seller: &crate::parties::Seller,
    buyer: Option<&crate::parties::Buyer>,
    at: DateTime<Utc>,
) -> Result<Option<crate::tax::Treatment>, InvoicingError> {
    if seller.country.is_empty() {
        return Ok(None);
    }
    let rates = crate::tax::store::table(conn).await?;
    Ok(crate::tax::determine(seller, buyer, at, &rates)?)
}

/// Records an invoice event: the invoice's id, number, total and currency, with `extra`
/// (an object) for its type, except what the type does not carry.
pub(crate) async fn record_invoice_event<C: ConnectionTrait>(
    conn: &C,
    kind: &'static str,
    invoice: &invoice::Model,
    extra: serde_json::Value,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let mut data = json!({
        "invoice_id": invoice.id,
        "number": invoice.number.clone().unwrap_or_default(),
    });
    if kind != "invoice.voided" {
        data["total"] = json!(invoice.total.get().to_string());
        data["currency"] = json!(invoice.currency);
    }
    if let (Some(data), Some(extra)) = (data.as_object_mut(), extra.as_object()) {
        data.extend(extra.clone());
    }
    let event = crate::events::NewEvent::tenant(kind, invoice.tenant_id, now, data);
    crate::events::record(conn, event, now).await.map(|_| ())
}

/// Tenants whose open period ended more than the grace ago, to close.
pub async fn due_for_close<C: ConnectionTrait>(
    conn: &C,
    now: DateTime<Utc>,
    policy: &BillingPolicy,
) -> Result<Vec<(TenantId, DateTime<Utc>)>, DbErr> {
    store::drafts_ended_before(conn, now - policy.close_grace).await
}

/// Voids a finalized invoice that is unpaid or was settled by credits alone. Its number
/// stays used; its credit applications stop counting against their grants.
pub async fn void<C: ConnectionTrait>(
    conn: &C,
    tenant: Option<TenantId>,
    id: InvoiceId,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<invoice::Model, InvoicingError> {
    let found = store::find(conn, tenant, id.into())
        .await?
        .ok_or(InvoicingError::NotFound("invoice"))?;
    // Money that was collected is not voided away (that takes a refund); an invoice
    // settled by credits alone can be, and gives its credits back.
    let nothing_collected = found.total.get() <= Decimal::ZERO;
    let voidable = match found.status {
        InvoiceStatus::Open | InvoiceStatus::Overdue | InvoiceStatus::Uncollectible => true,
        InvoiceStatus::Paid => nothing_collected,
        InvoiceStatus::Draft | InvoiceStatus::Void => false,
    };
    if !voidable {
        return Err(InvoicingError::Conflict(format!(
            "only an open or uncollectible invoice, or one settled by credits alone, can be voided; this one is {}",
            found.status
        )));
    }
    // A credited invoice was sent and corrected: what is left is credited, not voided.
    let notes = crate::credit_notes::store::of_invoice(conn, found.tenant_id, found.id.into());
    if !notes.await?.is_empty() {
        return Err(InvoicingError::Conflict(
            "this invoice has credit notes: credit what is left instead of voiding it".into(),
        ));
    }
    let voided = store::mark_void(conn, found, reason, now).await?;
    let number = voided.number.clone().unwrap_or_default();
    let reversal = crate::ledger::Transfer::new(
        crate::ledger::postings::INVOICE_VOIDED,
        voided.id,
        &voided.currency,
        Some(voided.tenant_id),
        format!("invoice {number} voided: {reason}"),
    );
    let finalized = crate::ledger::postings::INVOICE_FINALIZED;
    crate::ledger::store::reverse(conn, finalized, reversal, now).await?;
    record_invoice_event(
        conn,
        "invoice.voided",
        &voided,
        json!({"reason": reason}),
        now,
    )
    .await?;
    // A hosted invoice already sent must not stay payable at Stripe.
    crate::payments::outbox::queue_void_hosted(conn, voided.tenant_id, voided.id, now).await?;
    Ok(voided)
}

/// A credit grant to create.
pub struct NewGrant {
    pub tenant: TenantId,
    pub kind: CreditKind,
    pub currency: String,
    pub amount: Decimal,
    pub effective_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    /// The start of the charges the grant may pay. `None`: the whole billing period open
    /// when it is granted (charges before the grant included).
    pub covers_from: Option<DateTime<Utc>>,
    pub reason: String,
    /// Who pays for it (what the ledger debits).
    pub funding: crate::ledger::postings::Funding,
}

/// Records a credit grant. What it covers is fixed here: `covers_from`, or the start of
/// the tenant's open period; a start before the open period is refused (closed invoices
/// are final, so it could never pay those charges).
pub async fn grant_credits<C: ConnectionTrait>(
    conn: &C,
    grant: NewGrant,
    now: DateTime<Utc>,
) -> Result<credit_grant::Model, InvoicingError> {
    if grant.amount <= Decimal::ZERO {
        return Err(InvoicingError::Invalid {
            field: "amount",
            message: "must be positive".into(),
        });
    }
    if grant.expires_at.is_some_and(|e| e <= grant.effective_at) {
        return Err(InvoicingError::Invalid {
            field: "expiresAt",
            message: "must be after effectiveAt".into(),
        });
    }
    let open = store::open_draft(conn, grant.tenant).await?;
    let covers_from = grant.covers_from.unwrap_or(open.period_start);
    if covers_from < open.period_start {
        return Err(InvoicingError::Invalid {
            field: "coversFrom",
            message: format!(
                "must not be before the open billing period, which started {}",
                open.period_start.to_rfc3339()
            ),
        });
    }
    if grant.expires_at.is_some_and(|e| e <= covers_from) {
        return Err(InvoicingError::Invalid {
            field: "expiresAt",
            message: "must be after coversFrom".into(),
        });
    }
    let funding = grant.funding;
    let grant = NewGrant {
        covers_from: Some(covers_from),
        ..grant
    };
    let created = store::insert_grant(conn, CreditGrantId::new().into(), grant, now).await?;
    if let Some(posting) = crate::ledger::postings::credit_granted(&created, funding) {
        crate::ledger::store::post(conn, &posting, now).await?;
    }
    Ok(created)
}

/// What is left of each of the tenant's grants (amount minus what invoices that were not
/// voided used).
pub async fn grant_balances<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<Vec<(credit_grant::Model, Decimal)>, DbErr> {
    store::grants_with_remaining(conn, tenant).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().expect("time")
    }

    #[test]
    fn periods_run_from_anchor_to_anchor() {
        assert_eq!(
            next_anchor(t("2026-11-29T17:00:00Z"), 1),
            t("2026-12-01T00:00:00Z")
        );
        assert_eq!(
            next_anchor(t("2026-12-01T00:00:00Z"), 1),
            t("2027-01-01T00:00:00Z")
        );
        assert_eq!(
            next_anchor(t("2026-12-20T00:00:00Z"), 15),
            t("2027-01-15T00:00:00Z")
        );
        assert_eq!(
            anchor_at_or_before(t("2026-11-29T17:00:00Z"), 1),
            t("2026-11-01T00:00:00Z")
        );
        assert_eq!(
            anchor_at_or_before(t("2026-12-01T00:00:00Z"), 1),
            t("2026-12-01T00:00:00Z")
        );
        assert_eq!(
            anchor_at_or_before(t("2027-01-10T00:00:00Z"), 15),
            t("2026-12-15T00:00:00Z")
        );
    }

    #[test]
    fn a_partial_period_is_its_share_of_the_month() {
        let half = month_fraction(t("2026-11-16T00:00:00Z"), t("2026-12-01T00:00:00Z"), 1);
        assert_eq!(half, Decimal::new(5, 1));
        let whole = month_fraction(t("2026-11-01T00:00:00Z"), t("2026-12-01T00:00:00Z"), 1);
        assert_eq!(whole, Decimal::ONE);
    }
}
