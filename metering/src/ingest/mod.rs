//! Ingest v1 (contract, ARCHITECTURE.md): validate a batch against its node, then — in
//! one transaction that also records the batch id — count each device's not yet counted
//! seconds, attribute them to allocations, fold them into minute buckets, and apply health
//! events. A batch id seen before is answered `duplicate` and changes nothing; a failed
//! transaction records nothing, so a retry is counted once.

pub mod fold;
mod store;

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{gpu, node};
use neocloud_schema::ingest::{Batch, ValidationContext};
use neocloud_schema::mig::{MigProfile, SLOTS_PER_GPU};
use rust_decimal::Decimal;
use sea_orm::{DatabaseConnection, EntityTrait, TransactionTrait};
use uuid::Uuid;

use crate::coverage::window_masks;
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

/// Takes one batch from the agent of `node_id`.
pub async fn accept(
    db: &DatabaseConnection,
    node_id: Uuid,
    batch: Batch,
    now: DateTime<Utc>,
) -> Result<(Outcome, Effects), MeteringError> {
    let node = node::Entity::find_by_id(node_id)
        .one(db)
        .await?
        .ok_or_else(|| MeteringError::Forbidden {
            message: "the token's node no longer exists".into(),
        })?;
    let gpus = store::gpus_of(db, node.id).await?;
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
    authorize(&batch, &node, &gpus)?;
    let seq = batch.seq;

    let txn = db.begin().await?;
    // Serializes the batches of one node (its devices' coverage rows) without blocking
    // other nodes.
    store::lock_node(&txn, node.id).await?;
    if store::batch_exists(&txn, &batch).await? {
        return Ok((Outcome::Duplicate { seq }, Effects::default()));
    }
    let mut effects = Effects::default();
    let gpu_by_uuid: HashMap<&str, &gpu::Model> =
        gpus.iter().map(|g| (g.uuid.as_str(), g)).collect();
    let candidates = store::candidates(&txn, &gpus, batch.window.start, batch.window.end).await?;
    // Set-based: one read and one upsert per table for the whole batch.
    let masks = window_masks(batch.window.start, batch.window.end);
    let devices: Vec<&str> = batch.devices.iter().map(|d| d.uuid.as_str()).collect();
    let old = store::coverage(&txn, &devices, masks.keys().copied()).await?;
    let mut cursors = store::energy_cursors(&txn, &devices).await?;
    let mut coverage_rows = Vec::new();
    let mut energy_rows = Vec::new();
    let mut increments = Vec::new();
    for device in &batch.devices {
        let mut fresh = BTreeMap::new();
        for (minute, mask) in &masks {
            let before = old
                .get(&(device.uuid.clone(), *minute))
                .copied()
                .unwrap_or(0);
            effects.overlap_seconds += i64::from((mask & before).count_ones());
            let new = mask & !before;
            if new != 0 {
                fresh.insert(*minute, new);
                coverage_rows.push((device.uuid.clone(), *minute, before | mask));
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
                let (kwh, cursor) =
                    store::energy_delta(cursors.remove(&device.uuid), mj, batch.window.end);
                if let Some(cursor) = cursor {
                    energy_rows.push((device.uuid.clone(), cursor));
                }
                kwh
            }
            _ => Decimal::ZERO,
        };
        let device_candidates = gpu_by_uuid
            .get(physical)
            .and_then(|g| candidates.get(&g.id))
            .map_or(&[][..], Vec::as_slice);
        increments.extend(
            fold::fold(device, &fresh, device_candidates, energy_kwh)
                .into_iter()
                .map(|inc| (device.uuid.clone(), inc)),
        );
        for event in &device.events {
            store::record_event(&txn, node.id, &device.uuid, event, now).await?;
            let Some(effect) = health::effect(event.kind, event.code) else {
                continue;
            };
            if device.parent_uuid.is_some() && !health::device_wide(event.kind, event.code) {
                continue;
            }
            if let Some(gpu) = store::gpu_by_uuid(&txn, physical).await? {
                let cause = format!("{:?} {}", event.kind, event.code).to_lowercase();
                if health::worsen(&txn, &gpu, effect, event.at, &cause).await? {
                    effects.health_changes += 1;
                }
            }
        }
    }
    store::save_coverage(&txn, &coverage_rows).await?;
    store::save_energy(&txn, &energy_rows).await?;
    effects.buckets = store::add_increments(&txn, &increments).await?;
    store::insert_batch(&txn, node.id, &batch, now, effects.overlap_seconds).await?;
    txn.commit().await?;
    if effects.overlap_seconds > 0 {
        tracing::warn!(
            agent_id = %batch.agent_id,
            boot_id = %batch.boot_id,
            seq,
            overlap_seconds = effects.overlap_seconds,
            "Batch overlaps time already counted for its devices; the overlap was ignored."
        );
    }
    Ok((Outcome::Accepted { seq }, effects))
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
