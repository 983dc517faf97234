//! The webhook tables (`webhook_endpoints`, `webhook_deliveries`, `webhook_attempts`):
//! the only module that writes them. An endpoint belongs to an owner — a tenant, or the
//! operator (`None`) — and every read or change of one names its owner in the query.
//!
//! Deliveries are an outbox: [`fan_out`] writes one per event and endpoint in the event's
//! transaction; the api's worker takes due ones with [`claim`] (a conditional update that
//! moves `next_attempt_at` past the send's time limit and stamps a claim id, so a second
//! worker finds nothing due and a dead worker's claim lapses) and settles each with
//! [`finish`], which only the claim's holder can do.

use chrono::{DateTime, TimeDelta, Utc};
use neocloud_schema::entity::{event, webhook_attempt, webhook_delivery, webhook_endpoint};
use neocloud_schema::ids::{EventId, TenantId, WebhookEndpointId};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, IntoActiveModel,
    QueryFilter, QueryOrder, QuerySelect, Select, Set,
};
use uuid::Uuid;

/// Who owns an endpoint: a tenant, or the operator (`None`).
pub type Owner = Option<TenantId>;

/// How long a delivery is retried after it was first owed (or asked for again).
pub const RETRY_FOR: TimeDelta = TimeDelta::days(3);

pub const PENDING: &str = "pending";
pub const DELIVERED: &str = "delivered";
pub const FAILED: &str = "failed";

fn owned(owner: Owner) -> Select<webhook_endpoint::Entity> {
    let select = webhook_endpoint::Entity::find();
    match owner {
        Some(tenant) => select.filter(webhook_endpoint::Column::TenantId.eq(tenant)),
        None => select.filter(webhook_endpoint::Column::TenantId.is_null()),
    }
}

fn deliveries_owned(owner: Owner) -> Select<webhook_delivery::Entity> {
    let select = webhook_delivery::Entity::find();
    match owner {
        Some(tenant) => select.filter(webhook_delivery::Column::TenantId.eq(tenant)),
        None => select.filter(webhook_delivery::Column::TenantId.is_null()),
    }
}

pub async fn insert_endpoint<C: ConnectionTrait>(
    conn: &C,
    model: webhook_endpoint::Model,
) -> Result<webhook_endpoint::Model, DbErr> {
    model.into_active_model().insert(conn).await
}

/// Writes every column of an endpoint the caller has already found as its owner's.
pub async fn update_endpoint<C: ConnectionTrait>(
    conn: &C,
    model: webhook_endpoint::Model,
) -> Result<webhook_endpoint::Model, DbErr> {
    let mut active = model.into_active_model();
    for column in [
        webhook_endpoint::Column::Url,
        webhook_endpoint::Column::Description,
        webhook_endpoint::Column::EventTypes,
        webhook_endpoint::Column::Enabled,
        webhook_endpoint::Column::DisabledReason,
        webhook_endpoint::Column::Secret,
        webhook_endpoint::Column::PreviousSecret,
        webhook_endpoint::Column::PreviousSecretUntil,
        webhook_endpoint::Column::FailingSince,
        webhook_endpoint::Column::UpdatedAt,
    ] {
        active.reset(column);
    }
    active.update(conn).await
}

pub async fn find_endpoint<C: ConnectionTrait>(
    conn: &C,
    owner: Owner,
    id: WebhookEndpointId,
) -> Result<Option<webhook_endpoint::Model>, DbErr> {
    owned(owner)
        .filter(webhook_endpoint::Column::Id.eq(id))
        .one(conn)
        .await
}

/// The owner's endpoint, locked until the transaction ends (PostgreSQL).
pub async fn find_endpoint_for_update<C: ConnectionTrait>(
    conn: &C,
    owner: Owner,
    id: WebhookEndpointId,
) -> Result<Option<webhook_endpoint::Model>, DbErr> {
    owned(owner)
        .filter(webhook_endpoint::Column::Id.eq(id))
        .lock_exclusive()
        .one(conn)
        .await
}

