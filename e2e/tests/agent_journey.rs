//! The host agent's journey: `neocloud demo --no-agents` as a separate process; a tenant
//! orders a GPU; a separate `neocloud-agent run --simulate` with that node's token from
//! the credentials file simulates exactly the node's registered devices, runs work for
//! the node's allocations, and ships. The server accepts every batch (the agent's own
//! `/metrics`: accepted, no invalid or refused ones; `/healthz` ok), the tenant sees the
//! allocation's usage, and after a `kill -9` and a restart the stream has no gap. The
//! agent reports its hardware (GPUs and their NVLink links) after its first cycle: a node
//! a partner registered is verified by it.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use neocloud_e2e::{Demo, binary};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http_get(addr: &str, path: &str) -> (u16, String) {
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return (0, String::new());
    };
    let _ = write!(s, "GET {path} HTTP/1.1\r\nHost: agent\r\n\r\n");
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

fn metric(body: &str, name: &str) -> f64 {
    body.lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
        .sum()
}

#[tokio::test]
async fn a_simulated_agent_bills_the_tenants_allocation_and_resumes_after_kill_9() {
    let dir = tempfile::tempdir().expect("tempdir");
    let database_url = format!("sqlite://{}?mode=rwc", dir.path().join("demo.db").display());
    let demo = Demo::start(dir.path(), &database_url, &["--no-agents"]).await;
    let creds = demo.credentials.clone();
    let client = reqwest::Client::new();
    let url = creds["url"].as_str().expect("url").to_owned();
    let tenant_key = creds["tenants"][0]["key"]
        .as_str()
        .expect("tenant key")
        .to_owned();
    let operator_key = creds["operator_key"]
        .as_str()
        .expect("operator key")
        .to_owned();
    let gql = |key: String, query: &'static str, variables: Value| {
        let client = client.clone();
        let url = url.clone();
        async move {
            client
                .post(format!("{url}/graphql"))
                .bearer_auth(key)
                .json(&json!({"query": query, "variables": variables}))
                .send()
                .await
                .expect("request")
                .json::<Value>()
                .await
                .expect("JSON")
        }
    };

    // A tenant orders one whole H100; the scheduler picks the node.
    let r = gql(
        tenant_key.clone(),
        "{ catalog { skus { id gpuModel form region } } }",
        json!({}),
    )
    .await;
    let sku = r["data"]["catalog"]["skus"]
        .as_array()
        .expect("skus")
        .iter()
        .find(|s| s["gpuModel"] == "H100" && s["form"] == "WHOLE_GPU")
        .expect("an H100 SKU")["id"]
        .clone();
    let r = gql(
        tenant_key.clone(),
        "mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { allocations { id node { hostname } } } } }",
        json!({"i": {"sku": sku, "count": 1}}),
    )
    .await;
    let allocation = &r["data"]["placeOrder"]["order"]["allocations"][0];
    let allocation_id = allocation["id"].as_str().expect("allocation id").to_owned();
    let node = allocation["node"]["hostname"]
        .as_str()
        .expect("node")
        .to_owned();
    let token = creds["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .find(|a| a["node"] == node.as_str())
        .expect("the node's agent token")["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let spool = dir.path().join("spool");
    let mut agent = Agent::start(&url, &token, &spool);
    let addr = agent.metrics_addr().await;
    agent.wait_accepted(&addr, 3.0).await;
    assert!(
        agent.logs().contains(&format!("agent_id={node}")),
        "the agent takes the node's registered hostname:\n{}",
        agent.logs()
    );
    let (status, body) = http_get(&addr, "/healthz");
    assert_eq!(status, 200, "{body}");

    // The tenant sees the allocation's usage: simulated work ran on its GPU.
    let now = unix_now();
    let window = json!({"f": rfc3339(now - 3600), "t": rfc3339(now + 3600)});
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = gql(
            tenant_key.clone(),
            "query($f: DateTime!, $t: DateTime!) { usage(from: $f, to: $t, groupBy: [ALLOCATION]) { rows { keys activeSeconds memoryGibSeconds } } }",
            window.clone(),
        )
        .await;
        let rows = r["data"]["usage"]["rows"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let active = rows
            .iter()
            .find(|row| row["keys"][0] == allocation_id.as_str())
            .and_then(|row| row["activeSeconds"].as_str()?.parse::<f64>().ok())
            .unwrap_or(0.0);
        if active > 0.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no active seconds for {allocation_id}: {r}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // kill -9, restart on the same spool: the stream goes on with the same boot and no gap.
    drop(agent);
    let mut agent = Agent::start(&url, &token, &spool);
    let addr = agent.metrics_addr().await;
    agent.wait_accepted(&addr, 2.0).await;
    let r = gql(
        operator_key,
        "{ ingestHealth { agents { agentId bootId lastSeq gaps } } }",
        json!({}),
    )
    .await;
    let streams: Vec<&Value> = r["data"]["ingestHealth"]["agents"]
        .as_array()
        .expect("streams")
        .iter()
        .filter(|s| s["agentId"] == node.as_str())
        .collect();
    assert_eq!(streams.len(), 1, "one boot across the restart: {r}");
    assert_eq!(streams[0]["gaps"], 0, "{r}");
    assert!(streams[0]["lastSeq"].as_i64().unwrap_or(0) >= 5, "{r}");
    assert!(
        agent.logs().contains("Hardware reported.")
            && agent.logs().contains("verification=trusted"),
        "the agent reports its hardware; an operator's node stays trusted:\n{}",
        agent.logs()
    );

    // A partner registers a node of its own: pending until its agent reports the
    // registered hardware, then verified.
    let partner_key = creds["providers"][0]["key"]
        .as_str()
        .expect("partner key")
        .to_owned();
    let gpus: Vec<Value> = (0..2)
        .map(|i| json!({"uuid": format!("GPU-partner-9-{i}"), "index": i}))
        .collect();
    let r = gql(
        partner_key.clone(),
        "mutation($i: RegisterNodeInput!) { registerNode(input: $i) { node { verification } agentToken } }",
        json!({"i": {"hostname": "partner-9", "region": "us-east", "zone": "us-east-b", "rack": "r99",
                     "nvlinkDomain": "partner-9", "gpuModel": "H200", "gpus": gpus}}),
    )
    .await;
    assert_eq!(
        r["data"]["registerNode"]["node"]["verification"], "PENDING",
        "{r}"
    );
    let partner_token = r["data"]["registerNode"]["agentToken"]
        .as_str()
        .expect("token")
        .to_owned();
    let _partner_agent = Agent::start(&url, &partner_token, &dir.path().join("spool-partner"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = gql(
            partner_key.clone(),
            "{ providerNodes { hostname verification } }",
            json!({}),
        )
        .await;
        let verified = r["data"]["providerNodes"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|n| n["hostname"] == "partner-9" && n["verification"] == "VERIFIED");
        if verified {
            break;
        }
        assert!(Instant::now() < deadline, "partner-9 was not verified: {r}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

struct Agent {
    process: Killed,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Agent {
    fn start(url: &str, token: &str, spool: &Path) -> Agent {
        let mut child = Command::new(binary("neocloud-agent", "neocloud-agent"))
            .args([
                "run",
                "--simulate",
                "--seed",
                "7",
                "--server",
                url,
                "--token",
                token,
            ])
            .arg("--spool")
            .arg(spool)
            .args(["--interval", "1", "--metrics-listen", "127.0.0.1:0"])
            .env("RUST_LOG", "info")
            .env_remove("NEOCLOUD_AGENT_FAILPOINT")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn neocloud-agent");
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let pipe = child.stderr.take().expect("stderr");
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                sink.lock().expect("lines").push(line);
            }
        });
        Agent {
            process: Killed(child),
            lines,
        }
    }

    fn logs(&self) -> String {
        self.lines.lock().expect("lines").join("\n")
    }

    async fn metrics_addr(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.process.0.try_wait().expect("poll") {
                panic!("neocloud-agent exited with {status}:\n{}", self.logs());
            }
            let found = self.lines.lock().expect("lines").iter().find_map(|l| {
                l.split_whitespace()
                    .find_map(|w| w.strip_prefix("addr="))
                    .map(str::to_owned)
            });
            if let Some(a) = found {
                return a;
            }
            assert!(
                Instant::now() < deadline,
                "agent did not start:\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Polls the agent's `/metrics` until `n` batches were accepted; any invalid or
    /// refused batch fails the journey.
    async fn wait_accepted(&self, addr: &str, n: f64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (_, body) = http_get(addr, "/metrics");
            let accepted = metric(
                &body,
                "neocloud_agent_batches_acked_total{status=\"accepted\"}",
            );
            let invalid = metric(
                &body,
                "neocloud_agent_ship_errors_total{reason=\"invalid\"}",
            );
            let refused = metric(
                &body,
                "neocloud_agent_ship_errors_total{reason=\"unauthorized\"}",
            );
            assert_eq!(
                invalid,
                0.0,
                "the server called a batch invalid:\n{}",
                self.logs()
            );
            assert_eq!(
                refused,
                0.0,
                "the server refused the token:\n{}",
                self.logs()
            );
            if accepted >= n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "fewer than {n} accepted batches within 60 s:\n{body}\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .expect("clock after 1970")
}

/// RFC 3339 in UTC for a Unix time (Howard Hinnant's civil-from-days).
fn rfc3339(unix: i64) -> String {
    let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[test]
fn rfc3339_formats_unix_time_in_utc() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(1_800_000_000), "2027-01-15T08:00:00Z");
    assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
}
