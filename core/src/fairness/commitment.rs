//! The rules a commitment obeys between CommitSeed and StartRound (`docs/FAIRNESS.md` §7):
//! it deals only the round it was made for (round id, nonce, table), under the rules it was
//! made under (carried in its token; a token sealed before rules travelled needs the table's
//! deck count, currency and digest unchanged), never under rules the operator withdrew, and
//! only until it expires. The service opens the commitment token and calls these checks; each
//! refusal says what differed, with both values.

use std::fmt;

use super::RulesDigest;
use crate::game::Decks;

/// A value a commitment is bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoundField {
    RoundId,
    Nonce,
    TableId,
}

impl fmt::Display for BoundField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BoundField::RoundId => "round id",
            BoundField::Nonce => "nonce",
            BoundField::TableId => "table",
        })
    }
}

/// Why a commitment may not deal the round asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    /// Another round id, nonce or table than the commitment was made for.
    #[error("the commitment was made for {field} {committed}, not {requested}")]
    Mismatch { field: BoundField, committed: String, requested: String },

    /// The table's deck count changed since the commitment.
    #[error(
        "the table changed since the commitment (committed for {committed_decks} deck(s), the table now has \
         {table_decks}); ask a new commitment"
    )]
    TableChanged { committed_decks: u8, table_decks: u8 },

    /// The table's currency changed since the commitment (whose answer named the currency
    /// the bets would be in).
    #[error(
        "the table changed since the commitment (committed in {committed}, the table now uses {table}); ask a new \
         commitment"
    )]
    CurrencyChanged { committed: String, table: String },

    /// The table's rules digest (deck count, paytable, bet limits, currency) changed since
    /// the commitment, which bound and showed it.
    #[error(
        "the table's rules changed since the commitment (committed under rules digest {committed}, the table's \
         rules digest is now {table}); ask a new commitment"
    )]
    RulesChanged { committed: String, table: String },

    /// The operator withdrew the rules the commitment was made under (the table's
    /// `withdrawn_rules`): no round is dealt under them any more.
    #[error(
        "the rules the commitment was made under (rules digest {committed}) were withdrawn by the operator; the \
         table's rules digest is now {table}; ask a new commitment"
    )]
    RulesWithdrawn { committed: String, table: String },

    /// The commitment's lifetime is over.
    #[error("the commitment expired at {expires_at_unix_ms} ms after the epoch; it is now {now_unix_ms}")]
    Expired { expires_at_unix_ms: i64, now_unix_ms: i64 },
}

/// The round a commitment was made for, or a StartRound's request for one. An empty
/// `table_id` in a request means "the commitment's table".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoundRef<'a> {
    pub round_id: &'a str,
    pub nonce: u64,
    pub table_id: &'a str,
}

/// A currency as a commitment binds it: ISO 4217 code and minor-unit exponent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CurrencyRef<'a> {
    pub code: &'a str,
    pub exponent: u8,
}

impl fmt::Display for CurrencyRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (exponent {})", self.code, self.exponent)
    }
}

/// A table's configuration as far as a commitment binds it. `currency` and `rules_digest`
/// are `None` in a commitment sealed before they were bound: such a commitment deals under
/// the table's current currency and rules until it expires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableRef<'a> {
    pub decks: Decks,
    pub currency: Option<CurrencyRef<'a>>,
    pub rules_digest: Option<RulesDigest>,
}

/// Refuses a request for another round than `committed`: the round id and nonce must be
/// equal, the table equal unless the request leaves it empty.
pub fn check_binding(committed: &RoundRef<'_>, requested: &RoundRef<'_>) -> Result<(), BindingError> {
    let mismatch = |field, committed: String, requested: String| BindingError::Mismatch { field, committed, requested };
    if committed.round_id != requested.round_id {
        return Err(mismatch(
            BoundField::RoundId,
            format!("{:?}", committed.round_id),
            format!("{:?}", requested.round_id),
        ));
    }
    if committed.nonce != requested.nonce {
        return Err(mismatch(BoundField::Nonce, committed.nonce.to_string(), requested.nonce.to_string()));
    }
    check_table(committed.table_id, requested.table_id)
}

/// Refuses a request naming a table other than `committed_table` (an empty request table
/// means the committed one). A commitment sealed before binding existed is bound to the
/// default table only.
pub fn check_table(committed_table: &str, requested_table: &str) -> Result<(), BindingError> {
    if requested_table.is_empty() || requested_table == committed_table {
        return Ok(());
    }
    Err(BindingError::Mismatch {
        field: BoundField::TableId,
        committed: format!("{committed_table:?}"),
        requested: format!("{requested_table:?}"),
    })
}

