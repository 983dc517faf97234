//! Test harness: the real application on port 0 with a fresh database per test — a SQLite
//! file in a temporary directory, or a new PostgreSQL database (dropped afterwards) when
//! one is reachable at `NEOCLOUD_TEST_POSTGRES_URL`
//! (default `postgres://postgres@127.0.0.1:5432/postgres`). With
//! `NEOCLOUD_REQUIRE_POSTGRES=1`, an unreachable PostgreSQL fails the test instead of
//! skipping it.
#![allow(dead_code)]

pub mod billing;
pub mod ingest;
pub mod nats;
pub mod receiver;

use std::sync::Arc;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use neocloud_api::settings::Settings;
use neocloud_api::startup::Application;
use neocloud_schema::clock::{Clock, ShiftedClock};
use sea_orm::{ConnectionTrait, Database, DatabaseConnection};
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Runs a scenario `async fn name(backend: Backend)` on both databases.
#[macro_export]
macro_rules! on_both_databases {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_sqlite() {
                super::$name($crate::support::Backend::Sqlite).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_postgres() {
                super::$name($crate::support::Backend::Postgres).await
            }
        }
    )+};
}

pub struct TestApp {
    pub url: String,
    pub db: DatabaseConnection,
    /// The settings it was started with.
    pub settings: Settings,
    /// The server's clock: tests move it forward instead of sleeping.
    pub clock: Arc<ShiftedClock>,
    pub operator_key: String,
    pub client: reqwest::Client,
    _dir: tempfile::TempDir,
    _pg: Option<PgDatabase>,
}

fn postgres_admin_url() -> String {
    std::env::var("NEOCLOUD_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

fn postgres_required() -> bool {
    std::env::var("NEOCLOUD_REQUIRE_POSTGRES").is_ok_and(|v| v == "1")
}

/// A database created for one test and dropped when the test ends.
struct PgDatabase {
    admin_url: String,
    name: String,
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let name = self.name.clone();
        // Drop runs inside the test's runtime; do the async cleanup on a thread of its own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                if let Ok(admin) = Database::connect(&admin_url).await {
                    let _ = admin
                        .execute_unprepared(&format!(
                            "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                        ))
                        .await;
                }
            });
        })
        .join();
    }
}

async fn fresh_postgres() -> Option<(String, PgDatabase)> {
    let admin_url = postgres_admin_url();
    let admin = match Database::connect(&admin_url).await {
        Ok(admin) => admin,
        Err(err) if postgres_required() => {
            panic!(
                "PostgreSQL is required (NEOCLOUD_REQUIRE_POSTGRES=1) but unreachable at {admin_url}: {err}"
            )
        }
        Err(err) => {
            eprintln!("skipping the PostgreSQL run: {admin_url} unreachable: {err}");
            return None;
        }
    };
    let name = format!("neocloud_test_{}", uuid::Uuid::new_v4().simple());
    admin
        .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
        .await
        .expect("create the test database");
    let (base, _) = admin_url
        .rsplit_once('/')
        .expect("a database URL has a path");
    Some((format!("{base}/{name}"), PgDatabase { admin_url, name }))
}

impl TestApp {
    /// `None` only when PostgreSQL is unreachable and not required.
    pub async fn spawn(backend: Backend) -> Option<TestApp> {
        Self::spawn_with(backend, |_| {}).await
    }

    /// Like `spawn`, with settings adjusted first.
    pub async fn spawn_with(
        backend: Backend,
        adjust: impl FnOnce(&mut Settings),
    ) -> Option<TestApp> {
        let dir = tempfile::tempdir().expect("tempdir");
        let (url, pg) = match backend {
            Backend::Sqlite => (
                format!("sqlite://{}/test.db?mode=rwc", dir.path().display()),
                None,
            ),
            Backend::Postgres => {
                let (url, pg) = fresh_postgres().await?;
                (url, Some(pg))
            }
        };
        let mut settings = Settings::for_tests(&url);
        // Test webhook receivers listen on loopback, which production refuses.
        settings.webhook_allow_hosts = "127.0.0.1".into();
        adjust(&mut settings);
        let clock = Arc::new(ShiftedClock::default());
        let app = Application::build_with_clock(settings.clone(), clock.clone())
            .await
            .expect("the app builds");
        let db = app.db().clone();
        let operator_key = neocloud_api::auth::bootstrap_operator_key(&db, "test operator")
            .await
            .expect("bootstrap key")
            .secret;
        let port = app.port();
        tokio::spawn(app.run_until_stopped());
        Some(TestApp {
            url: format!("http://127.0.0.1:{port}"),
            db,
            settings,
            clock,
            operator_key,
            client: reqwest::Client::new(),
            _dir: dir,
            _pg: pg,
        })
    }

