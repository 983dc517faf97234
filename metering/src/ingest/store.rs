//! SQL of ingest: batch ids and their windows, energy cursors, usage buckets, events.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{
    allocation, allocation_gpu, gpu, gpu_event, ingest_anomaly, ingest_batch, ingest_pending,
    ingest_quarantine, node, node_coverage_hour, node_energy, usage_minute,
};
use neocloud_schema::ids::{SkuId, TenantId};
use neocloud_schema::ingest::{Batch, HealthEvent};
use neocloud_schema::vocabulary::NodeState;
use rust_decimal::Decimal;
use sea_orm::sea_query::{Expr, LockType, OnConflict};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DbBackend,
    DbErr, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, QueryTrait, Set,
    Statement, TransactionTrait,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::health;
use crate::usage::hours;

use super::aggregate::Anomaly;
use super::fold::{Candidate, Holding, Increment};
use crate::coverage::{RecordedWindow, window_masks};

/// Millijoules in a kilowatt-hour.
const MJ_PER_KWH: i64 = 3_600_000_000;

/// What ingest needs to know of a node: who it is, whether it is retired, its MIG mode and
/// its GPUs by index.
#[derive(Debug, Clone)]
pub(super) struct NodeFacts {
    pub id: Uuid,
    pub hostname: String,
    pub retired: bool,
    pub mig_enabled: bool,
    pub gpus: Vec<GpuFacts>,
}

#[derive(Debug, Clone)]
pub(super) struct GpuFacts {
    pub id: Uuid,
    pub uuid: String,
    pub model: String,
    pub memory_mib: i64,
}

/// A node's columns and one of its GPUs' (none for a node without GPUs).
type NodeGpuRow = (
    Uuid,
    String,
    NodeState,
    bool,
    Option<Uuid>,
    Option<String>,
    Option<String>,
    Option<i64>,
);

