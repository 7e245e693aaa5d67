//! Statelessness: rounds started on one process finish on another holding the same key ring
//! after the first is killed with SIGKILL; a key rotation with rounds in flight fails none;
//! replicas whose clocks disagree judge commitments by their own clock and settle any round.

use std::time::Duration;

use crate::common::*;
use reddog::fairness::{AnyReveal, parse_reveal};

/// Starts `n` rounds (CommitSeed + StartRound, and for non-consecutive hands a decision for
/// seat 0 only), returning (round id, commitment, latest token, awaiting decisions).
async fn start_rounds(c: &mut TestClient, n: u64, tag: &str) -> Vec<(String, String, Vec<u8>, bool)> {
    let mut out = Vec::new();
    for i in 0..n {
        let id = format!("{tag}-{i}");
        let committed = c.commit_seed(req::commit_seed().round(&id).nonce(i)).await.unwrap();
        let start = req::start_round(committed.commitment_token).round(&id).nonce(i).bets(&[500, 700, 900]);
        let started = c.start_round(start).await.unwrap();
        let mut token = started.round_token;
        let awaiting = started.round.unwrap().awaiting_decisions;
        if awaiting {
            token = c.decide(req::decide(token).raise(0).round(&id)).await.unwrap().round_token;
        }
        out.push((id, committed.commitment, token, awaiting));
    }
    out
}

/// Finishes rounds: remaining decisions, then Settle; checks every reveal.
async fn finish_rounds(c: &mut TestClient, rounds: Vec<(String, String, Vec<u8>, bool)>) {
    for (id, commitment, mut token, awaiting) in rounds {
        if awaiting {
            token = c
                .decide(req::decide(token).stand(1).raise(2).round(&id))
                .await
                .unwrap_or_else(|s| panic!("decide {id}: {s:?}"))
                .round_token;
        }
        let settle = c.settle(req::settle(token).round(&id)).await.unwrap_or_else(|s| panic!("settle {id}: {s:?}"));
        assert_eq!(settle.round_id, id);
        let reveal = parse_reveal(&settle.reveal_json).unwrap();
        assert!(reveal.verify().unwrap().ok());
        let AnyReveal::V2(reveal) = reveal else { panic!("a v2 reveal") };
        assert_eq!(reveal.commitment, commitment);
    }
}

#[tokio::test]
async fn rounds_started_on_a_killed_process_finish_on_another() {
    let ring = ring_a();
    let env = [("REDDOG_KEY_RING", ring.as_str()), ("RUST_LOG", "warn")];
    let first = ServerProcess::spawn(&env, std::process::Stdio::null());
    let second = ServerProcess::spawn(&env, std::process::Stdio::null());
    let mut c1 = connect(first.addr).await;
    let rounds = start_rounds(&mut c1, 12, "failover").await;
    assert!(rounds.iter().any(|r| r.3), "at least one round awaits decisions");
    // Commitments issued by the first process are usable on the second, too.
    let pending = c1.commit_seed(req::commit_seed()).await.unwrap();
    drop(c1);
    first.kill();
    let mut c2 = connect(second.addr).await;
    finish_rounds(&mut c2, rounds).await;
    c2.start_round(req::start_round(pending.commitment_token).bets(&[500])).await.unwrap();
    let status = second.terminate().await;
    assert!(status.success(), "clean exit on SIGTERM: {status:?}");
}

/// Rotation in three rolling steps, each with rounds in flight across the step:
/// [a] -> [a primary, b] -> [b primary, a] -> [b]. Every round finishes.
#[tokio::test]
async fn key_rotation_with_rounds_in_flight_fails_none() {
    let ttl = Duration::from_secs(600);
    let phases = [
        ring_json("a", &[("a", KEY_A)]),
        ring_json("a", &[("a", KEY_A), ("b", KEY_B)]),
        ring_json("b", &[("b", KEY_B), ("a", KEY_A)]),
        ring_json("b", &[("b", KEY_B)]),
    ];
    let mut in_flight = Vec::new();
    for (step, ring) in phases.iter().enumerate() {
        let server = TestServer::start(ring, ttl).await;
        let mut c = server.client().await;
        finish_rounds(&mut c, std::mem::take(&mut in_flight)).await;
        if step + 1 < phases.len() {
            in_flight = start_rounds(&mut c, 6, &format!("rotation-{step}")).await;
        }
        server.stop().await;
    }
}

