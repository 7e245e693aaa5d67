//! Signed receipts (`docs/FAIRNESS.md` 4.7): the exact bytes an engine's Ed25519 key signs
//! at `CommitSeed`, at every step of a round (`StartRound`, `Decide`) and at `Settle`, the
//! check of a `Settle` receipt over a reveal with the public key alone, and the check that a
//! reveal descends from a signed step; also the message an audit checkpoint's signature covers (the engine's
//! audit sink signs it, `reddog audit-log --public-key` checks it), so every message the key
//! signs is defined here.
//!
//! Each message is a fixed ASCII label followed by length-prefixed fields (`field(x) =
//! u32be(len(x)) ‖ x`, as in the deal's key derivation), so a receipt of one kind can never be
//! read as another, or as an audit checkpoint (label `reddog/audit/checkpoint/v1`).

use ed25519_dalek::{Signature, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::reveal::{RevealDecision, RevealV2};
use super::transcript::{Transcript, action_byte};
use crate::game::{Card, Decision};

/// The label of a `CommitSeed` receipt (24 ASCII bytes).
pub const COMMIT_LABEL: &[u8] = b"reddog/receipt/commit/v1";
/// The label of a step receipt (`StartRound`, `Decide`; 22 ASCII bytes).
pub const STEP_LABEL: &[u8] = b"reddog/receipt/step/v1";
/// The `format` of a step receipt's JSON ([`StepReceiptJson`]).
pub const STEP_RECEIPT_FORMAT: &str = "reddog-step-receipt-v1";
/// The label of a `Settle` receipt (24 ASCII bytes).
pub const SETTLE_LABEL: &[u8] = b"reddog/receipt/settle/v1";
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

/// What a `CommitSeed` receipt signs: the commitment and everything the commitment token binds.
#[derive(Clone, Copy, Debug)]
pub struct CommitReceipt<'a> {
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
    /// The table's rules digest (raw 32 bytes; it covers paytable, limits and currency).
    pub rules_digest: &'a [u8; 32],
    /// When the commitment token expires, Unix milliseconds.
    pub expires_at_unix_ms: i64,
    /// The deal algorithm, e.g. `reddog-deal-v1`.
    pub algorithm: &'a str,
    /// Whether the round is a sandbox round.
    pub sandbox: bool,
}

impl CommitReceipt<'_> {
    /// The exact bytes signed.
    pub fn message(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(4 * 10 + 24 + 32 + self.round_id.len() + 8 + self.table_id.len() + 1 + 32 + 8);
        field(&mut m, COMMIT_LABEL);
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

/// What a step receipt signs: what the step established — the round (commitment, round id),
/// the step (0 at `StartRound`, k after the k-th `Decide`), the transcript `t_step`, every card
/// shown after it and the decisions it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepReceipt {
    /// SHA-256 of the server seed (the raw 32 bytes).
    pub commitment: [u8; 32],
    /// The round id (UTF-8).
    pub round_id: String,
    /// `Decide` calls applied so far.
    pub step: u32,
    /// The transcript after the step (raw 32 bytes).
    pub transcript: [u8; 32],
    /// The cards dealt so far, in order (two, or three once the third is shown).
    pub cards: Vec<Card>,
    /// This step's decisions in ascending seat order (none at step 0).
    pub decisions: Vec<(usize, Decision)>,
}

impl StepReceipt {
    /// The exact bytes signed: `field("reddog/receipt/step/v1") ‖ field(commitment) ‖
    /// field(round_id) ‖ field(u32be(step)) ‖ field(transcript) ‖ field(card texts, 2 ASCII
    /// bytes each) ‖ field(u8(seat) ‖ u8(action) ‖ …)`.
    pub fn message(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(4 * 7 + 22 + 32 + self.round_id.len() + 4 + 32 + 6 + 14);
        field(&mut m, STEP_LABEL);
        field(&mut m, &self.commitment);
        field(&mut m, self.round_id.as_bytes());
        field(&mut m, &self.step.to_be_bytes());
        field(&mut m, &self.transcript);
        let cards: String = self.cards.iter().map(|c| c.text()).collect();
        field(&mut m, cards.as_bytes());
        let mut sorted = self.decisions.clone();
        sorted.sort_by_key(|&(seat, _)| seat);
        let decisions: Vec<u8> =
            sorted.iter().flat_map(|&(seat, d)| [u8::try_from(seat).unwrap_or(u8::MAX), action_byte(d)]).collect();
        field(&mut m, &decisions);
        m
    }

