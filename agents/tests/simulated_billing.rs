//! What the agent bills equals what the simulated host really used, second by second:
//! batches from the sampler (and through a full spool that folds windows) validate
//! against the contract and reproduce the ground truth per allocation.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use neocloud_agent::attribution::AttributionConfig;
use neocloud_agent::sampler::Sampler;
use neocloud_agent::source::sim::{SimProfile, SimSource};
use neocloud_agent::spool::{Spool, SpoolLimits};
use neocloud_agent::window::ClosedWindow;
use neocloud_schema::agent_api::{Inventory, InventoryGpu};
use neocloud_schema::ids::AllocationId;
use neocloud_schema::ingest::{Batch, ValidationContext, WIRE_VERSION};

const T0: i64 = 1_800_000_000;

fn at(s: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(T0 + s, 0).expect("time")
}

/// Runs the simulated host at 1 Hz for `seconds`, closing a window every `interval`.
fn simulate(
    profile: SimProfile,
    seed: u64,
    seconds: i64,
    interval: i64,
) -> (Vec<ClosedWindow>, SimSource) {
    let mut sim = SimSource::new(profile, seed).expect("sim");
    sim.truth.retain = true;
    let mut sampler = Sampler::new(
        sim,
        AttributionConfig::default(),
        Duration::seconds(interval),
    );
    let mut windows = Vec::new();
    for s in 0..=seconds {
        windows.extend(sampler.cycle(at(s)).expect("cycle"));
    }
    windows.extend(sampler.flush());
    // Take the source back out for its truth.
    let sim = std::mem::replace(
        sampler.source_mut(),
        SimSource::new(
            SimProfile::uniform("x", neocloud_schema::gpu::GpuModel::L40S, 1, 1),
            0,
        )
        .expect("sim"),
    );
    (windows, sim)
}

