//! Metering through `POST /v1/ingest`: every sample counted exactly once — through
//! duplicates, reordering, overlapping boots — bad batches rejected with the field named
//! and nothing stored, health events acted on.

mod support;

use std::io::Write;

use chrono::{Duration, DurationRound, TimeDelta, Utc};
use neocloud_schema::entity::{ingest_batch, usage_minute};
use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::{Value, json};
use support::ingest::{Setup, active_seconds, allocation_usage, batch, iso, setup};
use support::{Backend, TestApp};

async fn post(app: &TestApp, token: Option<&str>, body: Vec<u8>, gzip: bool) -> (u16, Value) {
    let mut req = app
        .client
        .post(format!("{}/v1/ingest", app.url))
        .header("content-type", "application/json");
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    let body = if gzip {
        req = req.header("content-encoding", "gzip");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&body).expect("gzip");
        enc.finish().expect("gzip")
    } else {
        body
    };
    let res = req.body(body).send().await.expect("post");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

async fn send(app: &TestApp, s: &Setup, body: &Value) -> (u16, Value) {
    post(
        app,
        Some(&s.token),
        serde_json::to_vec(body).expect("json"),
        false,
    )
    .await
}

async fn a_batch_counts_once_however_often_it_arrives(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let s = setup(&app).await;
    let boot = uuid::Uuid::new_v4().to_string();
    let (code, r) = send(&app, &s, &batch(&s, &boot, 1, 0, 50.0)).await;
    assert_eq!((code, &r["status"]), (200, &json!("accepted")), "{r}");
    let (code, r) = send(&app, &s, &batch(&s, &boot, 1, 0, 50.0)).await;
    assert_eq!((code, &r["status"]), (200, &json!("duplicate")), "{r}");
    // The same window again from a new boot (an agent that lost its spool): counted once.
    let (code, r) = send(
        &app,
        &s,
        &batch(&s, &uuid::Uuid::new_v4().to_string(), 1, 0, 50.0),
    )
    .await;
    assert_eq!((code, &r["status"]), (200, &json!("accepted")), "{r}");
    assert_eq!(active_seconds(&app, &s).await, "5");
}

/// A GPU's cumulative energy counter becomes kWh between readings: the first reading
/// only sets the cursor, a counter that went backwards was reset and counts from zero, and
/// a reading older than the cursor adds nothing. (Each step stays within what an H100 can
/// draw in its 10 s window: 3.6 MJ·10⁻³ = 0.001 kWh is 360 W for 10 s.)
async fn energy_counters_become_kwh_between_readings(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let s = setup(&app).await;
    let boot = uuid::Uuid::new_v4().to_string();
    const WH: u64 = 3_600_000;
    for (seq, offset, mj) in [
        (1, 0, 5_000 * WH),
        (2, 10, 5_001 * WH),
        (3, 20, WH),
        (5, 40, 2 * WH),
        (4, 30, 9_000 * WH),
    ] {
        let mut b = batch(&s, &boot, seq, offset, 50.0);
        b["devices"][0]["energy_mj"] = json!(mj);
        let (code, r) = send(&app, &s, &b).await;
        assert_eq!((code, &r["status"]), (200, &json!("accepted")), "{r}");
    }
    let energy: rust_decimal::Decimal = allocation_usage(&app, &s, "energyKwh")
        .await
        .parse()
        .expect("decimal");
    // 5000 → 5001 Wh: 1; reset to 1 Wh: 1; 1 → 2 Wh: 1; the late seq 4 is older: 0.
    assert_eq!(energy, rust_decimal::Decimal::new(3, 3));
}

