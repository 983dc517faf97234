//! Ordering through the API: placement, idempotency, capacity answers, quotas, spot
//! preemption, isolation, and concurrency on both databases.

mod support;

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

const PLACE: &str = "mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { id status
    allocations { id status class migProfile migStartSlot milliGpu startedAt preemptAt
      node { hostname nvlinkDomain } gpus { uuid } } } } }";

/// Two 8×H100 nodes, a 2-GPU H100 node in MIG mode and a 2-GPU shared L40S node, with
/// their SKUs. Returns SKU ids by name.
async fn small_fleet(app: &TestApp, h100_nodes: usize) -> HashMap<String, String> {
    for i in 0..h100_nodes {
        app.register_node(&format!("hgx-{i}"), "H100", 8, "").await;
    }
    app.register_node("mig-0", "H100", 2, ", migEnabled: true")
        .await;
    app.register_node("l40s-0", "L40S", 2, ", sharedGpus: true")
        .await;
    let mut ids = HashMap::new();
    for input in [
        json!({"name": "h100", "gpuModel": "H100", "form": "WHOLE_GPU", "region": "eu-west", "listPricePerHour": "2.49", "currency": "USD"}),
        json!({"name": "h100-3g", "gpuModel": "H100", "form": "MIG", "migProfile": "3g.40gb", "region": "eu-west", "listPricePerHour": "1.07", "currency": "USD"}),
        json!({"name": "l40s-250m", "gpuModel": "L40S", "form": "FRACTIONAL", "milliGpu": 250, "region": "eu-west", "listPricePerHour": "0.25", "currency": "USD"}),
    ] {
        let r = app
            .gql(
                Some(&app.operator_key),
                "mutation($i: CreateSkuInput!) { createSku(input: $i) { sku { id name } } }",
                json!({"i": input}),
            )
            .await;
        let sku = &r["data"]["createSku"]["sku"];
        ids.insert(
            sku["name"].as_str().expect("name").to_owned(),
            sku["id"].as_str().expect("id").to_owned(),
        );
    }
    ids
}

async fn place(app: &TestApp, key: &str, input: Value) -> Value {
    app.gql(Some(key), PLACE, json!({"i": input})).await
}

async fn available(app: &TestApp, key: &str, sku: &str) -> u64 {
    let r = app
        .gql(
            Some(key),
            "{ catalog { skus { name available } } }",
            json!({}),
        )
        .await;
    r["data"]["catalog"]["skus"]
        .as_array()
        .expect("skus")
        .iter()
        .find(|s| s["name"] == sku)
        .expect("listed")["available"]
        .as_u64()
        .expect("count")
}

async fn eight_gpus_land_in_one_nvlink_domain_and_come_back_on_release(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let skus = small_fleet(&app, 2).await;
    let (_, key) = app.create_tenant("acme").await;
    assert_eq!(available(&app, &key, "h100").await, 16);
    let r = place(
        &app,
        &key,
        json!({"sku": skus["h100"], "count": 8, "topology": {"level": "NVLINK_DOMAIN", "required": true},
               "labels": [{"key": "project", "value": "llm"}], "idempotencyKey": "o-1"}),
    )
    .await;
    let order = &r["data"]["placeOrder"]["order"];
    assert_eq!(order["status"], "ACTIVE", "{r}");
    let allocs = order["allocations"].as_array().expect("allocations");
    assert_eq!(allocs.len(), 1);
    assert_eq!(allocs[0]["gpus"].as_array().expect("gpus").len(), 8);
    assert_eq!(available(&app, &key, "h100").await, 8);

    let r = app
        .gql(
            Some(&key),
            "mutation($id: ID!) { releaseOrder(id: $id) { order { status allocations { status endedAt } } } }",
            json!({"id": order["id"]}),
        )
        .await;
    assert_eq!(
        r["data"]["releaseOrder"]["order"]["status"], "RELEASED",
        "{r}"
    );
    assert_eq!(available(&app, &key, "h100").await, 16);
}

