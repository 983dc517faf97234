//! Budgets through the API: thresholds raise one webhook each per period and limit,
//! delivered through the budget's webhook endpoint with both the Standard Webhooks
//! signature and the older `Neocloud-Signature` header, a hard cap refuses new orders within seconds of the limit and lets them through
//! again when the limit is raised (and alerts again at the new limit), `stopAllocations`
//! ends running work when no credit is left, another tenant can neither read nor set the
//! budget, and webhooks reach only public addresses or the operator's allow-list, without
//! following redirects.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration as StdDuration;

use chrono::TimeDelta;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use support::receiver::{receiver, verifies};
use support::{Backend, TestApp, error_code};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The `Neocloud-Signature` check budget receivers have: `t=<unix>,v1=<hex HMAC-SHA256
/// of "<t>.<body>" keyed with the secret string>`.
fn verify(secret: &str, header: &str, body: &[u8]) -> bool {
    let mut t = "";
    let mut v1 = "";
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", value)) => t = value,
            Some(("v1", value)) => v1 = value,
            _ => {}
        }
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    hex::encode(mac.finalize().into_bytes()) == v1
}

/// A per-second plan (3600 per GPU-hour: 1.00 a second), a node, and a tenant on it.
async fn setup(app: &TestApp) -> (String, String, String) {
    app.register_node("hgx-0", "H100", 8, "").await;
    let sku = app.create_h100_sku().await;
    let version = app
        .create_plan_version(json!({"plan": "per-second", "currency": "USD",
            "effectiveFrom": "2026-01-01T00:00:00Z", "minimumBillableSeconds": 0,
            "rates": [{"sku": sku, "metric": "ALLOCATED", "tiersMode": "PER_UNIT", "unitPrice": "3600"}]}))
        .await;
    let (tenant, key) = app.create_tenant("acme").await;
    app.assign_plan(&tenant, &version).await;
    (tenant, key, sku)
}

const SET: &str = "mutation($i: BudgetInput!) { setBudget(input: $i) { webhookSecret budget { monthlyLimit spend blockedSince alertThresholds events { kind thresholdPct webhookStatus } } } }";
const GET: &str = "{ budget { spend blockedSince events { kind thresholdPct webhookStatus } } }";

async fn place(app: &TestApp, key: &str, sku: &str) -> Value {
    app.gql(
        Some(key),
        "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { id allocations { id } } } }",
        json!({"s": sku}),
    )
    .await
}

/// Polls the budget until `done` holds (at most ~20 s).
async fn wait_for(app: &TestApp, key: &str, done: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..80 {
        last = app.gql(Some(key), GET, json!({})).await;
        if done(&last["data"]["budget"]) {
            return last["data"]["budget"].clone();
        }
        tokio::time::sleep(StdDuration::from_millis(250)).await;
    }
    panic!("budget never got there: {last}");
}

async fn spawn(backend: Backend) -> Option<TestApp> {
    TestApp::spawn_with(backend, |s| s.budgets.sweep_seconds = 1).await
}

