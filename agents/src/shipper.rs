//! Getting spooled batches to the server. [`Shipper`] is the seam: [`HttpShipper`] speaks
//! `POST /v1/ingest` per the ingest v1 contract, gzip or zstd compressed;
//! [`nats::NatsShipper`] publishes the same body to the node's JetStream subject. [`Backoff`] is the retry schedule: exponential with jitter, capped.
//!
//! What each answer means for the spooled batch is decided in `agent.rs`; here an answer
//! is only classified.

use std::future::Future;
use std::io::Write;
use std::time::Duration;

use neocloud_schema::agent_api::{Assignments, Inventory};
use neocloud_schema::ingest::Batch;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

pub mod nats;

/// How the server answered one batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShipOutcome {
    /// Stored now.
    Accepted,
    /// Stored before (a resend after a lost answer).
    Duplicate,
    /// 400: the batch breaks the contract. Resending it can never succeed.
    Invalid { message: String },
    /// 401/403: the token is wrong, revoked, or not this node's.
    Unauthorized { status: u16, message: String },
    /// 413: too large; split it.
    TooLarge,
    /// 5xx, 429, network error, timeout: try again later.
    Retry { reason: String },
}

/// Sends one batch and classifies the answer. Implementations must not retry on their
/// own: the caller owns the schedule and the spool.
pub trait Shipper: Send + Sync {
    fn ship(&self, batch: &Batch) -> impl Future<Output = ShipOutcome> + Send;
}

/// The way batches leave the host, chosen at start.
#[derive(Debug, Clone)]
pub enum Transport {
    /// `POST /v1/ingest` (the embedded default and small fleets).
    Http(HttpShipper),
    /// JetStream (fleets whose ingest runs on NATS).
    Nats(nats::NatsShipper),
}

impl Shipper for Transport {
    async fn ship(&self, batch: &Batch) -> ShipOutcome {
        match self {
            Transport::Http(http) => http.ship(batch).await,
            Transport::Nats(nats) => nats.ship(batch).await,
        }
    }
}

/// Request body compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Compression {
    None,
    #[default]
    Gzip,
    Zstd,
}

#[derive(Debug, thiserror::Error)]
pub enum ShipperError {
    #[error("could not build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    #[error("GET {url}: {reason}")]
    Request { url: String, reason: String },
    #[error("the server rejected the agent token ({status}): {message}")]
    Unauthorized { status: u16, message: String },
}

/// `POST {server}/v1/ingest` with the node's agent token.
#[derive(Debug, Clone)]
pub struct HttpShipper {
    client: reqwest::Client,
    server: String,
    token: String,
    compression: Compression,
}

#[derive(Deserialize)]
struct IngestAnswer {
    status: String,
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Deserialize)]
struct ErrorDetail {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

fn error_message(body: &str) -> String {
    match serde_json::from_str::<ErrorBody>(body) {
        Ok(b) => format!("{}: {}", b.error.code, b.error.message),
        Err(_) => body.chars().take(512).collect(),
    }
}

/// The batch as the ingest v1 body: JSON, compressed as asked, with its content encoding.
pub fn encode(
    batch: &Batch,
    compression: Compression,
) -> Result<(Vec<u8>, Option<&'static str>), String> {
    let json = serde_json::to_vec(batch).map_err(|e| e.to_string())?;
    match compression {
        Compression::None => Ok((json, None)),
        Compression::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(&json).map_err(|e| e.to_string())?;
            Ok((enc.finish().map_err(|e| e.to_string())?, Some("gzip")))
        }
        Compression::Zstd => zstd::encode_all(json.as_slice(), 3)
            .map(|b| (b, Some("zstd")))
            .map_err(|e| e.to_string()),
    }
}

/// The batch's body, or what shipping it comes to when it does not encode.
fn body(
    batch: &Batch,
    compression: Compression,
) -> Result<(Vec<u8>, Option<&'static str>), ShipOutcome> {
    encode(batch, compression).map_err(|reason| ShipOutcome::Invalid {
        message: format!("the batch does not encode: {reason}"),
    })
}

impl HttpShipper {
    pub fn new(server: &str, token: &str, compression: Compression) -> Result<Self, ShipperError> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("neocloud-agent/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(ShipperError::Client)?;
        Ok(Self {
            client,
            server: server.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            compression,
        })
    }

    /// `GET /v1/agents/inventory`: the devices the server registered for this node.
    /// `None` when the server has no such endpoint (404).
    pub async fn inventory(&self) -> Result<Option<Inventory>, ShipperError> {
        self.get_json("/v1/agents/inventory").await
    }

    /// `GET /v1/agents/nats-credentials`: a fresh NATS credential (`.creds`) for this node.
    /// `None` when the server mints none (404).
    pub async fn nats_credentials(&self) -> Result<Option<String>, ShipperError> {
        self.get("/v1/agents/nats-credentials", Ok).await
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
    ) -> Result<Option<T>, ShipperError> {
        self.get(path, json_body).await
    }

