//! Model offerings through the real server: an operator publishes models with token
//! prices and a request fee; gateway events (`model.request`) are counted by the
//! offering's meters only for its model and region, bounded by its token limit; tenants
//! read usage and cost per model, API key and label — checked against a model of the
//! prices — and the invoice bills each part; a plan's METERED rate is the price the
//! catalog and the cost show.

mod support;

use std::collections::BTreeMap;

use chrono::TimeDelta;
use neocloud_schema::clock::Clock;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

const OFFERING: &str = "id name region inputPricePerMillion outputPricePerMillion cachedInputPricePerMillion requestFee maxTokensPerRequest skuIds";

async fn offer(app: &TestApp, key: &str, input: Value) -> Value {
    app.gql(
        Some(key),
        &format!("mutation($i: CreateModelOfferingInput!) {{ createModelOffering(input: $i) {{ modelOffering {{ {OFFERING} }} }} }}"),
        json!({"i": input}),
    )
    .await
}

/// One request as the gateway reports it.
struct Request {
    model: &'static str,
    region: &'static str,
    api_key: &'static str,
    label: Option<&'static str>,
    tokens: (u64, u64, u64),
    status: &'static str,
}

const REQUESTS: &[Request] = &[
    Request {
        model: "meta-llama/Llama-3.1-70B",
        region: "eu-west",
        api_key: "ci",
        label: Some("search"),
        tokens: (1000, 500, 200),
        status: "ok",
    },
    Request {
        model: "meta-llama/Llama-3.1-70B",
        region: "eu-west",
        api_key: "ci",
        label: Some("chat"),
        tokens: (3000, 7, 0),
        status: "incomplete",
    },
    Request {
        model: "meta-llama/Llama-3.1-70B",
        region: "eu-west",
        api_key: "prod",
        label: None,
        tokens: (10, 0, 0),
        status: "error",
    },
    Request {
        model: "mistral-7b",
        region: "eu-west",
        api_key: "ci",
        label: Some("search"),
        tokens: (100_000, 90_000, 0),
        status: "ok",
    },
    // Not offered: accepted, counted by no meter.
    Request {
        model: "meta-llama/Llama-3.1-70B",
        region: "us-east",
        api_key: "ci",
        label: None,
        tokens: (5, 5, 0),
        status: "ok",
    },
    Request {
        model: "unknown",
        region: "eu-west",
        api_key: "ci",
        label: None,
        tokens: (5, 5, 0),
        status: "ok",
    },
];

/// The model's prices: per token of (input, output, cached) and per request served.
fn prices(model: &str, region: &str) -> Option<([Decimal; 3], Decimal)> {
    let per_m = |s: &str| s.parse::<Decimal>().expect("price") / Decimal::from(1_000_000);
    match (model, region) {
        ("meta-llama/Llama-3.1-70B", "eu-west") => Some((
            [per_m("0.60"), per_m("0.80"), per_m("0.30")],
            Decimal::new(1, 4),
        )),
        ("mistral-7b", "eu-west") => {
            Some(([per_m("0.10"), per_m("0.20"), Decimal::ZERO], Decimal::ZERO))
        }
        _ => None,
    }
}

/// The model of `modelUsage`: per key (model, key or label as asked), requests served,
/// tokens and cost.
fn expected(
    key: impl Fn(&Request) -> String,
    output_price: Option<Decimal>,
) -> BTreeMap<String, [Decimal; 5]> {
    let mut out: BTreeMap<String, [Decimal; 5]> = BTreeMap::new();
    for r in REQUESTS {
        let Some((mut per_token, fee)) = prices(r.model, r.region) else {
            continue;
        };
        if r.model != "mistral-7b"
            && let Some(p) = output_price
        {
            per_token[1] = p;
        }
        let row = out.entry(key(r)).or_default();
        let (i, o, c) = (
            Decimal::from(r.tokens.0),
            Decimal::from(r.tokens.1),
            Decimal::from(r.tokens.2),
        );
        let served = r.status != "error";
        if served {
            row[0] += Decimal::ONE;
        }
        row[1] += i;
        row[2] += o;
        row[3] += c;
        row[4] += i * per_token[0]
            + o * per_token[1]
            + c * per_token[2]
            + if served { fee } else { Decimal::ZERO };
    }
    out
}

