//! The real server's invoices against an independent model of the billing rule
//! (`reference_model`, written from `docs/invoicing.md` and sharing no code with rating):
//! for generated mixes of orders of every SKU form (whole GPUs, MIG slices, fractions,
//! whole nodes), counts, hold times, spot and on-demand, under generated plans (no rate,
//! per-unit with or without a spot price, graduated, volume, package; minimum billable
//! durations; ACTIVE, MEMORY and SLA_CREDIT rates; a commitment discount) with or without a credit
//! grant, with a GPU failing under an order and the agents reporting utilization, the
//! closed period's lines and total must equal the model's to the cent — and so must the
//! console's preview of the same usage under another generated plan.
//!
//! A case's orders are placed together and released through the API; their lifetimes are
//! then set in the database to the generated hold times, each case in a time slot of its
//! own inside a period moved days back (so an hour of use costs no hour of test), a
//! failure is written as the health interval an XID would open, and each node's agent
//! reports the first ten minutes of the slot through `/v1/ingest`.

mod reference_model;
mod support;

use std::collections::BTreeMap;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use neocloud_schema::entity::{allocation, gpu, gpu_health_interval, invoice, order, tenant_plan};
use neocloud_schema::vocabulary::{GpuHealth, InvoiceStatus};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use reference_model::{HeldOrder, ModelLine, Plan, Pricing, SkuPlan};
use rust_decimal::Decimal;
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, Set};
use serde_json::{Value, json};
use support::{Backend, TestApp};

/// The catalog of the test fleet: (name, form fields, list price, most units per order,
/// GPUs per unit).
const SKUS: [(&str, &str, &str, i64, i64); 4] = [
    ("h100", "gpuModel: \"H100\", form: WHOLE_GPU", "2.49", 3, 1),
    (
        "h100-node",
        "gpuModel: \"H100\", form: WHOLE_NODE",
        "19.92",
        1,
        8,
    ),
    (
        "h100-3g",
        "gpuModel: \"H100\", form: MIG, migProfile: \"3g.40gb\"",
        "1.0671",
        2,
        1,
    ),
    (
        "l40s-250",
        "gpuModel: \"L40S\", form: FRACTIONAL, milliGpu: 250",
        "0.4567",
        3,
        1,
    ),
];
const MIG: usize = 2;
const FRACTION: usize = 3;

/// The longest hold a case generates, and the time slot each case's orders run in.
const MAX_HOLD: i64 = 40_000;
const SLOT: i64 = MAX_HOLD + 100;
/// The seconds of each slot the agents report (from the slot's start).
const SAMPLED: i64 = 600;

/// How the plan prices one SKU.
#[derive(Debug, Clone)]
struct SkuTerms {
    /// ALLOCATED (None: list price) and its spot price.
    allocated: Option<Pricing>,
    spot: Option<Decimal>,
    active: Option<Decimal>,
    memory: Option<Decimal>,
    sla: Option<Decimal>,
}

#[derive(Debug, Clone)]
struct Case {
    skus: Vec<SkuTerms>,
    minimum_seconds: i64,
    discount_pct: Option<Decimal>,
    credit: Option<Decimal>,
    /// (index into `SKUS`, count, seconds held, spot, utilization %).
    orders: Vec<(usize, i64, i64, bool, u32)>,
    /// GiB of memory every GPU, instance or process uses.
    memory_gib: i64,
    /// A GPU of this order (index into `orders`, if on demand and held 1200 s or more)
    /// fails from this many thousandths of its hold after the sampled minutes, for this
    /// many thousandths of the rest.
    failure: Option<(usize, i64, i64)>,
}

impl Case {
    fn has_plan(&self) -> bool {
        self.skus.iter().any(|t| {
            t.allocated.is_some() || t.active.is_some() || t.memory.is_some() || t.sla.is_some()
        })
    }

    /// The order that fails, and its failure's (start, end) seconds into its hold.
    fn failure(&self) -> Option<(usize, i64, i64)> {
        let (i, from, length) = self.failure?;
        let i = i % self.orders.len();
        let (_, _, seconds, spot, _) = self.orders[i];
        if spot || seconds < 2 * SAMPLED {
            return None;
        }
        let start = SAMPLED + (seconds - SAMPLED) * from / 1000;
        let end = start + ((seconds - start) * length / 1000).max(1);
        Some((i, start, end.min(seconds)))
    }

