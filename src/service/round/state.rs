//! What the tokens carry: a committed seed bound to one round (round id, nonce) and to the
//! whole table it is dealt at (deck count, paytable, limits, currency, rules digest), with
//! its issue time and expiry; and a whole round with everything its reveal needs, including
//! the history of its `Decide` calls, its transcript hash, its table's rules and its issue
//! time. The payloads are protobuf messages private to the engine; only their sealed form
//! ever leaves it.
//!
//! Only the current formats are read: a payload without what every payload of the support
//! window carries (a commitment without its round and table, a round without its transcript
//! and rules) is refused as too old ([`crate::service::round::token::TokenRefusal::TooOld`]), never read by a
//! compatibility branch. The issue time's own absence is the one exception, read as
//! [`crate::service::round::token::UNDATED_ISSUED_AT_MS`] until the window closes on it.

use zeroize::Zeroize;

use crate::fairness::{RulesDigest, ServerSeed, StartInputs, TableRules, Transcript};
use crate::game::{
    BetLimits, Card, Decision, Decks, MAX_SEATS, Money, Paytable, Phase, Round, RoundSnapshot, Seat, Spread, Table,
};
use crate::service::round::token::{Age, TokenRefusal};
use crate::service::rules::tables::Currency;

/// The id of the default table.
pub use crate::service::rules::tables::DEFAULT_TABLE_ID;

/// The sealed content of a commitment token.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CommitmentPayload {
    /// The 32-byte server seed.
    #[prost(bytes = "vec", tag = "1")]
    pub server_seed: Vec<u8>,
    /// Unix milliseconds after which StartRound refuses the token.
    #[prost(int64, tag = "2")]
    pub expires_at_unix_ms: i64,
    /// The round the commitment is for.
    #[prost(string, tag = "3")]
    pub round_id: String,
    #[prost(uint64, tag = "4")]
    pub nonce: u64,
    #[prost(string, tag = "5")]
    pub table_id: String,
    /// Decks of the table when the commitment was made.
    #[prost(uint32, tag = "6")]
    pub decks: u32,
    /// The table's currency when the commitment was made (the CommitSeed answer promised
    /// StartRound's bets in it).
    #[prost(string, tag = "7")]
    pub currency: String,
    /// Its minor-unit exponent.
    #[prost(uint32, tag = "8")]
    pub minor_unit_exponent: u32,
    /// The table's rules digest when the commitment was made (32 bytes), over the rules
    /// below: StartRound refuses the commitment if the operator withdrew it.
    #[prost(bytes = "vec", tag = "9")]
    pub rules_digest: Vec<u8>,
    /// The rest of the rules the commitment was made under, so that any replica deals the
    /// round under them whatever its own table configuration says now: the paytable (odds for
    /// spreads 1..=11, then three of a kind) and the table's bet limits.
    #[prost(uint32, repeated, tag = "10")]
    pub paytable: Vec<u32>,
    #[prost(uint64, tag = "11")]
    pub min_bet: u64,
    #[prost(uint64, tag = "12")]
    pub max_bet: u64,
    /// Made at a sandbox table: the round it deals is a sandbox round (see
    /// [`super::sandbox`]).
    #[prost(bool, tag = "20")]
    pub sandbox: bool,
    /// When CommitSeed issued it, Unix milliseconds ([`crate::service::round::token::check_age`]); 0 in a
    /// commitment sealed before payloads carried it.
    #[prost(int64, tag = "21")]
    pub issued_at_unix_ms: i64,
}

/// The one round a commitment may deal and the whole table it is dealt at: its rules as the
/// commitment carries them, whatever the replica's own configuration says now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub round_id: String,
    pub nonce: u64,
    pub table_id: String,
    pub table: Table,
    pub currency: Currency,
    pub rules_digest: RulesDigest,
}

impl CommitmentPayload {
    /// The seed, if the payload holds a well-formed one.
    pub fn seed(&self) -> Result<ServerSeed, TokenRefusal> {
        let bytes: [u8; 32] = self.server_seed.as_slice().try_into().map_err(|_| TokenRefusal::Malformed)?;
        Ok(ServerSeed::from_bytes(bytes))
    }

