//! Shared helpers for the service integration tests: an in-process server on 127.0.0.1:0,
//! a generated tonic client, test key rings, and commitment tokens sealed over known seeds so
//! a test can search for the deal it needs.
#![allow(dead_code)]

mod client;
mod server;

pub use client::*;
pub use server::*;

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reddog::fairness::{DealInputs, FairShoe, ServerSeed};
use reddog::game::Table;
use reddog::game::{Card, CardSource, Decks, HandClass};
use reddog::service::proto::{self, Limits};
use reddog::service::{Currency, KeyRing, NamedTable};
use reddog::testing::{TokenKind, commitment_payload};
use tonic::transport::Channel;

pub const KEY_A: &str = "1111111111111111111111111111111111111111111111111111111111111111";
pub const KEY_B: &str = "2222222222222222222222222222222222222222222222222222222222222222";

pub fn ring_json(primary: &str, keys: &[(&str, &str)]) -> String {
    let keys: Vec<String> = keys.iter().map(|(id, k)| format!("\"{id}\":\"{k}\"")).collect();
    format!("{{\"primary\":\"{primary}\",\"keys\":{{{}}}}}", keys.join(","))
}

pub fn ring_a() -> String {
    ring_json("a", &[("a", KEY_A)])
}

/// Polls `check` every 10 ms until it is true; panics after `limit`.
pub async fn eventually(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    eventually_async(limit, what, || std::future::ready(check())).await
}

/// [`eventually`] with an async check (e.g. a scrape of `/metrics`). The one polling loop of
/// the tests: every wait for a condition goes through it.
pub async fn eventually_async<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A wall clock a test moves by hand, for `Settings::clock`: a commitment expires when the
/// test says, without waiting.
#[derive(Clone, Debug)]
pub struct TestClock(std::sync::Arc<std::sync::atomic::AtomicI64>);

impl TestClock {
    /// Starts at the system's time now.
    pub fn new() -> TestClock {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
        TestClock(std::sync::Arc::new(now.into()))
    }

    /// Starts at `unix_ms`.
    pub fn at(unix_ms: i64) -> TestClock {
        TestClock(std::sync::Arc::new(unix_ms.into()))
    }

    pub fn now_ms(&self) -> i64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn advance(&self, by: Duration) {
        self.0.fetch_add(by.as_millis() as i64, std::sync::atomic::Ordering::SeqCst);
    }

    /// The engine's view of this clock.
    pub fn clock(&self) -> reddog::service::Clock {
        let t = self.clone();
        reddog::service::Clock::from_fn(move || t.now_ms())
    }
}

impl Default for TestClock {
    fn default() -> TestClock {
        TestClock::new()
    }
}

/// A channel to `addr`, retried (bounded: 5 s) while the server comes up.
pub async fn channel(addr: SocketAddr) -> Channel {
    let endpoint = &tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap();
    let connected = &std::sync::Mutex::new(None);
    eventually_async(Duration::from_secs(5), &format!("a connection to {addr}"), || async move {
        endpoint.connect().await.map(|ch| *connected.lock().unwrap() = Some(ch)).is_ok()
    })
    .await;
    connected.lock().unwrap().take().unwrap()
}

/// A [`TestClient`] connected to `addr`.
pub async fn connect(addr: SocketAddr) -> TestClient {
    TestClient::connect(addr).await
}

/// The default table of a test server: one deck, the standard paytable and limits, no
/// currency configured (`XXX`, exponent 2).
pub fn default_table() -> NamedTable {
    NamedTable { id: "default".into(), table: Table::default(), currency: Currency::unspecified(), sandbox: false }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

/// A commitment token over a known seed bound to round `round-{nonce}` and `nonce` at the
/// default table ([`default_table`]), issued now and usable for `ttl_ms` (negative: expired
/// already), sealed with `ring` exactly as `CommitSeed` would.
pub fn commitment_token(ring: &str, seed: [u8; 32], nonce: u64, ttl_ms: i64) -> Vec<u8> {
    commitment_token_at(ring, seed, nonce, ttl_ms, &default_table())
}

/// [`commitment_token`] for a round at `table` (its rules travel in the token).
pub fn commitment_token_at(ring: &str, seed: [u8; 32], nonce: u64, ttl_ms: i64, table: &NamedTable) -> Vec<u8> {
    let now = now_ms();
    let payload = commitment_payload(seed, &format!("round-{nonce}"), nonce, table, now, now + ttl_ms);
    KeyRing::from_json(ring).unwrap().seal(TokenKind::Commitment, &payload).unwrap()
}

/// [`commitment_token`], usable for a minute.
pub fn bound_commitment_token(ring: &str, seed: [u8; 32], nonce: u64) -> Vec<u8> {
    commitment_token(ring, seed, nonce, 60_000)
}

/// The first three cards the fair shoe deals.
pub fn deal(seed: [u8; 32], client_seed: &str, nonce: u64) -> [Card; 3] {
    let s = ServerSeed::from_bytes(seed);
    let mut shoe =
        FairShoe::new(&DealInputs { server_seed: &s, client_seed: client_seed.as_bytes(), nonce, decks: Decks::ONE });
    [shoe.draw(), shoe.draw(), shoe.draw()]
}

/// What a test wants the deal to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    ThreeOfAKind,
    PairNoMatch,
    Consecutive,
    Between,
    Matches,
    Outside,
}

