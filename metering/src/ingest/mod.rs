//! Ingest v1 (contract, docs/architecture.md). A batch is validated against its node, then —
//! in one transaction — its id is recorded (a unique constraint, kept for ever), its
//! health events applied, and the batch journaled; the commit is the acknowledgement. A
//! batch id seen before is answered `duplicate` and changes nothing; a failed transaction
//! records nothing, so a retry is counted once.
//!
//! Journaled batches are aggregated many at a time ([`aggregate`]): each device's not yet
//! counted seconds, attributed to allocations and folded into minute buckets, in the
//! transaction that deletes the batches' journal rows — so each batch is aggregated
//! exactly once, whatever crashes in between. Readers of usage call [`settle`] first:
//! everything acknowledged before the call is then aggregated.

mod aggregate;
pub mod fold;
pub mod journal;
pub mod rejections;
mod store;
pub mod writer;

pub use aggregate::{aggregate, settle};

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use neocloud_schema::gpu::GpuModel;
use neocloud_schema::ingest::{Batch, ValidationContext};
use neocloud_schema::mig::{MigProfile, SLOTS_PER_GPU, fit_together};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, TransactionTrait};
use uuid::Uuid;

use crate::error::MeteringError;
use crate::health;
use store::{GpuFacts, NodeFacts};

/// The answer to a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Accepted { seq: u64 },
    Duplicate { seq: u64 },
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

/// Checks the batch speaks for `node`, still in the fleet, and only about its devices, and
/// that its MIG instances are ones the GPUs' geometry can hold.
fn authorize(batch: &Batch, node: &NodeFacts) -> Result<(), MeteringError> {
    if node.retired {
        return Err(MeteringError::Forbidden {
            message: format!("node {} is retired", node.hostname),
        });
    }
    if batch.agent_id != node.hostname {
        return Err(MeteringError::Forbidden {
            message: format!(
                "agent_id `{}` is not this token's node `{}`",
                batch.agent_id, node.hostname
            ),
        });
    }
    let mut instances: HashMap<&str, Vec<MigProfile>> = HashMap::new();
    for (i, device) in batch.devices.iter().enumerate() {
        let physical = device.parent_uuid.as_deref().unwrap_or(&device.uuid);
        let Some(gpu) = node.gpus.iter().find(|g| g.uuid == physical) else {
            return Err(MeteringError::Forbidden {
                message: format!(
                    "devices[{i}]: {physical} is not a GPU of node {}",
                    node.hostname
                ),
            });
        };
        if let Some(name) = &device.mig_profile {
            let (profile, model) = mig_profile(i, name, gpu, node.mig_enabled)?;
            check_instance_memory(i, device, profile.memory_mib(model) << 20)?;
            instances.entry(physical).or_default().push(profile);
        }
    }
    for (gpu, profiles) in instances {
        if !fit_together(&profiles) {
            return Err(MeteringError::invalid(
                "devices",
                format!(
                    "{} MIG instances on {gpu} cannot exist together on one GPU",
                    profiles.len()
                ),
            ));
        }
    }
    Ok(())
}

/// The MIG profile a device of `gpu` names (with the GPU's model), if the GPU can have it
/// now.
fn mig_profile(
    i: usize,
    name: &str,
    gpu: &GpuFacts,
    mig_enabled: bool,
) -> Result<(MigProfile, GpuModel), MeteringError> {
    let field = || format!("devices[{i}].mig_profile");
    let model = gpu
        .model
        .parse()
        .map_err(|_| MeteringError::invalid(field(), "the GPU's model is unknown"))?;
    if !mig_enabled {
        return Err(MeteringError::invalid(
            field(),
            "the node's GPUs are not in MIG mode",
        ));
    }
    MigProfile::parse(name, model)
        .map(|profile| (profile, model))
        .map_err(|e| MeteringError::invalid(field(), e.to_string()))
}

