//! Usage events through the real server: `POST /v1/events` (CloudEvents 1.0) answered
//! event by event, recorded once, counted by operator-defined meters and billed on the
//! invoice as metered SKUs; late events across a closed period; who may report and read;
//! a budget's hard cap acting on streamed token spend.

mod support;

use std::time::Duration as StdDuration;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use neocloud_schema::clock::Clock;
use neocloud_schema::entity::{usage_event_batch, usage_event_key};
use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

/// A metered SKU (`unit`, list `price` per unit) and a meter over it; returns the SKU id.
async fn metered(app: &TestApp, name: &str, unit: &str, price: &str, meter: Value) -> String {
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($n: String!, $u: String!, $p: String!) { createSku(input: {name: $n, form: METERED, unit: $u, serviceCategory: NETWORKING, region: \"eu-west\", listPricePerHour: $p, currency: \"USD\"}) { sku { id unit serviceCategory } } }",
            json!({"n": name, "u": unit, "p": price}),
        )
        .await;
    let sku = r["data"]["createSku"]["sku"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("createSku failed: {r}"))
        .to_owned();
    assert_eq!(r["data"]["createSku"]["sku"]["unit"], unit);
    assert_eq!(
        r["data"]["createSku"]["sku"]["serviceCategory"],
        "NETWORKING"
    );
    let mut input = meter;
    input["skuId"] = json!(sku);
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($i: CreateMeterInput!) { createMeter(input: $i) { meter { key version unit } } }",
            json!({"i": input}),
        )
        .await;
    assert_eq!(r["data"]["createMeter"]["meter"]["unit"], unit, "{r}");
    sku
}

/// A key of `role` minted by `by` (for the operator, `tenant` names the tenant or none).
async fn key(app: &TestApp, by: &str, role: &str, tenant: Option<&str>) -> String {
    let r = app
        .gql(
            Some(by),
            "mutation($r: Role!, $t: ID) { createApiKey(role: $r, tenantId: $t) { apiKey } }",
            json!({"r": role, "t": tenant}),
        )
        .await;
    r["data"]["createApiKey"]["apiKey"]
        .as_str()
        .unwrap_or_else(|| panic!("createApiKey failed: {r}"))
        .to_owned()
}

async fn post(app: &TestApp, key: &str, content_type: &str, body: &Value) -> (u16, Value) {
    let res = app
        .client
        .post(format!("{}/v1/events", app.url))
        .bearer_auth(key)
        .header("content-type", content_type)
        .body(body.to_string())
        .send()
        .await
        .expect("request");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

const BATCH: &str = "application/cloudevents-batch+json";

fn egress(id: &str, gb: Value, region: Option<&str>, at: DateTime<Utc>) -> Value {
    let mut data = json!({"gb": gb});
    if let Some(region) = region {
        data["region"] = json!(region);
    }
    json!({"specversion": "1.0", "id": id, "source": "router-1", "type": "net.egress",
           "time": at.to_rfc3339(), "data": data})
}

fn statuses(answer: &Value) -> Vec<String> {
    answer["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {answer}"))
        .iter()
        .map(|r| r["status"].as_str().unwrap_or("?").to_owned())
        .collect()
}

const LINES: &str = "{ upcomingInvoice { total lines { kind metric sku quantity unit unitPrice amount adjustsInvoiceId } } }";

fn metered_lines(invoice: &Value) -> Vec<Value> {
    invoice["data"]["upcomingInvoice"]["lines"]
        .as_array()
        .unwrap_or_else(|| panic!("no invoice: {invoice}"))
        .iter()
        .filter(|l| l["metric"] == "METERED")
        .cloned()
        .collect()
}

async fn a_batch_is_answered_event_by_event_and_billed_once(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    metered(&app, "egress-gb", "GB", "0.09",
        json!({"key": "egress", "eventType": "net.egress", "valuePath": "gb", "aggregation": "SUM", "groupBy": ["region"]}))
    .await;
    let (tenant, admin) = app.create_tenant("acme").await;
    let (other, _) = app.create_tenant("globex").await;
    let reporter = key(&app, &admin, "USAGE_REPORTER", None).await;
    app.advance(TimeDelta::minutes(20));
    let now = app.clock.now();
    let t = now - TimeDelta::minutes(10);

    let mut foreign = egress("e4", json!(1), None, t);
    foreign["subject"] = json!(other);
    let before_the_tenant = egress("e7", json!(1), None, now - TimeDelta::minutes(30));
    let unmetered = json!({"specversion": "1.0", "id": "e5", "source": "router-1", "type": "net.ingress", "time": t.to_rfc3339()});
    let batch = json!([
        egress("e1", json!(10), Some("eu"), t),
        egress("e2", json!("2.5"), None, t + TimeDelta::seconds(30)),
        egress("e1", json!(10), Some("eu"), t),
        egress("e3", json!(-1), Some("eu"), t),
        foreign,
        unmetered,
        before_the_tenant,
    ]);
    let (status, answer) = post(&app, &reporter, BATCH, &batch).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        statuses(&answer),
        [
            "accepted",
            "accepted",
            "duplicate",
            "invalid",
            "invalid",
            "accepted",
            "invalid"
        ]
    );
    assert_eq!(answer["results"][6]["error"]["field"], "time");
    assert_eq!(answer["results"][0]["meters"], 1);
    assert_eq!(
        answer["results"][5]["meters"], 0,
        "no meter counts net.ingress"
    );
    assert_eq!(answer["results"][3]["error"]["field"], "data.gb");
    assert_eq!(answer["results"][4]["error"]["field"], "subject");
    assert_eq!(
        (answer["accepted"].as_u64(), answer["invalid"].as_u64()),
        (Some(3), Some(3))
    );

    // Sent again (a retry after a lost answer): nothing changes.
    let (_, again) = post(&app, &reporter, BATCH, &batch).await;
    assert_eq!(
        statuses(&again),
        [
            "duplicate",
            "duplicate",
            "duplicate",
            "invalid",
            "invalid",
            "duplicate",
            "invalid"
        ]
    );
    let keys = usage_event_key::Entity::find()
        .count(&app.db)
        .await
        .expect("count");
    let journaled: Vec<String> = usage_event_batch::Entity::find()
        .all(&app.db)
        .await
        .expect("batches")
        .iter()
        .flat_map(|b| usage_event_batch::decode(&b.body, 1 << 20).expect("a body"))
        .map(|e| e["id"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        (keys, journaled.len()),
        (3, 3),
        "refused events stored nothing, duplicates once: {journaled:?}"
    );

    // 12.5 GB at 0.09 is 1.125: half-even to 1.12.
    let invoice = app.gql(Some(&admin), LINES, json!({})).await;
    let lines = metered_lines(&invoice);
    assert_eq!(lines.len(), 1, "{invoice}");
    assert_eq!(
        (
            &lines[0]["quantity"],
            &lines[0]["unit"],
            &lines[0]["amount"]
        ),
        (&json!("12.5"), &json!("GB"), &json!("1.12"))
    );
    let usage = app
        .gql(
            Some(&admin),
            "query($f: DateTime!, $t: DateTime!) { meterUsage(from: $f, to: $t) { meterKey group quantity unit events } }",
            json!({"f": (now - TimeDelta::hours(1)).to_rfc3339(), "t": (now + TimeDelta::hours(1)).to_rfc3339()}),
        )
        .await;
    assert_eq!(
        usage["data"]["meterUsage"],
        json!([
            {"meterKey": "egress", "group": [""], "quantity": "2.5", "unit": "GB", "events": 1},
            {"meterKey": "egress", "group": ["eu"], "quantity": "10", "unit": "GB", "events": 1},
        ]),
        "{usage}"
    );

    // A late event of the closed period is billed on the next invoice as an adjustment.
    let closed = app.close_period(&tenant, "id total").await;
    assert_eq!(closed["total"], "1.12");
    let export = |format: &'static str| {
        let url = format!(
            "{}/v1/invoices/{}/export?format={format}",
            app.url,
            closed["id"].as_str().unwrap_or("")
        );
        let request = app.client.get(url).bearer_auth(&admin);
        async move {
            request
                .send()
                .await
                .expect("export")
                .bytes()
                .await
                .expect("body")
        }
    };
    let csv = String::from_utf8(export("csv").await.to_vec()).expect("utf-8");
    let line = csv
        .lines()
        .find(|l| l.contains("egress-gb"))
        .unwrap_or_else(|| panic!("{csv}"));
    assert!(
        line.contains("metered") && line.contains(",12.5,") && line.contains(",GB,"),
        "{line}"
    );
    // The JSON export carries the metered quantity in its rating input: re-derivable.
    let exported: Value = serde_json::from_slice(&export("json").await).expect("json");
    assert_eq!(
        exported["rating"]["input"]["segments"][0]["metered"][0]["quantity"],
        "12.5"
    );
    assert!(export("pdf").await.starts_with(b"%PDF-"));
    let focus = String::from_utf8(export("focus").await.to_vec()).expect("utf-8");
    let header: Vec<&str> = focus.lines().next().unwrap_or("").split(',').collect();
    let row: Vec<&str> = focus.lines().nth(1).unwrap_or("").split(',').collect();
    let cell = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .and_then(|i| row.get(i))
            .copied()
    };
    assert_eq!(cell("ServiceCategory"), Some("Networking"), "{focus}");
    assert_eq!(
        cell("ServiceSubcategory"),
        Some("Other (Networking)"),
        "{focus}"
    );
    assert_eq!(cell("ServiceName"), Some("egress-gb"), "{focus}");
    assert_eq!(
        (cell("ListUnitPrice"), cell("PricingUnit")),
        (Some("0.09"), Some("GB")),
        "{focus}"
    );
    app.advance(TimeDelta::minutes(1));
    let (_, late) = post(
        &app,
        &reporter,
        BATCH,
        &json!([egress("e6", json!(20), Some("eu"), t)]),
    )
    .await;
    assert_eq!(statuses(&late), ["accepted"]);
    let next = app.gql(Some(&admin), LINES, json!({})).await;
    let lines = metered_lines(&next);
    assert_eq!(lines.len(), 1, "{next}");
    assert_eq!(lines[0]["kind"], "ADJUSTMENT");
    assert_eq!(
        (&lines[0]["quantity"], &lines[0]["amount"]),
        (&json!("20"), &json!("1.80"))
    );
    assert_eq!(lines[0]["adjustsInvoiceId"], closed["id"]);
}

