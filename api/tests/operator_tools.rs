//! What an operator needs to run the fleet day to day, through the API on both
//! databases: rotating a node's agent token, finding a node by hostname with what runs on
//! it, quotas that show their use, suspensions that say why, and the main node list
//! within the cost limit.

mod support;

use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

async fn inventory_status(app: &TestApp, token: &str) -> u16 {
    app.client
        .get(format!("{}/v1/agents/inventory", app.url))
        .bearer_auth(token)
        .send()
        .await
        .expect("get")
        .status()
        .as_u16()
}

const ROTATE: &str =
    "mutation($n: ID!) { rotateAgentToken(nodeId: $n) { agentToken node { hostname } } }";
const TOKENS: &str = "query($h: String!) { node(hostname: $h) { id
    agentTokens { id prefix createdAt lastUsedAt revokedAt } } }";

async fn rotating_an_agent_token_revokes_the_old_one_at_once(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let r = app.register_node("hgx-0", "H100", 8, "").await;
    let old = support::agent_token(&r);
    let node = r["data"]["registerNode"]["node"]["id"].clone();
    assert_eq!(inventory_status(&app, &old).await, 200);

    let (_, tenant_key) = app.create_tenant("acme").await;
    let r = app.gql(Some(&tenant_key), ROTATE, json!({"n": node})).await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    assert_eq!(
        inventory_status(&app, &old).await,
        200,
        "a refused rotation changes nothing"
    );

    let r = app
        .gql(Some(&app.operator_key), ROTATE, json!({"n": node}))
        .await;
    let new = r["data"]["rotateAgentToken"]["agentToken"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    assert_eq!(inventory_status(&app, &old).await, 401);
    assert_eq!(inventory_status(&app, &new).await, 200);

    let r = app
        .gql(Some(&app.operator_key), TOKENS, json!({"h": "hgx-0"}))
        .await;
    let tokens = r["data"]["node"]["agentTokens"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(tokens.len(), 2, "{r}");
    assert!(!tokens[0]["revokedAt"].is_null(), "{r}");
    assert!(
        !tokens[0]["lastUsedAt"].is_null(),
        "the old token was used: {r}"
    );
    assert!(tokens[1]["revokedAt"].is_null(), "{r}");
    assert!(
        new.contains(tokens[1]["prefix"].as_str().expect("prefix")),
        "the listed prefix is the new token's: {r}"
    );
    let r = app
        .gql(Some(&tenant_key), TOKENS, json!({"h": "hgx-0"}))
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ auditLog(first: 50, filter: {action: \"agent_token.rotate\"}) { edges { node { objectId } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["auditLog"]["edges"][0]["node"]["objectId"], node,
        "{r}"
    );
}

async fn a_node_is_found_by_hostname_with_what_runs_on_it(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    app.register_node("hgx-0", "H100", 8, "").await;
    let sku = app.create_h100_sku().await;
    let (_, key) = app.create_tenant("acme").await;
    let r = app
        .gql(
            Some(&key),
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 2}) { order { allocations { id } } } }",
            json!({"s": sku}),
        )
        .await;
    let allocation = r["data"]["placeOrder"]["order"]["allocations"][0]["id"].clone();
    let query = "query($h: String!) { node(hostname: $h) { hostname allocations { id status } } }";
    let r = app
        .gql(Some(&app.operator_key), query, json!({"h": "hgx-0"}))
        .await;
    let live = r["data"]["node"]["allocations"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"));
    assert!(live.iter().any(|a| a["id"] == allocation), "{r}");
    let r = app
        .gql(Some(&app.operator_key), query, json!({"h": "nope"}))
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = app.gql(Some(&key), query, json!({"h": "hgx-0"})).await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
}

/// A list of nodes reads their tokens and allocations in batches; each node still shows
/// only its own.
async fn a_node_list_shows_each_node_its_own_tokens_and_allocations(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    for host in ["hgx-0", "hgx-1", "hgx-2"] {
        app.register_node(host, "H100", 8, "").await;
    }
    let sku = app.create_h100_sku().await;
    let (_, key) = app.create_tenant("acme").await;
    let mut placed: Vec<(String, String)> = Vec::new();
    // Six GPUs each: every order takes a node of its own.
    for _ in 0..2 {
        let r = app
            .gql(
                Some(&key),
                "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 6}) { order { allocations { id node { hostname } } } } }",
                json!({"s": sku}),
            )
            .await;
        for a in r["data"]["placeOrder"]["order"]["allocations"]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"))
        {
            placed.push((
                a["node"]["hostname"].as_str().expect("host").to_owned(),
                a["id"].as_str().expect("id").to_owned(),
            ));
        }
    }
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ nodes(first: 10) { nodes { hostname agentTokens { prefix } allocations { id node { hostname } } } } }",
            json!({}),
        )
        .await;
    let nodes = r["data"]["nodes"]["nodes"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(nodes.len(), 3, "{r}");
    for node in nodes {
        let host = node["hostname"].as_str().expect("host");
        assert_eq!(node["agentTokens"].as_array().map(Vec::len), Some(1), "{r}");
        let mut shown: Vec<&str> = node["allocations"]
            .as_array()
            .expect("allocations")
            .iter()
            .map(|a| {
                assert_eq!(a["node"]["hostname"], host, "{r}");
                a["id"].as_str().expect("id")
            })
            .collect();
        let mut expected: Vec<&str> = placed
            .iter()
            .filter(|(h, _)| h == host)
            .map(|(_, id)| id.as_str())
            .collect();
        shown.sort_unstable();
        expected.sort_unstable();
        assert_eq!(shown, expected, "{host}: {r}");
    }
    let prefixes: std::collections::BTreeSet<&str> = nodes
        .iter()
        .filter_map(|n| n["agentTokens"][0]["prefix"].as_str())
        .collect();
    assert_eq!(prefixes.len(), 3, "three nodes, three tokens: {r}");
}

