//! What the server records equals what the agent's simulated hosts really used. Three
//! simulated hosts — whole H100s, an H100 in MIG mode, a shared L40S sold as fractions —
//! built from their nodes' inventories and running work for the tenant's allocations from
//! the server's assignments, are sampled once a second with one-second windows, so every
//! second of the simulation's ground truth is a batch of its own. Every batch goes
//! through `POST /v1/ingest` (then all of them again, as duplicates), and for each
//! allocation and each minute — the finest grain the store keeps — the tenant's `usage`
//! equals the sum of the truth's seconds in that minute.

mod support;

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, DurationRound, TimeDelta, Utc};
use neocloud_agent::attribution::AttributionConfig;
use neocloud_agent::sampler::Sampler;
use neocloud_agent::source::sim::{SimProfile, SimSource};
use neocloud_schema::agent_api::{Assignments, Inventory};
use neocloud_schema::ids::AllocationId;
use neocloud_schema::ingest::{Batch, WIRE_VERSION};
use serde_json::{Value, json};
use support::{Backend, TestApp};

/// Simulated seconds per host: four minute boundaries at least, and every window ends
/// inside the five minutes the contract allows ahead of the server's clock.
const SECONDS: i64 = 270;
const GIB: f64 = (1u64 << 30) as f64;

/// How the server measures an allocation, by what it holds.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Holding {
    /// Device-level readings: every process's activity and memory.
    Whole,
    /// Device-level memory; NVML reports no activity for a MIG instance.
    Mig,
    /// Per process: activity, and memory where NVML could read it.
    Fraction,
}

struct Host {
    token: String,
    inventory: Inventory,
    assignments: Assignments,
}

async fn agent_get(app: &TestApp, token: &str, path: &str) -> Value {
    let res = app
        .client
        .get(format!("{}{path}", app.url))
        .bearer_auth(token)
        .send()
        .await
        .expect("get");
    assert_eq!(res.status().as_u16(), 200, "{path}");
    res.json().await.expect("json")
}

async fn sku(app: &TestApp, input: Value) -> String {
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($i: CreateSkuInput!) { createSku(input: $i) { sku { id } } }",
            json!({"i": input}),
        )
        .await;
    r["data"]["createSku"]["sku"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned()
}

/// Truth per (allocation, minute): active, unreported active, and readable and
/// unreadable framebuffer byte-seconds.
type Truth = BTreeMap<(AllocationId, DateTime<Utc>), [f64; 4]>;

/// Runs `host` at 1 Hz from `start` for `SECONDS`, one window a second; returns the
/// batches and their truth.
fn simulate(host: &Host, seed: u64, start: DateTime<Utc>) -> (Vec<Batch>, Truth) {
    let profile = SimProfile::from_inventory(&host.inventory).expect("profile");
    let mut sim = SimSource::new(profile, seed).expect("sim");
    sim.truth.retain = true;
    let mut sampler = Sampler::new(sim, AttributionConfig::default(), Duration::seconds(1));
    sampler.apply_assignments(&host.assignments);
    let boot = uuid::Uuid::new_v4();
    let mut batches = Vec::new();
    for s in 0..=SECONDS {
        if let Some(w) = sampler.cycle(start + Duration::seconds(s)).expect("cycle") {
            assert_eq!(w.window.duration(), Duration::seconds(1));
            batches.push(Batch {
                version: WIRE_VERSION,
                agent_id: host.inventory.hostname.clone(),
                boot_id: boot,
                seq: batches.len() as u64 + 1,
                window: w.window,
                devices: w.devices,
            });
        }
    }
    assert_eq!(batches.len() as i64, SECONDS);
    // Truth second `s` is the interval (s-1, s]: the window [s-1, s).
    let mut truth = BTreeMap::new();
    for ((second, allocation), u) in &sampler.source().truth.seconds {
        let began = DateTime::from_timestamp(second - 1, 0).expect("time");
        let minute = began.duration_trunc(TimeDelta::minutes(1)).expect("minute");
        let t: &mut [f64; 4] = truth.entry((*allocation, minute)).or_default();
        t[0] += u.active_seconds;
        t[1] += u.active_unreported_seconds;
        t[2] += u.fb_byte_seconds;
        t[3] += u.fb_unavailable_byte_seconds;
    }
    (batches, truth)
}

/// (active seconds, GiB-seconds) the server should record for `truth`.
fn expected(holding: Holding, t: &[f64; 4]) -> (f64, f64) {
    match holding {
        Holding::Whole => (t[0], (t[2] + t[3]) / GIB),
        Holding::Mig => (0.0, (t[2] + t[3]) / GIB),
        Holding::Fraction => (t[0], t[2] / GIB),
    }
}

async fn ship(app: &TestApp, token: &str, batches: &[Batch], status: &str) {
    for b in batches {
        let res = app
            .client
            .post(format!("{}/v1/ingest", app.url))
            .bearer_auth(token)
            .json(b)
            .send()
            .await
            .expect("post");
        let code = res.status().as_u16();
        let body: Value = res.json().await.expect("json");
        assert_eq!(
            (code, body["status"].as_str()),
            (200, Some(status)),
            "{body}"
        );
    }
}

