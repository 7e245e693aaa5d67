//! `reddog audit-log` on the JSON logs of real `reddog serve` processes: two replicas sharing
//! a key ring, rounds driven across both, the logs read in reverse order. Each misuse pattern
//! (commitment reuse, fork, peek then play, round re-dealt) is flagged for its round and only
//! its round;
//! clean rounds, retries of every call included, are not flagged; a clean log exits 0 and an
//! unreadable one 2.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::*;
use reddog::service::proto::red_dog_client::RedDogClient;
use reddog::service::proto::{self, Action};
use tonic::transport::Channel;

fn replica(log: &Path) -> ServerProcess {
    let ring = ring_a();
    let file = std::fs::File::create(log).unwrap();
    ServerProcess::spawn(
        &[
            ("REDDOG_KEY_RING", ring.as_str()),
            ("REDDOG_LOG_FORMAT", "json"),
            ("RUST_LOG", "info"),
        ],
        Stdio::from(file),
    )
}

fn audit_log(files: &[&Path]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_reddog"))
        .arg("audit-log")
        .args(files)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// A round started on `a` (and the same StartRound retried on `b`); returns its commitment
/// and first round token, and whether it awaits decisions.
async fn start(
    a: &mut RedDogClient<Channel>,
    b: &mut RedDogClient<Channel>,
    round_id: &str,
    nonce: u64,
    seats: usize,
) -> (String, Vec<u8>, bool) {
    let committed = a
        .commit_seed(commit_request(round_id, nonce))
        .await
        .unwrap()
        .into_inner();
    let req = proto::StartRoundRequest {
        sandbox_cards: vec![],
        commitment_token: committed.commitment_token,
        client_seed: "audit player".into(),
        nonce,
        round_id: round_id.into(),
        seats: vec![proto::SeatBet { bet: 500 }; seats],
        player_limits: limits(500, 30_000),
        table_id: String::new(),
    };
    let started = a.start_round(req.clone()).await.unwrap().into_inner();
    let retried = b.start_round(req).await.unwrap().into_inner();
    assert_eq!(started, retried, "a retried StartRound is identical");
    let awaiting = started.round.unwrap().awaiting_decisions;
    (committed.commitment, started.round_token, awaiting)
}

/// A round that awaits decisions, with `seats` seats.
async fn start_awaiting(
    a: &mut RedDogClient<Channel>,
    b: &mut RedDogClient<Channel>,
    tag: &str,
    seats: usize,
) -> (String, Vec<u8>) {
    for n in 0..100u64 {
        let (c, t, awaiting) = start(a, b, &format!("{tag}-{n}"), n, seats).await;
        if awaiting {
            return (c, t);
        }
        settle(a, t).await;
    }
    panic!("no non-consecutive deal in 100 rounds")
}

async fn decide(c: &mut RedDogClient<Channel>, token: Vec<u8>, seat: u32, a: Action) -> Vec<u8> {
    c.decide(proto::DecideRequest {
        round_token: token,
        decisions: vec![decision(seat, a)],
        round_id: String::new(),
    })
    .await
    .unwrap()
    .into_inner()
    .round_token
}

async fn settle(c: &mut RedDogClient<Channel>, token: Vec<u8>) {
    c.settle(proto::SettleRequest {
        round_token: token,
        round_id: String::new(),
    })
    .await
    .unwrap();
}

/// Clean rounds across both replicas with every call retried on the other one.
async fn clean_rounds(
    a: &mut RedDogClient<Channel>,
    b: &mut RedDogClient<Channel>,
    tag: &str,
) -> Vec<String> {
    let mut commitments = Vec::new();
    for n in 0..6u64 {
        let (commitment, t0, awaiting) = start(a, b, &format!("{tag}-{n}"), 1000 + n, 2).await;
        let mut token = t0.clone();
        if awaiting {
            let t1 = decide(b, t0.clone(), 1, Action::Raise).await;
            assert_eq!(decide(a, t0, 1, Action::Raise).await, t1, "retried Decide");
            token = decide(a, t1, 0, Action::Stand).await;
        }
        settle(b, token.clone()).await;
        settle(a, token).await; // retried Settle
        commitments.push(commitment);
    }
    commitments
}

#[tokio::test]
async fn audit_log_flags_each_misuse_from_real_replicas_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let (log_a, log_b) = (dir.path().join("a.log"), dir.path().join("b.log"));
    let (ra, rb) = (replica(&log_a), replica(&log_b));
    let (mut a, mut b) = (connect(ra.addr).await, connect(rb.addr).await);
    let clean = clean_rounds(&mut a, &mut b, "clean").await;

    // Commitment reuse: the same commitment, round id and nonce, another client seed.
    let committed = a
        .commit_seed(commit_request("reuse", 7))
        .await
        .unwrap()
        .into_inner();
    for client_seed in ["first", "second"] {
        let req = proto::StartRoundRequest {
            sandbox_cards: vec![],
            commitment_token: committed.commitment_token.clone(),
            client_seed: client_seed.into(),
            nonce: 7,
            round_id: "reuse".into(),
            seats: vec![proto::SeatBet { bet: 500 }],
            player_limits: limits(500, 30_000),
            table_id: String::new(),
        };
        b.start_round(req).await.unwrap();
    }
    let reuse = committed.commitment;

    // Fork: two different Decides from the same token, on two replicas.
    let (fork, t0) = start_awaiting(&mut a, &mut b, "fork", 1).await;
    let raised = decide(&mut a, t0.clone(), 0, Action::Raise).await;
    let stood = decide(&mut b, t0, 0, Action::Stand).await;
    settle(&mut a, raised).await;
    let _ = stood;

    // Peek then play: settle T1 (the third card and the seed are revealed), then play on.
    let (peek, t0) = start_awaiting(&mut a, &mut b, "peek", 2).await;
    let t1 = decide(&mut a, t0, 0, Action::Stand).await;
    settle(&mut b, t1.clone()).await;
    let t2 = decide(&mut a, t1, 1, Action::Raise).await;
    let _ = t2;

    // Round re-dealt: two commitments for one round id, each dealt (a throw-away peek and the
    // round shown); plus a retried CommitSeed whose seed is never used (not flagged).
    let mut redealt = Vec::new();
    for peek in [true, false] {
        let committed = b
            .commit_seed(commit_request("redeal", 9))
            .await
            .unwrap()
            .into_inner();
        let started = a
            .start_round(proto::StartRoundRequest {
                sandbox_cards: vec![],
                commitment_token: committed.commitment_token,
                client_seed: "player".into(),
                nonce: 9,
                round_id: "redeal".into(),
                seats: vec![proto::SeatBet { bet: 500 }],
                player_limits: limits(500, 30_000),
                table_id: String::new(),
            })
            .await
            .unwrap()
            .into_inner();
        if peek {
            settle(&mut b, started.round_token).await;
        }
        redealt.push(committed.commitment);
    }
    a.commit_seed(commit_request("lost-response", 3))
        .await
        .unwrap();

    drop((a, b));
    assert!(ra.terminate().await.success());
    assert!(rb.terminate().await.success());

    let (code, out) = audit_log(&[&log_b, &log_a]);
    println!("{out}");
    assert_eq!(code, Some(1), "{out}");
    let kinds = |commitment: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.contains(commitment))
            .map(|l| l.split_whitespace().next().unwrap().to_string())
            .collect()
    };
    assert_eq!(kinds(&reuse), vec!["commitment-reuse"], "{out}");
    assert_eq!(kinds(&fork), vec!["fork"], "{out}");
    assert_eq!(kinds(&peek), vec!["peek-then-play"], "{out}");
    for c in &redealt {
        assert_eq!(kinds(c), vec!["round-re-dealt"], "{out}");
    }
    for c in &clean {
        assert!(kinds(c).is_empty(), "clean round {c} flagged: {out}");
    }
    assert!(out.contains("findings: 4"), "{out}");
}

#[tokio::test]
async fn a_clean_log_exits_0_and_an_unreadable_one_2() {
    let dir = tempfile::tempdir().unwrap();
    let (log_a, log_b) = (dir.path().join("a.log"), dir.path().join("b.log"));
    let (ra, rb) = (replica(&log_a), replica(&log_b));
    let (mut a, mut b) = (connect(ra.addr).await, connect(rb.addr).await);
    clean_rounds(&mut a, &mut b, "only-clean").await;
    drop((a, b));
    assert!(ra.terminate().await.success());
    assert!(rb.terminate().await.success());
    let (code, out) = audit_log(&[&log_a, &log_b]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("findings: 0"), "{out}");
    assert!(
        !out.contains(" 0 round events"),
        "the events were read: {out}"
    );

    let (code, _) = audit_log(&[&dir.path().join("missing.log")]);
    assert_eq!(code, Some(2));
    let text = dir.path().join("text.log");
    std::fs::write(
        &text,
        "2026-12-01T12:00:00Z INFO reddog::audit: round_started\n",
    )
    .unwrap();
    let (code, _) = audit_log(&[&text]);
    assert_eq!(code, Some(2), "a text-format log is not readable as JSON");
}
