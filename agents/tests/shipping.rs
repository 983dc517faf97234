//! The running agent (simulated host, real spool, HTTP shipper) against a contract-
//! abiding ingest server that fails in every way the contract allows.

mod support;

use std::sync::Arc;
use std::time::Duration;

use std::collections::BTreeSet;

use neocloud_agent::agent::{AgentConfig, RunReport, SimulatedAgent, run};
use neocloud_agent::metrics::{AgentMetrics, Health};
use neocloud_agent::shipper::{Compression, HttpShipper, ShipOutcome, Shipper};
use neocloud_agent::source::sim::{SimProfile, SimSource};
use neocloud_schema::agent_api::{Assignment, Assignments, Inventory, InventoryGpu};
use neocloud_schema::ids::AllocationId;
use support::{Fault, IngestServer, TOKEN};
use tokio::sync::watch;
use tokio::task::JoinHandle;

struct Running {
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<RunReport, neocloud_agent::AgentError>>,
    health: Arc<Health>,
    metrics: AgentMetrics,
    dir: tempfile::TempDir,
}

impl Running {
    async fn stop(self) -> (RunReport, tempfile::TempDir) {
        self.stop.send(true).expect("stop");
        let report = self.task.await.expect("join").expect("agent ran");
        (report, self.dir)
    }
}

fn start(server: &IngestServer, compression: Compression) -> Running {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = AgentConfig::new("sim-node-1", dir.path().join("spool"));
    config.interval = Duration::from_millis(200);
    config.sample_interval = Duration::from_millis(100);
    config.backoff_base = Duration::from_millis(10);
    config.backoff_max = Duration::from_millis(100);
    config.auth_backoff = Duration::from_millis(50);
    let shipper = HttpShipper::new(&server.url(), TOKEN, compression).expect("client");
    let metrics = AgentMetrics::new().expect("metrics");
    let health = Arc::new(Health::default());
    let (stop, rx) = watch::channel(false);
    let task = tokio::spawn(run(
        config,
        || SimSource::new(SimProfile::mixed_host("sim-node-1"), 11),
        Some(shipper),
        metrics.clone(),
        health.clone(),
        rx,
    ));
    Running {
        stop,
        task,
        health,
        metrics,
        dir,
    }
}

async fn server() -> IngestServer {
    IngestServer::start(SimProfile::mixed_host("sim-node-1").limits(), None).await
}

#[tokio::test]
async fn batches_survive_server_errors_dropped_connections_and_lost_answers() {
    let server = server().await;
    server.with(|s| {
        s.faults.extend([
            Fault::ServerError,
            Fault::Drop,
            Fault::StoreThenDrop,
            Fault::ServerError,
            Fault::StoreThenDrop,
            Fault::Drop,
        ])
    });
    let agent = start(&server, Compression::Gzip);
    server
        .wait_for(30, "12 stored batches", |s| s.stored.len() >= 12)
        .await;
    let duplicates = agent
        .metrics
        .batches_acked_total
        .with_label_values(&["duplicate"])
        .get();
    let (_, _dir) = agent.stop().await;
    server.assert_complete_and_exact();
    let log = server.with(|s| s.log.clone());
    // Seq 1 meets every fault: stored at the first lost answer, its resend's answer is
    // lost too, and the third send is answered `duplicate`.
    let posts_of_1 = log.iter().filter(|l| l.1 == 1).count();
    assert_eq!((posts_of_1, duplicates), (3, 1), "{log:?}");
    assert!(server.with(|s| s.encodings.iter().all(|e| e == "gzip")));
}

