//! Several server processes on one database, and the fleet as each process caches it: a
//! change that fails halfway leaves its process to reload before the next one, so it never
//! places on GPUs another process gave away meanwhile; and a fleet reloaded while a spot
//! allocation serves its preemption notice still loads, places and ends the victim.

mod support;

use neocloud_schema::entity::{allocation, allocation_gpu};
use neocloud_schema::vocabulary::AllocationStatus;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

const PLACE: &str = "mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { id allocations { id status preemptAt gpus { uuid } } } } }";

async fn place_at(app: &TestApp, url: &str, key: &str, input: Value) -> Value {
    app.gql_at(url, key, PLACE, json!({"i": input})).await
}

/// GPUs held by two live allocations at once (none, ever).
async fn doubly_held(app: &TestApp) -> Vec<uuid::Uuid> {
    let live: Vec<uuid::Uuid> = allocation::Entity::find()
        .filter(allocation::Column::Status.ne(AllocationStatus::Released))
        .all(&app.db)
        .await
        .expect("allocations")
        .into_iter()
        .map(|a| a.id.into())
        .collect();
    let mut gpus: Vec<uuid::Uuid> = allocation_gpu::Entity::find()
        .filter(allocation_gpu::Column::AllocationId.is_in(live))
        .all(&app.db)
        .await
        .expect("allocation GPUs")
        .into_iter()
        .map(|g| g.gpu_id.into())
        .collect();
    gpus.sort_unstable();
    let mut twice: Vec<uuid::Uuid> = gpus
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect();
    twice.dedup();
    twice
}

/// Server A fails a fleet change after taking the fleet's lock (releasing an order that
/// does not exist); server B then places; A must see B's allocation before placing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_whose_change_failed_reloads_before_placing() {
    let Some(app) = TestApp::spawn(Backend::Postgres).await else {
        return;
    };
    app.register_node("hgx-0", "H100", 8, "").await;
    let sku = app.create_h100_sku().await;
    let (_, key) = app.create_tenant("acme").await;
    let b = app.second_server().await;

    let r = place_at(&app, &app.url, &key, json!({"sku": sku, "count": 1})).await;
    assert!(r["data"]["placeOrder"]["order"]["id"].is_string(), "{r}");
    let r = app
        .gql(
            Some(&key),
            "mutation($o: ID!) { releaseOrder(id: $o) { order { id } } }",
            json!({"o": uuid::Uuid::new_v4()}),
        )
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = place_at(&app, &b, &key, json!({"sku": sku, "count": 4})).await;
    assert!(r["data"]["placeOrder"]["order"]["id"].is_string(), "{r}");
    // 1 + 4 of 8 are taken: 4 more do not fit, whichever server is asked.
    let r = place_at(&app, &app.url, &key, json!({"sku": sku, "count": 4})).await;
    assert_eq!(error_code(&r), Some("INSUFFICIENT_CAPACITY"), "{r}");
    assert_eq!(doubly_held(&app).await, Vec::<uuid::Uuid>::new());
    let r = place_at(&app, &app.url, &key, json!({"sku": sku, "count": 3})).await;
    assert!(r["data"]["placeOrder"]["order"]["id"].is_string(), "{r}");
    assert_eq!(doubly_held(&app).await, Vec::<uuid::Uuid>::new());
}

