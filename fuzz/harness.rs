//! The fuzz targets' bodies, shared by the `cargo fuzz` targets (`fuzz/fuzz_targets/*.rs`,
//! nightly, libFuzzer) and by the corpus replay in `cargo test` (`tests/it/fuzz_corpus.rs`,
//! stable). Each target is a function of arbitrary bytes that panics only when an engine
//! property is broken:
//!
//! - [`tokens`]: `KeyRing::open` of arbitrary bytes never panics; a payload the engine
//!   seals always reopens to the same payload; a sealed token with one byte changed never
//!   opens; an opened round payload becomes a round or an invalid-token error, never a panic.
//! - [`requests`]: arbitrary protobuf bytes decoded as each request type (with genuine tokens
//!   swapped in when the input asks, so the fuzzer gets past the token checks) and handled
//!   by the real service: every answer is OK or a caller-mistake status with details
//!   (INVALID_ARGUMENT, OUT_OF_RANGE, FAILED_PRECONDITION; NOT_FOUND for an unknown
//!   `table_id`) — never INTERNAL, never a panic —
//!   and every OK answer is checked like a round below.
//! - [`round`]: a round started from arbitrary inputs (bets within the table's limits or
//!   not, 0–8 seats, any client seed and round id), then any sequence of Decide calls on the
//!   newest or an older token, then Settle: Decide is accepted exactly when the rules allow it
//!   (a model of the round says so), every token issued opens again, every accepted round can
//!   be settled from every token it issued, settling is repeatable, the money adds up
//!   (checked arithmetic) and every reveal verifies.
//!
//! The request builders that depend on the API version (the fields of CommitSeed and the
//! tokens) are in one place: [`commitment_token`] and [`start_request`].
#![allow(dead_code)]

use std::future::Future;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use prost::Message;
use reddog::fairness::{AnyReveal, ServerSeed, parse_reveal};
use reddog::game::table::largest_max_bet;
use reddog::game::{BetLimits, Decks, MAX_SEATS, Money, Paytable, Table};
use reddog::service::proto::red_dog_server::RedDog;
use reddog::service::proto::{self, Action, Outcome};
use reddog::service::{Currency, Tables};
use reddog::service::{EngineConfig, KeyRing, RedDogService};
use reddog::testing::TokenKind;
use reddog::testing::{CommitmentPayload, DEFAULT_TABLE_ID, RoundPayload, RoundState};
use tonic::{Code, Request, Status};

/// The ring every engine here uses: two keys, `f1` primary.
pub const RING: &str = r#"{"primary":"f1","keys":{"f1":"5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a","f0":"a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5"}}"#;
/// A ring with only the retired key: tokens of [`RING`]'s primary must not open with it.
pub const OLD_RING: &str =
    r#"{"primary":"f0","keys":{"f0":"a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5"}}"#;

// ---- input reading ---------------------------------------------------------------------------

/// Reads fuzz input front to back; past the end every read gives zeros (so every input is
/// a valid program).
pub struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Bytes(data)
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn u8(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        head
    }
    pub fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        let got = self.bytes(8);
        b[..got.len()].copy_from_slice(got);
        u64::from_le_bytes(b)
    }
    pub fn u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        let got = self.bytes(4);
        b[..got.len()].copy_from_slice(got);
        u32::from_le_bytes(b)
    }
    /// A string of up to `max` bytes (length from one or two input bytes), lossy UTF-8.
    pub fn text(&mut self, max: usize) -> String {
        let len = if max > 255 { usize::from(self.u8()) * 5 } else { usize::from(self.u8()) };
        String::from_utf8_lossy(self.bytes(len.min(max))).into_owned()
    }
    pub fn rest(&mut self) -> &'a [u8] {
        self.bytes(self.0.len())
    }
}

// ---- engines ---------------------------------------------------------------------------------

/// A service and a second copy of its key ring (to open what it issues).
pub struct Engine {
    pub service: RedDogService,
    pub ring: KeyRing,
    pub table: Table,
}

