//! Prometheus metrics, recorded with the `metrics` crate and rendered at `/metrics` on the
//! metrics listener:
//!
//! | metric | type | labels | meaning |
//! |---|---|---|---|
//! | `reddog_rpc_requests_total` | counter | `method`, `code` | RPCs answered, by gRPC status code name |
//! | `reddog_rpc_duration_seconds` | histogram | `method` | handler latency |
//! | `reddog_rounds_started_total` | counter | `hand_class` | rounds dealt |
//! | `reddog_seats_settled_total` | counter | `hand_class`, `outcome`, `rule` | seat results returned by `Settle` |
//! | `reddog_staked_minor_units_total` | counter | | sum of stakes settled |
//! | `reddog_returned_minor_units_total` | counter | | sum returned; returned/staked = observed RTP |
//! | `reddog_token_rejections_total` | counter | `method` | tokens refused (any reason) |
//! | `reddog_log_writer_waits_total` | counter | | log lines that waited for a stalled stderr (`log_writer`; never dropped) |
//!
//! Settlement counters count `Settle` answers: a retried `Settle` counts again.
//! No metric carries a seed, key, token or round id.
//!
//! **The money counters never wrap.** A `metrics` counter is a `u64` that wraps at 2^64, and
//! one round at the largest table allowed returns nearly 2^64 minor units, so two such rounds
//! would wrap it to a small, wrong number. The two money counters are therefore not
//! `metrics` counters: they are exact `u128` sums kept here ([`MoneyTotals`]) and rendered
//! by [`serve`] after the exporter's text, as Prometheus counters. A `u128` sum of `u64`
//! amounts needs more than 2^64 settlements to reach 2^128; the sums are checked anyway, and
//! a sum that would overflow is left unchanged and logged (never wrapped, never clamped).
//! Prometheus stores samples as float64, so values above 2^53 lose low digits there — never
//! their magnitude.

use std::net::SocketAddr;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use metrics::{Counter, Histogram, counter, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::net::TcpListener;

use crate::game::{HandClass, Rule, Settlement};

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// The exact sums of the money settled by this process, in minor units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MoneyTotals {
    pub staked: u128,
    pub returned: u128,
}

static MONEY: Mutex<MoneyTotals> = Mutex::new(MoneyTotals { staked: 0, returned: 0 });

/// The money settled so far by this process (all services in it).
pub fn money_totals() -> MoneyTotals {
    *MONEY.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Adds a settlement's totals to the process's money sums, exactly.
fn add_money(staked: u64, returned: u64) {
    let mut m = MONEY.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    match (m.staked.checked_add(u128::from(staked)), m.returned.checked_add(u128::from(returned))) {
        (Some(s), Some(r)) => *m = MoneyTotals { staked: s, returned: r },
        _ => tracing::error!("money metric sums would overflow 128 bits; left unchanged"),
    }
}

/// The money counters in Prometheus text format.
pub fn render_money() -> String {
    let m = money_totals();
    format!(
        "# HELP reddog_staked_minor_units_total Sum of the stakes settled, in minor units (exact).\n\
         # TYPE reddog_staked_minor_units_total counter\n\
         reddog_staked_minor_units_total {}\n\
         # HELP reddog_returned_minor_units_total Sum returned to players, in minor units (exact).\n\
         # TYPE reddog_returned_minor_units_total counter\n\
         reddog_returned_minor_units_total {}\n",
        m.staked, m.returned
    )
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
                .ok()?;
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            metrics::set_global_recorder(recorder).ok()?;
            Some(handle)
        })
        .clone()
}

/// Serves `GET /metrics` (Prometheus text format) on `listener` until the task is dropped,
/// with hyper's HTTP/1.1 server (keep-alive, pipelining and malformed requests are hyper's
/// business, not ours). `GET /` answers a pointer to `/metrics`; anything else is 404.
pub async fn serve(listener: TcpListener, handle: PrometheusHandle) {
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(5));
        loop {
            tick.tick().await;
            upkeep.run_upkeep();
        }
    });
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let handle = handle.clone();
        let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let handle = handle.clone();
            async move { Ok::<_, std::convert::Infallible>(respond(&req, &handle)) }
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

