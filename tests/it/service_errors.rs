//! Every bad input gets a precise status whose `google.rpc` details name the field and whose
//! `ErrorInfo.reason` is a value of the proto's `ErrorReason`; every unusable token gets one
//! identical answer.

use std::time::Duration;

use crate::common::*;
use reddog::service::proto::{self, Action, ErrorReason, SeatBet};
use tonic::{Code, Status};
use tonic_types::StatusExt;

const TTL: Duration = Duration::from_secs(600);

/// The fields the status's details name (BadRequest fields, PreconditionFailure subjects).
fn fields(status: &Status) -> Vec<String> {
    let d = status.get_error_details();
    let mut out: Vec<String> =
        d.bad_request().map(|b| b.field_violations.iter().map(|v| v.field.clone()).collect()).unwrap_or_default();
    if let Some(p) = d.precondition_failure() {
        out.extend(p.violations.iter().map(|v| v.subject.clone()));
    }
    out
}

#[track_caller]
fn assert_status<T: std::fmt::Debug>(result: Result<T, Status>, code: Code, field: &str) -> Status {
    let status = result.expect_err("the call must fail");
    assert_eq!(status.code(), code, "{status:?}");
    assert_eq!(fields(&status), vec![field.to_string()], "{status:?}");
    let info = status.get_error_details().error_info().cloned().expect("ErrorInfo detail");
    assert_eq!(info.domain, "reddog.v1");
    let reason = ErrorReason::from_str_name(&info.reason);
    assert!(reason.is_some_and(|r| r != ErrorReason::Unspecified), "{:?} is not an ErrorReason", info.reason);
    status
}

/// The status's `ErrorInfo.reason`, as the generated enum.
fn reason(status: &Status) -> ErrorReason {
    ErrorReason::from_str_name(&status.get_error_details().error_info().unwrap().reason).unwrap()
}

type Mutation = Box<dyn Fn(&mut proto::StartRoundRequest)>;

/// A valid StartRound as the generated struct: the cases below break one field of it each,
/// which a builder would not let them express.
fn good_start(nonce: u64) -> proto::StartRoundRequest {
    req::start_round(commitment_token(&ring_a(), SEED, nonce, 60_000)).nonce(nonce).bets(&[500, 500]).build()
}

#[tokio::test]
async fn start_round_refuses_each_bad_field_precisely() {
    let server = TestServer::start(&ring_a(), TTL).await;
    let mut c = server.client().await;
    use ErrorReason as R;
    let cases: Vec<(Mutation, Code, &str, ErrorReason)> = vec![
        (Box::new(|r| r.commitment_token.clear()), Code::InvalidArgument, "commitment_token", R::MissingField),
        (Box::new(|r| r.client_seed.clear()), Code::InvalidArgument, "client_seed", R::MissingField),
        (Box::new(|r| r.round_id.clear()), Code::InvalidArgument, "round_id", R::MissingField),
        (Box::new(|r| r.client_seed = "x".repeat(1025)), Code::InvalidArgument, "client_seed", R::InvalidClientSeed),
        (Box::new(|r| r.round_id = "r".repeat(129)), Code::InvalidArgument, "round_id", R::InvalidRoundId),
        (Box::new(|r| r.round_id = "bad\nid".into()), Code::InvalidArgument, "round_id", R::InvalidRoundId),
        (Box::new(|r| r.table_id = "a b".into()), Code::InvalidArgument, "table_id", R::InvalidTableId),
        (Box::new(|r| r.player_limits = None), Code::InvalidArgument, "player_limits", R::MissingField),
        (
            Box::new(|r| r.player_limits = limits(0, 1000)),
            Code::OutOfRange,
            "player_limits.min_bet",
            R::InvalidPlayerLimits,
        ),
        (
            Box::new(|r| r.player_limits = limits(2000, 1000)),
            Code::OutOfRange,
            "player_limits.max_bet",
            R::InvalidPlayerLimits,
        ),
        (
            Box::new(|r| r.player_limits = limits(40_000, 50_000)),
            Code::FailedPrecondition,
            "player_limits",
            R::LimitsDoNotOverlap,
        ),
        (Box::new(|r| r.seats.clear()), Code::OutOfRange, "seats", R::SeatCount),
        (Box::new(|r| r.seats = vec![SeatBet { bet: 500 }; 8]), Code::OutOfRange, "seats", R::SeatCount),
        (Box::new(|r| r.seats[1].bet = 499), Code::OutOfRange, "seats[1].bet", R::BetOutsideLimits),
        (Box::new(|r| r.seats[0].bet = 30_001), Code::OutOfRange, "seats[0].bet", R::BetOutsideLimits),
        (Box::new(|r| r.seats[0].bet = 0), Code::OutOfRange, "seats[0].bet", R::BetOutsideLimits),
        (
            Box::new(|r| {
                r.player_limits = limits(500, 1000);
                r.seats[1].bet = 2000;
            }),
            Code::OutOfRange,
            "seats[1].bet",
            R::BetOutsideLimits,
        ),
        (
            Box::new(|r| r.sandbox_cards = vec!["7h".into(), "7d".into(), "7s".into()]),
            Code::FailedPrecondition,
            "sandbox_cards",
            R::NotASandboxTable,
        ),
    ];
    for (i, (mutate, code, field, want)) in cases.iter().enumerate() {
        let mut req = good_start(i as u64);
        mutate(&mut req);
        let status = assert_status(c.start_round(req).await, *code, field);
        assert!(!status.message().is_empty(), "case {i}");
        assert_eq!(reason(&status), *want, "case {i}: {status:?}");
    }
    println!("StartRound: {} bad requests, each refused with its field and reason", cases.len());
    // The unchanged request works.
    c.start_round(good_start(0)).await.unwrap();
    // A client seed of exactly 1024 bytes is fine.
    let mut req = good_start(0);
    req.client_seed = "é".repeat(512);
    c.start_round(req).await.unwrap();
    server.stop().await;
}

