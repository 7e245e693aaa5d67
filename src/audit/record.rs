//! The audit records, `reddog-audit-v1` (`docs/AUDIT.md`, "The records";
//! `docs/design/evidence-contract.md` §1): the one definition of the format, as serde types
//! the engine's sink writes ([`crate::service`]), the generator writes (`reddog_tools::generate`)
//! and tests read back; and the chain arithmetic every record carries: its hash is SHA-256
//! over exactly its line's bytes (without the `\n`), and each record's `prev` is the hash of
//! the record before it in its (`replica`, `run`).
//!
//! [`Record`] is the whole record (envelope, event name, event fields in the contract's
//! order). The types borrow what they show ([`Cow`]): the engine builds a record from its
//! handler's own values without allocating (the record is on every RPC's path), and a reader
//! gets the owned form, `Record<'static>`. Each field has the type of what it means — hashes
//! are [`Hex32`], cards [`Cards`], decisions [`Decisions`] — so a record that parses is well
//! formed, and serialising a parsed record gives its line's bytes back.
//!
//! The analysis reads lines with [`Scan`], which borrows only the fields the checks use and
//! skips the rest, so a line is parsed once without building the cards, seats and paytable
//! it does not need.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::fairness::{Commitment, Transcript, action_text};
use crate::game::{Card, Decision, HandClass, MAX_SEATS, Money, Paytable, SeatSettlement, Spread};

/// The schema name every record carries.
pub const SCHEMA: &str = "reddog-audit-v1";

/// The `prev` of a run's first record: 64 zeros.
pub const ZERO_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// SHA-256 of a record's line bytes (without the `\n`), lower-case hex: the next record's
/// `prev`.
pub fn line_hash(line: &[u8]) -> String {
    hex::encode(Sha256::digest(line))
}

/// The fields every record starts with, in this order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope<'a> {
    /// [`SCHEMA`].
    pub schema: Cow<'a, str>,
    /// The replica's id.
    pub replica: Cow<'a, str>,
    /// 32 lower-case hex digits, random per process start.
    pub run: Cow<'a, str>,
    /// 0 for the run's first record, then +1 per record.
    pub seq: u64,
    /// The hash of the previous record's line; zeros ([`ZERO_HASH`]) for `seq` 0.
    pub prev: Hex32,
    /// When it was written; informational only.
    pub at: At,
}

/// A whole record: the envelope, then the event's name and fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record<'a> {
    #[serde(flatten)]
    pub envelope: Envelope<'a>,
    #[serde(flatten)]
    pub event: Event<'a>,
}

/// One audit event: the key `event` names the variant, its fields follow in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    AuditStopped(AuditStopped<'a>),
    /// The output took records again after a fault: when writes failed, why, and how many
    /// calls were refused meanwhile.
    AuditResumed(AuditResumed<'a>),
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
            Event::AuditResumed(_) => "audit_resumed",
        }
    }
}

/// A table, its rules digest and the rules it is computed from, in `audit_started`: the
/// trail describes its own rules (`reddog report` reads them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDigest<'a> {
    pub table_id: Cow<'a, str>,
    pub rules_digest: Hex32,
    pub decks: u8,
    pub paytable: Odds<'a>,
    pub min_bet: u64,
    pub max_bet: u64,
    pub currency: Cow<'a, str>,
    pub minor_unit_exponent: u8,
    pub sandbox: bool,
}

/// `audit_started`: the run's first record, what the run serves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditStarted<'a> {
    pub engine_version: Cow<'a, str>,
    pub git_commit: Cow<'a, str>,
    /// (A `Vec`: a `Cow` of a borrowing type would make every record type invariant in its
    /// lifetime; this record is written once a run.)
    pub tables: Vec<TableDigest<'a>>,
    pub checkpoint_interval_secs: u64,
    /// The format's revision ([`REVISION`]); absent (1) in trails of engines before it.
    #[serde(default = "revision_1")]
    pub revision: u32,
    /// A checkpoint after this many round records (`--audit-checkpoint-records`); 0: absent.
    #[serde(default)]
    pub checkpoint_records: u64,
    /// Whether each batch is `fsync`ed before its calls are answered (`--audit-sync`).
    #[serde(default)]
    pub sync: bool,
    /// The last whole record the file held when this run started (a file sink only): the
    /// previous run's end, as this run found it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<PreviousRecord<'a>>,
    /// The bytes of a torn last line (a record cut off mid-line) the file ended with; this run
    /// closed it off with a line feed before its first record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torn_tail_bytes: Option<u64>,
}

