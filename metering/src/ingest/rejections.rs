//! Messages a transport delivered that can never be ingested (`ingest_rejections`): set
//! aside with the reason and a bounded copy of the payload, so one bad message never
//! stops the stream behind it and operators see what was refused (`ingestHealth`); kept
//! as long as events (`events.retention_days`).

use chrono::{DateTime, Utc};
use neocloud_schema::entity::ingest_rejection;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};
use uuid::Uuid;

use crate::error::MeteringError;

/// The most of a rejected payload that is kept.
pub const PAYLOAD_KEPT: usize = 64 * 1024;
/// The longest reason kept, in characters.
const REASON_KEPT: usize = 1024;

/// A message that will never be ingested, and why.
#[derive(Debug, Clone)]
pub struct Rejection<'a> {
    pub transport: &'a str,
    pub subject: &'a str,
    pub message_id: Option<&'a str>,
    pub node_id: Option<Uuid>,
    pub reason: &'a str,
    pub payload: &'a [u8],
}

/// Records `rejection` as of `now`.
pub async fn record<C: ConnectionTrait>(
    conn: &C,
    rejection: &Rejection<'_>,
    now: DateTime<Utc>,
) -> Result<(), MeteringError> {
    let kept = &rejection.payload[..rejection.payload.len().min(PAYLOAD_KEPT)];
    ingest_rejection::ActiveModel {
        id: Set(Uuid::now_v7()),
        transport: Set(rejection.transport.to_owned()),
        subject: Set(rejection.subject.chars().take(REASON_KEPT).collect()),
        message_id: Set(rejection
            .message_id
            .map(|m| m.chars().take(REASON_KEPT).collect())),
        node_id: Set(rejection.node_id),
        reason: Set(rejection.reason.chars().take(REASON_KEPT).collect()),
        payload: Set(kept.to_vec()),
        rejected_at: Set(now),
    }
    .insert(conn)
    .await?;
    Ok(())
}

/// The newest `limit` rejections, newest first.
pub async fn newest<C: ConnectionTrait>(
    conn: &C,
    limit: u64,
) -> Result<Vec<ingest_rejection::Model>, MeteringError> {
    Ok(ingest_rejection::Entity::find()
        .order_by_desc(ingest_rejection::Column::RejectedAt)
        .order_by_desc(ingest_rejection::Column::Id)
        .limit(limit)
        .all(conn)
        .await?)
}

/// Deletes the rejections recorded before `before`; how many.
pub async fn prune<C: ConnectionTrait>(
    conn: &C,
    before: DateTime<Utc>,
) -> Result<u64, MeteringError> {
    let deleted = ingest_rejection::Entity::delete_many()
        .filter(ingest_rejection::Column::RejectedAt.lt(before))
        .exec(conn)
        .await?;
    Ok(deleted.rows_affected)
}
