//! Usage over NATS JetStream, against a real nats-server started per test: an agent's
//! batches published to its node's subject are counted exactly once (JetStream's duplicate
//! window, then the database's batch identity beyond it); messages that can never be
//! ingested are set aside where operators see them and the stream goes on; and a node's
//! credential, minted by the server, reaches its own subject only, expires, and is renewed
//! only with a valid agent token.

mod support;

use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use chrono::{TimeDelta, Utc};
use neocloud_agent::shipper::nats::{NatsShipper, credentials};
use neocloud_agent::shipper::{Compression, ShipOutcome, Shipper};
use neocloud_api::nats::credentials::{self as credentials_api, Bootstrap};
use neocloud_schema::ids::NodeId;
use neocloud_schema::ingest::Batch;
use neocloud_schema::usage_stream;
use serde_json::{Value, json};
use support::ingest::{self, Setup, active_seconds, setup};
use support::nats::NatsServer;
use support::{Backend, TestApp};
use uuid::Uuid;

/// The setup's batch as the agent's type.
fn batch(s: &Setup, boot: Uuid, seq: u64, offset: i64, sm: f64) -> Batch {
    serde_json::from_value(ingest::batch(s, &boot.to_string(), seq, offset, sm)).expect("a batch")
}

fn node_of(s: &Setup) -> NodeId {
    s.node.parse().expect("node id")
}

/// Registers another node; its id.
async fn other_node(app: &TestApp, host: &str) -> NodeId {
    let r = app.register_node(host, "H100", 8, "").await;
    r["data"]["registerNode"]["node"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .parse()
        .expect("node id")
}

/// Ships `batch` once the server has made the stream (it does so as it starts).
async fn ship(shipper: &NatsShipper, batch: &Batch) -> ShipOutcome {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match shipper.ship(batch).await {
            ShipOutcome::Retry { reason } if Instant::now() < deadline => {
                eprintln!("not yet: {reason}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            outcome => return outcome,
        }
    }
}

async fn ingest_health(app: &TestApp) -> Value {
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ ingestHealth { rejected { subject messageId nodeId reason } stream { pending ackPending } } }",
            json!({}),
        )
        .await;
    r["data"]["ingestHealth"].clone()
}

