//! The Prometheus registry and the metrics the domains record (placement) and the HTTP
//! edge records (requests, GraphQL errors). Labels keep bounded cardinality: route
//! patterns, never raw paths, tenant ids or GPU UUIDs. `GET /metrics` serves them
//! (`http::metrics`).

use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
};

#[derive(Clone)]
pub struct Metrics {
    pub registry: Registry,
    pub http_requests_total: IntCounterVec,
    pub http_request_duration_seconds: HistogramVec,
    pub graphql_errors_total: IntCounterVec,
    pub placement: PlacementMetrics,
    pub stream: StreamMetrics,
}

/// The JetStream ingest workers' metrics (see `nats::consumer`).
#[derive(Clone)]
pub struct StreamMetrics {
    /// Messages settled, by outcome (`accepted`, `duplicate`, `rejected`, `retried`).
    pub messages_total: IntCounterVec,
    /// Messages that came a second time or later (a worker died or was too slow).
    pub redeliveries_total: IntCounter,
    /// From a message's fetch to its acknowledgement (the commit of its batch).
    pub ack_seconds: Histogram,
    /// Messages in the stream not yet delivered to a worker (as last read).
    pub pending: IntGauge,
    /// Messages delivered and not yet acknowledged (as last read).
    pub ack_pending: IntGauge,
}

/// The placement loop's metrics (see `ordering::placement`).
#[derive(Clone)]
pub struct PlacementMetrics {
    /// Transactions the loop committed (or tried to), each placing a batch of orders.
    pub batches_total: IntCounter,
    /// Orders the loop answered.
    pub orders_total: IntCounter,
    /// Orders in the batch being placed now.
    pub orders_in_progress: IntGauge,
    /// Orders waiting for the loop (set when scraped).
    pub queue_depth: IntGauge,
    /// How long each batch held the fleet: its transaction, from `BEGIN` to the answers.
    pub batch_seconds: Histogram,
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
        let placement = PlacementMetrics {
            batches_total: IntCounter::new(
                "placement_batches_total",
                "Placement transactions, each placing a batch of orders.",
            )?,
            orders_total: IntCounter::new(
                "placement_orders_total",
                "Orders answered by the placement loop.",
            )?,
            orders_in_progress: IntGauge::new(
                "placement_orders_in_progress",
                "Orders in the batch being placed now.",
            )?,
            queue_depth: IntGauge::new(
                "placement_queue_depth",
                "Orders waiting for the placement loop.",
            )?,
            batch_seconds: Histogram::with_opts(
                HistogramOpts::new(
                    "placement_batch_seconds",
                    "How long each placement batch held the fleet.",
                )
                .buckets(vec![
                    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 5.0,
                ]),
            )?,
        };
        registry.register(Box::new(placement.batches_total.clone()))?;
        registry.register(Box::new(placement.orders_total.clone()))?;
        registry.register(Box::new(placement.orders_in_progress.clone()))?;
        registry.register(Box::new(placement.queue_depth.clone()))?;
        registry.register(Box::new(placement.batch_seconds.clone()))?;
        let stream = StreamMetrics::new(&registry)?;
        Ok(Metrics {
            registry,
            http_requests_total,
            http_request_duration_seconds,
            graphql_errors_total,
            placement,
            stream,
        })
    }
}

impl StreamMetrics {
    fn new(registry: &Registry) -> Result<StreamMetrics, prometheus::Error> {
        let metrics = StreamMetrics {
            messages_total: IntCounterVec::new(
                Opts::new(
                    "stream_ingest_messages_total",
                    "Usage messages taken from JetStream, by outcome.",
                ),
                &["outcome"],
            )?,
            redeliveries_total: IntCounter::new(
                "stream_ingest_redeliveries_total",
                "Usage messages JetStream delivered more than once.",
            )?,
            ack_seconds: Histogram::with_opts(
                HistogramOpts::new(
                    "stream_ingest_ack_seconds",
                    "From fetching a usage message to acknowledging it after its commit.",
                )
                .buckets(vec![
                    0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 5.0, 30.0,
                ]),
            )?,
            pending: IntGauge::new(
                "stream_ingest_pending",
                "Usage messages in JetStream not yet delivered to an ingest worker.",
            )?,
            ack_pending: IntGauge::new(
                "stream_ingest_ack_pending",
                "Usage messages delivered to ingest workers and not yet acknowledged.",
            )?,
        };
        registry.register(Box::new(metrics.messages_total.clone()))?;
        registry.register(Box::new(metrics.redeliveries_total.clone()))?;
        registry.register(Box::new(metrics.ack_seconds.clone()))?;
        registry.register(Box::new(metrics.pending.clone()))?;
        registry.register(Box::new(metrics.ack_pending.clone()))?;
        Ok(metrics)
    }
}
