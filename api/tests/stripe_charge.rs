//! Charging invoices against a real Stripe emulator (`localstripe`, installed by
//! `scripts/test-deps.sh`, started here on a free port): customer → payment method →
//! finalized invoice → one PaymentIntent for its total carrying our ids → the webhook the
//! emulator signs → our invoice `PAID`; a declining card leaves it owed with the failure
//! counted once; refused charges tried again on the retry schedule until dunning suspends
//! the tenant; prepaid top-ups whose payment grants the credit once. Skipped when
//! localstripe is missing, unless `NEOCLOUD_REQUIRE_LOCALSTRIPE=1`.

mod support;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use neocloud_metering::payments::gateway::Gateway;
use neocloud_metering::payments::outbox::{self, RetrySchedule};
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

/// Whether `python3` can import localstripe. The emulator runs as `python3 -m localstripe`:
/// pip installs the module where `python3` finds it, but its console script reaches `PATH`
/// only in some Python set-ups (not under pyenv's shims, for one).
fn localstripe_module_present() -> std::io::Result<()> {
    let status = Command::new("python3")
        .args(["-c", "import localstripe"])
        .stderr(Stdio::null())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other("python3 cannot import localstripe"))
    }
}

async fn localstripe() -> Option<LocalStripe> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let child = localstripe_module_present().and_then(|()| {
        Command::new("python3")
            .args(["-m", "localstripe", "--from-scratch", "--port"])
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
    });
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

