//! The one mapping from [`EngineError`] to a gRPC [`Status`], with `google.rpc` details that
//! name the field at fault:
//!
//! | engine error | status | details |
//! |---|---|---|
//! | `InvalidArgument` | `INVALID_ARGUMENT` | `BadRequest` (field) + `ErrorInfo` |
//! | `OutOfRange` | `OUT_OF_RANGE` | `BadRequest` (field) + `ErrorInfo` |
//! | `FailedPrecondition` | `FAILED_PRECONDITION` | `PreconditionFailure` (subject = field) + `ErrorInfo` |
//! | `InvalidToken` | `INVALID_ARGUMENT`, always the same message | `ErrorInfo` reason `INVALID_TOKEN` |
//! | `Internal` | `INTERNAL`, generic message (the cause is logged, never sent) | none |
//!
//! A token that is tampered, truncated, sealed under a key not in the ring, of the wrong
//! kind or expired gets the identical status, message and details.

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::error::EngineError;

/// `ErrorInfo.domain` of every error the engine sends.
pub const ERROR_DOMAIN: &str = "reddog.v1";
/// The one message for every unusable token.
pub const INVALID_TOKEN_MESSAGE: &str = "token is not valid";

impl From<EngineError> for Status {
    fn from(err: EngineError) -> Status {
        match err {
            EngineError::InvalidArgument { ref field, ref reason } => {
                let mut d = ErrorDetails::with_bad_request_violation(field.as_ref(), reason.as_str());
                d.set_error_info("INVALID_ARGUMENT", ERROR_DOMAIN, [("field".to_string(), field.to_string())]);
                Status::with_error_details(Code::InvalidArgument, err.to_string(), d)
            }
            EngineError::OutOfRange { ref field, value, min, max } => {
                let mut d = ErrorDetails::with_bad_request_violation(
                    field.as_ref(),
                    format!("{value} is outside {min}..={max}"),
                );
                d.set_error_info(
                    "OUT_OF_RANGE",
                    ERROR_DOMAIN,
                    [
                        ("field".to_string(), field.to_string()),
                        ("min".to_string(), min.to_string()),
                        ("max".to_string(), max.to_string()),
                    ],
                );
                Status::with_error_details(Code::OutOfRange, err.to_string(), d)
            }
            EngineError::FailedPrecondition { ref field, ref reason } => {
                let mut d =
                    ErrorDetails::with_precondition_failure_violation("ROUND_STATE", field.as_ref(), reason.as_str());
                d.set_error_info("FAILED_PRECONDITION", ERROR_DOMAIN, [("field".to_string(), field.to_string())]);
                Status::with_error_details(Code::FailedPrecondition, err.to_string(), d)
            }
            EngineError::InvalidToken => invalid_token("token"),
            EngineError::Internal(cause) => {
                tracing::error!(%cause, "internal error");
                Status::internal("internal error")
            }
        }
    }
}

/// The uniform answer to an unusable token in request field `field` (`commitment_token` or
/// `round_token`): the same for every reason the token is unusable.
pub fn invalid_token(field: &'static str) -> Status {
    let mut d = ErrorDetails::with_bad_request_violation(field, INVALID_TOKEN_MESSAGE);
    d.set_error_info("INVALID_TOKEN", ERROR_DOMAIN, [("field".to_string(), field.to_string())]);
    Status::with_error_details(Code::InvalidArgument, INVALID_TOKEN_MESSAGE, d)
}
