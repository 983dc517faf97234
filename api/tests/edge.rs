//! The HTTP edge against hostile requests: work bounded before any query analysis, no
//! anonymous access beyond what the deployment allows, every mutation of an aliased batch
//! counted against the rate limit, text that would poison storage refused, encodings the
//! server cannot read refused, and `/metrics` kept to loopback and operators.

mod support;

use neocloud_schema::entity::api_key;
use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

/// `query{...F0} fragment F0 on Query{...F1 ...F1} …`: 2^k fields once expanded, in about
/// 30 bytes a fragment.
fn fragment_bomb(k: usize) -> String {
    let mut q = String::from("query{...F0}");
    for i in 0..k {
        q.push_str(&format!(
            " fragment F{i} on Query{{...F{n} ...F{n}}}",
            n = i + 1
        ));
    }
    q.push_str(&format!(" fragment F{k} on Query{{__typename}}"));
    q
}

/// The audit's k=30 document held a worker for minutes; it is refused after one linear
/// pass, with or without a key.
async fn a_fragment_bomb_is_refused_before_validation(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let bomb = fragment_bomb(30);
    for key in [None, Some(app.operator_key.as_str())] {
        let (status, r) = app.gql_status(key, &bomb, json!({})).await;
        assert_eq!(status, 400, "{r}");
        assert_eq!(error_code(&r), Some("INVALID_QUERY"), "{r}");
        let message = r["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains("expands"), "{r}");
    }
    let deep_but_small = fragment_bomb(6);
    let r = app
        .gql(Some(&app.operator_key), &deep_but_small, json!({}))
        .await;
    assert_eq!(r["data"]["__typename"], "Query", "{r}");
}

async fn anonymous_callers_may_only_introspect(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let r = app
        .gql(None, "{ __schema { queryType { name } } }", json!({}))
        .await;
    assert_eq!(r["data"]["__schema"]["queryType"]["name"], "Query", "{r}");
    for query in [
        "{ viewer { role } }",
        "{ __typename catalog { skus { id } } }",
        "{ ...F } fragment F on Query { viewer { role } }",
        "mutation { createTenant(input: {name: \"x\", currency: \"USD\"}) { apiKey } }",
    ] {
        let (status, r) = app.gql_status(None, query, json!({})).await;
        assert_eq!(
            (status, error_code(&r)),
            (401, Some("UNAUTHENTICATED")),
            "{query}: {r}"
        );
    }
    let Some(closed) = TestApp::spawn_with(backend, |s| {
        s.exposure.introspection_without_key = false;
    })
    .await
    else {
        return;
    };
    let r = closed
        .gql(None, "{ __schema { queryType { name } } }", json!({}))
        .await;
    assert_eq!(error_code(&r), Some("UNAUTHENTICATED"), "{r}");
    let r = closed
        .gql(
            Some(&closed.operator_key),
            "{ __schema { queryType { name } } }",
            json!({}),
        )
        .await;
    assert_eq!(r["data"]["__schema"]["queryType"]["name"], "Query", "{r}");
}

/// The audit created 300 keys in one request of aliased `createApiKey`: each mutation
/// takes a token, and a request over the limit runs none of them.
async fn aliased_mutations_count_against_the_rate_limit(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, |s| {
        s.limits.requests_per_second = 1;
        s.limits.burst = 20;
    })
    .await
    else {
        return;
    };
    let keys_before = api_key::Entity::find().count(&app.db).await.expect("count");
    let batch = |n: usize| {
        let fields: String = (0..n)
            .map(|i| format!(" k{i}: createApiKey(role: OPERATOR, label: \"k{i}\") {{ apiKey }}"))
            .collect();
        format!("mutation {{{fields}}}")
    };
    let (status, r) = app
        .gql_status(Some(&app.operator_key), &batch(30), json!({}))
        .await;
    assert_eq!((status, error_code(&r)), (429, Some("RATE_LIMITED")), "{r}");
    let keys_after = api_key::Entity::find().count(&app.db).await.expect("count");
    assert_eq!(keys_after, keys_before, "a refused request creates nothing");
    let r = app.gql(Some(&app.operator_key), &batch(5), json!({})).await;
    assert!(r["errors"].is_null(), "{r}");
    let over_aliases = batch(101);
    let (status, r) = app
        .gql_status(Some(&app.operator_key), &over_aliases, json!({}))
        .await;
    assert_eq!(
        (status, error_code(&r)),
        (400, Some("INVALID_QUERY")),
        "{r}"
    );
}