/// The nodes of `ids` with their GPUs, in one query of only the columns ingest reads.
pub(super) async fn nodes_with_gpus<C: ConnectionTrait>(
    conn: &C,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, NodeFacts>, DbErr> {
    read_nodes_with_gpus(conn, ids, false).await
}

/// `nodes_with_gpus`, the nodes' rows locked until commit (they serialize a node's health
/// events). PostgreSQL locks them in the read itself (`FOR NO KEY UPDATE`, in id order, so
/// concurrent groups cannot deadlock); SQLite first takes its write lock with a no-op
/// write, so the transaction never has to upgrade.
pub(super) async fn lock_nodes_with_gpus<C: ConnectionTrait>(
    conn: &C,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, NodeFacts>, DbErr> {
    if conn.get_database_backend() == DbBackend::Postgres {
        return read_nodes_with_gpus(conn, ids, true).await;
    }
    node::Entity::update_many()
        .col_expr(node::Column::Hostname, Expr::col(node::Column::Hostname))
        .filter(node::Column::Id.is_in(ids.iter().copied()))
        .exec(conn)
        .await?;
    read_nodes_with_gpus(conn, ids, false).await
}

async fn read_nodes_with_gpus<C: ConnectionTrait>(
    conn: &C,
    ids: &[Uuid],
    lock: bool,
) -> Result<HashMap<Uuid, NodeFacts>, DbErr> {
    let mut select = node::Entity::find()
        .select_only()
        .columns([
            node::Column::Id,
            node::Column::Hostname,
            node::Column::State,
            node::Column::MigEnabled,
        ])
        .columns([gpu::Column::Id, gpu::Column::Uuid, gpu::Column::Model])
        .column(gpu::Column::MemoryMib)
        .left_join(gpu::Entity)
        .filter(any_of(conn, node::Column::Id, ids.iter().copied()))
        .order_by_asc(node::Column::Id)
        .order_by_asc(gpu::Column::Index);
    if lock {
        QueryTrait::query(&mut select).lock_with_tables(LockType::NoKeyUpdate, [node::Entity]);
    }
    let rows: Vec<NodeGpuRow> = select.into_tuple().all(conn).await?;
    let mut out: HashMap<Uuid, NodeFacts> = HashMap::new();
    for (id, hostname, state, mig_enabled, gpu_id, uuid, model, memory_mib) in rows {
        let node = out.entry(id).or_insert_with(|| NodeFacts {
            id,
            hostname,
            retired: state == NodeState::Retired,
            mig_enabled,
            gpus: Vec::new(),
        });
        if let (Some(id), Some(uuid), Some(model), Some(memory_mib)) =
            (gpu_id, uuid, model, memory_mib)
        {
            node.gpus.push(GpuFacts {
                id,
                uuid,
                model,
                memory_mib,
            });
        }
    }
    Ok(out)
}

pub(super) async fn gpu_by_uuid<C: ConnectionTrait>(
    conn: &C,
    uuid: &str,
) -> Result<Option<gpu::Model>, DbErr> {
    gpu::Entity::find()
        .filter(gpu::Column::Uuid.eq(uuid))
        .one(conn)
        .await
}

/// A batch to record and journal: its new id, its node, the batch and its journal payload.
pub(crate) type Journaled<'a> = (Uuid, Uuid, &'a Batch, Vec<u8>);

/// Records the batches' ids; returns the ids of those recorded now. The unique batch
/// identity is the last word on duplicates: a batch recorded before (or by a concurrent
/// transaction that commits) is skipped, not an error.
pub(super) async fn record_batches<C: ConnectionTrait>(
    conn: &C,
    batches: &[Journaled<'_>],
    now: DateTime<Utc>,
) -> Result<HashSet<Uuid>, DbErr> {
    let mut fresh = HashSet::new();
    for chunk in batches.chunks(CHUNK) {
        let rows = chunk
            .iter()
            .map(|(id, node, batch, _)| batch_row(*id, *node, batch, now))
            .collect::<Result<Vec<_>, DbErr>>()?;
        let inserted = ingest_batch::Entity::insert_many(rows)
            .on_conflict(
                OnConflict::columns([
                    ingest_batch::Column::AgentId,
                    ingest_batch::Column::BootId,
                    ingest_batch::Column::Seq,
                ])
                .do_nothing()
                .to_owned(),
            )
            .exec_with_returning_keys(conn)
            .await;
        match inserted {
            Ok(ids) => fresh.extend(ids),
            Err(DbErr::RecordNotInserted) => {}
            Err(err) => return Err(err),
        }
    }
    Ok(fresh)
}

/// The row that records a batch. Validation bounds its sequence number and device count
/// to what the columns hold; a value beyond them is refused, never wrapped.
fn batch_row(
    id: Uuid,
    node: Uuid,
    batch: &Batch,
    now: DateTime<Utc>,
) -> Result<ingest_batch::ActiveModel, DbErr> {
    let seq = i64::try_from(batch.seq)
        .map_err(|_| DbErr::Custom(format!("sequence number {} is out of range", batch.seq)))?;
    let devices = i32::try_from(batch.devices.len()).map_err(|_| {
        DbErr::Custom(format!(
            "{} devices are more than a batch holds",
            batch.devices.len()
        ))
    })?;
    Ok(ingest_batch::ActiveModel {
        id: Set(id),
        node_id: Set(node.into()),
        agent_id: Set(batch.agent_id.clone()),
        boot_id: Set(batch.boot_id),
        seq: Set(seq),
        window_start: Set(batch.window.start),
        window_end: Set(batch.window.end),
        received_at: Set(now),
        devices: Set(devices),
        overlap_seconds: Set(0),
        device_uuids: Set(serde_json::to_string(
            &batch.devices.iter().map(|d| &d.uuid).collect::<Vec<_>>(),
        )
        .ok()),
    })
}

/// Per stream (agent, boot) of `fresh`, the highest sequence number recorded before them.
pub(super) async fn highest_seq_before<C: ConnectionTrait>(
    conn: &C,
    fresh: &[Journaled<'_>],
) -> Result<HashMap<(String, Uuid), u64>, DbErr> {
    let agents: HashSet<&str> = fresh
        .iter()
        .map(|(_, _, b, _)| b.agent_id.as_str())
        .collect();
    let boots: HashSet<Uuid> = fresh.iter().map(|(_, _, b, _)| b.boot_id).collect();
    let ids = fresh.iter().map(|(id, ..)| *id);
    let rows: Vec<(String, Uuid, i64)> = ingest_batch::Entity::find()
        .select_only()
        .column(ingest_batch::Column::AgentId)
        .column(ingest_batch::Column::BootId)
        .column_as(ingest_batch::Column::Seq.max(), "last_seq")
        .filter(ingest_batch::Column::AgentId.is_in(agents))
        .filter(ingest_batch::Column::BootId.is_in(boots))
        .filter(ingest_batch::Column::Id.is_not_in(ids))
        .group_by(ingest_batch::Column::AgentId)
        .group_by(ingest_batch::Column::BootId)
        .into_tuple()
        .all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(agent, boot, seq)| Some(((agent, boot), u64::try_from(seq).ok()?)))
        .collect())
}

/// Journals recorded batches for aggregation.
pub(super) async fn journal<C: ConnectionTrait>(
    conn: &C,
    batches: &[Journaled<'_>],
) -> Result<(), DbErr> {
    for chunk in batches.chunks(CHUNK) {
        ingest_pending::Entity::insert_many(chunk.iter().map(|(id, node, _, payload)| {
            ingest_pending::ActiveModel {
                batch_id: Set(*id),
                node_id: Set((*node).into()),
                payload: Set(payload.clone()),
            }
        }))
        .exec_without_returning(conn)
        .await?;
    }
    Ok(())
}

/// Makes this transaction the only aggregation pass until it ends: an advisory lock on
/// PostgreSQL (across all replicas); on SQLite a first write, which takes the database's
/// write lock before any read.
pub(super) async fn lock_aggregation<C: ConnectionTrait>(conn: &C) -> Result<(), DbErr> {
    match conn.get_database_backend() {
        DbBackend::Postgres => conn
            .execute_unprepared("SELECT pg_advisory_xact_lock(7363726361)")
            .await
            .map(|_| ()),
        _ => ingest_pending::Entity::delete_many()
            .filter(Expr::cust("1 = 0"))
            .exec(conn)
            .await
            .map(|_| ()),
    }
}

/// The oldest journal rows (up to `upto`), oldest first: ids are time-ordered (UUIDv7).
pub(super) async fn pending<C: ConnectionTrait>(
    conn: &C,
    limit: u64,
    upto: Option<Uuid>,
) -> Result<Vec<ingest_pending::Model>, DbErr> {
    let mut query = ingest_pending::Entity::find();
    if let Some(upto) = upto {
        query = query.filter(ingest_pending::Column::BatchId.lte(upto));
    }
    query
        .order_by_asc(ingest_pending::Column::BatchId)
        .limit(limit)
        .all(conn)
        .await
}

pub(super) async fn journal_backlog<C: ConnectionTrait>(conn: &C) -> Result<u64, DbErr> {
    ingest_pending::Entity::find().count(conn).await
}

/// The newest journal row's id, if any is waiting.
pub(super) async fn newest_pending<C: ConnectionTrait>(conn: &C) -> Result<Option<Uuid>, DbErr> {
    ingest_pending::Entity::find()
        .select_only()
        .column(ingest_pending::Column::BatchId)
        .order_by_desc(ingest_pending::Column::BatchId)
        .limit(1)
        .into_tuple()
        .one(conn)
        .await
}

pub(super) async fn delete_pending<C: ConnectionTrait>(
    conn: &C,
    ids: &[Uuid],
) -> Result<(), DbErr> {
    ingest_pending::Entity::delete_many()
        .filter(any_of(
            conn,
            ingest_pending::Column::BatchId,
            ids.iter().copied(),
        ))
        .exec(conn)
        .await
        .map(|_| ())
}

/// Moves a journal row aside with the reason (in the caller's transaction).
pub(super) async fn quarantine<C: ConnectionTrait>(
    conn: &C,
    row: &ingest_pending::Model,
    reason: &str,
) -> Result<(), DbErr> {
    tracing::error!(batch_id = %row.batch_id, reason, "A journaled batch was quarantined.");
    let now = Utc::now();
    ingest_quarantine::ActiveModel {
        batch_id: Set(row.batch_id),
        node_id: Set(row.node_id),
        payload: Set(row.payload.clone()),
        reason: Set(printable(reason)),
        quarantined_at: Set(now),
    }
    .insert(conn)
    .await?;
    let data = serde_json::json!({"batch_id": row.batch_id, "node_id": row.node_id, "reason": printable(reason)});
    let event = crate::events::NewEvent::operator("ingest.quarantined", now, data);
    crate::events::record(conn, event, now).await?;
    delete_pending(conn, &[row.batch_id]).await
}

/// Quarantines journal row `id` if it is still in the journal; false when it is not.
pub(super) async fn quarantine_pending(
    db: &DatabaseConnection,
    id: Uuid,
    reason: &str,
) -> Result<bool, DbErr> {
    let txn = db.begin().await?;
    lock_aggregation(&txn).await?;
    let Some(row) = pending_one(&txn, id).await? else {
        return Ok(false);
    };
    quarantine(&txn, &row, reason).await?;
    txn.commit().await?;
    Ok(true)
}

/// Journal row `id`, if it is still in the journal.
pub(super) async fn pending_one<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
) -> Result<Option<ingest_pending::Model>, DbErr> {
    ingest_pending::Entity::find_by_id(id).one(conn).await
}

/// The ids of the oldest journal rows (up to `upto`), oldest first.
pub(super) async fn pending_ids<C: ConnectionTrait>(
    conn: &C,
    limit: u64,
    upto: Option<Uuid>,
) -> Result<Vec<Uuid>, DbErr> {
    let mut query = ingest_pending::Entity::find()
        .select_only()
        .column(ingest_pending::Column::BatchId);
    if let Some(upto) = upto {
        query = query.filter(ingest_pending::Column::BatchId.lte(upto));
    }
    query
        .order_by_asc(ingest_pending::Column::BatchId)
        .limit(limit)
        .into_tuple()
        .all(conn)
        .await
}

/// A database's error text may quote the bad bytes it refused: keep it storable.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

pub(super) async fn record_anomalies<C: ConnectionTrait>(
    conn: &C,
    anomalies: &[&Anomaly],
) -> Result<(), DbErr> {
    let now = Utc::now();
    for chunk in anomalies.chunks(CHUNK) {
        let models = chunk.iter().map(|a| ingest_anomaly::ActiveModel {
            id: Set(Uuid::now_v7()),
            batch_id: Set(a.batch_id),
            node_id: Set(a.node_id.into()),
            kind: Set(a.kind.to_owned()),
            device: Set(a.device.clone()),
            detail: Set(a.detail.clone()),
            recorded_at: Set(now),
        });
        ingest_anomaly::Entity::insert_many(models)
            .exec_without_returning(conn)
            .await?;
    }
    Ok(())
}

/// The newest `limit` quarantined batches, newest first.
pub(super) async fn quarantined<C: ConnectionTrait>(
    conn: &C,
    limit: u64,
) -> Result<Vec<(Uuid, Uuid, String, DateTime<Utc>)>, DbErr> {
    ingest_quarantine::Entity::find()
        .select_only()
        .columns([
            ingest_quarantine::Column::BatchId,
            ingest_quarantine::Column::NodeId,
            ingest_quarantine::Column::Reason,
            ingest_quarantine::Column::QuarantinedAt,
        ])
        .order_by_desc(ingest_quarantine::Column::QuarantinedAt)
        .limit(limit)
        .into_tuple()
        .all(conn)
        .await
}

/// The newest `limit` anomalies, newest first.
pub(super) async fn anomalies<C: ConnectionTrait>(
    conn: &C,
    limit: u64,
) -> Result<Vec<ingest_anomaly::Model>, DbErr> {
    ingest_anomaly::Entity::find()
        .order_by_desc(ingest_anomaly::Column::RecordedAt)
        .order_by_desc(ingest_anomaly::Column::Id)
        .limit(limit)
        .all(conn)
        .await
}

/// Puts a quarantined batch back in the journal; false when it is not quarantined.
pub(super) async fn requeue<C: ConnectionTrait>(conn: &C, batch_id: Uuid) -> Result<bool, DbErr> {
    let Some(row) = ingest_quarantine::Entity::find_by_id(batch_id)
        .one(conn)
        .await?
    else {
        return Ok(false);
    };
    ingest_pending::ActiveModel {
        batch_id: Set(row.batch_id),
        node_id: Set(row.node_id),
        payload: Set(row.payload),
    }
    .insert(conn)
    .await?;
    ingest_quarantine::Entity::delete_by_id(batch_id)
        .exec(conn)
        .await?;
    Ok(true)
}

/// Notes on each batch how many of its device-seconds overlapped time already counted.
pub(super) async fn record_overlaps<C: ConnectionTrait>(
    conn: &C,
    overlaps: &[(Uuid, i64)],
) -> Result<(), DbErr> {
    for (id, seconds) in overlaps {
        ingest_batch::Entity::update_many()
            .col_expr(ingest_batch::Column::OverlapSeconds, Expr::value(*seconds))
            .filter(ingest_batch::Column::Id.eq(*id))
            .exec(conn)
            .await?;
    }
    Ok(())
}

/// (GPU, allocation, tenant, SKU, started, ended, MIG profile, milli-GPUs) of a holding.
type HoldingRow = (
    Uuid,
    Uuid,
    Uuid,
    Uuid,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
    Option<String>,
    Option<i32>,
);

/// Allocations holding each of `gpus` at any time in `[start, end)`, in one query of only
/// the columns attribution reads.
pub(super) async fn candidates<C: ConnectionTrait>(
    conn: &C,
    gpus: &[&GpuFacts],
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<HashMap<Uuid, Vec<Candidate>>, DbErr> {
    let rows: Vec<HoldingRow> = allocation_gpu::Entity::find()
        .select_only()
        .column(allocation_gpu::Column::GpuId)
        .columns([
            allocation::Column::Id,
            allocation::Column::TenantId,
            allocation::Column::SkuId,
            allocation::Column::StartedAt,
            allocation::Column::EndedAt,
            allocation::Column::MigProfile,
            allocation::Column::MilliGpu,
        ])
        .inner_join(allocation::Entity)
        .filter(any_of(
            conn,
            allocation_gpu::Column::GpuId,
            gpus.iter().map(|g| g.id),
        ))
        .filter(allocation::Column::StartedAt.lt(end))
        .filter(
            Condition::any()
                .add(allocation::Column::EndedAt.is_null())
                .add(allocation::Column::EndedAt.gt(start)),
        )
        .into_tuple()
        .all(conn)
        .await?;
    let mut out: HashMap<Uuid, Vec<Candidate>> = HashMap::new();
    for (gpu, allocation, tenant, sku, start, end, mig_profile, milli_gpu) in rows {
        let holding = match (mig_profile, milli_gpu) {
            (Some(profile), _) => Holding::Mig(profile),
            (None, Some(_)) => Holding::Fraction,
            (None, None) => Holding::Whole,
        };
        out.entry(gpu).or_default().push(Candidate {
            allocation,
            tenant: TenantId(tenant),
            sku,
            start,
            end,
            holding,
        });
    }
    for list in out.values_mut() {
        list.sort_by_key(|c| (c.start, c.allocation));
    }
    Ok(out)
}

/// `column IN ids`. On PostgreSQL one text parameter turned into a `uuid[]`: a statement
/// with thousands of parameters costs far more to send and plan than to run. SQLite binds
/// each id; callers' lists are bounded by an ingest group or an aggregation pass.
fn any_of(
    conn: &impl ConnectionTrait,
    column: impl ColumnTrait,
    ids: impl Iterator<Item = Uuid>,
) -> Expr {
    if conn.get_database_backend() == DbBackend::Postgres {
        let list = ids.map(|id| id.to_string()).collect::<Vec<_>>().join(",");
        Expr::cust_with_exprs(
            "$1 = ANY(string_to_array($2, ',')::uuid[])",
            [Expr::col(column.as_column_ref()), Expr::value(list)],
        )
    } else {
        column.is_in(ids)
    }
}

/// Rows per multi-row statement: far below both databases' bind-parameter limits.
const CHUNK: usize = 500;

/// (node, window start, window end, device UUIDs) of a recorded batch.
type WindowRow = (Uuid, DateTime<Utc>, DateTime<Utc>, Option<String>);

/// Aggregated batches of `nodes` whose windows overlap `[from, to)`, per node: found by
/// (node, window end), so an agent shipping in order finds none to read.
pub(super) async fn recorded_windows<C: ConnectionTrait>(
    conn: &C,
    nodes: &[Uuid],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<HashMap<Uuid, Vec<RecordedWindow>>, DbErr> {
    let rows: Vec<WindowRow> = ingest_batch::Entity::find()
        .select_only()
        .columns([
            ingest_batch::Column::NodeId,
            ingest_batch::Column::WindowStart,
            ingest_batch::Column::WindowEnd,
            ingest_batch::Column::DeviceUuids,
        ])
        .filter(any_of(conn, ingest_batch::Column::NodeId, nodes.iter().copied()))
        .filter(ingest_batch::Column::WindowStart.lt(to))
        .filter(ingest_batch::Column::WindowEnd.gt(from))
        // Only aggregated batches: journaled ones are not yet counted.
        .filter(Expr::cust(
            "NOT EXISTS (SELECT 1 FROM ingest_pending WHERE ingest_pending.batch_id = ingest_batches.id)",
        ))
        .into_tuple()
        .all(conn)
        .await?;
    let mut out: HashMap<Uuid, Vec<RecordedWindow>> = HashMap::new();
    for (node, start, end, devices) in rows {
        out.entry(node).or_default().push(RecordedWindow {
            masks: window_masks(start, end),
            // A list that does not parse covers every device: never count a second twice.
            devices: devices.and_then(|d| serde_json::from_str(&d).ok()),
        });
    }
    Ok(out)
}

/// A GPU's last cumulative energy reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct EnergyCursor {
    pub mj: i64,
    pub at: DateTime<Utc>,
}

/// A node's cursors, by device UUID.
pub(super) type Cursors = BTreeMap<String, EnergyCursor>;

/// The energy cursors of `nodes` (one row each).
pub(super) async fn energy_cursors<C: ConnectionTrait>(
    conn: &C,
    nodes: &[Uuid],
) -> Result<HashMap<Uuid, Cursors>, DbErr> {
    node_energy::Entity::find()
        .filter(any_of(
            conn,
            node_energy::Column::NodeId,
            nodes.iter().copied(),
        ))
        .all(conn)
        .await?
        .into_iter()
        .map(|row| {
            serde_json::from_str(&row.cursors)
                .map(|cursors| (row.node_id.into(), cursors))
                .map_err(|e| DbErr::Json(format!("energy cursors of node {}: {e}", row.node_id)))
        })
        .collect()
}

/// Energy since the device's previous reading, in kWh, and the new cursor to store (none
/// when the reading is not newer). A counter that went backwards was reset (driver
/// reload) and counts from zero; the first reading only sets the cursor.
pub(super) fn energy_delta(
    previous: Option<&EnergyCursor>,
    now_mj: u64,
    at: DateTime<Utc>,
) -> (Decimal, Option<EnergyCursor>) {
    // A reading beyond what storage holds (validation refuses one) counts as the largest.
    let now_mj = i64::try_from(now_mj).unwrap_or(i64::MAX);
    let delta = match previous {
        Some(p) if at <= p.at => return (Decimal::ZERO, None),
        Some(p) if now_mj >= p.mj => now_mj - p.mj,
        Some(_) => now_mj,
        None => 0,
    };
    (
        (Decimal::from(delta) / Decimal::from(MJ_PER_KWH)).round_dp(12),
        Some(EnergyCursor { mj: now_mj, at }),
    )
}

/// Writes the nodes' cursors, one row a node.
pub(super) async fn save_energy<C: ConnectionTrait>(
    conn: &C,
    rows: &[(Uuid, &Cursors)],
) -> Result<(), DbErr> {
    for chunk in rows.chunks(CHUNK) {
        let models = chunk
            .iter()
            .map(|(node, cursors)| {
                Ok(node_energy::ActiveModel {
                    node_id: Set((*node).into()),
                    cursors: Set(
                        serde_json::to_string(cursors).map_err(|e| DbErr::Json(e.to_string()))?
                    ),
                })
            })
            .collect::<Result<Vec<_>, DbErr>>()?;
        node_energy::Entity::insert_many(models)
            .on_conflict(
                OnConflict::column(node_energy::Column::NodeId)
                    .update_column(node_energy::Column::Cursors)
                    .to_owned(),
            )
            .exec_without_returning(conn)
            .await?;
    }
    Ok(())
}

pub(super) async fn record_event<C: ConnectionTrait>(
    conn: &C,
    node: Uuid,
    (device, gpu): (&str, &str),
    event: &HealthEvent,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    gpu_event::ActiveModel {
        id: Set(Uuid::now_v7()),
        node_id: Set(node.into()),
        device_uuid: Set(device.to_owned()),
        gpu_uuid: Set(Some(gpu.to_owned())),
        kind: Set(health::stored_kind(event.kind).to_owned()),
        // A code beyond the column's range is stored as its largest value.
        code: Set(i32::try_from(event.code).unwrap_or(i32::MAX)),
        at: Set(event.at),
        received_at: Set(now),
    }
    .insert(conn)
    .await
    .map(|_| ())
}

/// What `buckets` add to their allocations' hourly roll-ups.
fn hours_of(buckets: &Buckets) -> hours::Hours {
    let mut out = hours::Hours::new();
    for ((allocation, minute, _, _), inc) in buckets {
        let sums = hours::HourSums {
            tenant: inc.tenant,
            sku: inc.sku,
            active_seconds: inc.active_seconds,
            memory_gib_seconds: inc.memory_gib_seconds,
            energy_kwh: inc.energy_kwh,
            sampled_seconds: inc.seconds,
        };
        hours::add_minute(&mut out, *allocation, *minute, sums);
    }
    out
}

/// Adds summed increments to their minute buckets and to those minutes' hourly roll-ups
/// (in the caller's transaction); returns how many minute buckets were touched. On
/// PostgreSQL one upsert adds them in the database (`NUMERIC`, exact); elsewhere one read
/// of the touched buckets, then one upsert of their new totals (inside the aggregation
/// pass, which runs alone: SQLite has no exact decimal arithmetic).
pub(super) async fn add_increments<C: ConnectionTrait>(
    conn: &C,
    buckets: &Buckets,
) -> Result<usize, DbErr> {
    if buckets.is_empty() {
        return Ok(0);
    }
    hours::add(conn, &hours_of(buckets)).await?;
    if conn.get_database_backend() == DbBackend::Postgres {
        add_in_database(conn, buckets).await?;
        return Ok(buckets.len());
    }
    // SQLite has no exact decimal arithmetic: read the current totals, write the new ones.
    let existing = current_buckets(conn, buckets).await?;
    let rows: Vec<usage_minute::ActiveModel> = buckets
        .iter()
        .map(|(key, inc)| bucket_row(key, inc, existing.get(key)))
        .collect();
    let conflict = OnConflict::columns([
        usage_minute::Column::AllocationId,
        usage_minute::Column::MinuteStart,
        usage_minute::Column::DeviceUuid,
        usage_minute::Column::Label,
    ])
    .update_columns([
        usage_minute::Column::ActiveSeconds,
        usage_minute::Column::MemoryGibSeconds,
        usage_minute::Column::EnergyKwh,
        usage_minute::Column::SampledSeconds,
    ])
    .to_owned();
    let touched = rows.len();
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<_> = rows.by_ref().take(CHUNK).collect();
        usage_minute::Entity::insert_many(chunk)
            .on_conflict(conflict.clone())
            .exec_without_returning(conn)
            .await?;
    }
    Ok(touched)
}

/// Adds the seconds agents newly covered to their nodes' hours (`node_coverage_hours`).
pub(super) async fn add_coverage<C: ConnectionTrait>(
    conn: &C,
    coverage: &BTreeMap<(Uuid, DateTime<Utc>), i64>,
) -> Result<(), DbErr> {
    use sea_orm::sea_query::ExprTrait as _;
    let rows: Vec<node_coverage_hour::ActiveModel> = coverage
        .iter()
        .map(|((node, hour), seconds)| node_coverage_hour::ActiveModel {
            node_id: Set((*node).into()),
            hour_start: Set(*hour),
            seconds: Set(*seconds),
        })
        .collect();
    let conflict = OnConflict::columns([
        node_coverage_hour::Column::NodeId,
        node_coverage_hour::Column::HourStart,
    ])
    .value(
        node_coverage_hour::Column::Seconds,
        Expr::col((
            node_coverage_hour::Entity,
            node_coverage_hour::Column::Seconds,
        ))
        .add(Expr::cust("excluded.seconds")),
    )
    .to_owned();
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<_> = rows.by_ref().take(CHUNK).collect();
        node_coverage_hour::Entity::insert_many(chunk)
            .on_conflict(conflict.clone())
            .exec_without_returning(conn)
            .await?;
    }
    Ok(())
}

