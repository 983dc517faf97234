//! The `events` and `event_log_head` tables: the only module that writes them. Every read
//! names its reader: a tenant's own events, or the operator's (tenant null).

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{event, event_log_head};
use neocloud_schema::ids::{EventId, TenantId};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Select, Set,
};

use super::{FeedQuery, NewEvent, Reader};

/// The head row's key.
const HEAD: i32 = 1;

/// Takes the next sequence number. The update locks the head row until the transaction
/// ends (PostgreSQL; SQLite's write transaction holds the whole database), so numbers are
/// handed out in commit order.
async fn next_seq<C: ConnectionTrait>(conn: &C) -> Result<i64, DbErr> {
    event_log_head::Entity::update_many()
        .col_expr(
            event_log_head::Column::Last,
            Expr::col(event_log_head::Column::Last).add(1),
        )
        .filter(event_log_head::Column::Id.eq(HEAD))
        .exec(conn)
        .await?;
    event_log_head::Entity::find_by_id(HEAD)
        .one(conn)
        .await?
        .map(|head| head.last)
        .ok_or_else(|| DbErr::RecordNotFound("event_log_head".into()))
}

pub async fn insert<C: ConnectionTrait>(conn: &C, event: &NewEvent) -> Result<event::Model, DbErr> {
    let seq = next_seq(conn).await?;
    event::ActiveModel {
        id: Set(EventId::new()),
        seq: Set(seq),
        event_type: Set(event.kind.to_owned()),
        tenant_id: Set(event.tenant),
        occurred_at: Set(event.occurred_at),
        payload: Set(event.data.clone()),
    }
    .insert(conn)
    .await
}

fn of_reader(reader: Reader) -> Select<event::Entity> {
    match reader {
        Reader::Tenant(tenant) => event::Entity::find().filter(event::Column::TenantId.eq(tenant)),
        Reader::Operator => event::Entity::find().filter(event::Column::TenantId.is_null()),
    }
}

/// One more than a page of `reader`'s events after the cursor (the extra one says there
/// are more).
pub async fn page<C: ConnectionTrait>(
    conn: &C,
    reader: Reader,
    query: &FeedQuery<'_>,
) -> Result<Vec<event::Model>, DbErr> {
    let mut select = of_reader(reader)
        .filter(event::Column::Seq.gt(query.after))
        .filter(event::Column::OccurredAt.gte(query.not_before));
    if !query.types.is_empty() {
        select = select.filter(event::Column::EventType.is_in(query.types.iter().cloned()));
    }
    select
        .order_by_asc(event::Column::Seq)
        .limit(u64::from(query.first) + 1)
        .all(conn)
        .await
}

/// Events of a tenant (or the operator's) from `since` on, oldest first, at most `limit`.
pub async fn since<C: ConnectionTrait>(
    conn: &C,
    tenant: Option<TenantId>,
    since: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<event::Model>, DbErr> {
    let reader = tenant.map_or(Reader::Operator, Reader::Tenant);
    of_reader(reader)
        .filter(event::Column::OccurredAt.gte(since))
        .order_by_asc(event::Column::Seq)
        .limit(limit)
        .all(conn)
        .await
}

/// Every event of any reader after `after`, oldest first (an operator endpoint's
/// redelivery takes tenants' events too).
pub async fn all_since<C: ConnectionTrait>(
    conn: &C,
    since: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<event::Model>, DbErr> {
    event::Entity::find()
        .filter(event::Column::OccurredAt.gte(since))
        .order_by_asc(event::Column::Seq)
        .limit(limit)
        .all(conn)
        .await
}

pub async fn by_ids<C: ConnectionTrait>(
    conn: &C,
    ids: Vec<EventId>,
) -> Result<Vec<event::Model>, DbErr> {
    event::Entity::find()
        .filter(event::Column::Id.is_in(ids))
        .all(conn)
        .await
}

/// The ids of events that occurred before `before`, oldest first, at most `limit`.
pub async fn older_than<C: ConnectionTrait>(
    conn: &C,
    before: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<EventId>, DbErr> {
    event::Entity::find()
        .select_only()
        .column(event::Column::Id)
        .filter(event::Column::OccurredAt.lt(before))
        .order_by_asc(event::Column::Seq)
        .limit(limit)
        .into_tuple()
        .all(conn)
        .await
}

pub async fn delete<C: ConnectionTrait>(conn: &C, ids: Vec<EventId>) -> Result<u64, DbErr> {
    event::Entity::delete_many()
        .filter(event::Column::Id.is_in(ids))
        .exec(conn)
        .await
        .map(|done| done.rows_affected)
}

/// Erasure: replaces the payloads of the tenant's events; events changed.
pub async fn erase<C: ConnectionTrait>(conn: &C, tenant: TenantId) -> Result<u64, DbErr> {
    let changed = event::Entity::update_many()
        .col_expr(
            event::Column::Payload,
            Expr::value(serde_json::json!({"erased": true})),
        )
        .filter(event::Column::TenantId.eq(tenant))
        .exec(conn)
        .await?;
    Ok(changed.rows_affected)
}
