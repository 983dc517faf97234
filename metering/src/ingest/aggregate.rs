//! Aggregation of journaled batches: a pass takes the oldest journal rows, counts each
//! device's seconds no earlier aggregated batch counted, attributes them to allocations,
//! folds them into minute buckets, turns energy counters into kWh and deletes the rows —
//! all in one transaction, so a batch is aggregated exactly once. One pass runs at a time
//! (an advisory lock on PostgreSQL, the write lock on SQLite); a node's batches are
//! taken in the order they were acknowledged.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use neocloud_schema::gpu::GpuModel;
use neocloud_schema::ingest::{Batch, DeviceSample};
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, TransactionTrait};
use uuid::Uuid;

use super::fold::Candidate;
use super::store::{GpuFacts, NodeFacts};
use super::{fold, journal, store};
use crate::coverage::{self, MinuteMask, RecordedWindow, window_masks};

/// Journal rows one pass takes at most.
pub const PASS: u64 = 1000;
/// Batches one-by-one aggregation quarantines in a row before it takes the failures for
/// the database's and stops.
const MAX_QUARANTINED_IN_A_ROW: usize = 3;

/// What aggregating one batch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Effects {
    counted_seconds: i64,
    overlap_seconds: i64,
    anomalies: Vec<Anomaly>,
}

/// A value ingest clamped or did not count (`ingest_anomalies`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Anomaly {
    pub batch_id: Uuid,
    pub node_id: Uuid,
    pub kind: &'static str,
    pub device: String,
    pub detail: String,
}

/// One journaled batch of a pass, with its node.
struct Item<'a> {
    id: Uuid,
    node: &'a NodeFacts,
    batch: &'a Batch,
}

/// Aggregates up to `limit` of the oldest journaled batches (only those with an id up to
/// `upto`, when given); returns how many it took off the journal. A pass the database
/// refuses is retried batch by batch: a batch that fails alone is quarantined with the
/// reason, so one row can never stop aggregation.
pub async fn aggregate(
    db: &DatabaseConnection,
    limit: u64,
    upto: Option<Uuid>,
) -> Result<usize, DbErr> {
    match pass(db, Take::Oldest { limit, upto }).await {
        Ok(done) => Ok(done),
        Err(error) => {
            tracing::warn!(%error, "An aggregation pass failed; aggregating its batches one by one.");
            one_by_one(db, limit, upto).await
        }
    }
}

/// Aggregates the oldest batches one transaction each, quarantining a batch whose own
/// transaction fails. Each is named by id: a concurrent pass may have taken it meanwhile,
/// and what is quarantined is only ever the batch that failed.
async fn one_by_one(
    db: &DatabaseConnection,
    limit: u64,
    upto: Option<Uuid>,
) -> Result<usize, DbErr> {
    let mut done = 0;
    let mut failed_in_a_row = 0;
    for id in store::pending_ids(db, limit, upto).await? {
        // Tried twice: a passing fault (a lost connection) is not a reason to set it aside.
        let first = pass(db, Take::One(id)).await;
        let outcome = match first {
            Err(_) => pass(db, Take::One(id)).await,
            ok => ok,
        };
        match outcome {
            Ok(n) => {
                done += n;
                failed_in_a_row = 0;
            }
            // Batch after batch failing is the database, not the batches: stop setting
            // them aside and let the next pass try again.
            Err(error) if failed_in_a_row == MAX_QUARANTINED_IN_A_ROW => return Err(error),
            Err(error) => {
                let reason = format!("aggregation failed: {error}");
                done += usize::from(store::quarantine_pending(db, id, &reason).await?);
                failed_in_a_row += 1;
            }
        }
    }
    Ok(done)
}

/// Which journal rows a pass takes.
#[derive(Debug, Clone, Copy)]
enum Take {
    /// The oldest `limit` (with an id up to `upto`, when given).
    Oldest { limit: u64, upto: Option<Uuid> },
    /// This one, if it is still in the journal.
    One(Uuid),
}

