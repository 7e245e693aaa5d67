//! The engine's audit trail (docs/AUDIT.md): typed `reddog-audit-v1` records, chained by the
//! SHA-256 of each line, written by their own sink whatever `RUST_LOG` says, ended by
//! `audit_stopped` on a graceful shutdown, with checkpoints on the interval; and the bounded
//! log of refused tokens.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reddog::service::proto::{self, Action};
use reddog::service::{Application, AuditSettings};
use reddog::testing::record::Record;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common::*;
use crate::fleet::{Logs, Replica, RingFile};

/// An output the test reads while the server writes it.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn lines(&self) -> Vec<String> {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap().lines().map(str::to_string).collect()
    }
}

/// Checks one run's chain: every line a [`Record`] (the format's one definition: the
/// envelope first, then exactly its event's fields, in order) that serialises back to the
/// line's very bytes, `seq` from 0, each `prev` the SHA-256 of the line before; returns the
/// records.
fn check_chain(lines: &[String], replica: &str) -> Vec<Value> {
    assert!(!lines.is_empty(), "no audit records");
    let mut prev = "0".repeat(64);
    let mut records: Vec<Value> = Vec::new();
    for (seq, line) in lines.iter().enumerate() {
        let record: Record = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(serde_json::to_string(&record).unwrap(), *line, "the record type's fields, order and format");
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["event"], record.event.name());
        assert_eq!(v["schema"], "reddog-audit-v1");
        assert_eq!(v["replica"], replica);
        if let Some(first) = records.first() {
            assert_eq!(v["run"], first["run"], "one run");
        }
        assert_eq!(v["seq"], seq as u64, "{line}");
        assert_eq!(v["prev"], prev.as_str(), "record {seq} chains to the one before");
        prev = hex::encode(Sha256::digest(line.as_bytes()));
        records.push(v);
    }
    assert_eq!(records[0]["event"], "audit_started");
    records
}

/// One round with `bets` at the default table: CommitSeed, StartRound, and when it awaits
/// decisions one Decide per seat (seat 0 raises, the others stand); then Settle. Returns the
/// answers.
async fn play(
    c: &mut TestClient,
    round_id: &str,
    nonce: u64,
    bets: &[u64],
) -> (proto::CommitSeedResponse, proto::StartRoundResponse, Vec<proto::DecideResponse>, proto::SettleResponse) {
    let committed = c.commit_seed(req::commit_seed().round(round_id).nonce(nonce)).await.unwrap();
    let start = req::start_round(committed.commitment_token.clone()).round(round_id).nonce(nonce).bets(bets);
    let started = c.start_round(start).await.unwrap();
    let mut token = started.round_token.clone();
    let mut decided = Vec::new();
    if started.round.as_ref().unwrap().awaiting_decisions {
        for seat in 0..bets.len() as u32 {
            let action = if seat == 0 { Action::Raise } else { Action::Stand };
            let d = c.decide(req::decide(token).action(seat, action)).await.unwrap();
            token = d.round_token.clone();
            decided.push(d);
        }
    }
    let settled = c.settle(req::settle(token)).await.unwrap();
    (committed, started, decided, settled)
}

/// The rules digest of the contract (§3), computed here from what GetRules shows.
fn digest_from_rules(r: &proto::GetRulesResponse) -> String {
    fn field(h: &mut Sha256, b: &[u8]) {
        h.update((b.len() as u32).to_be_bytes());
        h.update(b);
    }
    let mut h = Sha256::new();
    field(&mut h, b"reddog/rules/v1");
    field(&mut h, &[r.decks as u8]);
    let mut odds: Vec<_> = r.spread_odds.iter().map(|s| (s.spread, s.odds)).collect();
    odds.sort();
    let mut bytes: Vec<u8> = odds.iter().flat_map(|&(_, o)| o.to_be_bytes()).collect();
    bytes.extend(r.three_of_a_kind_odds.to_be_bytes());
    field(&mut h, &bytes);
    let l = r.table_limits.unwrap();
    let limits: Vec<u8> = l.min_bet.to_be_bytes().into_iter().chain(l.max_bet.to_be_bytes()).collect();
    field(&mut h, &limits);
    let cur = r.currency.as_ref().unwrap();
    field(&mut h, cur.code.as_bytes());
    field(&mut h, &[cur.minor_unit_exponent.unwrap_or(0) as u8]);
    hex::encode(h.finalize())
}

