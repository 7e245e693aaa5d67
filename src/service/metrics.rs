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
//! | `reddog_rules_certified` | gauge | `table`, `rules_digest` | 1: checked against `--certified-rules` at start-up; 0: started without it |
//! | `reddog_build_info` | gauge (1) | `version`, `git_commit`, `build_date` | the build |
//! | `reddog_token_rejections_total` | counter | `method`, `reason` | tokens refused, by why (`expired`, `unknown_key`, `tampered`, `malformed`, `wrong_kind`); the client gets one answer for all |
//! | `reddog_rpc_in_flight` | gauge | | RedDog calls in progress: request headers arrived, answer not yet sent (so every held `--max-in-flight` slot); calls still reading their request message count, although they hold no slot |
//! | `reddog_rpc_undelivered_total` | counter | | slots released by closing a connection that left its answers unread for 1–2 s (`undelivered` below) |
//! | `reddog_load_shed_total` | counter | | RedDog calls answered RESOURCE_EXHAUSTED (`OVERLOADED`): at `--max-in-flight`, at `--max-pending-request-bytes`, or after waiting over `--max-queue-wait-ms` |
//! | `reddog_load_shed_queued_total` | counter | | of those, the calls that waited over `--max-queue-wait-ms` before they could start |
//! | `reddog_request_timeouts_total` | counter | | RedDog calls cut at `--request-timeout-ms` (DEADLINE_EXCEEDED) |
//! | `reddog_undecodable_requests_total` | counter | `code` | requests tonic could not decode (INVALID_ARGUMENT) or that were over the size limit (RESOURCE_EXHAUSTED) |
//! | `reddog_connections_closed_total` | counter | `reason` | connections the server closed: `handshake_timeout`, `tls`, `not_http2`, `too_many_handshakes`, `too_many_connections` (at the cap, every connection busy within the last second), `displaced` (the longest-idle connection, idle for a second at least, closed at the cap to let a new one in), `idle`, `undelivered` (answers unread for 1–2 s) |
//! | `reddog_accept_backoffs_total` | counter | | accept failures (out of file descriptors or memory) that made an accept loop (gRPC, health or `/metrics`) back off |
//! | `reddog_log_lines_dropped_total` | counter | | diagnostic log lines dropped because stderr took nothing while 4 MiB waited (`log_writer`: a stalled stderr never blocks a call, health or the shutdown) |
//! | `reddog_audit_records_total` | counter | | audit records handed to the trail's writer (`audit_sink`) |
//! | `reddog_audit_refused_total` | counter | `reason` | calls answered UNAVAILABLE (`AUDIT_UNAVAILABLE`) because their record was refused or not written in time (`backlog`, `output_failed`, `stalled`, `stopped`, `not_started`) |
//! | `reddog_audit_sink_up` | gauge | | 1 while the trail's output takes records, 0 while it fails or stalls (`audit_writer`) |
//! | `reddog_audit_sink_faults_total` | counter | `cause` | times the trail's output began to fail: `no_space`, `io_error`, `closed`, `write_error`, `stalled` |
//! | `reddog_ready` | gauge | | what the readiness probe (`""`) answers: 1 SERVING, 0 NOT_SERVING (audit output failing, or draining) |
//! | `process_*` | | | the process's CPU, memory, file descriptors, threads and start time (metrics-process) |
//!
//! Every counter with a fixed label set is registered at 0 when the service starts, so a rule
//! sees it before its first event; `reddog_rpc_requests_total` is at 0 for code `OK` of every
//! method, and other codes appear at their first answer.
//!
//! Settlement counters count `Settle` answers: a retried `Settle` counts again. Deal classes
//! are `hand_class` `pair` and `consecutive` (spread `0`) and `non_consecutive` with spread
//! `1`…`11`.
//! No metric carries a seed, key, token or round id.
//!
//! **Two registries.** The `metrics` crate's recorder (the Prometheus exporter, [`install`])
//! is process-global: `counter!` and friends reach it from anywhere, so every counter, gauge
//! and histogram above except the money and payout sums is per process, shared by every
//! [`super::Application`] in it (one per process in production; tests that build several
//! see their RPC and round counts summed). The money and payout sums are not in it: each
//! `Application` owns a [`MoneyMetrics`], passed to its service ([`super::EngineConfig`]) and
//! to its `/metrics` listener, so two `Application`s in one process keep separate totals.
//!
//! **The money counters never wrap.** A `metrics` counter is a `u64` that wraps at 2^64, and
//! one round at the largest table allowed returns nearly 2^64 minor units, so two such rounds
//! would wrap it to a small, wrong number. The two money counters are therefore not
//! `metrics` counters: they are exact `u128` sums ([`MoneyTotals`], in [`MoneyMetrics`])
//! rendered by [`serve`] after the exporter's text, as Prometheus counters. A `u128` sum of `u64`
//! amounts needs more than 2^64 settlements to reach 2^128; the sums are checked anyway, and
//! a sum that would overflow is left unchanged and logged (never wrapped, never clamped).
//! Prometheus stores samples as float64, so values above 2^53 lose low digits there — never
//! their magnitude.
//!
//! **The payout monitor.** For each settled round the expected return given its first two
//! cards and every seat's final stake is an exact fraction ([`crate::odds::round_expectation`]);
//! its sum is kept exactly (a `u128` whole part and an exact fractional part) and rendered
//! with six decimals. The variances and the moments are statistics, summed as `f64`. The
//! alert `RedDogPayoutOffExpected` (deploy/monitoring) compares returned with expected in
//! standard errors: a settlement that pays other odds than the paytable's drifts away.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use metrics::{
    Counter, Gauge, Histogram, Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram,
};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::net::TcpListener;

