//! Prometheus metrics, recorded with the `metrics` crate and rendered at `/metrics` on the
//! metrics listener:
//!
//! | metric | type | labels | meaning |
//! |---|---|---|---|
//! | `reddog_rpc_requests_total` | counter | `method`, `code` | RPCs answered, by gRPC status code name |
//! | `reddog_rpc_duration_seconds` | histogram | `method` | handler latency |
//! | `reddog_rpc_queue_wait_seconds` | histogram | | how long each RedDog call waited in the server before it could start: from its headers reaching the service until a thread first ran it (calls shed past `--max-queue-wait-ms` included) |
//! | `reddog_rounds_started_total` | counter | `table`, `hand_class`, `spread` | StartRound answers by deal class (a retried StartRound counts again) |
//! | `reddog_rounds_settled_total` | counter | `table`, `hand_class`, `spread`, `rule` | Settle answers by deal class and deciding rule |
//! | `reddog_seats_settled_total` | counter | `table`, `hand_class`, `outcome`, `rule` | seat results returned by `Settle` |
//! | `reddog_staked_minor_units_total` | counter | `table` | sum of stakes settled |
//! | `reddog_returned_minor_units_total` | counter | `table` | sum returned; returned/staked = observed RTP |
//! | `reddog_settled_round_moments_total` | counter | `table`, `moment` | Σ returned² (`rr`), Σ returned·staked (`rs`), Σ staked² (`ss`) per Settle answer |
//! | `reddog_expected_returned_minor_units_total` | counter | `table` | Σ over Settle answers of the round's exact expected return given its deal and the decisions made ([`crate::odds::round_expectation`]) |
//! | `reddog_returned_variance_minor_units_squared_total` | counter | `table` | Σ of the same rounds' variances of the return: observed − expected over √ this is the payout monitor's z |
//! | `reddog_deal_probability` | gauge | `table`, `hand_class`, `spread` | exact probability of the deal class |
//! | `reddog_third_card_probability` | gauge | `table`, `hand_class`, `spread` | exact P(third card wins \| deal class) |
//! | `reddog_rtp_bound` | gauge | `table`, `definition`, `bound` | exact RTP range over every strategy |
//! | `reddog_table_info` | gauge (1) | `table`, `decks`, `currency`, `minor_unit_exponent`, `rules_digest` | the configured tables |
//! | `reddog_rules_certified` | gauge | `table`, `rules_digest` | 1: checked at start-up against `--certified-rules` naming this binary; 0: started without it, or with `--allow-uncertified-binary` on another binary's file |
//! | `reddog_binary_certified` | gauge | | 1: `--certified-rules` names this binary's SHA-256; 0 otherwise (same cases) |
//! | `reddog_otlp_export_failures_total` | counter | | OTLP trace exports that failed (each a dropped batch of spans; logged as one WARN a minute at most) |
//! | `reddog_serving` | gauge | | 1 while the overall health status (readiness) is SERVING; 0 while the audit trail's output fails or stalls, and from the moment a drain starts |
//! | `reddog_build_info` | gauge (1) | `version`, `git_commit`, `build_date` | the build |
//! | `reddog_token_rejections_total` | counter | `method`, `reason` | tokens refused, by why (`expired`, `unknown_key`, `tampered`, `malformed`, `wrong_kind`; `too_old`: issued before the support window, or of a retired format); the client gets one answer for all but `too_old` |
//! | `reddog_rpc_in_flight` | gauge | | RedDog calls in progress: request headers arrived, answer not yet sent (so every held `--max-in-flight` slot); calls still reading their request message count, although they hold no slot |
//! | `reddog_rpc_undelivered_total` | counter | | slots released by closing a connection that left its answers unread for 1–2 s (`undelivered` below) |
//! | `reddog_load_shed_total` | counter | | RedDog calls answered RESOURCE_EXHAUSTED (`OVERLOADED`): at `--max-in-flight`, at `--max-pending-request-bytes`, or after waiting over `--max-queue-wait-ms` |
//! | `reddog_load_shed_queued_total` | counter | | of those, the calls that would wait, or waited, over `--max-queue-wait-ms` for a worker thread |
//! | `reddog_worker_wait_seconds` | gauge | | how late a task woken now starts on a worker thread (a probe every 5 ms; the least of its last four): over `--max-queue-wait-ms`, calls are shed |
//! | `reddog_peer_penalties_total` | counter | | penalties given to a peer (address or client certificate) whose connection was closed for leaving answers unread: no slot, no new connection meanwhile |
//! | `reddog_request_timeouts_total` | counter | | RedDog calls cut at `--request-timeout-ms` (DEADLINE_EXCEEDED) |
//! | `reddog_undecodable_requests_total` | counter | `code` | requests tonic could not decode (INVALID_ARGUMENT) or that were over the size limit (RESOURCE_EXHAUSTED) |
//! | `reddog_connections_closed_total` | counter | `reason` | connections the server closed: `handshake_timeout`, `tls`, `not_http2`, `too_many_handshakes`, `too_many_connections` (at the cap, no connection to displace or retire), `displaced` (a connection closed at the cap to let a new one in: of the peer holding the most, or idle), `retired` (a busy connection closed gracefully at the cap, GOAWAY, its calls finished, to let a new one of its peer in), `idle`, `undelivered` (answers unread for 1–2 s), `penalized` (a new connection of a penalized peer past the 16 held) |
//! | `reddog_accept_backoffs_total` | counter | | accept failures (out of file descriptors or memory) that made an accept loop (gRPC, health or `/metrics`) back off |
//! | `reddog_log_lines_dropped_total` | counter | | diagnostic log lines dropped because stderr took nothing while 4 MiB waited (`log_writer`: a stalled stderr never blocks a call, health or the shutdown) |
//! | `reddog_audit_records_total` | counter | | audit records handed to the trail's writer (`audit_sink`) |
//! | `reddog_audit_refused_total` | counter | `reason` | calls answered UNAVAILABLE (`AUDIT_UNAVAILABLE`) because their record was refused or not written in time (`backlog`, `output_failed`, `stalled`, `stopped`, `not_started`) |
//! | `reddog_audit_sink_up` | gauge | | 1 while the trail's output takes records, 0 while it fails or stalls (`audit_writer`) |
//! | `reddog_audit_sink_faults_total` | counter | `cause` | times the trail's output began to fail: `no_space`, `io_error`, `closed`, `write_error`, `stalled` |
//! | `process_*` | | | the process's CPU, memory, file descriptors, threads and start time (metrics-process) |
//!
//! Every counter with a fixed label set is registered at 0 when the registry is made (before
//! the service starts), so a rule sees it before its first event; `reddog_rpc_requests_total` is at 0 for code `OK` of every
//! method, and other codes appear at their first answer.
//!
//! Settlement counters count `Settle` answers: a retried `Settle` counts again. Deal classes
//! are `hand_class` `pair` and `consecutive` (spread `0`) and `non_consecutive` with spread
//! `1`…`11`.
//! No metric carries a seed, key, token or round id.
//!
//! **One registry per application.** Each [`crate::service::Application`] owns a [`MetricsRegistry`]:
//! a Prometheus recorder of its own (metrics-exporter-prometheus, never installed as the
//! process's global `metrics` recorder) and its exact money and payout sums
//! ([`MoneyMetrics`]). It is passed in to everything that records (the service, the
//! transport and guard, the audit sink, the log writer and the OTLP exporter: the binary
//! creates it and hands it to [`crate::service::ops::telemetry::init`] and to [`crate::service::Settings`]), and its
//! `/metrics` listener renders it.
//! No `counter!` macro reaches a global recorder and no `static` holds a handle (the test
//! `service_metrics::no_file_under_src_holds_a_static_metrics_handle_or_reaches_a_global_recorder`
//! scans src/), so two `Application`s in one process (tests) each count only their own calls,
//! rounds and money, and each reports its own readiness (`reddog_serving`). The `process_*`
//! metrics (of the whole process, whoever asks) are sampled into the registry being rendered
//! at each scrape.
//!
//! **The money counters never wrap.** A `metrics` counter is a `u64` that wraps at 2^64, and
//! one round at the largest table allowed returns nearly 2^64 minor units, so two such rounds
//! would wrap it to a small, wrong number. The two money counters are therefore not
//! `metrics` counters: they are exact `u128` sums ([`MoneyTotals`], in [`MoneyMetrics`])
//! rendered by [`MetricsRegistry::render`] after the exporter's text, as Prometheus counters.
//! A `u128` sum of `u64` amounts needs more than 2^64 settlements to reach 2^128; the sums
//! are checked anyway, and a sum that would overflow is left unchanged and logged (never
//! wrapped, never clamped). Prometheus stores samples as float64, so values above 2^53 lose
//! low digits there — never their magnitude.
//!
//! **The payout monitor.** For each settled round the expected return given its first two
//! cards and every seat's final stake is an exact fraction ([`crate::odds::round_expectation`]);
//! its sum is kept exactly (a `u128` whole part and an exact fractional part) and rendered
//! with six decimals. The variances and the moments are statistics, summed as `f64`. The
//! alert `RedDogPayoutOffExpected` (deploy/monitoring) compares returned with expected in
//! standard errors: a settlement that pays other odds than the paytable's drifts away.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use metrics::{Counter, Gauge, Histogram, IntoLabels, Key, Level, Metadata, Recorder, Unit};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusRecorder};

