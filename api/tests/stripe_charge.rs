//! Charging invoices against a real Stripe emulator (`localstripe`, installed by
//! `scripts/test-deps.sh`, started here on a free port): customer → payment method →
//! finalized invoice → one PaymentIntent for its total carrying our ids → the webhook the
//! emulator signs → our invoice `PAID`; a declining card leaves it owed with the failure
//! counted once. Skipped when localstripe is missing, unless `NEOCLOUD_REQUIRE_LOCALSTRIPE=1`.

mod support;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rust_decimal::Decimal;
use serde_json::{Value, json};
use support::{Backend, TestApp};

struct LocalStripe {
    url: String,
    child: Child,
}

impl Drop for LocalStripe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn localstripe() -> Option<LocalStripe> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let child = Command::new("localstripe")
        .args(["--port", &port.to_string(), "--from-scratch"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let child = match child {
        Ok(child) => child,
        Err(e) => {
            assert!(
                std::env::var("NEOCLOUD_REQUIRE_LOCALSTRIPE").as_deref() != Ok("1"),
                "localstripe is required (scripts/test-deps.sh installs it): {e}"
            );
            eprintln!("localstripe not installed: skipping");
            return None;
        }
    };
    let url = format!("http://127.0.0.1:{port}");
    let emulator = LocalStripe { url, child };
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Some(emulator);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("localstripe did not start");
}

async fn form(client: &reqwest::Client, url: &str, fields: &[(&str, &str)]) -> Value {
    let res = client
        .post(url)
        .bearer_auth("sk_test_localstripe")
        .form(fields)
        .send()
        .await
        .expect("localstripe");
    res.json().await.unwrap_or(Value::Null)
}

async fn card(app: &TestApp, stripe: &LocalStripe, number: &str) -> String {
    let pm = form(
        &app.client,
        &format!("{}/v1/payment_methods", stripe.url),
        &[
            ("type", "card"),
            ("card[number]", number),
            ("card[exp_month]", "12"),
            ("card[exp_year]", "2030"),
            ("card[cvc]", "123"),
        ],
    )
    .await;
    pm["id"].as_str().expect("payment method").to_owned()
}

/// A tenant with `card` as default payment method that ran a GPU at 10.00 a second;
/// returns its closed invoice and the tenant's key.
async fn charged_tenant(app: &TestApp, name: &str, card: &str) -> (Value, String) {
    let (tenant, key) = app.create_tenant(name).await;
    let r = app
        .gql(
            Some(&key),
            "mutation($p: String!) { setDefaultPaymentMethod(paymentMethodId: $p) { stripeCustomerId defaultPaymentMethod } }",
            json!({"p": card}),
        )
        .await;
    let account = &r["data"]["setDefaultPaymentMethod"];
    assert!(
        account["stripeCustomerId"]
            .as_str()
            .is_some_and(|c| c.starts_with("cus_")),
        "{r}"
    );
    app.run_gpu_at_ten_a_second(name, &key).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($t: ID!) { closeBillingPeriod(tenantId: $t) { id number total status paymentState } }",
            json!({"t": tenant}),
        )
        .await;
    let invoice = r["data"]["closeBillingPeriod"].clone();
    assert_eq!(invoice["paymentState"], "PENDING", "{r}");
    (invoice, key)
}

async fn wait_for_state(app: &TestApp, id: &Value, state: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..100 {
        let r = app
            .gql(
                Some(&app.operator_key),
                "query($id: ID!) { invoice(id: $id) { status paymentState paymentFailures } }",
                json!({"id": id}),
            )
            .await;
        last = r["data"]["invoice"].clone();
        if last["paymentState"] == state {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("invoice never reached {state}: {last}");
}

async fn an_invoice_is_charged_once_and_paid_by_the_signed_webhook(backend: Backend) {
    let Some(stripe) = localstripe().await else {
        return;
    };
    let secret = format!("whsec_{}", uuid::Uuid::new_v4().simple());
    let (base, hook_secret) = (stripe.url.clone(), secret.clone());
    let Some(app) = TestApp::spawn_with(backend, move |s| {
        s.stripe_secret_key = Some("sk_test_localstripe".to_owned().into());
        s.stripe_webhook_secret = Some(hook_secret.into());
        s.stripe_api_base = Some(base);
        // Numbers of their own: the emulator keeps its objects between runs.
        s.billing.invoice_prefix = "LST".into();
    })
    .await
    else {
        return;
    };
    form(
        &app.client,
        &format!("{}/_config/webhooks/neocloud", stripe.url),
        &[
            ("url", &format!("{}/v1/stripe/webhook", app.url)),
            ("secret", &secret),
        ],
    )
    .await;

    let good = card(&app, &stripe, "4242424242424242").await;
    let (invoice, _) = charged_tenant(&app, "acme", &good).await;
    let paid = wait_for_state(&app, &invoice["id"], "PAID").await;
    assert_eq!(paid["status"], "PAID");
    let intents = app
        .client
        .get(format!("{}/v1/payment_intents?limit=100", stripe.url))
        .bearer_auth("sk_test_localstripe")
        .send()
        .await
        .expect("list")
        .json::<Value>()
        .await
        .expect("json");
    let ours: Vec<&Value> = intents["data"]
        .as_array()
        .expect("intents")
        .iter()
        .filter(|p| p["metadata"]["invoice_id"] == invoice["id"])
        .collect();
    assert_eq!(ours.len(), 1, "{intents}");
    let cents = (invoice["total"]
        .as_str()
        .expect("total")
        .parse::<Decimal>()
        .expect("decimal")
        * Decimal::ONE_HUNDRED)
        .to_string();
    assert_eq!(ours[0]["amount"].to_string(), cents.trim_end_matches(".00"));
    assert_eq!(ours[0]["metadata"]["invoice_number"], invoice["number"]);

    // A card that attaches but declines charges: still owed, the failure counted once
    // (the API answer and the webhook both report it).
    let declining = card(&app, &stripe, "4000000000000341").await;
    let (invoice, invoice_key) = charged_tenant(&app, "globex", &declining).await;
    let failed = wait_for_state(&app, &invoice["id"], "PAYMENT_FAILED").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let failed_later = wait_for_state(&app, &invoice["id"], "PAYMENT_FAILED").await;
    assert_eq!(failed["status"], "OPEN");
    assert_eq!(failed_later["paymentFailures"], 1, "{failed_later}");

    // A new card: the refused charge is tried again, and this time paid.
    let replacement = card(&app, &stripe, "4242424242424242").await;
    let r = app
        .gql(
            Some(&invoice_key),
            "mutation($p: String!) { setDefaultPaymentMethod(paymentMethodId: $p) { defaultPaymentMethod } }",
            json!({"p": replacement}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let paid = wait_for_state(&app, &invoice["id"], "PAID").await;
    assert_eq!(paid["status"], "PAID");
}

on_both_databases!(an_invoice_is_charged_once_and_paid_by_the_signed_webhook);
