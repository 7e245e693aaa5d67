//! Rounds across re-configured tables and retried calls, as the documents promise them:
//!
//! - a round keeps its table's currency when an operator re-configures the table id with
//!   another one (API.md: "every amount in an answer is in the minor units of the round's
//!   table's currency, and the answer names it"), and a commitment that promised one currency
//!   deals in it (the rules travel in the token);
//! - `reddog audit-log` does not report a retried `Decide` whose log line came after the
//!   settlement (a slow replica, or clocks a little apart): "Retried calls log identical lines
//!   and are not reported" (API.md); it does report a settled pre-decision fork;
//! - a `StartRound` retried after its commitment expired is refused (API.md states the limit);
//! - a table configuration repeating a table id (or a field) is refused, naming it.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use reddog::service::Tables;
use reddog::service::proto;
use tonic::Code;

use crate::common::*;

fn field_of(status: &tonic::Status) -> String {
    use tonic_types::StatusExt;
    status.get_error_details().error_info().map(|i| i.metadata["field"].clone()).unwrap_or_default()
}

const EUR: &str = r#"{"tables":{"vip":{"decks":1,"currency":"EUR","minor_unit_exponent":2}}}"#;
const JPY: &str = r#"{"tables":{"vip":{"decks":1,"currency":"JPY","minor_unit_exponent":0}}}"#;

fn eur() -> Option<proto::Currency> {
    Some(proto::Currency { code: "EUR".into(), minor_unit_exponent: Some(2) })
}

#[tokio::test]
async fn a_round_keeps_its_currency_when_its_table_is_reconfigured() {
    let ring = ring_a();
    let before = TestServer::start_tables(&ring, Duration::from_secs(600), Tables::from_json(EUR).unwrap()).await;
    let mut c = before.client().await;
    // A round awaiting decisions at the EUR table, and a commitment not yet used.
    let mut started = None;
    for k in 0..200 {
        let round_id = format!("r{k}");
        let commit = c.commit_seed(req::commit_seed().round(&round_id).table("vip")).await.unwrap();
        let start = req::start_round(commit.commitment_token).round(round_id).client_seed("player");
        let start = c.start_round(start.limits(500, 30_000)).await.unwrap();
        if start.round.as_ref().unwrap().awaiting_decisions {
            assert_eq!(start.currency, eur());
            started = Some(start);
            break;
        }
    }
    let started = started.expect("a non-consecutive hand within 200 deals");
    let unused = c.commit_seed(req::commit_seed().round("later").table("vip")).await.unwrap();
    assert_eq!(unused.currency, eur());
    before.stop().await;

    // The operator re-configures table `vip` in yen, same key ring.
    let after = TestServer::start_tables(&ring, Duration::from_secs(600), Tables::from_json(JPY).unwrap()).await;
    let mut c = after.client().await;
    let decided = c.decide(req::decide(started.round_token).raise(0)).await.unwrap();
    assert_eq!(decided.raised_amount, 1000);
    assert_eq!(decided.currency, eur(), "the raise was 10.00 EUR, not 1000 JPY");
    let settled = c.settle(req::settle(decided.round_token)).await.unwrap();
    assert_eq!(settled.total_staked, 2000);
    assert_eq!(settled.currency, eur(), "the stakes were in EUR");
    // The commitment promised EUR bets: StartRound at the yen table deals them in EUR.
    let later = req::start_round(unused.commitment_token).round("later").client_seed("player");
    let later = c.start_round(later.limits(500, 30_000)).await.unwrap();
    assert_eq!(later.currency, eur(), "the commitment's currency, not the table's now");
    after.stop().await;
}

/// A replica writing its audit trail to `log` (and its diagnostics to `log` + `.diag`).
fn json_replica(log: &Path) -> ServerProcess {
    let ring = ring_a();
    let audit = log.to_str().unwrap();
    ServerProcess::spawn(
        &[
            ("REDDOG_KEY_RING", ring.as_str()),
            ("REDDOG_LOG_FORMAT", "json"),
            ("RUST_LOG", "info"),
            ("REDDOG_AUDIT_LOG", audit),
        ],
        Stdio::from(std::fs::File::create(log.with_extension("diag")).unwrap()),
    )
}

/// Deals rounds `PREFIX-0`, `PREFIX-1`, … (nonce 1, `seats` seats of 1000) until one awaits
/// decisions; its round id and first round token.
async fn awaiting_round(c: &mut TestClient, prefix: &str, seats: usize) -> (String, Vec<u8>) {
    for k in 0..200 {
        let round_id = format!("{prefix}-{k}");
        let commit = c.commit_seed(req::commit_seed().round(&round_id).nonce(1)).await.unwrap();
        let start = req::start_round(commit.commitment_token).round(&round_id).nonce(1).client_seed("player");
        let start = c.start_round(start.bets(&vec![1000; seats]).limits(500, 30_000)).await.unwrap();
        if start.round.unwrap().awaiting_decisions {
            return (round_id, start.round_token);
        }
    }
    panic!("no non-consecutive hand within 200 deals");
}

