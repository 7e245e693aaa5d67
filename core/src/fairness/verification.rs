//! One verdict on a disputed round: the reveal's checks (4.5), the player's record, and —
//! with the engine's public key — its `Settle` signature, the player's receipts and whether
//! the key is one the player trusts (`docs/FAIRNESS.md` 4.7). `reddog verify`, `reddog
//! audit-log --reveal` and certification render a [`Verification`]; none composes a verdict
//! of its own, so "verified" means the same everywhere and appears only when something was
//! checked and held.

use sha2::{Digest, Sha256};

use super::grammar::{Expectations, Mismatch};
use super::receipt::{self, PlayerReceipt, ReceiptCheck};
use super::reveal::{AnyReveal, Verdict};
use super::{FairnessError, parse_reveal};

/// A key the player trusts, got outside the platform (a certification report, the operator).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustedKey {
    pub key_id: String,
    pub public_key: [u8; 32],
}

/// A trusted-keys file: a JSON array of `{key_id, algorithm: "ed25519", public_key_hex}`, or
/// an object whose `signing_keys` is one (as `GetRules` lists them); the error names what is
/// wrong.
pub fn parse_trusted_keys(text: &str) -> Result<Vec<TrustedKey>, String> {
    let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let list = doc.get("signing_keys").unwrap_or(&doc);
    let bad = || "an array of {key_id, algorithm: \"ed25519\", public_key_hex}".to_string();
    list.as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|k| {
            let o = k.as_object().filter(|o| o.len() == 3).ok_or_else(bad)?;
            let (Some(id), Some("ed25519"), Some(hex_key)) = (
                o.get("key_id").and_then(|v| v.as_str()),
                o.get("algorithm").and_then(|v| v.as_str()),
                o.get("public_key_hex").and_then(|v| v.as_str()),
            ) else {
                return Err(bad());
            };
            let mut public_key = [0u8; 32];
            hex::decode_to_slice(hex_key, &mut public_key)
                .map_err(|_| format!("key {id:?}: public_key_hex is 64 hexadecimal digits"))?;
            Ok(TrustedKey { key_id: id.to_string(), public_key })
        })
        .collect()
}

/// What the player checks with the engine's public key.
#[derive(Clone, Debug)]
pub struct SignedEvidence {
    /// The public key the signatures are checked with.
    pub public_key: [u8; 32],
    /// The key id the player was told (`SettleResponse.signing_key_id`), if given.
    pub key_id: Option<String>,
    /// `Settle`'s signature over the reveal's exact bytes.
    pub settle_signature: Option<[u8; 64]>,
    /// The receipts the player kept, each with a name for the report (its file).
    pub receipts: Vec<(String, PlayerReceipt)>,
    /// The keys the player trusts (`None`: no list given).
    pub trusted: Option<Vec<TrustedKey>>,
    /// Accept a key that is not among the trusted ones (it then proves only that the key the
    /// platform named signed).
    pub allow_untrusted: bool,
}

/// Whether the public key is one the player trusts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyTrust {
    /// In the trusted keys, under this id.
    Trusted { key_id: String },
    /// Not in the trusted keys (`listed`: a list was given).
    Untrusted { listed: bool },
}

/// The checks made with the public key.
#[derive(Clone, Debug)]
pub struct SignedChecks {
    pub public_key: [u8; 32],
    /// SHA-256 of the public key: what a player compares with the published fingerprint.
    pub fingerprint: [u8; 32],
    /// With a `Settle` signature: the receipt version it verified as (`Some(None)`: it did
    /// not verify).
    pub settle: Option<Option<u8>>,
    /// Each receipt, by its name.
    pub receipts: Vec<(String, ReceiptCheck)>,
    /// The key ids that disagree, if any: a signed id against another signed id, the
    /// trusted entry's id or `--key-id`.
    pub key_id_conflict: Option<String>,
    pub trust: KeyTrust,
    pub allow_untrusted: bool,
    /// The key id the signatures are under (signed in version 2), when known.
    pub key_id: Option<String>,
}

/// A reveal checked: every check, and the one verdict.
#[derive(Clone, Debug)]
pub struct Verification {
    pub reveal: AnyReveal,
    pub verdict: Verdict,
    pub mismatches: Vec<Mismatch>,
    pub signed: Option<SignedChecks>,
    /// The player's record gave the last transcript shown.
    pub expected_transcript: bool,
}

