//! The real server's invoices against an independent model of the billing rule
//! (`reference_model`, written from `docs/invoicing.md` and sharing no code with rating):
//! for generated mixes of orders of every SKU form (whole GPUs, MIG slices, fractions,
//! whole nodes), counts, hold times, spot and on-demand, under generated plans (no rate,
//! per-unit with or without a spot price, graduated, volume, package; minimum billable
//! durations), the closed period's lines and total must equal the model's to the cent.
//!
//! Orders are placed and released through the API; their lifetimes are then set in the
//! database to the generated hold times inside a period moved two days back, so an hour of
//! use costs no hour of test.

mod reference_model;
mod support;

use chrono::{DurationRound, TimeDelta, Utc};
use neocloud_schema::entity::{allocation, invoice, order, tenant_plan};
use neocloud_schema::vocabulary::InvoiceStatus;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use reference_model::{HeldOrder, ModelLine, Pricing, SkuPlan};
use rust_decimal::Decimal;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};
use support::{Backend, TestApp};

/// The catalog of the test fleet: (name, form fields, list price, most units per order).
const SKUS: [(&str, &str, &str, i64); 4] = [
    ("h100", "gpuModel: \"H100\", form: WHOLE_GPU", "2.49", 3),
    (
        "h100-node",
        "gpuModel: \"H100\", form: WHOLE_NODE",
        "19.92",
        1,
    ),
    (
        "h100-3g",
        "gpuModel: \"H100\", form: MIG, migProfile: \"3g.40gb\"",
        "1.0671",
        2,
    ),
    (
        "l40s-250",
        "gpuModel: \"L40S\", form: FRACTIONAL, milliGpu: 250",
        "0.4567",
        3,
    ),
];

#[derive(Debug, Clone)]
struct Case {
    /// Per SKU of `SKUS`: its pricing (None: list price) and spot price.
    plans: Vec<(Option<Pricing>, Option<Decimal>)>,
    minimum_seconds: i64,
    /// (index into `SKUS`, count, seconds held, spot).
    orders: Vec<(usize, i64, i64, bool)>,
}

fn money() -> impl Strategy<Value = Decimal> {
    (1i64..50_000).prop_map(|c| Decimal::new(c, 4))
}

fn tiers() -> impl Strategy<Value = Vec<(Option<Decimal>, Decimal, Decimal)>> {
    (
        1i64..20,
        money(),
        money(),
        prop_oneof![Just(0i64), 1i64..500],
    )
        .prop_map(|(bound, first, second, fee)| {
            vec![
                (Some(Decimal::new(bound, 1)), first, Decimal::ZERO),
                (None, second, Decimal::new(fee, 2)),
            ]
        })
}