/// PostgreSQL: one upsert for all the buckets, the sums done in `NUMERIC` (exact). The rows
/// travel as eleven array parameters, not eleven parameters a row: a statement with
/// thousands of parameters costs far more to send and plan than to run.
async fn add_in_database<C: ConnectionTrait>(conn: &C, buckets: &Buckets) -> Result<(), DbErr> {
    let column = |f: &dyn Fn(&BucketKey, &Increment) -> Option<String>| {
        crate::pg::text_array(buckets.iter().map(|(key, inc)| f(key, inc)))
    };
    let values = [
        column(&|_, _| Some(Uuid::now_v7().to_string())),
        column(&|k, _| Some(k.1.to_rfc3339())),
        column(&|k, _| Some(k.2.clone())),
        column(&|k, _| Some(k.0.to_string())),
        column(&|_, i| i.tenant.map(|t| t.to_string())),
        column(&|_, i| i.sku.map(|s| s.to_string())),
        column(&|k, _| Some(k.3.clone())),
        column(&|_, i| Some(i.active_seconds.to_string())),
        column(&|_, i| Some(i.memory_gib_seconds.to_string())),
        column(&|_, i| Some(i.energy_kwh.to_string())),
        column(&|_, i| Some(i.seconds.to_string())),
    ];
    let sum = |c: &str| format!("{c} = usage_minutes.{c} + excluded.{c}");
    let sql = format!(
        "INSERT INTO usage_minutes (id, minute_start, device_uuid, allocation_id, tenant_id, \
         sku_id, label, active_seconds, memory_gib_seconds, energy_kwh, sampled_seconds) \
         SELECT * FROM unnest($1::text::uuid[], $2::text::timestamptz[], $3::text::text[], \
         $4::text::uuid[], $5::text::uuid[], $6::text::uuid[], $7::text::text[], \
         $8::text::numeric[], $9::text::numeric[], $10::text::numeric[], $11::text::bigint[]) \
         ON CONFLICT (allocation_id, minute_start, device_uuid, label) DO UPDATE SET {}, {}, {}, \
         sampled_seconds = usage_minutes.sampled_seconds + excluded.sampled_seconds",
        sum("active_seconds"),
        sum("memory_gib_seconds"),
        sum("energy_kwh"),
    );
    conn.execute_raw(Statement::from_sql_and_values(
        DbBackend::Postgres,
        sql,
        values.map(sea_orm::Value::from),
    ))
    .await
    .map(|_| ())
}