pub async fn endpoints<C: ConnectionTrait>(
    conn: &C,
    owner: Owner,
) -> Result<Vec<webhook_endpoint::Model>, DbErr> {
    owned(owner)
        .order_by_asc(webhook_endpoint::Column::Id)
        .all(conn)
        .await
}

/// Deletes an endpoint with its deliveries and their attempts; whether it existed.
pub async fn delete_endpoint<C: ConnectionTrait>(
    conn: &C,
    owner: Owner,
    id: WebhookEndpointId,
) -> Result<bool, DbErr> {
    if find_endpoint(conn, owner, id).await?.is_none() {
        return Ok(false);
    }
    webhook_attempt::Entity::delete_many()
        .filter(webhook_attempt::Column::EndpointId.eq(id))
        .exec(conn)
        .await?;
    webhook_delivery::Entity::delete_many()
        .filter(webhook_delivery::Column::EndpointId.eq(id))
        .exec(conn)
        .await?;
    webhook_endpoint::Entity::delete_by_id(id)
        .exec(conn)
        .await?;
    Ok(true)
}

/// The event types an endpoint takes; empty: all it may see.
pub fn event_types(endpoint: &webhook_endpoint::Model) -> Vec<String> {
    serde_json::from_value(endpoint.event_types.clone()).unwrap_or_default()
}

/// Whether `endpoint` takes `event`: its owner may see it and its filter names it.
pub fn takes(endpoint: &webhook_endpoint::Model, event: &event::Model) -> bool {
    if event.event_type == "webhook.test" {
        // A test event goes to the one endpoint it names.
        return event.payload["endpoint_id"] == serde_json::json!(endpoint.id);
    }
    let visible = endpoint.tenant_id.is_none() || endpoint.tenant_id == event.tenant_id;
    let types = event_types(endpoint);
    visible && (types.is_empty() || types.contains(&event.event_type))
}

fn new_delivery(
    event: &event::Model,
    endpoint: &webhook_endpoint::Model,
    now: DateTime<Utc>,
) -> webhook_delivery::ActiveModel {
    webhook_delivery::ActiveModel {
        id: Set(Uuid::now_v7()),
        event_id: Set(event.id),
        endpoint_id: Set(endpoint.id),
        tenant_id: Set(endpoint.tenant_id),
        status: Set(PENDING.to_owned()),
        attempts: Set(0),
        next_attempt_at: Set(now),
        retry_until: Set(now + RETRY_FOR),
        claim: Set(None),
        last_status_code: Set(None),
        last_error: Set(None),
        delivered_at: Set(None),
        created_at: Set(now),
    }
}

/// Writes a delivery of `event` to every enabled endpoint that takes it.
pub async fn fan_out<C: ConnectionTrait>(
    conn: &C,
    event: &event::Model,
    now: DateTime<Utc>,
) -> Result<usize, DbErr> {
    // The operator's endpoints, and the event's tenant's; `takes` applies the filters.
    let owners = match event.tenant_id {
        Some(tenant) => webhook_endpoint::Column::TenantId
            .is_null()
            .or(webhook_endpoint::Column::TenantId.eq(tenant)),
        None => webhook_endpoint::Column::TenantId.is_null(),
    };
    let candidates = webhook_endpoint::Entity::find()
        .filter(webhook_endpoint::Column::Enabled.eq(true))
        .filter(owners);
    let rows: Vec<_> = candidates
        .all(conn)
        .await?
        .iter()
        .filter(|endpoint| takes(endpoint, event))
        .map(|endpoint| new_delivery(event, endpoint, now))
        .collect();
    let count = rows.len();
    if count > 0 {
        webhook_delivery::Entity::insert_many(rows)
            .exec_without_returning(conn)
            .await?;
    }
    Ok(count)
}