#[tokio::test]
async fn every_round_record_carries_the_contracts_fields_and_the_values_the_player_saw() {
    let out = Shared::default();
    let mut s = settings(&ring_a());
    s.audit = AuditSettings::to_writer(out.clone());
    s.audit.replica_id = "replica-x".into();
    let app = Application::build(s).await.unwrap();
    let run = app.audit().run().to_string();
    let server = TestServer::run(app);
    let mut c = server.client().await;
    let rules = c.get_rules(req::get_rules()).await.unwrap();
    let digest = digest_from_rules(&rules);
    let mut rounds = Vec::new();
    for i in 0..12u64 {
        let bets: &[u64] = if i % 2 == 0 { &[500, 1000] } else { &[700] };
        rounds.push((bets, play(&mut c, &format!("trail-{i}"), i, bets).await));
    }
    drop(c);
    server.stop().await;
    let records = check_chain(&out.lines(), "replica-x");
    assert_eq!(records[0]["run"], run.as_str());
    assert_eq!(records[0]["tables"][0]["rules_digest"], digest.as_str());
    assert_eq!(records.last().unwrap()["event"], "audit_stopped", "graceful stop ends the run");
    let of = |event: &str, round_id: &str| -> Vec<&Value> {
        records.iter().filter(|r| r["event"] == event && r["round_id"] == round_id).collect()
    };
    let mut decided_rounds = 0;
    for (bets, (committed, started, decided, settled)) in &rounds {
        let id = committed.round_id.as_str();
        let reveal: Value = serde_json::from_str(&settled.reveal_json).unwrap();
        let cur = started.currency.as_ref().unwrap();

        let [c0] = of("seed_committed", id)[..] else { panic!("one seed_committed for {id}") };
        assert_eq!(c0["commitment"], committed.commitment.as_str());
        assert_eq!(c0["nonce"], committed.nonce);
        assert_eq!(c0["decks"], committed.decks);
        assert_eq!(c0["table_id"], committed.table_id.as_str());
        assert_eq!(c0["rules_digest"], digest.as_str());
        assert_eq!(c0["expires_at_unix_ms"], committed.expires_at_unix_ms);
        assert_eq!(c0["sandbox"], false);

        let [s0] = of("round_started", id)[..] else { panic!("one round_started for {id}") };
        assert_eq!(s0["table_id"], started.table_id.as_str());
        assert_eq!(s0["currency"], cur.code.as_str());
        assert_eq!(s0["exponent"], cur.minor_unit_exponent.unwrap_or(0));
        assert_eq!(s0["commitment"], started.commitment.as_str());
        assert_eq!(s0["rules_digest"], digest.as_str());
        assert_eq!(s0["nonce"], committed.nonce);
        assert_eq!(s0["decks"], committed.decks);
        assert_eq!(s0["step"], 0);
        assert_eq!(s0["transcript"], started.transcript.as_str());
        assert_eq!(s0["bets"], serde_json::json!(bets));
        assert_eq!(s0["cards"], serde_json::json!(reveal["cards"].as_array().unwrap()[..2]));
        let class = s0["hand_class"].as_str().unwrap();
        let spread = s0["spread"].as_u64().unwrap();
        match class {
            "pair" | "consecutive" => assert_eq!(spread, 0),
            "spread" => assert!((1..=11).contains(&spread)),
            other => panic!("hand_class {other:?}"),
        }

        let steps = of("seats_decided", id);
        assert_eq!(steps.len(), decided.len());
        let mut parent = (0u64, started.transcript.clone());
        for (rec, d) in steps.iter().zip(decided) {
            assert_eq!(rec["commitment"], started.commitment.as_str());
            assert_eq!(rec["table_id"], started.table_id.as_str());
            assert_eq!(rec["parent_step"], parent.0);
            assert_eq!(rec["parent_transcript"], parent.1.as_str());
            assert_eq!(rec["step"], d.step);
            assert_eq!(rec["transcript"], d.transcript.as_str());
            assert_eq!(rec["raised_amount"], d.raised_amount);
            assert_eq!(rec["complete"], !d.round.as_ref().unwrap().awaiting_decisions);
            parent = (u64::from(d.step), d.transcript.clone());
        }
        decided_rounds += usize::from(!decided.is_empty());

        let [z] = of("round_settled", id)[..] else { panic!("one round_settled for {id}") };
        assert_eq!(z["table_id"], settled.table_id.as_str());
        assert_eq!(z["currency"], cur.code.as_str());
        assert_eq!(z["exponent"], cur.minor_unit_exponent.unwrap_or(0));
        assert_eq!(z["commitment"], reveal["commitment"]);
        assert_eq!(z["rules_digest"], digest.as_str());
        assert_eq!(z["decks"], reveal["decks"]);
        assert_eq!(z["paytable"], reveal["paytable"]);
        assert_eq!(z["step"], settled.step);
        assert_eq!(z["transcript"], settled.transcript.as_str());
        assert_eq!(z["cards"], reveal["cards"]);
        assert_eq!(z["hand_class"], class);
        assert_eq!(z["spread"], spread);
        assert_eq!(z["decisions"], reveal["decisions"]);
        assert_eq!(z["seats"], reveal["seats"]);
        let seats: Vec<Value> = settled
            .results
            .iter()
            .map(|r| serde_json::json!({"bet": r.bet, "raised": r.raised, "stake": r.stake, "returned": r.returned}))
            .collect();
        assert_eq!(z["seats"], Value::Array(seats));
        assert_eq!(z["total_staked"], settled.total_staked);
        assert_eq!(z["total_returned"], settled.total_returned);
        assert_eq!(z["sandbox"], false);
    }
    assert!(decided_rounds > 0, "some round took decisions");
}