async fn only_usage_reporters_report_and_only_for_their_tenant(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    metered(&app, "tok", "token", "0.000002",
        json!({"key": "tokens", "eventType": "llm.request", "valuePath": "tokens", "aggregation": "SUM"}))
    .await;
    let (a, admin_a) = app.create_tenant("acme").await;
    let (b, admin_b) = app.create_tenant("globex").await;
    let reporter_a = key(&app, &admin_a, "USAGE_REPORTER", None).await;
    let member_a = key(&app, &admin_a, "TENANT_MEMBER", None).await;
    let gateway = key(&app, &app.operator_key, "USAGE_REPORTER", None).await;
    let event = |id: &str, subject: Option<&str>| {
        let mut e = json!({"specversion": "1.0", "id": id, "source": "gw", "type": "llm.request", "data": {"tokens": 100}});
        if let Some(s) = subject {
            e["subject"] = json!(s);
        }
        e
    };
    let single = "application/cloudevents+json";

    // A member key, or no key, reports nothing.
    let (status, answer) = post(&app, &member_a, single, &event("m1", None)).await;
    assert_eq!(
        (status, error_code_rest(&answer)),
        (403, Some("FORBIDDEN")),
        "{answer}"
    );
    let res = app
        .client
        .post(format!("{}/v1/events", app.url))
        .header("content-type", single)
        .body(event("n1", None).to_string())
        .send()
        .await
        .expect("request");
    assert_eq!(res.status().as_u16(), 401);
    // A reporter key reads nothing through GraphQL.
    let r = app
        .gql(Some(&reporter_a), "{ catalog { skus { id } } }", json!({}))
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    let r = app
        .gql(Some(&reporter_a), "{ apiKeys { id } }", json!({}))
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");

    // A tenant's reporter reports for its own tenant only.
    let (status, answer) = post(&app, &reporter_a, single, &event("a1", Some(&b))).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["field"], "subject");
    let (status, _) = post(&app, &reporter_a, single, &event("a1", Some(&a))).await;
    assert_eq!(status, 200);
    // The operator's gateway names the tenant; an unknown one is refused.
    let (status, answer) = post(&app, &gateway, single, &event("g1", None)).await;
    assert_eq!(
        (status, answer["error"]["field"].as_str()),
        (400, Some("subject"))
    );
    let (_, answer) = post(
        &app,
        &gateway,
        BATCH,
        &json!([
            event("g1", Some(&b)),
            event("g2", Some(&uuid::Uuid::new_v4().to_string()))
        ]),
    )
    .await;
    assert_eq!(statuses(&answer), ["accepted", "invalid"]);
    // Ids are per tenant: the same id and source for another tenant is its own event.
    let (_, answer) = post(&app, &gateway, BATCH, &json!([event("a1", Some(&b))])).await;
    assert_eq!(statuses(&answer), ["accepted"]);

    // The wrong media type, or a batch sent as one event, is refused whole.
    let (status, _) = post(&app, &reporter_a, "text/plain", &event("x", None)).await;
    assert_eq!(status, 400);
    let (status, _) = post(&app, &reporter_a, single, &json!([event("x", None)])).await;
    assert_eq!(status, 400);

    // Each tenant sees its own usage; another tenant's is not found.
    let range = json!({"f": "2000-01-01T00:00:00Z", "t": "2000-02-01T00:00:00Z"});
    let now = app.clock.now();
    let range_now = json!({"f": (now - TimeDelta::hours(1)).to_rfc3339(), "t": (now + TimeDelta::hours(1)).to_rfc3339(), "tenant": b});
    let q = "query($f: DateTime!, $t: DateTime!, $tenant: ID) { meterUsage(from: $f, to: $t, tenantId: $tenant) { quantity } }";
    let r = app.gql(Some(&admin_a), q, range_now.clone()).await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = app.gql(Some(&admin_b), q, range_now).await;
    assert_eq!(r["data"]["meterUsage"][0]["quantity"], "200", "{r}");
    let r = app.gql(Some(&admin_b), q, range).await;
    assert_eq!(r["data"]["meterUsage"], json!([]));
}