async fn mig_slices_and_fractions_take_valid_distinct_places(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let skus = small_fleet(&app, 1).await;
    let (_, key) = app.create_tenant("acme").await;
    let r = place(&app, &key, json!({"sku": skus["h100-3g"], "count": 4})).await;
    let allocs = r["data"]["placeOrder"]["order"]["allocations"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .clone();
    assert_eq!(allocs.len(), 4);
    let mut places = HashSet::new();
    for a in &allocs {
        assert_eq!(a["migProfile"], "3g.40gb");
        let start = a["migStartSlot"].as_i64().expect("slot");
        assert!(start == 0 || start == 4, "3g starts at 0 or 4, got {start}");
        assert!(places.insert((a["gpus"][0]["uuid"].to_string(), start)));
    }
    // Both GPUs are now full of 3g slices.
    let r = place(&app, &key, json!({"sku": skus["h100-3g"], "count": 1})).await;
    assert_eq!(error_code(&r), Some("INSUFFICIENT_CAPACITY"), "{r}");

    let r = place(&app, &key, json!({"sku": skus["l40s-250m"], "count": 8})).await;
    let allocs = r["data"]["placeOrder"]["order"]["allocations"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .clone();
    assert_eq!(allocs.len(), 8);
    let mut per_gpu: HashMap<String, i64> = HashMap::new();
    for a in &allocs {
        *per_gpu.entry(a["gpus"][0]["uuid"].to_string()).or_default() +=
            a["milliGpu"].as_i64().expect("milli");
    }
    assert!(per_gpu.values().all(|m| *m <= 1000), "{per_gpu:?}");
    assert_eq!(available(&app, &key, "l40s-250m").await, 0);
}

async fn a_retried_order_never_buys_twice(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let skus = small_fleet(&app, 1).await;
    let (_, key) = app.create_tenant("acme").await;
    let input = json!({"sku": skus["h100"], "count": 2, "idempotencyKey": "retry-me"});
    let first = place(&app, &key, input.clone()).await;
    let second = place(&app, &key, input).await;
    let id = &first["data"]["placeOrder"]["order"]["id"];
    assert!(id.is_string(), "{first}");
    assert_eq!(&second["data"]["placeOrder"]["order"]["id"], id);
    assert_eq!(available(&app, &key, "h100").await, 6);
    let r = place(
        &app,
        &key,
        json!({"sku": skus["h100"], "count": 3, "idempotencyKey": "retry-me"}),
    )
    .await;
    assert_eq!(error_code(&r), Some("IDEMPOTENCY_CONFLICT"), "{r}");
    assert_eq!(available(&app, &key, "h100").await, 6);
}

async fn an_order_that_does_not_fit_names_what_would(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let skus = small_fleet(&app, 1).await;
    let (_, key) = app.create_tenant("acme").await;
    let r = place(&app, &key, json!({"sku": skus["h100"], "count": 12})).await;
    assert_eq!(error_code(&r), Some("INSUFFICIENT_CAPACITY"), "{r}");
    let alternatives = r["errors"][0]["extensions"]["alternatives"]
        .as_array()
        .expect("alternatives");
    assert!(
        alternatives
            .iter()
            .any(|a| a["reason"] == "fewer units" && a["count"] == 8),
        "{alternatives:?}"
    );
    assert_eq!(available(&app, &key, "h100").await, 8, "nothing was taken");
    let r = place(&app, &key, json!({"sku": skus["h100"], "count": 0})).await;
    assert_eq!(r["errors"][0]["extensions"]["field"], "count", "{r}");
    let r = place(
        &app,
        &key,
        json!({"sku": skus["h100"], "count": 4, "maxPricePerHour": "5.00"}),
    )
    .await;
    assert_eq!(
        r["errors"][0]["extensions"]["field"], "maxPricePerHour",
        "{r}"
    );
}

async fn on_demand_preempts_spot_only_after_the_notice(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let skus = small_fleet(&app, 1).await;
    let (_, spot_key) = app.create_tenant("spotty").await;
    let (_, key) = app.create_tenant("acme").await;
    let r = place(
        &app,
        &spot_key,
        json!({"sku": skus["h100"], "count": 8, "class": "SPOT"}),
    )
    .await;
    let spot = r["data"]["placeOrder"]["order"]["allocations"][0]["id"].clone();
    assert!(spot.is_string(), "{r}");
    // A spot order never preempts spot.
    let r = place(
        &app,
        &key,
        json!({"sku": skus["h100"], "count": 8, "class": "SPOT"}),
    )
    .await;
    assert_eq!(error_code(&r), Some("INSUFFICIENT_CAPACITY"), "{r}");
    let r = place(&app, &key, json!({"sku": skus["h100"], "count": 8})).await;
    let alloc = &r["data"]["placeOrder"]["order"]["allocations"][0];
    assert_eq!(alloc["status"], "ACTIVE", "{r}");
    let r = app
        .gql(
            Some(&spot_key),
            "query($id: ID!) { allocation(id: $id) { status preemptAt } }",
            json!({"id": spot}),
        )
        .await;
    assert_eq!(r["data"]["allocation"]["status"], "PREEMPTING", "{r}");
    let preempt_at = r["data"]["allocation"]["preemptAt"]
        .as_str()
        .expect("preemptAt");
    assert_eq!(
        alloc["startedAt"].as_str(),
        Some(preempt_at),
        "billing starts when the spot leaves"
    );
}

/// The start of a placed order's first allocation (`startedAt`).
fn started_at(r: &Value) -> String {
    r["data"]["placeOrder"]["order"]["allocations"][0]["startedAt"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned()
}

async fn a_spot_allocation_keeps_its_gpus_until_its_notice_ends(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let skus = small_fleet(&app, 1).await;
    let (_, spot_key) = app.create_tenant("spotty").await;
    let (_, key) = app.create_tenant("acme").await;
    let (_, late_key) = app.create_tenant("late").await;
    let r = place(
        &app,
        &spot_key,
        json!({"sku": skus["h100"], "count": 8, "class": "SPOT"}),
    )
    .await;
    assert!(r["data"]["placeOrder"].is_object(), "{r}");
    // Four GPUs displace the spot allocation: they start when its notice ends.
    let first = place(&app, &key, json!({"sku": skus["h100"], "count": 4})).await;
    let notice_ends = started_at(&first);
    // The other four still run the spot work until then: nothing may start on them now.
    assert_eq!(available(&app, &key, "h100").await, 0);
    let second = place(&app, &late_key, json!({"sku": skus["h100"], "count": 4})).await;
    assert!(started_at(&second) >= notice_ends, "{second}");
    // The first order, released before it started, gives its GPUs back to the spot
    // allocation for the rest of its notice, and costs nothing.
    release_order(&app, &key, &first["data"]["placeOrder"]["order"]["id"]).await;
    assert_eq!(available(&app, &key, "h100").await, 0);
    let third = place(&app, &key, json!({"sku": skus["h100"], "count": 4})).await;
    assert!(started_at(&third) >= notice_ends, "{third}");
    release_order(&app, &key, &third["data"]["placeOrder"]["order"]["id"]).await;
    let r = app
        .gql(Some(&key), "{ upcomingInvoice { total } }", json!({}))
        .await;
    assert_eq!(
        r["data"]["upcomingInvoice"]["total"]
            .as_str()
            .map(|t| t.parse::<f64>().ok()),
        Some(Some(0.0)),
        "{r}"
    );
}

async fn quotas_hold_and_suspension_blocks_orders(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let skus = small_fleet(&app, 1).await;
    let (tenant, key) = app.create_tenant("acme").await;
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($t: ID!) { setQuota(input: {tenantId: $t, scope: GPU_MODEL, value: \"H100\", max: 3}) { quota { max } } }",
            json!({"t": tenant}),
        )
        .await;
    assert_eq!(r["data"]["setQuota"]["quota"]["max"], 3, "{r}");
    let r = place(&app, &key, json!({"sku": skus["h100"], "count": 2})).await;
    assert!(r["data"]["placeOrder"]["order"]["id"].is_string(), "{r}");
    let r = place(&app, &key, json!({"sku": skus["h100"], "count": 2})).await;
    assert_eq!(error_code(&r), Some("QUOTA_EXCEEDED"), "{r}");
    // A 3g slice is 3/7 of a GPU: 2 + 3/7 fits under 3.
    let r = place(&app, &key, json!({"sku": skus["h100-3g"], "count": 1})).await;
    assert!(r["data"]["placeOrder"]["order"]["id"].is_string(), "{r}");
    let r = app
        .gql(Some(&key), "{ quotas { scope value max } }", json!({}))
        .await;
    assert_eq!(r["data"]["quotas"][0]["scope"], "GPU_MODEL", "{r}");

    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($t: ID!) { suspendTenant(id: $t, reason: \"unpaid\") { status } }",
            json!({"t": tenant}),
        )
        .await;
    assert_eq!(r["data"]["suspendTenant"]["status"], "SUSPENDED", "{r}");
    let r = place(&app, &key, json!({"sku": skus["l40s-250m"], "count": 1})).await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($t: ID!) { resumeTenant(id: $t) { status } }",
            json!({"t": tenant}),
        )
        .await;
    assert_eq!(r["data"]["resumeTenant"]["status"], "ACTIVE", "{r}");
    let r = app
        .gql(
            Some(&key),
            "{ auditLog(first: 50) { edges { node { action actorRole } } } }",
            json!({}),
        )
        .await;
    let actions: Vec<&str> = r["data"]["auditLog"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|e| e["node"]["action"].as_str().expect("action"))
        .collect();
    for expected in [
        "tenant.create",
        "quota.set",
        "order.place",
        "tenant.suspend",
        "tenant.resume",
    ] {
        assert!(
            actions.contains(&expected),
            "{expected} missing from {actions:?}"
        );
    }
}

async fn a_drained_node_takes_nothing_new(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let skus = small_fleet(&app, 1).await;
    let (_, key) = app.create_tenant("acme").await;
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ nodes(first: 10) { edges { node { id hostname } } } }",
            json!({}),
        )
        .await;
    let hgx = r["data"]["nodes"]["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .find(|e| e["node"]["hostname"] == "hgx-0")
        .expect("hgx-0")["node"]["id"]
        .clone();
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($id: ID!) { drainNode(id: $id) { state } }",
            json!({"id": hgx}),
        )
        .await;
    assert_eq!(r["data"]["drainNode"]["state"], "DRAINING", "{r}");
    let r = place(&app, &key, json!({"sku": skus["h100"], "count": 1})).await;
    assert_eq!(error_code(&r), Some("INSUFFICIENT_CAPACITY"), "{r}");
    let r = app
        .gql(Some(&app.operator_key), "{ fleetOverview { nodesByState { key count } gpusByHealth { key count } capacity { region gpuModel gpus allocatedGpus } } }", json!({}))
        .await;
    let states = &r["data"]["fleetOverview"]["nodesByState"];
    assert!(
        states
            .as_array()
            .expect("states")
            .iter()
            .any(|s| s["key"] == "draining" && s["count"] == 1),
        "{r}"
    );
}

async fn another_tenant_can_neither_see_nor_release_an_allocation(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let skus = small_fleet(&app, 1).await;
    let (_, a) = app.create_tenant("tenant-a").await;
    let (_, b) = app.create_tenant("tenant-b").await;
    let r = place(&app, &a, json!({"sku": skus["h100"], "count": 1})).await;
    let order = r["data"]["placeOrder"]["order"]["id"].clone();
    let alloc = r["data"]["placeOrder"]["order"]["allocations"][0]["id"].clone();
    for (query, vars) in [
        (
            "query($id: ID!) { allocation(id: $id) { id } }",
            json!({"id": alloc}),
        ),
        (
            "query($id: ID!) { order(id: $id) { id } }",
            json!({"id": order}),
        ),
        (
            "mutation($id: ID!) { releaseAllocation(id: $id) { id } }",
            json!({"id": alloc}),
        ),
        (
            "mutation($id: ID!) { releaseOrder(id: $id) { order { id } } }",
            json!({"id": order}),
        ),
    ] {
        let r = app.gql(Some(&b), query, vars).await;
        assert_eq!(error_code(&r), Some("NOT_FOUND"), "{query}: {r}");
    }
    let r = app
        .gql(
            Some(&b),
            "{ orders { edges { node { id } } } allocations { edges { node { id } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["orders"]["edges"]
            .as_array()
            .expect("edges")
            .len(),
        0,
        "{r}"
    );
    assert_eq!(
        r["data"]["allocations"]["edges"]
            .as_array()
            .expect("edges")
            .len(),
        0,
        "{r}"
    );
    let r = app
        .gql(
            Some(&a),
            "query($id: ID!) { allocation(id: $id) { status } }",
            json!({"id": alloc}),
        )
        .await;
    assert_eq!(
        r["data"]["allocation"]["status"], "ACTIVE",
        "still running: {r}"
    );
}

/// 200 concurrent one-GPU orders: exactly as many succeed as the limit allows, and no GPU
/// is ever in two allocations.
async fn concurrent_orders(
    app: &TestApp,
    key: &str,
    sku: &str,
) -> (usize, HashMap<String, usize>, Vec<String>) {
    let mut tasks = Vec::new();
    for i in 0..200 {
        let client = app.client.clone();
        let url = format!("{}/graphql", app.url);
        let key = key.to_owned();
        let body = json!({"query": PLACE, "variables": {"i": {"sku": sku, "count": 1, "idempotencyKey": format!("c-{i}")}}});
        tasks.push(tokio::spawn(async move {
            client
                .post(url)
                .bearer_auth(key)
                .json(&body)
                .send()
                .await
                .expect("post")
                .json::<Value>()
                .await
                .expect("json")
        }));
    }
    let mut placed = 0;
    let mut codes: HashMap<String, usize> = HashMap::new();
    let mut gpus = Vec::new();
    for task in tasks {
        let r = task.await.expect("task");
        if let Some(order) = r["data"]["placeOrder"]["order"].as_object() {
            placed += 1;
            for a in order["allocations"].as_array().expect("allocations") {
                for g in a["gpus"].as_array().expect("gpus") {
                    gpus.push(g["uuid"].as_str().expect("uuid").to_owned());
                }
            }
        } else {
            *codes
                .entry(error_code(&r).unwrap_or("none").to_owned())
                .or_default() += 1;
        }
    }
    (placed, codes, gpus)
}

async fn concurrent_orders_never_overrun_a_quota(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let skus = small_fleet(&app, 8).await;
    let (tenant, key) = app.create_tenant("acme").await;
    app.gql(
        Some(&app.operator_key),
        "mutation($t: ID!) { setQuota(input: {tenantId: $t, scope: GPU_MODEL, value: \"H100\", max: 16}) { quota { id } } }",
        json!({"t": tenant}),
    )
    .await;
    let (placed, codes, gpus) = concurrent_orders(&app, &key, &skus["h100"]).await;
    assert_eq!(placed, 16, "{codes:?}");
    assert_eq!(codes.get("QUOTA_EXCEEDED"), Some(&184), "{codes:?}");
    assert_eq!(gpus.iter().collect::<HashSet<_>>().len(), 16);
}

async fn concurrent_orders_never_sell_a_gpu_twice(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let skus = small_fleet(&app, 2).await;
    let (_, key) = app.create_tenant("acme").await;
    let (placed, codes, gpus) = concurrent_orders(&app, &key, &skus["h100"]).await;
    assert_eq!(placed, 16, "{codes:?}");
    assert_eq!(codes.get("INSUFFICIENT_CAPACITY"), Some(&184), "{codes:?}");
    assert_eq!(
        gpus.iter().collect::<HashSet<_>>().len(),
        16,
        "no GPU in two allocations"
    );
}

/// A value of the server's `/metrics`.
async fn metric(app: &TestApp, name: &str) -> i64 {
    let text = app
        .client
        .get(format!("{}/metrics", app.url))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("neocloud_{name} ")))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as i64)
}

