//! The payment outbox: provider calls written in the transaction of the change that needs
//! them, delivered by `deliver_due` with retries and backoff. A row is done only after
//! Stripe answered — or after Stripe's events showed that the object it asked for exists
//! (`created`), which is how a call whose answer a crash lost is recognised: a row sent
//! but never answered keeps `sent_at`, and the worker reads Stripe's events since then
//! before it sends the call again, under the same idempotency key.
//!
//! Kinds: `charge_invoice` (an off-session PaymentIntent for a finalized invoice),
//! `send_invoice` (a Stripe-hosted invoice for a tenant paying by transfer) and
//! `charge_top_up` (a PaymentIntent buying prepaid credit), `void_hosted_invoice` (voiding
//! at Stripe the hosted invoice of an invoice voided here), `refund_credit_note`
//! (refunding a credit note to the PaymentIntent that paid its invoice).

use std::collections::HashMap;

use chrono::{DateTime, TimeDelta, Utc};
use neocloud_schema::clock::Clock;
use neocloud_schema::entity::{invoice, payment_account, payment_outbox, tenant, top_up};
use neocloud_schema::ids::InvoiceId;
use neocloud_schema::ids::TenantId;
use neocloud_schema::money::minor_unit_digits_of;
use neocloud_schema::vocabulary::{CollectionMode, InvoiceStatus, TopUpStatus};
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};
use uuid::Uuid;

use super::accounts;
use super::gateway::{Gateway, GatewayError, HostedInvoice, HostedItem};

/// What an outbox row asks of the payment provider (stored as its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutboxKind {
    ChargeInvoice,
    SendInvoice,
    ChargeTopUp,
    VoidHostedInvoice,
    RefundCreditNote,
}

impl OutboxKind {
    pub const ALL: [OutboxKind; 5] = [
        OutboxKind::ChargeInvoice,
        OutboxKind::SendInvoice,
        OutboxKind::ChargeTopUp,
        OutboxKind::VoidHostedInvoice,
        OutboxKind::RefundCreditNote,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            OutboxKind::ChargeInvoice => "charge_invoice",
            OutboxKind::SendInvoice => "send_invoice",
            OutboxKind::ChargeTopUp => "charge_top_up",
            OutboxKind::VoidHostedInvoice => "void_hosted_invoice",
            OutboxKind::RefundCreditNote => "refund_credit_note",
        }
    }

    pub fn parse(stored: &str) -> Option<OutboxKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == stored)
    }
}

pub const CHARGE_INVOICE: &str = OutboxKind::ChargeInvoice.as_str();
pub const SEND_INVOICE: &str = OutboxKind::SendInvoice.as_str();
pub const CHARGE_TOP_UP: &str = OutboxKind::ChargeTopUp.as_str();
pub const VOID_HOSTED_INVOICE: &str = OutboxKind::VoidHostedInvoice.as_str();
pub const REFUND_CREDIT_NOTE: &str = OutboxKind::RefundCreditNote.as_str();
/// Most attempts at a transient failure before the row is given up (and shows as failed).
pub const MAX_ATTEMPTS: i32 = 12;

/// When a refused charge of an invoice is tried again: the delay after each refusal in
/// turn; once they are used up the row fails and waits for a new payment method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrySchedule(pub Vec<TimeDelta>);

impl Default for RetrySchedule {
    /// Three more tries: a day, three days and five days after the first refusal.
    fn default() -> Self {
        RetrySchedule(vec![
            TimeDelta::days(1),
            TimeDelta::days(2),
            TimeDelta::days(2),
        ])
    }
}

/// The idempotency key of charging `invoice` after `refusals` refused charges: a refused
/// request replays its refusal under the same key, so each retry has its own.
pub fn invoice_key(invoice: InvoiceId, refusals: i32) -> String {
    if refusals == 0 {
        format!("neocloud-invoice-{invoice}")
    } else {
        format!("neocloud-invoice-{invoice}-retry-{refusals}")
    }
}