#[tokio::test]
async fn a_poison_batch_is_quarantined_and_the_rest_goes_on() {
    let server = server().await;
    server.with(|s| s.poison_seq = Some(2));
    let agent = start(&server, Compression::Zstd);
    server
        .wait_for(30, "seq 5 stored", |s| {
            s.stored.keys().any(|(_, seq)| *seq >= 5)
        })
        .await;
    assert_eq!(agent.metrics.spool_quarantined_total.get(), 1);
    let (_, dir) = agent.stop().await;
    let seqs: Vec<u64> = server.with(|s| s.stored.keys().map(|k| k.1).collect());
    assert!(!seqs.contains(&2));
    let posts_of_2 = server.with(|s| s.log.iter().filter(|l| l.1 == 2).count());
    assert_eq!(posts_of_2, 1, "a poison batch is sent once, never retried");
    let quarantined = std::fs::read_dir(dir.path().join("spool/quarantine"))
        .expect("quarantine dir")
        .count();
    assert_eq!(quarantined, 1);
}

#[tokio::test]
async fn a_refused_token_pauses_shipping_without_losing_usage() {
    let server = server().await;
    server.with(|s| s.refuse_token = true);
    let agent = start(&server, Compression::Gzip);
    server
        .wait_for(30, "three refusals", |s| {
            s.log.iter().filter(|l| l.2 == 401).count() >= 3
        })
        .await;
    assert!(
        agent
            .health
            .auth_rejected
            .load(std::sync::atomic::Ordering::Relaxed)
    );
    assert_eq!(server.stored_count(), 0);
    server.with(|s| s.refuse_token = false);
    server
        .wait_for(30, "batches after the fix", |s| s.stored.len() >= 5)
        .await;
    assert!(
        !agent
            .health
            .auth_rejected
            .load(std::sync::atomic::Ordering::Relaxed)
    );
    let (_, _dir) = agent.stop().await;
    server.assert_complete_and_exact();
    // Nothing spooled while refused was lost: the first window starts the series.
    let first = server.with(|s| s.stored.values().next().map(|b| b.seq));
    assert_eq!(first, Some(1));
}

#[tokio::test]
async fn a_too_large_batch_is_split_until_it_fits() {
    let server = server().await;
    server.with(|s| s.max_devices = Some(4));
    let agent = start(&server, Compression::None);
    server
        .wait_for(30, "16 stored batches", |s| s.stored.len() >= 16)
        .await;
    let (_, _dir) = agent.stop().await;
    server.assert_complete_and_exact();
    assert!(server.with(|s| s.stored.values().all(|b| b.devices.len() <= 4)));
}

#[tokio::test]
async fn the_shipper_classifies_every_answer_of_the_contract() {
    let server = server().await;
    let shipper = HttpShipper::new(&server.url(), TOKEN, Compression::Zstd).expect("client");
    let mut sim = SimSource::new(SimProfile::mixed_host("sim-node-1"), 1).expect("sim");
    use neocloud_agent::GpuSource;
    let mut builder = neocloud_agent::window::WindowBuilder::new();
    let mut attributor = neocloud_agent::attribution::Attributor::new(Default::default());
    let now = chrono::Utc::now();
    for s in 0..3 {
        let snap = sim
            .sample(now - chrono::Duration::seconds(3 - s))
            .expect("sample");
        builder.add(&snap, &mut attributor, sim.process_table());
    }
    let w = builder.close().expect("window");
    let batch = neocloud_schema::ingest::Batch {
        version: 1,
        agent_id: "sim-node-1".into(),
        boot_id: uuid::Uuid::new_v4(),
        seq: 1,
        window: w.window,
        devices: w.devices,
    };
    assert_eq!(shipper.ship(&batch).await, ShipOutcome::Accepted);
    assert_eq!(shipper.ship(&batch).await, ShipOutcome::Duplicate);
    server.with(|s| s.faults.push_back(Fault::ServerError));
    assert!(matches!(
        shipper.ship(&batch).await,
        ShipOutcome::Retry { .. }
    ));
    server.with(|s| s.faults.push_back(Fault::Drop));
    assert!(matches!(
        shipper.ship(&batch).await,
        ShipOutcome::Retry { .. }
    ));
    server.with(|s| s.faults.push_back(Fault::Unauthorized));
    assert!(matches!(
        shipper.ship(&batch).await,
        ShipOutcome::Unauthorized { status: 401, .. }
    ));
    let mut bad = batch.clone();
    bad.seq = 2;
    bad.devices[0].sm_util_pct = Some(150.0);
    match shipper.ship(&bad).await {
        ShipOutcome::Invalid { message } => assert!(message.contains("sm_util_pct"), "{message}"),
        other => panic!("expected invalid, got {other:?}"),
    }
    server.with(|s| s.max_devices = Some(1));
    let mut big = batch.clone();
    big.seq = 3;
    assert_eq!(shipper.ship(&big).await, ShipOutcome::TooLarge);
}

