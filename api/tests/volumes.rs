//! Storage volumes through the real server: created, resized and deleted by a tenant,
//! billed per GB-hour from their lifetime records on the upcoming invoice (checked against
//! the GB × hours of the times the server reported), refused beyond quotas, limits and a
//! spent hard cap without changing anything, invisible to other tenants, and reported to
//! the operator's storage as `volume.*` events.

mod support;

use chrono::{DateTime, TimeDelta, Utc};
use rust_decimal::Decimal;
use serde_json::{Value, json};
use support::{Backend, ReferenceReceiver, TestApp, error_code};

const VOLUME: &str = "id name sizeGb storageClass region status state skuName createdAt deletedAt";

/// A VOLUME SKU of `class` in eu-west at `price` per GB-hour; returns its id.
async fn volume_sku(app: &TestApp, name: &str, class: &str, price: &str) -> String {
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($n: String!, $c: StorageClass!, $p: String!) { createSku(input: {name: $n, form: VOLUME, storageClass: $c, region: \"eu-west\", listPricePerHour: $p, currency: \"USD\"}) { sku { id unit serviceCategory storageClass available } } }",
            json!({"n": name, "c": class, "p": price}),
        )
        .await;
    let sku = &r["data"]["createSku"]["sku"];
    assert_eq!(sku["unit"], "GB", "{r}");
    assert_eq!(sku["serviceCategory"], "STORAGE");
    assert_eq!(sku["storageClass"], class);
    sku["id"].as_str().expect("id").to_owned()
}

async fn create(app: &TestApp, key: &str, name: &str, gb: i64, class: &str) -> Value {
    app.gql(
        Some(key),
        &format!("mutation($n: String!, $g: Int!, $c: StorageClass!) {{ createVolume(input: {{name: $n, sizeGb: $g, storageClass: $c, region: \"eu-west\", labels: [{{key: \"team\", value: \"data\"}}]}}) {{ volume {{ {VOLUME} }} }} }}"),
        json!({"n": name, "g": gb, "c": class}),
    )
    .await
}

async fn resize(app: &TestApp, key: &str, id: &Value, gb: i64) -> Value {
    app.gql(
        Some(key),
        &format!("mutation($i: ID!, $g: Int!) {{ resizeVolume(id: $i, sizeGb: $g) {{ volume {{ {VOLUME} }} }} }}"),
        json!({"i": id, "g": gb}),
    )
    .await
}

async fn delete(app: &TestApp, key: &str, id: &Value) -> Value {
    app.gql(
        Some(key),
        &format!("mutation($i: ID!) {{ deleteVolume(id: $i) {{ volume {{ {VOLUME} }} }} }}"),
        json!({"i": id}),
    )
    .await
}

fn time(v: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().unwrap_or_else(|| panic!("not a time: {v}")))
        .expect("RFC 3339")
        .with_timezone(&Utc)
}

fn decimal(v: &Value) -> Decimal {
    v.as_str()
        .unwrap_or_else(|| panic!("not a decimal: {v}"))
        .parse()
        .expect("decimal")
}

/// GB-seconds of `gb` held from `a` to `b`, to the millisecond (docs/volumes.md).
fn gb_seconds(gb: i64, a: DateTime<Utc>, b: DateTime<Utc>) -> Decimal {
    Decimal::from(gb) * Decimal::new((b - a).num_milliseconds(), 3)
}

/// GB-seconds as the GB-hours a line bills: summed first, then divided once, to 20
/// decimal places where the division does not end (docs/invoicing.md, "Units").
fn hours(seconds: Decimal) -> Decimal {
    (seconds / Decimal::from(3600)).round_dp(20)
}

/// The upcoming invoice's ALLOCATED lines of `sku`.
async fn storage_lines(app: &TestApp, key: &str, sku: &str) -> Vec<Value> {
    let r = app
        .gql(
            Some(key),
            "{ upcomingInvoice { lines { metric skuId quantity unit unitPrice amount } } }",
            json!({}),
        )
        .await;
    r["data"]["upcomingInvoice"]["lines"]
        .as_array()
        .unwrap_or_else(|| panic!("no invoice: {r}"))
        .iter()
        .filter(|l| l["skuId"] == sku)
        .cloned()
        .collect()
}

async fn live_volumes(app: &TestApp, key: &str) -> Vec<Value> {
    let r = app
        .gql(Some(key), "{ volumes { nodes { id sizeGb } } }", json!({}))
        .await;
    r["data"]["volumes"]["nodes"]
        .as_array()
        .unwrap_or_else(|| panic!("volumes failed: {r}"))
        .clone()
}

async fn a_volume_bills_gb_hours_of_each_size_it_had(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let block = volume_sku(&app, "block-eu", "BLOCK", "0.01").await;
    let (_, admin) = app.create_tenant("acme").await;
    let r = create(&app, &admin, "checkpoints", 100, "BLOCK").await;
    let v = r["data"]["createVolume"]["volume"].clone();
    assert_eq!(v["state"], "PENDING", "{r}");
    assert_eq!(v["skuName"], "block-eu");
    let id = v["id"].clone();
    let created = time(&v["createdAt"]);

    app.advance(TimeDelta::minutes(1));
    let lines = storage_lines(&app, &admin, &block).await;
    assert_eq!(lines.len(), 1, "visible from the first minute: {lines:?}");
    assert_eq!(lines[0]["unit"], "GB-hour");
    assert!(
        decimal(&lines[0]["quantity"]) >= Decimal::new(16, 1),
        "{lines:?}"
    );

    app.advance(TimeDelta::minutes(59));
    let r = resize(&app, &admin, &id, 50).await;
    assert_eq!(
        error_code(&r),
        Some("INVALID_INPUT"),
        "a block volume only grows: {r}"
    );
    let r = resize(&app, &admin, &id, 300).await;
    assert_eq!(r["data"]["resizeVolume"]["volume"]["sizeGb"], 300, "{r}");
    let resized = app.events_of(&admin, "volume.resized").await;
    let resized_at = time(&resized[0]["resized_at"]);
    assert_eq!(resized[0]["previous_size_gb"], 100);

    app.advance(TimeDelta::minutes(30));
    let r = delete(&app, &admin, &id).await;
    let gone = &r["data"]["deleteVolume"]["volume"];
    assert_eq!(gone["status"], "DELETED", "{r}");
    let deleted = time(&gone["deletedAt"]);
    let r = delete(&app, &admin, &id).await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "{r}");

    app.advance(TimeDelta::hours(5));
    let lines = storage_lines(&app, &admin, &block).await;
    let expected =
        hours(gb_seconds(100, created, resized_at) + gb_seconds(300, resized_at, deleted));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        decimal(&lines[0]["quantity"]),
        expected.normalize(),
        "{lines:?}"
    );
    let amount = (expected * Decimal::new(1, 2)).round_dp(2);
    assert_eq!(decimal(&lines[0]["amount"]), amount, "{lines:?}");
    assert!(expected > Decimal::from(249) && expected < Decimal::from(251));
    let span = json!({"i": id, "f": (created - TimeDelta::hours(1)).to_rfc3339(), "t": (deleted + TimeDelta::hours(1)).to_rfc3339()});
    let query = "query($i: ID!, $f: DateTime!, $t: DateTime!) { volume(id: $i) { gbHours(from: $f, to: $t) } }";
    let r = app.gql(Some(&admin), query, span.clone()).await;
    assert_eq!(
        decimal(&r["data"]["volume"]["gbHours"]),
        expected.normalize(),
        "{r}"
    );
    let (_, other) = app.create_tenant("globex").await;
    let r = app.gql(Some(&other), query, span).await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");

    let created_events = app.events_of(&admin, "volume.created").await;
    assert_eq!(created_events[0]["size_gb"], 100);
    assert_eq!(created_events[0]["storage_class"], "block");
    assert_eq!(created_events[0]["labels"]["team"], "data");
    let deleted_events = app.events_of(&admin, "volume.deleted").await;
    assert_eq!(deleted_events[0]["reason"], "deleted");
}

