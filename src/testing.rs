//! What the tests (tests/it), fuzz targets (fuzz/), benches and examples reach that is not
//! the service's public API ([`crate::service`]): sealing token payloads by hand (to forge,
//! replay or age a token), the audit record types (to write a trail without an engine), the
//! bare transport and its timing constants. Not for production code: nothing here is stable.

pub use crate::service::edge::guard::{overloaded, queued_too_long, timed_out, too_large};
pub use crate::service::edge::http2::RETIRE_GRACE;
pub use crate::service::edge::transport::{
    DELIVERY_DEADLINE, DISPLACE_MIN_IDLE, HEALTH_DISPLACE_MIN_IDLE, RETIRE_MIN_AGE, RETIRE_MIN_CALLS, UNUSED_MIN_AGE,
};
pub use crate::service::evidence::audit_sink::AuditRefused;
pub use crate::service::evidence::audit_writer::Cause as AuditSinkCause;
pub use crate::service::ops::log_writer::{BatchWriter, Full};
pub use crate::service::round::state::{CommitmentPayload, DEFAULT_TABLE_ID, RoundPayload, RoundState};
pub use crate::service::round::token::{MAX_TOKEN_LEN, TokenKind};
pub use crate::service::server::serve_service;

/// A commitment token's payload exactly as CommitSeed builds it: `seed`, bound to `round_id`
/// and `nonce` at `table` (its rules, currency and digest), issued at `issued_at_unix_ms`,
/// expiring at `expires_at_unix_ms`. Seal it with [`crate::service::KeyRing::seal`].
pub fn commitment_payload(
    seed: [u8; 32],
    round_id: &str,
    nonce: u64,
    table: &crate::service::NamedTable,
    issued_at_unix_ms: i64,
    expires_at_unix_ms: i64,
) -> CommitmentPayload {
    let req = crate::proto::CommitSeedRequest { round_id: round_id.to_string(), nonce, table_id: table.id.clone() };
    let seed = crate::fairness::ServerSeed::from_bytes(seed);
    crate::service::round::api::commitment_payload(
        &seed,
        &req,
        table,
        &table.digest(),
        (issued_at_unix_ms, expires_at_unix_ms),
    )
}

/// The audit trail's record types, as the engine writes them and the readers read them.
pub use crate::audit::record;
