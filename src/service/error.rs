//! The one mapping from [`EngineError`] to a gRPC [`Status`]. [`refusal`] is one exhaustive
//! match: each error's variant (never its text, never the shape of a field path) decides the
//! status code, the `ErrorInfo.reason` — a value of the proto's [`ErrorReason`] — the request
//! field it names and the `google.rpc` violation that names it:
//!
//! | error | status | reason | field | violation |
//! |---|---|---|---|---|
//! | `Missing` | `INVALID_ARGUMENT` | `MISSING_FIELD` | the empty field | `BadRequest` |
//! | `InvalidRoundId`, `InvalidTableId`, `InvalidClientSeed` | `INVALID_ARGUMENT` | `INVALID_ROUND_ID`, `INVALID_TABLE_ID`, `INVALID_CLIENT_SEED` | its field | `BadRequest` |
//! | `InvalidAction`, `DuplicateSeat` | `INVALID_ARGUMENT` | `INVALID_ACTION`, `DUPLICATE_SEAT` | `decisions[i].action`, `decisions[i].seat` | `BadRequest` |
//! | `UnknownSeat` | `OUT_OF_RANGE` | `UNKNOWN_SEAT` | `decisions[i].seat` | `BadRequest` (`min`, `max`) |
//! | `InvalidSandboxCards` | `INVALID_ARGUMENT` | `INVALID_SANDBOX_CARDS` | `sandbox_cards`, `sandbox_cards[i]` | `BadRequest` |
//! | `NotASandboxTable` | `FAILED_PRECONDITION` | `NOT_A_SANDBOX_TABLE` | `sandbox_cards` | `PreconditionFailure` `SANDBOX` |
//! | `SandboxChanged` | `FAILED_PRECONDITION` | `TABLE_CHANGED` | `commitment_token` | `PreconditionFailure` `COMMITMENT_BINDING` |
//! | `MalformedRequest` | `INVALID_ARGUMENT` | `MALFORMED_REQUEST` | the field prost names, else `request` | `BadRequest` |
//! | `GameError::SeatCount`, `BetOutsideLimits`, `UnknownSeat` | `OUT_OF_RANGE` | `SEAT_COUNT`, `BET_OUTSIDE_LIMITS`, `UNKNOWN_SEAT` | `seats`, `seats[i].bet`, `seat` | `BadRequest` (`min`, `max`) |
//! | `GameError::SeatTwice` | `INVALID_ARGUMENT` | `DUPLICATE_SEAT` | `decisions` | `BadRequest` |
//! | `GameError::{SeatAlreadyDecided, DecisionsClosed, NoDecisionOnThisHand}` | `FAILED_PRECONDITION` | its name | `seats[i].decision` | `PreconditionFailure` `ROUND_STATE` |
//! | `GameError::RoundNotComplete` | `FAILED_PRECONDITION` | `ROUND_NOT_COMPLETE` | `round` | `PreconditionFailure` `ROUND_STATE` |
//! | `TableError::LimitsDoNotOverlap` | `FAILED_PRECONDITION` | `LIMITS_DO_NOT_OVERLAP` | `player_limits` | `PreconditionFailure` `LIMITS` |
//! | `PlayerLimits` | `OUT_OF_RANGE` | `INVALID_PLAYER_LIMITS` | `player_limits.min_bet` / `.max_bet` | `BadRequest` (`min`, `max`) |
//! | `BindingError::Mismatch` | `FAILED_PRECONDITION` | `COMMITMENT_MISMATCH` | `round_id` / `nonce` / `table_id` | `PreconditionFailure` `COMMITMENT_BINDING` |
//! | `BindingError::{TableChanged, CurrencyChanged, RulesChanged, RulesWithdrawn}` | `FAILED_PRECONDITION` | `TABLE_CHANGED`, `CURRENCY_CHANGED`, `RULES_CHANGED` | `commitment_token` | `PreconditionFailure` `COMMITMENT_BINDING` |
//! | `UnknownTable` | `NOT_FOUND` | `UNKNOWN_TABLE` | `table_id` | `BadRequest` |
//! | `InvalidArgument`, `OutOfRange`, the table settings' errors, the odds' and a reveal document's | `INVALID_ARGUMENT` / `OUT_OF_RANGE` | `INVALID_VALUE`, `VALUE_OUT_OF_RANGE`, `TABLE_TOO_LARGE` | the setting (configuration; never a request) | `BadRequest` |
//! | `InvalidToken`, `BindingError::Expired` | `INVALID_ARGUMENT`, always the same message | `INVALID_TOKEN` | the token field | `BadRequest` |
//! | `TokenTooOld` | `INVALID_ARGUMENT` | `TOKEN_TOO_OLD` | the token field | `BadRequest` |
//! | `TokenTooLarge`, `Internal`, the core's broken invariants (overflow, a missing card, the OS random source) | `INTERNAL`, generic message (the cause chain is logged, never sent) | — | — | none |
//!
//! The status message is `"<field>: <what happened>"`. A token that is tampered, truncated,
//! sealed under a key not in the ring, of the wrong kind or expired gets the identical
//! status, message and details. The transport's answers (`REQUEST_TOO_LARGE`, `OVERLOADED`,
//! `REQUEST_TIMEOUT`: `super::guard`) and the audit sink's (`AUDIT_UNAVAILABLE`) take their
//! reason from the same enum. `docs/INTEGRATION.md` documents every reason; its table is
//! checked against the proto's enum (tests/it/error_table.rs).