use crate::game::{Decks, HandClass, Paytable, Rule, Settlement, Spread, Table};
use crate::odds::{Analysis, Exact, RtpDefinition, decimal, round_expectation, to_f64};
use crate::service::build_info;
use crate::service::rules::tables::Currency;

/// The exact sums of the money settled at one table, in minor units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MoneyTotals {
    pub staked: u128,
    pub returned: u128,
}

/// The exact money sums and the payout monitor's sums of one [`crate::service::Application`], per
/// table id (see the module docs), in its [`MetricsRegistry`].
///
/// The sums are kept here rather than as `metrics` counters because they must stay exact:
/// a `metrics` counter is a `u64` (two rounds at the largest table wrap it) and the
/// exporter's values are `f64`, exact only up to 2^53 minor units — a payout monitor that
/// compares returned with expected money to the minor unit cannot use either. Only the
/// staked and returned totals and the expected return are exact (`u128`); the variance and
/// the RTP moments are statistics, kept as `f64`.
#[derive(Debug, Default)]
pub struct MoneyMetrics {
    /// Per table id (a `BTreeMap`: rendered in a stable order). Each table's sums have their
    /// own lock, held by its [`TableMetrics`]: a settlement takes that lock only.
    tables: Mutex<BTreeMap<String, Arc<Mutex<TableSums>>>>,
}

/// One table's sums.
#[derive(Clone, Debug, Default)]
struct TableSums {
    money: MoneyTotals,
    payout: Payout,
}

impl MoneyMetrics {
    /// The sums of `table`, made (at 0, so its counters show before its first settlement)
    /// when missing.
    fn table(&self, table: &str) -> Arc<Mutex<TableSums>> {
        let mut all = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(all.entry(table.to_string()).or_default())
    }

    /// Every table's sums now.
    fn snapshot(&self) -> Vec<(String, TableSums)> {
        let all = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        all.iter().map(|(id, t)| (id.clone(), t.lock().unwrap_or_else(PoisonError::into_inner).clone())).collect()
    }

    /// The money settled so far at `table` (zeros for a table it never saw).
    pub fn money_totals(&self, table: &str) -> MoneyTotals {
        let all = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        all.get(table).map(|t| t.lock().unwrap_or_else(PoisonError::into_inner).money).unwrap_or_default()
    }

    /// The money counters in Prometheus text format.
    pub fn render_money(&self) -> String {
        render_money(&self.snapshot())
    }

    /// The payout monitor's sums and the RTP moments in Prometheus text format.
    pub fn render_payout(&self) -> String {
        render_payout(&self.snapshot())
    }
}

impl TableSums {
    /// Adds a settlement's totals to the money sums, exactly.
    fn add_money(&mut self, table: &str, staked: u64, returned: u64) {
        let m = &mut self.money;
        match (m.staked.checked_add(u128::from(staked)), m.returned.checked_add(u128::from(returned))) {
            (Some(s), Some(r)) => *m = MoneyTotals { staked: s, returned: r },
            _ => tracing::error!(table, "money metric sums would overflow 128 bits; left unchanged"),
        }
    }
}

/// The payout monitor's sums and the RTP moments of one table (see the module docs).
#[derive(Clone, Debug)]
struct Payout {
    /// Σ expected return: whole minor units, exact.
    expected_whole: u128,
    /// Σ expected return: the fractional part, exact, in [0, 1).
    expected_fraction: Exact,
    /// Σ Var\[returned\], minor units squared.
    variance: f64,
    /// Σ returned², Σ returned·staked, Σ staked² per Settle answer.
    moments: [f64; 3],
}

impl Default for Payout {
    fn default() -> Self {
        Payout { expected_whole: 0, expected_fraction: Exact::from(0), variance: 0.0, moments: [0.0; 3] }
    }
}

