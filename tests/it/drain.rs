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

use std::time::{Duration, Instant};

use reddog::service::proto::GetRulesRequest;

use crate::common::{ServerProcess, channel, held_call};
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

const RING: &str = r#"{"primary":"d","keys":{"d":"3333333333333333333333333333333333333333333333333333333333333333"}}"#;

fn start(drain_timeout_secs: u64) -> ServerProcess {
    ServerProcess::builder()
        .args(&["--drain-timeout-secs", &drain_timeout_secs.to_string()])
        .env("REDDOG_KEY_RING", RING)
        .env("RUST_LOG", "info")
        .spawn()
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
    // The server counts them in progress: the drain has something to wait for.
    server.wait_for_metric("reddog_rpc_in_flight", HELD as f64, Duration::from_secs(30)).await;
    for (_, task) in &held {
        assert!(!task.is_finished(), "a held call finished before its message was sent");
    }

    server.signal("TERM");
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

    // The drain is under way (NOT_SERVING was seen above): let the in-flight calls finish;
    // every one completes OK.
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
    let code = server.wait_exit(Duration::from_secs(DRAIN + 5)).await.code();
    let exited = Instant::now();
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
    server.wait_for_metric("reddog_rpc_in_flight", 1.0, Duration::from_secs(30)).await;
    assert!(!stuck.is_finished());

    server.signal("TERM");
    let terminated = Instant::now();
    let code = server.wait_exit(Duration::from_secs(DRAIN + 5)).await.code();
    let exited = Instant::now();
    let took = exited - terminated;
    assert!(took >= Duration::from_secs(DRAIN) - Duration::from_millis(100), "gave up early: {took:?}");
    assert!(took < Duration::from_secs(DRAIN + 2), "exit {took:?} after SIGTERM, the bound is {DRAIN} s");
    assert_eq!(code, Some(0), "exit code after a timed-out drain");
    let result = tokio::time::timeout(Duration::from_secs(5), stuck).await.expect("stuck call ended").unwrap();
    assert!(result.is_err(), "the stuck call cannot have succeeded");
    eprintln!("drain bound: exit {took:?} after SIGTERM with a call stuck, bound {DRAIN} s");
}
