//! The server killed (kill -9) while a Stripe call is in flight — Stripe has created the
//! PaymentIntent but its answer never came back, and no webhook tells of it — then
//! restarted on the same database: the payment is recognised from Stripe's event log, so
//! no second PaymentIntent is created and the top-up's credit is granted exactly once.
//!
//! Runs against the `localstripe` emulator (`scripts/test-deps.sh` installs it). It ignores
//! idempotency keys, so only neocloud's own recovery can keep the payment single here.
//! Skipped when localstripe is missing, unless `NEOCLOUD_REQUIRE_LOCALSTRIPE=1`.

use std::time::{Duration, Instant};

use neocloud_e2e::Demo;
use neocloud_e2e::localstripe::{KEY as STRIPE_KEY, LocalStripe};
use neocloud_e2e::relay::{Link, Relay};
use serde_json::Value;

async fn intents_for_top_up(stripe: &LocalStripe, top_up: &Value) -> Vec<Value> {
    stripe
        .payment_intents()
        .await
        .into_iter()
        .filter(|p| &p["metadata"]["top_up_id"] == top_up)
        .collect()
}

fn tenant_key(demo: &Demo) -> String {
    demo.credentials["tenants"][0]["key"]
        .as_str()
        .expect("key")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_9_during_a_stripe_call_creates_no_second_payment() {
    let Some(stripe) = LocalStripe::start().await else {
        return;
    };
    let relay = Relay::start(stripe.addr).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let database_url = format!("sqlite://{}?mode=rwc", dir.path().join("demo.db").display());
    let api_base = format!("http://{}", relay.addr);
    let env = [
        ("NEOCLOUD_STRIPE_SECRET_KEY", STRIPE_KEY),
        ("NEOCLOUD_STRIPE_WEBHOOK_SECRET", "whsec_crash"),
        ("NEOCLOUD_STRIPE_API_BASE", api_base.as_str()),
    ];
    let mut demo = Demo::start_with_env(dir.path(), &database_url, &["--no-agents"], &env).await;
    let key = tenant_key(&demo);
    let pm = stripe.card().await;
    let r = demo
        .gql_vars(
            &key,
            "mutation($p: String!) { setDefaultPaymentMethod(paymentMethodId: $p) { defaultPaymentMethod } }",
            serde_json::json!({"p": pm}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");

    // From now on Stripe's answers are held back; the top-up's PaymentIntent is created…
    relay.set(Link::HoldAnswers);
    let r = demo
        .gql(
            &key,
            "mutation { startTopUp(amount: \"120.00\") { id status } }",
        )
        .await;
    let top_up = r["data"]["startTopUp"]["id"].clone();
    assert!(top_up.is_string(), "{r}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while intents_for_top_up(&stripe, &top_up).await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the PaymentIntent was never created"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // …and the server dies before it hears back.
    demo.child.kill().expect("kill -9");
    demo.child.wait().expect("reaped");
    relay.set(Link::Up);

    let demo = Demo::start_with_env(dir.path(), &database_url, &["--no-agents"], &env).await;
    let key = tenant_key(&demo);
    let deadline = Instant::now() + Duration::from_secs(60);
    let paid = loop {
        let r = demo
            .gql(&key, "{ topUps { id status creditGrantId } }")
            .await;
        let found = r["data"]["topUps"]
            .as_array()
            .and_then(|all| all.iter().find(|t| t["id"] == top_up).cloned())
            .unwrap_or(Value::Null);
        if found["status"] == "PAID" {
            break found;
        }
        assert!(Instant::now() < deadline, "the top-up was never paid: {r}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // Give a wrongly repeated call time to show.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let intents = intents_for_top_up(&stripe, &top_up).await;
    assert_eq!(intents.len(), 1, "a second PaymentIntent: {intents:?}");
    let r = demo
        .gql(&key, "{ creditGrants { id amount reason } }")
        .await;
    let bought: Vec<&Value> = r["data"]["creditGrants"]
        .as_array()
        .expect("grants")
        .iter()
        .filter(|g| {
            g["reason"]
                .as_str()
                .is_some_and(|reason| reason.contains(top_up.as_str().unwrap_or("-")))
        })
        .collect();
    assert_eq!(bought.len(), 1, "{r}");
    assert_eq!(bought[0]["id"], paid["creditGrantId"]);
    assert_eq!(bought[0]["amount"], "120.00");
}