#[tokio::test]
async fn rust_log_warn_keeps_the_whole_trail_and_sigterm_ends_it_with_audit_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let trail = dir.path().join("audit.jsonl");
    let ring = ring_a();
    let server = ServerProcess::spawn(
        &[
            ("REDDOG_KEY_RING", ring.as_str()),
            ("RUST_LOG", "warn"),
            ("REDDOG_AUDIT_LOG", trail.to_str().unwrap()),
            ("REDDOG_REPLICA_ID", "replica-w"),
        ],
        std::process::Stdio::null(),
    );
    let mut c = connect(server.addr).await;
    let mut decides = 0;
    for i in 0..3u64 {
        decides += play(&mut c, &format!("warn-{i}"), i, &[500]).await.2.len();
    }
    drop(c);
    assert!(server.terminate().await.success());
    let lines: Vec<String> = std::fs::read_to_string(&trail).unwrap().lines().map(str::to_string).collect();
    let records = check_chain(&lines, "replica-w");
    let count = |e: &str| records.iter().filter(|r| r["event"] == e).count();
    assert_eq!(count("seed_committed"), 3, "under RUST_LOG=warn");
    assert_eq!(count("round_started"), 3);
    assert_eq!(count("seats_decided"), decides);
    assert_eq!(count("round_settled"), 3);
    let last = records.last().unwrap();
    assert_eq!(last["event"], "audit_stopped");
    assert_eq!(last["records"], records.len() as u64 - 1);
}

#[tokio::test]
async fn a_checkpoint_vouches_for_the_chain_head_every_interval() {
    let out = Shared::default();
    let mut s = settings(&ring_a());
    s.audit = AuditSettings::to_writer(out.clone());
    s.audit.checkpoint_interval = Duration::from_millis(50);
    let server = TestServer::spawn(s).await;
    let mut c = server.client().await;
    c.commit_seed(req::commit_seed().round("cp-1").nonce(1)).await.unwrap();
    eventually(Duration::from_secs(10), "a checkpoint record", || {
        out.lines().iter().any(|l| l.contains(r#""event":"checkpoint""#))
    })
    .await;
    let lines = out.lines();
    let at = lines.iter().position(|l| l.contains(r#""event":"checkpoint""#)).unwrap();
    let records = check_chain(&lines, "local");
    assert_eq!(records[at - 1]["event"], "seed_committed", "nothing but the commit before it");
    assert_eq!(records[at]["records"], at as u64);
    assert_eq!(
        records[at]["head"].as_str().unwrap(),
        hex::encode(Sha256::digest(lines[at - 1].as_bytes())),
        "the head is the hash of the record before"
    );
    drop(c);
    server.stop().await;
}

#[tokio::test]
async fn ten_thousand_garbage_token_settles_log_a_bounded_number_of_lines() {
    let ring = RingFile::new(&ring_a());
    let replica = Replica::spawn("garbage", &ring.path, &[], Logs::Keep);
    let c = connect(replica.addr).await;
    let started = Instant::now();
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let mut c = c.clone();
            tokio::spawn(async move {
                for i in 0..1250u32 {
                    let garbage = format!("garbage token {t} {i}").into_bytes();
                    let refused = c.settle(req::settle(garbage)).await.unwrap_err();
                    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let elapsed = started.elapsed();
    assert_eq!(replica.scrape().await.token_rejections, 10_000, "the metric counts every refusal");
    eventually(Duration::from_secs(10), "a refusal line", || replica.log_contains("tokens refused")).await;
    let lines: Vec<String> = replica.log_lines().iter().filter(|l| l.contains("tokens refused")).cloned().collect();
    // One line per reason per 10 s: at most 5 reasons, each at most elapsed/10 s + 1 lines.
    let bound = 5 * (elapsed.as_secs() / 10 + 1) as usize;
    assert!(
        !lines.is_empty() && lines.len() <= bound,
        "{} lines for 10,000 refusals in {elapsed:?} (bound {bound}): {lines:?}",
        lines.len()
    );
    for l in &lines {
        assert!(l.contains("peer=127.0.0.1:"), "a sample peer address: {l}");
        assert!(l.contains("count="), "the count: {l}");
    }
}
