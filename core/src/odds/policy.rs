//! Raise policies: which spreads a player raises on.
//!
//! A policy only matters on a non-consecutive hand (pairs and consecutive hands offer no
//! decision). [`Policy`] is what a user names (`optimal`, `worst`, `never`, `always`,
//! `raise-at-least:K`); [`RaiseSet`] is the policy resolved for one shoe and paytable, the
//! form the simulator and the service consult on every hand.

use std::fmt;
use std::str::FromStr;

use super::OddsError;
use crate::game::{Decision, Decks, Paytable, Spread};

/// A rule for raising on non-consecutive hands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Never raise.
    Never,
    /// Raise on every non-consecutive hand.
    Always,
    /// Raise when the spread is at least `k` (`k` in 1..=11; [`Policy::Never`] is the rule
    /// that never raises).
    RaiseAtLeast(u8),
    /// Raise exactly on the spreads where raising has the higher expected value, i.e. where
    /// the expected net of the hand given its spread is strictly positive (a tie stands).
    /// Depends on the shoe and the paytable; see [`crate::odds::Analysis::optimal_raise_set`].
    Optimal,
    /// The worst play: raise exactly where standing has a strictly negative expected value
    /// (so raising doubles a loss). Its RTP per initial bet is the lowest of any strategy;
    /// see [`crate::odds::Analysis::worst_raise_set`].
    Worst,
}

impl Policy {
    /// The spreads this policy raises on, for a shoe of `decks` and `paytable`. Only
    /// [`Policy::Optimal`] looks at them (it runs the exact enumeration, microseconds).
    pub fn raise_set(self, decks: Decks, paytable: &Paytable) -> RaiseSet {
        match self {
            Policy::Never => RaiseSet::NONE,
            Policy::Always => RaiseSet::ALL,
            Policy::RaiseAtLeast(k) => RaiseSet::at_least(k),
            Policy::Optimal => super::Analysis::new(decks, paytable).optimal_raise_set(),
            Policy::Worst => super::Analysis::new(decks, paytable).worst_raise_set(),
        }
    }

    /// A stable machine name: `never`, `always`, `raise_at_least_7`, `optimal`, `worst`.
    pub fn key(self) -> String {
        match self {
            Policy::Never => "never".into(),
            Policy::Always => "always".into(),
            Policy::RaiseAtLeast(k) => format!("raise_at_least_{k}"),
            Policy::Optimal => "optimal".into(),
            Policy::Worst => "worst".into(),
        }
    }
}

impl fmt::Display for Policy {
    /// The command-line form: `never`, `always`, `raise-at-least:7`, `optimal`, `worst`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Policy::Never => f.write_str("never"),
            Policy::Always => f.write_str("always"),
            Policy::RaiseAtLeast(k) => write!(f, "raise-at-least:{k}"),
            Policy::Optimal => f.write_str("optimal"),
            Policy::Worst => f.write_str("worst"),
        }
    }
}

impl FromStr for Policy {
    type Err = OddsError;

    /// Parses `optimal`, `worst`, `never`, `always` or `raise-at-least:K` (K in 1..=11: the
    /// largest spread is 11, so a larger K would silently never raise; `never` says that).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        match s.to_ascii_lowercase().as_str() {
            "optimal" => Ok(Policy::Optimal),
            "never" => Ok(Policy::Never),
            "always" => Ok(Policy::Always),
            "worst" => Ok(Policy::Worst),
            other => {
                let k = other
                    .strip_prefix("raise-at-least:")
                    .ok_or_else(|| OddsError::UnknownPolicy { text: s.to_string() })?
                    .parse::<u8>()
                    .map_err(|_| OddsError::RaiseThresholdNotANumber { text: s.to_string() })?;
                match k {
                    0 => Err(OddsError::RaiseThresholdZero { text: s.to_string() }),
                    k if k > Spread::MAX => Err(OddsError::RaiseThresholdNeverRaises { text: s.to_string() }),
                    k => Ok(Policy::RaiseAtLeast(k)),
                }
            }
        }
    }
}

/// A set of spreads to raise on: a policy resolved for one shoe and paytable.
///
/// Invariant: only bits 1..=11 (the spreads) may be set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RaiseSet(u16);

impl RaiseSet {
    /// Raise on nothing.
    pub const NONE: RaiseSet = RaiseSet(0);
    /// Raise on every spread.
    pub const ALL: RaiseSet = RaiseSet(0b1111_1111_1110);

    /// Raise on every spread `>= k`.
    pub fn at_least(k: u8) -> RaiseSet {
        RaiseSet(Spread::all().filter(|s| s.get() >= k).fold(0, |m, s| m | 1 << s.get()))
    }

    /// The set holding exactly these spreads.
    pub fn from_spreads(spreads: impl IntoIterator<Item = Spread>) -> RaiseSet {
        RaiseSet(spreads.into_iter().fold(0, |m, s| m | 1 << s.get()))
    }

    /// Whether the set raises on `spread`.
    pub fn raises(self, spread: Spread) -> bool {
        self.0 & (1 << spread.get()) != 0
    }

    /// The decision for a non-consecutive hand of this spread.
    pub fn decision(self, spread: Spread) -> Decision {
        if self.raises(spread) { Decision::Raise } else { Decision::Stand }
    }

    /// The spreads raised on, ascending.
    pub fn spreads(self) -> Vec<u8> {
        Spread::all().filter(|&s| self.raises(s)).map(Spread::get).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_from_their_command_line_form() {
        assert_eq!("optimal".parse::<Policy>().unwrap(), Policy::Optimal);
        assert_eq!("Never".parse::<Policy>().unwrap(), Policy::Never);
        assert_eq!("always".parse::<Policy>().unwrap(), Policy::Always);
        assert_eq!("raise-at-least:7".parse::<Policy>().unwrap(), Policy::RaiseAtLeast(7));
        assert_eq!("worst".parse::<Policy>().unwrap(), Policy::Worst);
        for p in [Policy::Optimal, Policy::Never, Policy::Always, Policy::RaiseAtLeast(3), Policy::Worst] {
            assert_eq!(p.to_string().parse::<Policy>().unwrap(), p);
        }
    }

    #[test]
    fn bad_policies_are_refused_without_panicking() {
        for bad in ["", "sometimes", "raise-at-least:", "raise-at-least:0", "raise-at-least:13", "raise-at-least:x"] {
            assert!(bad.parse::<Policy>().is_err(), "{bad}");
        }
        // K = 12 would silently mean "never": it is refused, saying so.
        let err = "raise-at-least:12".parse::<Policy>().unwrap_err().to_string();
        assert!(err.contains("would never raise") && err.contains("never"), "{err}");
    }

    #[test]
    fn raise_at_least_seven_raises_on_seven_to_eleven() {
        assert_eq!(RaiseSet::at_least(7).spreads(), vec![7, 8, 9, 10, 11]);
        assert_eq!(RaiseSet::at_least(1), RaiseSet::ALL);
        assert_eq!(RaiseSet::at_least(12), RaiseSet::NONE);
        assert_eq!(RaiseSet::ALL.spreads().len(), 11);
    }

    #[test]
    fn a_raise_set_decides_raise_or_stand() {
        let set = RaiseSet::from_spreads([Spread::new(2).unwrap()]);
        assert_eq!(set.decision(Spread::new(2).unwrap()), Decision::Raise);
        assert_eq!(set.decision(Spread::new(3).unwrap()), Decision::Stand);
    }
}
