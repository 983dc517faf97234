//! The agent's own telemetry: Prometheus metrics and health, served on a small local
//! HTTP endpoint (`GET /metrics`, `GET /healthz`). Labels stay bounded (no per-process
//! or per-device label).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use prometheus::{
    Encoder, Gauge, IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Every metric of the agent.
#[derive(Debug, Clone)]
pub struct AgentMetrics {
    registry: Registry,
    pub samples_total: IntCounter,
    pub sample_errors_total: IntCounter,
    pub batches_spooled: IntGauge,
    pub spool_bytes: IntGauge,
    pub spool_folds_total: IntCounter,
    pub spool_quarantined_total: IntCounter,
    pub spool_dropped_windows_total: IntCounter,
    pub batches_acked_total: IntCounterVec,
    pub ship_errors_total: IntCounterVec,
    pub last_ack_timestamp_seconds: Gauge,
}

fn register<T: prometheus::core::Collector + Clone + 'static>(
    registry: &Registry,
    metric: T,
) -> Result<T, prometheus::Error> {
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

impl AgentMetrics {
    /// A fresh registry with every metric (`neocloud_agent_` prefix). Fails only on an
    /// invalid metric name, i.e. a programming error caught by the tests.
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new_custom(Some("neocloud_agent".into()), None)?;
        let counter = |name: &str, help: &str| register(&registry, IntCounter::new(name, help)?);
        let gauge = |name: &str, help: &str| register(&registry, IntGauge::new(name, help)?);
        let vec = |name: &str, help: &str, label: &str| {
            register(
                &registry,
                IntCounterVec::new(Opts::new(name, help), &[label])?,
            )
        };
        Ok(Self {
            samples_total: counter("samples_total", "Sampling cycles completed.")?,
            sample_errors_total: counter("sample_errors_total", "Sampling cycles that failed.")?,
            batches_spooled: gauge(
                "batches_spooled",
                "Batches in the spool, waiting for an acknowledgement.",
            )?,
            spool_bytes: gauge("spool_bytes", "Bytes of batches in the spool.")?,
            spool_folds_total: counter(
                "spool_folds_total",
                "Windows folded together because the spool was full.",
            )?,
            spool_quarantined_total: counter(
                "spool_quarantined_total",
                "Batches quarantined: corrupt on disk, or called invalid by the server.",
            )?,
            spool_dropped_windows_total: counter(
                "spool_dropped_windows_total",
                "Windows dropped because the spool was beyond twice its limit.",
            )?,
            batches_acked_total: vec(
                "batches_acked_total",
                "Batches the server acknowledged, by answer.",
                "status",
            )?,
            ship_errors_total: vec(
                "ship_errors_total",
                "Failed deliveries, by reason (network, server, invalid, unauthorized, too_large).",
                "reason",
            )?,
            last_ack_timestamp_seconds: register(
                &registry,
                Gauge::new(
                    "last_ack_timestamp_seconds",
                    "Unix time of the last acknowledged batch.",
                )?,
            )?,
            registry,
        })
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        // Encoding a registry into a Vec only fails on invalid metric families, which
        // `new` rules out; an empty page is the worst case.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// What `/healthz` reports.
#[derive(Debug, Default)]
pub struct Health {
    /// The server refused the token: nothing can be shipped until an operator acts.
    pub auth_rejected: AtomicBool,
    /// The source failed its last cycle.
    pub source_failing: AtomicBool,
    /// Unix time of the last successful cycle.
    pub last_sample_unix: AtomicI64,
}

#[derive(Serialize)]
struct HealthBody<'a> {
    status: &'a str,
    source: &'a str,
    auth_rejected: bool,
    source_failing: bool,
    last_sample_unix: i64,
    batches_spooled: i64,
}

/// Serves `/metrics` and `/healthz` on `listener` until the task is dropped.
pub async fn serve(
    listener: TcpListener,
    metrics: AgentMetrics,
    health: Arc<Health>,
    source: &'static str,
) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        let metrics = metrics.clone();
        let health = health.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            let mut len = 0;
            // Requests are tiny; read until the end of the head or 4 KiB.
            while len < buf.len() {
                match stream.read(&mut buf[len..]).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        len += n;
                        if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                            break;
                        }
                    }
                }
            }
            let head = String::from_utf8_lossy(&buf[..len]);
            let path = head.split_whitespace().nth(1).unwrap_or("/");
            let (status, ctype, body) = match path {
                "/metrics" => ("200 OK", "text/plain; version=0.0.4", metrics.render()),
                "/healthz" => {
                    let auth = health.auth_rejected.load(Ordering::Relaxed);
                    let failing = health.source_failing.load(Ordering::Relaxed);
                    let ok = !auth && !failing;
                    let body = HealthBody {
                        status: if ok { "ok" } else { "degraded" },
                        source,
                        auth_rejected: auth,
                        source_failing: failing,
                        last_sample_unix: health.last_sample_unix.load(Ordering::Relaxed),
                        batches_spooled: metrics.batches_spooled.get(),
                    };
                    let json = serde_json::to_string(&body).unwrap_or_default();
                    (
                        if ok {
                            "200 OK"
                        } else {
                            "503 Service Unavailable"
                        },
                        "application/json",
                        json,
                    )
                }
                _ => ("404 Not Found", "text/plain", "not found\n".to_owned()),
            };
            let resp = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(resp.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}

/// Binds the metrics endpoint.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_names_every_metric_the_issue_asks_for() {
        let m = AgentMetrics::new().unwrap();
        m.samples_total.inc();
        m.ship_errors_total.with_label_values(&["network"]).inc();
        m.batches_acked_total.with_label_values(&["accepted"]).inc();
        let text = m.render();
        for name in [
            "neocloud_agent_samples_total 1",
            "neocloud_agent_batches_spooled",
            "neocloud_agent_spool_bytes",
            "neocloud_agent_ship_errors_total{reason=\"network\"} 1",
            "neocloud_agent_last_ack_timestamp_seconds",
        ] {
            assert!(text.contains(name), "missing {name} in\n{text}");
        }
    }
}