    /// Another server process on the same database and clock (a replica), running every
    /// role; its URL. PostgreSQL only: SQLite refuses a second server.
    pub async fn second_server(&self) -> String {
        let mut settings = self.settings.clone();
        settings.listen = "127.0.0.1:0".into();
        let app = Application::build_with_db(settings, self.db.clone(), self.clock.clone())
            .await
            .expect("the second server builds");
        let url = format!("http://127.0.0.1:{}", app.port());
        tokio::spawn(app.run_until_stopped());
        url
    }

    /// POSTs a GraphQL request to the server at `url` (e.g. a second server).
    pub async fn gql_at(&self, url: &str, key: &str, query: &str, variables: Value) -> Value {
        self.client
            .post(format!("{url}/graphql"))
            .bearer_auth(key)
            .json(&json!({"query": query, "variables": variables}))
            .send()
            .await
            .expect("request")
            .json()
            .await
            .expect("JSON answer")
    }

    /// Moves the server's clock forward by `by`.
    pub fn advance(&self, by: TimeDelta) {
        self.clock.advance(by);
    }

    /// Moves the server's clock forward until `t` has passed.
    pub fn advance_past(&self, t: DateTime<Utc>) {
        let left = t - self.clock.now();
        if left >= TimeDelta::zero() {
            self.clock.advance(left + TimeDelta::milliseconds(1));
        }
    }

    /// Moves the server's clock to the start of the next minute, so that what a test does
    /// next (creating a tenant, assigning its plan) falls within one minute whatever the
    /// time of day.
    pub fn start_of_next_minute(&self) {
        let now = self.clock.now();
        let minute = now.duration_trunc(TimeDelta::minutes(1)).unwrap_or(now);
        self.advance_past(minute + TimeDelta::minutes(1));
    }

    /// POSTs a GraphQL request and returns the whole JSON answer.
    pub async fn gql(&self, key: Option<&str>, query: &str, variables: Value) -> Value {
        self.gql_status(key, query, variables).await.1
    }

    pub async fn gql_status(
        &self,
        key: Option<&str>,
        query: &str,
        variables: Value,
    ) -> (u16, Value) {
        let mut req = self
            .client
            .post(format!("{}/graphql", self.url))
            .json(&json!({"query": query, "variables": variables}));
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        let res = req.send().await.expect("request");
        let status = res.status().as_u16();
        (status, res.json().await.expect("JSON answer"))
    }

    /// Creates a tenant; returns (id, admin key).
    pub async fn create_tenant(&self, name: &str) -> (String, String) {
        let r = self
            .gql(
                Some(&self.operator_key),
                "mutation($n: String!) { createTenant(input: {name: $n, currency: \"USD\"}) { tenant { id } apiKey } }",
                json!({"n": name}),
            )
            .await;
        let p = &r["data"]["createTenant"];
        assert!(p.is_object(), "createTenant failed: {r}");
        (
            p["tenant"]["id"].as_str().expect("id").to_owned(),
            p["apiKey"].as_str().expect("key").to_owned(),
        )
    }

    /// The catalog entry `h100`: whole H100s in eu-west at 2.49 USD/h. Returns its id.
    pub async fn create_h100_sku(&self) -> String {
        let r = self
            .gql(
                Some(&self.operator_key),
                "mutation { createSku(input: {name: \"h100\", gpuModel: \"H100\", form: WHOLE_GPU, region: \"eu-west\", listPricePerHour: \"2.49\", currency: \"USD\"}) { sku { id } } }",
                json!({}),
            )
            .await;
        r["data"]["createSku"]["sku"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("createSku failed: {r}"))
            .to_owned()
    }

