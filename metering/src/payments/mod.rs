//! Payments: what Stripe tells us about collecting our invoices and top-ups. A webhook
//! event is verified (`webhook::verify`) — or listed from Stripe's event log when a
//! delivery may have been missed (`gateway::Gateway::list_events`) — recorded once by its
//! id (a redelivery changes nothing) and applied to the invoice or top-up named in its
//! object's metadata. State only moves forward — a failure reported after a success, or
//! anything after voiding, is recorded as `superseded` and changes nothing — so events
//! may arrive in any order, and a top-up's credit is granted once.

pub mod accounts;
pub mod dunning;
pub mod gateway;
pub mod outbox;
pub mod top_ups;
pub mod webhook;

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{invoice, stripe_event, top_up};
use neocloud_schema::ids::InvoiceId;
use neocloud_schema::vocabulary::{CreditKind, InvoiceStatus, PaymentState, TopUpStatus};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set,
};
use serde_json::Value;
use uuid::Uuid;

use crate::events::NewEvent;
use crate::invoicing::{self, NewGrant};
use crate::ledger::postings::Collected;

/// The event kinds neocloud acts on; others are acknowledged and ignored.
pub const HANDLED: &[&str] = &[
    "payment_intent.succeeded",
    "payment_intent.processing",
    "payment_intent.requires_action",
    "payment_intent.payment_failed",
    "invoice.paid",
    "invoice.payment_failed",
    "invoice.marked_uncollectible",
];

/// The part of a Stripe event that matters here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub id: String,
    pub kind: String,
    pub created: i64,
    /// Our invoice (`metadata.invoice_id`).
    pub invoice: Option<InvoiceId>,
    /// Our top-up (`metadata.top_up_id`).
    pub top_up: Option<Uuid>,
    /// The idempotency key of the outbox call that created the object
    /// (`metadata.neocloud_key`).
    pub key: Option<String>,
    /// The Stripe object's id (`pi_…`, `in_…`).
    pub object_id: Option<String>,
    /// Why a payment failed, as Stripe says it.
    pub failure: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a Stripe event: {0}")]
pub struct BadEvent(pub &'static str);

/// Reads an event body (after its signature was verified).
pub fn parse_event(body: &[u8]) -> Result<Event, BadEvent> {
    let value: Value = serde_json::from_slice(body).map_err(|_| BadEvent("not JSON"))?;
    event_from(&value)
}

/// Reads an event as Stripe's API or a webhook gives it.
pub fn event_from(value: &Value) -> Result<Event, BadEvent> {
    let id = value["id"].as_str().ok_or(BadEvent("no id"))?;
    if !id.starts_with("evt_") || id.len() > 255 {
        return Err(BadEvent("the id is not an event id"));
    }
    let kind = value["type"].as_str().ok_or(BadEvent("no type"))?;
    let object = &value["data"]["object"];
    let metadata = &object["metadata"];
    let uuid = |field: &str| {
        metadata[field]
            .as_str()
            .and_then(|s| Uuid::parse_str(s).ok())
    };
    let text = |v: &Value| v.as_str().map(|s| s.chars().take(500).collect::<String>());
    Ok(Event {
        id: id.to_owned(),
        kind: kind.to_owned(),
        created: value["created"].as_i64().unwrap_or_default(),
        invoice: uuid("invoice_id").map(InvoiceId),
        top_up: uuid("top_up_id"),
        key: text(&metadata["neocloud_key"]),
        object_id: text(&object["id"]),
        failure: text(&object["last_payment_error"]["message"]),
    })
}

/// What applying an event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Applied,
    /// Seen before: nothing done.
    Duplicate,
    /// A kind we do not act on.
    Ignored,
    UnknownObject,
    /// The invoice had already moved past what the event says.
    Superseded,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::Duplicate => "duplicate",
            Outcome::Ignored => "ignored",
            Outcome::UnknownObject => "unknown_object",
            Outcome::Superseded => "superseded",
        }
    }
}

