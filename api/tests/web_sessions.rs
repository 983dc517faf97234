//! Browser sessions, on both databases, used as a browser would: signing in with a key
//! sets an HttpOnly, SameSite=Strict cookie; the cookie authenticates GraphQL only with
//! the session's CSRF token, and downloads (safe methods) without it; machines' keys
//! cannot sign in; signing out, revoking the key, and idling past the limit each end the
//! session; signing in and out are audited. The apps' pages come with a strict CSP.

mod support;

use chrono::{Duration, Utc};
use neocloud_schema::entity::web_session;
use reqwest::StatusCode;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, sea_query::Expr};
use serde_json::{Value, json};
use support::{Backend, TestApp, agent_token, error_code};

struct Signed {
    cookie: String,
    csrf: String,
}

async fn sign_in(app: &TestApp, key: &str) -> reqwest::Response {
    app.client
        .post(format!("{}/v1/session", app.url))
        .json(&json!({"apiKey": key}))
        .send()
        .await
        .expect("POST /v1/session")
}

async fn signed_in(app: &TestApp, key: &str) -> Signed {
    let response = sign_in(app, key).await;
    assert_eq!(response.status(), StatusCode::OK);
    let set_cookie = response
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("a session cookie")
        .to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set_cookie.contains(attribute), "{attribute}: {set_cookie}");
    }
    let body: Value = response.json().await.expect("JSON");
    Signed {
        cookie: set_cookie.split(';').next().unwrap_or_default().to_owned(),
        csrf: body["csrfToken"].as_str().expect("csrfToken").to_owned(),
    }
}

/// `{ viewer }` with the cookie and `csrf` (if any) as the header.
async fn viewer(app: &TestApp, signed: &Signed, csrf: Option<&str>) -> Value {
    session_gql(
        app,
        signed,
        csrf,
        "{ viewer { role email tenant { name } } }",
    )
    .await
}

/// `query` with the session's cookie and `csrf` (if any) as the header.
async fn session_gql(app: &TestApp, signed: &Signed, csrf: Option<&str>, query: &str) -> Value {
    let mut request = app
        .client
        .post(format!("{}/graphql", app.url))
        .header("cookie", &signed.cookie)
        .json(&json!({ "query": query }));
    if let Some(csrf) = csrf {
        request = request.header("x-csrf-token", csrf);
    }
    request
        .send()
        .await
        .expect("POST")
        .json()
        .await
        .expect("JSON")
}