/// Adds a settled round to the table's sums: its staked and returned money, and for the
/// payout monitor its exact expected return given the deal and stakes, its variance, and the
/// RTP moments.
fn add_settlement(sums: &Mutex<TableSums>, table: &str, s: &Settlement, decks: Decks, paytable: &Paytable) {
    let law = match round_expectation(decks, s.class, paytable, s.seats.iter().map(|seat| seat.stake)) {
        Ok(law) => Some(law),
        Err(e) => {
            tracing::error!(table, error = %e, "payout monitor: expected return not computed; round left out");
            None
        }
    };
    let expected = law.as_ref().map(|law| (law.expected(), law.variance_f64()));
    let mut sums = sums.lock().unwrap_or_else(PoisonError::into_inner);
    sums.add_money(table, s.total_staked.0, s.total_returned.0);
    let Some((expected, variance)) = expected else { return };
    let whole = expected.to_integer();
    let (r, st) = (s.total_returned.0 as f64, s.total_staked.0 as f64);
    let p = &mut sums.payout;
    let mut fraction = p.expected_fraction + (expected - Exact::from(whole));
    let mut carry = 0u128;
    if fraction >= Exact::from(1) {
        fraction -= Exact::from(1);
        carry = 1;
    }
    // `whole` >= 0: expected returns are never negative.
    match p.expected_whole.checked_add(whole.unsigned_abs()).and_then(|w| w.checked_add(carry)) {
        Some(w) => {
            p.expected_whole = w;
            p.expected_fraction = fraction;
        }
        None => tracing::error!(table, "payout monitor sums would overflow 128 bits; left unchanged"),
    }
    p.variance += variance;
    p.moments[0] += r * r;
    p.moments[1] += r * st;
    p.moments[2] += st * st;
}

/// The payout monitor's sums and the RTP moments in Prometheus text format.
fn render_payout(all: &[(String, TableSums)]) -> String {
    let mut out = String::new();
    render_counter(
        &mut out,
        "reddog_expected_returned_minor_units_total",
        "Sum over Settle answers of the exact expected return given the round's deal and decisions, in the table's \
         minor units.",
        all,
        |t| vec![(String::new(), expected_returned(&t.payout))],
    );
    render_counter(
        &mut out,
        "reddog_returned_variance_minor_units_squared_total",
        "Sum over Settle answers of the variance of the round's return given its deal and decisions, minor units \
         squared.",
        all,
        |t| vec![(String::new(), format!("{:e}", t.payout.variance))],
    );
    render_counter(
        &mut out,
        "reddog_settled_round_moments_total",
        "Per table, the sum over Settle answers of returned^2 (moment=rr), returned*staked (rs) and staked^2 (ss), \
         minor units squared: the standard error of the observed RTP.",
        all,
        |t| {
            ["rr", "rs", "ss"]
                .iter()
                .zip(t.payout.moments)
                .map(|(m, v)| (format!(",moment=\"{m}\""), format!("{v:e}")))
                .collect()
        },
    );
    out
}

/// Σ expected return with six decimals, exact: the fractional part rounded half up (0.9999995
/// and above carries into the whole part, shown as `.000000`).
fn expected_returned(p: &Payout) -> String {
    let frac = decimal(&p.expected_fraction, 6);
    let (carry, digits) = frac.split_once('.').unwrap_or(("0", "000000"));
    let whole = p.expected_whole + u128::from(carry == "1");
    format!("{whole}.{digits}")
}

/// The money counters in Prometheus text format.
fn render_money(all: &[(String, TableSums)]) -> String {
    let mut out = String::new();
    render_counter(
        &mut out,
        "reddog_staked_minor_units_total",
        "Sum of the stakes settled, in the table's minor units (exact).",
        all,
        |t| vec![(String::new(), t.money.staked.to_string())],
    );
    render_counter(
        &mut out,
        "reddog_returned_minor_units_total",
        "Sum returned to players, in the table's minor units (exact).",
        all,
        |t| vec![(String::new(), t.money.returned.to_string())],
    );
    out
}

/// Appends one counter in Prometheus text format to `out`: its HELP and TYPE lines, then for
/// each table the samples `samples` gives, each as (labels after `table`, value).
fn render_counter(
    out: &mut String,
    name: &str,
    help: &str,
    all: &[(String, TableSums)],
    samples: impl Fn(&TableSums) -> Vec<(String, String)>,
) {
    out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} counter\n"));
    for (table, t) in all {
        for (labels, value) in samples(t) {
            out.push_str(&format!("{name}{{table=\"{}\"{labels}}} {value}\n", label_value(table)));
        }
    }
}

/// A Prometheus label value, escaped (table ids are `[A-Za-z0-9._-]`, so this is defence only).
fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Buckets of `reddog_rpc_duration_seconds`.
const RPC_DURATION_BUCKETS: [f64; 11] =
    [0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.05, 0.25];
/// Buckets of `reddog_rpc_queue_wait_seconds`.
const QUEUE_WAIT_BUCKETS: [f64; 11] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];

/// The metadata every handle is registered with (the Prometheus recorder ignores it).
const METADATA: Metadata<'static> = Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// The `reason` labels of `reddog_audit_refused_total` (`audit_sink::AuditRefused`'s labels:
/// a test there checks they agree).
pub(crate) const AUDIT_REFUSED_REASONS: [&str; 5] = ["backlog", "output_failed", "stalled", "stopped", "not_started"];
/// The `cause` labels of `reddog_audit_sink_faults_total` (`audit_writer::Cause`'s labels: a
/// test there checks they agree).
pub(crate) const AUDIT_SINK_FAULT_CAUSES: [&str; 5] = ["no_space", "io_error", "closed", "write_error", "stalled"];

/// One [`crate::service::Application`]'s metrics (see the module docs): its Prometheus recorder, never
/// installed as the process's global `metrics` recorder, its exact money and payout sums, and
/// the handles recorded from several places. Cheap to clone (one `Arc`); every clone records
/// into the same registry. [`MetricsRegistry::render`] is its `/metrics` page.
#[derive(Clone)]
pub struct MetricsRegistry {
    inner: Arc<Registered>,
}

struct Registered {
    recorder: PrometheusRecorder,
    /// `process_*`, sampled into `recorder` at each render.
    process: metrics_process::Collector,
    money: MoneyMetrics,
    in_flight: Gauge,
    queue_wait: Histogram,
    undelivered: Counter,
    load_shed: Counter,
    load_shed_queued: Counter,
    peer_penalties: Counter,
    worker_wait: Gauge,
    request_timeouts: Counter,
    accept_backoffs: Counter,
    log_lines_dropped: Counter,
    audit_records: Counter,
    audit_sink_up: Gauge,
    otlp_export_failures: Counter,
    serving: Gauge,
}

impl std::fmt::Debug for MetricsRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MetricsRegistry")
    }
}

impl Default for MetricsRegistry {
    fn default() -> Self {
        MetricsRegistry::new()
    }
}

