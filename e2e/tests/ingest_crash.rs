//! The server killed mid-ingest (kill -9 while batches are in flight), restarted on the
//! same database, and every batch replayed: usage is exactly what one clean delivery
//! gives — nothing lost, nothing counted twice.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use neocloud_e2e::Demo;
use rust_decimal::Decimal;
use serde_json::{Value, json};

const BATCHES: usize = 28;

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn token_for(demo: &Demo, host: &str) -> String {
    demo.credentials["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .find(|a| a["node"] == host)
        .expect("the node's token")["token"]
        .as_str()
        .expect("token")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_exact_after_a_kill_9_mid_ingest_and_a_replay() {
    let dir = tempfile::tempdir().expect("tempdir");
    let database_url = format!("sqlite://{}?mode=rwc", dir.path().join("demo.db").display());
    let mut demo = Demo::start(dir.path(), &database_url, &["--no-agents"]).await;
    let tenant = demo.credentials["tenants"][0]["key"]
        .as_str()
        .expect("key")
        .to_owned();
    let r = demo
        .gql(&tenant, "{ catalog { skus { id gpuModel form region } } }")
        .await;
    let sku = r["data"]["catalog"]["skus"]
        .as_array()
        .expect("skus")
        .iter()
        .find(|s| s["gpuModel"] == "H100" && s["form"] == "WHOLE_GPU" && s["region"] == "eu-west")
        .expect("an H100 SKU")["id"]
        .clone();
    let r = demo
        .gql_vars(
            &tenant,
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { allocations { id startedAt node { hostname } gpus { uuid } } } } }",
            json!({"s": sku}),
        )
        .await;
    let alloc = r["data"]["placeOrder"]["order"]["allocations"][0].clone();
    let host = alloc["node"]["hostname"].as_str().expect("host").to_owned();
    let gpu = alloc["gpus"][0]["uuid"].as_str().expect("gpu").to_owned();
    let started: DateTime<Utc> = alloc["startedAt"]
        .as_str()
        .expect("start")
        .parse()
        .expect("time");
    let first = started
        .duration_trunc(TimeDelta::seconds(1))
        .expect("trunc")
        + TimeDelta::seconds(1);
    let boot = uuid::Uuid::new_v4().to_string();
    let batches: Vec<Value> = (0..BATCHES)
        .map(|i| {
            let start = first + TimeDelta::seconds(10 * i as i64);
            json!({"version": 1, "agent_id": host, "boot_id": boot, "seq": i + 1,
                "window": {"start": iso(start), "end": iso(start + TimeDelta::seconds(10))},
                "devices": [{"uuid": gpu, "sm_util_pct": ((i * 37) % 100) as f64,
                    "fb_used_bytes": 1u64 << 30, "processes": []}]})
        })
        .collect();
    let expected: Decimal = (0..BATCHES)
        .map(|i| Decimal::from((i * 37) % 100) / Decimal::from(10))
        .sum();

    // Four posters; the server is killed once a few batches have been answered.
    let answered = Arc::new(AtomicUsize::new(0));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client");
    let token = token_for(&demo, &host);
    let mut posters = Vec::new();
    for p in 0..4 {
        let (client, url, token, answered) = (
            client.clone(),
            demo.url.clone(),
            token.clone(),
            answered.clone(),
        );
        let mine: Vec<Value> = batches.iter().skip(p).step_by(4).cloned().collect();
        posters.push(tokio::spawn(async move {
            for b in mine {
                let sent = client
                    .post(format!("{url}/v1/ingest"))
                    .bearer_auth(&token)
                    .json(&b)
                    .send()
                    .await;
                if sent.is_err() {
                    return;
                }
                answered.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    while answered.load(Ordering::SeqCst) < 3 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    demo.child.kill().expect("kill -9");
    demo.child.wait().expect("reaped");
    for p in posters {
        p.await.expect("poster");
    }
    assert!(
        answered.load(Ordering::SeqCst) < BATCHES,
        "the kill came mid-ingest"
    );
    drop(demo);

    // Restart on the same database and replay everything, as an agent's spool would.
    let demo = Demo::start(dir.path(), &database_url, &["--no-agents"]).await;
    let token = token_for(&demo, &host);
    let tenant = demo.credentials["tenants"][0]["key"]
        .as_str()
        .expect("key")
        .to_owned();
    let mut statuses = Vec::new();
    for b in &batches {
        let r: Value = client
            .post(format!("{}/v1/ingest", demo.url))
            .bearer_auth(&token)
            .json(b)
            .send()
            .await
            .expect("post")
            .json()
            .await
            .expect("json");
        statuses.push(r["status"].as_str().unwrap_or("?").to_owned());
    }
    assert!(
        statuses.iter().all(|s| s == "accepted" || s == "duplicate"),
        "{statuses:?}"
    );
    assert!(
        statuses.iter().any(|s| s == "duplicate"),
        "some batches had landed before the kill"
    );
    let r = demo
        .gql_vars(
            &tenant,
            "query($f: DateTime!, $t: DateTime!) { usage(from: $f, to: $t, groupBy: [ALLOCATION]) { rows { key activeSeconds } } }",
            json!({"f": iso(started - TimeDelta::minutes(5)), "t": iso(started + TimeDelta::minutes(10))}),
        )
        .await;
    let row = r["data"]["usage"]["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|row| row["key"] == alloc["id"])
        .cloned()
        .unwrap_or_else(|| panic!("a row for the allocation: {r}"));
    let active: Decimal = row["activeSeconds"]
        .as_str()
        .expect("decimal")
        .parse()
        .expect("decimal");
    assert_eq!(active, expected);
    let operator = demo.credentials["operator_key"]
        .as_str()
        .expect("key")
        .to_owned();
    let r = demo
        .gql(
            &operator,
            "{ ingestHealth { agents { agentId lastSeq gaps } } }",
        )
        .await;
    let stream = r["data"]["ingestHealth"]["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .find(|a| a["agentId"] == host.as_str())
        .cloned()
        .expect("the stream");
    assert_eq!(stream["lastSeq"], BATCHES);
    assert_eq!(stream["gaps"], 0);
}
