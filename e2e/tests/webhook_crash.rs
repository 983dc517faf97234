//! The server killed (kill -9) while webhook deliveries are in flight — the receiver has
//! the request but has not answered — and with events committed but perhaps not yet
//! sent, then restarted on the same database: every event reaches the receiver, an
//! attempt that was in flight is sent once more with the same `webhook-id`, and nothing
//! else is sent twice.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use neocloud_e2e::Demo;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the receiver saw: each request's `webhook-id`, and whether it was answered.
#[derive(Default)]
struct Seen {
    requests: Mutex<Vec<(String, bool)>>,
    answer: AtomicBool,
}

impl Seen {
    fn ids(&self, answered: bool) -> Vec<String> {
        let requests = self.requests.lock().expect("lock");
        requests
            .iter()
            .filter(|(_, a)| *a == answered)
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// Reads one request's head and body; its `webhook-id`.
async fn webhook_id(socket: &mut TcpStream) -> Option<String> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&data).to_string();
        let Some(end) = text.find("\r\n\r\n") else {
            continue;
        };
        let header = |name: &str| {
            text[..end].lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
            })
        };
        let length: usize = header("content-length")?.parse().ok()?;
        if data.len() >= end + 4 + length {
            return header("webhook-id");
        }
    }
}

/// Keeps every request; answers 200 once `answer` is set, and until then holds the
/// connection open without a word.
async fn receiver(seen: Arc<Seen>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/hooks", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let Some(id) = webhook_id(&mut socket).await else {
                    return;
                };
                let answer = seen.answer.load(Ordering::SeqCst);
                seen.requests.lock().expect("lock").push((id, answer));
                if answer {
                    let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                    let _ = socket.write_all(ok).await;
                } else {
                    std::future::pending::<()>().await;
                }
            });
        }
    });
    url
}

fn operator_key(demo: &Demo) -> String {
    demo.credentials["operator_key"]
        .as_str()
        .expect("operator key")
        .to_owned()
}

async fn send_test(demo: &Demo, key: &str, endpoint: &Value) -> String {
    let r = demo
        .gql_vars(
            key,
            "mutation($id: ID!) { sendTestWebhook(id: $id) }",
            json!({"id": endpoint}),
        )
        .await;
    r["data"]["sendTestWebhook"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned()
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within 90 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_9_during_delivery_loses_nothing_and_resends_only_the_attempt_in_flight() {
    let seen = Arc::new(Seen::default());
    let url = receiver(seen.clone()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let database_url = format!("sqlite://{}?mode=rwc", dir.path().join("demo.db").display());
    let env = [
        ("NEOCLOUD_WEBHOOK_ALLOW_HOSTS", "127.0.0.1"),
        ("NEOCLOUD_WEBHOOKS__CLAIM_HOLD_SECONDS", "15"),
    ];
    let mut demo = Demo::start_with_env(dir.path(), &database_url, &["--no-agents"], &env).await;
    let key = operator_key(&demo);
    let r = demo
        .gql_vars(
            &key,
            "mutation($u: String!) { createWebhookEndpoint(input: {url: $u, eventTypes: [\"webhook.test\"]}) { endpoint { id } } }",
            json!({"u": url}),
        )
        .await;
    let endpoint = r["data"]["createWebhookEndpoint"]["endpoint"]["id"].clone();
    assert!(endpoint.is_string(), "{r}");

    // Two deliveries in flight, held unanswered…
    let mut events = vec![
        send_test(&demo, &key, &endpoint).await,
        send_test(&demo, &key, &endpoint).await,
    ];
    wait_until("both in flight", || seen.ids(false).len() == 2).await;
    // …two more committed, and the server dies at once.
    events.push(send_test(&demo, &key, &endpoint).await);
    events.push(send_test(&demo, &key, &endpoint).await);
    demo.child.kill().expect("kill -9");
    demo.child.wait().expect("reaped");
    let in_flight = seen.ids(false);
    seen.answer.store(true, Ordering::SeqCst);

    let demo = Demo::start_with_env(dir.path(), &database_url, &["--no-agents"], &env).await;
    wait_until("every event answered", || {
        let answered = seen.ids(true);
        events.iter().all(|e| answered.contains(e))
    })
    .await;
    // Give a wrongly repeated delivery time to show.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut sends: HashMap<String, usize> = HashMap::new();
    for (id, _) in seen.requests.lock().expect("lock").iter() {
        *sends.entry(id.clone()).or_default() += 1;
    }
    assert_eq!(sends.len(), events.len(), "only our events: {sends:?}");
    for event in &events {
        let expected = if in_flight.contains(event) { 2 } else { 1 };
        assert_eq!(
            sends[event],
            expected,
            "{event}: in flight at the kill: {}; {sends:?}",
            in_flight.contains(event)
        );
    }
    let r = demo
        .gql(
            &operator_key(&demo),
            "{ webhookEndpoints { deliveries { eventId status } } }",
        )
        .await;
    let deliveries = r["data"]["webhookEndpoints"][0]["deliveries"]
        .as_array()
        .expect("deliveries");
    assert_eq!(deliveries.len(), events.len(), "{r}");
    assert!(deliveries.iter().all(|d| d["status"] == "DELIVERED"), "{r}");
}
