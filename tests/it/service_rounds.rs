//! Complete rounds of every hand class, with 1 and 7 seats, through a generated tonic client
//! against the real server on 127.0.0.1:0; every reveal verified; retries return the same.

use std::time::Duration;

use crate::common::*;
use reddog::fairness::{AnyReveal, parse_reveal};
use reddog::game::{Paytable, Spread};
use reddog::service::proto::{self, Action, HandClass, Outcome, Rule};

const TTL: Duration = Duration::from_secs(600);

fn check_reveal(settle: &proto::SettleResponse, commitment: &str) {
    let parsed = parse_reveal(&settle.reveal_json).unwrap();
    assert!(parsed.verify().unwrap().ok(), "reveal must verify: {}", settle.reveal_json);
    let AnyReveal::V2(reveal) = parsed else { panic!("Settle returns a v3 reveal") };
    assert_eq!(reveal.transcript, settle.transcript);
    assert_eq!(reveal.seats.len(), settle.results.len());
    for (seat, result) in reveal.seats.iter().zip(&settle.results) {
        assert_eq!(
            (seat.bet, seat.raised, seat.stake, seat.returned),
            (result.bet, result.raised, result.stake, result.returned)
        );
    }
    assert_eq!(reveal.commitment, commitment);
    let fields = settle.reveal.as_ref().unwrap();
    assert_eq!(fields.server_seed, reveal.server_seed);
    assert_eq!(fields.cards, reveal.cards);
    assert_eq!(fields.client_seed, reveal.client_seed);
    assert_eq!(fields.nonce, reveal.nonce);
    assert_eq!(fields.round_id, reveal.round_id);
    assert_eq!(fields.transcript, reveal.transcript);
    assert_eq!(fields.format, "reddog-reveal-v3");
    assert_eq!(reveal.format, "reddog-reveal-v3");
    let limits = fields.limits.as_ref().unwrap();
    let revealed = reveal.limits.unwrap();
    assert_eq!((limits.min_bet, limits.max_bet), (revealed.min_bet, revealed.max_bet));
    let currency = fields.currency.as_ref().unwrap();
    let revealed = reveal.currency.as_ref().unwrap();
    assert_eq!(
        (currency.code.as_str(), currency.minor_unit_exponent),
        (revealed.code.as_str(), Some(u32::from(revealed.exponent)))
    );
    assert_eq!(Some(&fields.rules_digest), reveal.rules_digest.as_ref());
    assert_eq!(fields.table_id, "default");
    assert_eq!(fields.seats.len(), reveal.seats.len());
    assert_eq!(fields.decisions.len(), reveal.decisions.len());
}

/// Plays one seat of 10.00 through a deal of the given kind, raising when allowed.
async fn play_one(want: Want, expect_class: HandClass, expect: (Outcome, Rule), returned: impl Fn(u64) -> u64) {
    let server = TestServer::start(&ring_a(), TTL).await;
    let mut client = server.client().await;
    let nonce = nonce_for(want);
    let token = bound_commitment_token(&ring_a(), SEED, nonce);
    let started = client.start_round(req::start_round(token).nonce(nonce)).await.unwrap();
    let view = started.round.as_ref().unwrap();
    assert_eq!(view.hand_class(), expect_class);
    assert_eq!(started.round_id, format!("round-{nonce}"));
    let cards = deal(SEED, CLIENT_SEED, nonce);
    assert_eq!(view.first_card.as_ref().unwrap().code, cards[0].to_string());
    assert_eq!(view.second_card.as_ref().unwrap().code, cards[1].to_string());
    let mut round_token = started.round_token.clone();
    let mut raised = false;
    match expect_class {
        HandClass::NonConsecutive => {
            assert!(view.awaiting_decisions);
            assert!(view.spread >= 1 && view.spread <= 11);
            assert!(view.third_card.is_none(), "third card must stay hidden");
            assert_eq!(view.seats[0].allowed_actions, vec![Action::Raise as i32, Action::Stand as i32]);
            let decided = client.decide(req::decide(round_token.clone()).raise(0)).await.unwrap();
            assert_eq!(decided.raised_amount, 1000);
            let v = decided.round.unwrap();
            assert!(!v.awaiting_decisions);
            assert_eq!(v.third_card.unwrap().code, cards[2].to_string());
            assert_eq!(v.seats[0].stake, 2000);
            assert!(v.seats[0].allowed_actions.is_empty());
            round_token = decided.round_token;
            raised = true;
        }
        HandClass::Pair => {
            assert!(!view.awaiting_decisions);
            assert_eq!(view.third_card.as_ref().unwrap().code, cards[2].to_string());
            assert!(view.seats[0].allowed_actions.is_empty());
        }
        _ => {
            assert!(!view.awaiting_decisions);
            assert!(view.third_card.is_none());
            assert_eq!(view.spread, 0);
        }
    }
    let settle = client.settle(req::settle(round_token.clone()).round(format!("round-{nonce}"))).await.unwrap();
    let r = &settle.results[0];
    assert_eq!((r.outcome(), r.rule()), expect);
    assert_eq!(r.raised, raised);
    assert_eq!(r.returned, returned(r.stake));
    assert_eq!(settle.total_returned, r.returned);
    assert_eq!(settle.total_staked, r.stake);
    let commitment = ServerSeedHex::commitment(SEED);
    check_reveal(&settle, &commitment);
    assert_eq!(settle.reveal.as_ref().unwrap().cards.len(), if want == Want::Consecutive { 2 } else { 3 });
    // Settling the same token again returns the same settlement.
    let again = client.settle(req::settle(round_token)).await.unwrap();
    assert_eq!(again, settle);
    server.stop().await;
}