/// Refuses a table whose deck count, currency or rules digest differ from those the
/// commitment was made under. `now` is the table as configured now (its currency and
/// digest always known).
pub fn check_table_unchanged(committed: &TableRef<'_>, now: &TableRef<'_>) -> Result<(), BindingError> {
    if committed.decks != now.decks {
        return Err(BindingError::TableChanged {
            committed_decks: committed.decks.get(),
            table_decks: now.decks.get(),
        });
    }
    if let (Some(c), Some(t)) = (committed.currency, now.currency)
        && c != t
    {
        return Err(BindingError::CurrencyChanged { committed: c.to_string(), table: t.to_string() });
    }
    if let (Some(c), Some(t)) = (committed.rules_digest, now.rules_digest)
        && c != t
    {
        return Err(BindingError::RulesChanged { committed: c.to_hex(), table: t.to_hex() });
    }
    Ok(())
}

/// Refuses a commitment used after `expires_at_unix_ms` (the last valid millisecond is
/// `expires_at_unix_ms` itself).
pub fn check_expiry(expires_at_unix_ms: i64, now_unix_ms: i64) -> Result<(), BindingError> {
    if now_unix_ms > expires_at_unix_ms {
        Err(BindingError::Expired { expires_at_unix_ms, now_unix_ms })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMITTED: RoundRef<'static> = RoundRef { round_id: "r-1", nonce: 7, table_id: "vip" };

    fn eur() -> CurrencyRef<'static> {
        CurrencyRef { code: "EUR", exponent: 2 }
    }

    fn table(decks: u32, currency: Option<CurrencyRef<'static>>, digest: Option<u8>) -> TableRef<'static> {
        TableRef { decks: Decks::new(decks).unwrap(), currency, rules_digest: digest.map(|b| RulesDigest([b; 32])) }
    }

    #[test]
    fn the_round_the_commitment_was_made_for_passes_with_or_without_its_table_named() {
        assert_eq!(check_binding(&COMMITTED, &COMMITTED), Ok(()));
        assert_eq!(check_binding(&COMMITTED, &RoundRef { table_id: "", ..COMMITTED }), Ok(()));
    }

    #[test]
    fn another_round_id_nonce_or_table_is_refused_naming_both_values() {
        let cases = [
            (RoundRef { round_id: "r-2", ..COMMITTED }, BoundField::RoundId, "\"r-1\"", "\"r-2\""),
            (RoundRef { nonce: 8, ..COMMITTED }, BoundField::Nonce, "7", "8"),
            (RoundRef { table_id: "main", ..COMMITTED }, BoundField::TableId, "\"vip\"", "\"main\""),
        ];
        for (requested, field, committed, asked) in cases {
            assert_eq!(
                check_binding(&COMMITTED, &requested),
                Err(BindingError::Mismatch { field, committed: committed.into(), requested: asked.into() })
            );
        }
    }

    #[test]
    fn the_round_id_is_checked_before_the_nonce_and_the_table() {
        let requested = RoundRef { round_id: "x", nonce: 1, table_id: "y" };
        let err = check_binding(&COMMITTED, &requested).unwrap_err();
        assert!(matches!(err, BindingError::Mismatch { field: BoundField::RoundId, .. }), "{err:?}");
    }

    #[test]
    fn a_table_with_other_decks_currency_or_rules_is_refused_in_that_order() {
        let committed = table(1, Some(eur()), Some(1));
        assert_eq!(check_table_unchanged(&committed, &committed), Ok(()));
        let jpy = CurrencyRef { code: "JPY", exponent: 0 };
        assert_eq!(
            check_table_unchanged(&committed, &table(2, Some(jpy), Some(2))),
            Err(BindingError::TableChanged { committed_decks: 1, table_decks: 2 })
        );
        assert_eq!(
            check_table_unchanged(&committed, &table(1, Some(jpy), Some(2))),
            Err(BindingError::CurrencyChanged {
                committed: "EUR (exponent 2)".into(),
                table: "JPY (exponent 0)".into()
            })
        );
        assert_eq!(
            check_table_unchanged(&committed, &table(1, Some(eur()), Some(2))),
            Err(BindingError::RulesChanged { committed: "01".repeat(32), table: "02".repeat(32) })
        );
    }

    #[test]
    fn a_commitment_sealed_before_currency_or_rules_were_bound_deals_under_the_current_ones() {
        let old = table(1, None, None);
        assert_eq!(check_table_unchanged(&old, &table(1, Some(eur()), Some(9))), Ok(()));
        assert!(check_table_unchanged(&old, &table(3, Some(eur()), Some(9))).is_err());
    }

    #[test]
    fn a_commitment_is_valid_through_its_expiry_millisecond_and_refused_one_after() {
        assert_eq!(check_expiry(1_000, 999), Ok(()));
        assert_eq!(check_expiry(1_000, 1_000), Ok(()));
        assert_eq!(
            check_expiry(1_000, 1_001),
            Err(BindingError::Expired { expires_at_unix_ms: 1_000, now_unix_ms: 1_001 })
        );
    }
}
