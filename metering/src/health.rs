//! GPU health from XID and ECC events (`shared/reference/xid.md`): application errors
//! change nothing; contained or correctable faults mark a GPU degraded; faults that lose
//! data or the device mark it failed, and failed time becomes SLA credit.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{
    allocation, allocation_gpu, audit_log, fleet_epoch, gpu, gpu_event, gpu_health_interval, node,
};
use serde_json::json;

use crate::events::{self, NewEvent};
use neocloud_schema::ingest::HealthEventKind;
use neocloud_schema::vocabulary::GpuHealth;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
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

/// How an event's kind is stored in `gpu_events.kind`.
pub fn stored_kind(kind: HealthEventKind) -> &'static str {
    match kind {
        HealthEventKind::Xid => "xid",
        HealthEventKind::EccSingleBit => "eccsinglebit",
        HealthEventKind::EccDoubleBit => "eccdoublebit",
    }
}

/// What a stored event (`gpu_events.kind`, `code`) did to its GPU's health.
pub fn stored_effect(kind: &str, code: i32) -> Option<GpuHealth> {
    effect(kind_of(kind)?, u32::try_from(code).ok()?)
}

fn kind_of(stored: &str) -> Option<HealthEventKind> {
    [
        HealthEventKind::Xid,
        HealthEventKind::EccSingleBit,
        HealthEventKind::EccDoubleBit,
    ]
    .into_iter()
    .find(|k| stored_kind(*k) == stored)
}

/// Most events one GPU's history lists (the newest).
pub const HISTORY_EVENTS: u64 = 100;

/// One XID/ECC event in a GPU's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRecord {
    pub at: DateTime<Utc>,
    pub kind: HealthEventKind,
    pub code: u32,
    /// What it did to the GPU's health (`None`: nothing).
    pub effect: Option<GpuHealth>,
}

/// One stretch of a GPU's health other than ok, clipped to the window asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthSpan {
    pub health: GpuHealth,
    pub from: DateTime<Utc>,
    /// `None`: still so at the end of the window.
    pub to: Option<DateTime<Utc>>,
    pub cause: String,
}

/// What happened to a GPU in `[from, to)` (`to`: `None` for still held): its events,
/// newest first (of one instant, the later reported first), and its stretches of degraded or failed health. `shared`: the GPU was
/// shared (a MIG slice or a fraction), so only the events that changed the GPU's health
/// are listed — an application error of a neighbour's process stays the neighbour's.
pub async fn history<C: ConnectionTrait>(
    conn: &C,
    gpu: &gpu::Model,
    from: DateTime<Utc>,
    to: Option<DateTime<Utc>>,
    shared: bool,
) -> Result<(Vec<EventRecord>, Vec<HealthSpan>), DbErr> {
    let mut events = gpu_event::Entity::find()
        .filter(gpu_event::Column::GpuUuid.eq(gpu.uuid.as_str()))
        .filter(gpu_event::Column::At.gte(from));
    let mut spans =
        gpu_health_interval::Entity::find().filter(gpu_health_interval::Column::GpuId.eq(gpu.id));
    if let Some(to) = to {
        events = events.filter(gpu_event::Column::At.lt(to));
        spans = spans.filter(gpu_health_interval::Column::StartedAt.lt(to));
    }
    let events = events
        .order_by_desc(gpu_event::Column::At)
        .order_by_desc(gpu_event::Column::Id)
        .limit(HISTORY_EVENTS * if shared { 10 } else { 1 })
        .all(conn)
        .await?
        .into_iter()
        .filter_map(|e| {
            let kind = kind_of(&e.kind)?;
            let code = u32::try_from(e.code).ok()?;
            let reached = e.device_uuid == gpu.uuid || device_wide(kind, code);
            let effect = effect(kind, code).filter(|_| reached);
            (!shared || effect.is_some()).then_some(EventRecord {
                at: e.at,
                kind,
                code,
                effect,
            })
        })
        .take(usize::try_from(HISTORY_EVENTS).unwrap_or(usize::MAX))
        .collect();
    let spans = spans
        .order_by_asc(gpu_health_interval::Column::StartedAt)
        .all(conn)
        .await?
        .into_iter()
        .filter(|i| i.ended_at.is_none_or(|end| end > from))
        .filter_map(|i| {
            let end = match (i.ended_at, to) {
                (Some(e), Some(t)) => Some(e.min(t)),
                (e, t) => e.or(t),
            };
            Some(HealthSpan {
                health: i.health.parse().ok()?,
                from: i.started_at.max(from),
                to: end,
                cause: i.cause,
            })
        })
        .collect();
    Ok((events, spans))
}

