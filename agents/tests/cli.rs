//! The `neocloud-agent` binary as an operator uses it: `probe`, and `run` with its own
//! `/metrics` and `/healthz`, a simulation profile file and a ground-truth file.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use neocloud_schema::ingest::{Batch, ValidationContext};

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
        })
        .expect("valid");
    assert_eq!(batch.devices.len(), 14);
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
