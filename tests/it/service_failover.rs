//! Statelessness: rounds started on one process finish on another holding the same key ring
//! after the first is killed with SIGKILL; a key rotation with rounds in flight fails none.

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