fn error_code_rest(answer: &Value) -> Option<&str> {
    answer["error"]["code"].as_str()
}

async fn streamed_token_spend_trips_the_hard_cap(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, |s| s.budgets.sweep_seconds = 1).await else {
        return;
    };
    // 1 USD per thousand tokens.
    metered(&app, "tok-out", "token", "0.001",
        json!({"key": "output-tokens", "eventType": "llm.request", "valuePath": "usage.output_tokens", "aggregation": "SUM", "groupBy": ["model"]}))
    .await;
    let (_, admin) = app.create_tenant("acme").await;
    let reporter = key(&app, &admin, "USAGE_REPORTER", None).await;
    let r = app
        .gql(
            Some(&admin),
            "mutation { setBudget(input: {monthlyLimit: \"5.00\", hardCap: true}) { budget { monthlyLimit } } }",
            json!({}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let sku = app.create_h100_sku().await;
    app.register_node("hgx-0", "H100", 8, "").await;

    // A gateway streams one request a batch, 400 tokens each (0.40 USD): the cap is
    // crossed by the 13th; the budget must block within 60 seconds of it.
    let stream = {
        let (url, reporter) = (app.url.clone(), reporter.clone());
        let client = app.client.clone();
        tokio::spawn(async move {
            for i in 0..40 {
                let e = json!([{"specversion": "1.0", "id": format!("r{i}"), "source": "gw", "type": "llm.request",
                    "data": {"model": "llama-70b", "usage": {"output_tokens": 400}}}]);
                let _ = client
                    .post(format!("{url}/v1/events"))
                    .bearer_auth(&reporter)
                    .header("content-type", BATCH)
                    .body(e.to_string())
                    .send()
                    .await;
                tokio::time::sleep(StdDuration::from_millis(100)).await;
            }
        })
    };
    let mut blocked = Value::Null;
    for _ in 0..240 {
        let r = app
            .gql(Some(&admin), "{ budget { spend blockedSince } }", json!({}))
            .await;
        if !r["data"]["budget"]["blockedSince"].is_null() {
            blocked = r["data"]["budget"].clone();
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(250)).await;
    }
    stream.await.expect("stream");
    assert!(
        !blocked.is_null(),
        "the hard cap never acted on token spend"
    );
    let spend: rust_decimal::Decimal = blocked["spend"]
        .as_str()
        .unwrap_or("0")
        .parse()
        .expect("spend");
    assert!(
        spend >= rust_decimal::Decimal::new(500, 2),
        "blocked below the limit: {blocked}"
    );
    let r = app
        .gql(
            Some(&admin),
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { id } } }",
            json!({"s": sku}),
        )
        .await;
    assert_eq!(error_code(&r), Some("BUDGET_EXCEEDED"), "{r}");
}

