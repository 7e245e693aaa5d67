//! What a settled round reveals, and its verification.
//!
//! - [`RevealV2`] (`"format":"reddog-reveal-v2"`, a round dealt without a rules digest): the
//!   deal's inputs and cards, the paytable, every `Decide` call's decisions, each seat's bet,
//!   raise, stake and return, and the round's transcript hash. Verifying it proves the cards
//!   (they follow from the committed seed and the inputs), the money (each seat's stake and
//!   return follow from the cards, the decisions and the paytable by the game core's rules)
//!   and the transcript (it follows from all of the above). Emitted as compact JSON with the
//!   keys in the order of `docs/design/round-integrity.md` §3.
//! - Version 3 (`"format":"reddog-reveal-v3"`, what `Settle` returns for a round dealt under
//!   a rules digest): version 2 plus the table's bet `limits`, its `currency` and the
//!   `rules_digest` they hash to with the deck count and paytable ([`super::rules`]); its
//!   transcript's `t_0` is version 2 (it hashes the digest). [`RevealV2`] holds both versions:
//!   the three fields are `Some` exactly in a version-3 reveal.
//! - [`RevealV1`] (no `format` key): the earlier reveal, inputs and cards only. Still
//!   verified (cards only).
//!
//! Parsing is strict and shared by both versions: see [`super::grammar`].

use serde::{Deserialize, Serialize};

use super::FairnessError;
use super::rules::{RulesDigest, TableRules};
use super::seed::ServerSeed;
use super::shuffle::{ALGORITHM, DealInputs, FairShoe};
use super::transcript::{StartInputs, Transcript};
use crate::game::{
    BetLimits, Card, Decision, Decks, GameError, HandClass, Money, Paytable, Phase, Round, RoundSnapshot, Seat,
    Settlement,
};

/// The `format` of a version-2 reveal.
pub const REVEAL_V2: &str = "reddog-reveal-v2";
/// The `format` of a version-3 reveal.
pub const REVEAL_V3: &str = "reddog-reveal-v3";

/// A version-1 reveal: everything needed to recompute its cards.
///
/// ```json
/// {"algorithm":"reddog-deal-v1","server_seed":"<64 hex>","commitment":"<64 hex>",
///  "client_seed":"player text","nonce":0,"decks":1,"cards":["Ah","Tc","5d"],"round_id":"r-1"}
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevealV1 {
    pub algorithm: String,
    pub server_seed: String,
    pub commitment: String,
    pub client_seed: String,
    pub nonce: u64,
    pub decks: u8,
    pub cards: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_id: Option<String>,
}

impl RevealV1 {
    /// The reveal of a deal from these inputs (for `reddog commit --reveal` and tests).
    pub fn new(inputs: &DealInputs<'_>, client_seed: &str, cards: &[Card], round_id: Option<String>) -> RevealV1 {
        RevealV1 {
            algorithm: ALGORITHM.to_string(),
            server_seed: inputs.server_seed.reveal_hex(),
            commitment: inputs.server_seed.commitment().to_hex(),
            client_seed: client_seed.to_string(),
            nonce: inputs.nonce,
            decks: inputs.decks.get(),
            cards: cards.iter().map(|c| c.text().to_owned()).collect(),
            round_id,
        }
    }
}

/// One seat's decision in a [`RevealV2`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevealDecision {
    pub seat: usize,
    /// `"raise"` or `"stand"`.
    pub action: String,
}

impl RevealDecision {
    /// The action as a [`Decision`] (`None` for a text that is neither `raise` nor `stand`).
    pub fn decision(&self) -> Option<Decision> {
        action_of(&self.action)
    }
}

/// One seat's money in a [`RevealV2`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevealSeat {
    pub bet: u64,
    pub raised: bool,
    pub stake: u64,
    pub returned: u64,
}

/// The table's bet limits in a version-3 reveal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevealLimits {
    pub min_bet: u64,
    pub max_bet: u64,
}

/// The table's currency in a version-3 reveal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevealCurrency {
    /// ISO 4217 alphabetic code.
    pub code: String,
    /// Decimals of the minor unit, 0 … 4.
    pub exponent: u8,
}

