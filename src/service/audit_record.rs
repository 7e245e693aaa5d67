//! The audit records the service writes: the types are [`crate::audit::record`]'s (one
//! definition of `reddog-audit-v1`, docs/AUDIT.md "The records", for the writer, the readers
//! and the tests); here is what only the writer needs. The handlers build each record from
//! their own values, borrowed (building one allocates nothing);
//! [`super::audit_sink::AuditSink`] serialises it behind its envelope into a reused buffer,
//! hashes the line and chains the next record to it.

use super::tables::Currency;
use crate::game::Table;

pub(crate) use crate::fairness::receipt::checkpoint_message;

/// The table's rules digest (docs/design/evidence-contract.md §3), as the commitment token
/// and `t_0` bind it: [`crate::fairness::TableRules::digest`].
pub fn rules_digest(table: &Table, currency: &Currency) -> [u8; 32] {
    crate::fairness::TableRules {
        decks: table.decks(),
        paytable: table.paytable(),
        limits: table.limits(),
        currency: currency.code(),
        exponent: currency.minor_unit_exponent(),
    }
    .digest()
    .0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::{Money, Paytable};

    #[test]
    fn the_rules_digest_covers_every_rule_that_decides_a_payout() {
        let base = Table::default();
        let eur = Currency::new("EUR", 2, "t").unwrap();
        let d = rules_digest(&base, &eur);
        assert_eq!(d, rules_digest(&base.clone(), &eur.clone()), "a pure function");
        let other_currency = Currency::new("USD", 2, "t").unwrap();
        let other_exponent = Currency::new("EUR", 3, "t").unwrap();
        assert_ne!(d, rules_digest(&base, &other_currency));
        assert_ne!(d, rules_digest(&base, &other_exponent));
        let spec = |decks: u8, min: u64, max: u64, odds: u32| {
            let paytable = Paytable::new([odds, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1], 11).unwrap();
            Table::new(
                crate::game::Decks::new(u32::from(decks)).unwrap(),
                paytable,
                crate::game::BetLimits::new(Money(min), Money(max)).unwrap(),
            )
            .unwrap()
        };
        let t = spec(6, 100, 10_000, 5);
        let digests = [
            rules_digest(&t, &eur),
            rules_digest(&spec(8, 100, 10_000, 5), &eur),
            rules_digest(&spec(6, 101, 10_000, 5), &eur),
            rules_digest(&spec(6, 100, 10_001, 5), &eur),
            rules_digest(&spec(6, 100, 10_000, 6), &eur),
        ];
        for (i, a) in digests.iter().enumerate() {
            for b in &digests[i + 1..] {
                assert_ne!(a, b, "each rule changes the digest");
            }
        }
    }

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