async fn reordered_and_repeated_batches_give_identical_usage(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let s = setup(&app).await;
    let boot = uuid::Uuid::new_v4().to_string();
    let batches: Vec<Value> = (0..4)
        .map(|i| batch(&s, &boot, i + 1, 10 * i as i64, 25.0 * (i + 1) as f64))
        .collect();
    for i in [2usize, 0, 3, 1, 1, 3, 0, 2] {
        let (code, r) = send(&app, &s, &batches[i]).await;
        assert_eq!(code, 200, "{r}");
    }
    // 10 s each at 25, 50, 75, 100 %.
    assert_eq!(active_seconds(&app, &s).await, "25");
    let buckets_before = usage_minute::Entity::find()
        .count(&app.db)
        .await
        .expect("count");
    for b in &batches {
        send(&app, &s, b).await;
    }
    assert_eq!(active_seconds(&app, &s).await, "25");
    assert_eq!(
        usage_minute::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        buckets_before
    );
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ ingestHealth { pendingBatches agents { agentId lastSeq gaps } } }",
            json!({}),
        )
        .await;
    assert_eq!(r["data"]["ingestHealth"]["agents"][0]["lastSeq"], 4, "{r}");
    assert_eq!(r["data"]["ingestHealth"]["agents"][0]["gaps"], 0, "{r}");
    // The usage read above aggregated everything acknowledged.
    assert_eq!(r["data"]["ingestHealth"]["pendingBatches"], 0, "{r}");
}

/// `n` nodes each wholly ordered by one tenant (one 8-GPU order fills a node).
async fn fleet(app: &TestApp, n: usize) -> Vec<Setup> {
    let mut tokens = std::collections::HashMap::new();
    for i in 0..n {
        let host = format!("hgx-{i}");
        let r = app.register_node(&host, "H100", 8, "").await;
        let token = support::agent_token(&r);
        tokens.insert(host, token);
    }
    let sku = app.create_h100_sku().await;
    let (_, tenant_key) = app.create_tenant("acme").await;
    let mut out = Vec::new();
    for _ in 0..n {
        let r = app
            .gql(
                Some(&tenant_key),
                "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 8, topology: {level: NODE, required: true}}) { order { allocations { id startedAt node { hostname } gpus { uuid } } } } }",
                json!({"s": sku}),
            )
            .await;
        let alloc = &r["data"]["placeOrder"]["order"]["allocations"][0];
        let host = alloc["node"]["hostname"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"));
        out.push(Setup {
            node: String::new(),
            nats_credentials: None,
            token: tokens[host].clone(),
            tenant_key: tenant_key.clone(),
            host: host.to_owned(),
            gpu: alloc["gpus"][0]["uuid"].as_str().expect("gpu").to_owned(),
            allocation: alloc["id"].as_str().expect("id").to_owned(),
            started: alloc["startedAt"]
                .as_str()
                .expect("start")
                .parse()
                .expect("time"),
        });
    }
    out
}

async fn concurrent_batches_of_many_nodes_each_count_once(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let nodes = fleet(&app, 4).await;
    let mut requests = Vec::new();
    for s in &nodes {
        let boot = uuid::Uuid::new_v4().to_string();
        for i in 0..6u64 {
            // 10 s each at 10 %, 20 %, … 60 %: 21 active seconds per node.
            let body = batch(s, &boot, i + 1, 10 * i as i64, 10.0 * (i + 1) as f64);
            requests.push((s, body.clone(), 200));
            requests.push((s, body, 200));
        }
        let mut bad = batch(s, &boot, 99, 70, 50.0);
        bad["devices"][0]["sm_util_pct"] = json!(250.0);
        requests.push((s, bad, 400));
    }
    // All at once: the server writes them in shared transactions.
    let answers =
        futures_util::future::join_all(requests.iter().map(|(s, body, _)| send(&app, s, body)))
            .await;
    for ((_, body, expected), (code, r)) in requests.iter().zip(&answers) {
        assert_eq!(code, expected, "seq {}: {r}", body["seq"]);
    }
    for s in &nodes {
        assert_eq!(active_seconds(&app, s).await, "21", "{}", s.host);
    }
    assert_eq!(
        ingest_batch::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        24
    );
}

async fn a_sequence_gap_is_recorded(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let s = setup(&app).await;
    let boot = uuid::Uuid::new_v4().to_string();
    send(&app, &s, &batch(&s, &boot, 1, 0, 10.0)).await;
    send(&app, &s, &batch(&s, &boot, 4, 30, 10.0)).await;
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ ingestHealth { agents { lastSeq gaps lagSeconds } } }",
            json!({}),
        )
        .await;
    let stream = &r["data"]["ingestHealth"]["agents"][0];
    assert_eq!(stream["gaps"], 2, "{r}");
    assert_eq!(stream["lastSeq"], 4, "{r}");
    // The newest window ends after now: no lag.
    assert_eq!(stream["lagSeconds"], 0, "{r}");
}