/// One pass in one transaction: reads, folds, writes and deletes the journal rows.
async fn pass(db: &DatabaseConnection, take: Take) -> Result<usize, DbErr> {
    let started = std::time::Instant::now();
    let txn = db.begin().await?;
    store::lock_aggregation(&txn).await?;
    let rows = match take {
        Take::Oldest { limit, upto } => store::pending(&txn, limit, upto).await?,
        Take::One(id) => store::pending_one(&txn, id).await?.into_iter().collect(),
    };
    let mut batches = Vec::with_capacity(rows.len());
    for row in &rows {
        match journal::decode(&row.payload) {
            Ok(batch) => batches.push((row.batch_id, row.node_id.into(), batch)),
            // Kept aside, never dropped, for a build that reads its format.
            Err(error) => {
                let reason = format!("the journaled batch cannot be read: {error}");
                store::quarantine(&txn, row, &reason).await?;
            }
        }
    }
    let node_ids: Vec<Uuid> = batches
        .iter()
        .map(|(_, node, _)| *node)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let nodes = store::nodes_with_gpus(&txn, &node_ids).await?;
    let mut items: Vec<Item> = Vec::with_capacity(batches.len());
    for (id, node, batch) in &batches {
        match nodes.get(node) {
            Some(node) => items.push(Item {
                id: *id,
                node,
                batch,
            }),
            None => tracing::warn!(
                batch_id = %id,
                "The node of a journaled batch is gone; its usage is not counted."
            ),
        }
    }
    let effects = fold_batches(&txn, &nodes, &items).await?;
    let overlaps: Vec<(Uuid, i64)> = items
        .iter()
        .zip(&effects)
        .filter(|(_, e)| e.overlap_seconds > 0)
        .map(|(item, e)| (item.id, e.overlap_seconds))
        .collect();
    store::record_overlaps(&txn, &overlaps).await?;
    let anomalies: Vec<&Anomaly> = effects.iter().flat_map(|e| &e.anomalies).collect();
    store::record_anomalies(&txn, &anomalies).await?;
    let done: Vec<Uuid> = batches.iter().map(|(id, _, _)| *id).collect();
    store::delete_pending(&txn, &done).await?;
    txn.commit().await?;
    for anomaly in anomalies {
        tracing::warn!(batch_id = %anomaly.batch_id, device = %anomaly.device, kind = anomaly.kind, detail = %anomaly.detail, "Ingest did not count a value as reported.");
    }
    tracing::debug!(
        batches = done.len(),
        ms = started.elapsed().as_secs_f64() * 1000.0,
        counted_seconds = effects.iter().map(|e| e.counted_seconds).sum::<i64>(),
        overlapping_batches = overlaps.len(),
        "Journaled batches aggregated."
    );
    Ok(rows.len())
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
    items: &[Item<'_>],
) -> Result<Vec<Effects>, DbErr> {
    let Some(from) = items.iter().map(|i| i.batch.window.start).min() else {
        return Ok(Vec::new());
    };
    let to = items
        .iter()
        .map(|i| i.batch.window.end)
        .max()
        .unwrap_or(from);
    let node_ids: Vec<Uuid> = nodes.keys().copied().collect();
    let all_gpus: Vec<&GpuFacts> = nodes.values().flat_map(|n| &n.gpus).collect();
    let mut pass = PassFold {
        gpu_by_uuid: all_gpus.iter().map(|g| (g.uuid.as_str(), *g)).collect(),
        candidates: store::candidates(txn, &all_gpus, from, to).await?,
        recorded: store::recorded_windows(txn, &node_ids, from, to).await?,
        energy: EnergyCursors {
            cursors: store::energy_cursors(txn, &node_ids).await?,
            changed: BTreeSet::new(),
        },
        buckets: store::Buckets::new(),
        coverage: BTreeMap::new(),
    };
    let all_effects = items.iter().map(|item| pass.fold_batch(item)).collect();
    store::save_energy(txn, &pass.energy.changed_rows()).await?;
    store::add_increments(txn, &pass.buckets).await?;
    store::add_coverage(txn, &pass.coverage).await?;
    Ok(all_effects)
}

/// What a pass reads once for all its batches, and the buckets it folds them into.
struct PassFold<'a> {
    gpu_by_uuid: HashMap<&'a str, &'a GpuFacts>,
    /// Allocations holding each GPU over the pass's windows.
    candidates: HashMap<Uuid, Vec<Candidate>>,
    /// Windows already counted, per node: aggregated before, or earlier in this pass.
    recorded: HashMap<Uuid, Vec<RecordedWindow>>,
    energy: EnergyCursors,
    buckets: store::Buckets,
    /// Seconds each node's agent newly covered, per (node, hour).
    coverage: BTreeMap<(Uuid, DateTime<Utc>), i64>,
}

