//! SQL for provider payouts: queuing one with the statement that makes it due, the
//! payouts due for sending, and recording what became of each with its ledger transfer.
//! The only writer of `provider_payouts`.

use chrono::{DateTime, TimeDelta, Utc};
use neocloud_schema::entity::{Exact, provider, provider_payout, provider_statement};
use neocloud_schema::ids::ProviderId;
use rust_decimal::Decimal;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};
use uuid::Uuid;

use super::{FAILED, MANUAL, QUEUED, SENT, SEPA, STRIPE_CONNECT};
use crate::ledger::{AccountKind, from_minor, postings};

/// What the ledger says the platform owes `provider` in `currency`.
pub async fn payable<C: ConnectionTrait>(
    conn: &C,
    provider: ProviderId,
    currency: &str,
) -> Result<Decimal, DbErr> {
    let balances = crate::ledger::store::balances(conn, Some(provider.0)).await?;
    let minor = balances
        .iter()
        .filter(|b| b.account.kind == AccountKind::ProviderPayable && b.currency == currency)
        .map(crate::ledger::store::Balance::balance)
        .sum();
    Ok(from_minor(minor, currency))
}

/// Queues the payout `statement` makes due, in its closing transaction: everything the
/// provider is owed, when that is at least `minimum` (and above zero). `None` otherwise
/// (below the minimum it carries over). A `manual` payout waits for the operator to
/// record that it paid it outside neocloud.
pub async fn queue_for<C: ConnectionTrait>(
    conn: &C,
    provider: &provider::Model,
    statement: &provider_statement::Model,
    minimum: Decimal,
    now: DateTime<Utc>,
) -> Result<Option<provider_payout::Model>, DbErr> {
    let method = provider.payout_method.as_str();
    let destination = match (method, provider.payout_account.clone()) {
        (STRIPE_CONNECT | SEPA, Some(account)) => account,
        (MANUAL, account) => account.unwrap_or_else(|| "outside neocloud".to_owned()),
        _ => return Ok(None),
    };
    let owed = payable(conn, provider.id, &statement.currency).await?;
    if owed <= Decimal::ZERO || owed < minimum {
        return Ok(None);
    }
    let payout = provider_payout::ActiveModel {
        id: Set(Uuid::now_v7()),
        provider_id: Set(provider.id),
        statement_id: Set(statement.id),
        number: Set(statement.number.replacen("PS-", "PO-", 1)),
        currency: Set(statement.currency.clone()),
        amount: Set(Exact::from(owed)),
        method: Set(method.to_owned()),
        destination: Set(destination),
        status: Set(QUEUED.to_owned()),
        reference: Set(None),
        attempts: Set(0),
        next_attempt_at: Set(now),
        last_error: Set(None),
        created_at: Set(now),
        sent_at: Set(None),
    }
    .insert(conn)
    .await?;
    crate::ledger::store::post(conn, &postings::provider_payout_queued(&payout), now).await?;
    Ok(Some(payout))
}

/// Queued payouts of `method` due by `now`, oldest first.
pub async fn due<C: ConnectionTrait>(
    conn: &C,
    method: &str,
    now: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<provider_payout::Model>, DbErr> {
    provider_payout::Entity::find()
        .filter(provider_payout::Column::Status.eq(QUEUED))
        .filter(provider_payout::Column::Method.eq(method))
        .filter(provider_payout::Column::NextAttemptAt.lte(now))
        .order_by_asc(provider_payout::Column::CreatedAt)
        .limit(limit)
        .all(conn)
        .await
}

/// Moves a queued payout to `status` (once: a payout already moved is left as it is, so
/// two workers record one outcome); whether this call moved it.
async fn settle<C: ConnectionTrait>(
    conn: &C,
    payout: &provider_payout::Model,
    status: &str,
    reference: Option<&str>,
    error: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let moved = provider_payout::Entity::update_many()
        .col_expr(provider_payout::Column::Status, Expr::value(status))
        .col_expr(provider_payout::Column::Reference, Expr::value(reference))
        .col_expr(provider_payout::Column::LastError, Expr::value(error))
        .col_expr(provider_payout::Column::SentAt, Expr::value(Some(now)))
        .filter(provider_payout::Column::Id.eq(payout.id))
        .filter(provider_payout::Column::Status.eq(QUEUED))
        .exec(conn)
        .await?;
    Ok(moved.rows_affected == 1)
}

/// The payout was sent (`reference`: the Stripe transfer, or the SEPA file's message
/// id): it leaves Stripe's balance or the operator's bank account.
pub async fn sent<C: ConnectionTrait>(
    conn: &C,
    payout: &provider_payout::Model,
    reference: &str,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    if !settle(conn, payout, SENT, Some(reference), None, now).await? {
        return Ok(false);
    }
    crate::ledger::store::post(conn, &postings::provider_payout_sent(payout), now).await?;
    Ok(true)
}

/// The payout was refused for good: the provider is owed it again (the next statement's
/// payout includes it).
pub async fn failed<C: ConnectionTrait>(
    conn: &C,
    payout: &provider_payout::Model,
    error: &str,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    if !settle(conn, payout, FAILED, None, Some(error), now).await? {
        return Ok(false);
    }
    crate::ledger::store::post(conn, &postings::provider_payout_failed(payout), now).await?;
    Ok(true)
}

/// Counts an attempt before it is made, so a sender that dies while waiting for the
/// answer leaves a trace: the next attempt looks for the transfer before making one.
/// Returns the payout with this attempt counted.
pub async fn begin_attempt<C: ConnectionTrait>(
    conn: &C,
    payout: provider_payout::Model,
) -> Result<provider_payout::Model, DbErr> {
    let attempts = payout.attempts.saturating_add(1);
    let mut active: provider_payout::ActiveModel = payout.into();
    active.attempts = Set(attempts);
    active.update(conn).await
}

/// Sending failed for a passing reason: tried again later, with backoff by the attempts
/// counted so far (`begin_attempt`).
pub async fn retry_later<C: ConnectionTrait>(
    conn: &C,
    payout: &provider_payout::Model,
    error: &str,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let wait = TimeDelta::seconds(1i64 << payout.attempts.clamp(0, 12)).min(TimeDelta::hours(1));
    let mut active: provider_payout::ActiveModel = payout.clone().into();
    active.next_attempt_at = Set(now + wait);
    active.last_error = Set(Some(error.chars().take(500).collect()));
    active.update(conn).await.map(|_| ())
}

/// A provider's payouts (any provider's with `None`), newest first.
pub async fn list<C: ConnectionTrait>(
    conn: &C,
    provider: Option<ProviderId>,
) -> Result<Vec<provider_payout::Model>, DbErr> {
    let mut query =
        provider_payout::Entity::find().order_by_desc(provider_payout::Column::CreatedAt);
    if let Some(p) = provider {
        query = query.filter(provider_payout::Column::ProviderId.eq(p));
    }
    query.all(conn).await
}
