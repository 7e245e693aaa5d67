//! The one mapping from [`EngineError`] to a gRPC [`Status`]: it builds the request field
//! path of each error (e.g. `seats[2].bet` from "seat 2's bet is outside the limits") and
//! attaches `google.rpc` details that name it:
//!
//! | engine error | status | field | details |
//! |---|---|---|---|
//! | `InvalidArgument` | `INVALID_ARGUMENT` | its field | `BadRequest` + `ErrorInfo` |
//! | `OutOfRange` | `OUT_OF_RANGE` | its field | `BadRequest` + `ErrorInfo` (`min`, `max`) |
//! | `SeatCount` | `OUT_OF_RANGE` | `seats` | `BadRequest` + `ErrorInfo` (`min`, `max`) |
//! | `BetOutsideLimits` | `OUT_OF_RANGE` | `seats[i].bet` | `BadRequest` + `ErrorInfo` (`min`, `max`) |
//! | `UnknownSeat` | `OUT_OF_RANGE` | `seat` | `BadRequest` + `ErrorInfo` (`min`, `max`) |
//! | `SeatTwice` | `INVALID_ARGUMENT` | `decisions` | `BadRequest` + `ErrorInfo` |
//! | `FailedPrecondition` | `FAILED_PRECONDITION` | its field | `PreconditionFailure` + `ErrorInfo` |
//! | `SeatAlreadyDecided`, `DecisionsClosed`, `NoDecisionOnThisHand` | `FAILED_PRECONDITION` | `seats[i].decision` | `PreconditionFailure` + `ErrorInfo` |
//! | `RoundNotComplete` | `FAILED_PRECONDITION` | `round` | `PreconditionFailure` + `ErrorInfo` |
//! | `LimitsDoNotOverlap` | `FAILED_PRECONDITION` | `player_limits` | `PreconditionFailure` + `ErrorInfo` |
//! | `CommitmentMismatch` | `FAILED_PRECONDITION` | `round_id` / `nonce` / `table_id` | `PreconditionFailure` (type `COMMITMENT_BINDING`) + `ErrorInfo` |
//! | `TableChanged`, `CurrencyChanged` | `FAILED_PRECONDITION` | `commitment_token` | `PreconditionFailure` (type `COMMITMENT_BINDING`) + `ErrorInfo` |
//! | `RulesChanged` | `FAILED_PRECONDITION` | `commitment_token` | `PreconditionFailure` (type `COMMITMENT_BINDING`) + `ErrorInfo` reason `RULES_CHANGED` |
//! | `UnknownTable` | `NOT_FOUND` | `table_id` | `BadRequest` + `ErrorInfo` |
//! | `TableTooLarge` | `INVALID_ARGUMENT` | `max_bet` (configuration; never a request) | `BadRequest` + `ErrorInfo` |
//! | `InvalidToken` | `INVALID_ARGUMENT`, always the same message | the token field | `BadRequest` + `ErrorInfo` reason `INVALID_TOKEN` |
//! | `TokenTooLarge`, `AmountOverflow`, `Internal` | `INTERNAL`, generic message (the cause is logged, never sent) | — | none |
//!
//! The status message is `"<field>: <what happened>"`. A token that is tampered, truncated,
//! sealed under a key not in the ring, of the wrong kind or expired gets the identical
//! status, message and details.

use std::borrow::Cow;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::error::EngineError;
use crate::game::MAX_SEATS;

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