    /// Starts one GPU for the tenant of `key` on a node and SKU of its own (`{name}-node`,
    /// `{name}-h100`) priced 36000 per GPU-hour, i.e. 10.00 a second.
    pub async fn run_gpu_at_ten_a_second(&self, name: &str, key: &str) {
        self.register_node(&format!("{name}-node"), "H100", 1, "")
            .await;
        let r = self
            .gql(
                Some(&self.operator_key),
                "mutation($n: String!) { createSku(input: {name: $n, gpuModel: \"H100\", form: WHOLE_GPU, region: \"eu-west\", listPricePerHour: \"36000\", currency: \"USD\"}) { sku { id } } }",
                json!({"n": format!("{name}-h100")}),
            )
            .await;
        let sku = r["data"]["createSku"]["sku"]["id"].clone();
        let r = self
            .gql(
                Some(key),
                "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { id } } }",
                json!({"s": sku}),
            )
            .await;
        assert!(r["data"]["placeOrder"].is_object(), "{r}");
    }

    /// Creates a plan version from a `PlanVersionInput` (operator); returns its id.
    pub async fn create_plan_version(&self, input: Value) -> String {
        let r = self
            .gql(
                Some(&self.operator_key),
                "mutation($i: PlanVersionInput!) { createPlanVersion(input: $i) { planVersion { id } } }",
                json!({"i": input}),
            )
            .await;
        r["data"]["createPlanVersion"]["planVersion"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("createPlanVersion failed: {r}"))
            .to_owned()
    }

    /// Assigns plan version `version` to `tenant` (operator).
    pub async fn assign_plan(&self, tenant: &str, version: &str) {
        let r = self
            .gql(
                Some(&self.operator_key),
                "mutation($t: ID!, $v: ID!) { assignPlan(tenantId: $t, planVersionId: $v) { effectiveFrom } }",
                json!({"t": tenant, "v": version}),
            )
            .await;
        assert!(r["errors"].is_null(), "assignPlan failed: {r}");
    }

    /// Closes the tenant's billing period (operator); returns the finalized invoice with
    /// the `fields` asked for.
    pub async fn close_period(&self, tenant: &str, fields: &str) -> Value {
        let r = self
            .gql(
                Some(&self.operator_key),
                &format!("mutation($t: ID!) {{ closeBillingPeriod(tenantId: $t) {{ {fields} }} }}"),
                json!({"t": tenant}),
            )
            .await;
        let invoice = r["data"]["closeBillingPeriod"].clone();
        assert!(invoice.is_object(), "closeBillingPeriod failed: {r}");
        invoice
    }

    /// The `data` of the events of type `kind` the feed shows `key`, oldest first.
    pub async fn events_of(&self, key: &str, kind: &str) -> Vec<Value> {
        let r = self
            .gql(
                Some(key),
                "query($t: [String!]) { events(types: $t, first: 100) { events { data } } }",
                json!({"t": [kind]}),
            )
            .await;
        r["data"]["events"]["events"]
            .as_array()
            .unwrap_or_else(|| panic!("events failed: {r}"))
            .iter()
            .map(|e| e["data"].clone())
            .collect()
    }

    /// Creates the provider `rhein-gpu` (Rhein GPU GmbH, DE, paid in EUR outside
    /// neocloud); returns its API key.
    pub async fn create_rhein_provider(&self) -> String {
        let r = self
            .gql(
                Some(&self.operator_key),
                "mutation { createProvider(input: {name: \"rhein-gpu\", legalName: \"Rhein GPU GmbH\", country: \"DE\", currency: \"EUR\", payoutMethod: MANUAL}) { apiKey } }",
                json!({}),
            )
            .await;
        r["data"]["createProvider"]["apiKey"]
            .as_str()
            .unwrap_or_else(|| panic!("createProvider failed: {r}"))
            .to_owned()
    }

