//! Usage events durable on PostgreSQL through the real server: `--posters` concurrent
//! reporters post `--batches` batches of `--size` CloudEvents each (one tenant, one token
//! meter summing `tokens` grouped by `model`, four models, times spread over the next four minutes, as the
//! tenant is new)
//! to `POST /v1/events`; durable events/s counts events answered `accepted` (committed
//! with their meter buckets). Bodies are serialized before the clock starts.
//!
//! The baseline, in the same run and database with as many concurrent writers, is the
//! naive design straight to the database with no HTTP at all: one INSERT per event into a
//! plain table, a transaction per batch, and nothing aggregated.
//!
//! A second baseline shows what recording the events themselves costs: the same events'
//! keys and journal rows written by the server's own statements
//! (`meters::store::{insert_keys, journal}`), as many concurrent writers, a transaction
//! per batch, with no HTTP, no checks and no meters (under a different tenant id, so
//! none is a duplicate of the ones posted).
//!
//! It then times the effect of one more event on what budgets judge: the draft invoice
//! read right after the event's answer (rated on read, so it includes it).
//!
//! `cargo run --release -p neocloud-api --example bench_usage_events -- --batches 400 --size 100 --posters 8`

mod bench_support;

use std::sync::Arc;
use std::time::Instant;

use bench_support::{BenchServer, arg, gql};
use chrono::{Duration, Utc};
use neocloud_metering::meters::store;
use neocloud_schema::entity::usage_event_key::key_of;
use neocloud_schema::ids::TenantId;
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement, TransactionTrait};
use serde_json::{Value, json};

const MODELS: [&str; 4] = ["llama-70b", "llama-8b", "mistral-7b", "qwen-32b"];

fn body(batch: usize, size: usize) -> Vec<Value> {
    let now = Utc::now();
    (0..size)
        .map(|i| {
            let n = batch * size + i;
            json!({"specversion": "1.0", "id": format!("req-{n}"), "source": "gateway-1",
                   "type": "llm.request",
                   "time": (now + Duration::seconds(i64::try_from(n % 240).unwrap_or(0))).to_rfc3339(),
                   "data": {"model": MODELS[n % MODELS.len()], "tokens": 100 + n % 900, "latency_ms": 420}})
        })
        .collect()
}

async fn setup(server: &BenchServer, client: &reqwest::Client) -> (String, String) {
    let op = &server.operator_key;
    let r = gql(client, &server.url, op, "mutation { createSku(input: {name: \"tokens\", form: METERED, unit: \"token\", region: \"eu-west\", listPricePerHour: \"0.000002\", currency: \"USD\"}) { sku { id } } }", json!({})).await;
    let sku = r["data"]["createSku"]["sku"]["id"]
        .as_str()
        .expect("sku")
        .to_owned();
    let r = gql(client, &server.url, op, "mutation($s: ID!) { createMeter(input: {key: \"tokens\", eventType: \"llm.request\", valuePath: \"tokens\", aggregation: SUM, groupBy: [\"model\"], skuId: $s}) { meter { id } } }", json!({"s": sku})).await;
    assert!(r["errors"].is_null(), "{r}");
    let r = gql(
        client,
        &server.url,
        op,
        "mutation { createTenant(input: {name: \"bench\", currency: \"USD\"}) { apiKey } }",
        json!({}),
    )
    .await;
    let admin = r["data"]["createTenant"]["apiKey"]
        .as_str()
        .expect("key")
        .to_owned();
    let r = gql(
        client,
        &server.url,
        &admin,
        "mutation { createApiKey(role: USAGE_REPORTER) { apiKey } }",
        json!({}),
    )
    .await;
    let reporter = r["data"]["createApiKey"]["apiKey"]
        .as_str()
        .expect("key")
        .to_owned();
    (admin, reporter)
}

/// Posts the bodies from `posters` concurrent clients; returns the events accepted.
async fn post_all(url: &str, key: &str, bodies: &Arc<Vec<Vec<u8>>>, posters: usize) -> usize {
    let mut tasks = Vec::new();
    for p in 0..posters {
        let (url, key, bodies) = (url.to_owned(), key.to_owned(), bodies.clone());
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut accepted = 0;
            for body in bodies.iter().skip(p).step_by(posters) {
                let answer: Value = client
                    .post(format!("{url}/v1/events"))
                    .bearer_auth(&key)
                    .header("content-type", "application/cloudevents-batch+json")
                    .body(body.clone())
                    .send()
                    .await
                    .expect("post")
                    .json()
                    .await
                    .expect("json");
                accepted += answer["accepted"]
                    .as_u64()
                    .map_or(0, |n| usize::try_from(n).unwrap_or(0));
            }
            accepted
        }));
    }
    let mut accepted = 0;
    for t in tasks {
        accepted += t.await.expect("poster");
    }
    accepted
}

