//! Operator operations: tenants, nodes, the catalog, pagination, and the audit log.

mod support;

use neocloud_schema::entity::{audit_log, gpu, node, tenant};
use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::json;
use support::{Backend, TestApp, error_code};

async fn creating_a_tenant_returns_a_working_admin_key_and_is_audited(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (id, key) = app.create_tenant("acme").await;
    let r = app
        .gql(
            Some(&key),
            "{ viewer { role tenant { id name } } }",
            json!({}),
        )
        .await;
    assert_eq!(r["data"]["viewer"]["role"], "TENANT_ADMIN");
    assert_eq!(r["data"]["viewer"]["tenant"]["id"], id.as_str());
    let audited = audit_log::Entity::find().all(&app.db).await.expect("audit");
    let entry = audited
        .iter()
        .find(|e| e.action == "tenant.create")
        .expect("tenant.create is audited");
    assert_eq!(entry.object_id, id);
    assert_eq!(entry.actor_role, "operator");
    assert!(entry.actor_key_id.is_some());
}

async fn a_rejected_tenant_changes_nothing(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    app.create_tenant("acme").await;
    let create = "mutation($n: String!, $c: String!) { createTenant(input: {name: $n, currency: $c}) { apiKey } }";
    let r = app
        .gql(
            Some(&app.operator_key),
            create,
            json!({"n": "acme", "c": "USD"}),
        )
        .await;
    assert_eq!(error_code(&r), Some("ALREADY_EXISTS"), "{r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            create,
            json!({"n": "globex", "c": "DOGE"}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    assert_eq!(r["errors"][0]["extensions"]["field"], "currency");
    let r = app
        .gql(
            Some(&app.operator_key),
            create,
            json!({"n": "   ", "c": "USD"}),
        )
        .await;
    assert_eq!(r["errors"][0]["extensions"]["field"], "name", "{r}");
    assert_eq!(
        tenant::Entity::find().count(&app.db).await.expect("count"),
        1
    );
}

async fn tenants_page_forward_with_cursors(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    for i in 0..5 {
        app.create_tenant(&format!("tenant-{i}")).await;
    }
    let query = "query($after: String) { tenants(first: 2, after: $after) {
        edges { cursor node { name } } pageInfo { hasNextPage endCursor } } }";
    let mut after = serde_json::Value::Null;
    let mut names = Vec::new();
    loop {
        let r = app
            .gql(Some(&app.operator_key), query, json!({"after": after}))
            .await;
        let conn = &r["data"]["tenants"];
        for edge in conn["edges"].as_array().expect("edges") {
            names.push(edge["node"]["name"].as_str().expect("name").to_owned());
        }
        if !conn["pageInfo"]["hasNextPage"].as_bool().expect("bool") {
            break;
        }
        after = conn["pageInfo"]["endCursor"].clone();
    }
    assert_eq!(
        names,
        (0..5).map(|i| format!("tenant-{i}")).collect::<Vec<_>>()
    );
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ tenants(first: 1000) { edges { cursor } } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    assert_eq!(r["errors"][0]["extensions"]["field"], "first");

    // Found by a part of the name, in any case; `%` and `_` are themselves, not patterns.
    let search = "query($q: String) { tenants(first: 10, nameContains: $q) { nodes { name } } }";
    for (q, expected) in [
        ("ANT-3", vec!["tenant-3"]),
        (
            " tenant ",
            vec!["tenant-0", "tenant-1", "tenant-2", "tenant-3", "tenant-4"],
        ),
        ("_", vec![]),
        ("%", vec![]),
    ] {
        let r = app
            .gql(Some(&app.operator_key), search, json!({"q": q}))
            .await;
        let found: Vec<&str> = r["data"]["tenants"]["nodes"]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"))
            .iter()
            .map(|t| t["name"].as_str().expect("name"))
            .collect();
        assert_eq!(found, expected, "{q:?}");
    }
    let r = app
        .gql(
            Some(&app.operator_key),
            search,
            json!({"q": "x".repeat(101)}),
        )
        .await;
    assert_eq!(r["errors"][0]["extensions"]["field"], "nameContains", "{r}");
}

async fn a_registered_node_is_listed_with_its_gpus_and_agent_token(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let r = app.register_node("hgx-001", "H100", 8, "").await;
    let payload = &r["data"]["registerNode"];
    assert_eq!(
        payload["node"]["gpus"].as_array().expect("gpus").len(),
        8,
        "{r}"
    );
    assert_eq!(payload["node"]["gpus"][0]["health"], "OK");
    let token = payload["agentToken"].as_str().expect("token");
    let r = app.gql(Some(token), "{ viewer { role } }", json!({})).await;
    assert_eq!(r["data"]["viewer"]["role"], "AGENT");
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ nodes(first: 10) { edges { node { hostname rack nvlinkDomain gpuModel state gpus { index } } } } }",
            json!({}),
        )
        .await;
    let node = &r["data"]["nodes"]["edges"][0]["node"];
    assert_eq!(node["hostname"], "hgx-001", "{r}");
    assert_eq!(node["state"], "ACTIVE");
    assert_eq!(node["gpus"].as_array().expect("gpus").len(), 8);
}

