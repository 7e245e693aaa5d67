//! Every token the engine issues opens again (a round must always be settleable): for any accepted
//! StartRound up to every maximum at once — a 1024-byte client seed, a 128-byte round id, 7
//! seats at the largest bet a table may allow, the largest odds, a 32-byte key id — and every
//! sequence of Decides in any grouping, each token issued settles, and the round ends in a
//! Settle that succeeds. Driven through the service's handlers (no network), with the
//! largest token seen compared with `MAX_TOKEN_LEN`.
//!
//! `cargo test --test it token_budget:: -- --nocapture` prints the largest token seen.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use proptest::prelude::*;
use reddog::game::table::largest_max_bet;
use reddog::game::{BetLimits, Decks, Money, Paytable, Table};
use reddog::service::proto::red_dog_server::RedDog;

use reddog::testing::MAX_TOKEN_LEN;

use crate::common::req;
use reddog::service::{EngineConfig, KeyRing, RedDogService};
use tonic::Request;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

fn service() -> (RedDogService, u64) {
    let paytable = Paytable::new([10_000; 11], 10_000).unwrap();
    let max_bet = largest_max_bet(&paytable);
    let table = Table::new(Decks::new(8).unwrap(), paytable, BetLimits::new(Money(1), max_bet).unwrap()).unwrap();
    let id = "k".repeat(32);
    let ring = KeyRing::from_json(&format!(r#"{{"primary":"{id}","keys":{{"{id}":"{}"}}}}"#, "ab".repeat(32))).unwrap();
    let tables = reddog::service::Tables::single(table);
    let audit =
        reddog::service::AuditSink::start(std::io::sink(), reddog::service::AuditOptions::local(), &tables).unwrap();
    let svc = RedDogService::new(EngineConfig {
        audit,
        tables,
        key_ring: ring,
        commitment_ttl: Duration::from_secs(600),
        clock: reddog::service::Clock::system(),
        metrics: Default::default(),
    });
    (svc, max_bet.0)
}

/// UTF-8 text of at most `max` bytes (at least one character), mixing 1- to 4-byte
/// characters, most often filled to the limit.
fn text(max: usize) -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        Just('a'),
        Just('é'),
        Just('世'),
        Just('🎲'),
        any::<char>().prop_filter("no control characters", |c| !c.is_control()),
    ];
    (proptest::collection::vec(ch, 1..=max), prop::bool::weighted(0.5)).prop_map(move |(chars, fill)| {
        let mut s = String::new();
        for c in chars.iter().cycle().take(if fill { max } else { chars.len() }) {
            if s.len() + c.len_utf8() > max {
                break;
            }
            s.push(*c);
        }
        if s.is_empty() {
            s.push('a');
        }
        s
    })
}

/// Seats, a decision for some of them, grouped into Decide calls.
#[derive(Debug, Clone)]
struct Plan {
    bets: Vec<u64>,
    /// Decide calls in order: (seat, raise?) pairs.
    calls: Vec<Vec<(u32, bool)>>,
}

fn plan(max_bet: u64) -> impl Strategy<Value = Plan> {
    (1usize..=7)
        .prop_flat_map(move |seats| {
            (
                proptest::collection::vec(prop_oneof![Just(max_bet), 1..=max_bet], seats),
                Just((0..seats as u32).collect::<Vec<_>>()).prop_shuffle(),
                proptest::collection::vec(any::<bool>(), seats),
                proptest::collection::vec(1usize..=7, seats),
                0..=seats,
            )
        })
        .prop_map(|(bets, order, raises, sizes, undecided)| {
            let decided = &order[..order.len() - undecided];
            let mut calls = Vec::new();
            let mut i = 0;
            let mut k = 0;
            while i < decided.len() {
                let n = sizes[k].min(decided.len() - i);
                calls.push(decided[i..i + n].iter().map(|&s| (s, raises[s as usize])).collect());
                i += n;
                k += 1;
            }
            Plan { bets, calls }
        })
}

fn note(token: &[u8]) {
    assert!(token.len() <= MAX_TOKEN_LEN, "{} > {MAX_TOKEN_LEN}", token.len());
    LARGEST.fetch_max(token.len(), Ordering::Relaxed);
}

