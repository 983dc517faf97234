//! neocloud-e2e: journeys that run the built binaries as separate processes (as an operator
//! or a customer would) and talk to them over HTTP. The tests live in `tests/`; they need
//! the binaries under `target/<profile>/`, which `cargo test --workspace` builds.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub mod localstripe;
pub mod relay;

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `target/<profile>/<name>`, next to the running test's own `deps/` directory. Panics
/// with the build command when the binary is missing.
pub fn binary(name: &str, package: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|profile_dir| profile_dir.join(name))
        .unwrap_or_default();
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build -p {package}` (cargo test --workspace does)",
        bin.display()
    );
    bin
}

/// `neocloud demo` as a separate process, ready (its `/readyz` answered and its
/// credentials written); killed when dropped.
pub struct Demo {
    pub child: Child,
    pub url: String,
    pub credentials: Value,
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Demo {
    /// Starts the demo in `dir` on `database_url`, with `extra` arguments.
    pub async fn start(dir: &Path, database_url: &str, extra: &[&str]) -> Demo {
        Demo::start_with_env(dir, database_url, extra, &[]).await
    }

    /// `start`, with environment variables (`NEOCLOUD_…` settings) for the process.
    pub async fn start_with_env(
        dir: &Path,
        database_url: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Demo {
        Demo::start_on(dir, database_url, "127.0.0.1:0", extra, env).await
    }

    /// `start_with_env`, listening on `listen` (when another process must know the URL
    /// before the demo starts, as an identity provider its redirect).
    pub async fn start_on(
        dir: &Path,
        database_url: &str,
        listen: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Demo {
        let creds_path = dir.join("credentials.json");
        let _ = std::fs::remove_file(&creds_path);
        let log = std::fs::File::create(dir.join("demo.log")).expect("log file");
        let child = Command::new(binary("neocloud", "neocloud-api"))
            .current_dir(dir)
            .args(["demo", "--listen", listen, "--database-url", database_url])
            .arg("--credentials-out")
            .arg(&creds_path)
            .args(extra)
            .envs(env.iter().copied())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn neocloud demo");
        let mut demo = Demo {
            child,
            url: String::new(),
            credentials: Value::Null,
        };
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            assert!(Instant::now() < deadline, "demo not ready within 60 s");
            if let Some(status) = demo.child.try_wait().expect("poll") {
                let log = std::fs::read_to_string(dir.join("demo.log")).unwrap_or_default();
                panic!("neocloud demo exited with {status}:\n{log}");
            }
            if let Ok(text) = std::fs::read_to_string(&creds_path) {
                let creds: Value = serde_json::from_str(&text).expect("credentials are JSON");
                let url = creds["url"].as_str().expect("url").to_owned();
                let ready = client.get(format!("{url}/readyz")).send().await;
                if ready.is_ok_and(|r| r.status() == 200) {
                    demo.url = url;
                    demo.credentials = creds;
                    return demo;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops the demo as a service manager would (SIGTERM) and waits up to 30 s for it to
    /// exit; returns how it exited.
    pub async fn terminate(&mut self) -> std::process::ExitStatus {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success(), "SIGTERM not delivered");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("poll") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "demo still running 30 s after SIGTERM"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn gql(&self, key: &str, query: &str) -> Value {
        self.gql_vars(key, query, json!({})).await
    }

    pub async fn gql_vars(&self, key: &str, query: &str, variables: Value) -> Value {
        reqwest::Client::new()
            .post(format!("{}/graphql", self.url))
            .bearer_auth(key)
            .json(&json!({"query": query, "variables": variables}))
            .send()
            .await
            .expect("request")
            .json()
            .await
            .expect("JSON")
    }
}
