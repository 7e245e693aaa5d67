//! A table's configuration: shoe size, paytable and bet limits.

use serde::{Deserialize, Serialize};

use super::card::Decks;
use super::money::Money;
use super::paytable::{MAX_ODDS, Paytable};
use crate::error::EngineError;

/// Most seats a table has.
pub const MAX_SEATS: usize = 7;

/// The largest bet any table may allow: with it, a raised stake paid at [`MAX_ODDS`] still
/// fits in a `u64`, so settlement can never overflow.
pub const MAX_BET: u64 = u64::MAX / (2 * (MAX_ODDS as u64 + 1));

/// Inclusive bounds on a seat's original bet, in minor units.
///
/// Invariant: `1 <= min <= max <= MAX_BET`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BetLimits {
    min: Money,
    max: Money,
}

impl BetLimits {
    /// The rules' limits: 5.00 to 300.00.
    pub const STANDARD: BetLimits = BetLimits { min: Money(500), max: Money(30_000) };

    pub fn new(min: Money, max: Money) -> Result<BetLimits, EngineError> {
        if min.0 == 0 || min.0 > MAX_BET {
            return Err(EngineError::out_of_range("limits.min_bet", min.0, 1, MAX_BET));
        }
        if max < min {
            // Say what is wrong, not a range whose lower end is the other setting.
            return Err(EngineError::invalid(
                "limits.max_bet",
                format!("max_bet {} is less than min_bet {}: max_bet must be at least min_bet", max.0, min.0),
            ));
        }
        if max.0 > MAX_BET {
            return Err(EngineError::out_of_range("limits.max_bet", max.0, min.0, MAX_BET));
        }
        Ok(BetLimits { min, max })
    }

    pub fn min(self) -> Money {
        self.min
    }

    pub fn max(self) -> Money {
        self.max
    }

    /// The limits that satisfy both `self` and `other`, or `None` if they do not overlap.
    pub fn intersect(self, other: BetLimits) -> Option<BetLimits> {
        let min = self.min.max(other.min);
        let max = self.max.min(other.max);
        (min <= max).then_some(BetLimits { min, max })
    }

    /// `Ok` if `bet` lies within the limits; the error names `field`.
    pub fn check(self, field: impl Into<std::borrow::Cow<'static, str>>, bet: Money) -> Result<(), EngineError> {
        if bet < self.min || bet > self.max {
            Err(EngineError::out_of_range(field, bet.0, self.min.0, self.max.0))
        } else {
            Ok(())
        }
    }
}

impl Default for BetLimits {
    fn default() -> Self {
        BetLimits::STANDARD
    }
}

/// A table: how many decks its shoe holds, what it pays, and its bet limits.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Table {
    pub decks: Decks,
    pub paytable: Paytable,
    pub limits: BetLimits,
}

/// The plain form of a table in configuration files (JSON), all fields optional.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    pub decks: Option<u32>,
    pub paytable: Option<Paytable>,
    pub min_bet: Option<u64>,
    pub max_bet: Option<u64>,
}

impl TryFrom<TableSpec> for Table {
    type Error = EngineError;

    fn try_from(spec: TableSpec) -> Result<Self, Self::Error> {
        let decks = spec.decks.map(Decks::new).transpose()?.unwrap_or_default();
        let limits = BetLimits::new(
            Money(spec.min_bet.unwrap_or(BetLimits::STANDARD.min.0)),
            Money(spec.max_bet.unwrap_or(BetLimits::STANDARD.max.0)),
        )?;
        Ok(Table { decks, paytable: spec.paytable.unwrap_or_default(), limits })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_table_is_one_deck_five_to_three_hundred() {
        let t = Table::default();
        assert_eq!(t.decks.get(), 1);
        assert_eq!(t.limits.min(), Money(500));
        assert_eq!(t.limits.max(), Money(30_000));
        assert_eq!(t.paytable, Paytable::STANDARD);
    }

    #[test]
    fn limits_must_be_ordered_and_positive() {
        assert!(BetLimits::new(Money(0), Money(10)).is_err());
        let err = BetLimits::new(Money(50_000), Money(100)).unwrap_err().to_string();
        assert_eq!(err, "limits.max_bet: max_bet 100 is less than min_bet 50000: max_bet must be at least min_bet");
        assert!(BetLimits::new(Money(1), Money(MAX_BET + 1)).is_err());
        assert!(BetLimits::new(Money(1), Money(MAX_BET)).is_ok());
    }

    #[test]
    fn a_player_can_only_narrow_the_table_limits() {
        let player = BetLimits::new(Money(100), Money(10_000)).unwrap();
        let both = BetLimits::STANDARD.intersect(player).unwrap();
        assert_eq!((both.min(), both.max()), (Money(500), Money(10_000)));
        let disjoint = BetLimits::new(Money(40_000), Money(50_000)).unwrap();
        assert!(BetLimits::STANDARD.intersect(disjoint).is_none());
    }

    #[test]
    fn table_spec_fills_defaults_and_validates() {
        let t = Table::try_from(TableSpec { decks: Some(6), ..Default::default() }).unwrap();
        assert_eq!(t.decks.get(), 6);
        assert_eq!(t.limits, BetLimits::STANDARD);
        assert!(Table::try_from(TableSpec { decks: Some(9), ..Default::default() }).is_err());
    }
}
