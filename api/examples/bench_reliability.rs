//! Refreshing node reliability at scale, on PostgreSQL: `--nodes` nodes of eight H100s,
//! each with 30 days of hourly agent coverage (one hour in a hundred half covered), a
//! failed-GPU interval on one node in ten and XID events on every node. The pass reads
//! every node's covered hours, failed time, faults and hit allocations with one grouped
//! query each and writes one `node_reliability` row per node; it runs twice (the second
//! finds every score unchanged).
//!
//! Baseline, in the same run and database: the one query the pass cannot avoid, every
//! node's covered seconds summed over the window.
//!
//! `cargo run --release -p neocloud-api --example bench_reliability -- --nodes 1000`

mod bench_support;

use std::time::Instant;

use bench_support::{BenchServer, arg};
use sea_orm::{ConnectionTrait, DbBackend, Statement};

const SEED: [&str; 3] = [
    "INSERT INTO node_coverage_hours (node_id, hour_start, seconds)
       SELECT n.id, h, CASE WHEN random() < 0.01 THEN 1800 ELSE 3600 END
       FROM nodes n,
            generate_series(date_trunc('hour', now()) - interval '30 days',
                            date_trunc('hour', now()), interval '1 hour') h",
    "INSERT INTO gpu_health_intervals (id, gpu_id, health, started_at, ended_at, cause)
       SELECT gen_random_uuid(), g.id, 'failed', now() - interval '3 days',
              now() - interval '2 days', 'xid 79'
       FROM gpus g WHERE g.index = 0 AND random() < 0.1",
    "INSERT INTO gpu_events (id, node_id, device_uuid, gpu_uuid, kind, code, at, received_at)
       SELECT gen_random_uuid(), g.node_id, g.uuid, g.uuid, 'xid', x.code,
              now() - interval '5 days', now() - interval '5 days'
       FROM gpus g, (VALUES (13), (79), (94)) AS x(code)",
];

#[tokio::main]
async fn main() {
    let nodes = arg("--nodes", 1000);
    let server = BenchServer::start().await;
    let client = reqwest::Client::new();
    let t = Instant::now();
    server.register_h100_nodes(&client, nodes).await;
    for sql in SEED {
        server.db.execute_unprepared(sql).await.expect(sql);
    }
    println!("setup: {nodes} nodes in {:.1} s", t.elapsed().as_secs_f64());

    let baseline = Instant::now();
    let rows = server
        .db
        .query_all_raw(Statement::from_string(
            DbBackend::Postgres,
            "SELECT node_id, SUM(seconds) FROM node_coverage_hours
             WHERE hour_start >= now() - interval '30 days' GROUP BY node_id",
        ))
        .await
        .expect("baseline");
    assert_eq!(rows.len(), nodes);
    let baseline = baseline.elapsed().as_secs_f64();
    for run in ["first pass (every score new)", "second pass (none changed)"] {
        let t = Instant::now();
        let changed = neocloud_api::fleet::reliability::refresh(&server.db, chrono::Utc::now())
            .await
            .expect("refresh");
        println!(
            "{run}: {nodes} nodes in {:.3} s ({changed} scores changed)",
            t.elapsed().as_secs_f64()
        );
    }
    println!("baseline: covered seconds of {nodes} nodes summed in {baseline:.3} s");
    server.finish().await;
}
