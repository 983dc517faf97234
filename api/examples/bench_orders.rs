//! `placeOrder` throughput and latency on PostgreSQL: the real server, a fleet of
//! `--nodes` 8×H100 nodes, `--clients` concurrent clients each placing one-GPU orders
//! until `--orders` are placed. The baseline, measured in the same run with the same
//! clients, is an authenticated `viewer` query: the floor every request pays (HTTP,
//! auth, GraphQL) before any ordering work. Last, how many placement transactions the
//! orders took (orders waiting behind the fleet lock are placed together).
//!
//! `cargo run --release -p neocloud-api --example bench_orders -- --nodes 1000 --orders 4000 --clients 16`
//! (PostgreSQL at `NEOCLOUD_TEST_POSTGRES_URL`, default postgres://postgres@127.0.0.1:5432/postgres;
//! a fresh database is created and dropped).

mod bench_support;

use bench_support::{BenchServer, arg, gql};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::time::{Duration, Instant};

use serde_json::json;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Runs `clients` loops of `one` until `total` calls are done; returns (calls/s, p50, p99).
async fn drive<F, Fut>(clients: usize, total: usize, one: F) -> (f64, Duration, Duration)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = bool> + Send,
{
    let one = Arc::new(one);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (one, next) = (one.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let i = next.fetch_add(1, AtomicOrdering::SeqCst);
                if i >= total {
                    break;
                }
                let t = Instant::now();
                assert!(one(i).await, "call {i} failed");
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("client"));
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort();
    (
        total as f64 / elapsed,
        percentile(&all, 0.5),
        percentile(&all, 0.99),
    )
}

#[tokio::main]
async fn main() {
    let nodes = arg("--nodes", 1000);
    let orders = arg("--orders", 4000);
    let clients = arg("--clients", 16);
    let server = BenchServer::start().await;
    let (url, db) = (server.url.clone(), server.db.clone());
    let client = reqwest::Client::new();

    let seeded = Instant::now();
    server.register_h100_nodes(&client, nodes).await;
    let (sku, key) = server.h100_sku_and_tenant(&client).await;
    println!(
        "fleet: {nodes} nodes × 8 H100 registered in {:.1} s; {clients} clients",
        seeded.elapsed().as_secs_f64()
    );

    let (c, u, k) = (client.clone(), url.clone(), key.clone());
    let (rate, p50, p99) = drive(clients, orders, move |_| {
        let (c, u, k) = (c.clone(), u.clone(), k.clone());
        async move {
            let r = gql(&c, &u, &k, "{ viewer { role } }", json!({})).await;
            r["data"]["viewer"].is_object()
        }
    })
    .await;
    println!(
        "baseline  viewer query   {rate:>8.0} req/s   p50 {:>6.2} ms   p99 {:>6.2} ms",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );

    let (c, u, k) = (client.clone(), url.clone(), key.clone());
    let (rate, p50, p99) = drive(clients, orders, move |i| {
        let (c, u, k, s) = (c.clone(), u.clone(), k.clone(), sku.clone());
        async move {
            let r = gql(
                &c,
                &u,
                &k,
                "mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { id } } }",
                json!({"i": {"sku": s, "count": 1, "idempotencyKey": format!("bench-{i}")}}),
            )
            .await;
            r["data"]["placeOrder"]["order"]["id"].is_string()
        }
    })
    .await;
    println!(
        "placeOrder (1 GPU)       {rate:>8.0} orders/s p50 {:>6.2} ms   p99 {:>6.2} ms",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
    let metrics = client
        .get(format!("{url}/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    let value = |name: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("neocloud_{name} ")))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let (batches, placed) = (
        value("placement_batches_total"),
        value("placement_orders_total"),
    );
    if batches > 0.0 {
        println!(
            "placement transactions   {batches:>8.0}   {:.1} orders and {:.2} ms each on average",
            placed / batches,
            value("placement_batch_seconds_sum") * 1e3 / batches
        );
    }

    drop(db);
    server.finish().await;
}