/// A Prometheus recorder of its own, with the latency histograms' buckets.
fn recorder() -> PrometheusRecorder {
    PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Full("reddog_rpc_duration_seconds".into()), &RPC_DURATION_BUCKETS)
        .and_then(|b| {
            b.set_buckets_for_metric(Matcher::Full("reddog_rpc_queue_wait_seconds".into()), &QUEUE_WAIT_BUCKETS)
        })
        .expect("the bucket lists are constant and not empty")
        .build_recorder()
}

impl MetricsRegistry {
    /// A registry with every metric described, `reddog_build_info` set and every counter with
    /// a fixed label set registered at 0 (see the module docs).
    pub fn new() -> MetricsRegistry {
        let recorder = recorder();
        describe(&recorder);
        let process = metrics_process::Collector::default();
        // metrics-process speaks only the `metrics` macros: they reach this recorder here
        // (and in `render`), on this thread, for the closure's duration only.
        metrics::with_local_recorder(&recorder, || process.describe());
        let counter = |name: &'static str| recorder.register_counter(&Key::from_static_name(name), &METADATA);
        let registered = Registered {
            in_flight: recorder.register_gauge(&Key::from_static_name("reddog_rpc_in_flight"), &METADATA),
            queue_wait: recorder.register_histogram(&Key::from_static_name("reddog_rpc_queue_wait_seconds"), &METADATA),
            undelivered: counter("reddog_rpc_undelivered_total"),
            load_shed: counter("reddog_load_shed_total"),
            load_shed_queued: counter("reddog_load_shed_queued_total"),
            peer_penalties: counter("reddog_peer_penalties_total"),
            worker_wait: recorder.register_gauge(&Key::from_static_name("reddog_worker_wait_seconds"), &METADATA),
            request_timeouts: counter("reddog_request_timeouts_total"),
            accept_backoffs: counter("reddog_accept_backoffs_total"),
            log_lines_dropped: counter("reddog_log_lines_dropped_total"),
            audit_records: counter("reddog_audit_records_total"),
            audit_sink_up: recorder.register_gauge(&Key::from_static_name("reddog_audit_sink_up"), &METADATA),
            otlp_export_failures: counter("reddog_otlp_export_failures_total"),
            serving: recorder.register_gauge(&Key::from_static_name("reddog_serving"), &METADATA),
            process,
            money: MoneyMetrics::default(),
            recorder,
        };
        let registry = MetricsRegistry { inner: Arc::new(registered) };
        registry.register_zero_counters();
        registry.set_build_info();
        registry
    }

    /// Sets `reddog_build_info` (1, the build in its labels).
    fn set_build_info(&self) {
        let labels = [
            ("version", build_info::VERSION),
            ("git_commit", build_info::GIT_COMMIT),
            ("build_date", build_info::BUILD_DATE),
        ];
        self.gauge("reddog_build_info", &labels).set(1.0);
    }

    /// The whole `/metrics` page: the process metrics sampled now, the recorder's text, then
    /// the exact money and payout sums.
    pub fn render(&self) -> String {
        let r = &*self.inner;
        metrics::with_local_recorder(&r.recorder, || r.process.collect());
        let sums = r.money.snapshot();
        r.recorder.handle().render() + &render_money(&sums) + &render_payout(&sums)
    }

    /// The value of one series of [`MetricsRegistry::render`]'s page, named with its labels
    /// exactly as rendered (`reddog_load_shed_total`, `reddog_rpc_requests_total{method="Decide",code="OK"}`);
    /// `None` when the page has no such series.
    pub fn value(&self, series: &str) -> Option<f64> {
        self.render().lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
    }

    /// The exact money and payout sums.
    pub fn money(&self) -> &MoneyMetrics {
        &self.inner.money
    }

    /// A counter of this registry (registered at 0 when new; the same series for the same
    /// name and labels).
    pub(crate) fn counter(&self, name: &'static str, labels: impl IntoLabels) -> Counter {
        self.inner.recorder.register_counter(&Key::from_parts(name, labels), &METADATA)
    }

    /// A gauge of this registry.
    pub(crate) fn gauge(&self, name: &'static str, labels: impl IntoLabels) -> Gauge {
        self.inner.recorder.register_gauge(&Key::from_parts(name, labels), &METADATA)
    }

    /// A histogram of this registry.
    pub(crate) fn histogram(&self, name: &'static str, labels: impl IntoLabels) -> Histogram {
        self.inner.recorder.register_histogram(&Key::from_parts(name, labels), &METADATA)
    }

    /// Sets a gauge's HELP text.
    pub(crate) fn describe_gauge(&self, name: &'static str, help: &'static str) {
        self.inner.recorder.describe_gauge(name.into(), None, help.into());
    }

