//! The audit records (`reddog-audit-v1`, docs/AUDIT.md "The records"): one Rust type per
//! event, serialised by serde in the order of the specification, behind the envelope every
//! record starts with (`schema`, `replica`, `run`, `seq`, `prev`, `at`, `event`).
//!
//! The types borrow what they show from the handler's own values (round state, settlement,
//! table): building a record allocates nothing; [`super::audit_sink::AuditSink`] serialises
//! it into a reused buffer, hashes the line and chains the next record to it.

use serde::ser::{SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};

use super::tables::Currency;
use crate::fairness::{Commitment, Transcript, action_text};
use crate::game::{Card, Decision, HandClass, Money, Paytable, SeatSettlement, Spread, Table};

/// The `schema` of every record.
pub const SCHEMA: &str = "reddog-audit-v1";

pub use crate::fairness::receipt::checkpoint_message;

/// One audit event: the key `event` names the variant, its fields follow in order.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event<'a> {
    /// The first record of a run (`seq` 0).
    AuditStarted(AuditStarted<'a>),
    /// A CommitSeed answered.
    SeedCommitted(SeedCommitted<'a>),
    /// A StartRound answered: the round's first two cards and its bets.
    RoundStarted(RoundStarted<'a>),
    /// A Decide answered: one step of the round's transcript chain.
    SeatsDecided(SeatsDecided<'a>),
    /// A Settle answered: everything the round's money follows from.
    RoundSettled(RoundSettled<'a>),
    /// The chain head, every checkpoint interval while records were written.
    Checkpoint(Checkpoint<'a>),
    /// The last record of a run that shut down cleanly.
    AuditStopped(AuditStopped),
}

impl Event<'_> {
    /// The `event` value, e.g. `round_started`.
    pub fn name(&self) -> &'static str {
        match self {
            Event::AuditStarted(_) => "audit_started",
            Event::SeedCommitted(_) => "seed_committed",
            Event::RoundStarted(_) => "round_started",
            Event::SeatsDecided(_) => "seats_decided",
            Event::RoundSettled(_) => "round_settled",
            Event::Checkpoint(_) => "checkpoint",
            Event::AuditStopped(_) => "audit_stopped",
        }
    }
}

/// A table, its rules digest and the rules it is computed from, in `audit_started`: the
/// trail describes its own rules (`reddog report` reads them).
#[derive(Debug, Serialize)]
pub struct TableDigest<'a> {
    pub table_id: &'a str,
    pub rules_digest: Hex<'a>,
    pub decks: u8,
    pub paytable: Odds<'a>,
    pub min_bet: u64,
    pub max_bet: u64,
    pub currency: &'a str,
    pub minor_unit_exponent: u8,
    pub sandbox: bool,
}

/// `audit_started`: what the run serves.
#[derive(Debug, Serialize)]
pub struct AuditStarted<'a> {
    pub engine_version: &'a str,
    pub git_commit: &'a str,
    pub tables: &'a [TableDigest<'a>],
    pub checkpoint_interval_secs: u64,
}

/// `seed_committed`.
#[derive(Debug, Serialize)]
pub struct SeedCommitted<'a> {
    pub round_id: &'a str,
    pub table_id: &'a str,
    pub nonce: u64,
    pub decks: u8,
    pub commitment: Shown<&'a Commitment>,
    pub rules_digest: Hex<'a>,
    pub expires_at_unix_ms: i64,
    pub sandbox: bool,
}

/// `round_started`.
#[derive(Debug, Serialize)]
pub struct RoundStarted<'a> {
    pub round_id: &'a str,
    pub table_id: &'a str,
    pub currency: &'a str,
    pub exponent: u8,
    pub commitment: Shown<&'a Commitment>,
    pub rules_digest: Hex<'a>,
    pub nonce: u64,
    pub decks: u8,
    pub step: u32,
    pub transcript: Shown<Transcript>,
    pub bets: Amounts<'a>,
    pub cards: Cards<'a>,
    pub hand_class: &'static str,
    pub spread: u8,
    pub sandbox: bool,
}

