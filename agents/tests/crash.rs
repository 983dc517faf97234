//! Crash safety of the spool with the real binary: `kill -9` while a record is being
//! written, while the state is being written, after the server stored a batch but before
//! the agent removed it, and at arbitrary moments; then restart and replay. The server
//! must end up with every sequence number exactly once (no gap, no seq reused with other
//! content) and no device-second counted twice.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use neocloud_agent::source::sim::SimProfile;
use support::{IngestServer, TOKEN};

struct AgentProcess {
    child: Child,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl AgentProcess {
    fn spawn(server: &IngestServer, spool: &Path, failpoint: Option<&str>) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_neocloud-agent"));
        cmd.args([
            "run",
            "--simulate",
            "--seed",
            "5",
            "--agent-id",
            "sim-crash-1",
        ])
        .args(["--server", &server.url(), "--token", TOKEN])
        .arg("--spool")
        .arg(spool)
        .args(["--interval", "0.2", "--sample-interval-ms", "100"])
        .args(["--metrics-listen", "off"])
        .env("RUST_LOG", "warn")
        .env_remove("NEOCLOUD_AGENT_FAILPOINT")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        if let Some(fp) = failpoint {
            cmd.env("NEOCLOUD_AGENT_FAILPOINT", fp);
        }
        let mut child = cmd.spawn().expect("spawn neocloud-agent");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let pipe = child.stderr.take().expect("stderr");
        let lines = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                lines.lock().expect("lines").push(line);
            }
        });
        Self { child, stderr }
    }

    async fn wait_stderr(&mut self, needle: &str, secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if self
                .stderr
                .lock()
                .expect("lines")
                .iter()
                .any(|l| l.contains(needle))
            {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "agent exited with {status}: {:?}",
                    self.stderr.lock().expect("lines")
                );
            }
            assert!(
                Instant::now() < deadline,
                "no `{needle}` within {secs} s: {:?}",
                self.stderr.lock().expect("lines")
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGTERM, then waits for the agent to close its window and exit.
    fn terminate(mut self) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "SIGTERM to {pid}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.child.try_wait().expect("try_wait").is_none() {
            assert!(Instant::now() < deadline, "the agent ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `kill -9`.
    fn kill9(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reap");
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn server() -> IngestServer {
    IngestServer::start(SimProfile::mixed_host("sim-crash-1").limits(), None).await
}

fn spool_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = dir.path().join("spool");
    (dir, spool)
}

fn files_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Restarts cleanly, runs until `more` further batches are stored and stops with
/// SIGTERM, so a write of this life is never left half done (only the crashes under
/// test leave those).
async fn restart_and_replay(server: &IngestServer, spool: &Path, more: usize) {
    let before = server.stored_count();
    let agent = AgentProcess::spawn(server, spool, None);
    server
        .wait_for(30, "batches after the restart", |s| {
            s.stored.len() >= before + more
        })
        .await;
    agent.terminate();
}

fn boots(server: &IngestServer) -> usize {
    server.with(|s| {
        s.stored
            .keys()
            .map(|k| k.0)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_writing_a_record_or_the_state_the_agent_resumes_without_gap_or_duplicate() {
    for failpoint in [
        "spool.record_torn",
        "spool.record_tmp_written",
        "spool.state_tmp_written",
    ] {
        let server = server().await;
        let (_dir, spool) = spool_dir();
        // A first life that ships a little, so the spool has history.
        restart_and_replay(&server, &spool, 2).await;
        let mut agent = AgentProcess::spawn(&server, &spool, Some(failpoint));
        agent
            .wait_stderr(&format!("failpoint {failpoint} reached"), 30)
            .await;
        agent.kill9();
        if failpoint == "spool.record_torn" {
            assert!(
                files_in(&spool.join("records"))
                    .iter()
                    .any(|f| f.ends_with(".tmp")),
                "the torn write is on disk"
            );
        }
        restart_and_replay(&server, &spool, 3).await;
        server.assert_complete_and_exact();
        assert_eq!(
            boots(&server),
            1,
            "{failpoint}: the spool survived, so the boot id did"
        );
        assert!(files_in(&spool.join("quarantine")).is_empty());
        assert!(
            !files_in(&spool.join("records"))
                .iter()
                .any(|f| f.ends_with(".tmp"))
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_server_stored_a_batch_the_resend_is_a_duplicate_with_no_effect() {
    let server = server().await;
    let (_dir, spool) = spool_dir();
    let mut agent = AgentProcess::spawn(&server, &spool, Some("ship.before_ack"));
    agent
        .wait_stderr("failpoint ship.before_ack reached", 30)
        .await;
    agent.kill9();
    assert_eq!(server.stored_count(), 1);
    restart_and_replay(&server, &spool, 3).await;
    server.assert_complete_and_exact();
    let posts_of_1 = server.with(|s| s.log.iter().filter(|l| l.1 == 1).count());
    assert_eq!(posts_of_1, 2, "seq 1 is sent again after the restart");
    assert_eq!(boots(&server), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_at_arbitrary_moments_loses_and_repeats_nothing() {
    let server = server().await;
    let (_dir, spool) = spool_dir();
    // The moments vary by round: right after a batch was stored, or some way into the
    // next cycle (sampling, writing, sending).
    for (round, delay_ms) in [0u64, 35, 70, 110, 150].into_iter().enumerate() {
        let before = server.stored_count();
        let agent = AgentProcess::spawn(&server, &spool, None);
        server
            .wait_for(30, "progress", |s| s.stored.len() >= before + 2)
            .await;
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        agent.kill9();
        server.assert_complete_and_exact();
        assert!(server.stored_count() >= before + 2, "round {round}");
    }
    restart_and_replay(&server, &spool, 2).await;
    server.assert_complete_and_exact();
    assert_eq!(boots(&server), 1);
    assert!(files_in(&spool.join("quarantine")).is_empty());
}
