//! The limits keep memory bounded without locking anyone out:
//! - calls that send their headers and the 5-byte gRPC prefix but never the message hold no
//!   in-flight slot, so a fresh client's calls all succeed while 16 × 16 of them are open,
//!   on the default threads and on one (tokio's current-thread scheduler);
//! - at the connection cap, a new connection gets in by closing the longest-idle one, and
//!   the health-only port answers whatever the main port's connections do;
//! - a churn of unused connections below the rate the cap recycles them keeps no fresh
//!   client out, and no churn fails a call of a client that calls every 200 ms;
//! - the `/metrics` accept loop backs off when file descriptors run out instead of spinning;
//! - a drain does not wait for a peer that never reads its answers;
//! - connections that never read their answers (receive window 0) leave slots free for a
//!   fresh client, and are closed once their answers are past the delivery deadline.

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::Frame;
use reddog::service::proto::GetRulesRequest;
use reddog::service::proto::red_dog_client::RedDogClient;
use tokio::io::AsyncWriteExt;
use tonic::transport::{Channel, Endpoint};

use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

use crate::common::*;

const RING: &str = r#"{"primary":"l","keys":{"l":"6161616161616161616161616161616161616161616161616161616161616161"}}"#;

/// The binary with this file's key ring and `args`, through `wrapper` (e.g. `prlimit`).
fn spawn_binary(wrapper: &[&str], args: &[&str]) -> ServerProcess {
    ServerProcess::builder()
        .wrapper(wrapper)
        .args(args)
        .env("REDDOG_KEY_RING", RING)
        .env("RUST_LOG", "warn")
        .log(Log::Keep)
        .spawn()
}

/// Starts a GetRules call that sends its headers and the 5-byte gRPC prefix of a 100-byte
/// message, then nothing more; the returned sender keeps it open.
fn stalled_call(ch: &Channel) -> tokio::sync::mpsc::Sender<Result<Frame<Bytes>, tonic::Status>> {
    partial_get_rules(ch, Bytes::from_static(&[0, 0, 0, 0, 100])).0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_calls_hold_no_slot_and_a_fresh_client_gets_in() {
    let server = spawn_binary(&[], &["--request-timeout-ms", "60000"]);
    stalled_calls_leave_room_for_a_fresh_client(&server).await;
}

/// On one thread the engine runs tokio's current-thread scheduler (what a pod limited to one
/// CPU gets by default): its start-up line says so, rounds play, and the stalled calls still
/// lock no one out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_one_thread_rounds_play_and_stalled_calls_lock_no_one_out() {
    let server = ServerProcess::builder()
        .args(&["--worker-threads", "1", "--request-timeout-ms", "60000"])
        .env("REDDOG_KEY_RING", RING)
        .env("RUST_LOG", "info")
        .log(Log::Keep)
        .spawn();
    server.wait_for_log("listening on", Duration::from_secs(30));
    let line = server.log_lines().into_iter().find(|l| l.contains("listening on")).unwrap();
    assert!(line.contains("worker_threads=1"), "{line}");
    let mut client = TestClient::connect(server.addr).await;
    for nonce in 0..4 {
        let played = client.play_round(req::round().nonce(nonce).raise(0)).await;
        assert_eq!(played.settled.results.len(), 1);
    }
    stalled_calls_leave_room_for_a_fresh_client(&server).await;
}

/// Opens 16 connections × 16 stalled calls, then requires 57 calls of a fresh client to succeed.
async fn stalled_calls_leave_room_for_a_fresh_client(server: &ServerProcess) {
    let mut stalled = Vec::new();
    for _ in 0..16 {
        let ch = channel(server.addr).await;
        for _ in 0..16 {
            stalled.push(stalled_call(&ch));
        }
    }
    // All 256 calls have reached the server (bounded wait on its own count).
    server.wait_for_metric("reddog_rpc_in_flight", 256.0, Duration::from_secs(30)).await;
    let mut fresh = connect(server.addr).await;
    let mut failures = Vec::new();
    for _ in 0..57 {
        if let Err(status) = fresh.get_rules(GetRulesRequest::default()).await {
            failures.push(status.code());
        }
    }
    assert!(failures.is_empty(), "a fresh client's calls failed: {failures:?}");
    drop(stalled);
}