/// Applies a verified event once. Run inside a transaction.
pub async fn apply_event<C: ConnectionTrait>(
    conn: &C,
    event: &Event,
    now: DateTime<Utc>,
) -> Result<Outcome, DbErr> {
    let inserted = stripe_event::Entity::insert(stripe_event::ActiveModel {
        id: Set(event.id.clone()),
        event_type: Set(event.kind.clone()),
        created: Set(event.created),
        invoice_id: Set(event.invoice),
        outcome: Set(String::new()),
        received_at: Set(now),
    })
    .on_conflict(
        OnConflict::column(stripe_event::Column::Id)
            .do_nothing()
            .to_owned(),
    )
    .exec_without_returning(conn)
    .await?;
    if inserted == 0 {
        return Ok(Outcome::Duplicate);
    }
    let outcome = match (event.kind.as_str(), event.top_up, event.invoice) {
        ("payment_intent.succeeded", Some(id), _) => top_up_paid(conn, id, event, now).await?,
        ("payment_intent.payment_failed", Some(id), _) => {
            top_up_failed(conn, id, event, now).await?
        }
        ("payment_intent.processing" | "payment_intent.requires_action", _, _) => Outcome::Ignored,
        ("payment_intent.succeeded" | "invoice.paid", None, Some(id)) => {
            paid(conn, id, now).await?
        }
        ("payment_intent.payment_failed" | "invoice.payment_failed", None, Some(id)) => {
            failed(conn, id, now).await?
        }
        ("invoice.marked_uncollectible", None, Some(id)) => uncollectible(conn, id).await?,
        (kind, _, _) if HANDLED.contains(&kind) => Outcome::UnknownObject,
        _ => Outcome::Ignored,
    };
    if matches!(
        event.kind.as_str(),
        "payment_intent.succeeded" | "payment_intent.processing" | "payment_intent.requires_action"
    ) && let (Some(key), Some(object)) = (&event.key, &event.object_id)
    {
        // The call that created this object reached Stripe, whatever happened to its
        // answer: its outbox row is done.
        outbox::created(conn, key, object, now).await?;
    }
    stripe_event::Entity::update_many()
        .col_expr(stripe_event::Column::Outcome, Expr::value(outcome.as_str()))
        .filter(stripe_event::Column::Id.eq(event.id.as_str()))
        .exec(conn)
        .await?;
    Ok(outcome)
}

/// Grants a paid top-up's credit, once: only the move from pending (or failed) to paid
/// grants it.
async fn top_up_paid<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
    event: &Event,
    now: DateTime<Utc>,
) -> Result<Outcome, DbErr> {
    let changed = top_up::Entity::update_many()
        .col_expr(
            top_up::Column::Status,
            Expr::value(TopUpStatus::Paid.as_str()),
        )
        .col_expr(
            top_up::Column::StripePaymentIntent,
            Expr::value(event.object_id.clone()),
        )
        .col_expr(top_up::Column::Failure, Expr::value(Option::<String>::None))
        .col_expr(top_up::Column::UpdatedAt, Expr::value(now))
        .filter(top_up::Column::Id.eq(id))
        .filter(
            top_up::Column::Status
                .is_in([TopUpStatus::Pending.as_str(), TopUpStatus::Failed.as_str()]),
        )
        .exec(conn)
        .await?
        .rows_affected;
    let Some(found) = top_up::Entity::find_by_id(id).one(conn).await? else {
        return Ok(Outcome::UnknownObject);
    };
    if changed == 0 {
        return Ok(Outcome::Superseded);
    }
    let amount = found.amount.get();
    // A period closed in this very second opens at the next whole second: the credit
    // pays from then, not from before the open period (which grants refuse).
    let open = invoicing::store::open_draft(conn, found.tenant_id).await?;
    let covers_from = std::cmp::Ord::max(now, open.period_start);
    let grant = invoicing::grant_credits(
        conn,
        NewGrant {
            tenant: found.tenant_id,
            kind: CreditKind::Prepaid,
            currency: found.currency.clone(),
            amount,
            effective_at: now,
            expires_at: None,
            // Prepaid money pays what is charged from its payment on, as it always has.
            covers_from: Some(covers_from),
            reason: format!("Top-up {id} paid through Stripe"),
            funding: crate::ledger::postings::Funding::StripeTopUp,
        },
        now,
    )
    .await
    .map_err(|e| DbErr::Custom(e.to_string()))?;
    let data = serde_json::json!({"top_up_id": found.id, "amount": amount.to_string(), "currency": found.currency});
    let event = NewEvent::tenant("top_up.succeeded", found.tenant_id, now, data);
    crate::events::record(conn, event, now).await?;
    let mut active: top_up::ActiveModel = found.into();
    active.credit_grant_id = Set(Some(grant.id));
    active.update(conn).await?;
    Ok(Outcome::Applied)
}