impl PassFold<'_> {
    /// Counts one batch's seconds no earlier batch counted, and folds each device's.
    fn fold_batch(&mut self, item: &Item<'_>) -> Effects {
        let (node, batch) = (item.node, item.batch);
        let mut effects = Effects::default();
        let masks = window_masks(batch.window.start, batch.window.end);
        let earlier = self.recorded.entry(node.id).or_default();
        for (hour, seconds) in coverage::fresh_node_seconds(&masks, earlier) {
            *self.coverage.entry((node.id, hour)).or_default() += seconds;
        }
        // MIG instances credited in this batch, by (allocation, GPU): one each.
        let mut claimed: HashMap<(Uuid, &str), &str> = HashMap::new();
        for device in &batch.devices {
            let fresh = fresh_seconds(&masks, earlier, device, &mut effects);
            let fresh_seconds: i64 = fresh.values().map(|m| i64::from(m.count_ones())).sum();
            effects.counted_seconds += fresh_seconds;
            let physical = device.parent_uuid.as_deref().unwrap_or(&device.uuid);
            let gpu = self.gpu_by_uuid.get(physical).copied();
            let energy_kwh = match (&device.parent_uuid, device.energy_mj, fresh_seconds > 0) {
                (None, Some(mj), true) => {
                    let kwh = self.energy.advance(node.id, device, mj, batch.window.end);
                    bounded_energy(item, device, gpu, kwh, fresh_seconds, &mut effects)
                }
                _ => Decimal::ZERO,
            };
            let all = gpu
                .and_then(|g| self.candidates.get(&g.id))
                .map_or(&[][..], Vec::as_slice);
            flag_busy_processes(item, device, &mut effects);
            let device_candidates = unclaimed(item, device, physical, all, &claimed, &mut effects);
            // Buckets are per device, an allocation's and the seconds nobody holds alike:
            // the portal charts each GPU, the utilization reports each idle one.
            for inc in fold::fold(device, &fresh, &device_candidates, energy_kwh) {
                if device.parent_uuid.is_some() && !inc.allocation.is_nil() {
                    claimed.insert((inc.allocation, physical), device.uuid.as_str());
                }
                store::add_to(&mut self.buckets, device.uuid.clone(), inc);
            }
        }
        earlier.push(RecordedWindow {
            masks,
            devices: Some(batch.devices.iter().map(|d| d.uuid.clone()).collect()),
        });
        effects
    }
}

/// The seconds of a batch's window (`masks`) that no `earlier` window counted for
/// `device`, per minute; the seconds some did count are the batch's overlap.
fn fresh_seconds(
    masks: &BTreeMap<DateTime<Utc>, MinuteMask>,
    earlier: &[RecordedWindow],
    device: &DeviceSample,
    effects: &mut Effects,
) -> BTreeMap<DateTime<Utc>, MinuteMask> {
    let mut fresh = BTreeMap::new();
    for (minute, mask) in masks {
        let before = coverage::counted(earlier, &device.uuid, *minute);
        effects.overlap_seconds += i64::from((mask & before).count_ones());
        let new = mask & !before;
        if new != 0 {
            fresh.insert(*minute, new);
        }
    }
    fresh
}