/// A NUL in an order label or an idempotency key answered INTERNAL on PostgreSQL: text
/// with control characters is refused at the edge, as a literal or a variable, and stores
/// nothing.
async fn control_characters_are_refused_before_storage(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    app.register_node("hgx-0", "H100", 8, "").await;
    let sku = app.create_h100_sku().await;
    let (_, key) = app.create_tenant("acme").await;
    let place = "mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { id } } }";
    for input in [
        json!({"sku": sku, "count": 1, "labels": [{"key": "team", "value": "a\u{0}b"}]}),
        json!({"sku": sku, "count": 1, "idempotencyKey": "k\u{0}"}),
        json!({"sku": sku, "count": 1, "labels": [{"key": "t\u{1b}", "value": "a"}]}),
    ] {
        let (status, r) = app.gql_status(Some(&key), place, json!({"i": input})).await;
        assert_eq!(
            (status, error_code(&r)),
            (400, Some("INVALID_INPUT")),
            "{r}"
        );
    }
    let literal = format!(
        "mutation {{ placeOrder(input: {{sku: \"{sku}\", count: 1, idempotencyKey: \"k\\u0000\"}}) {{ order {{ id }} }} }}"
    );
    let (status, r) = app.gql_status(Some(&key), &literal, json!({})).await;
    assert_eq!(
        (status, error_code(&r)),
        (400, Some("INVALID_INPUT")),
        "{r}"
    );
    let r = app
        .gql(
            Some(&key),
            "{ orders(first: 10) { edges { node { id } } } }",
            json!({}),
        )
        .await;
    assert_eq!(r["data"]["orders"]["edges"], json!([]), "{r}");
}

/// `Content-Encoding: br` was read as if it were not encoded.
async fn an_unknown_content_encoding_is_refused(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    for path in ["/graphql", "/v1/ingest"] {
        let res = app
            .client
            .post(format!("{}{path}", app.url))
            .header("content-type", "application/json")
            .header("content-encoding", "br")
            .bearer_auth(&app.operator_key)
            .body("{\"query\": \"{ __typename }\"}")
            .send()
            .await
            .expect("post");
        assert_eq!(res.status().as_u16(), 415, "{path}");
        let body: Value = res.json().await.expect("json");
        assert_eq!(body["error"]["code"], "UNSUPPORTED_ENCODING", "{body}");
    }
}

/// `/metrics` answers loopback and operator keys; from another address a key is needed.
async fn metrics_need_an_operator_key_beyond_loopback(backend: Backend) {
    let Some(ip) = non_loopback_address() else {
        eprintln!("skipped: this machine has no non-loopback address");
        return;
    };
    let Some(app) = TestApp::spawn_with(backend, |s| s.listen = "0.0.0.0:0".into()).await else {
        return;
    };
    let port = app.url.rsplit(':').next().expect("port").to_owned();
    let remote = format!("http://{ip}:{port}/metrics");
    let (_, tenant_key) = app.create_tenant("acme").await;
    let status = |key: Option<String>| {
        let mut req = app.client.get(&remote);
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        async move { req.send().await.expect("get").status().as_u16() }
    };
    assert_eq!(status(None).await, 401);
    assert_eq!(status(Some(tenant_key)).await, 403);
    assert_eq!(status(Some(app.operator_key.clone())).await, 200);
    let local = app
        .client
        .get(format!("{}/metrics", app.url))
        .send()
        .await
        .expect("get");
    assert_eq!(local.status().as_u16(), 200);
}

/// This machine's address toward the outside (no packet is sent), if it has one.
fn non_loopback_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

on_both_databases!(
    a_fragment_bomb_is_refused_before_validation,
    anonymous_callers_may_only_introspect,
    aliased_mutations_count_against_the_rate_limit,
    control_characters_are_refused_before_storage,
    an_unknown_content_encoding_is_refused,
    metrics_need_an_operator_key_beyond_loopback,
);

/// SQLite is one process's database: a second server on the same file is refused at
/// start, saying why, and the file is free again once the first has gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_on_one_sqlite_file_is_refused() {
    use neocloud_api::settings::Settings;
    use neocloud_api::startup::Application;
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}/one.db?mode=rwc", dir.path().display());
    let first = Application::build(Settings::for_tests(&url))
        .await
        .expect("the first server");
    let refused = Application::build(Settings::for_tests(&url))
        .await
        .err()
        .expect("a second server is refused")
        .to_string();
    assert!(refused.contains("SQLite is single-process"), "{refused}");
    drop(first);
    Application::build(Settings::for_tests(&url))
        .await
        .expect("the file is free once the first server has gone");
}
