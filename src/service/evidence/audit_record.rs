//! The audit records the service writes: the types are [`crate::audit::record`]'s (one
//! definition of `reddog-audit-v1`, docs/AUDIT.md "The records", for the writer, the readers
//! and the tests); here is what only the writer needs. The handlers build each record from
//! their own values, borrowed (building one allocates nothing);
//! [`crate::service::evidence::audit_sink::AuditSink`] serialises it behind its envelope into a reused buffer,
//! hashes the line and chains the next record to it. A table's rules digest has one
//! definition: [`crate::fairness::TableRules::of`] (via [`crate::service::NamedTable::digest`]).

pub(crate) use crate::fairness::receipt::checkpoint_message;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checkpoint_message_is_length_prefixed_fields() {
        let m = checkpoint_message("r-1", "ab", 7, &[9; 32]);
        let mut want = Vec::new();
        want.extend_from_slice(&26u32.to_be_bytes());
        want.extend_from_slice(b"reddog/audit/checkpoint/v1");
        want.extend_from_slice(&3u32.to_be_bytes());
        want.extend_from_slice(b"r-1");
        want.extend_from_slice(&2u32.to_be_bytes());
        want.extend_from_slice(b"ab");
        want.extend_from_slice(&8u32.to_be_bytes());
        want.extend_from_slice(&7u64.to_be_bytes());
        want.extend_from_slice(&32u32.to_be_bytes());
        want.extend_from_slice(&[9; 32]);
        assert_eq!(m, want);
    }
}