/// Makes `card` the tenant's default payment method (its Stripe customer is created on
/// first use); returns the payment account.
async fn use_card(app: &TestApp, key: &str, card: &str) -> Value {
    let r = app
        .gql(
            Some(key),
            "mutation($p: String!) { setDefaultPaymentMethod(paymentMethodId: $p) { stripeCustomerId defaultPaymentMethod } }",
            json!({"p": card}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    r["data"]["setDefaultPaymentMethod"].clone()
}

/// A tenant with `card` as default payment method that ran a GPU at 10.00 a second;
/// returns its closed invoice and the tenant's key.
async fn charged_tenant(app: &TestApp, name: &str, card: &str) -> (Value, String) {
    let (tenant, key) = app.create_tenant(name).await;
    let account = use_card(app, &key, card).await;
    assert!(
        account["stripeCustomerId"]
            .as_str()
            .is_some_and(|c| c.starts_with("cus_")),
        "{account}"
    );
    app.run_gpu_at_ten_a_second(name, &key).await;
    app.advance(chrono::TimeDelta::milliseconds(1500));
    let invoice = app
        .close_period(&tenant, "id number total status paymentState")
        .await;
    assert_eq!(invoice["paymentState"], "PENDING", "{invoice}");
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

/// The webhook signing secret shared with the emulator.
const HOOK_SECRET: &str = "whsec_localstripe_test";

/// The API charging through `stripe`, whose webhooks it receives; `tune` adjusts settings.
async fn with_localstripe(
    backend: Backend,
    stripe: &LocalStripe,
    tune: impl FnOnce(&mut neocloud_api::settings::Settings) + Send + 'static,
) -> Option<TestApp> {
    let base = stripe.url.clone();
    let app = TestApp::spawn_with(backend, move |s| {
        s.stripe_secret_key = Some("sk_test_localstripe".to_owned().into());
        s.stripe_webhook_secret = Some(HOOK_SECRET.to_owned().into());
        s.stripe_api_base = Some(base);
        // Numbers of their own: the emulator keeps its objects between runs.
        s.billing.invoice_prefix = "LST".into();
        tune(s);
    })
    .await?;
    form(
        &app.client,
        &format!(
            "{}/_config/webhooks/{}",
            stripe.url,
            uuid::Uuid::new_v4().simple()
        ),
        &[
            ("url", &format!("{}/v1/stripe/webhook", app.url)),
            ("secret", HOOK_SECRET),
        ],
    )
    .await;
    Some(app)
}

/// Two payment workers (two replicas) find the same due charge: one claims it and calls
/// Stripe, the other leaves it alone — one PaymentIntent, not two (the emulator, unlike
/// Stripe, does not dedupe by idempotency key, so a second call would show).
async fn two_payment_workers_charge_a_due_invoice_once(backend: Backend) {
    let Some(stripe) = localstripe().await else {
        return;
    };
    let Some(app) = with_localstripe(backend, &stripe, |_| {}).await else {
        return;
    };
    let good = card(&app, &stripe, "4242424242424242").await;
    let (invoice, _) = charged_tenant(&app, "umbrella", &good).await;
    let gateway = Gateway::new("sk_test_localstripe", Some(&stripe.url));
    let retries = RetrySchedule(vec![chrono::TimeDelta::days(1)]);
    let (a, b) = tokio::join!(
        outbox::deliver_due(&app.db, &gateway, &retries, app.clock.as_ref()),
        outbox::deliver_due(&app.db, &gateway, &retries, app.clock.as_ref()),
    );
    assert!(a.expect("a worker") + b.expect("a worker") <= 1);
    let paid = wait_for_state(&app, &invoice["id"], "PAID").await;
    assert_eq!(paid["status"], "PAID");
    let ours = intents_for(&app, &stripe, "invoice_id", &invoice["id"]).await;
    assert_eq!(ours.len(), 1, "charged more than once: {ours:?}");
}

async fn an_invoice_is_charged_once_and_paid_by_the_signed_webhook(backend: Backend) {
    let Some(stripe) = localstripe().await else {
        return;
    };
    let Some(app) = with_localstripe(backend, &stripe, |_| {}).await else {
        return;
    };
    let good = card(&app, &stripe, "4242424242424242").await;
    let (invoice, _) = charged_tenant(&app, "acme", &good).await;
    let paid = wait_for_state(&app, &invoice["id"], "PAID").await;
    assert_eq!(paid["status"], "PAID");
    let ours = intents_for(&app, &stripe, "invoice_id", &invoice["id"]).await;
    assert_eq!(ours.len(), 1, "{ours:?}");
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
    use_card(&app, &invoice_key, &replacement).await;
    let paid = wait_for_state(&app, &invoice["id"], "PAID").await;
    assert_eq!(paid["status"], "PAID");
}

async fn tenant_status(app: &TestApp, key: &str) -> Value {
    app.gql(Some(key), "{ viewer { tenant { status } } }", json!({}))
        .await["data"]["viewer"]["tenant"]["status"]
        .clone()
}

async fn refused_charges_are_retried_on_schedule_until_dunning_then_paid(backend: Backend) {
    let Some(stripe) = localstripe().await else {
        return;
    };
    let Some(app) = with_localstripe(backend, &stripe, |s| {
        s.billing.charge_retry_seconds = "86400,172800".into();
        s.billing.dunning_failures = 3;
    })
    .await
    else {
        return;
    };
    let declining = card(&app, &stripe, "4000000000000341").await;
    let (invoice, key) = charged_tenant(&app, "initech", &declining).await;
    // The first charge and the retries a day and then two days later are refused: three
    // failures suspend. Nothing is retried before its day comes.
    let mut last = wait_for_state(&app, &invoice["id"], "PAYMENT_FAILED").await;
    for failures in [1, 2] {
        assert_eq!(last["paymentFailures"], failures, "{last}");
        app.advance(chrono::TimeDelta::hours(23));
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let early = wait_for_state(&app, &invoice["id"], "PAYMENT_FAILED").await;
        assert_eq!(early["paymentFailures"], failures, "retried early: {early}");
        app.advance(chrono::TimeDelta::days(if failures == 1 { 1 } else { 2 }));
        for _ in 0..100 {
            last = wait_for_state(&app, &invoice["id"], "PAYMENT_FAILED").await;
            if last["paymentFailures"] == failures + 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    assert_eq!(last["paymentFailures"], 3, "{last}");
    assert_eq!(tenant_status(&app, &key).await, "SUSPENDED");
    // The schedule is used up: no fourth try on its own, however long one waits.
    app.advance(chrono::TimeDelta::days(30));
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let still = wait_for_state(&app, &invoice["id"], "PAYMENT_FAILED").await;
    assert_eq!(still["paymentFailures"], 3, "{still}");
    let tries = intents_for(&app, &stripe, "invoice_id", &invoice["id"]).await;
    assert_eq!(tries.len(), 3, "{tries:?}");
    let keys: std::collections::HashSet<&Value> = tries
        .iter()
        .map(|p| &p["metadata"]["neocloud_key"])
        .collect();
    assert_eq!(keys.len(), 3, "each try has a key of its own: {tries:?}");

    // A working card: charged at once, paid, and the tenant resumed.
    let good = card(&app, &stripe, "4242424242424242").await;
    use_card(&app, &key, &good).await;
    wait_for_state(&app, &invoice["id"], "PAID").await;
    for _ in 0..50 {
        if tenant_status(&app, &key).await == "ACTIVE" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(tenant_status(&app, &key).await, "ACTIVE");
}

/// The emulator's PaymentIntents whose `metadata[field]` is `value`.
async fn intents_for(
    app: &TestApp,
    stripe: &LocalStripe,
    field: &str,
    value: &Value,
) -> Vec<Value> {
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
    intents["data"]
        .as_array()
        .expect("intents")
        .iter()
        .filter(|p| &p["metadata"][field] == value)
        .cloned()
        .collect()
}

const TOP_UP: &str = "mutation($a: String!, $k: String) { startTopUp(amount: $a, idempotencyKey: $k) { id amount currency status creditGrantId failure } }";

async fn wait_for_top_up(app: &TestApp, key: &str, id: &Value, status: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..100 {
        let r = app
            .gql(
                Some(key),
                "{ topUps { id status creditGrantId failure } }",
                json!({}),
            )
            .await;
        last = r["data"]["topUps"]
            .as_array()
            .and_then(|all| all.iter().find(|t| &t["id"] == id).cloned())
            .unwrap_or(Value::Null);
        if last["status"] == status {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("top-up never reached {status}: {last}");
}

async fn a_top_up_is_paid_once_and_grants_its_credit_once(backend: Backend) {
    let Some(stripe) = localstripe().await else {
        return;
    };
    let Some(app) = with_localstripe(backend, &stripe, |_| {}).await else {
        return;
    };
    let (_, key) = app.create_tenant("acme").await;
    // Without a publishable key the portal adds no cards.
    let r = app
        .gql(Some(&key), "{ cardSetupAvailable }", json!({}))
        .await;
    assert_eq!(r["data"]["cardSetupAvailable"], false, "{r}");
    let r = app.gql(Some(&key), START_CARD, json!({})).await;
    assert_eq!(support::error_code(&r), Some("UNAVAILABLE"), "{r}");
    // No payment method yet: refused, nothing recorded.
    let r = app.gql(Some(&key), TOP_UP, json!({"a": "250"})).await;
    assert_eq!(support::error_code(&r), Some("INVALID_STATE"), "{r}");
    let good = card(&app, &stripe, "4242424242424242").await;
    use_card(&app, &key, &good).await;
    for (amount, field) in [
        ("0.5", "amount"),
        ("2000000", "amount"),
        ("12.345", "amount"),
        ("ten", "amount"),
    ] {
        let r = app.gql(Some(&key), TOP_UP, json!({"a": amount})).await;
        assert_eq!(
            support::error_code(&r),
            Some("INVALID_INPUT"),
            "{amount}: {r}"
        );
        assert_eq!(r["errors"][0]["extensions"]["field"], field, "{r}");
    }
    let r = app.gql(Some(&key), "{ topUps { id } }", json!({})).await;
    assert_eq!(
        r["data"]["topUps"],
        json!([]),
        "rejected top-ups were recorded: {r}"
    );

    let r = app
        .gql(Some(&key), TOP_UP, json!({"a": "250.00", "k": "topup-1"}))
        .await;
    let top_up = r["data"]["startTopUp"].clone();
    assert_eq!(
        (&top_up["status"], &top_up["currency"]),
        (&json!("PENDING"), &json!("USD")),
        "{r}"
    );
    // A retried request returns the same top-up; another amount under its key conflicts.
    let again = app
        .gql(Some(&key), TOP_UP, json!({"a": "250", "k": "topup-1"}))
        .await;
    assert_eq!(again["data"]["startTopUp"]["id"], top_up["id"], "{again}");
    let other = app
        .gql(Some(&key), TOP_UP, json!({"a": "300", "k": "topup-1"}))
        .await;
    assert_eq!(
        support::error_code(&other),
        Some("IDEMPOTENCY_CONFLICT"),
        "{other}"
    );

    let paid = wait_for_top_up(&app, &key, &top_up["id"], "PAID").await;
    let grant = paid["creditGrantId"].clone();
    assert!(grant.is_string(), "{paid}");
    let intents = intents_for(&app, &stripe, "top_up_id", &top_up["id"]).await;
    assert_eq!(intents.len(), 1, "{intents:?}");
    assert_eq!(intents[0]["amount"], 25000);

    // Stripe's events delivered again — as they are, and under new ids — grant nothing more.
    let events = app
        .client
        .get(format!(
            "{}/v1/events?type=payment_intent.succeeded",
            stripe.url
        ))
        .bearer_auth("sk_test_localstripe")
        .send()
        .await
        .expect("events")
        .json::<Value>()
        .await
        .expect("json");
    let mut succeeded = events["data"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["data"]["object"]["metadata"]["top_up_id"] == top_up["id"])
        .cloned()
        .expect("the payment's event");
    for id in [
        succeeded["id"].clone(),
        json!("evt_redelivered_under_a_new_id"),
    ] {
        succeeded["id"] = id;
        let body = serde_json::to_vec(&succeeded).expect("json");
        let signature = neocloud_metering::payments::webhook::sign(
            &body,
            HOOK_SECRET,
            chrono::Utc::now().timestamp(),
        );
        let res = app
            .client
            .post(format!("{}/v1/stripe/webhook", app.url))
            .header("Stripe-Signature", signature)
            .body(body)
            .send()
            .await
            .expect("post");
        assert_eq!(res.status().as_u16(), 200);
    }
    let r = app
        .gql(
            Some(&key),
            "{ creditGrants { id kind amount remaining } }",
            json!({}),
        )
        .await;
    let grants = r["data"]["creditGrants"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(grants.len(), 1, "{r}");
    assert_eq!(grants[0]["id"], grant, "{r}");
    assert_eq!(
        (
            &grants[0]["kind"],
            &grants[0]["amount"],
            &grants[0]["remaining"]
        ),
        (&json!("PREPAID"), &json!("250.00"), &json!("250.00")),
        "{r}"
    );

    // A declining card: the top-up fails with Stripe's reason and grants nothing.
    let declining = card(&app, &stripe, "4000000000000341").await;
    use_card(&app, &key, &declining).await;
    let r = app.gql(Some(&key), TOP_UP, json!({"a": "100"})).await;
    let failed = wait_for_top_up(&app, &key, &r["data"]["startTopUp"]["id"], "FAILED").await;
    assert!(failed["failure"].is_string(), "{failed}");
    assert!(failed["creditGrantId"].is_null(), "{failed}");

    // The tenant was told of each, once.
    let succeeded = app.events_of(&key, "top_up.succeeded").await;
    assert_eq!(succeeded.len(), 1, "{succeeded:?}");
    assert_eq!(succeeded[0]["top_up_id"], top_up["id"]);
    assert_eq!(succeeded[0]["amount"], "250.00");
    let refused = app.events_of(&key, "top_up.failed").await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["top_up_id"], failed["id"]);
    assert_eq!(refused[0]["failure"], failed["failure"]);

    // Another tenant sees none of it.
    let (_, other_key) = app.create_tenant("globex").await;
    let r = app
        .gql(Some(&other_key), "{ topUps { id } }", json!({}))
        .await;
    assert_eq!(r["data"]["topUps"], json!([]), "{r}");
}

const ISSUE: &str = "mutation($i: IssueCreditNoteInput!) { issueCreditNote(input: $i) { id number total applied toBalance refunded refundState } }";

/// A credit note against an invoice Stripe charged refunds its amount to the same
/// PaymentIntent once (the refund's outcome recorded on the note); a refund beyond what
/// was collected is refused and changes nothing.
async fn a_credit_note_refunds_a_charged_invoice_once(backend: Backend) {
    let Some(stripe) = localstripe().await else {
        return;
    };
    let Some(app) = with_localstripe(backend, &stripe, |_| {}).await else {
        return;
    };
    let good = card(&app, &stripe, "4242424242424242").await;
    let (invoice, key) = charged_tenant(&app, "acme", &good).await;
    wait_for_state(&app, &invoice["id"], "PAID").await;
    let total: Decimal = invoice["total"]
        .as_str()
        .expect("total")
        .parse()
        .expect("decimal");
    let input = |amount: Decimal| {
        json!({"i": {"invoiceId": invoice["id"], "form": "AMOUNT", "amount": amount.to_string(),
                     "reason": "GPU preempted by maintenance", "refund": true}})
    };
    let r = app
        .gql(Some(&app.operator_key), ISSUE, input(total + Decimal::ONE))
        .await;
    assert_eq!(support::error_code(&r), Some("INVALID_INPUT"), "{r}");
    let r = app
        .gql(Some(&app.operator_key), ISSUE, input(Decimal::ONE))
        .await;
    let note = r["data"]["issueCreditNote"].clone();
    assert_eq!(
        (&note["refunded"], &note["refundState"], &note["applied"]),
        (&json!("1.00"), &json!("pending"), &json!("0.00")),
        "{r}"
    );
    let mut state = Value::Null;
    for _ in 0..100 {
        let r = app
            .gql(
                Some(&key),
                "query($id: ID!) { creditNote(id: $id) { refundState } }",
                json!({"id": note["id"]}),
            )
            .await;
        state = r["data"]["creditNote"]["refundState"].clone();
        if state != "pending" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(state, "done");
    // The ledger owed the refund from the note on, and sent it from Stripe's cash once.
    let r = app
        .gql(
            Some(&key),
            "{ ledgerBalances { account debits credits balance } }",
            json!({}),
        )
        .await;
    let refunds: Vec<&Value> = r["data"]["ledgerBalances"]
        .as_array()
        .expect("balances")
        .iter()
        .filter(|b| b["account"] == "REFUNDS_PAYABLE")
        .collect();
    assert_eq!(refunds.len(), 1, "{r}");
    assert_eq!(
        (
            &refunds[0]["debits"],
            &refunds[0]["credits"],
            &refunds[0]["balance"]
        ),
        (&json!("1.00"), &json!("1.00"), &json!("0.00")),
        "{r}"
    );
    let intent = intents_for(&app, &stripe, "invoice_id", &invoice["id"]).await;
    let refunds = app
        .client
        .get(format!(
            "{}/v1/refunds?payment_intent={}",
            stripe.url,
            intent[0]["id"].as_str().expect("intent")
        ))
        .bearer_auth("sk_test_localstripe")
        .send()
        .await
        .expect("list")
        .json::<Value>()
        .await
        .expect("json");
    let ours: Vec<&Value> = refunds["data"]
        .as_array()
        .expect("refunds")
        .iter()
        .filter(|r| r["metadata"]["credit_note_id"] == note["id"])
        .collect();
    assert_eq!(ours.len(), 1, "{refunds}");
    assert_eq!(ours[0]["amount"], 100);
}

const START_CARD: &str =
    "mutation { startCardSetup { setupIntentId clientSecret publishableKey stripeJsUrl } }";
const FINISH_CARD: &str = "mutation($s: String!) { finishCardSetup(setupIntentId: $s) { defaultPaymentMethod defaultPaymentMethodLabel } }";

/// Confirms a SetupIntent as Stripe.js does in the browser: with the publishable key and
/// the client secret, never the secret key. The emulator's answer.
async fn confirm_in_browser(
    app: &TestApp,
    stripe: &LocalStripe,
    setup: &Value,
    number: &str,
) -> Value {
    let id = setup["setupIntentId"].as_str().expect("setup intent");
    app.client
        .post(format!("{}/v1/setup_intents/{id}/confirm", stripe.url))
        .json(&json!({
            "key": setup["publishableKey"],
            "client_secret": setup["clientSecret"],
            "payment_method_data": {
                "type": "card",
                "card": {"number": number, "exp_month": "12", "exp_year": "2030", "cvc": "123"},
            },
        }))
        .send()
        .await
        .expect("localstripe")
        .json()
        .await
        .unwrap_or(Value::Null)
}

async fn start_card(app: &TestApp, key: &str) -> Value {
    let r = app.gql(Some(key), START_CARD, json!({})).await;
    assert!(r["errors"].is_null(), "{r}");
    r["data"]["startCardSetup"].clone()
}

/// A tenant admin adds a card as the portal does (a SetupIntent confirmed in the browser
/// with Stripe.js): only its own confirmed SetupIntent becomes the default, shown by what
/// the customer recognises, and a top-up is then charged to it.
async fn a_card_added_in_the_portal_becomes_the_default_and_pays(backend: Backend) {
    let Some(stripe) = localstripe().await else {
        return;
    };
    let js = format!("{}/js.stripe.com/v3/", stripe.url);
    let js_url = js.clone();
    let Some(app) = with_localstripe(backend, &stripe, move |s| {
        s.stripe_publishable_key = Some("pk_test_localstripe".into());
        s.stripe_js_url = Some(js_url);
    })
    .await
    else {
        return;
    };
    let (_, key) = app.create_tenant("acme").await;
    let (_, other) = app.create_tenant("globex").await;
    let member = app
        .gql(
            Some(&key),
            "mutation { createApiKey(role: TENANT_MEMBER) { apiKey } }",
            json!({}),
        )
        .await["data"]["createApiKey"]["apiKey"]
        .as_str()
        .expect("member key")
        .to_owned();
    let r = app.gql(Some(&member), START_CARD, json!({})).await;
    assert_eq!(support::error_code(&r), Some("FORBIDDEN"), "{r}");
    let r = app
        .gql(Some(&member), "{ cardSetupAvailable }", json!({}))
        .await;
    assert_eq!(r["data"]["cardSetupAvailable"], true, "{r}");

    let setup = start_card(&app, &key).await;
    let id = setup["setupIntentId"].as_str().expect("id").to_owned();
    assert!(id.starts_with("seti_"), "{setup}");
    assert!(
        setup["clientSecret"]
            .as_str()
            .is_some_and(|c| c.starts_with(&format!("{id}_secret_"))),
        "{setup}"
    );
    assert_eq!(
        (&setup["publishableKey"], &setup["stripeJsUrl"]),
        (&json!("pk_test_localstripe"), &json!(js))
    );
    // The portal page may load Stripe.js from there and nowhere else.
    let page = app
        .client
        .get(format!("{}/portal", app.url))
        .send()
        .await
        .expect("GET");
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        csp.contains(&format!("script-src 'self' {}", stripe.url)),
        "{csp}"
    );
    let page = app
        .client
        .get(format!("{}/console", app.url))
        .send()
        .await
        .expect("GET");
    assert!(
        !page.headers()["content-security-policy"]
            .to_str()
            .unwrap_or_default()
            .contains(&stripe.url)
    );

    // Not confirmed yet: refused, nothing set.
    let r = app.gql(Some(&key), FINISH_CARD, json!({"s": id})).await;
    assert_eq!(support::error_code(&r), Some("INVALID_STATE"), "{r}");
    for bad in ["pm_123", "seti_../x", ""] {
        let r = app.gql(Some(&key), FINISH_CARD, json!({"s": bad})).await;
        assert_eq!(support::error_code(&r), Some("INVALID_INPUT"), "{bad}: {r}");
    }
    let confirmed = confirm_in_browser(&app, &stripe, &setup, "4242424242424242").await;
    assert_eq!(confirmed["status"], "succeeded", "{confirmed}");
    // Another tenant cannot take it, whether or not it has a customer of its own.
    let r = app.gql(Some(&other), FINISH_CARD, json!({"s": id})).await;
    assert_eq!(support::error_code(&r), Some("NOT_FOUND"), "{r}");
    start_card(&app, &other).await;
    let r = app.gql(Some(&other), FINISH_CARD, json!({"s": id})).await;
    assert_eq!(support::error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = app
        .gql(
            Some(&other),
            "{ paymentAccount { defaultPaymentMethod } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["paymentAccount"]["defaultPaymentMethod"],
        Value::Null,
        "{r}"
    );

    let r = app.gql(Some(&key), FINISH_CARD, json!({"s": id})).await;
    let account = &r["data"]["finishCardSetup"];
    assert_eq!(
        account["defaultPaymentMethod"], confirmed["payment_method"],
        "{r}"
    );
    assert_eq!(
        account["defaultPaymentMethodLabel"], "Visa •••• 4242, expires 12/2030",
        "{r}"
    );
    let method = confirmed["payment_method"].as_str().expect("pm");
    let attached = stripe_get(&app, &stripe, &format!("/v1/payment_methods/{method}")).await;
    let customer = stripe_get(
        &app,
        &stripe,
        &format!(
            "/v1/customers/{}",
            attached["customer"].as_str().expect("attached")
        ),
    )
    .await;
    assert_eq!(
        customer["invoice_settings"]["default_payment_method"], method,
        "{customer}"
    );

    // A declined card leaves the default as it was.
    let declined_setup = start_card(&app, &key).await;
    let declined = confirm_in_browser(&app, &stripe, &declined_setup, "4000000000000002").await;
    assert!(declined["error"].is_object(), "{declined}");
    let r = app
        .gql(
            Some(&key),
            FINISH_CARD,
            json!({"s": declined_setup["setupIntentId"]}),
        )
        .await;
    assert_eq!(support::error_code(&r), Some("INVALID_STATE"), "{r}");
    let r = app
        .gql(
            Some(&key),
            "{ paymentAccount { defaultPaymentMethod } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["paymentAccount"]["defaultPaymentMethod"], method,
        "{r}"
    );

    // The card pays.
    let r = app
        .gql(Some(&key), TOP_UP, json!({"a": "50", "k": "card-top-up"}))
        .await;
    let top_up = r["data"]["startTopUp"]["id"].clone();
    assert!(top_up.is_string(), "{r}");
    wait_for_top_up(&app, &key, &top_up, "PAID").await;

    // Removed: detached at Stripe, no longer anyone's default, nothing charged to it.
    let r = app.gql(Some(&member), REMOVE_CARD, json!({})).await;
    assert_eq!(support::error_code(&r), Some("FORBIDDEN"), "{r}");
    let r = app.gql(Some(&other), REMOVE_CARD, json!({})).await;
    assert_eq!(support::error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = app.gql(Some(&key), REMOVE_CARD, json!({})).await;
    assert_eq!(
        r["data"]["removePaymentMethod"],
        json!({"defaultPaymentMethod": null, "defaultPaymentMethodLabel": null}),
        "{r}"
    );
    let detached = stripe_get(&app, &stripe, &format!("/v1/payment_methods/{method}")).await;
    assert_eq!(detached["customer"], Value::Null, "{detached}");
    let customer = stripe_get(
        &app,
        &stripe,
        &format!(
            "/v1/customers/{}",
            attached["customer"].as_str().unwrap_or_default()
        ),
    )
    .await;
    assert_eq!(
        customer["invoice_settings"]["default_payment_method"],
        Value::Null,
        "{customer}"
    );
    let r = app.gql(Some(&key), REMOVE_CARD, json!({})).await;
    assert_eq!(support::error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = app
        .gql(Some(&key), TOP_UP, json!({"a": "5", "k": "after-removal"}))
        .await;
    assert_eq!(support::error_code(&r), Some("INVALID_STATE"), "{r}");
    let audit = app
        .gql(
            Some(&key),
            "{ auditLog(filter: {action: \"payment_method.remove\"}) { edges { node { before } } } }",
            json!({}),
        )
        .await;
    let before: Value = serde_json::from_str(
        audit["data"]["auditLog"]["edges"][0]["node"]["before"]
            .as_str()
            .unwrap_or_default(),
    )
    .expect("the audit entry's before, as JSON");
    assert_eq!(
        (&before["label"], &before["payment_method"]),
        (&json!("Visa •••• 4242, expires 12/2030"), &json!(method)),
        "{audit}"
    );
}

const REMOVE_CARD: &str =
    "mutation { removePaymentMethod { defaultPaymentMethod defaultPaymentMethodLabel } }";

async fn stripe_get(app: &TestApp, stripe: &LocalStripe, path: &str) -> Value {
    app.client
        .get(format!("{}{path}", stripe.url))
        .bearer_auth("sk_test_localstripe")
        .send()
        .await
        .expect("localstripe")
        .json()
        .await
        .expect("json")
}

on_both_databases!(
    a_credit_note_refunds_a_charged_invoice_once,
    a_card_added_in_the_portal_becomes_the_default_and_pays,
    two_payment_workers_charge_a_due_invoice_once,
    an_invoice_is_charged_once_and_paid_by_the_signed_webhook,
    refused_charges_are_retried_on_schedule_until_dunning_then_paid,
    a_top_up_is_paid_once_and_grants_its_credit_once,
);