/// A MIG instance uses at most its own slice of the framebuffer (`limit` bytes).
fn check_instance_memory(
    i: usize,
    device: &neocloud_schema::ingest::DeviceSample,
    limit: u64,
) -> Result<(), MeteringError> {
    let used = std::iter::once(device.fb_used_bytes)
        .chain(device.processes.iter().map(|p| p.fb_used_bytes))
        .flatten()
        .max()
        .unwrap_or(0);
    if used > limit {
        return Err(MeteringError::invalid(
            format!("devices[{i}].fb_used_bytes"),
            format!("{used} bytes is more than the instance's {limit} bytes"),
        ));
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
pub type Answer = Result<Outcome, MeteringError>;

/// Takes several batches at once, answering each as if it came alone: they are written in
/// as few transactions as their nodes allow (a node's batches follow one another; other
/// nodes' share a transaction, so its statements and commit are paid once for all). If a
/// shared transaction fails, each of its batches is tried on its own, so one batch cannot
/// fail another.
#[tracing::instrument(name = "ingest.accept_many", skip_all, fields(batches = submissions.len()))]
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
/// later batch is judged after its earlier one is recorded (a resent batch is then a
/// duplicate, and journal ids follow each node's order).
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

/// Validates each batch against its node, then records and journals those that pass in
/// one transaction (nodes distinct). A database error fails the whole group and records
/// nothing.
async fn apply(
    db: &DatabaseConnection,
    items: &[&Submission],
    now: DateTime<Utc>,
) -> Result<Vec<Answer>, DbErr> {
    let node_ids: Vec<Uuid> = items.iter().map(|s| s.node_id).collect();
    // One connection checkout for the whole group, and the nodes' row locks first.
    let txn = db.begin().await?;
    let nodes = store::lock_nodes_with_gpus(&txn, &node_ids).await?;
    let mut answers: Vec<Option<Answer>> = items.iter().map(|_| None).collect();
    let mut live = Vec::new();
    for (i, s) in items.iter().enumerate() {
        let Some(node) = nodes.get(&s.node_id) else {
            answers[i] = Some(Err(MeteringError::Forbidden {
                message: "the token's node no longer exists".into(),
            }));
            continue;
        };
        match check(&s.batch, node, now) {
            Ok(()) => live.push(i),
            Err(err) => answers[i] = Some(Err(err)),
        }
    }
    let mut journal = Vec::new();
    for &i in &live {
        let payload = journal::encode(&items[i].batch).map_err(DbErr::Custom)?;
        journal.push((Uuid::now_v7(), items[i].node_id, &items[i].batch, payload));
    }
    // The unique batch identity decides: ids it refuses were recorded before.
    let fresh = store::record_batches(&txn, &journal, now).await?;
    for (&i, (id, node_id, batch, _)) in live.iter().zip(&journal) {
        if !fresh.contains(id) {
            answers[i] = Some(Ok(Outcome::Duplicate { seq: batch.seq }));
            continue;
        }
        apply_events(&txn, *node_id, batch, now).await?;
        answers[i] = Some(Ok(Outcome::Accepted { seq: batch.seq }));
    }
    journal.retain(|(id, ..)| fresh.contains(id));
    store::journal(&txn, &journal).await?;
    tell_gaps(&txn, &journal, now).await?;
    txn.commit().await?;
    Ok(answers
        .into_iter()
        .map(|a| a.unwrap_or_else(unanswered))
        .collect())
}

/// `ingest.gap_detected` for each stream whose new batches skip sequence numbers past the
/// highest it had sent (a batch that arrives late, below it, fills a gap already told).
async fn tell_gaps<C: ConnectionTrait>(
    txn: &C,
    fresh: &[store::Journaled<'_>],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    if fresh.is_empty() {
        return Ok(());
    }
    let before = store::highest_seq_before(txn, fresh).await?;
    let mut streams: BTreeMap<(&str, Uuid), (Uuid, Vec<u64>)> = BTreeMap::new();
    for (_, node, batch, _) in fresh {
        let entry = streams
            .entry((batch.agent_id.as_str(), batch.boot_id))
            .or_insert_with(|| (*node, Vec::new()));
        entry.1.push(batch.seq);
    }
    let mut events = Vec::new();
    for ((agent, boot), (node, mut seqs)) in streams {
        seqs.sort_unstable();
        let mut last = before.get(&(agent.to_owned(), boot)).copied();
        for seq in seqs {
            if let Some(prev) = last.filter(|prev| seq > prev + 1) {
                let data = serde_json::json!({"node_id": node, "agent_id": agent, "boot_id": boot,
                    "from_seq": prev + 1, "to_seq": seq - 1});
                events.push(crate::events::NewEvent::operator(
                    "ingest.gap_detected",
                    now,
                    data,
                ));
            }
            last = Some(last.map_or(seq, |prev| prev.max(seq)));
        }
    }
    crate::events::record_all(txn, events, now).await
}

/// Stores a new batch's XID/ECC events and applies the health transitions they cause
/// (at once: a failing GPU must stop taking work before its usage is aggregated).
async fn apply_events<C: ConnectionTrait>(
    txn: &C,
    node: Uuid,
    batch: &Batch,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    for device in &batch.devices {
        let physical = device.parent_uuid.as_deref().unwrap_or(&device.uuid);
        for event in &device.events {
            store::record_event(txn, node, (&device.uuid, physical), event, now).await?;
            let Some(effect) = health::effect(event.kind, event.code) else {
                continue;
            };
            if device.parent_uuid.is_some() && !health::device_wide(event.kind, event.code) {
                continue;
            }
            // Read again: an earlier event may have changed its health.
            if let Some(gpu) = store::gpu_by_uuid(txn, physical).await? {
                let cause = format!("{:?} {}", event.kind, event.code).to_lowercase();
                health::worsen(txn, &gpu, effect, event.at, &cause).await?;
            }
        }
    }
    Ok(())
}

/// The contract's validation and the batch's right to speak for its node's devices.
fn check(batch: &Batch, node: &NodeFacts, now: DateTime<Utc>) -> Result<(), MeteringError> {
    let gpus = &node.gpus;
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
            // A negative size (never stored) bounds nothing: zero.
            .map(|g| u64::try_from(g.memory_mib).unwrap_or(0))
            .max()
            .unwrap_or(0)
            * (1 << 20),
        max_power_w: gpus
            .iter()
            .filter_map(|g| g.model.parse::<GpuModel>().ok())
            .map(|m| m.spec().max_power_w)
            .max()
            .unwrap_or(u32::MAX),
    };
    batch.validate(&ctx)?;
    authorize(batch, node)
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
    /// Device-seconds its batches reported that another batch had already counted (a
    /// second agent on the node, a resent window): never counted twice.
    pub overlap_seconds: i64,
}

/// A journaled batch moved aside because it could not be aggregated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantined {
    pub batch_id: Uuid,
    pub node_id: Uuid,
    pub reason: String,
    pub quarantined_at: DateTime<Utc>,
}