    /// What the agent reports per GPU (instance, process) of an order.
    fn utilization(&self, order: usize) -> Decimal {
        let (sku, _, _, _, util) = self.orders[order];
        // Fractions of one GPU together stay within 100%.
        let util = Decimal::from(util);
        if sku == FRACTION {
            util / Decimal::from(4)
        } else {
            util
        }
    }
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

fn sku_terms() -> impl Strategy<Value = SkuTerms> {
    (
        pricing(),
        proptest::option::weighted(0.4, money()),
        proptest::option::weighted(0.3, money()),
        proptest::option::weighted(0.4, money()),
    )
        .prop_map(|((allocated, spot), active, memory, sla)| SkuTerms {
            allocated,
            spot,
            active,
            memory,
            sla,
        })
}

fn case() -> impl Strategy<Value = Case> {
    let order = (0..SKUS.len()).prop_flat_map(|sku| {
        (
            Just(sku),
            1..=SKUS[sku].3,
            prop_oneof![1i64..120, 120i64..MAX_HOLD],
            any::<bool>(),
            0u32..=100,
        )
    });
    (
        proptest::collection::vec(sku_terms(), SKUS.len()),
        prop_oneof![Just(0i64), 1i64..300],
        proptest::option::weighted(0.3, (1i64..40).prop_map(Decimal::from)),
        proptest::option::weighted(0.3, (1i64..20_000).prop_map(|c| Decimal::new(c, 2))),
        proptest::collection::vec(order, 1..5),
        1i64..=8,
        proptest::option::weighted(0.5, (0usize..4, 0i64..900, 1i64..1000)),
    )
        .prop_map(
            |(skus, minimum_seconds, discount_pct, credit, orders, memory_gib, failure)| Case {
                skus,
                minimum_seconds,
                discount_pct,
                credit,
                orders,
                memory_gib,
                failure,
            },
        )
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

/// Every rate of a case's plan.
fn rates_json(case: &Case, skus: &[String]) -> Vec<Value> {
    let per_unit = |sku: &str, metric: &str, price: &Decimal| {
        json!({"sku": sku, "metric": metric, "tiersMode": "PER_UNIT",
            "unitPrice": price.to_string()})
    };
    let mut rates = Vec::new();
    for (terms, sku) in case.skus.iter().zip(skus) {
        if let Some(p) = &terms.allocated {
            rates.push(rate_json(sku, p, terms.spot));
        }
        if let Some(p) = &terms.active {
            rates.push(per_unit(sku, "ACTIVE", p));
        }
        if let Some(p) = &terms.memory {
            rates.push(per_unit(sku, "MEMORY", p));
        }
        if let Some(p) = &terms.sla {
            rates.push(per_unit(sku, "SLA_CREDIT", p));
        }
    }
    rates
}

/// A `PlanVersionInput` of the case's plan.
fn plan_json(name: &str, case: &Case, skus: &[String]) -> Value {
    let commitment = case
        .discount_pct
        .map(|pct| json!({"monthlyMinimum": "0", "discountPct": pct.to_string()}));
    json!({"plan": name, "currency": "USD", "effectiveFrom": "2026-01-01T00:00:00Z",
        "minimumBillableSeconds": case.minimum_seconds, "commitment": commitment,
        "rates": rates_json(case, skus)})
}

/// The test fleet: SKU ids in `SKUS` order, and each node's agent token.
struct Fleet {
    skus: Vec<String>,
    tokens: BTreeMap<String, String>,
    boot: uuid::Uuid,
}

/// A fleet where any case's orders fit at once: four 8-GPU nodes (four node orders, or
/// three and up to nine GPUs), four MIG GPUs (eight 3g slices) and three shared L40S
/// (twelve quarters).
async fn fleet(app: &TestApp) -> Fleet {
    let mut tokens = BTreeMap::new();
    let nodes = [
        ("hgx-0", "H100", 8, ""),
        ("hgx-1", "H100", 8, ""),
        ("hgx-2", "H100", 8, ""),
        ("hgx-3", "H100", 8, ""),
        ("mig-0", "H100", 4, ", migEnabled: true"),
        ("l40s-0", "L40S", 3, ", sharedGpus: true"),
    ];
    for (host, model, gpus, extra) in nodes {
        let r = app.register_node(host, model, gpus, extra).await;
        tokens.insert(host.to_owned(), support::agent_token(&r));
    }
    let mut skus = Vec::new();
    for (name, form, price, _, _) in SKUS {
        let r = app
            .gql(
                Some(&app.operator_key),
                &format!(
                    "mutation {{ createSku(input: {{name: \"{name}\", {form}, region: \"eu-west\", listPricePerHour: \"{price}\", currency: \"USD\"}}) {{ sku {{ id }} }} }}"
                ),
                json!({}),
            )
            .await;
        skus.push(
            r["data"]["createSku"]["sku"]["id"]
                .as_str()
                .unwrap_or_else(|| panic!("createSku {name}: {r}"))
                .to_owned(),
        );
    }
    Fleet {
        skus,
        tokens,
        boot: uuid::Uuid::new_v4(),
    }
}

/// Where one allocation of an order ran.
#[derive(Debug, Clone)]
struct Placed {
    order: usize,
    allocation: String,
    host: String,
    gpus: Vec<String>,
}

/// Places every order of the case (all held at once, so no two share a whole GPU) and
/// releases them; returns (order ids, where each allocation ran).
async fn place_and_release(
    app: &TestApp,
    fleet: &Fleet,
    key: &str,
    case: &Case,
) -> (Vec<String>, Vec<Placed>) {
    let (mut orders, mut placed) = (Vec::new(), Vec::new());
    for (i, (sku, count, _, spot, _)) in case.orders.iter().enumerate() {
        let r = app
            .gql(
                Some(key),
                "mutation($s: ID!, $c: Int!, $k: AllocationClass!) { placeOrder(input: {sku: $s, count: $c, class: $k}) { order { id allocations { id node { hostname } gpus { uuid } } } } }",
                json!({"s": fleet.skus[*sku], "c": count, "k": if *spot { "SPOT" } else { "ON_DEMAND" }}),
            )
            .await;
        let order = &r["data"]["placeOrder"]["order"];
        orders.push(
            order["id"]
                .as_str()
                .unwrap_or_else(|| panic!("placeOrder {case:?}: {r}"))
                .to_owned(),
        );
        for a in order["allocations"].as_array().expect("allocations") {
            placed.push(Placed {
                order: i,
                allocation: a["id"].as_str().expect("id").to_owned(),
                host: a["node"]["hostname"].as_str().expect("host").to_owned(),
                gpus: a["gpus"]
                    .as_array()
                    .expect("gpus")
                    .iter()
                    .map(|g| g["uuid"].as_str().expect("uuid").to_owned())
                    .collect(),
            });
        }
    }
    for id in &orders {
        let r = app
            .gql(
                Some(key),
                "mutation($o: ID!) { releaseOrder(id: $o) { order { id } } }",
                json!({"o": id}),
            )
            .await;
        assert!(r["errors"].is_null(), "{r}");
    }
    (orders, placed)
}

/// Moves the tenant's open period and plan to start at `start`, and sets each order's
/// lifetime: from `began` for its generated hold.
async fn move_in_time(
    app: &TestApp,
    tenant: &str,
    case: &Case,
    orders: &[String],
    start: DateTime<Utc>,
    began: DateTime<Utc>,
) {
    let tenant: uuid::Uuid = tenant.parse().expect("id");
    invoice::Entity::update_many()
        .col_expr(invoice::Column::PeriodStart, Expr::value(start))
        .filter(invoice::Column::TenantId.eq(tenant))
        .filter(invoice::Column::Status.eq(InvoiceStatus::Draft))
        .exec(&app.db)
        .await
        .expect("move the period");
    tenant_plan::Entity::update_many()
        .col_expr(tenant_plan::Column::EffectiveFrom, Expr::value(start))
        .filter(tenant_plan::Column::TenantId.eq(tenant))
        .exec(&app.db)
        .await
        .expect("move the plan");
    for (id, (_, _, seconds, _, _)) in orders.iter().zip(&case.orders) {
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
}

/// Fails the first GPU of the failing order's first allocation for its span, as an XID
/// would have (the GPU's health now stays as it is); returns that GPU.
async fn fail(
    app: &TestApp,
    placed: &[Placed],
    order: usize,
    span: (DateTime<Utc>, DateTime<Utc>),
) -> String {
    let uuid = placed
        .iter()
        .find(|p| p.order == order)
        .map(|p| p.gpus[0].clone())
        .expect("a placed allocation");
    let gpu = gpu::Entity::find()
        .filter(gpu::Column::Uuid.eq(uuid.as_str()))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the GPU");
    gpu_health_interval::ActiveModel {
        id: Set(uuid::Uuid::now_v7()),
        gpu_id: Set(gpu.id),
        health: Set(GpuHealth::Failed.as_str().into()),
        started_at: Set(span.0),
        ended_at: Set(Some(span.1)),
        cause: Set("xid 79".into()),
    }
    .insert(&app.db)
    .await
    .expect("failure");
    uuid
}

/// Each node's agent reports the slot's first `SAMPLED` seconds: every GPU of a whole-GPU
/// or node allocation, every MIG instance, every fraction's process, at its order's
/// utilization. `seq` numbers each node's batches across cases.
async fn report(
    app: &TestApp,
    fleet: &Fleet,
    case: &Case,
    placed: &[Placed],
    began: DateTime<Utc>,
    seq: &mut BTreeMap<String, u64>,
) {
    let mut devices: BTreeMap<&str, BTreeMap<String, Value>> = BTreeMap::new();
    let fb = case.memory_gib << 30;
    for p in placed {
        let util = case
            .utilization(p.order)
            .to_string()
            .parse::<f64>()
            .expect("f64");
        let sku = case.orders[p.order].0;
        let on_node = devices.entry(p.host.as_str()).or_default();
        for gpu in &p.gpus {
            let process = json!({"pid": 7, "allocation_id": p.allocation, "sm_util_pct": util,
                "fb_used_bytes": fb});
            if sku == MIG {
                let uuid = format!("MIG-{}-{gpu}", p.allocation);
                on_node.insert(
                    uuid.clone(),
                    json!({"uuid": uuid, "parent_uuid": gpu,
                    "mig_profile": "3g.40gb", "sm_util_pct": util, "fb_used_bytes": fb,
                    "events": [], "processes": [process]}),
                );
            } else if sku == FRACTION {
                let device = on_node.entry(gpu.clone()).or_insert_with(|| {
                    json!({"uuid": gpu, "sm_util_pct": 0.0, "fb_used_bytes": 1u64 << 30,
                        "events": [], "processes": []})
                });
                device["processes"]
                    .as_array_mut()
                    .expect("processes")
                    .push(process);
            } else {
                on_node.insert(
                    gpu.clone(),
                    json!({"uuid": gpu, "sm_util_pct": util,
                    "fb_used_bytes": fb, "events": [], "processes": []}),
                );
            }
        }
    }
    let iso = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    for (host, devices) in devices {
        let n = seq.entry(host.to_owned()).or_insert(0);
        *n += 1;
        let body = json!({"version": 1, "agent_id": host, "boot_id": fleet.boot, "seq": *n,
            "window": {"start": iso(began), "end": iso(began + TimeDelta::seconds(SAMPLED))},
            "devices": devices.into_values().collect::<Vec<_>>()});
        let res = app
            .client
            .post(format!("{}/v1/ingest", app.url))
            .bearer_auth(&fleet.tokens[host])
            .json(&body)
            .send()
            .await
            .expect("ingest");
        let status = res.status().as_u16();
        let answer: Value = res.json().await.unwrap_or(Value::Null);
        assert_eq!(
            (status, &answer["status"]),
            (200, &json!("accepted")),
            "{body}: {answer}"
        );
    }
}

/// What a case ran: per order, the GPU-seconds it spent failed.
struct Ran {
    failed_gpu_seconds: Vec<i64>,
    /// Each allocation's order (index into the case's orders).
    orders_of: BTreeMap<String, usize>,
    /// The closed invoice's `[periodStart, periodEnd)`.
    period: (Value, Value),
}

/// Runs case `n` through the server; returns what ran and its closed invoice's (lines,
/// total).
async fn run_case(
    app: &TestApp,
    fleet: &Fleet,
    n: usize,
    start: DateTime<Utc>,
    seq: &mut BTreeMap<String, u64>,
    case: &Case,
) -> (String, Ran, Vec<ModelLine>, Decimal) {
    let (tenant, key) = app.create_tenant(&format!("t{n}")).await;
    if case.has_plan() {
        let version = app
            .create_plan_version(plan_json(&format!("p{n}"), case, &fleet.skus))
            .await;
        app.assign_plan(&tenant, &version).await;
    }
    let (orders, placed) = place_and_release(app, fleet, &key, case).await;
    // The open period (its draft made by reading it) starts days back; this case's orders
    // run in a slot of their own in it.
    let r = app
        .gql(Some(&key), "{ upcomingInvoice { id } }", json!({}))
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let began = start + TimeDelta::hours(1) + TimeDelta::seconds(SLOT * n as i64);
    move_in_time(app, &tenant, case, &orders, start, began).await;
    let mut failed_gpu_seconds = vec![0; case.orders.len()];
    if let Some((order, from, to)) = case.failure() {
        let at = |s: i64| began + TimeDelta::seconds(s);
        let gpu = fail(app, &placed, order, (at(from), at(to))).await;
        // Every allocation of the case on that GPU held it then (MIG slices and fractions
        // share it).
        for p in placed.iter().filter(|p| p.gpus.contains(&gpu)) {
            let held = case.orders[p.order].2;
            failed_gpu_seconds[p.order] += (to.min(held) - from).max(0);
        }
    }
    report(app, fleet, case, &placed, began, seq).await;
    if let Some(credit) = case.credit {
        let r = app
            .gql(
                Some(&app.operator_key),
                "mutation($t: ID!, $a: String!) { grantCredits(input: {tenantId: $t, kind: PROMOTIONAL, amount: $a, reason: \"goodwill\"}) { id } }",
                json!({"t": tenant, "a": credit.to_string()}),
            )
            .await;
        assert!(r["errors"].is_null(), "{r}");
    }
    let invoice = app
        .close_period(
            &tenant,
            "periodStart periodEnd total lines { kind skuId metric quantity unitPrice amount }",
        )
        .await;
    let (lines, total) = lines_of(&invoice, &fleet.skus);
    let ran = Ran {
        failed_gpu_seconds,
        orders_of: placed
            .iter()
            .map(|p| (p.allocation.clone(), p.order))
            .collect(),
        period: (invoice["periodStart"].clone(), invoice["periodEnd"].clone()),
    };
    (tenant, ran, lines, total)
}

fn lines_of(invoice: &Value, skus: &[String]) -> (Vec<ModelLine>, Decimal) {
    let name_of = |id: &Value| {
        let i = skus.iter().position(|s| Some(s.as_str()) == id.as_str());
        i.map_or("", |i| SKUS[i].0).to_owned()
    };
    let dec = |v: &Value| -> Decimal {
        v.as_str()
            .expect("decimal string")
            .parse()
            .expect("decimal")
    };
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let mut lines: Vec<ModelLine> = invoice["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| ModelLine {
            kind: text(&l["kind"]),
            sku: name_of(&l["skuId"]),
            metric: text(&l["metric"]),
            quantity: dec(&l["quantity"]).normalize(),
            unit_price: dec(&l["unitPrice"]).normalize(),
            amount: dec(&l["amount"]),
        })
        .collect();
    lines.sort();
    (lines, dec(&invoice["total"]))
}

/// `previewPlanVersion` of the case's plan for the tenant's last invoice: (lines, total).
async fn preview(
    app: &TestApp,
    fleet: &Fleet,
    tenant: &str,
    case: &Case,
) -> (Vec<ModelLine>, Decimal) {
    let r = app
        .gql(
            Some(&app.operator_key),
            "query($i: PlanVersionInput!, $t: ID!) { previewPlanVersion(input: $i, tenantId: $t) {
                total lines { kind skuId metric quantity unitPrice amount } } }",
            json!({"i": plan_json("proposed", case, &fleet.skus), "t": tenant}),
        )
        .await;
    let preview = &r["data"]["previewPlanVersion"];
    assert!(preview.is_object(), "previewPlanVersion failed: {r}");
    lines_of(preview, &fleet.skus)
}

