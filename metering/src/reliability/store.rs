//! The reliability pass: reads every node's covered hours, failed GPU time, faults and
//! the allocations faults hit over its window with one grouped query each, and writes
//! one `node_reliability` row per node. Recomputing is idempotent, so replicas may both
//! run it; the scheduler's fleet is reloaded only when a score changed.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use neocloud_schema::entity::{
    allocation, allocation_gpu, fleet_epoch, gpu, gpu_event, gpu_health_interval, node,
    node_coverage_hour, node_reliability,
};
use neocloud_schema::ids::NodeId;
use neocloud_schema::vocabulary::{GpuHealth, NodeState};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect, Set};
use uuid::Uuid;

use super::{Figures, WINDOW_DAYS, Window, score_bp, window, window_end};
use crate::health;

/// What the pass counts per node besides its coverage.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    failed_gpu_seconds: i64,
    faults: i32,
    degradations: i32,
    preemptions_by_fault: i32,
}

/// Recomputes every node's reliability as of `now`; returns how many scores changed.
pub async fn refresh<C: ConnectionTrait>(conn: &C, now: DateTime<Utc>) -> Result<usize, DbErr> {
    let end = window_end(now);
    let earliest = end - TimeDelta::days(WINDOW_DAYS);
    // A retired node's score stays as it was when it left the fleet.
    let nodes: Vec<NodeId> = node::Entity::find()
        .select_only()
        .column(node::Column::Id)
        .filter(node::Column::State.ne(NodeState::Retired))
        .into_tuple()
        .all(conn)
        .await?;
    let first = first_reports(conn).await?;
    let windows: HashMap<NodeId, Window> = nodes
        .iter()
        .filter_map(|n| Some((*n, window(now, first.get(n).copied())?)))
        .collect();
    // The hour the window starts in is counted whole: bounded by the window below.
    let first_hour = earliest
        .duration_trunc(TimeDelta::hours(1))
        .unwrap_or(earliest);
    let covered = covered_seconds(conn, first_hour, end).await?;
    let gpus = gpus_by_id(conn).await?;
    let mut counts: HashMap<NodeId, Counts> = HashMap::new();
    count_failed_time(conn, &gpus, &windows, &mut counts).await?;
    count_events(conn, earliest, end, &mut counts).await?;
    let before: HashMap<NodeId, Option<i32>> = node_reliability::Entity::find()
        .select_only()
        .column(node_reliability::Column::NodeId)
        .column(node_reliability::Column::ScoreBp)
        .into_tuple()
        .all(conn)
        .await?
        .into_iter()
        .collect();
    let mut gpu_counts: HashMap<NodeId, i64> = HashMap::new();
    for node in gpus.values() {
        *gpu_counts.entry(*node).or_default() += 1;
    }
    // In node order, so that two replicas' passes lock rows in the same order.
    let mut windows: Vec<(NodeId, Window)> = windows.into_iter().collect();
    windows.sort_by_key(|(node, _)| Uuid::from(*node));
    let rows: Vec<node_reliability::ActiveModel> = windows
        .iter()
        .map(|(node, w)| {
            let c = counts.get(node).copied().unwrap_or_default();
            let gpu_count = gpu_counts.get(node).copied().unwrap_or(0);
            let covered = covered.get(node).copied().unwrap_or(0);
            row(*node, *w, covered, gpu_count, c, now)
        })
        .collect();
    let changed = rows
        .iter()
        .filter(|r| before.get(r.node_id.as_ref()) != Some(r.score_bp.as_ref()))
        .count();
    save(conn, rows).await?;
    if changed > 0 {
        fleet_epoch::bump(conn).await?;
    }
    Ok(changed)
}

fn row(
    node: NodeId,
    w: Window,
    covered: i64,
    gpu_count: i64,
    c: Counts,
    now: DateTime<Utc>,
) -> node_reliability::ActiveModel {
    let score = score_bp(Figures {
        window_seconds: w.seconds(),
        covered_seconds: covered,
        gpu_count,
        failed_gpu_seconds: c.failed_gpu_seconds,
    });
    node_reliability::ActiveModel {
        node_id: Set(node),
        window_start: Set(w.start),
        window_end: Set(w.end),
        covered_seconds: Set(covered.min(w.seconds())),
        gpu_count: Set(i32::try_from(gpu_count).unwrap_or(i32::MAX)),
        failed_gpu_seconds: Set(c.failed_gpu_seconds),
        faults: Set(c.faults),
        degradations: Set(c.degradations),
        preemptions_by_fault: Set(c.preemptions_by_fault),
        score_bp: Set(score),
        computed_at: Set(now),
    }
}

