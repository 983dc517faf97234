//! The first journey: `neocloud demo` as a separate process, on SQLite and on PostgreSQL.
//! Wait for `/readyz`, read the written credentials, list the catalog, create an API key
//! and use it; stop it with SIGTERM (a clean exit, its simulated agents stopped without a
//! warning) and restart on the same database; and a bad setting stops the binary with a
//! message that names it.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use neocloud_e2e::Demo;
use sea_orm::{ConnectionTrait, Database};
use serde_json::{Value, json};

fn neocloud_binary() -> PathBuf {
    neocloud_e2e::binary("neocloud", "neocloud-api")
}

async fn journey(database_url: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let demo = Demo::start(dir.path(), database_url, &[]).await;
    let tenants = demo.credentials["tenants"].as_array().expect("tenants");
    assert_eq!(tenants.len(), 2);
    assert!(demo.credentials["operator_key"].is_string());
    assert!(
        !demo.credentials["agents"]
            .as_array()
            .expect("agents")
            .is_empty()
    );
    let tenant_key = tenants[0]["key"].as_str().expect("key");

    let r = demo
        .gql(tenant_key, "{ catalog { skus { id name gpuModel form migProfile region listPricePerHour available } } }")
        .await;
    let skus = r["data"]["catalog"]["skus"].as_array().expect("skus");
    assert!(skus.len() >= 10, "{r}");

    let r = demo
        .gql(tenant_key, "mutation { createApiKey(role: TENANT_MEMBER, label: \"journey\") { apiKey key { id } } }")
        .await;
    let new_key = r["data"]["createApiKey"]["apiKey"]
        .as_str()
        .expect("new key")
        .to_owned();
    let r = demo
        .gql(&new_key, "{ viewer { role tenant { name } } }")
        .await;
    assert_eq!(r["data"]["viewer"]["role"], "TENANT_MEMBER", "{r}");
    assert_eq!(r["data"]["viewer"]["tenant"]["name"], tenants[0]["name"]);
    order_and_release(&demo, tenant_key, tenants[1]["key"].as_str().expect("key")).await;
    let first_tenant_id = tenants[0]["id"].clone();
    let mut demo = demo;
    let status = demo.terminate().await;
    let log = std::fs::read_to_string(dir.path().join("demo.log")).unwrap_or_default();
    assert!(status.success(), "SIGTERM: {status}\n{log}");
    for noise in [
        "stopped unexpectedly",
        "Simulated agent stopped",
        "did not stop in time",
    ] {
        assert!(
            !log.contains(noise),
            "a clean stop logs no {noise:?}:\n{log}"
        );
    }
    drop(demo);

    // A second start on the same database seeds nothing twice and issues working keys.
    let again = Demo::start(dir.path(), database_url, &[]).await;
    assert_eq!(again.credentials["tenants"][0]["id"], first_tenant_id);
    let operator = again.credentials["operator_key"]
        .as_str()
        .expect("operator key");
    let r = again
        .gql(
            operator,
            "{ tenants(first: 50) { edges { node { name } } } }",
        )
        .await;
    assert_eq!(
        r["data"]["tenants"]["edges"]
            .as_array()
            .expect("edges")
            .len(),
        2,
        "{r}"
    );
}

