//! Ingest against agents that lie or break: every value bounded by what the hardware can
//! do (rejected, or clamped and flagged in `ingestHealth`), text that would poison storage
//! refused at the edge, and a journal row that cannot be aggregated moved aside so the
//! rest goes on — on both databases.

mod support;

use chrono::{DateTime, Duration, DurationRound, TimeDelta, Utc};
use neocloud_schema::entity::{ingest_batch, ingest_pending};
use rust_decimal::Decimal;
use sea_orm::{ActiveModelTrait, EntityTrait, PaginatorTrait, Set};
use serde_json::{Value, json};
use support::{Backend, TestApp};

const IN_FORCE: &str = "{ ingestHealth { pendingBatches
    agents { agentId bootId overlapSeconds }
    quarantined { batchId nodeId reason }
    anomalies { batchId kind device detail }
    hosts { nodeId hostname } } }";

/// A node of `gpus` H100s with one allocation of `sku_input`'s SKU for a tenant.
struct Node {
    token: String,
    tenant_key: String,
    host: String,
    node_id: String,
    gpu: String,
    allocation: String,
    started: DateTime<Utc>,
}

async fn node(app: &TestApp, host: &str, extra: &str, sku_input: Value) -> Node {
    let r = app.register_node(host, "H100", 1, extra).await;
    let token = support::agent_token(&r);
    let node_id = r["data"]["registerNode"]["node"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($i: CreateSkuInput!) { createSku(input: $i) { sku { id } } }",
            json!({"i": sku_input}),
        )
        .await;
    let sku = r["data"]["createSku"]["sku"]["id"].clone();
    let (_, tenant_key) = app.create_tenant(&format!("{host}-tenant")).await;
    let r = app
        .gql(
            Some(&tenant_key),
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { allocations { id startedAt gpus { uuid } } } } }",
            json!({"s": sku}),
        )
        .await;
    let alloc = &r["data"]["placeOrder"]["order"]["allocations"][0];
    Node {
        token,
        tenant_key,
        host: host.into(),
        node_id,
        gpu: alloc["gpus"][0]["uuid"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"))
            .to_owned(),
        allocation: alloc["id"].as_str().expect("id").to_owned(),
        started: alloc["startedAt"]
            .as_str()
            .expect("start")
            .parse()
            .expect("time"),
    }
}

