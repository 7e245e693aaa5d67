//! Logs and traces: a `tracing` subscriber writing text or JSON to stderr, filtered by
//! `RUST_LOG` (default `info`), plus OpenTelemetry traces over OTLP/gRPC when the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the exporter reads the other `OTEL_*` variables).
//!
//! The per-RPC span continues the caller's trace: a W3C `traceparent` (and `tracestate`) in
//! the request's gRPC metadata becomes its parent ([`continue_trace`]), so a platform's trace
//! shows the engine's spans under its own call.
//!
//! These are diagnostics only, in tracing-subscriber's stock text and JSON formats: the audit
//! trail is written by its own sink ([`crate::service::evidence::audit_sink`]), which no `RUST_LOG` setting
//! affects. No event or span carries a server seed before its reveal, a key or a token.
//!
//! Lines are appended to a [`BatchWriter`]'s batch; a background thread writes batches to
//! stderr (see [`super::log_writer`]).
//!
//! **An unreachable collector costs a warning a minute and no shutdown time.** Each failed
//! export counts in `reddog_otlp_export_failures_total`; the first failure logs a WARN, and
//! further failures at most one WARN a minute (with the count since the last); a success after
//! failures logs the recovery at INFO. The SDK's own error lines (target `opentelemetry*`) are
//! not written: [`QuietExporter`] reports instead. At exit the spans still queued get at most
//! [`FLUSH_BOUND`] to be exported, and none while exports are failing.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::filter::FilterExt as _;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub(crate) use crate::service::ops::log_writer::BatchWriter;
use crate::service::ops::metrics::MetricsRegistry;

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
    export: Arc<ExportHealth>,
    logs: BatchWriter,
}

/// The longest the spans still queued at exit may take to export (none while exports fail).
pub(crate) const FLUSH_BOUND: Duration = Duration::from_millis(500);

/// Whether OTLP exports succeed, and when a failure was last reported.
#[derive(Debug)]
pub(crate) struct ExportHealth {
    /// `reddog_otlp_export_failures_total` of the registry given to [`init`].
    failures: metrics::Counter,
    failing: AtomicBool,
    /// Failures since the last WARN.
    unreported: AtomicU64,
    last_warning: Mutex<Option<Instant>>,
}

/// At most one WARN about failing exports per this interval.
pub(crate) const EXPORT_WARNING_INTERVAL: Duration = Duration::from_secs(60);

impl ExportHealth {
    /// No export yet; failures count in `failures`.
    pub(crate) fn new(failures: metrics::Counter) -> ExportHealth {
        ExportHealth {
            failures,
            failing: AtomicBool::new(false),
            unreported: AtomicU64::new(0),
            last_warning: Mutex::new(None),
        }
    }

    /// `true` while the last export failed.
    pub(crate) fn failing(&self) -> bool {
        self.failing.load(Ordering::Relaxed)
    }

    /// Records one export's result at `now`: counts a failure, warns at the first and then
    /// at most once per [`EXPORT_WARNING_INTERVAL`]; logs a recovery. Returns whether it
    /// logged a warning.
    pub(crate) fn record(&self, result: &OTelSdkResult, now: Instant) -> bool {
        match result {
            Ok(()) => {
                if self.failing.swap(false, Ordering::Relaxed) {
                    // The next outage warns at once.
                    *self.last_warning.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
                    let missed = self.unreported.swap(0, Ordering::Relaxed);
                    tracing::info!(unreported_failures = missed, "OTLP trace export recovered");
                }
                false
            }
            Err(e) => {
                self.failures.increment(1);
                self.failing.store(true, Ordering::Relaxed);
                let failures = self.unreported.fetch_add(1, Ordering::Relaxed) + 1;
                let mut last = self.last_warning.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if last.is_some_and(|t| now.saturating_duration_since(t) < EXPORT_WARNING_INTERVAL) {
                    return false;
                }
                *last = Some(now);
                self.unreported.store(0, Ordering::Relaxed);
                tracing::warn!(
                    failures,
                    error = %e,
                    "OTLP trace export failing: spans are dropped (reddog_otlp_export_failures_total); \
                     at most one warning a minute"
                );
                true
            }
        }
    }
}