async fn bad_batches_are_rejected_naming_the_field_and_store_nothing(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let s = setup(&app).await;
    let boot = uuid::Uuid::new_v4().to_string();
    let mut bad = batch(&s, &boot, 1, 0, 150.0);
    let (code, r) = send(&app, &s, &bad).await;
    assert_eq!(code, 400, "{r}");
    assert_eq!(r["error"]["field"], "devices[0].sm_util_pct", "{r}");
    bad["devices"][0]["sm_util_pct"] = json!(50.0);
    bad["window"]["end"] = bad["window"]["start"].clone();
    assert_eq!(send(&app, &s, &bad).await.1["error"]["field"], "window.end");
    let (code, r) = post(&app, Some(&s.token), b"{not json".to_vec(), false).await;
    assert_eq!(
        (code, r["error"]["code"].as_str()),
        (400, Some("INVALID_INPUT")),
        "{r}"
    );
    let mut other_node = batch(&s, &boot, 1, 0, 50.0);
    other_node["agent_id"] = json!("hgx-9");
    assert_eq!(send(&app, &s, &other_node).await.0, 403);
    let mut foreign = batch(&s, &boot, 1, 0, 50.0);
    foreign["devices"][0]["uuid"] = json!("GPU-not-mine");
    assert_eq!(send(&app, &s, &foreign).await.0, 403);
    let (code, _) = post(&app, None, b"{}".to_vec(), false).await;
    assert_eq!(code, 401);
    let (code, _) = post(&app, Some(&s.tenant_key), b"{}".to_vec(), false).await;
    assert_eq!(code, 403);

    assert_eq!(
        ingest_batch::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        0
    );
    assert_eq!(
        usage_minute::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        0
    );
    // The first valid one after all that is the first counted.
    let (code, r) = post(
        &app,
        Some(&s.token),
        serde_json::to_vec(&batch(&s, &boot, 1, 0, 50.0)).expect("json"),
        true,
    )
    .await;
    assert_eq!(
        (code, &r["status"]),
        (200, &json!("accepted")),
        "gzip body: {r}"
    );
    assert_eq!(active_seconds(&app, &s).await, "5");
}

