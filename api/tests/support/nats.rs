//! A private nats-server with JetStream for one test: its own free port and a temporary
//! store, killed when dropped. Without `nats-server` on the PATH the test is skipped,
//! unless `NEOCLOUD_REQUIRE_NATS=1` (CI), which fails it.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::Killed;

pub struct NatsServer {
    pub url: String,
    pub port: u16,
    _process: Killed,
    _dir: tempfile::TempDir,
}

fn required() -> bool {
    std::env::var("NEOCLOUD_REQUIRE_NATS").is_ok_and(|v| v == "1")
}

impl NatsServer {
    /// A server trusting everyone (no credentials).
    pub fn start() -> Option<NatsServer> {
        Self::start_with(None)
    }

    /// A server with `config` (a nats-server configuration, e.g. a trust chain) added.
    pub fn start_with(config: Option<&str>) -> Option<NatsServer> {
        Self::start_on(super::free_port(), config)
    }

    /// A server on `port`: the same port again after a restart.
    pub fn start_on(port: u16, config: Option<&str>) -> Option<NatsServer> {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut command = Command::new("nats-server");
        command.args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"]);
        command.arg(dir.path().join("jetstream"));
        if let Some(config) = config {
            let path = dir.path().join("nats-server.conf");
            std::fs::write(&path, config).expect("write the configuration");
            command.arg("-c").arg(&path);
        }
        let child = match command.stdout(Stdio::null()).stderr(Stdio::null()).spawn() {
            Ok(child) => child,
            Err(e) if required() => panic!("nats-server is required but did not start: {e}"),
            Err(e) => {
                eprintln!("skipping: nats-server did not start: {e}");
                return None;
            }
        };
        let process = Killed(child);
        wait_for_port(port, dir.path());
        Some(NatsServer {
            url: format!("nats://127.0.0.1:{port}"),
            port,
            _process: process,
            _dir: dir,
        })
    }
}

fn wait_for_port(port: u16, dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "nats-server (store {}) did not listen on {port}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
