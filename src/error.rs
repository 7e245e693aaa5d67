//! The service's error type. Errors of the core keep their own types (the rules'
//! [`GameError`], a commitment's [`BindingError`], the fair deal's [`FairnessError`],
//! [`OddsError`]) and travel here unchanged; the service adds the errors only it can see:
//! a request field that is missing or malformed (named by its request path), a table it
//! does not serve, a token it cannot open. The service edge (`service::error`) is the one
//! place that turns each into a request field path and a gRPC status. None carries a
//! secret (seeds, keys, hidden cards) in its text.

use std::borrow::Cow;
use std::sync::Arc;

use crate::fairness::{BindingError, FairnessError};
use crate::game::{CardError, GameError, LimitsError, PaytableError, TableError};
use crate::odds::OddsError;

/// What can go wrong in the engine. Caller mistakes and broken invariants are separate
/// variants, so the service never answers a caller's mistake with `INTERNAL`. Each variant
/// decides its gRPC code and `ErrorInfo.reason` (`service::error`): a request's mistakes have
/// a variant each, and the text a variant carries is for people only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// A required request field is empty (`what` says what belongs there).
    #[error("{field}: {what}")]
    Missing { field: &'static str, what: &'static str },

    /// A round id too long, with control characters, or not the one its token carries.
    #[error("{field}: {reason}")]
    InvalidRoundId { field: &'static str, reason: Cow<'static, str> },

    /// A table id too long or with characters outside `[A-Za-z0-9._-]`.
    #[error("table_id: {reason}")]
    InvalidTableId { reason: String },

    /// A client seed too long.
    #[error("client_seed: {reason}")]
    InvalidClientSeed { reason: String },

    /// Decision `index` of a Decide names an action that is neither raise nor stand.
    #[error("decisions[{index}].action: {ACTION_RULE}")]
    InvalidAction { index: usize },

    /// Decision `index` of a Decide names a seat an earlier decision of the call named.
    #[error("decisions[{index}].seat: the same seat appears twice")]
    DuplicateSeat { index: usize },

    /// Decision `index` of a Decide names a seat the round (of `seats` seats) does not have.
    #[error("decisions[{index}].seat: {seat} is outside 0..={}", seats.saturating_sub(1))]
    UnknownSeat { index: usize, seat: u32, seats: usize },

    /// A requested deal (`sandbox_cards`) at a sandbox table that is not one: not card codes,
    /// the wrong count for the hand, a card more often than the shoe holds it.
    #[error("{field}: {reason}")]
    InvalidSandboxCards { field: Cow<'static, str>, reason: String },

    /// A requested deal at a table that is not a sandbox table.
    #[error(
        "sandbox_cards: table {table_id:?} is not a sandbox table: a requested deal is accepted only at a table \
         marked \"sandbox\": true, on an engine started with --allow-sandbox"
    )]
    NotASandboxTable { table_id: String },

    /// A commitment made at a sandbox table meets a fair table of that id, or the reverse
    /// (the table was re-configured between CommitSeed and StartRound).
    #[error(
        "commitment_token: the table changed since the commitment (made at {} table, {table_id:?} is now {} \
         table); ask a new commitment",
        if *committed_sandbox { "a sandbox" } else { "a fair" },
        if *committed_sandbox { "a fair" } else { "a sandbox" }
    )]
    SandboxChanged { committed_sandbox: bool, table_id: String },

    /// A request message that is not valid protobuf (`field`: the field prost names, else
    /// `request`), or no request message at all.
    #[error("{field}: {reason}")]
    MalformedRequest { field: String, reason: String },

    /// A configuration value has the wrong form (empty, malformed, not allowed here). No
    /// request field is reported with it: requests have their own variants above.
    #[error("{field}: {reason}")]
    InvalidArgument { field: Cow<'static, str>, reason: String },

    /// A configuration number lies outside its allowed range.
    #[error("{field}: {value} is outside {min}..={max}")]
    OutOfRange { field: Cow<'static, str>, value: u64, min: u64, max: u64 },

    /// The rules refused a step or a value (a bet, a decision, a table).
    #[error(transparent)]
    Game(#[from] GameError),

    /// The player's limits a request states are not limits.
    #[error("player_limits: {0}")]
    PlayerLimits(#[source] LimitsError),

    /// The commitment may not deal the round asked for.
    #[error(transparent)]
    Binding(#[from] BindingError),

    /// The fair deal failed (e.g. the OS random source) or refused a document.
    #[error(transparent)]
    Fairness(#[from] FairnessError),

    /// The odds calculator refused its input.
    #[error(transparent)]
    Odds(#[from] OddsError),

    /// A table id this engine does not serve.
    #[error("this engine serves no table {table_id:?}")]
    UnknownTable { table_id: String },

    /// A round or commitment token that is not genuine, is truncated, was sealed under a key
    /// this engine does not hold, or has expired. Deliberately says nothing about which.
    #[error("round or commitment token is not valid")]
    InvalidToken,

    /// A genuine token older than the support window (`service::round::token::SUPPORT_WINDOW_MS`),
    /// by its issue time or its format: `age` says how.
    #[error("{field}: {age}")]
    TokenTooOld { field: &'static str, age: String },

    /// A sealed token would be longer than the engine accepts back. Unreachable: requests
    /// that could produce one are refused up front (see `service::round::token::MAX_TOKEN_LEN`).
    #[error("a {len}-byte token exceeds the {max}-byte budget")]
    TokenTooLarge { len: usize, max: usize },

    /// A bug or a broken environment in the service's own machinery; never a caller's mistake.
    #[error("internal error")]
    Internal(#[from] Fault),
}

/// What a decision's action must be.
pub const ACTION_RULE: &str = "must be ACTION_RAISE or ACTION_STAND";

/// What failed when the service's own machinery broke (a bug, or a broken environment). Each
/// keeps the error that caused it, so the log shows the whole chain; none is sent to a caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    /// Deriving a key's token-sealing keys (HKDF, HMAC) refused the key material.
    #[error("deriving the token keys of key {key_id:?} failed")]
    KeyDerivation { key_id: String, source: Cause },

    /// The AEAD refused to seal a token.
    #[error("sealing a token failed")]
    Seal(#[source] Cause),

    /// A token payload encoded to another length than the one measured before encoding.
    #[error("a token payload encoded to {actual} bytes where {expected} were measured")]
    PayloadLength { expected: usize, actual: usize },

    /// The reveal document could not be written as JSON.
    #[error("writing the reveal as JSON failed")]
    RevealJson(#[source] Cause),
}

/// The error beneath a [`Fault`], shared so that errors stay `Clone`. Two causes are equal when
/// they read the same.
#[derive(Debug, Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    /// Keeps `error` as a cause.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Cause {
        Cause(Arc::new(error))
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Cause) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Cause {}

/// The errors of a table, a paytable and a card reach the service as the rules' errors.
macro_rules! from_game {
    ($($e:ty),*) => {$(
        impl From<$e> for EngineError {
            fn from(e: $e) -> EngineError {
                EngineError::Game(GameError::from(e))
            }
        }
    )*};
}
from_game!(CardError, PaytableError, TableError);

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

    /// The field a request or configuration error names, as the error states it (errors of
    /// the core carry no request path: the service edge builds it, `service::error`).
    pub fn field(&self) -> Option<Cow<'_, str>> {
        use EngineError as E;
        Some(match self {
            E::Missing { field, .. } | E::InvalidRoundId { field, .. } => Cow::Borrowed(field),
            E::InvalidArgument { field, .. } | E::OutOfRange { field, .. } | E::InvalidSandboxCards { field, .. } => {
                Cow::Borrowed(field)
            }
            E::MalformedRequest { field, .. } => Cow::Borrowed(field),
            E::TokenTooOld { field, .. } => Cow::Borrowed(field),
            E::InvalidTableId { .. } => Cow::Borrowed("table_id"),
            E::InvalidClientSeed { .. } => Cow::Borrowed("client_seed"),
            E::InvalidAction { index } => Cow::Owned(format!("decisions[{index}].action")),
            E::DuplicateSeat { index } | E::UnknownSeat { index, .. } => Cow::Owned(format!("decisions[{index}].seat")),
            E::NotASandboxTable { .. } => Cow::Borrowed("sandbox_cards"),
            E::SandboxChanged { .. } => Cow::Borrowed("commitment_token"),
            _ => return None,
        })
    }
}