/// Three engines, each with one table (id `default`): the default table (1 deck,
/// 500–30 000); 6 decks with the standard paytable; 8 decks paying the largest odds allowed
/// with bets up to the largest `max_bet` such a table may have (the largest amounts the engine
/// accepts: seven raised seats paid 10 000 to 1 just fit in `u64`).
pub fn engines() -> &'static [Engine] {
    static ENGINES: OnceLock<Vec<Engine>> = OnceLock::new();
    ENGINES.get_or_init(|| {
        let pay = Paytable::new([10_000; 11], 10_000).unwrap();
        let limits = BetLimits::new(Money(1), largest_max_bet(&pay)).unwrap();
        let big = Table::new(Decks::new(8).unwrap(), pay, limits).unwrap();
        let six = Table::default().with_decks(Decks::new(6).unwrap());
        [Table::default(), six, big]
            .into_iter()
            .map(|table| Engine {
                service: RedDogService::new(EngineConfig {
                    audit: reddog::service::AuditSink::start(
                        std::io::sink(),
                        reddog::service::AuditOptions::local(),
                        &Tables::single(table.clone()),
                    )
                    .unwrap(),
                    tables: Tables::single(table.clone()),
                    key_ring: KeyRing::from_json(RING).unwrap(),
                    commitment_ttl: std::time::Duration::from_secs(3600),
                    clock: reddog::service::Clock::system(),
                    metrics: Default::default(),
                }),
                ring: KeyRing::from_json(RING).unwrap(),
                table,
            })
            .collect()
    })
}

