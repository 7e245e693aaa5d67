//! Signed receipts (`docs/FAIRNESS.md` 4.7): the exact bytes an engine's Ed25519 key signs
//! at `CommitSeed`, at every step of a round (`StartRound`, `Decide`) and at `Settle`, the
//! one strict Ed25519 rule every verifier applies, and the checks of each receipt against a
//! reveal; also the message an audit checkpoint's signature covers (the engine's audit sink
//! signs it, `reddog audit-log --public-key` checks it), so every message the key signs is
//! defined here.
//!
//! Each message is a fixed ASCII label followed by length-prefixed fields (`field(x) =
//! u32be(len(x)) ‖ x`, as in the deal's key derivation), so a receipt of one kind can never be
//! read as another, or as an audit checkpoint (label `reddog/audit/checkpoint/v1`).
//!
//! The engine signs version 2 of each receipt: the signing key's id is inside every signed
//! message, and a step receipt signs only what the table has shown — its cards are a
//! [`ShownCards`], which [`crate::game::Round::shown`] alone builds and which cannot hold a
//! face-down card. Verifiers still read version 1 (published before), where that is safe: a
//! version-1 step receipt that names a card before it was shown is refused (the engine that
//! wrote it leaked the card), and a version-1 receipt's key id is reported as not signed.