type BucketKey = (Uuid, DateTime<Utc>, String, String);

/// A pass's bucket increments, summed per bucket (allocation, minute, device, label) before
/// they are written; the label lives in the key.
pub(super) type Buckets = BTreeMap<BucketKey, Increment>;

/// Adds `inc` (of `device`) to its bucket in `buckets`.
pub(super) fn add_to(buckets: &mut Buckets, device: String, mut inc: Increment) {
    let key = (
        inc.allocation,
        inc.minute,
        device,
        std::mem::take(&mut inc.label),
    );
    match buckets.entry(key) {
        Entry::Occupied(mut bucket) => {
            let sum = bucket.get_mut();
            sum.active_seconds += inc.active_seconds;
            sum.memory_gib_seconds += inc.memory_gib_seconds;
            sum.energy_kwh += inc.energy_kwh;
            sum.seconds += inc.seconds;
        }
        Entry::Vacant(bucket) => {
            bucket.insert(inc);
        }
    }
}

/// The touched buckets as stored, by key.
async fn current_buckets<C: ConnectionTrait>(
    conn: &C,
    buckets: &Buckets,
) -> Result<HashMap<BucketKey, usage_minute::Model>, DbErr> {
    let allocations: BTreeSet<Uuid> = buckets.keys().map(|k| k.0).collect();
    let minutes: BTreeSet<DateTime<Utc>> = buckets.keys().map(|k| k.1).collect();
    let devices: BTreeSet<&str> = buckets.keys().map(|k| k.2.as_str()).collect();
    Ok(usage_minute::Entity::find()
        .filter(usage_minute::Column::AllocationId.is_in(allocations))
        .filter(usage_minute::Column::MinuteStart.is_in(minutes))
        .filter(usage_minute::Column::DeviceUuid.is_in(devices))
        .all(conn)
        .await?
        .into_iter()
        .map(|row| {
            (
                (
                    row.allocation_id.into(),
                    row.minute_start,
                    row.device_uuid.clone(),
                    row.label.clone(),
                ),
                row,
            )
        })
        .collect())
}

