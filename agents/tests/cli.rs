//! The `neocloud-agent` binary as an operator uses it: `probe`, and `run` with its own
//! `/metrics` and `/healthz`, a simulation profile file and a ground-truth file.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use neocloud_schema::agent_api::{Assignment, Assignments, Inventory, InventoryGpu};
use neocloud_schema::ids::AllocationId;
use neocloud_schema::ingest::{Batch, ValidationContext};

mod support;

fn agent() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_neocloud-agent"));
    cmd.env_remove("NEOCLOUD_AGENT_FAILPOINT")
        .env_remove("NEOCLOUD_AGENT_SERVER")
        .env_remove("NEOCLOUD_AGENT_TOKEN");
    cmd
}

#[test]
fn probe_prints_one_valid_batch_from_the_simulator() {
    let out = agent()
        .args([
            "probe",
            "--simulate",
            "--seed",
            "3",
            "--agent-id",
            "probe-1",
        ])
        .output()
        .expect("run probe");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let batch: Batch = serde_json::from_slice(&out.stdout).expect("a batch on stdout");
    assert_eq!(batch.agent_id, "probe-1");
    batch
        .validate(&ValidationContext {
            now: chrono::Utc::now(),
            max_devices: 14,
            max_fb_bytes: 80 * 1024 * 1024 * 1024,
            max_power_w: 700,
        })
        .expect("valid");
    assert_eq!(batch.devices.len(), 14);
}

#[test]
fn probe_prints_the_hardware_report_with_links_and_fabric() {
    let dir = tempfile::tempdir().expect("tempdir");
    let profile = dir.path().join("host.json");
    let fabric = serde_json::json!({"cluster_uuid": "6f1c2b8e-4d0a-4c55-9a3e-0b7d2f9e8a11",
        "clique_id": 3, "state": "completed"});
    let host = serde_json::json!({"hostname": "tray-1", "gpus": [
        {"model": "GB200", "fabric": fabric}, {"model": "L40S"}]});
    std::fs::write(&profile, host.to_string()).expect("profile");
    let out = agent()
        .args(["probe", "--hardware", "--simulate", "--sim-profile"])
        .arg(&profile)
        .output()
        .expect("run probe");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let gpus = report["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 2, "{report}");
    assert_eq!(
        (&gpus[0]["nvlinks_active"], &gpus[0]["fabric"]),
        (&serde_json::json!(18), &fabric)
    );
    assert_eq!(gpus[1]["nvlinks_active"], 0, "{report}");
    assert!(gpus[1].get("fabric").is_none(), "{report}");
}

#[test]
fn probe_without_a_driver_says_nvml_is_missing() {
    let out = agent().arg("probe").output().expect("run probe");
    if out.status.success() {
        // A host with a GPU: the batch must parse.
        serde_json::from_slice::<Batch>(&out.stdout).expect("a batch on stdout");
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("NVML is not available"), "{err}");
        assert!(
            err.contains("--simulate"),
            "the message says what to do: {err}"
        );
    }
}

