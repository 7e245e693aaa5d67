//! Logs and traces: a `tracing` subscriber writing text or JSON to stderr, filtered by
//! `RUST_LOG` (default `info`), plus OpenTelemetry traces over OTLP/gRPC when the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the exporter reads the other `OTEL_*` variables).
//!
//! The per-RPC span continues the caller's trace: a W3C `traceparent` (and `tracestate`) in
//! the request's gRPC metadata becomes its parent ([`continue_trace`]), so a platform's trace
//! shows the engine's spans under its own call.
//!
//! Audit events use the target `reddog::audit`, one per round step (`seed_committed`,
//! `round_started`, `seats_decided`, `round_settled`). No event or span carries a server seed
//! before its reveal, a key or a token.

use std::io::Write;
use std::sync::mpsc::{SyncSender, sync_channel};

use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::fmt::MakeWriter;
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

/// Keeps the trace exporter and the log writer alive; call [`Telemetry::shutdown`] to flush
/// both at exit.
#[derive(Debug)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
    logs: SyncSender<LogMsg>,
}

/// A message to the log writer thread.
#[derive(Debug)]
enum LogMsg {
    Line(Vec<u8>),
    Flush(SyncSender<()>),
}

/// Log lines are formatted on the calling thread and written to stderr by one background
/// thread, so an RPC never waits on a `write(2)`. The channel is bounded: when the writer
/// falls behind, callers wait rather than lose lines.
#[derive(Clone, Debug)]
struct BackgroundStderr {
    tx: SyncSender<LogMsg>,
}

impl BackgroundStderr {
    fn start() -> BackgroundStderr {
        let (tx, rx) = sync_channel::<LogMsg>(16 * 1024);
        std::thread::Builder::new()
            .name("reddog-log".into())
            .spawn(move || {
                let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stderr());
                while let Ok(msg) = rx.recv() {
                    let mut next = Some(msg);
                    while let Some(msg) = next.take() {
                        match msg {
                            LogMsg::Line(line) => {
                                let _ = out.write_all(&line);
                            }
                            LogMsg::Flush(ack) => {
                                let _ = out.flush();
                                let _ = ack.send(());
                            }
                        }
                        next = rx.try_recv().ok();
                    }
                    let _ = out.flush();
                }
                let _ = out.flush();
            })
            .map_or_else(|_| eprintln!("could not start the log writer thread"), drop);
        BackgroundStderr { tx }
    }
}

impl std::io::Write for BackgroundStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // The fmt layer writes each event with one `write_all` of the whole line.
        if self.tx.send(LogMsg::Line(buf.to_vec())).is_err() {
            std::io::stderr().write_all(buf)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for BackgroundStderr {
    type Writer = BackgroundStderr;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl Telemetry {
    /// Whether OTLP trace export is on.
    pub fn otlp_enabled(&self) -> bool {
        self.provider.is_some()
    }

    /// Flushes and stops the trace exporter, and flushes the logs written so far.
    pub fn shutdown(self) {
        if let Some(p) = self.provider {
            let _ = p.shutdown();
        }
        let (ack, done) = sync_channel(1);
        if self.logs.send(LogMsg::Flush(ack)).is_ok() {
            let _ = done.recv_timeout(std::time::Duration::from_secs(2));
        }
    }
}

/// Installs the global subscriber. Must run inside the tokio runtime (the OTLP exporter
/// needs it). Fails if a global subscriber is already set.
/// What the OTLP layer receives: `info` and the per-RPC span (target `reddog::service::api`,
/// level DEBUG).
const OTLP_FILTER: &str = "info,reddog::service::api=debug";

pub fn init(format: LogFormat) -> Result<Telemetry, Box<dyn std::error::Error + Send + Sync>> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let writer = BackgroundStderr::start();
    let logs = writer.tx.clone();
    let fmt = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer().with_ansi(ansi).with_writer(writer).boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer().json().with_writer(writer).boxed(),
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
pub fn continue_trace(span: &tracing::Span, metadata: &tonic::metadata::MetadataMap) {
    if metadata.get("traceparent").is_none() {
        return;
    }
    let cx = TraceContextPropagator::new().extract(&MetadataExtractor(metadata));
    // Fails only if the span is disabled or already started: then there is nothing to link.
    let _ = span.set_parent(cx);
}

/// Whether a status is a server fault, for the span status (OpenTelemetry's gRPC server
/// conventions): a caller's mistake (INVALID_ARGUMENT, …) leaves the span unset.
pub fn is_server_error(code: tonic::Code) -> bool {
    use tonic::Code::*;
    matches!(code, Unknown | DeadlineExceeded | Unimplemented | Internal | Unavailable | DataLoss)
}