fn new_row(
    kind: &str,
    tenant: TenantId,
    key: String,
    now: DateTime<Utc>,
) -> payment_outbox::ActiveModel {
    payment_outbox::ActiveModel {
        id: Set(Uuid::now_v7()),
        kind: Set(kind.to_owned()),
        tenant_id: Set(tenant),
        invoice_id: Set(None),
        idempotency_key: Set(key),
        status: Set("pending".to_owned()),
        attempts: Set(0),
        next_attempt_at: Set(now),
        last_error: Set(None),
        stripe_id: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
        top_up_id: Set(None),
        sent_at: Set(None),
        refusals: Set(0),
        retry_step: Set(0),
        claim: Set(None),
        credit_note_id: Set(None),
    }
}

/// Queues collecting a finalized invoice (inside its finalizing transaction): charged, or
/// sent as a hosted invoice when the tenant pays by transfer.
pub async fn queue_invoice<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    invoice: InvoiceId,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let mode = accounts::collection_mode(conn, tenant).await?;
    let (kind, key) = match mode {
        CollectionMode::ChargeAutomatically => (CHARGE_INVOICE, invoice_key(invoice, 0)),
        CollectionMode::SendInvoice => (SEND_INVOICE, format!("neocloud-hosted-{invoice}")),
    };
    let mut row = new_row(kind, tenant, key, now);
    row.invoice_id = Set(Some(invoice));
    row.insert(conn).await.map(|_| ())
}

/// Queues paying a top-up (inside the transaction that records it).
pub async fn queue_top_up<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    top_up: Uuid,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let mut row = new_row(
        CHARGE_TOP_UP,
        tenant,
        format!("neocloud-top-up-{top_up}"),
        now,
    );
    row.top_up_id = Set(Some(top_up));
    row.insert(conn).await.map(|_| ())
}

/// Queues voiding at Stripe the hosted invoice sent for `invoice` (inside the transaction
/// that voids ours); nothing when none was sent. One still waiting to be sent never
/// will be: delivering it finds the invoice void.
pub async fn queue_void_hosted<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    invoice: InvoiceId,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let sent = payment_outbox::Entity::find()
        .filter(payment_outbox::Column::InvoiceId.eq(invoice))
        .filter(payment_outbox::Column::Kind.eq(SEND_INVOICE))
        .filter(payment_outbox::Column::Status.eq("done"))
        .one(conn)
        .await?
        .and_then(|row| row.stripe_id);
    let Some(hosted) = sent else {
        return Ok(());
    };
    let mut row = new_row(
        VOID_HOSTED_INVOICE,
        tenant,
        format!("neocloud-void-{invoice}"),
        now,
    );
    row.invoice_id = Set(Some(invoice));
    row.stripe_id = Set(Some(hosted));
    row.insert(conn).await.map(|_| ())
}

/// Queues refunding a credit note (inside the transaction that issues it).
pub async fn queue_refund<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    invoice: InvoiceId,
    note: Uuid,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let mut row = new_row(
        REFUND_CREDIT_NOTE,
        tenant,
        format!("neocloud-credit-note-{note}"),
        now,
    );
    row.invoice_id = Set(Some(invoice));
    row.credit_note_id = Set(Some(note));
    row.insert(conn).await.map(|_| ())
}

/// Once the tenant has a (new) payment method: its waiting rows are due now, and invoice
/// charges that ran out of retries start the schedule again, for invoices still owed
/// (their key was already renewed at the refusal).
pub async fn wake<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    payment_outbox::Entity::update_many()
        .col_expr(payment_outbox::Column::NextAttemptAt, Expr::value(now))
        .col_expr(payment_outbox::Column::RetryStep, Expr::value(0))
        .filter(payment_outbox::Column::TenantId.eq(tenant))
        .filter(payment_outbox::Column::Status.eq("pending"))
        // A row a worker is delivering now is left to it.
        .filter(payment_outbox::Column::Claim.is_null())
        .exec(conn)
        .await?;
    let given_up = payment_outbox::Entity::find()
        .filter(payment_outbox::Column::TenantId.eq(tenant))
        .filter(payment_outbox::Column::Kind.eq(CHARGE_INVOICE))
        .filter(payment_outbox::Column::Status.eq("failed"))
        .all(conn)
        .await?;
    for row in given_up {
        if !owed(conn, row.invoice_id).await? {
            continue;
        }
        let mut active: payment_outbox::ActiveModel = row.into();
        active.status = Set("pending".to_owned());
        active.attempts = Set(0);
        active.retry_step = Set(0);
        active.next_attempt_at = Set(now);
        active.updated_at = Set(now);
        active.update(conn).await?;
    }
    Ok(())
}

