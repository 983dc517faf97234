//! Authentication and roles, through the real HTTP API on both databases.

mod support;

use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::json;
use support::{Backend, TestApp, error_code};

async fn no_key_or_a_wrong_key_is_unauthenticated(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let r = app.gql(None, "{ viewer { role } }", json!({})).await;
    assert_eq!(error_code(&r), Some("UNAUTHENTICATED"), "{r}");

    let (status, r) = app
        .gql_status(
            Some("nck_not_a_real_key_000000000000"),
            "{ viewer { role } }",
            json!({}),
        )
        .await;
    assert_eq!(status, 401);
    assert_eq!(error_code(&r), Some("UNAUTHENTICATED"), "{r}");

    // Well-formed, but unknown.
    let forged = "nck_000000000000_000000000000000000000000000000000000000000000000";
    let r = app
        .gql(Some(forged), "{ viewer { role } }", json!({}))
        .await;
    assert_eq!(error_code(&r), Some("UNAUTHENTICATED"), "{r}");

    let r = app
        .gql(
            Some(&app.operator_key),
            "{ viewer { role tenant { id } } }",
            json!({}),
        )
        .await;
    assert_eq!(r["data"]["viewer"]["role"], "OPERATOR", "{r}");
    assert!(r["data"]["viewer"]["tenant"].is_null());
}

async fn a_revoked_key_stops_working_at_once(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, admin) = app.create_tenant("acme").await;
    let r = app
        .gql(
            Some(&admin),
            "mutation { createApiKey(role: TENANT_MEMBER, label: \"ci\") { apiKey key { id role } } }",
            json!({}),
        )
        .await;
    let member = r["data"]["createApiKey"]["apiKey"]
        .as_str()
        .expect("key")
        .to_owned();
    let id = r["data"]["createApiKey"]["key"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let r = app
        .gql(Some(&member), "{ viewer { role } }", json!({}))
        .await;
    assert_eq!(r["data"]["viewer"]["role"], "TENANT_MEMBER", "{r}");

    let r = app
        .gql(
            Some(&admin),
            "mutation($id: ID!) { revokeApiKey(id: $id) { key { revokedAt } } }",
            json!({"id": id}),
        )
        .await;
    assert!(
        r["data"]["revokeApiKey"]["key"]["revokedAt"].is_string(),
        "{r}"
    );
    let r = app
        .gql(Some(&member), "{ viewer { role } }", json!({}))
        .await;
    assert_eq!(error_code(&r), Some("UNAUTHENTICATED"), "{r}");
}

async fn tenant_keys_cannot_use_operator_operations(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, admin) = app.create_tenant("acme").await;
    for op in [
        "mutation { createTenant(input: {name: \"evil\", currency: \"USD\"}) { apiKey } }",
        "{ tenants(first: 10) { edges { node { id } } } }",
        "{ nodes(first: 10) { edges { node { id } } } }",
        "mutation { registerNode(input: {hostname: \"x\", region: \"r\", zone: \"z\", rack: \"k\", nvlinkDomain: \"d\", gpuModel: \"H100\", gpus: [{uuid: \"GPU-1\", index: 0}]}) { agentToken } }",
        "mutation { createSku(input: {name: \"x\", gpuModel: \"H100\", form: WHOLE_GPU, region: \"r\", listPricePerHour: \"0\", currency: \"USD\"}) { sku { id } } }",
        "mutation { createApiKey(role: OPERATOR) { apiKey } }",
    ] {
        let r = app.gql(Some(&admin), op, json!({})).await;
        assert_eq!(error_code(&r), Some("FORBIDDEN"), "{op}: {r}");
    }
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ tenants(first: 10) { edges { node { name } } } }",
            json!({}),
        )
        .await;
    let names: Vec<&str> = r["data"]["tenants"]["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| e["node"]["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        ["acme"],
        "the forbidden createTenant created nothing"
    );
}