/// A version-2 or version-3 reveal, field order = emission order. `limits`, `currency` and
/// `rules_digest` are `Some` exactly when `format` is [`REVEAL_V3`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevealV2 {
    pub format: String,
    pub algorithm: String,
    pub server_seed: String,
    pub commitment: String,
    pub table_id: String,
    pub round_id: String,
    pub client_seed: String,
    pub nonce: u64,
    pub decks: u8,
    pub cards: Vec<String>,
    pub paytable: Paytable,
    /// Version 3: the table's bet limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<RevealLimits>,
    /// Version 3: the table's currency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<RevealCurrency>,
    /// Version 3: the table's rules digest, 64 lower-case hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules_digest: Option<String>,
    /// One entry per `Decide` call, in order; each in ascending seat order.
    pub decisions: Vec<Vec<RevealDecision>>,
    pub seats: Vec<RevealSeat>,
    pub transcript: String,
}

/// The action's text in a reveal.
pub const fn action_text(d: Decision) -> &'static str {
    match d {
        Decision::Raise => "raise",
        Decision::Stand => "stand",
    }
}

pub(crate) fn action_of(text: &str) -> Option<Decision> {
    match text {
        "raise" => Some(Decision::Raise),
        "stand" => Some(Decision::Stand),
        _ => None,
    }
}

/// Everything a settled round's reveal is built from.
#[derive(Clone, Copy, Debug)]
pub struct SettledRound<'a> {
    pub seed: &'a ServerSeed,
    pub table_id: &'a str,
    pub round_id: &'a str,
    pub client_seed: &'a str,
    pub nonce: u64,
    pub decks: Decks,
    /// The cards dealt: two, or three when the hand is not consecutive.
    pub cards: &'a [Card],
    pub paytable: &'a Paytable,
    /// Each `Decide` call's decisions, in ascending seat order.
    pub steps: &'a [Vec<(usize, Decision)>],
    pub settlement: &'a Settlement,
    pub transcript: Transcript,
    /// The table's rules the round was dealt under: `Some` gives a version-3 reveal, `None`
    /// (a round sealed before rounds carried them) a version-2 one.
    pub rules: Option<TableRules<'a>>,
}

impl RevealV2 {
    /// The reveal of a settled round.
    pub fn new(r: &SettledRound<'_>) -> RevealV2 {
        RevealV2 {
            format: if r.rules.is_some() { REVEAL_V3 } else { REVEAL_V2 }.to_string(),
            algorithm: ALGORITHM.to_string(),
            server_seed: r.seed.reveal_hex(),
            commitment: r.seed.commitment().to_hex(),
            table_id: r.table_id.to_string(),
            round_id: r.round_id.to_string(),
            client_seed: r.client_seed.to_string(),
            nonce: r.nonce,
            decks: r.decks.get(),
            cards: r.cards.iter().map(|c| c.text().to_owned()).collect(),
            paytable: r.paytable.clone(),
            limits: r.rules.map(|t| RevealLimits { min_bet: t.limits.min().0, max_bet: t.limits.max().0 }),
            currency: r.rules.map(|t| RevealCurrency { code: t.currency.to_string(), exponent: t.exponent }),
            rules_digest: r.rules.map(|t| t.digest().to_hex()),
            decisions: r
                .steps
                .iter()
                .map(|step| {
                    step.iter().map(|&(seat, d)| RevealDecision { seat, action: action_text(d).to_string() }).collect()
                })
                .collect(),
            seats: r
                .settlement
                .seats
                .iter()
                .map(|s| RevealSeat { bet: s.bet.0, raised: s.raised, stake: s.stake.0, returned: s.returned.0 })
                .collect(),
            transcript: r.transcript.to_hex(),
        }
    }

    /// The exact JSON text: compact, keys in the order of the format's specification.
    pub fn to_json(&self) -> String {
        // Written into a buffer the size of a typical reveal (~900 bytes for one seat), so
        // it rarely grows. Serializing plain strings, integers, booleans and arrays cannot
        // fail, and serde_json writes UTF-8.
        let mut out = Vec::with_capacity(1024);
        match serde_json::to_writer(&mut out, self) {
            Ok(()) => String::from_utf8(out).unwrap_or_default(),
            Err(_) => String::new(),
        }
    }
}

/// A parsed reveal of either version.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::large_enum_variant, reason = "one value per reveal verified: its size costs nothing")]
pub enum AnyReveal {
    V1(RevealV1),
    V2(RevealV2),
}

impl AnyReveal {
    /// Checks the reveal (see [`verify_v1`], [`verify_v2`]).
    pub fn verify(&self) -> Result<Verdict, FairnessError> {
        match self {
            AnyReveal::V1(r) => verify_v1(r),
            AnyReveal::V2(r) => verify_v2(r),
        }
    }
}

