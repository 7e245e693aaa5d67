//! What a dishonest (or careless) platform cannot do with a round, against the real server
//! (or the real binary), and the round-integrity guarantees that stop it
//! (docs/design/round-integrity.md):
//!
//! - every round the API accepts can be settled, with totals that are exact or a table that
//!   is refused at start-up;
//! - a commitment deals only the round (id, nonce, table, shoe, rules) it was made for, so
//!   Settle is no oracle for another round's face-down card;
//! - forks of a round settle with different reveals, and every step answers the transcript
//!   recomputed from the round's inputs;
//! - `reddog verify` refuses malformed reveals; tokens from the previous engine still finish.

use std::time::Duration;

use crate::common::*;
use reddog::game::table::MAX_BET;
use reddog::game::{Paytable, Table, TableSpec};
use reddog::service::{NamedTable, proto};
use tonic::Code;

const TTL: Duration = Duration::from_secs(600);

/// A commitment from the server for one round.
async fn commit(c: &mut TestClient, round_id: &str, nonce: u64) -> proto::CommitSeedResponse {
    c.commit_seed(req::commit_seed().round(round_id).nonce(nonce)).await.unwrap()
}

fn start(token: Vec<u8>, round_id: &str, client_seed: String, nonce: u64, bets: &[u64]) -> req::StartRound {
    req::start_round(token).round(round_id).client_seed(client_seed).nonce(nonce).bets(bets).limits(1, MAX_BET)
}

/// A round with the largest inputs the API accepts is playable to the end: its round token
/// (with a 926-byte client seed and 1 seat, or a 777-byte seed, 7 seats and a 128-byte round
/// id) stays within the size Decide and Settle accept.
#[tokio::test]
async fn a_round_with_the_largest_inputs_can_always_be_settled() {
    let server = TestServer::start(&ring_a(), TTL).await;
    let mut c = server.client().await;
    let cases: [(usize, usize, usize); 4] = [(1, 926, 8), (7, 777, 128), (7, 1024, 128), (1, 1024, 128)];
    for (i, (seats, seed_len, id_len)) in cases.into_iter().enumerate() {
        let round_id = format!("{i}{}", "r".repeat(id_len - 1));
        let nonce = u64::MAX - i as u64;
        let committed = commit(&mut c, &round_id, nonce).await;
        let client_seed = "s".repeat(seed_len);
        let bets = vec![30_000u64; seats];
        let started =
            c.start_round(start(committed.commitment_token, &round_id, client_seed, nonce, &bets)).await.unwrap();
        let mut token = started.round_token;
        if started.round.unwrap().awaiting_decisions {
            // One Decide per seat: the largest number of steps a round can take.
            for seat in 0..seats as u32 {
                let decided = c
                    .decide(req::decide(token.clone()).raise(seat))
                    .await
                    .unwrap_or_else(|e| panic!("case {i}: Decide seat {seat}: {e:?}"));
                token = decided.round_token;
            }
        }
        let settled = c
            .settle(req::settle(token))
            .await
            .unwrap_or_else(|e| panic!("case {i} ({seats} seats, {seed_len}-byte seed): Settle: {e:?}"));
        assert_eq!(settled.results.len(), seats);
    }
    server.stop().await;
}

