//! The one mapping from [`EngineError`] to a gRPC [`Status`]: it builds the request field
//! path of each error (e.g. `seats[2].bet` from "seat 2's bet is outside the limits") and
//! attaches `google.rpc` details that name it:
//!
//! | error | status | field | details |
//! |---|---|---|---|
//! | `InvalidArgument` | `INVALID_ARGUMENT` | its field | `BadRequest` + `ErrorInfo` |
//! | `OutOfRange` | `OUT_OF_RANGE` | its field | `BadRequest` + `ErrorInfo` (`min`, `max`) |
//! | `FailedPrecondition` | `FAILED_PRECONDITION` | its field | `PreconditionFailure` + `ErrorInfo` |
//! | `GameError::SeatCount` | `OUT_OF_RANGE` | `seats` | `BadRequest` + `ErrorInfo` (`min`, `max`) |
//! | `GameError::BetOutsideLimits` | `OUT_OF_RANGE` | `seats[i].bet` | `BadRequest` + `ErrorInfo` (`min`, `max`) |
//! | `GameError::UnknownSeat` | `OUT_OF_RANGE` | `seat` | `BadRequest` + `ErrorInfo` (`min`, `max`) |
//! | `GameError::SeatTwice` | `INVALID_ARGUMENT` | `decisions` | `BadRequest` + `ErrorInfo` |
//! | `GameError::{SeatAlreadyDecided, DecisionsClosed, NoDecisionOnThisHand}` | `FAILED_PRECONDITION` | `seats[i].decision` | `PreconditionFailure` + `ErrorInfo` |
//! | `GameError::RoundNotComplete` | `FAILED_PRECONDITION` | `round` | `PreconditionFailure` + `ErrorInfo` |
//! | `TableError::LimitsDoNotOverlap` | `FAILED_PRECONDITION` | `player_limits` | `PreconditionFailure` + `ErrorInfo` |
//! | `PlayerLimits(LimitsError)` | `OUT_OF_RANGE` | `player_limits.min_bet` / `player_limits.max_bet` | `BadRequest` + `ErrorInfo` (`min`, `max`) |
//! | `BindingError::Mismatch` | `FAILED_PRECONDITION` | `round_id` / `nonce` / `table_id` | `PreconditionFailure` (type `COMMITMENT_BINDING`) + `ErrorInfo` |
//! | `BindingError::{TableChanged, CurrencyChanged}` | `FAILED_PRECONDITION` | `commitment_token` | `PreconditionFailure` (type `COMMITMENT_BINDING`) + `ErrorInfo` |
//! | `BindingError::{RulesChanged, RulesWithdrawn}` | `FAILED_PRECONDITION` | `commitment_token` | `PreconditionFailure` (type `COMMITMENT_BINDING`) + `ErrorInfo` reason `RULES_CHANGED` |
//! | `UnknownTable` | `NOT_FOUND` | `table_id` | `BadRequest` + `ErrorInfo` |
//! | `TableError::TooLarge` and the other table settings (`LimitsError`, `CardError`, `PaytableError`) | `INVALID_ARGUMENT` / `OUT_OF_RANGE` | the setting (configuration; never a request) | `BadRequest` + `ErrorInfo` |
//! | `InvalidToken`, `BindingError::Expired` | `INVALID_ARGUMENT`, always the same message | the token field | `BadRequest` + `ErrorInfo` reason `INVALID_TOKEN` |
//! | `TokenTooLarge`, `Internal`, the core's broken invariants (overflow, a missing card, the OS random source) | `INTERNAL`, generic message (the cause chain is logged, never sent) | — | none |
//!
//! The status message is `"<field>: <what happened>"`. A token that is tampered, truncated,
//! sealed under a key not in the ring, of the wrong kind or expired gets the identical
//! status, message and details.
//!
//! `ErrorInfo.reason` names the cause, one reason per cause (never a repeat of the status
//! code): [`reason`] lists them, and `docs/INTEGRATION.md` and the proto's comments carry the
//! same table. `PreconditionFailure` violation types: `ROUND_STATE` (the round's phase or a
//! seat's decision forbids the step), `LIMITS` (player and table limits), `COMMITMENT_BINDING`
//! (the commitment was made for another round, table or table configuration) and `SANDBOX`
//! (a requested deal at a table that is not a sandbox table).

