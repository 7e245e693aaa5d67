//! The evidence a round leaves: the audit trail and the signed receipts.
//!
//! - [`audit_sink`], [`audit_record`]: the write-ahead audit sink and the records it writes
//!   (typed in [`crate::audit::record`], chained by hash);
//! - [`signing`]: the receipt and checkpoint signer.

pub(crate) mod audit_record;
pub(crate) mod audit_sink;
pub(crate) mod signing;