fn batch(w: &ClosedWindow, seq: u64) -> Batch {
    Batch {
        version: WIRE_VERSION,
        agent_id: "sim-1".into(),
        boot_id: uuid::Uuid::nil(),
        seq,
        window: w.window,
        devices: w.devices.clone(),
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Billed {
    active_seconds: f64,
    fb_byte_seconds: f64,
    unreported_processes: usize,
}

fn billed(batches: &[Batch]) -> BTreeMap<AllocationId, Billed> {
    let mut out: BTreeMap<AllocationId, Billed> = BTreeMap::new();
    for b in batches {
        let secs = b.window.duration().num_milliseconds() as f64 / 1000.0;
        for d in &b.devices {
            for p in &d.processes {
                let a = p
                    .allocation_id
                    .expect("every simulated process is attributed");
                let e = out.entry(a).or_default();
                match p.sm_util_pct {
                    Some(u) => e.active_seconds += u / 100.0 * secs,
                    None => e.unreported_processes += 1,
                }
                e.fb_byte_seconds += p.fb_used_bytes.unwrap_or(0) as f64 * secs;
            }
        }
    }
    out
}

fn assert_matches_truth(batches: &[Batch], sim: &SimSource) {
    let (first, last) = (
        batches.first().expect("batches").window.start.timestamp(),
        batches.last().expect("batches").window.end.timestamp(),
    );
    let billed = billed(batches);
    let mut checked = 0;
    for (device, allocation) in sim.allocations() {
        let truth = sim.truth.total(allocation, first, last);
        let b = billed.get(&allocation).copied().unwrap_or_default();
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-6 * y.abs().max(1.0);
        assert!(
            close(b.active_seconds, truth.active_seconds),
            "{allocation} on {device}: billed {} active s, truth {}",
            b.active_seconds,
            truth.active_seconds
        );
        assert!(
            close(b.fb_byte_seconds, truth.fb_byte_seconds),
            "{allocation} on {device}: billed {} byte-s, truth {}",
            b.fb_byte_seconds,
            truth.fb_byte_seconds
        );
        if device.starts_with("MIG-") {
            assert_eq!(
                b.active_seconds, 0.0,
                "MIG activity is not reported per process"
            );
            assert!(truth.active_unreported_seconds > 0.0);
        }
        checked += 1;
    }
    assert!(checked >= 10);
}

fn ctx(profile: &SimProfile) -> ValidationContext {
    let (max_devices, max_fb_bytes, max_power_w) = profile.limits();
    ValidationContext {
        now: at(100_000),
        max_devices,
        max_fb_bytes,
        max_power_w,
    }
}

#[test]
fn every_simulated_batch_validates_and_bills_exactly_the_ground_truth() {
    let profile = SimProfile::mixed_host("sim-1");
    let (windows, sim) = simulate(profile.clone(), 42, 600, 10);
    assert_eq!(windows.len(), 60);
    let batches: Vec<Batch> = windows
        .iter()
        .enumerate()
        .map(|(i, w)| batch(w, i as u64 + 1))
        .collect();
    for b in &batches {
        b.validate(&ctx(&profile)).expect("valid batch");
    }
    assert_matches_truth(&batches, &sim);

    // The host's events all reach the batches, with the health they imply.
    let codes: Vec<u32> = batches
        .iter()
        .flat_map(|b| {
            b.devices
                .iter()
                .flat_map(|d| d.events.iter().map(|e| e.code))
        })
        .collect();
    assert_eq!(codes, vec![13, 94, 48, 79, 119]);
    let failed_windows = batches
        .iter()
        .filter(|b| {
            b.devices
                .iter()
                .any(|d| d.health == Some(neocloud_schema::ingest::DeviceHealth::Failed))
        })
        .count();
    assert!(failed_windows > 0);
}

#[test]
fn folding_in_a_full_spool_keeps_the_billed_totals_equal_to_the_truth() {
    let profile = SimProfile::mixed_host("sim-1");
    let (windows, sim) = simulate(profile.clone(), 7, 900, 10);
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = SpoolLimits {
        max_bytes: u64::MAX,
        max_records: 6,
    };
    let (mut spool, _) = Spool::open(dir.path(), "sim-1", limits).expect("spool");
    let mut folds = 0;
    for w in windows {
        folds += spool.append(w).expect("append").folds;
    }
    assert!(folds > 0);
    let mut batches = Vec::new();
    while let Some(b) = spool.head().expect("head") {
        b.validate(&ctx(&profile))
            .expect("a folded batch is still valid");
        assert!(b.window.duration() <= Duration::hours(1));
        spool.ack(b.seq).expect("ack");
        batches.push(b);
    }
    assert!(batches.len() <= 6);
    assert_matches_truth(&batches, &sim);
}

#[test]
fn a_simulated_agent_simulates_exactly_the_nodes_registered_devices() {
    let inventory = Inventory {
        node_id: None,
        hostname: "gpu-node-07".into(),
        region: "eu".into(),
        zone: "eu-1a".into(),
        rack: "r1".into(),
        nvlink_domain: "d1".into(),
        gpu_model: "H100".into(),
        mig_enabled: true,
        shared_gpus: false,
        gpus: (0..4)
            .map(|i| InventoryGpu {
                uuid: format!("GPU-00000000-0000-4000-8000-00000000000{i}"),
                index: i,
                model: "H100".into(),
                memory_mib: 80 * 1024,
                mig_enabled: i < 2,
                health: "ok".into(),
            })
            .collect(),
    };
    let profile = SimProfile::from_inventory(&inventory).expect("profile");
    let (windows, _) = simulate(profile.clone(), 3, 30, 10);
    for (i, w) in windows.iter().enumerate() {
        let b = batch(w, i as u64 + 1);
        b.validate(&ctx(&profile)).expect("valid");
        let gpus: Vec<&str> = b
            .devices
            .iter()
            .filter(|d| d.parent_uuid.is_none())
            .map(|d| d.uuid.as_str())
            .collect();
        let registered: Vec<&str> = inventory.gpus.iter().map(|g| g.uuid.as_str()).collect();
        assert_eq!(gpus, registered);
        assert!(
            b.devices
                .iter()
                .filter(|d| d.mig_profile.is_some())
                .all(|d| {
                    d.parent_uuid
                        .as_deref()
                        .is_some_and(|p| registered[..2].contains(&p))
                })
        );
    }
}