async fn owed<C: ConnectionTrait>(conn: &C, invoice: Option<InvoiceId>) -> Result<bool, DbErr> {
    Ok(match invoice {
        Some(id) => invoice::Entity::find_by_id(id)
            .one(conn)
            .await?
            .is_some_and(|i| i.status.is_owed()),
        None => false,
    })
}

/// Stripe's events show that the object the call keyed `key` asked for exists: its row
/// is done (a no-op once it is).
pub async fn created<C: ConnectionTrait>(
    conn: &C,
    key: &str,
    object: &str,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    payment_outbox::Entity::update_many()
        .col_expr(payment_outbox::Column::Status, Expr::value("done"))
        .col_expr(payment_outbox::Column::StripeId, Expr::value(object))
        .col_expr(
            payment_outbox::Column::SentAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .col_expr(payment_outbox::Column::UpdatedAt, Expr::value(now))
        // Settled: a worker still delivering it records nothing over this.
        .col_expr(
            payment_outbox::Column::Claim,
            Expr::value(Option::<Uuid>::None),
        )
        .filter(payment_outbox::Column::IdempotencyKey.eq(key))
        .filter(payment_outbox::Column::Status.eq("pending"))
        .exec(conn)
        .await?;
    Ok(())
}

/// The earliest send among due rows whose answer is unknown (a crash or a timeout came
/// in between): Stripe's events from then on tell which of them arrived.
pub async fn unanswered_since<C: ConnectionTrait>(
    conn: &C,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, DbErr> {
    Ok(payment_outbox::Entity::find()
        .filter(payment_outbox::Column::Status.eq("pending"))
        .filter(payment_outbox::Column::SentAt.is_not_null())
        .filter(payment_outbox::Column::NextAttemptAt.lte(now))
        .order_by_asc(payment_outbox::Column::SentAt)
        .one(conn)
        .await?
        .and_then(|row| row.sent_at))
}

fn backoff(attempts: i32) -> TimeDelta {
    TimeDelta::seconds(1i64 << attempts.clamp(0, 12)).min(TimeDelta::hours(1))
}

/// What delivering a row came to.
enum Delivered {
    Done(Option<String>),
    /// Not possible yet (no payment method): try again at the given time.
    Wait(DateTime<Utc>, String),
    Refused(String),
    Transient(String),
}

/// Delivers the due rows this worker claims (any number of workers may run, one per
/// replica); returns how many it attempted. Each claim and outcome is timed by `clock`
/// when it happens, not when the round began.
#[tracing::instrument(name = "payments.deliver_due", skip_all)]
pub async fn deliver_due<C: ConnectionTrait>(
    conn: &C,
    gateway: &Gateway,
    retries: &RetrySchedule,
    clock: &dyn Clock,
) -> Result<usize, DbErr> {
    let due = payment_outbox::Entity::find()
        .filter(payment_outbox::Column::Status.eq("pending"))
        .filter(payment_outbox::Column::NextAttemptAt.lte(clock.now()))
        .order_by_asc(payment_outbox::Column::NextAttemptAt)
        .limit(50)
        .all(conn)
        .await?;
    let mut delivered = 0;
    for row in &due {
        let now = clock.now();
        let Some(claim) = claim(conn, row, now).await? else {
            continue;
        };
        let outcome = deliver(conn, gateway, row, now).await?;
        record(conn, row, claim, outcome, retries, clock.now()).await?;
        delivered += 1;
    }
    Ok(delivered)
}

/// How long a claimed row belongs to the worker that claimed it. A worker that dies in the
/// middle of a call leaves the row due again after this; the retry carries the same
/// idempotency key, so Stripe creates nothing twice.
const CLAIM: TimeDelta = TimeDelta::minutes(5);

/// Takes a due row for this worker: gives it this worker's token and moves its next
/// attempt past the claim while it is still pending and due, so that another worker
/// (another replica) reading the same row finds it no longer due and leaves it alone.
/// None when another worker took it first.
async fn claim<C: ConnectionTrait>(
    conn: &C,
    row: &payment_outbox::Model,
    now: DateTime<Utc>,
) -> Result<Option<Uuid>, DbErr> {
    let token = Uuid::new_v4();
    let taken = payment_outbox::Entity::update_many()
        .col_expr(
            payment_outbox::Column::NextAttemptAt,
            Expr::value(now + CLAIM),
        )
        .col_expr(payment_outbox::Column::Claim, Expr::value(token))
        .filter(payment_outbox::Column::Id.eq(row.id))
        .filter(payment_outbox::Column::Status.eq("pending"))
        .filter(payment_outbox::Column::NextAttemptAt.lte(now))
        .exec(conn)
        .await?;
    Ok((taken.rows_affected == 1).then_some(token))
}

/// Writes `active` if `claim` still holds its row; false when it no longer does.
async fn update_if_claimed<C: ConnectionTrait>(
    conn: &C,
    active: payment_outbox::ActiveModel,
    claim: Uuid,
) -> Result<bool, DbErr> {
    let update = payment_outbox::Entity::update(active)
        .validate()?
        .filter(payment_outbox::Column::Claim.eq(claim));
    match update.exec(conn).await {
        Ok(_) => Ok(true),
        Err(DbErr::RecordNotUpdated) => Ok(false),
        Err(err) => Err(err),
    }
}

/// Records what delivering `row` came to, if this worker's `claim` still holds it: a
/// worker whose claim lapsed (or whose row Stripe's events settled meanwhile) writes
/// nothing, so it never undoes what the row's next holder recorded.
async fn record<C: ConnectionTrait>(
    conn: &C,
    row: &payment_outbox::Model,
    claim: Uuid,
    outcome: Delivered,
    retries: &RetrySchedule,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let mut active: payment_outbox::ActiveModel = row.clone().into();
    active.claim = Set(None);
    active.attempts = Set(row.attempts + 1);
    active.updated_at = Set(now);
    active.next_attempt_at = Set(now);
    active.last_error = Set(None);
    let mut refused_top_up = None;
    match outcome {
        Delivered::Done(stripe_id) => {
            active.status = Set("done".to_owned());
            active.sent_at = Set(None);
            if stripe_id.is_some() {
                active.stripe_id = Set(stripe_id);
            }
        }
        Delivered::Wait(at, why) => {
            active.sent_at = Set(None);
            active.next_attempt_at = Set(at);
            active.last_error = Set(Some(why));
        }
        Delivered::Refused(reason) => {
            active.sent_at = Set(None);
            active.last_error = Set(Some(reason.clone()));
            active.status = Set("failed".to_owned());
            if row.kind == CHARGE_INVOICE {
                // The same key would replay the refusal: the next try gets its own.
                let refusals = row.refusals + 1;
                active.refusals = Set(refusals);
                active.idempotency_key =
                    Set(invoice_key(row.invoice_id.unwrap_or_default(), refusals));
                if let Some(delay) = usize::try_from(row.retry_step)
                    .ok()
                    .and_then(|step| retries.0.get(step))
                {
                    active.status = Set("pending".to_owned());
                    active.retry_step = Set(row.retry_step + 1);
                    active.attempts = Set(0);
                    active.next_attempt_at = Set(now + *delay);
                }
            }
            refused_top_up = row.top_up_id.map(|top_up| (top_up, reason));
        }
        Delivered::Transient(reason) => {
            // `sent_at` stays: the call may have arrived.
            active.last_error = Set(Some(reason));
            active.next_attempt_at = Set(now + backoff(row.attempts + 1));
            if row.attempts + 1 >= MAX_ATTEMPTS {
                active.status = Set("failed".to_owned());
            }
        }
    }
    if !update_if_claimed(conn, active, claim).await? {
        tracing::info!(row = %row.id, "An outbox row's claim lapsed; its next holder records it.");
        return Ok(());
    }
    if let Some((top_up, reason)) = refused_top_up {
        super::top_up_refused(conn, top_up, &reason, now).await?;
    }
    Ok(())
}

impl From<GatewayError> for Delivered {
    fn from(e: GatewayError) -> Self {
        match e {
            GatewayError::Refused(reason) => Delivered::Refused(reason),
            GatewayError::Transient(reason) => Delivered::Transient(reason),
        }
    }
}

/// The amount in the currency's minor units (amounts are already rounded to them); `None`
/// when it does not fit the provider's integer amounts.
pub fn minor_units(amount: Decimal, currency: &str) -> Option<i64> {
    let digits = minor_unit_digits_of(currency);
    amount
        .checked_mul(Decimal::from(10i64.pow(digits)))?
        .trunc()
        .to_i64()
}

fn too_large(amount: Decimal, currency: &str) -> Delivered {
    Delivered::Refused(format!(
        "{amount} {currency} is more than a payment can carry"
    ))
}

/// One row being delivered: what every kind of call needs.
struct Delivery<'a, C> {
    conn: &'a C,
    gateway: &'a Gateway,
    row: &'a payment_outbox::Model,
    now: DateTime<Utc>,
    account: Option<payment_account::Model>,
    metadata: HashMap<String, String>,
}

impl<'a, C: ConnectionTrait> Delivery<'a, C> {
    async fn new(
        conn: &'a C,
        gateway: &'a Gateway,
        row: &'a payment_outbox::Model,
        now: DateTime<Utc>,
    ) -> Result<Delivery<'a, C>, DbErr> {
        let account = accounts::find(conn, row.tenant_id).await?;
        let metadata = HashMap::from([
            ("tenant_id".to_owned(), row.tenant_id.to_string()),
            ("neocloud_key".to_owned(), row.idempotency_key.clone()),
        ]);
        Ok(Delivery {
            conn,
            gateway,
            row,
            now,
            account,
            metadata,
        })
    }

    /// The tenant's Stripe customer and default payment method, if it has both.
    fn payer(&self) -> Option<(String, String)> {
        let account = self.account.as_ref()?;
        Some((
            account.stripe_customer_id.clone()?,
            account.default_payment_method.clone()?,
        ))
    }

    fn no_method(&self) -> Delivered {
        Delivered::Wait(
            self.now + backoff(self.row.attempts).max(TimeDelta::minutes(5)),
            "the tenant has no default payment method yet".into(),
        )
    }

    /// Sent from here on until answered: after a crash the row shows it may have arrived.
    async fn mark_sent(&self) -> Result<(), DbErr> {
        payment_outbox::Entity::update_many()
            .col_expr(payment_outbox::Column::SentAt, Expr::value(self.now))
            .filter(payment_outbox::Column::Id.eq(self.row.id))
            .exec(self.conn)
            .await
            .map(|_| ())
    }

    /// An off-session charge of `amount` to the payer (waits for a payment method).
    async fn charge(
        &mut self,
        amount: Decimal,
        currency: &str,
    ) -> Result<Result<String, Delivered>, DbErr> {
        let Some((customer, method)) = self.payer() else {
            return Ok(Err(self.no_method()));
        };
        let Some(minor) = minor_units(amount, currency) else {
            return Ok(Err(too_large(amount, currency)));
        };
        self.mark_sent().await?;
        let charged = self
            .gateway
            .charge(
                &self.row.idempotency_key,
                &customer,
                &method,
                minor,
                currency,
                std::mem::take(&mut self.metadata),
            )
            .await;
        Ok(charged.map(|c| c.id).map_err(Delivered::from))
    }

    /// The row's invoice while it is still to be collected; else what the row comes to.
    async fn collectible_invoice(&self) -> Result<Result<invoice::Model, Delivered>, DbErr> {
        let found = match self.row.invoice_id {
            Some(id) => invoice::Entity::find_by_id(id).one(self.conn).await?,
            None => None,
        };
        Ok(match found {
            None => Err(Delivered::Refused("no such invoice".into())),
            // Paid, voided: nothing to collect any more.
            Some(i) if !(i.status.is_owed() || i.status == InvoiceStatus::Uncollectible) => {
                Err(Delivered::Done(None))
            }
            Some(i) => Ok(i),
        })
    }
}

