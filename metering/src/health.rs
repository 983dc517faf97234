//! GPU health from XID and ECC events (`shared/reference/xid.md`): application errors
//! change nothing; contained or correctable faults mark a GPU degraded; faults that lose
//! data or the device mark it failed, and failed time becomes SLA credit.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{fleet_epoch, gpu, gpu_health_interval};
use neocloud_schema::ingest::HealthEventKind;
use neocloud_schema::vocabulary::GpuHealth;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set,
};
use uuid::Uuid;

/// What an event does to its GPU's health (`None`: nothing).
pub fn effect(kind: HealthEventKind, code: u32) -> Option<GpuHealth> {
    match kind {
        HealthEventKind::EccDoubleBit => Some(GpuHealth::Failed),
        HealthEventKind::EccSingleBit => None,
        HealthEventKind::Xid => match code {
            48 | 64 | 74 | 79 | 95 | 119 | 120 => Some(GpuHealth::Failed),
            63 | 92 | 94 => Some(GpuHealth::Degraded),
            _ => None,
        },
    }
}

/// XIDs that affect the whole GPU even when reported by one MIG instance.
pub fn device_wide(kind: HealthEventKind, code: u32) -> bool {
    matches!(kind, HealthEventKind::EccDoubleBit)
        || (kind == HealthEventKind::Xid && matches!(code, 48 | 79 | 95 | 119 | 120))
}

fn rank(health: GpuHealth) -> u8 {
    match health {
        GpuHealth::Ok => 0,
        GpuHealth::Degraded => 1,
        GpuHealth::Failed => 2,
    }
}

/// Moves a GPU to `health` at `at` if that is worse than where it is, recording the
/// interval. Returns whether anything changed (a fleet change: the epoch is bumped).
pub async fn worsen<C: ConnectionTrait>(
    conn: &C,
    gpu: &gpu::Model,
    health: GpuHealth,
    at: DateTime<Utc>,
    cause: &str,
) -> Result<bool, DbErr> {
    if rank(health) <= rank(gpu.health) {
        return Ok(false);
    }
    transition(conn, gpu, health, at, cause).await?;
    Ok(true)
}

/// Moves a GPU to `health` at `at` in either direction (an operator's repair brings a
/// GPU back to `ok`): closes the open interval, opens one for a non-ok state, and bumps
/// the fleet epoch so the scheduler sees it at once.
pub async fn transition<C: ConnectionTrait>(
    conn: &C,
    gpu: &gpu::Model,
    health: GpuHealth,
    at: DateTime<Utc>,
    cause: &str,
) -> Result<gpu::Model, DbErr> {
    gpu_health_interval::Entity::update_many()
        .col_expr(
            gpu_health_interval::Column::EndedAt,
            sea_orm::sea_query::Expr::value(at),
        )
        .filter(gpu_health_interval::Column::GpuId.eq(gpu.id))
        .filter(gpu_health_interval::Column::EndedAt.is_null())
        .exec(conn)
        .await?;
    if health != GpuHealth::Ok {
        gpu_health_interval::ActiveModel {
            id: Set(Uuid::now_v7()),
            gpu_id: Set(gpu.id),
            health: Set(health.as_str().to_owned()),
            started_at: Set(at),
            ended_at: Set(None),
            cause: Set(cause.to_owned()),
        }
        .insert(conn)
        .await?;
    }
    let mut active: gpu::ActiveModel = gpu.clone().into();
    active.health = Set(health);
    active.health_changed_at = Set(at);
    let updated = active.update(conn).await?;
    fleet_epoch::bump(conn).await?;
    tracing::warn!(gpu = %gpu.uuid, health = health.as_str(), %cause, "GPU health changed.");
    Ok(updated)
}

/// Failed intervals of the given GPUs overlapping `[from, to)`.
pub async fn failed_intervals<C: ConnectionTrait>(
    conn: &C,
    gpu_ids: &[Uuid],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<gpu_health_interval::Model>, DbErr> {
    let rows = gpu_health_interval::Entity::find()
        .filter(gpu_health_interval::Column::GpuId.is_in(gpu_ids.iter().copied()))
        .filter(gpu_health_interval::Column::Health.eq(GpuHealth::Failed.as_str()))
        .filter(gpu_health_interval::Column::StartedAt.lt(to))
        .all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .filter(|r| r.ended_at.is_none_or(|end| end > from))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_xid_table_decides_health() {
        for code in [13, 31, 43, 45, 68, 109] {
            assert_eq!(effect(HealthEventKind::Xid, code), None, "xid {code}");
        }
        for code in [48, 64, 74, 79, 95, 119, 120] {
            assert_eq!(
                effect(HealthEventKind::Xid, code),
                Some(GpuHealth::Failed),
                "xid {code}"
            );
        }
        for code in [63, 92, 94] {
            assert_eq!(
                effect(HealthEventKind::Xid, code),
                Some(GpuHealth::Degraded),
                "xid {code}"
            );
        }
        assert_eq!(
            effect(HealthEventKind::EccDoubleBit, 0),
            Some(GpuHealth::Failed)
        );
    }

    #[test]
    fn only_device_wide_xids_reach_past_a_mig_instance() {
        assert!(device_wide(HealthEventKind::Xid, 79));
        assert!(!device_wide(HealthEventKind::Xid, 94));
        assert!(!device_wide(HealthEventKind::Xid, 13));
    }
}