/// The format revision this engine writes: 2 added `revision`, `checkpoint_records`, `sync`,
/// `previous` and `torn_tail_bytes` to `audit_started`, the signature to `audit_stopped`, and
/// the `audit_resumed` event. Every field and event of revision 1 is unchanged.
pub const REVISION: u32 = 2;

fn revision_1() -> u32 {
    1
}

/// `audit_started.previous`: a record found at the end of the file, by its place and hash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviousRecord<'a> {
    pub replica: Cow<'a, str>,
    pub run: Cow<'a, str>,
    pub seq: u64,
    pub event: Cow<'a, str>,
    /// SHA-256 of its line.
    pub hash: Hex32,
}

/// `seed_committed`: a CommitSeed answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedCommitted<'a> {
    pub round_id: Cow<'a, str>,
    pub table_id: Cow<'a, str>,
    pub nonce: u64,
    pub decks: u8,
    pub commitment: Hex32,
    pub rules_digest: Hex32,
    /// The commitment token's expiry, as CommitSeed answered it.
    pub expires_at_unix_ms: i64,
    pub sandbox: bool,
}

/// `round_started`: a StartRound answered; `transcript` is `t_0`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundStarted<'a> {
    pub round_id: Cow<'a, str>,
    pub table_id: Cow<'a, str>,
    pub currency: Cow<'a, str>,
    pub exponent: u8,
    pub commitment: Hex32,
    pub rules_digest: Hex32,
    pub nonce: u64,
    pub decks: u8,
    pub step: u32,
    pub transcript: Hex32,
    pub bets: Amounts<'a>,
    /// The first two cards.
    pub cards: Cards<'a>,
    pub hand_class: DealClass,
    /// 1–11 for [`DealClass::Spread`], else 0.
    pub spread: u8,
    pub sandbox: bool,
}

/// `seats_decided`: a Decide answered, from the token at `parent_transcript`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatsDecided<'a> {
    pub round_id: Cow<'a, str>,
    pub table_id: Cow<'a, str>,
    pub commitment: Hex32,
    pub parent_step: u32,
    pub parent_transcript: Hex32,
    pub step: u32,
    pub transcript: Hex32,
    pub decisions: Decisions<'a>,
    pub raised_amount: u64,
    pub complete: bool,
}

/// `round_settled`: a Settle answered; `transcript` is the settled token's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundSettled<'a> {
    pub round_id: Cow<'a, str>,
    pub table_id: Cow<'a, str>,
    pub currency: Cow<'a, str>,
    pub exponent: u8,
    pub commitment: Hex32,
    pub rules_digest: Hex32,
    pub decks: u8,
    pub paytable: Odds<'a>,
    pub step: u32,
    pub transcript: Hex32,
    /// Every card dealt: the first two, and the third when one was drawn.
    pub cards: Cards<'a>,
    pub hand_class: DealClass,
    pub spread: u8,
    /// Every Decide step's decisions, in order.
    pub decisions: Steps<'a>,
    pub seats: Cow<'a, [SeatMoney]>,
    pub total_staked: u64,
    pub total_returned: u64,
    pub sandbox: bool,
}

/// `checkpoint`: the chain head it vouches for, signed when a signer is configured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint<'a> {
    /// Records before it in the run (its own `seq`).
    pub records: u64,
    /// The hash of the record before it.
    pub head: Hex32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<Cow<'a, str>>,
    /// Ed25519 over [`crate::fairness::receipt::checkpoint_message`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<HexBytes<'a>>,
}

/// `audit_stopped`: the last record of a run that shut down cleanly; with a signer, signed
/// like a checkpoint but over [`stopped_message`] (a checkpoint's signature cannot pass for a
/// clean end).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditStopped<'a> {
    /// Records before it in the run.
    pub records: u64,
    /// The hash of the record before it (= its `prev`); absent in revision 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<Hex32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<Cow<'a, str>>,
    /// Ed25519 over [`stopped_message`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<HexBytes<'a>>,
}

