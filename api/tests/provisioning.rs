//! The provisioning hand-off as an operator's provisioner and a customer see it: SSH keys
//! registered, checked and owned; `allocation.placed` reaching the operator's endpoint
//! with the node, GPUs and the keys the order named; the provisioner reporting ready
//! (the customer reads `Allocation.access`) or failed (released, and nothing billed).

mod support;

#[path = "fixtures/ssh_keys.rs"]
mod ssh_keys;

use chrono::TimeDelta;
use rust_decimal::Decimal;
use serde_json::{Value, json};

use support::receiver::{body, receiver, verifies, wait_for};
use support::{Backend, ReferenceReceiver, TestApp, error_code};

const ADD: &str = "mutation($n: String!, $k: String!) { addSshKey(name: $n, publicKey: $k) { id name keyType fingerprint comment publicKey } }";
const ACCESS: &str =
    "access { state reason changedAt endpoints { kind host port username description } }";

async fn add_key(app: &TestApp, key: &str, name: &str, line: &str) -> Value {
    let r = app.gql(Some(key), ADD, json!({"n": name, "k": line})).await;
    assert!(r["errors"].is_null(), "{r}");
    r["data"]["addSshKey"].clone()
}

/// Places one order for a GPU of `sku`; returns the answer's order.
async fn order(app: &TestApp, key: &str, sku: &str, keys: Option<Value>) -> Value {
    let mut input = json!({"sku": sku, "count": 1});
    if let Some(keys) = keys {
        input["sshKeyIds"] = keys;
    }
    app.gql(
        Some(key),
        &format!("mutation($i: PlaceOrderInput!) {{ placeOrder(input: $i) {{ order {{ id sshKeys {{ fingerprint }} allocations {{ id startedAt {ACCESS} }} }} }} }}"),
        json!({"i": input}),
    )
    .await
}