/// Makes `event` owed to `endpoint` again from now (or for the first time), keeping the
/// delivery's id and so its `webhook-id`. A claim in force is dropped: the attempt in
/// flight then leaves no log row, and the delivery is sent again.
pub async fn owe_again<C: ConnectionTrait>(
    conn: &C,
    event: &event::Model,
    endpoint: &webhook_endpoint::Model,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    webhook_delivery::Entity::insert(new_delivery(event, endpoint, now))
        .on_conflict(
            OnConflict::columns([
                webhook_delivery::Column::EventId,
                webhook_delivery::Column::EndpointId,
            ])
            .update_columns([
                webhook_delivery::Column::Status,
                webhook_delivery::Column::NextAttemptAt,
                webhook_delivery::Column::RetryUntil,
                // An attempt still in flight can no longer settle it over the redelivery.
                webhook_delivery::Column::Claim,
            ])
            .to_owned(),
        )
        .exec_without_returning(conn)
        .await
        .map(|_| ())
}

/// Pending deliveries due at `now`, oldest due first, at most `limit`.
pub async fn due<C: ConnectionTrait>(
    conn: &C,
    now: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<webhook_delivery::Model>, DbErr> {
    webhook_delivery::Entity::find()
        .filter(webhook_delivery::Column::Status.eq(PENDING))
        .filter(webhook_delivery::Column::NextAttemptAt.lte(now))
        .order_by_asc(webhook_delivery::Column::NextAttemptAt)
        .limit(limit)
        .all(conn)
        .await
}

/// Takes a due delivery for this worker until `now + hold`; the claim id, or `None` when
/// another worker took it first.
pub async fn claim<C: ConnectionTrait>(
    conn: &C,
    delivery: Uuid,
    now: DateTime<Utc>,
    hold: TimeDelta,
) -> Result<Option<Uuid>, DbErr> {
    let token = Uuid::new_v4();
    let taken = webhook_delivery::Entity::update_many()
        .col_expr(webhook_delivery::Column::Claim, Expr::value(token))
        .col_expr(
            webhook_delivery::Column::NextAttemptAt,
            Expr::value(now + hold),
        )
        .filter(webhook_delivery::Column::Id.eq(delivery))
        .filter(webhook_delivery::Column::Status.eq(PENDING))
        .filter(webhook_delivery::Column::NextAttemptAt.lte(now))
        .exec(conn)
        .await?;
    Ok((taken.rows_affected == 1).then_some(token))
}

/// What one attempt came to.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub at: DateTime<Utc>,
    pub status_code: Option<u16>,
    pub latency_ms: i64,
    pub error: Option<String>,
    pub response_head: Option<String>,
    /// The receiver took it (2xx).
    pub delivered: bool,
    /// When to try again if not delivered; none: retries are over.
    pub retry_at: Option<DateTime<Utc>>,
}