/// `audit_resumed`: written first when the output takes records again after a fault.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditResumed<'a> {
    /// When writes began to fail.
    pub failed_at: At,
    /// `no_space`, `io_error`, `closed`, `write_error` or `stalled`.
    pub cause: Cow<'a, str>,
    /// The error as the operating system gave it.
    pub error: Cow<'a, str>,
    /// Calls answered `AUDIT_UNAVAILABLE` meanwhile (none of them dealt or paid anything).
    pub refused_calls: u64,
    /// The first record not written when the fault began: from it to this record, records
    /// were written late (their calls waited, or were refused).
    pub first_delayed_seq: u64,
}

/// What an `audit_stopped` signature signs: `field("reddog/audit/stopped/v1") ‖
/// field(replica) ‖ field(run) ‖ field(u64be(seq)) ‖ field(head)`, `field(x) = u32be(len(x))
/// ‖ x` — the checkpoint message's framing under its own label.
pub fn stopped_message(replica: &str, run: &str, seq: u64, head: &[u8; 32]) -> Vec<u8> {
    const LABEL: &str = "reddog/audit/stopped/v1";
    let mut m = Vec::with_capacity(4 * 5 + LABEL.len() + replica.len() + run.len() + 8 + 32);
    for part in [LABEL.as_bytes(), replica.as_bytes(), run.as_bytes(), &seq.to_be_bytes(), head] {
        m.extend_from_slice(&u32::try_from(part.len()).unwrap_or(u32::MAX).to_be_bytes());
        m.extend_from_slice(part);
    }
    m
}

/// One seat's money in a settlement: `{"bet","raised","stake","returned"}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatMoney {
    pub bet: u64,
    pub raised: bool,
    pub stake: u64,
    pub returned: u64,
}

impl SeatMoney {
    /// A settled seat's money.
    pub fn of(s: &SeatSettlement) -> SeatMoney {
        SeatMoney { bet: s.bet.0, raised: s.raised, stake: s.stake.0, returned: s.returned.0 }
    }

    /// The seats' money, in `buf` (no allocation for a round's at most [`MAX_SEATS`] seats).
    pub fn all<'b>(seats: &[SeatSettlement], buf: &'b mut [SeatMoney; MAX_SEATS]) -> Cow<'b, [SeatMoney]> {
        if seats.len() > MAX_SEATS {
            return Cow::Owned(seats.iter().map(SeatMoney::of).collect());
        }
        for (m, s) in buf.iter_mut().zip(seats) {
            *m = SeatMoney::of(s);
        }
        Cow::Borrowed(&buf[..seats.len()])
    }
}

/// A hand's class as `hand_class` names it (`spread` gives the spread).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DealClass {
    Pair,
    Consecutive,
    Spread,
}

impl DealClass {
    /// `hand_class` and `spread` of a hand: `(Pair, 0)`, `(Consecutive, 0)` or
    /// `(Spread, 1..=11)`.
    pub fn of(class: HandClass) -> (DealClass, u8) {
        match class {
            HandClass::Pair => (DealClass::Pair, 0),
            HandClass::Consecutive => (DealClass::Consecutive, 0),
            HandClass::NonConsecutive(s) => (DealClass::Spread, s.get()),
        }
    }

    /// The `hand_class` text.
    pub fn name(self) -> &'static str {
        match self {
            DealClass::Pair => "pair",
            DealClass::Consecutive => "consecutive",
            DealClass::Spread => "spread",
        }
    }
}

/// 32 bytes (a hash, commitment, transcript or rules digest) as 64 lower-case hex digits.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Hex32(pub [u8; 32]);

impl fmt::Debug for Hex32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Hex32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 64];
        f.write_str(hex_str(&self.0, &mut buf).map_err(|_| fmt::Error)?)
    }
}

impl Hex32 {
    /// The hex text, e.g. to compare with another record's field.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl From<[u8; 32]> for Hex32 {
    fn from(b: [u8; 32]) -> Hex32 {
        Hex32(b)
    }
}

impl From<Commitment> for Hex32 {
    fn from(c: Commitment) -> Hex32 {
        Hex32(c.0)
    }
}

impl From<Transcript> for Hex32 {
    fn from(t: Transcript) -> Hex32 {
        Hex32(t.0)
    }
}