/// Shutdown is bounded: a client that keeps its connection open cannot hold the process past
/// the drain timeout.
#[tokio::test]
async fn sigterm_with_an_open_connection_exits_within_the_drain_timeout() {
    let ring = ring_a();
    let server = ServerProcess::spawn(
        &[("REDDOG_KEY_RING", ring.as_str()), ("RUST_LOG", "warn"), ("REDDOG_DRAIN_TIMEOUT_SECS", "1")],
        std::process::Stdio::null(),
    );
    let mut c = connect(server.addr).await;
    c.get_rules(req::get_rules()).await.unwrap();
    let started = std::time::Instant::now();
    let status = server.terminate().await;
    assert!(status.success(), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    drop(c);
}

/// Replicas whose clocks disagree. A commitment carries its expiry by the clock of the replica
/// that issued it, and each replica judges it by its own clock: a replica behind honours it
/// until its own clock reaches that instant; a replica ahead by more than the lifetime refuses
/// it as expired (INVALID_ARGUMENT on `commitment_token`, nothing dealt). A round, once
/// started, carries no expiry: it settles on every replica whatever its clock, identically.
#[tokio::test]
async fn replicas_with_skewed_clocks_judge_expiry_by_their_own_clock_and_settle_any_round() {
    const TTL_MS: u64 = 60_000;
    let behind = TestClock::new();
    let issuer = TestClock::new();
    let ahead = TestClock::new();
    issuer.advance(Duration::from_secs(30));
    ahead.advance(Duration::from_millis(30_000 + TTL_MS + 1));
    let replica = |clock: &TestClock| {
        let mut s = settings(&ring_a());
        s.commitment_ttl = Duration::from_millis(TTL_MS);
        s.clock = clock.clock();
        TestServer::spawn(s)
    };
    let (b, i, a) = (replica(&behind).await, replica(&issuer).await, replica(&ahead).await);
    let (mut cb, mut ci, mut ca) = (b.client().await, i.client().await, a.client().await);

    let committed = ci.commit_seed(req::commit_seed()).await.unwrap();
    assert_eq!(committed.expires_at_unix_ms, issuer.now_ms() + TTL_MS as i64, "by the issuer's clock");
    let start = req::start_round(committed.commitment_token.clone());
    // The refusal names the field and says only that the token is not valid (INVALID_TOKEN).
    let expired = |status: tonic::Status| {
        use tonic_types::StatusExt;
        let info = status.get_error_details().error_info().cloned().expect("ErrorInfo detail");
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
        assert_eq!((info.reason.as_str(), info.metadata["field"].as_str()), ("INVALID_TOKEN", "commitment_token"));
    };
    expired(ca.start_round(start.clone()).await.expect_err("ahead by more than the lifetime"));

    // The replica behind: usable until its own clock reaches the issuer's expiry instant.
    behind.advance(Duration::from_millis(committed.expires_at_unix_ms as u64 - behind.now_ms() as u64));
    let started = cb.start_round(start.clone()).await.expect("usable at the expiry instant by its clock");
    behind.advance(Duration::from_millis(1));
    expired(cb.start_round(start).await.expect_err("one millisecond later by its clock"));

    // The round started on the replica behind settles on all three, with one reveal.
    let token = started.round_token;
    let mut reveals = Vec::new();
    for c in [&mut ca, &mut cb, &mut ci] {
        let settled = c.settle(req::settle(token.clone())).await.expect("a started round settles anywhere");
        assert!(settled.reveal.is_some(), "a reveal");
        reveals.push(settled.reveal_json);
    }
    assert!(reveals.windows(2).all(|w| w[0] == w[1]), "one reveal whatever the replica's clock");
    for server in [b, i, a] {
        server.stop().await;
    }
}