async fn whole_gpu_node(app: &TestApp, host: &str) -> Node {
    node(
        app,
        host,
        "",
        json!({"name": format!("{host}-h100"), "gpuModel": "H100", "form": "WHOLE_GPU", "region": "eu-west", "listPricePerHour": "2.49", "currency": "USD"}),
    )
    .await
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The start of the window `offset` seconds into the allocation.
fn at(n: &Node, offset: i64) -> DateTime<Utc> {
    n.started
        .duration_trunc(TimeDelta::seconds(1))
        .expect("trunc")
        + Duration::seconds(1 + offset)
}

/// A 10-second batch of the allocation's whole GPU.
fn batch(n: &Node, boot: &str, seq: u64, offset: i64, energy_mj: u64) -> Value {
    let start = at(n, offset);
    json!({"version": 1, "agent_id": n.host, "boot_id": boot, "seq": seq,
        "window": {"start": iso(start), "end": iso(start + Duration::seconds(10))},
        "devices": [{"uuid": n.gpu, "sm_util_pct": 50.0, "fb_used_bytes": 1u64 << 30,
            "energy_mj": energy_mj, "power_mw": 350_000, "health": "ok", "events": [],
            "processes": [{"pid": 42, "allocation_id": n.allocation, "labels": {"team": "a"},
                "sm_util_pct": 50.0, "fb_used_bytes": 1u64 << 30}]}]})
}

async fn send(app: &TestApp, n: &Node, body: &Value) -> (u16, Value) {
    let res = app
        .client
        .post(format!("{}/v1/ingest", app.url))
        .bearer_auth(&n.token)
        .json(body)
        .send()
        .await
        .expect("post");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

async fn accepted(app: &TestApp, n: &Node, body: &Value) {
    let (code, r) = send(app, n, body).await;
    assert_eq!((code, &r["status"]), (200, &json!("accepted")), "{r}");
}

/// One usage figure of the node's allocation, as its tenant reads it.
async fn usage(app: &TestApp, n: &Node, field: &str) -> Decimal {
    let r = app
        .gql(
            Some(&n.tenant_key),
            &format!("query($f: DateTime!, $t: DateTime!) {{ usage(from: $f, to: $t, groupBy: [ALLOCATION]) {{ rows {{ key {field} }} }} }}"),
            json!({"f": iso(n.started - Duration::minutes(5)), "t": iso(n.started + Duration::minutes(10))}),
        )
        .await;
    let rows = r["data"]["usage"]["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"));
    rows.iter()
        .find(|row| row["key"] == n.allocation.as_str())
        .map_or(Decimal::ZERO, |row| {
            row[field]
                .as_str()
                .expect("decimal")
                .parse()
                .expect("decimal")
        })
}

async fn ingest_health(app: &TestApp) -> Value {
    let r = app.gql(Some(&app.operator_key), IN_FORCE, json!({})).await;
    assert!(r["errors"].is_null(), "{r}");
    r["data"]["ingestHealth"].clone()
}

async fn batches_stored(app: &TestApp) -> u64 {
    ingest_batch::Entity::find()
        .count(&app.db)
        .await
        .expect("count")
}

/// The audit's energy lie: a counter of 2^63−1 after 1000 would have added 461 million
/// dollars. Energy is bounded by the board's power limit over the seconds counted, and the
/// clamp is shown to operators.
async fn energy_beyond_the_power_limit_is_clamped_and_flagged(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let n = whole_gpu_node(&app, "hgx-energy").await;
    let boot = uuid::Uuid::new_v4().to_string();
    accepted(&app, &n, &batch(&n, &boot, 1, 0, 1000)).await;
    accepted(&app, &n, &batch(&n, &boot, 2, 10, i64::MAX as u64)).await;
    let energy = usage(&app, &n, "energyKwh").await;
    // An H100 draws at most 700 W: 10 s of it is 7000 J = 7/3600 kWh.
    let limit = Decimal::from(7) / Decimal::from(3600);
    assert!(
        energy > Decimal::ZERO && energy <= limit + Decimal::new(1, 12),
        "{energy}"
    );
    let health = ingest_health(&app).await;
    let anomalies = health["anomalies"].as_array().expect("anomalies");
    assert!(
        anomalies
            .iter()
            .any(|a| a["kind"] == "energy_clamped" && a["device"] == n.gpu.as_str()),
        "{health}"
    );
}

/// Two agents on one node, each with its own counter and windows five seconds apart,
/// cannot double its energy or its seconds: each second counts once, energy within the
/// power limit of the seconds counted, and the overlap is shown per stream.
async fn two_agents_on_one_node_count_its_energy_once(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let n = whole_gpu_node(&app, "hgx-twice").await;
    let (a, b) = (
        uuid::Uuid::new_v4().to_string(),
        uuid::Uuid::new_v4().to_string(),
    );
    // Each agent's counter runs at 350 W on its own scale.
    for seq in 1..=6u64 {
        let offset = (seq as i64 - 1) * 10;
        accepted(&app, &n, &batch(&n, &a, seq, offset, 3_500_000 * seq)).await;
        let other = batch(&n, &b, seq, offset + 5, 900_000_000 + 3_500_000 * seq);
        accepted(&app, &n, &other).await;
    }
    // Seconds 0..65 of one GPU at 50 %, each once.
    assert_eq!(usage(&app, &n, "activeSeconds").await, Decimal::new(325, 1));
    let energy = usage(&app, &n, "energyKwh").await;
    let limit = Decimal::from(700 * 65) / Decimal::from(3_600_000);
    assert!(
        energy <= limit + Decimal::new(1, 12),
        "{energy} kWh in 65 s of one GPU"
    );
    let health = ingest_health(&app).await;
    let overlap: i64 = health["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .map(|s| s["overlapSeconds"].as_i64().expect("overlap"))
        .sum();
    // B's six windows each overlap A's by 5 s, and A's last five B's.
    assert_eq!(overlap, 55, "{health}");
}

/// Values no hardware or storage can hold are refused naming the field, and nothing of the
/// batch is stored.
async fn impossible_agent_values_are_rejected_and_store_nothing(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let n = whole_gpu_node(&app, "hgx-lies").await;
    let boot = uuid::Uuid::new_v4().to_string();
    let mut cases: Vec<(Value, &str)> = Vec::new();
    let mut seq = batch(&n, &boot, 1, 0, 1000);
    seq["seq"] = json!(u64::MAX);
    cases.push((seq, "seq"));
    for year in ["2001-01-01T00:00:00Z", "9999-01-01T00:00:00Z"] {
        let mut xid = batch(&n, &boot, 1, 0, 1000);
        xid["devices"][0]["events"] = json!([{"kind": "xid", "code": 79, "at": year}]);
        cases.push((xid, "devices[0].events[0].at"));
    }
    let mut ancient = batch(&n, &boot, 1, 0, 1000);
    ancient["window"] = json!({"start": "0001-01-01T00:00:00Z", "end": "0001-01-01T00:00:10Z"});
    cases.push((ancient, "window.start"));
    let mut nul = batch(&n, &boot, 1, 0, 1000);
    nul["devices"][0]["processes"][0]["labels"] = json!({"team": "a\u{0}b"});
    cases.push((nul, "devices[0].processes[0].labels"));
    let mut power = batch(&n, &boot, 1, 0, 1000);
    power["devices"][0]["power_mw"] = json!(5_000_000);
    cases.push((power, "devices[0].power_mw"));
    for (body, field) in cases {
        let (code, r) = send(&app, &n, &body).await;
        assert_eq!(code, 400, "{field}: {r}");
        assert_eq!(r["error"]["field"], field, "{r}");
    }
    assert_eq!(batches_stored(&app).await, 0);
    // The XID that was refused failed no GPU.
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ nodes(first: 10) { edges { node { gpus { health } } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["nodes"]["edges"][0]["node"]["gpus"][0]["health"], "OK",
        "{r}"
    );
}

/// The audit's MIG lie: made-up instances on one GPU multiplied a slice's usage. Instances
/// the GPU's geometry cannot hold are refused; an allocation is credited one instance.
async fn made_up_mig_instances_are_refused_or_not_counted(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let n = node(
        &app,
        "mig-lies",
        ", migEnabled: true",
        json!({"name": "h100-1g", "gpuModel": "H100", "form": "MIG", "migProfile": "1g.10gb", "region": "eu-west", "listPricePerHour": "0.36", "currency": "USD"}),
    )
    .await;
    let boot = uuid::Uuid::new_v4().to_string();
    let instance = |i: usize, profile: &str| {
        json!({"uuid": format!("MIG-fake-{i}"), "parent_uuid": n.gpu, "mig_profile": profile,
            "sm_util_pct": 100.0, "fb_used_bytes": 1u64 << 30, "events": [],
            "processes": [{"pid": 100 + i, "allocation_id": n.allocation,
                "sm_util_pct": 100.0, "fb_used_bytes": 1u64 << 30}]})
    };
    let window = |offset: i64| {
        let start = at(&n, offset);
        json!({"start": iso(start), "end": iso(start + Duration::seconds(10))})
    };
    // Seven 3g instances cannot exist on one GPU.
    let body = json!({"version": 1, "agent_id": n.host, "boot_id": boot, "seq": 1,
        "window": window(0), "devices": (0..7).map(|i| instance(i, "3g.40gb")).collect::<Vec<_>>()});
    let (code, r) = send(&app, &n, &body).await;
    assert_eq!(
        (code, &r["error"]["field"]),
        (400, &json!("devices")),
        "{r}"
    );
    // Seven 1g instances can, but the allocation holds one: 10 s of one instance count.
    let body = json!({"version": 1, "agent_id": n.host, "boot_id": boot, "seq": 1,
        "window": window(0), "devices": (0..7).map(|i| instance(i, "1g.10gb")).collect::<Vec<_>>()});
    accepted(&app, &n, &body).await;
    assert_eq!(usage(&app, &n, "activeSeconds").await, Decimal::from(10));
    let health = ingest_health(&app).await;
    let unattributed = health["anomalies"]
        .as_array()
        .expect("anomalies")
        .iter()
        .filter(|a| a["kind"] == "mig_instance_unattributed")
        .count();
    assert_eq!(unattributed, 6, "{health}");
    // An instance using more memory than its slice is a lie too.
    let mut big = instance(0, "1g.10gb");
    big["fb_used_bytes"] = json!(20u64 << 30);
    let body = json!({"version": 1, "agent_id": n.host, "boot_id": boot, "seq": 2,
        "window": window(10), "devices": [big]});
    let (code, r) = send(&app, &n, &body).await;
    assert_eq!(
        (code, &r["error"]["field"]),
        (400, &json!("devices[0].fb_used_bytes")),
        "{r}"
    );
}

/// Processes sharing one GPU that report more than 100% together: one GPU is never more
/// than fully busy, so their shares are scaled down to 100% together and flagged — a
/// quarter of a GPU never shows more active than held seconds.
async fn a_shared_gpu_is_never_more_than_fully_busy(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let n = node(
        &app,
        "shared-lies",
        ", sharedGpus: true",
        json!({"name": "h100-250m", "gpuModel": "H100", "form": "FRACTIONAL", "milliGpu": 250, "region": "eu-west", "listPricePerHour": "0.70", "currency": "USD"}),
    )
    .await;
    let process = |pid: u32| {
        json!({"pid": pid, "allocation_id": n.allocation, "sm_util_pct": 80.0,
            "fb_used_bytes": 1u64 << 30})
    };
    let start = at(&n, 0);
    let body = json!({"version": 1, "agent_id": n.host, "boot_id": uuid::Uuid::new_v4(),
        "seq": 1, "window": {"start": iso(start), "end": iso(start + Duration::seconds(10))},
        "devices": [{"uuid": n.gpu, "sm_util_pct": 100.0, "fb_used_bytes": 2u64 << 30,
            "events": [{"kind": "xid", "code": 13, "at": iso(start)},
                {"kind": "xid", "code": 94, "at": iso(start + Duration::seconds(1))}],
            "processes": [process(1), process(2)]}]});
    accepted(&app, &n, &body).await;
    // A shared GPU's history shows its holders only what changed the GPU's health: the
    // XID 13 of some process on it is not theirs to read.
    let r = app
        .gql(
            Some(&n.tenant_key),
            "query($id: ID!) { allocation(id: $id) { gpus { events { code effect } healthHistory { health } } } }",
            json!({"id": n.allocation}),
        )
        .await;
    let gpu = &r["data"]["allocation"]["gpus"][0];
    assert_eq!(
        gpu["events"],
        json!([{"code": 94, "effect": "DEGRADED"}]),
        "{r}"
    );
    assert_eq!(gpu["healthHistory"], json!([{"health": "DEGRADED"}]), "{r}");
    // 160% scaled to 100%: 10 s of one fully busy GPU, not 16.
    assert_eq!(usage(&app, &n, "activeSeconds").await, Decimal::from(10));
    let health = ingest_health(&app).await;
    let flagged: Vec<&Value> = health["anomalies"]
        .as_array()
        .expect("anomalies")
        .iter()
        .filter(|a| a["kind"] == "process_util_clamped")
        .collect();
    assert_eq!(flagged.len(), 1, "{health}");
    assert_eq!(flagged[0]["device"], json!(n.gpu));
    assert!(
        flagged[0]["detail"]
            .as_str()
            .expect("detail")
            .contains("160%"),
        "{health}"
    );
}

/// A journal row that cannot be aggregated — one this build cannot read, or (on
/// PostgreSQL) a label with a NUL journaled before the edge refused it — is quarantined
/// with its reason; every other batch is aggregated and every reader answers.
async fn an_unaggregatable_journal_row_is_quarantined_and_the_rest_goes_on(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let n = whole_gpu_node(&app, "hgx-poison").await;
    let node_id: uuid::Uuid = n.node_id.parse().expect("uuid");
    let unreadable = uuid::Uuid::now_v7();
    journal(&app, unreadable, node_id, vec![9, 9, 9]).await;
    let mut poisoned: neocloud_schema::ingest::Batch = serde_json::from_value(batch(
        &n,
        "7f1c0d9e-8d1a-4c59-9a43-0e0e3d6b2a11",
        1,
        0,
        1000,
    ))
    .expect("a batch");
    poisoned.devices[0].processes[0]
        .labels
        .insert("team".into(), "a\u{0}b".into());
    let poisoned_id = uuid::Uuid::now_v7();
    let payload = neocloud_metering::ingest::journal::encode(&poisoned).expect("encodes");
    journal(&app, poisoned_id, node_id, payload).await;
    // A good batch behind them.
    let boot = uuid::Uuid::new_v4().to_string();
    accepted(&app, &n, &batch(&n, &boot, 1, 20, 1000)).await;

    // The poisoned window [0, 10) counts where the database could store it (SQLite).
    let expected = if backend == Backend::Postgres { 5 } else { 10 };
    assert_eq!(
        usage(&app, &n, "activeSeconds").await,
        Decimal::from(expected)
    );
    for query in ["{ upcomingInvoice { total } }", "{ budget { spend } }"] {
        let r = app.gql(Some(&n.tenant_key), query, json!({})).await;
        assert!(r["errors"].is_null(), "{query}: {r}");
    }
    let health = ingest_health(&app).await;
    assert_eq!(health["pendingBatches"], 0, "{health}");
    let quarantined: Vec<&str> = health["quarantined"]
        .as_array()
        .expect("quarantined")
        .iter()
        .map(|q| q["batchId"].as_str().expect("id"))
        .collect();
    assert!(
        quarantined.contains(&unreadable.to_string().as_str()),
        "{health}"
    );
    // The console names the node by its hostname, however large the fleet.
    assert_eq!(
        health["hosts"],
        json!([{"nodeId": n.node_id, "hostname": "hgx-poison"}]),
        "{health}"
    );
    if backend == Backend::Postgres {
        assert!(
            quarantined.contains(&poisoned_id.to_string().as_str()),
            "{health}"
        );
    }
    // Put back, the unreadable row is quarantined again, never lost; the audit says who.
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($b: ID!) { requeueQuarantinedBatch(batchId: $b) }",
            json!({"b": unreadable.to_string()}),
        )
        .await;
    assert_eq!(r["data"]["requeueQuarantinedBatch"], true, "{r}");
    let health = ingest_health(&app).await;
    assert_eq!(health["pendingBatches"], 1, "{health}");
    usage(&app, &n, "activeSeconds").await;
    let health = ingest_health(&app).await;
    assert_eq!(health["pendingBatches"], 0, "{health}");
    let r = app
        .gql(
            Some(&n.tenant_key),
            "mutation($b: ID!) { requeueQuarantinedBatch(batchId: $b) }",
            json!({"b": unreadable.to_string()}),
        )
        .await;
    assert_eq!(support::error_code(&r), Some("FORBIDDEN"), "{r}");
    // Operators are told through the event log, with the reason.
    let told = operator_events(&app, "ingest.quarantined").await;
    assert!(
        told.iter()
            .any(|e| e["data"]["batch_id"] == unreadable.to_string()
                && e["data"]["reason"].is_string()),
        "{told:?}"
    );
}

/// The operator's events of one type, oldest first.
async fn operator_events(app: &TestApp, kind: &str) -> Vec<Value> {
    let r = app
        .gql(
            Some(&app.operator_key),
            "query($t: [String!]!) { events(types: $t, first: 100) { events { data } } }",
            json!({"t": [kind]}),
        )
        .await;
    r["data"]["events"]["events"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .clone()
}

/// A stream that skips sequence numbers is reported once, as the numbers missing; a late
/// batch that fills the hole raises nothing more.
async fn a_gap_in_a_stream_is_told_to_the_operator(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let n = whole_gpu_node(&app, "hgx-gap").await;
    let boot = uuid::Uuid::new_v4().to_string();
    accepted(&app, &n, &batch(&n, &boot, 1, 0, 1000)).await;
    accepted(&app, &n, &batch(&n, &boot, 2, 10, 2000)).await;
    assert!(
        operator_events(&app, "ingest.gap_detected")
            .await
            .is_empty()
    );
    accepted(&app, &n, &batch(&n, &boot, 5, 40, 5000)).await;
    accepted(&app, &n, &batch(&n, &boot, 3, 20, 3000)).await;
    let told = operator_events(&app, "ingest.gap_detected").await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(
        (&told[0]["data"]["from_seq"], &told[0]["data"]["to_seq"]),
        (&json!(3), &json!(4))
    );
    assert_eq!(told[0]["data"]["boot_id"], boot.as_str());
}

async fn journal(app: &TestApp, batch_id: uuid::Uuid, node_id: uuid::Uuid, payload: Vec<u8>) {
    ingest_pending::ActiveModel {
        batch_id: Set(batch_id),
        node_id: Set(node_id.into()),
        payload: Set(payload),
    }
    .insert(&app.db)
    .await
    .expect("journal a row");
}

on_both_databases!(
    energy_beyond_the_power_limit_is_clamped_and_flagged,
    two_agents_on_one_node_count_its_energy_once,
    impossible_agent_values_are_rejected_and_store_nothing,
    made_up_mig_instances_are_refused_or_not_counted,
    a_shared_gpu_is_never_more_than_fully_busy,
    an_unaggregatable_journal_row_is_quarantined_and_the_rest_goes_on,
    a_gap_in_a_stream_is_told_to_the_operator,
);