impl Verification {
    /// Checks the reveal `text` (the exact bytes a `Settle` signature covers, one trailing
    /// line feed aside) against the player's record and, when given, the signed evidence. A
    /// malformed reveal is an error (exit status 2), never a verdict.
    pub fn check(
        text: &str,
        expect: &Expectations,
        evidence: Option<&SignedEvidence>,
    ) -> Result<Verification, FairnessError> {
        let reveal = parse_reveal(text)?;
        let verdict = reveal.verify()?;
        let mismatches = expect.check(&reveal);
        let signed = evidence.map(|e| signed_checks(e, &reveal, &verdict, text));
        Ok(Verification { reveal, verdict, mismatches, signed, expected_transcript: expect.transcript.is_some() })
    }

    /// Why the round is not verified, one sentence each; empty when it is.
    pub fn failures(&self) -> Vec<String> {
        let v = &self.verdict;
        let mut why: Vec<String> = Vec::new();
        let mut say = |cond: bool, text: &str| {
            if cond {
                why.push(text.to_string());
            }
        };
        say(!v.commitment_ok, "the commitment is not SHA-256 of the server seed");
        say(!v.cards_ok, "the revealed cards differ from the cards the inputs deal");
        say(v.payouts_ok == Some(false), "a seat's raise, stake or return is not what the rules pay");
        say(v.transcript_ok == Some(false), "the transcript is not the hash of the round's inputs and decisions");
        say(
            v.rules_ok == Some(false),
            "the rules digest is not the hash of the table's rules, or a bet is outside the limits",
        );
        say(!self.mismatches.is_empty(), "the reveal differs from the player's record of the round");
        let Some(s) = &self.signed else { return why };
        if s.settle == Some(None) {
            why.push(if s.key_id.is_none() {
                "the engine's signature does not cover this reveal as a version-1 Settle receipt, and no key id is \
                 known to check it as version 2 (give --key-id: Settle's signing_key_id)"
                    .into()
            } else {
                "the engine's signature does not cover this reveal (another reveal, or another key)".into()
            });
        }
        for (name, r) in &s.receipts {
            if !r.signed {
                why.push(format!("receipt {name} is not signed by this key"));
            } else if let Some(card) = r.hidden_card {
                why.push(format!(
                    "receipt {name} names {card}, a card the table had not shown at that step: the engine that \
                     signed it leaked the face-down card"
                ));
            } else if r.sandbox {
                why.push(format!("receipt {name} is of a sandbox round: its cards were requested, not dealt fair"));
            } else if !r.descends {
                why.push(format!("the reveal does not descend from receipt {name} (another round or branch)"));
            }
        }
        if let Some(conflict) = &s.key_id_conflict {
            why.push(conflict.clone());
        }
        match (&s.trust, s.allow_untrusted) {
            (KeyTrust::Untrusted { listed: true }, false) => why.push(
                "the key is not among your --trusted-keys: it proves only that whoever the platform named signed \
                 (--allow-untrusted accepts that)"
                    .into(),
            ),
            (KeyTrust::Untrusted { listed: false }, false) => why.push(
                "no --trusted-keys given: a key the platform named proves only that it signed (give the keys you \
                 got from the operator or a certification report, or --allow-untrusted)"
                    .into(),
            ),
            _ => {}
        }
        why
    }

    /// Verified: every check made held (and at least the reveal's own were made).
    pub fn verified(&self) -> bool {
        self.failures().is_empty()
    }

    /// What a verified answer does not prove, and which old formats were read.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let Some(s) = &self.signed else { return notes };
        if s.settle == Some(Some(1)) {
            notes.push("the Settle signature is version 1: the key id is not inside what it signs".to_string());
        }
        for (name, r) in &s.receipts {
            if r.version == 1 {
                notes.push(format!(
                    "receipt {name} is version 1: its key id (and a step's table, rules and sandbox flag) is not \
                     signed"
                ));
            }
        }
        if matches!(s.trust, KeyTrust::Untrusted { .. }) && s.allow_untrusted {
            notes.push(
                "--allow-untrusted: the key is not one you trust; the signatures prove only that the key the \
                 platform named signed"
                    .to_string(),
            );
        }
        if s.settle == Some(Some(2)) || s.settle == Some(Some(1)) {
            let has_step = s.receipts.iter().any(|(_, r)| r.name.starts_with("step"));
            if !has_step && self.mismatches.is_empty() && !self.expects_transcript() {
                notes.push(
                    "the signature proves the key's holder produced this reveal, not that it is the round played: give \
                     the last --receipt or --expect-transcript for that"
                        .to_string(),
                );
            }
        }
        notes
    }

    fn expects_transcript(&self) -> bool {
        self.expected_transcript
    }

    /// The exit status of every verifier: 0 verified, 1 not verified (a malformed reveal is
    /// 2, before any `Verification` exists).
    pub fn exit_status(&self) -> u8 {
        if self.verified() { 0 } else { 1 }
    }
}

