//! Aggregation of journaled batches: a pass takes the oldest journal rows, counts each
//! device's seconds no earlier aggregated batch counted, attributes them to allocations,
//! folds them into minute buckets, turns energy counters into kWh and deletes the rows —
//! all in one transaction, so a batch is aggregated exactly once. One pass runs at a time
//! (an advisory lock on PostgreSQL, the write lock on SQLite); a node's batches are
//! taken in the order they were acknowledged.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use neocloud_schema::ingest::Batch;
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, TransactionTrait};
use uuid::Uuid;

use super::store::{GpuFacts, NodeFacts};
use super::{fold, journal, store};
use crate::coverage::{self, RecordedWindow, window_masks};

/// Journal rows one pass takes at most.
pub const PASS: u64 = 1000;

/// What aggregating one batch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Effects {
    counted_seconds: i64,
    overlap_seconds: i64,
}

/// Aggregates up to `limit` of the oldest journaled batches (only those with an id up to
/// `upto`, when given); returns how many it aggregated.
pub async fn aggregate(
    db: &DatabaseConnection,
    limit: u64,
    upto: Option<Uuid>,
) -> Result<usize, DbErr> {
    let started = std::time::Instant::now();
    let txn = db.begin().await?;
    store::lock_aggregation(&txn).await?;
    let rows = store::pending(&txn, limit, upto).await?;
    let mut batches = Vec::with_capacity(rows.len());
    for row in &rows {
        match journal::decode(&row.payload) {
            Ok(batch) => batches.push((row.batch_id, row.node_id, batch)),
            // Left in the journal (never dropped) for a build that reads its format.
            Err(error) => tracing::error!(
                batch_id = %row.batch_id,
                %error,
                "A journaled batch cannot be read; it stays in the journal."
            ),
        }
    }
    if batches.is_empty() {
        txn.commit().await?;
        return Ok(0);
    }
    let node_ids: Vec<Uuid> = batches
        .iter()
        .map(|(_, node, _)| *node)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let nodes = store::nodes_with_gpus(&txn, &node_ids).await?;
    let mut ids = Vec::with_capacity(batches.len());
    let mut items: Vec<(&NodeFacts, &Batch)> = Vec::with_capacity(batches.len());
    for (id, node, batch) in &batches {
        match nodes.get(node) {
            Some(node) => {
                ids.push(*id);
                items.push((node, batch));
            }
            None => tracing::warn!(
                batch_id = %id,
                "The node of a journaled batch is gone; its usage is not counted."
            ),
        }
    }
    let effects = fold_batches(&txn, &nodes, &items).await?;
    let overlaps: Vec<(Uuid, &Batch, i64)> = ids
        .iter()
        .zip(&items)
        .zip(&effects)
        .filter(|(_, e)| e.overlap_seconds > 0)
        .map(|((id, (_, batch)), e)| (*id, *batch, e.overlap_seconds))
        .collect();
    store::record_overlaps(
        &txn,
        &overlaps
            .iter()
            .map(|(id, _, s)| (*id, *s))
            .collect::<Vec<_>>(),
    )
    .await?;
    let done: Vec<Uuid> = batches.iter().map(|(id, _, _)| *id).collect();
    store::delete_pending(&txn, &done).await?;
    txn.commit().await?;
    for (_, batch, overlap_seconds) in overlaps {
        tracing::warn!(
            agent_id = %batch.agent_id,
            boot_id = %batch.boot_id,
            seq = batch.seq,
            overlap_seconds,
            "Batch overlaps time already counted for its devices; the overlap was ignored."
        );
    }
    tracing::debug!(
        batches = done.len(),
        ms = started.elapsed().as_secs_f64() * 1000.0,
        counted_seconds = effects.iter().map(|e| e.counted_seconds).sum::<i64>(),
        "Journaled batches aggregated."
    );
    Ok(done.len())
}

