//! Logs and traces: `tracing` to stdout (pretty, or JSON with `--log-format json`), and OTLP
//! export of spans through opentelemetry when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::settings::LogFormat;

/// Keeps the OTLP pipeline alive; flushes pending spans when dropped.
#[derive(Debug, Default)]
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(err) = provider.shutdown()
        {
            eprintln!("OTLP exporter did not shut down cleanly: {err}");
        }
    }
}

/// Installs the global subscriber. Call once, at the start of the binary.
pub fn init(format: LogFormat, filter: &str) -> anyhow::Result<TelemetryGuard> {
    let filter = EnvFilter::try_from_default_env().or_else(|_| EnvFilter::try_new(filter))?;
    let fmt_layer = match format {
        LogFormat::Pretty => tracing_subscriber::fmt::layer().with_target(false).boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .boxed(),
    };
    let mut guard = TelemetryGuard::default();
    let otel_layer = match std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT") {
        Ok(endpoint) if !endpoint.is_empty() => {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .build()?;
            let provider = SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(
                    opentelemetry_sdk::Resource::builder()
                        .with_service_name("neocloud")
                        .build(),
                )
                .build();
            let tracer = provider.tracer("neocloud");
            guard.provider = Some(provider);
            Some(tracing_opentelemetry::layer().with_tracer(tracer))
        }
        _ => None,
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(fmt_layer)
        .with(otel_layer)
        .try_init()?;
    Ok(guard)
}