/// A raw HTTP/2 connection: the preface and an empty SETTINGS frame, then nothing.
async fn idle_connection(addr: SocketAddr) -> tokio::net::TcpStream {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00").await.unwrap();
    tcp
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_at_the_cap_make_room_and_the_health_port_answers() {
    let mut s = settings(&ring_a());
    s.health_listen = Some("127.0.0.1:0".parse().unwrap());
    let app = reddog::service::Application::build(s).await.unwrap();
    let health_addr = app.health_addr().expect("a health listener");
    let cap = reddog::service::TransportLimits::default().max_connections;
    let server = TestServer::run(app);
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(idle_connection(server.addr).await);
    }
    assert!(idle.len() > cap);
    // A connection is displaced only once it has been idle this long (the time is the rule).
    tokio::time::sleep(reddog::testing::DISPLACE_MIN_IDLE).await;
    // A fresh client gets in (displacing the longest-idle connection) and every call works.
    let mut fresh = connect(server.addr).await;
    for _ in 0..20 {
        fresh
            .get_rules(GetRulesRequest::default())
            .await
            .expect("a fresh client's call with 300 idle connections open");
    }
    // The probes' port answers whatever the main port holds.
    let health = Endpoint::from_shared(format!("http://{health_addr}"))
        .unwrap()
        .connect()
        .await
        .expect("connect to the health port");
    let answer = HealthClient::new(health)
        .check(HealthCheckRequest { service: "liveness".into() })
        .await
        .expect("liveness on the health port");
    assert_eq!(answer.into_inner().status, 1);
    drop(idle);
    server.stop().await;
}

