//! Reliability, visible and used: a node's score is its agents' coverage times its GPUs'
//! health over its window, checked against a model written here from the rule in
//! docs/providers.md; operators and the node's provider see it with the gaps and faults
//! behind it, tenants see it per offer in the catalog, and on-demand orders break ties
//! towards the more reliable node.

mod support;

use std::collections::BTreeMap;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use neocloud_schema::clock::Clock;
use serde_json::{Value, json};
use support::{Backend, TestApp};

const HOUR: i64 = 3600;

/// A window an agent covered: `[start, end)`.
type Span = (DateTime<Utc>, DateTime<Utc>);

/// What the test sent: per node, the windows its agent covered.
#[derive(Default)]
struct Sent {
    windows: BTreeMap<String, Vec<Span>>,
}

/// The rule, on the windows sent: the window runs from the first report to `end`;
/// availability is the union of the windows inside it over its length, health the
/// GPU-seconds not failed over all of them; the score is their product in basis points,
/// rounded down.
fn model_score(
    windows: &[Span],
    end: DateTime<Utc>,
    gpus: i64,
    failed_gpu_seconds: i64,
) -> (i64, i64) {
    let start = windows.iter().map(|w| w.0).min().expect("windows");
    let mut sorted: Vec<_> = windows.to_vec();
    sorted.sort();
    let (mut covered, mut reach) = (0i64, start);
    for (s, e) in sorted {
        let (s, e) = (s.max(reach), e.min(end));
        if e > s {
            covered += (e - s).num_seconds();
            reach = e;
        }
    }
    let span = (end - start).num_seconds();
    let capacity = gpus * span;
    let score = i128::from(covered) * i128::from(capacity - failed_gpu_seconds) * 10_000
        / (i128::from(span) * i128::from(capacity));
    (i64::try_from(score).expect("score"), covered)
}

fn fraction(bp: i64) -> String {
    format!("{}.{:04}", bp / 10_000, bp % 10_000)
}

async fn ship(app: &TestApp, token: &str, body: Value) {
    let res = app
        .client
        .post(format!("{}/v1/ingest", app.url))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("post");
    let status = res.status().as_u16();
    assert_eq!(status, 200, "{}", res.text().await.unwrap_or_default());
}

impl Sent {
    /// The node's agent covers `[start, end)` for both its GPUs, with `events` on GPU 1.
    async fn cover(
        &mut self,
        app: &TestApp,
        host: &str,
        token: &str,
        seq: u64,
        (start, end): Span,
        events: Value,
    ) {
        let devices = json!([{"uuid": format!("GPU-{host}-0")},
                             {"uuid": format!("GPU-{host}-1"), "events": events}]);
        let body = json!({"version": 1, "agent_id": host,
            "boot_id": "0190b5a8-0000-7000-8000-000000000001", "seq": seq,
            "window": {"start": start.to_rfc3339(), "end": end.to_rfc3339()},
            "devices": devices});
        ship(app, token, body).await;
        self.windows
            .entry(host.to_owned())
            .or_default()
            .push((start, end));
    }
}

async fn refresh(app: &TestApp, now: DateTime<Utc>) {
    neocloud_metering::ingest::settle(&app.db)
        .await
        .expect("settle");
    neocloud_metering::reliability::store::refresh(&app.db, now)
        .await
        .expect("refresh");
}

async fn node_reliability(app: &TestApp, key: &str) -> BTreeMap<String, Value> {
    let r = app
        .gql(
            Some(key),
            "{ nodes(first: 10) { edges { node { hostname reliability { score availability
                coveredSeconds windowSeconds failedGpuSeconds faults preemptionsByFault
                coverageGaps { hourStart missingSeconds } } } } } }",
            json!({}),
        )
        .await;
    let edges = r["data"]["nodes"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"));
    edges
        .iter()
        .map(|e| {
            let n = &e["node"];
            (
                n["hostname"].as_str().expect("hostname").to_owned(),
                n["reliability"].clone(),
            )
        })
        .collect()
}

