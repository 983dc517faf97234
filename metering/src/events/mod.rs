//! The event log: every change a tenant or the operator may care about (an allocation
//! placed, an invoice finalized, a GPU failed, …) is [`record`]ed in the transaction of the
//! change, so an event exists exactly when its change committed. Recording also writes
//! one delivery row per matching webhook endpoint (the outbox the api's delivery worker
//! claims from), and the feed reads the same rows, so a poller and a webhook receiver see
//! the same ids.
//!
//! Events are numbered (`seq`) in commit order by one counter row that each recording
//! transaction locks until it ends: a feed reader that has seen number n has seen every
//! event below it, even one whose transaction began earlier.
//!
//! What lives here: the catalog, the tables `events`, `event_log_head` (`store`) and
//! `webhook_endpoints`, `webhook_deliveries`, `webhook_attempts` (`webhooks`). What does
//! not: signing and sending (the api's `webhooks`, which owns outbound HTTP).

pub mod catalog;
pub mod store;
pub mod webhooks;

use chrono::{DateTime, TimeDelta, Utc};
use neocloud_schema::entity::event;
use neocloud_schema::ids::TenantId;
use sea_orm::{ConnectionTrait, DbErr};
use serde_json::{Value, json};

pub use catalog::{Audience, Spec};

/// How long events are kept by default (`events.retention_days`).
pub const DEFAULT_RETENTION: TimeDelta = TimeDelta::days(30);

/// Deletes, in `conn`'s transaction, up to `limit` events that occurred before `before`
/// with their deliveries and attempts, keeping any event a delivery still owes; how
/// many were deleted.
pub async fn prune<C: ConnectionTrait>(
    conn: &C,
    before: DateTime<Utc>,
    limit: u64,
) -> Result<u64, DbErr> {
    let old = store::older_than(conn, before, limit).await?;
    if old.is_empty() {
        return Ok(0);
    }
    let owed = webhooks::with_pending(conn, old.clone()).await?;
    let done: Vec<_> = old.into_iter().filter(|id| !owed.contains(id)).collect();
    webhooks::delete_for_events(conn, done.clone()).await?;
    store::delete(conn, done).await
}

/// An event to record.
#[derive(Debug, Clone)]
pub struct NewEvent {
    /// A catalog type name.
    pub kind: &'static str,
    /// The tenant it is about; none for operator events.
    pub tenant: Option<TenantId>,
    pub occurred_at: DateTime<Utc>,
    /// The type's `data`.
    pub data: Value,
}

impl NewEvent {
    pub fn tenant(kind: &'static str, tenant: TenantId, at: DateTime<Utc>, data: Value) -> Self {
        NewEvent {
            kind,
            tenant: Some(tenant),
            occurred_at: at,
            data,
        }
    }

    pub fn operator(kind: &'static str, at: DateTime<Utc>, data: Value) -> Self {
        NewEvent {
            kind,
            tenant: None,
            occurred_at: at,
            data,
        }
    }
}

/// Records `event` and its deliveries to every enabled endpoint that takes it. Run in the
/// transaction of the change the event describes.
pub async fn record<C: ConnectionTrait>(
    conn: &C,
    event: NewEvent,
    now: DateTime<Utc>,
) -> Result<event::Model, DbErr> {
    checked(&event);
    let row = store::insert(conn, &event).await?;
    webhooks::fan_out(conn, &row, now).await?;
    Ok(row)
}

/// Records several events, in order, in one transaction.
pub async fn record_all<C: ConnectionTrait>(
    conn: &C,
    events: Vec<NewEvent>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    for event in events {
        record(conn, event, now).await?;
    }
    Ok(())
}

/// An event that does not match its catalog entry is a programming error: debug builds
/// stop at it (every test would), production records it and says so.
fn checked(event: &NewEvent) {
    let verdict = catalog::spec(event.kind)
        .ok_or_else(|| format!("`{}` is not in the event catalog", event.kind))
        .and_then(|spec| {
            match (spec.audience, event.tenant) {
                (Audience::Tenant, None) => Err(format!("{} needs a tenant", spec.name)),
                _ => Ok(()),
            }?;
            spec.check(&event.data)
        });
    if let Err(why) = verdict {
        debug_assert!(false, "{why}");
        tracing::error!(kind = event.kind, reason = %why, "Event does not match the catalog.");
    }
}

/// An event as receivers get it (the webhook body, a feed item): the envelope of the
/// catalog document with the type's `data`.
pub fn envelope(row: &event::Model) -> Value {
    json!({
        "id": row.id,
        "type": row.event_type,
        "version": catalog::spec(&row.event_type).map_or(1, |s| s.version),
        "timestamp": row.occurred_at,
        "tenant_id": row.tenant_id,
        "data": row.payload,
    })
}

/// One page of the feed.
#[derive(Debug)]
pub struct FeedPage {
    pub events: Vec<event::Model>,
    /// The cursor to ask after next time: the last event's `seq`, or the one given.
    pub cursor: i64,
    pub has_more: bool,
}

/// Who reads the feed: a tenant (its own events), or the operator (its own events, or a
/// tenant's).
#[derive(Debug, Clone, Copy)]
pub enum Reader {
    Tenant(TenantId),
    Operator,
}

/// Events of `reader` after `after`, oldest first, of `types` (empty: all), at most
/// `first`, no older than `retention` before `now`.
pub async fn feed<C: ConnectionTrait>(
    conn: &C,
    reader: Reader,
    query: FeedQuery<'_>,
) -> Result<FeedPage, DbErr> {
    let mut events = store::page(conn, reader, &query).await?;
    let has_more = events.len() > query.first as usize;
    events.truncate(query.first as usize);
    let cursor = events.last().map_or(query.after, |e| e.seq);
    Ok(FeedPage {
        events,
        cursor,
        has_more,
    })
}

/// What a feed read asks for.
#[derive(Debug)]
pub struct FeedQuery<'a> {
    pub after: i64,
    pub types: &'a [String],
    pub first: u32,
    pub not_before: DateTime<Utc>,
}
