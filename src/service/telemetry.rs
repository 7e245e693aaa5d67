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
//!
//! Cost: an audit line is formatted into the fmt layer's per-thread buffer (no allocation per
//! event: text by `tracing-subscriber`, JSON by [`JsonLine`]) and appended to the
//! [`BatchWriter`]'s batch; a background thread writes batches to stderr (see
//! [`super::log_writer`]). `cargo bench --bench audit` measures the cost per event.

use std::fmt;
use std::time::Duration;

use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde::ser::{SerializeMap, Serializer as _};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::fmt::format::{self, FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, MakeWriter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub use super::log_writer::BatchWriter;

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

/// The fmt layer of `format` writing to `writer`: what `init` installs, public so the audit
/// benchmark (`benches/audit.rs`) measures exactly this.
pub fn fmt_layer<S, W>(format: LogFormat, ansi: bool, writer: W) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    match format {
        LogFormat::Text => tracing_subscriber::fmt::layer().with_ansi(ansi).with_writer(writer).boxed(),
        LogFormat::Json => {
            tracing_subscriber::fmt::layer().json().event_format(JsonLine::default()).with_writer(writer).boxed()
        }
    }
}

/// The JSON line format of `tracing-subscriber`'s `json()` layer, byte for byte —
/// `{"timestamp":…,"level":…,"fields":{…},"target":…}`, fields in the order recorded — but
/// streamed into the line buffer without building the timestamp as a `String` first. An
/// event inside a span (only at DEBUG here, or with OTLP export) is left to the stock
/// formatter, which adds `span` and `spans`.
pub struct JsonLine {
    stock: format::Format<format::Json>,
}

impl Default for JsonLine {
    fn default() -> Self {
        JsonLine { stock: format::Format::default().json() }
    }
}

impl<S, N> FormatEvent<S, N> for JsonLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'w> FormatFields<'w> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        if event.parent().is_some() || ctx.lookup_current().is_some() {
            return self.stock.format_event(ctx, writer, event);
        }
        let meta = event.metadata();
        let result = (|| {
            let mut ser = serde_json::Serializer::new(WriteAdaptor(&mut writer));
            let mut map = ser.serialize_map(None)?;
            map.serialize_entry("timestamp", &Timestamp)?;
            map.serialize_entry("level", meta.level().as_str())?;
            map.serialize_entry("fields", &Fields(event))?;
            map.serialize_entry("target", meta.target())?;
            map.end()
        })();
        result.map_err(|_| fmt::Error)?;
        writeln!(writer)
    }
}

/// The current time as the stock formatter writes it (RFC 3339, microseconds, UTC).
struct Timestamp;

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        SystemTime.format_time(&mut Writer::new(f))
    }
}

/// An event's fields as a JSON object, typed as `tracing-serde` types them.
struct Fields<'a, 'b>(&'a Event<'b>);

impl serde::Serialize for Fields<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut v = FieldVisitor { map: s.serialize_map(None)?, result: Ok(()) };
        self.0.record(&mut v);
        v.result?;
        v.map.end()
    }
}

struct FieldVisitor<M: SerializeMap> {
    map: M,
    result: Result<(), M::Error>,
}

impl<M: SerializeMap> Visit for FieldVisitor<M> {
    fn record_bool(&mut self, field: &Field, value: bool) {
        if self.result.is_ok() {
            self.result = self.map.serialize_entry(field.name(), &value);
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_ok() {
            self.result = self.map.serialize_entry(field.name(), &format_args!("{value:?}"));
        }
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        if self.result.is_ok() {
            self.result = self.map.serialize_entry(field.name(), &value);
        }
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        if self.result.is_ok() {
            self.result = self.map.serialize_entry(field.name(), &value);
        }
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        if self.result.is_ok() {
            self.result = self.map.serialize_entry(field.name(), &value);
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if self.result.is_ok() {
            self.result = self.map.serialize_entry(field.name(), &value);
        }
    }
}

/// `io::Write` into the fmt layer's line buffer (serde_json writes valid UTF-8 only).
struct WriteAdaptor<'a, 'b>(&'a mut Writer<'b>);

impl std::io::Write for WriteAdaptor<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let s = std::str::from_utf8(buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        fmt::Write::write_str(self.0, s).map_err(std::io::Error::other)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
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
    /// Flushes and stops the trace exporter, and writes out the logs (at most 2 s each).
    fn drop(&mut self) {
        if let Some(p) = self.provider.take() {
            let _ = p.shutdown();
        }
        self.logs.close(Duration::from_secs(2));
    }
}

/// What the OTLP layer receives: `info` and the per-RPC span (target `reddog::service::api`,
/// level DEBUG).
const OTLP_FILTER: &str = "info,reddog::service::api=debug";

/// Installs the global subscriber: the fmt layer (text or JSON) over a [`BatchWriter`] on
/// stderr, filtered by `RUST_LOG`, and the OTLP layer when an endpoint is set. Must run
/// inside the tokio runtime (the OTLP exporter needs it). Fails if a global subscriber is
/// already set.
pub fn init(format: LogFormat) -> Result<Telemetry, Box<dyn std::error::Error + Send + Sync>> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = BatchWriter::start(std::io::stderr());
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Buf {
        type Writer = Buf;
        fn make_writer(&'a self) -> Buf {
            self.clone()
        }
    }

    #[test]
    fn json_lines_are_the_stock_json_format_byte_for_byte_but_the_timestamp() {
        let (ours, stock) = (Buf::default(), Buf::default());
        let sub = tracing_subscriber::registry()
            .with(fmt_layer(LogFormat::Json, false, ours.clone()))
            .with(tracing_subscriber::fmt::layer().json().with_writer(stock.clone()));
        tracing::subscriber::with_default(sub, || {
            let cards = "Tc 4h";
            tracing::info!(
                target: "reddog::audit",
                event = "round_started",
                round_id = %"r-1 \"quoted\"\n",
                nonce = 7u64,
                offset = -3i64,
                ratio = 0.5f64,
                complete = true,
                decisions = ?[(0usize, "Raise")],
                cards = %format_args!("{cards}"),
                "a message with ünïcode"
            );
            tracing::warn!(plain = 1u64, "second");
            // Inside a span the stock formatter (with span and spans) takes over.
            tracing::info_span!("rpc", m = "Decide").in_scope(|| tracing::info!(x = 1u64, "in span"));
        });
        let ours = String::from_utf8(ours.0.lock().unwrap().clone()).unwrap();
        let stock = String::from_utf8(stock.0.lock().unwrap().clone()).unwrap();
        let (ol, sl): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), stock.lines().collect());
        assert_eq!(ol.len(), 3);
        assert_eq!(sl.len(), 3);
        for (o, s) in ol.iter().zip(&sl) {
            fn after(l: &str) -> Option<&str> {
                l.split_once(r#"","level""#).map(|(_, rest)| rest)
            }
            assert_eq!(after(o), after(s), "same bytes after the timestamp:\n{o}\n{s}");
            assert!(after(o).is_some(), "{o}");
            let ts = |l: &str| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["timestamp"].as_str().unwrap().to_string()
            };
            let (to, tsk) = (ts(o), ts(s));
            assert_eq!(to.len(), tsk.len(), "{to} vs {tsk}");
            assert!(to.ends_with('Z') && to.as_bytes()[10] == b'T', "{to}");
        }
        assert!(ol[2].contains(r#""spans":"#), "{}", ol[2]);
    }
}