async fn a_rejected_node_registers_nothing(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    app.register_node("hgx-001", "H100", 8, "").await;
    let before_nodes = node::Entity::find().count(&app.db).await.expect("count");
    let before_gpus = gpu::Entity::find().count(&app.db).await.expect("count");

    let r = app.register_node("hgx-001", "H100", 8, "").await;
    assert_eq!(error_code(&r), Some("ALREADY_EXISTS"), "{r}");
    let r = app
        .register_node("l40s-1", "L40S", 4, ", migEnabled: true")
        .await;
    assert_eq!(r["errors"][0]["extensions"]["field"], "migEnabled", "{r}");
    let r = app.register_node("hgx-002", "V100", 8, "").await;
    assert_eq!(r["errors"][0]["extensions"]["field"], "gpuModel", "{r}");
    // A GPU already registered on another node.
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation { registerNode(input: {hostname: \"hgx-003\", region: \"eu-west\", zone: \"a\", rack: \"r09\", nvlinkDomain: \"hgx-003\", gpuModel: \"H100\", gpus: [{uuid: \"GPU-hgx-001-0\", index: 0}]}) { agentToken } }",
            json!({}),
        )
        .await;
    assert_eq!(r["errors"][0]["extensions"]["field"], "gpus[0].uuid", "{r}");
    // An NVLink domain never spans racks.
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation { registerNode(input: {hostname: \"hgx-004\", region: \"eu-west\", zone: \"a\", rack: \"r09\", nvlinkDomain: \"hgx-001\", gpuModel: \"H100\", gpus: [{uuid: \"GPU-new\", index: 0}]}) { agentToken } }",
            json!({}),
        )
        .await;
    assert_eq!(r["errors"][0]["extensions"]["field"], "nvlinkDomain", "{r}");

    assert_eq!(
        node::Entity::find().count(&app.db).await.expect("count"),
        before_nodes
    );
    assert_eq!(
        gpu::Entity::find().count(&app.db).await.expect("count"),
        before_gpus
    );
}

async fn the_catalog_counts_what_could_be_ordered(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    app.register_node("hgx-001", "H100", 8, "").await;
    app.register_node("mig-001", "H100", 2, ", migEnabled: true")
        .await;
    app.register_node("l40s-001", "L40S", 4, ", sharedGpus: true")
        .await;
    let create = "mutation($i: CreateSkuInput!) { createSku(input: $i) { sku { id name } } }";
    for input in [
        json!({"name": "h100", "gpuModel": "H100", "form": "WHOLE_GPU", "region": "eu-west", "listPricePerHour": "2.49", "currency": "USD"}),
        json!({"name": "h100-node", "gpuModel": "H100", "form": "WHOLE_NODE", "region": "eu-west", "listPricePerHour": "19.92", "currency": "USD"}),
        json!({"name": "h100-3g", "gpuModel": "H100", "form": "MIG", "migProfile": "3g.40gb", "region": "eu-west", "listPricePerHour": "1.07", "currency": "USD"}),
        json!({"name": "h100-1g", "gpuModel": "H100", "form": "MIG", "migProfile": "1g.10gb", "region": "eu-west", "listPricePerHour": "0.36", "currency": "USD"}),
        json!({"name": "l40s-250m", "gpuModel": "L40S", "form": "FRACTIONAL", "milliGpu": 250, "region": "eu-west", "listPricePerHour": "0.25", "currency": "USD"}),
    ] {
        let r = app
            .gql(Some(&app.operator_key), create, json!({"i": input}))
            .await;
        assert!(r["data"]["createSku"]["sku"]["id"].is_string(), "{r}");
    }
    let r = app
        .gql(
            Some(&app.operator_key),
            create,
            json!({"i": {"name": "bad", "gpuModel": "H100", "form": "MIG", "migProfile": "3g.71gb", "region": "eu-west", "listPricePerHour": "1", "currency": "USD"}}),
        )
        .await;
    assert_eq!(r["errors"][0]["extensions"]["field"], "migProfile", "{r}");

    let (_, tenant) = app.create_tenant("acme").await;
    let r = app
        .gql(
            Some(&tenant),
            "{ catalog { skus { name form migProfile milliGpu available listPricePerHour } } }",
            json!({}),
        )
        .await;
    let skus = r["data"]["catalog"]["skus"].as_array().expect("skus");
    let available = |name: &str| {
        skus.iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name} listed"))["available"]
            .as_u64()
            .expect("count")
    };
    assert_eq!(available("h100"), 8);
    // Bare metal takes any idle node of the model, the MIG-mode one included (the tenant
    // gets the whole machine; Hopper toggles MIG without a reset).
    assert_eq!(available("h100-node"), 2);
    assert_eq!(available("h100-3g"), 2 * 2);
    assert_eq!(available("h100-1g"), 2 * 7);
    assert_eq!(available("l40s-250m"), 4 * 4);
    assert_eq!(skus.len(), 5, "the rejected SKU was not created");
}

on_both_databases!(
    creating_a_tenant_returns_a_working_admin_key_and_is_audited,
    a_rejected_tenant_changes_nothing,
    tenants_page_forward_with_cursors,
    a_registered_node_is_listed_with_its_gpus_and_agent_token,
    a_rejected_node_registers_nothing,
    the_catalog_counts_what_could_be_ordered,
);
