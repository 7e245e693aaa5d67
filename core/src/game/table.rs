//! A table's configuration: shoe size, paytable and bet limits.

use serde::{Deserialize, Serialize};

use super::card::{CardError, Decks};
use super::money::Money;
use super::paytable::{MAX_ODDS, Paytable};

/// Most seats a table has.
pub const MAX_SEATS: usize = 7;

/// The largest bet any table may allow: with it, a raised stake paid at [`MAX_ODDS`] still
/// fits in a `u64`, so settlement can never overflow.
pub const MAX_BET: u64 = u64::MAX / (2 * (MAX_ODDS as u64 + 1));

/// Bet limits that are not limits: what [`BetLimits::new`] refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LimitsError {
    /// A minimum bet of 0 or above [`MAX_BET`].
    #[error("min_bet {min_bet} is outside 1..={MAX_BET}")]
    MinBetOutOfRange { min_bet: u64 },
    /// A maximum bet below the minimum.
    #[error("max_bet {max_bet} is less than min_bet {min_bet}: max_bet must be at least min_bet")]
    MaxBetBelowMinBet { min_bet: u64, max_bet: u64 },
    /// A maximum bet above [`MAX_BET`].
    #[error("max_bet {max_bet} is outside {min_bet}..={MAX_BET}")]
    MaxBetOutOfRange { min_bet: u64, max_bet: u64 },
}

/// A table, or a player's limits at it, the rules refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// A table whose largest possible round (every seat at `max_bet`, raised, paid the best
    /// odds of its paytable) would not fit in `u64` minor units.
    #[error(
        "max_bet {max_bet} is too large for this paytable: the largest round ({MAX_SEATS} seats at max_bet, all \
         raised, paid {max_odds} to 1) must fit in 64-bit minor units, so the largest allowed max_bet is {largest}",
        max_bet = max_bet.0, largest = largest.0
    )]
    TooLarge { max_bet: Money, largest: Money, max_odds: u32 },

    /// Bet limits that are not limits.
    #[error(transparent)]
    Limits(#[from] LimitsError),

    /// A deck count the rules refuse.
    #[error(transparent)]
    Decks(#[from] CardError),

    /// The player's limits and the table's have no bet in common.
    #[error(
        "the player's limits {}..={} do not overlap the table's {}..={}",
        player.min().0, player.max().0, table.min().0, table.max().0
    )]
    LimitsDoNotOverlap { player: BetLimits, table: BetLimits },
}

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

    /// Limits from `min` to `max`: `min` is 1 to [`MAX_BET`], `max` is `min` to [`MAX_BET`].
    pub fn new(min: Money, max: Money) -> Result<BetLimits, LimitsError> {
        if min.0 == 0 || min.0 > MAX_BET {
            return Err(LimitsError::MinBetOutOfRange { min_bet: min.0 });
        }
        if max < min {
            return Err(LimitsError::MaxBetBelowMinBet { min_bet: min.0, max_bet: max.0 });
        }
        if max.0 > MAX_BET {
            return Err(LimitsError::MaxBetOutOfRange { min_bet: min.0, max_bet: max.0 });
        }
        Ok(BetLimits { min, max })
    }

    /// A player's limits as a platform states them: `min` is 1 to [`MAX_BET`], `max` at
    /// least `min` and may be anything above, `u64::MAX` included ("no limit of the
    /// platform's own"): a maximum above [`MAX_BET`] (which no table exceeds) means the
    /// table's maximum applies.
    pub fn for_player(min: Money, max: Money) -> Result<BetLimits, LimitsError> {
        if min.0 == 0 || min.0 > MAX_BET {
            return Err(LimitsError::MinBetOutOfRange { min_bet: min.0 });
        }
        BetLimits::new(min, max.min(Money(MAX_BET)))
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

    /// Whether `bet` lies within the limits.
    pub fn contains(self, bet: Money) -> bool {
        self.min <= bet && bet <= self.max
    }
}

impl Default for BetLimits {
    fn default() -> Self {
        BetLimits::STANDARD
    }
}