use super::build_info;
use super::tables::Currency;
use crate::game::{Decks, HandClass, Paytable, Rule, Settlement, Spread, Table};
use crate::odds::{Analysis, Exact, RtpDefinition, decimal, round_expectation, to_f64};

/// The exporter's handle. The `metrics` crate has one global recorder per process, so this is
/// process-wide too (see the module docs); nothing else here is.
static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// The exact sums of the money settled at one table, in minor units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MoneyTotals {
    pub staked: u128,
    pub returned: u128,
}

/// The exact money sums and the payout monitor's sums of one [`super::Application`], per
/// table id (see the module docs): its own, not the process's, so two `Application`s in one
/// process show their own totals on their own `/metrics`.
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
    /// Σ Var[returned], minor units squared.
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
    let mut out = String::from(
        "# HELP reddog_expected_returned_minor_units_total Sum over Settle answers of the exact expected return \
         given the round's deal and decisions, in the table's minor units.\n\
         # TYPE reddog_expected_returned_minor_units_total counter\n",
    );
    for (table, t) in all {
        let p = &t.payout;
        // decimal() rounds half up: 0.9999995 and above shows as "1.000000".
        let frac = decimal(&p.expected_fraction, 6);
        let (carry, digits) = frac.split_once('.').unwrap_or(("0", "000000"));
        let whole = p.expected_whole + u128::from(carry == "1");
        out.push_str(&format!(
            "reddog_expected_returned_minor_units_total{{table=\"{}\"}} {whole}.{digits}\n",
            label_value(table)
        ));
    }
    out.push_str(
        "# HELP reddog_returned_variance_minor_units_squared_total Sum over Settle answers of the variance of \
         the round's return given its deal and decisions, minor units squared.\n\
         # TYPE reddog_returned_variance_minor_units_squared_total counter\n",
    );
    for (table, t) in all {
        out.push_str(&format!(
            "reddog_returned_variance_minor_units_squared_total{{table=\"{}\"}} {:e}\n",
            label_value(table),
            t.payout.variance
        ));
    }
    out.push_str(
        "# HELP reddog_settled_round_moments_total Per table, the sum over Settle answers of returned^2 \
         (moment=rr), returned*staked (rs) and staked^2 (ss), minor units squared: the standard error of the \
         observed RTP.\n\
         # TYPE reddog_settled_round_moments_total counter\n",
    );
    for (table, t) in all {
        for (m, v) in ["rr", "rs", "ss"].iter().zip(t.payout.moments) {
            out.push_str(&format!(
                "reddog_settled_round_moments_total{{table=\"{}\",moment=\"{m}\"}} {v:e}\n",
                label_value(table)
            ));
        }
    }
    out
}