async fn save<C: ConnectionTrait>(
    conn: &C,
    rows: Vec<node_reliability::ActiveModel>,
) -> Result<(), DbErr> {
    use node_reliability::Column as R;
    let conflict = OnConflict::column(R::NodeId)
        .update_columns([
            R::WindowStart,
            R::WindowEnd,
            R::CoveredSeconds,
            R::GpuCount,
            R::FailedGpuSeconds,
            R::Faults,
            R::Degradations,
            R::PreemptionsByFault,
            R::ScoreBp,
            R::ComputedAt,
        ])
        .to_owned();
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<_> = rows.by_ref().take(500).collect();
        node_reliability::Entity::insert_many(chunk)
            .on_conflict(conflict.clone())
            .exec_without_returning(conn)
            .await?;
    }
    Ok(())
}

async fn first_covered_hours<C: ConnectionTrait>(
    conn: &C,
) -> Result<HashMap<NodeId, DateTime<Utc>>, DbErr> {
    Ok(node_coverage_hour::Entity::find()
        .select_only()
        .column(node_coverage_hour::Column::NodeId)
        .column_as(node_coverage_hour::Column::HourStart.min(), "hour_start")
        .group_by(node_coverage_hour::Column::NodeId)
        .into_tuple::<(NodeId, DateTime<Utc>)>()
        .all(conn)
        .await?
        .into_iter()
        .collect())
}

/// Each covered node's first covered hour and its seconds.
async fn first_reports<C: ConnectionTrait>(
    conn: &C,
) -> Result<HashMap<NodeId, (DateTime<Utc>, i64)>, DbErr> {
    let hours = first_covered_hours(conn).await?;
    let distinct: HashSet<DateTime<Utc>> = hours.values().copied().collect();
    let rows: Vec<(NodeId, DateTime<Utc>, i64)> = node_coverage_hour::Entity::find()
        .select_only()
        .column(node_coverage_hour::Column::NodeId)
        .column(node_coverage_hour::Column::HourStart)
        .column(node_coverage_hour::Column::Seconds)
        .filter(node_coverage_hour::Column::HourStart.is_in(distinct))
        .into_tuple()
        .all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .filter(|(node, hour, _)| hours.get(node) == Some(hour))
        .map(|(node, hour, seconds)| (node, (hour, seconds)))
        .collect())
}

