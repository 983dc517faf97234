//! What an operator needs to run the fleet day to day, through the API on both
//! databases: rotating a node's agent token, finding a node by hostname with what runs on
//! it, quotas that show their use, suspensions that say why, the main node list
//! within the cost limit, the fleet's tree, and plan previews kept to operators.

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

const TOPOLOGY: &str = "{ fleetTopology { region rack nvlinkDomain gpuModels nodes
    nodesDraining nodesDown gpus gpusDegraded gpusFailed allocatedGpus } }";

/// Registers `host` with `gpus` GPUs in a region, rack and NVLink domain.
async fn register_in(app: &TestApp, host: &str, at: (&str, &str, &str), gpus: usize) -> Value {
    let (region, rack, domain) = at;
    let list: Vec<Value> = (0..gpus)
        .map(|i| json!({"uuid": format!("GPU-{host}-{i}"), "index": i}))
        .collect();
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($h: String!, $r: String!, $k: String!, $d: String!, $g: [GpuRegistrationInput!]!) {
               registerNode(input: {hostname: $h, region: $r, zone: \"a\", rack: $k,
                 nvlinkDomain: $d, gpuModel: \"H100\", gpus: $g}) { node { id } } }",
            json!({"h": host, "r": region, "k": rack, "d": domain, "g": list}),
        )
        .await;
    r["data"]["registerNode"]["node"]["id"].clone()
}

/// The console's tree: every NVLink domain with what is in it, counted the way an
/// operator would count the nodes registered, drained, failed and ordered here; and the
/// node list filtered to one domain.
async fn the_fleet_tree_counts_each_domain_and_lists_its_nodes(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let fleet = [
        ("a-0", ("eu-west", "r1", "hgx-a"), 4),
        ("a-1", ("eu-west", "r1", "hgx-a"), 4),
        ("b-0", ("eu-west", "r2", "hgx-b"), 8),
        ("c-0", ("us-east", "r1", "hgx-c"), 2),
    ];
    let mut ids = Vec::new();
    for (host, at, gpus) in fleet {
        ids.push(register_in(&app, host, at, gpus).await);
    }
    let drain = "mutation($n: ID!) { drainNode(id: $n) { state } }";
    let r = app
        .gql(Some(&app.operator_key), drain, json!({"n": ids[1]}))
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let fail = "mutation($u: String!) { setGpuHealth(uuid: $u, health: FAILED, reason: \"bad fan\") { uuid } }";
    for gpu in ["GPU-a-0-1", "GPU-b-0-7"] {
        let r = app
            .gql(Some(&app.operator_key), fail, json!({"u": gpu}))
            .await;
        assert!(r["errors"].is_null(), "{r}");
    }
    let sku = app.create_h100_sku().await;
    let (_, key) = app.create_tenant("acme").await;
    let r = app
        .gql(
            Some(&key),
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 3, topology: {level: NVLINK_DOMAIN}}) { order { allocations { node { hostname } gpus { uuid } } } } }",
            json!({"s": sku}),
        )
        .await;
    // One host per GPU held.
    let hosts: Vec<&str> = r["data"]["placeOrder"]["order"]["allocations"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .flat_map(|a| {
            let gpus = a["gpus"].as_array().map_or(0, Vec::len);
            std::iter::repeat_n(a["node"]["hostname"].as_str().expect("host"), gpus)
        })
        .collect();
    let r = app.gql(Some(&app.operator_key), TOPOLOGY, json!({})).await;
    let domains = r["data"]["fleetTopology"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"));
    // The expected tree, counted from what was done above.
    let in_domain = |d: &str| {
        fleet
            .iter()
            .filter(|(_, at, _)| at.2 == d)
            .collect::<Vec<_>>()
    };
    let mut want = Vec::new();
    for (region, rack, domain) in [
        ("eu-west", "r1", "hgx-a"),
        ("eu-west", "r2", "hgx-b"),
        ("us-east", "r1", "hgx-c"),
    ] {
        let nodes = in_domain(domain);
        let gpus: usize = nodes.iter().map(|(_, _, g)| g).sum();
        let failed = ["GPU-a-0-1", "GPU-b-0-7"]
            .iter()
            .filter(|g| {
                nodes
                    .iter()
                    .any(|(h, _, _)| g.starts_with(&format!("GPU-{h}-")))
            })
            .count();
        let draining = nodes.iter().filter(|(h, _, _)| *h == "a-1").count();
        let held = hosts
            .iter()
            .filter(|h| nodes.iter().any(|(n, _, _)| n == *h))
            .count();
        want.push(
            json!({"region": region, "rack": rack, "nvlinkDomain": domain,
            "gpuModels": ["H100"], "nodes": nodes.len(), "nodesDraining": draining,
            "nodesDown": 0, "gpus": gpus, "gpusDegraded": 0, "gpusFailed": failed,
            "allocatedGpus": held.to_string()}),
        );
    }
    assert_eq!(domains, &want, "{r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ nodes(nvlinkDomain: \"hgx-a\") { edges { node { hostname } } } }",
            json!({}),
        )
        .await;
    let mut listed: Vec<&str> = r["data"]["nodes"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|e| e["node"]["hostname"].as_str().expect("host"))
        .collect();
    listed.sort_unstable();
    assert_eq!(listed, ["a-0", "a-1"], "{r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ nodes(region: \"us-east\", rack: \"r2\") { edges { node { hostname } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["nodes"]["edges"],
        json!([]),
        "filters combine: {r}"
    );
}

/// The console's fleet views and plan previews are the operator's: every other role is
/// refused, and bad arguments are named.
async fn the_fleet_tree_node_history_and_plan_previews_are_for_operators(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let node = register_in(&app, "a-0", ("eu-west", "r1", "hgx-a"), 2).await;
    let sku = app.create_h100_sku().await;
    let (tenant, admin) = app.create_tenant("acme").await;
    let provider = app.create_rhein_provider().await;
    let plan = json!({"plan": "next", "currency": "USD", "effectiveFrom": "2027-01-01T00:00:00Z",
        "rates": [{"sku": sku, "metric": "ALLOCATED", "tiersMode": "PER_UNIT", "unitPrice": "1.99"}]});
    let preview = "query($i: PlanVersionInput!, $t: ID!) { previewPlanVersion(input: $i, tenantId: $t) { total } }";
    let history =
        "query($n: ID!, $d: Int) { gpuHistory(nodeId: $n, days: $d) { uuid events { code } } }";
    for key in [&admin, &provider] {
        for (query, vars) in [
            (TOPOLOGY, json!({})),
            (history, json!({"n": node, "d": 30})),
            (preview, json!({"i": plan, "t": tenant})),
        ] {
            let r = app.gql(Some(key), query, vars).await;
            assert_eq!(error_code(&r), Some("FORBIDDEN"), "{query}: {r}");
        }
    }
    let op = Some(app.operator_key.as_str());
    let r = app.gql(op, preview, json!({"i": plan, "t": tenant})).await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "no invoice yet: {r}");
    app.close_period(&tenant, "id").await;
    let r = app.gql(op, preview, json!({"i": plan, "t": tenant})).await;
    assert_eq!(
        r["data"]["previewPlanVersion"]["total"], "0.00",
        "nothing used: {r}"
    );
    let mut euro = plan.clone();
    euro["currency"] = json!("EUR");
    let r = app.gql(op, preview, json!({"i": euro, "t": tenant})).await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    let mut bad = plan.clone();
    bad["rates"][0]["unitPrice"] = json!("-1");
    let r = app.gql(op, preview, json!({"i": bad, "t": tenant})).await;
    assert_eq!(
        r["errors"][0]["extensions"]["field"], "rates[0].unitPrice",
        "{r}"
    );
    let r = app
        .gql(
            op,
            preview,
            json!({"i": plan, "t": uuid::Uuid::new_v4().to_string()}),
        )
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    for days in [0, 91] {
        let r = app.gql(op, history, json!({"n": node, "d": days})).await;
        assert_eq!(r["errors"][0]["extensions"]["field"], "days", "{r}");
    }
    let r = app.gql(op, history, json!({"n": node, "d": 90})).await;
    let gpus = r["data"]["gpuHistory"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(gpus.len(), 2, "{r}");
}

on_both_databases!(
    the_fleet_tree_counts_each_domain_and_lists_its_nodes,
    the_fleet_tree_node_history_and_plan_previews_are_for_operators,
    rotating_an_agent_token_revokes_the_old_one_at_once,
    a_node_is_found_by_hostname_with_what_runs_on_it,
    a_node_list_shows_each_node_its_own_tokens_and_allocations,
    quotas_show_what_is_in_use,
    a_suspended_tenant_is_told_why,
    a_full_page_of_nodes_with_their_gpus_fits_the_cost_limit,
);