/// Aggregates every batch acknowledged before the call (those journaled since may be
/// aggregated too). Readers of usage call it first, so what an agent was told is
/// recorded is what they read.
pub async fn settle(db: &DatabaseConnection) -> Result<(), DbErr> {
    let Some(newest) = store::newest_pending(db).await? else {
        return Ok(());
    };
    while aggregate(db, PASS, Some(newest)).await? > 0 {}
    Ok(())
}

/// Counts, attributes and folds batches of `nodes` in order (inside their transaction):
/// one read and one write per table for all of them. A node's earlier batch in the same
/// pass counts as earlier for its later ones.
async fn fold_batches<C: ConnectionTrait>(
    txn: &C,
    nodes: &HashMap<Uuid, NodeFacts>,
    items: &[(&NodeFacts, &Batch)],
) -> Result<Vec<Effects>, DbErr> {
    let Some(from) = items.iter().map(|(_, b)| b.window.start).min() else {
        return Ok(Vec::new());
    };
    let to = items
        .iter()
        .map(|(_, b)| b.window.end)
        .max()
        .unwrap_or(from);
    let node_ids: Vec<Uuid> = nodes.keys().copied().collect();
    let all_gpus: Vec<&GpuFacts> = nodes.values().flat_map(|n| &n.gpus).collect();
    let gpu_by_uuid: HashMap<&str, &GpuFacts> =
        all_gpus.iter().map(|g| (g.uuid.as_str(), *g)).collect();
    let candidates = store::candidates(txn, &all_gpus, from, to).await?;
    let mut recorded = store::recorded_windows(txn, &node_ids, from, to).await?;
    let mut cursors = store::energy_cursors(txn, &node_ids).await?;
    let mut cursors_changed = BTreeSet::new();
    let mut buckets = store::Buckets::new();
    let mut all_effects = Vec::with_capacity(items.len());
    for (node, batch) in items {
        let mut effects = Effects::default();
        let masks = window_masks(batch.window.start, batch.window.end);
        let earlier = recorded.entry(node.id).or_default();
        for device in &batch.devices {
            let mut fresh = BTreeMap::new();
            for (minute, mask) in &masks {
                let before = coverage::counted(earlier, &device.uuid, *minute);
                effects.overlap_seconds += i64::from((mask & before).count_ones());
                let new = mask & !before;
                if new != 0 {
                    fresh.insert(*minute, new);
                }
            }
            effects.counted_seconds += fresh
                .values()
                .map(|m| i64::from(m.count_ones()))
                .sum::<i64>();
            let physical = device.parent_uuid.as_deref().unwrap_or(&device.uuid);
            let energy_kwh = match (
                device.parent_uuid.is_none() && !fresh.is_empty(),
                device.energy_mj,
            ) {
                (true, Some(mj)) => {
                    let node_cursors = cursors.entry(node.id).or_default();
                    let (kwh, cursor) =
                        store::energy_delta(node_cursors.get(&device.uuid), mj, batch.window.end);
                    if let Some(cursor) = cursor {
                        node_cursors.insert(device.uuid.clone(), cursor);
                        cursors_changed.insert(node.id);
                    }
                    kwh
                }
                _ => Decimal::ZERO,
            };
            let device_candidates = gpu_by_uuid
                .get(physical)
                .and_then(|g| candidates.get(&g.id))
                .map_or(&[][..], Vec::as_slice);
            // An allocation's bucket sums all its devices; seconds nobody holds stay per
            // device, for utilization reports.
            for inc in fold::fold(device, &fresh, device_candidates, energy_kwh) {
                let device = if inc.allocation.is_nil() {
                    device.uuid.clone()
                } else {
                    String::new()
                };
                store::add_to(&mut buckets, device, inc);
            }
        }
        earlier.push(RecordedWindow {
            masks,
            devices: Some(batch.devices.iter().map(|d| d.uuid.clone()).collect()),
        });
        all_effects.push(effects);
    }
    let energy_rows: Vec<(Uuid, &store::Cursors)> = cursors_changed
        .iter()
        .filter_map(|node| Some((*node, cursors.get(node)?)))
        .collect();
    store::save_energy(txn, &energy_rows).await?;
    store::add_increments(txn, &buckets).await?;
    Ok(all_effects)
}
