//! The payment outbox: provider calls written in the transaction of the change that needs
//! them, delivered by `deliver_due` with retries and backoff. A row is done only after
//! Stripe answered; a crash in between repeats the call with the same idempotency key,
//! which Stripe answers with the object it already created.

use chrono::{DateTime, TimeDelta, Utc};
use neocloud_schema::entity::{invoice, payment_account, payment_outbox};
use neocloud_schema::money::Currency;
use neocloud_schema::vocabulary::InvoiceStatus;
use rust_decimal::Decimal;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};
use uuid::Uuid;

use super::gateway::{Gateway, GatewayError};

pub const CHARGE_INVOICE: &str = "charge_invoice";
/// Most attempts at a transient failure before the row is given up (and shows as failed).
pub const MAX_ATTEMPTS: i32 = 12;

/// Queues charging a finalized invoice (inside its finalizing transaction).
pub async fn queue_charge<C: ConnectionTrait>(
    conn: &C,
    tenant: Uuid,
    invoice: Uuid,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    payment_outbox::ActiveModel {
        id: Set(Uuid::now_v7()),
        kind: Set(CHARGE_INVOICE.to_owned()),
        tenant_id: Set(tenant),
        invoice_id: Set(Some(invoice)),
        idempotency_key: Set(format!("neocloud-invoice-{invoice}")),
        status: Set("pending".to_owned()),
        attempts: Set(0),
        next_attempt_at: Set(now),
        last_error: Set(None),
        stripe_id: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(conn)
    .await
    .map(|_| ())
}

/// Once the tenant has a (new) payment method: its waiting rows are due now, and charges
/// that were refused are tried again, for invoices still owed, each under a new
/// idempotency key (the old one would only replay the refusal).
pub async fn wake<C: ConnectionTrait>(
    conn: &C,
    tenant: Uuid,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    payment_outbox::Entity::update_many()
        .col_expr(payment_outbox::Column::NextAttemptAt, Expr::value(now))
        .filter(payment_outbox::Column::TenantId.eq(tenant))
        .filter(payment_outbox::Column::Status.eq("pending"))
        .exec(conn)
        .await?;
    let refused = payment_outbox::Entity::find()
        .filter(payment_outbox::Column::TenantId.eq(tenant))
        .filter(payment_outbox::Column::Kind.eq(CHARGE_INVOICE))
        .filter(payment_outbox::Column::Status.eq("failed"))
        .all(conn)
        .await?;
    for row in refused {
        let owed = match row.invoice_id {
            Some(id) => invoice::Entity::find_by_id(id)
                .one(conn)
                .await?
                .is_some_and(|i| i.status == InvoiceStatus::Open),
            None => false,
        };
        if !owed {
            continue;
        }
        let mut active: payment_outbox::ActiveModel = row.clone().into();
        active.status = Set("pending".to_owned());
        active.attempts = Set(0);
        active.next_attempt_at = Set(now);
        active.idempotency_key = Set(format!(
            "neocloud-invoice-{}-retry-{}",
            row.invoice_id.unwrap_or_default(),
            Uuid::now_v7().simple()
        ));
        active.updated_at = Set(now);
        active.update(conn).await?;
    }
    Ok(())
}

fn backoff(attempts: i32) -> TimeDelta {
    TimeDelta::seconds(1i64 << attempts.clamp(0, 12)).min(TimeDelta::hours(1))
}

async fn finish<C: ConnectionTrait>(
    conn: &C,
    row: &payment_outbox::Model,
    status: &str,
    stripe_id: Option<String>,
    error: Option<String>,
    next: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let mut active: payment_outbox::ActiveModel = row.clone().into();
    active.status = Set(status.to_owned());
    active.attempts = Set(row.attempts + 1);
    active.next_attempt_at = Set(next);
    active.last_error = Set(error);
    if stripe_id.is_some() {
        active.stripe_id = Set(stripe_id);
    }
    active.updated_at = Set(now);
    active.update(conn).await.map(|_| ())
}

/// Delivers due rows; returns how many were attempted.
pub async fn deliver_due<C: ConnectionTrait>(
    conn: &C,
    gateway: &Gateway,
    now: DateTime<Utc>,
) -> Result<usize, DbErr> {
    let due = payment_outbox::Entity::find()
        .filter(payment_outbox::Column::Status.eq("pending"))
        .filter(payment_outbox::Column::NextAttemptAt.lte(now))
        .order_by_asc(payment_outbox::Column::NextAttemptAt)
        .limit(50)
        .all(conn)
        .await?;
    for row in &due {
        deliver(conn, gateway, row, now).await?;
    }
    Ok(due.len())
}

async fn deliver<C: ConnectionTrait>(
    conn: &C,
    gateway: &Gateway,
    row: &payment_outbox::Model,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let Some(invoice) = (match row.invoice_id {
        Some(id) => invoice::Entity::find_by_id(id).one(conn).await?,
        None => None,
    }) else {
        return finish(
            conn,
            row,
            "failed",
            None,
            Some("no such invoice".into()),
            now,
            now,
        )
        .await;
    };
    if !matches!(
        invoice.status,
        InvoiceStatus::Open | InvoiceStatus::Uncollectible
    ) {
        // Paid, voided: nothing to collect any more.
        return finish(conn, row, "done", None, None, now, now).await;
    }
    let account = payment_account::Entity::find_by_id(row.tenant_id)
        .one(conn)
        .await?;
    let (Some(customer), Some(method)) = (
        account.as_ref().and_then(|a| a.stripe_customer_id.clone()),
        account
            .as_ref()
            .and_then(|a| a.default_payment_method.clone()),
    ) else {
        let wait = now + backoff(row.attempts).max(TimeDelta::minutes(5));
        return finish(
            conn,
            row,
            "pending",
            None,
            Some("the tenant has no default payment method yet".into()),
            wait,
            now,
        )
        .await;
    };
    let digits = invoice
        .currency
        .parse::<Currency>()
        .map_or(2, |c| c.minor_unit_digits());
    let total: Decimal = invoice.total.parse().unwrap_or_default();
    let minor = (total * Decimal::from(10i64.pow(digits)))
        .trunc()
        .to_string()
        .parse::<i64>()
        .unwrap_or_default();
    let result = gateway
        .charge_invoice(
            &row.idempotency_key,
            invoice.id,
            invoice.number.as_deref().unwrap_or_default(),
            invoice.tenant_id,
            &customer,
            &method,
            minor,
            &invoice.currency,
        )
        .await;
    // The payment's outcome reaches the invoice through Stripe's webhook only — one path,
    // deduplicated by event id — so a result seen here and in the webhook counts once.
    match result {
        Ok(charge) => finish(conn, row, "done", Some(charge.id), None, now, now).await,
        Err(GatewayError::Refused(reason)) => {
            tracing::warn!(invoice = %invoice.id, %reason, "Charging an invoice was refused.");
            finish(conn, row, "failed", None, Some(reason), now, now).await
        }
        Err(GatewayError::Transient(reason)) => {
            let status = if row.attempts + 1 >= MAX_ATTEMPTS {
                "failed"
            } else {
                "pending"
            };
            finish(
                conn,
                row,
                status,
                None,
                Some(reason),
                now + backoff(row.attempts + 1),
                now,
            )
            .await
        }
    }
}