/// `seats_decided`.
#[derive(Debug, Serialize)]
pub struct SeatsDecided<'a> {
    pub round_id: &'a str,
    pub table_id: &'a str,
    pub commitment: Shown<&'a Commitment>,
    pub parent_step: u32,
    pub parent_transcript: Shown<Transcript>,
    pub step: u32,
    pub transcript: Shown<Transcript>,
    pub decisions: Decisions<'a>,
    pub raised_amount: u64,
    pub complete: bool,
}

/// `round_settled`.
#[derive(Debug, Serialize)]
pub struct RoundSettled<'a> {
    pub round_id: &'a str,
    pub table_id: &'a str,
    pub currency: &'a str,
    pub exponent: u8,
    pub commitment: Shown<&'a Commitment>,
    pub rules_digest: Hex<'a>,
    pub decks: u8,
    pub paytable: Odds<'a>,
    pub step: u32,
    pub transcript: Shown<Transcript>,
    pub cards: Cards<'a>,
    pub hand_class: &'static str,
    pub spread: u8,
    pub decisions: Steps<'a>,
    pub seats: Seats<'a>,
    pub total_staked: u64,
    pub total_returned: u64,
    pub sandbox: bool,
}

/// `checkpoint`: the chain head it vouches for, signed when a signer is configured.
#[derive(Debug, Serialize)]
pub struct Checkpoint<'a> {
    pub records: u64,
    pub head: Hex<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<Hex<'a>>,
}

/// `audit_stopped`.
#[derive(Debug, Serialize)]
pub struct AuditStopped {
    pub records: u64,
}

/// Bytes as lower-case hex.
#[derive(Clone, Copy, Debug)]
pub struct Hex<'a>(pub &'a [u8]);

impl Serialize for Hex<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // 32-byte values (digests, hashes) from a stack buffer; longer ones (signatures) too.
        let mut buf = [0u8; 128];
        if let Some(out) = buf.get_mut(..self.0.len() * 2)
            && hex::encode_to_slice(self.0, &mut *out).is_ok()
            && let Ok(text) = std::str::from_utf8(out)
        {
            return s.serialize_str(text);
        }
        s.serialize_str(&hex::encode(self.0))
    }
}

/// A value by its `Display` text (commitments and transcripts: lower-case hex), written
/// straight into the output.
#[derive(Clone, Copy, Debug)]
pub struct Shown<T>(pub T);

impl<T: std::fmt::Display> Serialize for Shown<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// Amounts in minor units, as an array of integers.
#[derive(Clone, Copy, Debug)]
pub struct Amounts<'a>(pub &'a [Money]);

impl Serialize for Amounts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|m| m.0))
    }
}

/// Cards by their canonical text (`"7h"`).
#[derive(Clone, Copy, Debug)]
pub struct Cards<'a>(pub &'a [Card]);

impl Serialize for Cards<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|c| c.text()))
    }
}

/// One Decide step's decisions: `[{"seat":0,"action":"raise"},…]`, ascending seat.
#[derive(Clone, Copy, Debug)]
pub struct Decisions<'a>(pub &'a [(usize, Decision)]);

impl Serialize for Decisions<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for &(seat, d) in self.0 {
            seq.serialize_element(&SeatAction { seat, action: action_text(d) })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct SeatAction {
    seat: usize,
    action: &'static str,
}

/// Every Decide step's decisions, one array per step.
#[derive(Clone, Copy, Debug)]
pub struct Steps<'a>(pub &'a [Vec<(usize, Decision)>]);

impl Serialize for Steps<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|step| Decisions(step)))
    }
}

/// Each seat's money: `[{"bet","raised","stake","returned"},…]`.
#[derive(Clone, Copy, Debug)]
pub struct Seats<'a>(pub &'a [SeatSettlement]);

impl Serialize for Seats<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for seat in self.0 {
            seq.serialize_element(&SeatMoney(seat))?;
        }
        seq.end()
    }
}

struct SeatMoney<'a>(&'a SeatSettlement);

impl Serialize for SeatMoney<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Seat", 4)?;
        st.serialize_field("bet", &self.0.bet.0)?;
        st.serialize_field("raised", &self.0.raised)?;
        st.serialize_field("stake", &self.0.stake.0)?;
        st.serialize_field("returned", &self.0.returned.0)?;
        st.end()
    }
}

/// A paytable: `{"spread":[11 odds],"three_of_a_kind":odds}`.
#[derive(Clone, Copy, Debug)]
pub struct Odds<'a>(pub &'a Paytable);