/// A table whose largest round does not fit in `u64` is refused (naming the field and the
/// largest allowed value), and the largest table that is allowed settles exact totals (no
/// `total_returned` saturated at `u64::MAX`).
#[tokio::test]
async fn totals_are_exact_or_the_table_is_refused() {
    let paytable = Paytable::new([10_000; 11], 10_000).unwrap();
    let spec = |max_bet: u64| TableSpec {
        decks: None,
        paytable: Some(paytable.clone()),
        min_bet: Some(1),
        max_bet: Some(max_bet),
    };
    let largest = u64::MAX / (7 * 2 * 10_001);
    let e = Table::try_from(spec(MAX_BET)).expect_err("a table whose largest round overflows u64");
    assert!(matches!(e, reddog::game::TableError::TooLarge { .. }), "names max_bet: {e}");
    assert!(e.to_string().contains(&largest.to_string()), "names the largest allowed value: {e}");
    let table = Table::try_from(spec(largest)).expect("the largest allowed max_bet is accepted");
    let bet = table.limits().max().minor();
    let server = TestServer::start_with(&ring_a(), TTL, table.clone()).await;
    let mut c = server.client().await;
    let nonce = nonce_for(Want::Between);
    let token = commitment_token_at(&ring_a(), SEED, nonce, 60_000, &NamedTable { table, ..default_table() });
    let started = c.start_round(req::start_round(token).nonce(nonce).bets(&[bet; 7]).limits(1, bet)).await.unwrap();
    let decide = (0..7).fold(req::decide(started.round_token), |d, seat| d.raise(seat));
    let decided = c.decide(decide).await.unwrap();
    let settled = c.settle(req::settle(decided.round_token)).await.unwrap();
    let staked: u128 = settled.results.iter().map(|r| u128::from(r.stake)).sum();
    let returned: u128 = settled.results.iter().map(|r| u128::from(r.returned)).sum();
    assert_eq!(u128::from(settled.total_staked), staked);
    assert_eq!(u128::from(settled.total_returned), returned, "total_returned is the exact sum");
    assert!(returned > 0);
    server.stop().await;
}

/// A commitment serves one round only: a platform cannot start a throw-away round (another
/// round id or nonce) from the real round's commitment, settle it, and read the seed and so
/// the real round's face-down card.
#[tokio::test]
async fn a_commitment_deals_only_the_round_it_was_made_for() {
    let server = TestServer::start(&ring_a(), TTL).await;
    let mut c = server.client().await;
    let committed = commit(&mut c, "real-round", 0).await;
    let token = committed.commitment_token.clone();
    let seed = || "player seed".to_string();
    c.start_round(start(token.clone(), "real-round", seed(), 0, &[500]))
        .await
        .expect("the round the commitment was made for starts");
    // The throw-away rounds: another round id, another nonce.
    let other_id = c.start_round(start(token.clone(), "throw-away", seed(), 0, &[500])).await;
    let status = other_id.expect_err("another round id must be refused");
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert!(status.message().starts_with("round_id"), "{status:?}");
    let other_nonce = c.start_round(start(token.clone(), "real-round", seed(), 1, &[500])).await;
    let status = other_nonce.expect_err("another nonce must be refused");
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert!(status.message().starts_with("nonce"), "{status:?}");
    server.stop().await;
}

