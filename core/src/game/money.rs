//! Money: integer minor units (cents) with checked arithmetic. No floating point.

use std::fmt;

/// An amount in minor units (e.g. cents). Arithmetic is checked; overflow is an error the
/// caller must handle, never a wrap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Money(pub u64);

impl Money {
    pub const ZERO: Money = Money(0);

    pub const fn minor(self) -> u64 {
        self.0
    }

    pub fn checked_add(self, other: Money) -> Option<Money> {
        self.0.checked_add(other.0).map(Money)
    }

    pub fn checked_mul(self, factor: u64) -> Option<Money> {
        self.0.checked_mul(factor).map(Money)
    }
}

impl fmt::Display for Money {
    /// Shows minor units as a decimal with two places, e.g. `Money(12345)` is `123.45`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:02}", self.0 / 100, self.0 % 100)
    }
}
