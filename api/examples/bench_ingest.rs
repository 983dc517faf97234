//! End-to-end ingest on PostgreSQL: `--posters` concurrent agents post realistic batches
//! (10 s windows, 8 GPUs, 8 processes each: 72 samples a batch) for `--nodes` nodes whose
//! GPUs are all allocated, through the real server. Durable samples/s counts samples of
//! batches answered `accepted` (committed to the journal); aggregated samples/s counts
//! them until the last is in its minute bucket (the journal settled).
//!
//! The baselines, in the same run and database with the same posters, are the naive
//! design: one INSERT per raw sample (a transaction per batch) — once behind an HTTP
//! handler like ours (same HTTP server and client, same JSON parsing), once straight to
//! the database with no HTTP at all — and the SQL GROUP BY the usage query would then
//! need, timed on its own. Request bodies are serialized before the clock starts, and the
//! posters are plain keep-alive HTTP/1.1 connections, for every design: an agent's CPU is
//! not the server's.
//!
//! It also times, on one core and apart from the rest, what each batch costs the server
//! before any database work: parsing the body and validating it.
//!
//! `cargo run --release -p neocloud-api --example bench_ingest -- --nodes 64 --batches 30 --posters 64`

mod bench_support;

use bench_support::fleet::{allocated_nodes, batches_of, samples};
use bench_support::http::post_all;
use bench_support::{BenchServer, arg};
use std::sync::Arc;
use std::time::Instant;

use actix_web::{App, HttpResponse, HttpServer, web};
use chrono::Utc;
use neocloud_schema::ingest::ValidationContext;
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement, TransactionTrait};
use serde_json::{Value, json};

async fn naive_insert(db: &DatabaseConnection, b: &Value) {
    let txn = db.begin().await.expect("begin");
    let backend = db.get_database_backend();
    for d in b["devices"].as_array().expect("devices") {
        for p in std::iter::once(d).chain(d["processes"].as_array().expect("processes").iter()) {
            txn.execute_raw(Statement::from_sql_and_values(
                backend,
                "INSERT INTO bench_raw_samples (agent_id, seq, device, pid, allocation_id, window_start, window_end, sm_util_pct, fb_used_bytes) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                [
                    b["agent_id"].as_str().unwrap_or_default().into(),
                    b["seq"].as_i64().unwrap_or_default().into(),
                    d["uuid"].as_str().unwrap_or_default().into(),
                    p["pid"].as_i64().unwrap_or(-1).into(),
                    p["allocation_id"].as_str().unwrap_or_default().into(),
                    b["window"]["start"].as_str().unwrap_or_default().into(),
                    b["window"]["end"].as_str().unwrap_or_default().into(),
                    p["sm_util_pct"].as_f64().unwrap_or_default().into(),
                    p["fb_used_bytes"].as_i64().unwrap_or_default().into(),
                ],
            ))
            .await
            .expect("insert");
        }
    }
    txn.commit().await.expect("commit");
}

/// The naive design behind HTTP: parse the batch, one INSERT per raw sample.
async fn naive_handler(db: web::Data<DatabaseConnection>, body: web::Bytes) -> HttpResponse {
    match serde_json::from_slice::<Value>(&body) {
        Ok(batch) => {
            naive_insert(&db, &batch).await;
            HttpResponse::Ok().json(json!({"status": "accepted"}))
        }
        Err(err) => HttpResponse::BadRequest().body(err.to_string()),
    }
}

/// Starts the naive server (as many HTTP workers as ours); returns its URL and handle.
fn naive_server(db: DatabaseConnection) -> (String, actix_web::dev::ServerHandle) {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    let server = HttpServer::new(move || {
        App::new()
            .app_data(web::Data::new(db.clone()))
            .app_data(web::PayloadConfig::new(1 << 20))
            .route("/naive", web::post().to(naive_handler))
    })
    .workers(workers)
    .bind(("127.0.0.1", 0))
    .expect("bind");
    let url = format!("http://{}", server.addrs()[0]);
    let server = server.run();
    let handle = server.handle();
    tokio::spawn(server);
    (url, handle)
}

