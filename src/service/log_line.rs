//! The event formatters of the log: [`TextLine`] and [`JsonLine`] write an event outside any
//! span — every audit event at the default `info` level — byte for byte as
//! `tracing-subscriber`'s own text (`Full`) and JSON formatters do, but by hand: the
//! timestamp from a per-thread cache of the current second's `YYYY-MM-DDTHH:MM:SS.` prefix,
//! integers from a digit table, strings copied (and escaped only where a byte needs it)
//! instead of going through `core::fmt` and the ANSI-style wrappers the stock formatter
//! applies to every field even with colour off. No allocation: the line goes into the fmt
//! layer's per-thread buffer.
//!
//! Anything the fast path does not reproduce exactly goes to the stock formatter: an event
//! inside a span (it adds the span's name and fields), ANSI colour (text), a text `message`
//! (the stock formatter sanitises it), fields bridged from the `log` crate (`log.*`: the
//! stock formatter takes the target from them) and raw identifiers (`r#…`). The tests below
//! compare both formats with the stock ones over every field type.

use std::cell::Cell;
use std::fmt::{self, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::fmt::format::{self, FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::fmt::{FmtContext, time};
use tracing_subscriber::registry::LookupSpan;

/// The text line format of `tracing-subscriber`'s default formatter (`Full`, no ANSI), byte
/// for byte: `2026-12-01T14:55:19.123456Z  INFO reddog::audit: event="round_started" …`.
#[derive(Default)]
pub struct TextLine {
    stock: format::Format<format::Full, time::SystemTime>,
}

/// The JSON line format of `tracing-subscriber`'s `json()` layer, byte for byte —
/// `{"timestamp":…,"level":…,"fields":{…},"target":…}`, fields in the order recorded.
pub struct JsonLine {
    stock: format::Format<format::Json, time::SystemTime>,
}

impl Default for JsonLine {
    fn default() -> Self {
        JsonLine { stock: format::Format::default().json() }
    }
}

/// Whether the event's fields are ones the fast path writes as the stock formatter does
/// (`message` only in JSON; never `log.*` or `r#…`).
fn plain_fields(meta: &Metadata<'_>, message_ok: bool) -> bool {
    meta.fields().iter().all(|f| {
        let name = f.name();
        !(name.starts_with("log.") || name.starts_with("r#") || (!message_ok && name == "message"))
    })
}

/// Whether the stock formatter would show a span with this event.
fn in_span<S, N>(ctx: &FmtContext<'_, S, N>, event: &Event<'_>) -> bool
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'w> FormatFields<'w> + 'static,
{
    event.parent().is_some() || ctx.lookup_current().is_some()
}

impl<S, N> FormatEvent<S, N> for TextLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'w> FormatFields<'w> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let meta = event.metadata();
        if writer.has_ansi_escapes() || !plain_fields(meta, false) || in_span(ctx, event) {
            return self.stock.format_event(ctx, writer, event);
        }
        write_timestamp(&mut writer)?;
        writer.write_str(match *meta.level() {
            tracing::Level::TRACE => " TRACE ",
            tracing::Level::DEBUG => " DEBUG ",
            tracing::Level::INFO => "  INFO ",
            tracing::Level::WARN => "  WARN ",
            tracing::Level::ERROR => " ERROR ",
        })?;
        writer.write_str(meta.target())?;
        writer.write_str(": ")?;
        let mut v = TextFields::new(&mut writer);
        event.record(&mut v);
        v.result?;
        writer.write_char('\n')
    }
}

impl<S, N> FormatEvent<S, N> for JsonLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'w> FormatFields<'w> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let meta = event.metadata();
        if !plain_fields(meta, true) || in_span(ctx, event) {
            return self.stock.format_event(ctx, writer, event);
        }
        writer.write_str("{\"timestamp\":\"")?;
        write_timestamp(&mut writer)?;
        writer.write_str("\",\"level\":\"")?;
        writer.write_str(meta.level().as_str())?;
        writer.write_str("\",\"fields\":{")?;
        let mut v = JsonFields::new(&mut writer);
        event.record(&mut v);
        v.result?;
        writer.write_str("},\"target\":\"")?;
        json_escaped(&mut writer, meta.target())?;
        writer.write_str("\"}\n")
    }
}