/// Waits until JetStream has nothing undelivered or unacknowledged for the workers.
async fn drained(app: &TestApp) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let health = ingest_health(app).await;
        let stream = &health["stream"];
        if stream["pending"] == json!(0) && stream["ackPending"] == json!(0) {
            return health;
        }
        assert!(Instant::now() < deadline, "never drained: {health}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Ingest health once it lists `n` rejections (or after 30 s, for the caller to judge).
async fn rejections(app: &TestApp, n: usize) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let health = ingest_health(app).await;
        let listed = health["rejected"].as_array().map_or(0, Vec::len);
        if listed >= n || Instant::now() >= deadline {
            return health;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Publishes raw bytes to `subject` with message id `id`, through JetStream.
async fn publish_raw(url: &str, subject: &str, id: &str, payload: Vec<u8>) {
    let client = async_nats::connect(url).await.expect("connect");
    let js = async_nats::jetstream::new(client);
    let mut headers = HeaderMap::new();
    headers.insert(usage_stream::MESSAGE_ID_HEADER, id);
    let ack = js
        .publish_with_headers(subject.to_owned(), headers, payload.into())
        .await
        .expect("publish");
    ack.await.expect("stored");
}

async fn usage_on_jetstream_counts_once_and_bad_messages_are_set_aside(backend: Backend) {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let url = nats.url.clone();
    let Some(app) = TestApp::spawn_with(backend, |s| s.nats.url = Some(url)).await else {
        return;
    };
    let s = setup(&app).await;
    let shipper = NatsShipper::connect(&nats.url, None, "eu-west", node_of(&s), Compression::Zstd)
        .await
        .expect("connect");
    let boot = Uuid::new_v4();
    let first = batch(&s, boot, 1, 0, 50.0);
    assert_eq!(ship(&shipper, &first).await, ShipOutcome::Accepted);
    assert_eq!(ship(&shipper, &first).await, ShipOutcome::Duplicate);
    drained(&app).await;
    // 10 s at 50 %: 5 busy seconds.
    assert_eq!(active_seconds(&app, &s).await, "5");

    // The same batch under another message id (as after JetStream's duplicate window):
    // stored in the stream, and the database knows it.
    let subject = shipper.subject().to_owned();
    let json = serde_json::to_vec(&first).expect("json");
    publish_raw(&nats.url, &subject, "beyond-the-window", json.clone()).await;
    // Not a batch; and a batch that does not speak for its subject's node.
    publish_raw(&nats.url, &subject, "garbage", b"{not json".to_vec()).await;
    let other_subject =
        usage_stream::subject("eu-west", other_node(&app, "hgx-1").await).expect("subject");
    publish_raw(&nats.url, &other_subject, "impostor", json).await;
    // The stream goes on behind them.
    assert_eq!(
        ship(&shipper, &batch(&s, boot, 2, 10, 100.0)).await,
        ShipOutcome::Accepted
    );
    drained(&app).await;
    assert_eq!(active_seconds(&app, &s).await, "15");

    // A message whose recording hit a busy database is retried after a delay, outside the
    // consumer's pending counts: wait for both rejections rather than for the counts.
    let health = rejections(&app, 2).await;
    let rejected = health["rejected"].as_array().expect("rejected");
    assert_eq!(rejected.len(), 2, "{health}");
    let garbage = rejected
        .iter()
        .find(|r| r["messageId"] == "garbage")
        .unwrap_or_else(|| panic!("{health}"));
    assert_eq!(garbage["nodeId"], json!(s.node));
    assert!(
        garbage["reason"]
            .as_str()
            .is_some_and(|r| r.contains("not an ingest v1 batch")),
        "{garbage}"
    );
    let impostor = rejected
        .iter()
        .find(|r| r["messageId"] == "impostor")
        .unwrap_or_else(|| panic!("{health}"));
    assert_eq!(impostor["subject"], json!(other_subject));
    assert!(
        impostor["reason"]
            .as_str()
            .is_some_and(|r| r.contains("hgx-0")),
        "{impostor}"
    );
    // Kept as long as events are, then gone.
    let rejections = neocloud_metering::ingest::rejections::prune;
    assert_eq!(
        rejections(&app.db, Utc::now() - TimeDelta::days(1))
            .await
            .expect("prune"),
        0
    );
    assert_eq!(
        rejections(&app.db, Utc::now() + TimeDelta::days(1))
            .await
            .expect("prune"),
        2
    );
    assert_eq!(ingest_health(&app).await["rejected"], json!([]));
}

on_both_databases!(usage_on_jetstream_counts_once_and_bad_messages_are_set_aside);

/// Server errors a connection reported (permission violations among them).
fn recording(
    options: async_nats::ConnectOptions,
) -> (
    async_nats::ConnectOptions,
    tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let options = options.event_callback(move |event| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(event.to_string().to_lowercase());
        }
    });
    (options, rx)
}

async fn violation(events: &mut tokio::sync::mpsc::UnboundedReceiver<String>, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, events.recv()).await {
            Ok(Some(event)) if event.contains("permissions violation") && event.contains(what) => {
                return;
            }
            Ok(Some(_)) => {}
            _ => panic!("no permissions violation for {what}"),
        }
    }
}

/// A trust chain, the nats-server trusting it and the server minting its credentials.
struct Minting {
    chain: Bootstrap,
    nats: NatsServer,
    app: TestApp,
    /// nats-server's account directory (its full resolver).
    _accounts: tempfile::TempDir,
}

