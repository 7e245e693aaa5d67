//! Opaque tokens: the round state and the committed seed, sealed with AES-256-GCM under a
//! key ring, so the service keeps no per-round memory and any replica holding the
//! ring can continue any round.
//!
//! # Format (version 1)
//!
//! ```text
//! byte 0      version = 1
//! byte 1      kind: b'c' commitment token, b'r' round token
//! byte 2      n = length of the key id (1..=32)
//! 3..3+n      key id (ASCII [A-Za-z0-9._-])
//! next 12     AES-GCM nonce
//! rest        ciphertext of the payload (a protobuf message), then the 16-byte GCM tag
//! ```
//! The header (everything before the nonce) is the associated data, so a commitment token
//! cannot be passed off as a round token, nor a token re-labelled with another key id.
//!
//! The nonce is synthetic (as in SIV constructions): the first 12 bytes of HMAC-SHA256 under a per-key nonce key
//! (derived from the ring key) over header and payload. Sealing the same payload twice
//! therefore gives the same token bytes — a retried `Decide` returns an identical token — and
//! distinct payloads get nonces that collide only with negligible probability (birthday bound
//! 2^48 tokens per key). Commitment payloads contain a fresh random seed, so their tokens are
//! always distinct.
//!
//! AES-256-GCM rather than XChaCha20-Poly1305: with AES-NI and carry-less multiply it is
//! several times cheaper per token here, and a token is sealed or opened on every call.
//!
//! Every way a token can be wrong (truncated, tampered, unknown key id, wrong kind, not
//! decodable, expired) is the one error [`EngineError::InvalidToken`].

use std::fmt;

use aes_gcm::aead::consts::U12;
use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use hmac::{Hmac, Mac};
use prost::Message;
use rand::TryRng;
use serde::Deserialize;
use sha2::Sha256;
use subtle::ConstantTimeEq;
use zeroize::Zeroize;

use crate::error::EngineError;

/// The token format version this engine writes and reads.
pub const TOKEN_VERSION: u8 = 1;
/// Longest token accepted; anything longer is refused before any work.
pub const MAX_TOKEN_LEN: usize = 1024;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;
/// Longest key id.
pub const MAX_KEY_ID_LEN: usize = 32;

/// What a token carries; bound into the associated data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    Commitment,
    Round,
}

impl TokenKind {
    const fn byte(self) -> u8 {
        match self {
            TokenKind::Commitment => b'c',
            TokenKind::Round => b'r',
        }
    }
}

/// One key of the ring, with its cipher and nonce key scheduled once at load time.
struct RingKey {
    id: String,
    cipher: Aes256Gcm,
    nonce_mac: Hmac<Sha256>,
}

/// The keys tokens are sealed and opened with. New tokens are sealed under the primary key;
/// every key in the ring opens. `Debug` never shows key material.
pub struct KeyRing {
    keys: Vec<RingKey>,
    primary: usize,
    development: bool,
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing")
            .field("primary", &self.keys[self.primary].id)
            .field("keys", &self.keys.iter().map(|k| k.id.as_str()).collect::<Vec<_>>())
            .finish()
    }
}

/// The key ring file: `{"primary":"k1","keys":{"k1":"<64 hex>","k0":"<64 hex>"}}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyRingFile {
    primary: String,
    keys: KeyList,
}

/// The `keys` object in document order, duplicates kept (a map would keep only the last of
/// two equal ids; [`KeyRing::new`] refuses them instead).
struct KeyList(Vec<(String, String)>);