struct ServerSeedHex;
impl ServerSeedHex {
    fn commitment(seed: [u8; 32]) -> String {
        reddog::fairness::ServerSeed::from_bytes(seed).commitment().to_string()
    }
}

#[tokio::test]
async fn three_of_a_kind_pays_eleven_to_one() {
    play_one(Want::ThreeOfAKind, HandClass::Pair, (Outcome::Win, Rule::ThreeOfAKind), |s| s * 12).await;
}

#[tokio::test]
async fn a_pair_without_match_pushes() {
    play_one(Want::PairNoMatch, HandClass::Pair, (Outcome::Push, Rule::PairNoMatch), |s| s).await;
}

#[tokio::test]
async fn a_consecutive_hand_pushes() {
    play_one(Want::Consecutive, HandClass::Consecutive, (Outcome::Push, Rule::Consecutive), |s| s).await;
}

fn spread_odds(want: Want) -> u64 {
    let cards = deal(SEED, CLIENT_SEED, nonce_for(want));
    let spread = cards[0].rank().value().abs_diff(cards[1].rank().value()) - 1;
    u64::from(Paytable::STANDARD.spread_odds(Spread::new(spread).unwrap()))
}

#[tokio::test]
async fn a_third_card_between_wins_at_the_spread_odds_on_the_raised_stake() {
    let odds = spread_odds(Want::Between);
    play_one(Want::Between, HandClass::NonConsecutive, (Outcome::Win, Rule::ThirdCardBetween), |s| {
        assert_eq!(s, 2000);
        s * (odds + 1)
    })
    .await;
}

#[tokio::test]
async fn a_third_card_matching_loses() {
    play_one(Want::Matches, HandClass::NonConsecutive, (Outcome::Lose, Rule::ThirdCardMatches), |_| 0).await;
}

#[tokio::test]
async fn a_third_card_outside_loses() {
    play_one(Want::Outside, HandClass::NonConsecutive, (Outcome::Lose, Rule::ThirdCardOutside), |_| 0).await;
}

/// Seven seats on one non-consecutive deal: two decide in one call (all or nothing), three
/// in another, two never decide and stand by default at Settle.
#[tokio::test]
async fn seven_seats_share_one_deal_and_decide_independently() {
    let server = TestServer::start(&ring_a(), TTL).await;
    let mut client = server.client().await;
    let nonce = nonce_for(Want::Between);
    let odds = spread_odds(Want::Between);
    let bets = [500, 600, 700, 800, 900, 1000, 30_000];
    let token = bound_commitment_token(&ring_a(), SEED, nonce);
    let started = client.start_round(req::start_round(token).nonce(nonce).bets(&bets)).await.unwrap();
    let view = started.round.unwrap();
    assert_eq!(view.seats.len(), 7);
    assert!(view.seats.iter().all(|s| s.allowed_actions.len() == 2));
    let d1 = client.decide(req::decide(started.round_token).raise(0).stand(6).round(&started.round_id)).await.unwrap();
    assert_eq!(d1.raised_amount, 500);
    let v = d1.round.as_ref().unwrap();
    assert!(v.awaiting_decisions && v.third_card.is_none());
    assert!(v.seats[0].allowed_actions.is_empty() && v.seats[6].allowed_actions.is_empty());
    assert_eq!(v.seats[1].allowed_actions.len(), 2);
    let d2 = client.decide(req::decide(d1.round_token).raise(1).stand(2).raise(5)).await.unwrap();
    assert_eq!(d2.raised_amount, 600 + 1000);
    assert!(d2.round.as_ref().unwrap().awaiting_decisions);
    let settle = client.settle(req::settle(d2.round_token)).await.unwrap();
    let raised = [true, true, false, false, false, true, false];
    for (i, r) in settle.results.iter().enumerate() {
        assert_eq!(r.seat as usize, i);
        assert_eq!(r.raised, raised[i]);
        assert_eq!(r.stood_by_default, i == 3 || i == 4);
        let stake = bets[i] * if raised[i] { 2 } else { 1 };
        assert_eq!(r.stake, stake);
        assert_eq!(r.returned, stake * (odds + 1));
        assert_eq!(r.outcome(), Outcome::Win);
    }
    assert_eq!(settle.total_staked, settle.results.iter().map(|r| r.stake).sum::<u64>());
    assert_eq!(settle.total_returned, settle.results.iter().map(|r| r.returned).sum::<u64>());
    assert!(settle.round.as_ref().unwrap().third_card.is_some());
    check_reveal(&settle, &ServerSeedHex::commitment(SEED));
    server.stop().await;
}