/// Tampered, truncated, foreign-key, expired, wrong-kind and garbage tokens: one answer.
#[tokio::test]
async fn every_unusable_token_gets_the_same_answer() {
    let server = TestServer::start(&ring_a(), TTL).await;
    let mut c = server.client().await;
    let good = commitment_token(&ring_a(), SEED, 1, 60_000);
    let round = c.start_round(good_start(1)).await.unwrap().round_token;
    let mut tampered = good.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 0x40;
    let mut tampered_mid = good.clone();
    tampered_mid[good.len() / 2] ^= 1;
    let foreign = commitment_token(&ring_json("a", &[("a", KEY_B)]), SEED, 1, 60_000);
    let unknown_id = commitment_token(&ring_json("zz", &[("zz", KEY_A)]), SEED, 1, 60_000);
    let expired = commitment_token(&ring_a(), SEED, 1, -1);
    let bad_commitments: Vec<(&str, Vec<u8>)> = vec![
        ("tampered tag", tampered),
        ("tampered body", tampered_mid),
        ("truncated", good[..good.len() - 5].to_vec()),
        ("truncated header", good[..2].to_vec()),
        ("foreign key", foreign.clone()),
        ("unknown key id", unknown_id),
        ("expired", expired),
        ("round token as commitment", round.clone()),
        ("garbage", b"not a token at all".to_vec()),
        ("too long", vec![1u8; 5000]),
    ];
    let mut answers = Vec::new();
    for (what, token) in bad_commitments {
        let mut req = good_start(1);
        req.commitment_token = token;
        let status = assert_status(c.start_round(req).await, Code::InvalidArgument, "commitment_token");
        assert_eq!(reason(&status), ErrorReason::InvalidToken, "{what}");
        answers.push((what, status.message().to_string(), status.details().to_vec()));
    }
    for (what, msg, details) in &answers {
        assert_eq!((msg, details), (&answers[0].1, &answers[0].2), "{what} must look like every other bad token");
    }
    // Round tokens: Decide and Settle answer alike.
    let mut tampered_round = round.clone();
    tampered_round[10] ^= 1;
    let bad_rounds: Vec<Vec<u8>> = vec![tampered_round, round[..round.len() - 1].to_vec(), good.clone(), b"x".to_vec()];
    let foreign_round = {
        let other = TestServer::start(&ring_json("a", &[("a", KEY_B)]), TTL).await;
        let mut oc = other.client().await;
        let mut req = good_start(1);
        req.commitment_token = foreign;
        let t = oc.start_round(req).await.unwrap().round_token;
        other.stop().await;
        t
    };
    let mut round_answers = Vec::new();
    for token in bad_rounds.into_iter().chain([foreign_round]) {
        let s = assert_status(c.settle(req::settle(token.clone())).await, Code::InvalidArgument, "round_token");
        round_answers.push((s.message().to_string(), s.details().to_vec()));
        let s = assert_status(c.decide(req::decide(token).stand(0)).await, Code::InvalidArgument, "round_token");
        round_answers.push((s.message().to_string(), s.details().to_vec()));
    }
    assert!(round_answers.iter().all(|a| a == &round_answers[0]));
    assert_eq!(round_answers[0].0, answers[0].1, "the same message for every token");
    server.stop().await;
}