use std::borrow::Cow;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::error::{ACTION_RULE, EngineError};
use crate::fairness::{BindingError, BoundField, FairnessError};
use crate::game::table::MAX_BET;
use crate::game::{CardError, GameError, LimitsError, MAX_DECKS, MAX_SEATS, PaytableError, TableError};
use crate::odds::OddsError;
pub(crate) use crate::proto::ErrorReason;

/// `ErrorInfo.domain` of every error the engine sends.
pub(crate) const ERROR_DOMAIN: &str = "reddog.v1";
/// The one message for every unusable token.
pub(crate) const INVALID_TOKEN_MESSAGE: &str = "token is not valid";

/// `PreconditionFailure` violation types: the round's phase or a seat's decision forbids the
/// step; player and table limits; the commitment was made for another round, table or table
/// configuration; a requested deal at a table that is not a sandbox table.
const ROUND_STATE: &str = "ROUND_STATE";
const LIMITS: &str = "LIMITS";
const COMMITMENT_BINDING: &str = "COMMITMENT_BINDING";
const SANDBOX: &str = "SANDBOX";

/// How the details name the field at fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Violation {
    /// A `BadRequest` field violation.
    BadRequest,
    /// A `BadRequest` field violation of a number, with the range it must lie in (`min` and
    /// `max` in the `ErrorInfo` metadata).
    Range { min: u64, max: u64 },
    /// A `PreconditionFailure` violation of this type.
    Precondition(&'static str),
}

/// What a caller is told about an error: its code, reason, field and violation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub code: Code,
    pub reason: ErrorReason,
    field: Cow<'static, str>,
    /// What happened, without the field: the violation's description.
    what: String,
    /// The status message.
    message: String,
    violation: Violation,
}

impl Refusal {
    fn new(code: Code, reason: ErrorReason, field: Cow<'static, str>, what: String, violation: Violation) -> Refusal {
        let message = format!("{field}: {what}");
        Refusal { code, reason, field, what, message, violation }
    }

    /// A `BadRequest` refusal with `code`.
    fn bad(code: Code, reason: ErrorReason, field: impl Into<Cow<'static, str>>, what: impl Into<String>) -> Refusal {
        Refusal::new(code, reason, field.into(), what.into(), Violation::BadRequest)
    }

    /// `INVALID_ARGUMENT`, a `BadRequest` violation.
    fn invalid(reason: ErrorReason, field: impl Into<Cow<'static, str>>, what: impl Into<String>) -> Refusal {
        Refusal::bad(Code::InvalidArgument, reason, field, what)
    }