/// Runs a handler to completion on a per-thread current-thread runtime.
pub fn run<F: Future>(f: F) -> F::Output {
    thread_local! {
        static RT: tokio::runtime::Runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    }
    RT.with(|rt| rt.block_on(f))
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

// ---- the API-version-dependent builders ------------------------------------------------------

/// A commitment token over `seed`, sealed as the engine's CommitSeed would: bound to this
/// round id and nonce, at the default table `table` with its (unspecified) currency.
pub fn commitment_token(ring: &KeyRing, seed: [u8; 32], round_id: &str, nonce: u64, table: &Table) -> Vec<u8> {
    // The engines here serve `Tables::single`: no currency configured.
    let named = reddog::service::NamedTable {
        id: DEFAULT_TABLE_ID.to_string(),
        table: table.clone(),
        currency: Currency::unspecified(),
        sandbox: false,
    };
    let now = now_ms();
    let payload = reddog::testing::commitment_payload(seed, round_id, nonce, &named, now, now + 3_600_000);
    ring.seal(TokenKind::Commitment, &payload).unwrap()
}

/// The StartRound request of a round (at the default table).
pub fn start_request(
    commitment_token: Vec<u8>,
    client_seed: String,
    nonce: u64,
    round_id: String,
    bets: &[u64],
    limits: Option<proto::Limits>,
) -> proto::StartRoundRequest {
    proto::StartRoundRequest {
        sandbox_cards: vec![],
        commitment_token,
        client_seed,
        nonce,
        round_id,
        seats: bets.iter().map(|&bet| proto::SeatBet { bet }).collect(),
        player_limits: limits,
        table_id: String::new(),
    }
}

// ---- checks ------------------------------------------------------------------------------

/// A refusal is a caller-mistake code with `google.rpc` details (naming the field), never
/// INTERNAL or UNKNOWN. NOT_FOUND is a caller's mistake only for a table id the engine does
/// not serve (docs/API.md, error table).
pub fn assert_caller_error(what: &str, s: &Status) {
    assert!(
        matches!(s.code(), Code::InvalidArgument | Code::OutOfRange | Code::FailedPrecondition)
            || (s.code() == Code::NotFound && s.message().starts_with("table_id: ")),
        "{what}: answered {:?} {:?}",
        s.code(),
        s.message()
    );
    assert!(!s.details().is_empty(), "{what}: {:?} without details", s.code());
}

/// A round token the engine issued opens with its ring into a consistent round.
pub fn assert_round_token_opens(ring: &KeyRing, token: &[u8]) -> RoundState {
    let payload = ring
        .open::<RoundPayload>(TokenKind::Round, token)
        .unwrap_or_else(|e| panic!("an issued round token ({} bytes) does not reopen: {e}", token.len()));
    RoundState::from_payload(payload).expect("an issued round token holds a consistent round")
}

/// What the test knows about a round: its inputs and each seat's accepted decision.
#[derive(Clone, Debug)]
pub struct Model {
    pub seed: [u8; 32],
    pub client_seed: String,
    pub nonce: u64,
    pub round_id: String,
    pub bets: Vec<u64>,
    /// `Some(true)` raised, `Some(false)` stood, `None` undecided.
    pub decided: Vec<Option<bool>>,
    /// The hand awaits decisions (non-consecutive and some seat undecided).
    pub awaiting: bool,
    /// Decide calls applied.
    pub step: u32,
}

/// Checks a settlement against the model: every seat's stake, outcome and return by the
/// rules, the totals as exact sums, the step, the reveal.
pub fn assert_settlement(m: &Model, s: &proto::SettleResponse) {
    assert_eq!(s.results.len(), m.bets.len(), "one result per seat");
    assert_eq!(s.round_id, m.round_id);
    let (mut staked, mut returned) = (0u128, 0u128);
    for (i, r) in s.results.iter().enumerate() {
        assert_eq!(r.seat as usize, i);
        assert_eq!(r.bet, m.bets[i], "seat {i} bet");
        let raised = m.decided[i] == Some(true);
        assert_eq!(r.raised, raised, "seat {i} raised");
        let factor = if raised { 2 } else { 1 };
        assert_eq!(u128::from(r.stake), u128::from(r.bet) * factor, "seat {i} stake");
        let want = match Outcome::try_from(r.outcome) {
            Ok(Outcome::Win) => {
                assert!(r.odds > 0, "seat {i}: a win pays odds");
                u128::from(r.stake) * (u128::from(r.odds) + 1)
            }
            Ok(Outcome::Push) => u128::from(r.stake),
            Ok(Outcome::Lose) => 0,
            other => panic!("seat {i}: outcome {other:?}"),
        };
        assert_eq!(u128::from(r.returned), want, "seat {i} returned");
        staked += u128::from(r.stake);
        returned += u128::from(r.returned);
    }
    assert_eq!(u128::from(s.total_staked), staked, "total_staked is the exact sum of the stakes");
    assert_eq!(u128::from(s.total_returned), returned, "total_returned is the exact sum");
    let view = s.round.as_ref().expect("round view");
    assert!(!view.awaiting_decisions, "a settled round awaits nothing");
    assert_eq!(s.step, m.step, "Settle adds no step");
    assert_reveal(m, s);
}

/// The reveal (format v2) verifies, is the reveal of this round's inputs, and carries the
/// settlement's seats and the settled token's transcript.
pub fn assert_reveal(m: &Model, s: &proto::SettleResponse) {
    let Ok(AnyReveal::V2(reveal)) = parse_reveal(&s.reveal_json) else {
        panic!("reveal_json is not a well-formed v2 reveal: {}", s.reveal_json)
    };
    let seed = ServerSeed::from_bytes(m.seed);
    assert_eq!(reveal.server_seed, seed.reveal_hex());
    assert_eq!(reveal.commitment, seed.commitment().to_hex());
    assert_eq!(reveal.client_seed, m.client_seed);
    assert_eq!((reveal.nonce, reveal.round_id.as_str()), (m.nonce, m.round_id.as_str()));
    assert_eq!(reveal.table_id, DEFAULT_TABLE_ID);
    assert_eq!(reveal.decisions.len(), m.step as usize, "one reveal step per Decide call");
    assert_eq!(reveal.transcript, s.transcript, "the reveal's transcript is the settled one");
    let seats: Vec<_> = s.results.iter().map(|r| (r.bet, r.raised, r.stake, r.returned)).collect();
    let shown: Vec<_> = reveal.seats.iter().map(|r| (r.bet, r.raised, r.stake, r.returned)).collect();
    assert_eq!(shown, seats, "the reveal's seats are the settlement's");
    let verdict = AnyReveal::V2(reveal).verify().expect("a well-formed reveal");
    assert!(verdict.ok(), "the reveal verifies: {verdict:?}");
}

/// Settles `token` twice through the service (must succeed, identically) and checks it.
pub fn settle_and_check(e: &Engine, m: &Model, token: &[u8]) -> proto::SettleResponse {
    let req = proto::SettleRequest { round_token: token.to_vec(), round_id: m.round_id.clone() };
    let first = run(e.service.settle(Request::new(req.clone())))
        .unwrap_or_else(|s| panic!("an accepted round cannot be settled: {:?} {}", s.code(), s.message()))
        .into_inner();
    let again = run(e.service.settle(Request::new(req))).expect("settle again").into_inner();
    assert_eq!(first, again, "Settle is repeatable");
    assert_settlement(m, &first);
    first
}

// ---- target: tokens -----------------------------------------------------------------------

pub fn tokens(data: &[u8]) {
    let ring = &engines()[0].ring;
    let mut input = Bytes::new(data);
    match input.u8() % 3 {
        // Arbitrary bytes as a token of each kind.
        0 => open_anything(ring, input.rest()),
        // Arbitrary bytes behind a genuine header (version, kind, the primary's key id), so
        // the bytes reach the AEAD.
        1 => {
            let kind = if input.u8() & 1 == 0 { TokenKind::Round } else { TokenKind::Commitment };
            let genuine = ring.seal(kind, &CommitmentPayload::default()).unwrap();
            let header = 3 + usize::from(genuine[2]);
            let mut token = genuine[..header].to_vec();
            token.extend_from_slice(input.rest());
            open_anything(ring, &token);
        }
        // A payload the engine seals reopens to the same payload; one changed byte never opens.
        _ => {
            let flip_at = usize::from(input.u8()) | usize::from(input.u8()) << 8;
            let flip = input.u8() | 1;
            let Ok(payload) = RoundPayload::decode(input.rest()) else {
                return;
            };
            // Refusing to seal is allowed (a payload over the token budget); issuing a token
            // that does not reopen is not.
            let Ok(token) = ring.seal(TokenKind::Round, &payload) else {
                return;
            };
            let opened = ring
                .open::<RoundPayload>(TokenKind::Round, &token)
                .unwrap_or_else(|e| panic!("a token the engine sealed ({} bytes) does not reopen: {e}", token.len()));
            assert_eq!(opened, payload, "reopened payload differs");
            assert_eq!(ring.seal(TokenKind::Round, &payload).unwrap(), token, "sealing is deterministic");
            let kind_bound = ring.open::<CommitmentPayload>(TokenKind::Commitment, &token).is_err();
            assert!(kind_bound, "a round token opened as a commitment token");
            let old = KeyRing::from_json(OLD_RING).unwrap();
            let foreign = old.open::<RoundPayload>(TokenKind::Round, &token).is_err();
            assert!(foreign, "a ring without the key opened the token");
            let mut bad = token.clone();
            let i = flip_at % bad.len();
            bad[i] ^= flip;
            let refused = ring.open::<RoundPayload>(TokenKind::Round, &bad).is_err();
            assert!(refused, "byte {i} changed, the token still opens");
            if let Ok(state) = RoundState::from_payload(opened) {
                // A consistent round survives a seal/open round trip unchanged.
                if let Ok(again) = ring.seal(TokenKind::Round, &state.to_payload()) {
                    let back = assert_round_token_opens(ring, &again);
                    assert_eq!(back.to_payload(), state.to_payload());
                }
            }
        }
    }
}

fn open_anything(ring: &KeyRing, token: &[u8]) {
    if let Ok(p) = ring.open::<RoundPayload>(TokenKind::Round, token) {
        let _ = RoundState::from_payload(p);
    }
    if let Ok(p) = ring.open::<CommitmentPayload>(TokenKind::Commitment, token) {
        let _ = (p.seed(), p.binding());
    }
}

// ---- target: requests ---------------------------------------------------------------------

/// Genuine round tokens of the default engine for [`requests`]: one per nonce 0..16 with
/// three seats (a mix of pairs, consecutive and non-consecutive hands).
fn genuine_rounds() -> &'static [(Model, Vec<u8>)] {
    static ROUNDS: OnceLock<Vec<(Model, Vec<u8>)>> = OnceLock::new();
    ROUNDS.get_or_init(|| {
        let e = &engines()[0];
        (0..16u64)
            .map(|nonce| {
                let m = Model {
                    seed: [7; 32],
                    client_seed: "fuzz".into(),
                    nonce,
                    round_id: format!("fuzz-{nonce}"),
                    bets: vec![500, 1000, 30_000],
                    decided: vec![None; 3],
                    awaiting: false,
                    step: 0,
                };
                let token = commitment_token(&e.ring, m.seed, &m.round_id, nonce, &e.table);
                let limits = Some(proto::Limits { min_bet: 500, max_bet: 30_000 });
                let req = start_request(token, m.client_seed.clone(), nonce, m.round_id.clone(), &m.bets, limits);
                let started = run(e.service.start_round(Request::new(req))).unwrap().into_inner();
                let awaiting = started.round.unwrap().awaiting_decisions;
                (Model { awaiting, ..m }, started.round_token)
            })
            .collect()
    })
}