    /// Registers a node of `gpus` GPUs; returns (node id, agent token).
    pub async fn register_node(
        &self,
        hostname: &str,
        model: &str,
        gpus: usize,
        extra: &str,
    ) -> Value {
        let gpu_list: Vec<Value> = (0..gpus)
            .map(|i| json!({"uuid": format!("GPU-{hostname}-{i}"), "index": i}))
            .collect();
        self.gql(
            Some(&self.operator_key),
            &format!(
                "mutation($h: String!, $m: String!, $g: [GpuRegistrationInput!]!) {{
                   registerNode(input: {{hostname: $h, region: \"eu-west\", zone: \"eu-west-a\",
                     rack: \"r01\", nvlinkDomain: $h, gpuModel: $m, gpus: $g {extra}}})
                   {{ node {{ id hostname gpus {{ uuid index health }} }} agentToken natsCredentials }} }}"
            ),
            json!({"h": hostname, "m": model, "g": gpu_list}),
        )
        .await
    }
}

/// The agent token in a `registerNode` answer (`TestApp::register_node`).
pub fn agent_token(registered: &Value) -> String {
    registered["data"]["registerNode"]["agentToken"]
        .as_str()
        .unwrap_or_else(|| panic!("registerNode failed: {registered}"))
        .to_owned()
}

/// The `extensions.code` of the first error of a GraphQL answer.
pub fn error_code(answer: &Value) -> Option<&str> {
    answer["errors"][0]["extensions"]["code"].as_str()
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A child process, killed when dropped.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The lines a child's pipe prints, as they come.
pub fn lines_of(pipe: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(pipe)).map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    rx
}

/// The reference provisioner (`examples/provisioner/receiver.py`) running against `app`
/// with the endpoint secret `secret`: its process, its stdout lines, and its URL.
pub struct ReferenceReceiver {
    pub process: Killed,
    pub lines: std::sync::mpsc::Receiver<String>,
    pub url: String,
}

impl ReferenceReceiver {
    /// Starts it behind a new operator endpoint for `event_types`, the endpoint pointed
    /// at the port it listens on.
    pub async fn subscribed(app: &TestApp, event_types: &[&str]) -> ReferenceReceiver {
        let op = Some(app.operator_key.as_str());
        let r = app
            .gql(
                op,
                "mutation($t: [String!]!) { createWebhookEndpoint(input: {url: \"http://127.0.0.1:9/\", eventTypes: $t}) { secret endpoint { id } } }",
                json!({"t": event_types}),
            )
            .await;
        let created = &r["data"]["createWebhookEndpoint"];
        let secret = created["secret"].as_str().unwrap_or_else(|| panic!("{r}"));
        let receiver = ReferenceReceiver::start(app, secret);
        let r = app
            .gql(
                op,
                "mutation($id: ID!, $u: String!) { updateWebhookEndpoint(id: $id, input: {url: $u}) { id } }",
                json!({"id": created["endpoint"]["id"], "u": receiver.url}),
            )
            .await;
        assert!(r["errors"].is_null(), "{r}");
        receiver
    }

    fn start(app: &TestApp, secret: &str) -> ReferenceReceiver {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/provisioner/receiver.py"
        );
        let mut process = Killed(
            std::process::Command::new("python3")
                .args(["-u", script, "--listen", "127.0.0.1:0", "--secret", secret])
                .args(["--api", &app.url, "--operator-key", &app.operator_key])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("python3 runs the reference receiver"),
        );
        let lines = lines_of(process.0.stdout.take().expect("stdout"));
        let first = lines.recv().expect("the receiver says where it listens");
        let url = first
            .strip_prefix("listening on ")
            .expect(&first)
            .to_owned();
        ReferenceReceiver {
            process,
            lines,
            url,
        }
    }

    /// What it prints until a line contains `marker` (at most 30 s between lines).
    pub fn printed_until(&self, marker: &str) -> String {
        let mut printed = String::new();
        while !printed.contains(marker) {
            let line = self
                .lines
                .recv_timeout(std::time::Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("the receiver stopped short:\n{printed}"));
            printed.push_str(&line);
            printed.push('\n');
        }
        printed
    }
}