fn assignment(allocation: AllocationId, gpu: &str, mig: Option<(&str, u8)>) -> Assignment {
    Assignment {
        allocation_id: allocation,
        gpu_uuid: gpu.into(),
        mig_profile: mig.map(|m| m.0.to_owned()),
        mig_start_slot: mig.map(|m| m.1),
        milli_gpu: None,
        status: "active".into(),
        started_at: chrono::Utc::now(),
        preempt_at: None,
    }
}

fn allocations_in(b: &neocloud_schema::ingest::Batch) -> BTreeSet<AllocationId> {
    b.devices
        .iter()
        .flat_map(|d| d.processes.iter().filter_map(|p| p.allocation_id))
        .collect()
}

#[tokio::test]
async fn the_demos_simulated_agent_bills_exactly_the_nodes_allocations() {
    let gpu = |i: u32| format!("GPU-00000000-0000-4000-8000-00000000000{i}");
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
                uuid: gpu(i),
                index: i,
                model: "H100".into(),
                memory_mib: 80 * 1024,
                mig_enabled: i < 2,
                health: "ok".into(),
            })
            .collect(),
    };
    let id = |n: u128| AllocationId(uuid::Uuid::from_u128(n));
    let (whole, mig_3g, mig_1g, later) = (id(1), id(2), id(3), id(4));
    let server = IngestServer::start((32, 80 << 30, 700), Some(inventory)).await;
    server.with(|s| {
        s.assignments = Some(Assignments {
            hostname: "gpu-node-07".into(),
            assignments: vec![
                assignment(whole, &gpu(2), None),
                assignment(mig_3g, &gpu(0), Some(("3g.40gb", 0))),
                assignment(mig_1g, &gpu(0), Some(("1g.10gb", 4))),
            ],
        })
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let mut agent = SimulatedAgent::new(&server.url(), TOKEN, 21, dir.path().join("spool"));
    agent.interval = Duration::from_millis(200);
    agent.assignments_period = Duration::from_millis(100);
    let (stop, rx) = watch::channel(false);
    let task = tokio::spawn(agent.run(rx));
    server
        .wait_for(30, "batches with all three allocations", |s| {
            s.stored.values().any(|b| allocations_in(b).len() == 3)
        })
        .await;
    // The whole GPU's allocation ends; another starts on GPU 3.
    server.with(|s| {
        if let Some(a) = &mut s.assignments {
            a.assignments[0] = assignment(later, &gpu(3), None);
        }
    });
    server
        .wait_for(30, "the new allocation's usage", |s| {
            s.stored
                .values()
                .last()
                .is_some_and(|b| allocations_in(b) == [mig_3g, mig_1g, later].into())
        })
        .await;
    stop.send(true).expect("stop");
    task.await.expect("join").expect("ran");
    server.assert_complete_and_exact();
    server.with(|s| {
        for b in s.stored.values() {
            assert_eq!(b.agent_id, "gpu-node-07");
            assert!(allocations_in(b).is_subset(&[whole, mig_3g, mig_1g, later].into()));
            let gpus: BTreeSet<&str> = b
                .devices
                .iter()
                .filter(|d| d.parent_uuid.is_none())
                .map(|d| d.uuid.as_str())
                .collect();
            assert_eq!(gpus.len(), 4, "exactly the registered GPUs");
        }
    });
}