use ed25519_dalek::{Signature, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::reveal::{RevealDecision, RevealV2};
use super::transcript::{Transcript, action_byte};
use crate::game::{Card, Decision, HandClass, ShownCards};

/// The label of a `CommitSeed` receipt, version 2 (24 ASCII bytes).
pub const COMMIT_LABEL: &[u8] = b"reddog/receipt/commit/v2";
/// Version 1's label (no key id in the message).
pub const COMMIT_LABEL_V1: &[u8] = b"reddog/receipt/commit/v1";
/// The label of a step receipt (`StartRound`, `Decide`), version 2 (22 ASCII bytes).
pub const STEP_LABEL: &[u8] = b"reddog/receipt/step/v2";
/// Version 1's label (key id, table, rules digest and sandbox flag not signed; every card
/// dealt signed, the face-down one included: a leak).
pub const STEP_LABEL_V1: &[u8] = b"reddog/receipt/step/v1";
/// The `format` of a step receipt's JSON ([`StepReceiptJson`]).
pub const STEP_RECEIPT_FORMAT: &str = "reddog-step-receipt-v2";
/// The `format` of a version-1 step receipt.
pub const STEP_RECEIPT_FORMAT_V1: &str = "reddog-step-receipt-v1";
/// The label of a `Settle` receipt, version 2 (24 ASCII bytes).
pub const SETTLE_LABEL: &[u8] = b"reddog/receipt/settle/v2";
/// Version 1's label (no key id in the message).
pub const SETTLE_LABEL_V1: &[u8] = b"reddog/receipt/settle/v1";
/// The domain separator of an audit checkpoint signature's message (docs/AUDIT.md,
/// "Checkpoints").
pub const CHECKPOINT_DOMAIN: &str = "reddog/audit/checkpoint/v1";
/// The signature algorithm, as published with a public key.
pub const SIGNATURE_ALGORITHM: &str = "ed25519";

/// Appends `u32be(len(bytes)) ‖ bytes`. Every field of a receipt is far below 4 GiB (the
/// longest is a 128-byte round id).
fn field(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&u32::try_from(bytes.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// The message a checkpoint's signature covers: `field("reddog/audit/checkpoint/v1") ‖
/// field(replica) ‖ field(run) ‖ field(u64be(seq)) ‖ field(head, 32 bytes)`.
pub fn checkpoint_message(replica: &str, run: &str, seq: u64, head: &[u8; 32]) -> Vec<u8> {
    let mut m = Vec::with_capacity(4 * 5 + CHECKPOINT_DOMAIN.len() + replica.len() + run.len() + 8 + 32);
    for part in [CHECKPOINT_DOMAIN.as_bytes(), replica.as_bytes(), run.as_bytes(), &seq.to_be_bytes(), head] {
        m.extend_from_slice(&u32::try_from(part.len()).unwrap_or(u32::MAX).to_be_bytes());
        m.extend_from_slice(part);
    }
    m
}

// ------------------------------------------------------------------------ strict Ed25519

/// The field prime 2²⁵⁵ − 19, little-endian.
const P_LE: [u8; 32] = {
    let mut p = [0xff; 32];
    p[0] = 0xed;
    p[31] = 0x7f;
    p
};

/// The group order L = 2²⁵² + 27742317777372353535851937790883648493, little-endian.
const L_LE: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
];

/// The 14 encodings of the 8 points of small order (C2SP/CCTV `ed25519/README.md`): the
/// canonical ones and the alternatives (`x = −0`, `y ≥ p`).
pub const SMALL_ORDER_ENCODINGS: [&str; 14] = [
    "0000000000000000000000000000000000000000000000000000000000000000",
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "0000000000000000000000000000000000000000000000000000000000000080",
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "0100000000000000000000000000000000000000000000000000000000000000",
    "0100000000000000000000000000000000000000000000000000000000000080",
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
];

/// `a < b`, both little-endian 32-byte integers.
fn lt_le(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().rev().cmp(b.iter().rev()) == std::cmp::Ordering::Less
}

/// Whether a point encoding is canonical (its y, the low 255 bits, below p) and not one of
/// the small-order encodings.
fn strict_point(encoding: &[u8; 32]) -> bool {
    let mut y = *encoding;
    y[31] &= 0x7f;
    lt_le(&y, &P_LE) && !SMALL_ORDER_ENCODINGS.iter().any(|h| hex::encode(encoding) == *h)
}

/// The one Ed25519 rule of every verifier (`docs/FAIRNESS.md` 4.7, "Strict Ed25519"): the
/// public key A and the signature's R canonical (y < p) and not of small order, S < L, and
/// the cofactorless equation of RFC 8032 (ed25519-dalek's `verify_strict`, which compares
/// the recomputed R's encoding with the signature's).
pub fn verify_message(public_key: &[u8; 32], signature: &[u8; 64], message: &[u8]) -> bool {
    let mut r = [0u8; 32];
    let mut s = [0u8; 32];
    r.copy_from_slice(&signature[..32]);
    s.copy_from_slice(&signature[32..]);
    if !strict_point(public_key) || !strict_point(&r) || !lt_le(&s, &L_LE) {
        return false;
    }
    let Ok(key) = VerifyingKey::from_bytes(public_key) else { return false };
    key.verify_strict(message, &Signature::from_bytes(signature)).is_ok()
}

// ------------------------------------------------------------------------------ CommitSeed

/// What a `CommitSeed` receipt signs: the key id, the commitment and everything the
/// commitment token binds.
#[derive(Clone, Copy, Debug)]
pub struct CommitReceipt<'a> {
    /// The signing key's id (version 2: inside the message).
    pub key_id: &'a str,
    /// SHA-256 of the server seed (the raw 32 bytes).
    pub commitment: &'a [u8; 32],
    /// The round id (UTF-8).
    pub round_id: &'a str,
    /// The round's nonce.
    pub nonce: u64,
    /// The table id (never empty: `default` for the default table).
    pub table_id: &'a str,
    /// Decks in the shoe, 1 … 8.
    pub decks: u8,
    /// The table's rules digest (raw 32 bytes; it covers paytable, limits, currency and the
    /// sandbox flag).
    pub rules_digest: &'a [u8; 32],
    /// When the commitment token expires, Unix milliseconds.
    pub expires_at_unix_ms: i64,
    /// The deal algorithm, e.g. `reddog-deal-v1`.
    pub algorithm: &'a str,
    /// Whether the round is a sandbox round.
    pub sandbox: bool,
}

impl CommitReceipt<'_> {
    /// The exact bytes signed (version 2): `field(label) ‖ field(key_id) ‖ field(commitment)
    /// ‖ field(round_id) ‖ field(u64be(nonce)) ‖ field(table_id) ‖ field(u8(decks)) ‖
    /// field(rules_digest) ‖ field(i64be(expires_at_unix_ms)) ‖ field(algorithm) ‖
    /// field(u8(sandbox))`.
    pub fn message(&self) -> Vec<u8> {
        self.message_of(2)
    }

    /// Version 1's message: the same without the key id, under its own label.
    pub fn message_v1(&self) -> Vec<u8> {
        self.message_of(1)
    }

    fn message_of(&self, version: u8) -> Vec<u8> {
        let mut m = Vec::with_capacity(4 * 11 + 24 + self.key_id.len() + 32 + self.round_id.len() + 8 + 64 + 32 + 8);
        if version == 1 {
            field(&mut m, COMMIT_LABEL_V1);
        } else {
            field(&mut m, COMMIT_LABEL);
            field(&mut m, self.key_id.as_bytes());
        }
        field(&mut m, self.commitment);
        field(&mut m, self.round_id.as_bytes());
        field(&mut m, &self.nonce.to_be_bytes());
        field(&mut m, self.table_id.as_bytes());
        field(&mut m, &[self.decks]);
        field(&mut m, self.rules_digest);
        field(&mut m, &self.expires_at_unix_ms.to_be_bytes());
        field(&mut m, self.algorithm.as_bytes());
        field(&mut m, &[u8::from(self.sandbox)]);
        m
    }
}