/// The money counters in Prometheus text format.
fn render_money(all: &[(String, TableSums)]) -> String {
    let mut out = String::from(
        "# HELP reddog_staked_minor_units_total Sum of the stakes settled, in the table's minor units (exact).\n\
         # TYPE reddog_staked_minor_units_total counter\n",
    );
    for (table, t) in all {
        out.push_str(&format!(
            "reddog_staked_minor_units_total{{table=\"{}\"}} {}\n",
            label_value(table),
            t.money.staked
        ));
    }
    out.push_str(
        "# HELP reddog_returned_minor_units_total Sum returned to players, in the table's minor units (exact).\n\
         # TYPE reddog_returned_minor_units_total counter\n",
    );
    for (table, t) in all {
        out.push_str(&format!(
            "reddog_returned_minor_units_total{{table=\"{}\"}} {}\n",
            label_value(table),
            t.money.returned
        ));
    }
    out
}

/// A Prometheus label value, escaped (table ids are `[A-Za-z0-9._-]`, so this is defence only).
fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Installs the Prometheus recorder as the process's global `metrics` recorder (once; later
/// calls return the same handle). `None` if another recorder was installed first.
pub fn install() -> Option<PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full("reddog_rpc_duration_seconds".into()),
                    &[0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.05, 0.25],
                )
                .ok()?
                .set_buckets_for_metric(
                    Matcher::Full("reddog_rpc_queue_wait_seconds".into()),
                    &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0],
                )
                .ok()?;
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            metrics::set_global_recorder(recorder).ok()?;
            Some(handle)
        })
        .clone()
}

/// Serves `GET /metrics` (Prometheus text format: the process's exporter, then `money`'s
/// sums) on `listener` until the task is dropped, with hyper's HTTP/1.1 server (keep-alive,
/// pipelining and malformed requests are hyper's business, not ours). `GET /` answers a
/// pointer to `/metrics`; anything else is 404.
pub async fn serve(listener: TcpListener, handle: PrometheusHandle, money: Arc<MoneyMetrics>) {
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(5));
        loop {
            tick.tick().await;
            upkeep.run_upkeep();
        }
    });
    // Out of file descriptors, accept fails at once until one is freed: back off like the
    // gRPC listener instead of spinning a core.
    let mut backoff = super::accept::AcceptBackoff::new("metrics", accept_backoff_counter());
    loop {
        let (stream, _) = backoff.accept(&listener).await;
        let (handle, money) = (handle.clone(), Arc::clone(&money));
        let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let (handle, money) = (handle.clone(), Arc::clone(&money));
            async move { Ok::<_, std::convert::Infallible>(respond(&req, &handle, &money)) }
        });
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .header_read_timeout(Duration::from_secs(5))
                .timer(hyper_util::rt::TokioTimer::new())
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            let _ = conn.await;
        });
    }
}

fn respond<B>(
    req: &hyper::Request<B>,
    handle: &PrometheusHandle,
    money: &MoneyMetrics,
) -> hyper::Response<Full<Bytes>> {
    let (status, body) = match (req.method(), req.uri().path()) {
        (&hyper::Method::GET, "/metrics") => (hyper::StatusCode::OK, render_all(handle, money)),
        (&hyper::Method::GET, "/") => (hyper::StatusCode::OK, "reddog metrics: see /metrics\n".to_string()),
        _ => (hyper::StatusCode::NOT_FOUND, "not found\n".to_string()),
    };
    let mut response = hyper::Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"));
    response
}

/// The whole `/metrics` page: the process metrics sampled now, the exporter's text, then the
/// exact money and payout sums of `money`'s application.
fn render_all(handle: &PrometheusHandle, money: &MoneyMetrics) -> String {
    process_collector().collect();
    let sums = money.snapshot();
    handle.render() + &render_money(&sums) + &render_payout(&sums)
}

/// The `process_*` collector (metrics-process), described once.
fn process_collector() -> &'static metrics_process::Collector {
    static COLLECTOR: OnceLock<metrics_process::Collector> = OnceLock::new();
    COLLECTOR.get_or_init(|| {
        let c = metrics_process::Collector::default();
        c.describe();
        c
    })
}

/// Binds the metrics listener and serves it in the background (the process's recorder and
/// `money`'s sums); returns the bound address.
pub async fn spawn(addr: SocketAddr, money: Arc<MoneyMetrics>) -> std::io::Result<Option<SocketAddr>> {
    let Some(handle) = install() else { return Ok(None) };
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(serve(listener, handle, money));
    Ok(Some(bound))
}

/// The RPCs of `reddog.v1.RedDog`, as metric labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
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
    pub const fn full_name(self) -> &'static str {
        match self {
            Method::GetRules => "reddog.v1.RedDog/GetRules",
            Method::CommitSeed => "reddog.v1.RedDog/CommitSeed",
            Method::StartRound => "reddog.v1.RedDog/StartRound",
            Method::Decide => "reddog.v1.RedDog/Decide",
            Method::Settle => "reddog.v1.RedDog/Settle",
            Method::ListTables => "reddog.v1.RedDog/ListTables",
        }
    }

    pub const fn name(self) -> &'static str {
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