impl<'de> Deserialize<'de> for KeyList {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<KeyList, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = KeyList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of key id to 64 hexadecimal characters")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<KeyList, A::Error> {
                let mut keys = Vec::new();
                while let Some(entry) = map.next_entry::<String, String>()? {
                    keys.push(entry);
                }
                Ok(KeyList(keys))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// `true` for a valid key id: 1 to 32 characters of `[A-Za-z0-9._-]`.
pub fn valid_key_id(id: &str) -> bool {
    (1..=MAX_KEY_ID_LEN).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl KeyRing {
    /// Builds a ring from `(id, 32-byte key)` pairs; `primary` must be one of the ids. Refused
    /// (errors name the ids, never key bytes): no key, an invalid or repeated id, an all-zero
    /// key, the same key under two ids.
    pub fn new(mut keys: Vec<(String, [u8; 32])>, primary: &str) -> Result<KeyRing, EngineError> {
        let checked = Self::check(&keys);
        if let Err(e) = checked {
            keys.iter_mut().for_each(|(_, k)| k.zeroize());
            return Err(e);
        }
        let mut ring = Vec::with_capacity(keys.len());
        for (id, mut key) in keys {
            let cipher = Aes256Gcm::new(&Key::<Aes256Gcm>::from(key));
            // Nonce key: HMAC-SHA256(ring key, "reddog/token-nonce/v1"), so the AEAD key is
            // never used for anything else.
            let mut derive = <Hmac<Sha256> as KeyInit>::new_from_slice(&key)
                .map_err(|_| EngineError::Internal("HMAC key setup failed".into()))?;
            key.zeroize();
            derive.update(b"reddog/token-nonce/v1");
            let mut nonce_key: [u8; 32] = derive.finalize().into_bytes().into();
            let nonce_mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&nonce_key)
                .map_err(|_| EngineError::Internal("HMAC key setup failed".into()))?;
            nonce_key.zeroize();
            ring.push(RingKey { id, cipher, nonce_mac });
        }
        let primary = ring
            .iter()
            .position(|k| k.id == primary)
            .ok_or_else(|| EngineError::invalid("key_ring.primary", "the primary key id is not in the ring"))?;
        Ok(KeyRing { keys: ring, primary, development: false })
    }

    fn check(keys: &[(String, [u8; 32])]) -> Result<(), EngineError> {
        if keys.is_empty() {
            return Err(EngineError::invalid("key_ring.keys", "the key ring holds no key"));
        }
        for (i, (id, key)) in keys.iter().enumerate() {
            if !valid_key_id(id) {
                return Err(EngineError::invalid("key_ring.keys", "key ids are 1-32 characters of [A-Za-z0-9._-]"));
            }
            if keys[..i].iter().any(|(other, _)| other == id) {
                return Err(EngineError::invalid(
                    format!("key_ring.keys.{id}"),
                    format!("key id {id:?} appears twice (a JSON object must not repeat a key id)"),
                ));
            }
            if key.iter().all(|&b| b == 0) {
                return Err(EngineError::invalid(
                    format!("key_ring.keys.{id}"),
                    "the key is all zeros: generate keys with `reddog keygen`",
                ));
            }
            if let Some((other, _)) = keys[..i].iter().find(|(_, k)| bool::from(k.ct_eq(key))) {
                return Err(EngineError::invalid(
                    format!("key_ring.keys.{id}"),
                    format!("keys {other:?} and {id:?} are the same key: each id needs its own key"),
                ));
            }
        }
        Ok(())
    }

    /// Parses the key ring JSON. Errors name the offending field and never echo key text.
    pub fn from_json(text: &str) -> Result<KeyRing, EngineError> {
        let mut file: KeyRingFile = serde_json::from_str(text).map_err(|e| {
            // serde's message may quote the input; keep only its position.
            EngineError::invalid(
                "key_ring",
                format!("not a key ring JSON document (line {}, column {})", e.line(), e.column()),
            )
        })?;
        let mut keys = Vec::with_capacity(file.keys.0.len());
        let mut bad = None;
        for (id, hex_key) in &mut file.keys.0 {
            let mut key = [0u8; 32];
            let ok = hex::decode_to_slice(hex_key.trim(), &mut key).is_ok();
            hex_key.zeroize();
            if !ok && bad.is_none() {
                bad = Some(id.clone());
            }
            keys.push((id.clone(), key));
        }
        if let Some(id) = bad {
            keys.iter_mut().for_each(|(_, k)| k.zeroize());
            return Err(EngineError::invalid(
                format!("key_ring.keys.{id}"),
                "a key is 64 hexadecimal characters (32 bytes)",
            ));
        }
        KeyRing::new(keys, &file.primary)
    }

    /// A fresh random one-key ring for development: tokens die with the process.
    pub fn development() -> Result<KeyRing, EngineError> {
        let mut key = [0u8; 32];
        rand::rngs::SysRng
            .try_fill_bytes(&mut key)
            .map_err(|e| EngineError::Internal(format!("operating system random source failed: {e}")))?;
        let mut ring = KeyRing::new(vec![("dev".to_string(), key)], "dev")?;
        key.zeroize();
        ring.development = true;
        Ok(ring)
    }

    /// Whether this is a throw-away development ring.
    pub fn is_development(&self) -> bool {
        self.development
    }

    /// The id new tokens are sealed under.
    pub fn primary_id(&self) -> &str {
        &self.keys[self.primary].id
    }

    /// Every key id in the ring.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|k| k.id.as_str())
    }

