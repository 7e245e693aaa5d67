//! Transport limits and answers, on an in-process server ([`TestServer::spawn`]) with small
//! limits so each one is reached deterministically:
//! - the global cap sheds at once with RESOURCE_EXHAUSTED and recovers when calls finish,
//!   and one connection holds at most its share of the slots;
//! - a call that stalls is cut at the per-call timeout (DEADLINE_EXCEEDED);
//! - a call that waited past the queue bound before it could start is answered
//!   RESOURCE_EXHAUSTED (OVERLOADED), not run;
//! - a request tonic cannot decode is INVALID_ARGUMENT naming the field, an oversize one
//!   RESOURCE_EXHAUSTED with a QuotaFailure (tonic alone says INTERNAL / OUT_OF_RANGE);
//! - a connection that never sends the HTTP/2 preface is closed at the handshake deadline and
//!   does not hold the drain; an idle HTTP/2 connection is closed at the idle deadline; at
//!   the connection cap a new connection of the peer holding the most closes its longest-idle
//!   one, never one that had a call within the last second nor one used only for health
//!   checks, while a new peer gets in by closing a connection of the peer holding the most;
//! - a peer whose connection was closed for leaving its answers unread gets no slot while
//!   penalized, and another peer is served meanwhile;
//! - token refusals are counted by reason while the caller sees one answer;
//! - start-up refuses nonsense settings with a message naming them.

use std::time::{Duration, Instant};

use bytes::{Buf, BufMut};
use reddog::service::proto::{self, GetRulesRequest};
use reddog::service::{Application, KeyRingSource, Settings};
use reddog::testing::{DISPLACE_MIN_IDLE, HEALTH_DISPLACE_MIN_IDLE, RETIRE_GRACE, RETIRE_MIN_AGE, RETIRE_MIN_CALLS};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic::{Code, Status};
use tonic_types::StatusExt;

use crate::common::*;

/// A codec that sends and receives message bytes as they are, so a test can send bytes that
/// are not a valid protobuf message.
#[derive(Clone, Copy, Default)]
struct Raw;

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining()).to_vec()))
    }
}

impl Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;
    fn encoder(&mut self) -> Raw {
        Raw
    }
    fn decoder(&mut self) -> Raw {
        Raw
    }
}

async fn raw_call(ch: Channel, method: &'static str, bytes: Vec<u8>) -> Result<Vec<u8>, Status> {
    let mut grpc = tonic::client::Grpc::new(ch);
    grpc.ready().await.map_err(|e| Status::unavailable(e.to_string()))?;
    grpc.unary(tonic::Request::new(bytes), PathAndQuery::from_static(method), Raw)
        .await
        .map(tonic::Response::into_inner)
}

fn error_reason(status: &Status) -> String {
    status.get_error_details().error_info().map(|i| i.reason.clone()).unwrap_or_default()
}

/// 127.0.0.`last`: on loopback every such address is another peer to the server.
fn loopback(last: u8) -> std::net::IpAddr {
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, last))
}

/// A channel from `source` whose peer grants no flow-control window: the server can never
/// send its answers, so each call it has answered keeps its slot until the channel is dropped
/// or the server closes it (and penalizes `source`, which is why it is not the test's own
/// address).
async fn deaf_channel(addr: std::net::SocketAddr, source: std::net::IpAddr) -> Channel {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .local_address(Some(source))
        .initial_stream_window_size(0)
        .connect()
        .await
        .unwrap()
}

/// Starts a GetRules call on `ch` in the background.
fn background_call(ch: Channel) -> tokio::task::JoinHandle<Result<tonic::Response<proto::GetRulesResponse>, Status>> {
    tokio::spawn(
        async move { proto::red_dog_client::RedDogClient::new(ch).get_rules(GetRulesRequest::default()).await },
    )
}

/// Keeps a GetRules in flight from `source` whose answer cannot be sent, until aborted: each
/// on a fresh channel granting no window, called again when the server closes that channel
/// (its answer undelivered past `DELIVERY_DEADLINE`) or refuses the call (`source` penalized
/// meanwhile). Dropping the task closes it.
fn deaf_caller(addr: std::net::SocketAddr, source: std::net::IpAddr) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let mut client = proto::red_dog_client::RedDogClient::new(deaf_channel(addr, source).await);
            let _ = client.get_rules(GetRulesRequest::default()).await;
        }
    })
}