async fn refusals_change_nothing_and_other_tenants_see_nothing(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let object = volume_sku(&app, "object-eu", "OBJECT", "0.001").await;
    let (tenant, admin) = app.create_tenant("acme").await;
    let (_, other) = app.create_tenant("globex").await;
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($t: ID!) { setQuota(input: {tenantId: $t, scope: STORAGE_GB, value: \"eu-west\", max: 500}) { quota { unit used } } }",
            json!({"t": tenant}),
        )
        .await;
    assert_eq!(r["data"]["setQuota"]["quota"]["unit"], "GB", "{r}");
    let first = create(&app, &admin, "datasets", 400, "OBJECT").await;
    let id = first["data"]["createVolume"]["volume"]["id"].clone();
    assert!(id.is_string(), "{first}");

    for (answer, code) in [
        (
            create(&app, &admin, "more", 101, "OBJECT").await,
            "QUOTA_EXCEEDED",
        ),
        (resize(&app, &admin, &id, 501).await, "QUOTA_EXCEEDED"),
        (
            create(&app, &admin, "datasets", 1, "OBJECT").await,
            "ALREADY_EXISTS",
        ),
        (
            create(&app, &admin, "disk", 10, "BLOCK").await,
            "INVALID_INPUT",
        ),
        (
            create(&app, &admin, "huge", 2_000_000, "OBJECT").await,
            "INVALID_INPUT",
        ),
        (
            create(&app, &admin, "Bad Name", 1, "OBJECT").await,
            "INVALID_INPUT",
        ),
        (resize(&app, &other, &id, 1).await, "NOT_FOUND"),
        (delete(&app, &other, &id).await, "NOT_FOUND"),
    ] {
        assert_eq!(error_code(&answer), Some(code), "{answer}");
    }
    let r = app
        .gql(
            Some(&other),
            "query($i: ID!) { volume(id: $i) { id } }",
            json!({"i": id}),
        )
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    assert!(live_volumes(&app, &other).await.is_empty());
    let mine = live_volumes(&app, &admin).await;
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert_eq!(mine[0]["sizeGb"], 400, "a refused resize changed nothing");
    let r = app
        .gql(Some(&admin), "{ quotas { scope used } }", json!({}))
        .await;
    assert_eq!(r["data"]["quotas"][0]["used"], "400", "{r}");
    // Shrinking object storage is allowed, and frees quota.
    let r = resize(&app, &admin, &id, 100).await;
    assert_eq!(r["data"]["resizeVolume"]["volume"]["sizeGb"], 100, "{r}");
    let r = create(&app, &admin, "more", 400, "OBJECT").await;
    assert!(r["errors"].is_null(), "{r}");
    app.advance(TimeDelta::hours(1));
    assert_eq!(storage_lines(&app, &other, &object).await.len(), 0);
}

async fn failed_storage_bills_nothing_and_a_spent_cap_blocks_new_volumes(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, |s| s.budgets.sweep_seconds = 1).await else {
        return;
    };
    let block = volume_sku(&app, "block-eu", "BLOCK", "1").await;
    let (_, admin) = app.create_tenant("acme").await;
    let r = create(&app, &admin, "scratch", 10, "BLOCK").await;
    let failed = r["data"]["createVolume"]["volume"]["id"].clone();
    let r = app
        .gql(
            Some(&admin),
            "mutation($i: ID!) { markVolumeFailed(id: $i, reason: \"pool full\") { volume { id } } }",
            json!({"i": failed}),
        )
        .await;
    assert_eq!(
        error_code(&r),
        Some("FORBIDDEN"),
        "only the operator reports: {r}"
    );
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($i: ID!) { markVolumeFailed(id: $i, reason: \"pool full\") { volume { status state failure } } }",
            json!({"i": failed}),
        )
        .await;
    let v = &r["data"]["markVolumeFailed"]["volume"];
    assert_eq!(
        (&v["status"], &v["state"]),
        (&json!("DELETED"), &json!("FAILED")),
        "{r}"
    );
    assert_eq!(v["failure"], "pool full");
    let r = create(&app, &admin, "data", 100, "BLOCK").await;
    let kept = r["data"]["createVolume"]["volume"]["id"].clone();
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($i: ID!) { markVolumeReady(id: $i) { volume { state } } }",
            json!({"i": kept}),
        )
        .await;
    assert_eq!(
        r["data"]["markVolumeReady"]["volume"]["state"], "READY",
        "{r}"
    );
    app.advance(TimeDelta::hours(1));
    let lines = storage_lines(&app, &admin, &block).await;
    let quantity = decimal(&lines[0]["quantity"]);
    assert!(
        quantity >= Decimal::from(100) && quantity < Decimal::from(101),
        "only the kept volume bills: {lines:?}"
    );

    let r = app
        .gql(
            Some(&admin),
            "mutation { setBudget(input: {monthlyLimit: \"50.00\", hardCap: true}) { budget { monthlyLimit } } }",
            json!({}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let mut refused = Value::Null;
    for _ in 0..100 {
        refused = resize(&app, &admin, &kept, 200).await;
        if error_code(&refused) == Some("BUDGET_EXCEEDED") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(error_code(&refused), Some("BUDGET_EXCEEDED"), "{refused}");
    let r = create(&app, &admin, "more", 1, "BLOCK").await;
    assert_eq!(error_code(&r), Some("BUDGET_EXCEEDED"), "{r}");
    let r = delete(&app, &admin, &kept).await;
    assert!(r["errors"].is_null(), "deleting is always allowed: {r}");
}

/// The reference receiver in `examples/provisioner`, subscribed to `volume.*` with an
/// operator endpoint, prints the Cinder commands for a created and a grown volume and
/// reports the volume ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_receiver_creates_volumes_and_reports_them_ready() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("sqlite");
    volume_sku(&app, "block-eu", "BLOCK", "0.01").await;
    let (tenant, admin) = app.create_tenant("acme").await;
    let receiver = ReferenceReceiver::subscribed(
        &app,
        &["volume.created", "volume.resized", "volume.deleted"],
    )
    .await;
    let r = create(&app, &admin, "checkpoints", 200, "BLOCK").await;
    let id = r["data"]["createVolume"]["volume"]["id"].clone();
    let printed = receiver.printed_until("reported:");
    assert!(
        printed.contains(&format!(
            "openstack volume create --size 200 --property tenant={tenant} nc-{}",
            id.as_str().expect("id")
        )),
        "{printed}"
    );
    let r = app
        .gql(
            Some(&admin),
            "query($i: ID!) { volume(id: $i) { state } }",
            json!({"i": id}),
        )
        .await;
    assert_eq!(r["data"]["volume"]["state"], "READY", "{r}\n{printed}");
    resize(&app, &admin, &id, 500).await;
    let printed = receiver.printed_until("openstack volume set");
    assert!(printed.contains("--size 500"), "{printed}");
}

on_both_databases!(
    a_volume_bills_gb_hours_of_each_size_it_had,
    refusals_change_nothing_and_other_tenants_see_nothing,
    failed_storage_bills_nothing_and_a_spent_cap_blocks_new_volumes,
);