async fn deliver<C: ConnectionTrait>(
    conn: &C,
    gateway: &Gateway,
    row: &payment_outbox::Model,
    now: DateTime<Utc>,
) -> Result<Delivered, DbErr> {
    let Some(kind) = OutboxKind::parse(&row.kind) else {
        return Ok(Delivered::Refused(format!(
            "unknown outbox kind `{}`",
            row.kind
        )));
    };
    let mut delivery = Delivery::new(conn, gateway, row, now).await?;
    match kind {
        OutboxKind::ChargeTopUp => charge_top_up(&mut delivery).await,
        OutboxKind::ChargeInvoice => match delivery.collectible_invoice().await? {
            Ok(invoice) => charge_invoice(&mut delivery, &invoice).await,
            Err(done) => Ok(done),
        },
        OutboxKind::SendInvoice => match delivery.collectible_invoice().await? {
            Ok(invoice) => send_invoice(&mut delivery, &invoice).await,
            Err(done) => Ok(done),
        },
        OutboxKind::VoidHostedInvoice => void_hosted_invoice(&delivery).await,
        OutboxKind::RefundCreditNote => refund_credit_note(&mut delivery).await,
    }
}

/// Buys prepaid credit: charges a pending top-up and records its PaymentIntent.
async fn charge_top_up<C: ConnectionTrait>(d: &mut Delivery<'_, C>) -> Result<Delivered, DbErr> {
    let Some(found) = (match d.row.top_up_id {
        Some(id) => top_up::Entity::find_by_id(id).one(d.conn).await?,
        None => None,
    }) else {
        return Ok(Delivered::Refused("no such top-up".into()));
    };
    if found.status != TopUpStatus::Pending {
        return Ok(Delivered::Done(None));
    }
    d.metadata.insert("top_up_id".into(), found.id.to_string());
    d.metadata.insert("kind".into(), "top_up".into());
    Ok(match d.charge(found.amount.get(), &found.currency).await? {
        Ok(intent) => {
            top_up::Entity::update_many()
                .col_expr(
                    top_up::Column::StripePaymentIntent,
                    Expr::value(intent.clone()),
                )
                .filter(top_up::Column::Id.eq(found.id))
                .exec(d.conn)
                .await?;
            Delivered::Done(Some(intent))
        }
        Err(outcome) => outcome,
    })
}

