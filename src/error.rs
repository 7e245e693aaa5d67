//! The engine's one error type. Every error names what was wrong (a field path such as
//! `seats[2].bet`) so the service can turn it into a precise gRPC status; none carries a
//! secret (seeds, keys, hidden cards) in its text.

use std::borrow::Cow;

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

    /// The step is not allowed in the round's current phase or for this seat.
    #[error("{field}: {reason}")]
    FailedPrecondition { field: Cow<'static, str>, reason: String },

    /// A round token that is not genuine, is truncated, was sealed under a key this engine
    /// does not hold, or has expired. Deliberately says nothing about which.
    #[error("round or commitment token is not valid")]
    InvalidToken,

    /// A bug or a broken environment (e.g. the OS random source failed); never a caller's
    /// mistake.
    #[error("internal error: {0}")]
    Internal(String),
}

impl EngineError {
    pub fn invalid(field: impl Into<Cow<'static, str>>, reason: impl Into<String>) -> Self {
        EngineError::InvalidArgument { field: field.into(), reason: reason.into() }
    }

    pub fn out_of_range(field: impl Into<Cow<'static, str>>, value: impl TryInto<u64>, min: u64, max: u64) -> Self {
        EngineError::OutOfRange { field: field.into(), value: value.try_into().unwrap_or(u64::MAX), min, max }
    }

    pub fn precondition(field: impl Into<Cow<'static, str>>, reason: impl Into<String>) -> Self {
        EngineError::FailedPrecondition { field: field.into(), reason: reason.into() }
    }

    /// The field the error is about, if it is about one.
    pub fn field(&self) -> Option<&str> {
        match self {
            EngineError::InvalidArgument { field, .. }
            | EngineError::OutOfRange { field, .. }
            | EngineError::FailedPrecondition { field, .. } => Some(field),
            EngineError::InvalidToken | EngineError::Internal(_) => None,
        }
    }
}