// ---------------------------------------------------------------------------------------
// Fields.

/// The visitor both formats share: each field's name as the format `S` writes it (with the
/// separator before every field but the first), then its value; the first write error is
/// kept and the fields after it are skipped.
struct Fields<'a, 'w, S> {
    w: &'a mut Writer<'w>,
    first: bool,
    result: fmt::Result,
    format: std::marker::PhantomData<S>,
}

/// How a format writes a field's name and what separates fields.
trait FieldNames {
    fn name(w: &mut Writer<'_>, field: &Field, first: bool) -> fmt::Result;
}

impl<'a, 'w, S: FieldNames> Fields<'a, 'w, S> {
    fn new(w: &'a mut Writer<'w>) -> Self {
        Fields { w, first: true, result: Ok(()), format: std::marker::PhantomData }
    }

    fn put(&mut self, field: &Field, value: impl FnOnce(&mut Writer<'_>) -> fmt::Result) {
        if self.result.is_ok() {
            let first = std::mem::replace(&mut self.first, false);
            self.result = S::name(self.w, field, first).and_then(|()| value(self.w));
        }
    }
}

/// Text: `name=value` pairs separated by a space, each value as `{:?}` formats it (what the
/// stock `DefaultVisitor` writes for every field but `message`).
struct Text;
type TextFields<'a, 'w> = Fields<'a, 'w, Text>;

impl FieldNames for Text {
    fn name(w: &mut Writer<'_>, field: &Field, first: bool) -> fmt::Result {
        if !first {
            w.write_char(' ')?;
        }
        w.write_str(field.name())?;
        w.write_char('=')
    }
}

impl Visit for TextFields<'_, '_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, |w| write!(w, "{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        // `{:?}` of a str: quoted, with `"`, `\` and anything not printable ASCII escaped.
        // Printable ASCII without those is copied as is; anything else goes through `{:?}`.
        self.put(field, |w| {
            if value.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\') {
                w.write_char('"')?;
                w.write_str(value)?;
                w.write_char('"')
            } else {
                write!(w, "{value:?}")
            }
        });
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, |w| w.write_str(Digits::u64(value).as_str()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, |w| w.write_str(Digits::i64(value).as_str()));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, |w| w.write_str(if value { "true" } else { "false" }));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        // As the stock visitor: the error's text, then `NAME.sources=[source, …]` if it has
        // sources, each sanitised of terminal escapes when the writer asks for it.
        let sanitize = self.w.sanitizes_ansi_escapes();
        self.put(field, |w| {
            write_sanitized(w, value, sanitize)?;
            let Some(mut source) = value.source() else { return Ok(()) };
            write!(w, " {}.sources=[", field.name())?;
            loop {
                write_sanitized(w, source, sanitize)?;
                match source.source() {
                    Some(next) => {
                        w.write_str(", ")?;
                        source = next;
                    }
                    None => return w.write_char(']'),
                }
            }
        });
    }
}

/// `value`'s text; with `sanitize`, terminal control characters escaped as the stock
/// formatter's `EscapeGuard` escapes them.
fn write_sanitized(w: &mut Writer<'_>, value: &dyn fmt::Display, sanitize: bool) -> fmt::Result {
    struct Sanitizing<'a, 'w>(&'a mut Writer<'w>);
    impl fmt::Write for Sanitizing<'_, '_> {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            for ch in s.chars() {
                match ch {
                    '\x1b' => self.0.write_str("\\x1b")?,
                    '\x07' => self.0.write_str("\\x07")?,
                    '\x08' => self.0.write_str("\\x08")?,
                    '\x0c' => self.0.write_str("\\x0c")?,
                    '\x7f' => self.0.write_str("\\x7f")?,
                    '\u{80}'..='\u{9f}' => write!(self.0, "\\u{{{:x}}}", ch as u32)?,
                    _ => self.0.write_char(ch)?,
                }
            }
            Ok(())
        }
    }
    if sanitize { write!(Sanitizing(w), "{value}") } else { write!(w, "{value}") }
}

/// JSON: `"name":value` pairs separated by commas, typed as `tracing-serde` types them
/// (numbers and booleans bare, everything else a JSON string), escaped as `serde_json`
/// escapes.
struct Json;
type JsonFields<'a, 'w> = Fields<'a, 'w, Json>;

impl FieldNames for Json {
    fn name(w: &mut Writer<'_>, field: &Field, first: bool) -> fmt::Result {
        if !first {
            w.write_char(',')?;
        }
        w.write_char('"')?;
        json_escaped(w, field.name())?;
        w.write_str("\":")
    }
}

impl Visit for JsonFields<'_, '_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, |w| {
            w.write_char('"')?;
            write!(JsonEscaper(w), "{value:?}")?;
            w.write_char('"')
        });
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, |w| {
            w.write_char('"')?;
            json_escaped(w, value)?;
            w.write_char('"')
        });
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, |w| w.write_str(Digits::u64(value).as_str()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, |w| w.write_str(Digits::i64(value).as_str()));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, |w| w.write_str(if value { "true" } else { "false" }));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        // serde_json's own float text (`null` for NaN and the infinities).
        self.put(field, |w| {
            let mut out = [0u8; 32];
            let mut cursor = std::io::Cursor::new(&mut out[..]);
            serde_json::to_writer(&mut cursor, &value).map_err(|_| fmt::Error)?;
            let n = usize::try_from(cursor.position()).map_err(|_| fmt::Error)?;
            w.write_str(std::str::from_utf8(&out[..n]).map_err(|_| fmt::Error)?)
        });
    }
}

/// Writes `s` with `serde_json`'s string escaping: `"`, `\` and the control characters
/// below U+0020 (`\b \t \n \f \r`, the others `\u00XX`); nothing else.
fn json_escaped(w: &mut (impl fmt::Write + ?Sized), s: &str) -> fmt::Result {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let short = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x09 => "\\t",
            0x0a => "\\n",
            0x0c => "\\f",
            0x0d => "\\r",
            0..=0x1f => "",
            _ => continue,
        };
        w.write_str(&s[start..i])?;
        if short.is_empty() {
            let u = [b'\\', b'u', b'0', b'0', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]];
            w.write_str(std::str::from_utf8(&u).map_err(|_| fmt::Error)?)?;
        } else {
            w.write_str(short)?;
        }
        start = i + 1;
    }
    w.write_str(&s[start..])
}