    /// Seals `payload` into a token of `kind` under the primary key.
    pub fn seal(&self, kind: TokenKind, payload: &impl Message) -> Result<Vec<u8>, EngineError> {
        let key = &self.keys[self.primary];
        let id = key.id.as_bytes();
        let header_len = 3 + id.len();
        let body = payload.encoded_len();
        let mut token = Vec::with_capacity(header_len + NONCE_LEN + body + TAG_LEN);
        token.extend_from_slice(&[TOKEN_VERSION, kind.byte(), id.len() as u8]);
        token.extend_from_slice(id);
        token.resize(header_len + NONCE_LEN, 0);
        payload.encode(&mut token).map_err(|_| EngineError::Internal("token payload encoding failed".into()))?;
        let (head, rest) = token.split_at_mut(header_len);
        let (nonce_bytes, plaintext) = rest.split_at_mut(NONCE_LEN);
        let mut mac = key.nonce_mac.clone();
        mac.update(head);
        mac.update(plaintext);
        nonce_bytes.copy_from_slice(&mac.finalize().into_bytes()[..NONCE_LEN]);
        let nonce = Nonce::<U12>::try_from(&*nonce_bytes).map_err(|_| EngineError::Internal("nonce length".into()))?;
        let tag = key
            .cipher
            .encrypt_inout_detached(&nonce, head, plaintext.into())
            .map_err(|_| EngineError::Internal("token encryption failed".into()))?;
        token.extend_from_slice(tag.as_slice());
        Ok(token)
    }

    /// Opens a token of `kind`; any failure is [`EngineError::InvalidToken`].
    pub fn open<M: Message + Default>(&self, kind: TokenKind, token: &[u8]) -> Result<M, EngineError> {
        self.open_checked(kind, token).map_err(EngineError::from)
    }

