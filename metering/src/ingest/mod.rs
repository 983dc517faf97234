//! Ingest v1 (contract, ARCHITECTURE.md): validate a batch against its node, then — in
//! one transaction that also records the batch id — count each device's not yet counted
//! seconds, attribute them to allocations, fold them into minute buckets, and apply health
//! events. A batch id seen before is answered `duplicate` and changes nothing; a failed
//! transaction records nothing, so a retry is counted once.

pub mod fold;
mod store;
pub mod writer;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{gpu, node};
use neocloud_schema::ingest::{Batch, ValidationContext};
use neocloud_schema::mig::{MigProfile, SLOTS_PER_GPU};
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, TransactionTrait};
use uuid::Uuid;

use crate::coverage::{self, MinuteMask, window_masks};
use crate::error::MeteringError;
use crate::health;

/// The answer to a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Accepted { seq: u64 },
    Duplicate { seq: u64 },
}

/// What one accepted batch did (for logs and tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effects {
    pub counted_seconds: i64,
    pub overlap_seconds: i64,
    pub buckets: usize,
    pub health_changes: usize,
}

/// Parses the body as JSON, naming the field that broke it.
pub fn parse(body: &[u8]) -> Result<Batch, MeteringError> {
    serde_json::from_slice(body).map_err(|err| {
        let field = err
            .to_string()
            .split('`')
            .nth(1)
            .map_or_else(|| "body".to_owned(), str::to_owned);
        MeteringError::invalid(field, format!("not an ingest v1 batch: {err}"))
    })
}

/// Checks the batch speaks for `node` and only about its devices.
fn authorize(batch: &Batch, node: &node::Model, gpus: &[gpu::Model]) -> Result<(), MeteringError> {
    if batch.agent_id != node.hostname {
        return Err(MeteringError::Forbidden {
            message: format!(
                "agent_id `{}` is not this token's node `{}`",
                batch.agent_id, node.hostname
            ),
        });
    }
    for (i, device) in batch.devices.iter().enumerate() {
        let physical = device.parent_uuid.as_deref().unwrap_or(&device.uuid);
        let Some(gpu) = gpus.iter().find(|g| g.uuid == physical) else {
            return Err(MeteringError::Forbidden {
                message: format!(
                    "devices[{i}]: {physical} is not a GPU of node {}",
                    node.hostname
                ),
            });
        };
        if let Some(profile) = &device.mig_profile {
            let model = gpu.model.parse().map_err(|_| {
                MeteringError::invalid(
                    format!("devices[{i}].mig_profile"),
                    "the GPU's model is unknown",
                )
            })?;
            if !node.mig_enabled {
                return Err(MeteringError::invalid(
                    format!("devices[{i}].mig_profile"),
                    "the node's GPUs are not in MIG mode",
                ));
            }
            MigProfile::parse(profile, model).map_err(|e| {
                MeteringError::invalid(format!("devices[{i}].mig_profile"), e.to_string())
            })?;
        }
    }
    Ok(())
}

/// One batch to take, from the agent of `node_id`.
#[derive(Debug, Clone)]
pub struct Submission {
    pub node_id: Uuid,
    pub batch: Batch,
}

/// What became of one submission.
pub type Answer = Result<(Outcome, Effects), MeteringError>;

/// Takes one batch from the agent of `node_id`.
pub async fn accept(
    db: &DatabaseConnection,
    node_id: Uuid,
    batch: Batch,
    now: DateTime<Utc>,
) -> Answer {
    accept_many(db, vec![Submission { node_id, batch }], now)
        .await
        .pop()
        .unwrap_or_else(unanswered)
}

/// Takes several batches at once, answering each as if it came alone: they are written in
/// as few transactions as their nodes allow (a node's batches follow one another; other
/// nodes' share a transaction, so its statements and commit are paid once for all). If a
/// shared transaction fails, each of its batches is tried on its own, so one batch cannot
/// fail another.
pub async fn accept_many(
    db: &DatabaseConnection,
    submissions: Vec<Submission>,
    now: DateTime<Utc>,
) -> Vec<Answer> {
    let mut answers: Vec<Option<Answer>> = submissions.iter().map(|_| None).collect();
    for group in one_batch_per_node(&submissions) {
        let items: Vec<&Submission> = group.iter().map(|&i| &submissions[i]).collect();
        match apply(db, &items, now).await {
            Ok(done) => {
                for (i, answer) in group.iter().zip(done) {
                    answers[*i] = Some(answer);
                }
            }
            Err(err) if items.len() == 1 => answers[group[0]] = Some(Err(err.into())),
            Err(_) => {
                for &i in &group {
                    let alone = apply(db, &[&submissions[i]], now).await;
                    answers[i] = Some(match alone {
                        Ok(mut done) => done.pop().unwrap_or_else(unanswered),
                        Err(err) => Err(err.into()),
                    });
                }
            }
        }
    }
    answers
        .into_iter()
        .map(|a| a.unwrap_or_else(unanswered))
        .collect()
}