async fn a_member_cannot_mint_an_admin_key(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, admin) = app.create_tenant("acme").await;
    let r = app
        .gql(
            Some(&admin),
            "mutation { createApiKey(role: TENANT_MEMBER) { apiKey } }",
            json!({}),
        )
        .await;
    let member = r["data"]["createApiKey"]["apiKey"]
        .as_str()
        .expect("key")
        .to_owned();
    let r = app
        .gql(
            Some(&member),
            "mutation { createApiKey(role: TENANT_ADMIN) { apiKey } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    let r = app
        .gql(
            Some(&admin),
            "mutation { createApiKey(role: AGENT) { apiKey } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
}

async fn an_agent_token_can_only_identify_itself(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let r = app.register_node("hgx-1", "H100", 8, "").await;
    let token = support::agent_token(&r);
    assert!(token.starts_with("nca_"));
    let r = app
        .gql(Some(&token), "{ viewer { role } }", json!({}))
        .await;
    assert_eq!(r["data"]["viewer"]["role"], "AGENT", "{r}");
    for op in [
        "{ catalog { skus { id } } }",
        "{ apiKeys { id } }",
        "{ tenants { edges { node { id } } } }",
    ] {
        let r = app.gql(Some(&token), op, json!({})).await;
        assert_eq!(error_code(&r), Some("FORBIDDEN"), "{op}: {r}");
    }
}

/// A key for a tenant that does not exist is refused as NOT_FOUND, and nothing is minted.
async fn a_key_for_a_tenant_that_does_not_exist_is_refused(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let keys = || async {
        let r = app
            .gql(Some(&app.operator_key), "{ apiKeys { id } }", json!({}))
            .await;
        r["data"]["apiKeys"].as_array().map(Vec::len)
    };
    let before = keys().await;
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($t: ID!) { createApiKey(role: TENANT_MEMBER, tenantId: $t) { apiKey } }",
            json!({"t": uuid::Uuid::now_v7().to_string()}),
        )
        .await;
    assert_eq!(support::error_code(&r), Some("NOT_FOUND"), "{r}");
    assert_eq!(keys().await, before, "nothing minted");
}

on_both_databases!(
    no_key_or_a_wrong_key_is_unauthenticated,
    a_key_for_a_tenant_that_does_not_exist_is_refused,
    a_revoked_key_stops_working_at_once,
    tenant_keys_cannot_use_operator_operations,
    a_member_cannot_mint_an_admin_key,
    an_agent_token_can_only_identify_itself,
);

async fn an_agent_token_reads_its_own_nodes_inventory_only(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let r = app.register_node("hgx-1", "H100", 8, "").await;
    let token = support::agent_token(&r);
    app.register_node("hgx-2", "H100", 4, "").await;
    let get = |key: Option<String>| {
        let mut req = app.client.get(format!("{}/v1/agents/inventory", app.url));
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        req.send()
    };
    let res = get(Some(token)).await.expect("get");
    assert_eq!(res.status(), 200);
    let inventory: neocloud_schema::agent_api::Inventory = res.json().await.expect("inventory");
    assert_eq!(inventory.hostname, "hgx-1");
    assert_eq!(inventory.gpus.len(), 8);
    assert!(
        inventory
            .gpus
            .iter()
            .all(|g| g.uuid.starts_with("GPU-hgx-1-"))
    );

    let res = get(None).await.expect("get");
    assert_eq!(res.status(), 401);
    let body: serde_json::Value = res.json().await.expect("json");
    assert_eq!(body["error"]["code"], "UNAUTHENTICATED");
    let res = get(Some(app.operator_key.clone())).await.expect("get");
    assert_eq!(res.status(), 403);
}

on_both_databases!(an_agent_token_reads_its_own_nodes_inventory_only);

/// An agent token's verification is remembered for a few seconds (the ingest path asks
/// once per batch); revoking it still takes effect at once here, and a wrong secret is
/// never taken for a remembered one.
async fn a_revoked_agent_token_stops_working_at_once(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let r = app.register_node("hgx-1", "H100", 8, "").await;
    let token = support::agent_token(&r);
    let inventory = |key: String| {
        app.client
            .get(format!("{}/v1/agents/inventory", app.url))
            .bearer_auth(key)
            .send()
    };
    assert_eq!(inventory(token.clone()).await.expect("get").status(), 200);
    let mut forged = token.clone();
    let last = if forged.ends_with('a') { "b" } else { "a" };
    forged.replace_range(forged.len() - 1.., last);
    assert_eq!(inventory(forged).await.expect("get").status(), 401);

    let key = neocloud_schema::entity::api_key::Entity::find()
        .filter(neocloud_schema::entity::api_key::Column::NodeId.is_not_null())
        .one(&app.db)
        .await
        .expect("query")
        .expect("the agent's key");
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($id: ID!) { revokeApiKey(id: $id) { key { revokedAt } } }",
            json!({"id": key.id.to_string()}),
        )
        .await;
    assert!(
        r["data"]["revokeApiKey"]["key"]["revokedAt"].is_string(),
        "{r}"
    );
    assert_eq!(inventory(token).await.expect("get").status(), 401);
}

on_both_databases!(a_revoked_agent_token_stops_working_at_once);