fn respond<B>(req: &hyper::Request<B>, handle: &PrometheusHandle) -> hyper::Response<Full<Bytes>> {
    let (status, body) = match (req.method(), req.uri().path()) {
        (&hyper::Method::GET, "/metrics") => (hyper::StatusCode::OK, handle.render() + &render_money()),
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

/// Binds the metrics listener and serves it in the background; returns the bound address.
pub async fn spawn(addr: SocketAddr) -> std::io::Result<Option<SocketAddr>> {
    let Some(handle) = install() else { return Ok(None) };
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(serve(listener, handle));
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
}

impl Method {
    const ALL: [Method; 5] = [Method::GetRules, Method::CommitSeed, Method::StartRound, Method::Decide, Method::Settle];

    pub const fn name(self) -> &'static str {
        match self {
            Method::GetRules => "GetRules",
            Method::CommitSeed => "CommitSeed",
            Method::StartRound => "StartRound",
            Method::Decide => "Decide",
            Method::Settle => "Settle",
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

/// Handles to the metrics every RPC touches, registered once when the service is built, so
/// a call only increments atomics (the `counter!` macro would build, hash and look up a
/// labelled key on every call). Built after [`install`]; without a recorder the handles are
/// no-ops. Registering eagerly also makes every series visible at 0 from the start.
pub struct Metrics {
    ok: [Counter; 5],
    duration: [Histogram; 5],
    /// By hand class: pair, consecutive, non-consecutive.
    rounds_started: [Counter; 3],
    /// By rule, in the order of `RULES`.
    seats_settled: [Counter; 6],
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    /// Registers the handles with the global recorder.
    pub fn register() -> Metrics {
        Metrics {
            ok: Method::ALL.map(|m| counter!("reddog_rpc_requests_total", "method" => m.name(), "code" => "OK")),
            duration: Method::ALL.map(|m| histogram!("reddog_rpc_duration_seconds", "method" => m.name())),
            rounds_started: ["pair", "consecutive", "non_consecutive"]
                .map(|class| counter!("reddog_rounds_started_total", "hand_class" => class)),
            seats_settled: RULES.map(|rule| {
                let (class, outcome) = rule_labels(rule);
                counter!(
                    "reddog_seats_settled_total",
                    "hand_class" => class,
                    "outcome" => outcome,
                    "rule" => rule.name()
                )
            }),
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

    /// Records a dealt round.
    pub fn round_started(&self, class: HandClass) {
        let i = match class {
            HandClass::Pair => 0,
            HandClass::Consecutive => 1,
            HandClass::NonConsecutive(_) => 2,
        };
        self.rounds_started[i].increment(1);
    }

    /// Records a settlement: per seat outcome, and the staked and returned sums (exact, see
    /// the module docs).
    pub fn settled(&self, s: &Settlement) {
        for seat in &s.seats {
            if let Some(i) = RULES.iter().position(|&r| r == seat.rule) {
                self.seats_settled[i].increment(1);
            }
        }
        add_money(s.total_staked.0, s.total_returned.0);
    }
}

/// Records a refused token (rare: not worth a cached handle).
pub fn token_rejected(method: Method) {
    counter!("reddog_token_rejections_total", "method" => method.name()).increment(1);
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
        let before = money_totals();
        add_money(u64::MAX, u64::MAX);
        add_money(u64::MAX, 1);
        let after = money_totals();
        // Other tests may settle meanwhile: the sums only grow, by at least these amounts.
        assert!(after.staked - before.staked >= 2 * u128::from(u64::MAX));
        assert!(after.returned - before.returned > u128::from(u64::MAX));
        let text = render_money();
        assert!(text.contains("# TYPE reddog_staked_minor_units_total counter"));
        let value: u128 =
            text.lines().find_map(|l| l.strip_prefix("reddog_staked_minor_units_total ")).unwrap().parse().unwrap();
        assert!(value > u128::from(u64::MAX), "rendered above 2^64, not wrapped: {value}");
    }
}