/// The answer to a submission nothing answered (cannot happen: every path answers).
fn unanswered() -> Answer {
    Err(MeteringError::invalid("body", "nothing to take"))
}

/// Splits submissions, in order, into groups holding each node at most once: a node's
/// later batch must see what its earlier one counted.
fn one_batch_per_node(submissions: &[Submission]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(Vec<usize>, std::collections::HashSet<Uuid>)> = Vec::new();
    for (i, s) in submissions.iter().enumerate() {
        // After the last group already holding this node: order per node is kept.
        let after = groups
            .iter()
            .rposition(|(_, nodes)| nodes.contains(&s.node_id))
            .map_or(0, |g| g + 1);
        match groups.get_mut(after) {
            Some((members, nodes)) => {
                members.push(i);
                nodes.insert(s.node_id);
            }
            None => groups.push((vec![i], [s.node_id].into_iter().collect())),
        }
    }
    groups.into_iter().map(|(members, _)| members).collect()
}

/// Validates each batch against its node, then writes those that pass in one transaction
/// (nodes distinct). A database error fails the whole group and records nothing.
async fn apply(
    db: &DatabaseConnection,
    items: &[&Submission],
    now: DateTime<Utc>,
) -> Result<Vec<Answer>, DbErr> {
    let node_ids: Vec<Uuid> = items.iter().map(|s| s.node_id).collect();
    // One connection checkout for the whole group, and the nodes' row locks first (they
    // serialize the batches of one node, its devices' coverage, without blocking other
    // nodes; on SQLite the first write also takes the database's write lock before any
    // read, so the transaction never has to upgrade).
    let txn = db.begin().await?;
    store::lock_nodes(&txn, &node_ids).await?;
    let nodes = store::nodes_with_gpus(&txn, &node_ids).await?;
    let mut answers: Vec<Option<Answer>> = items.iter().map(|_| None).collect();
    let mut live = Vec::new();
    for (i, s) in items.iter().enumerate() {
        let Some((node, node_gpus)) = nodes.get(&s.node_id) else {
            answers[i] = Some(Err(MeteringError::Forbidden {
                message: "the token's node no longer exists".into(),
            }));
            continue;
        };
        match check(&s.batch, node, node_gpus, now) {
            Ok(()) => live.push(i),
            Err(err) => answers[i] = Some(Err(err)),
        }
    }
    if !live.is_empty() {
        let batches: Vec<&Batch> = live.iter().map(|&i| &items[i].batch).collect();
        let seen = store::existing_batches(&txn, &batches).await?;
        let mut fresh = Vec::new();
        for &i in &live {
            let batch = &items[i].batch;
            if seen.contains(&(batch.agent_id.clone(), batch.boot_id, batch.seq as i64)) {
                answers[i] = Some(Ok((
                    Outcome::Duplicate { seq: batch.seq },
                    Effects::default(),
                )));
            } else {
                fresh.push(i);
            }
        }
        let fresh_items: Vec<(&node::Model, &[gpu::Model], &Batch)> = fresh
            .iter()
            .filter_map(|&i| {
                let (node, gpus) = nodes.get(&items[i].node_id)?;
                Some((node, gpus.as_slice(), &items[i].batch))
            })
            .collect();
        let effects = write(&txn, &fresh_items, now).await?;
        txn.commit().await?;
        for (&i, effects) in fresh.iter().zip(effects) {
            let batch = &items[i].batch;
            if effects.overlap_seconds > 0 {
                tracing::warn!(
                    agent_id = %batch.agent_id,
                    boot_id = %batch.boot_id,
                    seq = batch.seq,
                    overlap_seconds = effects.overlap_seconds,
                    "Batch overlaps time already counted for its devices; the overlap was ignored."
                );
            }
            answers[i] = Some(Ok((Outcome::Accepted { seq: batch.seq }, effects)));
        }
    }
    Ok(answers
        .into_iter()
        .map(|a| a.unwrap_or_else(unanswered))
        .collect())
}

/// The contract's validation and the batch's right to speak for its node's devices.
fn check(
    batch: &Batch,
    node: &node::Model,
    gpus: &[gpu::Model],
    now: DateTime<Utc>,
) -> Result<(), MeteringError> {
    let per_gpu = if node.mig_enabled {
        1 + usize::from(SLOTS_PER_GPU)
    } else {
        1
    };
    let ctx = ValidationContext {
        now,
        max_devices: gpus.len() * per_gpu,
        max_fb_bytes: gpus
            .iter()
            .map(|g| g.memory_mib.max(0) as u64)
            .max()
            .unwrap_or(0)
            * (1 << 20),
    };
    batch.validate(&ctx)?;
    authorize(batch, node, gpus)
}

