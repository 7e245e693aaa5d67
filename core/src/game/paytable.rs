//! Paytables: what a win pays, "X to 1", by spread and for three of a kind.

use serde::{Deserialize, Serialize};

use super::hand::Spread;

/// The largest odds a paytable may set. It bounds every payout so that a round whose bets
/// passed [`crate::game::BetLimits::check`] can always be settled without overflow.
pub const MAX_ODDS: u32 = 10_000;

/// Odds paid on a win, "X to 1": the stake comes back plus `X` times the stake.
///
/// Invariant: every entry is in `1..=MAX_ODDS`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "PaytableSpec", into = "PaytableSpec")]
pub struct Paytable {
    spread: [u32; Spread::MAX as usize],
    three_of_a_kind: u32,
}

/// The plain form of a paytable, as it appears in configuration files and JSON output.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaytableSpec {
    /// Odds for spreads 1, 2, …, 11, in that order.
    pub spread: Vec<u32>,
    pub three_of_a_kind: u32,
}

/// A paytable the rules refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PaytableError {
    /// Odds outside 1 to [`MAX_ODDS`].
    #[error("{entry}: odds {odds} are outside 1..={MAX_ODDS}")]
    OddsOutOfRange { entry: PaytableEntry, odds: u32 },
    /// A spread list without one entry per spread.
    #[error("paytable.spread needs exactly {} entries (spreads 1 to 11), got {got}", Spread::MAX)]
    SpreadEntries { got: usize },
}

/// One entry of a paytable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaytableEntry {
    /// The odds for a spread (1 to 11).
    Spread(u8),
    /// The odds for three of a kind.
    ThreeOfAKind,
}

impl std::fmt::Display for PaytableEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PaytableEntry::Spread(s) => write!(f, "paytable.spread[{s}]"),
            PaytableEntry::ThreeOfAKind => f.write_str("paytable.three_of_a_kind"),
        }
    }
}

impl Paytable {
    /// The rules' table: spread 1 → 5:1, 2 → 4:1, 3 → 2:1, 4–11 → 1:1, three of a kind 11:1.
    pub const STANDARD: Paytable = Paytable { spread: [5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1], three_of_a_kind: 11 };

    /// A validated paytable: positive whole-number odds (at most [`MAX_ODDS`]) for each of the
    /// eleven spreads and for three of a kind.
    pub fn new(spread: [u32; Spread::MAX as usize], three_of_a_kind: u32) -> Result<Paytable, PaytableError> {
        for (i, &odds) in spread.iter().enumerate() {
            check_odds(PaytableEntry::Spread(i as u8 + 1), odds)?;
        }
        check_odds(PaytableEntry::ThreeOfAKind, three_of_a_kind)?;
        Ok(Paytable { spread, three_of_a_kind })
    }

    /// Odds paid when the third card falls inside a hand of this spread.
    pub fn spread_odds(&self, spread: Spread) -> u32 {
        self.spread[usize::from(spread.get() - 1)]
    }

    /// Odds paid on three of a kind.
    pub fn three_of_a_kind_odds(&self) -> u32 {
        self.three_of_a_kind
    }

    /// The largest odds in the table.
    pub fn max_odds(&self) -> u32 {
        self.spread.iter().copied().chain([self.three_of_a_kind]).max().unwrap_or(1)
    }
}

impl Default for Paytable {
    fn default() -> Self {
        Paytable::STANDARD
    }
}

fn check_odds(entry: PaytableEntry, odds: u32) -> Result<(), PaytableError> {
    if (1..=MAX_ODDS).contains(&odds) { Ok(()) } else { Err(PaytableError::OddsOutOfRange { entry, odds }) }
}

impl TryFrom<PaytableSpec> for Paytable {
    type Error = PaytableError;

    fn try_from(spec: PaytableSpec) -> Result<Self, Self::Error> {
        let spread: [u32; Spread::MAX as usize] =
            spec.spread.as_slice().try_into().map_err(|_| PaytableError::SpreadEntries { got: spec.spread.len() })?;
        Paytable::new(spread, spec.three_of_a_kind)
    }
}

impl From<Paytable> for PaytableSpec {
    fn from(p: Paytable) -> Self {
        PaytableSpec { spread: p.spread.to_vec(), three_of_a_kind: p.three_of_a_kind }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_table_pays_five_four_two_then_even_money() {
        let p = Paytable::STANDARD;
        let odds: Vec<u32> = Spread::all().map(|s| p.spread_odds(s)).collect();
        assert_eq!(odds, vec![5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1]);
        assert_eq!(p.three_of_a_kind_odds(), 11);
    }

    #[test]
    fn zero_odds_are_refused_and_named() {
        let mut spread = [1; 11];
        spread[2] = 0;
        let err = Paytable::new(spread, 11).unwrap_err();
        assert_eq!(err, PaytableError::OddsOutOfRange { entry: PaytableEntry::Spread(3), odds: 0 });
        assert_eq!(err.to_string(), format!("paytable.spread[3]: odds 0 are outside 1..={MAX_ODDS}"));
        let three = PaytableError::OddsOutOfRange { entry: PaytableEntry::ThreeOfAKind, odds: MAX_ODDS + 1 };
        assert_eq!(Paytable::new([1; 11], MAX_ODDS + 1), Err(three));
        assert!(Paytable::new([1; 11], 0).is_err());
    }

    #[test]
    fn a_spec_with_the_wrong_number_of_spreads_is_refused() {
        let spec = PaytableSpec { spread: vec![5, 4, 2], three_of_a_kind: 11 };
        assert_eq!(Paytable::try_from(spec), Err(PaytableError::SpreadEntries { got: 3 }));
    }

    #[test]
    fn json_round_trips() {
        let json = serde_json::to_string(&Paytable::STANDARD).unwrap();
        let back: Paytable = serde_json::from_str(&json).unwrap();
        assert_eq!(back, Paytable::STANDARD);
    }
}