#[tokio::test]
async fn seven_seats_on_a_pair_are_settled_at_once() {
    let server = TestServer::start(&ring_a(), TTL).await;
    let mut client = server.client().await;
    let nonce = nonce_for(Want::ThreeOfAKind);
    let token = bound_commitment_token(&ring_a(), SEED, nonce);
    let started = client.start_round(req::start_round(token).nonce(nonce).bets(&[500; 7])).await.unwrap();
    let settle = client.settle(req::settle(started.round_token)).await.unwrap();
    assert_eq!(settle.results.len(), 7);
    assert!(settle.results.iter().all(|r| r.returned == 6000 && r.rule() == Rule::ThreeOfAKind));
    assert_eq!(settle.total_returned, 42_000);
    server.stop().await;
}

/// The platform's real flow: CommitSeed, then a round whose seed the test never sees until
/// the reveal.
#[tokio::test]
async fn commit_seed_then_a_full_round_reveals_the_committed_seed() {
    let server = TestServer::start(&ring_a(), TTL).await;
    let mut client = server.client().await;
    let rules_digest = client.get_rules(req::get_rules()).await.unwrap().rules_digest;
    assert_eq!(rules_digest.len(), 64);
    for i in 0..20u64 {
        let committed = client.commit_seed(req::commit_seed().round(format!("r{i}")).nonce(i)).await.unwrap();
        assert_eq!(committed.commitment.len(), 64);
        assert_eq!(committed.round_id, format!("r{i}"));
        assert_eq!(committed.algorithm, "reddog-deal-v1");
        let start = req::start_round(committed.commitment_token).round(format!("r{i}")).nonce(i).bets(&[500, 1000]);
        let started = client.start_round(start).await.unwrap();
        assert_eq!(started.commitment, committed.commitment);
        let mut token = started.round_token;
        if started.round.unwrap().awaiting_decisions {
            token =
                client.decide(req::decide(token).raise(1).stand(0).round(format!("r{i}"))).await.unwrap().round_token;
        }
        let settle = client.settle(req::settle(token)).await.unwrap();
        assert_eq!(settle.round_id, format!("r{i}"));
        check_reveal(&settle, &committed.commitment);
        // The rules digest shown with the commitment is the table's and the reveal's.
        assert_eq!(committed.rules_digest, rules_digest);
        assert_eq!(settle.reveal.unwrap().rules_digest, rules_digest);
    }
    server.stop().await;
}

/// Retries: the same StartRound request deals the same cards and returns the same token;
/// the same Decide on the same token returns the same token.
#[tokio::test]
async fn retried_calls_return_identical_answers() {
    let server = TestServer::start(&ring_a(), TTL).await;
    let mut client = server.client().await;
    let nonce = nonce_for(Want::Outside);
    let start = req::start_round(commitment_token(&ring_a(), SEED, nonce, 60_000)).nonce(nonce).bets(&[500, 500]);
    let a = client.start_round(start.clone()).await.unwrap();
    let b = client.start_round(start).await.unwrap();
    assert_eq!(a, b);
    let decide = req::decide(a.round_token.clone()).raise(0);
    let d1 = client.decide(decide.clone()).await.unwrap();
    let d2 = client.decide(decide).await.unwrap();
    assert_eq!(d1, d2);
    server.stop().await;
}

#[tokio::test]
async fn get_rules_states_the_table() {
    let server = TestServer::start(&ring_a(), Duration::from_secs(90)).await;
    let rules = server.client().await.get_rules(req::get_rules()).await.unwrap();
    assert_eq!(rules.decks, 1);
    assert_eq!(rules.spread_odds.iter().map(|s| s.odds).collect::<Vec<_>>(), vec![5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1]);
    assert_eq!(rules.three_of_a_kind_odds, 11);
    assert_eq!(rules.table_limits, limits(500, 30_000));
    assert_eq!(rules.max_seats, 7);
    assert_eq!(rules.fairness_algorithm, "reddog-deal-v1");
    assert_eq!(rules.fairness_algorithm_version, 1);
    assert_eq!(rules.commitment_ttl_secs, 90);
    assert_eq!(rules.raise_rule, "raise when the spread is 7 or more, otherwise stand");
    let (numer, denom) = standard_one_deck_rtp();
    assert_eq!(rules.rtp_exact, format!("{numer}/{denom}"));
    assert_eq!(rules.rtp_decimal, decimal_10(numer, denom));
    server.stop().await;
}

