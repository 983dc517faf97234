//! Ingest through NATS JetStream on PostgreSQL, beside HTTP ingest in the same run.
//!
//! For each count of ingest workers (`--workers 1,2,4`): a private nats-server (free port,
//! temporary store) and a fresh database; `--nodes` nodes of 8 H100s, all allocated;
//! `--batches` 10 s windows per node (72 samples a batch) published to JetStream by
//! `--publishers` tasks, exactly as agents publish them (node subject, message id); then an
//! `ingest` process starts over the backlog and is timed until every batch is committed
//! to the database's journal. That drain is "durable samples/s through JetStream"; the
//! process's CPU time over it, per sample, is what a worker costs. With the defaults the
//! backlog is 5 minutes of a 64-node fleet, so the drain time is also how long the journal
//! takes to catch up after PostgreSQL was away for 5 minutes (agents' and JetStream's
//! buffering in between).
//!
//! The baseline, in the same run on its own fresh database: the same batches posted to
//! `POST /v1/ingest` by `--publishers` keep-alive connections (the HTTP server's four
//! ingest writers), durable samples/s as `bench_ingest` counts them.
//!
//! `cargo run --release -p neocloud-api --example bench_stream_ingest -- --nodes 64 --batches 30 --publishers 16 --workers 1,2,4`

mod bench_support;

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use bench_support::fleet::{allocated_nodes, batches_of, samples};
use bench_support::http::post_all;
use bench_support::{BenchServer, arg};
use neocloud_api::settings::{Role, Settings};
use neocloud_api::startup::Application;
use neocloud_schema::entity::ingest_batch;
use neocloud_schema::usage_stream;
use sea_orm::{EntityTrait, PaginatorTrait};

/// A private nats-server, killed when dropped.
struct Nats {
    url: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Nats {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn nats() -> Nats {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let dir = tempfile::tempdir().expect("tempdir");
    let child = Command::new("nats-server")
        .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nats-server (scripts/test-deps.sh installs it)");
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(20));
    }
    Nats {
        url: format!("nats://127.0.0.1:{port}"),
        child,
        _dir: dir,
    }
}

/// CPU seconds process `pid` ("self" for this one) has used (user + system), from /proc.
fn cpu_seconds_of(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<f64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse().ok())
        .collect();
    fields.iter().sum::<f64>() / 100.0
}

fn cpu_seconds() -> f64 {
    cpu_seconds_of("self")
}

/// CPU seconds the whole machine has spent busy (every state but idle and I/O wait).
fn box_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let jiffies: Vec<f64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    let (idle, iowait) = (jiffies.get(3), jiffies.get(4));
    (jiffies.iter().sum::<f64>() - idle.unwrap_or(&0.0) - iowait.unwrap_or(&0.0)) / 100.0
}

/// Batches in the journal's identity table: those committed.
async fn committed(server: &BenchServer) -> u64 {
    ingest_batch::Entity::find()
        .count(&server.db)
        .await
        .expect("count")
}