fn invoice_metadata<C>(d: &mut Delivery<'_, C>, invoice: &invoice::Model) {
    d.metadata
        .insert("invoice_id".into(), invoice.id.to_string());
    d.metadata.insert(
        "invoice_number".into(),
        invoice.number.clone().unwrap_or_default(),
    );
}

/// Charges a finalized invoice's total off-session. The payment's outcome reaches the
/// invoice through Stripe's events only — one path, deduplicated by event id — so a result
/// seen here and in the webhook counts once.
async fn charge_invoice<C: ConnectionTrait>(
    d: &mut Delivery<'_, C>,
    invoice: &invoice::Model,
) -> Result<Delivered, DbErr> {
    invoice_metadata(d, invoice);
    Ok(
        // Less what credit notes took off it since it was finalized.
        match d
            .charge(
                crate::credit_notes::store::amount_due(d.conn, invoice).await?,
                &invoice.currency,
            )
            .await?
        {
            Ok(intent) => Delivered::Done(Some(intent)),
            Err(outcome) => outcome,
        },
    )
}

/// Sends a Stripe-hosted invoice (a tenant paying by transfer) and keeps its payment page.
async fn send_invoice<C: ConnectionTrait>(
    d: &mut Delivery<'_, C>,
    invoice: &invoice::Model,
) -> Result<Delivered, DbErr> {
    invoice_metadata(d, invoice);
    let customer = match d
        .account
        .as_ref()
        .and_then(|a| a.stripe_customer_id.clone())
    {
        Some(customer) => customer,
        None => match ensure_customer(d.conn, d.gateway, d.row.tenant_id, d.now).await? {
            Ok(customer) => customer,
            Err(e) => return Ok(e.into()),
        },
    };
    let lines = crate::invoicing::store::lines(d.conn, invoice.tenant_id, invoice.id).await?;
    let items = match hosted_items(invoice, &lines) {
        Ok(items) => items,
        Err(refused) => return Ok(refused),
    };
    let description = format!(
        "Invoice {}, {} to {}",
        invoice.number.clone().unwrap_or_default(),
        invoice.period_start.format("%Y-%m-%d %H:%M UTC"),
        invoice.period_end.format("%Y-%m-%d %H:%M UTC")
    );
    let hosted = HostedInvoice {
        customer: &customer,
        currency: &invoice.currency,
        days_until_due: d.account.as_ref().map_or(30, |a| a.days_until_due),
        description: &description,
        metadata: std::mem::take(&mut d.metadata),
        items,
    };
    d.mark_sent().await?;
    Ok(
        match d
            .gateway
            .send_invoice(&d.row.idempotency_key, &hosted)
            .await
        {
            Ok(sent) => {
                invoice::Entity::update_many()
                    .col_expr(invoice::Column::PaymentUrl, Expr::value(sent.url))
                    .filter(invoice::Column::Id.eq(invoice.id))
                    .exec(d.conn)
                    .await?;
                Delivered::Done(Some(sent.id))
            }
            Err(e) => e.into(),
        },
    )
}

