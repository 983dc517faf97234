//! The `localstripe` emulator on a free port (`scripts/test-deps.sh` installs it), killed
//! when dropped. It ignores idempotency keys, so only neocloud's own recovery keeps a
//! payment single against it. Missing, a test is skipped, unless
//! `NEOCLOUD_REQUIRE_LOCALSTRIPE=1` (CI), which fails it.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The secret key tests give neocloud and use themselves.
pub const KEY: &str = "sk_test_e2e";

pub struct LocalStripe {
    pub addr: SocketAddr,
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
fn module_present() -> std::io::Result<()> {
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

impl LocalStripe {
    pub async fn start() -> Option<LocalStripe> {
        let port = crate::free_port();
        let child = module_present().and_then(|()| {
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
        let stripe = LocalStripe {
            addr: ([127, 0, 0, 1], port).into(),
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while tokio::net::TcpStream::connect(stripe.addr).await.is_err() {
            assert!(Instant::now() < deadline, "localstripe did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Some(stripe)
    }

    /// `GET path` with the test key, as JSON.
    pub async fn get(&self, path: &str) -> Value {
        reqwest::Client::new()
            .get(format!("http://{}{path}", self.addr))
            .bearer_auth(KEY)
            .send()
            .await
            .expect("localstripe")
            .json()
            .await
            .expect("JSON")
    }

    /// Every PaymentIntent the emulator holds (listed 100 at a time).
    pub async fn payment_intents(&self) -> Vec<Value> {
        let mut all: Vec<Value> = Vec::new();
        loop {
            let after = all
                .last()
                .and_then(|p| p["id"].as_str())
                .map(|id| format!("&starting_after={id}"))
                .unwrap_or_default();
            let page = self
                .get(&format!("/v1/payment_intents?limit=100{after}"))
                .await;
            let data = page["data"].as_array().cloned().unwrap_or_default();
            all.extend(data);
            if page["has_more"] != Value::Bool(true) {
                return all;
            }
        }
    }

    /// A test card as a payment method (`pm_…`).
    pub async fn card(&self) -> String {
        let pm: Value = reqwest::Client::new()
            .post(format!("http://{}/v1/payment_methods", self.addr))
            .bearer_auth(KEY)
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
            .json()
            .await
            .expect("JSON");
        pm["id"].as_str().expect("a payment method id").to_owned()
    }
}
