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
//!
//! Settlement counters count `Settle` answers: a retried `Settle` counts again.
//! No metric carries a seed, key, token or round id.

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use metrics::{Counter, Histogram, counter, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use tokio::net::TcpListener;

use crate::game::{HandClass, Rule, Settlement};

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

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
        (&hyper::Method::GET, "/metrics") => (hyper::StatusCode::OK, handle.render()),
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
    staked: Counter,
    returned: Counter,
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
            staked: counter!("reddog_staked_minor_units_total"),
            returned: counter!("reddog_returned_minor_units_total"),
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

    /// Records a settlement: per seat outcome, and the staked and returned sums.
    pub fn settled(&self, s: &Settlement, staked: u64, returned: u64) {
        for seat in &s.seats {
            if let Some(i) = RULES.iter().position(|&r| r == seat.rule) {
                self.seats_settled[i].increment(1);
            }
        }
        self.staked.increment(staked);
        self.returned.increment(returned);
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