/// The nodes' energy cursors as a pass moves them, and which nodes' changed.
struct EnergyCursors {
    cursors: HashMap<Uuid, store::Cursors>,
    changed: BTreeSet<Uuid>,
}

impl EnergyCursors {
    /// The energy a whole GPU drew since its last reading (`mj` at `at`), moving its cursor.
    fn advance(
        &mut self,
        node: Uuid,
        device: &DeviceSample,
        mj: u64,
        at: DateTime<Utc>,
    ) -> Decimal {
        let node_cursors = self.cursors.entry(node).or_default();
        let (kwh, cursor) = store::energy_delta(node_cursors.get(&device.uuid), mj, at);
        if let Some(cursor) = cursor {
            node_cursors.insert(device.uuid.clone(), cursor);
            self.changed.insert(node);
        }
        kwh
    }

    /// The cursors to write: those of the nodes whose cursors moved.
    fn changed_rows(&self) -> Vec<(Uuid, &store::Cursors)> {
        self.changed
            .iter()
            .filter_map(|node| Some((*node, self.cursors.get(node)?)))
            .collect()
    }
}

/// A GPU draws at most its board power limit: energy beyond the limit over the seconds
/// counted is impossible (a reset counter, a second agent's counter, a lie) and is clamped
/// to it, and flagged.
fn bounded_energy(
    item: &Item<'_>,
    device: &DeviceSample,
    gpu: Option<&GpuFacts>,
    kwh: Decimal,
    seconds: i64,
    effects: &mut Effects,
) -> Decimal {
    let Some(watts) = gpu
        .and_then(|g| g.model.parse::<GpuModel>().ok())
        .map(|m| m.spec().max_power_w)
    else {
        return kwh;
    };
    // W × s / 3.6e6 = kWh.
    let limit = Decimal::from(u64::from(watts) * seconds.unsigned_abs()) / Decimal::from(3_600_000);
    if kwh <= limit {
        return kwh;
    }
    effects.anomalies.push(Anomaly {
        batch_id: item.id,
        node_id: item.node.id,
        kind: "energy_clamped",
        device: device.uuid.clone(),
        detail: format!(
            "{} kWh reported for {seconds} s; a {watts} W GPU draws at most {} kWh",
            kwh.normalize(),
            limit.round_dp(6).normalize()
        ),
    });
    limit
}

/// Flags a GPU whose processes report more than 100% SM utilization together (fold
/// scales them down to 100%).
fn flag_busy_processes(item: &Item<'_>, device: &DeviceSample, effects: &mut Effects) {
    if let Some(scale) = fold::process_util_scale(device) {
        effects.anomalies.push(Anomaly {
            batch_id: item.id,
            node_id: item.node.id,
            kind: "process_util_clamped",
            device: device.uuid.clone(),
            detail: format!(
                "processes report {}% SM utilization together; scaled to 100%",
                (Decimal::ONE_HUNDRED / scale).round_dp(2).normalize()
            ),
        });
    }
}

/// The device's candidates without allocations another MIG instance of the same GPU was
/// already credited to in this batch: an allocation holds one instance per GPU.
fn unclaimed<'c>(
    item: &Item<'_>,
    device: &DeviceSample,
    physical: &str,
    candidates: &'c [Candidate],
    claimed: &HashMap<(Uuid, &str), &str>,
    effects: &mut Effects,
) -> Cow<'c, [Candidate]> {
    if let Some(owner) = fold::mig_owner(device, candidates)
        && let Some(first) = claimed.get(&(owner.allocation, physical))
    {
        effects.anomalies.push(Anomaly {
            batch_id: item.id,
            node_id: item.node.id,
            kind: "mig_instance_unattributed",
            device: device.uuid.clone(),
            detail: format!(
                "allocation {} holds one instance on {physical}, already counted from {first}",
                owner.allocation
            ),
        });
        let taken = owner.allocation;
        return candidates
            .iter()
            .filter(|c| c.allocation != taken)
            .cloned()
            .collect();
    }
    Cow::Borrowed(candidates)
}