fn play(
    svc: &RedDogService,
    rt: &tokio::runtime::Runtime,
    client_seed: String,
    round_id: String,
    nonce: u64,
    plan: &Plan,
    max_bet: u64,
) -> Result<bool, TestCaseError> {
    let committed = rt
        .block_on(svc.commit_seed(Request::new(req::commit_seed().round(&round_id).nonce(nonce).build())))
        .map_err(|s| TestCaseError::fail(format!("CommitSeed: {s:?}")))?
        .into_inner();
    note(&committed.commitment_token);
    let started = rt
        .block_on(
            svc.start_round(Request::new(
                req::start_round(committed.commitment_token)
                    .client_seed(client_seed)
                    .nonce(nonce)
                    .round(round_id)
                    .bets(&plan.bets)
                    .limits(1, max_bet)
                    .build(),
            )),
        )
        .map_err(|s| TestCaseError::fail(format!("StartRound: {s:?}")))?
        .into_inner();
    note(&started.round_token);
    let mut tokens = vec![started.round_token.clone()];
    let mut token = started.round_token;
    let non_consecutive = started.round.as_ref().is_some_and(|r| r.awaiting_decisions);
    if non_consecutive {
        for call in &plan.calls {
            let decided = rt
                .block_on(
                    svc.decide(Request::new(
                        call.iter()
                            .fold(
                                req::decide(token.clone()),
                                |d, &(seat, raise)| {
                                    if raise { d.raise(seat) } else { d.stand(seat) }
                                },
                            )
                            .build(),
                    )),
                )
                .map_err(|s| TestCaseError::fail(format!("Decide: {s:?}")))?
                .into_inner();
            note(&decided.round_token);
            token = decided.round_token;
            tokens.push(token.clone());
        }
    }
    // Every token issued settles (the newest is the round's; older ones are forks, which the
    // engine cannot refuse — they must still open).
    for (i, t) in tokens.into_iter().enumerate() {
        let settled = rt
            .block_on(svc.settle(Request::new(req::settle(t).build())))
            .map_err(|s| TestCaseError::fail(format!("Settle of token {i}: {s:?}")))?
            .into_inner();
        prop_assert_eq!(settled.results.len(), plan.bets.len());
        prop_assert_eq!(settled.step as usize, i);
    }
    Ok(non_consecutive)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_accepted_round_settles_and_every_token_opens_again(
        client_seed in text(1024),
        round_id in text(128),
        nonce in prop_oneof![Just(u64::MAX), any::<u64>()],
        plan in plan(service().1),
    ) {
        let (svc, max_bet) = service();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        play(&svc, &rt, client_seed, round_id, nonce, &plan, max_bet)?;
    }
}

/// Every maximum at once, one Decide per seat (the most steps), and the largest token seen
/// over this and the property test, printed.
#[test]
fn the_largest_round_of_all_fits_and_the_largest_token_is_measured() {
    let (svc, max_bet) = service();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let seed = "🎲".repeat(256);
    assert_eq!(seed.len(), 1024);
    let plan = Plan { bets: vec![max_bet; 7], calls: (0..7).map(|s| vec![(s, true)]).collect() };
    // A non-consecutive deal, so all seven Decides happen.
    let mut played = false;
    // `play` says whether its own deal was non-consecutive (so all seven Decides happened).
    for nonce in (0..64).map(|n| u64::MAX - n) {
        let round_id = format!("{:0>128}", nonce);
        if play(&svc, &rt, seed.clone(), round_id, nonce, &plan, max_bet).unwrap() {
            played = true;
            break;
        }
    }
    assert!(played, "a non-consecutive deal among 64 nonces");
    let largest = LARGEST.load(Ordering::Relaxed);
    println!(
        "largest token issued: {largest} bytes; MAX_TOKEN_LEN = {MAX_TOKEN_LEN} (the budget also covers a 64-byte table id and a sandbox round's 3-byte marker; this engine's table id is `default`, 57 bytes shorter, and it is not a sandbox table)"
    );
    // 57 bytes of table id and the sandbox marker (a 2-byte key and 1 byte) this table never
    // uses, and 4 of the issue time's 10 (budgeted for any int64; a time of this century
    // takes 6).
    let unused = 57 + 3 + 4;
    assert!(largest + unused <= MAX_TOKEN_LEN);
    // Within 8 bytes of the budget, plus what this table's limits save: the budget takes
    // the token's min_bet and max_bet at MAX_BET (8-byte varints each), where this table's
    // are 1 (1 byte) and its largest max_bet (7 bytes).
    assert!(largest + unused + 8 + 8 > MAX_TOKEN_LEN, "the budget is not loose: {largest}");
}
