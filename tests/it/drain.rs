//! Graceful shutdown of the real binary, as Kubernetes does it: SIGTERM while calls are in
//! flight.
//!
//! `reddog serve` runs as a child process on 127.0.0.1:0. "In flight" is made deterministic
//! without any test hook in the server: each held call is a GetRules call whose request
//! message the client has not sent yet (HTTP/2 HEADERS sent, DATA withheld), so the server has
//! accepted the stream and its handler is waiting. Then:
//! - `drain_completes_in_flight_calls`: SIGTERM; the overall health status (`""`, what the
//!   readiness probe asks) turns NOT_SERVING on a Watch opened before, then that Watch ends
//!   (UNAVAILABLE) so it cannot hold the drain; `liveness` never turns NOT_SERVING;
//!   the held calls are released, complete OK, and the process exits 0 well within the bound;
//! - `drain_is_bounded`: a call that never completes does not keep the process alive past
//!   `--drain-timeout-secs`.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use reddog::service::proto::GetRulesRequest;

use crate::common::held_call;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

const RING: &str = r#"{"primary":"d","keys":{"d":"3333333333333333333333333333333333333333333333333333333333333333"}}"#;

/// The child process; killed on drop if a test fails half-way.
struct Server {
    child: Child,
    addr: SocketAddr,
    metrics: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(drain_timeout_secs: u64) -> Server {
    let mut child = Command::new(crate::common::reddog_binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"])
        .args(["--drain-timeout-secs", &drain_timeout_secs.to_string()])
        .env_clear()
        .env("REDDOG_KEY_RING", RING)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn reddog serve");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            for prefix in ["listening on ", "metrics on "] {
                if let Some(rest) = line.strip_prefix(prefix) {
                    let _ = tx.send((prefix, rest.trim().to_string()));
                }
            }
        }
    });
    let (mut addr, mut metrics) = (None, None);
    while addr.is_none() || metrics.is_none() {
        let (prefix, value) =
            rx.recv_timeout(Duration::from_secs(30)).expect("'listening on' and 'metrics on' lines within 30 s");
        let parsed: SocketAddr = value.parse().expect("a socket address");
        if prefix == "listening on " {
            addr = Some(parsed);
        } else {
            metrics = Some(parsed);
        }
    }
    Server { child, addr: addr.unwrap(), metrics: metrics.unwrap() }
}

