//! An allocation's utilization minute by minute, over all its GPUs or per GPU, from its
//! usage buckets: what the portal's live charts show.

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use neocloud_metering::usage::{self, SampledMinute};
use neocloud_schema::entity::allocation;
use sea_orm::DatabaseConnection;

use crate::error::{ApiError, ApiResult};

/// The longest window one read covers: a day of minutes.
pub const MAX_MINUTES: i64 = 1440;

/// The minutes with samples among the last `minutes` of the allocation's life (up to now,
/// or to its end), oldest first: of all its devices, or of `device` alone. The caller has
/// already been allowed to see `a`.
pub async fn recent(
    db: &DatabaseConnection,
    a: &allocation::Model,
    device: Option<&str>,
    minutes: i64,
    now: DateTime<Utc>,
) -> ApiResult<Vec<SampledMinute>> {
    if !(1..=MAX_MINUTES).contains(&minutes) {
        return Err(ApiError::invalid(
            "minutes",
            format!("1 to {MAX_MINUTES} minutes"),
        ));
    }
    let last = a.ended_at.unwrap_or(now).min(now);
    // The window ends after the last minute begun, so that minute's bucket is in it.
    let to = last.duration_trunc(TimeDelta::minutes(1)).unwrap_or(last) + TimeDelta::minutes(1);
    let from = (to - TimeDelta::minutes(minutes)).max(
        a.started_at
            .duration_trunc(TimeDelta::minutes(1))
            .unwrap_or(a.started_at),
    );
    neocloud_metering::ingest::settle(db).await?;
    Ok(usage::sampled_minutes(db, a.tenant_id, a.id.into(), device, (from, to)).await?)
}
