//! What can go wrong in a round, and the errors of the cards, paytable and table it wraps
//! ([`CardError`], [`PaytableError`], [`TableError`]): each variant says what happened, with the values that
//! show it (the seat, the bet, the limits, the hand). No request field paths and no
//! protocol status codes: the service decides which field of which request an error is
//! about. None carries a secret (a seed or a face-down card) in its text.

use std::borrow::Cow;

use super::card::CardError;
use super::hand::HandClass;
use super::money::Money;
use super::paytable::PaytableError;
use super::table::{BetLimits, LimitsError, MAX_SEATS, TableError};

/// An error of the game's rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GameError {
    /// A round needs 1 to [`MAX_SEATS`] seats.
    #[error("a round has 1 to {MAX_SEATS} seats, not {seats}")]
    SeatCount { seats: usize },

    /// A seat's original bet lies outside the limits of the round (table and player).
    #[error("seat {seat}: the bet {bet} is outside the limits {min}..={max}", bet = bet.0, min = limits.min().0, max = limits.max().0)]
    BetOutsideLimits { seat: usize, bet: Money, limits: BetLimits },

    /// A decision for a seat the round does not have.
    #[error("the round has {seats} seat(s), so seat {seat} does not exist")]
    UnknownSeat { seat: usize, seats: usize },

    /// The seat has already decided in this round.
    #[error("seat {seat} has already decided")]
    SeatAlreadyDecided { seat: usize },

    /// The same seat appears twice in one set of decisions.
    #[error("seat {seat} appears twice in one call")]
    SeatTwice { seat: usize },

    /// A decision on a pair or a consecutive hand, where no one may raise or stand.
    #[error("{}", no_decision_reason(*class))]
    NoDecisionOnThisHand { seat: usize, class: HandClass },

    /// A decision on a round whose seats have all decided (or that was closed).
    #[error("every seat has already decided or the round was closed")]
    DecisionsClosed { seat: usize },

    /// Settlement of a round whose third card is not dealt yet.
    #[error("{undecided} seat(s) still to decide; the third card is not dealt yet")]
    RoundNotComplete { undecided: usize },

    /// A card or shoe that is not one.
    #[error(transparent)]
    Card(#[from] CardError),

    /// A paytable that is not one.
    #[error(transparent)]
    Paytable(#[from] PaytableError),

    /// A table (or a player's limits at it) the rules refuse.
    #[error(transparent)]
    Table(#[from] TableError),

    /// A round snapshot that no sequence of legal steps produces (a broken token payload or
    /// a bug; never a caller's mistake).
    #[error("inconsistent round snapshot: {reason}")]
    InconsistentSnapshot { reason: &'static str },

    /// A settled seat of a round whose third card is missing (a broken invariant).
    #[error("seat {seat}: the third card is missing at settlement")]
    ThirdCardMissing { seat: usize },

    /// An amount of money does not fit in 64 bits. Unreachable for rounds dealt at a valid
    /// table (see [`super::Table::new`]).
    #[error("amount overflow: {what}")]
    AmountOverflow { what: Cow<'static, str> },
}

impl From<LimitsError> for GameError {
    fn from(e: LimitsError) -> GameError {
        GameError::Table(TableError::Limits(e))
    }
}

fn no_decision_reason(class: HandClass) -> &'static str {
    match class {
        HandClass::Pair => "the hand is a pair: the third card is dealt at once and no one may raise",
        _ => "the hand is consecutive: a push with no third card and no decision",
    }
}

impl GameError {
    pub(crate) fn overflow(what: impl Into<Cow<'static, str>>) -> GameError {
        GameError::AmountOverflow { what: what.into() }
    }

    /// Whether this is a broken invariant (never a caller's or an operator's mistake).
    pub fn is_internal(&self) -> bool {
        matches!(
            self,
            GameError::AmountOverflow { .. }
                | GameError::ThirdCardMissing { .. }
                | GameError::InconsistentSnapshot { .. }
        )
    }
}