/// The result of checking a reveal (either version).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// SHA-256(server seed) equals the commitment.
    pub commitment_ok: bool,
    /// The first cards of the recomputed shoe, as many as the reveal lists.
    pub recomputed: Vec<Card>,
    /// The recomputed cards equal the revealed ones.
    pub cards_ok: bool,
    /// Version 2: every seat's raise, stake and return follow from the cards, the decisions
    /// and the paytable (`None` for version 1, which carries no money).
    pub payouts_ok: Option<bool>,
    /// Version 2: the recomputed transcript equals the revealed one (`None` for version 1).
    pub transcript_ok: Option<bool>,
    /// Version 3: the rules digest recomputed from the deck count, paytable, limits and
    /// currency equals the revealed one, and every bet is within the limits (`None` before
    /// version 3).
    pub rules_ok: Option<bool>,
    /// Version 2: each seat's settlement as the rules compute it, for display.
    pub expected_seats: Vec<RevealSeat>,
    /// Version 2: the transcripts `t_0` … `t_m` recomputed from the reveal, one per step
    /// (empty for version 1): what a step receipt is checked against.
    pub chain: Vec<Transcript>,
}

impl Verdict {
    pub fn ok(&self) -> bool {
        self.commitment_ok
            && self.cards_ok
            && self.payouts_ok != Some(false)
            && self.transcript_ok != Some(false)
            && self.rules_ok != Some(false)
    }
}

fn hex32(field: &'static str, s: &str) -> Result<[u8; 32], FairnessError> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(s, &mut out)
        .map_err(|_| FairnessError::malformed(field, "must be 64 hexadecimal characters"))?;
    Ok(out)
}

fn parse_cards(cards: &[String]) -> Result<Vec<Card>, FairnessError> {
    let parsed = cards
        .iter()
        .map(|c| Card::from_text(c))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| FairnessError::malformed("cards", "every card is canonical text like \"Ah\" or \"Tc\""))?;
    match parsed[..] {
        [a, b] if HandClass::of(a, b) == HandClass::Consecutive => Ok(parsed),
        [a, b, _] if HandClass::of(a, b) != HandClass::Consecutive => Ok(parsed),
        [_, _] => Err(FairnessError::malformed("cards", "a hand that is not consecutive lists exactly 3 cards")),
        [_, _, _] => Err(FairnessError::malformed("cards", "a consecutive hand lists exactly 2 cards")),
        _ => Err(FairnessError::malformed("cards", "a round deals 2 or 3 cards")),
    }
}

/// The commitment and card checks shared by both versions.
struct DealCheck {
    commitment_ok: bool,
    recomputed: Vec<Card>,
    cards_ok: bool,
    claimed: Vec<Card>,
    commitment: [u8; 32],
}

fn verify_deal(
    algorithm: &str,
    server_seed: &str,
    commitment: &str,
    client_seed: &str,
    nonce: u64,
    decks: u8,
    cards: &[String],
) -> Result<DealCheck, FairnessError> {
    if algorithm != ALGORITHM {
        return Err(FairnessError::malformed("algorithm", format!("unknown algorithm, expected {ALGORITHM}")));
    }
    let seed = ServerSeed::from_bytes(hex32("server_seed", server_seed)?);
    let commitment = hex32("commitment", commitment)?;
    let decks = Decks::new(u32::from(decks)).map_err(GameError::from)?;
    let claimed = parse_cards(cards)?;
    let inputs = DealInputs { server_seed: &seed, client_seed: client_seed.as_bytes(), nonce, decks };
    let recomputed = FairShoe::deal(&inputs, claimed.len());
    Ok(DealCheck {
        commitment_ok: seed.commitment().0 == commitment,
        cards_ok: recomputed == claimed,
        recomputed,
        claimed,
        commitment,
    })
}

/// [`verify_deal`] on a reveal of either version: both carry the deal's fields by the same names.
macro_rules! verify_deal_of {
    ($reveal:expr) => {
        verify_deal(
            &$reveal.algorithm,
            &$reveal.server_seed,
            &$reveal.commitment,
            &$reveal.client_seed,
            $reveal.nonce,
            $reveal.decks,
            &$reveal.cards,
        )
    };
}

