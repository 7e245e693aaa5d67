//! Hands: what the first two cards make (`docs/RULES.md`, "A round").

use std::fmt;

use super::card::{Card, Rank};

/// The gap between two non-consecutive ranks: the number of ranks strictly between them,
/// 1..=11 (2 and A give 11, the widest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Spread(u8);

impl Spread {
    pub const MIN: u8 = 1;
    pub const MAX: u8 = 11;

    pub const fn new(value: u8) -> Option<Spread> {
        if value >= Self::MIN && value <= Self::MAX { Some(Spread(value)) } else { None }
    }

    pub const fn get(self) -> u8 {
        self.0
    }

    /// All spreads, 1..=11.
    pub fn all() -> impl Iterator<Item = Spread> {
        (Self::MIN..=Self::MAX).map(Spread)
    }
}

impl fmt::Display for Spread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The class of a two-card hand. Exactly one applies to any two cards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HandClass {
    /// Both cards have the same rank: a third card is dealt at once, no raise.
    Pair,
    /// The ranks differ by exactly one: a push, no third card.
    Consecutive,
    /// Anything else: the spread is shown and each seat may raise.
    NonConsecutive(Spread),
}

impl HandClass {
    /// Classifies two ranks. Order does not matter. The Ace is high only, so A–2 is
    /// non-consecutive with spread 11.
    pub fn of_ranks(a: Rank, b: Rank) -> HandClass {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        match hi.value() - lo.value() {
            0 => HandClass::Pair,
            1 => HandClass::Consecutive,
            gap => HandClass::NonConsecutive(Spread(gap - 1)),
        }
    }

    pub fn of(a: Card, b: Card) -> HandClass {
        Self::of_ranks(a.rank(), b.rank())
    }

    /// The spread of a non-consecutive hand.
    pub fn spread(self) -> Option<Spread> {
        match self {
            HandClass::NonConsecutive(s) => Some(s),
            _ => None,
        }
    }

    /// A short stable name: `pair`, `consecutive` or `non_consecutive`.
    pub const fn name(self) -> &'static str {
        match self {
            HandClass::Pair => "pair",
            HandClass::Consecutive => "consecutive",
            HandClass::NonConsecutive(_) => "non_consecutive",
        }
    }
}

impl fmt::Display for HandClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandClass::NonConsecutive(s) => write!(f, "non-consecutive (spread {s})"),
            other => f.write_str(other.name()),
        }
    }
}

/// Whether `third` lies strictly between the ranks of `a` and `b`.
pub fn strictly_between(a: Rank, b: Rank, third: Rank) -> bool {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    lo < third && third < hi
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(a: &str, b: &str) -> HandClass {
        HandClass::of(a.parse().unwrap(), b.parse().unwrap())
    }

    fn spread(n: u8) -> HandClass {
        HandClass::NonConsecutive(Spread::new(n).unwrap())
    }

    #[test]
    fn two_and_jack_are_spread_eight() {
        assert_eq!(class("2c", "Jd"), spread(8));
    }

    #[test]
    fn four_and_queen_are_spread_seven() {
        assert_eq!(class("4h", "Qs"), spread(7));
    }

    #[test]
    fn five_and_seven_are_spread_one_in_either_order() {
        assert_eq!(class("5c", "7d"), spread(1));
        assert_eq!(class("7d", "5c"), spread(1));
    }

    #[test]
    fn five_six_and_queen_king_are_consecutive() {
        assert_eq!(class("5c", "6h"), HandClass::Consecutive);
        assert_eq!(class("Qs", "Kd"), HandClass::Consecutive);
    }

    #[test]
    fn ace_and_two_are_not_consecutive() {
        assert_eq!(class("Ac", "2d"), spread(11));
    }

    #[test]
    fn ace_and_king_are_consecutive() {
        assert_eq!(class("Kc", "Ad"), HandClass::Consecutive);
    }

    #[test]
    fn same_rank_is_a_pair_whatever_the_suits() {
        assert_eq!(class("Kc", "Kd"), HandClass::Pair);
        assert_eq!(class("Kc", "Kc"), HandClass::Pair);
    }

    #[test]
    fn jack_counts_eleven_so_ten_jack_is_consecutive() {
        assert_eq!(class("Tc", "Jd"), HandClass::Consecutive);
        assert_eq!(class("9c", "Jd"), spread(1));
    }

    #[test]
    fn between_is_strict() {
        let r = |v| Rank::new(v).unwrap();
        assert!(strictly_between(r(4), r(12), r(5)));
        assert!(!strictly_between(r(4), r(12), r(4)));
        assert!(!strictly_between(r(4), r(12), r(12)));
        assert!(!strictly_between(r(4), r(12), r(13)));
    }
}
