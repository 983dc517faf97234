//! What a unit costs, as the catalog shows it, `placeOrder` quotes and checks it, and the
//! order reports it: one and the same price per unit-hour of the SKU, from the tenant's
//! plan (its spot price for spot orders) or the list price.

mod support;

use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

const PLACE: &str =
    "mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { id pricePerHour } } }";

/// A tenant on a plan pricing `h100` at 2.10 on demand and 0.996 on spot, with an 8-GPU
/// node and a whole-node SKU at list price. Returns (tenant key, h100 id, node SKU id).
async fn setup(app: &TestApp) -> (String, String, String) {
    app.register_node("hgx-0", "H100", 8, "").await;
    let sku = app.create_h100_sku().await;
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation { createSku(input: {name: \"h100-node\", gpuModel: \"H100\", form: WHOLE_NODE, region: \"eu-west\", listPricePerHour: \"19.92\", currency: \"USD\"}) { sku { id unit } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["createSku"]["sku"]["unit"], "node of 8 × H100",
        "{r}"
    );
    let node_sku = r["data"]["createSku"]["sku"]["id"]
        .as_str()
        .expect("SKU")
        .to_owned();
    let version = app
        .create_plan_version(json!({"plan": "spot-friendly", "currency": "USD",
            "effectiveFrom": "2026-01-01T00:00:00Z",
            "rates": [{"sku": sku, "metric": "ALLOCATED", "tiersMode": "PER_UNIT",
                "unitPrice": "2.10", "spotUnitPrice": "0.996"}]}))
        .await;
    let (tenant, key) = app.create_tenant("acme").await;
    app.assign_plan(&tenant, &version).await;
    (key, sku, node_sku)
}

fn sku_named<'a>(catalog: &'a Value, name: &str) -> &'a Value {
    catalog["data"]["catalog"]["skus"]
        .as_array()
        .and_then(|skus| skus.iter().find(|s| s["name"] == name))
        .unwrap_or_else(|| panic!("{name} in {catalog}"))
}

async fn the_catalog_shows_each_callers_price_per_unit_hour(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (key, _, _) = setup(&app).await;
    let query = "{ catalog { skus { name unit listPricePerHour pricePerHour spotPricePerHour priceSource } } }";
    let tenant_view = app.gql(Some(&key), query, json!({})).await;
    let h100 = sku_named(&tenant_view, "h100");
    assert_eq!(
        (
            &h100["unit"],
            &h100["pricePerHour"],
            &h100["spotPricePerHour"]
        ),
        (&json!("GPU"), &json!("2.1"), &json!("0.996")),
        "{tenant_view}"
    );
    assert_eq!(h100["priceSource"], "spot-friendly v1");
    let node = sku_named(&tenant_view, "h100-node");
    assert_eq!(
        (&node["unit"], &node["pricePerHour"], &node["priceSource"]),
        (
            &json!("node of 8 × H100"),
            &json!("19.92"),
            &json!("list price")
        ),
        "a SKU without a rate is priced per node-hour at its list price: {tenant_view}"
    );
    let operator_view = app.gql(Some(&app.operator_key), query, json!({})).await;
    assert_eq!(
        sku_named(&operator_view, "h100")["pricePerHour"],
        "2.49",
        "operators see list prices: {operator_view}"
    );
}

async fn a_spot_order_is_checked_and_quoted_at_its_spot_price(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (key, sku, node_sku) = setup(&app).await;
    let r = app
        .gql(
            Some(&key),
            PLACE,
            json!({"i": {"sku": sku, "count": 1, "class": "ON_DEMAND", "maxPricePerHour": "1.00"}}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    assert!(
        r["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("2.1 USD per hour")),
        "on demand costs the plan's 2.10: {r}"
    );
    let r = app
        .gql(
            Some(&key),
            PLACE,
            json!({"i": {"sku": sku, "count": 2, "class": "SPOT", "maxPricePerHour": "2.00"}}),
        )
        .await;
    assert_eq!(
        r["data"]["placeOrder"]["order"]["pricePerHour"], "1.992",
        "two spot GPUs at 0.996 fit a 2.00 limit: {r}"
    );
    let r = app
        .gql(
            Some(&key),
            PLACE,
            json!({"i": {"sku": node_sku, "count": 1, "maxPricePerHour": "19.92"}}),
        )
        .await;
    // Placed (preempting the spot GPUs) or refused for capacity, never for its price.
    assert_ne!(
        r["errors"][0]["extensions"]["field"], "maxPricePerHour",
        "a node costs its price once, not once per GPU: {r}"
    );
    if r["errors"].is_null() {
        assert_eq!(
            r["data"]["placeOrder"]["order"]["pricePerHour"], "19.92",
            "{r}"
        );
    }
}

on_both_databases!(
    the_catalog_shows_each_callers_price_per_unit_hour,
    a_spot_order_is_checked_and_quoted_at_its_spot_price,
);