async fn audited_orders(app: &TestApp, key: &str) -> usize {
    let r = app
        .gql(
            Some(key),
            "{ auditLog(first: 100, filter: {action: \"order.place\"}) { edges { node { action } } } }",
            json!({}),
        )
        .await;
    r["data"]["auditLog"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .len()
}

async fn allocation_count(app: &TestApp, key: &str) -> usize {
    let r = app
        .gql(
            Some(key),
            "{ allocations(first: 100) { edges { node { id } } } }",
            json!({}),
        )
        .await;
    r["data"]["allocations"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .len()
}

/// Orders of two tenants that queue behind the fleet lock are placed together, and each
/// gets the answer it would have got alone: a quota, a capacity shortfall or an idempotency
/// conflict refuses only its own order, and one tenant's orders never count against the
/// other's quota.
async fn orders_placed_together_keep_their_own_answers(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let skus = small_fleet(&app, 2).await;
    let h100 = skus["h100"].clone();
    let (_, a) = app.create_tenant("acme").await;
    let (b_tenant, b) = app.create_tenant("bolt").await;
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($t: ID!) { setQuota(input: {tenantId: $t, scope: GPU_MODEL, value: \"H100\", max: 2}) { quota { max } } }",
            json!({"t": b_tenant}),
        )
        .await;
    assert_eq!(r["data"]["setQuota"]["quota"]["max"], 2, "{r}");
    let first = place(
        &app,
        &a,
        json!({"sku": h100, "count": 1, "idempotencyKey": "dup"}),
    )
    .await;
    let dup_id = first["data"]["placeOrder"]["order"]["id"].clone();
    assert!(dup_id.is_string(), "{first}");
    // Both keys authenticated once, so nothing but placement writes from here on.
    assert_eq!(allocation_count(&app, &b).await, 0);

    let mut asks: Vec<(&str, String, Value)> = Vec::new();
    for i in 0..10 {
        asks.push((
            "a",
            a.clone(),
            json!({"sku": h100, "count": 1, "idempotencyKey": format!("a-{i}")}),
        ));
    }
    for _ in 0..2 {
        asks.push((
            "twin",
            a.clone(),
            json!({"sku": h100, "count": 1, "idempotencyKey": "twin"}),
        ));
    }
    asks.push((
        "retry",
        a.clone(),
        json!({"sku": h100, "count": 1, "idempotencyKey": "dup"}),
    ));
    asks.push((
        "conflict",
        a.clone(),
        json!({"sku": h100, "count": 2, "idempotencyKey": "dup"}),
    ));
    asks.push(("big", a.clone(), json!({"sku": h100, "count": 64})));
    for i in 0..6 {
        asks.push((
            "b",
            b.clone(),
            json!({"sku": h100, "count": 1, "idempotencyKey": format!("b-{i}")}),
        ));
    }
    let batches_before = metric(&app, "placement_batches_total").await;
    let answered_before = metric(&app, "placement_orders_total").await;

    // Hold the fleet lock from outside, so every order queues behind it.
    use sea_orm::{ConnectionTrait, TransactionTrait};
    let lock = app.db.begin().await.expect("begin");
    lock.execute_unprepared("UPDATE fleet_epoch SET epoch = epoch WHERE id = 1")
        .await
        .expect("lock the fleet");
    let mut tasks = Vec::new();
    for (kind, key, input) in asks.clone() {
        let client = app.client.clone();
        let url = format!("{}/graphql", app.url);
        let body = json!({"query": PLACE, "variables": {"i": input}});
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(url)
                .bearer_auth(key)
                .json(&body)
                .send()
                .await
                .expect("post")
                .json::<Value>()
                .await
                .expect("json");
            (kind, r)
        }));
    }
    let waiting = std::time::Instant::now();
    loop {
        let queued = metric(&app, "placement_queue_depth").await
            + metric(&app, "placement_orders_in_progress").await;
        if queued == asks.len() as i64 {
            break;
        }
        assert!(
            waiting.elapsed() < std::time::Duration::from_secs(5),
            "only {queued} of {} orders queued",
            asks.len()
        );
        tokio::task::yield_now().await;
    }
    lock.rollback().await.expect("unlock the fleet");

    let mut codes: HashMap<&str, Vec<String>> = HashMap::new();
    let mut twins = HashSet::new();
    let mut gpus = Vec::new();
    for task in tasks {
        let (kind, r) = task.await.expect("task");
        if let Some(order) = r["data"]["placeOrder"]["order"].as_object() {
            let id = order["id"].as_str().expect("id").to_owned();
            if kind == "retry" {
                assert_eq!(order["id"], dup_id, "a retry answers the first order");
                continue;
            }
            if kind == "twin" && !twins.insert(id) {
                // The second of two identical asks answers the first's order.
                continue;
            }
            codes.entry(kind).or_default().push("PLACED".into());
            for alloc in order["allocations"].as_array().expect("allocations") {
                for g in alloc["gpus"].as_array().expect("gpus") {
                    gpus.push(g["uuid"].as_str().expect("uuid").to_owned());
                }
            }
        } else {
            codes
                .entry(kind)
                .or_default()
                .push(error_code(&r).unwrap_or("none").to_owned());
        }
    }
    let count = |kind: &str, code: &str| {
        codes
            .get(kind)
            .map_or(0, |c| c.iter().filter(|c| *c == code).count())
    };
    assert_eq!(count("a", "PLACED"), 10, "{codes:?}");
    assert_eq!(twins.len(), 1, "one order for two identical asks");
    assert_eq!(count("conflict", "IDEMPOTENCY_CONFLICT"), 1, "{codes:?}");
    assert_eq!(count("big", "INSUFFICIENT_CAPACITY"), 1, "{codes:?}");
    assert_eq!(count("b", "PLACED"), 2, "{codes:?}");
    assert_eq!(count("b", "QUOTA_EXCEEDED"), 4, "{codes:?}");
    assert_eq!(
        gpus.iter().collect::<HashSet<_>>().len(),
        gpus.len(),
        "no GPU in two allocations"
    );
    assert_eq!(
        metric(&app, "placement_orders_total").await - answered_before,
        asks.len() as i64
    );
    let batches = metric(&app, "placement_batches_total").await - batches_before;
    assert!(
        (1..=2).contains(&batches),
        "{} orders in {batches} transactions",
        asks.len()
    );

    // What was written matches the answers, tenant by tenant.
    assert_eq!(allocation_count(&app, &a).await, 12);
    assert_eq!(allocation_count(&app, &b).await, 2);
    assert_eq!(audited_orders(&app, &a).await, 12);
    assert_eq!(audited_orders(&app, &b).await, 2);
    assert_eq!(available(&app, &a, "h100").await, 16 - 14);
}

async fn create_sku(app: &TestApp, input: Value) -> String {
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($i: CreateSkuInput!) { createSku(input: $i) { sku { id } } }",
            json!({"i": input}),
        )
        .await;
    r["data"]["createSku"]["sku"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("createSku failed: {r}"))
        .to_owned()
}