/// Voids at Stripe the hosted invoice of an invoice voided here.
async fn void_hosted_invoice<C: ConnectionTrait>(d: &Delivery<'_, C>) -> Result<Delivered, DbErr> {
    let Some(hosted) = d.row.stripe_id.as_deref() else {
        return Ok(Delivered::Refused("no hosted invoice to void".into()));
    };
    d.mark_sent().await?;
    Ok(
        match d.gateway.void_invoice(&d.row.idempotency_key, hosted).await {
            Ok(()) => Delivered::Done(None),
            Err(e) => e.into(),
        },
    )
}

/// A hosted invoice's items: a line per invoice line, and one per tax rate.
fn hosted_items(
    invoice: &invoice::Model,
    lines: &[neocloud_schema::entity::invoice_line::Model],
) -> Result<Vec<HostedItem>, Delivered> {
    let taxes: Vec<crate::tax::TaxSummary> = invoice
        .taxes
        .clone()
        .and_then(|t| serde_json::from_value(t).ok())
        .unwrap_or_default();
    let charges = lines
        .iter()
        .map(|l| (l.id.to_string(), l.amount.get(), l.description.clone()));
    let taxes = taxes.iter().enumerate().map(|(i, t)| {
        let description = format!(
            "Tax {} {}% of {}",
            t.jurisdiction,
            t.percent.normalize(),
            t.taxable
        );
        (format!("{}-tax-{i}", invoice.id), t.tax, description)
    });
    let mut items = Vec::with_capacity(lines.len());
    for (line, amount, description) in charges.chain(taxes).filter(|(_, a, _)| !a.is_zero()) {
        let amount_minor = minor_units(amount, &invoice.currency)
            .ok_or_else(|| too_large(amount, &invoice.currency))?;
        items.push(HostedItem {
            line,
            amount_minor,
            description,
        });
    }
    Ok(items)
}

