//! The HTTP surface: health, readiness, metrics, limits and malformed requests.

mod support;

use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

async fn health_readiness_and_metrics_answer(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    for path in ["/healthz", "/readyz"] {
        let res = app
            .client
            .get(format!("{}{path}", app.url))
            .send()
            .await
            .expect("get");
        assert_eq!(res.status(), 200, "{path}");
    }
    app.gql(None, "{ viewer { role } }", json!({})).await;
    let body = app
        .client
        .get(format!("{}/metrics", app.url))
        .send()
        .await
        .expect("get")
        .text()
        .await
        .expect("text");
    assert!(body.contains("neocloud_http_requests_total"), "{body}");
    assert!(body.contains("route=\"/graphql\""), "{body}");
    assert!(
        body.contains("neocloud_graphql_errors_total{code=\"UNAUTHENTICATED\"}"),
        "{body}"
    );
    graphiql_needs_nothing_from_elsewhere(&app).await;
    let res = app
        .client
        .get(format!("{}/nope", app.url))
        .send()
        .await
        .expect("get");
    assert_eq!(res.status(), 404);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["error"]["code"], "NOT_FOUND");
}

async fn malformed_requests_get_coded_errors_and_the_server_lives_on(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let key = app.operator_key.clone();
    let r = app.gql(Some(&key), "{ viewer { role ", json!({})).await;
    assert_eq!(error_code(&r), Some("INVALID_QUERY"), "{r}");
    let r = app.gql(Some(&key), "{ noSuchField }", json!({})).await;
    assert_eq!(error_code(&r), Some("INVALID_QUERY"), "{r}");

    let res = app
        .client
        .post(format!("{}/graphql", app.url))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("post");
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.expect("json");
    assert_eq!(error_code(&body), Some("INVALID_INPUT"), "{body}");

    let huge = format!(
        "{{\"query\": \"{{ viewer {{ role }} }}\", \"x\": \"{}\"}}",
        "a".repeat(2 << 20)
    );
    let res = app
        .client
        .post(format!("{}/graphql", app.url))
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .expect("post");
    assert_eq!(res.status(), 413);

    let r = app.gql(Some(&key), "{ viewer { role } }", json!({})).await;
    assert_eq!(r["data"]["viewer"]["role"], "OPERATOR", "still serving");
}

/// GraphiQL loaded React and GraphiQL from a CDN and was blank where there is no internet:
/// every script and style the page names comes from this server, with its content type.
async fn graphiql_needs_nothing_from_elsewhere(app: &TestApp) {
    let page = app
        .client
        .get(format!("{}/graphql", app.url))
        .send()
        .await
        .expect("get")
        .text()
        .await
        .expect("html");
    let assets: Vec<&str> = page
        .split(['"', '\''])
        .filter(|part| part.ends_with(".js") || part.ends_with(".css"))
        .collect();
    assert!(assets.len() >= 4, "{page}");
    for asset in assets {
        assert!(
            asset.starts_with("/graphiql/"),
            "{asset} is not served here"
        );
        let res = app
            .client
            .get(format!("{}{asset}", app.url))
            .send()
            .await
            .expect("get");
        assert_eq!(res.status(), 200, "{asset}");
        let kind = res.headers()["content-type"]
            .to_str()
            .expect("type")
            .to_owned();
        let expected = if asset.ends_with(".css") {
            "text/css"
        } else {
            "text/javascript"
        };
        assert!(kind.starts_with(expected), "{asset}: {kind}");
        assert!(!res.bytes().await.expect("body").is_empty(), "{asset}");
    }
}

async fn deep_and_expensive_queries_are_refused(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    // 13 levels of valid type references beside a field of data: past the depth limit
    // (12). Introspection alone may nest deeper (GraphiQL's query does).
    let mut refs = String::from("name");
    for _ in 0..8 {
        refs = format!("ofType {{ {refs} }}");
    }
    let deep = format!("__schema {{ types {{ fields {{ type {{ {refs} }} }} }} }}");
    let r = app
        .gql(
            Some(&app.operator_key),
            &format!("{{ viewer {{ role }} {deep} }}"),
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_QUERY"), "{r}");
    let message = r["errors"][0]["message"].as_str().unwrap_or("");
    assert!(message.contains("nested 13 deep"), "{r}");
    let r = app.gql(None, &format!("{{ {deep} }}"), json!({})).await;
    assert!(r["errors"].is_null(), "introspection alone: {r}");

    // Six full pages of nodes with their GPUs: 6 × 100 × 9 fields.
    let pages: String = (0..6)
        .map(|i| format!(" p{i}: nodes(first: 100) {{ edges {{ node {{ gpus {{ id uuid index model memoryMib health }} }} }} }}"))
        .collect();
    let r = app
        .gql(Some(&app.operator_key), &format!("{{{pages} }}"), json!({}))
        .await;
    assert_eq!(error_code(&r), Some("INVALID_QUERY"), "{r}");
    let message = r["errors"][0]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("costs 5400") && message.contains("5000"),
        "{r}"
    );
}

on_both_databases!(
    health_readiness_and_metrics_answer,
    malformed_requests_get_coded_errors_and_the_server_lives_on,
    deep_and_expensive_queries_are_refused,
);

async fn a_key_over_its_rate_is_told_to_slow_down(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, |s| {
        s.limits.requests_per_second = 1;
        s.limits.burst = 3;
    })
    .await
    else {
        return;
    };
    let mut codes = Vec::new();
    for _ in 0..5 {
        let (status, r) = app
            .gql_status(Some(&app.operator_key), "{ viewer { role } }", json!({}))
            .await;
        codes.push((status, error_code(&r).map(str::to_owned)));
    }
    assert!(
        codes[..3].iter().all(|(s, c)| *s == 200 && c.is_none()),
        "{codes:?}"
    );
    assert_eq!(
        codes[4],
        (429, Some("RATE_LIMITED".to_owned())),
        "{codes:?}"
    );
}

async fn aliases_and_batches_cannot_multiply_a_request(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let aliased: String = (0..3000)
        .map(|i| format!("a{i}: viewer {{ role }} "))
        .collect();
    let r = app
        .gql(
            Some(&app.operator_key),
            &format!("{{ {aliased} }}"),
            json!({}),
        )
        .await;
    assert_eq!(
        error_code(&r),
        Some("INVALID_QUERY"),
        "{}",
        &r.to_string()[..200.min(r.to_string().len())]
    );
    let res = app
        .client
        .post(format!("{}/graphql", app.url))
        .bearer_auth(&app.operator_key)
        .json(&json!([{"query": "{ viewer { role } }"}, {"query": "{ viewer { role } }"}]))
        .send()
        .await
        .expect("post");
    assert_eq!(res.status(), 400, "batched requests are not accepted");
}

on_both_databases!(
    a_key_over_its_rate_is_told_to_slow_down,
    aliases_and_batches_cannot_multiply_a_request,
);