use std::borrow::Cow;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::error::EngineError;
use crate::fairness::{BindingError, BoundField, FairnessError};
use crate::game::table::MAX_BET;
use crate::game::{CardError, GameError, LimitsError, MAX_DECKS, MAX_SEATS, PaytableError, TableError};
use crate::odds::OddsError;

/// `ErrorInfo.domain` of every error the engine sends.
pub const ERROR_DOMAIN: &str = "reddog.v1";
/// The one message for every unusable token.
pub const INVALID_TOKEN_MESSAGE: &str = "token is not valid";

/// How an error is reported.
enum Report {
    /// `BadRequest` field violation.
    BadRequest(Code),
    /// `BadRequest` with `min` / `max` metadata.
    Range { min: u64, max: u64 },
    /// `PreconditionFailure` violation of this type.
    Precondition(&'static str),
    /// `PreconditionFailure` violation of this type, with its own `ErrorInfo.reason`.
    PreconditionWithReason(&'static str, &'static str),
}

type Described = (Cow<'static, str>, String, Report);

/// The request field an error is about, the reason to report, and how; `None` for an
/// internal error (and an unusable token, answered by [`invalid_token`]).
fn describe(err: &EngineError) -> Option<Described> {
    use EngineError as E;
    Some(match err {
        E::InvalidArgument { field, reason } => {
            (field.clone(), reason.clone(), Report::BadRequest(Code::InvalidArgument))
        }
        E::OutOfRange { field, value, min, max } => {
            (field.clone(), format!("{value} is outside {min}..={max}"), Report::Range { min: *min, max: *max })
        }
        E::FailedPrecondition { field, reason } => {
            let kind = match field.as_ref() {
                super::sandbox::FIELD => "SANDBOX",
                "commitment_token" => "COMMITMENT_BINDING",
                _ => "ROUND_STATE",
            };
            (field.clone(), reason.clone(), Report::Precondition(kind))
        }
        E::Game(g) | E::Fairness(FairnessError::Game(g)) => return describe_game(g),
        E::PlayerLimits(l) => describe_player_limits(*l),
        E::Binding(b) => return describe_binding(b),
        E::Fairness(FairnessError::Malformed { path, reason }) => {
            (path.clone().into(), reason.clone(), Report::BadRequest(Code::InvalidArgument))
        }
        E::Odds(OddsError::RankCountOutOfRange { rank, .. }) => {
            (format!("counts[{rank}]").into(), err.to_string(), Report::BadRequest(Code::OutOfRange))
        }
        E::Odds(OddsError::ShoeTooSmall { .. }) => {
            ("counts".into(), err.to_string(), Report::BadRequest(Code::InvalidArgument))
        }
        E::Odds(
            OddsError::UnknownPolicy { .. }
            | OddsError::RaiseThresholdNotANumber { .. }
            | OddsError::RaiseThresholdZero { .. }
            | OddsError::RaiseThresholdNeverRaises { .. },
        ) => ("policy".into(), err.to_string(), Report::BadRequest(Code::InvalidArgument)),
        E::UnknownTable { .. } => ("table_id".into(), err.to_string(), Report::BadRequest(Code::NotFound)),
        E::Fairness(FairnessError::RandomSource(_))
        | E::Odds(OddsError::AmountOverflow { .. })
        | E::InvalidToken
        | E::TokenTooLarge { .. }
        | E::Internal(_) => return None,
    })
}

/// The field path of an error of the rules: a seat's bet or decision in a request, or a
/// table setting in the configuration.
fn describe_game(g: &GameError) -> Option<Described> {
    use GameError as G;
    let what = || g.to_string();
    Some(match g {
        G::SeatCount { .. } => ("seats".into(), what(), Report::Range { min: 1, max: MAX_SEATS as u64 }),
        G::BetOutsideLimits { seat, limits, .. } => (
            format!("seats[{seat}].bet").into(),
            what(),
            Report::Range { min: limits.min().minor(), max: limits.max().minor() },
        ),
        G::UnknownSeat { seats, .. } => {
            ("seat".into(), what(), Report::Range { min: 0, max: (*seats).max(1) as u64 - 1 })
        }
        G::SeatTwice { .. } => ("decisions".into(), what(), Report::BadRequest(Code::InvalidArgument)),
        G::SeatAlreadyDecided { seat } | G::DecisionsClosed { seat } | G::NoDecisionOnThisHand { seat, .. } => {
            (format!("seats[{seat}].decision").into(), what(), Report::Precondition("ROUND_STATE"))
        }
        G::RoundNotComplete { .. } => ("round".into(), what(), Report::Precondition("ROUND_STATE")),
        G::Table(TableError::LimitsDoNotOverlap { .. }) => {
            ("player_limits".into(), what(), Report::Precondition("LIMITS"))
        }
        // Configuration: the table settings' own names.
        G::Table(TableError::TooLarge { .. }) => ("max_bet".into(), what(), Report::BadRequest(Code::InvalidArgument)),
        G::Table(TableError::Limits(LimitsError::MinBetOutOfRange { min_bet })) => {
            ("min_bet".into(), format!("{min_bet} is outside 1..={MAX_BET}"), Report::Range { min: 1, max: MAX_BET })
        }
        G::Table(TableError::Limits(LimitsError::MaxBetOutOfRange { min_bet, max_bet })) => (
            "max_bet".into(),
            format!("{max_bet} is outside {min_bet}..={MAX_BET}"),
            Report::Range { min: *min_bet, max: MAX_BET },
        ),
        G::Table(TableError::Limits(LimitsError::MaxBetBelowMinBet { .. })) => {
            ("max_bet".into(), what(), Report::BadRequest(Code::InvalidArgument))
        }
        G::Card(CardError::DecksOutOfRange { decks })
        | G::Table(TableError::Decks(CardError::DecksOutOfRange { decks })) => (
            "decks".into(),
            format!("{decks} is outside 1..={MAX_DECKS}"),
            Report::Range { min: 1, max: u64::from(MAX_DECKS) },
        ),
        G::Paytable(PaytableError::OddsOutOfRange { entry, odds }) => (
            entry.to_string().into(),
            format!("{odds} is outside 1..={}", crate::game::paytable::MAX_ODDS),
            Report::Range { min: 1, max: u64::from(crate::game::paytable::MAX_ODDS) },
        ),
        G::Paytable(PaytableError::SpreadEntries { .. }) => {
            ("paytable.spread".into(), what(), Report::BadRequest(Code::InvalidArgument))
        }
        G::Card(CardError::NotACard { .. }) | G::Table(TableError::Decks(CardError::NotACard { .. })) => {
            ("card".into(), what(), Report::BadRequest(Code::InvalidArgument))
        }
        G::InconsistentSnapshot { .. } | G::ThirdCardMissing { .. } | G::AmountOverflow { .. } => return None,
    })
}

/// A request's `player_limits`: which bound is wrong and the range it must lie in.
fn describe_player_limits(l: LimitsError) -> Described {
    let (field, value, min, max) = match l {
        LimitsError::MinBetOutOfRange { min_bet } => ("player_limits.min_bet", min_bet, 1, MAX_BET),
        // A player's max_bet may be anything from min_bet up (above MAX_BET: the table's).
        LimitsError::MaxBetBelowMinBet { min_bet, max_bet } | LimitsError::MaxBetOutOfRange { min_bet, max_bet } => {
            ("player_limits.max_bet", max_bet, min_bet, u64::MAX)
        }
    };
    (field.into(), format!("{value} is outside {min}..={max}"), Report::Range { min, max })
}

/// A commitment that may not deal the round asked for: the bound request field, or the
/// token when the table changed under it.
fn describe_binding(b: &BindingError) -> Option<Described> {
    let what = || b.to_string();
    Some(match b {
        BindingError::Mismatch { field, .. } => {
            (bound_field(*field).into(), what(), Report::Precondition("COMMITMENT_BINDING"))
        }
        BindingError::TableChanged { .. } | BindingError::CurrencyChanged { .. } => {
            ("commitment_token".into(), what(), Report::Precondition("COMMITMENT_BINDING"))
        }
        BindingError::RulesChanged { .. } | BindingError::RulesWithdrawn { .. } => {
            ("commitment_token".into(), what(), Report::PreconditionWithReason("COMMITMENT_BINDING", "RULES_CHANGED"))
        }
        BindingError::Expired { .. } => return None,
    })
}

/// The StartRound field that carries a value a commitment is bound to.
pub const fn bound_field(field: BoundField) -> &'static str {
    match field {
        BoundField::RoundId => "round_id",
        BoundField::Nonce => "nonce",
        BoundField::TableId => "table_id",
    }
}

/// The prefix of the message of a request that is not valid protobuf (see `guard`).
const MALFORMED_PREFIX: &str = "the request message";

/// `ErrorInfo.reason` of an error the engine answers with details: one per cause.
///
/// | reason | status | cause |
/// |---|---|---|
/// | `MISSING_FIELD` | `INVALID_ARGUMENT` | a required field is empty (`commitment_token`, `round_token`, `round_id`, `client_seed`, `player_limits`, `decisions`) |
/// | `INVALID_ROUND_ID` | `INVALID_ARGUMENT` | `round_id` too long, with control characters, or not the token's |
/// | `INVALID_TABLE_ID` | `INVALID_ARGUMENT` | `table_id` too long or outside `[A-Za-z0-9._-]` |
/// | `INVALID_CLIENT_SEED` | `INVALID_ARGUMENT` | `client_seed` over 1024 bytes |
/// | `INVALID_ACTION` | `INVALID_ARGUMENT` | a decision's action is not raise or stand |
/// | `DUPLICATE_SEAT` | `INVALID_ARGUMENT` | one seat twice in one Decide |
/// | `INVALID_SANDBOX_CARDS` | `INVALID_ARGUMENT` | `sandbox_cards` malformed at a sandbox table |
/// | `MALFORMED_REQUEST` | `INVALID_ARGUMENT` | the request is not valid protobuf, or missing |
/// | `INVALID_VALUE` | `INVALID_ARGUMENT` | any other malformed value (configuration) |
/// | `SEAT_COUNT` | `OUT_OF_RANGE` | 0 or more than 7 seats |
/// | `BET_OUTSIDE_LIMITS` | `OUT_OF_RANGE` | a bet outside the table's or the player's limits |
/// | `INVALID_PLAYER_LIMITS` | `OUT_OF_RANGE` | `player_limits.min_bet` 0 or above the largest bet, `max_bet` below `min_bet` |
/// | `UNKNOWN_SEAT` | `OUT_OF_RANGE` | a decision for a seat the round does not have |
/// | `VALUE_OUT_OF_RANGE` | `OUT_OF_RANGE` | any other number out of range (configuration) |
/// | `UNKNOWN_TABLE` | `NOT_FOUND` | a table this engine does not serve |
/// | `COMMITMENT_MISMATCH` | `FAILED_PRECONDITION` | StartRound with another round id, nonce or table than the commitment's |
/// | `TABLE_CHANGED` | `FAILED_PRECONDITION` | the table's deck count or sandbox marking changed since the commitment |
/// | `CURRENCY_CHANGED` | `FAILED_PRECONDITION` | the table's currency changed since the commitment |
/// | `LIMITS_DO_NOT_OVERLAP` | `FAILED_PRECONDITION` | the player's limits and the table's have no bet in common |
/// | `NO_DECISION_ON_THIS_HAND` | `FAILED_PRECONDITION` | Decide on a pair or consecutive hand |
/// | `DECISIONS_CLOSED` | `FAILED_PRECONDITION` | Decide on a round whose seats have all decided |
/// | `SEAT_ALREADY_DECIDED` | `FAILED_PRECONDITION` | Decide for a seat that decided in this token |
/// | `ROUND_NOT_COMPLETE` | `FAILED_PRECONDITION` | settlement before the third card is dealt (not reachable through Settle) |
/// | `NOT_A_SANDBOX_TABLE` | `FAILED_PRECONDITION` | `sandbox_cards` at a table that is not a sandbox table |
/// | `TABLE_TOO_LARGE` | `INVALID_ARGUMENT` | configuration only: a `max_bet` whose largest round overflows |
///
/// Besides these: `INVALID_TOKEN` ([`invalid_token`]), and from the transport guard
/// `REQUEST_TOO_LARGE`, `OVERLOADED` and `REQUEST_TIMEOUT`.
pub fn reason(err: &EngineError) -> &'static str {
    use EngineError as E;
    match err {
        E::InvalidArgument { field, reason } => {
            if reason.starts_with(MALFORMED_PREFIX) || field == "request" {
                "MALFORMED_REQUEST"
            } else if reason.starts_with("required") || reason.starts_with("at least one") {
                "MISSING_FIELD"
            } else if field.starts_with(super::sandbox::FIELD) {
                "INVALID_SANDBOX_CARDS"
            } else if field.starts_with("decisions[") && field.ends_with(".action") {
                "INVALID_ACTION"
            } else if field.starts_with("decisions[") && field.ends_with(".seat") {
                "DUPLICATE_SEAT"
            } else {
                match field.as_ref() {
                    "round_id" => "INVALID_ROUND_ID",
                    "table_id" => "INVALID_TABLE_ID",
                    "client_seed" => "INVALID_CLIENT_SEED",
                    _ => "INVALID_VALUE",
                }
            }
        }
        E::OutOfRange { field, .. } if field.starts_with("player_limits") => "INVALID_PLAYER_LIMITS",
        E::OutOfRange { field, .. } if field.starts_with("decisions[") => "UNKNOWN_SEAT",
        E::OutOfRange { .. } => "VALUE_OUT_OF_RANGE",
        E::FailedPrecondition { field, .. } if field == super::sandbox::FIELD => "NOT_A_SANDBOX_TABLE",
        E::FailedPrecondition { field, .. } if field == "commitment_token" => "TABLE_CHANGED",
        E::FailedPrecondition { .. } => "ROUND_STATE",
        E::Game(g) | E::Fairness(FairnessError::Game(g)) => game_reason(g),
        E::PlayerLimits(_) => "INVALID_PLAYER_LIMITS",
        E::Binding(BindingError::Mismatch { .. }) => "COMMITMENT_MISMATCH",
        E::Binding(BindingError::TableChanged { .. }) => "TABLE_CHANGED",
        E::Binding(BindingError::CurrencyChanged { .. }) => "CURRENCY_CHANGED",
        E::Binding(BindingError::RulesChanged { .. } | BindingError::RulesWithdrawn { .. }) => "RULES_CHANGED",
        E::Binding(BindingError::Expired { .. }) | E::InvalidToken => "INVALID_TOKEN",
        E::Fairness(FairnessError::Malformed { .. }) => "INVALID_VALUE",
        E::Odds(OddsError::RankCountOutOfRange { .. }) => "VALUE_OUT_OF_RANGE",
        E::Odds(OddsError::AmountOverflow { .. }) | E::Fairness(FairnessError::RandomSource(_)) => "INTERNAL",
        E::Odds(_) => "INVALID_VALUE",
        E::UnknownTable { .. } => "UNKNOWN_TABLE",
        E::TokenTooLarge { .. } | E::Internal(_) => "INTERNAL",
    }
}