/// Registers the HELP texts (once per process; later calls are harmless).
fn describe() {
    describe_counter!("reddog_rpc_requests_total", "RPCs answered, by method and gRPC status code name");
    describe_histogram!("reddog_rpc_duration_seconds", Unit::Seconds, "RPC handler latency");
    describe_histogram!(
        "reddog_rpc_queue_wait_seconds",
        Unit::Seconds,
        "Time a RedDog call waited in the server (headers to handler start) before it could start"
    );
    describe_counter!(
        "reddog_rounds_started_total",
        "Rounds dealt by StartRound, by table, hand class and spread (0 unless non-consecutive)"
    );
    describe_counter!(
        "reddog_rounds_settled_total",
        "Settle answers (rounds), by table, hand class, spread and the rule that decided the round"
    );
    describe_counter!(
        "reddog_seats_settled_total",
        "Seat results returned by Settle, by table, hand class, outcome, rule"
    );
    describe_gauge!(
        "reddog_deal_probability",
        "Exact probability of each deal class (hand_class, spread) for the table's shoe"
    );
    describe_gauge!(
        "reddog_third_card_probability",
        "Exact probability that the third card wins, given the deal class: three of a kind given a pair, between \
         given a spread"
    );
    describe_gauge!(
        "reddog_rtp_bound",
        "Exact lowest (bound=worst) and highest (bound=best) RTP of any strategy at the table, per definition"
    );
    describe_gauge!("reddog_rpc_in_flight", "RedDog calls in progress: request headers arrived, answer not yet sent");
    describe_gauge!("reddog_table_info", "Always 1; labels describe a configured table");
    describe_gauge!(
        "reddog_rules_certified",
        "1 when the table's rules digest was checked against --certified-rules at start-up, 0 without that file"
    );
    describe_gauge!("reddog_build_info", "Always 1; labels give the engine's version, git commit and build date");
    describe_counter!("reddog_token_rejections_total", "Tokens refused (tampered, unknown key, expired, wrong kind)");
    describe_counter!("reddog_audit_records_total", "Audit records written to the audit sink's batch");
    describe_counter!(
        "reddog_audit_refused_total",
        "Calls answered UNAVAILABLE because their audit record was refused or not written in time, by reason"
    );
    describe_gauge!(
        "reddog_audit_sink_up",
        "1 while the audit trail's output takes records, 0 while it fails or stalls"
    );
    describe_counter!("reddog_audit_sink_faults_total", "Times the audit trail's output began to fail, by cause");
    describe_gauge!("reddog_ready", "What the readiness probe answers: 1 SERVING, 0 NOT_SERVING");
    describe_counter!("reddog_token_seals_total", "Tokens sealed, by key id");
    describe_counter!(
        "reddog_load_shed_total",
        "RedDog calls answered RESOURCE_EXHAUSTED (OVERLOADED): at --max-in-flight, pending request bytes or queue wait"
    );
    describe_counter!(
        "reddog_load_shed_queued_total",
        "RedDog calls answered RESOURCE_EXHAUSTED because they waited over --max-queue-wait-ms to start"
    );
    describe_counter!(
        "reddog_rpc_undelivered_total",
        "Slots released by closing a connection whose answers went unread past the delivery deadline"
    );
    describe_counter!("reddog_request_timeouts_total", "RedDog calls cut at --request-timeout-ms (DEADLINE_EXCEEDED)");
    describe_counter!(
        "reddog_undecodable_requests_total",
        "Requests that could not be decoded (INVALID_ARGUMENT) or were over the size limit (RESOURCE_EXHAUSTED)"
    );
    describe_counter!("reddog_connections_closed_total", "Connections the server closed, by reason");
    describe_counter!(
        "reddog_accept_backoffs_total",
        "Accept failures (out of file descriptors or memory) that backed off"
    );
    describe_counter!(
        "reddog_log_lines_dropped_total",
        "Diagnostic log lines dropped because stderr took nothing while 4 MiB of lines waited"
    );
}

