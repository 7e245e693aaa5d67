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

use metrics::{counter, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::game::Settlement;

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

/// Records one answered RPC.
pub fn rpc(method: &'static str, code: tonic::Code, started: Instant) {
    counter!("reddog_rpc_requests_total", "method" => method, "code" => code_name(code)).increment(1);
    histogram!("reddog_rpc_duration_seconds", "method" => method).record(started.elapsed().as_secs_f64());
}

/// Records a refused token.
pub fn token_rejected(method: &'static str) {
    counter!("reddog_token_rejections_total", "method" => method).increment(1);
}

/// Records a dealt round.
pub fn round_started(hand_class: &'static str) {
    counter!("reddog_rounds_started_total", "hand_class" => hand_class).increment(1);
}

/// Records a settlement: per seat outcome, and the staked and returned sums.
pub fn settled(s: &Settlement, staked: u64, returned: u64) {
    let class = s.class.name();
    for seat in &s.seats {
        counter!(
            "reddog_seats_settled_total",
            "hand_class" => class,
            "outcome" => seat.outcome.name(),
            "rule" => seat.rule.name()
        )
        .increment(1);
    }
    counter!("reddog_staked_minor_units_total").increment(staked);
    counter!("reddog_returned_minor_units_total").increment(returned);
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
