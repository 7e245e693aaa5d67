//! Signed receipts (`docs/FAIRNESS.md` 4.7): the exact bytes an engine's Ed25519 key signs
//! at `CommitSeed` and at `Settle`, and the check of a `Settle` receipt over a reveal with the
//! public key alone; also the message an audit checkpoint's signature covers (the engine's
//! audit sink signs it, `reddog audit-log --public-key` checks it), so every message the key
//! signs is defined here.
//!
//! Each message is a fixed ASCII label followed by length-prefixed fields (`field(x) =
//! u32be(len(x)) ‖ x`, as in the deal's key derivation), so a receipt of one kind can never be
//! read as another, or as an audit checkpoint (label `reddog/audit/checkpoint/v1`).

use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use sha2::{Digest, Sha256};

/// The label of a `CommitSeed` receipt (24 ASCII bytes).
pub const COMMIT_LABEL: &[u8] = b"reddog/receipt/commit/v1";
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

/// The exact bytes a `Settle` receipt signs: the settled transcript and SHA-256 of the exact
/// `reveal_json` bytes (84 bytes in all).
pub fn settle_message(transcript: &[u8; 32], reveal_json: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(84);
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
    let Ok(key) = VerifyingKey::from_bytes(public_key) else { return false };
    key.verify(&settle_message(transcript, reveal_json), &Signature::from_bytes(signature)).is_ok()
}

/// Whether `signature` is the Ed25519 signature by `public_key` of this `CommitSeed` receipt.
pub fn verify_commit(public_key: &[u8; 32], signature: &[u8; 64], receipt: &CommitReceipt<'_>) -> bool {
    let Ok(key) = VerifyingKey::from_bytes(public_key) else { return false };
    key.verify(&receipt.message(), &Signature::from_bytes(signature)).is_ok()
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