/// Checks a version-1 reveal: commitment and cards. A malformed reveal (bad hex, unknown
/// algorithm, bad deck count, a card that is not canonical, a card count that does not match
/// the hand class) is an error; a well-formed one that does not verify is a verdict.
pub fn verify_v1(reveal: &RevealV1) -> Result<Verdict, FairnessError> {
    let DealCheck { commitment_ok, recomputed, cards_ok, .. } = verify_deal_of!(reveal)?;
    Ok(Verdict {
        commitment_ok,
        recomputed,
        cards_ok,
        payouts_ok: None,
        transcript_ok: None,
        rules_ok: None,
        expected_seats: vec![],
        chain: vec![],
    })
}

/// The limits and currency of a version-3 reveal, as the rules digest takes them.
fn v3_rules<'a>(reveal: &'a RevealV2, decks: Decks) -> Result<(TableRules<'a>, [u8; 32]), FairnessError> {
    let (Some(limits), Some(currency), Some(digest)) = (&reveal.limits, &reveal.currency, &reveal.rules_digest) else {
        return Err(FairnessError::malformed("format", "a reddog-reveal-v3 has limits, currency and rules_digest"));
    };
    let limits = BetLimits::new(Money(limits.min_bet), Money(limits.max_bet)).map_err(GameError::from)?;
    let rules = TableRules {
        decks,
        paytable: &reveal.paytable,
        limits,
        currency: &currency.code,
        exponent: currency.exponent,
        sandbox: false,
    };
    Ok((rules, hex32("rules_digest", digest)?))
}