/// A `fmt::Write` that JSON-escapes what is written through it.
struct JsonEscaper<'a, 'w>(&'a mut Writer<'w>);

impl fmt::Write for JsonEscaper<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        json_escaped(self.0, s)
    }
}

// ---------------------------------------------------------------------------------------
// Numbers and the timestamp.

const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// An integer's decimal text, written from the right into a stack buffer.
struct Digits {
    buf: [u8; 20],
    start: usize,
}

impl Digits {
    fn u64(mut v: u64) -> Digits {
        let mut d = Digits { buf: [0; 20], start: 20 };
        while v >= 100 {
            let pair = usize::try_from(v % 100).unwrap_or(0) * 2;
            v /= 100;
            d.start -= 2;
            d.buf[d.start..d.start + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
        }
        if v >= 10 {
            let pair = usize::try_from(v).unwrap_or(0) * 2;
            d.start -= 2;
            d.buf[d.start..d.start + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
        } else {
            d.start -= 1;
            d.buf[d.start] = b'0' + v as u8;
        }
        d
    }

    /// The sign, then the digits of the magnitude (20 bytes hold `-9223372036854775808`).
    fn i64(v: i64) -> Digits {
        let mut d = Digits::u64(v.unsigned_abs());
        if v < 0 {
            d.start -= 1;
            d.buf[d.start] = b'-';
        }
        d
    }

    fn as_str(&self) -> &str {
        // Only ASCII digits and '-' are ever written.
        std::str::from_utf8(&self.buf[self.start..]).unwrap_or("")
    }
}

/// 9999-12-31T23:59:59Z: the last second whose year has four digits.
const LAST_FOUR_DIGIT_SECOND: u64 = 253_402_300_799;

thread_local! {
    /// The second last formatted on this thread and its `YYYY-MM-DDTHH:MM:SS.` text.
    static SECOND: Cell<(u64, [u8; 20])> = const { Cell::new((u64::MAX, [0; 20])) };
}

/// `YYYY-MM-DDTHH:MM:SS.` of a Unix second (proleptic Gregorian, UTC; H. Hinnant's
/// civil-from-days).
fn second_prefix(secs: u64) -> [u8; 20] {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    let mut out = *b"0000-00-00T00:00:00.";
    let mut two = |at: usize, v: u64| {
        let p = usize::try_from(v % 100).unwrap_or(0) * 2;
        out[at..at + 2].copy_from_slice(&PAIRS[p..p + 2]);
    };
    two(0, year / 100);
    two(2, year % 100);
    two(5, month);
    two(8, day);
    two(11, rem / 3600);
    two(14, rem / 60 % 60);
    two(17, rem % 60);
    out
}

/// RFC 3339 with microseconds, as `tracing-subscriber`'s `SystemTime` timer writes it, of
/// a time `secs` after the epoch (four-digit years only).
fn timestamp_text(secs: u64, micros: u32) -> [u8; 27] {
    let prefix = SECOND.with(|c| {
        let (cached, text) = c.get();
        if cached == secs {
            text
        } else {
            let text = second_prefix(secs);
            c.set((secs, text));
            text
        }
    });
    let mut out = [0u8; 27];
    out[..20].copy_from_slice(&prefix);
    let m = Digits::u64(u64::from(micros) + 1_000_000); // "1" and six digits, zeros kept
    out[20..26].copy_from_slice(&m.buf[m.start + 1..]);
    out[26] = b'Z';
    out
}

/// The current time as the stock timer writes it; the stock timer itself for a time it
/// would write otherwise (before 1970, after 9999).
fn write_timestamp(w: &mut Writer<'_>) -> fmt::Result {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) if d.as_secs() <= LAST_FOUR_DIGIT_SECOND => {
            let text = timestamp_text(d.as_secs(), d.subsec_micros());
            w.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
        }
        _ => time::SystemTime.format_time(w),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::telemetry::{LogFormat, fmt_layer};
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::fmt::MakeWriter;
    use tracing_subscriber::layer::SubscriberExt;

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

    impl Buf {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// An error with a chain of sources.
    #[derive(Debug)]
    struct Chain(&'static str, Option<Box<Chain>>);

    impl fmt::Display for Chain {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Chain {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|c| c as _)
        }
    }

    /// Events of every field type and value the formatters treat differently.
    fn emit_all() {
        let cards = "Tc 4h";
        tracing::info!(
            target: "reddog::audit",
            event = "round_started",
            round_id = %"r-1 \"quoted\"\n\u{7f}",
            plain = "printable ASCII 'single' quotes ~",
            escaped = "tab\there \\ \"q\" \u{1} \u{1f} é ü \u{301} \u{200b} 🂡",
            nonce = 7u64,
            zero = 0u64,
            max = u64::MAX,
            offset = -3i64,
            min = i64::MIN,
            ratio = 0.5f64,
            tiny = 1e-7f64,
            nan = f64::NAN,
            complete = true,
            done = false,
            small = 3u8,
            seats = 7usize,
            big = 1u128 << 100,
            neg = -(1i128 << 100),
            decisions = ?[(0usize, "Raise")],
            cards = %format_args!("{cards}"),
            err = &std::io::Error::other("disk \"full\"") as &(dyn std::error::Error + 'static),
            chain = &Chain("outer \u{1b}[1m\u{85}", Some(Box::new(Chain("middle", Some(Box::new(Chain("inner", None)))))))
                as &(dyn std::error::Error + 'static),
        );
        tracing::warn!(plain = 1u64, "a message with ünïcode and \u{1b}[31m an escape");
        tracing::error!(target: "weird \"target\"\n", x = 1u64);
        tracing::info!("only a message");
        tracing::info!(target: "reddog::audit", r#type = "raw");
        tracing::debug!(target: "reddog::audit", hidden = 1u64);
        // Inside a span the stock formatter takes over (span name and fields).
        tracing::info_span!("rpc", m = "Decide").in_scope(|| tracing::info!(x = 1u64, "in span"));
        tracing::info!(parent: None, root = 1u64);
    }

    /// `(ours, stock)` lines of [`emit_all`] in `format`.
    fn lines(format: LogFormat) -> (String, String) {
        let (ours, stock) = (Buf::default(), Buf::default());
        let stock_layer: Box<dyn tracing_subscriber::Layer<_> + Send + Sync> = match format {
            LogFormat::Text => tracing_subscriber::fmt::layer().with_ansi(false).with_writer(stock.clone()).boxed(),
            LogFormat::Json => tracing_subscriber::fmt::layer().json().with_writer(stock.clone()).boxed(),
        };
        let sub = tracing_subscriber::registry()
            .with(fmt_layer(format, false, ours.clone()).with_filter(tracing_subscriber::EnvFilter::new("info")))
            .with(stock_layer.with_filter(tracing_subscriber::EnvFilter::new("info")));
        tracing::subscriber::with_default(sub, emit_all);
        (ours.text(), stock.text())
    }

    use tracing_subscriber::Layer as _;

    /// The output with every timestamp replaced by `<ts>`, and the timestamps (checked to be
    /// RFC 3339 with microseconds, as the stock timer writes them).
    fn mask_timestamps(out: &str) -> (String, Vec<String>) {
        let b = out.as_bytes();
        let looks = |i: usize| {
            b.len() >= i + 27
                && b[i..i + 27].iter().enumerate().all(|(k, &c)| match k {
                    4 | 7 => c == b'-',
                    10 => c == b'T',
                    13 | 16 => c == b':',
                    19 => c == b'.',
                    26 => c == b'Z',
                    _ => c.is_ascii_digit(),
                })
        };
        let (mut masked, mut stamps, mut i) = (String::new(), Vec::new(), 0);
        while i < b.len() {
            if looks(i) {
                let ts = &out[i..i + 27];
                assert!(crate::audit::parse_timestamp(ts).is_some(), "{ts}");
                stamps.push(ts.to_string());
                masked.push_str("<ts>");
                i += 27;
            } else {
                let ch = out[i..].chars().next().unwrap();
                masked.push(ch);
                i += ch.len_utf8();
            }
        }
        (masked, stamps)
    }

    #[test]
    fn text_lines_are_the_stock_text_format_byte_for_byte_but_the_timestamp() {
        let (ours, stock) = lines(LogFormat::Text);
        let ((o, o_ts), (s, s_ts)) = (mask_timestamps(&ours), mask_timestamps(&stock));
        assert_eq!(o, s, "same bytes but the timestamps");
        assert_eq!((o_ts.len(), s_ts.len()), (7, 7), "{ours}");
        assert!(o.contains(r#" event="round_started" round_id=r-1 "quoted""#), "{o}");
        assert!(o.contains("rpc{m=\"Decide\"}"), "{o}");
    }

    #[test]
    fn json_lines_are_the_stock_json_format_byte_for_byte_but_the_timestamp() {
        let (ours, stock) = lines(LogFormat::Json);
        let ((o, o_ts), (s, s_ts)) = (mask_timestamps(&ours), mask_timestamps(&stock));
        assert_eq!(o, s, "same bytes but the timestamps");
        assert_eq!((o_ts.len(), s_ts.len()), (7, 7), "{ours}");
        for line in ours.lines() {
            serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
        assert!(o.contains(r#""spans":"#), "{o}");
    }

    #[test]
    fn lines_bridged_from_the_log_crate_are_written_as_the_stock_formatters_write_them() {
        for format in [LogFormat::Text, LogFormat::Json] {
            let (ours, stock) = (Buf::default(), Buf::default());
            let stock_layer: Box<dyn tracing_subscriber::Layer<_> + Send + Sync> = match format {
                LogFormat::Text => tracing_subscriber::fmt::layer().with_ansi(false).with_writer(stock.clone()).boxed(),
                LogFormat::Json => tracing_subscriber::fmt::layer().json().with_writer(stock.clone()).boxed(),
            };
            let sub = tracing_subscriber::registry().with(fmt_layer(format, false, ours.clone())).with(stock_layer);
            tracing::subscriber::with_default(sub, || {
                tracing_log::format_trace(
                    &log::Record::builder()
                        .args(format_args!("from log \"{}\"", 1))
                        .level(log::Level::Warn)
                        .target("rustls::conn")
                        .module_path_static(Some("rustls::conn"))
                        .file_static(Some("src/conn.rs"))
                        .line(Some(7))
                        .build(),
                )
                .unwrap();
            });
            let ((o, o_ts), (s, _)) = (mask_timestamps(&ours.text()), mask_timestamps(&stock.text()));
            assert_eq!(o, s, "{format:?}");
            assert_eq!(o_ts.len(), 1, "{o}");
            assert!(o.contains("rustls::conn"), "the record's own target: {o}");
        }
    }

    #[test]
    fn the_timestamp_is_the_stock_timestamp_for_every_kind_of_date() {
        // Round trips through the in-tree RFC 3339 parser, across leap days, century rules,
        // year ends and the four-digit limit.
        let mut secs: Vec<u64> = vec![0, 59, 86_399, 86_400, 951_782_400, 951_868_799, 4_107_542_400, 4_102_444_799];
        secs.extend((0..LAST_FOUR_DIGIT_SECOND).step_by(7_919_993).take(40_000));
        secs.push(LAST_FOUR_DIGIT_SECOND);
        for s in secs {
            for micros in [0u32, 7, 999_999] {
                let text = timestamp_text(s, micros);
                let text = std::str::from_utf8(&text).unwrap();
                let (back, nanos) = crate::audit::parse_timestamp(text).unwrap();
                assert_eq!((back, nanos), (s as i64, micros * 1000), "{text}");
            }
        }
        assert_eq!(std::str::from_utf8(&timestamp_text(951_782_400, 5)).unwrap(), "2000-02-29T00:00:00.000005Z");
        assert_eq!(
            std::str::from_utf8(&timestamp_text(LAST_FOUR_DIGIT_SECOND, 0)).unwrap(),
            "9999-12-31T23:59:59.000000Z"
        );
        // And the stock timer writes the same at this very second (within the second).
        let mut stock = String::new();
        time::SystemTime.format_time(&mut Writer::new(&mut stock)).unwrap();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let ours = timestamp_text(now.as_secs(), now.subsec_micros());
        let ours = std::str::from_utf8(&ours).unwrap();
        assert_eq!(stock.len(), ours.len());
        let (a, b) = (crate::audit::parse_timestamp(&stock).unwrap(), crate::audit::parse_timestamp(ours).unwrap());
        assert!((b.0 - a.0).abs() <= 1, "{stock} vs {ours}");
    }

    #[test]
    fn digits_are_the_decimal_text() {
        for v in [0u64, 1, 9, 10, 99, 100, 101, 12_345, 1_000_000, u64::MAX, u64::MAX - 1] {
            assert_eq!(Digits::u64(v).as_str(), v.to_string());
        }
        for v in [0i64, -1, 1, -10, i64::MIN, i64::MAX, -1_234_567] {
            assert_eq!(Digits::i64(v).as_str(), v.to_string());
        }
    }

    #[test]
    fn json_escaping_is_serde_jsons() {
        let all: String = (0u8..=0x7f).map(char::from).chain("é€🂡\u{2028}".chars()).collect();
        let mut ours = String::new();
        json_escaped(&mut ours, &all).unwrap();
        assert_eq!(format!("\"{ours}\""), serde_json::to_string(&all).unwrap());
    }
}