async fn a_fatal_xid_fails_the_gpu_and_turns_its_time_into_credit(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let s = setup(&app).await;
    let mut b = batch(&s, &uuid::Uuid::new_v4().to_string(), 1, 0, 50.0);
    b["devices"][0]["events"] = json!([
        {"kind": "xid", "code": 13, "at": iso(s.started + Duration::seconds(1))},
        {"kind": "xid", "code": 79, "at": iso(s.started + Duration::seconds(1))},
    ]);
    let (code, r) = send(&app, &s, &b).await;
    assert_eq!(code, 200, "{r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ nodes { edges { node { gpus { uuid health } } } } }",
            json!({}),
        )
        .await;
    let gpus = r["data"]["nodes"]["edges"][0]["node"]["gpus"]
        .as_array()
        .expect("gpus");
    let failed = gpus
        .iter()
        .find(|g| g["uuid"] == s.gpu.as_str())
        .expect("gpu");
    assert_eq!(failed["health"], "FAILED", "{r}");
    // The operator's audit log says the system failed it, and why.
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ auditLog(filter: {objectType: \"gpu\"}) { nodes { actorRole actorKeyId action objectId before after } } }",
            json!({}),
        )
        .await;
    let entries = r["data"]["auditLog"]["nodes"].as_array().expect("audit");
    assert_eq!(entries.len(), 1, "{r}");
    assert_eq!(entries[0]["actorRole"], "system", "{r}");
    assert_eq!(entries[0]["actorKeyId"], Value::Null, "{r}");
    assert_eq!(entries[0]["action"], "gpu.health_event", "{r}");
    assert_eq!(entries[0]["objectId"], s.gpu.as_str(), "{r}");
    assert!(
        entries[0]["after"]
            .as_str()
            .expect("after")
            .contains("xid 79"),
        "{r}"
    );
    // The customer sees it on its own allocation: health now, the events, the history.
    let history = "query($id: ID!) { allocation(id: $id) { gpus { uuid health healthChangedAt
        events { at kind code effect } healthHistory { health from to cause } } } }";
    let r = app
        .gql(Some(&s.tenant_key), history, json!({"id": s.allocation}))
        .await;
    let gpu = &r["data"]["allocation"]["gpus"][0];
    assert_eq!(gpu["health"], "FAILED", "{r}");
    let events: Vec<(i64, Value)> = gpu["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| (e["code"].as_i64().expect("code"), e["effect"].clone()))
        .collect();
    assert_eq!(
        events,
        vec![(79, json!("FAILED")), (13, Value::Null)],
        "newest first (of one instant, the later reported), an application XID changing nothing: {r}"
    );
    assert_eq!(gpu["events"][0]["kind"], "xid", "{r}");
    let spans = gpu["healthHistory"].as_array().expect("history");
    assert_eq!(spans.len(), 1, "{r}");
    assert_eq!(spans[0]["health"], "FAILED", "{r}");
    assert_eq!(spans[0]["cause"], "xid 79", "{r}");
    assert_eq!(spans[0]["to"], Value::Null, "still failed while held: {r}");
    // Nobody else sees the allocation, its GPUs or their history.
    let (_, other) = app.create_tenant("someone-else").await;
    let r = app
        .gql(Some(&other), history, json!({"id": s.allocation}))
        .await;
    assert_eq!(support::error_code(&r), Some("NOT_FOUND"), "{r}");
    // The operator's timeline of the node: the same events and span on that GPU, none on
    // the node's other GPUs.
    let r = app
        .gql(
            Some(&app.operator_key),
            "query($n: ID!) { gpuHistory(nodeId: $n) { uuid health events { code effect }
                healthHistory { health to cause } } }",
            json!({"n": s.node}),
        )
        .await;
    let gpus = r["data"]["gpuHistory"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(gpus.len(), 8, "{r}");
    for g in gpus {
        if g["uuid"] == s.gpu.as_str() {
            assert_eq!(g["health"], "FAILED", "{r}");
            assert_eq!(
                g["events"],
                json!([{"code": 79, "effect": "FAILED"}, {"code": 13, "effect": null}]),
                "{r}"
            );
            assert_eq!(
                g["healthHistory"],
                json!([{"health": "FAILED", "to": null, "cause": "xid 79"}]),
                "{r}"
            );
        } else {
            assert_eq!(
                (&g["events"], &g["healthHistory"]),
                (&json!([]), &json!([])),
                "{r}"
            );
        }
    }
    // Failed a second in: at most that second is billed, the rest credited.
    app.advance(chrono::TimeDelta::milliseconds(2100));
    let r = app
        .gql(
            Some(&s.tenant_key),
            "query($f: DateTime!, $t: DateTime!) { usage(from: $f, to: $t) { rows { allocatedSeconds slaCreditSeconds } } }",
            json!({"f": iso(s.started - Duration::minutes(5)), "t": iso(Utc::now() + Duration::minutes(5))}),
        )
        .await;
    let row = &r["data"]["usage"]["rows"][0];
    assert!(
        matches!(row["allocatedSeconds"].as_str(), Some("0" | "1")),
        "{r}"
    );
    assert_ne!(row["slaCreditSeconds"], "0", "{r}");
    // By the hour: whole UTC hours whose credit adds up to the same seconds; grouping by
    // hour is refused over more than 31 days.
    let hourly = "query($f: DateTime!, $t: DateTime!) { usage(from: $f, to: $t, groupBy: [HOUR]) { rows { key slaCreditSeconds } } }";
    let range = json!({"f": iso(s.started - Duration::minutes(5)), "t": iso(Utc::now() + Duration::minutes(5))});
    let h = app.gql(Some(&s.tenant_key), hourly, range).await;
    let mut credit = rust_decimal::Decimal::ZERO;
    for hour in h["data"]["usage"]["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("{h}"))
    {
        let at: chrono::DateTime<Utc> =
            hour["key"].as_str().expect("key").parse().expect("an hour");
        assert_eq!(at.timestamp() % 3600, 0, "{h}");
        credit += hour["slaCreditSeconds"]
            .as_str()
            .expect("seconds")
            .parse::<rust_decimal::Decimal>()
            .expect("decimal");
    }
    assert_eq!(
        credit.to_string(),
        row["slaCreditSeconds"].as_str().expect("seconds"),
        "{h}"
    );
    let long = json!({"f": iso(Utc::now() - Duration::days(32)), "t": iso(Utc::now())});
    let h = app.gql(Some(&s.tenant_key), hourly, long).await;
    assert_eq!(h["errors"][0]["extensions"]["field"], "to", "{h}");
    // Released, the failed GPU still takes nothing new.
    let r = app
        .gql(
            Some(&s.tenant_key),
            "mutation($id: ID!) { releaseAllocation(id: $id) { status } }",
            json!({"id": s.allocation}),
        )
        .await;
    assert_eq!(r["data"]["releaseAllocation"]["status"], "RELEASED", "{r}");
    // Once released, the history stops where the allocation did.
    let r = app
        .gql(Some(&s.tenant_key), history, json!({"id": s.allocation}))
        .await;
    assert_ne!(
        r["data"]["allocation"]["gpus"][0]["healthHistory"][0]["to"],
        Value::Null,
        "{r}"
    );
    let r = app
        .gql(
            Some(&s.tenant_key),
            "{ catalog { skus { name available } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["catalog"]["skus"][0]["available"], 7,
        "8 GPUs − 1 failed: {r}"
    );
}

/// The portal's live chart: minute by minute, what the agent reported of the allocation —
/// two batches at 30 % and 80 % SM activity over 10 s each, a GiB in use throughout.
async fn an_allocation_shows_its_utilization_minute_by_minute(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let s = setup(&app).await;
    let boot = uuid::Uuid::new_v4().to_string();
    for (seq, offset, sm) in [(1, 0, 30.0), (2, 10, 80.0)] {
        let (code, r) = send(&app, &s, &batch(&s, &boot, seq, offset, sm)).await;
        assert_eq!(code, 200, "{r}");
    }
    app.advance(chrono::TimeDelta::seconds(30));
    let query = "query($id: ID!, $m: Int) { allocation(id: $id) { utilization(minutes: $m) {
        minute activeSeconds sampledSeconds smActivePct memoryGib } } }";
    let r = app
        .gql(
            Some(&s.tenant_key),
            query,
            json!({"id": s.allocation, "m": 60}),
        )
        .await;
    let minutes = r["data"]["allocation"]["utilization"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"));
    // The 20 seconds sampled may straddle a minute: per minute, what fell in it.
    let first = s
        .started
        .duration_trunc(TimeDelta::seconds(1))
        .expect("trunc")
        + Duration::seconds(1);
    let mut want = std::collections::BTreeMap::new();
    for second in 0..20 {
        let at = first + Duration::seconds(second);
        let minute = at.duration_trunc(TimeDelta::minutes(1)).expect("minute");
        let e = want.entry(minute).or_insert((0i64, 0i64));
        e.0 += 1;
        e.1 += if second < 10 { 30 } else { 80 };
    }
    assert_eq!(minutes.len(), want.len(), "{r}");
    for (m, (minute, (sampled, active_pct_sum))) in minutes.iter().zip(want) {
        let at: chrono::DateTime<Utc> =
            m["minute"].as_str().expect("minute").parse().expect("time");
        assert_eq!(at, minute, "{r}");
        assert_eq!(m["sampledSeconds"], sampled, "{r}");
        let active = rust_decimal::Decimal::new(active_pct_sum, 2);
        assert_eq!(m["activeSeconds"], active.normalize().to_string(), "{r}");
        let pct = (active * rust_decimal::Decimal::ONE_HUNDRED
            / rust_decimal::Decimal::from(sampled))
        .round_dp(1);
        assert_eq!(m["smActivePct"], format!("{pct:.1}"), "{r}");
        assert_eq!(m["memoryGib"], "1.00", "{r}");
    }
    let r = app
        .gql(
            Some(&s.tenant_key),
            query,
            json!({"id": s.allocation, "m": 0}),
        )
        .await;
    assert_eq!(r["errors"][0]["extensions"]["field"], "minutes", "{r}");
}