/// The OTLP exporter, reporting its failures through [`ExportHealth`] instead of the SDK's
/// error log (a failed batch is dropped either way).
#[derive(Debug)]
pub(crate) struct QuietExporter<E> {
    inner: E,
    health: Arc<ExportHealth>,
}

impl<E: SpanExporter> SpanExporter for QuietExporter<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        self.health.record(&result, Instant::now());
        Ok(())
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
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
    /// Flushes and stops the trace exporter (at most [`FLUSH_BOUND`]; not at all while exports
    /// fail), and writes out the logs (at most 0.4 s: a stalled stderr cannot hold the exit).
    fn drop(&mut self) {
        if let Some(p) = self.provider.take() {
            let bound = if self.export.failing() { Duration::ZERO } else { FLUSH_BOUND };
            let _ = p.shutdown_with_timeout(bound);
        }
        let _ = self.logs.close(Duration::from_millis(400));
    }
}

/// What the OTLP layer receives: `info` and the per-RPC span (target `reddog::service::round::api`,
/// level DEBUG).
const OTLP_FILTER: &str = "info,reddog::service::round::api=debug";

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
    let logs = BatchWriter::start_counting_drops(std::io::stderr(), metrics.log_lines_dropped());
    let fmt = fmt_layer(format, ansi, logs.clone());
    let endpoint_set = std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some_and(|v| !v.is_empty())
        || std::env::var_os("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some_and(|v| !v.is_empty());
    let export = Arc::new(ExportHealth::new(metrics.otlp_export_failures()));
    let provider = if endpoint_set {
        let inner = opentelemetry_otlp::SpanExporter::builder().with_tonic().build()?;
        let exporter = QuietExporter { inner, health: Arc::clone(&export) };
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
    // The SDK's own diagnostics (an ERROR per failed export, every few seconds while a
    // collector is down) are replaced by `QuietExporter`'s rate-limited warning.
    let not_sdk = tracing_subscriber::filter::filter_fn(|m| !m.target().starts_with("opentelemetry"));
    tracing_subscriber::registry().with(fmt.with_filter(filter.and(not_sdk))).with(otel).try_init()?;
    Ok(Telemetry { provider, export, logs })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Failures every 5 s for 10 minutes (120 of them) give 10 warnings, one a minute, and
    /// count 120 in the registry's `reddog_otlp_export_failures_total`; a success logs the
    /// recovery and the next failure warns at once.
    #[test]
    fn export_failures_warn_at_most_once_a_minute() {
        let registry = MetricsRegistry::new();
        let health = ExportHealth::new(registry.otlp_export_failures());
        assert_eq!(registry.value("reddog_otlp_export_failures_total"), Some(0.0), "registered at 0");
        let start = Instant::now();
        let fail: OTelSdkResult = Err(opentelemetry_sdk::error::OTelSdkError::InternalFailure("refused".into()));
        let warnings = (0..120u64).filter(|i| health.record(&fail, start + Duration::from_secs(5 * i))).count();
        assert_eq!(warnings, 10);
        assert_eq!(registry.value("reddog_otlp_export_failures_total"), Some(120.0));
        assert!(health.failing());
        // The last warning was at 540 s: without the recovery, 597 s would be too soon.
        assert!(!health.record(&Ok(()), start + Duration::from_secs(596)));
        assert!(!health.failing());
        assert!(health.record(&fail, start + Duration::from_secs(597)), "the first failure after a recovery warns");
        assert_eq!(registry.value("reddog_otlp_export_failures_total"), Some(121.0), "a success counts nothing");
    }
}