    /// The round and table the commitment is bound to, the table checked against its digest.
    /// A commitment without them is of a format older than the support window; anything else
    /// a genuine token could not hold is malformed.
    pub fn binding(&self) -> Result<Binding, TokenRefusal> {
        if self.decks == 0 || self.currency.is_empty() || self.rules_digest.is_empty() || self.paytable.is_empty() {
            return Err(TokenRefusal::TooOld(Age::Format("before commitments carried their round and table")));
        }
        let decks = Decks::new(self.decks).map_err(|_| TokenRefusal::Malformed)?;
        let currency = sealed_currency(&self.currency, self.minor_unit_exponent)?;
        let digest = RulesDigest::from_slice(&self.rules_digest).ok_or(TokenRefusal::Malformed)?;
        let limits = BetLimits::new(Money(self.min_bet), Money(self.max_bet)).map_err(|_| TokenRefusal::Malformed)?;
        let table = Table::new(decks, paytable_from(&self.paytable)?, limits).map_err(|_| TokenRefusal::Malformed)?;
        let rules = TableRules {
            decks,
            paytable: table.paytable(),
            limits,
            currency: currency.code(),
            exponent: currency.minor_unit_exponent(),
            sandbox: self.sandbox,
        };
        if rules.digest() != digest {
            return Err(TokenRefusal::Malformed);
        }
        Ok(Binding {
            round_id: self.round_id.clone(),
            nonce: self.nonce,
            table_id: self.table_id.clone(),
            table,
            currency,
            rules_digest: digest,
        })
    }
}

impl Drop for CommitmentPayload {
    fn drop(&mut self) {
        self.server_seed.zeroize();
    }
}

/// The sealed content of a round token.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RoundPayload {
    #[prost(bytes = "vec", tag = "1")]
    pub server_seed: Vec<u8>,
    #[prost(string, tag = "2")]
    pub client_seed: String,
    #[prost(uint64, tag = "3")]
    pub nonce: u64,
    #[prost(uint32, tag = "4")]
    pub decks: u32,
    #[prost(string, tag = "5")]
    pub round_id: String,
    /// `true` once every card is face up.
    #[prost(bool, tag = "6")]
    pub complete: bool,
    /// Card codes: the two face-up cards, then the third card if one is dealt (face down
    /// while awaiting decisions).
    #[prost(bytes = "vec", tag = "7")]
    pub cards: Vec<u8>,
    /// Original bets, one per seat.
    #[prost(uint64, repeated, tag = "8")]
    pub bets: Vec<u64>,
    /// One byte per seat: 0 undecided, 1 raise, 2 stand.
    #[prost(bytes = "vec", tag = "9")]
    pub decisions: Vec<u8>,
    /// The paytable the round was dealt under: odds for spreads 1..=11, then three of a kind.
    #[prost(uint32, repeated, tag = "10")]
    pub paytable: Vec<u32>,
    /// The table the round is dealt at.
    #[prost(string, tag = "11")]
    pub table_id: String,
    /// Decide calls applied.
    #[prost(uint32, tag = "12")]
    pub step: u32,
    /// `t_step`, 32 bytes.
    #[prost(bytes = "vec", tag = "13")]
    pub transcript: Vec<u8>,
    /// One byte per seat: the Decide call (1-based) in which the seat decided, 0 if it has
    /// not.
    #[prost(bytes = "vec", tag = "14")]
    pub decided_in: Vec<u8>,
    /// The currency the round's amounts are in (its table's when it was started).
    #[prost(string, tag = "15")]
    pub currency: String,
    /// Its minor-unit exponent.
    #[prost(uint32, tag = "16")]
    pub minor_unit_exponent: u32,
    /// The table's bet limits the round was dealt under (its own, not a player's), which
    /// with the deck count, paytable and currency give the round's rules digest.
    #[prost(uint64, tag = "17")]
    pub min_bet: u64,
    #[prost(uint64, tag = "18")]
    pub max_bet: u64,
    /// A sandbox round (see [`super::sandbox`]).
    #[prost(bool, tag = "20")]
    pub sandbox: bool,
    /// The round's issue time: its commitment's (Unix milliseconds), unchanged by Decide; 0
    /// for a round whose commitment was sealed before payloads carried it.
    #[prost(int64, tag = "21")]
    pub issued_at_unix_ms: i64,
}