    /// GETs `path` and reads a 200's body with `read`; `None` on 404.
    async fn get<T>(
        &self,
        path: &str,
        read: impl FnOnce(String) -> Result<T, String>,
    ) -> Result<Option<T>, ShipperError> {
        let url = format!("{}{path}", self.server);
        let req_err = |reason: String| ShipperError::Request {
            url: url.clone(),
            reason,
        };
        let resp = self
            .client
            .get(&url)
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|e| req_err(e.to_string()))?;
        answer(resp, &req_err, read).await
    }

    /// `POST /v1/agents/hardware`: what this host's GPUs are; the server's verdict.
    /// `None` when the server has no such endpoint (404).
    pub async fn report_hardware(
        &self,
        report: &neocloud_schema::agent_api::HardwareReport,
    ) -> Result<Option<neocloud_schema::agent_api::HardwareVerdict>, ShipperError> {
        let url = format!("{}/v1/agents/hardware", self.server);
        let req_err = |reason: String| ShipperError::Request {
            url: url.clone(),
            reason,
        };
        let resp = self
            .client
            .post(&url)
            .bearer_auth(&self.token)
            .json(report)
            .send()
            .await
            .map_err(|e| req_err(e.to_string()))?;
        answer(resp, &req_err, json_body).await
    }

    /// `GET /v1/agents/assignments`: which device serves which allocation. `None` when
    /// the server has no such endpoint (404).
    pub async fn assignments(&self) -> Result<Option<Assignments>, ShipperError> {
        self.get_json("/v1/agents/assignments").await
    }
}

/// A JSON answer of an agent endpoint: `None` on 404 (a server without it).
fn json_body<T: serde::de::DeserializeOwned>(body: String) -> Result<T, String> {
    serde_json::from_str(&body).map_err(|e| format!("unexpected body: {e}"))
}

async fn answer<T>(
    resp: reqwest::Response,
    req_err: &(dyn Fn(String) -> ShipperError + Sync),
    read: impl FnOnce(String) -> Result<T, String>,
) -> Result<Option<T>, ShipperError> {
    let status = resp.status().as_u16();
    let body = resp.text().await.map_err(|e| req_err(e.to_string()))?;
    match status {
        200 => read(body).map(Some).map_err(req_err),
        404 => Ok(None),
        401 | 403 => Err(ShipperError::Unauthorized {
            status,
            message: error_message(&body),
        }),
        _ => Err(req_err(format!(
            "status {status}: {}",
            error_message(&body)
        ))),
    }
}

impl Shipper for HttpShipper {
    async fn ship(&self, batch: &Batch) -> ShipOutcome {
        let (body, encoding) = match body(batch, self.compression) {
            Ok(b) => b,
            Err(outcome) => return outcome,
        };
        let mut req = self
            .client
            .post(format!("{}/v1/ingest", self.server))
            .bearer_auth(&self.token)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(encoding) = encoding {
            req = req.header(reqwest::header::CONTENT_ENCODING, encoding);
        }
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => {
                return ShipOutcome::Retry {
                    reason: format!("network: {e}"),
                };
            }
        };
        let status = resp.status().as_u16();
        let text = match resp.text().await {
            Ok(t) => t,
            Err(e) => {
                return ShipOutcome::Retry {
                    reason: format!("reading the answer: {e}"),
                };
            }
        };
        match status {
            200 => match serde_json::from_str::<IngestAnswer>(&text) {
                Ok(a) if a.status == "duplicate" => ShipOutcome::Duplicate,
                Ok(_) => ShipOutcome::Accepted,
                // A 200 means stored, whatever the body says.
                Err(_) => ShipOutcome::Accepted,
            },
            400 | 422 => ShipOutcome::Invalid {
                message: error_message(&text),
            },
            401 | 403 => ShipOutcome::Unauthorized {
                status,
                message: error_message(&text),
            },
            413 => ShipOutcome::TooLarge,
            _ => ShipOutcome::Retry {
                reason: format!("status {status}: {}", error_message(&text)),
            },
        }
    }
}

/// Exponential backoff with "equal jitter": the n-th delay is drawn from
/// `[d/2, d]` with `d = min(max, base × 2ⁿ)`, so retries from many agents spread out
/// after an outage but never hammer faster than `base/2`.
#[derive(Debug)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    attempt: u32,
    rng: ChaCha8Rng,
}

impl Backoff {
    pub fn new(base: Duration, max: Duration, seed: u64) -> Self {
        Self {
            base,
            max,
            attempt: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// The delay before the next attempt.
    pub fn next_delay(&mut self) -> Duration {
        let factor = 1u32 << self.attempt.min(20);
        let d = self.base.saturating_mul(factor).min(self.max);
        self.attempt = self.attempt.saturating_add(1);
        let half = d / 2;
        // `max` is a few minutes: its half in milliseconds fits; saturate if not.
        let half_ms = u64::try_from(half.as_millis()).unwrap_or(u64::MAX);
        let jitter_ms = self.rng.random_range(0..=half_ms);
        half + Duration::from_millis(jitter_ms)
    }

    pub fn reset(&mut self) {
        self.attempt = 0;
    }

    pub fn attempts(&self) -> u32 {
        self.attempt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_exponentially_within_its_jitter_band_and_is_capped() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_secs(5), 1);
        let delays: Vec<Duration> = (0..10).map(|_| b.next_delay()).collect();
        for (n, d) in delays.iter().enumerate() {
            let full = Duration::from_millis(100 * (1 << n)).min(Duration::from_secs(5));
            assert!(*d >= full / 2 && *d <= full, "attempt {n}: {d:?}");
        }
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(100));
    }

    #[test]
    fn an_error_body_is_read_as_code_and_message() {
        assert_eq!(
            error_message(r#"{"error":{"code":"FORBIDDEN","message":"not your node"}}"#),
            "FORBIDDEN: not your node"
        );
        assert_eq!(error_message("oops"), "oops");
    }
}