/// Each order's cost as `usage` prices its allocations' rows over the closed period, and
/// how many rows (each rounded to 6 decimal places) it is the sum of.
async fn usage_costs(app: &TestApp, tenant: &str, case: &Case, ran: &Ran) -> Vec<(Decimal, u32)> {
    let r = app
        .gql(
            Some(&app.operator_key),
            "query($f: DateTime!, $t: DateTime!, $id: ID) {
                usage(from: $f, to: $t, groupBy: [ALLOCATION], tenantId: $id) { currency rows { key cost } } }",
            json!({"f": ran.period.0, "t": ran.period.1, "id": tenant}),
        )
        .await;
    assert_eq!(r["data"]["usage"]["currency"], "USD", "{r}");
    let mut costs = vec![(Decimal::ZERO, 0); case.orders.len()];
    for row in r["data"]["usage"]["rows"].as_array().expect("rows") {
        let order = ran.orders_of[row["key"].as_str().expect("key")];
        let cost: Decimal = row["cost"]
            .as_str()
            .expect("cost")
            .parse()
            .expect("decimal");
        costs[order].0 += cost;
        costs[order].1 += 1;
    }
    costs
}

/// The reference model's inputs for the case as it ran, under `case`'s plan.
fn model_plan_and_orders(case: &Case, ran: &Ran) -> (Plan, Vec<HeldOrder>) {
    let has_plan = case.has_plan();
    let skus: Vec<SkuPlan> = SKUS
        .iter()
        .zip(&case.skus)
        .map(|((name, _, list, _, gpus), terms)| SkuPlan {
            name: (*name).to_owned(),
            list_price: list.parse().expect("price"),
            gpus_per_unit: *gpus,
            pricing: terms.allocated.clone(),
            spot_price: terms.spot,
            active_price: terms.active,
            memory_price: terms.memory,
            sla_price: terms.sla,
        })
        .collect();
    let orders: Vec<HeldOrder> = case
        .orders
        .iter()
        .enumerate()
        .map(|(i, (sku, count, seconds, spot, _))| HeldOrder {
            sku: SKUS[*sku].0.to_owned(),
            count: *count,
            seconds: *seconds,
            spot: *spot,
            sampled_seconds: (*seconds).min(SAMPLED),
            utilization_pct: case.utilization(i),
            memory_gib: case.memory_gib,
            failed_gpu_seconds: ran.failed_gpu_seconds[i],
        })
        .collect();
    let plan = Plan {
        skus,
        // The list prices have no minimum billable duration and no commitment.
        minimum_seconds: if has_plan { case.minimum_seconds } else { 0 },
        discount_pct: case.discount_pct.filter(|_| has_plan),
        credit: case.credit,
    };
    (plan, orders)
}

