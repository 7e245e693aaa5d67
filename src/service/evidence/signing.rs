//! The engine's optional Ed25519 signing key (docs/FAIRNESS.md, "Signed receipts").
//!
//! Configured as `"signing": {"id": "s1", "secret": "<64 hex>"}` in the key ring JSON. The
//! secret never leaves this module: `Debug` shows the id and the public key only, and errors
//! name the field, never the key text. The same key signs audit checkpoints
//! ([`CheckpointSigner`]).

use std::fmt;

use ed25519_dalek::{Signer, SigningKey};
use zeroize::Zeroize;

use crate::error::EngineError;
use crate::fairness::receipt::{CommitReceipt, CommitReceiptJson, SIGNATURE_ALGORITHM, StepReceipt, settle_message};
use crate::service::evidence::audit_sink::CheckpointSigner;

/// An Ed25519 signing key with its id. The secret is zeroized on drop by the crate.
pub struct ReceiptSigner {
    id: String,
    key: SigningKey,
}

impl fmt::Debug for ReceiptSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReceiptSigner").field("id", &self.id).field("public_key", &self.public_key_hex()).finish()
    }
}

impl ReceiptSigner {
    /// A signer from its id and 32-byte secret seed. Refused: an invalid id, an all-zero seed.
    pub fn new(id: &str, secret: &[u8; 32]) -> Result<ReceiptSigner, EngineError> {
        if crate::ids::check_key_id(id).is_err() {
            return Err(EngineError::invalid("key_ring.signing.id", crate::ids::KEY_ID_RULE));
        }
        if secret.iter().all(|&b| b == 0) {
            return Err(EngineError::invalid(
                "key_ring.signing.secret",
                "the signing secret is all zeros: generate it with `reddog keygen --signing ID`",
            ));
        }
        Ok(ReceiptSigner { id: id.to_string(), key: SigningKey::from_bytes(secret) })
    }

    /// A signer from its id and the secret as 64 hexadecimal characters; `secret` is
    /// zeroized whether or not it parses.
    pub fn from_hex(id: &str, secret: &mut String) -> Result<ReceiptSigner, EngineError> {
        let mut seed = [0u8; 32];
        let ok = hex::decode_to_slice(secret.trim(), &mut seed).is_ok();
        secret.zeroize();
        if !ok {
            seed.zeroize();
            return Err(EngineError::invalid(
                "key_ring.signing.secret",
                "a signing secret is 64 hexadecimal characters (32 bytes)",
            ));
        }
        let signer = ReceiptSigner::new(id, &seed);
        seed.zeroize();
        signer
    }

    /// The key's id, as published with its public key.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The 32-byte public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.key.verifying_key().to_bytes()
    }

    /// The public key as 64 lowercase hexadecimal characters.
    pub fn public_key_hex(&self) -> String {
        hex::encode(self.public_key())
    }

    /// The 64-byte Ed25519 signature over `message`.
    pub fn sign_bytes(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }

    /// The `CommitSeed` receipt's signature, 128 lower-case hex, and its JSON (FAIRNESS.md
    /// 4.7). The receipt names this key's id (it is inside the message signed).
    pub fn sign_commit(&self, receipt: &CommitReceipt<'_>) -> (String, String) {
        let receipt = CommitReceipt { key_id: &self.id, ..*receipt };
        let signature = hex::encode(self.sign_bytes(&receipt.message()));
        // Serialising plain strings, integers and booleans cannot fail.
        let json = serde_json::to_string(&CommitReceiptJson::new(&receipt, &signature)).unwrap_or_default();
        (signature, json)
    }

    /// The `Settle` receipt's signature over the settled transcript and the exact
    /// `reveal_json` bytes, 128 lower-case hex (FAIRNESS.md 4.7). Deterministic: the same
    /// reveal always gets the same signature.
    pub fn sign_settle(&self, transcript: &[u8; 32], reveal_json: &[u8]) -> String {
        hex::encode(self.sign_bytes(&settle_message(&self.id, transcript, reveal_json)))
    }

    /// A step receipt (`StartRound`, `Decide`): its signature (128 lower-case hex) and its
    /// JSON with the signature, as the answer carries them (FAIRNESS.md 4.7). The receipt
    /// names this key's id, and its cards are what the table shows: a [`StepReceipt`] holds
    /// a [`crate::game::ShownCards`], which cannot hold a face-down card.
    pub fn sign_step(&self, receipt: &StepReceipt<'_>) -> (String, String) {
        let receipt = StepReceipt { key_id: &self.id, ..receipt.clone() };
        let signature = hex::encode(self.sign_bytes(&receipt.message()));
        // Serialising plain strings, integers and arrays cannot fail.
        let json = serde_json::to_string(&receipt.to_json(&signature)).unwrap_or_default();
        (signature, json)
    }

    /// The public key as the API publishes it.
    pub fn published(&self) -> PublishedKey {
        PublishedKey {
            key_id: self.id.clone(),
            algorithm: SIGNATURE_ALGORITHM.to_string(),
            public_key_hex: self.public_key_hex(),
        }
    }
}