pub fn requests(data: &[u8]) {
    let e = &engines()[0];
    let mut input = Bytes::new(data);
    let which = input.u8();
    let flags = input.u8();
    let pick = usize::from(input.u8());
    let body = input.rest();
    let what = ["GetRules", "CommitSeed", "StartRound", "Decide", "Settle"][usize::from(which % 5)];
    match which % 5 {
        0 => {
            let Ok(req) = proto::GetRulesRequest::decode(body) else {
                return;
            };
            match run(e.service.get_rules(Request::new(req))) {
                Ok(_) => {}
                Err(s) => assert_caller_error(what, &s),
            }
        }
        1 => {
            let Ok(req) = proto::CommitSeedRequest::decode(body) else {
                return;
            };
            match run(e.service.commit_seed(Request::new(req.clone()))) {
                Ok(r) => {
                    let r = r.into_inner();
                    let p = e
                        .ring
                        .open::<CommitmentPayload>(TokenKind::Commitment, &r.commitment_token)
                        .expect("an issued commitment token reopens");
                    assert_eq!(p.seed().unwrap().commitment().to_hex(), r.commitment);
                    assert_eq!((p.round_id.as_str(), p.nonce), (req.round_id.as_str(), req.nonce));
                    assert_eq!((r.round_id.as_str(), r.nonce), (req.round_id.as_str(), req.nonce));
                }
                Err(s) => assert_caller_error(what, &s),
            }
        }
        2 => {
            let Ok(mut req) = proto::StartRoundRequest::decode(body) else {
                return;
            };
            let seed = [pick as u8; 32];
            if flags & 1 != 0 {
                req.commitment_token = commitment_token(&e.ring, seed, &req.round_id, req.nonce, &e.table);
            }
            match run(e.service.start_round(Request::new(req.clone()))) {
                Ok(r) => {
                    let r = r.into_inner();
                    assert_round_token_opens(&e.ring, &r.round_token);
                    assert_eq!(r.step, 0);
                    let view = r.round.expect("round view");
                    let m = Model {
                        seed,
                        client_seed: req.client_seed.clone(),
                        nonce: req.nonce,
                        round_id: req.round_id.clone(),
                        bets: req.seats.iter().map(|s| s.bet).collect(),
                        decided: vec![view.awaiting_decisions.then_some(false); req.seats.len()],
                        awaiting: view.awaiting_decisions,
                        step: 0,
                    };
                    if flags & 1 != 0 {
                        settle_and_check(e, &m, &r.round_token);
                    }
                }
                Err(s) => assert_caller_error(what, &s),
            }
        }
        3 => {
            let Ok(mut req) = proto::DecideRequest::decode(body) else {
                return;
            };
            let rounds = genuine_rounds();
            let (m, token) = &rounds[pick % rounds.len()];
            if flags & 1 != 0 {
                req.round_token = token.clone();
            }
            if flags & 2 != 0 {
                req.round_id = m.round_id.clone();
            }
            match run(e.service.decide(Request::new(req.clone()))) {
                Ok(r) => {
                    let r = r.into_inner();
                    assert_round_token_opens(&e.ring, &r.round_token);
                    if req.round_token == *token {
                        let mut m = m.clone();
                        for d in &req.decisions {
                            m.decided[d.seat as usize] = Some(d.action == Action::Raise as i32);
                        }
                        m.step = 1;
                        assert_eq!(r.step, 1);
                        stand_undecided(&mut m);
                        settle_and_check(e, &m, &r.round_token);
                    }
                }
                Err(s) => assert_caller_error(what, &s),
            }
        }
        _ => {
            let Ok(mut req) = proto::SettleRequest::decode(body) else {
                return;
            };
            let rounds = genuine_rounds();
            let (m, token) = &rounds[pick % rounds.len()];
            if flags & 1 != 0 {
                req.round_token = token.clone();
            }
            if flags & 2 != 0 {
                req.round_id = m.round_id.clone();
            }
            match run(e.service.settle(Request::new(req.clone()))) {
                Ok(r) => {
                    if req.round_token == *token {
                        let mut m = m.clone();
                        stand_undecided(&mut m);
                        assert_settlement(&m, &r.into_inner());
                    }
                }
                Err(s) => assert_caller_error(what, &s),
            }
        }
    }
}