/// The tenant's usage per allocation for the minute starting at `minute`.
async fn usage_of_minute(
    app: &TestApp,
    key: &str,
    minute: DateTime<Utc>,
) -> BTreeMap<String, (f64, f64)> {
    let iso = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let r = app
        .gql(
            Some(key),
            "query($f: DateTime!, $t: DateTime!) { usage(from: $f, to: $t, groupBy: [ALLOCATION]) { rows { key activeSeconds memoryGibSeconds } } }",
            json!({"f": iso(minute), "t": iso(minute + Duration::minutes(1))}),
        )
        .await;
    let number = |v: &Value| {
        v.as_str()
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    r["data"]["usage"]["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|row| {
            (
                row["key"].as_str().unwrap_or_default().to_owned(),
                (
                    number(&row["activeSeconds"]),
                    number(&row["memoryGibSeconds"]),
                ),
            )
        })
        .collect()
}

async fn recorded_usage_equals_the_simulated_ground_truth(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let mut tokens = Vec::new();
    for (host, model, extra) in [
        ("sim-h100", "H100", ""),
        ("sim-mig", "H100", ", migEnabled: true"),
        ("sim-l40s", "L40S", ", sharedGpus: true"),
    ] {
        let r = app.register_node(host, model, 2, extra).await;
        tokens.push(support::agent_token(&r));
    }
    let (_, tenant) = app.create_tenant("acme").await;
    let orders = [
        (
            json!({"name": "h100", "gpuModel": "H100", "form": "WHOLE_GPU", "region": "eu-west", "listPricePerHour": "2.49", "currency": "USD"}),
            2,
            Holding::Whole,
        ),
        (
            json!({"name": "h100-3g", "gpuModel": "H100", "form": "MIG", "migProfile": "3g.40gb", "region": "eu-west", "listPricePerHour": "1.07", "currency": "USD"}),
            1,
            Holding::Mig,
        ),
        (
            json!({"name": "l40s-250m", "gpuModel": "L40S", "form": "FRACTIONAL", "milliGpu": 250, "region": "eu-west", "listPricePerHour": "0.25", "currency": "USD"}),
            3,
            Holding::Fraction,
        ),
    ];
    let mut holdings: BTreeMap<String, Holding> = BTreeMap::new();
    let mut latest_start = Utc::now();
    for (input, count, holding) in orders {
        let sku = sku(&app, input).await;
        for _ in 0..count {
            let r = app
                .gql(
                    Some(&tenant),
                    "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { allocations { id startedAt } } } }",
                    json!({"s": sku}),
                )
                .await;
            let a = &r["data"]["placeOrder"]["order"]["allocations"][0];
            let id = a["id"].as_str().unwrap_or_else(|| panic!("{r}"));
            holdings.insert(id.to_owned(), holding);
            let started: DateTime<Utc> = a["startedAt"]
                .as_str()
                .expect("startedAt")
                .parse()
                .expect("time");
            latest_start = latest_start.max(started);
        }
    }
    // Every simulated second lies inside every allocation.
    let start = latest_start
        .duration_trunc(TimeDelta::seconds(1))
        .expect("second")
        + Duration::seconds(1);

    let mut truth = BTreeMap::new();
    for (i, token) in tokens.iter().enumerate() {
        let host = Host {
            token: token.clone(),
            inventory: serde_json::from_value(agent_get(&app, token, "/v1/agents/inventory").await)
                .expect("inventory"),
            assignments: serde_json::from_value(
                agent_get(&app, token, "/v1/agents/assignments").await,
            )
            .expect("assignments"),
        };
        assert!(!host.assignments.assignments.is_empty());
        let (batches, host_truth) = simulate(&host, 11 + i as u64, start);
        ship(&app, &host.token, &batches, "accepted").await;
        ship(&app, &host.token, &batches, "duplicate").await;
        truth.extend(host_truth);
    }

    let mut compared: BTreeMap<&str, usize> = BTreeMap::new();
    let minutes: std::collections::BTreeSet<DateTime<Utc>> =
        truth.keys().map(|(_, m)| *m).collect();
    assert!(minutes.len() >= 5, "{} minutes", minutes.len());
    for minute in minutes {
        let recorded = usage_of_minute(&app, &tenant, minute).await;
        for (allocation, holding) in &holdings {
            let id: AllocationId = allocation.parse().expect("allocation id");
            let Some(t) = truth.get(&(id, minute)) else {
                continue;
            };
            let (active, memory) = expected(*holding, t);
            let (got_active, got_memory) = recorded.get(allocation).copied().unwrap_or_default();
            let close = |x: f64, y: f64| (x - y).abs() <= 1e-6 * y.abs().max(1.0);
            assert!(
                close(got_active, active) && close(got_memory, memory),
                "{holding:?} {allocation} at {minute}: recorded ({got_active} active s, {got_memory} GiB-s), truth ({active}, {memory})"
            );
            assert!(
                memory > 0.0,
                "{holding:?} {allocation} at {minute}: no work"
            );
            *compared.entry(allocation.as_str()).or_default() += 1;
        }
    }
    // Every allocation did work in most of the minutes, and each of them was compared.
    assert_eq!(compared.len(), holdings.len(), "{compared:?}");
    assert!(compared.values().all(|&n| n >= 3), "{compared:?}");
}

on_both_databases!(recorded_usage_equals_the_simulated_ground_truth);