    /// `OUT_OF_RANGE`: `value` is outside `min..=max`.
    fn range(reason: ErrorReason, field: impl Into<Cow<'static, str>>, value: u64, min: u64, max: u64) -> Refusal {
        Refusal::range_saying(reason, field, format!("{value} is outside {min}..={max}"), min, max)
    }

    /// `OUT_OF_RANGE` with its own words, and the range.
    fn range_saying(
        reason: ErrorReason,
        field: impl Into<Cow<'static, str>>,
        what: impl Into<String>,
        min: u64,
        max: u64,
    ) -> Refusal {
        Refusal::new(Code::OutOfRange, reason, field.into(), what.into(), Violation::Range { min, max })
    }

    /// `FAILED_PRECONDITION`, a `PreconditionFailure` violation of type `kind`.
    fn precondition(
        reason: ErrorReason,
        kind: &'static str,
        field: impl Into<Cow<'static, str>>,
        what: impl Into<String>,
    ) -> Refusal {
        Refusal::new(Code::FailedPrecondition, reason, field.into(), what.into(), Violation::Precondition(kind))
    }

    /// The uniform answer to an unusable token in request field `field`.
    fn token(field: &'static str) -> Refusal {
        let what = INVALID_TOKEN_MESSAGE.to_string();
        Refusal {
            code: Code::InvalidArgument,
            reason: ErrorReason::InvalidToken,
            field: field.into(),
            message: what.clone(),
            what,
            violation: Violation::BadRequest,
        }
    }

    /// The status: the message, an `ErrorInfo` (reason, domain, `field` and — for a number —
    /// `min` and `max`) and the violation.
    pub(crate) fn into_status(self) -> Status {
        let Refusal { code, reason, field, what, message, violation } = self;
        let mut meta = vec![("field".to_string(), field.to_string())];
        let mut details = match violation {
            Violation::BadRequest => ErrorDetails::with_bad_request_violation(field.as_ref(), what),
            Violation::Range { min, max } => {
                meta.push(("min".to_string(), min.to_string()));
                meta.push(("max".to_string(), max.to_string()));
                ErrorDetails::with_bad_request_violation(field.as_ref(), what)
            }
            Violation::Precondition(kind) => {
                ErrorDetails::with_precondition_failure_violation(kind, field.as_ref(), what)
            }
        };
        details.set_error_info(
            reason.as_str_name(),
            ERROR_DOMAIN,
            meta.into_iter().collect::<std::collections::HashMap<_, _>>(),
        );
        Status::with_error_details(code, message, details)
    }
}

/// What a caller is told about `err`; `None` for an internal error, answered with
/// `INTERNAL` and no details.
pub(crate) fn refusal(err: &EngineError) -> Option<Refusal> {
    use EngineError as E;
    use ErrorReason as R;
    Some(match err {
        E::Missing { field, what } => Refusal::invalid(R::MissingField, *field, *what),
        E::InvalidRoundId { field, reason } => Refusal::invalid(R::InvalidRoundId, *field, reason.clone()),
        E::InvalidTableId { reason } => Refusal::invalid(R::InvalidTableId, "table_id", reason.clone()),
        E::InvalidClientSeed { reason } => Refusal::invalid(R::InvalidClientSeed, "client_seed", reason.clone()),
        E::InvalidAction { index } => Refusal::invalid(R::InvalidAction, decision(*index, "action"), ACTION_RULE),
        E::DuplicateSeat { index } => Refusal::invalid(R::DuplicateSeat, decision(*index, "seat"), SEAT_TWICE),
        E::UnknownSeat { index, seat, seats } => unknown_seat(*index, *seat, *seats),
        E::InvalidSandboxCards { field, reason } => {
            Refusal::invalid(R::InvalidSandboxCards, field.clone(), reason.clone())
        }
        E::NotASandboxTable { .. } => precondition_after(R::NotASandboxTable, SANDBOX, "sandbox_cards", err),
        E::SandboxChanged { .. } => precondition_after(R::TableChanged, COMMITMENT_BINDING, "commitment_token", err),
        E::MalformedRequest { field, reason } => Refusal::invalid(R::MalformedRequest, field.clone(), reason.clone()),
        E::InvalidArgument { field, reason } => Refusal::invalid(R::InvalidValue, field.clone(), reason.clone()),
        E::OutOfRange { field, value, min, max } => {
            Refusal::range(R::ValueOutOfRange, field.clone(), *value, *min, *max)
        }
        E::Game(g) | E::Fairness(FairnessError::Game(g)) => return game(g),
        E::PlayerLimits(l) => player_limits(*l),
        E::Binding(b) => binding(b),
        E::Fairness(FairnessError::Malformed { path, reason }) => {
            Refusal::invalid(R::InvalidValue, path.clone(), reason.clone())
        }
        E::Odds(o) => return odds(o),
        E::UnknownTable { .. } => Refusal::bad(Code::NotFound, R::UnknownTable, "table_id", err.to_string()),
        E::InvalidToken => Refusal::token("token"),
        E::TokenTooOld { field, age } => Refusal::invalid(R::TokenTooOld, *field, age.clone()),
        E::Fairness(FairnessError::RandomSource(_)) | E::TokenTooLarge { .. } | E::Internal(_) => return None,
    })
}