fn pricing() -> impl Strategy<Value = (Option<Pricing>, Option<Decimal>)> {
    prop_oneof![
        Just((None, None)),
        (money(), proptest::option::of(money()))
            .prop_map(|(p, spot)| (Some(Pricing::PerUnit(p)), spot)),
        tiers().prop_map(|t| (Some(Pricing::Graduated(t)), None)),
        tiers().prop_map(|t| (Some(Pricing::Volume(t)), None)),
        (1i64..30, money())
            .prop_map(|(size, p)| (Some(Pricing::Package(Decimal::new(size, 1), p)), None)),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    let order = (0..SKUS.len()).prop_flat_map(|sku| {
        (
            Just(sku),
            1..=SKUS[sku].3,
            prop_oneof![1i64..120, 120i64..40_000],
            any::<bool>(),
        )
    });
    (
        proptest::collection::vec(pricing(), SKUS.len()),
        prop_oneof![Just(0i64), 1i64..300],
        proptest::collection::vec(order, 1..5),
    )
        .prop_map(|(plans, minimum_seconds, orders)| Case {
            plans,
            minimum_seconds,
            orders,
        })
}

fn tiers_json(tiers: &[(Option<Decimal>, Decimal, Decimal)]) -> Value {
    tiers
        .iter()
        .map(|(up_to, price, fee)| {
            json!({"upTo": up_to.map(|u| u.to_string()), "unitPrice": price.to_string(),
                "flatFee": fee.to_string()})
        })
        .collect()
}

fn rate_json(sku: &str, pricing: &Pricing, spot: Option<Decimal>) -> Value {
    let mut rate = json!({"sku": sku, "metric": "ALLOCATED"});
    let fields = match pricing {
        Pricing::PerUnit(p) => json!({"tiersMode": "PER_UNIT", "unitPrice": p.to_string(),
            "spotUnitPrice": spot.map(|s| s.to_string())}),
        Pricing::Graduated(t) => json!({"tiersMode": "GRADUATED", "tiers": tiers_json(t)}),
        Pricing::Volume(t) => json!({"tiersMode": "VOLUME", "tiers": tiers_json(t)}),
        Pricing::Package(size, p) => json!({"tiersMode": "PACKAGE",
            "packageSize": size.to_string(), "packagePrice": p.to_string()}),
    };
    for (k, v) in fields.as_object().expect("object") {
        rate[k] = v.clone();
    }
    rate
}

/// The fleet and catalog every case orders from; returns the SKU ids in `SKUS` order.
async fn fleet(app: &TestApp) -> Vec<String> {
    for i in 0..3 {
        support::agent_token(&app.register_node(&format!("hgx-{i}"), "H100", 8, "").await);
    }
    support::agent_token(
        &app.register_node("mig-0", "H100", 2, ", migEnabled: true")
            .await,
    );
    support::agent_token(
        &app.register_node("l40s-0", "L40S", 2, ", sharedGpus: true")
            .await,
    );
    let mut ids = Vec::new();
    for (name, form, price, _) in SKUS {
        let r = app
            .gql(
                Some(&app.operator_key),
                &format!(
                    "mutation {{ createSku(input: {{name: \"{name}\", {form}, region: \"eu-west\", listPricePerHour: \"{price}\", currency: \"USD\"}}) {{ sku {{ id }} }} }}"
                ),
                json!({}),
            )
            .await;
        ids.push(
            r["data"]["createSku"]["sku"]["id"]
                .as_str()
                .unwrap_or_else(|| panic!("createSku {name}: {r}"))
                .to_owned(),
        );
    }
    ids
}

/// Runs one case through the server; returns its closed invoice's (usage lines, total).
async fn run_case(
    app: &TestApp,
    skus: &[String],
    n: usize,
    case: &Case,
) -> (Vec<ModelLine>, Decimal) {
    let (tenant, key) = app.create_tenant(&format!("t{n}")).await;
    let rates: Vec<Value> = case
        .plans
        .iter()
        .zip(skus)
        .filter_map(|((pricing, spot), sku)| pricing.as_ref().map(|p| rate_json(sku, p, *spot)))
        .collect();
    // A plan needs a rate: without any, the tenant stays on list prices.
    if !rates.is_empty() {
        let version = app
            .create_plan_version(json!({"plan": format!("p{n}"), "currency": "USD",
                "effectiveFrom": "2026-01-01T00:00:00Z",
                "minimumBillableSeconds": case.minimum_seconds, "rates": rates}))
            .await;
        app.assign_plan(&tenant, &version).await;
    }

    // Place and release every order; keep (order id, seconds held).
    let mut held = Vec::new();
    for (sku, count, seconds, spot) in &case.orders {
        let r = app
            .gql(
                Some(&key),
                "mutation($s: ID!, $c: Int!, $k: AllocationClass!) { placeOrder(input: {sku: $s, count: $c, class: $k}) { order { id } } }",
                json!({"s": skus[*sku], "c": count, "k": if *spot { "SPOT" } else { "ON_DEMAND" }}),
            )
            .await;
        let id = r["data"]["placeOrder"]["order"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("placeOrder {case:?}: {r}"))
            .to_owned();
        let r = app
            .gql(
                Some(&key),
                "mutation($o: ID!) { releaseOrder(id: $o) { order { id } } }",
                json!({"o": id}),
            )
            .await;
        assert!(r["errors"].is_null(), "{r}");
        held.push((id, *seconds));
    }

    // The open period (its draft made by reading it) starts two days back; each order ran
    // from an hour into it.
    let r = app
        .gql(Some(&key), "{ upcomingInvoice { id } }", json!({}))
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let start = (Utc::now() - TimeDelta::days(2))
        .duration_trunc(TimeDelta::minutes(1))
        .expect("minute");
    invoice::Entity::update_many()
        .col_expr(invoice::Column::PeriodStart, Expr::value(start))
        .filter(invoice::Column::TenantId.eq(tenant.parse::<uuid::Uuid>().expect("id")))
        .filter(invoice::Column::Status.eq(InvoiceStatus::Draft))
        .exec(&app.db)
        .await
        .expect("move the period");
    tenant_plan::Entity::update_many()
        .col_expr(tenant_plan::Column::EffectiveFrom, Expr::value(start))
        .filter(tenant_plan::Column::TenantId.eq(tenant.parse::<uuid::Uuid>().expect("id")))
        .exec(&app.db)
        .await
        .expect("move the plan");
    for (id, seconds) in &held {
        let began = start + TimeDelta::hours(1);
        let ended = began + TimeDelta::seconds(*seconds);
        let order_id: uuid::Uuid = id.parse().expect("id");
        allocation::Entity::update_many()
            .col_expr(allocation::Column::StartedAt, Expr::value(began))
            .col_expr(allocation::Column::EndedAt, Expr::value(Some(ended)))
            .filter(allocation::Column::OrderId.eq(order_id))
            .exec(&app.db)
            .await
            .expect("set the lifetime");
        order::Entity::update_many()
            .col_expr(order::Column::EndedAt, Expr::value(Some(ended)))
            .filter(order::Column::Id.eq(order_id))
            .exec(&app.db)
            .await
            .expect("set the order's end");
    }

    let invoice = app
        .close_period(
            &tenant,
            "total lines { kind skuId metric quantity unit unitPrice amount }",
        )
        .await;
    let name_of = |id: &Value| {
        let i = skus.iter().position(|s| Some(s.as_str()) == id.as_str());
        i.map_or("?", |i| SKUS[i].0).to_owned()
    };
    let dec = |v: &Value| -> Decimal {
        v.as_str()
            .expect("decimal string")
            .parse()
            .expect("decimal")
    };
    let mut lines: Vec<ModelLine> = invoice["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| {
            assert!(
                matches!(l["kind"].as_str(), Some("USAGE" | "FLAT_FEE")),
                "only usage and fees expected: {l}"
            );
            ModelLine {
                sku: name_of(&l["skuId"]),
                quantity: dec(&l["quantity"]).normalize(),
                unit_price: dec(&l["unitPrice"]).normalize(),
                amount: dec(&l["amount"]),
            }
        })
        .collect();
    lines.sort();
    (lines, dec(&invoice["total"]))
}