/// A bucket row holding `inc` added to `current` (or `inc` alone: a new bucket, or one
/// the database adds to).
fn bucket_row(
    key: &BucketKey,
    inc: &Increment,
    current: Option<&usage_minute::Model>,
) -> usage_minute::ActiveModel {
    let (active, memory, energy, seconds, id) = match current {
        Some(row) => (
            row.active_seconds.get() + inc.active_seconds,
            row.memory_gib_seconds.get() + inc.memory_gib_seconds,
            row.energy_kwh.get() + inc.energy_kwh,
            row.sampled_seconds + inc.seconds,
            row.id,
        ),
        None => (
            inc.active_seconds,
            inc.memory_gib_seconds,
            inc.energy_kwh,
            inc.seconds,
            Uuid::now_v7(),
        ),
    };
    usage_minute::ActiveModel {
        id: Set(id),
        minute_start: Set(key.1),
        device_uuid: Set(key.2.clone()),
        allocation_id: Set(key.0.into()),
        tenant_id: Set(inc.tenant),
        sku_id: Set(inc.sku.map(SkuId)),
        label: Set(key.3.clone()),
        active_seconds: Set(active.into()),
        memory_gib_seconds: Set(memory.into()),
        energy_kwh: Set(energy.into()),
        sampled_seconds: Set(seconds),
    }
}