/// The round a payload holds: its cards, seats and phase, restored by the rules (which
/// refuse a snapshot no round could reach).
fn round_from(p: &RoundPayload) -> Result<Round, TokenRefusal> {
    let bad = || TokenRefusal::Malformed;
    let card = |i: usize| p.cards.get(i).and_then(|&c| Card::from_code(c));
    let cards = [card(0).ok_or_else(bad)?, card(1).ok_or_else(bad)?];
    let third = match p.cards.len() {
        2 => None,
        3 => Some(card(2).ok_or_else(bad)?),
        _ => return Err(bad()),
    };
    if p.bets.len() != p.decisions.len() || p.paytable.len() != 12 {
        return Err(bad());
    }
    let seats = p
        .bets
        .iter()
        .zip(&p.decisions)
        .map(|(&bet, &d)| {
            let decision = match d {
                0 => None,
                1 => Some(Decision::Raise),
                2 => Some(Decision::Stand),
                _ => return Err(bad()),
            };
            Ok(Seat { bet: Money(bet), decision })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let phase = if p.complete { Phase::Complete } else { Phase::AwaitingDecisions };
    Round::restore(RoundSnapshot { phase, cards, third, seats }).map_err(|_| bad())
}

/// A paytable as a token carries it: odds for spreads 1..=11, then three of a kind.
fn paytable_from(odds: &[u32]) -> Result<Paytable, TokenRefusal> {
    let (Some(spread), Some(&three)) = (odds.get(..11), odds.get(11)) else { return Err(TokenRefusal::Malformed) };
    if odds.len() != 12 {
        return Err(TokenRefusal::Malformed);
    }
    let mut s = [0u32; 11];
    s.copy_from_slice(spread);
    Paytable::new(s, three).map_err(|_| TokenRefusal::Malformed)
}

/// The odds of `paytable` as a token carries them.
pub(crate) fn paytable_odds(paytable: &Paytable) -> Vec<u32> {
    let mut odds = Vec::with_capacity(12);
    odds.extend(Spread::all().map(|s| paytable.spread_odds(s)));
    odds.push(paytable.three_of_a_kind_odds());
    odds
}

/// A currency as a token carries it; anything a genuine token could not hold is malformed.
fn sealed_currency(code: &str, minor_unit_exponent: u32) -> Result<Currency, TokenRefusal> {
    let exponent = u8::try_from(minor_unit_exponent).map_err(|_| TokenRefusal::Malformed)?;
    Currency::new(code, exponent, "currency").map_err(|_| TokenRefusal::Malformed)
}

impl Drop for RoundPayload {
    fn drop(&mut self) {
        self.server_seed.zeroize();
    }
}

/// A round with everything needed to continue, settle and reveal it.
///
/// Invariant: `transcript` is `t_k` for `k = steps.len()` over the round's inputs and
/// `steps`; `steps` holds each Decide call's decisions in ascending seat order, and the
/// decisions recorded in `round` are exactly those of `steps`.
#[derive(Debug, Clone)]
pub struct RoundState {
    pub round: Round,
    pub seed: ServerSeed,
    pub client_seed: String,
    pub nonce: u64,
    pub decks: Decks,
    pub round_id: String,
    pub table_id: String,
    pub paytable: Paytable,
    pub steps: Vec<Vec<(usize, Decision)>>,
    pub transcript: Transcript,
    /// The currency of the round's amounts.
    pub currency: Currency,
    /// The table's bet limits when the round was dealt.
    pub limits: BetLimits,
    /// A sandbox round: dealt at a sandbox table, its cards possibly requested
    /// ([`super::sandbox`]); it reveals as a sandbox reveal, never as a fair round.
    pub sandbox: bool,
    /// The round's issue time (its commitment's), Unix milliseconds; 0: undated.
    pub issued_at_unix_ms: i64,
}

fn decision_byte(d: Option<Decision>) -> u8 {
    match d {
        None => 0,
        Some(Decision::Raise) => 1,
        Some(Decision::Stand) => 2,
    }
}

impl RoundState {
    /// The table's rules the round was dealt under.
    pub fn rules(&self) -> TableRules<'_> {
        TableRules {
            decks: self.decks,
            paytable: &self.paytable,
            limits: self.limits,
            currency: self.currency.code(),
            exponent: self.currency.minor_unit_exponent(),
            sandbox: self.sandbox,
        }
    }

    /// `t_0` of this round's inputs (version 2: with the rules digest).
    pub fn start_transcript(&self) -> Transcript {
        let digest = self.rules().digest();
        let commitment = self.seed.commitment().0;
        let seats = self.round.seats();
        // At most MAX_SEATS seats (Round's invariant): the bets fit on the stack.
        let mut stack = [Money::ZERO; MAX_SEATS];
        let heap: Vec<Money>;
        let bets = if seats.len() <= MAX_SEATS {
            for (b, s) in stack.iter_mut().zip(seats) {
                *b = s.bet;
            }
            &stack[..seats.len()]
        } else {
            heap = seats.iter().map(|s| s.bet).collect();
            &heap[..]
        };
        StartInputs {
            commitment: &commitment,
            table_id: &self.table_id,
            round_id: &self.round_id,
            nonce: self.nonce,
            decks: self.decks,
            client_seed: self.client_seed.as_bytes(),
            paytable: &self.paytable,
            bets,
            rules_digest: Some(&digest),
        }
        .transcript()
    }

    /// Decide calls applied so far.
    pub fn step(&self) -> u32 {
        // At most MAX_SEATS (7) steps: each decides at least one seat.
        self.steps.len() as u32
    }

    /// The payload to seal: prost encodes it into the token ([`crate::service::round::token::KeyRing::seal`]).
    pub fn to_payload(&self) -> RoundPayload {
        let snap = self.round.snapshot();
        let mut cards = Vec::with_capacity(3);
        cards.extend(snap.cards.iter().map(|c| c.code()));
        cards.extend(snap.third.map(|c| c.code()));
        let paytable = paytable_odds(&self.paytable);
        let mut decided_in = vec![0u8; snap.seats.len()];
        for (k, step) in self.steps.iter().enumerate() {
            for &(seat, _) in step {
                if let Some(slot) = decided_in.get_mut(seat) {
                    // k < MAX_SEATS: fits in a byte.
                    *slot = (k + 1) as u8;
                }
            }
        }
        RoundPayload {
            server_seed: self.seed.expose().to_vec(),
            client_seed: self.client_seed.clone(),
            nonce: self.nonce,
            decks: u32::from(self.decks.get()),
            round_id: self.round_id.clone(),
            complete: snap.phase == Phase::Complete,
            cards,
            bets: snap.seats.iter().map(|s| s.bet.0).collect(),
            decisions: snap.seats.iter().map(|s| decision_byte(s.decision)).collect(),
            paytable,
            table_id: self.table_id.clone(),
            step: self.step(),
            transcript: self.transcript.0.to_vec(),
            decided_in,
            currency: self.currency.code().to_string(),
            minor_unit_exponent: u32::from(self.currency.minor_unit_exponent()),
            min_bet: self.limits.min().0,
            max_bet: self.limits.max().0,
            sandbox: self.sandbox,
            issued_at_unix_ms: self.issued_at_unix_ms,
        }
    }

    /// Rebuilds the round from an opened payload. A payload without a transcript, its table or
    /// its rules is of a format older than the support window; anything else no genuine token
    /// could hold is malformed, never a panic.
    pub fn from_payload(mut p: RoundPayload) -> Result<RoundState, TokenRefusal> {
        if p.transcript.is_empty() || p.table_id.is_empty() || p.currency.is_empty() || p.min_bet == 0 {
            return Err(TokenRefusal::TooOld(Age::Format("before rounds carried their transcript and rules")));
        }
        let bad = || TokenRefusal::Malformed;
        let seed: [u8; 32] = p.server_seed.as_slice().try_into().map_err(|_| bad())?;
        let round = round_from(&p)?;
        Ok(RoundState {
            round,
            seed: ServerSeed::from_bytes(seed),
            client_seed: std::mem::take(&mut p.client_seed),
            nonce: p.nonce,
            decks: Decks::new(p.decks).map_err(|_| bad())?,
            round_id: std::mem::take(&mut p.round_id),
            paytable: paytable_from(&p.paytable)?,
            steps: steps_from(&p)?,
            transcript: Transcript(p.transcript.as_slice().try_into().map_err(|_| bad())?),
            currency: sealed_currency(&p.currency, p.minor_unit_exponent)?,
            limits: BetLimits::new(Money(p.min_bet), Money(p.max_bet)).map_err(|_| bad())?,
            table_id: std::mem::take(&mut p.table_id),
            sandbox: p.sandbox,
            issued_at_unix_ms: p.issued_at_unix_ms,
        })
    }

    /// The cards the round has dealt, in order: two, or three once the third is dealt
    /// (face up or not). These are the first cards of the fair shoe.
    pub fn dealt_cards(&self) -> Vec<Card> {
        let mut v = Vec::with_capacity(3);
        v.extend(self.round.cards());
        v.extend(self.round.dealt_third());
        v
    }
}

/// The Decide calls of a token: seats grouped by the call they decided in. Every call
/// 1..=step decided at least one seat; undecided seats have 0.
fn steps_from(p: &RoundPayload) -> Result<Vec<Vec<(usize, Decision)>>, TokenRefusal> {
    let bad = || TokenRefusal::Malformed;
    let step = usize::try_from(p.step).map_err(|_| bad())?;
    if p.decided_in.len() != p.decisions.len() || step > MAX_SEATS || p.table_id.is_empty() {
        return Err(bad());
    }
    let mut steps: Vec<Vec<(usize, Decision)>> = vec![Vec::new(); step];
    for (seat, (&k, &d)) in p.decided_in.iter().zip(&p.decisions).enumerate() {
        let decision = match d {
            1 => Decision::Raise,
            2 => Decision::Stand,
            _ if k == 0 => continue,
            _ => return Err(bad()),
        };
        let k = usize::from(k);
        if k == 0 || k > step {
            return Err(bad());
        }
        steps[k - 1].push((seat, decision));
    }
    if steps.iter().any(Vec::is_empty) {
        return Err(bad());
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::EngineError;
    use crate::game::paytable::MAX_ODDS;
    use crate::game::table::MAX_BET;
    use crate::game::{MAX_DECKS, MAX_SEATS};
    use crate::game::{StackedDeck, Table};
    use crate::ids::{MAX_CLIENT_SEED_BYTES, MAX_MINOR_UNIT_EXPONENT, MAX_ROUND_ID_BYTES, MAX_TABLE_ID_BYTES};
    use crate::service::round::token::{
        KeyRing, MAX_COMMITMENT_PAYLOAD_LEN, MAX_KEY_ID_LEN, MAX_ROUND_PAYLOAD_LEN, MAX_TOKEN_LEN, TokenKind,
    };
    use prost::Message;

    /// The largest round payload any accepted request can produce: every field at its
    /// maximum at once.
    fn largest_round_payload() -> RoundPayload {
        RoundPayload {
            server_seed: vec![0xff; 32],
            client_seed: "\u{10ffff}".repeat(MAX_CLIENT_SEED_BYTES / 4),
            nonce: u64::MAX,
            decks: u32::from(MAX_DECKS),
            round_id: "r".repeat(MAX_ROUND_ID_BYTES),
            complete: true,
            cards: vec![51, 50, 49],
            bets: vec![MAX_BET; MAX_SEATS],
            decisions: vec![1; MAX_SEATS],
            paytable: vec![MAX_ODDS; 12],
            table_id: "t".repeat(MAX_TABLE_ID_BYTES),
            step: MAX_SEATS as u32,
            transcript: vec![0xff; 32],
            decided_in: (1..=MAX_SEATS as u8).collect(),
            currency: "XXX".into(),
            minor_unit_exponent: u32::from(MAX_MINOR_UNIT_EXPONENT),
            min_bet: MAX_BET,
            max_bet: MAX_BET,
            sandbox: true,
            issued_at_unix_ms: -1,
        }
    }

    #[test]
    fn the_token_budget_is_exactly_the_largest_token_an_accepted_request_makes() {
        let payload = largest_round_payload();
        assert_eq!(payload.client_seed.len(), MAX_CLIENT_SEED_BYTES);
        assert_eq!(payload.encoded_len(), MAX_ROUND_PAYLOAD_LEN, "the const budget is tight");
        let id = "k".repeat(MAX_KEY_ID_LEN);
        let ring = KeyRing::new(vec![(id.clone(), [7; 32])], &id).unwrap();
        let token = ring.seal(TokenKind::Round, &payload).unwrap();
        assert_eq!(token.len(), MAX_TOKEN_LEN);
        assert!(ring.open::<RoundPayload>(TokenKind::Round, &token).is_ok());
        let commitment = CommitmentPayload {
            server_seed: vec![0xff; 32],
            expires_at_unix_ms: -1,
            round_id: "r".repeat(MAX_ROUND_ID_BYTES),
            nonce: u64::MAX,
            table_id: "t".repeat(MAX_TABLE_ID_BYTES),
            decks: u32::from(MAX_DECKS),
            currency: "XXX".into(),
            minor_unit_exponent: u32::from(MAX_MINOR_UNIT_EXPONENT),
            rules_digest: vec![0xff; 32],
            paytable: vec![MAX_ODDS; 12],
            min_bet: MAX_BET,
            max_bet: MAX_BET,
            sandbox: true,
            issued_at_unix_ms: -1,
        };
        assert_eq!(commitment.encoded_len(), MAX_COMMITMENT_PAYLOAD_LEN);
        const { assert!(MAX_COMMITMENT_PAYLOAD_LEN < MAX_ROUND_PAYLOAD_LEN) };
        // One byte more than the budget is refused at seal time, as an internal error.
        let mut over = largest_round_payload();
        over.client_seed.push('x');
        assert_eq!(
            ring.seal(TokenKind::Round, &over),
            Err(EngineError::TokenTooLarge { len: MAX_TOKEN_LEN + 1, max: MAX_TOKEN_LEN })
        );
    }

    fn state() -> RoundState {
        let table = Table::default();
        let deck = StackedDeck::new(["3c", "Jd", "5h"].map(|c| c.parse::<Card>().unwrap()));
        let mut deck = deck;
        let round = Round::start(&table, &[Money(500), Money(600), Money(700)], &mut deck).unwrap();
        let mut s = RoundState {
            round,
            seed: ServerSeed::from_bytes([3; 32]),
            client_seed: "c".into(),
            nonce: 9,
            decks: Decks::ONE,
            round_id: "r".into(),
            table_id: DEFAULT_TABLE_ID.into(),
            paytable: Paytable::STANDARD,
            steps: vec![],
            transcript: Transcript([0; 32]),
            currency: Currency::new("EUR", 2, "currency").unwrap(),
            limits: BetLimits::STANDARD,
            sandbox: false,
            issued_at_unix_ms: 1_800_000_000_000,
        };
        s.transcript = s.start_transcript();
        s
    }

    fn decide(s: &mut RoundState, d: &[(usize, Decision)]) {
        let (sorted, _) = s.round.decide_all(d).unwrap();
        s.transcript = s.transcript.decide(&sorted);
        s.steps.push(sorted);
    }

    #[test]
    fn a_payload_round_trips_with_its_steps_and_transcript() {
        let mut s = state();
        decide(&mut s, &[(2, Decision::Stand), (0, Decision::Raise)]);
        decide(&mut s, &[(1, Decision::Raise)]);
        let back = RoundState::from_payload(s.to_payload()).unwrap();
        assert_eq!(back.steps, s.steps);
        assert_eq!(back.transcript, s.transcript);
        assert_eq!(back.currency, s.currency);
        assert_eq!(back.to_payload(), s.to_payload());
        assert_eq!(back.transcript, back.steps.iter().fold(back.start_transcript(), |t, st| t.decide(st)));
    }

    /// The state survives its token's payload: encoded by prost, decoded, rebuilt.
    fn assert_survives_encoding(s: &RoundState) {
        use prost::Message;
        let bytes = s.to_payload().encode_to_vec();
        let back = RoundState::from_payload(RoundPayload::decode(bytes.as_slice()).unwrap()).unwrap();
        assert_eq!(back.to_payload(), s.to_payload(), "{s:?}");
        assert_eq!((back.steps, back.transcript, back.sandbox), (s.steps.clone(), s.transcript, s.sandbox));
    }

    #[test]
    fn the_round_state_survives_encoding_in_every_phase() {
        // Awaiting decisions, after each step, complete; odd values (nonce 0, empty ids,
        // large bets, one to seven seats, consecutive and pair deals).
        let mut s = state();
        assert_survives_encoding(&s);
        decide(&mut s, &[(2, Decision::Stand), (0, Decision::Raise)]);
        assert_survives_encoding(&s);
        decide(&mut s, &[(1, Decision::Raise)]);
        assert_survives_encoding(&s);
        s.round.close();
        assert_survives_encoding(&s);
        s.nonce = 0;
        s.round_id.clear();
        s.client_seed = "é".repeat(300);
        assert_survives_encoding(&s);
        s.limits = BetLimits::new(Money(1), Money(crate::game::table::MAX_BET)).unwrap();
        assert_survives_encoding(&s);
        s.currency = Currency::new("JPY", 0, "currency").unwrap();
        assert_survives_encoding(&s);
        for issued in [0, -1, i64::MAX] {
            s.issued_at_unix_ms = issued;
            assert_survives_encoding(&s);
        }
        s.sandbox = true;
        assert_survives_encoding(&s);
        assert!(RoundState::from_payload(s.to_payload()).unwrap().sandbox);
        s.sandbox = false;
        let table = Table::default();
        for (cards, seats) in [(["3c", "4d", "9h"], 1usize), (["Kc", "Kd", "Kh"], 7), (["2c", "Ad", "7h"], 7)] {
            let mut deck = StackedDeck::new(cards.map(|c| c.parse::<Card>().unwrap()));
            let bets: Vec<Money> = (0..seats).map(|i| Money(table.limits().max().0 - i as u64)).collect();
            let round = Round::start(&table, &bets, &mut deck).unwrap();
            let mut s = RoundState { round, nonce: u64::MAX, ..state() };
            s.transcript = s.start_transcript();
            assert_survives_encoding(&s);
            if s.round.seats().len() == 7 && matches!(s.round, Round::AwaitingDecisions(_)) {
                for seat in 0..7 {
                    decide(&mut s, &[(seat, if seat % 2 == 0 { Decision::Raise } else { Decision::Stand })]);
                    assert_survives_encoding(&s);
                }
            }
        }
    }

    #[test]
    fn a_round_payload_without_its_transcript_or_rules_is_refused_as_too_old() {
        let mut s = state();
        decide(&mut s, &[(0, Decision::Raise)]);
        let good = s.to_payload();
        let too_old = Err(TokenRefusal::TooOld(Age::Format("before rounds carried their transcript and rules")));
        type Strip = fn(&mut RoundPayload);
        let formats: [(&str, Strip); 4] = [
            ("pre-transcript", |p| {
                p.transcript.clear();
                p.table_id.clear();
                p.decided_in.clear();
                p.step = 0;
            }),
            ("no table id", |p| p.table_id.clear()),
            ("no currency", |p| {
                p.currency.clear();
                p.minor_unit_exponent = 0;
            }),
            ("no limits", |p| {
                p.min_bet = 0;
                p.max_bet = 0;
            }),
        ];
        for (what, strip) in formats {
            let mut old = good.clone();
            strip(&mut old);
            assert_eq!(RoundState::from_payload(old).map(|s| s.step()), too_old.clone(), "{what}");
        }
    }

    #[test]
    fn a_commitment_without_its_round_and_table_is_refused_as_too_old() {
        let s = state();
        let digest = s.rules().digest();
        let good = CommitmentPayload {
            server_seed: vec![3; 32],
            expires_at_unix_ms: 2_000_000_000_000,
            round_id: "r".into(),
            nonce: 9,
            table_id: DEFAULT_TABLE_ID.into(),
            decks: 1,
            currency: "EUR".into(),
            minor_unit_exponent: 2,
            rules_digest: digest.0.to_vec(),
            paytable: paytable_odds(&Paytable::STANDARD),
            min_bet: BetLimits::STANDARD.min().0,
            max_bet: BetLimits::STANDARD.max().0,
            sandbox: false,
            issued_at_unix_ms: 1_800_000_000_000,
        };
        let bound = good.binding().unwrap();
        assert_eq!((bound.table.limits(), bound.rules_digest), (BetLimits::STANDARD, digest));
        let too_old = Err(TokenRefusal::TooOld(Age::Format("before commitments carried their round and table")));
        let strips: [fn(&mut CommitmentPayload); 4] =
            [|p| p.decks = 0, |p| p.currency.clear(), |p| p.rules_digest.clear(), |p| p.paytable.clear()];
        for strip in strips {
            let mut old = good.clone();
            strip(&mut old);
            assert_eq!(old.binding(), too_old);
        }
        // Rules that are not the digest's: malformed, not old.
        let mut forged = good.clone();
        forged.max_bet -= 1;
        assert_eq!(forged.binding(), Err(TokenRefusal::Malformed));
    }

    #[test]
    fn a_round_starts_its_transcript_with_its_tables_rules_digest() {
        let s = state();
        let rules = s.rules();
        let digest = rules.digest();
        let commitment = s.seed.commitment().0;
        let bets: Vec<Money> = s.round.seats().iter().map(|x| x.bet).collect();
        let start = StartInputs {
            commitment: &commitment,
            table_id: &s.table_id,
            round_id: &s.round_id,
            nonce: s.nonce,
            decks: s.decks,
            client_seed: s.client_seed.as_bytes(),
            paytable: &s.paytable,
            bets: &bets,
            rules_digest: Some(&digest),
        };
        assert_eq!(s.start_transcript(), start.transcript());
        let back = RoundState::from_payload(s.to_payload()).unwrap();
        assert_eq!(back.limits, BetLimits::STANDARD);
        assert_eq!(back.rules().digest(), digest);
    }

    #[test]
    fn inconsistent_step_records_are_invalid_tokens() {
        let mut s = state();
        decide(&mut s, &[(0, Decision::Raise)]);
        let good = s.to_payload();
        let mut skipped = good.clone();
        skipped.decided_in[0] = 2; // decided in a call that is not recorded
        let mut undecided = good.clone();
        undecided.decided_in[1] = 1; // seat 1 has not decided
        let mut empty_step = good.clone();
        empty_step.step = 2; // call 2 decided no seat
        let mut bad_currency = good.clone();
        bad_currency.currency = "eur".into(); // not an ISO 4217 code
        let mut inverted_limits = good.clone();
        inverted_limits.min_bet = inverted_limits.max_bet + 1; // min above max
        let mut short = good;
        short.transcript.truncate(31);
        for p in [skipped, undecided, empty_step, bad_currency, inverted_limits, short] {
            assert_eq!(RoundState::from_payload(p).map(|s| s.step()), Err(TokenRefusal::Malformed));
        }
    }
}
