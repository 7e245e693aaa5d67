//! The audit records, `reddog-audit-v1` (`docs/AUDIT.md`, "The records";
//! `docs/design/evidence-contract.md` §1), as typed serde structs, and the chain arithmetic
//! every record carries: its hash is SHA-256 over exactly its line's bytes (without the `\n`),
//! and each record's `prev` is the hash of the record before it in its (`replica`, `run`).
//!
//! [`Record`] is the whole record (envelope, event name, event fields in the contract's
//! order): the generator writes it and tests read it back. The analysis reads lines with
//! [`Scan`], which borrows only the fields the checks use and skips the rest, so a line is
//! parsed once without building the cards, seats and paytable it does not need.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

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
pub struct Envelope {
    /// [`SCHEMA`].
    pub schema: String,
    /// The replica's id.
    pub replica: String,
    /// 32 lower-case hex digits, random per process start.
    pub run: String,
    /// 0 for the run's first record, then +1 per record.
    pub seq: u64,
    /// The hash of the previous record's line; [`ZERO_HASH`] for `seq` 0.
    pub prev: String,
    /// RFC 3339 UTC with nanoseconds; informational only.
    pub at: String,
}

/// A whole record: the envelope, then the event's name and fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    #[serde(flatten)]
    pub envelope: Envelope,
    #[serde(flatten)]
    pub event: Event,
}

/// The events, by their `event` name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    AuditStarted(AuditStarted),
    SeedCommitted(SeedCommitted),
    RoundStarted(RoundStarted),
    SeatsDecided(SeatsDecided),
    RoundSettled(RoundSettled),
    Checkpoint(Checkpoint),
    AuditStopped(AuditStopped),
}

/// One table the engine serves, with its rules digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDigest {
    pub table_id: String,
    pub rules_digest: String,
}

/// `audit_started`: the run's first record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditStarted {
    pub engine_version: String,
    pub git_commit: String,
    pub tables: Vec<TableDigest>,
    pub checkpoint_interval_secs: u64,
}

/// `seed_committed`: a CommitSeed answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedCommitted {
    pub round_id: String,
    pub table_id: String,
    pub nonce: u64,
    pub decks: u8,
    pub commitment: String,
    pub rules_digest: String,
    pub expires_at_unix_ms: u64,
    pub sandbox: bool,
}

/// `round_started`: a StartRound answered; `transcript` is `t_0`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundStarted {
    pub round_id: String,
    pub table_id: String,
    pub currency: String,
    pub exponent: u8,
    pub commitment: String,
    pub rules_digest: String,
    pub nonce: u64,
    pub decks: u8,
    pub step: u32,
    pub transcript: String,
    pub bets: Vec<u64>,
    pub cards: Vec<String>,
    pub hand_class: String,
    pub spread: u8,
    pub sandbox: bool,
}

/// One seat's decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatAction {
    pub seat: usize,
    /// `"raise"` or `"stand"`.
    pub action: String,
}

/// `seats_decided`: a Decide answered, from the token at `parent_transcript`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatsDecided {
    pub round_id: String,
    pub table_id: String,
    pub commitment: String,
    pub parent_step: u32,
    pub parent_transcript: String,
    pub step: u32,
    pub transcript: String,
    pub decisions: Vec<SeatAction>,
    pub raised_amount: u64,
    pub complete: bool,
}

/// The paytable as the records carry it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaytableOdds {
    /// Odds of spreads 1 to 11.
    pub spread: Vec<u32>,
    pub three_of_a_kind: u32,
}

/// One seat's money in a settlement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatMoney {
    pub bet: u64,
    pub raised: bool,
    pub stake: u64,
    pub returned: u64,
}

/// `round_settled`: a Settle answered; `transcript` is the settled token's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundSettled {
    pub round_id: String,
    pub table_id: String,
    pub currency: String,
    pub exponent: u8,
    pub commitment: String,
    pub rules_digest: String,
    pub decks: u8,
    pub paytable: PaytableOdds,
    pub step: u32,
    pub transcript: String,
    pub cards: Vec<String>,
    pub hand_class: String,
    pub spread: u8,
    pub decisions: Vec<Vec<SeatAction>>,
    pub seats: Vec<SeatMoney>,
    pub total_staked: u64,
    pub total_returned: u64,
    pub sandbox: bool,
}

/// `checkpoint`: the chain head every interval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub records: u64,
    pub head: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// `audit_stopped`: the last record of a run that shut down cleanly.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditStopped {
    pub records: u64,
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
    /// A checkpoint's signature (128 hex), when the engine signs them.
    #[serde(borrow)]
    pub signature: Option<Cow<'a, str>>,
}