/// The largest `max_bet` a table with `paytable` may have: with it, the largest possible
/// round ([`MAX_SEATS`] seats at `max_bet`, every seat raised, every seat paid the paytable's
/// best odds) still totals at most `u64::MAX` minor units, so no sum of a round's stakes or
/// returns can overflow.
pub fn largest_max_bet(paytable: &Paytable) -> Money {
    let worst_case_factor = MAX_SEATS as u64 * 2 * (u64::from(paytable.max_odds()) + 1);
    Money(u64::MAX / worst_case_factor)
}

/// A table: how many decks its shoe holds, what it pays, and its bet limits.
///
/// Invariant (checked by [`Table::new`]): `limits.max() <= largest_max_bet(paytable)`, so
/// every total of a round dealt at this table fits in `u64` minor units.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Table {
    decks: Decks,
    paytable: Paytable,
    limits: BetLimits,
}

impl Table {
    /// A table, refused when its largest round would not fit in `u64` minor units (the error
    /// names `max_bet` and the largest allowed value).
    pub fn new(decks: Decks, paytable: Paytable, limits: BetLimits) -> Result<Table, TableError> {
        let largest = largest_max_bet(&paytable);
        if limits.max() > largest {
            return Err(TableError::TooLarge { max_bet: limits.max(), largest, max_odds: paytable.max_odds() });
        }
        Ok(Table { decks, paytable, limits })
    }

    pub fn decks(&self) -> Decks {
        self.decks
    }

    pub fn paytable(&self) -> &Paytable {
        &self.paytable
    }

    pub fn limits(&self) -> BetLimits {
        self.limits
    }

    /// The same table with other limits (e.g. narrowed to a player's), checked like
    /// [`Table::new`].
    pub fn with_limits(&self, limits: BetLimits) -> Result<Table, TableError> {
        Table::new(self.decks, self.paytable.clone(), limits)
    }

    /// The table a player's round is dealt at: this table's limits narrowed to the
    /// player's ([`BetLimits::for_player`]); refused when they have no bet in common.
    pub fn narrowed_to(&self, player: BetLimits) -> Result<Table, TableError> {
        let both =
            self.limits.intersect(player).ok_or(TableError::LimitsDoNotOverlap { player, table: self.limits })?;
        // Narrower limits than a valid table's: always a valid table.
        self.with_limits(both)
    }

    /// The same table with another paytable, checked like [`Table::new`].
    pub fn with_paytable(&self, paytable: Paytable) -> Result<Table, TableError> {
        Table::new(self.decks, paytable, self.limits)
    }

    /// The same table with another deck count.
    pub fn with_decks(&self, decks: Decks) -> Table {
        Table { decks, ..self.clone() }
    }
}

impl Default for Table {
    /// One deck, the standard paytable, the standard limits.
    fn default() -> Self {
        Table { decks: Decks::default(), paytable: Paytable::default(), limits: BetLimits::default() }
    }
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
    type Error = TableError;

