//! Payment state through `POST /v1/stripe/webhook`: only genuine, fresh events count,
//! each once, in any order; without Stripe configured invoices are `EXTERNAL` and the
//! endpoint is unavailable.

mod support;

use neocloud_metering::payments::webhook;
use serde_json::{Value, json};
use support::{Backend, TestApp};

const SECRET: &str = "whsec_payments_test";
const INVOICE: &str =
    "query($id: ID!) { invoice(id: $id) { status paymentState paymentFailures } }";

async fn spawn(backend: Backend) -> Option<TestApp> {
    TestApp::spawn_with(backend, |s| {
        s.stripe_secret_key = Some("sk_test_payments".to_owned().into());
        s.stripe_webhook_secret = Some(SECRET.to_owned().into());
    })
    .await
}

/// A tenant with one finalized invoice: `charged` has run a GPU at 10.00 a second first.
async fn finalized_invoice(app: &TestApp, name: &str, charged: bool) -> (String, String) {
    let (tenant, key) = app.create_tenant(name).await;
    if charged {
        app.run_gpu_at_ten_a_second(name, &key).await;
        app.advance(chrono::TimeDelta::milliseconds(2100));
    }
    let invoice = app.close_period(&tenant, "id paymentState").await;
    let id = invoice["id"].as_str().expect("id").to_owned();
    (id, key)
}

fn event(id: &str, kind: &str, invoice: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"id": id, "object": "event", "type": kind, "created": 1_790_000_000,
        "data": {"object": {"id": "pi_123", "object": "payment_intent", "metadata": {"invoice_id": invoice}}}}))
    .expect("json")
}