fn game_reason(g: &GameError) -> &'static str {
    use GameError as G;
    match g {
        G::SeatCount { .. } => "SEAT_COUNT",
        G::BetOutsideLimits { .. } => "BET_OUTSIDE_LIMITS",
        G::UnknownSeat { .. } => "UNKNOWN_SEAT",
        G::SeatTwice { .. } => "DUPLICATE_SEAT",
        G::SeatAlreadyDecided { .. } => "SEAT_ALREADY_DECIDED",
        G::DecisionsClosed { .. } => "DECISIONS_CLOSED",
        G::NoDecisionOnThisHand { .. } => "NO_DECISION_ON_THIS_HAND",
        G::RoundNotComplete { .. } => "ROUND_NOT_COMPLETE",
        G::Table(TableError::LimitsDoNotOverlap { .. }) => "LIMITS_DO_NOT_OVERLAP",
        G::Table(TableError::TooLarge { .. }) => "TABLE_TOO_LARGE",
        G::Table(TableError::Limits(LimitsError::MaxBetBelowMinBet { .. }))
        | G::Paytable(PaytableError::SpreadEntries { .. })
        | G::Card(CardError::NotACard { .. })
        | G::Table(TableError::Decks(CardError::NotACard { .. })) => "INVALID_VALUE",
        G::Table(TableError::Limits(_) | TableError::Decks(CardError::DecksOutOfRange { .. }))
        | G::Card(CardError::DecksOutOfRange { .. })
        | G::Paytable(PaytableError::OddsOutOfRange { .. }) => "VALUE_OUT_OF_RANGE",
        G::InconsistentSnapshot { .. } | G::ThirdCardMissing { .. } | G::AmountOverflow { .. } => "INTERNAL",
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
        let reason_code = reason(&err);
        let Some((field, reason, report)) = describe(&err) else {
            if matches!(err, EngineError::InvalidToken | EngineError::Binding(BindingError::Expired { .. })) {
                return invalid_token("token");
            }
            tracing::error!(cause = %cause_chain(&err), "internal error");
            return Status::internal("internal error");
        };
        let message = format!("{field}: {reason}");
        let mut meta = vec![("field".to_string(), field.to_string())];
        let mut reason_override = None;
        let (code, mut details) = match report {
            Report::BadRequest(code) => (code, ErrorDetails::with_bad_request_violation(field.as_ref(), reason)),
            Report::Range { min, max } => {
                meta.push(("min".to_string(), min.to_string()));
                meta.push(("max".to_string(), max.to_string()));
                (Code::OutOfRange, ErrorDetails::with_bad_request_violation(field.as_ref(), reason))
            }
            Report::Precondition(kind) => (
                Code::FailedPrecondition,
                ErrorDetails::with_precondition_failure_violation(kind, field.as_ref(), reason),
            ),
            Report::PreconditionWithReason(kind, info_reason) => {
                reason_override = Some(info_reason);
                (
                    Code::FailedPrecondition,
                    ErrorDetails::with_precondition_failure_violation(kind, field.as_ref(), reason),
                )
            }
        };
        details.set_error_info(
            reason_override.unwrap_or(reason_code),
            ERROR_DOMAIN,
            meta.into_iter().collect::<std::collections::HashMap<_, _>>(),
        );
        Status::with_error_details(code, message, details)
    }
}

