//! Provably fair randomness: committed server seeds and the deal as a pure function of
//! (server seed, client seed, nonce, deck count, algorithm version). `docs/FAIRNESS.md` is
//! the byte-exact specification; this module is its reference implementation.
//!
//! [`transcript`] chains a round's steps into one hash; [`RevealV2`] proves a settled round's
//! cards, money and transcript.
//!
//! Nothing here knows about the transport or an async runtime. Secrets (`ServerSeed`) never print: their
//! `Debug` is redacted and they are zeroized on drop.

pub mod commitment;
mod error;
pub mod grammar;
pub mod receipt;
mod reveal;
pub mod rules;
mod seed;
mod shuffle;
pub mod transcript;
pub mod verification;

pub use commitment::{BindingError, BoundField};
pub use error::FairnessError;
pub use grammar::{
    Expectations, Mismatch, SANDBOX_REVEAL_FORMAT, parse as parse_reveal, text_amounts, text_decisions, text_int,
};
pub use reveal::{
    AnyReveal, REVEAL_V2, REVEAL_V3, RevealCurrency, RevealDecision, RevealLimits, RevealSeat, RevealV1, RevealV2,
    SettledRound, Verdict, action_text, verify_v1, verify_v2,
};
pub use rules::{RulesDigest, TableRules};
pub use seed::{Commitment, ServerSeed};
pub use shuffle::{ALGORITHM, ALGORITHM_VERSION, DealInputs, DealStream, FairShoe, derive_key};
pub use transcript::{StartInputs, Transcript};
pub use verification::{KeyTrust, SignedChecks, SignedEvidence, TrustedKey, Verification, parse_trusted_keys};
