//! Opaque tokens: the round state and the committed seed, sealed under a key ring, so the
//! service keeps no per-round memory and any replica holding the ring can continue any round.
//!
//! # Format (version 2, the only one sealed)
//!
//! ```text
//! byte 0      version = 2
//! byte 1      kind: b'c' commitment token, b'r' round token
//! byte 2      n = length of the key id (1..=32)
//! 3..3+n      key id (ASCII [A-Za-z0-9._-])
//! next 12     nonce
//! rest        AES-256-GCM-SIV ciphertext of the payload (a protobuf message), then the
//!             16-byte tag
//! ```
//! The header (everything before the nonce) is the associated data, so a commitment token
//! cannot be passed off as a round token, nor a token re-labelled with another key id or
//! version.
//!
//! **Keys.** Each ring key is only ever an HKDF-SHA256 input key (salt `reddog/token/v2`):
//! the AEAD key is `HKDF-Expand(info "reddog/token/v2/aead")`, the nonce key
//! `HKDF-Expand(info "reddog/token/v2/nonce")` — purpose-separated, so the raw ring key keys
//! nothing directly.
//!
//! **Nonce.** Synthetic: the first 12 bytes of HMAC-SHA256(nonce key, header ‖ payload).
//! Sealing the same payload twice gives the same bytes — a retried `Decide` returns an
//! identical token — and distinct payloads get unrelated nonces.
//!
//! **Why AES-256-GCM-SIV (RFC 8452).** Under AES-GCM a repeated nonce with two different
//! payloads leaks the authentication key (forgeries) and the XOR of the plaintexts; the
//! version-1 tokens relied on the 96-bit synthetic nonces never colliding, which holds only
//! well below 2^48 tokens per key. GCM-SIV is nonce-misuse resistant (RFC 8452 §9): the tag
//! is computed over the plaintext and seeds the keystream, and per-nonce keys are derived
//! from the nonce (RFC 8452 §4), so a repeated nonce reveals only whether the two sealed
//! (header, payload) pairs were identical — never a key, never a forgery.
//!
//! **Per-key message budget: 2^40 seals per key id**, then rotate (`reddog keygen --add-to`,
//! docs/OPERATIONS.md; `reddog_token_seals_total{key_id}` counts the seals of each key id).
//! The bound behind it, for q seals of at most [`MAX_TOKEN_LEN`] bytes (≤ 93 AES blocks):
//! - synthetic-nonce collisions between distinct payloads: probability ≤ q²/2^97, i.e.
//!   ≤ 2^-17 at q = 2^40 — and by the misuse resistance above a collision is not an attack;
//! - per-nonce key derivation costs 6 AES-256 calls under the AEAD key per seal (RFC 8452
//!   §4): ≤ 2^43 calls at q = 2^40, a PRP/PRF switching term ≤ (2^43)²/2^129 = 2^-43;
//! - each derived (key, nonce) pair seals one payload (two only on a collision), far inside
//!   the per-nonce limits of RFC 8452 §9.
//!
//! At 100,000 seals a second across the whole fleet, 2^40 seals take about 127 days.
//!
//! # The support window
//!
//! Every payload carries its issue time (`issued_at_unix_ms`: a commitment's CommitSeed; a
//! round's, its commitment's, unchanged by Decide, so a retried StartRound or Decide still
//! seals the same bytes). The engine accepts a token for [`SUPPORT_WINDOW_MS`] (30 days)
//! after its issue time, and an engine release reads every format a release sealed within the
//! window before it; older formats are not read at all ([`TokenRefusal::TooOld`]: a precise
//! refusal naming the field, `TOKEN_TOO_OLD`). Tokens sealed before payloads carried an issue
//! time are read as issued at [`UNDATED_ISSUED_AT_MS`], so they leave the window with the rest
//! of their format. The format is public contract: `docs/API.md`, "Tokens".
//!
//! Every other way a token can be wrong (truncated, tampered, unknown key id, wrong kind, not
//! decodable, expired) is the one error [`EngineError::InvalidToken`].

use std::fmt;

use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm_siv::Aes256GcmSiv;
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use prost::Message;
use rand::TryRng;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use subtle::ConstantTimeEq;
use zeroize::Zeroize;

use crate::error::{Cause, EngineError, Fault};
use crate::fairness::FairnessError;
use crate::game::paytable::MAX_ODDS;
use crate::game::table::MAX_BET;
use crate::game::{MAX_DECKS, MAX_SEATS};
use crate::ids::{
    CURRENCY_CODE_LEN, MAX_CLIENT_SEED_BYTES, MAX_MINOR_UNIT_EXPONENT, MAX_ROUND_ID_BYTES, MAX_TABLE_ID_BYTES,
};
use crate::service::evidence::signing::ReceiptSigner;

