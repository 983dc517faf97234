//! The `mail_outbox` table: the only module that writes it.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::mail;
use neocloud_schema::ids::TenantId;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect,
};
use uuid::Uuid;

use super::Letter;

/// Queues a mail to `recipient`, due at once (in the caller's transaction).
pub async fn queue<C: ConnectionTrait>(
    conn: &C,
    tenant: Option<TenantId>,
    recipient: &str,
    letter: Letter,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    mail::Entity::insert(mail::ActiveModel {
        id: Set(Uuid::now_v7()),
        tenant_id: Set(tenant),
        recipient: Set(recipient.to_owned()),
        kind: Set(letter.kind.as_str().to_owned()),
        subject: Set(letter.subject),
        body: Set(Some(letter.body)),
        created_at: Set(now),
        next_attempt_at: Set(now),
        attempts: Set(0),
        sent_at: Set(None),
        failed_at: Set(None),
        last_error: Set(None),
    })
    .exec_without_returning(conn)
    .await?;
    Ok(())
}

/// How many mails of `kind` went to `recipient` since `since` (sent or not).
pub async fn count_since<C: ConnectionTrait>(
    conn: &C,
    recipient: &str,
    kind: super::Kind,
    since: DateTime<Utc>,
) -> Result<u64, DbErr> {
    mail::Entity::find()
        .filter(mail::Column::Recipient.eq(recipient))
        .filter(mail::Column::Kind.eq(kind.as_str()))
        .filter(mail::Column::CreatedAt.gte(since))
        .count(conn)
        .await
}

/// Mails due by `now`, oldest first.
pub async fn due<C: ConnectionTrait>(
    conn: &C,
    now: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<mail::Model>, DbErr> {
    mail::Entity::find()
        .filter(mail::Column::SentAt.is_null())
        .filter(mail::Column::FailedAt.is_null())
        .filter(mail::Column::NextAttemptAt.lte(now))
        .order_by_asc(mail::Column::NextAttemptAt)
        .limit(limit)
        .all(conn)
        .await
}

/// Takes `queued` for one try, holding it until `until`: false when another worker took
/// it first (its `next_attempt_at` moved).
pub async fn claim<C: ConnectionTrait>(
    conn: &C,
    queued: &mail::Model,
    until: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let taken = mail::Entity::update_many()
        .col_expr(mail::Column::NextAttemptAt, Expr::value(until))
        .filter(mail::Column::Id.eq(queued.id))
        .filter(mail::Column::NextAttemptAt.eq(queued.next_attempt_at))
        .filter(mail::Column::SentAt.is_null())
        .exec(conn)
        .await?;
    Ok(taken.rows_affected == 1)
}

/// What became of a try.
pub enum Settled {
    Sent,
    /// Given up: its link is dropped with the body.
    Failed(String),
    /// Tried again at `next`.
    Retry {
        error: String,
        next: DateTime<Utc>,
    },
}

/// Records the outcome of a try of mail `id`.
pub async fn settle<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
    attempts: i32,
    outcome: Settled,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let update = mail::Entity::update_many()
        .col_expr(mail::Column::Attempts, Expr::value(attempts))
        .filter(mail::Column::Id.eq(id));
    let body = || Expr::value(Option::<String>::None);
    let update = match outcome {
        Settled::Sent => update
            .col_expr(mail::Column::SentAt, Expr::value(now))
            .col_expr(mail::Column::Body, body())
            .col_expr(mail::Column::LastError, Expr::value(Option::<String>::None)),
        Settled::Failed(error) => update
            .col_expr(mail::Column::FailedAt, Expr::value(now))
            .col_expr(mail::Column::Body, body())
            .col_expr(mail::Column::LastError, Expr::value(clip(&error))),
        Settled::Retry { error, next } => update
            .col_expr(mail::Column::NextAttemptAt, Expr::value(next))
            .col_expr(mail::Column::LastError, Expr::value(clip(&error))),
    };
    update.exec(conn).await?;
    Ok(())
}

fn clip(error: &str) -> String {
    error.chars().take(500).collect()
}

/// Deletes the mails sent or given up before `before` (their record is kept as long as
/// events are); how many.
pub async fn prune<C: ConnectionTrait>(conn: &C, before: DateTime<Utc>) -> Result<u64, DbErr> {
    let sent = mail::Entity::delete_many()
        .filter(
            Condition::any()
                .add(mail::Column::SentAt.lt(before))
                .add(mail::Column::FailedAt.lt(before)),
        )
        .exec(conn)
        .await?;
    Ok(sent.rows_affected)
}

/// Deletes every mail of `tenant` (erasure), sent or not; how many.
pub(crate) async fn erase<C: ConnectionTrait>(conn: &C, tenant: TenantId) -> Result<u64, DbErr> {
    let erased = mail::Entity::delete_many()
        .filter(mail::Column::TenantId.eq(tenant))
        .exec(conn)
        .await?;
    Ok(erased.rows_affected)
}
