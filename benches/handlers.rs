//! The engine's own work per RPC: each `RedDog` handler called directly (no transport), with
//! the Prometheus recorder installed and no log subscriber. Compare with the cost of the same
//! call through gRPC against a no-op server: `scripts/bench-grpc.sh` (docs/BENCHMARKS.md).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use reddog::game::Table;
use reddog::service::proto::red_dog_server::RedDog;
use reddog::service::proto::{self, Action};
use reddog::service::{AuditOptions, AuditSink};
use reddog::service::{EngineConfig, KeyRing, RedDogService};
use reddog::testing::TokenKind;
use reddog::testing::{RoundPayload, RoundState};
use tonic::Request;

/// The token key both services share (so one round token works with either).
fn ring(signing: bool) -> KeyRing {
    let signing =
        if signing { format!(r#","signing":{{"id":"s1","secret":"{}"}}"#, "5a".repeat(32)) } else { String::new() };
    KeyRing::from_json(&format!(r#"{{"primary":"k1","keys":{{"k1":"{}"}}{signing}}}"#, "42".repeat(32))).expect("ring")
}

/// The service, with an Ed25519 signing key in its ring when `signing` (signed receipts at
/// CommitSeed and Settle, docs/FAIRNESS.md 4.7).
fn service(signing: bool) -> RedDogService {
    let tables = reddog::service::Tables::single(Table::default());
    // Every record is written (serialised, hashed, batched), to a sink that drops the bytes.
    let audit = AuditSink::start(std::io::sink(), AuditOptions::local(), &tables).expect("audit sink");
    RedDogService::new(EngineConfig {
        tables,
        audit,
        key_ring: ring(signing),
        commitment_ttl: Duration::from_secs(24 * 3600),
        clock: reddog::service::Clock::system(),
        metrics: Default::default(),
    })
}

fn handlers(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let svc = service(false);
    let signed = service(true);
    // A round that awaits decisions, with two seats.
    let (start, round_token) = (0u64..)
        .find_map(|nonce| {
            let committed = rt
                .block_on(svc.commit_seed(Request::new(proto::CommitSeedRequest {
                    round_id: "bench-round-0001".into(),
                    nonce,
                    table_id: String::new(),
                })))
                .ok()?
                .into_inner();
            let start = proto::StartRoundRequest {
                sandbox_cards: vec![],
                commitment_token: committed.commitment_token,
                client_seed: "bench client seed".into(),
                nonce,
                round_id: "bench-round-0001".into(),
                table_id: String::new(),
                seats: vec![proto::SeatBet { bet: 1000 }, proto::SeatBet { bet: 2500 }],
                player_limits: Some(proto::Limits { min_bet: 500, max_bet: 30_000 }),
            };
            let started = rt.block_on(svc.start_round(Request::new(start.clone()))).ok()?.into_inner();
            started.round.as_ref()?.awaiting_decisions.then_some((start, started.round_token))
        })
        .expect("a non-consecutive deal");
    let decide = proto::DecideRequest {
        round_token: round_token.clone(),
        decisions: vec![proto::SeatDecision { seat: 0, action: Action::Raise as i32 }],
        round_id: String::new(),
    };
    let settle = proto::SettleRequest { round_token, round_id: String::new() };

    let receipt = rt.block_on(signed.settle(Request::new(settle.clone()))).expect("settle").into_inner();
    assert!(!receipt.signature.is_empty(), "the signed service signs Settle");

    let mut g = c.benchmark_group("handler");
    g.bench_function("GetRules", |b| {
        b.iter(|| rt.block_on(svc.get_rules(Request::new(proto::GetRulesRequest::default()))).map(black_box))
    });
    g.bench_function("CommitSeed", |b| {
        b.iter(|| {
            rt.block_on(svc.commit_seed(Request::new(proto::CommitSeedRequest {
                round_id: "bench-round-0001".into(),
                nonce: 1,
                table_id: String::new(),
            })))
            .map(black_box)
        })
    });
    g.bench_function("StartRound", |b| {
        b.iter(|| rt.block_on(svc.start_round(Request::new(start.clone()))).map(black_box))
    });
    g.bench_function("Decide", |b| b.iter(|| rt.block_on(svc.decide(Request::new(decide.clone()))).map(black_box)));
    g.bench_function("Settle", |b| b.iter(|| rt.block_on(svc.settle(Request::new(settle.clone()))).map(black_box)));
    // The same two calls with a signing key: the difference is one Ed25519 signature each.
    g.bench_function("CommitSeed signed", |b| {
        b.iter(|| {
            rt.block_on(signed.commit_seed(Request::new(proto::CommitSeedRequest {
                round_id: "bench-round-0001".into(),
                nonce: 1,
                table_id: String::new(),
            })))
            .map(black_box)
        })
    });
    g.bench_function("Settle signed", |b| {
        b.iter(|| rt.block_on(signed.settle(Request::new(settle.clone()))).map(black_box))
    });
    g.finish();

    // Sealing a round token (the payload's protobuf encoding, then AES-GCM-SIV): the part
    // of Decide and Settle that writes their answer's token.
    let ring = ring(false);
    let payload: RoundPayload = ring.open(TokenKind::Round, &settle.round_token).expect("a genuine round token");
    let state = RoundState::from_payload(payload).expect("a genuine round");
    let mut g = c.benchmark_group("token");
    g.bench_function("seal_round", |b| b.iter(|| ring.seal(TokenKind::Round, &black_box(&state).to_payload())));
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = handlers
}
criterion_main!(benches);