/// Refunds a credit note's `refunded` part to the PaymentIntent that paid its invoice, and
/// records how it went on the note.
async fn refund_credit_note<C: ConnectionTrait>(
    d: &mut Delivery<'_, C>,
) -> Result<Delivered, DbErr> {
    use crate::credit_notes::store;
    let note = match d.row.credit_note_id {
        Some(id) => store::find(d.conn, Some(d.row.tenant_id), id).await?,
        None => None,
    };
    let invoice = match (&note, d.row.invoice_id) {
        (Some(_), Some(id)) => invoice::Entity::find_by_id(id).one(d.conn).await?,
        _ => None,
    };
    let (Some(note), Some(invoice)) = (note, invoice) else {
        return Ok(Delivered::Refused("no such credit note".into()));
    };
    let Some(intent) = store::payment_intent(d.conn, &invoice).await? else {
        store::set_refund_state(d.conn, note.id, "failed").await?;
        return Ok(Delivered::Refused(
            "the invoice was not paid through Stripe".into(),
        ));
    };
    let amount = note.refunded.get();
    let Some(minor) = minor_units(amount, &note.currency) else {
        return Ok(too_large(amount, &note.currency));
    };
    d.metadata
        .insert("credit_note_id".to_owned(), note.id.to_string());
    d.mark_sent().await?;
    let refunded = d
        .gateway
        .refund(
            &d.row.idempotency_key,
            &intent,
            minor,
            std::mem::take(&mut d.metadata),
        )
        .await;
    let (state, outcome) = match refunded {
        Ok(id) => ("done", Delivered::Done(Some(id))),
        Err(GatewayError::Refused(reason)) => ("failed", Delivered::Refused(reason)),
        Err(e) => return Ok(e.into()),
    };
    store::set_refund_state(d.conn, note.id, state).await?;
    if state == "done" {
        let posting = crate::ledger::postings::refund_sent(&note);
        crate::ledger::store::post(d.conn, &posting, d.now).await?;
    }
    Ok(outcome)
}