/// Lower-case hex of `bytes` in `buf` (twice as long).
fn hex_str<'b>(bytes: &[u8], buf: &'b mut [u8]) -> Result<&'b str, ()> {
    let out = buf.get_mut(..bytes.len() * 2).ok_or(())?;
    hex::encode_to_slice(bytes, &mut *out).map_err(|_| ())?;
    std::str::from_utf8(out).map_err(|_| ())
}

/// Lower-case hex digits only (one value has one text), decoded.
fn lower_hex(text: &str) -> Option<Vec<u8>> {
    if !text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    hex::decode(text).ok()
}

impl Serialize for Hex32 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // From a stack buffer: no allocation on the RPC path.
        let mut buf = [0u8; 64];
        match hex_str(&self.0, &mut buf) {
            Ok(text) => s.serialize_str(text),
            Err(()) => Err(serde::ser::Error::custom("hex of 32 bytes")),
        }
    }
}

impl<'de> Deserialize<'de> for Hex32 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Hex32, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Hex32;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("64 lower-case hex digits")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Hex32, E> {
                lower_hex(v)
                    .and_then(|b| <[u8; 32]>::try_from(b).ok())
                    .map(Hex32)
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
            }
        }
        d.deserialize_str(V)
    }
}

/// Bytes of any length (a signature) as lower-case hex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HexBytes<'a>(pub Cow<'a, [u8]>);

impl Serialize for HexBytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut buf = [0u8; 128];
        match hex_str(&self.0, &mut buf) {
            Ok(text) => s.serialize_str(text),
            Err(()) => s.serialize_str(&hex::encode(&self.0)),
        }
    }
}

impl<'de> Deserialize<'de> for HexBytes<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        lower_hex(&text)
            .map(|b| HexBytes(Cow::Owned(b)))
            .ok_or_else(|| de::Error::invalid_value(de::Unexpected::Str(&text), &"lower-case hex digits"))
    }
}

/// `at`: the time of writing, RFC 3339 UTC with nanoseconds (`2026-12-01T00:00:00.000000000Z`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct At(pub jiff::Timestamp);

impl Serialize for At {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:.9}", self.0))
    }
}

impl<'de> Deserialize<'de> for At {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<At, D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        text.parse().map(At).map_err(de::Error::custom)
    }
}

/// Amounts in minor units, as an array of integers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Amounts<'a>(pub Cow<'a, [Money]>);

impl Serialize for Amounts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|m| m.0))
    }
}

impl<'de> Deserialize<'de> for Amounts<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let amounts = Vec::<u64>::deserialize(d)?;
        Ok(Amounts(Cow::Owned(amounts.into_iter().map(Money).collect())))
    }
}

/// Cards by their canonical text (`"7h"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cards<'a>(pub Cow<'a, [Card]>);

impl Serialize for Cards<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|c| c.text()))
    }
}

impl<'de> Deserialize<'de> for Cards<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<Card>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of cards (\"7h\")")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Card>, A::Error> {
                let mut cards = Vec::with_capacity(3);
                while let Some(text) = seq.next_element::<Cow<'de, str>>()? {
                    let card = Card::from_text(&text)
                        .ok_or_else(|| de::Error::invalid_value(de::Unexpected::Str(&text), &"a card (\"7h\")"))?;
                    cards.push(card);
                }
                Ok(cards)
            }
        }
        d.deserialize_seq(V).map(|c| Cards(Cow::Owned(c)))
    }
}

/// One Decide step's decisions: `[{"seat":0,"action":"raise"},…]`, ascending seat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decisions<'a>(pub Cow<'a, [(usize, Decision)]>);

/// One seat's decision as a record shows it.
#[derive(Serialize, Deserialize)]
struct SeatAction<'a> {
    seat: usize,
    #[serde(borrow)]
    action: Cow<'a, str>,
}

fn seat_action(a: SeatAction<'_>) -> Option<(usize, Decision)> {
    let d = match &*a.action {
        "raise" => Decision::Raise,
        "stand" => Decision::Stand,
        _ => return None,
    };
    Some((a.seat, d))
}

fn serialize_step<S: Serializer>(step: &[(usize, Decision)], s: S) -> Result<S::Ok, S::Error> {
    let mut seq = s.serialize_seq(Some(step.len()))?;
    for &(seat, d) in step {
        seq.serialize_element(&SeatAction { seat, action: Cow::Borrowed(action_text(d)) })?;
    }
    seq.end()
}