/// A public key by id, as `GetRules`, `ListTables` and `reddog keygen --public` show it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PublishedKey {
    /// The key's id (`signing_key_id` in the receipts it signs).
    pub key_id: String,
    /// `ed25519`.
    pub algorithm: String,
    /// The 32-byte public key, 64 lower-case hex.
    pub public_key_hex: String,
}

impl CheckpointSigner for ReceiptSigner {
    fn key_id(&self) -> &str {
        &self.id
    }

    fn sign(&self, message: &[u8]) -> Vec<u8> {
        self.sign_bytes(message).to_vec()
    }
}

#[cfg(test)]
mod tests {
    use ed25519_dalek::{Signature, Verifier, VerifyingKey};

    use super::*;
    use crate::fairness::receipt::{settle_message_v1, verify_commit, verify_settle};

    const SECRET: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";

    #[test]
    fn a_signature_verifies_with_the_published_public_key_only() {
        let signer = ReceiptSigner::from_hex("s1", &mut SECRET.to_string()).unwrap();
        // RFC 8032 test 1: this secret's public key.
        assert_eq!(signer.public_key_hex(), "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
        let sig = Signature::from_bytes(&signer.sign_bytes(b"receipt"));
        let public = VerifyingKey::from_bytes(&signer.public_key()).unwrap();
        assert!(public.verify(b"receipt", &sig).is_ok());
        assert!(public.verify(b"receipt, altered", &sig).is_err());
    }

    /// The vectors of docs/FAIRNESS.md 4.7: RFC 8032 test 1's secret signs the `CommitSeed`
    /// receipt of the round of section 4 (default table) and a `Settle` receipt, in version 2
    /// (what the engine signs) and version 1 (what verifiers still read).
    #[test]
    fn the_receipt_vectors_of_fairness_4_7_are_pinned() {
        let signer = ReceiptSigner::from_hex("s1", &mut SECRET.to_string()).unwrap();
        let unhex = |h: &str| -> [u8; 32] {
            let mut b = [0u8; 32];
            hex::decode_to_slice(h, &mut b).unwrap();
            b
        };
        let commitment = unhex("674c8b102200e7f72744971e12454d03bd0eb01c2bdb2c194e64c3527bce58ae");
        let digest = unhex("ba6aea6bf53856b62d2cdacdc49e46ae65b537c2f21a31d8a5207706a8eba781");
        let receipt = CommitReceipt {
            key_id: "s1",
            commitment: &commitment,
            round_id: "round-7",
            nonce: 0,
            table_id: "default",
            decks: 1,
            rules_digest: &digest,
            expires_at_unix_ms: 1_796_169_600_000,
            algorithm: "reddog-deal-v1",
            sandbox: false,
        };
        assert_eq!(
            hex::encode(receipt.message_v1()),
            "00000018726564646f672f726563656970742f636f6d6d69742f763100000020674c8b102200e7f72744971e12454d03bd0eb01c\
             2bdb2c194e64c3527bce58ae00000007726f756e642d370000000800000000000000000000000764656661756c74000000010100\
             000020ba6aea6bf53856b62d2cdacdc49e46ae65b537c2f21a31d8a5207706a8eba78100000008000001a2340d0c000000000e72\
             6564646f672d6465616c2d76310000000100"
        );
        assert_eq!(
            hex::encode(signer.sign_bytes(&receipt.message_v1())),
            "f8a858f91d2dd1524756ef02dc799877855d7697ddf741167937d7e98b0df0c73d9609a3d1605382972046281a81260434bc21bf\
             f2e585a34ffe0d48243ad10d"
        );
        // Version 2: the same fields after the label `reddog/receipt/commit/v2` and the key id.
        let mut v2 = b"\0\0\0\x18reddog/receipt/commit/v2\0\0\0\x02s1".to_vec();
        v2.extend_from_slice(&receipt.message_v1()[28..]);
        assert_eq!(receipt.message(), v2);
        assert_eq!(hex::encode(receipt.message()), V2_COMMIT_MESSAGE);
        assert_eq!(signer.sign_commit(&receipt).0, V2_COMMIT_SIGNATURE);
        let transcript = unhex("216c156056d6b8bf8449ee86327ea6746a19d5b6e0f0a963f50ba5da7c1e5281");
        assert_eq!(
            hex::encode(settle_message_v1(&transcript, b"{}")),
            "00000018726564646f672f726563656970742f736574746c652f763100000020216c156056d6b8bf8449ee86327ea6746a19d5b6\
             e0f0a963f50ba5da7c1e52810000002044136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        assert_eq!(
            hex::encode(signer.sign_bytes(&settle_message_v1(&transcript, b"{}"))),
            "887ee63b1ba642bac237d3ff197c8cf59b9c12fde75d857aaf9760842987577797c5700a7c7086cc1b9769bdf52d20b7ae6500cd\
             4390edf9b3dc4e4de9f7960f"
        );
        let signature = signer.sign_settle(&transcript, b"{}");
        assert_eq!(signature, V2_SETTLE_SIGNATURE);
        let mut sig = [0u8; 64];
        hex::decode_to_slice(&signature, &mut sig).unwrap();
        let pk = signer.public_key();
        assert_eq!(verify_settle(&pk, &sig, Some("s1"), &transcript, b"{}"), Some(2));
        assert_eq!(verify_settle(&pk, &sig, Some("s2"), &transcript, b"{}"), None, "the key id is signed");
        assert_eq!(verify_settle(&pk, &sig, Some("s1"), &transcript, b"{ }"), None);
        let mut commit_sig = [0u8; 64];
        hex::decode_to_slice(signer.sign_commit(&receipt).0, &mut commit_sig).unwrap();
        assert!(verify_commit(&pk, &commit_sig, &receipt));
    }

    /// Computed independently: Python's `struct` and `cryptography` (FAIRNESS.md 4.7's
    /// layout).
    const V2_COMMIT_MESSAGE: &str = "00000018726564646f672f726563656970742f636f6d6d69742f763200000002733100000020674c8b102200e7f72744971e1245\
        4d03bd0eb01c2bdb2c194e64c3527bce58ae00000007726f756e642d370000000800000000000000000000000764656661756c74\
        000000010100000020ba6aea6bf53856b62d2cdacdc49e46ae65b537c2f21a31d8a5207706a8eba78100000008000001a2340d0c\
        000000000e726564646f672d6465616c2d76310000000100";
    const V2_COMMIT_SIGNATURE: &str = "0fd627a9fa2167431bcad7ac1f87179b9e0299b7c6c5feb439e48fae1bf3273130bd30d5075a87caca4dfe8e64d73e1a6e3d7072\
        1440982b8ad76f0ace44770b";
    const V2_SETTLE_SIGNATURE: &str = "4675fea0ba42e73fdf12d68b4b22e44e6ec0404be9a4f0313f9f150773f86df175ceab5136de1dd73532a1f7332bb10c8a61557c\
        df1a9c9af632c1067c4d7d0c";

    #[test]
    fn signing_the_same_reveal_twice_gives_the_same_signature() {
        let signer = ReceiptSigner::from_hex("s1", &mut SECRET.to_string()).unwrap();
        assert_eq!(signer.sign_settle(&[3; 32], b"{\"x\":1}"), signer.sign_settle(&[3; 32], b"{\"x\":1}"));
        assert_ne!(signer.sign_settle(&[3; 32], b"{\"x\":1}"), signer.sign_settle(&[3; 32], b"{\"x\":2}"));
    }

    #[test]
    fn the_published_key_has_the_id_and_public_key_and_no_secret() {
        let signer = ReceiptSigner::from_hex("s1", &mut SECRET.to_string()).unwrap();
        let published = signer.published();
        assert_eq!(published.key_id, "s1");
        assert_eq!(published.algorithm, "ed25519");
        assert_eq!(published.public_key_hex, signer.public_key_hex());
        assert!(!format!("{published:?}").contains(SECRET));
    }

    #[test]
    fn the_signing_secret_never_appears_in_debug_or_errors() {
        let signer = ReceiptSigner::from_hex("s1", &mut SECRET.to_string()).unwrap();
        assert!(!format!("{signer:?}").contains(SECRET));
        let mut bad = format!("{}zz", &SECRET[..62]);
        let err = ReceiptSigner::from_hex("s1", &mut bad).unwrap_err();
        assert!(!format!("{err} {err:?}").contains(&SECRET[..62]));
        assert!(bad.is_empty(), "the caller's copy of the secret is wiped");
        let err = ReceiptSigner::new("s 1", &[7; 32]).unwrap_err();
        assert!(format!("{err}").contains("key ids"));
        assert!(ReceiptSigner::new("s1", &[0; 32]).is_err());
    }
}
