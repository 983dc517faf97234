//! A small ingest server that behaves per the ingest v1 contract, for the agent's tests:
//! validates batches, stores them by (boot_id, seq), answers `accepted` / `duplicate`,
//! and can be told to fail: 500s, dropped connections, answers lost after storing, 400,
//! 401, 413 above a device count. Hand-rolled HTTP/1.1, one request per connection.

#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use neocloud_schema::agent_api::{Assignments, Inventory};
use neocloud_schema::ingest::{Batch, ValidationContext};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use uuid::Uuid;

pub const TOKEN: &str = "nca_test_token";

/// What the server does with the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Answer 500 without storing.
    ServerError,
    /// Close the connection without reading or answering.
    Drop,
    /// Store the batch, then close without answering (the answer is lost).
    StoreThenDrop,
    /// Answer 401.
    Unauthorized,
}

#[derive(Debug, Default)]
pub struct State {
    pub stored: BTreeMap<(Uuid, u64), Batch>,
    /// Every POST: (boot_id, seq, status answered or 0 for none).
    pub log: Vec<(Uuid, u64, u16)>,
    /// A seq stored twice with different content.
    pub conflicts: Vec<(Uuid, u64)>,
    pub faults: VecDeque<Fault>,
    /// Every request is answered 401 while true.
    pub refuse_token: bool,
    /// Batches with this seq are answered 400.
    pub poison_seq: Option<u64>,
    /// Batches with more devices than this are answered 413.
    pub max_devices: Option<usize>,
    pub encodings: Vec<String>,
    /// Served on `GET /v1/agents/assignments` (404 while `None`).
    pub assignments: Option<Assignments>,
}

#[derive(Clone)]
pub struct IngestServer {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<State>>,
    pub inventory: Option<Inventory>,
    pub limits: (usize, u64, u32),
}