    /// Opens a token of `kind`, saying why it is refused. The reason is for the operator's
    /// metric and log only: the client always gets the one answer ([`EngineError::InvalidToken`]).
    pub fn open_checked<M: Message + Default>(&self, kind: TokenKind, token: &[u8]) -> Result<M, TokenRefusal> {
        if token.len() > MAX_TOKEN_LEN || token.len() < 3 || token[0] != TOKEN_VERSION {
            return Err(TokenRefusal::Malformed);
        }
        if token[1] != kind.byte() {
            let other = [TokenKind::Commitment, TokenKind::Round].into_iter().any(|k| k.byte() == token[1]);
            return Err(if other { TokenRefusal::WrongKind } else { TokenRefusal::Malformed });
        }
        let id_len = usize::from(token[2]);
        let header_len = 3 + id_len;
        if id_len == 0 || token.len() < header_len + NONCE_LEN + TAG_LEN {
            return Err(TokenRefusal::Malformed);
        }
        let (head, rest) = token.split_at(header_len);
        let id = &head[3..];
        let key = self.keys.iter().find(|k| k.id.as_bytes() == id).ok_or(TokenRefusal::UnknownKey)?;
        let (nonce_bytes, sealed) = rest.split_at(NONCE_LEN);
        let (ciphertext, tag_bytes) = sealed.split_at(sealed.len() - TAG_LEN);
        let nonce = Nonce::<U12>::try_from(nonce_bytes).map_err(|_| TokenRefusal::Malformed)?;
        let tag = aes_gcm::Tag::try_from(tag_bytes).map_err(|_| TokenRefusal::Malformed)?;
        let mut plain = ciphertext.to_vec();
        let opened = key.cipher.decrypt_inout_detached(&nonce, head, plain.as_mut_slice().into(), &tag);
        if opened.is_err() {
            return Err(TokenRefusal::Tampered);
        }
        let decoded = M::decode(plain.as_slice()).map_err(|_| TokenRefusal::Malformed);
        plain.zeroize();
        decoded
    }
}

/// Why a token was refused, for the operator (metric label and WARN log); never sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenRefusal {
    /// Not a token of this format: wrong length, version or layout, or undecodable content.
    Malformed,
    /// A genuine-looking token of the other kind (a commitment where a round was expected).
    WrongKind,
    /// Sealed under a key id the ring does not hold (foreign, or retired too early).
    UnknownKey,
    /// The authentication tag does not verify: altered, or sealed under another key of that id.
    Tampered,
    /// Genuine, but past its expiry.
    Expired,
}

impl TokenRefusal {
    /// The metric label.
    pub const fn label(self) -> &'static str {
        match self {
            TokenRefusal::Malformed => "malformed",
            TokenRefusal::WrongKind => "wrong_kind",
            TokenRefusal::UnknownKey => "unknown_key",
            TokenRefusal::Tampered => "tampered",
            TokenRefusal::Expired => "expired",
        }
    }
}

