//! The evidence a round leaves: the audit trail and the signed receipts.
//!
//! - [`audit_sink`], [`audit_record`], [`audit_writer`]: the write-ahead audit sink, the
//!   records it writes (typed in [`crate::audit::record`], chained by hash) and the writer
//!   thread that answers a call only once the output took its record;
//! - [`signing`]: the receipt and checkpoint signer.

pub(crate) mod audit_record;
pub(crate) mod audit_sink;
pub(crate) mod audit_writer;
pub(crate) mod signing;