async fn a_hard_cap_stops_new_orders_and_alerts_once_per_threshold(backend: Backend) {
    let Some(app) = spawn(backend).await else {
        return;
    };
    let (tenant, key, sku) = setup(&app).await;
    let (url, received) = receiver().await;

    for (input, field) in [
        (json!({"monthlyLimit": "-1"}), "monthlyLimit"),
        (json!({"monthlyLimit": "1.001"}), "monthlyLimit"),
        (
            json!({"monthlyLimit": "5", "alertThresholds": [0]}),
            "alertThresholds",
        ),
        (
            json!({"monthlyLimit": "5", "webhookUrl": "ftp://example.com"}),
            "webhookUrl",
        ),
    ] {
        let r = app.gql(Some(&key), SET, json!({"i": input})).await;
        assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
        assert!(
            r["errors"][0]["message"]
                .as_str()
                .unwrap_or("")
                .contains(field),
            "{r}"
        );
    }
    let r = app.gql(Some(&key), GET, json!({})).await;
    assert!(
        r["data"]["budget"].is_null(),
        "a rejected setBudget stored something: {r}"
    );

    let r = app
        .gql(
            Some(&key),
            SET,
            json!({"i": {"monthlyLimit": "3.00", "alertThresholds": [100, 50], "webhookUrl": url, "hardCap": true}}),
        )
        .await;
    let payload = &r["data"]["setBudget"];
    let secret = payload["webhookSecret"]
        .as_str()
        .expect("secret shown once")
        .to_owned();
    assert_eq!(payload["budget"]["alertThresholds"], json!([50, 100]));
    assert!(payload["budget"]["blockedSince"].is_null());
    assert_eq!(payload["budget"]["events"], json!([]));

    // Another tenant can neither read nor set it.
    let (_, other) = app.create_tenant("globex").await;
    let r = app
        .gql(
            Some(&other),
            "query($t: ID) { budget(tenantId: $t) { spend } }",
            json!({"t": tenant}),
        )
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = app
        .gql(
            Some(&other),
            SET,
            json!({"i": {"tenantId": tenant, "monthlyLimit": "999"}}),
        )
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");

    // 1.00 a second: the cap holds a few seconds after the order.
    let r = place(&app, &key, &sku).await;
    assert!(r["data"]["placeOrder"].is_object(), "{r}");
    app.advance(TimeDelta::seconds(4));
    let budget = wait_for(&app, &key, |b| !b["blockedSince"].is_null()).await;
    let kinds: Vec<i64> = budget["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["thresholdPct"].as_i64())
        .collect();
    assert_eq!(kinds, vec![50, 100], "{budget}");
    let r = place(&app, &key, &sku).await;
    assert_eq!(error_code(&r), Some("BUDGET_EXCEEDED"), "{r}");

    // Each threshold is delivered once, signed with the tenant's secret.
    wait_for(&app, &key, |b| {
        b["events"]
            .as_array()
            .is_some_and(|e| e.iter().all(|e| e["webhookStatus"] == "DELIVERED"))
    })
    .await;
    tokio::time::sleep(StdDuration::from_millis(2500)).await;
    let deliveries = received.got();
    let kinds: Vec<String> = deliveries
        .iter()
        .map(|d| serde_json::from_slice::<Value>(&d.body).expect("json")["type"].to_string())
        .collect();
    let crossed = kinds
        .iter()
        .filter(|k| k.contains("threshold_crossed"))
        .count();
    let blocked = kinds
        .iter()
        .filter(|k| k.contains("budget.blocked"))
        .count();
    assert_eq!((crossed, blocked, deliveries.len()), (2, 1, 3), "{kinds:?}");
    for delivery in &deliveries {
        let (signature, body) = (&delivery.headers["neocloud-signature"], &delivery.body);
        assert!(
            verify(&secret, signature, body),
            "bad signature {signature}"
        );
        assert!(!verify("whsec_wrong", signature, body));
        assert!(verifies(&secret, delivery), "{:?}", delivery.headers);
        let event: Value = serde_json::from_slice(body).expect("json");
        assert_eq!(event["tenant_id"], json!(tenant));
        assert_eq!(event["data"]["monthly_limit"], "3.00");
    }

    // The budget's URL is one of the tenant's endpoints, changed only through setBudget.
    let r = app
        .gql(
            Some(&key),
            "{ webhookEndpoints { id url eventTypes } }",
            json!({}),
        )
        .await;
    let endpoints = r["data"]["webhookEndpoints"].as_array().expect("endpoints");
    assert_eq!(endpoints.len(), 1, "{r}");
    assert_eq!(endpoints[0]["url"], url.as_str());
    let r = app
        .gql(
            Some(&key),
            "mutation($id: ID!) { deleteWebhookEndpoint(id: $id) }",
            json!({"id": endpoints[0]["id"]}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "{r}");

    // Raising the limit lifts the cap at once; the secret is not shown again.
    let r = app
        .gql(
            Some(&key),
            SET,
            json!({"i": {"monthlyLimit": "100000.00", "webhookUrl": url, "hardCap": true}}),
        )
        .await;
    assert!(r["data"]["setBudget"]["webhookSecret"].is_null(), "{r}");
    assert!(
        r["data"]["setBudget"]["budget"]["blockedSince"].is_null(),
        "{r}"
    );
    let r = place(&app, &key, &sku).await;
    assert!(r["data"]["placeOrder"].is_object(), "{r}");
}

async fn at_the_limit_without_credit_running_allocations_get_notice(backend: Backend) {
    let Some(app) = spawn(backend).await else {
        return;
    };
    let (_, key, sku) = setup(&app).await;
    let r = place(&app, &key, &sku).await;
    let allocation = r["data"]["placeOrder"]["order"]["allocations"][0]["id"].clone();
    let r = app
        .gql(
            Some(&key),
            SET,
            json!({"i": {"monthlyLimit": "2.00", "hardCap": true, "stopAllocations": true}}),
        )
        .await;
    assert!(r["data"]["setBudget"].is_object(), "{r}");
    app.advance(TimeDelta::seconds(3));
    let budget = wait_for(&app, &key, |b| {
        b["events"]
            .as_array()
            .is_some_and(|e| e.iter().any(|e| e["kind"] == "ALLOCATIONS_STOPPED"))
    })
    .await;
    assert_eq!(budget["events"][0]["webhookStatus"], "NONE", "{budget}");
    let stopped = app.events_of(&key, "budget.allocations_stopped").await;
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(stopped[0]["monthly_limit"], "2.00");
    assert_eq!(app.events_of(&key, "budget.blocked").await.len(), 1);
    let notices = app.events_of(&key, "allocation.preempting").await;
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0]["reason"], "budget_stop");
    let r = app
        .gql(
            Some(&key),
            "query($id: ID!) { allocation(id: $id) { status preemptAt } }",
            json!({"id": allocation}),
        )
        .await;
    assert_eq!(r["data"]["allocation"]["status"], "PREEMPTING", "{r}");
    assert!(r["data"]["allocation"]["preemptAt"].is_string(), "{r}");
}

