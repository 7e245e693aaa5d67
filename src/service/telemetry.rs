//! Logs and traces: a `tracing` subscriber writing text or JSON to stderr, filtered by
//! `RUST_LOG` (default `info`), plus OpenTelemetry traces over OTLP/gRPC when the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the exporter reads the other `OTEL_*` variables).
//!
//! Audit events use the target `reddog::audit`, one per round step (`seed_committed`,
//! `round_started`, `seats_decided`, `round_settled`). No event or span carries a server seed
//! before its reveal, a key or a token.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// Log line format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Keeps the trace exporter alive; call [`Telemetry::shutdown`] to flush it at exit.
#[derive(Debug)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Whether OTLP trace export is on.
    pub fn otlp_enabled(&self) -> bool {
        self.provider.is_some()
    }

    /// Flushes and stops the trace exporter.
    pub fn shutdown(self) {
        if let Some(p) = self.provider {
            let _ = p.shutdown();
        }
    }
}

/// Installs the global subscriber. Must run inside the tokio runtime (the OTLP exporter
/// needs it). Fails if a global subscriber is already set.
pub fn init(format: LogFormat) -> Result<Telemetry, Box<dyn std::error::Error + Send + Sync>> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let fmt = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer().with_ansi(ansi).with_writer(std::io::stderr).boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer().json().with_writer(std::io::stderr).boxed(),
    };
    let endpoint_set = std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some_and(|v| !v.is_empty())
        || std::env::var_os("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some_and(|v| !v.is_empty());
    let provider = if endpoint_set {
        let exporter = opentelemetry_otlp::SpanExporter::builder().with_tonic().build()?;
        let service_name = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "reddog".to_string());
        let resource = opentelemetry_sdk::Resource::builder().with_service_name(service_name).build();
        Some(SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build())
    } else {
        None
    };
    let otel = provider.as_ref().map(|p| tracing_opentelemetry::layer().with_tracer(p.tracer("reddog")));
    tracing_subscriber::registry().with(filter).with(fmt).with(otel).try_init()?;
    Ok(Telemetry { provider })
}
