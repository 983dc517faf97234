//! Chaos on the scaled-out pipeline, with real processes: a private PostgreSQL (initdb in
//! a temporary directory, its own port), a nats-server with JetStream and neocloud's trust
//! chain (`neocloud admin nats-bootstrap`), localstripe, two `api`, two `ingest` and one
//! `worker` process of `neocloud serve`, and eight simulated agents publishing to
//! JetStream with their own node credentials. A driver places and releases on-demand and
//! spot orders for three paying tenants through either API, and closes their billing
//! periods, while at seeded random times an ingest, API or worker process is killed with
//! SIGKILL and restarted, nats-server is killed and restarted on its store, PostgreSQL is
//! restarted in immediate mode (a crash), and one agent's network is cut (its NATS and
//! API connections closed and refused; it keeps sampling and spooling) for a fifth of the
//! run, at least 20 s and at most 3 minutes.
//!
//! Then, once every allocation has ended, everything is delivered (every agent's spool
//! empty, nothing left in JetStream or the journal) and every period is closed:
//! - every batch each agent made is in the database exactly once (its sequence numbers
//!   are 1..=n, each once) and nothing is quarantined or rejected;
//! - each node's active GPU-seconds in the store equal its simulator's ground truth (up
//!   to the 6-decimal rounding of a window's utilization), all of it attributed to
//!   allocations that existed or to nobody;
//! - no GPU was held by two allocations at once;
//! - no invoice was made twice (numbers unique, no two periods of a tenant overlap), and
//!   localstripe holds exactly one PaymentIntent per charged invoice and none for
//!   anything else.
//!
//! Per allocation, the store and the simulator divide a node's seconds differently by
//! design: a simulated agent learns of a release at its next assignments poll (15 s) and
//! keeps running the ended allocation's work until then, while the server gives a
//! device's seconds to whoever holds the device at the time (the rest to nobody, never
//! billed). So the ground truth is compared per node, where both views must agree.
//!
//! `NEOCLOUD_CHAOS_SECONDS` (default 90) sets how long the chaos lasts; the documented
//! long run is 900. `NEOCLOUD_CHAOS_SEED` replays a run: a failure prints the seed and
//! the command. Needs PostgreSQL's server binaries, nats-server and localstripe
//! (scripts/test-deps.sh); without them the test is skipped unless
//! `NEOCLOUD_REQUIRE_POSTGRES=1` / `NEOCLOUD_REQUIRE_NATS=1` /
//! `NEOCLOUD_REQUIRE_LOCALSTRIPE=1`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::Utc;
use neocloud_e2e::localstripe::{self, LocalStripe};
use neocloud_e2e::relay::{Link, Relay};
use neocloud_e2e::{binary, free_port};
use sea_orm::{ConnectionTrait, Database, DatabaseConnection, Statement};
use serde_json::{Value, json};

const AGENTS: usize = 8;
const TENANTS: usize = 3;
/// A GPU-minute costs 1.00: every invoice of a tenant that ran anything is worth charging.
const PRICE_PER_HOUR: &str = "60.00";

/// A small deterministic generator (xorshift), so a seed replays a run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

