//! The server killed (kill -9) while a Stripe call is in flight — Stripe has created the
//! PaymentIntent but its answer never came back, and no webhook tells of it — then
//! restarted on the same database: the payment is recognised from Stripe's event log, so
//! no second PaymentIntent is created and the top-up's credit is granted exactly once.
//!
//! Runs against the `localstripe` emulator (`scripts/test-deps.sh` installs it). It ignores
//! idempotency keys, so only neocloud's own recovery can keep the payment single here.
//! Skipped when localstripe is missing, unless `NEOCLOUD_REQUIRE_LOCALSTRIPE=1`.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use neocloud_e2e::Demo;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const STRIPE_KEY: &str = "sk_test_crash";

struct Emulator(Child);

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
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

async fn localstripe() -> Option<(Emulator, SocketAddr)> {
    let port = free_port();
    let child = localstripe_module_present().and_then(|()| {
        Command::new("python3")
            .args(["-m", "localstripe", "--from-scratch", "--port"])
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
    });
    let child = match child {
        Ok(child) => Emulator(child),
        Err(e) => {
            assert!(
                std::env::var("NEOCLOUD_REQUIRE_LOCALSTRIPE").as_deref() != Ok("1"),
                "localstripe is required (scripts/test-deps.sh installs it): {e}"
            );
            eprintln!("localstripe not installed: skipping");
            return None;
        }
    };
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(addr).await.is_err() {
        assert!(Instant::now() < deadline, "localstripe did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Some((child, addr))
}

/// A TCP relay to `upstream` that passes requests on at once and holds back the answers
/// while `hold` is set: Stripe acts on the call, the caller never hears of it.
async fn relay(upstream: SocketAddr, hold: Arc<AtomicBool>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let hold = hold.clone();
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    return;
                };
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
                });
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = match server_read.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    while hold.load(Ordering::SeqCst) {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    if client_write.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

async fn stripe_get(stripe: SocketAddr, path: &str) -> Value {
    reqwest::Client::new()
        .get(format!("http://{stripe}{path}"))
        .bearer_auth(STRIPE_KEY)
        .send()
        .await
        .expect("localstripe")
        .json()
        .await
        .expect("JSON")
}

async fn intents_for_top_up(stripe: SocketAddr, top_up: &Value) -> Vec<Value> {
    stripe_get(stripe, "/v1/payment_intents?limit=100").await["data"]
        .as_array()
        .expect("intents")
        .iter()
        .filter(|p| &p["metadata"]["top_up_id"] == top_up)
        .cloned()
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
    let Some((_emulator, stripe)) = localstripe().await else {
        return;
    };
    let hold = Arc::new(AtomicBool::new(false));
    let relayed = relay(stripe, hold.clone()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let database_url = format!("sqlite://{}?mode=rwc", dir.path().join("demo.db").display());
    let api_base = format!("http://{relayed}");
    let env = [
        ("NEOCLOUD_STRIPE_SECRET_KEY", STRIPE_KEY),
        ("NEOCLOUD_STRIPE_WEBHOOK_SECRET", "whsec_crash"),
        ("NEOCLOUD_STRIPE_API_BASE", api_base.as_str()),
    ];
    let mut demo = Demo::start_with_env(dir.path(), &database_url, &["--no-agents"], &env).await;
    let key = tenant_key(&demo);

    let pm = reqwest::Client::new()
        .post(format!("http://{stripe}/v1/payment_methods"))
        .bearer_auth(STRIPE_KEY)
        .form(&[
            ("type", "card"),
            ("card[number]", "4242424242424242"),
            ("card[exp_month]", "12"),
            ("card[exp_year]", "2030"),
            ("card[cvc]", "123"),
        ])
        .send()
        .await
        .expect("payment method")
        .json::<Value>()
        .await
        .expect("JSON");
    let r = demo
        .gql_vars(
            &key,
            "mutation($p: String!) { setDefaultPaymentMethod(paymentMethodId: $p) { defaultPaymentMethod } }",
            json!({"p": pm["id"]}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");

    // From now on Stripe's answers are held back; the top-up's PaymentIntent is created…
    hold.store(true, Ordering::SeqCst);
    let r = demo
        .gql_vars(
            &key,
            "mutation { startTopUp(amount: \"120.00\") { id status } }",
            json!({}),
        )
        .await;
    let top_up = r["data"]["startTopUp"]["id"].clone();
    assert!(top_up.is_string(), "{r}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while intents_for_top_up(stripe, &top_up).await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the PaymentIntent was never created"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // …and the server dies before it hears back.
    demo.child.kill().expect("kill -9");
    demo.child.wait().expect("reaped");
    hold.store(false, Ordering::SeqCst);

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
    let intents = intents_for_top_up(stripe, &top_up).await;
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