/// The uniform answer to an unusable token in request field `field` (`commitment_token` or
/// `round_token`): the same for every reason the token is unusable.
pub fn invalid_token(field: &'static str) -> Status {
    let mut d = ErrorDetails::with_bad_request_violation(field, INVALID_TOKEN_MESSAGE);
    d.set_error_info("INVALID_TOKEN", ERROR_DOMAIN, [("field".to_string(), field.to_string())]);
    Status::with_error_details(Code::InvalidArgument, INVALID_TOKEN_MESSAGE, d)
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
            (EngineError::invalid("round_token", "required"), "MISSING_FIELD"),
            (EngineError::invalid("client_seed", "required: the player's client seed"), "MISSING_FIELD"),
            (EngineError::invalid("decisions", "at least one decision is required"), "MISSING_FIELD"),
            (EngineError::invalid("round_id", "at most 128 bytes"), "INVALID_ROUND_ID"),
            (EngineError::invalid("table_id", "at most 64 bytes"), "INVALID_TABLE_ID"),
            (EngineError::invalid("client_seed", "at most 1024 bytes of UTF-8"), "INVALID_CLIENT_SEED"),
            (EngineError::invalid("decisions[1].action", "must be ACTION_RAISE or ACTION_STAND"), "INVALID_ACTION"),
            (EngineError::invalid("decisions[1].seat", "the same seat appears twice"), "DUPLICATE_SEAT"),
            (EngineError::invalid("sandbox_cards[0]", "not a card"), "INVALID_SANDBOX_CARDS"),
            (EngineError::invalid("round_id", "the request message is not valid protobuf: x"), "MALFORMED_REQUEST"),
            (EngineError::Game(GameError::SeatCount { seats: 0 }), "SEAT_COUNT"),
            (
                EngineError::Game(GameError::BetOutsideLimits { seat: 0, bet: Money(1), limits: BetLimits::STANDARD }),
                "BET_OUTSIDE_LIMITS",
            ),
            (EngineError::out_of_range("player_limits.min_bet", 0u64, 1, 5), "INVALID_PLAYER_LIMITS"),
            (EngineError::out_of_range("decisions[0].seat", 9u64, 0, 1), "UNKNOWN_SEAT"),
            (EngineError::UnknownTable { table_id: "x".into() }, "UNKNOWN_TABLE"),
            (EngineError::Game(GameError::SeatAlreadyDecided { seat: 0 }), "SEAT_ALREADY_DECIDED"),
            (EngineError::Game(GameError::DecisionsClosed { seat: 0 }), "DECISIONS_CLOSED"),
            (
                EngineError::Game(GameError::NoDecisionOnThisHand { seat: 0, class: HandClass::Pair }),
                "NO_DECISION_ON_THIS_HAND",
            ),
            (EngineError::Binding(BindingError::TableChanged { committed_decks: 1, table_decks: 2 }), "TABLE_CHANGED"),
            (
                EngineError::Binding(BindingError::CurrencyChanged { committed: "EUR".into(), table: "JPY".into() }),
                "CURRENCY_CHANGED",
            ),
            (EngineError::precondition("sandbox_cards", "not a sandbox table"), "NOT_A_SANDBOX_TABLE"),
        ];
        let status_codes = ["INVALID_ARGUMENT", "OUT_OF_RANGE", "FAILED_PRECONDITION", "NOT_FOUND"];
        for (err, want) in cases {
            let status = Status::from(err.clone());
            let got = status.get_error_details().error_info().unwrap().reason.clone();
            assert_eq!(got, want, "{err:?}");
            assert!(!status_codes.contains(&got.as_str()), "{err:?}");
        }
        let sandbox = Status::from(EngineError::precondition("sandbox_cards", "not a sandbox table"));
        let details = sandbox.get_error_details();
        let violation = &details.precondition_failure().unwrap().violations[0];
        assert_eq!((violation.r#type.as_str(), violation.subject.as_str()), ("SANDBOX", "sandbox_cards"));
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