/// Many batches into one minute and group: every batch lands in one of the bucket's
/// shards, so most add into a row another batch wrote. Each aggregation must still come
/// to what the events say (here computed from them directly).
async fn batches_into_one_bucket_add_up_as_the_events_say(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    for (key, aggregation) in [("s", "SUM"), ("c", "COUNT"), ("m", "MAX"), ("l", "LATEST")] {
        let mut meter = json!({"key": key, "eventType": "bucket.test", "aggregation": aggregation, "groupBy": ["g"]});
        if aggregation != "COUNT" {
            meter["valuePath"] = json!("v");
        }
        metered(&app, &format!("sku-{key}"), "unit", "1", meter).await;
    }
    let (_, admin) = app.create_tenant("acme").await;
    let reporter = key(&app, &admin, "USAGE_REPORTER", None).await;
    app.advance(TimeDelta::minutes(3));
    let minute = app
        .clock
        .now()
        .duration_trunc(TimeDelta::minutes(1))
        .expect("a minute")
        - TimeDelta::minutes(1);
    // 48 events, one batch each: values and seconds scrambled, two at the last second.
    let events: Vec<(i64, DateTime<Utc>)> = (0..48_i64)
        .map(|i| {
            (
                (i * 37) % 101 + (i % 7) * 1000,
                minute + TimeDelta::seconds(((i * 13) % 59).min(58)),
            )
        })
        .collect();
    for (i, (v, at)) in events.iter().enumerate() {
        let event = json!({"specversion": "1.0", "id": format!("b{i}"), "source": "s", "type": "bucket.test",
                           "time": at.to_rfc3339(), "data": {"g": "one", "v": v}});
        let (status, answer) = post(&app, &reporter, BATCH, &json!([event])).await;
        assert_eq!(
            (status, statuses(&answer)),
            (200, vec!["accepted".to_owned()]),
            "{answer}"
        );
    }
    let sum: i64 = events.iter().map(|e| e.0).sum();
    let max = events.iter().map(|e| e.0).max().unwrap_or(0);
    let latest = events
        .iter()
        .map(|(v, at)| (*at, *v))
        .max()
        .map_or(0, |(_, v)| v);
    let now = app.clock.now();
    let r = app
        .gql(
            Some(&admin),
            "query($f: DateTime!, $t: DateTime!) { meterUsage(from: $f, to: $t) { meterKey quantity events } }",
            json!({"f": (now - TimeDelta::hours(1)).to_rfc3339(), "t": now.to_rfc3339()}),
        )
        .await;
    let got: Vec<(String, String, i64)> = r["data"]["meterUsage"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|u| {
            (
                u["meterKey"].as_str().unwrap_or("").to_owned(),
                u["quantity"].as_str().unwrap_or("").to_owned(),
                u["events"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    let want: Vec<(String, String, i64)> = [("c", 48), ("l", latest), ("m", max), ("s", sum)]
        .iter()
        .map(|(k, q)| ((*k).to_owned(), q.to_string(), 48))
        .collect();
    assert_eq!(got, want, "{r}");
}

/// A meter counts at most 1000 groups per tenant: the 1001st is refused (and only it, in
/// its batch), while events of groups already counted, and other tenants', still count.
async fn a_meter_counts_at_most_a_thousand_groups_per_tenant(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    metered(&app, "egress-gb", "GB", "0.09",
        json!({"key": "egress", "eventType": "net.egress", "valuePath": "gb", "aggregation": "SUM", "groupBy": ["region"]}))
    .await;
    let (_, admin) = app.create_tenant("acme").await;
    let (_, other) = app.create_tenant("globex").await;
    let reporter = key(&app, &admin, "USAGE_REPORTER", None).await;
    let other_reporter = key(&app, &other, "USAGE_REPORTER", None).await;
    app.advance(TimeDelta::minutes(5));
    let at = app.clock.now() - TimeDelta::minutes(1);
    let region = |i: usize| format!("r{i}");
    for batch in 0..10 {
        let events: Vec<Value> = (0..100)
            .map(|i| {
                egress(
                    &format!("e{batch}-{i}"),
                    json!(1),
                    Some(&region(batch * 100 + i)),
                    at,
                )
            })
            .collect();
        let (_, answer) = post(&app, &reporter, BATCH, &json!(events)).await;
        assert!(
            statuses(&answer).iter().all(|s| s == "accepted"),
            "{answer}"
        );
    }
    let last = json!([
        egress("x1", json!(1), Some("r5"), at),
        egress("x2", json!(1), Some("one-too-many"), at),
        egress("x3", json!(1), Some("r999"), at),
    ]);
    let (_, answer) = post(&app, &reporter, BATCH, &last).await;
    assert_eq!(
        statuses(&answer),
        ["accepted", "invalid", "accepted"],
        "{answer}"
    );
    assert_eq!(answer["results"][1]["error"]["field"], "data");
    let (_, answer) = post(
        &app,
        &other_reporter,
        BATCH,
        &json!([egress("y", json!(1), Some("one-too-many"), at)]),
    )
    .await;
    assert_eq!(
        statuses(&answer),
        ["accepted"],
        "another tenant's groups are its own: {answer}"
    );
}

/// Batches posted at once are recorded together (group commit) yet answered as if each
/// came alone: 24 concurrent batches from two tenants, each event sent by three of them,
/// one invalid event per batch. Every event is accepted exactly once across all answers,
/// each invalid one is refused in its own batch, and each tenant's quantity is the sum of
/// its events (computed here from them).
async fn concurrent_overlapping_batches_count_each_event_once(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    metered(&app, "sku-egress", "GB", "1", json!({"key": "egress", "eventType": "net.egress", "valuePath": "gb", "aggregation": "SUM"})).await;
    let mut reporters = Vec::new();
    for name in ["acme", "globex"] {
        let (_, admin) = app.create_tenant(name).await;
        reporters.push((
            admin.clone(),
            key(&app, &admin, "USAGE_REPORTER", None).await,
        ));
    }
    app.advance(TimeDelta::minutes(2));
    let at = app.clock.now() - TimeDelta::seconds(30);
    // Batch b of tenant t holds events b..b+3 of 14 (so each is in three batches) and a
    // last one whose `gb` is not a number.
    let batch = |b: usize| -> Vec<Value> {
        let mut events: Vec<Value> = (b..b + 3)
            .map(|e| egress(&format!("e{}", e % 14), json!(e % 14 + 1), None, at))
            .collect();
        events.push(egress(&format!("bad{b}"), json!("lots"), None, at));
        events
    };
    let posts = (0..24).map(|i| {
        let (tenant, b) = (i % 2, i / 2 + (i % 2) * 5);
        let reporter = reporters[tenant].1.clone();
        let app = &app;
        async move {
            let (status, answer) = post(app, &reporter, BATCH, &json!(batch(b))).await;
            assert_eq!(status, 200, "{answer}");
            (tenant, b, statuses(&answer))
        }
    });
    let answers = futures_util::future::join_all(posts).await;
    let mut accepted = [
        std::collections::BTreeMap::<usize, usize>::new(),
        Default::default(),
    ];
    for (tenant, b, statuses) in &answers {
        assert_eq!(statuses[3], "invalid", "batch {b}: {statuses:?}");
        for (k, status) in statuses[..3].iter().enumerate() {
            assert!(
                status == "accepted" || status == "duplicate",
                "{statuses:?}"
            );
            if status == "accepted" {
                *accepted[*tenant].entry((b + k) % 14).or_default() += 1;
            }
        }
    }
    for (tenant, (admin, _)) in reporters.iter().enumerate() {
        let sent: std::collections::BTreeSet<usize> = answers
            .iter()
            .filter(|a| a.0 == tenant)
            .flat_map(|a| (a.1..a.1 + 3).map(|e| e % 14))
            .collect();
        assert!(
            accepted[tenant].keys().eq(sent.iter()) && accepted[tenant].values().all(|n| *n == 1),
            "tenant {tenant}: accepted {:?} of {sent:?}",
            accepted[tenant]
        );
        let now = app.clock.now();
        let r = app
            .gql(
                Some(admin),
                "query($f: DateTime!, $t: DateTime!) { meterUsage(from: $f, to: $t) { quantity events } }",
                json!({"f": (now - TimeDelta::hours(1)).to_rfc3339(), "t": now.to_rfc3339()}),
            )
            .await;
        let total: usize = sent.iter().map(|e| e + 1).sum();
        assert_eq!(
            (
                r["data"]["meterUsage"][0]["quantity"].as_str(),
                r["data"]["meterUsage"][0]["events"].as_u64()
            ),
            (
                Some(total.to_string().as_str()),
                u64::try_from(sent.len()).ok()
            ),
            "{r}"
        );
    }
}

on_both_databases!(
    concurrent_overlapping_batches_count_each_event_once,
    a_meter_counts_at_most_a_thousand_groups_per_tenant,
    batches_into_one_bucket_add_up_as_the_events_say,
    a_batch_is_answered_event_by_event_and_billed_once,
    only_usage_reporters_report_and_only_for_their_tenant,
    streamed_token_spend_trips_the_hard_cap,
);
