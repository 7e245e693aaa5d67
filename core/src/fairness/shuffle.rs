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

/// The deal key: HMAC-SHA256 (RFC 2104) keyed by the 32 server-seed bytes, over the message
///
/// ```text
/// len(F1) F1 len(F2) F2 len(F3) F3 len(F4) F4 len(F5) F5      len(F) = u32 big-endian byte count
/// F1 = "reddog/deal" (11 ASCII bytes)   F2 = ALGORITHM_VERSION as u32 big-endian (4 bytes)
/// F3 = client seed bytes (0..2^32-1)    F4 = nonce as u64 big-endian (8 bytes)
/// F5 = deck count as one byte (1..=8)
/// ```
///
/// Every field carries its length, so no two distinct inputs give the same message. A client
/// seed of 2^32 bytes or more cannot be encoded; [`verify`](super::verify) rejects it.
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

/// The deal's word stream: the ChaCha20 keystream of RFC 8439 under the derived key, with an
/// all-zero nonce and the block counter starting at 0, read as consecutive 32-bit
/// little-endian words (word `k` is keystream bytes `4k..4k+4`).
///
/// `rand_chacha`'s `ChaCha20Rng::from_seed(key)` produces exactly this stream for the first
/// 2^32 blocks (256 GiB), far more than any deal or test reads.
pub struct DealStream(ChaCha20Rng);

impl DealStream {
    /// The stream of the deal with these inputs, from its first word.
    pub fn new(inputs: &DealInputs<'_>) -> DealStream {
        DealStream::from_key(derive_key(inputs))
    }

    /// The stream under an already derived key.
    pub fn from_key(key: [u8; 32]) -> DealStream {
        DealStream(ChaCha20Rng::from_seed(key))
    }

    /// The next 32-bit word.
    pub fn next_word(&mut self) -> u32 {
        self.0.next_u32()
    }

    /// The next `out.len()` keystream bytes. Call only with lengths that are multiples of
    /// four if words will be read afterwards (a partial word is discarded).
    pub fn fill_bytes(&mut self, out: &mut [u8]) {
        self.0.fill_bytes(out);
    }

    /// A uniform integer in `0..bound` by rejection sampling, or `None` if `bound` is 0:
    /// draw words `x`, reject every `x >= 2^32 - (2^32 mod bound)`, return `x mod bound` of the
    /// first accepted word. The accepted range is a whole multiple of `bound`, so each result
    /// is exactly equally likely; a word is rejected with probability below `bound / 2^32`.
    pub fn uniform_below(&mut self, bound: u32) -> Option<u32> {
        if bound == 0 {
            return None;
        }
        let limit = (1u64 << 32) - (1u64 << 32) % u64::from(bound); // first rejected value
        loop {
            let x = self.next_word();
            if u64::from(x) < limit {
                return Some(x % bound);
            }
        }
    }
}

/// The provably fair shoe: a forward Fisher–Yates over the unshuffled shoe, driven by the
/// [`DealStream`] of the inputs. Deals only as many cards as are drawn; the `k`-th card drawn
/// is the card at position `k` of the fully shuffled shoe, whatever happens between draws.
pub struct FairShoe {
    shoe: Shoe,
    stream: DealStream,
}

impl FairShoe {
    pub fn new(inputs: &DealInputs<'_>) -> FairShoe {
        FairShoe { shoe: Shoe::new(inputs.decks), stream: DealStream::new(inputs) }
    }

    /// The next card, or `None` once the whole shoe is dealt.
    pub fn next_card(&mut self) -> Option<Card> {
        let stream = &mut self.stream;
        // The shoe never asks for a bound of 0, so the fallback is never used.
        self.shoe.draw_with(|bound| stream.uniform_below(bound).unwrap_or(0))
    }

    /// The first `count` cards of the shuffled shoe (fewer if the shoe is smaller).
    pub fn deal(inputs: &DealInputs<'_>, count: usize) -> Vec<Card> {
        let mut shoe = FairShoe::new(inputs);
        std::iter::from_fn(|| shoe.next_card()).take(count).collect()
    }
}

impl CardSource for FairShoe {
    /// A round draws at most three cards from a shoe of at least 52, so the shoe is never
    /// exhausted here; if it were, the draw would repeat the two of clubs rather than panic.
    fn draw(&mut self) -> Card {
        self.next_card().unwrap_or(Card::from_code(0).unwrap_or_else(|| unreachable!()))
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
    fn uniform_below_returns_the_first_word_under_the_limit_reduced_modulo_the_bound() {
        // For bound 2^31 + 1 the first rejected word is 2^31 + 1, so just under half are rejected.
        let bound = (1u32 << 31) + 1;
        let mut words = DealStream::from_key([3; 32]);
        let mut draws = DealStream::from_key([3; 32]);
        let mut rejected = 0;
        for _ in 0..200 {
            let got = draws.uniform_below(bound).unwrap();
            let mut x = words.next_word();
            while x >= bound {
                rejected += 1;
                x = words.next_word();
            }
            assert_eq!(got, x % bound);
        }
        // Each draw rejects a geometric number of words with mean 1: about 200 in all.
        assert!((120..300).contains(&rejected), "{rejected} rejections");
        assert_eq!(draws.uniform_below(0), None);
        assert_eq!(draws.uniform_below(1), Some(0));
    }

    #[test]
    fn the_accepted_range_is_a_multiple_of_the_bound_and_loses_less_than_one_bound() {
        for bound in [1u64, 2, 3, 52, 365, 416, 1 << 31, (1 << 32) - 1] {
            let limit = (1u64 << 32) - (1u64 << 32) % bound;
            assert_eq!(limit % bound, 0, "bound {bound}");
            assert!((1u64 << 32) - limit < bound);
        }
    }

    #[test]
    fn stream_bytes_are_the_words_in_little_endian_order() {
        let mut bytes = [0u8; 80];
        DealStream::from_key([5; 32]).fill_bytes(&mut bytes);
        let mut words = DealStream::from_key([5; 32]);
        for chunk in bytes.chunks(4) {
            assert_eq!(u32::from_le_bytes(chunk.try_into().unwrap()), words.next_word());
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