/// The `format` of a CommitSeed receipt's JSON ([`CommitReceiptJson`]), version 2.
pub const COMMIT_RECEIPT_FORMAT: &str = "reddog-commit-receipt-v2";
/// Version 1's `format` (its key id not signed).
pub const COMMIT_RECEIPT_FORMAT_V1: &str = "reddog-commit-receipt-v1";

/// A CommitSeed receipt as JSON: what the engine returns in `CommitSeedResponse.receipt_json`,
/// the answer's values of the same names and its signature.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitReceiptJson {
    /// [`COMMIT_RECEIPT_FORMAT`] (or version 1's).
    pub format: String,
    pub signing_key_id: String,
    /// 64 hex.
    pub commitment: String,
    pub round_id: String,
    pub nonce: u64,
    pub table_id: String,
    pub decks: u8,
    /// 64 hex.
    pub rules_digest: String,
    pub expires_at_unix_ms: i64,
    pub algorithm: String,
    pub sandbox: bool,
    /// 128 hex.
    pub signature: String,
}

impl CommitReceiptJson {
    /// The JSON of a signed receipt (version 2).
    pub fn new(r: &CommitReceipt<'_>, signature: &str) -> CommitReceiptJson {
        CommitReceiptJson {
            format: COMMIT_RECEIPT_FORMAT.to_string(),
            signing_key_id: r.key_id.to_string(),
            commitment: hex::encode(r.commitment),
            round_id: r.round_id.to_string(),
            nonce: r.nonce,
            table_id: r.table_id.to_string(),
            decks: r.decks,
            rules_digest: hex::encode(r.rules_digest),
            expires_at_unix_ms: r.expires_at_unix_ms,
            algorithm: r.algorithm.to_string(),
            sandbox: r.sandbox,
            signature: signature.to_string(),
        }
    }

    /// 2, or 1 for a receipt of the old format.
    pub fn version(&self) -> u8 {
        if self.format == COMMIT_RECEIPT_FORMAT_V1 { 1 } else { 2 }
    }

    /// The receipt checked with `public_key` against a reveal of its round.
    pub fn check(&self, public_key: &[u8; 32], reveal: &RevealV2) -> ReceiptCheck {
        let mut c = [0u8; 32];
        let mut d = [0u8; 32];
        let mut sig = [0u8; 64];
        let decoded = hex::decode_to_slice(&self.commitment, &mut c).is_ok()
            && hex::decode_to_slice(&self.rules_digest, &mut d).is_ok()
            && hex::decode_to_slice(&self.signature, &mut sig).is_ok();
        let receipt = CommitReceipt {
            key_id: &self.signing_key_id,
            commitment: &c,
            round_id: &self.round_id,
            nonce: self.nonce,
            table_id: &self.table_id,
            decks: self.decks,
            rules_digest: &d,
            expires_at_unix_ms: self.expires_at_unix_ms,
            algorithm: &self.algorithm,
            sandbox: self.sandbox,
        };
        let version = self.version();
        let message = if version == 1 { receipt.message_v1() } else { receipt.message() };
        let descends = self.commitment.eq_ignore_ascii_case(&reveal.commitment)
            && self.round_id == reveal.round_id
            && self.nonce == reveal.nonce
            && self.table_id == reveal.table_id
            && self.decks == reveal.decks
            && self.algorithm == reveal.algorithm
            && reveal.rules_digest.as_ref().is_some_and(|r| r.eq_ignore_ascii_case(&self.rules_digest));
        ReceiptCheck {
            name: format!("commit (expires at {} Unix ms)", self.expires_at_unix_ms),
            version,
            key_id: (version == 2).then(|| self.signing_key_id.clone()),
            signed: decoded && verify_message(public_key, &sig, &message),
            descends,
            hidden_card: None,
            sandbox: self.sandbox,
        }
    }
}

// ------------------------------------------------------------------------------- steps

/// What a step receipt signs (version 2), as the engine builds it: the key id, the round
/// (commitment, table, round id, rules digest, sandbox flag), the step (0 at `StartRound`, k
/// after the k-th `Decide`), the transcript `t_step`, the cards the table shows after the
/// step — a [`ShownCards`], so never a face-down card — and the decisions the step took.
#[derive(Clone, Debug)]
pub struct StepReceipt<'a> {
    pub key_id: &'a str,
    /// SHA-256 of the server seed (the raw 32 bytes).
    pub commitment: [u8; 32],
    pub table_id: &'a str,
    pub round_id: &'a str,
    /// The rules digest the round was dealt under (`None`: a round sealed before rounds
    /// carried their rules; the field is then empty).
    pub rules_digest: Option<[u8; 32]>,
    pub sandbox: bool,
    /// `Decide` calls applied so far.
    pub step: u32,
    /// The transcript after the step.
    pub transcript: [u8; 32],
    /// What the table shows after the step.
    pub shown: ShownCards,
    /// This step's decisions (none at step 0).
    pub decisions: &'a [(usize, Decision)],
}