/// Calls GetRules until it is shed (bounded: 30 s); the answer that was and how long that
/// call took.
async fn until_shed(c: &TestClient) -> (Status, Duration) {
    let shed = &std::sync::Mutex::new(None);
    eventually_async(Duration::from_secs(30), "a call shed", || async move {
        let started = Instant::now();
        let refused = c.clone().get_rules(req::get_rules()).await.err();
        *shed.lock().unwrap() = refused.map(|s| (s, started.elapsed()));
        shed.lock().unwrap().is_some()
    })
    .await;
    shed.lock().unwrap().take().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_global_cap_sheds_at_once_and_recovers() {
    let mut s = settings(&ring_a());
    s.limits.max_in_flight = 2;
    s.limits.max_in_flight_per_connection = 2;
    let server = TestServer::spawn(s).await;
    let ch = channel(server.addr).await;
    let c = TestClient::new(ch.clone());
    // Two calls hold both slots, from two peers (the cap is global, not per connection or
    // peer; one peer takes no more than half of what is free): their answers cannot be sent
    // to peers that grant no window. The server closes such a connection within 2 s, so each
    // caller calls again on a new one (once its penalty is over).
    let held = [deaf_caller(server.addr, loopback(3)), deaf_caller(server.addr, loopback(4))];
    let shed_before = server.metric("reddog_load_shed_total").expect("registered at 0");
    let (shed, took) = until_shed(&c).await;
    assert_eq!(shed.code(), Code::ResourceExhausted, "{shed:?}");
    assert_eq!(error_reason(&shed), "OVERLOADED");
    assert!(shed.get_error_details().retry_info().is_some());
    // Promptly: the shed call did not wait for a slot.
    assert!(took < Duration::from_millis(500), "shedding took {took:?}");
    assert!(server.metric("reddog_load_shed_total").unwrap() >= shed_before + 1.0);
    // Health is not behind the cap.
    let mut health = tonic_health::pb::health_client::HealthClient::new(ch.clone());
    let h = health
        .check(tonic_health::pb::HealthCheckRequest { service: String::new() })
        .await
        .expect("health while RedDog calls are shed");
    assert_eq!(h.into_inner().status, 1);
    // The peers holding the slots go away, and then calls are admitted again.
    for caller in held {
        caller.abort();
    }
    let c = &c;
    eventually_async(Duration::from_secs(10), "a call admitted again once the load dropped", || async move {
        c.clone().get_rules(req::get_rules()).await.is_ok()
    })
    .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_connection_cannot_hold_more_than_its_share_of_slots() {
    let mut s = settings(&ring_a());
    s.limits.max_in_flight = 8;
    s.limits.max_in_flight_per_connection = 2;
    let server = TestServer::spawn(s).await;
    // Five calls on one connection whose answers can never be sent: two take its share of
    // the slots and wait, three are shed at once.
    let deaf = deaf_channel(server.addr, loopback(3)).await;
    let mut calls: Vec<_> = (0..5).map(|_| background_call(deaf.clone())).collect();
    eventually(Duration::from_secs(30), "3 of the 5 calls shed", || {
        calls.iter().filter(|c| c.is_finished()).count() >= 3
    })
    .await;
    let (mut shed, mut cut) = (0, Vec::new());
    for call in std::mem::take(&mut calls) {
        if !call.is_finished() {
            calls.push(call);
            continue;
        }
        match call.await.unwrap() {
            Err(status) if status.code() == Code::ResourceExhausted => {
                assert_eq!(error_reason(&status), "OVERLOADED", "{status:?}");
                shed += 1;
            }
            // Reached only on a machine stalled past DELIVERY_DEADLINE: the server closed
            // the connection of the admitted calls, whose answers it could not send.
            Err(status) => cut.push(format!("{:?}", status.code())),
            Ok(_) => panic!("an answer the peer could not take arrived"),
        }
    }
    assert_eq!(shed, 3, "shed; still waiting: {}, cut: {cut:?}", calls.len());
    assert_eq!(calls.len() + cut.len(), 2, "the two admitted calls wait (or were cut with their connection)");
    // ... while another connection's calls are admitted.
    let mut other = server.client().await;
    for _ in 0..5 {
        other.get_rules(GetRulesRequest::default()).await.expect("another connection's call");
    }
    for call in calls {
        call.abort();
    }
    drop(deaf);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_call_is_cut_at_the_request_timeout() {
    let mut s = settings(&ring_a());
    s.limits.request_timeout = Duration::from_millis(300);
    let server = TestServer::spawn(s).await;
    let (_tx, call) = held_call(channel(server.addr).await);
    let started = Instant::now();
    let status = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the stalled call ends within 5 s")
        .unwrap()
        .expect_err("a call without its request message cannot succeed");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert_eq!(error_reason(&status), "REQUEST_TIMEOUT");
    assert!(started.elapsed() >= Duration::from_millis(250), "{:?}", started.elapsed());
    server.stop().await;
}

/// The queue bound counts the wait for a thread, not for the request message: a call whose
/// message comes well after the bound (a slow client, or a drain test's held call) is run,
/// not shed; `reddog_rpc_queue_wait_seconds` counts it. (The shed itself, with its
/// `OVERLOADED` details, is unit-tested on paused time in `src/service/edge/guard.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_message_comes_after_the_queue_bound_is_run() {
    let bound = Duration::from_millis(200);
    let mut s = settings(&ring_a());
    s.limits.max_queue_wait = bound;
    let server = TestServer::spawn(s).await;
    let (tx, call) = held_call(channel(server.addr).await);
    // The time is the rule itself here (the bound is measured on the monotonic clock).
    tokio::time::sleep(bound * 2).await;
    tx.send(GetRulesRequest::default()).await.unwrap();
    drop(tx);
    call.await.unwrap().expect("a call whose message came late is run");
    server.stop().await;
}

/// Starts a GetRules call whose message announces `announced` bytes and sends `sent` of them,
/// then nothing more; the returned sender keeps the stream open.
fn partial_message(
    ch: &Channel,
    announced: u32,
    sent: usize,
) -> (tokio::sync::mpsc::Sender<Result<http_body::Frame<bytes::Bytes>, Status>>, tokio::task::JoinHandle<()>) {
    let mut first = vec![0u8];
    first.extend_from_slice(&announced.to_be_bytes());
    first.resize(5 + sent, b'a');
    partial_get_rules(ch, bytes::Bytes::from(first))
}

/// GetRules with a table id of `n` bytes: a whole message, refused by validation if it gets
/// that far.
fn get_rules_with_table_id_of(n: usize) -> Vec<u8> {
    let mut msg = vec![0x0a];
    let mut len = n;
    while len >= 0x80 {
        msg.push((len as u8 & 0x7f) | 0x80);
        len >>= 7;
    }
    msg.push(len as u8);
    msg.resize(msg.len() + n, b'a');
    msg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_bytes_still_arriving_are_bounded_across_calls_and_given_back() {
    let mut s = settings(&ring_a());
    s.limits.max_pending_request_bytes = 70_000;
    let server = TestServer::spawn(s).await;
    let ch = channel(server.addr).await;
    // A call holding 50,000 bytes of a 60,000-byte message. Once the server has read them, a
    // 30,000-byte message does not fit beside them. (If the large message is read first, the
    // held call is the one refused: it is started again.)
    let other = channel(server.addr).await;
    let (mut held, mut call) = partial_message(&ch, 60_000, 50_000);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < deadline, "a large message was never refused beside the held one");
        if call.is_finished() {
            (held, call) = partial_message(&ch, 60_000, 50_000);
        }
        let status = raw_call(other.clone(), "/reddog.v1.RedDog/GetRules", get_rules_with_table_id_of(30_000)).await;
        let refused =
            matches!(&status, Err(s) if s.code() == Code::ResourceExhausted && error_reason(s) == "OVERLOADED");
        if refused && !call.is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A small call still fits.
    connect(server.addr).await.get_rules(GetRulesRequest::default()).await.expect("a small call beside the held bytes");
    // The held call ends (its stream is reset): its bytes are given back, and the large
    // message gets past the bound (to validation, which refuses a 30,000-byte table id).
    drop(held);
    call.abort();
    eventually_async(Duration::from_secs(10), "the held bytes given back", || {
        let other = other.clone();
        async move {
            let status = raw_call(other, "/reddog.v1.RedDog/GetRules", get_rules_with_table_id_of(30_000)).await;
            matches!(&status, Err(s) if s.code() != Code::ResourceExhausted)
        }
    })
    .await;
    server.stop().await;
}

#[tokio::test]
async fn undecodable_and_oversize_requests_get_precise_codes() {
    let server = TestServer::spawn(settings(&ring_a())).await;
    let ch = channel(server.addr).await;
    const COMMIT: &str = "/reddog.v1.RedDog/CommitSeed";
    // round_id (field 1, a string) holding bytes that are not UTF-8.
    let bad_utf8 = vec![0x0a, 0x02, 0xff, 0xfe];
    // round_id sent as a varint (wire type 0) instead of length-delimited.
    let wrong_wire_type = vec![0x08, 0x01];
    // round_id announcing 5 bytes, carrying 1.
    let truncated = vec![0x0a, 0x05, b'a'];
    for (what, bytes) in [("bad UTF-8", bad_utf8), ("wrong wire type", wrong_wire_type), ("truncated", truncated)] {
        let status = raw_call(ch.clone(), COMMIT, bytes).await.expect_err(what);
        assert_eq!(status.code(), Code::InvalidArgument, "{what}: {status:?}");
        let fields: Vec<String> = status
            .get_error_details()
            .bad_request()
            .expect("BadRequest details")
            .field_violations
            .iter()
            .map(|v| v.field.clone())
            .collect();
        assert_eq!(fields, vec!["round_id".to_string()], "{what}: {status:?}");
        eprintln!(
            "bad input: CommitSeed {what} -> {:?} field={fields:?} message={:?}",
            status.code(),
            status.message()
        );
        assert_eq!(error_reason(&status), "MALFORMED_REQUEST");
        // The codec's mark for the guard's count never leaves the server.
        assert!(status.metadata().get("reddog-undecodable").is_none(), "{what}: {status:?}");
    }
    let undecodable =
        |code: &str| server.metric(&format!("reddog_undecodable_requests_total{{code=\"{code}\"}}")).unwrap();
    assert_eq!(undecodable("INVALID_ARGUMENT"), 3.0, "each message prost could not decode counted once");
    // A call with no request message at all (tonic alone: INTERNAL "Missing request message").
    let (tx, empty) = held_call(ch.clone());
    drop(tx);
    let status = empty.await.unwrap().unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert_eq!(status.get_error_details().bad_request().unwrap().field_violations[0].field, "request");
    eprintln!(
        "bad input: GetRules with no request message -> {:?} field=request message={:?}",
        status.code(),
        status.message()
    );
    // Over the 64 KiB limit: RESOURCE_EXHAUSTED with a QuotaFailure.
    let mut big = vec![0x0a];
    let n = 70_000u32;
    let mut v = n;
    while v >= 0x80 {
        big.push((v as u8) | 0x80);
        v >>= 7;
    }
    big.push(v as u8);
    big.extend(std::iter::repeat_n(b'x', n as usize));
    let status = raw_call(ch.clone(), COMMIT, big).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert_eq!(error_reason(&status), "REQUEST_TOO_LARGE");
    let details = status.get_error_details();
    let info = details.error_info().unwrap();
    assert_eq!(info.metadata.get("field").map(String::as_str), Some("request"), "{info:?}");
    assert_eq!(info.metadata.get("limit_bytes").map(String::as_str), Some("65536"), "{info:?}");
    eprintln!(
        "bad input: CommitSeed 70,000-byte round_id -> {:?} reason={} message={:?}",
        status.code(),
        error_reason(&status),
        status.message()
    );
    assert!(status.get_error_details().quota_failure().is_some(), "{status:?}");
    // A valid message on the same channel still works.
    raw_call(ch, COMMIT, vec![0x0a, 0x01, b'r']).await.expect("a valid CommitSeed");
    // This server's counts, exactly: three undecodable messages and the empty call, the
    // message over the limit.
    assert_eq!((undecodable("INVALID_ARGUMENT"), undecodable("RESOURCE_EXHAUSTED")), (4.0, 1.0));
    server.stop().await;
}

#[tokio::test]
async fn token_refusals_are_counted_by_reason_and_answered_alike() {
    let server = TestServer::spawn(settings(&ring_a())).await;
    let mut c = server.client().await;
    let series = |reason: &str| format!("reddog_token_rejections_total{{method=\"StartRound\",reason=\"{reason}\"}}");
    // The server's own registry: registered at 0, and only this test's calls count.
    for reason in ["expired", "unknown_key", "tampered", "malformed", "wrong_kind", "too_old"] {
        assert_eq!(server.metric(&series(reason)), Some(0.0), "{reason} registered at 0");
    }
    let expired = commitment_token(&ring_a(), SEED, 0, -1_000);
    let foreign = commitment_token(&ring_json("zz", &[("zz", KEY_B)]), SEED, 0, 60_000);
    let mut tampered = commitment_token(&ring_a(), SEED, 0, 60_000);
    *tampered.last_mut().unwrap() ^= 1;
    let malformed = b"not a token".to_vec();
    let mut answers = Vec::new();
    for token in [expired, foreign, tampered, malformed] {
        let status = c.start_round(req::start_round(token).bets(&[500])).await.unwrap_err();
        answers.push((status.code(), status.message().to_string(), status.details().to_vec()));
    }
    eprintln!(
        "bad input: StartRound with an expired / foreign-key / tampered / malformed commitment token -> {:?} {:?} (all four identical)",
        answers[0].0, answers[0].1
    );
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "one answer for every reason: {answers:?}");
    for reason in ["expired", "unknown_key", "tampered", "malformed"] {
        assert_eq!(server.metric(&series(reason)), Some(1.0), "{reason} counted once");
    }
    assert_eq!(server.metric(&series("wrong_kind")), Some(0.0));
    assert_eq!(server.metric(&series("too_old")), Some(0.0));
    server.stop().await;
}

/// Reads until the server closes the connection; how long that took.
async fn until_closed(mut tcp: tokio::net::TcpStream, limit: Duration) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    tokio::time::timeout(limit, async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the server kept the connection open for {limit:?}"));
    started.elapsed()
}

#[tokio::test]
async fn a_connection_without_preface_is_closed_at_the_handshake_deadline() {
    let mut s = settings(&ring_a());
    s.limits.handshake_timeout = Duration::from_millis(300);
    let server = TestServer::spawn(s).await;
    let silent = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let took = until_closed(silent, Duration::from_secs(5)).await;
    assert!(took >= Duration::from_millis(250), "closed after {took:?}");
    // Not HTTP/2 at all: closed at once.
    let mut http1 = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    http1.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    until_closed(http1, Duration::from_secs(5)).await;
    // The server still serves.
    server.client().await.get_rules(GetRulesRequest::default()).await.unwrap();
    server.stop().await;
}

#[tokio::test]
async fn an_idle_connection_is_closed_at_the_idle_deadline() {
    let mut s = settings(&ring_a());
    s.limits.idle_timeout = Duration::from_millis(400);
    let server = TestServer::spawn(s).await;
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    // The preface and an empty SETTINGS frame, then nothing.
    tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00").await.unwrap();
    let took = until_closed(tcp, Duration::from_secs(5)).await;
    assert!(took >= Duration::from_millis(300), "closed after {took:?}");
    // A connection in use is not idle: a call in progress since before a raw connection was
    // opened still completes after that raw connection was closed as idle.
    let mut c = server.client().await;
    let (tx, held) = held_call(channel(server.addr).await);
    c.get_rules(GetRulesRequest::default()).await.unwrap();
    let mut idle = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    idle.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00").await.unwrap();
    until_closed(idle, Duration::from_secs(5)).await;
    tx.send(GetRulesRequest::default()).await.unwrap();
    drop(tx);
    tokio::time::timeout(Duration::from_secs(5), held)
        .await
        .unwrap()
        .unwrap()
        .expect("a call in progress keeps its connection past the idle deadline");
    server.stop().await;
}

#[tokio::test]
async fn connections_in_their_handshake_do_not_hold_the_drain() {
    let mut s = settings(&ring_a());
    s.limits.handshake_timeout = Duration::from_secs(60);
    s.drain_timeout = Duration::from_secs(30);
    let server = TestServer::spawn(s).await;
    let silent: Vec<_> = futures_connect(server.addr, 20).await;
    // Give the accept loop time to take them (bounded wait on an observable: a call works).
    server.client().await.get_rules(GetRulesRequest::default()).await.unwrap();
    let started = Instant::now();
    server.stop().await;
    assert!(started.elapsed() < Duration::from_secs(3), "drain took {:?}", started.elapsed());
    for tcp in silent {
        until_closed(tcp, Duration::from_secs(2)).await;
    }
}

#[tokio::test]
async fn at_the_cap_a_new_connection_closes_the_longest_idle_one_but_not_one_in_use() {
    let mut s = settings(&ring_a());
    s.limits.max_connections = 2;
    let server = TestServer::spawn(s).await;
    // The oldest: a raw HTTP/2 connection that never starts a call.
    let mut oldest = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    oldest.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00").await.unwrap();
    let mut b = proto::red_dog_client::RedDogClient::new(channel(server.addr).await);
    b.get_rules(GetRulesRequest::default()).await.unwrap();
    // Both have been busy (or accepted) within the last second: a third connection is closed,
    // neither of them.
    assert!(
        proto::red_dog_client::RedDogClient::new(channel(server.addr).await)
            .get_rules(GetRulesRequest::default())
            .await
            .is_err(),
        "a connection at the cap displaced one idle for less than {DISPLACE_MIN_IDLE:?}"
    );
    b.get_rules(GetRulesRequest::default()).await.expect("the connection in use kept");
    // The time is the rule itself here (the transport's clock is the monotonic one).
    tokio::time::sleep(DISPLACE_MIN_IDLE + Duration::from_millis(100)).await;
    // Now a third connection gets in; the longest-idle one is closed for it.
    let mut c = proto::red_dog_client::RedDogClient::new(channel(server.addr).await);
    c.get_rules(GetRulesRequest::default()).await.expect("a new connection at the cap");
    until_closed(oldest, Duration::from_secs(5)).await;
    b.get_rules(GetRulesRequest::default()).await.expect("the busier connection kept");
    eventually_connects(server.addr).await;
    server.stop().await;
}

/// At the cap, a newcomer whose own peer holds every connection, none idle, gets in by
/// retiring the one piling calls up: it is closed gracefully (GOAWAY; its calls, which never
/// end here, are cut [`RETIRE_GRACE`] later), its place goes to the newcomer, and the
/// connection calling one at a time is kept. Before [`RETIRE_MIN_AGE`] nothing is retired.
#[tokio::test]
async fn at_the_cap_a_newcomer_of_the_same_peer_retires_the_connection_piling_calls_up() {
    const RETIRED: &str = r#"reddog_connections_closed_total{reason="retired"}"#;
    let mut s = settings(&ring_a());
    s.limits.max_connections = 2;
    let server = TestServer::spawn(s).await;
    let piling = channel(server.addr).await;
    let stalled: Vec<_> = (0..RETIRE_MIN_CALLS + 2)
        .map(|_| partial_get_rules(&piling, bytes::Bytes::from_static(&[0, 0, 0, 0, 100])))
        .collect();
    let mut steady = proto::red_dog_client::RedDogClient::new(channel(server.addr).await);
    steady.get_rules(GetRulesRequest::default()).await.unwrap();
    // Both younger than the rule: a newcomer is closed, neither of them retired.
    let mut early = proto::red_dog_client::RedDogClient::new(channel(server.addr).await);
    assert!(early.get_rules(GetRulesRequest::default()).await.is_err(), "a newcomer got in before {RETIRE_MIN_AGE:?}");
    assert_eq!(server.metric(RETIRED), Some(0.0));
    // The time is the rule itself here (the transport's clock is the monotonic one).
    tokio::time::sleep(RETIRE_MIN_AGE + Duration::from_millis(100)).await;
    // The steady client called within the last second (not idle), one call at a time.
    steady.get_rules(GetRulesRequest::default()).await.unwrap();
    let started = Instant::now();
    let mut newcomer = proto::red_dog_client::RedDogClient::new(channel(server.addr).await);
    newcomer.get_rules(GetRulesRequest::default()).await.expect("the newcomer gets the retired connection's place");
    let waited = started.elapsed();
    assert_eq!(server.metric(RETIRED), Some(1.0));
    assert_eq!(server.metric(r#"reddog_connections_closed_total{reason="displaced"}"#), Some(0.0));
    // Its calls never end, so the retired connection was closed at the grace's end.
    assert!(waited >= RETIRE_GRACE - Duration::from_millis(100), "in after {waited:?}, before the grace ended");
    for (_, call) in stalled {
        tokio::time::timeout(Duration::from_secs(5), call)
            .await
            .expect("a call of the retired connection still open")
            .unwrap();
    }
    steady.get_rules(GetRulesRequest::default()).await.expect("the connection calling one at a time kept");
    newcomer.get_rules(GetRulesRequest::default()).await.unwrap();
    server.stop().await;
}

/// A RedDog client on a new connection from `source`.
async fn client_from(
    addr: std::net::SocketAddr,
    source: std::net::IpAddr,
) -> proto::red_dog_client::RedDogClient<Channel> {
    let ch = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .local_address(Some(source))
        .connect()
        .await
        .unwrap();
    proto::red_dog_client::RedDogClient::new(ch)
}

/// At the cap, a newcomer from another peer gets in by closing a connection of the peer
/// holding the most, even one in use; a newcomer of that peer does not displace the others.
#[tokio::test]
async fn at_the_cap_a_new_peer_displaces_the_peer_holding_the_most_even_busy() {
    let mut s = settings(&ring_a());
    s.limits.max_connections = 3;
    let server = TestServer::spawn(s).await;
    // One peer holds every connection, each busy (a call within the last second).
    let mut busy = Vec::new();
    for _ in 0..3 {
        let mut c = client_from(server.addr, loopback(3)).await;
        c.get_rules(GetRulesRequest::default()).await.expect("a call within the cap");
        busy.push(c);
    }
    let displaced_before = server.metric(r#"reddog_connections_closed_total{reason="displaced"}"#).unwrap();
    let mut newcomer = client_from(server.addr, loopback(4)).await;
    newcomer.get_rules(GetRulesRequest::default()).await.expect("a new peer at the cap gets in");
    assert!(server.metric(r#"reddog_connections_closed_total{reason="displaced"}"#).unwrap() >= displaced_before + 1.0);
    // The big peer's own newcomer finds only connections in use (its own, and the new
    // peer's, which holds fewer): it is closed, and the new peer keeps its place.
    let mut again = client_from(server.addr, loopback(3)).await;
    assert!(again.get_rules(GetRulesRequest::default()).await.is_err(), "a newcomer of the biggest peer got in");
    newcomer.get_rules(GetRulesRequest::default()).await.expect("the new peer's connection kept");
    drop(busy);
    server.stop().await;
}

/// A peer whose connection was closed for leaving its answers unread gets no slot, on its
/// other connections too, while penalized (RESOURCE_EXHAUSTED with the time left as the
/// retry delay); another peer is served throughout, and the peer is served again after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_leaves_answers_unread_waits_while_another_is_served() {
    let server = TestServer::spawn(settings(&ring_a())).await;
    let mut reading = client_from(server.addr, loopback(5)).await;
    reading.get_rules(GetRulesRequest::default()).await.expect("before the offence");
    let penalties_before = server.metric("reddog_peer_penalties_total").unwrap();
    // Its deaf connections are closed past the delivery deadline, each reconnecting: the
    // penalty grows with each episode (1 s, 2 s, 4 s, ...).
    let deaf = deaf_caller(server.addr, loopback(5));
    let mut other = client_from(server.addr, loopback(6)).await;
    let refused = &std::sync::Mutex::new(None);
    let reading_ref = &reading;
    eventually_async(Duration::from_secs(30), "a call of the penalized peer refused", || async move {
        let mut c = reading_ref.clone();
        match c.get_rules(GetRulesRequest::default()).await {
            Err(status) if status.code() == Code::ResourceExhausted => {
                *refused.lock().unwrap() = Some(status);
                true
            }
            _ => false,
        }
    })
    .await;
    let status = refused.lock().unwrap().take().unwrap();
    assert_eq!(error_reason(&status), "OVERLOADED", "{status:?}");
    let details = status.get_error_details();
    let left: u64 = details.error_info().unwrap().metadata["penalty_ms"].parse().unwrap();
    assert!((1..=64_000).contains(&left), "{status:?}");
    assert_eq!(details.retry_info().and_then(|r| r.retry_delay), Some(Duration::from_millis(left)));
    assert!(server.metric("reddog_peer_penalties_total").unwrap() >= penalties_before + 1.0);
    other.get_rules(GetRulesRequest::default()).await.expect("another peer is served meanwhile");
    deaf.abort();
    // Once its penalty is over, the peer is served again (the longest possible here: 64 s,
    // but a few episodes at most have passed).
    eventually_async(Duration::from_secs(70), "the penalized peer served again", || async move {
        reading_ref.clone().get_rules(GetRulesRequest::default()).await.is_ok()
    })
    .await;
    server.stop().await;
}

/// A channel over a connector that counts the TCP connections it opens: a channel whose
/// connection the server closed opens a new one for its next call.
async fn counted_channel(addr: std::net::SocketAddr) -> (Channel, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let connector = CountingConnector { addr, opened: Default::default() };
    let opened = connector.opened.clone();
    let ch = tonic::transport::Endpoint::from_static("http://reddog").connect_with_connector(connector).await.unwrap();
    (ch, opened)
}

/// See [`counted_channel`].
#[derive(Clone)]
struct CountingConnector {
    addr: std::net::SocketAddr,
    opened: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl tower::Service<tonic::codegen::http::Uri> for CountingConnector {
    type Response = hyper_util::rt::TokioIo<tokio::net::TcpStream>;
    type Error = std::io::Error;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: tonic::codegen::http::Uri) -> Self::Future {
        self.opened.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let addr = self.addr;
        Box::pin(async move { tokio::net::TcpStream::connect(addr).await.map(hyper_util::rt::TokioIo::new) })
    }
}

/// At the cap, a connection whose calls have all been health checks is not displaced after a
/// second idle, as RedDog connections are, but only after `HEALTH_DISPLACE_MIN_IDLE`: a prober
/// that checks less than once a second keeps its connection through a connection flood (the
/// health connection is the one idle longest here, so before that rule it was the one closed).
#[tokio::test]
async fn at_the_cap_a_connection_used_only_for_health_checks_is_not_displaced() {
    assert!(HEALTH_DISPLACE_MIN_IDLE >= Duration::from_secs(30), "{HEALTH_DISPLACE_MIN_IDLE:?}");
    let mut s = settings(&ring_a());
    s.limits.max_connections = 2;
    let server = TestServer::spawn(s).await;
    let (probe, probe_connections) = counted_channel(server.addr).await;
    let mut health = tonic_health::pb::health_client::HealthClient::new(probe);
    let check = tonic_health::pb::HealthCheckRequest { service: String::new() };
    assert_eq!(health.check(check.clone()).await.unwrap().into_inner().status, 1);
    let (client, client_connections) = counted_channel(server.addr).await;
    let mut b = proto::red_dog_client::RedDogClient::new(client);
    b.get_rules(GetRulesRequest::default()).await.unwrap();
    // Both idle past the RedDog threshold (the time is the rule itself here).
    tokio::time::sleep(DISPLACE_MIN_IDLE + Duration::from_millis(100)).await;
    // A newcomer gets in by closing the RedDog connection, not the health one idle longer.
    let mut c = proto::red_dog_client::RedDogClient::new(channel(server.addr).await);
    c.get_rules(GetRulesRequest::default()).await.expect("a new connection at the cap");
    for _ in 0..3 {
        let status = health.check(check.clone()).await.expect("health over the probe's connection");
        assert_eq!(status.into_inner().status, 1);
    }
    assert_eq!(probe_connections.load(std::sync::atomic::Ordering::SeqCst), 1, "the probe's connection was closed");
    // The RedDog connection was the one closed: a call after it needs a new connection (the
    // channel may first fail one call on the closed one).
    for _ in 0..3 {
        if client_connections.load(std::sync::atomic::Ordering::SeqCst) >= 2 {
            break;
        }
        let _ = b.get_rules(GetRulesRequest::default()).await;
    }
    assert!(client_connections.load(std::sync::atomic::Ordering::SeqCst) >= 2, "the RedDog connection was kept");
    server.stop().await;
}

/// A new connection plays a call within 5 s (retried while the server frees a slot).
async fn eventually_connects(addr: std::net::SocketAddr) {
    let endpoint = &tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap();
    eventually_async(Duration::from_secs(5), "a slot freed for a new connection", || async move {
        match endpoint.connect().await {
            Ok(ch) => TestClient::new(ch).get_rules(req::get_rules()).await.is_ok(),
            Err(_) => false,
        }
    })
    .await;
}

async fn futures_connect(addr: std::net::SocketAddr, n: usize) -> Vec<tokio::net::TcpStream> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    v
}

#[tokio::test]
async fn nonsense_settings_are_refused_with_a_message_naming_them() {
    type Change = Box<dyn Fn(&mut Settings)>;
    let cases: Vec<(&str, Change)> = vec![
        ("commitment-ttl-secs", Box::new(|s| s.commitment_ttl = Duration::ZERO)),
        ("drain-timeout-secs", Box::new(|s| s.drain_timeout = Duration::ZERO)),
        ("max-in-flight", Box::new(|s| s.limits.max_in_flight = 0)),
        ("max-in-flight-per-connection", Box::new(|s| s.limits.max_in_flight_per_connection = 300)),
        ("max-pending-request-bytes", Box::new(|s| s.limits.max_pending_request_bytes = 1000)),
        ("max-concurrent-streams", Box::new(|s| s.limits.max_concurrent_streams_per_connection = 0)),
        ("request-timeout-ms", Box::new(|s| s.limits.request_timeout = Duration::ZERO)),
        ("max-queue-wait-ms", Box::new(|s| s.limits.max_queue_wait = Duration::ZERO)),
        (
            "metrics-listen",
            Box::new(|s| {
                s.listen = "127.0.0.1:50999".parse().unwrap();
                s.metrics_listen = Some("0.0.0.0:50999".parse().unwrap());
            }),
        ),
    ];
    for (name, change) in cases {
        let mut s = settings(&ring_a());
        change(&mut s);
        let err = Application::build(s).await.unwrap_err().to_string();
        assert!(err.contains(name), "{name}: {err}");
    }
    // Key rings: each refusal names the problem, none shows key text.
    let k = "7c".repeat(32);
    for (json, expect) in [
        (format!(r#"{{"primary":"a","keys":{{"a":"{k}","a":"{KEY_B}"}}}}"#), "appears twice"),
        (format!(r#"{{"primary":"a","keys":{{"a":"{}"}}}}"#, "0".repeat(64)), "all zeros"),
        (format!(r#"{{"primary":"a","keys":{{"a":"{k}","b":"{k}"}}}}"#), "same key"),
    ] {
        let err = Application::build(Settings::local(KeyRingSource::json(&json))).await.unwrap_err().to_string();
        assert!(err.contains(expect), "{err}");
        assert!(!err.contains(&k[..16]) && !err.contains(&KEY_B[..16]), "{err}");
    }
}

/// The binary refuses bad settings at start-up with exit code 1 and a message naming them,
/// and has no flag that would put the key ring on its command line.
#[test]
fn the_binary_refuses_bad_settings_and_an_inline_key_ring_flag() {
    let run = |args: &[&str], env: &[(&str, &str)]| ServerProcess::builder().args(args).envs(env).refused();
    let (status, err) = run(&["--commitment-ttl-secs", "0"], &[]);
    assert!(!status.success());
    assert!(err.contains("commitment-ttl-secs"), "{err}");
    let ring = ring_a();
    let (status, err) = run(&["--key-ring", &ring], &[]);
    assert!(!status.success());
    assert!(err.contains("--key-ring"), "{err}");
    let dup = format!(r#"{{"primary":"a","keys":{{"a":"{KEY_A}","a":"{KEY_B}"}}}}"#);
    let (status, err) = run(&[], &[("REDDOG_KEY_RING", &dup)]);
    assert!(!status.success());
    assert!(err.contains("appears twice"), "{err}");
    assert!(!err.contains(KEY_A) && !err.contains(KEY_B), "{err}");
}