async fn usage(app: &TestApp, key: &str, by: &str, tenant: Option<&str>) -> Value {
    let now = app.clock.now();
    app.gql(
        Some(key),
        &format!("query($f: DateTime!, $t: DateTime!, $id: ID) {{ modelUsage(from: $f, to: $t, groupBy: [{by}], tenantId: $id) {{ model region apiKey label requests inputTokens outputTokens cachedTokens cost currency }} }}"),
        json!({"f": (now - TimeDelta::hours(1)).to_rfc3339(), "t": (now + TimeDelta::hours(1)).to_rfc3339(), "id": tenant}),
    )
    .await
}

fn got(answer: &Value, key: &str) -> BTreeMap<String, [Decimal; 5]> {
    let dec = |v: &Value| {
        v.as_str()
            .unwrap_or("x")
            .parse::<Decimal>()
            .unwrap_or_else(|_| panic!("{v}"))
    };
    answer["data"]["modelUsage"]
        .as_array()
        .unwrap_or_else(|| panic!("modelUsage failed: {answer}"))
        .iter()
        .map(|r| {
            (
                r[key].as_str().unwrap_or("").to_owned(),
                [
                    dec(&r["requests"]),
                    dec(&r["inputTokens"]),
                    dec(&r["outputTokens"]),
                    dec(&r["cachedTokens"]),
                    dec(&r["cost"]),
                ],
            )
        })
        .collect()
}

fn event(n: usize, r: &Request, at: chrono::DateTime<chrono::Utc>) -> Value {
    let mut data = json!({"model": r.model, "region": r.region, "api_key": r.api_key,
        "input_tokens": r.tokens.0, "output_tokens": r.tokens.1, "cached_tokens": r.tokens.2,
        "latency_ms": 120, "status": r.status});
    if let Some(label) = r.label {
        data["label"] = json!(label);
    }
    json!({"specversion": "1.0", "id": format!("req-{n}"), "source": "gateway/test", "type": "model.request",
           "time": at.to_rfc3339(), "data": data})
}

async fn post(app: &TestApp, key: &str, batch: Vec<Value>) -> Value {
    let res = app
        .client
        .post(format!("{}/v1/events", app.url))
        .bearer_auth(key)
        .header("content-type", "application/cloudevents-batch+json")
        .body(Value::Array(batch).to_string())
        .send()
        .await
        .expect("request");
    assert_eq!(res.status().as_u16(), 200);
    res.json().await.expect("JSON")
}

async fn publish(app: &TestApp) -> Value {
    let op = app.operator_key.clone();
    let r = offer(app, &op, json!({"name": "meta-llama/Llama-3.1-70B", "region": "eu-west", "currency": "USD",
        "inputPricePerMillion": "0.60", "outputPricePerMillion": "0.80", "cachedInputPricePerMillion": "0.30",
        "requestFee": "0.0001", "maxTokensPerRequest": 100000})).await;
    let llama = r["data"]["createModelOffering"]["modelOffering"].clone();
    assert_eq!(llama["inputPricePerMillion"], "0.6", "{r}");
    assert_eq!(llama["skuIds"].as_array().map(Vec::len), Some(4));
    let r = offer(
        app,
        &op,
        json!({"name": "mistral-7b", "region": "eu-west", "currency": "USD",
        "inputPricePerMillion": "0.10", "outputPricePerMillion": "0.20"}),
    )
    .await;
    assert_eq!(
        r["data"]["createModelOffering"]["modelOffering"]["requestFee"], "0",
        "{r}"
    );
    llama
}