/// The return to player of one unit bet at the standard paytable with one deck, raising at
/// spread 7 or more, as a reduced fraction: counted here over every ordered deal of three
/// cards (52 × 51 × 50), independently of the engine's odds module.
fn standard_one_deck_rtp() -> (u64, u64) {
    let rank = |card: usize| (card / 4) as i64;
    let (mut deals, mut net) = (0i64, 0i64);
    for a in 0..52 {
        for b in (0..52).filter(|&b| b != a) {
            for c in (0..52).filter(|&c| c != a && c != b) {
                deals += 1;
                let (x, y, z) = (rank(a), rank(b), rank(c));
                let (lo, hi) = (x.min(y), x.max(y));
                net += match hi - lo {
                    0 if z == x => 11, // three of a kind pays 11 to 1
                    0 | 1 => 0,        // a pair without match, a consecutive hand: push
                    gap => {
                        let spread = gap - 1;
                        let stake = if spread >= 7 { 2 } else { 1 };
                        let odds = match spread {
                            1 => 5,
                            2 => 4,
                            3 => 2,
                            _ => 1,
                        };
                        if lo < z && z < hi { stake * odds } else { -stake }
                    }
                };
            }
        }
    }
    let (numer, denom) = ((deals + net) as u64, deals as u64);
    let gcd = (1..=denom).rev().find(|d| numer % d == 0 && denom % d == 0).unwrap();
    (numer / gcd, denom / gcd)
}

/// `numer/denom` with 10 decimal places, rounded half up.
fn decimal_10(numer: u64, denom: u64) -> String {
    let scaled = (u128::from(numer) * 10u128.pow(10) * 2 + u128::from(denom)) / (2 * u128::from(denom));
    format!("{}.{:010}", scaled / 10u128.pow(10), scaled % 10u128.pow(10))
}

/// Health: "" and reddog.v1.RedDog flip to NOT_SERVING when draining; liveness stays up.
#[tokio::test]
async fn health_flips_to_not_serving_on_shutdown() {
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};
    let server = TestServer::start(&ring_a(), TTL).await;
    let channel =
        tonic::transport::Endpoint::from_shared(format!("http://{}", server.addr)).unwrap().connect().await.unwrap();
    let mut health = HealthClient::new(channel);
    for name in ["", "reddog.v1.RedDog", "liveness"] {
        let r = health.check(HealthCheckRequest { service: name.into() }).await.unwrap().into_inner();
        assert_eq!(r.status(), ServingStatus::Serving, "{name:?}");
    }
    let mut overall = health.watch(HealthCheckRequest { service: String::new() }).await.unwrap().into_inner();
    let mut live = health.watch(HealthCheckRequest { service: "liveness".into() }).await.unwrap().into_inner();
    assert_eq!(overall.message().await.unwrap().unwrap().status(), ServingStatus::Serving);
    assert_eq!(live.message().await.unwrap().unwrap().status(), ServingStatus::Serving);
    let stopping = tokio::spawn(server.stop());
    let next = tokio::time::timeout(Duration::from_secs(5), overall.message()).await.unwrap();
    assert_eq!(next.unwrap().unwrap().status(), ServingStatus::NotServing);
    drop((overall, live));
    tokio::time::timeout(Duration::from_secs(10), stopping).await.unwrap().unwrap();
}

/// The example of tests/README.md (kept compiling and passing here): a raise adds the seat's
/// bet, and a whole round played with one call stakes double when seat 0 could raise.
#[tokio::test]
async fn a_raise_doubles_that_seats_stake() {
    let server = TestServer::start(&ring_a(), Duration::from_secs(600)).await;
    let mut c = server.client().await;
    let nonce = nonce_for(Want::Between); // a deal of the kind the test needs, under SEED
    let token = bound_commitment_token(&ring_a(), SEED, nonce);
    let started = c.start_round(req::start_round(token).nonce(nonce).bets(&[500, 500])).await.unwrap();
    let decided = c.decide(req::decide(started.round_token).raise(0).stand(1)).await.unwrap();
    assert_eq!(decided.raised_amount, 500);
    let played = c.play_round(req::round().bets(&[500]).raise(0)).await;
    let raised = played.decided.is_some();
    assert_eq!(
        (played.settled.results[0].raised, played.settled.total_staked),
        (raised, if raised { 1000 } else { 500 })
    );
    server.stop().await;
}