/// (agent_id, boot_id, last seq, batches, newest window end, last received, overlapping
/// device-seconds) of a stream.
type StreamRow = (
    String,
    Uuid,
    i64,
    i64,
    DateTime<Utc>,
    DateTime<Utc>,
    Option<i64>,
);

/// Per `(agent_id, boot_id)`: last seq, how many below it are missing, lag — summed in the
/// database, since batch ids are kept for ever.
pub(super) async fn streams<C: ConnectionTrait>(
    conn: &C,
    now: DateTime<Utc>,
) -> Result<Vec<super::StreamHealth>, DbErr> {
    let rows: Vec<StreamRow> = ingest_batch::Entity::find()
        .select_only()
        .column(ingest_batch::Column::AgentId)
        .column(ingest_batch::Column::BootId)
        .column_as(ingest_batch::Column::Seq.max(), "last_seq")
        .column_as(ingest_batch::Column::Seq.count(), "batches")
        .column_as(ingest_batch::Column::WindowEnd.max(), "last_end")
        .column_as(ingest_batch::Column::ReceivedAt.max(), "last_received_at")
        // SUM of a BIGINT is NUMERIC on PostgreSQL: read it back as BIGINT on both.
        .column_as(
            Expr::cust("CAST(SUM(overlap_seconds) AS BIGINT)"),
            "overlap_seconds",
        )
        .group_by(ingest_batch::Column::AgentId)
        .group_by(ingest_batch::Column::BootId)
        .into_tuple()
        .all(conn)
        .await?;
    let mut out: Vec<super::StreamHealth> = rows
        .into_iter()
        .map(
            |(agent_id, boot_id, last_seq, batches, last_end, last_received_at, overlap)| {
                super::StreamHealth {
                    agent_id,
                    boot_id,
                    last_seq,
                    gaps: last_seq - batches,
                    lag_seconds: (now - last_end).num_seconds().max(0),
                    last_received_at,
                    overlap_seconds: overlap.unwrap_or(0),
                }
            },
        )
        .collect();
    out.sort_by_key(|s| std::cmp::Reverse(s.last_received_at));
    Ok(out)
}