fn deserialize_step<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(usize, Decision)>, D::Error> {
    Vec::<SeatAction<'de>>::deserialize(d)?
        .into_iter()
        .map(|a| seat_action(a).ok_or_else(|| de::Error::custom("action: expected \"raise\" or \"stand\"")))
        .collect()
}

impl Serialize for Decisions<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_step(&self.0, s)
    }
}

impl<'de> Deserialize<'de> for Decisions<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_step(d).map(|step| Decisions(Cow::Owned(step)))
    }
}

/// Every Decide step's decisions, one array per step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Steps<'a>(pub Cow<'a, [Vec<(usize, Decision)>]>);

/// One step, (de)serialised as [`Decisions`].
struct Step(Vec<(usize, Decision)>);

impl<'de> Deserialize<'de> for Step {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Step, D::Error> {
        deserialize_step(d).map(Step)
    }
}

struct StepRef<'s>(&'s [(usize, Decision)]);

impl Serialize for StepRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_step(self.0, s)
    }
}

impl Serialize for Steps<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|step| StepRef(step)))
    }
}

impl<'de> Deserialize<'de> for Steps<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let steps = Vec::<Step>::deserialize(d)?;
        Ok(Steps(Cow::Owned(steps.into_iter().map(|s| s.0).collect())))
    }
}

/// A paytable: `{"spread":[11 odds],"three_of_a_kind":odds}` (read back through
/// [`Paytable`]'s own checks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Odds<'a>(pub Cow<'a, Paytable>);

impl Serialize for Odds<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Not `Paytable`'s own `Serialize`, which builds a `Vec`: nothing is allocated here.
        let mut st = s.serialize_struct("Paytable", 2)?;
        st.serialize_field("spread", &SpreadOdds(&self.0))?;
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

impl<'de> Deserialize<'de> for Odds<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Paytable::deserialize(d).map(|p| Odds(Cow::Owned(p)))
    }
}

/// The top-level keys of one record line, in the order they appear (the specification fixes
/// the order; a JSON map does not keep it).
pub fn keys_in_order(line: &str) -> Result<Vec<String>, serde_json::Error> {
    struct Keys(Vec<String>);
    impl<'de> Deserialize<'de> for Keys {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Keys, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Keys;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Keys, A::Error> {
                    let mut keys = Vec::new();
                    while let Some((k, de::IgnoredAny)) = map.next_entry::<String, de::IgnoredAny>()? {
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

/// The fields of a line the checks read, borrowed where the JSON allows; every other field
/// is skipped. A line is a record when `schema` is [`SCHEMA`] and the envelope is complete.
#[derive(Debug, Default, Deserialize)]
pub struct Scan<'a> {
    #[serde(borrow)]
    pub schema: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub replica: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub run: Option<Cow<'a, str>>,
    pub seq: Option<u64>,
    #[serde(borrow)]
    pub prev: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub at: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub event: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub round_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub table_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub commitment: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub transcript: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub parent_transcript: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub head: Option<Cow<'a, str>>,
    /// A checkpoint's or `audit_stopped`'s signature (128 hex), when the engine signs them.
    #[serde(borrow)]
    pub signature: Option<Cow<'a, str>>,
    /// `audit_started`: the format revision (absent: 1).
    pub revision: Option<u32>,
    /// `audit_started`: the previous run's last record, as this run found it.
    #[serde(borrow)]
    pub previous: Option<ScanPrevious<'a>>,
    /// `audit_started`: a torn line closed off before the run.
    pub torn_tail_bytes: Option<u64>,
    /// `audit_resumed`.
    #[serde(borrow)]
    pub failed_at: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub cause: Option<Cow<'a, str>>,
    pub refused_calls: Option<u64>,
}

/// [`Scan`]'s view of `audit_started.previous`.
#[derive(Debug, Default, Deserialize)]
pub struct ScanPrevious<'a> {
    #[serde(borrow)]
    pub replica: Cow<'a, str>,
    #[serde(borrow)]
    pub run: Cow<'a, str>,
    pub seq: u64,
    #[serde(borrow)]
    pub event: Cow<'a, str>,
    #[serde(borrow)]
    pub hash: Cow<'a, str>,
}