#[tokio::test]
async fn decide_refuses_bad_decisions_all_or_nothing() {
    let server = TestServer::start(&ring_a(), TTL).await;
    let mut c = server.client().await;
    let start = |want: Want| {
        let nonce = nonce_for(want);
        req::start_round(commitment_token(&ring_a(), SEED, nonce, 60_000)).nonce(nonce).bets(&[500, 500])
    };
    let open = c.start_round(start(Want::Outside)).await.unwrap().round_token;
    let on_open = || req::decide(open.clone());
    use ErrorReason as R;
    let refused = |s: &Status, want: ErrorReason| assert_eq!(reason(s), want, "{s:?}");
    refused(&assert_status(c.decide(on_open()).await, Code::InvalidArgument, "decisions"), R::MissingField);
    refused(
        &assert_status(
            c.decide(on_open().action(0, Action::Unspecified)).await,
            Code::InvalidArgument,
            "decisions[0].action",
        ),
        R::InvalidAction,
    );
    refused(
        &assert_status(
            c.decide(on_open().raise(0).action_number(1, 99)).await,
            Code::InvalidArgument,
            "decisions[1].action",
        ),
        R::InvalidAction,
    );
    refused(&assert_status(c.decide(on_open().raise(2)).await, Code::OutOfRange, "decisions[0].seat"), R::UnknownSeat);
    refused(
        &assert_status(c.decide(on_open().raise(1).stand(1)).await, Code::InvalidArgument, "decisions[1].seat"),
        R::DuplicateSeat,
    );
    refused(
        &assert_status(c.decide(on_open().raise(0).round("someone-else")).await, Code::InvalidArgument, "round_id"),
        R::InvalidRoundId,
    );
    refused(
        &assert_status(c.decide(req::decide(vec![]).raise(0)).await, Code::InvalidArgument, "round_token"),
        R::MissingField,
    );
    // Seat 0 decides; deciding it again on the new token is refused, and a batch that
    // includes it changes nothing (seat 1 may still decide afterwards).
    let after = c.decide(on_open().raise(0)).await.unwrap().round_token;
    let again = || req::decide(after.clone());
    refused(
        &assert_status(c.decide(again().stand(0)).await, Code::FailedPrecondition, "seats[0].decision"),
        R::SeatAlreadyDecided,
    );
    assert_status(c.decide(again().raise(1).raise(0)).await, Code::FailedPrecondition, "seats[0].decision");
    let done = c.decide(again().stand(1)).await.unwrap();
    assert!(!done.round.unwrap().awaiting_decisions);
    // A complete round takes no decision.
    refused(
        &assert_status(
            c.decide(req::decide(done.round_token).raise(1)).await,
            Code::FailedPrecondition,
            "seats[1].decision",
        ),
        R::DecisionsClosed,
    );
    // Nor do pairs and consecutive hands.
    for want in [Want::PairNoMatch, Want::Consecutive] {
        let t = c.start_round(start(want)).await.unwrap().round_token;
        let s = assert_status(c.decide(req::decide(t).raise(0)).await, Code::FailedPrecondition, "seats[0].decision");
        refused(&s, R::NoDecisionOnThisHand);
    }
    server.stop().await;
}

#[tokio::test]
async fn settle_and_commit_refuse_bad_fields() {
    let server = TestServer::start(&ring_a(), TTL).await;
    let mut c = server.client().await;
    assert_status(c.settle(req::settle(vec![])).await, Code::InvalidArgument, "round_token");
    let t = c.start_round(good_start(3)).await.unwrap().round_token;
    assert_status(c.settle(req::settle(t.clone()).round("round-4")).await, Code::InvalidArgument, "round_id");
    c.settle(req::settle(t).round("round-3")).await.unwrap();
    assert_status(c.commit_seed(req::commit_seed().round("x".repeat(200))).await, Code::InvalidArgument, "round_id");
    server.stop().await;
}

#[tokio::test]
async fn an_expired_commitment_from_commit_seed_is_refused() {
    // 1 s is the shortest lifetime the settings accept; the engine reads the test's clock.
    let clock = TestClock::new();
    let mut s = settings(&ring_a());
    s.commitment_ttl = Duration::from_secs(1);
    s.clock = clock.clock();
    let server = TestServer::spawn(s).await;
    let mut c = server.client().await;
    let committed = c.commit_seed(req::commit_seed()).await.unwrap();
    assert_eq!(committed.expires_at_unix_ms, clock.now_ms() + 1000);
    let mut req = good_start(0);
    req.commitment_token = committed.commitment_token;
    // Usable up to its expiry instant, refused one millisecond after.
    clock.advance(Duration::from_millis(1000));
    c.start_round(req.clone()).await.expect("usable at its expiry instant");
    clock.advance(Duration::from_millis(1));
    assert_status(c.start_round(req).await, Code::InvalidArgument, "commitment_token");
    server.stop().await;
}