/// The token format version this engine seals and reads.
pub(crate) const TOKEN_VERSION: u8 = 2;
/// How long after its issue time a token is accepted: 30 days. A round not settled by then
/// cannot be settled by any engine (the platform's sweeper settles abandoned rounds within
/// minutes); a key that stopped being primary can leave the ring once the window has passed.
pub(crate) const SUPPORT_WINDOW_MS: i64 = 30 * 24 * 60 * 60 * 1000;
/// The issue time of a token sealed before payloads carried one (2026-12-07T00:00:00Z, when
/// they started to): such tokens are refused from 2027-01-06 on, when this constant and the
/// one line that reads it can be deleted.
pub(crate) const UNDATED_ISSUED_AT_MS: i64 = 1_796_601_600_000;
/// HKDF salt of the version-2 subkeys.
const HKDF_SALT: &[u8] = b"reddog/token/v2";
/// HKDF info of the AEAD key.
const AEAD_INFO: &[u8] = b"reddog/token/v2/aead";
/// HKDF info of the synthetic-nonce key.
const NONCE_INFO: &[u8] = b"reddog/token/v2/nonce";
/// Seals per key id before the key must be rotated (see the module docs for the bound).
pub const SEALS_PER_KEY_BUDGET: u64 = 1 << 40;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;
/// Longest key id ([`crate::ids::MAX_KEY_ID_BYTES`]).
pub(crate) const MAX_KEY_ID_LEN: usize = crate::ids::MAX_KEY_ID_BYTES;

/// Bytes of a protobuf varint holding `v`.
pub(crate) const fn varint_len(v: u64) -> usize {
    let mut n = 1;
    let mut v = v >> 7;
    while v != 0 {
        n += 1;
        v >>= 7;
    }
    n
}

/// Bytes of a length-delimited protobuf field (one-byte tag) of `n` bytes.
const fn bytes_field(n: usize) -> usize {
    1 + varint_len(n as u64) + n
}

/// Bytes of a varint protobuf field (one-byte tag) holding at most `max`.
const fn varint_field(max: u64) -> usize {
    1 + varint_len(max)
}

/// The longest encoded round payload (`state::RoundPayload`) any accepted request can produce: the
/// largest client seed, round id and table id the API accepts, 7 seats at the largest bet any
/// table allows, every seat decided (each in its own Decide call), the largest odds.
pub(crate) const MAX_ROUND_PAYLOAD_LEN: usize = {
    let seats = MAX_SEATS;
    bytes_field(32) // server_seed
        + bytes_field(MAX_CLIENT_SEED_BYTES)
        + varint_field(u64::MAX) // nonce
        + varint_field(MAX_DECKS as u64)
        + bytes_field(MAX_ROUND_ID_BYTES)
        + varint_field(1) // complete
        + bytes_field(3) // cards
        + bytes_field(seats * varint_len(MAX_BET)) // bets, packed
        + bytes_field(seats) // decisions
        + bytes_field(12 * varint_len(MAX_ODDS as u64)) // paytable, packed
        + bytes_field(MAX_TABLE_ID_BYTES)
        + varint_field(MAX_SEATS as u64) // step
        + bytes_field(32) // transcript
        + bytes_field(seats) // decided_in
        + bytes_field(CURRENCY_CODE_LEN) // currency
        + 1 + varint_field(MAX_MINOR_UNIT_EXPONENT as u64) // minor_unit_exponent: tag 16, a two-byte key
        + 1 + varint_field(MAX_BET) // min_bet: tag 17
        + 1 + varint_field(MAX_BET) // max_bet: tag 18
        + 1 + varint_field(1) // sandbox: tag 20, a two-byte key
        + 1 + varint_field(u64::MAX) // issued_at_unix_ms: tag 21 (int64: 10 bytes when negative)
};

/// The longest encoded commitment payload (`state::CommitmentPayload`); both budgets are
/// checked against the largest payloads in `state`'s tests.
pub(crate) const MAX_COMMITMENT_PAYLOAD_LEN: usize = bytes_field(32) // server_seed
    + varint_field(u64::MAX) // expires_at_unix_ms (int64: 10 bytes when negative)
    + bytes_field(MAX_ROUND_ID_BYTES)
    + varint_field(u64::MAX) // nonce
    + bytes_field(MAX_TABLE_ID_BYTES)
    + varint_field(MAX_DECKS as u64)
    + bytes_field(CURRENCY_CODE_LEN) // currency
    + varint_field(MAX_MINOR_UNIT_EXPONENT as u64)
    + bytes_field(32) // rules_digest
    + bytes_field(12 * varint_len(MAX_ODDS as u64)) // paytable, packed
    + varint_field(MAX_BET) // min_bet
    + varint_field(MAX_BET) // max_bet
    + 1 + varint_field(1) // sandbox: tag 20, a two-byte key
    + 1 + varint_field(u64::MAX); // issued_at_unix_ms: tag 21

/// Longest token: header (version, kind, key id length, the longest key id), nonce, the
/// longest payload, tag. Derived from the largest inputs the API accepts, so every token
/// the engine issues for an accepted request fits; [`KeyRing::seal`] refuses anything longer
/// (an internal error, unreachable) and [`KeyRing::open`] refuses anything longer before any
/// work.
pub const MAX_TOKEN_LEN: usize = {
    let payload = if MAX_ROUND_PAYLOAD_LEN > MAX_COMMITMENT_PAYLOAD_LEN {
        MAX_ROUND_PAYLOAD_LEN
    } else {
        MAX_COMMITMENT_PAYLOAD_LEN
    };
    3 + MAX_KEY_ID_LEN + NONCE_LEN + payload + TAG_LEN
};

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