/// A listener that counts the connections it accepts and answers each with `answer`.
async fn counting_listener(answer: String) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                let _ = socket.read(&mut buf).await;
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    (addr, count)
}

const EVENTS: &str =
    "{ budget { blockedSince events { kind thresholdPct monthlyLimit webhookStatus } } }";

/// Polls the budget (blocked state and events) until `done` holds (at most ~20 s).
async fn wait_for_events(
    app: &TestApp,
    key: &str,
    done: impl Fn(&Value, &[Value]) -> bool,
) -> Value {
    let mut last = Value::Null;
    for _ in 0..80 {
        last = app.gql(Some(key), EVENTS, json!({})).await;
        let budget = &last["data"]["budget"];
        if budget["events"].as_array().is_some_and(|e| done(budget, e)) {
            return budget.clone();
        }
        tokio::time::sleep(StdDuration::from_millis(250)).await;
    }
    panic!("the events never got there: {last}");
}

/// The first delivery attempt to the budget's endpoint, once there is one (at most ~20 s).
async fn first_attempt(app: &TestApp, key: &str) -> Value {
    let query = "{ webhookEndpoints { attempts(first: 10) { statusCode error } } }";
    let mut last = Value::Null;
    for _ in 0..80 {
        last = app.gql(Some(key), query, json!({})).await;
        let attempts = &last["data"]["webhookEndpoints"][0]["attempts"];
        if let Some(first) = attempts.as_array().and_then(|a| a.last()) {
            return first.clone();
        }
        tokio::time::sleep(StdDuration::from_millis(250)).await;
    }
    panic!("no attempt was made: {last}");
}

/// Without the operator's allow-list: budget webhooks may reach public addresses only.
async fn spawn_without_allow_list(backend: Backend) -> Option<TestApp> {
    TestApp::spawn_with(backend, |s| {
        s.budgets.sweep_seconds = 1;
        s.webhook_allow_hosts = String::new();
    })
    .await
}

async fn a_webhook_url_on_a_private_address_is_refused_when_set(backend: Backend) {
    let Some(app) = spawn_without_allow_list(backend).await else {
        return;
    };
    let (_, key, _) = setup(&app).await;
    let (addr, reached) = counting_listener(String::new()).await;
    let port = addr.port();
    for url in [
        format!("http://127.0.0.1:{port}/hook"),
        format!("http://10.1.2.3:{port}/hook"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        format!("http://[::1]:{port}/hook"),
        format!("http://[::ffff:127.0.0.1]:{port}/hook"),
        "http://[fd00:ec2::254]/".to_owned(),
        "https://user:secret@hooks.example.com/".to_owned(),
        "gopher://hooks.example.com/".to_owned(),
        format!("https://hooks.example.com/{}", "a".repeat(2048)),
    ] {
        let r = app
            .gql(
                Some(&key),
                SET,
                json!({"i": {"monthlyLimit": "5", "webhookUrl": url}}),
            )
            .await;
        assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{url}: {r}");
        assert_eq!(
            r["errors"][0]["extensions"]["field"], "webhookUrl",
            "{url}: {r}"
        );
    }
    let r = app.gql(Some(&key), GET, json!({})).await;
    assert!(
        r["data"]["budget"].is_null(),
        "a refused URL was stored: {r}"
    );
    assert_eq!(reached.load(Ordering::SeqCst), 0);
}

async fn a_webhook_to_a_name_resolving_to_loopback_is_refused_when_sent(backend: Backend) {
    let Some(app) = spawn_without_allow_list(backend).await else {
        return;
    };
    let (_, key, sku) = setup(&app).await;
    let ok = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
    let (addr, reached) = counting_listener(ok.to_owned()).await;
    let url = format!("http://localhost:{}/hook", addr.port());
    let r = app
        .gql(
            Some(&key),
            SET,
            json!({"i": {"monthlyLimit": "1.00", "alertThresholds": [1], "webhookUrl": url}}),
        )
        .await;
    assert!(r["data"]["setBudget"].is_object(), "{r}");
    let r = place(&app, &key, &sku).await;
    assert!(r["data"]["placeOrder"].is_object(), "{r}");
    let attempt = first_attempt(&app, &key).await;
    assert!(attempt["statusCode"].is_null(), "{attempt}");
    assert!(attempt["error"].is_string(), "{attempt}");
    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "a webhook reached a loopback listener"
    );
}

