//! Plan versions through the API: created immutable with validated rates, published to
//! every user, assigned to tenants explicitly.

mod support;

use chrono::{Duration, Utc};
use serde_json::json;
use support::{Backend, TestApp, error_code};

const CREATE: &str = "mutation($i: PlanVersionInput!) { createPlanVersion(input: $i) {
    planVersion { id plan version effectiveFrom rates { metric tiersMode unitPrice tiers { upTo unitPrice flatFee } } } } }";

async fn versions_are_numbered_published_and_assigned(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let sku = app.create_h100_sku().await;
    // A version that starts in the future whatever day the test runs: a year from today,
    // at midnight.
    let starts = (Utc::now() + Duration::days(365))
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .expect("midnight")
        .and_utc();
    let input = |price: &str| {
        json!({"plan": "standard", "currency": "USD", "effectiveFrom": starts.to_rfc3339(),
            "rates": [
                {"sku": sku, "metric": "ALLOCATED", "tiersMode": "PER_UNIT", "unitPrice": price, "spotUnitPrice": "0.90"},
                {"sku": sku, "metric": "ACTIVE", "tiersMode": "GRADUATED", "tiers": [
                    {"upTo": "100", "unitPrice": "0.10", "flatFee": "0"}, {"upTo": null, "unitPrice": "0.05"}]}
            ],
            "commitment": {"monthlyMinimum": "5000.00", "discountPct": "10"}})
    };
    let r = app
        .gql(Some(&app.operator_key), CREATE, json!({"i": input("2.10")}))
        .await;
    let v1 = &r["data"]["createPlanVersion"]["planVersion"];
    assert_eq!(v1["version"], 1, "{r}");
    let r = app
        .gql(Some(&app.operator_key), CREATE, json!({"i": input("1.95")}))
        .await;
    let v2 = r["data"]["createPlanVersion"]["planVersion"].clone();
    assert_eq!(v2["version"], 2, "{r}");

    let (tenant, key) = app.create_tenant("acme").await;
    let r = app
        .gql(
            Some(&key),
            "{ plans { name versions { version rates { unitPrice } } } }",
            json!({}),
        )
        .await;
    let versions = r["data"]["plans"][0]["versions"]
        .as_array()
        .expect("versions");
    assert_eq!(versions.len(), 2, "published to tenants: {r}");
    assert_eq!(
        versions[0]["rates"][0]["unitPrice"], "2.10",
        "version 1 unchanged by version 2"
    );

    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($t: ID!, $v: ID!) { assignPlan(tenantId: $t, planVersionId: $v) { effectiveFrom } }",
            json!({"t": tenant, "v": v2["id"]}),
        )
        .await;
    assert_eq!(
        r["data"]["assignPlan"]["effectiveFrom"],
        starts.to_rfc3339(),
        "a version starting later is assigned from its own start: {r}"
    );
    let r = app
        .gql(
            Some(&key),
            "mutation($t: ID!, $v: ID!) { assignPlan(tenantId: $t, planVersionId: $v) { effectiveFrom } }",
            json!({"t": tenant, "v": v2["id"]}),
        )
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
}

async fn malformed_rates_name_their_field_and_create_nothing(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let sku = app.create_h100_sku().await;
    let base = |rate: serde_json::Value| json!({"plan": "p", "currency": "USD", "effectiveFrom": "2026-12-01T00:00:00Z", "rates": [rate]});
    for (rate, field) in [
        (
            json!({"sku": sku, "metric": "ALLOCATED", "tiersMode": "PER_UNIT"}),
            "rates[0].unitPrice",
        ),
        (
            json!({"sku": sku, "metric": "ALLOCATED", "tiersMode": "PER_UNIT", "unitPrice": "-1"}),
            "rates[0].unitPrice",
        ),
        (
            json!({"sku": sku, "metric": "ALLOCATED", "tiersMode": "PER_UNIT", "unitPrice": "1e2"}),
            "rates[0].unitPrice",
        ),
        (
            json!({"sku": sku, "metric": "ACTIVE", "tiersMode": "VOLUME", "tiers": [{"upTo": "5", "unitPrice": "1"}]}),
            "rates[0].tiers",
        ),
        (
            json!({"sku": sku, "metric": "ACTIVE", "tiersMode": "PACKAGE", "packageSize": "0", "packagePrice": "1"}),
            "rates[0].tiers",
        ),
        (
            json!({"sku": sku, "metric": "ACTIVE", "tiersMode": "PACKAGE", "unitPrice": "1", "packageSize": "10", "packagePrice": "1"}),
            "rates[0].unitPrice",
        ),
    ] {
        let r = app
            .gql(Some(&app.operator_key), CREATE, json!({"i": base(rate)}))
            .await;
        assert_eq!(r["errors"][0]["extensions"]["field"], field, "{r}");
    }
    let r = app
        .gql(Some(&app.operator_key), "{ plans { name } }", json!({}))
        .await;
    assert_eq!(
        r["data"]["plans"].as_array().expect("plans").len(),
        0,
        "{r}"
    );
}

on_both_databases!(
    versions_are_numbered_published_and_assigned,
    malformed_rates_name_their_field_and_create_nothing,
);