/// The naive design: one INSERT per event, a transaction per batch.
async fn naive(db: &DatabaseConnection, batches: &Arc<Vec<Vec<Value>>>, writers: usize) -> usize {
    db.execute_unprepared(
        "CREATE TABLE naive_events (source text, id text, type text, time timestamptz, data jsonb)",
    )
    .await
    .expect("naive table");
    let mut tasks = Vec::new();
    for w in 0..writers {
        let (db, batches) = (db.clone(), batches.clone());
        tasks.push(tokio::spawn(async move {
            let mut written = 0;
            for batch in batches.iter().skip(w).step_by(writers) {
                let txn = db.begin().await.expect("begin");
                for e in batch {
                    txn.execute_raw(Statement::from_sql_and_values(
                        db.get_database_backend(),
                        "INSERT INTO naive_events VALUES ($1, $2, $3, $4::timestamptz, $5::jsonb)",
                        [
                            e["source"].as_str().unwrap_or("").into(),
                            format!("naive-{}", e["id"].as_str().unwrap_or("")).into(),
                            e["type"].as_str().unwrap_or("").into(),
                            e["time"].as_str().unwrap_or("").into(),
                            e["data"].to_string().into(),
                        ],
                    ))
                    .await
                    .expect("insert");
                    written += 1;
                }
                txn.commit().await.expect("commit");
            }
            written
        }));
    }
    let mut written = 0;
    for t in tasks {
        written += t.await.expect("writer");
    }
    written
}

/// The event records alone: each batch's keys and journal rows through the server's
/// statements.
async fn records_only(
    db: &DatabaseConnection,
    batches: &Arc<Vec<Vec<Value>>>,
    writers: usize,
) -> usize {
    let tenant = TenantId::new();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let (db, batches) = (db.clone(), batches.clone());
        tasks.push(tokio::spawn(async move {
            let mut written = 0;
            for batch in batches.iter().skip(w).step_by(writers) {
                let keys = batch
                    .iter()
                    .map(|e| {
                        let text = |f: &str| e[f].as_str().unwrap_or("").to_owned();
                        (tenant, key_of(&text("source"), &text("id")))
                    })
                    .collect();
                let txn = db.begin().await.expect("begin");
                written += store::insert_keys(&txn, keys).await.expect("keys").len();
                store::journal(&txn, tenant, batch, Utc::now())
                    .await
                    .expect("journal");
                txn.commit().await.expect("commit");
            }
            written
        }));
    }
    let mut written = 0;
    for t in tasks {
        written += t.await.expect("writer");
    }
    written
}

fn per_second(n: usize, seconds: f64) -> f64 {
    f64::from(u32::try_from(n).unwrap_or(0)) / seconds
}

#[tokio::main]
async fn main() {
    let batches = arg("--batches", 400);
    let size = arg("--size", 100);
    let posters = arg("--posters", 8);
    let server = BenchServer::start().await;
    let client = reqwest::Client::new();
    let (admin, reporter) = setup(&server, &client).await;
    let events: Arc<Vec<Vec<Value>>> = Arc::new((0..batches).map(|b| body(b, size)).collect());
    let bodies: Arc<Vec<Vec<u8>>> = Arc::new(
        events
            .iter()
            .map(|b| serde_json::to_vec(b).expect("body"))
            .collect(),
    );

    let start = Instant::now();
    let accepted = post_all(&server.url, &reporter, &bodies, posters).await;
    let ours = start.elapsed().as_secs_f64();
    assert_eq!(accepted, batches * size, "every event is accepted once");
    let start = Instant::now();
    let written = naive(&server.db, &events, posters).await;
    let baseline = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let table = records_only(&server.db, &events, posters).await;
    let table_s = start.elapsed().as_secs_f64();
    assert_eq!(table, batches * size, "every row is new");

    // One more event, then the draft that budgets judge.
    let one = serde_json::to_vec(
        &json!([{"specversion": "1.0", "id": "last", "source": "gateway-1",
        "type": "llm.request", "data": {"model": "llama-8b", "tokens": 1}}]),
    )
    .expect("body");
    let start = Instant::now();
    post_all(&server.url, &reporter, &Arc::new(vec![one]), 1).await;
    let r = gql(
        &client,
        &server.url,
        &admin,
        "{ upcomingInvoice { total } }",
        json!({}),
    )
    .await;
    let effect = start.elapsed().as_secs_f64();
    println!(
        "events: {} in batches of {size}, {posters} posters\n\
         ours (POST /v1/events, durable, metered): {:.0} events/s ({ours:.2} s)\n\
         naive (INSERT per event, no HTTP, nothing aggregated): {:.0} events/s ({baseline:.2} s)\n\
         the event records alone (the server's keys and journal, no HTTP, no checks, no meters): {:.0} events/s ({table_s:.2} s)\n\
         event → draft invoice that includes it: {:.1} ms (total {})",
        batches * size,
        per_second(accepted, ours),
        per_second(written, baseline),
        per_second(table, table_s),
        effect * 1000.0,
        r["data"]["upcomingInvoice"]["total"],
    );
    server.finish().await;
}
