//! The deal: key derivation, the ChaCha20 word stream, unbiased bounded integers and the
//! forward Fisher–Yates shuffle (`docs/FAIRNESS.md`, sections "Derivation" and "Shuffle").

use hmac::{Hmac, KeyInit, Mac};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::Sha256;

use super::seed::ServerSeed;
use crate::game::{Card, CardSource, Decks, Shoe};

/// The version number of the deal algorithm; bound into the derived key.
pub const ALGORITHM_VERSION: u32 = 1;
/// The algorithm's name as it appears in reveals.
pub const ALGORITHM: &str = "reddog-deal-v1";
/// Domain-separation tag, the first field of the HMAC message.
const DOMAIN: &[u8] = b"reddog/deal";

/// Everything the deal is a function of.
#[derive(Clone, Copy, Debug)]
pub struct DealInputs<'a> {
    pub server_seed: &'a ServerSeed,
    /// The player's client seed, as UTF-8 bytes.
    pub client_seed: &'a [u8],
    pub nonce: u64,
    pub decks: Decks,
}

/// HMAC-SHA256 keyed by the server seed over the length-prefixed fields
/// `DOMAIN, version (u32 BE), client seed, nonce (u64 BE), decks (u8)`, each preceded by its
/// length as a u32 big-endian.
pub fn derive_key(inputs: &DealInputs<'_>) -> [u8; 32] {
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(inputs.server_seed.expose()).expect("HMAC takes keys of any length");
    for field in [
        DOMAIN,
        &ALGORITHM_VERSION.to_be_bytes(),
        inputs.client_seed,
        &inputs.nonce.to_be_bytes(),
        &[inputs.decks.get()],
    ] {
        let len = u32::try_from(field.len()).unwrap_or(u32::MAX);
        mac.update(&len.to_be_bytes());
        mac.update(field);
    }
    mac.finalize().into_bytes().into()
}

/// The provably fair shoe: a forward Fisher–Yates over the unshuffled shoe, driven by the
/// ChaCha20 keystream under the derived key. Deals only as many cards as are drawn.
pub struct FairShoe {
    shoe: Shoe,
    rng: ChaCha20Rng,
}

impl FairShoe {
    pub fn new(inputs: &DealInputs<'_>) -> FairShoe {
        FairShoe { shoe: Shoe::new(inputs.decks), rng: ChaCha20Rng::from_seed(derive_key(inputs)) }
    }

    /// The next card, or `None` once the whole shoe is dealt.
    pub fn next_card(&mut self) -> Option<Card> {
        let rng = &mut self.rng;
        self.shoe.draw_with(|bound| uniform_below(rng, bound))
    }
}

impl CardSource for FairShoe {
    /// A round draws at most three cards from a shoe of at least 52, so the shoe is never
    /// exhausted here; if it were, the draw would repeat the two of clubs rather than panic.
    fn draw(&mut self) -> Card {
        self.next_card().unwrap_or(Card::from_code(0).unwrap_or_else(|| unreachable!()))
    }
}

/// A uniform integer in `0..bound` (`bound >= 1`) by rejection: draw 32-bit little-endian
/// words `x` from the keystream, reject `x >= 2^32 - (2^32 mod bound)`, return `x mod bound`.
fn uniform_below(rng: &mut ChaCha20Rng, bound: u32) -> u32 {
    let zone = u32::MAX - (u32::MAX - bound + 1) % bound; // largest accepted word
    loop {
        let x = rng.next_u32();
        if x <= zone {
            return x % bound;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chacha20_with_zero_key_is_the_rfc_8439_keystream() {
        let mut rng = ChaCha20Rng::from_seed([0; 32]);
        let mut bytes = [0u8; 8];
        rng.fill_bytes(&mut bytes);
        assert_eq!(hex::encode(bytes), "76b8e0ada0f13d90");
    }

    #[test]
    fn rejection_zone_accepts_exactly_a_multiple_of_the_bound() {
        for bound in [1u32, 2, 3, 52, 416, 1 << 31] {
            let zone = u64::from(u32::MAX - (u32::MAX - bound + 1) % bound) + 1;
            assert_eq!(zone % u64::from(bound), 0, "bound {bound}");
            assert!((1u64 << 32) - zone < u64::from(bound));
        }
    }

    #[test]
    fn the_same_inputs_deal_the_same_shoe_and_a_different_nonce_does_not() {
        let seed = ServerSeed::from_bytes([7; 32]);
        let deal = |nonce| {
            let mut shoe =
                FairShoe::new(&DealInputs { server_seed: &seed, client_seed: b"x", nonce, decks: Decks::ONE });
            (0..52).map(|_| shoe.draw().code()).collect::<Vec<_>>()
        };
        assert_eq!(deal(1), deal(1));
        assert_ne!(deal(1), deal(2));
        let mut sorted = deal(1);
        sorted.sort();
        assert_eq!(sorted, (0..52).collect::<Vec<u8>>());
    }
}