    /// Drains the histograms' buckets every 5 s (what a scrape does too), so a registry nobody
    /// scrapes holds no growing buffer; ends once the registry is dropped.
    pub(crate) fn spawn_upkeep(&self) -> tokio::task::JoinHandle<()> {
        let registry = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(5));
            loop {
                tick.tick().await;
                let Some(r) = registry.upgrade() else { return };
                r.recorder.handle().run_upkeep();
            }
        })
    }

    /// Registers every counter whose label values are known in advance (an increment by 0: a
    /// series that exists keeps its value), so each series exists from start-up and a rule on
    /// `increase()` sees the first event, not a new series.
    fn register_zero_counters(&self) {
        for method in [Method::StartRound, Method::Decide, Method::Settle] {
            for reason in ["expired", "unknown_key", "tampered", "malformed", "wrong_kind", "too_old"] {
                self.counter("reddog_token_rejections_total", &[("method", method.name()), ("reason", reason)])
                    .increment(0);
            }
        }
        for code in [tonic::Code::InvalidArgument, tonic::Code::ResourceExhausted] {
            self.counter("reddog_undecodable_requests_total", &[("code", code_name(code))]).increment(0);
        }
        for reason in [
            "handshake_timeout",
            "tls",
            "not_http2",
            "too_many_handshakes",
            "too_many_connections",
            "displaced",
            "retired",
            "idle",
            "undelivered",
            "penalized",
        ] {
            self.counter("reddog_connections_closed_total", &[("reason", reason)]).increment(0);
        }
        for reason in AUDIT_REFUSED_REASONS {
            self.counter("reddog_audit_refused_total", &[("reason", reason)]).increment(0);
        }
        for cause in AUDIT_SINK_FAULT_CAUSES {
            self.counter("reddog_audit_sink_faults_total", &[("cause", cause)]).increment(0);
        }
    }

    /// `reddog_rules_certified` of every table: 1 when its digest was checked at start-up
    /// against a certified rules file naming this binary, 0 otherwise (no file, or a file of
    /// another binary served with `--allow-uncertified-binary`); `reddog_binary_certified`
    /// likewise.
    pub(crate) fn rules_certified(&self, tables: &crate::service::rules::tables::Tables, certified: bool) {
        let value = if certified { 1.0 } else { 0.0 };
        for t in tables.iter() {
            self.gauge("reddog_rules_certified", &[("table", t.id.clone()), ("rules_digest", t.digest().to_hex())])
                .set(value);
        }
        self.inner.recorder.register_gauge(&Key::from_static_name("reddog_binary_certified"), &METADATA).set(value);
    }

    /// The `reddog_serving` gauge: 1 while the overall health status (what readiness asks) is
    /// SERVING; 0 before serving starts, while the audit trail's output fails and from the
    /// moment a drain starts.
    pub(crate) fn serving_gauge(&self) -> Gauge {
        self.inner.serving.clone()
    }

    /// The counter of failed OTLP trace exports, for [`crate::service::ops::telemetry::init`].
    pub(crate) fn otlp_export_failures(&self) -> Counter {
        self.inner.otlp_export_failures.clone()
    }

    /// Records a refused token (every one; the log line is bounded by
    /// [`crate::service::round::refusal_log::RefusalLog`]). `reason` is one of the
    /// [`crate::service::round::token::TokenRefusal`] labels.
    pub(crate) fn token_rejected(&self, method: Method, reason: &'static str) {
        self.counter("reddog_token_rejections_total", &[("method", method.name()), ("reason", reason)]).increment(1);
    }

    /// The gauge of RedDog calls in progress (request headers arrived, answer not yet sent).
    /// A handle: updating it is an atomic operation, no lookup.
    pub(crate) fn in_flight_gauge(&self) -> Gauge {
        self.inner.in_flight.clone()
    }

    /// Records how long a RedDog call waited before it could start.
    pub(crate) fn queue_waited(&self, waited: Duration) {
        self.inner.queue_wait.record(waited.as_secs_f64());
    }

    /// Records `n` slots released because their answers could not be delivered.
    pub(crate) fn undelivered(&self, n: usize) {
        self.inner.undelivered.increment(n as u64);
    }

    /// Records a call shed at the global concurrency cap.
    pub(crate) fn load_shed(&self) {
        self.inner.load_shed.increment(1);
    }

    /// Records a call shed because it would wait, or waited, over `--max-queue-wait-ms` for a
    /// worker thread.
    pub(crate) fn queue_shed(&self) {
        self.inner.load_shed.increment(1);
        self.inner.load_shed_queued.increment(1);
    }

    /// Records a peer penalized for leaving answers unread (`crate::service::edge::peers`).
    pub(crate) fn peer_penalized(&self) {
        self.inner.peer_penalties.increment(1);
    }

    /// The gauge of the current wait for a worker thread (`crate::service::edge::worker_wait::WorkerWait`).
    pub(crate) fn worker_wait_gauge(&self) -> Gauge {
        self.inner.worker_wait.clone()
    }

    /// Records a call cut at the per-call timeout.
    pub(crate) fn request_timed_out(&self) {
        self.inner.request_timeouts.increment(1);
    }

    /// Records a request tonic could not decode, by the code it was answered with.
    pub(crate) fn bad_request(&self, code: tonic::Code) {
        self.counter("reddog_undecodable_requests_total", &[("code", code_name(code))]).increment(1);
    }

    /// Records a connection the server closed, by why.
    pub(crate) fn connection_closed(&self, reason: &'static str) {
        self.counter("reddog_connections_closed_total", &[("reason", reason)]).increment(1);
    }

    /// The counter of accept-loop back-offs, for [`crate::service::edge::accept::AcceptBackoff::new`].
    pub(crate) fn accept_backoff_counter(&self) -> Counter {
        self.inner.accept_backoffs.clone()
    }

    /// The counter of diagnostic log lines dropped on a stalled output, for
    /// [`crate::service::ops::log_writer::BatchWriter::start_counting_drops`].
    pub(crate) fn log_lines_dropped(&self) -> Counter {
        self.inner.log_lines_dropped.clone()
    }

    /// The counter of audit records written.
    pub(crate) fn audit_records(&self) -> Counter {
        self.inner.audit_records.clone()
    }

    /// Records an audit record refused, by why.
    pub(crate) fn audit_refused(&self, reason: &'static str) {
        self.counter("reddog_audit_refused_total", &[("reason", reason)]).increment(1);
    }

    /// The `reddog_audit_sink_up` gauge (1 while the trail's output takes records).
    pub(crate) fn audit_sink_up(&self) -> Gauge {
        self.inner.audit_sink_up.clone()
    }

    /// Records the trail's output beginning to fail, by cause (a label of
    /// [`crate::service::evidence::audit_writer::Cause`]).
    pub(crate) fn audit_sink_fault(&self, cause: &'static str) {
        self.counter("reddog_audit_sink_faults_total", &[("cause", cause)]).increment(1);
    }
}

/// The RPCs of `reddog.v1.RedDog`, as metric labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    GetRules,
    CommitSeed,
    StartRound,
    Decide,
    Settle,
    ListTables,
}

impl Method {
    const ALL: [Method; 6] =
        [Method::GetRules, Method::CommitSeed, Method::StartRound, Method::Decide, Method::Settle, Method::ListTables];

    /// The span name OpenTelemetry's RPC conventions ask for: `reddog.v1.RedDog/<Method>`.
    pub(crate) const fn full_name(self) -> &'static str {
        match self {
            Method::GetRules => "reddog.v1.RedDog/GetRules",
            Method::CommitSeed => "reddog.v1.RedDog/CommitSeed",
            Method::StartRound => "reddog.v1.RedDog/StartRound",
            Method::Decide => "reddog.v1.RedDog/Decide",
            Method::Settle => "reddog.v1.RedDog/Settle",
            Method::ListTables => "reddog.v1.RedDog/ListTables",
        }
    }

    pub(crate) const fn name(self) -> &'static str {
        match self {
            Method::GetRules => "GetRules",
            Method::CommitSeed => "CommitSeed",
            Method::StartRound => "StartRound",
            Method::Decide => "Decide",
            Method::Settle => "Settle",
            Method::ListTables => "ListTables",
        }
    }
}

const RULES: [Rule; 6] = [
    Rule::ThreeOfAKind,
    Rule::PairNoMatch,
    Rule::Consecutive,
    Rule::ThirdCardBetween,
    Rule::ThirdCardMatches,
    Rule::ThirdCardOutside,
];

/// The hand class and outcome a rule implies (a rule decides both).
const fn rule_labels(rule: Rule) -> (&'static str, &'static str) {
    match rule {
        Rule::ThreeOfAKind => ("pair", "win"),
        Rule::PairNoMatch => ("pair", "push"),
        Rule::Consecutive => ("consecutive", "push"),
        Rule::ThirdCardBetween => ("non_consecutive", "win"),
        Rule::ThirdCardMatches | Rule::ThirdCardOutside => ("non_consecutive", "lose"),
    }
}