/// Seconds covered per node in the hours starting in `[from, to)`.
async fn covered_seconds<C: ConnectionTrait>(
    conn: &C,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<HashMap<NodeId, i64>, DbErr> {
    Ok(node_coverage_hour::Entity::find()
        .select_only()
        .column(node_coverage_hour::Column::NodeId)
        // SUM of BIGINT is NUMERIC on PostgreSQL: back to BIGINT (a window's seconds fit).
        .column_as(Expr::cust("CAST(SUM(seconds) AS BIGINT)"), "seconds")
        .filter(node_coverage_hour::Column::HourStart.gte(from))
        .filter(node_coverage_hour::Column::HourStart.lt(to))
        .group_by(node_coverage_hour::Column::NodeId)
        .into_tuple::<(NodeId, i64)>()
        .all(conn)
        .await?
        .into_iter()
        .collect())
}

/// Every GPU's node.
async fn gpus_by_id<C: ConnectionTrait>(conn: &C) -> Result<HashMap<Uuid, NodeId>, DbErr> {
    Ok(gpu::Entity::find()
        .select_only()
        .column(gpu::Column::Id)
        .column(gpu::Column::NodeId)
        .into_tuple::<(Uuid, NodeId)>()
        .all(conn)
        .await?
        .into_iter()
        .collect())
}

/// Failed GPU-seconds inside each node's window, and the allocations holding a GPU when
/// it failed inside the window.
async fn count_failed_time<C: ConnectionTrait>(
    conn: &C,
    gpus: &HashMap<Uuid, NodeId>,
    windows: &HashMap<NodeId, Window>,
    counts: &mut HashMap<NodeId, Counts>,
) -> Result<(), DbErr> {
    use sea_orm::sea_query::ExprTrait as _;
    let Some(earliest) = windows.values().map(|w| w.start).min() else {
        return Ok(());
    };
    let end = windows.values().map(|w| w.end).max().unwrap_or(earliest);
    let intervals = gpu_health_interval::Entity::find()
        .filter(gpu_health_interval::Column::Health.eq(GpuHealth::Failed.as_str()))
        .filter(gpu_health_interval::Column::StartedAt.lt(end))
        .filter(
            gpu_health_interval::Column::EndedAt
                .is_null()
                .or(gpu_health_interval::Column::EndedAt.gt(earliest)),
        )
        .all(conn)
        .await?;
    let mut failures: Vec<(Uuid, NodeId, DateTime<Utc>)> = Vec::new();
    for i in &intervals {
        let gpu_id = Uuid::from(i.gpu_id);
        let Some(node) = gpus.get(&gpu_id) else {
            continue;
        };
        let Some(w) = windows.get(node) else {
            continue;
        };
        counts.entry(*node).or_default().failed_gpu_seconds += w.overlap(i.started_at, i.ended_at);
        if i.started_at >= w.start && i.started_at < w.end {
            failures.push((gpu_id, *node, i.started_at));
        }
    }
    for node in hit_allocations(conn, &failures).await? {
        counts.entry(node).or_default().preemptions_by_fault += 1;
    }
    Ok(())
}

/// For each allocation live on a GPU when it failed, its node (once per allocation and
/// node).
async fn hit_allocations<C: ConnectionTrait>(
    conn: &C,
    failures: &[(Uuid, NodeId, DateTime<Utc>)],
) -> Result<Vec<NodeId>, DbErr> {
    if failures.is_empty() {
        return Ok(Vec::new());
    }
    let held: Vec<(Uuid, Uuid)> = allocation_gpu::Entity::find()
        .select_only()
        .column(allocation_gpu::Column::AllocationId)
        .column(allocation_gpu::Column::GpuId)
        .filter(allocation_gpu::Column::GpuId.is_in(failures.iter().map(|f| f.0)))
        .into_tuple()
        .all(conn)
        .await?;
    let allocations: HashMap<Uuid, allocation::Model> = allocation::Entity::find()
        .filter(allocation::Column::Id.is_in(held.iter().map(|h| h.0)))
        .all(conn)
        .await?
        .into_iter()
        .map(|a| (Uuid::from(a.id), a))
        .collect();
    let mut hit: HashSet<(Uuid, NodeId)> = HashSet::new();
    for (gpu_id, node, at) in failures {
        for (allocation_id, _) in held.iter().filter(|h| h.1 == *gpu_id) {
            let live = allocations
                .get(allocation_id)
                .is_some_and(|a| a.started_at <= *at && a.ended_at.is_none_or(|e| e > *at));
            if live {
                hit.insert((*allocation_id, *node));
            }
        }
    }
    Ok(hit.into_iter().map(|(_, node)| node).collect())
}

/// Faults and degradations per node in `[from, to)`, from its agents' XID and ECC events
/// (an agent's events come with its batches, so none precede a node's first covered hour).
async fn count_events<C: ConnectionTrait>(
    conn: &C,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    counts: &mut HashMap<NodeId, Counts>,
) -> Result<(), DbErr> {
    let rows: Vec<(NodeId, String, i32, i64)> = gpu_event::Entity::find()
        .select_only()
        .column(gpu_event::Column::NodeId)
        .column(gpu_event::Column::Kind)
        .column(gpu_event::Column::Code)
        .column_as(gpu_event::Column::Id.count(), "events")
        .filter(gpu_event::Column::At.gte(from))
        .filter(gpu_event::Column::At.lt(to))
        .group_by(gpu_event::Column::NodeId)
        .group_by(gpu_event::Column::Kind)
        .group_by(gpu_event::Column::Code)
        .into_tuple()
        .all(conn)
        .await?;
    for (node, kind, code, events) in rows {
        let events = i32::try_from(events).unwrap_or(i32::MAX);
        let c = counts.entry(node).or_default();
        match health::stored_effect(&kind, code) {
            Some(GpuHealth::Failed) => c.faults = c.faults.saturating_add(events),
            Some(GpuHealth::Degraded) => c.degradations = c.degradations.saturating_add(events),
            _ => {}
        }
    }
    Ok(())
}