/// Checks a version-2 or version-3 reveal: commitment, cards, every seat's money (recomputed
/// by the game core from the revealed cards, decisions and paytable), the transcript and
/// (version 3) the rules digest and the bets against the limits.
pub fn verify_v2(reveal: &RevealV2) -> Result<Verdict, FairnessError> {
    let v3 = match reveal.format.as_str() {
        REVEAL_V2 if reveal.limits.is_none() && reveal.currency.is_none() && reveal.rules_digest.is_none() => false,
        REVEAL_V3 => true,
        _ => return Err(FairnessError::malformed("format", format!("expected {REVEAL_V2} or {REVEAL_V3}"))),
    };
    let DealCheck { commitment_ok, recomputed, cards_ok, claimed, commitment } = verify_deal_of!(reveal)?;
    let decks = Decks::new(u32::from(reveal.decks)).map_err(GameError::from)?;
    if reveal.seats.is_empty() || reveal.seats.len() > crate::game::MAX_SEATS {
        return Err(FairnessError::malformed("seats", "a round has 1 to 7 seats"));
    }
    // The decisions: each seat at most once in the round, ascending within a call, only on
    // a non-consecutive hand.
    let class = HandClass::of(claimed[0], claimed[1]);
    let mut decided: Vec<Option<Decision>> = vec![None; reveal.seats.len()];
    let mut steps = Vec::with_capacity(reveal.decisions.len());
    for (k, step) in reveal.decisions.iter().enumerate() {
        if !matches!(class, HandClass::NonConsecutive(_)) {
            return Err(FairnessError::malformed("decisions", "only a non-consecutive hand has decisions"));
        }
        if step.is_empty() {
            return Err(FairnessError::malformed(format!("decisions[{k}]"), "a Decide call decides at least one seat"));
        }
        let mut parsed = Vec::with_capacity(step.len());
        for (j, d) in step.iter().enumerate() {
            let at = || format!("decisions[{k}][{j}]");
            let action = action_of(&d.action)
                .ok_or_else(|| FairnessError::malformed(at(), "action is \"raise\" or \"stand\""))?;
            let slot = decided.get_mut(d.seat).ok_or_else(|| FairnessError::malformed(at(), "no such seat"))?;
            if slot.is_some() {
                return Err(FairnessError::malformed(at(), "a seat decides at most once in a round"));
            }
            if j > 0 && step[j - 1].seat >= d.seat {
                return Err(FairnessError::malformed(at(), "seats are in ascending order"));
            }
            *slot = Some(action);
            parsed.push((d.seat, action));
        }
        steps.push(parsed);
    }
    let paytable = &reveal.paytable;
    let bets: Vec<Money> = reveal.seats.iter().map(|s| Money(s.bet)).collect();
    // The money, by the game core: rebuild the complete round and settle it.
    let snapshot = RoundSnapshot {
        phase: Phase::Complete,
        cards: [claimed[0], claimed[1]],
        third: claimed.get(2).copied(),
        seats: bets.iter().zip(&decided).map(|(&bet, &decision)| Seat { bet, decision }).collect(),
    };
    let expected: Vec<RevealSeat> = Round::restore(snapshot)
        .and_then(|round| round.settle(paytable))
        .map(|s| {
            s.seats
                .iter()
                .map(|s| RevealSeat { bet: s.bet.0, raised: s.raised, stake: s.stake.0, returned: s.returned.0 })
                .collect()
        })
        // A bet of 0 or above the largest any table allows, or sums beyond 64 bits: no
        // genuine round has them, so the amounts cannot be right.
        .unwrap_or_default();
    let payouts_ok = expected == reveal.seats;
    let rules = if v3 { Some(v3_rules(reveal, decks)?) } else { None };
    let revealed_digest = rules.as_ref().map(|(_, d)| RulesDigest(*d));
    let rules_ok =
        rules.as_ref().map(|(t, d)| t.digest().0 == *d && reveal.seats.iter().all(|s| t.limits.contains(Money(s.bet))));
    let start = StartInputs {
        commitment: &commitment,
        table_id: &reveal.table_id,
        round_id: &reveal.round_id,
        nonce: reveal.nonce,
        decks,
        client_seed: reveal.client_seed.as_bytes(),
        paytable,
        bets: &bets,
        rules_digest: revealed_digest.as_ref(),
    };
    let mut chain = Vec::with_capacity(steps.len() + 1);
    chain.push(start.transcript());
    for step in &steps {
        chain.push(chain[chain.len() - 1].decide(step));
    }
    let transcript_ok = chain[chain.len() - 1].to_hex() == reveal.transcript;
    Ok(Verdict {
        commitment_ok,
        recomputed,
        cards_ok,
        payouts_ok: Some(payouts_ok),
        transcript_ok: Some(transcript_ok),
        rules_ok,
        expected_seats: expected,
        chain,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::{CardSource, Table};

    fn sample_v1() -> RevealV1 {
        let seed = ServerSeed::from_bytes([9; 32]);
        let inputs = DealInputs { server_seed: &seed, client_seed: "grüße".as_bytes(), nonce: 42, decks: Decks::ONE };
        let mut shoe = FairShoe::new(&inputs);
        let cards: Vec<Card> = (0..3).map(|_| shoe.draw()).collect();
        assert!(!matches!(HandClass::of(cards[0], cards[1]), HandClass::Consecutive));
        RevealV1::new(&inputs, "grüße", &cards, Some("r-1".into()))
    }

    /// A settled 2-seat round at the default table, seat 0 raising in the first Decide.
    pub(crate) fn sample_v2(nonce: u64) -> RevealV2 {
        let seed = ServerSeed::from_bytes([7; 32]);
        let inputs = DealInputs { server_seed: &seed, client_seed: b"lucky", nonce, decks: Decks::ONE };
        let table = Table::default();
        let bets = [Money(500), Money(1500)];
        let mut round = Round::start(&table, &bets, &mut FairShoe::new(&inputs)).unwrap();
        let mut steps = Vec::new();
        if matches!(round, Round::AwaitingDecisions(_)) {
            steps.push(round.decide_all(&[(0, Decision::Raise)]).unwrap().0);
        }
        round.close();
        let settlement = round.settle(table.paytable()).unwrap();
        let mut cards = round.cards().to_vec();
        cards.extend(round.third());
        let commitment = seed.commitment().0;
        let start = StartInputs {
            commitment: &commitment,
            table_id: "default",
            round_id: "r-9",
            nonce,
            decks: Decks::ONE,
            client_seed: b"lucky",
            paytable: table.paytable(),
            bets: &bets,
            rules_digest: None,
        };
        let transcript = steps.iter().fold(start.transcript(), |t, s| t.decide(s));
        RevealV2::new(&SettledRound {
            seed: &seed,
            table_id: "default",
            round_id: "r-9",
            client_seed: "lucky",
            nonce,
            decks: Decks::ONE,
            cards: &cards,
            paytable: table.paytable(),
            steps: &steps,
            settlement: &settlement,
            transcript,
            rules: None,
        })
    }

    fn non_consecutive_v2() -> RevealV2 {
        (0..).map(sample_v2).find(|r| !r.decisions.is_empty()).unwrap()
    }

    #[test]
    fn a_genuine_v1_reveal_verifies_after_a_json_round_trip() {
        let json = serde_json::to_string(&sample_v1()).unwrap();
        let back: RevealV1 = serde_json::from_str(&json).unwrap();
        assert!(verify_v1(&back).unwrap().ok());
    }

    #[test]
    fn a_changed_card_or_commitment_fails_v1() {
        let mut r = sample_v1();
        r.cards[2] = if r.cards[2] == "2c" { "3c".into() } else { "2c".into() };
        let v = verify_v1(&r).unwrap();
        assert!(v.commitment_ok && !v.cards_ok);
        let mut r = sample_v1();
        r.commitment = "00".repeat(32);
        assert!(!verify_v1(&r).unwrap().commitment_ok);
        let mut r = sample_v1();
        r.nonce += 1;
        assert!(!verify_v1(&r).unwrap().cards_ok);
    }

    #[test]
    fn malformed_v1_reveals_are_errors_naming_the_field() {
        let mut r = sample_v1();
        r.server_seed = "xyz".into();
        assert_eq!(verify_v1(&r).unwrap_err().path(), Some("server_seed"));
        let mut r = sample_v1();
        r.decks = 9;
        let err = verify_v1(&r).unwrap_err();
        assert!(
            matches!(err, FairnessError::Game(GameError::Card(crate::game::CardError::DecksOutOfRange { decks: 9 }))),
            "{err:?}"
        );
        for cards in [vec![], r.cards[..2].to_vec(), [&r.cards[..], &["2c".to_string()]].concat()] {
            let mut r = sample_v1();
            r.cards = cards;
            assert_eq!(verify_v1(&r).unwrap_err().path(), Some("cards"));
        }
        let mut r = sample_v1();
        r.cards[0] = r.cards[0].to_uppercase(); // e.g. "3C": not canonical
        assert_eq!(verify_v1(&r).unwrap_err().path(), Some("cards"));
    }

    #[test]
    fn a_genuine_v2_reveal_verifies_and_its_json_is_compact_and_ordered() {
        let r = non_consecutive_v2();
        let json = r.to_json();
        assert!(json.starts_with(r#"{"format":"reddog-reveal-v2","algorithm":"reddog-deal-v1","server_seed":""#));
        assert!(json.contains(r#""paytable":{"spread":[5,4,2,1,1,1,1,1,1,1,1],"three_of_a_kind":11},"decisions":[[{"seat":0,"action":"raise"}]],"seats":[{"bet":500,"raised":true,"stake":1000,"#));
        assert!(!json.contains(' '), "{json}");
        let keys = [
            "format",
            "algorithm",
            "server_seed",
            "commitment",
            "table_id",
            "round_id",
            "client_seed",
            "nonce",
            "decks",
            "cards",
            "paytable",
            "decisions",
            "seats",
            "transcript",
        ];
        let positions: Vec<usize> = keys.iter().map(|k| json.find(&format!("\"{k}\":")).unwrap()).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "keys in order");
        let back: RevealV2 = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        let v = verify_v2(&back).unwrap();
        assert!(v.ok(), "{v:?}");
    }

    #[test]
    fn wrong_money_or_decisions_or_transcript_do_not_verify() {
        let r = non_consecutive_v2();
        let mut bad = r.clone();
        bad.seats[1].returned += 1;
        let v = verify_v2(&bad).unwrap();
        assert_eq!((v.payouts_ok, v.cards_ok), (Some(false), true));
        let mut bad = r.clone();
        bad.seats[0].raised = false;
        assert_eq!(verify_v2(&bad).unwrap().payouts_ok, Some(false));
        let mut bad = r.clone();
        bad.decisions[0][0].action = "stand".into();
        let v = verify_v2(&bad).unwrap();
        assert_eq!((v.payouts_ok, v.transcript_ok), (Some(false), Some(false)));
        let mut bad = r.clone();
        bad.round_id = "r-10".into();
        assert_eq!(verify_v2(&bad).unwrap().transcript_ok, Some(false));
        let mut bad = r.clone();
        bad.seats[1].bet += 1;
        let v = verify_v2(&bad).unwrap();
        assert_eq!((v.payouts_ok, v.transcript_ok), (Some(false), Some(false)));
        let mut bad = r.clone();
        bad.decisions[0].push(RevealDecision { seat: 0, action: "stand".into() });
        assert!(verify_v2(&bad).is_err(), "a seat deciding twice is malformed");
        let mut bad = r;
        bad.decisions.push(vec![]);
        assert!(verify_v2(&bad).is_err(), "an empty Decide is malformed");
    }
}