impl StepReceipt<'_> {
    /// The exact bytes signed: `field("reddog/receipt/step/v2") ‖ field(key_id) ‖
    /// field(commitment) ‖ field(table_id) ‖ field(round_id) ‖ field(rules_digest, 32 bytes
    /// or empty) ‖ field(u8(sandbox)) ‖ field(u32be(step)) ‖ field(transcript) ‖ field(shown
    /// cards, 2 ASCII bytes each) ‖ field(u8(seat) ‖ u8(action) ‖ …, ascending seat)`.
    pub fn message(&self) -> Vec<u8> {
        let cards: Vec<Card> = self.shown.cards().collect();
        step_message_v2(&StepFields {
            key_id: self.key_id,
            commitment: &self.commitment,
            table_id: self.table_id,
            round_id: self.round_id,
            rules_digest: self.rules_digest.as_ref().map_or(&[][..], |d| &d[..]),
            sandbox: self.sandbox,
            step: self.step,
            transcript: &self.transcript,
            cards: &cards,
            decisions: self.decisions,
        })
    }

    /// The receipt as the engine returns it (`receipt_json` of `StartRound` and `Decide`).
    pub fn to_json(&self, signature: &str) -> StepReceiptJson {
        StepReceiptJson {
            format: STEP_RECEIPT_FORMAT.to_string(),
            signing_key_id: self.key_id.to_string(),
            commitment: hex::encode(self.commitment),
            table_id: self.table_id.to_string(),
            round_id: self.round_id.to_string(),
            rules_digest: self.rules_digest.map(hex::encode).unwrap_or_default(),
            sandbox: self.sandbox,
            step: self.step,
            transcript: hex::encode(self.transcript),
            cards: self.shown.cards().map(|c| c.text().to_string()).collect(),
            decisions: self
                .decisions
                .iter()
                .map(|&(seat, d)| RevealDecision { seat, action: action_text(d).to_string() })
                .collect(),
            signature: signature.to_string(),
        }
    }
}

/// The fields of a version-2 step message.
struct StepFields<'a> {
    key_id: &'a str,
    commitment: &'a [u8; 32],
    table_id: &'a str,
    round_id: &'a str,
    rules_digest: &'a [u8],
    sandbox: bool,
    step: u32,
    transcript: &'a [u8; 32],
    cards: &'a [Card],
    decisions: &'a [(usize, Decision)],
}

fn decision_bytes(decisions: &[(usize, Decision)]) -> Vec<u8> {
    let mut sorted = decisions.to_vec();
    sorted.sort_by_key(|&(seat, _)| seat);
    sorted.iter().flat_map(|&(seat, d)| [u8::try_from(seat).unwrap_or(u8::MAX), action_byte(d)]).collect()
}

fn card_bytes(cards: &[Card]) -> Vec<u8> {
    cards.iter().flat_map(|c| c.text().bytes()).collect()
}

fn step_message_v2(f: &StepFields<'_>) -> Vec<u8> {
    let mut m = Vec::with_capacity(4 * 11 + 22 + f.key_id.len() + 32 + f.table_id.len() + f.round_id.len() + 84);
    field(&mut m, STEP_LABEL);
    field(&mut m, f.key_id.as_bytes());
    field(&mut m, f.commitment);
    field(&mut m, f.table_id.as_bytes());
    field(&mut m, f.round_id.as_bytes());
    field(&mut m, f.rules_digest);
    field(&mut m, &[u8::from(f.sandbox)]);
    field(&mut m, &f.step.to_be_bytes());
    field(&mut m, f.transcript);
    field(&mut m, &card_bytes(f.cards));
    field(&mut m, &decision_bytes(f.decisions));
    m
}

/// Version 1's message: `field("reddog/receipt/step/v1") ‖ field(commitment) ‖
/// field(round_id) ‖ field(u32be(step)) ‖ field(transcript) ‖ field(cards) ‖
/// field(decisions)`.
fn step_message_v1(claim: &StepClaim) -> Vec<u8> {
    let mut m = Vec::with_capacity(4 * 7 + 22 + 32 + claim.round_id.len() + 4 + 32 + 6 + 14);
    field(&mut m, STEP_LABEL_V1);
    field(&mut m, &claim.commitment);
    field(&mut m, claim.round_id.as_bytes());
    field(&mut m, &claim.step.to_be_bytes());
    field(&mut m, &claim.transcript);
    field(&mut m, &card_bytes(&claim.cards));
    field(&mut m, &decision_bytes(&claim.decisions));
    m
}

