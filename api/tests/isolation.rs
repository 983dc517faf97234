//! Tenant isolation: every entry point tried with another tenant's ids.

mod support;

use serde_json::json;
use support::{Backend, TestApp, error_code};

async fn key_ids(app: &TestApp, key: &str) -> Vec<String> {
    let r = app
        .gql(Some(key), "{ apiKeys { id tenantId } }", json!({}))
        .await;
    r["data"]["apiKeys"]
        .as_array()
        .unwrap_or_else(|| panic!("apiKeys failed: {r}"))
        .iter()
        .map(|k| k["id"].as_str().expect("id").to_owned())
        .collect()
}

async fn a_tenant_never_sees_or_touches_another_tenants_keys(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (a_id, a) = app.create_tenant("tenant-a").await;
    let (b_id, b) = app.create_tenant("tenant-b").await;
    let keys_a = key_ids(&app, &a).await;
    let keys_b = key_ids(&app, &b).await;
    assert!(!keys_a.is_empty() && !keys_b.is_empty());
    assert!(keys_a.iter().all(|k| !keys_b.contains(k)));

    // Listing B's keys by naming B.
    let r = app
        .gql(
            Some(&a),
            "query($t: ID!) { apiKeys(tenantId: $t) { id } }",
            json!({"t": b_id}),
        )
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    // Revoking B's key: as if it did not exist, and B's key still works.
    let r = app
        .gql(
            Some(&a),
            "mutation($id: ID!) { revokeApiKey(id: $id) { key { id } } }",
            json!({"id": keys_b[0]}),
        )
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = app
        .gql(Some(&b), "{ viewer { tenant { id } } }", json!({}))
        .await;
    assert_eq!(r["data"]["viewer"]["tenant"]["id"], b_id.as_str(), "{r}");
    // Minting a key inside B.
    let r = app
        .gql(
            Some(&a),
            "mutation($t: ID!) { createApiKey(role: TENANT_MEMBER, tenantId: $t) { apiKey } }",
            json!({"t": b_id}),
        )
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    assert_eq!(key_ids(&app, &b).await, keys_b, "B's keys are unchanged");
    // A's own viewer shows A only.
    let r = app
        .gql(Some(&a), "{ viewer { tenant { id name } } }", json!({}))
        .await;
    assert_eq!(r["data"]["viewer"]["tenant"]["id"], a_id.as_str());
    assert_eq!(r["data"]["viewer"]["tenant"]["name"], "tenant-a");
}

async fn an_operator_sees_a_tenants_keys_only_when_it_names_the_tenant(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (a_id, a) = app.create_tenant("tenant-a").await;
    let operator_keys = key_ids(&app, &app.operator_key).await;
    let keys_a = key_ids(&app, &a).await;
    assert!(operator_keys.iter().all(|k| !keys_a.contains(k)));
    let r = app
        .gql(
            Some(&app.operator_key),
            "query($t: ID!) { apiKeys(tenantId: $t) { id } }",
            json!({"t": a_id}),
        )
        .await;
    let listed: Vec<&str> = r["data"]["apiKeys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| k["id"].as_str().expect("id"))
        .collect();
    assert_eq!(listed, keys_a);
}

on_both_databases!(
    a_tenant_never_sees_or_touches_another_tenants_keys,
    an_operator_sees_a_tenants_keys_only_when_it_names_the_tenant,
);

async fn naming_another_tenant_anywhere_finds_nothing(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, a) = app.create_tenant("tenant-a").await;
    let (b_id, _) = app.create_tenant("tenant-b").await;
    for (query, vars) in [
        (
            "query($t: ID!) { quotas(tenantId: $t) { id } }",
            json!({"t": b_id}),
        ),
        (
            "query($t: ID!) { usage(from: \"2026-01-01T00:00:00Z\", to: \"2026-02-01T00:00:00Z\", tenantId: $t) { rows { key } } }",
            json!({"t": b_id}),
        ),
        (
            "query($t: ID!) { auditLog(filter: {tenantId: $t}) { edges { node { id } } } }",
            json!({"t": b_id}),
        ),
        (
            "query($t: ID!) { apiKeys(tenantId: $t) { id } }",
            json!({"t": b_id}),
        ),
        (
            "query($t: ID!) { tenant(id: $t) { name } }",
            json!({"t": b_id}),
        ),
        (
            "query($t: ID) { portalUsers(tenantId: $t) { id } }",
            json!({"t": b_id}),
        ),
    ] {
        let r = app.gql(Some(&a), query, vars).await;
        assert_eq!(error_code(&r), Some("NOT_FOUND"), "{query}: {r}");
    }
    // A's own audit log holds none of B's entries.
    let r = app
        .gql(
            Some(&a),
            "{ auditLog(first: 100) { edges { node { tenantId } } } }",
            json!({}),
        )
        .await;
    let entries = r["data"]["auditLog"]["edges"].as_array().expect("edges");
    assert!(!entries.is_empty());
    assert!(
        entries
            .iter()
            .all(|e| e["node"]["tenantId"] != b_id.as_str()),
        "{r}"
    );
}

on_both_databases!(naming_another_tenant_anywhere_finds_nothing);
