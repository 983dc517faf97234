//! Demo seeding: complete, and idempotent across restarts.

mod support;

use neocloud_api::demo;
use neocloud_schema::entity::{node, sku, tenant};
use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::json;
use support::{Backend, TestApp, error_code};

async fn seeding_twice_creates_nothing_twice_and_rotates_the_keys(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let first = demo::seed(&app.db, &app.url).await.expect("first seed");
    let counts = |db| async move {
        (
            tenant::Entity::find().count(db).await.expect("count"),
            node::Entity::find().count(db).await.expect("count"),
            sku::Entity::find().count(db).await.expect("count"),
        )
    };
    let after_first = counts(&app.db).await;
    let second = demo::seed(&app.db, &app.url).await.expect("second seed");
    assert_eq!(counts(&app.db).await, after_first);
    assert_eq!(after_first.0, 2);
    assert_eq!(first.tenants[0].id, second.tenants[0].id);
    assert_eq!(first.agents.len(), second.agents.len());

    // The previous start's keys no longer work; the new ones do.
    let r = app
        .gql(
            Some(&first.tenants[0].key),
            "{ viewer { role } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r), Some("UNAUTHENTICATED"), "{r}");
    let r = app
        .gql(
            Some(&second.tenants[0].key),
            "{ catalog { skus { form available } } }",
            json!({}),
        )
        .await;
    let skus = r["data"]["catalog"]["skus"].as_array().expect("skus");
    let forms: std::collections::HashSet<&str> = skus
        .iter()
        .map(|s| s["form"].as_str().expect("form"))
        .collect();
    assert_eq!(
        forms.len(),
        6,
        "whole GPU, node, MIG, fractional, metered and volume SKUs: {forms:?}"
    );
    // Every GPU SKU can be ordered now, and a volume of some GB created; metered SKUs are
    // never ordered.
    assert!(skus.iter().all(|s| {
        let available = s["available"].as_u64().expect("count");
        if s["form"] == "METERED" {
            available == 0
        } else {
            available > 0
        }
    }));
    // Each tenant's usage reporter reports usage and nothing else.
    let r = app
        .gql(
            Some(&second.tenants[0].usage_reporter),
            "{ catalog { skus { id } } }",
            json!({}),
        )
        .await;
    assert_eq!(r["errors"][0]["extensions"]["code"], "FORBIDDEN", "{r}");
    let r = app
        .gql(
            Some(&second.tenants[0].key),
            "{ meters { key } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["meters"].as_array().map(Vec::len),
        Some(6),
        "two meters and a model offering's four, seeded once: {r}"
    );
    let r = app
        .gql(
            Some(&second.agents[0].token),
            "{ viewer { role } }",
            json!({}),
        )
        .await;
    assert_eq!(r["data"]["viewer"]["role"], "AGENT", "{r}");
}

on_both_databases!(seeding_twice_creates_nothing_twice_and_rotates_the_keys);