/// Registers every counter whose label values are known in advance (an increment by 0: a
/// series that exists keeps its value), so each series exists from start-up and a rule on
/// `increase()` sees the first event, not a new series.
/// `reddog_rules_certified` of every table: 1 when its digest was checked against a certified
/// rules file at start-up, 0 when the engine started without one.
pub fn rules_certified(tables: &super::tables::Tables, checked: bool) {
    describe();
    for t in tables.iter() {
        gauge!("reddog_rules_certified", "table" => t.id.clone(), "rules_digest" => t.digest().to_hex())
            .set(if checked { 1.0 } else { 0.0 });
    }
}

fn register_zero_counters() {
    for method in [Method::StartRound, Method::Decide, Method::Settle] {
        for reason in ["expired", "unknown_key", "tampered", "malformed", "wrong_kind"] {
            counter!("reddog_token_rejections_total", "method" => method.name(), "reason" => reason).increment(0);
        }
    }
    counter!("reddog_load_shed_total").increment(0);
    counter!("reddog_load_shed_queued_total").increment(0);
    counter!("reddog_rpc_undelivered_total").increment(0);
    counter!("reddog_request_timeouts_total").increment(0);
    for code in [tonic::Code::InvalidArgument, tonic::Code::ResourceExhausted] {
        counter!("reddog_undecodable_requests_total", "code" => code_name(code)).increment(0);
    }
    for reason in [
        "handshake_timeout",
        "tls",
        "not_http2",
        "too_many_handshakes",
        "too_many_connections",
        "displaced",
        "idle",
        "undelivered",
    ] {
        counter!("reddog_connections_closed_total", "reason" => reason).increment(0);
    }
    counter!("reddog_accept_backoffs_total").increment(0);
    counter!("reddog_log_lines_dropped_total").increment(0);
    counter!("reddog_audit_records_total").increment(0);
    for reason in super::audit_sink::AuditRefused::LABELS {
        counter!("reddog_audit_refused_total", "reason" => reason).increment(0);
    }
    for cause in super::audit_writer::Cause::ALL {
        counter!("reddog_audit_sink_faults_total", "cause" => cause.label()).increment(0);
    }
}

/// Handles to the metrics every RPC touches, registered once when the service is built, so
/// a call only increments atomics (the `counter!` macro would build, hash and look up a
/// labelled key on every call). Built after [`install`]; without a recorder the handles are
/// no-ops. Registering eagerly also makes every series visible at 0 from the start.
pub struct Metrics {
    ok: [Counter; 6],
    duration: [Histogram; 6],
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    /// Registers the per-RPC handles and `reddog_build_info` with the global recorder.
    pub fn register() -> Metrics {
        describe();
        register_zero_counters();
        process_collector();
        gauge!(
            "reddog_build_info",
            "version" => build_info::VERSION,
            "git_commit" => build_info::GIT_COMMIT,
            "build_date" => build_info::BUILD_DATE
        )
        .set(1.0);
        Metrics {
            ok: Method::ALL.map(|m| counter!("reddog_rpc_requests_total", "method" => m.name(), "code" => "OK")),
            duration: Method::ALL.map(|m| histogram!("reddog_rpc_duration_seconds", "method" => m.name())),
        }
    }

    /// Records one answered RPC.
    pub fn rpc(&self, method: Method, code: tonic::Code, started: Instant) {
        let i = method as usize;
        if code == tonic::Code::Ok {
            self.ok[i].increment(1);
        } else {
            counter!("reddog_rpc_requests_total", "method" => method.name(), "code" => code_name(code)).increment(1);
        }
        self.duration[i].record(started.elapsed().as_secs_f64());
    }
}