    fn try_from(spec: TableSpec) -> Result<Self, Self::Error> {
        let decks = spec.decks.map(Decks::new).transpose()?.unwrap_or_default();
        let limits = BetLimits::new(
            Money(spec.min_bet.unwrap_or(BetLimits::STANDARD.min.0)),
            Money(spec.max_bet.unwrap_or(BetLimits::STANDARD.max.0)),
        )?;
        Table::new(decks, spec.paytable.unwrap_or_default(), limits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_table_is_one_deck_five_to_three_hundred() {
        let t = Table::default();
        assert_eq!(t.decks().get(), 1);
        assert_eq!(t.limits().min(), Money(500));
        assert_eq!(t.limits().max(), Money(30_000));
        assert_eq!(*t.paytable(), Paytable::STANDARD);
    }

    #[test]
    fn limits_must_be_ordered_and_positive() {
        assert_eq!(BetLimits::new(Money(0), Money(10)), Err(LimitsError::MinBetOutOfRange { min_bet: 0 }));
        let err = BetLimits::new(Money(50_000), Money(100)).unwrap_err();
        assert_eq!(err, LimitsError::MaxBetBelowMinBet { min_bet: 50_000, max_bet: 100 });
        assert_eq!(err.to_string(), "max_bet 100 is less than min_bet 50000: max_bet must be at least min_bet");
        assert_eq!(
            BetLimits::new(Money(1), Money(MAX_BET + 1)),
            Err(LimitsError::MaxBetOutOfRange { min_bet: 1, max_bet: MAX_BET + 1 })
        );
        assert!(BetLimits::new(Money(1), Money(MAX_BET)).is_ok());
    }

    #[test]
    fn a_player_max_bet_above_the_largest_bet_means_no_limit_of_the_players_own() {
        for max in [u64::MAX, MAX_BET + 1, MAX_BET] {
            assert_eq!(BetLimits::for_player(Money(500), Money(max)).unwrap().max(), Money(MAX_BET), "{max}");
        }
        let table = Table::default().narrowed_to(BetLimits::for_player(Money(500), Money(u64::MAX)).unwrap());
        assert_eq!(table.unwrap().limits(), BetLimits::STANDARD);
    }

    #[test]
    fn player_limits_out_of_order_or_out_of_range_say_which_bound() {
        assert_eq!(BetLimits::for_player(Money(0), Money(1_000)), Err(LimitsError::MinBetOutOfRange { min_bet: 0 }));
        assert_eq!(
            BetLimits::for_player(Money(MAX_BET + 1), Money(u64::MAX)),
            Err(LimitsError::MinBetOutOfRange { min_bet: MAX_BET + 1 })
        );
        assert_eq!(
            BetLimits::for_player(Money(2_000), Money(1_000)),
            Err(LimitsError::MaxBetBelowMinBet { min_bet: 2_000, max_bet: 1_000 })
        );
    }

    #[test]
    fn a_player_whose_limits_miss_the_tables_is_refused_with_both_limits() {
        let player = BetLimits::for_player(Money(40_000), Money(u64::MAX)).unwrap();
        assert_eq!(
            Table::default().narrowed_to(player),
            Err(TableError::LimitsDoNotOverlap { player, table: BetLimits::STANDARD })
        );
        let narrower = Table::default().narrowed_to(BetLimits::new(Money(1_000), Money(2_000)).unwrap()).unwrap();
        assert_eq!((narrower.limits().min(), narrower.limits().max()), (Money(1_000), Money(2_000)));
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
        assert_eq!(t.decks().get(), 6);
        assert_eq!(t.limits(), BetLimits::STANDARD);
        assert!(Table::try_from(TableSpec { decks: Some(9), ..Default::default() }).is_err());
    }

    #[test]
    fn a_table_whose_largest_round_overflows_is_refused_naming_max_bet_and_the_largest_value() {
        let paytable = Paytable::new([10_000; 11], 10_000).unwrap();
        let largest = largest_max_bet(&paytable);
        assert_eq!(largest.0, u64::MAX / (7 * 2 * 10_001));
        // The largest round of the largest allowed table fits; one more minor unit does not.
        let round = |bet: u64| u128::from(bet) * 7 * 2 * 10_001;
        assert!(round(largest.0) <= u128::from(u64::MAX));
        assert!(round(largest.0 + 1) > u128::from(u64::MAX));
        let limits = |max: u64| BetLimits::new(Money(1), Money(max)).unwrap();
        assert!(Table::new(Decks::ONE, paytable.clone(), limits(largest.0)).is_ok());
        let err = Table::new(Decks::ONE, paytable.clone(), limits(largest.0 + 1)).unwrap_err();
        assert_eq!(err, TableError::TooLarge { max_bet: Money(largest.0 + 1), largest, max_odds: 10_000 });
        assert!(err.to_string().contains(&largest.0.to_string()), "{err}");
        let spec = TableSpec { paytable: Some(paytable), max_bet: Some(MAX_BET), ..Default::default() };
        assert!(matches!(Table::try_from(spec), Err(TableError::TooLarge { .. })));
        // The standard paytable allows far more than the standard limits.
        assert_eq!(largest_max_bet(&Paytable::STANDARD).0, u64::MAX / (7 * 2 * 12));
    }
}
