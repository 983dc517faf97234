//! Volumes' usage from their lifetime records (`volume_sizes`): each span at one size
//! bills `size × seconds held` GB-seconds (to the millisecond) within the segment, up to
//! now, as ALLOCATED on the volume's SKU (a line of GB-hours). A volume the storage never
//! created (`failed`) bills nothing; the minimum billable duration is for allocations and
//! does not apply.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{volume, volume_size};
use neocloud_schema::ids::TenantId;
use neocloud_schema::vocabulary::AccessState;
use rust_decimal::Decimal;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect};
use uuid::Uuid;

use crate::rating::period::AllocationUsage;

/// What one span of a volume used of `[from, to)`, up to `now`; none when it was not held
/// then.
pub fn span_usage(
    span: &volume_size::Model,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Option<AllocationUsage> {
    let start = span.started_at.max(from);
    let end = span.ended_at.map_or(to, |e| e.min(to)).min(now);
    if end <= start {
        return None;
    }
    let seconds = Decimal::new((end - start).num_milliseconds(), 3);
    let units = Decimal::from(span.size_gb);
    Some(AllocationUsage {
        allocation: span.volume_id.into(),
        sku: span.sku_id.into(),
        units,
        allocated_seconds: units * seconds,
        held: Some((start, end)),
        ..AllocationUsage::default()
    })
}

/// The tenant's volume usage in `[from, to)`, one entry per span held then.
pub(super) async fn usage<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Vec<AllocationUsage>, DbErr> {
    let spans = volume_size::Entity::find()
        .filter(volume_size::Column::TenantId.eq(tenant))
        .filter(volume_size::Column::StartedAt.lt(to.min(now)))
        .filter(
            sea_orm::Condition::any()
                .add(volume_size::Column::EndedAt.is_null())
                .add(volume_size::Column::EndedAt.gt(from)),
        )
        .all(conn)
        .await?;
    if spans.is_empty() {
        return Ok(Vec::new());
    }
    let failed: HashSet<Uuid> = volume::Entity::find()
        .select_only()
        .column(volume::Column::Id)
        .filter(volume::Column::TenantId.eq(tenant))
        .filter(volume::Column::AccessState.eq(AccessState::Failed))
        .filter(volume::Column::Id.is_in(spans.iter().map(|s| Uuid::from(s.volume_id))))
        .into_tuple()
        .all(conn)
        .await?
        .into_iter()
        .collect();
    Ok(spans
        .iter()
        .filter(|s| !failed.contains(&s.volume_id.into()))
        .filter_map(|s| span_usage(s, from, to, now))
        .collect())
}

/// What one volume held in `[from, to)` up to now, in GB-hours (nothing for a volume its
/// storage never created), as its invoice lines count it.
pub async fn gb_hours<C: ConnectionTrait>(
    conn: &C,
    volume: &volume::Model,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Decimal, DbErr> {
    if volume.access_state == AccessState::Failed {
        return Ok(Decimal::ZERO);
    }
    let seconds: Decimal = volume_size::Entity::find()
        .filter(volume_size::Column::VolumeId.eq(volume.id))
        .all(conn)
        .await?
        .iter()
        .filter_map(|s| span_usage(s, from, to, now))
        .map(|u| u.allocated_seconds)
        .sum();
    Ok(crate::rating::seconds_to_hours(seconds).normalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use neocloud_schema::ids::{SkuId, VolumeId};

    fn at(minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 10, minute, 0)
            .single()
            .expect("a time")
    }

    fn span(gb: i64, from: u32, to: Option<u32>) -> volume_size::Model {
        volume_size::Model {
            id: Uuid::nil(),
            volume_id: VolumeId::new(),
            tenant_id: TenantId::new(),
            sku_id: SkuId::new(),
            size_gb: gb,
            started_at: at(from),
            ended_at: to.map(at),
        }
    }

    #[test]
    fn a_span_bills_its_gb_times_the_seconds_held_within_the_segment_and_before_now() {
        let used = span_usage(&span(100, 10, Some(40)), at(0), at(30), at(59)).expect("held");
        assert_eq!(used.allocated_seconds, Decimal::from(100 * 20 * 60));
        assert_eq!(used.units, Decimal::from(100));
        assert_eq!(used.held, Some((at(10), at(30))));
        let open = span_usage(&span(3, 10, None), at(0), at(59), at(25)).expect("held");
        assert_eq!(open.allocated_seconds, Decimal::from(3 * 15 * 60));
        assert!(span_usage(&span(3, 40, None), at(0), at(30), at(59)).is_none());
        assert!(span_usage(&span(3, 10, Some(20)), at(20), at(30), at(59)).is_none());
    }
}
