//! Webhook delivery at scale, on PostgreSQL: `--endpoints` operator endpoints (seeded
//! straight into the table, past the API's 20 per owner) on one loopback receiver, each
//! taking every tenant's `quota.changed`. Events are recorded and committed by this
//! process, each in its own transaction as the server's changes are, and the server's
//! delivery worker sends them: every event to every endpoint, signed, each attempt
//! claimed and settled in the database.
//!
//! 1. Throughput: `--events` events committed as fast as possible; deliveries per second
//!    from the first commit to the last delivery.
//! 2. Latency: `--paced` events at `--rate` a second; commit → arrival of each
//!    (event, endpoint), p50/p99/max.
//!
//! Baselines, in the same run and on the same receiver: a plain `reqwest` client and the
//! server's own outbound client (`WebhookClient`: address checks, no redirects, bounded
//! answer), each POSTing the same bodies with the worker's 32 requests in flight and no
//! database.
//!
//! `cargo run --release -p neocloud-api --example bench_webhooks -- --endpoints 100 --events 200 --paced 100 --rate 5`

mod bench_support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bench_support::{BenchServer, arg, gql};
use chrono::Utc;
use futures_util::StreamExt;
use neocloud_api::outbound::{AllowList, WebhookClient};
use neocloud_metering::events::webhooks as store;
use neocloud_metering::events::{self, NewEvent};
use neocloud_schema::entity::webhook_endpoint;
use neocloud_schema::ids::{TenantId, WebhookEndpointId};
use sea_orm::TransactionTrait;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Arrivals by `webhook-id` (empty for baseline requests): when, and on which path.
type Arrivals = Arc<Mutex<Vec<(String, String, Instant)>>>;

/// Serves HTTP/1.1 with keep-alive: every POST answered 204 at once, its arrival kept.
async fn receiver(arrivals: Arrivals) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(serve(socket, arrivals.clone()));
        }
    });
    base
}

async fn serve(mut socket: tokio::net::TcpStream, arrivals: Arrivals) {
    let mut data = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        let Some(end) = find(&data, b"\r\n\r\n") else {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => data.extend_from_slice(&buf[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&data[..end]).to_string();
        let header = |name: &str| {
            head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
            })
        };
        let length: usize = header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        while data.len() < end + 4 + length {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => data.extend_from_slice(&buf[..n]),
            }
        }
        let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
        let id = header("webhook-id").unwrap_or_default();
        arrivals
            .lock()
            .expect("lock")
            .push((id, path, Instant::now()));
        data.drain(..end + 4 + length);
        let ok = b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n";
        if socket.write_all(ok).await.is_err() {
            return;
        }
    }
}

fn find(data: &[u8], needle: &[u8]) -> Option<usize> {
    data.windows(needle.len()).position(|w| w == needle)
}

/// Seeds `n` operator endpoints taking `quota.changed`, each its own path.
async fn seed_endpoints(db: &sea_orm::DatabaseConnection, base: &str, n: usize) {
    let now = Utc::now();
    for i in 0..n {
        let endpoint = webhook_endpoint::Model {
            id: WebhookEndpointId::new(),
            tenant_id: None,
            url: format!("{base}/hooks/{i}"),
            description: format!("bench {i}"),
            event_types: json!(["quota.changed"]),
            enabled: true,
            disabled_reason: None,
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned(),
            previous_secret: None,
            previous_secret_until: None,
            failing_since: None,
            legacy_signature: false,
            created_at: now,
            updated_at: now,
        };
        store::insert_endpoint(db, endpoint)
            .await
            .expect("endpoint");
    }
}

/// Records one `quota.changed` of `tenant` in its own transaction; (event id, commit).
async fn commit_event(
    db: &sea_orm::DatabaseConnection,
    tenant: TenantId,
    n: usize,
) -> (String, Instant) {
    let data = json!({"scope": format!("bench:{n}"), "limit": n, "previous_limit": null});
    let now = Utc::now();
    let txn = db.begin().await.expect("begin");
    let row = events::record(
        &txn,
        NewEvent::tenant("quota.changed", tenant, now, data),
        now,
    )
    .await
    .expect("record");
    txn.commit().await.expect("commit");
    (row.id.to_string(), Instant::now())
}