/// Registers a node of `gpus` H100s in `region`, its own NVLink domain.
async fn register_in(app: &TestApp, host: &str, region: &str, gpus: usize, mig: bool) {
    let gpu_list: Vec<Value> = (0..gpus)
        .map(|i| json!({"uuid": format!("GPU-{host}-{i}"), "index": i}))
        .collect();
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($h: String!, $r: String!, $g: [GpuRegistrationInput!]!, $m: Boolean!) {
               registerNode(input: {hostname: $h, region: $r, zone: \"a\", rack: \"r01\",
                 nvlinkDomain: $h, gpuModel: \"H100\", gpus: $g, migEnabled: $m}) { node { id } } }",
            json!({"h": host, "r": region, "g": gpu_list, "m": mig}),
        )
        .await;
    assert!(r["data"]["registerNode"].is_object(), "{r}");
}

async fn release_order(app: &TestApp, key: &str, id: &Value) {
    let r = app
        .gql(
            Some(key),
            "mutation($id: ID!) { releaseOrder(id: $id) { order { status } } }",
            json!({"id": id}),
        )
        .await;
    assert_eq!(
        r["data"]["releaseOrder"]["order"]["status"], "RELEASED",
        "{r}"
    );
}

async fn a_whole_node_order_takes_a_plain_node_before_a_mig_node(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    app.register_node("mig-0", "H100", 8, ", migEnabled: true")
        .await;
    app.register_node("hgx-0", "H100", 8, "").await;
    let node_sku = create_sku(
        &app,
        json!({"name": "h100-node", "gpuModel": "H100", "form": "WHOLE_NODE", "region": "eu-west", "listPricePerHour": "19.92", "currency": "USD"}),
    )
    .await;
    create_sku(
        &app,
        json!({"name": "h100-3g", "gpuModel": "H100", "form": "MIG", "migProfile": "3g.40gb", "region": "eu-west", "listPricePerHour": "1.07", "currency": "USD"}),
    )
    .await;
    let (_, key) = app.create_tenant("acme").await;
    assert_eq!(available(&app, &key, "h100-3g").await, 16);
    let r = place(&app, &key, json!({"sku": node_sku, "count": 1})).await;
    let alloc = &r["data"]["placeOrder"]["order"]["allocations"][0];
    assert_eq!(alloc["node"]["hostname"], "hgx-0", "{r}");
    assert_eq!(
        available(&app, &key, "h100-3g").await,
        16,
        "no MIG slice was lost"
    );
    // With the plain node taken, bare metal may take the MIG node.
    let r = place(&app, &key, json!({"sku": node_sku, "count": 1})).await;
    let alloc = &r["data"]["placeOrder"]["order"]["allocations"][0];
    assert_eq!(alloc["node"]["hostname"], "mig-0", "{r}");
}

/// Places every alternative of a refusal as an order (the refused order with the
/// alternative's SKU and count), releasing each before the next.
async fn place_each_alternative(app: &TestApp, key: &str, refused: &Value, alternatives: &[Value]) {
    for alt in alternatives {
        let mut input = refused.clone();
        input["sku"] = alt["sku"].clone();
        input["count"] = alt["count"].clone();
        let r = place(app, key, input).await;
        let order = &r["data"]["placeOrder"]["order"];
        assert_eq!(order["status"], "ACTIVE", "alternative {alt}: {r}");
        release_order(app, key, &order["id"]).await;
    }
}

async fn every_alternative_offered_places_as_an_order(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    for (host, region, gpus, mig) in [
        ("hgx-0", "eu-west", 8, false),
        ("hgx-1", "eu-west", 8, false),
        ("mig-0", "eu-west", 8, true),
        ("hgx-us-0", "us-east", 8, false),
        ("hgx-us-1", "us-east", 8, false),
        ("mig-us-0", "us-east", 4, true),
    ] {
        register_in(&app, host, region, gpus, mig).await;
    }
    let mut skus = HashMap::new();
    for (name, form, profile, region) in [
        ("h100", "WHOLE_GPU", None, "eu-west"),
        ("h100-us", "WHOLE_GPU", None, "us-east"),
        ("h100-7g", "MIG", Some("7g.80gb"), "eu-west"),
        ("h100-7g-us", "MIG", Some("7g.80gb"), "us-east"),
        ("h100-1g", "MIG", Some("1g.10gb"), "eu-west"),
        ("h100-1g-us", "MIG", Some("1g.10gb"), "us-east"),
    ] {
        let mut input = json!({"name": name, "gpuModel": "H100", "form": form, "region": region, "listPricePerHour": "1.00", "currency": "USD"});
        if let Some(profile) = profile {
            input["migProfile"] = json!(profile);
        }
        skus.insert(name, create_sku(&app, input).await);
    }
    let (_, key) = app.create_tenant("acme").await;
    // One GPU in use: the largest domain still free holds 8.
    let r = place(&app, &key, json!({"sku": skus["h100"], "count": 1})).await;
    assert!(r["data"]["placeOrder"]["order"]["id"].is_string(), "{r}");

    // No NVLink domain holds 16 GPUs, in any region.
    let refused = json!({"sku": skus["h100"], "count": 16,
        "topology": {"level": "NVLINK_DOMAIN", "required": true}});
    let r = place(&app, &key, refused.clone()).await;
    assert_eq!(error_code(&r), Some("INSUFFICIENT_CAPACITY"), "{r}");
    let message = r["errors"][0]["message"].as_str().expect("message");
    assert!(
        message.contains("can never fit")
            && message.contains("the largest NVLink domain of H100 in eu-west holds 8 GPUs"),
        "{message}"
    );
    let alternatives = r["errors"][0]["extensions"]["alternatives"]
        .as_array()
        .expect("alternatives")
        .clone();
    let offered: HashSet<(String, u64)> = alternatives
        .iter()
        .map(|a| {
            (
                a["skuName"].as_str().expect("name").to_owned(),
                a["count"].as_u64().expect("count"),
            )
        })
        .collect();
    assert_eq!(
        offered,
        HashSet::from([("h100".to_owned(), 8), ("h100-us".to_owned(), 8)]),
        "{alternatives:?}"
    );
    place_each_alternative(&app, &key, &refused, &alternatives).await;

    // Nine full-GPU slices where eight MIG GPUs exist: the same profile, never a 1g.
    let refused = json!({"sku": skus["h100-7g"], "count": 9});
    let r = place(&app, &key, refused.clone()).await;
    assert_eq!(error_code(&r), Some("INSUFFICIENT_CAPACITY"), "{r}");
    let message = r["errors"][0]["message"].as_str().expect("message");
    assert!(
        message.contains("can never fit") && message.contains("at most 8"),
        "{message}"
    );
    let alternatives = r["errors"][0]["extensions"]["alternatives"]
        .as_array()
        .expect("alternatives")
        .clone();
    let offered: HashSet<(String, u64)> = alternatives
        .iter()
        .map(|a| {
            (
                a["skuName"].as_str().expect("name").to_owned(),
                a["count"].as_u64().expect("count"),
            )
        })
        .collect();
    assert_eq!(
        offered,
        HashSet::from([("h100-7g".to_owned(), 8), ("h100-7g-us".to_owned(), 4)]),
        "{alternatives:?}"
    );
    place_each_alternative(&app, &key, &refused, &alternatives).await;

    // A shortfall that is only for now says so.
    let r = place(&app, &key, json!({"sku": skus["h100"], "count": 16})).await;
    assert_eq!(error_code(&r), Some("INSUFFICIENT_CAPACITY"), "{r}");
    let message = r["errors"][0]["message"].as_str().expect("message");
    assert!(message.contains("not enough free capacity"), "{message}");
}

async fn a_preempting_order_shows_its_tenant_no_id_of_the_victims(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let skus = small_fleet(&app, 1).await;
    let (b_tenant, b) = app.create_tenant("spotty").await;
    let (_, a) = app.create_tenant("acme").await;
    let r = place(
        &app,
        &b,
        json!({"sku": skus["h100"], "count": 8, "class": "SPOT"}),
    )
    .await;
    let b_order = r["data"]["placeOrder"]["order"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    let b_alloc = r["data"]["placeOrder"]["order"]["allocations"][0]["id"]
        .as_str()
        .expect("allocation")
        .to_owned();
    let r = place(&app, &a, json!({"sku": skus["h100"], "count": 8})).await;
    assert_eq!(r["data"]["placeOrder"]["order"]["status"], "ACTIVE", "{r}");
    // The victim's tenant is told when its allocation ends; the preemptor is not.
    let notices = app.events_of(&b, "allocation.preempting").await;
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0]["allocation_id"], b_alloc.as_str());
    assert_eq!(notices[0]["reason"], "preempted");
    assert!(notices[0]["preempt_at"].is_string(), "{notices:?}");
    assert!(app.events_of(&a, "allocation.preempting").await.is_empty());

    let log =
        "{ auditLog(first: 100) { edges { node { tenantId action objectId before after } } } }";
    let r = app.gql(Some(&a), log, json!({})).await;
    let entries = r["data"]["auditLog"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"));
    let place_entry = entries
        .iter()
        .find(|e| e["node"]["action"] == "order.place")
        .unwrap_or_else(|| panic!("{r}"));
    let after: Value =
        serde_json::from_str(place_entry["node"]["after"].as_str().expect("after")).expect("json");
    assert_eq!(after["preempted"], 1, "{after}");
    let seen = r["data"].to_string();
    for id in [&b_alloc, &b_order, &b_tenant] {
        assert!(!seen.contains(id.as_str()), "tenant A sees {id}: {seen}");
    }

    // The operator sees which allocations were preempted, in an entry of no tenant.
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ auditLog(first: 10, filter: {action: \"order.preempt\"}) { edges { node { tenantId after } } } }",
            json!({}),
        )
        .await;
    let entry = &r["data"]["auditLog"]["edges"][0]["node"];
    assert!(entry["tenantId"].is_null(), "{r}");
    assert!(
        entry["after"].as_str().expect("after").contains(&b_alloc),
        "{r}"
    );
}

on_both_databases!(
    eight_gpus_land_in_one_nvlink_domain_and_come_back_on_release,
    mig_slices_and_fractions_take_valid_distinct_places,
    a_retried_order_never_buys_twice,
    an_order_that_does_not_fit_names_what_would,
    on_demand_preempts_spot_only_after_the_notice,
    a_spot_allocation_keeps_its_gpus_until_its_notice_ends,
    quotas_hold_and_suspension_blocks_orders,
    a_drained_node_takes_nothing_new,
    another_tenant_can_neither_see_nor_release_an_allocation,
    concurrent_orders_never_overrun_a_quota,
    concurrent_orders_never_sell_a_gpu_twice,
    orders_placed_together_keep_their_own_answers,
    a_whole_node_order_takes_a_plain_node_before_a_mig_node,
    every_alternative_offered_places_as_an_order,
    a_preempting_order_shows_its_tenant_no_id_of_the_victims,
);
