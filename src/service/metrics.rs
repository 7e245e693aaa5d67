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
//! | `reddog_token_rejections_total` | counter | `method`, `reason` | tokens refused, by why (`expired`, `unknown_key`, `tampered`, `malformed`, `wrong_kind`); the client gets one answer for all |
//! | `reddog_load_shed_total` | counter | | RedDog calls answered RESOURCE_EXHAUSTED because the server was at `--max-in-flight` |
//! | `reddog_request_timeouts_total` | counter | | RedDog calls cut at `--request-timeout-ms` (DEADLINE_EXCEEDED) |
//! | `reddog_undecodable_requests_total` | counter | `code` | requests tonic could not decode (INVALID_ARGUMENT) or that were over the size limit (RESOURCE_EXHAUSTED) |
//! | `reddog_connections_closed_total` | counter | `reason` | connections the server closed: `handshake_timeout`, `tls`, `not_http2`, `too_many_handshakes`, `idle` |
//! | `reddog_accept_backoffs_total` | counter | | accept failures (out of file descriptors or memory) that made the accept loop back off |
//!
//! Settlement counters count `Settle` answers: a retried `Settle` counts again.
//! No metric carries a seed, key, token or round id.

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use metrics::{Counter, Histogram, counter, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
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

/// Serves `GET /metrics` (Prometheus text format) on `listener` until the task is dropped.
/// A minimal HTTP/1.1 responder: one request per connection.
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
        let Ok((mut stream, _)) = listener.accept().await else { continue };
        let handle = handle.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 2048];
            let mut len = 0;
            // Read the request head (bounded in size and time).
            let read = tokio::time::timeout(Duration::from_secs(5), async {
                while len < buf.len() {
                    match stream.read(&mut buf[len..]).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => len += n,
                    }
                    if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
            })
            .await;
            if read.is_err() {
                return;
            }
            let head = &buf[..len];
            let (status, body) = if head.starts_with(b"GET /metrics ") || head.starts_with(b"GET /metrics?") {
                ("200 OK", handle.render())
            } else if head.starts_with(b"GET / ") {
                ("200 OK", "reddog metrics: see /metrics\n".to_string())
            } else {
                ("404 Not Found", "not found\n".to_string())
            };
            let response = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
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

/// Records a refused token and logs why at WARN, on the server only (rare: not worth a
/// cached handle). `reason` is one of the [`crate::service::token::TokenRefusal`] labels.
pub fn token_rejected(method: Method, reason: &'static str) {
    tracing::warn!(method = method.name(), reason, "token refused");
    counter!("reddog_token_rejections_total", "method" => method.name(), "reason" => reason).increment(1);
}

/// Records a call shed at the global concurrency cap.
pub fn load_shed() {
    counter!("reddog_load_shed_total").increment(1);
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

/// Records one back-off of the accept loop.
pub fn accept_backoff() {
    counter!("reddog_accept_backoffs_total").increment(1);
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