fn http_get(addr: &str, path: &str) -> (u16, String) {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").expect("write");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read");
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn run_serves_metrics_and_health_and_writes_the_ground_truth() {
    let dir = tempfile::tempdir().expect("tempdir");
    let profile = r#"{"hostname": "file-host", "gpus": [{"model": "L40S"}, {"model": "H100", "mig": ["three_g", "three_g"]}], "processes_per_gpu": 3}"#;
    std::fs::write(dir.path().join("profile.json"), profile).expect("profile");
    let mut child = agent()
        .args([
            "run",
            "--simulate",
            "--agent-id",
            "file-host",
            "--interval",
            "0.5",
        ])
        .arg("--sim-profile")
        .arg(dir.path().join("profile.json"))
        .arg("--truth-out")
        .arg(dir.path().join("truth.jsonl"))
        .arg("--spool")
        .arg(dir.path().join("spool"))
        .args([
            "--sample-interval-ms",
            "100",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn");
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let pipe = child.stderr.take().expect("stderr");
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            sink.lock().expect("lines").push(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let addr = loop {
        let found = lines.lock().expect("lines").iter().find_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("addr="))
                .map(str::to_owned)
        });
        if let Some(a) = found {
            break a;
        }
        assert!(
            Instant::now() < deadline,
            "no metrics address: {:?}",
            lines.lock().expect("lines")
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // Wait until a window reached the spool and a second of truth was written.
    loop {
        let (status, body) = http_get(&addr, "/metrics");
        assert_eq!(status, 200);
        let spooled = body
            .lines()
            .find_map(|l| l.strip_prefix("neocloud_agent_batches_spooled "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0);
        let truth_written =
            std::fs::read_to_string(dir.path().join("truth.jsonl")).is_ok_and(|t| !t.is_empty());
        if spooled >= 1.0 && truth_written {
            assert!(body.contains("neocloud_agent_samples_total"));
            assert!(body.contains("neocloud_agent_spool_bytes"));
            break;
        }
        assert!(Instant::now() < deadline, "nothing spooled: {body}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, body) = http_get(&addr, "/healthz");
    assert_eq!(status, 200, "{body}");
    let health: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(health["status"], "ok");
    assert_eq!(health["source"], "sim");
    let _ = child.kill();
    let _ = child.wait();
    let truth = std::fs::read_to_string(dir.path().join("truth.jsonl")).expect("truth file");
    let first: serde_json::Value =
        serde_json::from_str(truth.lines().next().expect("a line")).expect("json line");
    assert!(first["allocation_id"].is_string());
    assert!(first["active_seconds"].is_number());
}

#[test]
fn a_half_given_server_address_is_refused_with_a_message() {
    let out = agent()
        .args([
            "run",
            "--simulate",
            "--server",
            "http://127.0.0.1:9",
            "--metrics-listen",
            "off",
        ])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let mut err = String::new();
    out.stderr
        .as_slice()
        .read_to_string(&mut err)
        .expect("utf8");
    assert!(err.contains("--server and --token go together"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_a_server_simulates_the_nodes_devices_and_bills_its_allocations() {
    let gpu = |i: u32| format!("GPU-00000000-0000-4000-8000-00000000000{i}");
    let inventory = Inventory {
        node_id: None,
        hostname: "eu-l40s-01".into(),
        region: "eu".into(),
        zone: "eu-1a".into(),
        rack: "r1".into(),
        nvlink_domain: "eu-l40s-01".into(),
        gpu_model: "L40S".into(),
        mig_enabled: false,
        shared_gpus: true,
        gpus: (0..2)
            .map(|i| InventoryGpu {
                uuid: gpu(i),
                index: i,
                model: "L40S".into(),
                memory_mib: 48 * 1024,
                mig_enabled: false,
                health: "ok".into(),
            })
            .collect(),
    };
    let allocation = AllocationId(uuid::Uuid::from_u128(77));
    let server = support::IngestServer::start((2, 48 << 30, 350), Some(inventory)).await;
    server.with(|s| {
        s.assignments = Some(Assignments {
            hostname: "eu-l40s-01".into(),
            assignments: vec![Assignment {
                allocation_id: allocation,
                gpu_uuid: gpu(1),
                mig_profile: None,
                mig_start_slot: None,
                milli_gpu: Some(250),
                status: "active".into(),
                started_at: chrono::Utc::now(),
                preempt_at: None,
            }],
        })
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = agent()
        .args([
            "run",
            "--simulate",
            "--server",
            &server.url(),
            "--token",
            support::TOKEN,
        ])
        .arg("--spool")
        .arg(dir.path().join("spool"))
        .args([
            "--interval",
            "0.5",
            "--sample-interval-ms",
            "100",
            "--metrics-listen",
            "off",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    server
        .wait_for(30, "batches with the allocation's usage", |s| {
            s.stored
                .values()
                .filter(|b| !b.devices.iter().all(|d| d.processes.is_empty()))
                .count()
                >= 2
        })
        .await;
    let _ = child.kill();
    let _ = child.wait();
    server.assert_complete_and_exact();
    server.with(|s| {
        for b in s.stored.values() {
            assert_eq!(b.agent_id, "eu-l40s-01", "the registered hostname");
            let uuids: Vec<&str> = b.devices.iter().map(|d| d.uuid.as_str()).collect();
            assert_eq!(uuids, [gpu(0), gpu(1)], "exactly the registered GPUs");
            assert!(
                b.devices[0].processes.is_empty(),
                "an unassigned GPU is idle"
            );
            assert!(
                b.devices[1]
                    .processes
                    .iter()
                    .all(|p| p.allocation_id == Some(allocation))
            );
        }
    });
}
