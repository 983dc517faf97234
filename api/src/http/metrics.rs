//! Prometheus metrics. Labels keep bounded cardinality: route patterns, never raw paths,
//! tenant ids or GPU UUIDs.

use actix_web::{HttpResponse, web};
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry, TextEncoder,
};

use crate::startup::AppState;

#[derive(Clone)]
pub struct Metrics {
    pub registry: Registry,
    pub http_requests_total: IntCounterVec,
    pub http_request_duration_seconds: HistogramVec,
    pub graphql_errors_total: IntCounterVec,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    pub fn new() -> Result<Metrics, prometheus::Error> {
        let registry = Registry::new_custom(Some("neocloud".into()), None)?;
        let http_requests_total = IntCounterVec::new(
            Opts::new("http_requests_total", "HTTP requests by route and status."),
            &["method", "route", "status"],
        )?;
        let http_request_duration_seconds = HistogramVec::new(
            HistogramOpts::new(
                "http_request_duration_seconds",
                "HTTP request latency by route.",
            ),
            &["method", "route"],
        )?;
        let graphql_errors_total = IntCounterVec::new(
            Opts::new("graphql_errors_total", "GraphQL errors by code."),
            &["code"],
        )?;
        registry.register(Box::new(http_requests_total.clone()))?;
        registry.register(Box::new(http_request_duration_seconds.clone()))?;
        registry.register(Box::new(graphql_errors_total.clone()))?;
        Ok(Metrics {
            registry,
            http_requests_total,
            http_request_duration_seconds,
            graphql_errors_total,
        })
    }
}

pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let mut body = Vec::new();
    match TextEncoder::new().encode(&state.metrics.registry.gather(), &mut body) {
        Ok(()) => HttpResponse::Ok()
            .content_type("text/plain; version=0.0.4")
            .body(body),
        Err(err) => HttpResponse::InternalServerError().body(err.to_string()),
    }
}