/// A new trust chain, a nats-server in operator mode trusting it, and a server minting
/// its nodes' credentials valid for `hours` and handing revocations to nats-server;
/// `None` without nats-server.
async fn minting(hours: u32) -> Option<Minting> {
    let accounts = tempfile::tempdir().expect("tempdir");
    let chain = credentials_api::bootstrap(Utc::now().timestamp(), accounts.path()).expect("chain");
    let nats = NatsServer::start_with(Some(&chain.server_config))?;
    let url = nats.url.clone();
    let (account, seed) = (chain.account.clone(), chain.account_signing_seed.clone());
    let operator_seed = chain.operator_signing_seed.clone();
    let (system, system_seed) = (
        chain.system_account.clone(),
        chain.system_signing_seed.clone(),
    );
    let app = TestApp::spawn_with(Backend::Sqlite, move |s| {
        s.nats.url = Some(url);
        s.nats.account = Some(account);
        s.nats.account_signing_seed = Some(seed.into());
        s.nats.credential_hours = hours;
        s.nats.operator_signing_seed = Some(operator_seed.into());
        s.nats.system_account = Some(system);
        s.nats.system_signing_seed = Some(system_seed.into());
    })
    .await
    .expect("sqlite");
    Some(Minting {
        chain,
        nats,
        app,
        _accounts: accounts,
    })
}

/// The setup node's agent shipping over NATS with `creds` in a file of its own (the
/// connection goes on in the background): the file's directory, its path, the shipper.
async fn agent_with(
    nats: &NatsServer,
    s: &Setup,
    creds: &str,
) -> (tempfile::TempDir, std::path::PathBuf, NatsShipper) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("node.creds");
    std::fs::write(&path, creds).expect("write");
    let shipper = NatsShipper::connect(
        &nats.url,
        Some(&path),
        "eu-west",
        node_of(s),
        Compression::Gzip,
    )
    .await
    .expect("connect");
    (dir, path, shipper)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_credential_reaches_its_own_subject_only() {
    let Some(Minting { nats, app, .. }) = minting(24).await else {
        return;
    };
    let s = setup(&app).await;
    let other = other_node(&app, "hgx-1").await;
    // Without a credential, NATS refuses the connection.
    assert!(async_nats::connect(&nats.url).await.is_err());

    // The agent ships with it, and its batch counts.
    let minted = s.nats_credentials.as_deref().expect("minted");
    let (_dir, path, shipper) = agent_with(&nats, &s, minted).await;
    let boot = Uuid::new_v4();
    assert_eq!(
        ship(&shipper, &batch(&s, boot, 1, 0, 50.0)).await,
        ShipOutcome::Accepted
    );
    drained(&app).await;
    assert_eq!(active_seconds(&app, &s).await, "5");

    // Everything else is refused: another node's subject, reading usage, another inbox.
    let options = async_nats::ConnectOptions::with_credentials_file(&path)
        .await
        .expect("creds")
        .custom_inbox_prefix(usage_stream::inbox_prefix(node_of(&s)));
    let (options, mut events) = recording(options);
    let client = options.connect(&nats.url).await.expect("connect");
    let other_subject = usage_stream::subject("eu-west", other).expect("subject");
    client
        .publish(other_subject.clone(), "{}".into())
        .await
        .expect("sent");
    violation(&mut events, "publish").await;
    let _usage = client
        .subscribe(format!("{}.>", usage_stream::SUBJECT_PREFIX))
        .await
        .expect("asked");
    violation(&mut events, "subscription").await;
    let _inbox = client
        .subscribe(format!("{}.>", usage_stream::inbox_prefix(other)))
        .await
        .expect("asked");
    violation(&mut events, "subscription").await;
    // Nothing reached the stream from the refused publish.
    let health = drained(&app).await;
    assert_eq!(health["rejected"], json!([]), "{health}");
}

/// `GET /v1/agents/nats-credentials` as the agent of a token: (status, body).
async fn renewal(app: &TestApp, token: &str) -> (u16, String) {
    let res = app
        .client
        .get(format!("{}/v1/agents/nats-credentials", app.url))
        .bearer_auth(token)
        .send()
        .await
        .expect("renew");
    (res.status().as_u16(), res.text().await.expect("body"))
}

