//! What can go wrong in the rules: each variant says what happened, with the values that
//! show it (the seat, the bet, the limits, the hand). No request field paths and no
//! protocol status codes: the service decides which field of which request an error is
//! about. None carries a secret (a seed or a face-down card) in its text.

use std::borrow::Cow;

use super::hand::HandClass;
use super::money::Money;
use super::table::{BetLimits, LimitsError, MAX_SEATS};

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

    /// Bet limits that are not limits (see [`BetLimits::new`]).
    #[error(transparent)]
    Limits(#[from] LimitsError),

    /// The player's limits and the table's have no bet in common.
    #[error(
        "the player's limits {}..={} do not overlap the table's {}..={}",
        player.min().0, player.max().0, table.min().0, table.max().0
    )]
    LimitsDoNotOverlap { player: BetLimits, table: BetLimits },

    /// A table whose largest possible round (every seat at `max_bet`, raised, paid the best
    /// odds of its paytable) would not fit in `u64` minor units.
    #[error(
        "max_bet {max_bet} is too large for this paytable: the largest round ({MAX_SEATS} seats at max_bet, all \
         raised, paid {max_odds} to 1) must fit in 64-bit minor units, so the largest allowed max_bet is {largest}",
        max_bet = max_bet.0, largest = largest.0
    )]
    TableTooLarge { max_bet: Money, largest: Money, max_odds: u32 },

    /// A shoe of no decks or of more than [`super::MAX_DECKS`].
    #[error("decks: {decks} is outside 1..={max}", max = super::MAX_DECKS)]
    DecksOutOfRange { decks: u32 },

    /// Text that is not a card's canonical text.
    #[error("{text:?} is not a card like \"Ah\" or \"Tc\"")]
    NotACard { text: String },

    /// Odds in a paytable outside 1 to [`super::paytable::MAX_ODDS`].
    #[error("{entry}: odds {odds} are outside 1..={max}", max = super::paytable::MAX_ODDS)]
    OddsOutOfRange { entry: PaytableEntry, odds: u32 },

    /// A paytable whose spread list has not one entry per spread.
    #[error("paytable.spread needs exactly {} entries (spreads 1 to 11), got {got}", super::Spread::MAX)]
    SpreadEntries { got: usize },

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

/// One entry of a paytable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaytableEntry {
    /// The odds for a spread (1 to 11).
    Spread(u8),
    /// The odds for three of a kind.
    ThreeOfAKind,
}

impl std::fmt::Display for PaytableEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PaytableEntry::Spread(s) => write!(f, "paytable.spread[{s}]"),
            PaytableEntry::ThreeOfAKind => f.write_str("paytable.three_of_a_kind"),
        }
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