impl From<TokenRefusal> for EngineError {
    fn from(_: TokenRefusal) -> EngineError {
        EngineError::InvalidToken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, PartialEq, prost::Message)]
    struct Sample {
        #[prost(string, tag = "1")]
        text: String,
    }

    fn ring(primary: &str) -> KeyRing {
        KeyRing::from_json(&format!(
            r#"{{"primary":"{primary}","keys":{{"k1":"{}","k0":"{}"}}}}"#,
            "11".repeat(32),
            "01".repeat(32)
        ))
        .unwrap()
    }

    #[test]
    fn seal_open_round_trip_and_determinism() {
        let r = ring("k1");
        let msg = Sample { text: "hello".into() };
        let t = r.seal(TokenKind::Round, &msg).unwrap();
        assert_eq!(r.seal(TokenKind::Round, &msg).unwrap(), t);
        assert_eq!(r.open::<Sample>(TokenKind::Round, &t).unwrap(), msg);
        assert_eq!(r.open::<Sample>(TokenKind::Commitment, &t), Err(EngineError::InvalidToken));
    }

    #[test]
    fn any_tampering_is_refused() {
        let r = ring("k1");
        let t = r.seal(TokenKind::Round, &Sample { text: "hello".into() }).unwrap();
        for i in 0..t.len() {
            let mut bad = t.clone();
            bad[i] ^= 1;
            assert_eq!(r.open::<Sample>(TokenKind::Round, &bad), Err(EngineError::InvalidToken), "byte {i}");
        }
        for n in 0..t.len() {
            assert_eq!(r.open::<Sample>(TokenKind::Round, &t[..n]), Err(EngineError::InvalidToken));
        }
    }

    #[test]
    fn rotation_keeps_old_tokens_and_foreign_keys_are_refused() {
        let old = ring("k0");
        let t = old.seal(TokenKind::Round, &Sample { text: "x".into() }).unwrap();
        let new = ring("k1");
        assert!(new.open::<Sample>(TokenKind::Round, &t).is_ok());
        let foreign =
            KeyRing::from_json(&format!(r#"{{"primary":"k0","keys":{{"k0":"{}"}}}}"#, "22".repeat(32))).unwrap();
        assert_eq!(foreign.open::<Sample>(TokenKind::Round, &t), Err(EngineError::InvalidToken));
    }

    #[test]
    fn bad_rings_are_refused_without_echoing_keys() {
        let secret = "ab".repeat(31) + "zz";
        let err = KeyRing::from_json(&format!(r#"{{"primary":"a","keys":{{"a":"{secret}"}}}}"#)).unwrap_err();
        assert!(!err.to_string().contains("abab"));
        assert!(KeyRing::from_json(&format!(r#"{{"primary":"b","keys":{{"a":"{}"}}}}"#, "03".repeat(32))).is_err());
        assert!(KeyRing::from_json(&format!(r#"{{"primary":"a b","keys":{{"a b":"{}"}}}}"#, "03".repeat(32))).is_err());
        assert!(format!("{:?}", ring("k1")).contains("k0"));
    }

    /// The message of a refused ring: names the problem, never the key text.
    fn refusal(json: &str, secret: &str) -> String {
        let err = KeyRing::from_json(json).unwrap_err().to_string();
        assert!(!err.contains(secret), "{err}");
        err
    }

    #[test]
    fn duplicate_ids_zero_keys_and_shared_keys_are_refused() {
        let (k1, k2) = ("4a".repeat(32), "5b".repeat(32));
        // A repeated JSON key: serde into a map would keep the last one silently.
        let err = refusal(&format!(r#"{{"primary":"a","keys":{{"a":"{k1}","a":"{k2}"}}}}"#), &k1[..16]);
        assert!(err.contains("appears twice"), "{err}");
        let err = refusal(&format!(r#"{{"primary":"a","keys":{{"a":"{}"}}}}"#, "00".repeat(32)), "0000000000");
        assert!(err.contains("all zeros"), "{err}");
        let err = refusal(&format!(r#"{{"primary":"a","keys":{{"a":"{k1}","b":"{k1}"}}}}"#), &k1[..16]);
        assert!(err.contains("same key"), "{err}");
        assert!(KeyRing::from_json(&format!(r#"{{"primary":"a","keys":{{"a":"{k1}","b":"{k2}"}}}}"#)).is_ok());
    }

    #[test]
    fn refusals_say_why_to_the_operator() {
        let r = ring("k1");
        let t = r.seal(TokenKind::Round, &Sample { text: "hello".into() }).unwrap();
        let why = |t: &[u8], kind| r.open_checked::<Sample>(kind, t).unwrap_err();
        assert_eq!(why(&t, TokenKind::Commitment), TokenRefusal::WrongKind);
        let mut bad = t.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert_eq!(why(&bad, TokenKind::Round), TokenRefusal::Tampered);
        assert_eq!(why(&t[..10], TokenKind::Round), TokenRefusal::Malformed);
        assert_eq!(why(b"junk", TokenKind::Round), TokenRefusal::Malformed);
        let foreign =
            KeyRing::from_json(&format!(r#"{{"primary":"zz","keys":{{"zz":"{}"}}}}"#, "22".repeat(32))).unwrap();
        let t2 = foreign.seal(TokenKind::Round, &Sample { text: "x".into() }).unwrap();
        assert_eq!(why(&t2, TokenKind::Round), TokenRefusal::UnknownKey);
        // Every refusal is the same error to the caller.
        assert_eq!(r.open::<Sample>(TokenKind::Round, &t2), Err(EngineError::InvalidToken));
    }
}