/// Settle stands every seat still undecided on a hand awaiting decisions.
fn stand_undecided(m: &mut Model) {
    if m.awaiting {
        for d in m.decided.iter_mut().filter(|d| d.is_none()) {
            *d = Some(false);
        }
    }
}

// ---- target: round ------------------------------------------------------------------------

/// Whether the rules allow these decisions on a round in state `m`.
fn decide_allowed(m: &Model, decisions: &[proto::SeatDecision]) -> bool {
    if !m.awaiting || decisions.is_empty() {
        return false;
    }
    let mut seen = vec![false; m.bets.len()];
    decisions.iter().all(|d| {
        let seat = d.seat as usize;
        let ok = seat < m.bets.len()
            && !seen[seat]
            && m.decided[seat].is_none()
            && matches!(Action::try_from(d.action), Ok(Action::Raise | Action::Stand));
        if seat < seen.len() {
            seen[seat] = true;
        }
        ok
    })
}

pub fn round(data: &[u8]) {
    let all = engines();
    let mut input = Bytes::new(data);
    let e = &all[usize::from(input.u8()) % all.len()];
    let (min, max) = (e.table.limits().min().0, e.table.limits().max().0);

    // The start: arbitrary inputs, bets mostly within the table's limits.
    let mut seed = [0u8; 32];
    let s = input.bytes(32);
    seed[..s.len()].copy_from_slice(s);
    let client_seed = input.text(1100);
    let nonce = input.u64();
    let round_id = input.text(140);
    let seats = usize::from(input.u8()) % (MAX_SEATS + 2);
    let raw_bets = input.u8();
    let bets: Vec<u64> = (0..seats)
        .map(|i| {
            let x = input.u64();
            if raw_bets >> (i % 8) & 1 == 1 { x } else { min + x % (max - min + 1) }
        })
        .collect();
    let limits = match input.u8() % 3 {
        0 => Some(proto::Limits { min_bet: min, max_bet: max }),
        1 => Some(proto::Limits { min_bet: input.u64(), max_bet: input.u64() }),
        _ => None,
    };
    let token = commitment_token(&e.ring, seed, &round_id, nonce, &e.table);
    let req = start_request(token, client_seed.clone(), nonce, round_id.clone(), &bets, limits);
    let started = match run(e.service.start_round(Request::new(req))) {
        Ok(r) => r.into_inner(),
        Err(s) => {
            assert_caller_error("StartRound", &s);
            return;
        }
    };
    let view = started.round.expect("round view");
    assert_eq!(view.seats.len(), bets.len());
    assert_eq!(started.step, 0);
    if view.awaiting_decisions {
        assert!(view.third_card.is_none(), "the third card stays face down while seats decide");
    }
    let first = Model {
        seed,
        client_seed,
        nonce,
        round_id,
        bets,
        decided: vec![None; view.seats.len()],
        awaiting: view.awaiting_decisions,
        step: 0,
    };
    assert_round_token_opens(&e.ring, &started.round_token);

    // Any sequence of Decide calls, each on the newest token or an older one.
    let mut issued: Vec<(Model, Vec<u8>)> = vec![(first, started.round_token)];
    while !input.is_empty() && issued.len() < 64 {
        let op = input.u8();
        let parent = if op & 0x80 != 0 { usize::from(input.u8()) % issued.len() } else { issued.len() - 1 };
        let n = usize::from(op & 0x07);
        let decisions: Vec<proto::SeatDecision> = (0..n)
            .map(|_| {
                let b = input.u8();
                proto::SeatDecision { seat: u32::from(b & 0x0f), action: i32::from(b >> 4) % 4 }
            })
            .collect();
        let (m, token) = issued[parent].clone();
        let req =
            proto::DecideRequest { round_token: token, decisions: decisions.clone(), round_id: m.round_id.clone() };
        let allowed = decide_allowed(&m, &decisions);
        match run(e.service.decide(Request::new(req.clone()))) {
            Ok(r) => {
                assert!(allowed, "Decide {decisions:?} accepted on {m:?}");
                let r = r.into_inner();
                let mut next = m.clone();
                let mut raised = 0u128;
                for d in &decisions {
                    let raise = d.action == Action::Raise as i32;
                    next.decided[d.seat as usize] = Some(raise);
                    if raise {
                        raised += u128::from(m.bets[d.seat as usize]);
                    }
                }
                next.step = m.step + 1;
                assert_eq!(r.step, next.step, "each accepted Decide is one step");
                assert_eq!(u128::from(r.raised_amount), raised, "raised_amount = the raised bets");
                let view = r.round.expect("round view");
                next.awaiting = view.awaiting_decisions;
                let undecided = next.decided.iter().any(Option::is_none);
                assert_eq!(next.awaiting, undecided, "awaiting until every seat decided");
                if view.awaiting_decisions {
                    assert!(view.third_card.is_none(), "the third card stays face down");
                }
                assert_round_token_opens(&e.ring, &r.round_token);
                // A retry, with the decisions in another order, returns the same token.
                let mut retry = req;
                retry.decisions.reverse();
                let again = run(e.service.decide(Request::new(retry))).expect("the same Decide");
                let again = again.into_inner();
                assert_eq!(again.round_token, r.round_token, "a retried Decide: the same token");
                assert_eq!(again.transcript, r.transcript);
                issued.push((next, r.round_token));
            }
            Err(s) => {
                assert!(!allowed, "Decide {decisions:?} refused on {m:?}: {s:?}");
                assert_caller_error("Decide", &s);
            }
        }
    }

    // Every token the round issued can be settled, and pays by the rules.
    for (m, token) in &issued {
        let mut settled = m.clone();
        stand_undecided(&mut settled);
        settle_and_check(e, &settled, token);
    }
}