/// Deal classes: pair, consecutive, then spreads 1 to 11 — what the first two cards make,
/// which no player decision affects.
const DEALS: usize = 2 + Spread::MAX as usize;

/// The deal class of a hand: 0 pair, 1 consecutive, 1 + s for spread s.
fn deal_index(class: HandClass) -> usize {
    match class {
        HandClass::Pair => 0,
        HandClass::Consecutive => 1,
        HandClass::NonConsecutive(s) => 1 + usize::from(s.get()),
    }
}

/// The `hand_class` and `spread` labels of deal class `i` (`spread` is `0` unless the hand
/// is non-consecutive, as in the API's `RoundView.spread`).
fn deal_labels(i: usize) -> (&'static str, String) {
    match i {
        0 => ("pair", "0".to_string()),
        1 => ("consecutive", "0".to_string()),
        _ => ("non_consecutive", (i - 1).to_string()),
    }
}

/// Whether `rule` can end a round of deal class `i`.
fn rule_fits(i: usize, rule: Rule) -> bool {
    match i {
        0 => matches!(rule, Rule::ThreeOfAKind | Rule::PairNoMatch),
        1 => rule == Rule::Consecutive,
        _ => matches!(rule, Rule::ThirdCardBetween | Rule::ThirdCardMatches | Rule::ThirdCardOutside),
    }
}

/// The HELP text of each counter.
const COUNTER_HELP: [(&str, &str); 19] = [
    ("reddog_rpc_requests_total", "RPCs answered, by method and gRPC status code name"),
    (
        "reddog_rounds_started_total",
        "Rounds dealt by StartRound, by table, hand class and spread (0 unless non-consecutive)",
    ),
    (
        "reddog_rounds_settled_total",
        "Settle answers (rounds), by table, hand class, spread and the rule that decided the round",
    ),
    ("reddog_seats_settled_total", "Seat results returned by Settle, by table, hand class, outcome, rule"),
    ("reddog_otlp_export_failures_total", "OTLP trace exports that failed (their spans dropped)"),
    ("reddog_token_rejections_total", "Tokens refused (tampered, unknown key, expired, wrong kind)"),
    ("reddog_audit_records_total", "Audit records handed to the audit trail's writer"),
    (
        "reddog_audit_refused_total",
        "Calls answered UNAVAILABLE because their audit record was refused or not written in time, by reason",
    ),
    ("reddog_audit_sink_faults_total", "Times the audit trail's output began to fail, by cause"),
    ("reddog_token_seals_total", "Tokens sealed, by key id"),
    (
        "reddog_load_shed_total",
        "RedDog calls answered RESOURCE_EXHAUSTED (OVERLOADED): at --max-in-flight, pending request bytes or queue \
         wait",
    ),
    (
        "reddog_load_shed_queued_total",
        "RedDog calls answered RESOURCE_EXHAUSTED because they would wait, or waited, over --max-queue-wait-ms for a \
         worker",
    ),
    (
        "reddog_peer_penalties_total",
        "Penalties given to a peer whose connection was closed for leaving answers unread (no slot, no connection \
         meanwhile)",
    ),
    (
        "reddog_rpc_undelivered_total",
        "Slots released by closing a connection whose answers went unread past the delivery deadline",
    ),
    ("reddog_request_timeouts_total", "RedDog calls cut at --request-timeout-ms (DEADLINE_EXCEEDED)"),
    (
        "reddog_undecodable_requests_total",
        "Requests that could not be decoded (INVALID_ARGUMENT) or were over the size limit (RESOURCE_EXHAUSTED)",
    ),
    ("reddog_connections_closed_total", "Connections the server closed, by reason"),
    ("reddog_accept_backoffs_total", "Accept failures (out of file descriptors or memory) that backed off"),
    (
        "reddog_log_lines_dropped_total",
        "Diagnostic log lines dropped because stderr took nothing while 4 MiB of lines waited",
    ),
];

/// The HELP text of each gauge.
const GAUGE_HELP: [(&str, &str); 10] = [
    ("reddog_deal_probability", "Exact probability of each deal class (hand_class, spread) for the table's shoe"),
    (
        "reddog_third_card_probability",
        "Exact probability that the third card wins, given the deal class: three of a kind given a pair, between \
         given a spread",
    ),
    (
        "reddog_rtp_bound",
        "Exact lowest (bound=worst) and highest (bound=best) RTP of any strategy at the table, per definition",
    ),
    ("reddog_rpc_in_flight", "RedDog calls in progress: request headers arrived, answer not yet sent"),
    ("reddog_table_info", "Always 1; labels describe a configured table"),
    (
        "reddog_rules_certified",
        "1 when the table's rules digest was checked against --certified-rules at start-up, 0 without that file",
    ),
    (
        "reddog_binary_certified",
        "1 when --certified-rules names this binary's SHA-256 and certifies every table, 0 otherwise",
    ),
    (
        "reddog_serving",
        "1 while health reports SERVING (readiness), 0 while the audit trail cannot be written and from the start \
         of a drain",
    ),
    ("reddog_build_info", "Always 1; labels give the engine's version, git commit and build date"),
    ("reddog_audit_sink_up", "1 while the audit trail's output takes records, 0 while it fails or stalls"),
];

/// The HELP text of each histogram (all in seconds).
const SECONDS_HISTOGRAM_HELP: [(&str, &str); 2] = [
    ("reddog_rpc_duration_seconds", "RPC handler latency"),
    (
        "reddog_rpc_queue_wait_seconds",
        "Time a RedDog call waited in the server (headers to handler start) before it could start",
    ),
];

/// Registers the HELP texts with `r`.
fn describe(r: &PrometheusRecorder) {
    for (name, help) in COUNTER_HELP {
        r.describe_counter(name.into(), None, help.into());
    }
    for (name, help) in GAUGE_HELP {
        r.describe_gauge(name.into(), None, help.into());
    }
    for (name, help) in SECONDS_HISTOGRAM_HELP {
        r.describe_histogram(name.into(), Some(Unit::Seconds), help.into());
    }
    r.describe_gauge(
        "reddog_worker_wait_seconds".into(),
        Some(Unit::Seconds),
        "How late a task woken now starts on a worker thread (probed every 5 ms); over --max-queue-wait-ms calls are \
         shed"
            .into(),
    );
}

