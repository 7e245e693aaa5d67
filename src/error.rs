//! The engine's one error type. Its variants say what happened in the terms of the game and
//! the protocol (a bet outside the limits, a seat that already decided, a commitment made for
//! another round); the service edge (`service::error`) is the one place that turns them into
//! a request field path (such as `seats[2].bet`) and a gRPC status. None carries a secret
//! (seeds, keys, hidden cards) in its text.

use std::borrow::Cow;

use crate::game::{BetLimits, HandClass, Money};

/// A value a commitment is bound to (the round it was made for).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoundField {
    RoundId,
    Nonce,
    TableId,
}

impl BoundField {
    /// The request field that carries the value: `round_id`, `nonce` or `table_id`.
    pub const fn name(self) -> &'static str {
        match self {
            BoundField::RoundId => "round_id",
            BoundField::Nonce => "nonce",
            BoundField::TableId => "table_id",
        }
    }
}

/// What can go wrong in the engine. Caller mistakes and broken invariants are separate
/// variants, so the service never answers a caller's mistake with `INTERNAL`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// A value has the wrong form (empty, malformed, not allowed here).
    #[error("{field}: {reason}")]
    InvalidArgument { field: Cow<'static, str>, reason: String },

    /// A number lies outside its allowed range.
    #[error("{field}: {value} is outside {min}..={max}")]
    OutOfRange { field: Cow<'static, str>, value: u64, min: u64, max: u64 },

    /// The step is not allowed in the current state.
    #[error("{field}: {reason}")]
    FailedPrecondition { field: Cow<'static, str>, reason: String },

    /// A round needs 1 to [`crate::game::MAX_SEATS`] seats.
    #[error("a round has 1 to {max} seats, not {seats}", max = crate::game::MAX_SEATS)]
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

    /// The player's limits and the table's have no bet in common.
    #[error(
        "the player's limits {}..={} do not overlap the table's {}..={}",
        player.min().0, player.max().0, table.min().0, table.max().0
    )]
    LimitsDoNotOverlap { player: BetLimits, table: BetLimits },

    /// A table whose largest possible round (every seat at `max_bet`, raised, paid the best
    /// odds of its paytable) would not fit in `u64` minor units.
    #[error(
        "max_bet: {max_bet} is too large for this paytable: the largest round (7 seats at max_bet, all raised, \
         paid {max_odds} to 1) must fit in 64-bit minor units, so the largest allowed max_bet is {largest}",
        max_bet = max_bet.0, largest = largest.0
    )]
    TableTooLarge { max_bet: Money, largest: Money, max_odds: u32 },

    /// StartRound with another round id, nonce or table than the commitment was made for.
    #[error("the commitment was made for {field} {committed}, not {requested}", field = field.name())]
    CommitmentMismatch { field: BoundField, committed: String, requested: String },

    /// A table id this engine does not serve.
    #[error("this engine serves no table {table_id:?}")]
    UnknownTable { table_id: String },

    /// The table's deck count changed between CommitSeed and StartRound.
    #[error(
        "the table changed since the commitment (committed for {committed_decks} deck(s), the table now has \
         {table_decks}); ask a new commitment"
    )]
    TableChanged { committed_decks: u8, table_decks: u8 },

    /// The table's currency changed between CommitSeed (whose answer named the currency the
    /// bets would be in) and StartRound.
    #[error(
        "the table changed since the commitment (committed in {committed}, the table now uses {table}); ask a new \
         commitment"
    )]
    CurrencyChanged { committed: String, table: String },

    /// The table's rules digest (deck count, paytable, bet limits, currency) changed between
    /// CommitSeed, which bound and showed it, and StartRound.
    #[error(
        "the table's rules changed since the commitment (committed under rules digest {committed}, the table's \
         rules digest is now {table}); ask a new commitment"
    )]
    RulesChanged { committed: String, table: String },

    /// A round or commitment token that is not genuine, is truncated, was sealed under a key
    /// this engine does not hold, or has expired. Deliberately says nothing about which.
    #[error("round or commitment token is not valid")]
    InvalidToken,

    /// A sealed token would be longer than the engine accepts back. Unreachable: requests
    /// that could produce one are refused up front (see `service::token::MAX_TOKEN_LEN`).
    #[error("a {len}-byte token exceeds the {max}-byte budget")]
    TokenTooLarge { len: usize, max: usize },

    /// An amount of money does not fit in 64 bits. Unreachable for rounds dealt at a valid
    /// table (see [`crate::game::Table::new`]).
    #[error("amount overflow: {what}")]
    AmountOverflow { what: Cow<'static, str> },

    /// A bug or a broken environment (e.g. the OS random source failed); never a caller's
    /// mistake.
    #[error("internal error: {0}")]
    Internal(String),
}

fn no_decision_reason(class: HandClass) -> &'static str {
    match class {
        HandClass::Pair => "the hand is a pair: the third card is dealt at once and no one may raise",
        _ => "the hand is consecutive: a push with no third card and no decision",
    }
}

impl EngineError {
    pub fn invalid(field: impl Into<Cow<'static, str>>, reason: impl Into<String>) -> Self {
        EngineError::InvalidArgument { field: field.into(), reason: reason.into() }
    }

    pub fn out_of_range(field: impl Into<Cow<'static, str>>, value: impl TryInto<u64>, min: u64, max: u64) -> Self {
        // A value too large for u64 is reported as u64::MAX: it is only ever shown, and it is
        // out of range either way.
        let value = value.try_into().unwrap_or(u64::MAX);
        EngineError::OutOfRange { field: field.into(), value, min, max }
    }

    pub fn precondition(field: impl Into<Cow<'static, str>>, reason: impl Into<String>) -> Self {
        EngineError::FailedPrecondition { field: field.into(), reason: reason.into() }
    }

    pub fn overflow(what: impl Into<Cow<'static, str>>) -> Self {
        EngineError::AmountOverflow { what: what.into() }
    }

    /// The named field of a field-level error (`InvalidArgument`, `OutOfRange`,
    /// `FailedPrecondition`, a commitment mismatch, a table too large). Errors about a seat
    /// carry the seat; the service edge builds their request path.
    pub fn field(&self) -> Option<&str> {
        match self {
            EngineError::InvalidArgument { field, .. }
            | EngineError::OutOfRange { field, .. }
            | EngineError::FailedPrecondition { field, .. } => Some(field),
            EngineError::CommitmentMismatch { field, .. } => Some(field.name()),
            EngineError::TableTooLarge { .. } => Some("max_bet"),
            _ => None,
        }
    }

    /// Whether this is a broken invariant or environment, never a caller's mistake.
    pub fn is_internal(&self) -> bool {
        matches!(
            self,
            EngineError::Internal(_) | EngineError::TokenTooLarge { .. } | EngineError::AmountOverflow { .. }
        )
    }
}