/// One key of the ring, with its ciphers and nonce keys scheduled once at load time.
struct RingKey {
    id: String,
    /// AES-256-GCM-SIV under the HKDF-derived AEAD key.
    siv: Aes256GcmSiv,
    /// HMAC-SHA256 under the HKDF-derived nonce key.
    siv_nonce_mac: Hmac<Sha256>,
}

impl RingKey {
    fn new(id: String, key: &[u8; 32]) -> Result<RingKey, EngineError> {
        let setup = |e: Cause| EngineError::from(Fault::KeyDerivation { key_id: id.clone(), source: e });
        let hk = Hkdf::<Sha256>::new(Some(HKDF_SALT), key);
        let mut aead_key = [0u8; 32];
        let mut nonce_key = [0u8; 32];
        hk.expand(AEAD_INFO, &mut aead_key).map_err(|e| setup(Cause::new(e)))?;
        hk.expand(NONCE_INFO, &mut nonce_key).map_err(|e| setup(Cause::new(e)))?;
        let siv = Aes256GcmSiv::new(&aes_gcm_siv::Key::<Aes256GcmSiv>::from(aead_key));
        let siv_nonce_mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&nonce_key).map_err(|e| setup(Cause::new(e)))?;
        aead_key.zeroize();
        nonce_key.zeroize();
        Ok(RingKey { id, siv, siv_nonce_mac })
    }
}

/// The keys tokens are sealed and opened with. New tokens are sealed under the primary key;
/// every key in the ring opens. `Debug` never shows key material.
pub struct KeyRing {
    keys: Vec<RingKey>,
    primary: usize,
    development: bool,
    /// The optional Ed25519 key that signs receipts and audit checkpoints.
    signing: Option<std::sync::Arc<ReceiptSigner>>,
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing")
            .field("primary", &self.keys[self.primary].id)
            .field("keys", &self.keys.iter().map(|k| k.id.as_str()).collect::<Vec<_>>())
            .field("signing", &self.signing)
            .finish()
    }
}

/// The key ring file: `{"primary":"k1","keys":{"k1":"<64 hex>","k0":"<64 hex>"}}`, with
/// an optional `"signing": {"id": "s1", "secret": "<64 hex>"}`. The one definition of the
/// shape: the engine reads it ([`KeyRing::from_json`]), `reddog keygen` writes it.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyRingFile {
    pub primary: String,
    pub keys: KeyList,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing: Option<SigningEntry>,
}

/// The ring's optional Ed25519 signing key.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SigningEntry {
    pub id: String,
    pub secret: String,
}

/// The `keys` object in document order, duplicates kept (a map would keep only the last of
/// two equal ids; [`KeyRing::new`] refuses them instead).
pub struct KeyList(pub Vec<(String, String)>);

impl Serialize for KeyList {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (id, key) in &self.0 {
            map.serialize_entry(id, key)?;
        }
        map.end()
    }
}

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
    crate::ids::check_key_id(id).is_ok()
}

impl KeyRing {
    /// Builds a ring from `(id, 32-byte key)` pairs; `primary` must be one of the ids.
    ///
    /// Refused (errors name the ids, never key bytes): no key, an invalid or repeated id, an
    /// all-zero or all-0xff key, the same key under two ids.
    pub fn new(mut keys: Vec<(String, [u8; 32])>, primary: &str) -> Result<KeyRing, EngineError> {
        if let Err(e) = Self::check(&keys) {
            keys.iter_mut().for_each(|(_, k)| k.zeroize());
            return Err(e);
        }
        let mut ring = Vec::with_capacity(keys.len());
        for (id, mut key) in keys {
            let scheduled = RingKey::new(id, &key);
            key.zeroize();
            ring.push(scheduled?);
        }
        let primary = ring
            .iter()
            .position(|k| k.id == primary)
            .ok_or_else(|| EngineError::invalid("key_ring.primary", "the primary key id is not in the ring"))?;
        Ok(KeyRing { keys: ring, primary, development: false, signing: None })
    }