/// The request field an error is about, the reason to report, and how.
fn describe(err: &EngineError) -> Option<(Cow<'static, str>, String, Report)> {
    use EngineError as E;
    let what = || err.to_string();
    Some(match err {
        E::InvalidArgument { field, reason } => {
            (field.clone(), reason.clone(), Report::BadRequest(Code::InvalidArgument))
        }
        E::OutOfRange { field, value, min, max } => {
            (field.clone(), format!("{value} is outside {min}..={max}"), Report::Range { min: *min, max: *max })
        }
        E::FailedPrecondition { field, reason } => (field.clone(), reason.clone(), Report::Precondition("ROUND_STATE")),
        E::SeatCount { .. } => ("seats".into(), what(), Report::Range { min: 1, max: MAX_SEATS as u64 }),
        E::BetOutsideLimits { seat, limits, .. } => (
            format!("seats[{seat}].bet").into(),
            what(),
            Report::Range { min: limits.min().minor(), max: limits.max().minor() },
        ),
        E::UnknownSeat { seats, .. } => {
            ("seat".into(), what(), Report::Range { min: 0, max: (*seats).max(1) as u64 - 1 })
        }
        E::SeatTwice { .. } => ("decisions".into(), what(), Report::BadRequest(Code::InvalidArgument)),
        E::SeatAlreadyDecided { seat } | E::DecisionsClosed { seat } | E::NoDecisionOnThisHand { seat, .. } => {
            (format!("seats[{seat}].decision").into(), what(), Report::Precondition("ROUND_STATE"))
        }
        E::RoundNotComplete { .. } => ("round".into(), what(), Report::Precondition("ROUND_STATE")),
        E::LimitsDoNotOverlap { .. } => ("player_limits".into(), what(), Report::Precondition("LIMITS")),
        E::CommitmentMismatch { field, .. } => {
            (field.name().into(), what(), Report::Precondition("COMMITMENT_BINDING"))
        }
        E::TableChanged { .. } | E::CurrencyChanged { .. } => {
            ("commitment_token".into(), what(), Report::Precondition("COMMITMENT_BINDING"))
        }
        E::RulesChanged { .. } => {
            ("commitment_token".into(), what(), Report::PreconditionWithReason("COMMITMENT_BINDING", "RULES_CHANGED"))
        }
        E::UnknownTable { .. } => ("table_id".into(), what(), Report::BadRequest(Code::NotFound)),
        E::TableTooLarge { .. } => ("max_bet".into(), what(), Report::BadRequest(Code::InvalidArgument)),
        E::InvalidToken | E::TokenTooLarge { .. } | E::AmountOverflow { .. } | E::Internal(_) => return None,
    })
}

fn reason_code(code: Code) -> &'static str {
    match code {
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::NotFound => "NOT_FOUND",
        _ => "INVALID_ARGUMENT",
    }
}

impl From<EngineError> for Status {
    fn from(err: EngineError) -> Status {
        let Some((field, reason, report)) = describe(&err) else {
            if err == EngineError::InvalidToken {
                return invalid_token("token");
            }
            tracing::error!(cause = %err, "internal error");
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
            reason_override.unwrap_or_else(|| reason_code(code)),
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
    use crate::error::BoundField;
    use crate::game::{BetLimits, HandClass, Money};

    fn field_of(status: &Status) -> String {
        status.get_error_details().error_info().unwrap().metadata["field"].clone()
    }

    #[test]
    fn the_edge_builds_each_field_path_and_status() {
        let cases: Vec<(EngineError, Code, &str)> = vec![
            (EngineError::SeatCount { seats: 8 }, Code::OutOfRange, "seats"),
            (
                EngineError::BetOutsideLimits { seat: 2, bet: Money(1), limits: BetLimits::STANDARD },
                Code::OutOfRange,
                "seats[2].bet",
            ),
            (EngineError::SeatAlreadyDecided { seat: 1 }, Code::FailedPrecondition, "seats[1].decision"),
            (EngineError::DecisionsClosed { seat: 0 }, Code::FailedPrecondition, "seats[0].decision"),
            (
                EngineError::NoDecisionOnThisHand { seat: 3, class: HandClass::Pair },
                Code::FailedPrecondition,
                "seats[3].decision",
            ),
            (
                EngineError::CommitmentMismatch {
                    field: BoundField::Nonce,
                    committed: "1".into(),
                    requested: "2".into(),
                },
                Code::FailedPrecondition,
                "nonce",
            ),
            (
                EngineError::TableChanged { committed_decks: 1, table_decks: 2 },
                Code::FailedPrecondition,
                "commitment_token",
            ),
            (
                EngineError::CurrencyChanged { committed: "EUR".into(), table: "JPY".into() },
                Code::FailedPrecondition,
                "commitment_token",
            ),
            (
                EngineError::RulesChanged { committed: "ab".repeat(32), table: "cd".repeat(32) },
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
        let bet = Status::from(EngineError::BetOutsideLimits { seat: 0, bet: Money(1), limits: BetLimits::STANDARD });
        let info = bet.get_error_details().error_info().unwrap().clone();
        assert_eq!((info.metadata["min"].as_str(), info.metadata["max"].as_str()), ("500", "30000"));
        let changed = Status::from(EngineError::RulesChanged { committed: "ab".repeat(32), table: "cd".repeat(32) });
        assert_eq!(changed.get_error_details().error_info().unwrap().reason, "RULES_CHANGED");
    }

    #[test]
    fn internal_errors_say_nothing_of_their_cause() {
        for err in [
            EngineError::TokenTooLarge { len: 2000, max: 1500 },
            EngineError::overflow("a total"),
            EngineError::Internal("secret detail".into()),
        ] {
            let status = Status::from(err);
            assert_eq!(status.code(), Code::Internal);
            assert_eq!(status.message(), "internal error");
        }
    }
}