async fn top_up_failed<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
    event: &Event,
    now: DateTime<Utc>,
) -> Result<Outcome, DbErr> {
    let reason = event
        .failure
        .clone()
        .unwrap_or_else(|| "the payment failed".to_owned());
    let changed = top_up_refused(conn, id, &reason, now).await?;
    Ok(if changed {
        Outcome::Applied
    } else if top_up::Entity::find_by_id(id).one(conn).await?.is_some() {
        Outcome::Superseded
    } else {
        Outcome::UnknownObject
    })
}

/// Marks a pending top-up failed, telling the tenant; whether it changed.
pub(crate) async fn top_up_refused<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let changed = mark_top_up_failed(conn, id, reason, now).await?;
    if changed && let Some(found) = top_up::Entity::find_by_id(id).one(conn).await? {
        let data = serde_json::json!({"top_up_id": found.id, "amount": found.amount.get().to_string(),
            "currency": found.currency, "failure": reason});
        let event = NewEvent::tenant("top_up.failed", found.tenant_id, now, data);
        crate::events::record(conn, event, now).await?;
    }
    Ok(changed)
}

async fn mark_top_up_failed<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    Ok(top_up::Entity::update_many()
        .col_expr(
            top_up::Column::Status,
            Expr::value(TopUpStatus::Failed.as_str()),
        )
        .col_expr(top_up::Column::Failure, Expr::value(reason))
        .col_expr(top_up::Column::UpdatedAt, Expr::value(now))
        .filter(top_up::Column::Id.eq(id))
        .filter(top_up::Column::Status.eq(TopUpStatus::Pending.as_str()))
        .exec(conn)
        .await?
        .rows_affected
        > 0)
}

async fn exists<C: ConnectionTrait>(conn: &C, id: InvoiceId) -> Result<bool, DbErr> {
    Ok(invoice::Entity::find_by_id(id).one(conn).await?.is_some())
}

/// Moves a finalized, owed invoice to paid (through Stripe's events).
async fn paid<C: ConnectionTrait>(
    conn: &C,
    id: InvoiceId,
    now: DateTime<Utc>,
) -> Result<Outcome, DbErr> {
    let changed = record_paid(conn, id, Collected::ThroughStripe, now).await?;
    settle(conn, id, u64::from(changed)).await
}

/// An invoice collected outside Stripe (a bank transfer the operator received): an
/// `EXTERNAL` invoice still owed moves to paid, and the ledger moves what was due from the
/// tenant's receivable to external cash. `false` (nothing done) for any other invoice.
pub async fn paid_outside<C: ConnectionTrait>(
    conn: &C,
    id: InvoiceId,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    record_paid(conn, id, Collected::Outside, now).await
}