/// The path of field `field` of decision `index` in a Decide request.
fn decision(index: usize, field: &str) -> String {
    format!("decisions[{index}].{field}")
}

/// Why a seat given twice in one Decide is refused.
const SEAT_TWICE: &str = "the same seat appears twice";

/// A Decide naming a seat the round does not have: the range of seats it has.
fn unknown_seat(index: usize, seat: u32, seats: usize) -> Refusal {
    let last = seats.saturating_sub(1) as u64;
    Refusal::range(ErrorReason::UnknownSeat, decision(index, "seat"), u64::from(seat), 0, last)
}

/// A failed precondition on `field`, saying `err`'s message after its leading `field: `.
fn precondition_after(reason: ErrorReason, kind: &'static str, field: &'static str, err: &EngineError) -> Refusal {
    let what = err.to_string().split_off(field.len() + ": ".len());
    Refusal::precondition(reason, kind, field, what)
}

/// A seat's decision the round's state refuses.
fn seat_decision_state(reason: ErrorReason, seat: impl std::fmt::Display, what: String) -> Refusal {
    Refusal::precondition(reason, ROUND_STATE, format!("seats[{seat}].decision"), what)
}

/// An error of the rules: a seat's bet or decision in a request, or a table setting in the
/// configuration.
fn game(g: &GameError) -> Option<Refusal> {
    use ErrorReason as R;
    use GameError as G;
    let what = || g.to_string();
    Some(match g {
        G::SeatCount { .. } => Refusal::range_saying(R::SeatCount, "seats", what(), 1, MAX_SEATS as u64),
        G::BetOutsideLimits { seat, limits, .. } => Refusal::range_saying(
            R::BetOutsideLimits,
            format!("seats[{seat}].bet"),
            what(),
            limits.min().minor(),
            limits.max().minor(),
        ),
        G::UnknownSeat { seats, .. } => {
            Refusal::range_saying(R::UnknownSeat, "seat", what(), 0, (*seats).max(1) as u64 - 1)
        }
        G::SeatTwice { .. } => Refusal::invalid(R::DuplicateSeat, "decisions", what()),
        G::SeatAlreadyDecided { seat } => seat_decision_state(R::SeatAlreadyDecided, *seat, what()),
        G::DecisionsClosed { seat } => seat_decision_state(R::DecisionsClosed, *seat, what()),
        G::NoDecisionOnThisHand { seat, .. } => seat_decision_state(R::NoDecisionOnThisHand, *seat, what()),
        G::RoundNotComplete { .. } => Refusal::precondition(R::RoundNotComplete, ROUND_STATE, "round", what()),
        G::Table(t) => table(t, what())?,
        // Configuration: the table settings' own names.
        G::Card(CardError::DecksOutOfRange { decks }) => {
            Refusal::range(R::ValueOutOfRange, "decks", u64::from(*decks), 1, u64::from(MAX_DECKS))
        }
        G::Card(CardError::NotACard { .. }) => Refusal::invalid(R::InvalidValue, "card", what()),
        G::Paytable(PaytableError::OddsOutOfRange { entry, odds }) => Refusal::range(
            R::ValueOutOfRange,
            entry.to_string(),
            u64::from(*odds),
            1,
            u64::from(crate::game::paytable::MAX_ODDS),
        ),
        G::Paytable(PaytableError::SpreadEntries { .. }) => {
            Refusal::invalid(R::InvalidValue, "paytable.spread", what())
        }
        G::InconsistentSnapshot { .. } | G::ThirdCardMissing { .. } | G::AmountOverflow { .. } => return None,
    })
}