/// The tenant's Stripe customer, created on first use (keyed by the tenant's id).
async fn ensure_customer<C: ConnectionTrait>(
    conn: &C,
    gateway: &Gateway,
    tenant_id: TenantId,
    now: DateTime<Utc>,
) -> Result<Result<String, GatewayError>, DbErr> {
    let name = tenant::Entity::find_by_id(tenant_id)
        .one(conn)
        .await?
        .map(|t| t.name)
        .unwrap_or_default();
    let customer = match gateway.create_customer(tenant_id, &name).await {
        Ok(customer) => customer,
        Err(e) => return Ok(Err(e)),
    };
    accounts::set_customer(conn, tenant_id, &customer, now).await?;
    Ok(Ok(customer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_become_minor_units_or_nothing() {
        assert_eq!(minor_units(Decimal::new(1250, 2), "USD"), Some(1250));
        assert_eq!(minor_units(Decimal::ZERO, "EUR"), Some(0));
        // Far beyond what a payment can carry: refused, never charged as 0.
        assert_eq!(minor_units(Decimal::MAX, "USD"), None);
    }

    #[test]
    fn every_kind_reads_back_from_its_stored_name() {
        for kind in OutboxKind::ALL {
            assert_eq!(OutboxKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(OutboxKind::parse("refund"), None);
    }

    /// Two replicas: the first worker stalls past its claim, a second takes the row and
    /// settles it; when the first comes back, it writes nothing over that.
    #[tokio::test]
    async fn a_worker_whose_claim_lapsed_records_nothing() {
        use neocloud_migrations::{Migrator, MigratorTrait};
        use neocloud_schema::vocabulary::TenantStatus;
        let db = sea_orm::Database::connect("sqlite::memory:").await.unwrap();
        Migrator::up(&db, None).await.unwrap();
        let now = Utc::now();
        let tenant = TenantId::new();
        tenant::ActiveModel {
            id: Set(tenant),
            name: Set("acme".into()),
            currency: Set("USD".into()),
            status: Set(TenantStatus::Active),
            created_at: Set(now),
            billing_anchor_day: Set(1),
            ..Default::default()
        }
        .insert(&db)
        .await
        .unwrap();
        let row = new_row(CHARGE_INVOICE, tenant, "key".into(), now)
            .insert(&db)
            .await
            .unwrap();
        let first = claim(&db, &row, now).await.unwrap().expect("claimed");
        assert_eq!(claim(&db, &row, now).await.unwrap(), None, "held");
        let later = now + CLAIM + TimeDelta::seconds(1);
        let second = claim(&db, &row, later).await.unwrap().expect("lapsed");
        let retries = RetrySchedule(vec![TimeDelta::days(1)]);
        let done = Delivered::Done(Some("pi_1".into()));
        record(&db, &row, second, done, &retries, later)
            .await
            .unwrap();
        let refused = Delivered::Refused("declined".into());
        record(&db, &row, first, refused, &retries, later)
            .await
            .unwrap();
        let stored = payment_outbox::Entity::find_by_id(row.id)
            .one(&db)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.status, "done");
        assert_eq!(stored.stripe_id.as_deref(), Some("pi_1"));
        assert_eq!(
            (stored.idempotency_key.as_str(), stored.claim),
            ("key", None)
        );
    }
}