    /// Parses the key ring JSON. Errors name the offending field and never echo key text.
    fn check(keys: &[(String, [u8; 32])]) -> Result<(), EngineError> {
        if keys.is_empty() {
            return Err(EngineError::invalid("key_ring.keys", "the key ring holds no key"));
        }
        for (i, (id, key)) in keys.iter().enumerate() {
            if !valid_key_id(id) {
                return Err(EngineError::invalid("key_ring.keys", crate::ids::KEY_ID_RULE));
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
            if key.iter().all(|&b| b == 0xff) {
                return Err(EngineError::invalid(
                    format!("key_ring.keys.{id}"),
                    "the key is all 0xff bytes (ffff…): generate keys with `reddog keygen`",
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

    /// Parses the key ring JSON. Errors name the offending field (`key_ring.primary`,
    /// `key_ring.keys.<id>`) and never echo key text.
    pub fn from_json(text: &str) -> Result<KeyRing, EngineError> {
        Self::check_json_shape(text)?;
        let mut file: KeyRingFile = serde_json::from_str(text).map_err(key_ring_file_error)?;
        let mut keys = decode_keys(&mut file.keys)?;
        if let Some(entry) = &file.signing
            && let Err(e) = Self::check_signing_apart(entry, &keys)
        {
            keys.iter_mut().for_each(|(_, k)| k.zeroize());
            return Err(e);
        }
        let signing = match file.signing.as_mut() {
            None => None,
            Some(entry) => Some(ReceiptSigner::from_hex(&entry.id, &mut entry.secret)),
        };
        let mut ring = KeyRing::new(keys, &file.primary)?;
        ring.signing = signing.transpose()?.map(std::sync::Arc::new);
        Ok(ring)
    }

    /// Checks the shape of the key ring JSON `text` ([`Self::check_shape`]), wiping the key
    /// text of the value it parsed before returning.
    fn check_json_shape(text: &str) -> Result<(), EngineError> {
        let mut doc: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            // serde's message may quote the input; keep only its position.
            EngineError::invalid("key_ring", format!("not JSON (line {}, column {})", e.line(), e.column()))
        })?;
        let shape = Self::check_shape(&doc);
        if let Some(serde_json::Value::Object(keys)) = doc.get_mut("keys") {
            for v in keys.values_mut() {
                if let serde_json::Value::String(hex_key) = v {
                    hex_key.zeroize();
                }
            }
        }
        shape
    }

    /// The signing key shares neither its id nor its secret with a token key: one secret
    /// serving two purposes, or one id naming two keys, is a configuration mistake.
    fn check_signing_apart(entry: &SigningEntry, keys: &[(String, [u8; 32])]) -> Result<(), EngineError> {
        if keys.iter().any(|(id, _)| *id == entry.id) {
            return Err(EngineError::invalid(
                "key_ring.signing.id",
                format!("{:?} is also a token key's id in keys: give the signing key its own id", entry.id),
            ));
        }
        let mut secret = [0u8; 32];
        let same = hex::decode_to_slice(entry.secret.trim(), &mut secret).is_ok()
            && keys.iter().any(|(_, k)| bool::from(k.ct_eq(&secret)));
        secret.zeroize();
        if same {
            return Err(EngineError::invalid(
                "key_ring.signing.secret",
                "the signing secret is also a token key in keys: generate it apart (`reddog keygen --signing`)",
            ));
        }
        Ok(())
    }

    /// The Ed25519 signing key, when the ring has one.
    pub fn signer(&self) -> Option<&std::sync::Arc<ReceiptSigner>> {
        self.signing.as_ref()
    }

    /// The document's shape, each problem named by its field: an object with `primary` (a
    /// string), `keys` (an object whose values are strings) and optionally `signing` (checked
    /// where it is parsed, [`crate::service::evidence::signing`]). Names taken from
    /// the document appear only when they are valid key ids (never key text).
    fn check_shape(doc: &serde_json::Value) -> Result<(), EngineError> {
        use serde_json::Value;
        const SHAPE: &str = r#"a key ring is {"primary": "<key id>", "keys": {"<key id>": "<64 hex>", ...}} and optionally "signing": {"id": "<key id>", "secret": "<64 hex>"}"#;
        let Value::Object(obj) = doc else { return Err(EngineError::invalid("key_ring", SHAPE)) };
        if let Some(unknown) = obj.keys().find(|k| !["primary", "keys", "signing"].contains(&k.as_str())) {
            let field = if valid_key_id(unknown) { format!("key_ring.{unknown}") } else { "key_ring".to_string() };
            return Err(EngineError::invalid(field, format!("unknown field; {SHAPE}")));
        }
        match obj.get("primary") {
            None => return Err(EngineError::invalid("key_ring.primary", format!("missing; {SHAPE}"))),
            Some(Value::String(_)) => {}
            Some(_) => {
                return Err(EngineError::invalid("key_ring.primary", "must be a string: the id of a key in keys"));
            }
        }
        Self::check_signing_shape(obj.get("signing"))?;
        match obj.get("keys") {
            None => Err(EngineError::invalid("key_ring.keys", format!("missing; {SHAPE}"))),
            Some(Value::Object(keys)) => match keys.iter().find(|(_, v)| !v.is_string()) {
                Some((id, _)) => {
                    let field = if valid_key_id(id) { format!("key_ring.keys.{id}") } else { "key_ring.keys".into() };
                    Err(EngineError::invalid(field, "a key is a string of 64 hexadecimal characters (in quotes)"))
                }
                None => Ok(()),
            },
            Some(_) => Err(EngineError::invalid("key_ring.keys", format!("must be an object; {SHAPE}"))),
        }
    }

    /// The optional `signing` entry's shape: absent, or an object of exactly `id` and
    /// `secret`, both strings (`null` is refused: omit the field for no signing key).
    fn check_signing_shape(signing: Option<&serde_json::Value>) -> Result<(), EngineError> {
        use serde_json::Value;
        const SIGNING: &str = r#"signing is {"id": "<key id>", "secret": "<64 hex>"}, or absent for no signing key"#;
        let entry = match signing {
            None => return Ok(()),
            Some(Value::Object(entry)) => entry,
            Some(_) => return Err(EngineError::invalid("key_ring.signing", SIGNING)),
        };
        if let Some(unknown) = entry.keys().find(|k| !["id", "secret"].contains(&k.as_str())) {
            let field =
                if valid_key_id(unknown) { format!("key_ring.signing.{unknown}") } else { "key_ring.signing".into() };
            return Err(EngineError::invalid(field, format!("unknown field; {SIGNING}")));
        }
        for name in ["id", "secret"] {
            match entry.get(name) {
                Some(Value::String(_)) => {}
                Some(_) => {
                    return Err(EngineError::invalid(
                        format!("key_ring.signing.{name}"),
                        "must be a string (in quotes)",
                    ));
                }
                None => {
                    return Err(EngineError::invalid(
                        format!("key_ring.signing.{name}"),
                        format!("missing; {SIGNING}"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// A fresh random one-key ring for development: tokens die with the process.
    pub fn development() -> Result<KeyRing, EngineError> {
        let mut key = [0u8; 32];
        rand::rngs::SysRng
            .try_fill_bytes(&mut key)
            .map_err(|e| EngineError::Fairness(FairnessError::RandomSource(e)))?;
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

    /// Seals `payload` into a version-2 token of `kind` under the primary key. A token over
    /// [`MAX_TOKEN_LEN`] is refused ([`EngineError::TokenTooLarge`], an internal error that
    /// accepted requests cannot reach).
    // Kept out of line (one call per token) so that a profile names the sealing apart from
    // the handler that calls it: scripts/callgrind-split.py, docs/BENCHMARKS.md.
    #[inline(never)]
    pub fn seal(&self, kind: TokenKind, payload: &impl Message) -> Result<Vec<u8>, EngineError> {
        let key = &self.keys[self.primary];
        let mut token = frame(TOKEN_VERSION, kind, &key.id, payload)?;
        let header_len = 3 + key.id.len();
        let (head, rest) = token.split_at_mut(header_len);
        let (nonce_bytes, plaintext) = rest.split_at_mut(NONCE_LEN);
        let mut mac = key.siv_nonce_mac.clone();
        mac.update(head);
        mac.update(plaintext);
        let nonce = synthetic_nonce(mac, nonce_bytes);
        let tag = key
            .siv
            .encrypt_inout_detached(&aes_gcm_siv::Nonce::from(nonce), head, plaintext.into())
            .map_err(|e| Fault::Seal(Cause::new(e)))?;
        token.extend_from_slice(tag.as_slice());
        Ok(token)
    }

    /// Opens a token of `kind`; any failure is [`EngineError::InvalidToken`] (a token of a
    /// retired format: [`EngineError::TokenTooOld`]).
    pub fn open<M: Message + Default>(&self, kind: TokenKind, token: &[u8]) -> Result<M, EngineError> {
        self.open_checked(kind, token).map_err(EngineError::from)
    }

    /// Opens a token of `kind`, saying why it is refused. The reason is for the operator's
    /// metric and log only: the client always gets the one answer ([`EngineError::InvalidToken`]).
    #[inline(never)] // named apart in a profile, as `seal`
    pub fn open_checked<M: Message + Default>(&self, kind: TokenKind, token: &[u8]) -> Result<M, TokenRefusal> {
        use TokenRefusal::{Malformed, Tampered, UnknownKey};
        let header_len = header_len(kind, token)?;
        let (head, rest) = token.split_at(header_len);
        let id = &head[3..];
        let key = self.keys.iter().find(|k| k.id.as_bytes() == id).ok_or(UnknownKey)?;
        let (nonce_bytes, sealed) = rest.split_at(NONCE_LEN);
        let (ciphertext, tag_bytes) = sealed.split_at(sealed.len() - TAG_LEN);
        // Decrypted on the stack (the token is at most MAX_TOKEN_LEN bytes), wiped after.
        let mut buf = [0u8; MAX_TOKEN_LEN];
        let plain = &mut buf[..ciphertext.len()];
        plain.copy_from_slice(ciphertext);
        let nonce = aes_gcm_siv::Nonce::try_from(nonce_bytes).map_err(|_| Malformed)?;
        let tag = aes_gcm_siv::Tag::try_from(tag_bytes).map_err(|_| Malformed)?;
        let opened = key.siv.decrypt_inout_detached(&nonce, head, (&mut *plain).into(), &tag).is_ok();
        if !opened {
            plain.zeroize();
            return Err(Tampered);
        }
        let decoded = M::decode(&*plain).map_err(|_| Malformed);
        plain.zeroize();
        decoded
    }
}

/// Why a key ring of a checked shape did not read as a [`KeyRingFile`]: what is left is a
/// field given twice (serde's message names it; a JSON value would keep the last silently).
fn key_ring_file_error(e: serde_json::Error) -> EngineError {
    let message = e.to_string();
    let twice = message.strip_prefix("duplicate field `").and_then(|m| m.split('`').next());
    match twice {
        Some(name @ ("primary" | "keys" | "signing")) => {
            EngineError::invalid(format!("key_ring.{name}"), "given twice: keep one")
        }
        Some(name @ ("id" | "secret")) => {
            EngineError::invalid(format!("key_ring.signing.{name}"), "given twice: keep one")
        }
        _ => EngineError::invalid("key_ring", format!("not a key ring (line {}, column {})", e.line(), e.column())),
    }
}

/// The ring's keys decoded from hex, the hex text wiped; an error names the first key that
/// is not 64 hexadecimal characters, the keys decoded so far wiped.
fn decode_keys(list: &mut KeyList) -> Result<Vec<(String, [u8; 32])>, EngineError> {
    let mut keys = Vec::with_capacity(list.0.len());
    let mut bad = None;
    for (id, hex_key) in &mut list.0 {
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
    Ok(keys)
}

/// The length of the header of a token of `kind` (version, kind, key id length, key id),
/// checked up to the key id: the token's length, its format version and kind.
fn header_len(kind: TokenKind, token: &[u8]) -> Result<usize, TokenRefusal> {
    use TokenRefusal::{Malformed, WrongKind};
    if token.len() > MAX_TOKEN_LEN || token.len() < 3 {
        return Err(Malformed);
    }
    match token[0] {
        TOKEN_VERSION => {}
        // Version 1 (AES-256-GCM under the ring key itself): sealed before version 2,
        // long before the support window; no key is needed to say so.
        1 => return Err(TokenRefusal::TooOld(Age::Format("in format version 1"))),
        _ => return Err(Malformed),
    }
    if token[1] != kind.byte() {
        let other = [TokenKind::Commitment, TokenKind::Round].into_iter().any(|k| k.byte() == token[1]);
        return Err(if other { WrongKind } else { Malformed });
    }
    let id_len = usize::from(token[2]);
    let header_len = 3 + id_len;
    if id_len == 0 || token.len() < header_len + NONCE_LEN + TAG_LEN {
        return Err(Malformed);
    }
    Ok(header_len)
}

/// Header and a zeroed nonce, then the encoded payload: the token before encryption.
/// The first [`NONCE_LEN`] bytes of `mac`'s tag: the token's nonce, written into its place in
/// the token (`out`, exactly [`NONCE_LEN`] bytes) and returned.
fn synthetic_nonce(mac: Hmac<Sha256>, out: &mut [u8]) -> [u8; NONCE_LEN] {
    let mut nonce = [0u8; NONCE_LEN];
    nonce.copy_from_slice(&mac.finalize().into_bytes()[..NONCE_LEN]);
    out.copy_from_slice(&nonce);
    nonce
}

fn frame(version: u8, kind: TokenKind, id: &str, payload: &impl Message) -> Result<Vec<u8>, EngineError> {
    let id = id.as_bytes();
    let header_len = 3 + id.len();
    let len = header_len + NONCE_LEN + payload.encoded_len() + TAG_LEN;
    if len > MAX_TOKEN_LEN {
        return Err(EngineError::TokenTooLarge { len, max: MAX_TOKEN_LEN });
    }
    let mut token = Vec::with_capacity(len);
    // A valid key id is 1..=32 bytes: its length fits in the byte.
    token.extend_from_slice(&[version, kind.byte(), id.len() as u8]);
    token.extend_from_slice(id);
    token.resize(header_len + NONCE_LEN, 0);
    // The capacity was reserved above; a Vec grows as needed, so encoding cannot fail.
    let _ = payload.encode(&mut token);
    if token.len() + TAG_LEN != len {
        return Err(Fault::PayloadLength { expected: len - TAG_LEN, actual: token.len() }.into());
    }
    Ok(token)
}

/// Why a token was refused, for the operator (metric label and WARN log). Only
/// [`TokenRefusal::TooOld`] is told to the caller; every other refusal is the one
/// [`EngineError::InvalidToken`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenRefusal {
    /// Not a token of a known format: wrong length, version or layout, or undecodable content.
    Malformed,
    /// A genuine-looking token of the other kind (a commitment where a round was expected).
    WrongKind,
    /// Sealed under a key id the ring does not hold (foreign, or retired too early).
    UnknownKey,
    /// The authentication tag does not verify: altered, or sealed under another key of that id.
    Tampered,
    /// Genuine, but past its expiry.
    Expired,
    /// Genuine (or of a format no key is needed to recognise), but older than the support
    /// window: the caller is told so, naming the token's field.
    TooOld(Age),
}

/// How a token is older than the support window ([`SUPPORT_WINDOW_MS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Age {
    /// Sealed in a format this engine no longer reads: the words say which ("before rounds
    /// carried their transcript").
    Format(&'static str),
    /// Issued at this instant (Unix milliseconds), more than the window ago.
    IssuedAt(i64),
}

impl fmt::Display for Age {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = SUPPORT_WINDOW_MS / (24 * 60 * 60 * 1000);
        match self {
            Age::Format(what) => write!(f, "sealed {what}: this engine reads only tokens of the last {days} days"),
            Age::IssuedAt(ms) => {
                let at = jiff::Timestamp::from_millisecond(*ms).map_or_else(|_| format!("{ms} ms"), |t| t.to_string());
                write!(f, "issued at {at}, more than the {days}-day support window ago")
            }
        }
    }
}

/// Refuses a token issued at `issued_at_unix_ms` (0: before payloads carried it) once the
/// support window has passed at `now_unix_ms`.
pub(crate) fn check_age(issued_at_unix_ms: i64, now_unix_ms: i64) -> Result<(), TokenRefusal> {
    let issued = if issued_at_unix_ms == 0 { UNDATED_ISSUED_AT_MS } else { issued_at_unix_ms };
    if now_unix_ms.saturating_sub(issued) > SUPPORT_WINDOW_MS {
        return Err(TokenRefusal::TooOld(Age::IssuedAt(issued)));
    }
    Ok(())
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
            TokenRefusal::TooOld(_) => "too_old",
        }
    }

    /// The error the caller gets for a token refused in request field `field`.
    pub fn error(self, field: &'static str) -> EngineError {
        match self {
            TokenRefusal::TooOld(age) => EngineError::TokenTooOld { field, age: age.to_string() },
            _ => EngineError::InvalidToken,
        }
    }
}

impl From<TokenRefusal> for EngineError {
    fn from(why: TokenRefusal) -> EngineError {
        why.error("token")
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
    fn version_1_is_refused_as_too_old_and_other_versions_as_malformed() {
        let r = ring("k1");
        let msg = Sample { text: "round".into() };
        let v2 = r.seal(TokenKind::Round, &msg).unwrap();
        assert_eq!(v2[0], 2);
        assert_eq!(r.open::<Sample>(TokenKind::Round, &v2).unwrap(), msg);
        // The version byte is authenticated: relabelling the token fails, and a version-1
        // token is recognised (no key needed) and refused as older than the support window.
        for (version, want) in [
            (1u8, TokenRefusal::TooOld(Age::Format("in format version 1"))),
            (0, TokenRefusal::Malformed),
            (3, TokenRefusal::Malformed),
            (0xff, TokenRefusal::Malformed),
        ] {
            let mut relabelled = v2.clone();
            relabelled[0] = version;
            assert_eq!(r.open_checked::<Sample>(TokenKind::Round, &relabelled), Err(want), "version {version}");
        }
        let too_old = TokenRefusal::TooOld(Age::Format("in format version 1")).error("round_token");
        assert_eq!(
            too_old.to_string(),
            "round_token: sealed in format version 1: this engine reads only tokens of the last 30 days"
        );
    }

    #[test]
    fn a_token_is_accepted_for_exactly_the_support_window_after_its_issue() {
        let day = 24 * 60 * 60 * 1000;
        for issued in [1_800_000_000_000i64, UNDATED_ISSUED_AT_MS + 1, 0, 1] {
            let at = if issued == 0 { UNDATED_ISSUED_AT_MS } else { issued };
            for (now, ok) in [
                (at - day, true), // a replica whose clock is behind the issuer's
                (at, true),
                (at + SUPPORT_WINDOW_MS - 1, true),
                (at + SUPPORT_WINDOW_MS, true),
                (at + SUPPORT_WINDOW_MS + 1, false),
                (i64::MAX, false),
            ] {
                let got = check_age(issued, now);
                assert_eq!(got.is_ok(), ok, "issued {issued}, now {now}: {got:?}");
                if !ok {
                    assert_eq!(got, Err(TokenRefusal::TooOld(Age::IssuedAt(at))));
                }
            }
        }
        let text = TokenRefusal::TooOld(Age::IssuedAt(1_800_000_000_000)).error("commitment_token").to_string();
        assert_eq!(text, "commitment_token: issued at 2027-01-15T08:00:00Z, more than the 30-day support window ago");
    }

    #[test]
    fn the_version_2_keys_are_the_hkdf_subkeys_not_the_ring_key() {
        // Recompute a version-2 token independently from the documented derivation.
        let ring_key = [0x11u8; 32];
        let r = ring("k1");
        let msg = Sample { text: "hkdf".into() };
        let token = r.seal(TokenKind::Commitment, &msg).unwrap();
        let hk = Hkdf::<Sha256>::new(Some(b"reddog/token/v2"), &ring_key);
        let (mut aead_key, mut nonce_key) = ([0u8; 32], [0u8; 32]);
        hk.expand(b"reddog/token/v2/aead", &mut aead_key).unwrap();
        hk.expand(b"reddog/token/v2/nonce", &mut nonce_key).unwrap();
        let head = [2u8, b'c', 2, b'k', b'1'];
        let plain = msg.encode_to_vec();
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&nonce_key).unwrap();
        mac.update(&head);
        mac.update(&plain);
        let nonce = mac.finalize().into_bytes();
        let cipher = Aes256GcmSiv::new(&aes_gcm_siv::Key::<Aes256GcmSiv>::from(aead_key));
        let mut body = plain.clone();
        let n = aes_gcm_siv::Nonce::try_from(&nonce[..12]).unwrap();
        let tag = cipher.encrypt_inout_detached(&n, &head, body.as_mut_slice().into()).unwrap();
        let expected = [&head[..], &nonce[..12], &body, tag.as_slice()].concat();
        assert_eq!(token, expected);
        // Keyed directly by the ring key, the same layout does not open.
        let raw = Aes256GcmSiv::new(&aes_gcm_siv::Key::<Aes256GcmSiv>::from(ring_key));
        let mut again = token[5 + 12..token.len() - 16].to_vec();
        let t = aes_gcm_siv::Tag::try_from(&token[token.len() - 16..]).unwrap();
        assert!(raw.decrypt_inout_detached(&n, &head, again.as_mut_slice().into(), &t).is_err());
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

    #[test]
    fn a_ring_without_a_signing_key_has_no_signer() {
        assert!(ring("k1").signer().is_none());
        assert!(KeyRing::development().unwrap().signer().is_none());
    }

    #[test]
    fn a_ring_with_a_signing_key_signs_under_its_id() {
        let secret = "5a".repeat(32);
        let json = format!(
            r#"{{"primary":"k0","keys":{{"k0":"{}"}},"signing":{{"id":"s1","secret":"{secret}"}}}}"#,
            "22".repeat(32)
        );
        let ring = KeyRing::from_json(&json).unwrap();
        let signer = ring.signer().expect("the ring has a signing key");
        assert_eq!(signer.id(), "s1");
        assert!(!format!("{ring:?}").contains(&secret), "Debug shows no secret");
        assert!(format!("{ring:?}").contains(&signer.public_key_hex()));
    }

    /// Each malformed or contradictory ring is refused naming its field, never echoing a secret.
    #[test]
    fn malformed_signing_entries_and_repeated_fields_name_the_field() {
        let (k, s) = ("22".repeat(32), "5a".repeat(32));
        let cases = [
            (format!(r#"{{"primary":"k0","primary":"k0","keys":{{"k0":"{k}"}}}}"#), "key_ring.primary", "twice"),
            (
                format!(r#"{{"primary":"k0","keys":{{"k0":"{k}"}},"signing":{{"id":"s1","secret":12345}}}}"#),
                "key_ring.signing.secret",
                "string",
            ),
            (
                format!(r#"{{"primary":"k0","keys":{{"k0":"{k}"}},"signing":{{"secret":"{s}"}}}}"#),
                "key_ring.signing.id",
                "missing",
            ),
            (
                format!(r#"{{"primary":"k0","keys":{{"k0":"{k}"}},"signing":{{"id":"s1","secret":"{s}","x":1}}}}"#),
                "key_ring.signing.x",
                "unknown field",
            ),
            (
                format!(r#"{{"primary":"k0","keys":{{"k0":"{k}"}},"signing":{{"id":"s1","secret":"{k}"}}}}"#),
                "key_ring.signing.secret",
                "also a token key",
            ),
            (
                format!(r#"{{"primary":"k0","keys":{{"k0":"{k}"}},"signing":{{"id":"k0","secret":"{s}"}}}}"#),
                "key_ring.signing.id",
                "also a token key's id",
            ),
            (format!(r#"{{"primary":"k0","keys":{{"k0":"{k}"}},"signing":null}}"#), "key_ring.signing", "absent"),
            (
                format!(r#"{{"primary":"k0","keys":{{"k0":"{k}"}},"signing":{{"id":"s1","id":"s2","secret":"{s}"}}}}"#),
                "key_ring.signing.id",
                "twice",
            ),
        ];
        for (json, field, says) in cases {
            let err = KeyRing::from_json(&json).err().unwrap_or_else(|| panic!("accepted: {json}"));
            let text = format!("{err} {err:?}");
            assert!(text.contains(field) && text.contains(says), "{json}: {text}");
            assert!(!text.contains(&k) && !text.contains(&s) && !text.contains("12345"), "{text}");
        }
        let good = format!(r#"{{"primary":"k0","keys":{{"k0":"{k}"}},"signing":{{"id":"s1","secret":"{s}"}}}}"#);
        assert!(KeyRing::from_json(&good).is_ok());
    }

    #[test]
    fn a_bad_signing_secret_is_refused_naming_the_field_not_the_secret() {
        let secret = format!("{}xy", "5a".repeat(31));
        let json = format!(
            r#"{{"primary":"k0","keys":{{"k0":"{}"}},"signing":{{"id":"s1","secret":"{secret}"}}}}"#,
            "22".repeat(32)
        );
        let err = KeyRing::from_json(&json).unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(text.contains("key_ring.signing.secret"), "{text}");
        assert!(!text.contains(&"5a".repeat(31)), "{text}");
    }
}