/// Every check with the public key.
fn signed_checks(e: &SignedEvidence, reveal: &AnyReveal, verdict: &Verdict, text: &str) -> SignedChecks {
    let receipts: Vec<(String, ReceiptCheck)> = e
        .receipts
        .iter()
        .map(|(name, r)| {
            let check = match reveal {
                AnyReveal::V1(_) => ReceiptCheck {
                    name: "receipt (a version-1 reveal has no transcript: nothing descends from a receipt)".into(),
                    version: r.version(),
                    key_id: None,
                    signed: false,
                    descends: false,
                    hidden_card: None,
                    sandbox: false,
                },
                AnyReveal::V2(v) => r.check(&e.public_key, v, &verdict.chain),
            };
            (format!("{} of {name}", check.name), check)
        })
        .collect();
    let trusted_entry =
        e.trusted.as_ref().map(|list| list.iter().filter(|k| k.public_key == e.public_key).collect::<Vec<_>>());
    // The key id the Settle receipt is signed under: the player's, else a signed receipt's,
    // else the trusted entry's.
    let signed_ids: Vec<&str> =
        receipts.iter().filter(|(_, r)| r.signed).filter_map(|(_, r)| r.key_id.as_deref()).collect();
    let key_id: Option<String> = e
        .key_id
        .clone()
        .or_else(|| signed_ids.first().map(|s| s.to_string()))
        .or_else(|| trusted_entry.as_ref().and_then(|t| t.first()).map(|k| k.key_id.clone()));
    let settle = e.settle_signature.map(|sig| match reveal {
        AnyReveal::V1(_) => None,
        AnyReveal::V2(v) => {
            let mut transcript = [0u8; 32];
            if hex::decode_to_slice(&v.transcript, &mut transcript).is_err() {
                return None;
            }
            receipt::verify_settle(
                &e.public_key,
                &sig,
                key_id.as_deref(),
                &transcript,
                receipt::reveal_bytes(text.as_bytes()),
            )
        }
    });
    let mut ids: Vec<(&str, String)> =
        signed_ids.iter().map(|id| ("a receipt is signed as key id", id.to_string())).collect();
    if settle == Some(Some(2))
        && let Some(id) = &key_id
    {
        ids.push(("the Settle signature is under key id", id.clone()));
    }
    if let Some(id) = &e.key_id {
        ids.push(("--key-id is", id.clone()));
    }
    let mut key_id_conflict = ids
        .windows(2)
        .find(|w| w[0].1 != w[1].1)
        .map(|w| format!("the key ids disagree: {} {:?}, {} {:?}", w[0].0, w[0].1, w[1].0, w[1].1));
    let trust = match &trusted_entry {
        None => KeyTrust::Untrusted { listed: false },
        Some(entries) if entries.is_empty() => KeyTrust::Untrusted { listed: true },
        Some(entries) => {
            let entry = ids.first().and_then(|(_, id)| entries.iter().find(|k| &k.key_id == id)).unwrap_or(&entries[0]);
            if key_id_conflict.is_none()
                && let Some((what, id)) = ids.first()
                && *id != entry.key_id
            {
                key_id_conflict = Some(format!(
                    "your trusted keys list this public key as key id {:?}, but {what} {id:?}",
                    entry.key_id
                ));
            }
            KeyTrust::Trusted { key_id: entry.key_id.clone() }
        }
    };
    SignedChecks {
        public_key: e.public_key,
        fingerprint: Sha256::digest(e.public_key).into(),
        settle,
        receipts,
        key_id_conflict,
        trust,
        allow_untrusted: e.allow_untrusted,
        key_id,
    }
}