/// The game metrics of one table, labelled `table`: what was dealt and settled, and the exact
/// figures the fairness alerts compare them with (docs/OPERATIONS.md, "Metrics and alerts").
pub struct TableMetrics {
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

impl TableMetrics {
    /// Registers the table's handles (its money sums in `money`) and sets its exact figures
    /// (computed once here from the odds module: probabilities of every deal class and of the
    /// third card winning, and the RTP range over every strategy).
    pub fn register(id: &str, table: &Table, currency: &Currency, money: &MoneyMetrics) -> TableMetrics {
        describe();
        let id = id.to_string();
        let sums = money.table(&id);
        let analysis = Analysis::new(table.decks(), table.paytable());
        gauge!(
            "reddog_table_info",
            "table" => id.clone(),
            "decks" => table.decks().get().to_string(),
            "currency" => currency.code().to_string(),
            "minor_unit_exponent" => currency.minor_unit_exponent().to_string(),
            "rules_digest" => hex::encode(super::audit_record::rules_digest(table, currency))
        )
        .set(1.0);
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
            let labels = [("table", id.clone()), ("hand_class", class.to_string()), ("spread", spread)];
            gauge!("reddog_deal_probability", &labels).set(to_f64(&p));
            if let Some(w) = win {
                gauge!("reddog_third_card_probability", &labels).set(to_f64(&w));
            }
        }
        for def in [RtpDefinition::PerInitialBet, RtpDefinition::PerTotalWagered] {
            let x = analysis.rtp_extremes(def);
            for (bound, value) in [("worst", &x.worst), ("best", &x.best)] {
                gauge!("reddog_rtp_bound", "table" => id.clone(), "definition" => def.key(), "bound" => bound)
                    .set(to_f64(value));
            }
        }
        TableMetrics {
            rounds_started: std::array::from_fn(|i| {
                let (class, spread) = deal_labels(i);
                counter!("reddog_rounds_started_total", "table" => id.clone(), "hand_class" => class, "spread" => spread)
            }),
            rounds_settled: std::array::from_fn(|i| {
                let (class, spread) = deal_labels(i);
                RULES.map(|rule| {
                    rule_fits(i, rule).then(|| {
                        counter!(
                            "reddog_rounds_settled_total",
                            "table" => id.clone(),
                            "hand_class" => class,
                            "spread" => spread.clone(),
                            "rule" => rule.name()
                        )
                    })
                })
            }),
            seats_settled: RULES.map(|rule| {
                let (class, outcome) = rule_labels(rule);
                counter!(
                    "reddog_seats_settled_total",
                    "table" => id.clone(),
                    "hand_class" => class,
                    "outcome" => outcome,
                    "rule" => rule.name()
                )
            }),
            id: id.clone(),
            sums,
        }
    }

    /// Records a dealt round.
    pub fn round_started(&self, class: HandClass) {
        self.rounds_started[deal_index(class)].increment(1);
    }

    /// Records a settlement: the round's rule, per seat outcome, the staked and returned
    /// sums (exact, see the module docs), the round's exact expected return and variance
    /// given its deal (`decks` and `paytable` are the round's own, from its token) and the
    /// RTP moments (as `f64`: statistics, never money).
    pub fn settled(&self, s: &Settlement, decks: Decks, paytable: &Paytable) {
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

/// Records a refused token (every one; the log line is bounded by
/// [`super::refusal_log::RefusalLog`]). `reason` is one of the
/// [`crate::service::token::TokenRefusal`] labels.
pub fn token_rejected(method: Method, reason: &'static str) {
    counter!("reddog_token_rejections_total", "method" => method.name(), "reason" => reason).increment(1);
}

/// The gauge of RedDog calls in progress (request headers arrived, answer not yet sent). A
/// handle: updating it is an atomic operation, no lookup.
pub fn in_flight_gauge() -> Gauge {
    gauge!("reddog_rpc_in_flight")
}

/// The histogram of RedDog calls' waits before they could start (a handle: recording takes
/// no lookup).
pub fn queue_wait_histogram() -> Histogram {
    histogram!("reddog_rpc_queue_wait_seconds")
}

/// Records `n` slots released because their answers could not be delivered.
pub fn undelivered(n: usize) {
    counter!("reddog_rpc_undelivered_total").increment(n as u64);
}

/// Records a call shed at the global concurrency cap.
pub fn load_shed() {
    counter!("reddog_load_shed_total").increment(1);
}

/// Records a call shed because it waited over `--max-queue-wait-ms` to start.
pub fn queue_shed() {
    counter!("reddog_load_shed_total").increment(1);
    counter!("reddog_load_shed_queued_total").increment(1);
}

/// Records a call cut at the per-call timeout.
pub fn request_timed_out() {
    counter!("reddog_request_timeouts_total").increment(1);
}

/// Records a request tonic could not decode, by the code it was answered with.
pub fn bad_request(code: tonic::Code) {
    counter!("reddog_undecodable_requests_total", "code" => code_name(code)).increment(1);
}

/// Records a connection the server closed, by why.
pub fn connection_closed(reason: &'static str) {
    counter!("reddog_connections_closed_total", "reason" => reason).increment(1);
}

/// The counter of accept-loop back-offs, for [`super::accept::AcceptBackoff::new`].
pub fn accept_backoff_counter() -> Counter {
    counter!("reddog_accept_backoffs_total")
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
