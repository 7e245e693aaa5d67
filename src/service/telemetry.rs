//! Logs and traces: a `tracing` subscriber writing text or JSON to stderr, filtered by
//! `RUST_LOG` (default `info`), plus OpenTelemetry traces over OTLP/gRPC when the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the exporter reads the other `OTEL_*` variables).
//!
//! The per-RPC span continues the caller's trace: a W3C `traceparent` (and `tracestate`) in
//! the request's gRPC metadata becomes its parent ([`continue_trace`]), so a platform's trace
//! shows the engine's spans under its own call.
//!
//! These are diagnostics only, in tracing-subscriber's stock text and JSON formats: the audit
//! trail is written by its own sink ([`super::audit_sink`]), which no `RUST_LOG` setting
//! affects. No event or span carries a server seed before its reveal, a key or a token.
//!
//! Lines are appended to a [`BatchWriter`]'s batch; a background thread writes batches to
//! stderr (see [`super::log_writer`]).

use std::time::Duration;

use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub(crate) use super::log_writer::BatchWriter;
use super::metrics::MetricsRegistry;

/// Log line format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Keeps the trace exporter and the log writer alive; call [`Telemetry::shutdown`] (or drop
/// it) to flush both at exit.
#[derive(Debug)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
    logs: BatchWriter,
}

/// tracing-subscriber's stock fmt layer of `format` writing to `writer`: what `init`
/// installs.
pub(crate) fn fmt_layer<S, W>(format: LogFormat, ansi: bool, writer: W) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    match format {
        LogFormat::Text => tracing_subscriber::fmt::layer().with_ansi(ansi).with_writer(writer).boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer().json().with_writer(writer).boxed(),
    }
}

impl Telemetry {
    /// Whether OTLP trace export is on.
    pub fn otlp_enabled(&self) -> bool {
        self.provider.is_some()
    }

    /// Flushes and stops the trace exporter, and flushes the logs written so far.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for Telemetry {
    /// Flushes and stops the trace exporter (at most 2 s), and writes out the logs (at most
    /// 0.4 s: a stalled stderr cannot hold the exit).
    fn drop(&mut self) {
        if let Some(p) = self.provider.take() {
            let _ = p.shutdown();
        }
        let _ = self.logs.close(Duration::from_millis(400));
    }
}

/// What the OTLP layer receives: `info` and the per-RPC span (target `reddog::service::api`,
/// level DEBUG).
const OTLP_FILTER: &str = "info,reddog::service::api=debug";

/// Installs the global subscriber: the fmt layer (text or JSON) over a [`BatchWriter`] on
/// stderr (its waits counted in `metrics`), filtered by `RUST_LOG`, and the OTLP layer when
/// an endpoint is set. Must run inside the tokio runtime (the OTLP exporter needs it). Fails
/// if a global subscriber is already set.
pub fn init(
    format: LogFormat,
    metrics: &MetricsRegistry,
) -> Result<Telemetry, Box<dyn std::error::Error + Send + Sync>> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = BatchWriter::start_counting_waits(std::io::stderr(), metrics.log_writer_waits());
    let fmt = fmt_layer(format, ansi, logs.clone());
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
    // Per-layer filters: the per-RPC span is at DEBUG, so with the default `info` logs and no
    // OTLP endpoint it is never built (building it and prefixing every log line with it cost
    // a measurable share of a call); the OTLP layer, when on, always asks for it.
    let otel = provider.as_ref().map(|p| {
        tracing_opentelemetry::layer().with_tracer(p.tracer("reddog")).with_filter(EnvFilter::new(OTLP_FILTER))
    });
    tracing_subscriber::registry().with(fmt.with_filter(filter)).with(otel).try_init()?;
    Ok(Telemetry { provider, logs })
}

/// Reads W3C trace context headers from gRPC metadata (ASCII keys only).
struct MetadataExtractor<'a>(&'a tonic::metadata::MetadataMap);

impl Extractor for MetadataExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0
            .keys()
            .filter_map(|k| match k {
                tonic::metadata::KeyRef::Ascii(k) => Some(k.as_str()),
                tonic::metadata::KeyRef::Binary(_) => None,
            })
            .collect()
    }
}

/// Makes the caller's span — the W3C `traceparent` in `metadata`, with its `tracestate` —
/// the parent of `span`. Without a valid `traceparent` the span starts a new trace. A no-op
/// unless the OpenTelemetry layer is installed.
pub(crate) fn continue_trace(span: &tracing::Span, metadata: &tonic::metadata::MetadataMap) {
    if metadata.get("traceparent").is_none() {
        return;
    }
    let cx = TraceContextPropagator::new().extract(&MetadataExtractor(metadata));
    // Fails only if the span is disabled or already started: then there is nothing to link.
    let _ = span.set_parent(cx);
}

/// Whether a status is a server fault, for the span status (OpenTelemetry's gRPC server
/// conventions): a caller's mistake (INVALID_ARGUMENT, …) leaves the span unset.
pub(crate) fn is_server_error(code: tonic::Code) -> bool {
    use tonic::Code::*;
    matches!(code, Unknown | DeadlineExceeded | Unimplemented | Internal | Unavailable | DataLoss)
}