/// Logs an attempt and settles the delivery — only while `token` still holds it. Whether
/// it did.
pub async fn finish<C: ConnectionTrait>(
    conn: &C,
    delivery: &webhook_delivery::Model,
    token: Uuid,
    attempt: &Attempt,
) -> Result<bool, DbErr> {
    let (status, next) = match (attempt.delivered, attempt.retry_at) {
        (true, _) => (DELIVERED, attempt.at),
        (false, Some(at)) => (PENDING, at),
        (false, None) => (FAILED, attempt.at),
    };
    let settled = webhook_delivery::Entity::update_many()
        .col_expr(webhook_delivery::Column::Status, Expr::value(status))
        .col_expr(
            webhook_delivery::Column::Attempts,
            Expr::col(webhook_delivery::Column::Attempts).add(1),
        )
        .col_expr(webhook_delivery::Column::NextAttemptAt, Expr::value(next))
        .col_expr(
            webhook_delivery::Column::Claim,
            Expr::value(Option::<Uuid>::None),
        )
        .col_expr(
            webhook_delivery::Column::LastStatusCode,
            Expr::value(attempt.status_code.map(i32::from)),
        )
        .col_expr(
            webhook_delivery::Column::LastError,
            Expr::value(attempt.error.clone()),
        )
        .col_expr(
            webhook_delivery::Column::DeliveredAt,
            Expr::value(attempt.delivered.then_some(attempt.at)),
        )
        .filter(webhook_delivery::Column::Id.eq(delivery.id))
        .filter(webhook_delivery::Column::Claim.eq(token))
        .exec(conn)
        .await?;
    if settled.rows_affected == 0 {
        return Ok(false);
    }
    webhook_attempt::ActiveModel {
        id: Set(Uuid::now_v7()),
        delivery_id: Set(delivery.id),
        endpoint_id: Set(delivery.endpoint_id),
        event_id: Set(delivery.event_id),
        attempt: Set(delivery.attempts + 1),
        at: Set(attempt.at),
        status_code: Set(attempt.status_code.map(i32::from)),
        latency_ms: Set(attempt.latency_ms),
        error: Set(attempt.error.clone()),
        response_head: Set(attempt.response_head.clone()),
    }
    .insert(conn)
    .await?;
    Ok(true)
}

/// Records how the endpoint fares: a success clears `failing_since`, a failure sets it
/// if unset. Returns the endpoint as it now stands.
pub async fn note_outcome<C: ConnectionTrait>(
    conn: &C,
    endpoint: WebhookEndpointId,
    delivered: bool,
    at: DateTime<Utc>,
) -> Result<Option<webhook_endpoint::Model>, DbErr> {
    let mut update =
        webhook_endpoint::Entity::update_many().filter(webhook_endpoint::Column::Id.eq(endpoint));
    if delivered {
        update = update.col_expr(
            webhook_endpoint::Column::FailingSince,
            Expr::value(Option::<DateTime<Utc>>::None),
        );
    } else {
        update = update
            .col_expr(webhook_endpoint::Column::FailingSince, Expr::value(at))
            .filter(webhook_endpoint::Column::FailingSince.is_null());
    }
    update.exec(conn).await?;
    webhook_endpoint::Entity::find_by_id(endpoint)
        .one(conn)
        .await
}

/// Disables an enabled endpoint for `reason`; whether this call did.
pub async fn disable<C: ConnectionTrait>(
    conn: &C,
    endpoint: WebhookEndpointId,
    reason: &str,
    at: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let changed = webhook_endpoint::Entity::update_many()
        .col_expr(webhook_endpoint::Column::Enabled, Expr::value(false))
        .col_expr(
            webhook_endpoint::Column::DisabledReason,
            Expr::value(reason),
        )
        .col_expr(webhook_endpoint::Column::UpdatedAt, Expr::value(at))
        .filter(webhook_endpoint::Column::Id.eq(endpoint))
        .filter(webhook_endpoint::Column::Enabled.eq(true))
        .exec(conn)
        .await?;
    Ok(changed.rows_affected == 1)
}

/// Endpoints by id, whoever owns them (the delivery worker's read).
pub async fn endpoints_by_id<C: ConnectionTrait>(
    conn: &C,
    ids: Vec<WebhookEndpointId>,
) -> Result<Vec<webhook_endpoint::Model>, DbErr> {
    webhook_endpoint::Entity::find()
        .filter(webhook_endpoint::Column::Id.is_in(ids))
        .all(conn)
        .await
}

/// The owner's deliveries to `endpoint`, newest first, at most `limit`.
pub async fn deliveries<C: ConnectionTrait>(
    conn: &C,
    owner: Owner,
    endpoint: WebhookEndpointId,
    limit: u64,
) -> Result<Vec<webhook_delivery::Model>, DbErr> {
    deliveries_owned(owner)
        .filter(webhook_delivery::Column::EndpointId.eq(endpoint))
        .order_by_desc(webhook_delivery::Column::CreatedAt)
        .order_by_desc(webhook_delivery::Column::Id)
        .limit(limit)
        .all(conn)
        .await
}

