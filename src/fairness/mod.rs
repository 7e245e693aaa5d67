//! Provably fair randomness: committed server seeds and the deal as a pure function of
//! (server seed, client seed, nonce, deck count, algorithm version). `docs/FAIRNESS.md` is
//! the byte-exact specification; this module is its reference implementation.
//!
//! Nothing here knows about tonic or tokio. Secrets (`ServerSeed`) never print: their
//! `Debug` is redacted and they are zeroized on drop.

mod reveal;
mod seed;
mod shuffle;

pub use reveal::{Reveal, Verdict, verify};
pub use seed::{Commitment, ServerSeed};
pub use shuffle::{ALGORITHM, ALGORITHM_VERSION, DealInputs, DealStream, FairShoe, derive_key};