#[tokio::test]
async fn a_decide_retry_logged_after_the_settlement_is_not_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (log_a, log_b) = (dir.path().join("a.log"), dir.path().join("b.log"));
    let (a, b) = (json_replica(&log_a), json_replica(&log_b));
    let (mut ca, mut cb) = (connect(a.addr).await, connect(b.addr).await);
    let (_, t0) = awaiting_round(&mut ca, "late", 2).await;
    let decide = req::decide(t0).raise(0).stand(1);
    // The platform's Decide went to replica a, which was slow: the platform timed out and
    // retried on b, then settled on b. a processed (and logged) the first attempt last.
    let t1 = cb.decide(decide.clone()).await.unwrap().round_token;
    cb.settle(req::settle(t1.clone())).await.unwrap();
    let late = ca.decide(decide).await.unwrap().round_token;
    assert_eq!(late, t1, "the same request returns the same token: a retry");
    drop((ca, cb));
    let (_, _) = (a.terminate().await, b.terminate().await);
    let out = Command::new(crate::common::reddog_binary()).arg("audit-log").args([&log_a, &log_b]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "a clean round with a retry was reported:\n{stdout}");
}

/// The most profitable fork: Decide raise on one replica (its answer shows the third card),
/// then Settle the pre-decision token on another replica, so the raise is never paid. The
/// engine's own records, read back by `reddog audit-log`, report it — and nothing else.
#[tokio::test]
async fn settling_the_pre_decision_token_on_another_replica_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (log_a, log_b) = (dir.path().join("a.log"), dir.path().join("b.log"));
    let (a, b) = (json_replica(&log_a), json_replica(&log_b));
    let (mut ca, mut cb) = (connect(a.addr).await, connect(b.addr).await);
    let (round_id, t0) = awaiting_round(&mut ca, "older", 1).await;
    ca.decide(req::decide(t0.clone()).raise(0)).await.unwrap();
    cb.settle(req::settle(t0)).await.unwrap();
    drop((ca, cb));
    let (_, _) = (a.terminate().await, b.terminate().await);
    let out = Command::new(crate::common::reddog_binary())
        .args(["audit-log", "--json"])
        .args([&log_a, &log_b])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "the fork was not reported:\n{stdout}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kinds: Vec<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["kind"].as_str().unwrap().to_string(), f["round_id"].as_str().unwrap_or_default().to_string()))
        .collect();
    assert_eq!(kinds, vec![("peek_then_play".to_string(), round_id)], "{stdout}");
}

/// API.md said "every call may be retried after a timeout with the same request"; a
/// `StartRound` retried after its commitment expired is refused (the engine keeps no memory, so
/// it cannot tell a retry from a late first use), even though the first attempt dealt. API.md
/// now states this limit and what the platform does about it; this pins the behaviour.
#[tokio::test]
async fn a_start_round_retried_after_its_commitment_expired_is_refused() {
    let clock = TestClock::new();
    let mut s = settings(&ring_a());
    s.commitment_ttl = Duration::from_secs(1);
    s.clock = clock.clock();
    let srv = TestServer::spawn(s).await;
    let mut c = srv.client().await;
    let commit = c.commit_seed(req::commit_seed().round("expiring").nonce(3)).await.unwrap();
    let start = req::start_round(commit.commitment_token).round("expiring").nonce(3).limits(500, 30_000);
    c.start_round(start.clone()).await.unwrap();
    // The retry comes after the commitment expired.
    clock.advance(Duration::from_millis(1001));
    assert!(clock.now_ms() > commit.expires_at_unix_ms);
    let err = c.start_round(start).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert_eq!(field_of(&err), "commitment_token");
    srv.stop().await;
}

/// A table configuration that repeats a table id (or a field of one table) started with the
/// last of the two, silently: serde_json's maps keep the last of two equal keys. An operator who
/// pastes a table block twice, or gives `max_bet` twice, must hear of it at start-up, as with a
/// repeated key id in the key ring.
#[test]
fn a_table_config_that_repeats_a_key_is_refused_naming_it() {
    for (json, field) in [
        (r#"{"tables":{"a":{},"a":{"decks":8}}}"#, "tables.a"),
        (r#"{"tables":{"a":{"max_bet":30000,"max_bet":3000000}}}"#, "tables.a.max_bet"),
        (r#"{"decks":1,"decks":8}"#, "decks"),
        (
            r#"{"tables":{"a":{"paytable":{"spread":[5,4,2,1,1,1,1,1,1,1,1],"three_of_a_kind":11,"three_of_a_kind":99}}}}"#,
            "tables.a.paytable.three_of_a_kind",
        ),
    ] {
        let err = Tables::from_json(json).expect_err(json);
        assert_eq!(err.field().map(|f| f.to_string()).as_deref(), Some(field), "{json}: {err}");
        assert!(err.to_string().contains("twice"), "{err}");
    }
}
