//! The engine's optional Ed25519 signing key (docs/FAIRNESS.md, "Signed receipts").
//!
//! Configured as `"signing": {"id": "s1", "secret": "<64 hex>"}` in the key ring JSON. The
//! secret never leaves this module: `Debug` shows the id and the public key only, and errors
//! name the field, never the key text. The same key signs audit checkpoints
//! ([`CheckpointSigner`]).

use std::fmt;

use ed25519_dalek::{Signer, SigningKey};
use zeroize::Zeroize;

use super::audit_sink::CheckpointSigner;
use super::token::valid_key_id;
use crate::error::EngineError;

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
        if !valid_key_id(id) {
            return Err(EngineError::invalid("key_ring.signing.id", "key ids are 1-32 characters of [A-Za-z0-9._-]"));
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