/// A node's credential expires (`nats.credential_hours`), nats-server refuses it after,
/// its agent renews it with the agent token, a connection picks the renewed file up on
/// its next attempt, and a rotated token renews nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_credential_expires_and_only_a_valid_agent_token_renews_it() {
    let Some(Minting {
        chain, nats, app, ..
    }) = minting(2).await
    else {
        return;
    };
    let now = Utc::now().timestamp();
    let s = setup(&app).await;
    let minted = s.nats_credentials.as_deref().expect("minted");
    let (issued, expires) = credentials::lifetime(minted).expect("it expires");
    assert_eq!(
        expires - issued,
        2 * 3600,
        "valid for nats.credential_hours"
    );

    // An expired credential of the node: nats-server refuses it.
    let authority = credentials_api::Authority::new(&chain.account, &chain.account_signing_seed)
        .expect("authority")
        .expiring_after(1);
    let expired = authority
        .node_credentials(node_of(&s), "eu-west", now - 60)
        .expect("minted")
        .creds;
    let refused = async_nats::ConnectOptions::with_credentials(&expired)
        .expect("creds")
        .connect(&nats.url)
        .await;
    assert!(refused.is_err(), "an expired credential connects");

    // The agent connects with the expired file, and gets on once it is renewed.
    let (_dir, path, shipper) = agent_with(&nats, &s, &expired).await;
    let (status, renewed) = renewal(&app, &s.token).await;
    assert_eq!(status, 200, "{renewed}");
    let (_, renewed_expiry) = credentials::lifetime(&renewed).expect("it expires");
    assert!(renewed_expiry >= expires, "a fresh credential");
    credentials::replace(&path, &renewed).expect("replace");
    assert_eq!(
        ship(&shipper, &batch(&s, Uuid::new_v4(), 1, 0, 50.0)).await,
        ShipOutcome::Accepted
    );
    drained(&app).await;
    assert_eq!(active_seconds(&app, &s).await, "5");

    // A rotated token is revoked: it renews nothing; the new one does.
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($n: ID!) { rotateAgentToken(nodeId: $n) { agentToken } }",
            json!({"n": s.node}),
        )
        .await;
    let rotated = r["data"]["rotateAgentToken"]["agentToken"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    assert_eq!(renewal(&app, &s.token).await.0, 401);
    assert_eq!(renewal(&app, &rotated).await.0, 200);
}

/// Whether nats-server lets `creds` connect (within a few seconds).
async fn connects(nats: &NatsServer, creds: &str) -> bool {
    let options = async_nats::ConnectOptions::with_credentials(creds)
        .expect("creds")
        .connection_timeout(Duration::from_secs(3));
    options.connect(&nats.url).await.is_ok()
}

/// Rotating a node's agent token cuts the node off NATS at once: nats-server closes the
/// connections of the node's credentials and refuses them, renewals included, while the
/// rotated token's credential and another node's work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_node_is_cut_off_nats_at_once() {
    let Some(Minting { nats, app, .. }) = minting(24).await else {
        return;
    };
    let s = setup(&app).await;
    let first = s.nats_credentials.clone().expect("minted");
    let (status, renewed) = renewal(&app, &s.token).await;
    assert_eq!(status, 200, "{renewed}");
    let r = app.register_node("hgx-1", "H100", 8, "").await;
    let other = r["data"]["registerNode"]["natsCredentials"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    let connected = async_nats::ConnectOptions::with_credentials(&first)
        .expect("creds")
        .connect(&nats.url)
        .await
        .expect("the node's credential connects");
    assert!(connects(&nats, &renewed).await);

    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($n: ID!) { rotateAgentToken(nodeId: $n) { natsCredentials } }",
            json!({"n": s.node}),
        )
        .await;
    let rotated = r["data"]["rotateAgentToken"]["natsCredentials"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();

    // Within seconds, not at the credentials' expiry a day later.
    let deadline = Instant::now() + Duration::from_secs(20);
    while connects(&nats, &first).await {
        assert!(
            Instant::now() < deadline,
            "the revoked credential still connects"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        !connects(&nats, &renewed).await,
        "a renewal before the rotation is revoked too"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while connected.connection_state() == async_nats::connection::State::Connected {
        assert!(Instant::now() < deadline, "the open connection stays");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        connects(&nats, &rotated).await,
        "the rotated token's credential"
    );
    assert!(connects(&nats, &other).await, "another node's credential");
}