fn rank(health: GpuHealth) -> u8 {
    match health {
        GpuHealth::Ok => 0,
        GpuHealth::Degraded => 1,
        GpuHealth::Failed => 2,
    }
}

/// Moves a GPU to `health` at `at` if that is worse than where it is, recording the
/// interval and an audit entry by the system (the operator's console shows who changed
/// what: here, an event the GPU's agent reported). Returns whether anything changed (a
/// fleet change: the epoch is bumped).
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
    audit_log::ActiveModel {
        id: Set(neocloud_schema::ids::AuditId::new()),
        at: Set(at),
        actor_key_id: Set(None),
        actor_role: Set("system".to_owned()),
        tenant_id: Set(None),
        action: Set("gpu.health_event".to_owned()),
        object_type: Set("gpu".to_owned()),
        object_id: Set(gpu.uuid.clone()),
        before: Set(Some(serde_json::json!({"health": gpu.health}))),
        after: Set(Some(serde_json::json!({"health": health, "cause": cause}))),
        ..Default::default()
    }
    .insert(conn)
    .await?;
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
    tell(conn, gpu, health, at, cause).await?;
    Ok(updated)
}

/// `gpu.health_changed` for the operator and, when the GPU failed, `allocation.gpu_failed`
/// and `sla_credit.accrued` for every allocation on it (slices and fractions too).
async fn tell<C: ConnectionTrait>(
    conn: &C,
    gpu: &gpu::Model,
    health: GpuHealth,
    at: DateTime<Utc>,
    cause: &str,
) -> Result<(), DbErr> {
    let hostname = node::Entity::find_by_id(gpu.node_id)
        .one(conn)
        .await?
        .map(|n| n.hostname)
        .unwrap_or_default();
    let mut out = vec![NewEvent::operator(
        "gpu.health_changed",
        at,
        json!({"gpu_uuid": gpu.uuid, "hostname": hostname, "before": gpu.health.as_str(),
            "after": health.as_str(), "cause": cause, "at": at}),
    )];
    if health == GpuHealth::Failed && gpu.health != GpuHealth::Failed {
        for held in live_allocations_on(conn, gpu).await? {
            out.push(NewEvent::tenant(
                "allocation.gpu_failed",
                held.tenant_id,
                at,
                json!({"allocation_id": held.id, "gpu_uuid": gpu.uuid, "at": at, "cause": cause}),
            ));
            out.push(NewEvent::tenant(
                "sla_credit.accrued",
                held.tenant_id,
                at,
                json!({"allocation_id": held.id, "gpu_uuid": gpu.uuid, "from": at}),
            ));
        }
    }
    events::record_all(conn, out, at).await
}

/// Allocations holding `gpu` that have not ended.
async fn live_allocations_on<C: ConnectionTrait>(
    conn: &C,
    gpu: &gpu::Model,
) -> Result<Vec<allocation::Model>, DbErr> {
    let held: Vec<_> = allocation_gpu::Entity::find()
        .filter(allocation_gpu::Column::GpuId.eq(gpu.id))
        .all(conn)
        .await?
        .into_iter()
        .map(|h| h.allocation_id)
        .collect();
    allocation::Entity::find()
        .filter(allocation::Column::Id.is_in(held))
        .filter(allocation::Column::EndedAt.is_null())
        .order_by_asc(allocation::Column::Id)
        .all(conn)
        .await
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