/// Handles to the metrics every RPC touches, registered once when the service is built, so
/// a call only increments atomics (registering would build, hash and look up a labelled key
/// on every call). Registering eagerly also makes every series visible at 0 from the start.
pub(crate) struct Metrics {
    ok: [Counter; 6],
    duration: [Histogram; 6],
    /// `reddog_token_seals_total{key_id}` of the key tokens are sealed with, registered at
    /// the first seal.
    seals: OnceLock<Counter>,
    registry: MetricsRegistry,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    /// Registers the per-RPC handles with `registry`.
    pub(crate) fn register(registry: &MetricsRegistry) -> Metrics {
        Metrics {
            ok: Method::ALL
                .map(|m| registry.counter("reddog_rpc_requests_total", &[("method", m.name()), ("code", "OK")])),
            duration: Method::ALL.map(|m| registry.histogram("reddog_rpc_duration_seconds", &[("method", m.name())])),
            seals: OnceLock::new(),
            registry: registry.clone(),
        }
    }

    /// Records one answered RPC.
    pub(crate) fn rpc(&self, method: Method, code: tonic::Code, started: Instant) {
        let i = method as usize;
        if code == tonic::Code::Ok {
            self.ok[i].increment(1);
        } else {
            self.registry
                .counter("reddog_rpc_requests_total", &[("method", method.name()), ("code", code_name(code))])
                .increment(1);
        }
        self.duration[i].record(started.elapsed().as_secs_f64());
    }

    /// Records a token sealed with the key `key_id`: the service's primary key, the same for
    /// every seal of the process.
    pub(crate) fn sealed(&self, key_id: &str) {
        self.seals
            .get_or_init(|| self.registry.counter("reddog_token_seals_total", &[("key_id", key_id.to_string())]))
            .increment(1);
    }

    /// Records a refused token (see [`MetricsRegistry::token_rejected`]).
    pub(crate) fn token_rejected(&self, method: Method, reason: &'static str) {
        self.registry.token_rejected(method, reason);
    }
}

/// The game metrics of one table, labelled `table`: what was dealt and settled, and the exact
/// figures the fairness alerts compare them with (docs/OPERATIONS.md, "Metrics and alerts").
pub(crate) struct TableMetrics {
    /// By deal class.
    rounds_started: [Counter; DEALS],
    /// By deal class and rule (in the order of `RULES`); `None` where the rule cannot end
    /// that class.
    rounds_settled: [[Option<Counter>; 6]; DEALS],
    /// By rule, in the order of `RULES`.
    seats_settled: [Counter; 6],
    /// The table id (label `table`).
    id: String,
    /// Its money and payout sums, in its application's [`MoneyMetrics`].
    sums: Arc<Mutex<TableSums>>,
}

impl std::fmt::Debug for TableMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TableMetrics")
    }
}

/// Sets `reddog_table_info` of table `id` (1, the table in its labels).
fn set_table_info(
    registry: &MetricsRegistry,
    id: &str,
    table: &Table,
    currency: &Currency,
    digest: crate::fairness::RulesDigest,
) {
    let labels = [
        ("table", id.to_string()),
        ("decks", table.decks().get().to_string()),
        ("currency", currency.code().to_string()),
        ("minor_unit_exponent", currency.minor_unit_exponent().to_string()),
        ("rules_digest", digest.to_hex()),
    ];
    registry.gauge("reddog_table_info", &labels).set(1.0);
}

/// Sets the exact figures of table `id` from its `analysis`: the probability of every deal
/// class and of the third card winning given it, and the RTP range over every strategy.
fn set_exact_figures(registry: &MetricsRegistry, id: &str, analysis: &Analysis) {
    for i in 0..DEALS {
        let (class, spread) = deal_labels(i);
        let (p, win) = match i {
            0 => (analysis.p_pair(), Some(analysis.p_three_of_a_kind_given_pair())),
            1 => (analysis.p_consecutive(), None),
            _ => {
                let Some(s) = Spread::new((i - 1) as u8) else { continue };
                (analysis.p_spread(s), analysis.p_win_given_spread(s))
            }
        };
        let labels = [("table", id.to_string()), ("hand_class", class.to_string()), ("spread", spread)];
        registry.gauge("reddog_deal_probability", &labels).set(to_f64(&p));
        if let Some(w) = win {
            registry.gauge("reddog_third_card_probability", &labels).set(to_f64(&w));
        }
    }
    for def in [RtpDefinition::PerInitialBet, RtpDefinition::PerTotalWagered] {
        let x = analysis.rtp_extremes(def);
        for (bound, value) in [("worst", &x.worst), ("best", &x.best)] {
            let labels =
                [("table", id.to_string()), ("definition", def.key().to_string()), ("bound", bound.to_string())];
            registry.gauge("reddog_rtp_bound", &labels).set(to_f64(value));
        }
    }
}

/// `reddog_rounds_settled_total` of table `id` by deal class and rule (in the order of
/// `RULES`); `None` where the rule cannot end that class.
fn rounds_settled_counters(registry: &MetricsRegistry, id: &str) -> [[Option<Counter>; 6]; DEALS] {
    std::array::from_fn(|i| {
        let (class, spread) = deal_labels(i);
        RULES.map(|rule| {
            rule_fits(i, rule).then(|| {
                let labels = [
                    ("table", id.to_string()),
                    ("hand_class", class.to_string()),
                    ("spread", spread.clone()),
                    ("rule", rule.name().to_string()),
                ];
                registry.counter("reddog_rounds_settled_total", &labels)
            })
        })
    })
}

impl TableMetrics {
    /// Registers the table's handles in `registry` (its money sums there too) and sets its
    /// exact figures (computed once here from the odds module: probabilities of every deal
    /// class and of the third card winning, and the RTP range over every strategy).
    pub(crate) fn register(
        id: &str,
        table: &Table,
        currency: &Currency,
        digest: crate::fairness::RulesDigest,
        registry: &MetricsRegistry,
    ) -> TableMetrics {
        let id = id.to_string();
        let sums = registry.money().table(&id);
        set_table_info(registry, &id, table, currency, digest);
        set_exact_figures(registry, &id, &Analysis::new(table.decks(), table.paytable()));
        TableMetrics {
            rounds_started: std::array::from_fn(|i| {
                let (class, spread) = deal_labels(i);
                let labels = [("table", id.clone()), ("hand_class", class.to_string()), ("spread", spread)];
                registry.counter("reddog_rounds_started_total", &labels)
            }),
            rounds_settled: rounds_settled_counters(registry, &id),
            seats_settled: RULES.map(|rule| {
                let (class, outcome) = rule_labels(rule);
                let labels = [
                    ("table", id.clone()),
                    ("hand_class", class.to_string()),
                    ("outcome", outcome.to_string()),
                    ("rule", rule.name().to_string()),
                ];
                registry.counter("reddog_seats_settled_total", &labels)
            }),
            id: id.clone(),
            sums,
        }
    }

