//! Data residency through the API, on both databases: only operators set a tenant's home
//! region and allowed regions (checked, audited); the tenant reads them; an order for a
//! SKU or a volume outside them is refused and leaves nothing behind, one inside goes
//! through; allowing any region again lifts the limit.

mod support;

use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

const SET: &str = "mutation($t: ID!, $h: String, $a: [String!]) { setDataResidency(tenantId: $t, homeRegion: $h, allowedRegions: $a) { homeRegion allowedRegions } }";

async fn set(app: &TestApp, key: &str, tenant: &str, home: Value, allowed: Value) -> Value {
    app.gql(
        Some(key),
        SET,
        json!({"t": tenant, "h": home, "a": allowed}),
    )
    .await
}

/// A whole-GPU SKU in `region`; its id.
async fn sku_in(app: &TestApp, name: &str, region: &str) -> String {
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($n: String!, $r: String!) { createSku(input: {name: $n, gpuModel: \"H100\", form: WHOLE_GPU, region: $r, listPricePerHour: \"2.49\", currency: \"USD\"}) { sku { id } } }",
            json!({"n": name, "r": region}),
        )
        .await;
    r["data"]["createSku"]["sku"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("createSku failed: {r}"))
        .to_owned()
}

async fn orders_outside_the_allowed_regions_are_refused(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (tenant, key) = app.create_tenant("acme").await;
    let op = app.operator_key.clone();

    let r = set(&app, &key, &tenant, json!("eu-west"), json!(["eu-west"])).await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    for (home, allowed, field) in [
        (json!("EU West"), json!(["eu-west"]), "homeRegion"),
        (json!("eu-west"), json!([]), "allowedRegions"),
        (json!("eu-west"), json!(["us-east"]), "homeRegion"),
        (json!(null), json!(["eu_west"]), "allowedRegions"),
    ] {
        let r = set(&app, &op, &tenant, home, allowed).await;
        assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
        assert!(r.to_string().contains(field), "{field}: {r}");
    }
    let r = set(
        &app,
        &op,
        &tenant,
        json!("eu-west"),
        json!(["eu-west", "eu-central", "eu-west"]),
    )
    .await;
    assert_eq!(
        r["data"]["setDataResidency"],
        json!({"homeRegion": "eu-west", "allowedRegions": ["eu-central", "eu-west"]}),
        "{r}"
    );
    let r = app
        .gql(
            Some(&key),
            "{ viewer { tenant { homeRegion allowedRegions } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["viewer"]["tenant"]["homeRegion"], "eu-west",
        "{r}"
    );

    // Outside: refused, nothing ordered.
    let us = sku_in(&app, "h100-us", "us-east").await;
    let place = "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { id } } }";
    let r = app.gql(Some(&key), place, json!({"s": us})).await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    assert!(r.to_string().contains("us-east"), "{r}");
    let r = app
        .gql(
            Some(&key),
            "{ orders { edges { node { id } } } }",
            json!({}),
        )
        .await;
    assert_eq!(r["data"]["orders"]["edges"], json!([]), "{r}");
    let r = app
        .gql(
            Some(&key),
            "mutation { createVolume(input: {name: \"data\", sizeGb: 10, storageClass: BLOCK, region: \"us-east\"}) { volume { id } } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    assert!(r.to_string().contains("region"), "{r}");

    // Inside: placed (the helper asserts the order).
    app.run_gpu_at_ten_a_second("acme", &key).await;

    // Any region again: the US order goes through to placement (no node there: it waits
    // or is refused for capacity, not for residency).
    let r = set(&app, &op, &tenant, json!("eu-west"), Value::Null).await;
    assert_eq!(
        r["data"]["setDataResidency"]["allowedRegions"],
        Value::Null,
        "{r}"
    );
    let r = app.gql(Some(&key), place, json!({"s": us})).await;
    assert!(!r.to_string().contains("outside the regions"), "{r}");

    let r = app
        .gql(
            Some(&op),
            "query($t: ID) { auditLog(filter: {action: \"tenant.data_residency\", tenantId: $t}) { edges { node { after } } } }",
            json!({"t": tenant}),
        )
        .await;
    assert_eq!(
        r["data"]["auditLog"]["edges"].as_array().map(Vec::len),
        Some(2),
        "{r}"
    );
}

on_both_databases!(orders_outside_the_allowed_regions_are_refused,);