    /// The receipt as the engine returns it (`receipt_json` of `StartRound` and `Decide`).
    pub fn to_json(&self, key_id: &str, signature: &str) -> StepReceiptJson {
        StepReceiptJson {
            format: STEP_RECEIPT_FORMAT.to_string(),
            signing_key_id: key_id.to_string(),
            commitment: hex::encode(self.commitment),
            round_id: self.round_id.clone(),
            step: self.step,
            transcript: hex::encode(self.transcript),
            cards: self.cards.iter().map(|c| c.text().to_string()).collect(),
            decisions: self
                .decisions
                .iter()
                .map(|&(seat, d)| RevealDecision { seat, action: action_text(d).to_string() })
                .collect(),
            signature: signature.to_string(),
        }
    }

    /// Whether a reveal descends from this step: same commitment and round id, at least
    /// `step` `Decide` calls, the recomputed transcript after call `step` (`chain[step]`, from
    /// [`super::Verdict::chain`]) equal to this receipt's, the receipt's cards the first cards
    /// of the reveal and its decisions the reveal's call `step`.
    pub fn descends(&self, reveal: &RevealV2, chain: &[Transcript]) -> bool {
        let step = self.step as usize;
        let decisions_ok = match step.checked_sub(1) {
            None => self.decisions.is_empty(),
            Some(k) => reveal.decisions.get(k).is_some_and(|call| {
                let mut mine: Vec<(usize, u8)> = self.decisions.iter().map(|&(s, d)| (s, action_byte(d))).collect();
                mine.sort_unstable();
                let theirs: Option<Vec<(usize, u8)>> = call
                    .iter()
                    .map(|d| super::reveal::action_of(&d.action).map(|a| (d.seat, action_byte(a))))
                    .collect();
                theirs.is_some_and(|mut t| {
                    t.sort_unstable();
                    t == mine
                })
            }),
        };
        hex::encode(self.commitment) == reveal.commitment.to_ascii_lowercase()
            && self.round_id == reveal.round_id
            && chain.get(step).is_some_and(|t| t.0 == self.transcript)
            && self.cards.len() <= reveal.cards.len()
            && self.cards.iter().zip(&reveal.cards).all(|(c, r)| c.text() == r)
            && decisions_ok
    }
}

fn action_text(d: Decision) -> &'static str {
    match d {
        Decision::Raise => "raise",
        Decision::Stand => "stand",
    }
}

/// A step receipt as JSON: what the engine returns in `receipt_json`, what a player's record
/// keeps and what `reddog verify --receipt FILE` reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepReceiptJson {
    /// [`STEP_RECEIPT_FORMAT`].
    pub format: String,
    /// The id of the key that signed it.
    pub signing_key_id: String,
    /// 64 hex.
    pub commitment: String,
    pub round_id: String,
    pub step: u32,
    /// `t_step`, 64 hex.
    pub transcript: String,
    /// Card texts, e.g. `"7h"`.
    pub cards: Vec<String>,
    /// This step's decisions (empty at step 0).
    pub decisions: Vec<RevealDecision>,
    /// 128 hex.
    pub signature: String,
}