async fn token_usage_and_cost_per_model_key_and_label(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let llama = publish(&app).await;
    let op = app.operator_key.clone();
    let (tenant, admin) = app.create_tenant("acme").await;
    let (_, other) = app.create_tenant("globex").await;
    for (who, input, code) in [
        (
            &admin,
            json!({"name": "x", "region": "eu-west", "currency": "USD", "inputPricePerMillion": "1", "outputPricePerMillion": "1"}),
            "FORBIDDEN",
        ),
        (
            &op,
            json!({"name": "mistral-7b", "region": "eu-west", "currency": "USD", "inputPricePerMillion": "1", "outputPricePerMillion": "1"}),
            "ALREADY_EXISTS",
        ),
        (
            &op,
            json!({"name": "y", "region": "eu-west", "currency": "USD", "inputPricePerMillion": "0.0001", "outputPricePerMillion": "1"}),
            "INVALID_INPUT",
        ),
        (
            &op,
            json!({"name": "bad name", "region": "eu-west", "currency": "USD", "inputPricePerMillion": "1", "outputPricePerMillion": "1"}),
            "INVALID_INPUT",
        ),
    ] {
        let r = offer(&app, who, input).await;
        assert_eq!(error_code(&r), Some(code), "{r}");
    }
    let r = app
        .gql(
            Some(&admin),
            "mutation { createApiKey(role: USAGE_REPORTER) { apiKey } }",
            json!({}),
        )
        .await;
    let reporter = r["data"]["createApiKey"]["apiKey"]
        .as_str()
        .expect("key")
        .to_owned();
    app.advance(TimeDelta::minutes(5));
    let at = app.clock.now() - TimeDelta::minutes(1);
    let mut batch: Vec<Value> = REQUESTS
        .iter()
        .enumerate()
        .map(|(n, r)| event(n, r, at))
        .collect();
    let mut lie = event(99, &REQUESTS[0], at);
    lie["data"]["input_tokens"] = json!(100_001);
    batch.push(lie);
    let answer = post(&app, &reporter, batch).await;
    let statuses: Vec<&str> = answer["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["status"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        statuses,
        ["accepted"; 6]
            .iter()
            .copied()
            .chain(["invalid"])
            .collect::<Vec<_>>(),
        "{answer}"
    );
    assert_eq!(
        answer["results"][6]["error"]["field"], "data.input_tokens",
        "more than the offering's limit"
    );

    let model = |r: &Request| {
        if prices(r.model, r.region).is_some() {
            r.model.to_owned()
        } else {
            String::new()
        }
    };
    let by_model = usage(&app, &admin, "MODEL", None).await;
    assert_eq!(got(&by_model, "model"), expected(model, None), "{by_model}");
    let by_key = usage(&app, &admin, "API_KEY", None).await;
    assert_eq!(
        got(&by_key, "apiKey"),
        expected(|r| r.api_key.to_owned(), None),
        "{by_key}"
    );
    let by_label = usage(&app, &admin, "LABEL", None).await;
    assert_eq!(
        got(&by_label, "label"),
        expected(|r| r.label.unwrap_or("").to_owned(), None),
        "{by_label}"
    );
    assert!(got(&usage(&app, &other, "MODEL", None).await, "model").is_empty());
    let r = usage(&app, &other, "MODEL", Some(&tenant)).await;
    assert!(error_code(&r).is_some(), "another tenant's usage: {r}");

    // A plan's METERED rate is the price the catalog shows and the cost counts.
    let output_sku = llama["skuIds"][1].as_str().expect("sku").to_owned();
    let version = app.create_plan_version(json!({"plan": "maas", "currency": "USD", "effectiveFrom": "2026-01-01T00:00:00Z",
        "rates": [{"sku": output_sku, "metric": "METERED", "tiersMode": "PER_UNIT", "unitPrice": "0.0000005"}]})).await;
    app.assign_plan(&tenant, &version).await;
    app.advance(TimeDelta::minutes(2));
    let r = app
        .gql(
            Some(&admin),
            "{ catalog { skus { id unit pricePerHour } } }",
            json!({}),
        )
        .await;
    let entry = r["data"]["catalog"]["skus"]
        .as_array()
        .expect("skus")
        .iter()
        .find(|s| s["id"] == output_sku.as_str())
        .cloned()
        .expect("listed");
    assert_eq!(
        (entry["unit"].as_str(), entry["pricePerHour"].as_str()),
        (Some("output token"), Some("0.0000005")),
        "{entry}"
    );
    let by_model = usage(&app, &admin, "MODEL", None).await;
    assert_eq!(
        got(&by_model, "model"),
        expected(model, Some(Decimal::new(5, 7))),
        "{by_model}"
    );

    let r = app
        .gql(
            Some(&admin),
            "{ upcomingInvoice { lines { metric skuId quantity unit } } }",
            json!({}),
        )
        .await;
    let lines = r["data"]["upcomingInvoice"]["lines"]
        .as_array()
        .expect("lines");
    let input_line = lines
        .iter()
        .find(|l| l["skuId"] == llama["skuIds"][0])
        .expect("an input line");
    assert_eq!(
        (&input_line["quantity"], &input_line["unit"]),
        (&json!("4010"), &json!("input token")),
        "{r}"
    );
    let fee_line = lines
        .iter()
        .find(|l| l["skuId"] == llama["skuIds"][3])
        .expect("a request line");
    assert_eq!(fee_line["quantity"], "2", "two requests served: {r}");
}

on_both_databases!(token_usage_and_cost_per_model_key_and_label);
