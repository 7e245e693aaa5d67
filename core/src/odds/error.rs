//! What can go wrong in the odds: a shoe that cannot be analysed, a policy that is not
//! one, sums too large for exact arithmetic. Each variant carries the values that show it.

use super::MAX_RANK_COUNT;
use crate::game::Spread;

/// An error of the odds calculator or of a policy's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OddsError {
    /// A shoe with more than [`MAX_RANK_COUNT`] cards of one rank (`rank` 0 for twos, …, 12
    /// for aces).
    #[error("counts[{rank}]: {count} cards of one rank is outside 0..={MAX_RANK_COUNT}")]
    RankCountOutOfRange { rank: usize, count: u32 },

    /// A shoe of fewer than three cards: no round can be dealt from it.
    #[error("counts: a shoe of {cards} card(s) cannot deal a round; it needs at least 3")]
    ShoeTooSmall { cards: u32 },

    /// Text that names no policy.
    #[error("policy: {text:?} is not one of optimal, worst, never, always, raise-at-least:K (K 1..={max})", max = Spread::MAX)]
    UnknownPolicy { text: String },

    /// `raise-at-least:K` whose K is not a whole number.
    #[error("policy: {text:?}: K must be a whole number 1..={max}", max = Spread::MAX)]
    RaiseThresholdNotANumber { text: String },

    /// `raise-at-least:0`: a threshold below the smallest spread.
    #[error("policy: {text:?}: K must be 1..={max}", max = Spread::MAX)]
    RaiseThresholdZero { text: String },

    /// `raise-at-least:K` with K above the largest spread: it would never raise while
    /// saying otherwise.
    #[error(
        "policy: {text:?} would never raise: the largest spread is {max}, so K must be 1..={max} (say `never` to \
         never raise)",
        max = Spread::MAX
    )]
    RaiseThresholdNeverRaises { text: String },

    /// A round's stakes too large for exact arithmetic (unreachable at a valid table).
    #[error("amount overflow: {what}")]
    AmountOverflow { what: &'static str },
}