fn allocation_of(placed: &Value) -> String {
    placed["data"]["placeOrder"]["order"]["allocations"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{placed}"))
        .to_owned()
}

async fn mark_ready(app: &TestApp, key: &str, id: &str, endpoints: Value) -> Value {
    app.gql(
        Some(key),
        &format!("mutation($id: ID!, $e: [AccessEndpointInput!]!) {{ markAllocationReady(id: $id, endpoints: $e) {{ status {ACCESS} }} }}"),
        json!({"id": id, "e": endpoints}),
    )
    .await
}

async fn mark_failed(app: &TestApp, key: &str, id: &str, reason: &str) -> Value {
    app.gql(
        Some(key),
        &format!("mutation($id: ID!, $r: String!) {{ markAllocationFailed(id: $id, reason: $r) {{ status startedAt endedAt {ACCESS} }} }}"),
        json!({"id": id, "r": reason}),
    )
    .await
}

async fn sku(app: &TestApp, gpus: usize) -> String {
    app.register_node("gpu-1", "H100", gpus, "").await;
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation { createSku(input: {name: \"h100\", gpuModel: \"H100\", form: WHOLE_GPU, region: \"eu-west\", listPricePerHour: \"36000\", currency: \"USD\"}) { sku { id } } }",
            json!({}),
        )
        .await;
    r["data"]["createSku"]["sku"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned()
}

/// The allocation's `access`, as its tenant reads it (the whole answer).
async fn access_of(app: &TestApp, key: &str, allocation: &str) -> Value {
    app.gql(
        Some(key),
        &format!("query($id: ID!) {{ allocation(id: $id) {{ {ACCESS} }} }}"),
        json!({"id": allocation}),
    )
    .await
}

on_both_databases!(
    ssh_keys_are_checked_fingerprinted_and_owned,
    the_provisioner_gets_the_hand_off_and_reports_ready,
    a_failed_provisioning_is_released_and_not_billed,
);

async fn ssh_keys_are_checked_fingerprinted_and_owned(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (acme, acme_key) = app.create_tenant("acme").await;
    let (_, globex_key) = app.create_tenant("globex").await;
    for (i, (line, fingerprint)) in ssh_keys::KEYS.iter().enumerate() {
        let key = add_key(&app, &acme_key, &format!("key {i}"), line).await;
        assert_eq!(key["fingerprint"], *fingerprint, "as ssh-keygen -l says");
        assert_eq!(key["comment"], "user@example");
        assert!(line.starts_with(key["publicKey"].as_str().expect("key")));
    }
    // The same key twice, a key of no known type, a cut-off key: refused, nothing stored.
    let (first, _) = ssh_keys::KEYS[0];
    let r = app
        .gql(Some(&acme_key), ADD, json!({"n": "again", "k": first}))
        .await;
    assert_eq!(error_code(&r), Some("ALREADY_EXISTS"), "{r}");
    let cut = &first[..first.len() - 30];
    for bad in ["ssh-dss AAAAB3NzaC1kc3MAAAA=", cut, "hello"] {
        let r = app
            .gql(Some(&acme_key), ADD, json!({"n": "bad", "k": bad}))
            .await;
        assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{bad}: {r}");
    }
    let list = "{ sshKeys { id fingerprint } }";
    let r = app.gql(Some(&acme_key), list, json!({})).await;
    let keys = r["data"]["sshKeys"].as_array().expect("keys").clone();
    assert_eq!(keys.len(), ssh_keys::KEYS.len());
    // Another tenant sees none of them and cannot remove one; the operator names acme.
    let r = app.gql(Some(&globex_key), list, json!({})).await;
    assert_eq!(r["data"]["sshKeys"], json!([]));
    let remove = "mutation($id: ID!) { removeSshKey(id: $id) { fingerprint } }";
    let r = app
        .gql(Some(&globex_key), remove, json!({"id": keys[0]["id"]}))
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            "query($t: ID!) { sshKeys(tenantId: $t) { id } }",
            json!({"t": acme}),
        )
        .await;
    assert_eq!(
        r["data"]["sshKeys"].as_array().map(Vec::len),
        Some(keys.len())
    );
    let r = app
        .gql(Some(&acme_key), remove, json!({"id": keys[0]["id"]}))
        .await;
    assert_eq!(
        r["data"]["removeSshKey"]["fingerprint"],
        keys[0]["fingerprint"]
    );
    let r = app.gql(Some(&acme_key), list, json!({})).await;
    assert_eq!(
        r["data"]["sshKeys"].as_array().map(Vec::len),
        Some(keys.len() - 1)
    );
}

async fn the_provisioner_gets_the_hand_off_and_reports_ready(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let op = app.operator_key.clone();
    let (_, acme_key) = app.create_tenant("acme").await;
    let (_, globex_key) = app.create_tenant("globex").await;
    let sku = sku(&app, 2).await;
    let (url, recv) = receiver().await;
    let r = app
        .gql(
            Some(&op),
            "mutation($u: String!) { createWebhookEndpoint(input: {url: $u, description: \"provisioner\", eventTypes: [\"allocation.placed\", \"allocation.ended\"]}) { secret } }",
            json!({"u": url}),
        )
        .await;
    let secret = r["data"]["createWebhookEndpoint"]["secret"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    let alice = add_key(&app, &acme_key, "alice", ssh_keys::KEYS[0].0).await;
    add_key(&app, &acme_key, "bob", ssh_keys::KEYS[1].0).await;
    let other = add_key(&app, &globex_key, "eve", ssh_keys::KEYS[2].0).await;

    // Naming another tenant's key is refused, and places nothing.
    let r = order(&app, &acme_key, &sku, Some(json!([other["id"]]))).await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    let placed = order(&app, &acme_key, &sku, Some(json!([alice["id"]]))).await;
    let allocation = allocation_of(&placed);
    let shown = &placed["data"]["placeOrder"]["order"];
    assert_eq!(
        shown["sshKeys"],
        json!([{"fingerprint": alice["fingerprint"]}])
    );
    assert_eq!(shown["allocations"][0]["access"]["state"], "PENDING");

    // The operator's endpoint gets everything a provisioner needs, the named key only.
    let got = wait_for(&recv, 1).await;
    assert!(verifies(&secret, &got[0]));
    let event = body(&got[0]);
    assert_eq!(event["type"], "allocation.placed");
    let data = &event["data"];
    assert_eq!(data["allocation_id"], allocation.as_str());
    assert_eq!(data["hostname"], "gpu-1");
    assert_eq!(data["gpus"][0]["uuid"], "GPU-gpu-1-0");
    assert_eq!(data["form"], "whole_gpu");
    let keys = data["ssh_keys"].as_array().expect("keys");
    assert_eq!(keys.len(), 1, "{data}");
    assert_eq!(keys[0]["fingerprint"], alice["fingerprint"]);
    assert_eq!(keys[0]["public_key"], alice["publicKey"]);

    // Only operators report; a bad endpoint is refused and changes nothing.
    let ssh = json!([{"kind": "ssh", "host": "203.0.113.7", "port": 2222, "username": "ubuntu"}]);
    let r = mark_ready(&app, &acme_key, &allocation, ssh.clone()).await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    let bad = json!([{"kind": "ssh", "host": "no such host!", "port": 22}]);
    let r = mark_ready(&app, &op, &allocation, bad).await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    let r = mark_ready(
        &app,
        &op,
        &allocation,
        json!([{"kind": "ssh", "host": "h", "port": 70000}]),
    )
    .await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    let r = mark_ready(&app, &op, &allocation, ssh.clone()).await;
    let access = &r["data"]["markAllocationReady"]["access"];
    assert_eq!(access["state"], "READY", "{r}");

    // The customer reads where to connect, and gets `allocation.ready` once.
    let r = access_of(&app, &acme_key, &allocation).await;
    let access = &r["data"]["allocation"]["access"];
    assert_eq!(access["endpoints"][0]["host"], "203.0.113.7");
    assert_eq!(access["endpoints"][0]["port"], 2222);
    assert_eq!(access["endpoints"][0]["username"], "ubuntu");
    mark_ready(&app, &op, &allocation, ssh).await;
    let ready = app.events_of(&acme_key, "allocation.ready").await;
    assert_eq!(ready.len(), 1, "the same report again is no new event");
    assert_eq!(ready[0]["endpoints"][0]["port"], 2222);
    // Ready was handed over: it cannot be failed afterwards.
    let r = mark_failed(&app, &op, &allocation, "late").await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "{r}");
}

async fn a_failed_provisioning_is_released_and_not_billed(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let op = app.operator_key.clone();
    let (acme, acme_key) = app.create_tenant("acme").await;
    let sku = sku(&app, 2).await;
    let failing = allocation_of(&order(&app, &acme_key, &sku, None).await);
    let running = allocation_of(&order(&app, &acme_key, &sku, None).await);
    app.advance(TimeDelta::seconds(100));
    let r = mark_failed(&app, &op, &failing, "Nova: no valid host for the PCI alias").await;
    let failed = &r["data"]["markAllocationFailed"];
    assert_eq!(failed["status"], "RELEASED", "{r}");
    assert_eq!(
        failed["endedAt"], failed["startedAt"],
        "ended where it started"
    );
    assert_eq!(failed["access"]["state"], "FAILED");
    assert_eq!(
        failed["access"]["reason"],
        "Nova: no valid host for the PCI alias"
    );
    // Failing it again changes nothing; an ended allocation cannot be made ready.
    let again = mark_failed(&app, &op, &failing, "again").await;
    assert_eq!(
        again["data"]["markAllocationFailed"]["access"]["reason"],
        failed["access"]["reason"]
    );
    let ssh = json!([{"kind": "ssh", "host": "203.0.113.7", "port": 22}]);
    let r = mark_ready(&app, &op, &failing, ssh).await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "{r}");
    let r = app
        .gql(
            Some(&acme_key),
            "mutation($id: ID!) { releaseAllocation(id: $id) { status } }",
            json!({"id": running}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");

    let ended = app.events_of(&acme_key, "allocation.ended").await;
    assert_eq!(ended[0]["reason"], "provisioning_failed");
    assert_eq!(ended[0]["failure"], "Nova: no valid host for the PCI alias");
    assert_eq!(ended[1]["reason"], "released");

    // The failed GPU is free again, and only the running one is billed: 100 s at 10.00.
    let again = order(&app, &acme_key, &sku, None).await;
    assert!(again["errors"].is_null(), "{again}");
    let invoice = app
        .close_period(&acme, "total lines { quantity amount }")
        .await;
    let total: Decimal = invoice["total"]
        .as_str()
        .expect("total")
        .parse()
        .expect("decimal");
    let lines = invoice["lines"].as_array().expect("lines");
    assert!(total >= Decimal::from(1000), "{invoice}");
    assert!(
        total < Decimal::from(1100),
        "the failed allocation is not billed: {invoice}"
    );
    assert!(!lines.is_empty());
}

/// The reference receiver in `examples/provisioner` run as an operator would: it gets
/// the signed hand-off, prints the pod it would start (pinned to the node, the placed
/// GPU visible, the named key installed), and reports the allocation ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_receiver_prints_its_plan_and_reports_ready() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("sqlite");
    let (_, acme_key) = app.create_tenant("acme").await;
    let sku = sku(&app, 2).await;
    let receiver = ReferenceReceiver::subscribed(&app, &["allocation.placed"]).await;
    let alice = add_key(&app, &acme_key, "alice", ssh_keys::KEYS[0].0).await;
    let allocation = allocation_of(&order(&app, &acme_key, &sku, None).await);

    let printed = receiver.printed_until("reported:");
    assert!(
        printed.contains(&format!("allocation.placed {allocation} on gpu-1")),
        "{printed}"
    );
    assert!(printed.contains("\"nodeName\": \"gpu-1\""), "{printed}");
    assert!(printed.contains("\"value\": \"GPU-gpu-1-0\""), "{printed}");
    let public_key = alice["publicKey"].as_str().expect("key");
    assert!(printed.contains(public_key), "{printed}");
    let r = access_of(&app, &acme_key, &allocation).await;
    let access = &r["data"]["allocation"]["access"];
    assert_eq!(access["state"], "READY", "{r}\n{printed}");
    assert_eq!(access["endpoints"][0]["host"], "gpu-1");
}