/// Runs `program` as the `postgres` user when this is root (initdb refuses root).
fn as_postgres(program: &Path) -> Command {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0"));
    if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// A PostgreSQL cluster of its own, stopped when dropped.
struct Postgres {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
}

impl Postgres {
    fn start(dir: &Path) -> Option<Postgres> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()
            .and_then(|versions| {
                versions
                    .filter_map(Result::ok)
                    .map(|v| v.path().join("bin"))
                    .max()
            })
            .filter(|b| b.join("initdb").exists());
        let Some(bin) = bin else {
            assert!(
                !required("NEOCLOUD_REQUIRE_POSTGRES"),
                "PostgreSQL's server binaries are missing"
            );
            eprintln!("skipping: no PostgreSQL server binaries");
            return None;
        };
        let data = dir.join("pg");
        std::fs::create_dir_all(&data).expect("pg dir");
        let _ = Command::new("chown")
            .args(["-R", "postgres"])
            .arg(dir)
            .status();
        let ok = as_postgres(&bin.join("initdb"))
            .args(["-A", "trust", "-U", "postgres", "-D"])
            .arg(&data)
            .stdout(Stdio::null())
            .status()
            .expect("initdb");
        assert!(ok.success(), "initdb failed");
        let pg = Postgres {
            bin,
            data,
            port: free_port(),
        };
        pg.ctl(&["start", "-w", "-t", "60"]);
        Some(pg)
    }

    fn ctl(&self, args: &[&str]) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1",
            self.port,
            self.data.display()
        );
        let status = as_postgres(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .args(["-o", &options, "-l"])
            .arg(self.data.join("log"))
            .args(args)
            .stdout(Stdio::null())
            .status()
            .expect("pg_ctl");
        assert!(status.success(), "pg_ctl {args:?} failed");
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// A crash: everything in flight is lost, the WAL replays what was committed.
    fn crash_and_restart(&self) {
        self.ctl(&["restart", "-m", "immediate", "-w", "-t", "60"]);
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = as_postgres(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .args(["stop", "-m", "immediate"])
            .stdout(Stdio::null())
            .status();
    }
}

/// A process the test may kill and start again as it was.
struct Proc {
    name: String,
    command: Box<dyn Fn() -> Command>,
    child: Option<Child>,
    log: PathBuf,
}

impl Proc {
    fn new(dir: &Path, name: &str, command: impl Fn() -> Command + 'static) -> Proc {
        let mut p = Proc {
            name: name.to_owned(),
            command: Box::new(command),
            child: None,
            log: dir.join(format!("{name}.log")),
        };
        p.start();
        p
    }

    fn start(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log");
        let child = (self.command)()
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", self.name));
        self.child = Some(child);
    }

    fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Killed with SIGKILL, and started again after `pause`.
    async fn crash(&mut self, pause: Duration) {
        self.kill9();
        tokio::time::sleep(pause).await;
        self.start();
    }

    fn tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn nats_server(dir: &Path, port: u16, config: &Path) -> Proc {
    let store = dir.join("jetstream");
    let config = config.to_owned();
    Proc::new(dir, "nats", move || {
        let mut c = Command::new("nats-server");
        c.args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
            .arg(&store)
            .arg("-c")
            .arg(&config);
        c
    })
}

/// What every `neocloud` process shares: the database, NATS, its trust chain and Stripe.
#[derive(Clone)]
struct Site {
    db: String,
    nats: String,
    /// neocloud's `[nats]` settings from `nats-bootstrap` (the account signing seed).
    nats_settings: PathBuf,
    stripe: String,
}

fn neocloud(dir: &Path, name: &str, role: &str, site: &Site) -> (Proc, String) {
    let port = free_port();
    let (role, site) = (role.to_owned(), site.clone());
    let listen = format!("127.0.0.1:{port}");
    let proc = Proc::new(dir, name, move || {
        let mut c = Command::new(binary("neocloud", "neocloud-api"));
        c.arg("--config")
            .arg(&site.nats_settings)
            .args(["serve", "--role", &role, "--listen", &listen])
            .args(["--database-url", &site.db])
            .env("NEOCLOUD_NATS__URL", &site.nats)
            .env("NEOCLOUD_STRIPE_SECRET_KEY", localstripe::KEY)
            .env("NEOCLOUD_STRIPE_WEBHOOK_SECRET", "whsec_chaos")
            .env("NEOCLOUD_STRIPE_API_BASE", &site.stripe)
            .env("NEOCLOUD_LIMITS__REQUESTS_PER_SECOND", "0");
        c
    });
    (proc, format!("http://127.0.0.1:{port}"))
}

/// `neocloud admin nats-bootstrap` into `dir`: the server's configuration and neocloud's
/// NATS settings.
fn nats_trust_chain(dir: &Path) -> (PathBuf, PathBuf) {
    let out = dir.join("nats-auth");
    let made = Command::new(binary("neocloud", "neocloud-api"))
        .args(["admin", "nats-bootstrap", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .status()
        .expect("nats-bootstrap");
    assert!(made.success(), "nats-bootstrap failed");
    (out.join("nats-server.conf"), out.join("neocloud-nats.toml"))
}

fn neocloud_admin(args: &[&str], db: &str) -> String {
    let out = Command::new(binary("neocloud", "neocloud-api"))
        .args(args)
        .args(["--database-url", db])
        .stderr(Stdio::null())
        .output()
        .expect("neocloud admin");
    assert!(out.status.success(), "neocloud {args:?} failed");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

async fn gql(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    query: &str,
    vars: Value,
) -> Option<Value> {
    let answer = client
        .post(format!("{url}/graphql"))
        .bearer_auth(key)
        .json(&json!({"query": query, "variables": vars}))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .ok()?;
    answer.json().await.ok()
}

/// `gql` that must succeed (set-up and the end of the run, when nothing is broken).
async fn gql_ok(client: &reqwest::Client, url: &str, key: &str, query: &str, vars: Value) -> Value {
    let r = gql(client, url, key, query, vars).await.expect("an answer");
    assert!(r["errors"].is_null(), "{query}: {r}");
    r["data"].clone()
}

async fn ready(client: &reqwest::Client, url: &str) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !client
        .get(format!("{url}/readyz"))
        .send()
        .await
        .is_ok_and(|r| r.status() == 200)
    {
        assert!(Instant::now() < deadline, "{url} never ready");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A simulated agent whose API and NATS connections pass through relays the test can cut.
struct Agent {
    proc: Proc,
    metrics: String,
    truth: PathBuf,
    api: Relay,
    nats: Relay,
}

impl Agent {
    async fn start(
        dir: &Path,
        i: usize,
        token: &str,
        creds: &str,
        site: &Site,
        api: &str,
    ) -> Agent {
        let address = |url: &str| {
            url.rsplit('/')
                .next()
                .and_then(|a| a.parse().ok())
                .expect("address")
        };
        let (api, nats) = (
            Relay::start(address(api)).await,
            Relay::start(address(&site.nats)).await,
        );
        let metrics = format!("127.0.0.1:{}", free_port());
        let creds_file = dir.join(format!("node-{i}.creds"));
        std::fs::write(&creds_file, creds).expect("credentials file");
        let truth = dir.join(format!("truth-{i}.jsonl"));
        let spool = dir.join(format!("spool-{i}"));
        let (server, nats_url, token) = (
            format!("http://{}", api.addr),
            format!("nats://{}", nats.addr),
            token.to_owned(),
        );
        let (m, t) = (metrics.clone(), truth.clone());
        let proc = Proc::new(dir, &format!("agent-{i}"), move || {
            let mut c = Command::new(binary("neocloud-agent", "neocloud-agent"));
            c.args(["run", "--simulate", "--seed", &i.to_string()])
                .args(["--server", &server, "--token", &token])
                .args([
                    "--transport",
                    "nats",
                    "--nats-url",
                    &nats_url,
                    "--nats-creds",
                ])
                .arg(&creds_file)
                .args(["--interval", "5", "--metrics-listen", &m, "--truth-out"])
                .arg(&t)
                .arg("--spool")
                .arg(&spool);
            c
        });
        Agent {
            proc,
            metrics,
            truth,
            api,
            nats,
        }
    }

    /// Cuts (or mends) the agent's network: its API and NATS links.
    fn link(&self, link: Link) {
        self.api.set(link);
        self.nats.set(link);
    }

    /// The simulation's active GPU-seconds so far, from its ground-truth file.
    fn true_active_seconds(&self) -> f64 {
        let text = std::fs::read_to_string(&self.truth).expect("truth file");
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("truth line"))
            .map(|v| v["active_seconds"].as_f64().expect("active_seconds"))
            .fold(0.0, |sum, s| sum + s)
    }
}

/// One value of an agent's `/metrics`, read on a plain socket.
fn metric(addr: &str, name: &str) -> Option<f64> {
    use std::io::{Read, Write};
    let mut socket = std::net::TcpStream::connect(addr).ok()?;
    socket.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(socket, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut body = String::new();
    socket.read_to_string(&mut body).ok()?;
    body.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse().ok())
}

async fn rows(db: &DatabaseConnection, sql: &str) -> Vec<sea_orm::QueryResult> {
    db.query_all_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .expect("query")
}

async fn count(db: &DatabaseConnection, sql: &str) -> i64 {
    rows(db, sql).await[0]
        .try_get("", "n")
        .expect("a count named n")
}

/// A paying tenant of the run.
struct Tenant {
    id: String,
    key: String,
    orders: Vec<String>,
}

/// Everything the driver talks to.
struct World {
    client: reqwest::Client,
    apis: [String; 2],
    operator: String,
    sku: String,
    tenants: Vec<Tenant>,
}

const PLACE: &str = "mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { id } } }";
const RELEASE: &str = "mutation($o: ID!) { releaseOrder(id: $o) { order { id } } }";
const CLOSE: &str = "mutation($t: ID!) { closeBillingPeriod(tenantId: $t) { id } }";

impl World {
    /// The fleet (one agent per node), a SKU and the tenants, each paying by card.
    async fn build(
        logs: &Path,
        site: &Site,
        stripe: &LocalStripe,
        operator: String,
        apis: [String; 2],
    ) -> (World, Vec<Agent>) {
        let client = reqwest::Client::new();
        let mut agents = Vec::new();
        for n in 0..AGENTS {
            let gpus: Vec<Value> = (0..8)
                .map(|i| json!({"uuid": format!("GPU-chaos-{n}-{i}"), "index": i}))
                .collect();
            let r = gql_ok(&client, &apis[0], &operator,
                "mutation($h: String!, $g: [GpuRegistrationInput!]!) { registerNode(input: {hostname: $h, region: \"eu-west\", zone: \"a\", rack: \"r1\", nvlinkDomain: $h, gpuModel: \"H100\", gpus: $g}) { agentToken natsCredentials } }",
                json!({"h": format!("chaos-{n}"), "g": gpus})).await;
            let node = &r["registerNode"];
            let (token, creds) = (
                node["agentToken"].as_str().expect("token"),
                node["natsCredentials"].as_str().expect("NATS credentials"),
            );
            agents.push(Agent::start(logs, n, token, creds, site, &apis[0]).await);
        }
        let r = gql_ok(&client, &apis[0], &operator,
            "mutation($p: String!) { createSku(input: {name: \"h100\", gpuModel: \"H100\", form: WHOLE_GPU, region: \"eu-west\", listPricePerHour: $p, currency: \"USD\"}) { sku { id } } }",
            json!({"p": PRICE_PER_HOUR})).await;
        let sku = r["createSku"]["sku"]["id"]
            .as_str()
            .expect("sku")
            .to_owned();
        let mut tenants = Vec::new();
        for t in 0..TENANTS {
            let r = gql_ok(&client, &apis[0], &operator,
                "mutation($n: String!) { createTenant(input: {name: $n, currency: \"USD\"}) { tenant { id } apiKey } }",
                json!({"n": format!("chaos-{t}")})).await;
            let (id, key) = (
                r["createTenant"]["tenant"]["id"].as_str().expect("id"),
                r["createTenant"]["apiKey"].as_str().expect("key"),
            );
            gql_ok(&client, &apis[0], key,
                "mutation($p: String!) { setDefaultPaymentMethod(paymentMethodId: $p) { defaultPaymentMethod } }",
                json!({"p": stripe.card().await})).await;
            tenants.push(Tenant {
                id: id.to_owned(),
                key: key.to_owned(),
                orders: Vec::new(),
            });
        }
        (
            World {
                client,
                apis,
                operator,
                sku,
                tenants,
            },
            agents,
        )
    }

    /// One step of a customer: a new order (on demand or spot), or a release.
    async fn drive(&mut self, rng: &mut Rng) {
        let url = &self.apis[usize::from(rng.below(2) == 1)];
        let tenant = &mut self.tenants[pick(rng, TENANTS)];
        if tenant.orders.len() < 6 && rng.below(3) != 0 {
            let class = if rng.below(3) == 0 {
                "SPOT"
            } else {
                "ON_DEMAND"
            };
            let input = json!({"sku": self.sku, "count": 1 + rng.below(8), "class": class});
            if let Some(r) = gql(&self.client, url, &tenant.key, PLACE, json!({"i": input})).await
                && let Some(id) = r["data"]["placeOrder"]["order"]["id"].as_str()
            {
                tenant.orders.push(id.to_owned());
            }
        } else if !tenant.orders.is_empty() {
            let i = pick(rng, tenant.orders.len());
            if let Some(r) = gql(
                &self.client,
                url,
                &tenant.key,
                RELEASE,
                json!({"o": tenant.orders[i]}),
            )
            .await
                && r["errors"].is_null()
            {
                tenant.orders.swap_remove(i);
            }
        }
    }

    /// An operator closes a tenant's period (its answer may be lost to the chaos).
    async fn close_a_period(&self, rng: &mut Rng) {
        let url = &self.apis[usize::from(rng.below(2) == 1)];
        let tenant = &self.tenants[pick(rng, TENANTS)];
        let _ = gql(
            &self.client,
            url,
            &self.operator,
            CLOSE,
            json!({"t": tenant.id}),
        )
        .await;
    }

    /// Every order released, retried until an API takes it.
    async fn release_everything(&mut self) {
        for tenant in &mut self.tenants {
            for order in tenant.orders.drain(..) {
                let deadline = Instant::now() + Duration::from_secs(60);
                while gql(
                    &self.client,
                    &self.apis[0],
                    &tenant.key,
                    RELEASE,
                    json!({"o": order}),
                )
                .await
                .is_none_or(|r| !r["errors"].is_null())
                {
                    assert!(
                        Instant::now() < deadline,
                        "order {order} could not be released"
                    );
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
    }

    async fn close_every_period(&self) {
        for tenant in &self.tenants {
            gql_ok(
                &self.client,
                &self.apis[0],
                &self.operator,
                CLOSE,
                json!({"t": tenant.id}),
            )
            .await;
        }
    }
}

fn pick(rng: &mut Rng, n: usize) -> usize {
    usize::try_from(rng.below(n as u64)).unwrap_or(0)
}

/// The processes of the run, which the chaos kills and restarts.
struct Processes {
    pg: Postgres,
    api_b: Proc,
    ingest: Vec<Proc>,
    worker: Proc,
    nats: Proc,
}

/// Which agent's network is cut, and until when.
type Cut = Option<(usize, Instant)>;

/// One seeded act of chaos, in turn by kind so each happens several times a run.
async fn chaos(
    step: usize,
    rng: &mut Rng,
    procs: &mut Processes,
    agents: &[Agent],
    cut: &mut Cut,
    cut_for: Duration,
    world: &World,
) {
    let pause = Duration::from_millis(500 + rng.below(2500));
    match step % 8 {
        0 => procs.ingest[0].crash(pause).await,
        1 => procs.nats.crash(pause).await,
        2 => procs.api_b.crash(pause).await,
        3 => procs.ingest[1].crash(pause).await,
        4 => procs.pg.crash_and_restart(),
        5 => procs.worker.crash(pause).await,
        6 => world.close_a_period(rng).await,
        _ => {
            if cut.is_none() {
                let i = pick(rng, AGENTS);
                agents[i].link(Link::Cut);
                *cut = Some((i, Instant::now() + cut_for));
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pipeline_counts_and_bills_everything_once_through_kills_and_restarts() {
    let seconds: u64 = std::env::var("NEOCLOUD_CHAOS_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(90);
    let seed = std::env::var("NEOCLOUD_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| Utc::now().timestamp_subsec_nanos().into())
        | 1;
    eprintln!(
        "chaos seed {seed}; replay: NEOCLOUD_CHAOS_SEED={seed} NEOCLOUD_CHAOS_SECONDS={seconds} \
         cargo test -p neocloud-e2e --test chaos -- --nocapture"
    );
    if Command::new("nats-server")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(!required("NEOCLOUD_REQUIRE_NATS"), "nats-server is missing");
        eprintln!("skipping: no nats-server");
        return;
    }
    let Some(stripe) = LocalStripe::start().await else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(pg) = Postgres::start(dir.path()) else {
        return;
    };
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).expect("logs");
    let (server_config, nats_settings) = nats_trust_chain(&logs);
    let nats_port = free_port();
    let site = Site {
        db: pg.url(),
        nats: format!("nats://127.0.0.1:{nats_port}"),
        nats_settings,
        stripe: format!("http://{}", stripe.addr),
    };
    let nats = nats_server(&logs, nats_port, &server_config);
    neocloud_admin(&["migrate"], &site.db);
    let operator = neocloud_admin(&["admin", "create-operator-key"], &site.db);

    let (_api_a, url_a) = neocloud(&logs, "api-a", "api", &site);
    let (api_b, url_b) = neocloud(&logs, "api-b", "api", &site);
    let ingest = (0..2)
        .map(|i| neocloud(&logs, &format!("ingest-{i}"), "ingest", &site).0)
        .collect();
    let (worker, _) = neocloud(&logs, "worker", "worker", &site);
    let db_url = pg.url();
    let mut procs = Processes {
        pg,
        api_b,
        ingest,
        worker,
        nats,
    };
    let client = reqwest::Client::new();
    ready(&client, &url_a).await;
    ready(&client, &url_b).await;
    let (mut world, agents) =
        World::build(&logs, &site, &stripe, operator, [url_a.clone(), url_b]).await;

    let mut rng = Rng(seed);
    let started = Instant::now();
    let cut_for = Duration::from_secs((seconds / 5).clamp(20, 180));
    let mut next_chaos = Instant::now() + Duration::from_secs(5 + rng.below(6));
    let (mut step, mut cut): (usize, Cut) = (0, None);
    while started.elapsed() < Duration::from_secs(seconds) {
        world.drive(&mut rng).await;
        if let Some((i, until)) = cut
            && Instant::now() > until
        {
            agents[i].link(Link::Up);
            cut = None;
        }
        if Instant::now() >= next_chaos {
            eprintln!(
                "chaos at {:>3} s: event {}",
                started.elapsed().as_secs(),
                step % 8
            );
            chaos(
                step, &mut rng, &mut procs, &agents, &mut cut, cut_for, &world,
            )
            .await;
            step += 1;
            next_chaos = Instant::now() + Duration::from_secs(3 + rng.below(8));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    if let Some((i, _)) = cut {
        agents[i].link(Link::Up);
    }
    ready(&client, &url_a).await;
    world.release_everything().await;
    // Agents learn of the releases at their next assignments poll (15 s) and the work
    // they stop is in a window 5 s later.
    tokio::time::sleep(Duration::from_secs(30)).await;
    settle(&client, &url_a, &world.operator, &agents).await;
    world.close_every_period().await;
    // Agents keep sending their idle GPUs' samples: what came in while periods closed is
    // journaled for a moment; it must drain too (a row stuck there fails `settle`).
    settle(&client, &url_a, &world.operator, &agents).await;
    let db = Database::connect(db_url).await.expect("database");
    let replay = format!(
        "seed {seed}: NEOCLOUD_CHAOS_SEED={seed} NEOCLOUD_CHAOS_SECONDS={seconds} cargo test -p neocloud-e2e --test chaos"
    );
    check_batches(&db, &replay).await;
    check_usage(&db, &agents, &replay).await;
    check_payments(&db, &stripe, &replay).await;
}

/// Waits until every agent's spool is empty and JetStream and the journal are drained.
async fn settle(client: &reqwest::Client, url: &str, operator: &str, agents: &[Agent]) {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let spooled: f64 = agents
            .iter()
            .map(|a| metric(&a.metrics, "neocloud_agent_batches_spooled").unwrap_or(f64::MAX))
            .sum();
        let health = gql(
            client,
            url,
            operator,
            "{ ingestHealth { pendingBatches stream { pending ackPending } } }",
            json!({}),
        )
        .await;
        let drained = health.as_ref().is_some_and(|h| {
            let i = &h["data"]["ingestHealth"];
            i["pendingBatches"] == 0
                && i["stream"]["pending"] == 0
                && i["stream"]["ackPending"] == 0
        });
        if spooled == 0.0 && drained {
            return;
        }
        if Instant::now() > deadline {
            let tails: Vec<String> = agents
                .iter()
                .map(|a| format!("{}:\n{}", a.proc.name, a.proc.tail()))
                .collect();
            panic!(
                "never settled: spooled {spooled}, {health:?}\n{}",
                tails.join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Every batch once: per agent and boot, sequence numbers 1..=n, each once; nothing
/// quarantined or rejected, and nothing left pending.
async fn check_batches(db: &DatabaseConnection, replay: &str) {
    for row in rows(db, "SELECT agent_id, count(*) AS n, min(seq) AS lo, max(seq) AS hi FROM ingest_batches GROUP BY agent_id, boot_id").await {
        let (n, lo, hi): (i64, i64, i64) = (row.try_get("", "n").expect("n"), row.try_get("", "lo").expect("lo"), row.try_get("", "hi").expect("hi"));
        let agent: String = row.try_get("", "agent_id").expect("agent");
        assert_eq!((lo, n), (1, hi), "{agent}'s stream has a gap ({replay})");
    }
    for table in ["ingest_quarantine", "ingest_rejections"] {
        let n = count(db, &format!("SELECT count(*) AS n FROM {table}")).await;
        assert_eq!(n, 0, "{table} is not empty ({replay})");
    }
    assert_eq!(
        stuck_in_journal(db).await,
        0,
        "ingest_pending is not empty ({replay})"
    );
}

/// How many of the journal's rows now are still there after 30 s. The idle agents keep
/// sending, so a batch may be journaled for a moment when it is looked at; none may stay.
async fn stuck_in_journal(db: &DatabaseConnection) -> usize {
    let ids = |rows: Vec<sea_orm::QueryResult>| -> std::collections::HashSet<String> {
        rows.iter()
            .map(|r| r.try_get("", "id").expect("id"))
            .collect()
    };
    let sql = "SELECT batch_id::text AS id FROM ingest_pending";
    let mut left = ids(rows(db, sql).await);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !left.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = ids(rows(db, sql).await);
        left.retain(|id| now.contains(id));
    }
    left.len()
}

/// Each node's active seconds in the store equal its simulator's truth; every second
/// belongs to an allocation that existed or to nobody; no GPU was held twice at once.
async fn check_usage(db: &DatabaseConnection, agents: &[Agent], replay: &str) {
    let stored: HashMap<String, f64> = rows(db, "SELECT n.hostname AS host, coalesce(sum(u.s), 0)::text AS s FROM nodes n JOIN ( \
        SELECT a.node_id, u.active_seconds::numeric AS s FROM usage_minutes u JOIN allocations a ON a.id = u.allocation_id \
        UNION ALL SELECT g.node_id, u.active_seconds::numeric FROM usage_minutes u JOIN gpus g ON g.uuid = u.device_uuid \
        WHERE u.allocation_id = '00000000-0000-0000-0000-000000000000') u ON u.node_id = n.id GROUP BY n.hostname").await
        .into_iter()
        .map(|r| {
            let host: String = r.try_get("", "host").expect("host");
            let s: String = r.try_get("", "s").expect("seconds");
            (host, s.parse().expect("a number"))
        })
        .collect();
    let mut busy = 0.0;
    for (n, agent) in agents.iter().enumerate() {
        let (truth, billed) = (
            agent.true_active_seconds(),
            stored.get(&format!("chaos-{n}")).copied().unwrap_or(0.0),
        );
        eprintln!("chaos-{n}: {billed:.6} active GPU-seconds stored, {truth:.6} in the simulation");
        // A window's utilization is kept to 6 decimals: at most 5e-9 s a device-window.
        assert!(
            (truth - billed).abs() < 1e-3,
            "chaos-{n} stored {billed} active seconds, the simulation ran {truth} ({replay})"
        );
        busy += truth;
    }
    assert!(busy > 0.0, "nothing ran ({replay})");
    let all = count(db, "SELECT count(*) AS n FROM allocations").await;
    let preempted = count(
        db,
        "SELECT count(*) AS n FROM allocations WHERE preempt_at IS NOT NULL",
    )
    .await;
    eprintln!("{all} allocations, {preempted} of them preempted");
    let strays = count(db, "SELECT count(*) AS n FROM usage_minutes u WHERE allocation_id <> '00000000-0000-0000-0000-000000000000' \
        AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.id = u.allocation_id)").await;
    assert_eq!(
        strays, 0,
        "usage attributed to allocations that never existed ({replay})"
    );
    // Every hourly roll-up is the sum of its minutes, whatever was killed mid-pass.
    let rolled_up = "SELECT allocation_id, date_trunc('hour', minute_start, 'UTC') AS hour_start, \
        sum(active_seconds) AS a, sum(memory_gib_seconds) AS m, sum(energy_kwh) AS e, sum(sampled_seconds) AS s \
        FROM usage_minutes WHERE allocation_id <> '00000000-0000-0000-0000-000000000000' GROUP BY 1, 2";
    let disagreeing = count(db, &format!("SELECT count(*) AS n FROM ({rolled_up}) m \
        FULL JOIN usage_hours h ON h.allocation_id = m.allocation_id AND h.hour_start = m.hour_start \
        WHERE h.active_seconds IS DISTINCT FROM m.a OR h.memory_gib_seconds IS DISTINCT FROM m.m \
        OR h.energy_kwh IS DISTINCT FROM m.e OR h.sampled_seconds IS DISTINCT FROM m.s")).await;
    assert_eq!(
        disagreeing, 0,
        "hourly roll-ups that are not the sum of their minutes ({replay})"
    );
    let overlaps: Vec<String> = rows(db, "SELECT concat_ws(' ', x.gpu_id, a.id, a.class, a.status, a.started_at, a.preempt_at, a.ended_at, \
        '/', b.id, b.class, b.status, b.started_at, b.preempt_at, b.ended_at) AS pair \
        FROM allocation_gpus x JOIN allocations a ON a.id = x.allocation_id \
        JOIN allocation_gpus y ON y.gpu_id = x.gpu_id AND y.allocation_id > x.allocation_id \
        JOIN allocations b ON b.id = y.allocation_id \
        WHERE a.started_at < coalesce(b.ended_at, 'infinity') AND b.started_at < coalesce(a.ended_at, 'infinity')").await
        .iter()
        .map(|r| r.try_get("", "pair").expect("pair"))
        .collect();
    if let Some(gpu) = overlaps.first().and_then(|o| o.split(' ').next()) {
        let history: Vec<String> = rows(db, &format!("SELECT concat_ws(' ', x.gpu_id, a.id, a.order_id, a.class, a.status, a.started_at, a.preempt_at, a.ended_at, o.created_at, o.status) AS h \
            FROM allocation_gpus x JOIN allocations a ON a.id = x.allocation_id JOIN orders o ON o.id = a.order_id WHERE x.gpu_id = '{gpu}' OR a.started_at IN (SELECT preempt_at FROM allocations) ORDER BY a.started_at")).await
            .iter().map(|r| r.try_get("", "h").expect("h")).collect();
        eprintln!("allocations of GPU {gpu}:\n{}", history.join("\n"));
    }
    assert!(
        overlaps.is_empty(),
        "GPUs held by two allocations at once ({replay}):\n{}",
        overlaps.join("\n")
    );
}

/// No invoice made twice, and one PaymentIntent per charged invoice at localstripe.
async fn check_payments(db: &DatabaseConnection, stripe: &LocalStripe, replay: &str) {
    let numbers = count(db, "SELECT count(*) AS n FROM (SELECT number FROM invoices WHERE number IS NOT NULL GROUP BY number HAVING count(*) > 1) d").await;
    assert_eq!(numbers, 0, "an invoice number used twice ({replay})");
    let overlapping = count(db, "SELECT count(*) AS n FROM invoices a JOIN invoices b ON a.tenant_id = b.tenant_id AND a.id < b.id \
        WHERE a.status <> 'void' AND b.status <> 'void' AND a.period_start < b.period_end AND b.period_start < a.period_end").await;
    assert_eq!(overlapping, 0, "two invoices for the same time ({replay})");
    // Every finalized invoice with something to pay is charged by the worker's outbox.
    let deadline = Instant::now() + Duration::from_secs(120);
    let waiting = "SELECT count(*) AS n FROM invoices i WHERE i.status <> 'draft' AND i.total::numeric > 0 AND NOT EXISTS ( \
        SELECT 1 FROM payment_outbox o WHERE o.invoice_id = i.id AND o.kind = 'charge_invoice' AND o.status = 'done')";
    while count(db, waiting).await > 0 {
        assert!(Instant::now() < deadline, "invoices never charged ({replay}): {:?}",
            rows(db, "SELECT kind || ' ' || status || ' ' || coalesce(last_error, '') AS row FROM payment_outbox WHERE status <> 'done'").await
                .iter().map(|r| r.try_get::<String>("", "row").unwrap_or_default()).collect::<Vec<_>>());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let charged: Vec<String> = rows(db, "SELECT i.id::text AS id FROM invoices i WHERE i.status <> 'draft' AND i.total::numeric > 0").await
        .iter()
        .map(|r| r.try_get("", "id").expect("id"))
        .collect();
    assert!(!charged.is_empty(), "no invoice to charge ({replay})");
    let mut intents: HashMap<String, usize> = HashMap::new();
    for intent in stripe.payment_intents().await {
        let invoice = intent["metadata"]["invoice_id"]
            .as_str()
            .unwrap_or("none")
            .to_owned();
        *intents.entry(invoice).or_default() += 1;
    }
    for invoice in &charged {
        assert_eq!(
            intents.remove(invoice),
            Some(1),
            "invoice {invoice}: not exactly one PaymentIntent ({replay})"
        );
    }
    assert!(
        intents.is_empty(),
        "PaymentIntents for nothing charged: {intents:?} ({replay})"
    );
    eprintln!("{} invoices charged, one PaymentIntent each", charged.len());
}
