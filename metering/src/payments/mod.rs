//! Payments: what Stripe tells us about collecting our invoices. A webhook event is
//! verified (`webhook::verify`), recorded once by its id (a redelivery changes nothing)
//! and applied to the invoice named in its object's `metadata.invoice_id`. State only
//! moves forward — a failure reported after a success, or anything after voiding, is
//! recorded as `superseded` and changes nothing — so events may arrive in any order.

pub mod gateway;
pub mod outbox;
pub mod webhook;

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{invoice, stripe_event};
use neocloud_schema::vocabulary::{InvoiceStatus, PaymentState};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set};
use serde_json::Value;
use uuid::Uuid;

/// The part of a Stripe event that matters here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub id: String,
    pub kind: String,
    pub created: i64,
    pub invoice: Option<Uuid>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a Stripe event: {0}")]
pub struct BadEvent(pub &'static str);

/// Reads an event body (after its signature was verified).
pub fn parse_event(body: &[u8]) -> Result<Event, BadEvent> {
    let value: Value = serde_json::from_slice(body).map_err(|_| BadEvent("not JSON"))?;
    let id = value["id"].as_str().ok_or(BadEvent("no id"))?;
    if !id.starts_with("evt_") || id.len() > 255 {
        return Err(BadEvent("the id is not an event id"));
    }
    let kind = value["type"].as_str().ok_or(BadEvent("no type"))?;
    let invoice = value["data"]["object"]["metadata"]["invoice_id"]
        .as_str()
        .and_then(|s| Uuid::parse_str(s).ok());
    Ok(Event {
        id: id.to_owned(),
        kind: kind.to_owned(),
        created: value["created"].as_i64().unwrap_or_default(),
        invoice,
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
    UnknownInvoice,
    /// The invoice had already moved past what the event says.
    Superseded,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::Duplicate => "duplicate",
            Outcome::Ignored => "ignored",
            Outcome::UnknownInvoice => "unknown_invoice",
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
    let outcome = match (event.kind.as_str(), event.invoice) {
        ("payment_intent.succeeded" | "invoice.paid", Some(id)) => paid(conn, id, now).await?,
        ("payment_intent.payment_failed" | "invoice.payment_failed", Some(id)) => {
            failed(conn, id).await?
        }
        ("invoice.marked_uncollectible", Some(id)) => uncollectible(conn, id).await?,
        (
            "payment_intent.succeeded"
            | "invoice.paid"
            | "payment_intent.payment_failed"
            | "invoice.payment_failed"
            | "invoice.marked_uncollectible",
            None,
        ) => Outcome::UnknownInvoice,
        _ => Outcome::Ignored,
    };
    stripe_event::Entity::update_many()
        .col_expr(stripe_event::Column::Outcome, Expr::value(outcome.as_str()))
        .filter(stripe_event::Column::Id.eq(event.id.as_str()))
        .exec(conn)
        .await?;
    Ok(outcome)
}

async fn exists<C: ConnectionTrait>(conn: &C, id: Uuid) -> Result<bool, DbErr> {
    Ok(invoice::Entity::find_by_id(id).one(conn).await?.is_some())
}

/// Moves a finalized, owed invoice to paid.
async fn paid<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<Outcome, DbErr> {
    let changed = invoice::Entity::update_many()
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
            InvoiceStatus::Uncollectible.as_str(),
        ]))
        .exec(conn)
        .await?
        .rows_affected;
    settle(conn, id, changed).await
}

/// Counts a failed attempt on an invoice still owed.
async fn failed<C: ConnectionTrait>(conn: &C, id: Uuid) -> Result<Outcome, DbErr> {
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
        .filter(invoice::Column::Status.eq(InvoiceStatus::Open.as_str()))
        .exec(conn)
        .await?
        .rows_affected;
    settle(conn, id, changed).await
}

async fn uncollectible<C: ConnectionTrait>(conn: &C, id: Uuid) -> Result<Outcome, DbErr> {
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
        .filter(invoice::Column::Status.eq(InvoiceStatus::Open.as_str()))
        .exec(conn)
        .await?
        .rows_affected;
    settle(conn, id, changed).await
}

async fn settle<C: ConnectionTrait>(conn: &C, id: Uuid, changed: u64) -> Result<Outcome, DbErr> {
    Ok(if changed > 0 {
        Outcome::Applied
    } else if exists(conn, id).await? {
        Outcome::Superseded
    } else {
        Outcome::UnknownInvoice
    })
}