/// Moves an owed invoice to paid (one collected outside Stripe only while `EXTERNAL`),
/// tells of it and posts the amount that was due; whether it moved.
async fn record_paid<C: ConnectionTrait>(
    conn: &C,
    id: InvoiceId,
    via: Collected,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let collected = due_now(conn, id).await?;
    let mut update = invoice::Entity::update_many()
        .col_expr(
            invoice::Column::Status,
            Expr::value(InvoiceStatus::Paid.as_str()),
        )
        .col_expr(
            invoice::Column::PaymentState,
            Expr::value(PaymentState::Paid.as_str()),
        )
        .col_expr(invoice::Column::PaidAt, Expr::value(now))
        .filter(invoice::Column::Id.eq(id))
        .filter(invoice::Column::Status.is_in([
            InvoiceStatus::Open.as_str(),
            InvoiceStatus::Overdue.as_str(),
            InvoiceStatus::Uncollectible.as_str(),
        ]));
    if via == Collected::Outside {
        update = update.filter(invoice::Column::PaymentState.eq(PaymentState::External.as_str()));
    }
    if update.exec(conn).await?.rows_affected == 0 {
        return Ok(false);
    }
    tell(conn, "invoice.paid", id, now).await?;
    if let Some((found, due)) = collected {
        let posting = crate::ledger::postings::invoice_paid(&found, due, via);
        crate::ledger::store::post(conn, &posting, now).await?;
    }
    Ok(true)
}

/// The invoice and what is due on it, with its tenant locked so that no credit note
/// changes that before the payment is recorded.
async fn due_now<C: ConnectionTrait>(
    conn: &C,
    id: InvoiceId,
) -> Result<Option<(invoice::Model, rust_decimal::Decimal)>, DbErr> {
    let Some(found) = invoice::Entity::find_by_id(id).one(conn).await? else {
        return Ok(None);
    };
    invoicing::store::lock_tenant(conn, found.tenant_id).await?;
    let due = crate::credit_notes::store::amount_due(conn, &found).await?;
    Ok(Some((found, due)))
}

/// Records an invoice event about `id`, as it now stands.
async fn tell<C: ConnectionTrait>(
    conn: &C,
    kind: &'static str,
    id: InvoiceId,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let Some(found) = invoice::Entity::find_by_id(id).one(conn).await? else {
        return Ok(());
    };
    let extra = match kind {
        "invoice.payment_failed" => serde_json::json!({"failures": found.payment_failures}),
        _ => serde_json::json!({}),
    };
    invoicing::record_invoice_event(conn, kind, &found, extra, now).await
}

/// Counts a failed attempt on an invoice still owed.
async fn failed<C: ConnectionTrait>(
    conn: &C,
    id: InvoiceId,
    now: DateTime<Utc>,
) -> Result<Outcome, DbErr> {
    let changed = invoice::Entity::update_many()
        .col_expr(
            invoice::Column::PaymentState,
            Expr::value(PaymentState::PaymentFailed.as_str()),
        )
        .col_expr(
            invoice::Column::PaymentFailures,
            Expr::col(invoice::Column::PaymentFailures).add(1),
        )
        .filter(invoice::Column::Id.eq(id))
        .filter(invoice::Column::Status.is_in(InvoiceStatus::OWED.map(InvoiceStatus::as_str)))
        .exec(conn)
        .await?
        .rows_affected;
    if changed > 0 {
        tell(conn, "invoice.payment_failed", id, now).await?;
    }
    settle(conn, id, changed).await
}

async fn uncollectible<C: ConnectionTrait>(conn: &C, id: InvoiceId) -> Result<Outcome, DbErr> {
    let changed = invoice::Entity::update_many()
        .col_expr(
            invoice::Column::Status,
            Expr::value(InvoiceStatus::Uncollectible.as_str()),
        )
        .col_expr(
            invoice::Column::PaymentState,
            Expr::value(PaymentState::Uncollectible.as_str()),
        )
        .filter(invoice::Column::Id.eq(id))
        .filter(invoice::Column::Status.is_in(InvoiceStatus::OWED.map(InvoiceStatus::as_str)))
        .exec(conn)
        .await?
        .rows_affected;
    settle(conn, id, changed).await
}

async fn settle<C: ConnectionTrait>(
    conn: &C,
    id: InvoiceId,
    changed: u64,
) -> Result<Outcome, DbErr> {
    Ok(if changed > 0 {
        Outcome::Applied
    } else if exists(conn, id).await? {
        Outcome::Superseded
    } else {
        Outcome::UnknownObject
    })
}