fn model_of(case: &Case, ran: &Ran) -> (Vec<ModelLine>, Decimal) {
    let (plan, orders) = model_plan_and_orders(case, ran);
    reference_model::invoice(&plan, &orders)
}

async fn invoices_match_the_reference_model(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let fleet = fleet(&app).await;
    // Generated cases from a fixed seed, so that a failure reproduces; each prints whole.
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    );
    let cases: usize = std::env::var("NEOCLOUD_BILLING_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(16);
    // One slot per case, all inside the ingest window's 35 days.
    let span = TimeDelta::seconds(SLOT * cases as i64) + TimeDelta::hours(2);
    assert!(span < TimeDelta::days(34), "at most 70 cases");
    let start = (Utc::now() - span)
        .duration_trunc(TimeDelta::minutes(1))
        .expect("minute");
    let mut seq = BTreeMap::new();
    let mut previewed = 0;
    for n in 0..cases {
        let case = case().new_tree(&mut runner).expect("a case").current();
        let (tenant, ran, lines, total) = run_case(&app, &fleet, n, start, &mut seq, &case).await;
        let (want_lines, want_total) = model_of(&case, &ran);
        assert_eq!(
            (&lines, total),
            (&want_lines, want_total),
            "case {n}: {case:#?}"
        );
        // What each order's usage cost, as the portal's usage charts show it.
        let (plan, orders) = model_plan_and_orders(&case, &ran);
        let want_costs = reference_model::order_costs(&plan, &orders);
        for (i, ((cost, rows), want)) in usage_costs(&app, &tenant, &case, &ran)
            .await
            .into_iter()
            .zip(want_costs)
            .enumerate()
        {
            // Each row is rounded half-even to 6 decimal places.
            let rounding = Decimal::new(5, 7) * Decimal::from(rows);
            assert!(
                (cost - want).abs() <= rounding,
                "case {n}, order {i}: usage costs {cost}, the model {want}: {case:#?}"
            );
        }
        // The same usage under another generated plan, as the console previews it.
        let proposed = Case {
            orders: case.orders.clone(),
            memory_gib: case.memory_gib,
            failure: case.failure,
            credit: case.credit,
            ..crate::case()
                .new_tree(&mut runner)
                .expect("a plan")
                .current()
        };
        if proposed.has_plan() {
            let (lines, total) = preview(&app, &fleet, &tenant, &proposed).await;
            let (want_lines, want_total) = model_of(&proposed, &ran);
            assert_eq!(
                (&lines, total),
                (&want_lines, want_total),
                "case {n} previewed under {:#?}",
                proposed.skus
            );
            previewed += 1;
        }
    }
    assert!(
        previewed * 2 >= cases,
        "most generated plans have rates: {previewed}"
    );
}

on_both_databases!(invoices_match_the_reference_model);