pub fn classify(cards: [Card; 3]) -> Want {
    let (a, b, t) = (cards[0].rank().value(), cards[1].rank().value(), cards[2].rank().value());
    match HandClass::of(cards[0], cards[1]) {
        HandClass::Pair if t == a => Want::ThreeOfAKind,
        HandClass::Pair => Want::PairNoMatch,
        HandClass::Consecutive => Want::Consecutive,
        HandClass::NonConsecutive(_) if t > a.min(b) && t < a.max(b) => Want::Between,
        HandClass::NonConsecutive(_) if t == a || t == b => Want::Matches,
        HandClass::NonConsecutive(_) => Want::Outside,
    }
}

pub const SEED: [u8; 32] = [42; 32];
pub const CLIENT_SEED: &str = "player-chosen seed";

/// The first nonce whose deal (under [`SEED`], [`CLIENT_SEED`]) is `want`.
pub fn nonce_for(want: Want) -> u64 {
    (0..1_000_000u64).find(|&n| classify(deal(SEED, CLIENT_SEED, n)) == want).expect("a deal of every kind exists")
}

pub fn limits(min_bet: u64, max_bet: u64) -> Option<Limits> {
    Some(Limits { min_bet, max_bet })
}

/// Starts a GetRules call whose request message is held back until it is sent on the returned
/// sender (dropping the sender without sending ends the call without a message): the server
/// has accepted the stream and its handler waits meanwhile — a call deterministically "in
/// flight", without any test hook in the server.
pub fn held_call(
    ch: Channel,
) -> (
    tokio::sync::mpsc::Sender<proto::GetRulesRequest>,
    tokio::task::JoinHandle<Result<proto::GetRulesResponse, tonic::Status>>,
) {
    let (tx, rx) = tokio::sync::mpsc::channel::<proto::GetRulesRequest>(1);
    let task = tokio::spawn(async move {
        let mut grpc = tonic::client::Grpc::new(ch);
        grpc.ready().await.map_err(|e| tonic::Status::unavailable(e.to_string()))?;
        let codec = tonic_prost::ProstCodec::<proto::GetRulesRequest, proto::GetRulesResponse>::default();
        let path = tonic::codegen::http::uri::PathAndQuery::from_static("/reddog.v1.RedDog/GetRules");
        grpc.client_streaming(tonic::Request::new(tokio_stream::wrappers::ReceiverStream::new(rx)), path, codec)
            .await
            .map(tonic::Response::into_inner)
    });
    (tx, task)
}

/// Starts a GetRules call whose body begins with `first` (gRPC prefix and any message bytes)
/// and then sends nothing more. The returned sender keeps the stream open; the handle ends
/// with the call.
pub fn partial_get_rules(
    ch: &Channel,
    first: bytes::Bytes,
) -> (tokio::sync::mpsc::Sender<Result<http_body::Frame<bytes::Bytes>, tonic::Status>>, tokio::task::JoinHandle<()>) {
    use tower::Service;
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.try_send(Ok(http_body::Frame::data(first))).unwrap();
    let body = http_body_util::StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx));
    let request = http::Request::builder()
        .method("POST")
        .uri("http://reddog/reddog.v1.RedDog/GetRules")
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(tonic::body::Body::new(body))
        .unwrap();
    let mut ch = ch.clone();
    let call = tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| ch.poll_ready(cx)).await;
        let _ = ch.call(request).await;
    });
    (tx, call)
}