/// The portal's per-GPU chart: a two-GPU allocation whose GPUs ran at 20 % and 90 % shows
/// each GPU's own minutes, which add up to the allocation's; the GPU of another allocation
/// in the same batch shows in neither.
async fn each_gpu_of_an_allocation_shows_its_own_utilization(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let s = setup(&app).await;
    let r = app
        .gql(
            Some(&s.tenant_key),
            "query($id: ID!) { allocation(id: $id) { sku { id } } }",
            json!({"id": s.allocation}),
        )
        .await;
    let sku = r["data"]["allocation"]["sku"]["id"].clone();
    let r = app
        .gql(
            Some(&s.tenant_key),
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 2}) { order { allocations { id gpus { uuid } } } } }",
            json!({"s": sku}),
        )
        .await;
    let pair = &r["data"]["placeOrder"]["order"]["allocations"][0];
    let id = pair["id"].as_str().unwrap_or_else(|| panic!("{r}"));
    let gpus: Vec<&str> = pair["gpus"]
        .as_array()
        .expect("gpus")
        .iter()
        .map(|g| g["uuid"].as_str().expect("uuid"))
        .collect();
    assert_eq!(gpus.len(), 2, "{r}");
    let sm = |uuid: &str| if uuid == gpus[0] { 20 } else { 90 };
    // The window's seconds and which minute each falls in, as the batch below sends them.
    let start = s
        .started
        .duration_trunc(TimeDelta::seconds(1))
        .expect("trunc")
        + Duration::seconds(1);
    let mut body = batch(&s, &uuid::Uuid::new_v4().to_string(), 1, 0, 50.0);
    let devices = body["devices"].as_array_mut().expect("devices");
    for uuid in &gpus {
        let mut device = devices[0].clone();
        device["uuid"] = json!(uuid);
        device["sm_util_pct"] = json!(sm(uuid));
        device["processes"][0]["allocation_id"] = json!(id);
        device["processes"][0]["sm_util_pct"] = json!(sm(uuid));
        devices.push(device);
    }
    let (code, r) = send(&app, &s, &body).await;
    assert_eq!(code, 200, "{r}");
    app.advance(TimeDelta::seconds(30));
    let r = app
        .gql(
            Some(&s.tenant_key),
            "query($id: ID!) { allocation(id: $id) { utilization { minute activeSeconds sampledSeconds }
                gpus { uuid utilization { minute activeSeconds sampledSeconds smActivePct } } } }",
            json!({"id": id}),
        )
        .await;
    let found = &r["data"]["allocation"];
    let mut total: std::collections::BTreeMap<String, (i64, rust_decimal::Decimal)> =
        Default::default();
    for gpu in found["gpus"].as_array().unwrap_or_else(|| panic!("{r}")) {
        let uuid = gpu["uuid"].as_str().expect("uuid");
        let mut want: std::collections::BTreeMap<String, i64> = Default::default();
        for second in 0..10 {
            let minute = (start + Duration::seconds(second))
                .duration_trunc(TimeDelta::minutes(1))
                .expect("minute");
            *want.entry(iso(minute)).or_default() += 1;
        }
        let got = gpu["utilization"].as_array().expect("minutes");
        assert_eq!(got.len(), want.len(), "{r}");
        for (m, (minute, sampled)) in got.iter().zip(want) {
            let at: chrono::DateTime<Utc> =
                m["minute"].as_str().expect("minute").parse().expect("time");
            assert_eq!(iso(at), minute, "{r}");
            assert_eq!(m["sampledSeconds"], sampled, "{r}");
            let active = rust_decimal::Decimal::new(sm(uuid) * sampled, 2);
            assert_eq!(
                m["activeSeconds"],
                active.normalize().to_string(),
                "{uuid}: {r}"
            );
            assert_eq!(m["smActivePct"], format!("{}.0", sm(uuid)), "{r}");
            let t = total.entry(minute).or_default();
            t.0 += sampled;
            t.1 += active;
        }
    }
    let whole = found["utilization"].as_array().expect("minutes");
    assert_eq!(whole.len(), total.len(), "{r}");
    for (m, (_, (sampled, active))) in whole.iter().zip(total) {
        assert_eq!(m["sampledSeconds"], sampled, "{r}");
        assert_eq!(m["activeSeconds"], active.normalize().to_string(), "{r}");
    }
}

on_both_databases!(
    an_allocation_shows_its_utilization_minute_by_minute,
    each_gpu_of_an_allocation_shows_its_own_utilization,
    energy_counters_become_kwh_between_readings,
    concurrent_batches_of_many_nodes_each_count_once,
    a_batch_counts_once_however_often_it_arrives,
    reordered_and_repeated_batches_give_identical_usage,
    a_sequence_gap_is_recorded,
    bad_batches_are_rejected_naming_the_field_and_store_nothing,
    a_fatal_xid_fails_the_gpu_and_turns_its_time_into_credit,
);