impl IngestServer {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub async fn start(limits: (usize, u64, u32), inventory: Option<Inventory>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let server = IngestServer {
            addr: listener.local_addr().expect("addr"),
            state: Arc::new(Mutex::new(State::default())),
            inventory,
            limits,
        };
        let s = server.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let s = s.clone();
                tokio::spawn(async move {
                    let _ = s.handle(stream).await;
                });
            }
        });
        server
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().expect("state"))
    }

    pub fn stored_count(&self) -> usize {
        self.with(|s| s.stored.len())
    }

    /// Polls until `cond` holds, failing after `secs`.
    pub async fn wait_for(&self, secs: u64, what: &str, cond: impl Fn(&State) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if self.with(|s| cond(s)) {
                return;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Sequence numbers are 1..=n without gaps for every boot, nothing stored twice with
    /// different content, and no device-second counted by two different batches.
    pub fn assert_complete_and_exact(&self) {
        self.with(|s| {
            assert!(
                s.conflicts.is_empty(),
                "seq reused with other content: {:?}",
                s.conflicts
            );
            let mut by_boot: BTreeMap<Uuid, Vec<u64>> = BTreeMap::new();
            for (boot, seq) in s.stored.keys() {
                by_boot.entry(*boot).or_default().push(*seq);
            }
            for (boot, seqs) in &by_boot {
                let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
                assert_eq!(seqs, &expected, "gap in the sequence of boot {boot}");
            }
            let mut windows: BTreeMap<&str, Vec<(i64, i64)>> = BTreeMap::new();
            for b in s.stored.values() {
                for d in &b.devices {
                    windows.entry(&d.uuid).or_default().push((
                        b.window.start.timestamp_micros(),
                        b.window.end.timestamp_micros(),
                    ));
                }
            }
            for (uuid, mut w) in windows {
                w.sort();
                for pair in w.windows(2) {
                    assert!(
                        pair[0].1 <= pair[1].0,
                        "device {uuid} counted twice in {pair:?}"
                    );
                }
            }
        });
    }

    async fn handle(&self, mut stream: TcpStream) -> std::io::Result<()> {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 16384];
        let head_end = loop {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let mut lines = head.lines();
        let request_line = lines.next().unwrap_or_default().to_owned();
        let mut headers = BTreeMap::new();
        for line in lines {
            if let Some((k, v)) = line.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
            }
        }
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + len {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        let body = buf[head_end..head_end + len].to_vec();
        let authorized =
            headers.get("authorization").map(String::as_str) == Some(&format!("Bearer {TOKEN}"));
        let (status, answer) = if request_line.starts_with("GET /v1/agents/inventory") {
            match (&self.inventory, authorized) {
                (_, false) => (401, error("UNAUTHENTICATED", "bad token")),
                (Some(inv), true) => (200, serde_json::to_string(inv).expect("json")),
                (None, true) => (404, error("NOT_FOUND", "no inventory")),
            }
        } else if request_line.starts_with("GET /v1/agents/assignments") {
            let current = self.with(|s| s.assignments.clone());
            match (current, authorized) {
                (_, false) => (401, error("UNAUTHENTICATED", "bad token")),
                (Some(a), true) => (200, serde_json::to_string(&a).expect("json")),
                (None, true) => (404, error("NOT_FOUND", "no such route")),
            }
        } else if request_line.starts_with("POST /v1/ingest") {
            let encoding = headers.get("content-encoding").cloned().unwrap_or_default();
            match self.ingest(authorized, &encoding, &body) {
                Some(answer) => answer,
                None => return Ok(()), // dropped
            }
        } else {
            (404, error("NOT_FOUND", "no such route"))
        };
        let reason = match status {
            200 => "OK",
            400 => "Bad Request",
            401 => "Unauthorized",
            413 => "Payload Too Large",
            500 => "Internal Server Error",
            _ => "Other",
        };
        let resp = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
            answer.len()
        );
        stream.write_all(resp.as_bytes()).await?;
        stream.shutdown().await
    }

    /// `None`: drop the connection without an answer.
    fn ingest(&self, authorized: bool, encoding: &str, body: &[u8]) -> Option<(u16, String)> {
        let mut s = self.state.lock().expect("state");
        s.encodings.push(encoding.to_owned());
        let fault = s.faults.pop_front();
        if fault == Some(Fault::Drop) {
            s.log.push((Uuid::nil(), 0, 0));
            return None;
        }
        if !authorized || s.refuse_token || fault == Some(Fault::Unauthorized) {
            s.log.push((Uuid::nil(), 0, 401));
            return Some((
                401,
                error("UNAUTHENTICATED", "the agent token is not valid"),
            ));
        }
        if fault == Some(Fault::ServerError) {
            s.log.push((Uuid::nil(), 0, 500));
            return Some((500, error("INTERNAL", "try again")));
        }
        let json = match encoding {
            "gzip" => {
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(body)
                    .read_to_end(&mut out)
                    .ok()?;
                out
            }
            "zstd" => zstd::decode_all(body).ok()?,
            _ => body.to_vec(),
        };
        let batch: Batch = match serde_json::from_slice(&json) {
            Ok(b) => b,
            Err(e) => return Some((400, error("INVALID_INPUT", &e.to_string()))),
        };
        let ctx = ValidationContext {
            now: Utc::now(),
            max_devices: self.limits.0,
            max_fb_bytes: self.limits.1,
            max_power_w: self.limits.2,
        };
        if let Err(e) = batch.validate(&ctx) {
            s.log.push((batch.boot_id, batch.seq, 400));
            return Some((400, error("INVALID_INPUT", &e.to_string())));
        }
        if s.poison_seq == Some(batch.seq) {
            s.log.push((batch.boot_id, batch.seq, 400));
            return Some((
                400,
                error("INVALID_INPUT", "devices[0].uuid: poisoned for the test"),
            ));
        }
        if s.max_devices.is_some_and(|m| batch.devices.len() > m) {
            s.log.push((batch.boot_id, batch.seq, 413));
            return Some((413, error("TOO_LARGE", "too many devices")));
        }
        let key = (batch.boot_id, batch.seq);
        let status = match s.stored.get(&key) {
            Some(previous) => {
                if previous != &batch {
                    s.conflicts.push(key);
                }
                "duplicate"
            }
            None => {
                s.stored.insert(key, batch);
                "accepted"
            }
        };
        s.log.push((key.0, key.1, 200));
        if fault == Some(Fault::StoreThenDrop) {
            return None;
        }
        Some((200, format!(r#"{{"status":"{status}","seq":{}}}"#, key.1)))
    }
}

fn error(code: &str, message: &str) -> String {
    serde_json::json!({"error": {"code": code, "message": message}}).to_string()
}