async fn sku(app: &TestApp, name: &str, model: &str) -> String {
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($n: String!, $m: String!) { createSku(input: {name: $n, gpuModel: $m, form: WHOLE_GPU, region: \"eu-west\", listPricePerHour: \"2.00\", currency: \"USD\"}) { sku { id } } }",
            json!({"n": name, "m": model}),
        )
        .await;
    r["data"]["createSku"]["sku"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned()
}

async fn place(app: &TestApp, key: &str, sku: &str) -> Value {
    let r = app
        .gql(
            Some(key),
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { allocations { id node { hostname } gpus { index } } } } }",
            json!({"s": sku}),
        )
        .await;
    r["data"]["placeOrder"]["order"]["allocations"][0]
        .as_object()
        .map(|a| Value::Object(a.clone()))
        .unwrap_or_else(|| panic!("{r}"))
}

async fn reliability_is_measured_shown_and_used(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let rhein_key = app.create_rhein_provider().await;
    let steady = support::agent_token(&app.register_node("steady", "H100", 2, "").await);
    let flaky = support::agent_token(
        &app.register_node("flaky", "H100", 2, ", provider: \"rhein-gpu\"")
            .await,
    );
    let broken = support::agent_token(&app.register_node("broken", "A100-80GB", 2, "").await);
    let h100 = sku(&app, "h100", "H100").await;
    let a100 = sku(&app, "a100", "A100-80GB").await;
    let (_, tenant) = app.create_tenant("acme").await;

    // Five hours before the current one: steady covers them all; flaky misses its third
    // hour and resends half of its fourth; broken covers them all and fails a GPU (XID 79)
    // at the start of the last.
    let now = app.clock.now();
    let t0 = now.duration_trunc(TimeDelta::hours(1)).expect("hour") - TimeDelta::hours(5);
    let hour = |h: i64| t0 + TimeDelta::hours(h);
    let mut sent = Sent::default();
    for h in 0..5 {
        let w = (hour(h), hour(h + 1));
        let seq = u64::try_from(h + 1).expect("seq");
        sent.cover(&app, "steady", &steady, seq, w, json!([])).await;
        if h != 2 {
            sent.cover(&app, "flaky", &flaky, seq, w, json!([])).await;
        }
        let events = if h == 4 {
            json!([{"kind": "xid", "code": 79, "at": hour(4).to_rfc3339()}])
        } else {
            json!([])
        };
        sent.cover(&app, "broken", &broken, seq, w, events).await;
    }
    let resent = (hour(3) + TimeDelta::minutes(30), hour(4));
    sent.cover(&app, "flaky", &flaky, 9, resent, json!([]))
        .await;

    let end = hour(5);
    refresh(&app, end + TimeDelta::minutes(2)).await;
    let seen = node_reliability(&app, &app.operator_key).await;
    let mut scores = BTreeMap::new();
    for (host, failed) in [("steady", 0), ("flaky", 0), ("broken", HOUR)] {
        let (bp, covered) = model_score(&sent.windows[host], end, 2, failed);
        let r = &seen[host];
        assert_eq!(r["score"], fraction(bp), "{host}: {r}");
        assert_eq!(r["coveredSeconds"], covered, "{host}: {r}");
        assert_eq!(r["windowSeconds"], 5 * HOUR, "{host}: {r}");
        assert_eq!(r["failedGpuSeconds"], failed, "{host}: {r}");
        scores.insert(host, bp);
    }
    assert_eq!(seen["flaky"]["availability"], "0.8000");
    assert_eq!(
        seen["flaky"]["coverageGaps"],
        json!([{"hourStart": hour(2).to_rfc3339(), "missingSeconds": HOUR}])
    );
    assert_eq!(seen["broken"]["faults"], 1);
    assert_eq!(seen["steady"]["coverageGaps"], json!([]));

    // The provider sees its node's reliability and its own; tenants see offers.
    let r = app
        .gql(
            Some(&rhein_key),
            "{ provider { reliability } providerNodes { hostname reliability { score coverageGaps { missingSeconds } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["provider"]["reliability"],
        fraction(scores["flaky"]),
        "{r}"
    );
    assert_eq!(
        r["data"]["providerNodes"],
        json!([{"hostname": "flaky", "reliability": {"score": fraction(scores["flaky"]),
            "coverageGaps": [{"missingSeconds": HOUR}]}}])
    );
    let r = app
        .gql(
            Some(&tenant),
            "{ catalog { skus { name reliability } } }",
            json!({}),
        )
        .await;
    let offers: BTreeMap<String, Value> = r["data"]["catalog"]["skus"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or("").to_owned(),
                s["reliability"].clone(),
            )
        })
        .collect();
    let h100_bp = (scores["steady"] * 2 + scores["flaky"] * 2) / 4;
    assert_eq!(offers["h100"], fraction(h100_bp), "{r}");
    assert_eq!(offers["a100"], fraction(scores["broken"]), "{r}");
    let r = app
        .gql(
            Some(&tenant),
            "{ nodes(first: 1) { edges { node { hostname } } } }",
            json!({}),
        )
        .await;
    assert_eq!(support::error_code(&r), Some("FORBIDDEN"), "{r}");

    // Two empty H100 nodes pack the same: the on-demand order goes to the reliable one.
    let placed = place(&app, &tenant, &h100).await;
    assert_eq!(placed["node"]["hostname"], "steady", "{placed}");

    // A GPU failure under a running allocation is a preemption by fault.
    let placed = place(&app, &tenant, &a100).await;
    assert_eq!(placed["gpus"], json!([{"index": 0}]), "{placed}");
    app.advance(TimeDelta::minutes(10));
    let at = app.clock.now() - TimeDelta::minutes(5);
    let events = json!([{"kind": "xid", "code": 79, "at": at.to_rfc3339()}]);
    let body = json!({"version": 1, "agent_id": "broken",
        "boot_id": "0190b5a8-0000-7000-8000-000000000001", "seq": 20,
        "window": {"start": (at - TimeDelta::seconds(10)).to_rfc3339(), "end": at.to_rfc3339()},
        "devices": [{"uuid": "GPU-broken-0", "events": events}]});
    ship(&app, &broken, body).await;
    refresh(&app, app.clock.now()).await;
    let seen = node_reliability(&app, &app.operator_key).await;
    assert_eq!(seen["broken"]["faults"], 2, "{}", seen["broken"]);
    assert_eq!(
        seen["broken"]["preemptionsByFault"], 1,
        "{}",
        seen["broken"]
    );
    assert_eq!(seen["steady"]["preemptionsByFault"], 0);
}

on_both_databases!(reliability_is_measured_shown_and_used);