fn model_of(case: &Case) -> (Vec<ModelLine>, Decimal) {
    let skus: Vec<SkuPlan> = SKUS
        .iter()
        .zip(&case.plans)
        .map(|((name, _, list, _), (pricing, spot))| SkuPlan {
            name: (*name).to_owned(),
            list_price: list.parse().expect("price"),
            pricing: pricing.clone(),
            spot_price: *spot,
        })
        .collect();
    let orders: Vec<HeldOrder> = case
        .orders
        .iter()
        .map(|(sku, count, seconds, spot)| HeldOrder {
            sku: SKUS[*sku].0.to_owned(),
            count: *count,
            seconds: *seconds,
            spot: *spot,
        })
        .collect();
    // The list prices have no minimum billable duration.
    let minimum = if case.plans.iter().any(|(p, _)| p.is_some()) {
        case.minimum_seconds
    } else {
        0
    };
    reference_model::invoice(&skus, &orders, minimum)
}

async fn invoices_match_the_reference_model(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let skus = fleet(&app).await;
    // Generated cases from a fixed seed, so that a failure reproduces; each prints whole.
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    );
    let cases = std::env::var("NEOCLOUD_BILLING_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(16);
    for n in 0..cases {
        let case = case().new_tree(&mut runner).expect("a case").current();
        let (lines, total) = run_case(&app, &skus, n, &case).await;
        let (want_lines, want_total) = model_of(&case);
        assert_eq!(
            (&lines, total),
            (&want_lines, want_total),
            "case {n}: {case:#?}"
        );
    }
}

on_both_databases!(invoices_match_the_reference_model);