/// A table the rules refuse: the player's limits against the table's in a request, the
/// table's own settings in the configuration.
fn table(t: &TableError, what: String) -> Option<Refusal> {
    use ErrorReason as R;
    Some(match t {
        TableError::LimitsDoNotOverlap { .. } => {
            Refusal::precondition(R::LimitsDoNotOverlap, LIMITS, "player_limits", what)
        }
        TableError::TooLarge { .. } => Refusal::invalid(R::TableTooLarge, "max_bet", what),
        TableError::Limits(LimitsError::MinBetOutOfRange { min_bet }) => {
            Refusal::range(R::ValueOutOfRange, "min_bet", *min_bet, 1, MAX_BET)
        }
        TableError::Limits(LimitsError::MaxBetOutOfRange { min_bet, max_bet }) => {
            Refusal::range(R::ValueOutOfRange, "max_bet", *max_bet, *min_bet, MAX_BET)
        }
        TableError::Limits(LimitsError::MaxBetBelowMinBet { .. }) => Refusal::invalid(R::InvalidValue, "max_bet", what),
        TableError::Decks(CardError::DecksOutOfRange { decks }) => {
            Refusal::range(R::ValueOutOfRange, "decks", u64::from(*decks), 1, u64::from(MAX_DECKS))
        }
        TableError::Decks(CardError::NotACard { .. }) => Refusal::invalid(R::InvalidValue, "card", what),
    })
}

/// A request's `player_limits`: which bound is wrong and the range it must lie in.
fn player_limits(l: LimitsError) -> Refusal {
    let (field, value, min, max) = match l {
        LimitsError::MinBetOutOfRange { min_bet } => ("player_limits.min_bet", min_bet, 1, MAX_BET),
        // A player's max_bet may be anything from min_bet up (above MAX_BET: the table's).
        LimitsError::MaxBetBelowMinBet { min_bet, max_bet } | LimitsError::MaxBetOutOfRange { min_bet, max_bet } => {
            ("player_limits.max_bet", max_bet, min_bet, u64::MAX)
        }
    };
    Refusal::range(ErrorReason::InvalidPlayerLimits, field, value, min, max)
}

/// A commitment that may not deal the round asked for: the bound request field, or the
/// token when the table changed under it.
fn binding(b: &BindingError) -> Refusal {
    use ErrorReason as R;
    let what = b.to_string();
    let token = "commitment_token";
    match b {
        BindingError::Mismatch { field, .. } => {
            Refusal::precondition(R::CommitmentMismatch, COMMITMENT_BINDING, bound_field(*field), what)
        }
        BindingError::TableChanged { .. } => Refusal::precondition(R::TableChanged, COMMITMENT_BINDING, token, what),
        BindingError::CurrencyChanged { .. } => {
            Refusal::precondition(R::CurrencyChanged, COMMITMENT_BINDING, token, what)
        }
        BindingError::RulesChanged { .. } | BindingError::RulesWithdrawn { .. } => {
            Refusal::precondition(R::RulesChanged, COMMITMENT_BINDING, token, what)
        }
        BindingError::Expired { .. } => Refusal::token("token"),
    }
}

/// The odds calculator's refusals (no RPC reaches them: `reddog odds` and the simulator).
fn odds(o: &OddsError) -> Option<Refusal> {
    use ErrorReason as R;
    let what = || o.to_string();
    Some(match o {
        OddsError::RankCountOutOfRange { rank, .. } => {
            Refusal::bad(Code::OutOfRange, R::ValueOutOfRange, format!("counts[{rank}]"), what())
        }
        OddsError::ShoeTooSmall { .. } => Refusal::invalid(R::InvalidValue, "counts", what()),
        OddsError::UnknownPolicy { .. }
        | OddsError::RaiseThresholdNotANumber { .. }
        | OddsError::RaiseThresholdZero { .. }
        | OddsError::RaiseThresholdNeverRaises { .. } => Refusal::invalid(R::InvalidValue, "policy", what()),
        OddsError::AmountOverflow { .. } => return None,
    })
}