/// One run over JetStream with `workers` ingest workers; prints its figures.
async fn over_jetstream(nodes: usize, batches: usize, publishers: usize, workers: usize) {
    let nats = nats();
    let url = nats.url.clone();
    // The API process: registers and orders; it consumes nothing.
    let server = BenchServer::start_with(|s| {
        s.role = Role::Api;
        s.nats.url = Some(url);
    })
    .await;
    let client = reqwest::Client::new();
    let agents = allocated_nodes(&server, &client, nodes).await;
    let work = batches_of(&agents, batches);
    let total: usize = work.iter().map(|(_, b)| samples(b)).sum();
    let js = async_nats::jetstream::new(async_nats::connect(&nats.url).await.expect("nats"));
    neocloud_api::nats::consumer::consumer(&js, 8 << 20)
        .await
        .expect("stream");
    // As a fleet's traffic arrives (and a backlog is stored): window by window, every node's
    // batch of a window before the next window's.
    let mut order: Vec<usize> = (0..work.len()).collect();
    order.sort_by_key(|i| (i % batches, i / batches));
    let messages: Vec<(String, String, Vec<u8>)> = order
        .into_iter()
        .map(|i| (i, &work[i].1))
        .map(|(i, b)| {
            let node = agents[i / batches].id.parse().expect("node id");
            let subject = usage_stream::subject("eu-west", node).expect("subject");
            let text = |field: &str| b[field].as_str().expect("text").to_owned();
            let id = format!("{}:{}:{}", text("agent_id"), text("boot_id"), b["seq"]);
            let body =
                zstd::encode_all(serde_json::to_vec(b).expect("json").as_slice(), 3).expect("zstd");
            (subject, id, body)
        })
        .collect();
    let published = publish(&js, Arc::new(messages), publishers).await;

    // The ingest process, over the backlog.
    let mut settings = Settings::for_tests("postgres://unused");
    settings.role = Role::Ingest;
    settings.nats.url = Some(nats.url.clone());
    settings.nats.workers = workers;
    let nats_pid = nats.child.id().to_string();
    let (cpu, nats_cpu, box_cpu, t) = (
        cpu_seconds(),
        cpu_seconds_of(&nats_pid),
        box_cpu_seconds(),
        Instant::now(),
    );
    let ingest = Application::build_with_db(
        settings,
        server.db.clone(),
        neocloud_schema::clock::system(),
    )
    .await
    .expect("ingest process");
    tokio::spawn(ingest.run_until_stopped());
    // Drained once JetStream holds nothing pending or unacknowledged: a worker acknowledges
    // a batch only after its commit. Asking NATS, not counting rows, keeps the watch off
    // the database being measured.
    loop {
        let info = neocloud_api::nats::consumer::backlog(&js).await;
        if info.is_some_and(|i| {
            i.num_pending == 0 && i.num_ack_pending == 0 && i.delivered.stream_sequence > 0
        }) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let drain = t.elapsed().as_secs_f64();
    let want = u64::try_from(work.len()).expect("count");
    assert_eq!(committed(&server).await, want, "every batch committed once");
    let per_sample = |seconds: f64| seconds * 1e6 / total as f64;
    println!(
        "JetStream, {workers} worker(s): {:>9.0} durable samples/s  ({total} samples committed in {drain:.2} s; \
         µs CPU a sample: {:.1} ingest process, {:.1} nats-server, {:.1} whole machine; published at {:.0} samples/s)",
        total as f64 / drain,
        per_sample(cpu_seconds() - cpu),
        per_sample(cpu_seconds_of(&nats_pid) - nats_cpu),
        per_sample(box_cpu_seconds() - box_cpu),
        total as f64 / published,
    );
    server.finish().await;
}

/// Publishes every message from `publishers` tasks, up to 64 unacknowledged each; the
/// seconds until JetStream acknowledged the last.
async fn publish(
    js: &async_nats::jetstream::Context,
    messages: Arc<Vec<(String, String, Vec<u8>)>>,
    publishers: usize,
) -> f64 {
    let t = Instant::now();
    let mut tasks = Vec::new();
    for p in 0..publishers {
        let (js, messages) = (js.clone(), messages.clone());
        tasks.push(tokio::spawn(async move {
            let mut acks = Vec::new();
            for (subject, id, body) in messages.iter().skip(p).step_by(publishers) {
                let mut headers = HeaderMap::new();
                headers.insert(usage_stream::MESSAGE_ID_HEADER, id.as_str());
                headers.insert(usage_stream::ENCODING_HEADER, "zstd");
                let ack = js
                    .publish_with_headers(subject.clone(), headers, body.clone().into())
                    .await
                    .expect("publish");
                acks.push(ack);
                if acks.len() == 64 {
                    for ack in acks.drain(..) {
                        ack.await.expect("stored");
                    }
                }
            }
            for ack in acks {
                ack.await.expect("stored");
            }
        }));
    }
    for task in tasks {
        task.await.expect("publisher");
    }
    t.elapsed().as_secs_f64()
}

/// The baseline: the same load over `POST /v1/ingest`.
async fn over_http(nodes: usize, batches: usize, publishers: usize) {
    let server = BenchServer::start().await;
    let client = reqwest::Client::new();
    let agents = allocated_nodes(&server, &client, nodes).await;
    let work = batches_of(&agents, batches);
    let total: usize = work.iter().map(|(_, b)| samples(b)).sum();
    let bodies = Arc::new(
        work.iter()
            .map(|(token, b)| {
                (
                    token.clone(),
                    serde_json::to_vec(b).expect("json"),
                    samples(b),
                )
            })
            .collect::<Vec<_>>(),
    );
    let (cpu, box_cpu, t) = (cpu_seconds(), box_cpu_seconds(), Instant::now());
    let durable = post_all(&server.url, "/v1/ingest", &bodies, publishers, batches).await;
    let took = t.elapsed().as_secs_f64();
    assert_eq!(durable, total, "every batch accepted");
    let per_sample = |seconds: f64| seconds * 1e6 / total as f64;
    println!(
        "HTTP (4 writers):     {:>9.0} durable samples/s  ({total} samples acknowledged in {took:.2} s; \
         µs CPU a sample: {:.1} server and posters, {:.1} whole machine)",
        total as f64 / took,
        per_sample(cpu_seconds() - cpu),
        per_sample(box_cpu_seconds() - box_cpu),
    );
    server.finish().await;
}

#[tokio::main]
async fn main() {
    let nodes = arg("--nodes", 64);
    let batches = arg("--batches", 30).min(30);
    let publishers = arg("--publishers", 16);
    let args: Vec<String> = std::env::args().collect();
    let workers: Vec<usize> = args
        .iter()
        .position(|a| a == "--workers")
        .and_then(|i| args.get(i + 1))
        .map_or_else(
            || vec![1, 2, 4],
            |w| w.split(',').filter_map(|n| n.parse().ok()).collect(),
        );
    println!(
        "{nodes} nodes × {batches} batches of {} samples, {publishers} publishers",
        8 * 9
    );
    // `--http 0` leaves the baseline out (to profile the JetStream path alone).
    if arg("--http", 1) != 0 {
        over_http(nodes, batches, publishers).await;
    }
    for w in workers {
        over_jetstream(nodes, batches, publishers, w).await;
    }
}