/// Two servers take orders and releases at once; no GPU is ever held twice, and every
/// GPU is in use at the end exactly when the database says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_ordering_at_once_never_give_a_gpu_twice() {
    let Some(app) = TestApp::spawn(Backend::Postgres).await else {
        return;
    };
    for n in 0..2 {
        app.register_node(&format!("hgx-{n}"), "H100", 8, "").await;
    }
    let sku = app.create_h100_sku().await;
    let (_, key) = app.create_tenant("acme").await;
    let b = app.second_server().await;
    let urls = [app.url.clone(), b];
    for round in 0..4 {
        let orders = (0..6).map(|i| {
            let url = urls[(i + round) % 2].clone();
            let (app, key, sku) = (&app, key.clone(), sku.clone());
            async move { place_at(app, &url, &key, json!({"sku": sku, "count": 1 + i % 3})).await }
        });
        let placed = futures_util::future::join_all(orders).await;
        assert_eq!(doubly_held(&app).await, Vec::<uuid::Uuid>::new());
        let releases = placed.iter().enumerate().filter_map(|(i, r)| {
            let id = r["data"]["placeOrder"]["order"]["id"].as_str()?.to_owned();
            let url = urls[(i + round + 1) % 2].clone();
            let (app, key) = (&app, key.clone());
            Some(async move {
                app.gql_at(
                    &url,
                    &key,
                    "mutation($o: ID!) { releaseOrder(id: $o) { order { id } } }",
                    json!({"o": id}),
                )
                .await
            })
        });
        for r in futures_util::future::join_all(releases).await {
            assert!(r["errors"].is_null(), "{r}");
        }
        assert_eq!(doubly_held(&app).await, Vec::<uuid::Uuid>::new());
    }
    // Everything was released: the whole fleet is free again, as both servers see it.
    for url in &urls {
        let r = place_at(&app, url, &key, json!({"sku": sku, "count": 8})).await;
        let order = r["data"]["placeOrder"]["order"]["id"].clone();
        assert!(order.is_string(), "{r}");
        let r = app
            .gql_at(
                url,
                &key,
                "mutation($o: ID!) { releaseOrder(id: $o) { order { id } } }",
                json!({"o": order}),
            )
            .await;
        assert!(r["errors"].is_null(), "{r}");
    }
}

/// A spot allocation in its notice and the order that displaced it hold the same GPUs
/// until the notice ends. A fleet reloaded then (the operator registered a node) must
/// still serve orders and releases, and end the victim on time.
async fn a_fleet_reloaded_during_a_notice_still_works(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    app.register_node("hgx-0", "H100", 8, "").await;
    app.register_node("hgx-1", "H100", 8, "").await;
    let sku = app.create_h100_sku().await;
    let (_, spot_key) = app.create_tenant("spotty").await;
    let (_, key) = app.create_tenant("acme").await;
    let url = app.url.clone();
    let r = place_at(
        &app,
        &url,
        &spot_key,
        json!({"sku": sku, "count": 8, "class": "SPOT"}),
    )
    .await;
    let victim = r["data"]["placeOrder"]["order"]["allocations"][0].clone();
    let r = place_at(&app, &url, &key, json!({"sku": sku, "count": 8})).await;
    let other = r["data"]["placeOrder"]["order"]["id"].clone();
    assert!(other.is_string(), "{r}");
    let r = place_at(&app, &url, &key, json!({"sku": sku, "count": 8})).await;
    assert!(r["data"]["placeOrder"]["order"]["id"].is_string(), "{r}");
    let r = app
        .gql(
            Some(&spot_key),
            "query($id: ID!) { allocation(id: $id) { status preemptAt } }",
            json!({"id": victim["id"]}),
        )
        .await;
    assert_eq!(r["data"]["allocation"]["status"], "PREEMPTING", "{r}");
    let preempt_at: chrono::DateTime<chrono::Utc> = r["data"]["allocation"]["preemptAt"]
        .as_str()
        .expect("preemptAt")
        .parse()
        .expect("time");

    // Another change to the fleet: this process's cached fleet is stale and reloads.
    app.register_node("hgx-2", "H100", 8, "").await;
    let r = app
        .gql(
            Some(&key),
            "mutation($o: ID!) { releaseOrder(id: $o) { order { id } } }",
            json!({"o": other}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let r = place_at(&app, &url, &key, json!({"sku": sku, "count": 16})).await;
    assert!(r["data"]["placeOrder"]["order"]["id"].is_string(), "{r}");
    assert_eq!(
        doubly_held(&app).await.len(),
        8,
        "the victim's GPUs, until it ends"
    );

    app.advance_past(preempt_at);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let r = app
            .gql(
                Some(&spot_key),
                "query($id: ID!) { allocation(id: $id) { status } }",
                json!({"id": victim["id"]}),
            )
            .await;
        if r["data"]["allocation"]["status"] == "RELEASED" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the victim never ended: {r}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(doubly_held(&app).await, Vec::<uuid::Uuid>::new());
}

on_both_databases!(a_fleet_reloaded_during_a_notice_still_works);