/// Counts, attributes and folds new batches of distinct nodes (inside their transaction):
/// one read and one write per table for all of them.
async fn write<C: ConnectionTrait>(
    txn: &C,
    items: &[(&node::Model, &[gpu::Model], &Batch)],
    now: DateTime<Utc>,
) -> Result<Vec<Effects>, DbErr> {
    if items.is_empty() {
        return Ok(Vec::new());
    }
    let all_gpus: Vec<&gpu::Model> = items.iter().flat_map(|(_, g, _)| g.iter()).collect();
    let gpu_by_uuid: HashMap<&str, &gpu::Model> =
        all_gpus.iter().map(|g| (g.uuid.as_str(), *g)).collect();
    let from = items
        .iter()
        .map(|(_, _, b)| b.window.start)
        .min()
        .unwrap_or(now);
    let to = items
        .iter()
        .map(|(_, _, b)| b.window.end)
        .max()
        .unwrap_or(now);
    let candidates = store::candidates(txn, &all_gpus, from, to).await?;
    let masks: Vec<BTreeMap<DateTime<Utc>, MinuteMask>> = items
        .iter()
        .map(|(_, _, b)| window_masks(b.window.start, b.window.end))
        .collect();
    let node_ids: Vec<Uuid> = items.iter().map(|(node, _, _)| node.id).collect();
    let recorded = store::recorded_windows(txn, &node_ids, from, to).await?;
    let mut cursors = store::energy_cursors(txn, &node_ids).await?;
    let mut cursors_changed = BTreeSet::new();
    let mut increments = Vec::new();
    let mut all_effects = Vec::with_capacity(items.len());
    for ((node, _, batch), masks) in items.iter().zip(&masks) {
        let mut effects = Effects::default();
        let earlier = recorded.get(&node.id).map_or(&[][..], Vec::as_slice);
        for device in &batch.devices {
            let mut fresh = BTreeMap::new();
            for (minute, mask) in masks {
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
            let folded = fold::fold(device, &fresh, device_candidates, energy_kwh);
            effects.buckets += folded.len();
            // An allocation's bucket sums all its devices; seconds nobody holds stay per
            // device, for utilization reports.
            increments.extend(folded.into_iter().map(|inc| {
                let device = if inc.allocation.is_nil() {
                    device.uuid.clone()
                } else {
                    String::new()
                };
                (device, inc)
            }));
            for event in &device.events {
                store::record_event(txn, node.id, &device.uuid, event, now).await?;
                let Some(effect) = health::effect(event.kind, event.code) else {
                    continue;
                };
                if device.parent_uuid.is_some() && !health::device_wide(event.kind, event.code) {
                    continue;
                }
                // Read again: an earlier event may have changed its health.
                if let Some(gpu) = store::gpu_by_uuid(txn, physical).await? {
                    let cause = format!("{:?} {}", event.kind, event.code).to_lowercase();
                    if health::worsen(txn, &gpu, effect, event.at, &cause).await? {
                        effects.health_changes += 1;
                    }
                }
            }
        }
        all_effects.push(effects);
    }
    let energy_rows: Vec<(Uuid, &store::Cursors)> = cursors_changed
        .iter()
        .filter_map(|node| Some((*node, cursors.get(node)?)))
        .collect();
    store::save_energy(txn, &energy_rows).await?;
    store::add_increments(txn, &increments).await?;
    let recorded: Vec<(Uuid, &Batch, i64)> = items
        .iter()
        .zip(&all_effects)
        .map(|((node, _, batch), e)| (node.id, *batch, e.overlap_seconds))
        .collect();
    store::insert_batches(txn, &recorded, now).await?;
    Ok(all_effects)
}

/// One agent stream's completeness: `(agent_id, boot_id)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamHealth {
    pub agent_id: String,
    pub boot_id: Uuid,
    pub last_seq: i64,
    /// Sequence numbers below `last_seq` never received.
    pub gaps: i64,
    /// Seconds from the end of the newest window to `now`.
    pub lag_seconds: i64,
    pub last_received_at: DateTime<Utc>,
}

/// Completeness of every agent stream, newest first.
pub async fn stream_health(
    db: &DatabaseConnection,
    now: DateTime<Utc>,
) -> Result<Vec<StreamHealth>, MeteringError> {
    Ok(store::streams(db, now).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use neocloud_schema::ingest::Window;

    fn submission(node: u128, seq: u64) -> Submission {
        let start = DateTime::from_timestamp(1_790_000_000, 0).unwrap_or_default();
        Submission {
            node_id: Uuid::from_u128(node),
            batch: Batch {
                version: 1,
                agent_id: format!("n{node}"),
                boot_id: Uuid::nil(),
                seq,
                window: Window {
                    start,
                    end: start + chrono::TimeDelta::seconds(10),
                },
                devices: Vec::new(),
            },
        }
    }

    #[test]
    fn groups_hold_each_node_once_and_keep_each_nodes_order() {
        let subs: Vec<Submission> = [(1, 1), (2, 1), (1, 2), (3, 1), (1, 3), (2, 2)]
            .into_iter()
            .map(|(n, s)| submission(n, s))
            .collect();
        let groups = one_batch_per_node(&subs);
        assert_eq!(groups, vec![vec![0, 1, 3], vec![2, 5], vec![4]]);
        for group in &groups {
            let nodes: std::collections::HashSet<Uuid> =
                group.iter().map(|&i| subs[i].node_id).collect();
            assert_eq!(nodes.len(), group.len());
        }
    }
}