/// CPU seconds (user + system) of a process, from `/proc/<pid>/stat`.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 of stat (utime, stime) are 11 and 12 after the name.
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    let hz = String::from_utf8(Command::new("getconf").arg("CLK_TCK").output().unwrap().stdout)
        .unwrap()
        .trim()
        .parse::<f64>()
        .unwrap_or(100.0);
    ticks / hz
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_file_descriptors_the_metrics_listener_backs_off_instead_of_spinning() {
    let server = spawn_binary(&["prlimit", "--nofile=64:64"], &["--handshake-timeout-ms", "60000"]);
    // Silent connections to the gRPC port take every descriptor the server has left.
    let mut held = Vec::new();
    for _ in 0..80 {
        held.push(tokio::net::TcpStream::connect(server.addr).await.unwrap());
    }
    // Connections to /metrics wait in the backlog: each accept fails with EMFILE.
    for _ in 0..4 {
        held.push(tokio::net::TcpStream::connect(server.metrics).await.unwrap());
    }
    // The `/metrics` accept loop has hit EMFILE (its warning is the evidence; its counter
    // cannot be scraped without a descriptor).
    server.wait_for_log("accept failed; backing off", Duration::from_secs(30));
    let pid = server.child.id();
    let (cpu0, t0) = (cpu_secs(pid), Instant::now());
    // Kept: what is measured is the CPU the real-time server burns over a real second, so a
    // real second has to pass.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (cpu1, t1) = (cpu_secs(pid), Instant::now());
    let share = (cpu1 - cpu0) / (t1 - t0).as_secs_f64();
    eprintln!("out of file descriptors: the server used {:.1} % of a core", share * 100.0);
    assert!(share < 0.2, "the server used {:.0} % of a core while out of file descriptors", share * 100.0);
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_never_reads_its_answers_does_not_hold_the_drain() {
    let server = spawn_binary(&[], &["--drain-timeout-secs", "20"]);
    // A client that grants no flow-control window: its answers can never be sent.
    let deaf = Endpoint::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .initial_stream_window_size(0)
        .connect()
        .await
        .unwrap();
    let mut calls = Vec::new();
    for _ in 0..4 {
        let mut c = RedDogClient::new(deaf.clone());
        calls.push(tokio::spawn(async move { c.get_rules(GetRulesRequest::default()).await }));
    }
    // The server has answered all four (its own count); the answers are stuck behind the
    // peer's window.
    let answered = r#"reddog_rpc_requests_total{method="GetRules",code="OK"}"#;
    server.wait_for_metric(answered, 4.0, Duration::from_secs(30)).await;
    assert!(calls.iter().all(|c| !c.is_finished()));
    let started = Instant::now();
    let status = server.terminate().await;
    let took = started.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(took < Duration::from_secs(5), "the drain waited {took:?} for a peer that never reads");
    eprintln!("drain with a peer that never reads: {took:?}");
}

/// An attacker's connection that grants no flow-control window: 100 GetRules calls on it,
/// whose answers can never be sent. Returns when every call has ended (the server closed it).
async fn deaf_connection_with_calls(addr: SocketAddr, calls: usize) {
    let Ok(deaf) =
        Endpoint::from_shared(format!("http://{addr}")).unwrap().initial_stream_window_size(0).connect().await
    else {
        return;
    };
    let mut pending = tokio::task::JoinSet::new();
    for _ in 0..calls {
        let mut c = RedDogClient::new(deaf.clone());
        pending.spawn(async move { c.get_rules(GetRulesRequest::default()).await });
    }
    pending.join_all().await;
}

async fn non_reading_connections_lock_no_one_out(args: &[&str]) {
    let server = spawn_binary(&[], args);
    // Four attackers, each reconnecting as soon as the server closes its connection.
    let addr = server.addr;
    let attackers: Vec<_> = (0..4)
        .map(|_| {
            tokio::spawn(async move {
                loop {
                    deaf_connection_with_calls(addr, 100).await;
                }
            })
        })
        .collect();
    // The held slots show in the gauge (the issue: it read 0 while every slot was held).
    server.wait_for_metric("reddog_rpc_in_flight", 100.0, Duration::from_secs(30)).await;
    let health = HealthClient::new(channel(server.addr).await);
    let mut fresh = connect(server.addr).await;
    let (mut ok, mut failed) = (0, Vec::new());
    for _ in 0..20 {
        match tokio::time::timeout(Duration::from_secs(1), fresh.get_rules(GetRulesRequest::default())).await {
            Ok(Ok(_)) => ok += 1,
            Ok(Err(status)) => failed.push(format!("{:?}", status.code())),
            Err(_) => failed.push("no answer within 1 s".into()),
        }
        let serving = health.clone().check(HealthCheckRequest { service: String::new() }).await.unwrap();
        assert_eq!(serving.into_inner().status, 1, "health SERVING during the attack");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("fresh client beside 4 non-reading connections: {ok}/20 OK, failures {failed:?}");
    assert!(ok >= 18, "a fresh client got {ok}/20 answers within 1 s: {failed:?}");
    // Past the delivery deadline the attackers' connections were closed and their slots
    // released, each counted.
    let bound = reddog::testing::DELIVERY_DEADLINE * 2 + Duration::from_secs(5);
    server.wait_for_metric(r#"reddog_connections_closed_total{reason="undelivered"}"#, 1.0, bound).await;
    server.wait_for_metric("reddog_rpc_undelivered_total", 1.0, bound).await;
    for a in attackers {
        a.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_read_lock_no_one_out() {
    non_reading_connections_lock_no_one_out(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_read_lock_no_one_out_on_one_thread() {
    non_reading_connections_lock_no_one_out(&["--worker-threads", "1"]).await;
}

/// Commits seeds from 8 clients until one is refused for the audit trail's backlog (or, with
/// `each`, until each client made that many calls); panics if a call fails otherwise or
/// nothing stops it within 120 s. Returns the calls answered OK and whether one was refused.
async fn commit_until_audit_unavailable(addr: SocketAddr, round: &str, each: Option<u64>) -> (usize, bool) {
    use tonic_types::StatusExt;
    let refused = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut clients = tokio::task::JoinSet::new();
    for c in 0..8u64 {
        let refused = refused.clone();
        let round = round.to_string();
        clients.spawn(async move {
            let mut client = connect(addr).await;
            let mut ok = 0;
            for n in 0..each.unwrap_or(u64::MAX) {
                if refused.load(std::sync::atomic::Ordering::Acquire) || Instant::now() > deadline {
                    break;
                }
                let id = format!("{round}-{c}-{n}");
                match client.commit_seed(req::commit_seed().round(id).nonce(n)).await {
                    Ok(_) => ok += 1,
                    Err(status) => {
                        let reason = status.get_details_error_info().map(|i| i.reason);
                        assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
                        assert_eq!(reason.as_deref(), Some("AUDIT_UNAVAILABLE"), "{status:?}");
                        refused.store(true, std::sync::atomic::Ordering::Release);
                    }
                }
            }
            ok
        });
    }
    let ok: usize = clients.join_all().await.into_iter().sum();
    (ok, refused.load(std::sync::atomic::Ordering::Acquire))
}

/// The audit trail goes to stdout (the default). A consumer that stops reading fills the
/// pipe and then the sink's backlog: calls are refused (`AUDIT_UNAVAILABLE`), never answered
/// without their record; when it reads again, calls succeed again. Stalled once more (the
/// sink's writer stuck in a write), the trail cannot hold the shutdown: SIGTERM exits within
/// `--drain-timeout-secs` + 1 s, saying what it could not write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unread_audit_pipe_refuses_calls_recovers_and_does_not_hold_the_exit() {
    let gate = StdoutGate::default();
    let mut server = ServerProcess::builder()
        .args(&["--drain-timeout-secs", "3"])
        .env("REDDOG_KEY_RING", RING)
        .env("RUST_LOG", "warn")
        .log(Log::Keep)
        .stdout_gate(&gate)
        .spawn();
    gate.set_reading(false);
    let (answered, refused) = commit_until_audit_unavailable(server.addr, "stall-1", None).await;
    assert!(refused, "no AUDIT_UNAVAILABLE within 120 s ({answered} calls answered)");
    eprintln!("unread audit pipe: {answered} calls answered before AUDIT_UNAVAILABLE");
    gate.set_reading(true);
    // The sink's backlog drains in a few batches once the reader resumes.
    let mut client = connect(server.addr).await;
    let resumed = Instant::now();
    while let Err(status) = client.commit_seed(req::commit_seed().round("resumed").nonce(1)).await {
        assert!(resumed.elapsed() < Duration::from_secs(30), "still refused 30 s after the reader resumed: {status:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    eprintln!("unread audit pipe: calls succeed {:?} after the reader resumed", resumed.elapsed());
    gate.set_reading(false);
    // Enough records (about 0.4 MiB) to fill the pipe: the sink's writer is stuck in a write.
    commit_until_audit_unavailable(server.addr, "stall-2", Some(100)).await;
    let started = Instant::now();
    server.signal("TERM");
    let status = server.wait_exit(Duration::from_secs(10)).await;
    let took = started.elapsed();
    eprintln!("SIGTERM with an unread audit pipe: exit {status:?} after {took:?}");
    assert!(took < Duration::from_secs(4), "exit took {took:?} with --drain-timeout-secs 3");
    assert!(server.log_contains("exiting without the last records"), "{:?}", server.log_lines());
}

/// New connections that send the HTTP/2 preface and never call, opened by `per_tick` every
/// 10 ms until the task is aborted (the server closing some of them is part of the churn),
/// each kept open by the churner until `keep` newer ones are; counts the attempts in `opened`.
fn churn_unused_connections(
    addr: SocketAddr,
    per_tick: usize,
    keep: usize,
    opened: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut open = std::collections::VecDeque::new();
        let mut tick = tokio::time::interval(Duration::from_millis(10));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            for _ in 0..per_tick {
                opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Ok(mut tcp) = tokio::net::TcpStream::connect(addr).await else { continue };
                if tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00").await.is_ok()
                {
                    open.push_back(tcp);
                }
                if open.len() > keep {
                    open.pop_front();
                }
            }
        }
    })
}

/// At the cap, a connection that never carried a call is displaced once [`UNUSED_MIN_AGE`]
/// old, so the cap admits `max_connections / UNUSED_MIN_AGE` newcomers a second (1,280 at
/// the defaults) while full of unused connections:
/// - a churn below that rate (800 unused connections a second, the cap turned over several
///   times meanwhile) keeps no fresh client out: 16 of 16, each connecting and calling once;
/// - a churn above it (the churner unpaced) shares those admissions with the fresh clients,
///   so some are closed (printed, not asserted: the share depends on the churner's speed);
/// - through both, every call of a client that connected before and calls every 200 ms
///   succeeds (its connection, never idle for `DISPLACE_MIN_IDLE`, is not displaced; a
///   reconnect would have to get in beside the unpaced churn).
///
/// [`UNUSED_MIN_AGE`]: reddog::testing::UNUSED_MIN_AGE
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_churn_of_unused_connections_does_not_keep_fresh_clients_out() {
    const DISPLACED: &str = "reddog_connections_closed_total{reason=\"displaced\"}";
    let server = spawn_binary(&[], &[]);
    let addr = server.addr;
    let cap = reddog::service::TransportLimits::default().max_connections;
    let recycled_per_sec = cap as f64 / reddog::testing::UNUSED_MIN_AGE.as_secs_f64();
    let mut steady = connect(addr).await;
    steady.get_rules(GetRulesRequest::default()).await.expect("a call before the churn");
    // (calls made, their failures), kept outside the task that is aborted at the end.
    let steady_log = std::sync::Arc::new(std::sync::Mutex::new((0usize, Vec::<String>::new())));
    let log = steady_log.clone();
    let steady_calls = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let result = steady.get_rules(GetRulesRequest::default()).await;
            let mut log = log.lock().unwrap();
            log.0 += 1;
            if let Err(status) = result {
                log.1.push(format!("{:?}", status.code()));
            }
        }
    });
    let fresh_clients = || async {
        let mut failed = Vec::new();
        for _ in 0..16 {
            let call = async {
                let mut c = TestClient::new(Endpoint::from_shared(format!("http://{addr}")).unwrap().connect().await?);
                c.get_rules(GetRulesRequest::default()).await.map_err(|s| format!("{:?}", s.code()))?;
                Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
            };
            match tokio::time::timeout(Duration::from_secs(3), call).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failed.push(e.to_string()),
                Err(_) => failed.push("no answer within 3 s".into()),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        failed
    };

    // Paced: 8 every 10 ms. The churn fills the cap and turns it over before the clients come.
    let opened = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let churn = churn_unused_connections(addr, 8, 2 * cap, opened.clone());
    server.wait_for_metric(DISPLACED, cap as f64, Duration::from_secs(30)).await;
    let (displaced_before, opened_before, started) =
        (server.scrape(DISPLACED).await.unwrap(), opened.load(std::sync::atomic::Ordering::Relaxed), Instant::now());
    let failed = fresh_clients().await;
    let rate =
        (opened.load(std::sync::atomic::Ordering::Relaxed) - opened_before) as f64 / started.elapsed().as_secs_f64();
    let displaced = server.scrape(DISPLACED).await.unwrap() - displaced_before;
    churn.abort();
    eprintln!(
        "fresh clients beside a churn of {rate:.0} unused connections a second ({displaced} displaced meanwhile, cap {cap}): {}/16 in",
        16 - failed.len()
    );
    assert!(displaced >= 2.0 * cap as f64, "the churn turned the cap over less than twice: {displaced} displaced");
    assert!(rate < recycled_per_sec, "the paced churn ran at {rate:.0} a second, not below {recycled_per_sec}");
    assert!(failed.is_empty(), "fresh clients kept out: {failed:?}");

    // Unpaced: as many as the churner can open (per_tick far above what 10 ms allows).
    let opened = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let churn = churn_unused_connections(addr, 1_000_000, 2 * cap, opened.clone());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (opened_before, started) = (opened.load(std::sync::atomic::Ordering::Relaxed), Instant::now());
    let failed = fresh_clients().await;
    let rate =
        (opened.load(std::sync::atomic::Ordering::Relaxed) - opened_before) as f64 / started.elapsed().as_secs_f64();
    churn.abort();
    eprintln!(
        "fresh clients beside a churn of {rate:.0} unused connections a second (the cap recycles {recycled_per_sec:.0}): {}/16 in, closed: {failed:?}",
        16 - failed.len()
    );
    steady_calls.abort();
    let (calls, failures) = steady_log.lock().unwrap().clone();
    eprintln!("a client calling every 200 ms through both churns: {} of {calls} calls OK", calls - failures.len());
    assert!(calls >= 5, "the steady client made {calls} calls");
    assert!(failures.is_empty(), "the steady client's calls failed: {failures:?}");
}