/// After Decide(T0) → T1, settling T0 (the seat stands by default) and settling T1 (the seat
/// raised) are told apart by their reveals: anyone can tell which fork was paid.
#[tokio::test]
async fn two_forks_of_a_round_settle_with_different_reveals() {
    let server = TestServer::start(&ring_a(), TTL).await;
    let mut c = server.client().await;
    let nonce = nonce_for(Want::Between);
    let token = bound_commitment_token(&ring_a(), SEED, nonce);
    let started = c.start_round(req::start_round(token).nonce(nonce)).await.unwrap();
    let t0 = started.round_token;
    let t1 = c.decide(req::decide(t0.clone()).raise(0)).await.unwrap().round_token;
    let fork0 = c.settle(req::settle(t0)).await.unwrap();
    let fork1 = c.settle(req::settle(t1)).await.unwrap();
    assert_ne!(fork0.results[0].returned, fork1.results[0].returned);
    assert_ne!(fork0.reveal_json, fork1.reveal_json, "the forks' reveals must differ");
    assert!(
        fork1.reveal_json.contains(r#""decisions":[[{"seat":0,"action":"raise"}]]"#),
        "the reveal lists the decisions: {}",
        fork1.reveal_json
    );
    assert!(fork0.reveal_json.contains(r#""decisions":[]"#), "{}", fork0.reveal_json);
    server.stop().await;
}

/// `reddog verify` refuses malformed reveals as malformed (exit status 2), never as verified:
/// card text that is not canonical (`jd`, `10h`), a numeric round id, a third card dropped or
/// extra cards, duplicate or unknown keys.
#[test]
fn reddog_verify_refuses_malformed_reveals() {
    use reddog::fairness::{DealInputs, FairShoe, ServerSeed};
    use reddog::game::{Card, Decks, HandClass};
    let seed = ServerSeed::from_bytes(SEED);
    let deal = |nonce: u64| {
        let inputs = DealInputs { server_seed: &seed, client_seed: CLIENT_SEED.as_bytes(), nonce, decks: Decks::ONE };
        FairShoe::deal(&inputs, 4)
    };
    let text = |c: &[Card]| c.iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(",");
    let reveal = |nonce: u64, cards: String, tail: &str| {
        format!(
            r#"{{"algorithm":"reddog-deal-v1","server_seed":"{}","commitment":"{}","client_seed":"{CLIENT_SEED}","nonce":{nonce},"decks":1,"cards":[{cards}]{tail}}}"#,
            seed.reveal_hex(),
            seed.commitment()
        )
    };
    // A non-consecutive deal, so the reveal must list exactly three cards.
    let nonce = nonce_for(Want::Between);
    let cards = deal(nonce);
    assert!(matches!(HandClass::of(cards[0], cards[1]), HandClass::NonConsecutive(_)));
    // A non-consecutive deal whose first card is a ten.
    let (ten_nonce, ten_cards) = (0..10_000u64)
        .map(|n| (n, deal(n)))
        .find(|(_, c)| {
            c[0].to_string().starts_with('T') && matches!(HandClass::of(c[0], c[1]), HandClass::NonConsecutive(_))
        })
        .unwrap();
    let id = r#","round_id":"r-1""#;
    let verify = |json: &str| {
        let mut child = std::process::Command::new(crate::common::reddog_binary())
            .args(["verify", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(json.as_bytes()).unwrap();
        child.wait().unwrap().code()
    };
    assert_eq!(verify(&reveal(nonce, text(&cards[..3]), id)), Some(0), "the genuine reveal verifies");
    assert_eq!(verify(&reveal(ten_nonce, text(&ten_cards[..3]), id)), Some(0), "the genuine reveal verifies");
    let lower = ten_cards[0].to_string().to_lowercase();
    let upper = cards[0].to_string().to_uppercase();
    let ten = ten_cards[0].to_string().replace('T', "10");
    let malformed = [
        ("lower-case rank", reveal(ten_nonce, format!("\"{lower}\",{}", text(&ten_cards[1..3])), id)),
        ("upper-case suit", reveal(nonce, format!("\"{upper}\",{}", text(&cards[1..3])), id)),
        ("`10` for a ten", reveal(ten_nonce, format!("\"{ten}\",{}", text(&ten_cards[1..3])), id)),
        ("numeric round id", reveal(nonce, text(&cards[..3]), r#","round_id":17"#)),
        ("third card dropped", reveal(nonce, text(&cards[..2]), id)),
        ("an extra card", reveal(nonce, text(&cards[..4]), id)),
        ("duplicate key", reveal(nonce, text(&cards[..3]), r#","round_id":"r-1","nonce":0"#)),
        ("unknown key", reveal(nonce, text(&cards[..3]), r#","round_id":"r-1","extra":1"#)),
    ];
    for (what, json) in &malformed {
        assert_eq!(verify(json), Some(2), "{what} must be refused as malformed: {json}");
    }
}

/// The binding in detail: `round_id` is required; another table id is refused naming
/// `table_id`; an unknown table is NOT_FOUND; a commitment from before the binding existed
/// (no round in it) still serves the round the StartRound names; the response echoes what the
/// player must be shown.
#[tokio::test]
async fn commit_seed_binds_round_id_nonce_and_table() {
    let server = TestServer::start(&ring_a(), TTL).await;
    let mut c = server.client().await;
    let status = c.commit_seed(req::commit_seed().round("")).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(status.message().starts_with("round_id"), "{status:?}");
    let status = c.commit_seed(req::commit_seed().round("r-1").table("vip")).await.unwrap_err();
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    assert!(status.message().starts_with("table_id"), "{status:?}");

    let committed = commit(&mut c, "r-1", 77).await;
    assert_eq!((committed.nonce, committed.table_id.as_str(), committed.decks), (77, "default", 1));
    let other_table = start(committed.commitment_token.clone(), "r-1", "seed".into(), 77, &[500]).table("vip");
    let status = c.start_round(other_table).await.unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert!(status.message().starts_with("table_id"), "{status:?}");
    let no_round_id = start(committed.commitment_token.clone(), "", "seed".into(), 77, &[500]);
    let status = c.start_round(no_round_id).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    let named = start(committed.commitment_token.clone(), "r-1", "seed".into(), 77, &[500]).table("default");
    let started = c.start_round(named).await.unwrap();
    assert_eq!(started.table_id, "default");
    assert_eq!(started.commitment, committed.commitment);
    server.stop().await;
}

/// The table's rules are bound at CommitSeed and travel in the commitment token: an engine
/// restarted on the same key ring with every odds set to 1 and six decks deals a commitment
/// made under the standard one-deck table under the committed rules (the answer's rules
/// digest, the reveal's paytable and shoe are the committed ones). A commitment of a format
/// from before rules travelled (its digest only, or no digest) is older than the support
/// window: refused as such (INVALID_ARGUMENT on `commitment_token`, reason `TOKEN_TOO_OLD`),
/// never dealt under a guess.
#[tokio::test]
async fn a_table_change_after_commit_seed_deals_under_the_committed_rules() {
    use tonic_types::StatusExt;
    let standard = TestServer::start(&ring_a(), TTL).await;
    let committed = commit(&mut standard.client().await, "r-1", 3).await;
    standard.stop().await;
    assert_eq!(committed.rules_digest.len(), 64);

    let changed = Table::try_from(TableSpec { decks: Some(6), ..Default::default() })
        .unwrap()
        .with_paytable(Paytable::new([1; 11], 1).unwrap())
        .unwrap();
    let changed = TestServer::start_with(&ring_a(), TTL, changed).await;
    let mut c = changed.client().await;
    let new_digest = c.get_rules(req::get_rules()).await.unwrap().rules_digest;
    assert_ne!(new_digest, committed.rules_digest);
    let started = c.start_round(start(committed.commitment_token, "r-1", "seed".into(), 3, &[500])).await.unwrap();
    let settled = c.settle(req::settle(started.round_token).round("r-1")).await.unwrap();
    let reveal = settled.reveal.unwrap();
    assert_eq!((reveal.rules_digest.as_str(), reveal.decks), (committed.rules_digest.as_str(), 1));
    let standard: Vec<u32> = reddog::game::Spread::all().map(|s| Paytable::STANDARD.spread_odds(s)).collect();
    assert_eq!(reveal.paytable.unwrap().spread, standard, "the committed paytable, not all ones");

    // The same commitment in the formats of engines before rules travelled: the digest and
    // no rules, or neither.
    let old_format = |round_id: &str, nonce: u64, digest: Vec<u8>| {
        let mut p = reddog::testing::commitment_payload(SEED, round_id, nonce, &default_table(), 1, i64::MAX);
        (p.rules_digest, p.paytable, p.min_bet, p.max_bet) = (digest, vec![], 0, 0);
        if p.rules_digest.is_empty() {
            (p.currency, p.minor_unit_exponent) = (String::new(), 0);
        }
        p.issued_at_unix_ms = 0;
        reddog::service::KeyRing::from_json(&ring_a())
            .unwrap()
            .seal(reddog::testing::TokenKind::Commitment, &p)
            .unwrap()
    };
    for (round_id, nonce, digest) in [("r-2", 4, hex::decode(&committed.rules_digest).unwrap()), ("r-9", 9, vec![])] {
        let status = c.start_round(start(old_format(round_id, nonce, digest), round_id, "seed".into(), nonce, &[500]));
        let status = status.await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert_eq!(
            status.message(),
            "commitment_token: sealed before commitments carried their round and table: this engine reads only \
             tokens of the last 30 days"
        );
        let info = status.get_error_details().error_info().unwrap().clone();
        assert_eq!((info.reason.as_str(), info.metadata["field"].as_str()), ("TOKEN_TOO_OLD", "commitment_token"));
    }
    changed.stop().await;
}

/// StartRound, Decide and Settle answer the step and the transcript t_step, which equal the
/// chain recomputed from the round's inputs (fairness::transcript); a retried Decide with its
/// decisions in another order returns identical token bytes and transcript.
#[tokio::test]
async fn every_step_answers_the_recomputed_transcript() {
    use reddog::fairness::{ServerSeed, StartInputs};
    use reddog::game::{Decision, Decks, Money};
    let server = TestServer::start(&ring_a(), TTL).await;
    let mut c = server.client().await;
    let nonce = nonce_for(Want::Outside);
    let bets = [500u64, 600, 700];
    let token = bound_commitment_token(&ring_a(), SEED, nonce);
    let started = c.start_round(req::start_round(token).nonce(nonce).bets(&bets)).await.unwrap();
    let commitment = ServerSeed::from_bytes(SEED).commitment().0;
    let money: Vec<Money> = bets.iter().map(|&b| Money(b)).collect();
    let round_id = format!("round-{nonce}");
    // The default table's rules (one deck, standard paytable and limits, no currency
    // configured: XXX with exponent 2), as GetRules states their digest.
    let digest = reddog::fairness::TableRules {
        decks: Decks::ONE,
        paytable: &Paytable::STANDARD,
        limits: reddog::game::BetLimits::STANDARD,
        currency: "XXX",
        exponent: 2,
        sandbox: false,
    }
    .digest();
    let rules = c.get_rules(req::get_rules()).await.unwrap();
    assert_eq!(rules.rules_digest, digest.to_hex());
    let t0 = StartInputs {
        commitment: &commitment,
        table_id: "default",
        round_id: &round_id,
        nonce,
        decks: Decks::ONE,
        client_seed: CLIENT_SEED.as_bytes(),
        paytable: &Paytable::STANDARD,
        bets: &money,
        rules_digest: Some(&digest),
    }
    .transcript();
    assert_eq!((started.step, started.transcript.as_str()), (0, t0.to_hex().as_str()));
    let first = c.decide(req::decide(started.round_token.clone()).stand(2).raise(0)).await.unwrap();
    let retry = c.decide(req::decide(started.round_token).raise(0).stand(2)).await.unwrap();
    assert_eq!(first, retry, "the same decisions in another order: identical answer and token");
    let t1 = t0.decide(&[(0, Decision::Raise), (2, Decision::Stand)]);
    assert_eq!((first.step, first.transcript.clone()), (1, t1.to_hex()));
    let second = c.decide(req::decide(first.round_token).raise(1)).await.unwrap();
    let t2 = t1.decide(&[(1, Decision::Raise)]);
    assert_eq!((second.step, second.transcript.clone()), (2, t2.to_hex()));
    let settled = c.settle(req::settle(second.round_token)).await.unwrap();
    assert_eq!((settled.step, settled.transcript.clone()), (2, t2.to_hex()));
    assert!(settled.reveal_json.contains(
        r#""decisions":[[{"seat":0,"action":"raise"},{"seat":2,"action":"stand"}],[{"seat":1,"action":"raise"}]]"#
    ));
    server.stop().await;
}

/// Tokens live for the support window (30 days after their issue) and only in the formats
/// sealed within it. A round token is accepted up to the window's last millisecond and
/// refused one after, with `TOKEN_TOO_OLD` naming `round_token` (Decide and Settle alike); a
/// token of a format from before the window — version 1, a round without its transcript — is
/// refused the same way, never read by a compatibility branch; an undated token (sealed
/// before payloads carried an issue time) lives until the window closes on its format.
#[tokio::test]
async fn tokens_older_than_the_support_window_get_a_precise_refusal() {
    use reddog::testing::{RoundPayload, TokenKind};
    use tonic_types::StatusExt;
    const WINDOW_MS: i64 = 30 * 24 * 60 * 60 * 1000;
    const UNDATED_MS: i64 = 1_796_601_600_000; // 2026-12-07T00:00:00Z
    let clock = TestClock::at(UNDATED_MS + 1_000);
    let mut s = settings(&ring_a());
    s.clock = clock.clock();
    let server = TestServer::spawn(s).await;
    let mut c = server.client().await;
    let too_old = |status: tonic::Status, field: &str| {
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        let info = status.get_error_details().error_info().unwrap().clone();
        assert_eq!((info.reason.as_str(), info.metadata["field"].as_str()), ("TOKEN_TOO_OLD", field), "{status:?}");
        assert!(status.message().starts_with(&format!("{field}: ")), "{status:?}");
        status.message().to_string()
    };

    // A round issued now (its commitment's CommitSeed time): usable for exactly the window.
    // The engine draws the seed, so commit until a deal that waits for a decision comes up
    // (about three tries in four).
    let mut started = None;
    for nonce in 0..64 {
        let committed = c.commit_seed(req::commit_seed().nonce(nonce)).await.unwrap();
        let round = c.start_round(req::start_round(committed.commitment_token).nonce(nonce)).await.unwrap();
        if round.round.as_ref().is_some_and(|r| r.awaiting_decisions) {
            started = Some(round);
            break;
        }
    }
    let started = started.expect("a deal awaiting a decision within 64 rounds");
    let token = started.round_token;
    clock.advance(Duration::from_millis(WINDOW_MS as u64));
    let decided = c.decide(req::decide(token.clone()).raise(0)).await.expect("usable at the window's last instant");
    c.settle(req::settle(decided.round_token.clone())).await.expect("so is the token Decide returned");
    clock.advance(Duration::from_millis(1));
    let said = too_old(c.settle(req::settle(decided.round_token)).await.unwrap_err(), "round_token");
    assert!(said.contains("more than the 30-day support window ago"), "{said}");
    too_old(c.decide(req::decide(token.clone()).raise(0)).await.unwrap_err(), "round_token");

    // An undated round token (a payload without an issue time) is read as issued at
    // 2026-12-07T00:00:00Z: accepted up to 30 days after that, refused after.
    let ring = reddog::service::KeyRing::from_json(&ring_a()).unwrap();
    let fresh = TestServer::spawn({
        let mut s = settings(&ring_a());
        s.clock = TestClock::at(UNDATED_MS + WINDOW_MS).clock();
        s
    })
    .await;
    let mut f = fresh.client().await;
    let payload = |round: &[u8]| {
        let opened: RoundPayload = ring.open(TokenKind::Round, round).unwrap();
        opened
    };
    let mut undated = payload(&token);
    undated.issued_at_unix_ms = 0;
    f.settle(req::settle(ring.seal(TokenKind::Round, &undated).unwrap()))
        .await
        .expect("an undated token, in the window");
    too_old(c.settle(req::settle(ring.seal(TokenKind::Round, &undated).unwrap())).await.unwrap_err(), "round_token");

    // Formats from before the window: a round without its transcript and rules, a version-1
    // token (recognised by its version byte).
    let mut pre_transcript = payload(&token);
    (pre_transcript.transcript, pre_transcript.table_id, pre_transcript.decided_in) = (vec![], String::new(), vec![]);
    (pre_transcript.currency, pre_transcript.minor_unit_exponent) = (String::new(), 0);
    (pre_transcript.min_bet, pre_transcript.max_bet) = (0, 0);
    let sealed = ring.seal(TokenKind::Round, &pre_transcript).unwrap();
    let said = too_old(f.settle(req::settle(sealed.clone())).await.unwrap_err(), "round_token");
    assert_eq!(
        said,
        "round_token: sealed before rounds carried their transcript and rules: this engine reads only tokens of the \
         last 30 days"
    );
    too_old(f.decide(req::decide(sealed).stand(0)).await.unwrap_err(), "round_token");
    let mut v1 = token.clone();
    v1[0] = 1;
    let said = too_old(f.settle(req::settle(v1)).await.unwrap_err(), "round_token");
    assert!(said.starts_with("round_token: sealed in format version 1"), "{said}");
    let mut v1_commitment = bound_commitment_token(&ring_a(), SEED, 7);
    v1_commitment[0] = 1;
    let status = f.start_round(req::start_round(v1_commitment).nonce(7)).await.unwrap_err();
    too_old(status, "commitment_token");
    server.stop().await;
    fresh.stop().await;
}