/// A step receipt as a player kept it (version 1 or 2), parsed from its JSON: what it claims
/// the engine signed. Its cards are whatever the JSON says; [`StepClaim::check`] compares
/// them with what the table showed at that step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepClaim {
    /// 1 or 2.
    pub version: u8,
    pub signing_key_id: String,
    pub commitment: [u8; 32],
    /// Version 2 (empty in version 1).
    pub table_id: String,
    pub round_id: String,
    /// Version 2: 32 bytes, or empty for a round without rules (always empty in version 1).
    pub rules_digest: Vec<u8>,
    /// Version 2 (false in version 1, which does not say).
    pub sandbox: bool,
    pub step: u32,
    pub transcript: [u8; 32],
    pub cards: Vec<Card>,
    /// This step's decisions (none at step 0).
    pub decisions: Vec<(usize, Decision)>,
}

impl StepClaim {
    /// The exact bytes its signature must cover.
    pub fn message(&self) -> Vec<u8> {
        if self.version == 1 {
            return step_message_v1(self);
        }
        step_message_v2(&StepFields {
            key_id: &self.signing_key_id,
            commitment: &self.commitment,
            table_id: &self.table_id,
            round_id: &self.round_id,
            rules_digest: &self.rules_digest,
            sandbox: self.sandbox,
            step: self.step,
            transcript: &self.transcript,
            cards: &self.cards,
            decisions: &self.decisions,
        })
    }

    /// The receipt checked with `public_key` against a reveal (`chain`: the reveal's
    /// recomputed transcripts `t_0 … t_m`, [`super::Verdict::chain`]): signed; the reveal
    /// descends from it (same commitment, round id and — version 2 — table and rules digest,
    /// at least `step` calls, `t_step` equal, its decisions the reveal's call `step`); and its
    /// cards exactly the cards the table showed after that step ([`shown_after`]).
    pub fn check(
        &self,
        public_key: &[u8; 32],
        signature: &[u8; 64],
        reveal: &RevealV2,
        chain: &[Transcript],
    ) -> ReceiptCheck {
        let step = self.step as usize;
        let decisions_ok = match step.checked_sub(1) {
            None => self.decisions.is_empty(),
            Some(k) => reveal.decisions.get(k).is_some_and(|call| {
                let mut mine: Vec<(usize, u8)> = self.decisions.iter().map(|&(s, d)| (s, action_byte(d))).collect();
                mine.sort_unstable();
                let theirs: Option<Vec<(usize, u8)>> =
                    call.iter().map(|d| d.decision().map(|a| (d.seat, action_byte(a)))).collect();
                theirs.is_some_and(|mut t| {
                    t.sort_unstable();
                    t == mine
                })
            }),
        };
        let v2_ok = self.version == 1
            || (self.table_id == reveal.table_id
                && match &reveal.rules_digest {
                    Some(d) => d.eq_ignore_ascii_case(&hex::encode(&self.rules_digest)),
                    None => self.rules_digest.is_empty(),
                });
        let descends = hex::encode(self.commitment) == reveal.commitment.to_ascii_lowercase()
            && self.round_id == reveal.round_id
            && chain.get(step).is_some_and(|t| t.0 == self.transcript)
            && decisions_ok
            && v2_ok
            && self.cards.iter().zip(&reveal.cards).all(|(c, r)| c.text() == r)
            && self.cards.len() <= reveal.cards.len();
        let shown = shown_after(reveal, step);
        let hidden_card = (descends && self.cards.len() > shown).then(|| self.cards[shown]);
        ReceiptCheck {
            name: format!("step {}", self.step),
            version: self.version,
            key_id: (self.version == 2).then(|| self.signing_key_id.clone()),
            signed: verify_message(public_key, signature, &self.message()),
            descends: descends && self.cards.len() == shown,
            hidden_card,
            sandbox: self.sandbox,
        }
    }
}

/// How many of a reveal's cards the table showed after step `step`: a pair's three at
/// once; a consecutive hand's two; a non-consecutive hand's two until every seat has decided
/// in the calls `1 … step`, then three.
pub fn shown_after(reveal: &RevealV2, step: usize) -> usize {
    let card = |i: usize| reveal.cards.get(i).and_then(|t| Card::from_text(t));
    let (Some(a), Some(b)) = (card(0), card(1)) else { return 2 };
    match HandClass::of(a, b) {
        HandClass::Pair => 3,
        HandClass::Consecutive => 2,
        HandClass::NonConsecutive(_) => {
            let mut decided = vec![false; reveal.seats.len()];
            for call in reveal.decisions.iter().take(step) {
                for d in call {
                    if let Some(slot) = decided.get_mut(d.seat) {
                        *slot = true;
                    }
                }
            }
            if step > 0 && decided.iter().all(|&d| d) { 3 } else { 2 }
        }
    }
}