async fn deliver(app: &TestApp, body: &[u8], signature: Option<String>) -> (u16, Value) {
    let mut req = app
        .client
        .post(format!("{}/v1/stripe/webhook", app.url))
        .header("content-type", "application/json")
        .body(body.to_vec());
    if let Some(signature) = signature {
        req = req.header("Stripe-Signature", signature);
    }
    let res = req.send().await.expect("post");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

async fn state(app: &TestApp, key: &str, id: &str) -> Value {
    app.gql(Some(key), INVOICE, json!({"id": id})).await["data"]["invoice"].clone()
}

async fn only_genuine_events_move_payment_state_once_and_forward(backend: Backend) {
    let Some(app) = spawn(backend).await else {
        return;
    };
    // Nothing ran: nothing to collect, settled at once.
    let (zero, key) = finalized_invoice(&app, "idle", false).await;
    let s = state(&app, &key, &zero).await;
    assert_eq!(
        (&s["status"], &s["paymentState"]),
        (&json!("PAID"), &json!("PAID")),
        "{s}"
    );

    let (id, key) = finalized_invoice(&app, "acme", true).await;
    let s = state(&app, &key, &id).await;
    assert_eq!(
        (&s["status"], &s["paymentState"]),
        (&json!("OPEN"), &json!("PENDING")),
        "{s}"
    );
    let body = event("evt_fail_1", "payment_intent.payment_failed", &id);

    // Forged, stale and unsigned deliveries are refused and change nothing.
    let forged = webhook::sign(&body, "whsec_wrong", now());
    let stale = webhook::sign(&body, SECRET, now() - 3600);
    for signature in [Some(forged), Some(stale), None] {
        let (code, _) = deliver(&app, &body, signature).await;
        assert_eq!(code, 400);
    }
    let tampered = event("evt_fail_1", "payment_intent.succeeded", &id);
    let (code, _) = deliver(&app, &tampered, Some(webhook::sign(&body, SECRET, now()))).await;
    assert_eq!(code, 400, "a signature for another body was accepted");
    assert_eq!(state(&app, &key, &id).await["paymentFailures"], 0);

    // A failure counts once, however often it is delivered.
    for _ in 0..2 {
        let (code, r) = deliver(&app, &body, Some(webhook::sign(&body, SECRET, now()))).await;
        assert_eq!(code, 200, "{r}");
    }
    let s = state(&app, &key, &id).await;
    assert_eq!(
        (&s["status"], &s["paymentState"], &s["paymentFailures"]),
        (&json!("OPEN"), &json!("PAYMENT_FAILED"), &json!(1)),
        "{s}"
    );
    let failed = app.events_of(&key, "invoice.payment_failed").await;
    assert_eq!(failed.len(), 1, "one event for one failure: {failed:?}");
    assert_eq!(
        (&failed[0]["invoice_id"], &failed[0]["failures"]),
        (&json!(id), &json!(1))
    );

    // Paid; a failure reported late does not undo it.
    let paid = event("evt_paid_1", "payment_intent.succeeded", &id);
    let (code, r) = deliver(&app, &paid, Some(webhook::sign(&paid, SECRET, now()))).await;
    assert_eq!((code, &r["outcome"]), (200, &json!("Applied")), "{r}");
    let late = event("evt_fail_2", "payment_intent.payment_failed", &id);
    let (code, r) = deliver(&app, &late, Some(webhook::sign(&late, SECRET, now()))).await;
    assert_eq!((code, &r["outcome"]), (200, &json!("Superseded")), "{r}");
    let s = state(&app, &key, &id).await;
    assert_eq!(
        (&s["status"], &s["paymentState"]),
        (&json!("PAID"), &json!("PAID")),
        "{s}"
    );
    let paid = app.events_of(&key, "invoice.paid").await;
    assert_eq!(paid.len(), 1, "{paid:?}");
    assert_eq!(paid[0]["invoice_id"], json!(id));
    assert_eq!(app.events_of(&key, "invoice.payment_failed").await.len(), 1);

    // Unknown kinds and unknown invoices are acknowledged and change nothing.
    let other = event("evt_other", "customer.created", &id);
    let (code, r) = deliver(&app, &other, Some(webhook::sign(&other, SECRET, now()))).await;
    assert_eq!((code, &r["outcome"]), (200, &json!("Ignored")), "{r}");
    let ghost = event(
        "evt_ghost",
        "invoice.paid",
        &uuid::Uuid::now_v7().to_string(),
    );
    let (code, r) = deliver(&app, &ghost, Some(webhook::sign(&ghost, SECRET, now()))).await;
    assert_eq!((code, &r["outcome"]), (200, &json!("UnknownObject")), "{r}");
}

async fn without_stripe_invoices_are_collected_externally(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (id, key) = finalized_invoice(&app, "acme", true).await;
    assert_eq!(state(&app, &key, &id).await["paymentState"], "EXTERNAL");
    let body = event("evt_1", "invoice.paid", &id);
    let (code, _) = deliver(&app, &body, Some(webhook::sign(&body, SECRET, now()))).await;
    assert_eq!(code, 503);
}

async fn tenant_status(app: &TestApp, key: &str) -> Value {
    app.gql(Some(key), "{ viewer { tenant { status } } }", json!({}))
        .await["data"]["viewer"]["tenant"]["status"]
        .clone()
}

async fn repeated_failures_suspend_the_tenant_until_it_pays(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, |s| {
        s.stripe_secret_key = Some("sk_test_payments".to_owned().into());
        s.stripe_webhook_secret = Some(SECRET.to_owned().into());
        s.billing.dunning_failures = 2;
    })
    .await
    else {
        return;
    };
    let (id, key) = finalized_invoice(&app, "acme", true).await;
    let fail = |n: u32| event(&format!("evt_dunning_{n}"), "invoice.payment_failed", &id);
    let first = fail(1);
    deliver(&app, &first, Some(webhook::sign(&first, SECRET, now()))).await;
    assert_eq!(tenant_status(&app, &key).await, "ACTIVE");
    let second = fail(2);
    deliver(&app, &second, Some(webhook::sign(&second, SECRET, now()))).await;
    assert_eq!(tenant_status(&app, &key).await, "SUSPENDED");
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ auditLog(first: 50) { edges { node { action actorKeyId } } } }",
            json!({}),
        )
        .await;
    assert!(
        r["data"]["auditLog"]["edges"]
            .as_array()
            .is_some_and(|e| e.iter().any(|e| e["node"]["action"] == "tenant.suspend")),
        "{r}"
    );
    let paid = event("evt_dunning_paid", "invoice.paid", &id);
    deliver(&app, &paid, Some(webhook::sign(&paid, SECRET, now()))).await;
    assert_eq!(tenant_status(&app, &key).await, "ACTIVE");
}

on_both_databases!(
    repeated_failures_suspend_the_tenant_until_it_pays,
    only_genuine_events_move_payment_state_once_and_forward,
    without_stripe_invoices_are_collected_externally,
);