impl StepReceiptJson {
    /// The receipt and its 64-byte signature, or why the JSON is not a step receipt. Hex of
    /// either case is accepted.
    pub fn parse(text: &str) -> Result<(StepReceipt, [u8; 64]), String> {
        let j: StepReceiptJson = serde_json::from_str(text).map_err(|e| format!("not a step receipt: {e}"))?;
        if j.format != STEP_RECEIPT_FORMAT {
            return Err(format!("format: expected {STEP_RECEIPT_FORMAT}"));
        }
        let mut r = StepReceipt {
            commitment: [0; 32],
            round_id: j.round_id,
            step: j.step,
            transcript: [0; 32],
            cards: Vec::with_capacity(j.cards.len()),
            decisions: Vec::with_capacity(j.decisions.len()),
        };
        let mut signature = [0u8; 64];
        hex::decode_to_slice(&j.commitment, &mut r.commitment).map_err(|_| "commitment: 64 hex digits".to_string())?;
        hex::decode_to_slice(&j.transcript, &mut r.transcript).map_err(|_| "transcript: 64 hex digits".to_string())?;
        hex::decode_to_slice(&j.signature, &mut signature).map_err(|_| "signature: 128 hex digits".to_string())?;
        for c in &j.cards {
            r.cards.push(Card::from_text(c).ok_or_else(|| format!("cards: {c:?} is not a card"))?);
        }
        if !(2..=3).contains(&r.cards.len()) {
            return Err("cards: a step shows two or three cards".to_string());
        }
        for d in &j.decisions {
            let a = super::reveal::action_of(&d.action).ok_or_else(|| "decisions: raise or stand".to_string())?;
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
}

/// The `format` of a CommitSeed receipt's JSON ([`CommitReceiptJson`]).
pub const COMMIT_RECEIPT_FORMAT: &str = "reddog-commit-receipt-v1";

/// A CommitSeed receipt as JSON: what the engine returns in `CommitSeedResponse.receipt_json`,
/// the answer's values of the same names and its signature.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitReceiptJson {
    /// [`COMMIT_RECEIPT_FORMAT`].
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
    /// The JSON of a signed receipt.
    pub fn new(r: &CommitReceipt<'_>, key_id: &str, signature: &str) -> CommitReceiptJson {
        CommitReceiptJson {
            format: COMMIT_RECEIPT_FORMAT.to_string(),
            signing_key_id: key_id.to_string(),
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

    /// Whether `public_key` signed it and a reveal of this round descends from it: the
    /// reveal's commitment, round id, nonce, table, deck count and rules digest are the
    /// receipt's (a reveal without a rules digest does not).
    pub fn check(&self, public_key: &[u8; 32], reveal: &RevealV2) -> (bool, bool) {
        let mut c = [0u8; 32];
        let mut d = [0u8; 32];
        let mut sig = [0u8; 64];
        let decoded = hex::decode_to_slice(&self.commitment, &mut c).is_ok()
            && hex::decode_to_slice(&self.rules_digest, &mut d).is_ok()
            && hex::decode_to_slice(&self.signature, &mut sig).is_ok();
        let receipt = CommitReceipt {
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
        let signed = decoded && verify_commit(public_key, &sig, &receipt);
        let descends = self.commitment.eq_ignore_ascii_case(&reveal.commitment)
            && self.round_id == reveal.round_id
            && self.nonce == reveal.nonce
            && self.table_id == reveal.table_id
            && self.decks == reveal.decks
            && self.algorithm == reveal.algorithm
            && reveal.rules_digest.as_ref().is_some_and(|r| r.eq_ignore_ascii_case(&self.rules_digest));
        (signed, descends)
    }
}

/// A receipt the player kept: of `CommitSeed` or of a step.
#[derive(Clone, Debug)]
pub enum PlayerReceipt {
    Commit(CommitReceiptJson),
    Step(StepReceipt, [u8; 64]),
}

impl PlayerReceipt {
    /// A receipt's JSON, by its `format`, or why it is not one (hex of either case).
    pub fn parse(text: &str) -> Result<PlayerReceipt, String> {
        if text.contains(COMMIT_RECEIPT_FORMAT) {
            let j: CommitReceiptJson =
                serde_json::from_str(text).map_err(|e| format!("not a CommitSeed receipt: {e}"))?;
            let hex_ok = |h: &str, n: usize| h.len() == n && h.bytes().all(|b| b.is_ascii_hexdigit());
            if j.format != COMMIT_RECEIPT_FORMAT
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
        StepReceiptJson::parse(text).map(|(r, sig)| PlayerReceipt::Step(r, sig))
    }

    /// (signed by `public_key`, the reveal descends from it); `chain` as in
    /// [`StepReceipt::descends`].
    pub fn check(&self, public_key: &[u8; 32], reveal: &RevealV2, chain: &[Transcript]) -> (bool, bool) {
        match self {
            PlayerReceipt::Commit(c) => c.check(public_key, reveal),
            PlayerReceipt::Step(s, sig) => (verify_step(public_key, sig, s), s.descends(reveal, chain)),
        }
    }

    /// What it is, for a report: `step 1`, or `commit (expires at … Unix ms)`.
    pub fn describe(&self) -> String {
        match self {
            PlayerReceipt::Commit(c) => format!("commit (expires at {} Unix ms)", c.expires_at_unix_ms),
            PlayerReceipt::Step(s, _) => format!("step {}", s.step),
        }
    }
}

/// Whether `signature` is the Ed25519 signature (strict: RFC 8032 with canonical encodings,
/// no small-order key) by `public_key` of this step receipt.
pub fn verify_step(public_key: &[u8; 32], signature: &[u8; 64], receipt: &StepReceipt) -> bool {
    verify_message(public_key, signature, &receipt.message())
}

/// Ed25519 `verify_strict` of `message`; a public key that is not a point of the curve
/// verifies nothing.
pub fn verify_message(public_key: &[u8; 32], signature: &[u8; 64], message: &[u8]) -> bool {
    let Ok(key) = VerifyingKey::from_bytes(public_key) else { return false };
    key.verify_strict(message, &Signature::from_bytes(signature)).is_ok()
}

/// The exact bytes a `Settle` receipt signs: the settled transcript and SHA-256 of the exact
/// `reveal_json` bytes (100 bytes in all).
pub fn settle_message(transcript: &[u8; 32], reveal_json: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(100);
    field(&mut m, SETTLE_LABEL);
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

/// Whether `signature` is the Ed25519 signature (RFC 8032) by `public_key` of the `Settle`
/// receipt of a reveal with this transcript and these exact bytes. A public key that is not a
/// point of the curve verifies nothing.
pub fn verify_settle(public_key: &[u8; 32], signature: &[u8; 64], transcript: &[u8; 32], reveal_json: &[u8]) -> bool {
    verify_message(public_key, signature, &settle_message(transcript, reveal_json))
}

/// Whether `signature` is the Ed25519 signature by `public_key` of this `CommitSeed` receipt.
pub fn verify_commit(public_key: &[u8; 32], signature: &[u8; 64], receipt: &CommitReceipt<'_>) -> bool {
    verify_message(public_key, signature, &receipt.message())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settle_message_is_label_transcript_and_reveal_digest_length_prefixed() {
        let m = settle_message(&[7; 32], b"{}");
        assert_eq!(m.len(), 4 + 24 + 4 + 32 + 4 + 32);
        assert_eq!(&m[..4], &[0, 0, 0, 24]);
        assert_eq!(&m[4..28], SETTLE_LABEL);
        assert_eq!(&m[28..32], &[0, 0, 0, 32]);
        assert_eq!(&m[32..64], &[7; 32]);
        assert_eq!(&m[68..], Sha256::digest(b"{}").as_slice());
    }

    #[test]
    fn only_one_trailing_line_feed_is_not_part_of_the_reveal() {
        assert_eq!(reveal_bytes(b"{}\n"), b"{}");
        assert_eq!(reveal_bytes(b"{}"), b"{}");
        assert_eq!(reveal_bytes(b"{}\n\n"), b"{}\n");
        assert_eq!(reveal_bytes(b"{}\r\n"), b"{}\r");
    }

    #[test]
    fn receipts_of_different_rounds_are_different_messages() {
        let base = CommitReceipt {
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
        assert!(!verify_settle(&not_a_point, &[0; 64], &[0; 32], b"{}"));
    }
}