    /// Records a dealt round.
    pub(crate) fn round_started(&self, class: HandClass) {
        self.rounds_started[deal_index(class)].increment(1);
    }

    /// Records a settlement: the round's rule, per seat outcome, the staked and returned
    /// sums (exact, see the module docs), the round's exact expected return and variance
    /// given its deal (`decks` and `paytable` are the round's own, from its token) and the
    /// RTP moments (as `f64`: statistics, never money).
    pub(crate) fn settled(&self, s: &Settlement, decks: Decks, paytable: &Paytable) {
        let deal = deal_index(s.class);
        if let Some(rule) = s.seats.first().map(|seat| seat.rule)
            && let Some(Some(c)) = RULES.iter().position(|&r| r == rule).map(|i| &self.rounds_settled[deal][i])
        {
            c.increment(1);
        }
        for seat in &s.seats {
            if let Some(i) = RULES.iter().position(|&r| r == seat.rule) {
                self.seats_settled[i].increment(1);
            }
        }
        add_settlement(&self.sums, &self.id, s, decks, paytable);
    }
}

fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match code {
        Ok => "OK",
        Cancelled => "CANCELLED",
        Unknown => "UNKNOWN",
        InvalidArgument => "INVALID_ARGUMENT",
        DeadlineExceeded => "DEADLINE_EXCEEDED",
        NotFound => "NOT_FOUND",
        AlreadyExists => "ALREADY_EXISTS",
        PermissionDenied => "PERMISSION_DENIED",
        ResourceExhausted => "RESOURCE_EXHAUSTED",
        FailedPrecondition => "FAILED_PRECONDITION",
        Aborted => "ABORTED",
        OutOfRange => "OUT_OF_RANGE",
        Unimplemented => "UNIMPLEMENTED",
        Internal => "INTERNAL",
        Unavailable => "UNAVAILABLE",
        DataLoss => "DATA_LOSS",
        Unauthenticated => "UNAUTHENTICATED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_money_sums_do_not_wrap_past_u64() {
        let money = MoneyMetrics::default();
        let sums = money.table("wrap-test");
        for (staked, returned) in [(u64::MAX, u64::MAX), (u64::MAX, 1)] {
            sums.lock().unwrap().add_money("wrap-test", staked, returned);
        }
        let want = MoneyTotals { staked: 2 * u128::from(u64::MAX), returned: u128::from(u64::MAX) + 1 };
        assert_eq!(money.money_totals("wrap-test"), want);
        let text = money.render_money();
        assert!(text.contains("# TYPE reddog_staked_minor_units_total counter"));
        let value = |name: &str| -> u128 {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}{{table=\"wrap-test\"}} ")))
                .unwrap()
                .parse()
                .unwrap()
        };
        assert_eq!(value("reddog_staked_minor_units_total"), want.staked, "rendered above 2^64, not wrapped");
        assert_eq!(value("reddog_returned_minor_units_total"), want.returned);
    }

    #[test]
    fn two_registries_count_apart_and_a_new_one_shows_every_fixed_label_counter_at_zero() {
        let (a, b) = (MetricsRegistry::new(), MetricsRegistry::new());
        for r in [&a, &b] {
            for series in [
                "reddog_load_shed_total",
                "reddog_accept_backoffs_total",
                "reddog_log_lines_dropped_total",
                "reddog_audit_records_total",
                "reddog_audit_sink_faults_total{cause=\"stalled\"}",
                "reddog_connections_closed_total{reason=\"displaced\"}",
                "reddog_audit_refused_total{reason=\"not_started\"}",
                "reddog_token_rejections_total{method=\"Settle\",reason=\"wrong_kind\"}",
                "reddog_undecodable_requests_total{code=\"RESOURCE_EXHAUSTED\"}",
            ] {
                assert_eq!(r.value(series), Some(0.0), "{series}");
            }
        }
        a.load_shed();
        a.queue_shed();
        a.connection_closed("displaced");
        a.token_rejected(Method::Settle, "wrong_kind");
        a.audit_records().increment(3);
        assert_eq!(a.value("reddog_load_shed_total"), Some(2.0));
        assert_eq!(a.value("reddog_load_shed_queued_total"), Some(1.0));
        assert_eq!(a.value("reddog_connections_closed_total{reason=\"displaced\"}"), Some(1.0));
        assert_eq!(a.value("reddog_token_rejections_total{method=\"Settle\",reason=\"wrong_kind\"}"), Some(1.0));
        assert_eq!(a.value("reddog_audit_records_total"), Some(3.0));
        for series in [
            "reddog_load_shed_total",
            "reddog_load_shed_queued_total",
            "reddog_connections_closed_total{reason=\"displaced\"}",
            "reddog_audit_records_total",
        ] {
            assert_eq!(b.value(series), Some(0.0), "b counted {series}");
        }
    }

    #[test]
    fn the_latency_histograms_keep_their_buckets_and_the_page_its_process_metrics() {
        let r = MetricsRegistry::new();
        Metrics::register(&r).rpc(Method::Decide, tonic::Code::Ok, Instant::now());
        r.queue_waited(Duration::from_millis(2));
        let page = r.render();
        for (prefix, le) in [
            ("reddog_rpc_duration_seconds_bucket{method=\"Decide\",", &RPC_DURATION_BUCKETS),
            ("reddog_rpc_queue_wait_seconds_bucket{", &QUEUE_WAIT_BUCKETS),
        ] {
            let bounds: Vec<&str> = page
                .lines()
                .filter(|l| l.starts_with(prefix))
                .filter_map(|l| l.split("le=\"").nth(1)?.split('"').next())
                .collect();
            let want: Vec<String> = le.iter().map(|b| b.to_string()).chain(["+Inf".to_string()]).collect();
            assert_eq!(bounds, want, "{prefix}");
        }
        assert_eq!(r.value("reddog_rpc_queue_wait_seconds_count"), Some(1.0));
        assert!(page.contains("# TYPE process_cpu_seconds_total counter\n"), "{page}");
        assert!(page.contains("reddog_build_info{version=\""), "{page}");
    }

    #[test]
    fn a_table_registered_shows_zero_sums_and_two_registries_are_apart() {
        let (a, b) = (MoneyMetrics::default(), MoneyMetrics::default());
        a.table("t").lock().unwrap().add_money("t", 700, 1_400);
        b.table("t");
        assert_eq!(a.money_totals("t"), MoneyTotals { staked: 700, returned: 1_400 });
        assert_eq!(b.money_totals("t"), MoneyTotals::default());
        assert!(b.render_money().contains("reddog_staked_minor_units_total{table=\"t\"} 0\n"));
        assert!(b.render_payout().contains("reddog_expected_returned_minor_units_total{table=\"t\"} 0.000000\n"));
    }
}
