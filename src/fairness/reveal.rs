//! What a settled round reveals, and its verification: SHA-256(seed) = commitment, and the
//! cards recomputed from the inputs equal the cards the round dealt.

use serde::{Deserialize, Serialize};

use super::seed::ServerSeed;
use super::shuffle::{ALGORITHM, DealInputs, FairShoe};
use crate::error::EngineError;
use crate::game::{Card, Decks};

/// A settled round's reveal, as JSON: everything needed to recompute its cards.
///
/// ```json
/// {"algorithm":"reddog-deal-v1","server_seed":"<64 hex>","commitment":"<64 hex>",
///  "client_seed":"player text","nonce":0,"decks":1,"cards":["Ah","Tc","5d"],"round_id":"r-1"}
/// ```
/// `cards` are the cards the round dealt, in order: the first cards of the shuffled shoe.
/// `round_id` is the platform's correlation id; it is not an input to the deal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reveal {
    pub algorithm: String,
    pub server_seed: String,
    pub commitment: String,
    pub client_seed: String,
    pub nonce: u64,
    pub decks: u8,
    pub cards: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_id: Option<String>,
}

impl Reveal {
    /// The reveal of a round dealt from these inputs.
    pub fn new(inputs: &DealInputs<'_>, client_seed: &str, cards: &[Card], round_id: Option<String>) -> Reveal {
        Reveal {
            algorithm: ALGORITHM.to_string(),
            server_seed: inputs.server_seed.reveal_hex(),
            commitment: inputs.server_seed.commitment().to_hex(),
            client_seed: client_seed.to_string(),
            nonce: inputs.nonce,
            decks: inputs.decks.get(),
            cards: cards.iter().map(|c| c.text().to_owned()).collect(),
            round_id,
        }
    }
}

/// The result of checking a reveal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// SHA-256(server seed) equals the commitment.
    pub commitment_ok: bool,
    /// The first cards of the recomputed shoe, as many as the reveal lists.
    pub recomputed: Vec<Card>,
    /// The recomputed cards equal the revealed ones.
    pub cards_ok: bool,
}

impl Verdict {
    pub fn ok(&self) -> bool {
        self.commitment_ok && self.cards_ok
    }
}

fn hex32(field: &'static str, s: &str) -> Result<[u8; 32], EngineError> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(s.trim(), &mut out)
        .map_err(|_| EngineError::invalid(field, "must be 64 hexadecimal characters"))?;
    Ok(out)
}

/// Checks a reveal. A malformed reveal (bad hex, unknown algorithm, bad deck count, a card
/// that is not a card) is an error; a well-formed one that does not verify is a verdict.
pub fn verify(reveal: &Reveal) -> Result<Verdict, EngineError> {
    if reveal.algorithm != ALGORITHM {
        return Err(EngineError::invalid("algorithm", format!("unknown algorithm, expected {ALGORITHM}")));
    }
    let seed = ServerSeed::from_bytes(hex32("server_seed", &reveal.server_seed)?);
    let commitment = hex32("commitment", &reveal.commitment)?;
    let decks = Decks::new(u32::from(reveal.decks))?;
    let claimed = reveal
        .cards
        .iter()
        .map(|c| c.parse::<Card>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| EngineError::invalid("cards", "every card must look like \"Ah\" or \"Tc\""))?;
    if claimed.is_empty() {
        return Err(EngineError::invalid("cards", "must list the cards the round dealt (at least one)"));
    }
    if u32::try_from(reveal.client_seed.len()).is_err() {
        return Err(EngineError::out_of_range("client_seed", reveal.client_seed.len(), 0, u64::from(u32::MAX)));
    }
    if claimed.len() > decks.cards() {
        return Err(EngineError::out_of_range("cards", claimed.len(), 0, decks.cards() as u64));
    }
    let inputs =
        DealInputs { server_seed: &seed, client_seed: reveal.client_seed.as_bytes(), nonce: reveal.nonce, decks };
    let recomputed = FairShoe::deal(&inputs, claimed.len());
    Ok(Verdict { commitment_ok: seed.commitment().0 == commitment, cards_ok: recomputed == claimed, recomputed })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::CardSource;

    fn sample() -> Reveal {
        let seed = ServerSeed::from_bytes([9; 32]);
        let inputs = DealInputs { server_seed: &seed, client_seed: "grüße".as_bytes(), nonce: 42, decks: Decks::ONE };
        let mut shoe = FairShoe::new(&inputs);
        let cards: Vec<Card> = (0..3).map(|_| shoe.draw()).collect();
        Reveal::new(&inputs, "grüße", &cards, Some("r-1".into()))
    }

    #[test]
    fn a_genuine_reveal_verifies_after_a_json_round_trip() {
        let json = serde_json::to_string(&sample()).unwrap();
        let back: Reveal = serde_json::from_str(&json).unwrap();
        assert!(verify(&back).unwrap().ok());
    }

    #[test]
    fn a_changed_card_or_commitment_fails() {
        let mut r = sample();
        r.cards[2] = if r.cards[2] == "2c" { "3c".into() } else { "2c".into() };
        let v = verify(&r).unwrap();
        assert!(v.commitment_ok && !v.cards_ok);
        let mut r = sample();
        r.commitment = "00".repeat(32);
        assert!(!verify(&r).unwrap().commitment_ok);
        let mut r = sample();
        r.nonce += 1;
        assert!(!verify(&r).unwrap().cards_ok);
    }

    #[test]
    fn malformed_reveals_are_errors_naming_the_field() {
        let mut r = sample();
        r.server_seed = "xyz".into();
        assert_eq!(verify(&r).unwrap_err().field(), Some("server_seed"));
        let mut r = sample();
        r.decks = 9;
        assert_eq!(verify(&r).unwrap_err().field(), Some("decks"));
        let mut r = sample();
        r.cards.clear();
        assert_eq!(verify(&r).unwrap_err().field(), Some("cards"));
        let mut r = sample();
        r.cards[0] = "Zz".into();
        assert_eq!(verify(&r).unwrap_err().field(), Some("cards"));
    }
}