#[tokio::main]
async fn main() {
    // `RUST_LOG=neocloud_metering=debug` shows each ingest group's size and time.
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let nodes = arg("--nodes", 64);
    let batches = arg("--batches", 30).min(30);
    let posters = arg("--posters", 16);
    let server = BenchServer::start().await;
    let (url, db) = (server.url.clone(), server.db.clone());
    let client = reqwest::Client::new();

    let agents = allocated_nodes(&server, &client, nodes).await;
    let work = batches_of(&agents, batches);
    let total_samples: usize = work.iter().map(|(_, b)| samples(b)).sum();
    println!(
        "{nodes} nodes, {} batches of {} samples, {posters} posters",
        work.len(),
        samples(&work[0].1)
    );

    // Parse and validate, alone: the CPU each batch costs before the database.
    let bodies: Vec<Vec<u8>> = work
        .iter()
        .map(|(_, b)| serde_json::to_vec(b).expect("json"))
        .collect();
    let ctx = ValidationContext {
        now: Utc::now(),
        max_devices: 8,
        max_fb_bytes: 80 << 30,
        max_power_w: 700,
    };
    let t = Instant::now();
    for body in &bodies {
        let batch = neocloud_metering::ingest::parse(body).expect("parses");
        batch.validate(&ctx).expect("valid");
    }
    println!(
        "parse + validate    {:>9.1} µs a batch on one core ({} bytes of JSON)",
        t.elapsed().as_secs_f64() * 1e6 / bodies.len() as f64,
        bodies[0].len()
    );

    let bodies: Arc<Vec<(String, Vec<u8>, usize)>> = Arc::new(
        work.iter()
            .zip(bodies)
            .map(|((token, b), body)| (token.clone(), body, samples(b)))
            .collect(),
    );
    let t = Instant::now();
    let durable = post_all(&url, "/v1/ingest", &bodies, posters, batches).await;
    let acknowledged = t.elapsed().as_secs_f64();
    assert_eq!(durable, total_samples, "every batch accepted");
    neocloud_metering::ingest::settle(&db)
        .await
        .expect("settle");
    let aggregated = t.elapsed().as_secs_f64();
    println!(
        "neocloud ingest     {:>9.0} durable samples/s  ({durable} samples acknowledged in {acknowledged:.2} s)",
        durable as f64 / acknowledged
    );
    println!(
        "  aggregated        {:>9.0} samples/s          (the last in its minute bucket at {aggregated:.2} s)",
        durable as f64 / aggregated
    );

    db.execute_unprepared("CREATE TABLE bench_raw_samples (id BIGSERIAL PRIMARY KEY, agent_id TEXT, seq BIGINT, device TEXT, pid BIGINT, allocation_id TEXT, window_start TEXT, window_end TEXT, sm_util_pct DOUBLE PRECISION, fb_used_bytes BIGINT)")
        .await.expect("baseline table");
    let (naive_url, naive_handle) = naive_server(db.clone());
    let t = Instant::now();
    let durable = post_all(&naive_url, "/naive", &bodies, posters, batches).await;
    let naive_http = t.elapsed().as_secs_f64();
    assert_eq!(durable, total_samples, "every naive batch stored");
    naive_handle.stop(true).await;
    println!(
        "naive over HTTP     {:>9.0} durable samples/s  ({total_samples} samples in {naive_http:.2} s)",
        total_samples as f64 / naive_http
    );
    db.execute_unprepared("TRUNCATE bench_raw_samples")
        .await
        .expect("truncate");
    let work = Arc::new(work);
    let t = Instant::now();
    let mut tasks = Vec::new();
    for p in 0..posters {
        let (db, work) = (db.clone(), work.clone());
        tasks.push(tokio::spawn(async move {
            for (i, (_, b)) in work.iter().enumerate() {
                if (i / batches) % posters == p {
                    naive_insert(&db, b).await;
                }
            }
        }));
    }
    for task in tasks {
        task.await.expect("poster");
    }
    let naive = t.elapsed().as_secs_f64();
    println!(
        "naive, no HTTP      {:>9.0} durable samples/s  ({total_samples} samples in {naive:.2} s)",
        total_samples as f64 / naive
    );
    let t = Instant::now();
    db.execute_unprepared("SELECT allocation_id, date_trunc('minute', window_start::timestamptz) AS m, sum(sm_util_pct / 100 * 10) FROM bench_raw_samples GROUP BY 1, 2")
        .await.expect("group by");
    println!(
        "naive GROUP BY at query time: {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );

    drop(db);
    server.finish().await;
}
