//! An allocation's utilization minute by minute, over all its GPUs or per GPU, from its
//! usage buckets: what the portal's live charts show.

use std::collections::BTreeMap;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use neocloud_metering::usage::{self, SampledMinute};
use neocloud_schema::entity::allocation;
use sea_orm::DatabaseConnection;

use crate::error::{ApiError, ApiResult};

/// The longest window one read covers: a day of minutes.
pub const MAX_MINUTES: i64 = 1440;

/// An allocation's minutes with samples over one window, per device: read once for the
/// allocation's chart and all its GPUs'.
#[derive(Debug)]
pub struct Recent(BTreeMap<String, Vec<SampledMinute>>);

impl Recent {
    /// Over all its devices.
    pub fn all(&self) -> Vec<SampledMinute> {
        usage::summed(self.0.values())
    }

    /// Of one device (a GPU's or MIG slice's UUID).
    pub fn of(&self, device: &str) -> Vec<SampledMinute> {
        self.0.get(device).cloned().unwrap_or_default()
    }
}

/// The minutes with samples among the last `minutes` of the allocation's life (up to now,
/// or to its end), oldest first, per device. The caller has already been allowed to see
/// `a`.
pub async fn recent(
    db: &DatabaseConnection,
    a: &allocation::Model,
    minutes: i64,
    now: DateTime<Utc>,
) -> ApiResult<Recent> {
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
    let by_device =
        usage::sampled_minutes_by_device(db, a.tenant_id, a.id.into(), (from, to)).await?;
    Ok(Recent(by_device))
}