/// A reported value ingest clamped or did not count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestAnomaly {
    pub batch_id: Uuid,
    pub node_id: Uuid,
    /// `energy_clamped`, `mig_instance_unattributed` or `process_util_clamped`.
    pub kind: String,
    pub device: String,
    pub detail: String,
    pub recorded_at: DateTime<Utc>,
}

/// The newest `limit` quarantined batches.
pub async fn quarantined(
    db: &DatabaseConnection,
    limit: u64,
) -> Result<Vec<Quarantined>, MeteringError> {
    Ok(store::quarantined(db, limit)
        .await?
        .into_iter()
        .map(|(batch_id, node_id, reason, quarantined_at)| Quarantined {
            batch_id,
            node_id,
            reason,
            quarantined_at,
        })
        .collect())
}

/// The newest `limit` anomalies.
pub async fn anomalies(
    db: &DatabaseConnection,
    limit: u64,
) -> Result<Vec<IngestAnomaly>, MeteringError> {
    Ok(store::anomalies(db, limit)
        .await?
        .into_iter()
        .map(|a| IngestAnomaly {
            batch_id: a.batch_id,
            node_id: a.node_id.into(),
            kind: a.kind,
            device: a.device,
            detail: a.detail,
            recorded_at: a.recorded_at,
        })
        .collect())
}

/// Puts a quarantined batch back in the journal (once its cause is fixed), in the caller's
/// transaction; false when no such batch is quarantined.
pub async fn requeue<C: ConnectionTrait>(conn: &C, batch_id: Uuid) -> Result<bool, MeteringError> {
    Ok(store::requeue(conn, batch_id).await?)
}

/// Batches acknowledged and not yet aggregated: the journal's backlog (near zero while
/// aggregation keeps up).
pub async fn journal_backlog(db: &DatabaseConnection) -> Result<u64, MeteringError> {
    Ok(store::journal_backlog(db).await?)
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