async fn a_webhook_redirect_is_not_followed(backend: Backend) {
    let Some(app) = spawn(backend).await else {
        return;
    };
    let (_, key, sku) = setup(&app).await;
    let (target, stolen) = counting_listener(String::new()).await;
    let redirect = format!(
        "HTTP/1.1 302 Found\r\nlocation: http://{target}/internal\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    );
    let (addr, reached) = counting_listener(redirect).await;
    let r = app
        .gql(
            Some(&key),
            SET,
            json!({"i": {"monthlyLimit": "1.00", "alertThresholds": [1], "webhookUrl": format!("http://{addr}/hook")}}),
        )
        .await;
    assert!(r["data"]["setBudget"].is_object(), "{r}");
    let r = place(&app, &key, &sku).await;
    assert!(r["data"]["placeOrder"].is_object(), "{r}");
    let attempt = first_attempt(&app, &key).await;
    assert_eq!(attempt["statusCode"], 302, "{attempt}");
    assert!(
        reached.load(Ordering::SeqCst) >= 1,
        "the receiver was never asked"
    );
    assert_eq!(
        stolen.load(Ordering::SeqCst),
        0,
        "the redirect was followed"
    );
}

async fn raising_the_limit_judges_alerts_against_the_new_limit(backend: Backend) {
    let Some(app) = spawn(backend).await else {
        return;
    };
    let (_, key, sku) = setup(&app).await;
    let (url, received) = receiver().await;
    let budget = |limit: &str| json!({"i": {"monthlyLimit": limit, "alertThresholds": [50, 100], "webhookUrl": url, "hardCap": true}});
    let r = app.gql(Some(&key), SET, budget("3.00")).await;
    assert!(r["data"]["setBudget"].is_object(), "{r}");
    let r = place(&app, &key, &sku).await;
    assert!(r["data"]["placeOrder"].is_object(), "{r}");
    app.advance(TimeDelta::seconds(4));
    wait_for_events(&app, &key, |b, e| {
        e.len() == 2 && !b["blockedSince"].is_null()
    })
    .await;

    // The spend (about 4.00, 1.00 a second) is below the new limit: the cap lifts at once.
    let r = app.gql(Some(&key), SET, budget("8.00")).await;
    assert!(
        r["data"]["setBudget"]["budget"]["blockedSince"].is_null(),
        "{r}"
    );
    let r = place(&app, &key, &sku).await;
    assert!(r["data"]["placeOrder"].is_object(), "{r}");
    app.advance(TimeDelta::seconds(3));

    // Passing the new limit alerts again (both thresholds of the new limit) and blocks.
    let at_new = wait_for_events(&app, &key, |b, e| {
        !b["blockedSince"].is_null()
            && e.iter()
                .filter(|e| e["monthlyLimit"] == "8.00" && e["webhookStatus"] == "DELIVERED")
                .count()
                == 2
    })
    .await;
    let new: Vec<i64> = at_new["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["monthlyLimit"] == "8.00")
        .filter_map(|e| e["thresholdPct"].as_i64())
        .collect();
    assert_eq!(new, vec![50, 100], "{at_new}");
    let r = place(&app, &key, &sku).await;
    assert_eq!(error_code(&r), Some("BUDGET_EXCEEDED"), "{r}");
    let limits: Vec<Value> = received
        .got()
        .iter()
        .map(|r| serde_json::from_slice::<Value>(&r.body).expect("json"))
        .filter(|event| event["type"] == "budget.threshold_crossed")
        .map(|event| event["data"]["monthly_limit"].clone())
        .collect();
    assert_eq!(
        limits.iter().filter(|l| **l == json!("8.00")).count(),
        2,
        "{limits:?}"
    );
}

on_both_databases!(
    a_hard_cap_stops_new_orders_and_alerts_once_per_threshold,
    at_the_limit_without_credit_running_allocations_get_notice,
    a_webhook_url_on_a_private_address_is_refused_when_set,
    a_webhook_to_a_name_resolving_to_loopback_is_refused_when_sent,
    a_webhook_redirect_is_not_followed,
    raising_the_limit_judges_alerts_against_the_new_limit,
);