async fn sessions_act_as_their_key_behind_csrf(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, key) = app.create_tenant("acme").await;
    let signed = signed_in(&app, &key).await;

    let r = viewer(&app, &signed, Some(&signed.csrf)).await;
    assert_eq!(r["data"]["viewer"]["tenant"]["name"], "acme", "{r}");
    assert_eq!(r["data"]["viewer"]["role"], "TENANT_ADMIN", "{r}");
    assert!(
        r["data"]["viewer"]["email"].is_null(),
        "a key is no person: {r}"
    );
    for csrf in [None, Some(""), Some("not-the-token")] {
        let r = viewer(&app, &signed, csrf).await;
        assert_eq!(error_code(&r), Some("FORBIDDEN"), "{csrf:?}: {r}");
    }

    // A download is a safe method: the cookie alone is enough.
    let current = app
        .client
        .get(format!("{}/v1/session", app.url))
        .header("cookie", &signed.cookie)
        .send()
        .await
        .expect("GET");
    assert_eq!(current.status(), StatusCode::OK);
    let body: Value = current.json().await.expect("JSON");
    assert_eq!(body["csrfToken"], signed.csrf.as_str());
    let export = app
        .client
        .get(format!("{}/v1/tenant/export", app.url))
        .header("cookie", &signed.cookie)
        .send()
        .await
        .expect("GET");
    assert_eq!(export.status(), StatusCode::OK);

    // Signing out needs the token, then the cookie is worth nothing.
    let out = |csrf: &str| {
        app.client
            .delete(format!("{}/v1/session", app.url))
            .header("cookie", &signed.cookie)
            .header("x-csrf-token", csrf.to_owned())
            .send()
    };
    assert_eq!(
        out("wrong").await.expect("DELETE").status(),
        StatusCode::FORBIDDEN
    );
    let r = viewer(&app, &signed, Some(&signed.csrf)).await;
    assert!(r["data"]["viewer"].is_object(), "still signed in: {r}");
    let response = out(&signed.csrf).await.expect("DELETE");
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let cleared = response.headers()["set-cookie"]
        .to_str()
        .unwrap_or_default();
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
    let r = viewer(&app, &signed, Some(&signed.csrf)).await;
    assert_eq!(error_code(&r), Some("UNAUTHENTICATED"), "{r}");

    let r = app
        .gql(
            Some(&app.operator_key),
            "{ auditLog(filter: {objectType: \"web_session\"}) { edges { node { action } } } }",
            json!({}),
        )
        .await;
    let actions: Vec<&str> = r["data"]["auditLog"]["edges"]
        .as_array()
        .map(|edges| {
            edges
                .iter()
                .filter_map(|e| e["node"]["action"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(actions.len(), 2, "{r}");
    for action in ["session.sign_in", "session.sign_out"] {
        assert!(actions.contains(&action), "{action}: {r}");
    }
}

async fn sessions_end_with_their_key_and_when_idle(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, key) = app.create_tenant("acme").await;

    // Only people's keys sign in: a provider's (its console) but no agent token.
    let registered = app.register_node("gpu-1", "H100", 8, "").await;
    let response = sign_in(&app, &agent_token(&registered)).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let provider = signed_in(&app, &app.create_rhein_provider().await).await;
    let csrf = Some(provider.csrf.as_str());
    let r = session_gql(
        &app,
        &provider,
        csrf,
        "{ viewer { role } provider { name } }",
    )
    .await;
    assert_eq!(r["data"]["viewer"]["role"], "PROVIDER", "{r}");
    assert!(r["data"]["provider"]["name"].is_string(), "{r}");
    let r = session_gql(
        &app,
        &provider,
        csrf,
        "{ tenants { edges { node { id } } } }",
    )
    .await;
    assert_eq!(
        error_code(&r),
        Some("FORBIDDEN"),
        "a session does what its key may: {r}"
    );
    for bad in [
        "",
        "nck_nope",
        "nck_000000000000_000000000000000000000000000000000000000000000000",
    ] {
        let response = sign_in(&app, bad).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{bad:?}");
        assert!(response.headers().get("set-cookie").is_none());
    }
    let forged = Signed {
        cookie: "neocloud_session=forged".to_owned(),
        csrf: String::new(),
    };
    let r = viewer(&app, &forged, Some("x")).await;
    assert_eq!(error_code(&r), Some("UNAUTHENTICATED"), "{r}");

    // Idle past the limit.
    let idle = signed_in(&app, &key).await;
    web_session::Entity::update_many()
        .col_expr(
            web_session::Column::LastSeenAt,
            Expr::value(Utc::now() - Duration::minutes(61)),
        )
        .filter(web_session::Column::EndedAt.is_null())
        .exec(&app.db)
        .await
        .expect("age the session");
    let r = viewer(&app, &idle, Some(&idle.csrf)).await;
    assert_eq!(error_code(&r), Some("UNAUTHENTICATED"), "{r}");

    // The key revoked.
    let signed = signed_in(&app, &key).await;
    let r = viewer(&app, &signed, Some(&signed.csrf)).await;
    assert!(r["data"]["viewer"].is_object(), "{r}");
    let r = app
        .gql(Some(&key), "{ viewer { apiKeyId } }", json!({}))
        .await;
    let own = r["data"]["viewer"]["apiKeyId"].clone();
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($id: ID!) { revokeApiKey(id: $id) { key { id } } }",
            json!({"id": own}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let r = viewer(&app, &signed, Some(&signed.csrf)).await;
    assert_eq!(error_code(&r), Some("UNAUTHENTICATED"), "{r}");
}

async fn the_apps_are_served_under_a_strict_policy(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    for path in [
        "/portal",
        "/portal/allocations/x",
        "/console",
        "/console/fleet",
        "/provider",
        "/provider/nodes/x",
    ] {
        let response = app
            .client
            .get(format!("{}{path}", app.url))
            .send()
            .await
            .expect("GET");
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let csp = response.headers()["content-security-policy"]
            .to_str()
            .unwrap_or_default()
            .to_owned();
        assert!(csp.contains("script-src 'self'"), "{path}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        let page = response.text().await.unwrap_or_default();
        assert!(page.contains("<html"), "{path}: {page}");
    }
    for path in [
        "/ui/assets/..%2Fportal.html",
        "/ui/assets/missing.js",
        "/portalx",
    ] {
        let response = app
            .client
            .get(format!("{}{path}", app.url))
            .send()
            .await
            .expect("GET");
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
    }
}

on_both_databases!(
    sessions_act_as_their_key_behind_csrf,
    sessions_end_with_their_key_and_when_idle,
    the_apps_are_served_under_a_strict_policy,
);