/// The StartRound field that carries a value a commitment is bound to.
pub(crate) const fn bound_field(field: BoundField) -> &'static str {
    match field {
        BoundField::RoundId => "round_id",
        BoundField::Nonce => "nonce",
        BoundField::TableId => "table_id",
    }
}

/// An error and its sources, `outer: inner: …`, for the log of an internal error.
fn cause_chain(err: &EngineError) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        let next = s.to_string();
        if !text.ends_with(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = s.source();
    }
    text
}

impl From<EngineError> for Status {
    fn from(err: EngineError) -> Status {
        match refusal(&err) {
            Some(refusal) => refusal.into_status(),
            None => {
                tracing::error!(cause = %cause_chain(&err), "internal error");
                Status::internal("internal error")
            }
        }
    }
}

/// The uniform answer to an unusable token in request field `field` (`commitment_token` or
/// `round_token`): the same for every reason the token is unusable.
pub(crate) fn invalid_token(field: &'static str) -> Status {
    Refusal::token(field).into_status()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Cause, Fault};
    use crate::game::{BetLimits, HandClass, Money};

    fn field_of(status: &Status) -> String {
        status.get_error_details().error_info().unwrap().metadata["field"].clone()
    }

    #[test]
    fn the_edge_builds_each_field_path_and_status() {
        let cases: Vec<(EngineError, Code, &str)> = vec![
            (EngineError::Game(GameError::SeatCount { seats: 8 }), Code::OutOfRange, "seats"),
            (
                EngineError::Game(GameError::BetOutsideLimits { seat: 2, bet: Money(1), limits: BetLimits::STANDARD }),
                Code::OutOfRange,
                "seats[2].bet",
            ),
            (
                EngineError::Game(GameError::SeatAlreadyDecided { seat: 1 }),
                Code::FailedPrecondition,
                "seats[1].decision",
            ),
            (EngineError::Game(GameError::DecisionsClosed { seat: 0 }), Code::FailedPrecondition, "seats[0].decision"),
            (
                EngineError::Game(GameError::NoDecisionOnThisHand { seat: 3, class: HandClass::Pair }),
                Code::FailedPrecondition,
                "seats[3].decision",
            ),
            (
                EngineError::Binding(BindingError::Mismatch {
                    field: BoundField::Nonce,
                    committed: "1".into(),
                    requested: "2".into(),
                }),
                Code::FailedPrecondition,
                "nonce",
            ),
            (
                EngineError::Binding(BindingError::TableChanged { committed_decks: 1, table_decks: 2 }),
                Code::FailedPrecondition,
                "commitment_token",
            ),
            (
                EngineError::Binding(BindingError::CurrencyChanged { committed: "EUR".into(), table: "JPY".into() }),
                Code::FailedPrecondition,
                "commitment_token",
            ),
            (
                EngineError::Binding(BindingError::RulesChanged { committed: "ab".repeat(32), table: "cd".repeat(32) }),
                Code::FailedPrecondition,
                "commitment_token",
            ),
            (EngineError::UnknownTable { table_id: "vip".into() }, Code::NotFound, "table_id"),
        ];
        for (err, code, field) in cases {
            let status = Status::from(err.clone());
            assert_eq!(status.code(), code, "{err:?}");
            assert_eq!(field_of(&status), field, "{err:?}");
            assert!(status.message().starts_with(&format!("{field}: ")), "{}", status.message());
        }
        let bet = Status::from(EngineError::Game(GameError::BetOutsideLimits {
            seat: 0,
            bet: Money(1),
            limits: BetLimits::STANDARD,
        }));
        let info = bet.get_error_details().error_info().unwrap().clone();
        assert_eq!((info.metadata["min"].as_str(), info.metadata["max"].as_str()), ("500", "30000"));
        let changed = Status::from(EngineError::Binding(BindingError::RulesChanged {
            committed: "ab".repeat(32),
            table: "cd".repeat(32),
        }));
        assert_eq!(changed.get_error_details().error_info().unwrap().reason, "RULES_CHANGED");
    }

    #[test]
    fn each_cause_has_its_own_reason_never_the_status_code() {
        let cases: Vec<(EngineError, &str)> = vec![
            (EngineError::Missing { field: "round_token", what: "required" }, "MISSING_FIELD"),
            (EngineError::Missing { field: "decisions", what: "at least one decision is required" }, "MISSING_FIELD"),
            (EngineError::InvalidRoundId { field: "round_id", reason: "at most 128 bytes".into() }, "INVALID_ROUND_ID"),
            (EngineError::InvalidTableId { reason: "at most 64 bytes".into() }, "INVALID_TABLE_ID"),
            (EngineError::InvalidClientSeed { reason: "at most 1024 bytes of UTF-8".into() }, "INVALID_CLIENT_SEED"),
            (EngineError::InvalidAction { index: 1 }, "INVALID_ACTION"),
            (EngineError::DuplicateSeat { index: 1 }, "DUPLICATE_SEAT"),
            (
                EngineError::InvalidSandboxCards { field: "sandbox_cards[0]".into(), reason: "x".into() },
                "INVALID_SANDBOX_CARDS",
            ),
            (
                EngineError::MalformedRequest { field: "round_id".into(), reason: "not UTF-8".into() },
                "MALFORMED_REQUEST",
            ),
            (EngineError::Game(GameError::SeatCount { seats: 0 }), "SEAT_COUNT"),
            (
                EngineError::Game(GameError::BetOutsideLimits { seat: 0, bet: Money(1), limits: BetLimits::STANDARD }),
                "BET_OUTSIDE_LIMITS",
            ),
            (EngineError::PlayerLimits(LimitsError::MinBetOutOfRange { min_bet: 0 }), "INVALID_PLAYER_LIMITS"),
            (EngineError::UnknownSeat { index: 0, seat: 9, seats: 2 }, "UNKNOWN_SEAT"),
            (EngineError::UnknownTable { table_id: "x".into() }, "UNKNOWN_TABLE"),
            (EngineError::Game(GameError::SeatAlreadyDecided { seat: 0 }), "SEAT_ALREADY_DECIDED"),
            (EngineError::Game(GameError::DecisionsClosed { seat: 0 }), "DECISIONS_CLOSED"),
            (
                EngineError::Game(GameError::NoDecisionOnThisHand { seat: 0, class: HandClass::Pair }),
                "NO_DECISION_ON_THIS_HAND",
            ),
            (EngineError::Binding(BindingError::TableChanged { committed_decks: 1, table_decks: 2 }), "TABLE_CHANGED"),
            (EngineError::SandboxChanged { committed_sandbox: false, table_id: "lab".into() }, "TABLE_CHANGED"),
            (
                EngineError::Binding(BindingError::CurrencyChanged { committed: "EUR".into(), table: "JPY".into() }),
                "CURRENCY_CHANGED",
            ),
            (EngineError::NotASandboxTable { table_id: "default".into() }, "NOT_A_SANDBOX_TABLE"),
            (EngineError::invalid("tables.x.currency", "not ISO 4217"), "INVALID_VALUE"),
            (EngineError::out_of_range("tables.x.decks", 9u64, 1, 8), "VALUE_OUT_OF_RANGE"),
        ];
        let status_codes = ["INVALID_ARGUMENT", "OUT_OF_RANGE", "FAILED_PRECONDITION", "NOT_FOUND"];
        for (err, want) in cases {
            let status = Status::from(err.clone());
            let got = status.get_error_details().error_info().unwrap().reason.clone();
            assert_eq!(got, want, "{err:?}");
            assert!(!status_codes.contains(&got.as_str()), "{err:?}");
            // An error that names its field: the message is its own text, field first.
            if let Some(field) = err.field() {
                assert_eq!(status.message(), err.to_string(), "{err:?}");
                assert_eq!(field_of(&status), field, "{err:?}");
            }
        }
        let sandbox = Status::from(EngineError::NotASandboxTable { table_id: "default".into() });
        let details = sandbox.get_error_details();
        let violation = &details.precondition_failure().unwrap().violations[0];
        assert_eq!((violation.r#type.as_str(), violation.subject.as_str()), ("SANDBOX", "sandbox_cards"));
    }

    #[test]
    fn a_reason_depends_on_the_variant_never_on_its_words() {
        // The same words under two variants give each variant's reason; other words under
        // one variant give that variant's reason.
        let words = ["required", "at least one x is required", "the request message is not valid", "zzz"];
        for w in words {
            let reasons = [
                EngineError::Missing { field: "round_id", what: "required" },
                EngineError::InvalidRoundId { field: "round_id", reason: w.to_string().into() },
                EngineError::InvalidSandboxCards { field: "decisions[0].action".into(), reason: w.into() },
                EngineError::invalid("decisions[0].seat", w),
                EngineError::invalid("round_id", w),
            ]
            .map(|e| refusal(&e).unwrap().reason);
            assert_eq!(
                reasons,
                [
                    ErrorReason::MissingField,
                    ErrorReason::InvalidRoundId,
                    ErrorReason::InvalidSandboxCards,
                    ErrorReason::InvalidValue,
                    ErrorReason::InvalidValue
                ],
                "{w}"
            );
        }
    }

    #[test]
    fn internal_errors_say_nothing_of_their_cause() {
        for err in [
            EngineError::TokenTooLarge { len: 2000, max: 1500 },
            EngineError::Game(GameError::AmountOverflow { what: "a total".into() }),
            EngineError::Game(GameError::ThirdCardMissing { seat: 0 }),
            EngineError::Internal(Fault::RevealJson(Cause::new(std::io::Error::other("secret detail")))),
        ] {
            let status = Status::from(err);
            assert_eq!(status.code(), Code::Internal);
            assert_eq!(status.message(), "internal error");
        }
    }

    #[test]
    fn the_log_of_an_internal_error_keeps_its_whole_cause_chain() {
        let err = EngineError::Internal(Fault::RevealJson(Cause::new(std::io::Error::other("disk on fire"))));
        assert_eq!(cause_chain(&err), "internal error: writing the reveal as JSON failed: disk on fire");
        let err = EngineError::from(Fault::PayloadLength { expected: 10, actual: 12 });
        assert_eq!(cause_chain(&err), "internal error: a token payload encoded to 12 bytes where 10 were measured");
    }

    #[test]
    fn a_players_limits_name_the_bound_that_is_wrong_and_its_range() {
        let min = Status::from(EngineError::PlayerLimits(LimitsError::MinBetOutOfRange { min_bet: 0 }));
        assert_eq!((min.code(), field_of(&min)), (Code::OutOfRange, "player_limits.min_bet".to_string()));
        assert_eq!(min.message(), format!("player_limits.min_bet: 0 is outside 1..={MAX_BET}"));
        let max =
            Status::from(EngineError::PlayerLimits(LimitsError::MaxBetBelowMinBet { min_bet: 2_000, max_bet: 1_000 }));
        assert_eq!((max.code(), field_of(&max)), (Code::OutOfRange, "player_limits.max_bet".to_string()));
        let info = max.get_error_details().error_info().unwrap().clone();
        assert_eq!(info.reason, "INVALID_PLAYER_LIMITS");
        assert_eq!((info.metadata["min"].as_str(), info.metadata["max"].as_str()), ("2000", "18446744073709551615"));
    }

    #[test]
    fn an_expired_commitment_gets_the_same_answer_as_a_forged_token() {
        let expired =
            Status::from(EngineError::Binding(BindingError::Expired { expires_at_unix_ms: 1, now_unix_ms: 2 }));
        let forged = Status::from(EngineError::InvalidToken);
        assert_eq!((expired.code(), expired.message()), (forged.code(), forged.message()));
        assert_eq!(expired.details(), forged.details());
    }
}