/// Waits (bounded) until the server reports `n` RedDog calls in progress: the held calls
/// have reached it, so the drain has something to wait for (a fixed sleep raced with a
/// loaded machine).
async fn wait_in_flight(server: &Server, n: u64) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    while Instant::now() < deadline {
        if let Ok(mut conn) = tokio::net::TcpStream::connect(server.metrics).await {
            let _ = conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").await;
            let mut body = String::new();
            let _ = conn.read_to_string(&mut body).await;
            last = body.lines().find(|l| l.starts_with("reddog_rpc_in_flight ")).unwrap_or("").to_string();
            let value = last.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok());
            if value.is_some_and(|v| v >= n as f64) {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the server never reported {n} calls in progress (last: {last:?})");
}

fn sigterm(server: &Server) {
    let status = Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().unwrap();
    assert!(status.success(), "kill -TERM failed");
}

/// Waits (bounded) for the child to exit; returns its exit code and when it exited.
fn wait_exit(server: &mut Server, bound: Duration) -> (Option<i32>, Instant) {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            return (status.code(), Instant::now());
        }
        assert!(Instant::now() < deadline, "reddog did not exit within {bound:?} of SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn channel(addr: SocketAddr) -> Channel {
    let endpoint = Endpoint::from_shared(format!("http://{addr}")).unwrap();
    for _ in 0..100 {
        if let Ok(ch) = endpoint.connect().await {
            return ch;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("cannot connect to {addr}");
}

async fn watch(ch: Channel, service: &str) -> tonic::Streaming<tonic_health::pb::HealthCheckResponse> {
    let mut stream = HealthClient::new(ch)
        .watch(HealthCheckRequest { service: service.to_string() })
        .await
        .expect("Health/Watch")
        .into_inner();
    let first = stream.message().await.unwrap().unwrap();
    assert_eq!(first.status(), ServingStatus::Serving, "{service:?} before SIGTERM");
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_completes_in_flight_calls() {
    const DRAIN: u64 = 10;
    const HELD: usize = 8;
    let mut server = start(DRAIN);
    let ch = channel(server.addr).await;

    // A normal call works, and both health names are SERVING.
    let (tx, call) = held_call(ch.clone());
    tx.send(GetRulesRequest::default()).await.unwrap();
    drop(tx);
    call.await.unwrap().expect("GetRules before shutdown");
    let mut overall = watch(channel(server.addr).await, "").await;
    let mut liveness = watch(channel(server.addr).await, "liveness").await;

    // Calls in flight: the server has their HEADERS, not their messages.
    let held: Vec<_> = (0..HELD).map(|_| held_call(ch.clone())).collect();
    wait_in_flight(&server, HELD as u64).await;
    for (_, task) in &held {
        assert!(!task.is_finished(), "a held call finished before its message was sent");
    }

    sigterm(&server);
    let terminated = Instant::now();

    // Readiness' health name turns NOT_SERVING while the calls are still open.
    let update = tokio::time::timeout(Duration::from_secs(5), overall.message())
        .await
        .expect("a health update for \"\" within 5 s of SIGTERM")
        .expect("Watch(\"\") stream")
        .expect("Watch(\"\") message");
    assert_eq!(update.status(), ServingStatus::NotServing, "\"\" during the drain");
    // Then the Watch ends (it must not hold the drain) with UNAVAILABLE.
    let end = tokio::time::timeout(Duration::from_secs(5), overall.message())
        .await
        .expect("Watch(\"\") ends within 5 s of SIGTERM");
    match end {
        Err(status) => assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}"),
        Ok(other) => panic!("Watch(\"\") after NOT_SERVING: {other:?}"),
    }
    // Liveness never changes: its Watch ends without a NOT_SERVING message.
    let end = tokio::time::timeout(Duration::from_secs(5), liveness.message())
        .await
        .expect("Watch(liveness) ends within 5 s of SIGTERM");
    match end {
        Err(status) => assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}"),
        Ok(other) => panic!("liveness during the drain: {other:?}"),
    }
    assert!(server.child.try_wait().unwrap().is_none(), "exited with calls in flight");
    for (_, task) in &held {
        assert!(!task.is_finished(), "an in-flight call was cut off by SIGTERM");
    }

    // Let the in-flight calls finish: every one completes OK.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for (tx, _) in &held {
        tx.send(GetRulesRequest::default()).await.expect("the held call's stream is still open");
    }
    let mut ok = 0;
    for (tx, task) in held {
        drop(tx);
        let response = tokio::time::timeout(Duration::from_secs(5), task).await.expect("call done").unwrap();
        response.expect("an in-flight call failed during the drain");
        ok += 1;
    }
    assert_eq!(ok, HELD);

    // And the process exits cleanly, well within the bound.
    let (code, exited) = wait_exit(&mut server, Duration::from_secs(DRAIN + 5));
    assert_eq!(code, Some(0), "exit code after a clean drain");
    let took = exited - terminated;
    assert!(took < Duration::from_secs(DRAIN), "a clean drain took {took:?}, the bound is {DRAIN} s");
    eprintln!("drain: {HELD} in-flight calls completed; exit 0 {took:?} after SIGTERM");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_is_bounded() {
    const DRAIN: u64 = 2;
    let mut server = start(DRAIN);
    let ch = channel(server.addr).await;
    // A call that never sends its message would keep a naive drain waiting forever.
    let (_tx, stuck) = held_call(ch);
    wait_in_flight(&server, 1).await;
    assert!(!stuck.is_finished());

    sigterm(&server);
    let terminated = Instant::now();
    let (code, exited) = wait_exit(&mut server, Duration::from_secs(DRAIN + 5));
    let took = exited - terminated;
    assert!(took >= Duration::from_secs(DRAIN) - Duration::from_millis(100), "gave up early: {took:?}");
    assert!(took < Duration::from_secs(DRAIN + 2), "exit {took:?} after SIGTERM, the bound is {DRAIN} s");
    assert_eq!(code, Some(0), "exit code after a timed-out drain");
    let result = tokio::time::timeout(Duration::from_secs(5), stuck).await.expect("stuck call ended").unwrap();
    assert!(result.is_err(), "the stuck call cannot have succeeded");
    eprintln!("drain bound: exit {took:?} after SIGTERM with a call stuck, bound {DRAIN} s");
}
