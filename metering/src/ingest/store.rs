//! SQL of ingest: batch ids, coverage masks, energy cursors, usage buckets, events.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{
    allocation, allocation_gpu, device_coverage, device_energy, gpu, gpu_event, ingest_batch, node,
    usage_minute,
};
use neocloud_schema::ingest::{Batch, HealthEvent};
use rust_decimal::Decimal;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    Set,
};
use uuid::Uuid;

use super::fold::{Candidate, Holding, Increment};
use crate::coverage::MinuteMask;

/// Millijoules in a kilowatt-hour.
const MJ_PER_KWH: i64 = 3_600_000_000;

pub(super) async fn gpus_of<C: ConnectionTrait>(
    conn: &C,
    node: Uuid,
) -> Result<Vec<gpu::Model>, DbErr> {
    gpu::Entity::find()
        .filter(gpu::Column::NodeId.eq(node))
        .order_by_asc(gpu::Column::Index)
        .all(conn)
        .await
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

/// A no-op write on the node's row: it holds the row lock until commit.
pub(super) async fn lock_node<C: ConnectionTrait>(conn: &C, node: Uuid) -> Result<(), DbErr> {
    node::Entity::update_many()
        .col_expr(node::Column::Hostname, Expr::col(node::Column::Hostname))
        .filter(node::Column::Id.eq(node))
        .exec(conn)
        .await
        .map(|_| ())
}

pub(super) async fn batch_exists<C: ConnectionTrait>(
    conn: &C,
    batch: &Batch,
) -> Result<bool, DbErr> {
    Ok(ingest_batch::Entity::find()
        .filter(ingest_batch::Column::AgentId.eq(batch.agent_id.as_str()))
        .filter(ingest_batch::Column::BootId.eq(batch.boot_id))
        .filter(ingest_batch::Column::Seq.eq(batch.seq as i64))
        .one(conn)
        .await?
        .is_some())
}

pub(super) async fn insert_batch<C: ConnectionTrait>(
    conn: &C,
    node: Uuid,
    batch: &Batch,
    now: DateTime<Utc>,
    overlap_seconds: i64,
) -> Result<(), DbErr> {
    ingest_batch::ActiveModel {
        id: Set(Uuid::now_v7()),
        node_id: Set(node),
        agent_id: Set(batch.agent_id.clone()),
        boot_id: Set(batch.boot_id),
        seq: Set(batch.seq as i64),
        window_start: Set(batch.window.start),
        window_end: Set(batch.window.end),
        received_at: Set(now),
        devices: Set(batch.devices.len() as i32),
        overlap_seconds: Set(overlap_seconds),
    }
    .insert(conn)
    .await
    .map(|_| ())
}

/// Allocations holding each of `gpus` at any time in `[start, end)`.
pub(super) async fn candidates<C: ConnectionTrait>(
    conn: &C,
    gpus: &[gpu::Model],
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<HashMap<Uuid, Vec<Candidate>>, DbErr> {
    let rows = allocation_gpu::Entity::find()
        .filter(allocation_gpu::Column::GpuId.is_in(gpus.iter().map(|g| g.id)))
        .all(conn)
        .await?;
    let allocations: HashMap<Uuid, allocation::Model> = allocation::Entity::find()
        .filter(allocation::Column::Id.is_in(rows.iter().map(|r| r.allocation_id)))
        .filter(allocation::Column::StartedAt.lt(end))
        .all(conn)
        .await?
        .into_iter()
        .filter(|a| a.ended_at.is_none_or(|e| e > start))
        .map(|a| (a.id, a))
        .collect();
    let mut out: HashMap<Uuid, Vec<Candidate>> = HashMap::new();
    for row in rows {
        let Some(a) = allocations.get(&row.allocation_id) else {
            continue;
        };
        let holding = match (&a.mig_profile, a.milli_gpu) {
            (Some(profile), _) => Holding::Mig(profile.clone()),
            (None, Some(_)) => Holding::Fraction,
            (None, None) => Holding::Whole,
        };
        out.entry(row.gpu_id).or_default().push(Candidate {
            allocation: a.id,
            tenant: a.tenant_id,
            sku: a.sku_id,
            start: a.started_at,
            end: a.ended_at,
            holding,
        });
    }
    for list in out.values_mut() {
        list.sort_by_key(|c| (c.start, c.allocation));
    }
    Ok(out)
}

pub(super) async fn coverage<C: ConnectionTrait>(
    conn: &C,
    device: &str,
    minutes: impl Iterator<Item = DateTime<Utc>>,
) -> Result<BTreeMap<DateTime<Utc>, MinuteMask>, DbErr> {
    let minutes: Vec<_> = minutes.collect();
    Ok(device_coverage::Entity::find()
        .filter(device_coverage::Column::DeviceUuid.eq(device))
        .filter(device_coverage::Column::MinuteStart.is_in(minutes))
        .all(conn)
        .await?
        .into_iter()
        .map(|row| (row.minute_start, row.mask as u64))
        .collect())
}

pub(super) async fn save_coverage<C: ConnectionTrait>(
    conn: &C,
    device: &str,
    masks: &BTreeMap<DateTime<Utc>, MinuteMask>,
    old: &BTreeMap<DateTime<Utc>, MinuteMask>,
) -> Result<(), DbErr> {
    for (minute, mask) in masks {
        match old.get(minute) {
            Some(before) if before | mask == *before => {}
            Some(before) => {
                device_coverage::Entity::update_many()
                    .col_expr(
                        device_coverage::Column::Mask,
                        Expr::value((before | mask) as i64),
                    )
                    .filter(device_coverage::Column::DeviceUuid.eq(device))
                    .filter(device_coverage::Column::MinuteStart.eq(*minute))
                    .exec(conn)
                    .await?;
            }
            None => {
                device_coverage::ActiveModel {
                    device_uuid: Set(device.to_owned()),
                    minute_start: Set(*minute),
                    mask: Set(*mask as i64),
                }
                .insert(conn)
                .await?;
            }
        }
    }
    Ok(())
}

/// Energy since the device's previous reading, in kWh; a counter that went backwards was
/// reset (driver reload) and counts from zero. The first reading only sets the cursor.
pub(super) async fn energy_delta_kwh<C: ConnectionTrait>(
    conn: &C,
    device: &str,
    energy_mj: Option<u64>,
    at: DateTime<Utc>,
) -> Result<Decimal, DbErr> {
    let Some(now_mj) = energy_mj else {
        return Ok(Decimal::ZERO);
    };
    let now_mj = now_mj.min(i64::MAX as u64) as i64;
    let previous = device_energy::Entity::find_by_id(device.to_owned())
        .one(conn)
        .await?;
    let delta = match &previous {
        Some(p) if at <= p.last_at => return Ok(Decimal::ZERO),
        Some(p) if now_mj >= p.last_energy_mj => now_mj - p.last_energy_mj,
        Some(_) => now_mj,
        None => 0,
    };
    match previous {
        Some(p) => {
            let mut active: device_energy::ActiveModel = p.into();
            active.last_energy_mj = Set(now_mj);
            active.last_at = Set(at);
            active.update(conn).await?;
        }
        None => {
            device_energy::ActiveModel {
                device_uuid: Set(device.to_owned()),
                last_energy_mj: Set(now_mj),
                last_at: Set(at),
            }
            .insert(conn)
            .await?;
        }
    }
    Ok((Decimal::from(delta) / Decimal::from(MJ_PER_KWH)).round_dp(12))
}

pub(super) async fn record_event<C: ConnectionTrait>(
    conn: &C,
    node: Uuid,
    device: &str,
    event: &HealthEvent,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    gpu_event::ActiveModel {
        id: Set(Uuid::now_v7()),
        node_id: Set(node),
        device_uuid: Set(device.to_owned()),
        kind: Set(format!("{:?}", event.kind).to_lowercase()),
        code: Set(event.code.min(i32::MAX as u32) as i32),
        at: Set(event.at),
        received_at: Set(now),
    }
    .insert(conn)
    .await
    .map(|_| ())
}

fn dec(text: &str) -> Decimal {
    text.parse().unwrap_or_default()
}

/// Adds increments to their minute buckets. Returns how many buckets were touched.
pub(super) async fn add_increments<C: ConnectionTrait>(
    conn: &C,
    increments: &[(String, Increment)],
) -> Result<usize, DbErr> {
    // Merge increments of one bucket first: one read and one write per bucket.
    let mut merged: BTreeMap<(Uuid, DateTime<Utc>, String, String), Increment> = BTreeMap::new();
    for (device, inc) in increments {
        let key = (
            inc.allocation,
            inc.minute,
            device.clone(),
            inc.label.clone(),
        );
        match merged.get_mut(&key) {
            Some(m) => {
                m.active_seconds += inc.active_seconds;
                m.memory_gib_seconds += inc.memory_gib_seconds;
                m.energy_kwh += inc.energy_kwh;
                m.seconds += inc.seconds;
            }
            None => {
                merged.insert(key, inc.clone());
            }
        }
    }
    for ((allocation, minute, device, label), inc) in &merged {
        let existing = usage_minute::Entity::find()
            .filter(usage_minute::Column::AllocationId.eq(*allocation))
            .filter(usage_minute::Column::MinuteStart.eq(*minute))
            .filter(usage_minute::Column::DeviceUuid.eq(device.as_str()))
            .filter(usage_minute::Column::Label.eq(label.as_str()))
            .one(conn)
            .await?;
        match existing {
            Some(row) => {
                let mut active: usage_minute::ActiveModel = row.clone().into();
                active.active_seconds =
                    Set((dec(&row.active_seconds) + inc.active_seconds).to_string());
                active.memory_gib_seconds =
                    Set((dec(&row.memory_gib_seconds) + inc.memory_gib_seconds).to_string());
                active.energy_kwh = Set((dec(&row.energy_kwh) + inc.energy_kwh).to_string());
                active.sampled_seconds = Set(row.sampled_seconds + inc.seconds);
                active.update(conn).await?;
            }
            None => {
                usage_minute::ActiveModel {
                    id: Set(Uuid::now_v7()),
                    minute_start: Set(*minute),
                    device_uuid: Set(device.clone()),
                    allocation_id: Set(*allocation),
                    tenant_id: Set(inc.tenant),
                    sku_id: Set(inc.sku),
                    label: Set(label.clone()),
                    active_seconds: Set(inc.active_seconds.to_string()),
                    memory_gib_seconds: Set(inc.memory_gib_seconds.to_string()),
                    energy_kwh: Set(inc.energy_kwh.to_string()),
                    sampled_seconds: Set(inc.seconds),
                }
                .insert(conn)
                .await?;
            }
        }
    }
    Ok(merged.len())
}

/// Per `(agent_id, boot_id)`: last seq, how many below it are missing, lag.
pub(super) async fn streams<C: ConnectionTrait>(
    conn: &C,
    now: DateTime<Utc>,
) -> Result<Vec<super::StreamHealth>, DbErr> {
    let mut by_stream: BTreeMap<(String, Uuid), super::StreamHealth> = BTreeMap::new();
    let mut counts: BTreeMap<(String, Uuid), i64> = BTreeMap::new();
    let mut ends: BTreeMap<(String, Uuid), DateTime<Utc>> = BTreeMap::new();
    for b in ingest_batch::Entity::find().all(conn).await? {
        let key = (b.agent_id.clone(), b.boot_id);
        let stream = by_stream.entry(key.clone()).or_insert(super::StreamHealth {
            agent_id: b.agent_id.clone(),
            boot_id: b.boot_id,
            last_seq: 0,
            gaps: 0,
            lag_seconds: 0,
            last_received_at: b.received_at,
        });
        stream.last_seq = stream.last_seq.max(b.seq);
        stream.last_received_at = stream.last_received_at.max(b.received_at);
        *counts.entry(key.clone()).or_default() += 1;
        let end = ends.entry(key).or_insert(b.window_end);
        *end = (*end).max(b.window_end);
    }
    let mut out: Vec<super::StreamHealth> = by_stream
        .into_iter()
        .map(|(key, mut stream)| {
            stream.gaps = stream.last_seq - counts.get(&key).copied().unwrap_or(0);
            stream.lag_seconds = ends
                .get(&key)
                .map_or(0, |end| (now - *end).num_seconds().max(0));
            stream
        })
        .collect();
    out.sort_by_key(|s| std::cmp::Reverse(s.last_received_at));
    Ok(out)
}