impl Serialize for Odds<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Paytable", 2)?;
        st.serialize_field("spread", &SpreadOdds(self.0))?;
        st.serialize_field("three_of_a_kind", &self.0.three_of_a_kind_odds())?;
        st.end()
    }
}

struct SpreadOdds<'a>(&'a Paytable);

impl Serialize for SpreadOdds<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(Spread::all().map(|sp| self.0.spread_odds(sp)))
    }
}

/// `hand_class` and `spread` of a hand: `("pair", 0)`, `("consecutive", 0)` or
/// `("spread", 1..=11)`.
pub fn hand_class(class: HandClass) -> (&'static str, u8) {
    match class {
        HandClass::Pair => ("pair", 0),
        HandClass::Consecutive => ("consecutive", 0),
        HandClass::NonConsecutive(s) => ("spread", s.get()),
    }
}

/// The table's rules digest (docs/design/evidence-contract.md §3), as the commitment token
/// and `t_0` bind it: [`crate::fairness::TableRules::digest`].
pub fn rules_digest(table: &Table, currency: &Currency) -> [u8; 32] {
    crate::fairness::TableRules {
        decks: table.decks(),
        paytable: table.paytable(),
        limits: table.limits(),
        currency: currency.code(),
        exponent: currency.minor_unit_exponent(),
    }
    .digest()
    .0
}

/// The top-level keys of one record line, in the order they appear (the specification fixes
/// the order; a JSON map does not keep it).
pub fn keys_in_order(line: &str) -> Result<Vec<String>, serde_json::Error> {
    struct Keys(Vec<String>);
    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Keys, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Keys;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Keys, A::Error> {
                    let mut keys = Vec::new();
                    while let Some((k, serde::de::IgnoredAny)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                        keys.push(k);
                    }
                    Ok(Keys(keys))
                }
            }
            d.deserialize_map(V)
        }
    }
    serde_json::from_str::<Keys>(line).map(|k| k.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_digest_covers_every_rule_that_decides_a_payout() {
        let base = Table::default();
        let eur = Currency::new("EUR", 2, "t").unwrap();
        let d = rules_digest(&base, &eur);
        assert_eq!(d, rules_digest(&base.clone(), &eur.clone()), "a pure function");
        let other_currency = Currency::new("USD", 2, "t").unwrap();
        let other_exponent = Currency::new("EUR", 3, "t").unwrap();
        assert_ne!(d, rules_digest(&base, &other_currency));
        assert_ne!(d, rules_digest(&base, &other_exponent));
        let spec = |decks: u8, min: u64, max: u64, odds: u32| {
            let paytable = Paytable::new([odds, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1], 11).unwrap();
            Table::new(
                crate::game::Decks::new(u32::from(decks)).unwrap(),
                paytable,
                crate::game::BetLimits::new(Money(min), Money(max)).unwrap(),
            )
            .unwrap()
        };
        let t = spec(6, 100, 10_000, 5);
        let digests = [
            rules_digest(&t, &eur),
            rules_digest(&spec(8, 100, 10_000, 5), &eur),
            rules_digest(&spec(6, 101, 10_000, 5), &eur),
            rules_digest(&spec(6, 100, 10_001, 5), &eur),
            rules_digest(&spec(6, 100, 10_000, 6), &eur),
        ];
        for (i, a) in digests.iter().enumerate() {
            for b in &digests[i + 1..] {
                assert_ne!(a, b, "each rule changes the digest");
            }
        }
    }

    #[test]
    fn the_checkpoint_message_is_length_prefixed_fields() {
        let m = checkpoint_message("r-1", "ab", 7, &[9; 32]);
        let mut want = Vec::new();
        want.extend_from_slice(&26u32.to_be_bytes());
        want.extend_from_slice(b"reddog/audit/checkpoint/v1");
        want.extend_from_slice(&3u32.to_be_bytes());
        want.extend_from_slice(b"r-1");
        want.extend_from_slice(&2u32.to_be_bytes());
        want.extend_from_slice(b"ab");
        want.extend_from_slice(&8u32.to_be_bytes());
        want.extend_from_slice(&7u64.to_be_bytes());
        want.extend_from_slice(&32u32.to_be_bytes());
        want.extend_from_slice(&[9; 32]);
        assert_eq!(m, want);
    }
}