fn action_text(d: Decision) -> &'static str {
    match d {
        Decision::Raise => "raise",
        Decision::Stand => "stand",
    }
}

/// A step receipt as JSON (version 2): what the engine returns in `receipt_json`, what a
/// player's record keeps and what `reddog verify --receipt FILE` reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepReceiptJson {
    /// [`STEP_RECEIPT_FORMAT`].
    pub format: String,
    /// The id of the key that signed it (inside the signed message).
    pub signing_key_id: String,
    /// 64 hex.
    pub commitment: String,
    pub table_id: String,
    pub round_id: String,
    /// 64 hex, or empty for a round sealed before rounds carried their rules.
    pub rules_digest: String,
    pub sandbox: bool,
    pub step: u32,
    /// `t_step`, 64 hex.
    pub transcript: String,
    /// The cards shown after the step, e.g. `"7h"`.
    pub cards: Vec<String>,
    /// This step's decisions (empty at step 0).
    pub decisions: Vec<RevealDecision>,
    /// 128 hex.
    pub signature: String,
}

/// Version 1's JSON.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StepReceiptJsonV1 {
    format: String,
    signing_key_id: String,
    commitment: String,
    round_id: String,
    step: u32,
    transcript: String,
    cards: Vec<String>,
    decisions: Vec<RevealDecision>,
    signature: String,
}

/// A step receipt's JSON (either version): the claim and its 64-byte signature, or why the
/// JSON is not a step receipt. Hex of either case is accepted.
pub fn parse_step_receipt(text: &str) -> Result<(StepClaim, [u8; 64]), String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not a step receipt: {e}"))?;
    let (version, j) = match value.get("format").and_then(|f| f.as_str()) {
        Some(STEP_RECEIPT_FORMAT) => {
            (2, serde_json::from_value::<StepReceiptJson>(value).map_err(|e| format!("not a step receipt: {e}"))?)
        }
        Some(STEP_RECEIPT_FORMAT_V1) => {
            let v1: StepReceiptJsonV1 =
                serde_json::from_value(value).map_err(|e| format!("not a step receipt: {e}"))?;
            let j = StepReceiptJson {
                format: v1.format,
                signing_key_id: v1.signing_key_id,
                commitment: v1.commitment,
                table_id: String::new(),
                round_id: v1.round_id,
                rules_digest: String::new(),
                sandbox: false,
                step: v1.step,
                transcript: v1.transcript,
                cards: v1.cards,
                decisions: v1.decisions,
                signature: v1.signature,
            };
            (1, j)
        }
        _ => return Err(format!("format: expected {STEP_RECEIPT_FORMAT} (or {STEP_RECEIPT_FORMAT_V1})")),
    };
    let mut r = StepClaim {
        version,
        signing_key_id: j.signing_key_id,
        commitment: [0; 32],
        table_id: j.table_id,
        round_id: j.round_id,
        rules_digest: Vec::new(),
        sandbox: j.sandbox,
        step: j.step,
        transcript: [0; 32],
        cards: Vec::with_capacity(j.cards.len()),
        decisions: Vec::with_capacity(j.decisions.len()),
    };
    let mut signature = [0u8; 64];
    hex::decode_to_slice(&j.commitment, &mut r.commitment).map_err(|_| "commitment: 64 hex digits".to_string())?;
    hex::decode_to_slice(&j.transcript, &mut r.transcript).map_err(|_| "transcript: 64 hex digits".to_string())?;
    hex::decode_to_slice(&j.signature, &mut signature).map_err(|_| "signature: 128 hex digits".to_string())?;
    if !j.rules_digest.is_empty() {
        let mut d = [0u8; 32];
        hex::decode_to_slice(&j.rules_digest, &mut d)
            .map_err(|_| "rules_digest: 64 hex digits or empty".to_string())?;
        r.rules_digest = d.to_vec();
    }
    for c in &j.cards {
        r.cards.push(Card::from_text(c).ok_or_else(|| format!("cards: {c:?} is not a card"))?);
    }
    if !(2..=3).contains(&r.cards.len()) {
        return Err("cards: a step shows two or three cards".to_string());
    }
    for d in &j.decisions {
        let a = d.decision().ok_or_else(|| "decisions: raise or stand".to_string())?;
        if d.seat >= crate::game::MAX_SEATS {
            return Err("decisions: a seat is 0 to 6".to_string());
        }
        r.decisions.push((d.seat, a));
    }
    if (r.step == 0) != r.decisions.is_empty() || r.step as usize > crate::game::MAX_SEATS {
        return Err("step: step 0 has no decisions, every later step has some (at most 7 steps)".to_string());
    }
    Ok((r, signature))
}

// ------------------------------------------------------------------------- the player's