/// Waits until `expected` webhook arrivals were seen; the last arrival's instant.
async fn wait_for(arrivals: &Arrivals, expected: usize) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        {
            let seen = arrivals.lock().expect("lock");
            let webhooks: Vec<_> = seen.iter().filter(|(id, _, _)| !id.is_empty()).collect();
            if webhooks.len() >= expected {
                return webhooks.iter().map(|(_, _, at)| *at).max().expect("one");
            }
        }
        assert!(Instant::now() < deadline, "deliveries never all arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// `requests` POSTs of `body` spread over the endpoints' paths, `in_flight` at a time
/// through `post`; requests per second.
async fn baseline<F, Fut>(base: &str, endpoints: usize, requests: usize, post: F) -> f64
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let started = Instant::now();
    futures_util::stream::iter(
        (0..requests).map(|i| post(format!("{base}/hooks/{}", i % endpoints))),
    )
    .buffer_unordered(32)
    .collect::<Vec<()>>()
    .await;
    requests as f64 / started.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let endpoints = arg("--endpoints", 100);
    let burst = arg("--events", 200);
    let paced = arg("--paced", 100);
    let rate = arg("--rate", 5).max(1);
    let server = BenchServer::start_with(|s| s.webhook_allow_hosts = "127.0.0.1".into()).await;
    let client = reqwest::Client::new();
    let r = gql(
        &client,
        &server.url,
        &server.operator_key,
        "mutation { createTenant(input: {name: \"bench\", currency: \"USD\"}) { tenant { id } } }",
        json!({}),
    )
    .await;
    let tenant: TenantId =
        serde_json::from_value(r["data"]["createTenant"]["tenant"]["id"].clone())
            .expect("tenant id");
    let arrivals: Arrivals = Arc::default();
    let base = receiver(arrivals.clone()).await;
    seed_endpoints(&server.db, &base, endpoints).await;
    let db = server.db.clone();

    // 1. Throughput: a burst of events, delivered to every endpoint.
    let started = Instant::now();
    for n in 0..burst {
        commit_event(&db, tenant, n).await;
    }
    let committed = started.elapsed().as_secs_f64();
    let last = wait_for(&arrivals, burst * endpoints).await;
    let burst_secs = (last - started).as_secs_f64();
    let deliveries_per_s = (burst * endpoints) as f64 / burst_secs;

    // 2. Latency: events at a steady rate, commit → arrival at each endpoint.
    arrivals.lock().expect("lock").clear();
    let mut commits: HashMap<String, Instant> = HashMap::new();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    for n in 0..paced {
        tick.tick().await;
        let (id, at) = commit_event(&db, tenant, burst + n).await;
        commits.insert(id, at);
    }
    wait_for(&arrivals, paced * endpoints).await;
    let mut latencies: Vec<f64> = arrivals
        .lock()
        .expect("lock")
        .iter()
        .filter_map(|(id, _, at)| commits.get(id).map(|c| (*at - *c).as_secs_f64() * 1000.0))
        .collect();
    latencies.sort_by(f64::total_cmp);

    // Baselines: the same bodies, same receiver, no database.
    let body = serde_json::to_vec(
        &json!({"id": "0", "type": "quota.changed", "data": {"scope": "bench:0", "limit": 0}}),
    )
    .expect("json");
    let requests = burst * endpoints;
    let raw = baseline(&base, endpoints, requests, |url| {
        let (client, body) = (client.clone(), body.clone());
        async move {
            client.post(url).body(body).send().await.expect("post");
        }
    })
    .await;
    let outbound = Arc::new(WebhookClient::new(
        AllowList::parse("127.0.0.1").expect("allow list"),
    ));
    let guarded = baseline(&base, endpoints, requests, |url| {
        let (outbound, body) = (outbound.clone(), body.clone());
        async move {
            outbound.post_json(&url, &[], body).await.expect("post");
        }
    })
    .await;

    println!(
        "{endpoints} endpoints; burst of {burst} events ({} deliveries) committed in {committed:.1} s",
        burst * endpoints
    );
    println!("| measure | value |");
    println!("|---|---|");
    println!("| burst: deliveries/s, first commit → last arrival | {deliveries_per_s:.0} |");
    println!(
        "| burst: events/s, each to all {endpoints} endpoints | {:.1} |",
        burst as f64 / burst_secs
    );
    println!(
        "| paced {rate} events/s × {endpoints} endpoints: commit → arrival p50 / p99 / max (ms) | {:.0} / {:.0} / {:.0} |",
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or(0.0)
    );
    println!("| baseline: plain reqwest POSTs/s, 32 in flight | {raw:.0} |");
    println!("| baseline: WebhookClient POSTs/s, 32 in flight | {guarded:.0} |");
    server.finish().await;
}