/// The types of the events of `deliveries` (already read for their owner), by event id.
pub async fn types_of_delivered<C: ConnectionTrait>(
    conn: &C,
    deliveries: &[webhook_delivery::Model],
) -> Result<std::collections::HashMap<EventId, String>, DbErr> {
    let rows: Vec<(EventId, String)> = event::Entity::find()
        .select_only()
        .columns([event::Column::Id, event::Column::EventType])
        .filter(event::Column::Id.is_in(deliveries.iter().map(|d| d.event_id)))
        .into_tuple()
        .all(conn)
        .await?;
    Ok(rows.into_iter().collect())
}

/// The attempts of the owner's deliveries to `endpoint`, newest first, at most `limit`.
pub async fn attempts<C: ConnectionTrait>(
    conn: &C,
    owner: Owner,
    endpoint: WebhookEndpointId,
    limit: u64,
) -> Result<Vec<webhook_attempt::Model>, DbErr> {
    if find_endpoint(conn, owner, endpoint).await?.is_none() {
        return Ok(Vec::new());
    }
    webhook_attempt::Entity::find()
        .filter(webhook_attempt::Column::EndpointId.eq(endpoint))
        .order_by_desc(webhook_attempt::Column::At)
        .order_by_desc(webhook_attempt::Column::Id)
        .limit(limit)
        .all(conn)
        .await
}

/// The delivery of `event` to `endpoint`, if the owner's.
pub async fn delivery_of<C: ConnectionTrait>(
    conn: &C,
    owner: Owner,
    event: EventId,
    endpoint: WebhookEndpointId,
) -> Result<Option<webhook_delivery::Model>, DbErr> {
    deliveries_owned(owner)
        .filter(webhook_delivery::Column::EventId.eq(event))
        .filter(webhook_delivery::Column::EndpointId.eq(endpoint))
        .one(conn)
        .await
}

/// Which of `events` still have a delivery pending.
pub async fn with_pending<C: ConnectionTrait>(
    conn: &C,
    events: Vec<EventId>,
) -> Result<Vec<EventId>, DbErr> {
    webhook_delivery::Entity::find()
        .select_only()
        .column(webhook_delivery::Column::EventId)
        .filter(webhook_delivery::Column::EventId.is_in(events))
        .filter(webhook_delivery::Column::Status.eq(PENDING))
        .distinct()
        .into_tuple()
        .all(conn)
        .await
}

/// Deletes the deliveries of `events` with their attempts.
pub async fn delete_for_events<C: ConnectionTrait>(
    conn: &C,
    events: Vec<EventId>,
) -> Result<(), DbErr> {
    webhook_attempt::Entity::delete_many()
        .filter(webhook_attempt::Column::EventId.is_in(events.clone()))
        .exec(conn)
        .await?;
    webhook_delivery::Entity::delete_many()
        .filter(webhook_delivery::Column::EventId.is_in(events))
        .exec(conn)
        .await
        .map(|_| ())
}

/// Erasure: points the tenant's endpoints nowhere, without description, disabled;
/// endpoints changed.
pub async fn erase<C: ConnectionTrait>(conn: &C, tenant: TenantId) -> Result<u64, DbErr> {
    let changed = webhook_endpoint::Entity::update_many()
        .col_expr(
            webhook_endpoint::Column::Url,
            Expr::value("https://erased.invalid/"),
        )
        .col_expr(webhook_endpoint::Column::Description, Expr::value(""))
        .col_expr(webhook_endpoint::Column::Enabled, Expr::value(false))
        .col_expr(
            webhook_endpoint::Column::DisabledReason,
            Expr::value("erased"),
        )
        .filter(webhook_endpoint::Column::TenantId.eq(tenant))
        .exec(conn)
        .await?;
    Ok(changed.rows_affected)
}