/// A receipt the player kept: of `CommitSeed` or of a step.
#[derive(Clone, Debug)]
pub enum PlayerReceipt {
    Commit(CommitReceiptJson),
    Step(StepClaim, [u8; 64]),
}

impl PlayerReceipt {
    /// A receipt's JSON, by its `format`, or why it is not one (hex of either case).
    pub fn parse(text: &str) -> Result<PlayerReceipt, String> {
        if text.contains(COMMIT_RECEIPT_FORMAT) || text.contains(COMMIT_RECEIPT_FORMAT_V1) {
            let j: CommitReceiptJson =
                serde_json::from_str(text).map_err(|e| format!("not a CommitSeed receipt: {e}"))?;
            let hex_ok = |h: &str, n: usize| h.len() == n && h.bytes().all(|b| b.is_ascii_hexdigit());
            if !(j.format == COMMIT_RECEIPT_FORMAT || j.format == COMMIT_RECEIPT_FORMAT_V1)
                || !hex_ok(&j.commitment, 64)
                || !hex_ok(&j.rules_digest, 64)
                || !hex_ok(&j.signature, 128)
            {
                return Err(
                    "a CommitSeed receipt has 64-hex commitment and rules_digest and a 128-hex signature".to_string()
                );
            }
            return Ok(PlayerReceipt::Commit(j));
        }
        parse_step_receipt(text).map(|(r, sig)| PlayerReceipt::Step(r, sig))
    }

    /// The receipt checked with `public_key` against a reveal; `chain` as in
    /// [`StepClaim::check`].
    pub fn check(&self, public_key: &[u8; 32], reveal: &RevealV2, chain: &[Transcript]) -> ReceiptCheck {
        match self {
            PlayerReceipt::Commit(c) => c.check(public_key, reveal),
            PlayerReceipt::Step(s, sig) => s.check(public_key, sig, reveal, chain),
        }
    }

    /// The key id it names (signed in version 2).
    pub fn key_id(&self) -> &str {
        match self {
            PlayerReceipt::Commit(c) => &c.signing_key_id,
            PlayerReceipt::Step(s, _) => &s.signing_key_id,
        }
    }

    /// Its version (1 or 2).
    pub fn version(&self) -> u8 {
        match self {
            PlayerReceipt::Commit(c) => c.version(),
            PlayerReceipt::Step(s, _) => s.version,
        }
    }
}

/// One receipt checked against a reveal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiptCheck {
    /// `step 1`, or `commit (expires at … Unix ms)`.
    pub name: String,
    /// The receipt's version (1 or 2).
    pub version: u8,
    /// The key id inside the signed message (version 2), `None` in version 1.
    pub key_id: Option<String>,
    /// The key signed it.
    pub signed: bool,
    /// The reveal is of its round and descends from its step, and a step receipt's cards are
    /// exactly those the table showed.
    pub descends: bool,
    /// A step receipt that names a card the table had not shown at its step: that card (the
    /// engine leaked it).
    pub hidden_card: Option<Card>,
    /// Its signed sandbox flag: a sandbox round is never a fair round.
    pub sandbox: bool,
}

impl ReceiptCheck {
    /// Signed, descended from, naming no hidden card and not a sandbox round.
    pub fn ok(&self) -> bool {
        self.signed && self.descends && self.hidden_card.is_none() && !self.sandbox
    }
}

// ------------------------------------------------------------------------------ Settle

/// The exact bytes a `Settle` receipt signs (version 2): `field("reddog/receipt/settle/v2")
/// ‖ field(key_id) ‖ field(transcript) ‖ field(SHA-256(reveal_json))`.
pub fn settle_message(key_id: &str, transcript: &[u8; 32], reveal_json: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(104 + key_id.len());
    field(&mut m, SETTLE_LABEL);
    field(&mut m, key_id.as_bytes());
    field(&mut m, transcript);
    field(&mut m, &Sha256::digest(reveal_json));
    m
}

/// Version 1's message (100 bytes): the same without the key id, under its own label.
pub fn settle_message_v1(transcript: &[u8; 32], reveal_json: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(100);
    field(&mut m, SETTLE_LABEL_V1);
    field(&mut m, transcript);
    field(&mut m, &Sha256::digest(reveal_json));
    m
}

/// The reveal bytes a receipt covers, from a file's bytes: the file without one trailing
/// line feed, if it ends with one (the engine's `reveal_json` never does; a file saved with
/// `echo` does).
pub fn reveal_bytes(file: &[u8]) -> &[u8] {
    file.strip_suffix(b"\n").unwrap_or(file)
}

