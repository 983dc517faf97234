//! The event log through the API, as a receiver and a poller see it: webhook deliveries
//! verified with the Standard Webhooks algorithm written here from the specification
//! (not the server's code), retries on failure with the same `webhook-id`, secret
//! rotation (both signatures), redelivery, the feed and its cursor, isolation between
//! tenants, and the events real actions produce.

mod support;

use chrono::TimeDelta;
use serde_json::{Value, json};

use support::receiver::{body, receiver, verifies, wait_for};
use support::{Backend, TestApp, error_code};

const CREATE: &str = "mutation($i: WebhookEndpointInput!) { createWebhookEndpoint(input: $i) { secret endpoint { id eventTypes enabled } } }";
const SEND_TEST: &str = "mutation($id: ID!) { sendTestWebhook(id: $id) }";
const ATTEMPTS: &str = "{ webhookEndpoints { id attempts(first: 50) { eventId attempt statusCode error responseHead } deliveries { eventId eventType status attempts } } }";

async fn endpoint(app: &TestApp, key: &str, url: &str, types: Value) -> (String, String) {
    let r = app
        .gql(
            Some(key),
            CREATE,
            json!({"i": {"url": url, "description": "test", "eventTypes": types}}),
        )
        .await;
    let p = &r["data"]["createWebhookEndpoint"];
    (
        p["endpoint"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"))
            .to_owned(),
        p["secret"].as_str().expect("secret").to_owned(),
    )
}

/// Sends a test event to the endpoint; its event id.
async fn send_test(app: &TestApp, key: &str, endpoint: &str) -> String {
    let r = app.gql(Some(key), SEND_TEST, json!({"id": endpoint})).await;
    r["data"]["sendTestWebhook"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned()
}

async fn feed(app: &TestApp, key: &str, args: &str) -> Value {
    let r = app
        .gql(
            Some(key),
            &format!("{{ events({args}) {{ cursor hasMore events {{ id type cursor tenantId data envelope }} }} }}"),
            json!({}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    r["data"]["events"].clone()
}

fn types_of(page: &Value) -> Vec<String> {
    page["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["type"].as_str().expect("type").to_owned())
        .collect()
}

on_both_databases!(
    a_delivery_is_signed_retried_with_its_id_and_logged,
    a_rotated_secret_signs_beside_the_new_one_for_its_grace,
    a_delivery_that_times_out_is_retried_with_its_id,
    the_feed_pages_by_cursor_and_shows_a_tenant_only_its_own,
    an_endpoint_failing_for_five_days_is_disabled_and_its_owner_told,
    events_past_the_retention_are_deleted_unless_still_owed,
    real_actions_produce_their_events,
    endpoints_are_checked_owned_and_redelivered,
);

async fn a_delivery_is_signed_retried_with_its_id_and_logged(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, key) = app.create_tenant("acme").await;
    let (url, recv) = receiver().await;
    recv.answers.lock().expect("lock").push(500);
    let (_, secret) = endpoint(&app, &key, &url, json!(["allocation.placed"])).await;
    app.run_gpu_at_ten_a_second("acme", &key).await;
    let first = wait_for(&recv, 1).await;
    assert!(verifies(&secret, &first[0]), "{:?}", first[0].headers);
    // Refused with 500: retried after the backoff (5 s, ±20 %), not before.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(recv.got().len(), 1, "retried before its time");
    app.advance(TimeDelta::seconds(7));
    let both = wait_for(&recv, 2).await;
    assert!(verifies(&secret, &both[1]));
    let (a, b) = (&both[0].headers, &both[1].headers);
    assert_eq!(a["webhook-id"], b["webhook-id"], "a retry keeps its id");
    let event = body(&both[1]);
    assert_eq!(event["type"], "allocation.placed");
    assert_eq!(event["id"].as_str(), Some(a["webhook-id"].as_str()));
    assert_eq!(event["data"]["gpus"][0]["uuid"], "GPU-acme-node-0");
    assert_eq!(event["data"]["hostname"], "acme-node");
    // A body that does not match its signature is refused by the receiver's check.
    let mut forged = both[1].clone();
    forged.body = br#"{"type":"invoice.paid"}"#.to_vec();
    assert!(!verifies(&secret, &forged));
    // The feed shows the same id; the log shows both attempts.
    let page = feed(&app, &key, "types: [\"allocation.placed\"]").await;
    assert_eq!(page["events"][0]["id"], event["id"]);
    assert_eq!(page["events"][0]["envelope"], event);
    let r = app.gql(Some(&key), ATTEMPTS, json!({})).await;
    let log = &r["data"]["webhookEndpoints"][0];
    let codes: Vec<i64> = log["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["statusCode"].as_i64().expect("code"))
        .collect();
    assert_eq!(codes, vec![200, 500], "newest first: {log}");
    assert_eq!(log["attempts"][0]["responseHead"], "thanks!");
    assert_eq!(log["deliveries"][0]["status"], "DELIVERED");
    assert_eq!(log["deliveries"][0]["attempts"], 2);
    assert_eq!(log["deliveries"][0]["eventId"], event["id"]);
    assert_eq!(
        log["deliveries"][0]["eventType"], "allocation.placed",
        "{log}"
    );
}

async fn a_rotated_secret_signs_beside_the_new_one_for_its_grace(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, key) = app.create_tenant("acme").await;
    let (url, recv) = receiver().await;
    let (id, old) = endpoint(&app, &key, &url, json!(["webhook.test"])).await;
    let r = app
        .gql(
            Some(&key),
            "mutation($id: ID!) { rotateWebhookSecret(id: $id, graceSeconds: 3600) { secret endpoint { previousSecretValidUntil } } }",
            json!({"id": id}),
        )
        .await;
    let new = r["data"]["rotateWebhookSecret"]["secret"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    assert_ne!(new, old);
    let send = "mutation($id: ID!) { sendTestWebhook(id: $id, note: \"hello\") }";
    let r = app.gql(Some(&key), send, json!({"id": id})).await;
    assert!(r["errors"].is_null(), "{r}");
    let got = wait_for(&recv, 1).await;
    assert!(verifies(&old, &got[0]) && verifies(&new, &got[0]));
    assert_eq!(got[0].headers["webhook-signature"].split(' ').count(), 2);
    assert_eq!(body(&got[0])["data"]["note"], "hello");
    // Past the grace, only the new secret signs.
    app.advance(TimeDelta::seconds(3601));
    app.gql(Some(&key), send, json!({"id": id})).await;
    let got = wait_for(&recv, 2).await;
    assert!(verifies(&new, &got[1]) && !verifies(&old, &got[1]));
}

async fn the_feed_pages_by_cursor_and_shows_a_tenant_only_its_own(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (acme, acme_key) = app.create_tenant("acme").await;
    let (_, globex_key) = app.create_tenant("globex").await;
    app.run_gpu_at_ten_a_second("acme", &acme_key).await;
    for max in [1, 2, 3] {
        let r = app
            .gql(
                Some(&app.operator_key),
                "mutation($t: ID!, $m: Int!) { setQuota(input: {tenantId: $t, scope: GPU_MODEL, value: \"H100\", max: $m}) { quota { id } } }",
                json!({"t": acme, "m": max}),
            )
            .await;
        assert!(r["errors"].is_null(), "{r}");
    }
    let all = feed(&app, &acme_key, "first: 100").await;
    assert_eq!(
        types_of(&all),
        [
            "allocation.placed",
            "quota.changed",
            "quota.changed",
            "quota.changed"
        ]
    );
    let page = feed(&app, &acme_key, "first: 2").await;
    assert_eq!(page["hasMore"], true);
    let cursor = page["cursor"].as_str().expect("cursor");
    let rest = feed(&app, &acme_key, &format!("first: 10, after: \"{cursor}\"")).await;
    assert_eq!(rest["hasMore"], false);
    assert_eq!(types_of(&rest), ["quota.changed", "quota.changed"]);
    assert_eq!(rest["events"][1]["data"]["limit"], 3);
    assert_eq!(rest["events"][1]["data"]["previous_limit"], 2);
    // Another tenant sees none of it, naming acme or not; the operator names the tenant.
    assert_eq!(
        types_of(&feed(&app, &globex_key, "first: 100").await),
        Vec::<String>::new()
    );
    let r = app
        .gql(
            Some(&globex_key),
            "query($t: ID!) { events(tenantId: $t) { cursor } }",
            json!({"t": acme}),
        )
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let seen = feed(
        &app,
        &app.operator_key,
        &format!("tenantId: \"{acme}\", first: 100"),
    )
    .await;
    assert_eq!(types_of(&seen).len(), 4);
    // The operator's own feed holds the operator events, no tenant's.
    let own = types_of(&feed(&app, &app.operator_key, "first: 100").await);
    assert!(own.contains(&"node.registered".to_owned()), "{own:?}");
    assert!(!own.iter().any(|t| t.starts_with("allocation.")), "{own:?}");
    let r = app
        .gql(
            Some(&acme_key),
            "{ events(after: \"x\") { cursor } }",
            json!({}),
        )
        .await;
    assert_eq!(r["errors"][0]["extensions"]["field"], "after", "{r}");
}

async fn real_actions_produce_their_events(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (acme, key) = app.create_tenant("acme").await;
    app.run_gpu_at_ten_a_second("acme", &key).await;
    let op = app.operator_key.clone();
    let r = app
        .gql(
            Some(&op),
            "{ node(hostname: \"acme-node\") { id gpus { uuid } } }",
            json!({}),
        )
        .await;
    let node = r["data"]["node"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    let steps = [
        (
            "mutation($t: ID!) { suspendTenant(id: $t, reason: \"overdue\") { id } }",
            json!({"t": acme}),
        ),
        (
            "mutation($t: ID!) { resumeTenant(id: $t) { id } }",
            json!({"t": acme}),
        ),
        (
            "mutation { setGpuHealth(uuid: \"GPU-acme-node-0\", health: FAILED, reason: \"xid 79 by hand\") { uuid } }",
            json!({}),
        ),
        (
            "mutation($n: ID!) { drainNode(id: $n) { id } }",
            json!({"n": node}),
        ),
    ];
    for (query, vars) in steps {
        let r = app.gql(Some(&op), query, vars).await;
        assert!(r["errors"].is_null(), "{r}");
    }
    let r = app
        .gql(Some(&key), "{ allocations { nodes { id } } }", json!({}))
        .await;
    let alloc = r["data"]["allocations"]["nodes"][0]["id"].clone();
    let r = app
        .gql(
            Some(&key),
            "mutation($a: ID!) { releaseAllocation(id: $a) { id } }",
            json!({"a": alloc}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    app.advance(TimeDelta::seconds(2));
    let invoice = app.close_period(&acme, "id").await;
    let r = app
        .gql(
            Some(&op),
            "mutation($i: ID!) { voidInvoice(id: $i, reason: \"test\") { id } }",
            json!({"i": invoice["id"]}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let r = app
        .gql(Some(&key), "mutation { setBudget(input: {monthlyLimit: \"0.01\", alertThresholds: [50], hardCap: true}) { budget { blockedSince } } }", json!({}))
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let seen = types_of(&feed(&app, &key, "first: 100").await);
    let expected = [
        "allocation.placed",
        "tenant.suspended",
        "tenant.resumed",
        "allocation.gpu_failed",
        "sla_credit.accrued",
        "allocation.ended",
        "invoice.finalized",
        "invoice.voided",
    ];
    let mut at = 0;
    for want in expected {
        let found = seen[at..].iter().position(|t| t == want);
        assert!(found.is_some(), "{want} missing after {at} in {seen:?}");
        at += found.unwrap_or(0) + 1;
    }
    // A tenant's feed holds none of the operator's events.
    assert!(
        seen.iter()
            .all(|t| !t.starts_with("node.") && !t.starts_with("gpu."))
    );
    let own = types_of(&feed(&app, &op, "first: 100").await);
    for want in ["node.registered", "gpu.health_changed", "node.drained"] {
        assert!(own.contains(&want.to_owned()), "{want} missing in {own:?}");
    }
}

async fn endpoints_are_checked_owned_and_redelivered(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, key) = app.create_tenant("acme").await;
    let (_, globex_key) = app.create_tenant("globex").await;
    let (url, recv) = receiver().await;
    for (input, field) in [
        (json!({"url": "ftp://example.com/x"}), "url"),
        (
            json!({"url": url, "eventTypes": ["node.drained"]}),
            "eventTypes",
        ),
        (json!({"url": url, "eventTypes": ["no.such"]}), "eventTypes"),
        (
            json!({"url": url, "description": "x".repeat(201)}),
            "description",
        ),
    ] {
        let r = app.gql(Some(&key), CREATE, json!({"i": input})).await;
        assert_eq!(r["errors"][0]["extensions"]["field"], field, "{r}");
    }
    let r = app
        .gql(Some(&key), "{ webhookEndpoints { id } }", json!({}))
        .await;
    assert_eq!(
        r["data"]["webhookEndpoints"],
        json!([]),
        "a refused create stored nothing"
    );
    let (id, secret) = endpoint(&app, &key, &url, json!([])).await;
    // Another tenant cannot see, change, test, rotate or delete it.
    let r = app
        .gql(Some(&globex_key), "{ webhookEndpoints { id } }", json!({}))
        .await;
    assert_eq!(r["data"]["webhookEndpoints"], json!([]));
    for query in [
        "mutation($id: ID!) { updateWebhookEndpoint(id: $id, input: {enabled: false}) { id } }",
        SEND_TEST,
        "mutation($id: ID!) { rotateWebhookSecret(id: $id) { secret } }",
    ] {
        let r = app.gql(Some(&globex_key), query, json!({"id": id})).await;
        assert_eq!(error_code(&r), Some("NOT_FOUND"), "{query}: {r}");
    }
    let r = app
        .gql(
            Some(&globex_key),
            "mutation($id: ID!) { deleteWebhookEndpoint(id: $id) }",
            json!({"id": id}),
        )
        .await;
    assert_eq!(r["data"]["deleteWebhookEndpoint"], false, "{r}");
    // A member of the tenant may not manage endpoints.
    let r = app
        .gql(
            Some(&key),
            "mutation { createApiKey(role: TENANT_MEMBER, label: \"m\") { apiKey } }",
            json!({}),
        )
        .await;
    let member = r["data"]["createApiKey"]["apiKey"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    let r = app.gql(Some(&member), SEND_TEST, json!({"id": id})).await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    // Delivered once; redelivered by hand with the same id.
    let event = send_test(&app, &key, &id).await;
    wait_for(&recv, 1).await;
    let r = app
        .gql(
            Some(&key),
            "mutation($p: ID!, $e: ID!) { redeliverWebhook(endpointId: $p, eventId: $e) }",
            json!({"p": id, "e": event}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let got = wait_for(&recv, 2).await;
    assert_eq!(got[0].headers["webhook-id"], got[1].headers["webhook-id"]);
    assert!(verifies(&secret, &got[1]));
    // Disabled, it takes nothing new.
    let r = app
        .gql(Some(&key), "mutation($id: ID!) { updateWebhookEndpoint(id: $id, input: {enabled: false}) { enabled disabledReason } }", json!({"id": id}))
        .await;
    assert_eq!(r["data"]["updateWebhookEndpoint"]["enabled"], false, "{r}");
    app.run_gpu_at_ten_a_second("acme", &key).await;
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(recv.got().len(), 2, "a disabled endpoint got an event");
    // Deleted, it is gone with its log.
    let r = app
        .gql(
            Some(&key),
            "mutation($id: ID!) { deleteWebhookEndpoint(id: $id) }",
            json!({"id": id}),
        )
        .await;
    assert_eq!(r["data"]["deleteWebhookEndpoint"], true, "{r}");
}

/// The catalog is served as JSON Schema, one entry per type, without a key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_catalog_is_served_as_json_schema() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("sqlite");
    let res = app
        .client
        .get(format!("{}/v1/events/schema", app.url))
        .send()
        .await
        .expect("get");
    assert_eq!(res.status().as_u16(), 200);
    let doc: Value = res.json().await.expect("json");
    let types = doc["types"].as_object().expect("types");
    assert!(types.len() >= 22, "{}", types.len());
    assert_eq!(types["allocation.placed"]["audience"], "tenant");
    assert_eq!(types["node.drained"]["audience"], "operator");
    assert!(
        types["allocation.placed"]["data"]["required"]
            .as_array()
            .expect("required")
            .contains(&json!("gpus"))
    );
    let checked_in: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/events.schema.json"
        ))
        .expect("docs/events.schema.json"),
    )
    .expect("json");
    assert_eq!(doc, checked_in, "regenerate docs/events.schema.json");
    let prose = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/events.md"))
        .expect("docs/events.md");
    for name in types.keys() {
        assert!(
            prose.contains(&format!("| `{name}` |")),
            "docs/events.md does not describe {name}"
        );
    }
}

async fn an_endpoint_failing_for_five_days_is_disabled_and_its_owner_told(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, key) = app.create_tenant("acme").await;
    let (broken_url, broken) = receiver().await;
    broken.answers.lock().expect("lock").extend([500; 50]);
    let (healthy_url, healthy) = receiver().await;
    let (broken_id, _) = endpoint(&app, &key, &broken_url, json!(["webhook.test"])).await;
    let (_, secret) = endpoint(
        &app,
        &key,
        &healthy_url,
        json!(["webhook_endpoint.disabled"]),
    )
    .await;
    send_test(&app, &key, &broken_id).await;
    wait_for(&broken, 1).await;

    // Four days of failures: retried, still enabled.
    app.advance(TimeDelta::days(4));
    wait_for(&broken, 2).await;
    let state = "{ webhookEndpoints { id enabled disabledReason failingSince } }";
    let r = app.gql(Some(&key), state, json!({})).await;
    let shown = |r: &Value| {
        r["data"]["webhookEndpoints"]
            .as_array()
            .expect("endpoints")
            .iter()
            .find(|e| e["id"] == broken_id.as_str())
            .cloned()
            .expect("the broken endpoint")
    };
    assert_eq!(shown(&r)["enabled"], true, "{r}");
    assert!(shown(&r)["failingSince"].is_string(), "{r}");

    // Past five days, the next failure disables it; the owner's other endpoint is told.
    app.advance(TimeDelta::days(1) + TimeDelta::hours(1));
    send_test(&app, &key, &broken_id).await;
    let told = wait_for(&healthy, 1).await;
    assert!(verifies(&secret, &told[0]));
    let event = body(&told[0]);
    assert_eq!(event["type"], "webhook_endpoint.disabled");
    assert_eq!(event["data"]["endpoint_id"], broken_id.as_str());
    let r = app.gql(Some(&key), state, json!({})).await;
    assert_eq!(shown(&r)["enabled"], false, "{r}");
    assert!(
        shown(&r)["disabledReason"]
            .as_str()
            .is_some_and(|why| why.contains("failed since")),
        "{r}"
    );
}

async fn events_past_the_retention_are_deleted_unless_still_owed(backend: Backend) {
    use neocloud_schema::clock::Clock;
    use neocloud_schema::entity::{event, webhook_attempt};
    use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};

    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, key) = app.create_tenant("acme").await;
    let (url, recv) = receiver().await;
    let (id, _) = endpoint(&app, &key, &url, json!(["webhook.test"])).await;
    let sent = [
        send_test(&app, &key, &id).await,
        send_test(&app, &key, &id).await,
    ];
    wait_for(&recv, 2).await;

    // A month on: one old event is owed again (redelivered to an endpoint now failing).
    app.advance(TimeDelta::days(31));
    recv.answers.lock().expect("lock").extend([500; 20]);
    let r = app
        .gql(
            Some(&key),
            "mutation($p: ID!, $e: ID!) { redeliverWebhook(endpointId: $p, eventId: $e) }",
            json!({"p": id, "e": sent[1]}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    wait_for(&recv, 3).await;
    let fresh = send_test(&app, &key, &id).await;

    let before = app.clock.now() - TimeDelta::days(30);
    let deleted = neocloud_api::startup::prune_events(&app.db, before)
        .await
        .expect("prune");
    assert_eq!(deleted, 1, "only the old event nothing owes");
    let kept: Vec<String> = event::Entity::find()
        .all(&app.db)
        .await
        .expect("events")
        .into_iter()
        .filter(|e| e.event_type == "webhook.test")
        .map(|e| e.id.to_string())
        .collect();
    assert_eq!(kept, vec![sent[1].clone(), fresh.clone()], "oldest first");
    let gone = uuid::Uuid::parse_str(&sent[0]).expect("uuid");
    let attempts = webhook_attempt::Entity::find()
        .filter(webhook_attempt::Column::EventId.eq(gone))
        .count(&app.db)
        .await
        .expect("attempts");
    assert_eq!(attempts, 0, "its delivery log went with it");
    // The feed never shows what is past the retention.
    let page = feed(&app, &key, "types: [\"webhook.test\"]").await;
    let ids: Vec<&str> = page["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["id"].as_str())
        .collect();
    assert_eq!(ids, vec![fresh.as_str()]);
}

async fn a_delivery_that_times_out_is_retried_with_its_id(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, key) = app.create_tenant("acme").await;
    let (url, recv) = receiver().await;
    recv.answers.lock().expect("lock").push(0);
    let (id, secret) = endpoint(&app, &key, &url, json!(["webhook.test"])).await;
    send_test(&app, &key, &id).await;
    wait_for(&recv, 1).await;
    // Never answered: the client gives up and logs why; the retry comes after the
    // backoff (the clock moves a second every 200 ms), with the same id, and delivers.
    let mut log = Value::Null;
    for _ in 0..150 {
        log = app.gql(Some(&key), ATTEMPTS, json!({})).await;
        let attempts = &log["data"]["webhookEndpoints"][0]["attempts"];
        if attempts.as_array().is_some_and(|a| a.len() == 2) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        app.advance(TimeDelta::seconds(1));
    }
    let attempts = &log["data"]["webhookEndpoints"][0]["attempts"];
    assert_eq!(attempts[0]["statusCode"], 200, "{log}");
    assert!(attempts[1]["statusCode"].is_null(), "{log}");
    assert!(
        attempts[1]["error"]
            .as_str()
            .is_some_and(|e| e.contains("timed out")),
        "{log}"
    );
    let both = wait_for(&recv, 2).await;
    assert_eq!(both[0].headers["webhook-id"], both[1].headers["webhook-id"]);
    assert!(verifies(&secret, &both[1]));
}