/// A tenant orders 8 H100 in one NVLink domain, a MIG 3g slice and a fractional L40S
/// share, sees where they run, and releases them; the other tenant can neither see nor
/// release them.
async fn order_and_release(demo: &Demo, key: &str, other: &str) {
    let r = demo
        .gql(
            key,
            "{ catalog { skus { id name gpuModel form migProfile milliGpu region } } }",
        )
        .await;
    let skus = r["data"]["catalog"]["skus"]
        .as_array()
        .expect("skus")
        .clone();
    let find = |pred: &dyn Fn(&Value) -> bool| {
        skus.iter().find(|s| pred(s)).expect("a matching SKU")["id"]
            .as_str()
            .expect("id")
            .to_owned()
    };
    let h100 =
        find(&|s| s["gpuModel"] == "H100" && s["form"] == "WHOLE_GPU" && s["region"] == "eu-west");
    let mig =
        find(&|s| s["form"] == "MIG" && s["migProfile"] == "3g.40gb" && s["region"] == "eu-west");
    let frac =
        find(&|s| s["form"] == "FRACTIONAL" && s["gpuModel"] == "L40S" && s["region"] == "eu-west");
    let place = "mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { id allocations {
        id migProfile milliGpu node { hostname nvlinkDomain } gpus { uuid } } } } }";
    let mut orders = Vec::new();
    for input in [
        json!({"sku": h100, "count": 8, "topology": {"level": "NVLINK_DOMAIN", "required": true}}),
        json!({"sku": mig, "count": 1}),
        json!({"sku": frac, "count": 1}),
    ] {
        let r = demo.gql_vars(key, place, json!({"i": input})).await;
        let order = r["data"]["placeOrder"]["order"].clone();
        assert!(order["id"].is_string(), "{r}");
        orders.push(order);
    }
    let eight = &orders[0]["allocations"];
    assert_eq!(
        eight.as_array().expect("allocations").len(),
        1,
        "8 GPUs on one HGX node"
    );
    assert_eq!(eight[0]["gpus"].as_array().expect("gpus").len(), 8);
    assert_eq!(orders[1]["allocations"][0]["migProfile"], "3g.40gb");
    assert!(orders[2]["allocations"][0]["milliGpu"].is_number());

    let r = demo
        .gql(
            key,
            "{ allocations(status: ACTIVE) { edges { node { id node { hostname } } } } }",
        )
        .await;
    assert_eq!(
        r["data"]["allocations"]["edges"]
            .as_array()
            .expect("edges")
            .len(),
        3,
        "{r}"
    );
    let r = demo
        .gql(other, "{ allocations { edges { node { id } } } }")
        .await;
    assert_eq!(
        r["data"]["allocations"]["edges"]
            .as_array()
            .expect("edges")
            .len(),
        0,
        "{r}"
    );
    for order in &orders {
        let r = demo
            .gql_vars(
                other,
                "mutation($id: ID!) { releaseOrder(id: $id) { order { id } } }",
                json!({"id": order["id"]}),
            )
            .await;
        assert_eq!(r["errors"][0]["extensions"]["code"], "NOT_FOUND", "{r}");
    }
    for order in &orders {
        let r = demo
            .gql_vars(
                key,
                "mutation($id: ID!) { releaseOrder(id: $id) { order { status } } }",
                json!({"id": order["id"]}),
            )
            .await;
        assert_eq!(
            r["data"]["releaseOrder"]["order"]["status"], "RELEASED",
            "{r}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_serves_a_customer_journey_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}/demo.db?mode=rwc", dir.path().display());
    journey(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_serves_a_customer_journey_on_postgres() {
    let admin_url = std::env::var("NEOCLOUD_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let admin = match Database::connect(&admin_url).await {
        Ok(admin) => admin,
        Err(err) if std::env::var("NEOCLOUD_REQUIRE_POSTGRES").is_ok_and(|v| v == "1") => {
            panic!("PostgreSQL is required but unreachable at {admin_url}: {err}")
        }
        Err(err) => {
            eprintln!("skipping: PostgreSQL unreachable at {admin_url}: {err}");
            return;
        }
    };
    let name = format!("neocloud_e2e_{}", uuid::Uuid::new_v4().simple());
    admin
        .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
        .await
        .expect("create database");
    let (base, _) = admin_url.rsplit_once('/').expect("database URL");
    journey(&format!("{base}/{name}")).await;
    admin
        .execute_unprepared(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .await
        .expect("drop database");
}

#[test]
fn a_bad_setting_stops_the_server_with_a_message_naming_it() {
    let out = Command::new(neocloud_binary())
        .args(["serve", "--listen", "not-an-address"])
        .stdin(Stdio::null())
        .output()
        .expect("run neocloud");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("NEOCLOUD_LISTEN"), "{stderr}");

    let out = Command::new(neocloud_binary())
        .args(["serve"])
        .env("NEOCLOUD_LIMITS__PAGE_SIZE_MAX", "0")
        .output()
        .expect("run neocloud");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("limits.page_size_max"), "{stderr}");
}