/// Which version of a `Settle` receipt a signature verified as: version 2 under `key_id`
/// when one is known, else version 1; `None` when neither verifies.
pub fn verify_settle(
    public_key: &[u8; 32],
    signature: &[u8; 64],
    key_id: Option<&str>,
    transcript: &[u8; 32],
    reveal_json: &[u8],
) -> Option<u8> {
    if key_id.is_some_and(|id| verify_message(public_key, signature, &settle_message(id, transcript, reveal_json))) {
        return Some(2);
    }
    verify_message(public_key, signature, &settle_message_v1(transcript, reveal_json)).then_some(1)
}

/// Whether `signature` is the Ed25519 signature by `public_key` of this `CommitSeed` receipt
/// (version 2).
pub fn verify_commit(public_key: &[u8; 32], signature: &[u8; 64], receipt: &CommitReceipt<'_>) -> bool {
    verify_message(public_key, signature, &receipt.message())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settle_message_is_label_key_id_transcript_and_reveal_digest_length_prefixed() {
        let m = settle_message("s1", &[7; 32], b"{}");
        assert_eq!(m.len(), 4 + 24 + 4 + 2 + 4 + 32 + 4 + 32);
        assert_eq!(&m[..4], &[0, 0, 0, 24]);
        assert_eq!(&m[4..28], SETTLE_LABEL);
        assert_eq!(&m[28..34], b"\0\0\0\x02s1");
        assert_eq!(&m[34..38], &[0, 0, 0, 32]);
        assert_eq!(&m[38..70], &[7; 32]);
        assert_eq!(&m[74..], Sha256::digest(b"{}").as_slice());
        assert_eq!(settle_message_v1(&[7; 32], b"{}").len(), 100);
    }

    #[test]
    fn only_one_trailing_line_feed_is_not_part_of_the_reveal() {
        assert_eq!(reveal_bytes(b"{}\n"), b"{}");
        assert_eq!(reveal_bytes(b"{}"), b"{}");
        assert_eq!(reveal_bytes(b"{}\n\n"), b"{}\n");
        assert_eq!(reveal_bytes(b"{}\r\n"), b"{}\r");
    }

    #[test]
    fn receipts_of_different_rounds_or_keys_are_different_messages() {
        let base = CommitReceipt {
            key_id: "s1",
            commitment: &[1; 32],
            round_id: "ab",
            nonce: 1,
            table_id: "c",
            decks: 1,
            rules_digest: &[2; 32],
            expires_at_unix_ms: 5,
            algorithm: "reddog-deal-v1",
            sandbox: false,
        };
        // Bytes moved between adjacent text fields change the message (length prefixes).
        let shifted = CommitReceipt { round_id: "a", table_id: "bc", ..base };
        assert_ne!(base.message(), shifted.message());
        assert_ne!(base.message(), CommitReceipt { sandbox: true, ..base }.message());
        assert_ne!(base.message(), CommitReceipt { nonce: 2, ..base }.message());
        assert_ne!(base.message(), CommitReceipt { key_id: "s2", ..base }.message());
        assert_eq!(base.message_v1(), CommitReceipt { key_id: "s2", ..base }.message_v1(), "v1 has no key id");
    }

    #[test]
    fn a_key_that_is_not_a_curve_point_verifies_nothing() {
        // About half of all y coordinates have no point on the curve.
        let not_a_point = (2u8..=255)
            .map(|b| {
                let mut k = [0u8; 32];
                k[0] = b;
                k
            })
            .find(|k| VerifyingKey::from_bytes(k).is_err())
            .expect("some y is not on the curve");
        assert_eq!(verify_settle(&not_a_point, &[0; 64], Some("s1"), &[0; 32], b"{}"), None);
    }

    /// The forgery of the issue: the identity point as the key, R = identity, S = 0 — every
    /// message "verifies" under a cofactorless check without the small-order rule.
    #[test]
    fn every_small_order_key_with_a_small_order_r_and_s_zero_verifies_nothing() {
        for a in SMALL_ORDER_ENCODINGS {
            for r in SMALL_ORDER_ENCODINGS {
                let key: [u8; 32] = hex::decode(a).unwrap().try_into().unwrap();
                let mut sig = [0u8; 64];
                sig[..32].copy_from_slice(&hex::decode(r).unwrap());
                assert!(!verify_message(&key, &sig, b"any message"), "A {a} R {r}");
            }
        }
    }

    #[test]
    fn s_at_or_above_the_group_order_is_refused_before_any_curve_arithmetic() {
        assert!(lt_le(&[0; 32], &L_LE));
        let mut below = L_LE;
        below[0] -= 1;
        assert!(lt_le(&below, &L_LE));
        assert!(!lt_le(&L_LE, &L_LE));
        let mut y = P_LE;
        y[0] -= 1;
        assert!(strict_point(&y) || SMALL_ORDER_ENCODINGS.contains(&hex::encode(y).as_str()));
        assert!(!strict_point(&P_LE), "y = p is not canonical");
    }
}