async fn quotas_show_what_is_in_use(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    app.register_node("hgx-0", "H100", 8, "").await;
    let sku = app.create_h100_sku().await;
    let (tenant, key) = app.create_tenant("acme").await;
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($t: ID!) { setQuota(input: {tenantId: $t, scope: GPU_MODEL, value: \"H100\", max: 4}) { quota { max used } } }",
            json!({"t": tenant}),
        )
        .await;
    assert_eq!(r["data"]["setQuota"]["quota"]["used"], "0", "{r}");
    app.gql(
        Some(&key),
        "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 3}) { order { id } } }",
        json!({"s": sku}),
    )
    .await;
    let r = app
        .gql(Some(&key), "{ quotas { scope max used unit } }", json!({}))
        .await;
    assert_eq!(r["data"]["quotas"][0]["used"], "3", "{r}");
    assert_eq!(r["data"]["quotas"][0]["max"], 4, "{r}");
}

async fn a_suspended_tenant_is_told_why(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    app.register_node("hgx-0", "H100", 8, "").await;
    let sku = app.create_h100_sku().await;
    let (tenant, key) = app.create_tenant("acme").await;
    let r = app
        .gql(
            Some(&key),
            "{ viewer { tenant { suspensionReason } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["viewer"]["tenant"]["suspensionReason"],
        Value::Null,
        "{r}"
    );
    app.gql(
        Some(&app.operator_key),
        "mutation($t: ID!) { suspendTenant(id: $t, reason: \"identity check pending\") { status } }",
        json!({"t": tenant}),
    )
    .await;
    let r = app
        .gql(
            Some(&key),
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { id } } }",
            json!({"s": sku}),
        )
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    let message = r["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("identity check pending"), "{r}");
    let r = app
        .gql(
            Some(&key),
            "{ viewer { tenant { suspensionReason } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["viewer"]["tenant"]["suspensionReason"], "identity check pending",
        "{r}"
    );
}

/// The operator's main list — a full page of nodes with every field and their GPUs —
/// fits the cost limit (a refusal's message: `api/tests/http.rs`).
async fn a_full_page_of_nodes_with_their_gpus_fits_the_cost_limit(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    app.register_node("hgx-0", "H100", 8, "").await;
    let page = "{ nodes(first: 100) { edges { cursor node { id hostname region zone rack
        nvlinkDomain gpuModel migEnabled sharedGpus cpuMilli memoryMib state createdAt
        gpus { id uuid index model memoryMib health } } } pageInfo { hasNextPage endCursor } } }";
    let r = app.gql(Some(&app.operator_key), page, json!({})).await;
    assert!(r["errors"].is_null(), "{r}");
}

on_both_databases!(
    rotating_an_agent_token_revokes_the_old_one_at_once,
    a_node_is_found_by_hostname_with_what_runs_on_it,
    a_node_list_shows_each_node_its_own_tokens_and_allocations,
    quotas_show_what_is_in_use,
    a_suspended_tenant_is_told_why,
    a_full_page_of_nodes_with_their_gpus_fits_the_cost_limit,
);
