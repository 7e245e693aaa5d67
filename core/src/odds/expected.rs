//! The exact expected return of one round given its first two cards and the decisions made,
//! and its variance: what the payout monitor compares each settled round's `returned` with.
//!
//! Once the first two cards are dealt and every seat has decided, only the third card is
//! left to chance, and it either wins for every seat or for none (seats share the cards).
//! So a round returns `base + swing · X`, with `X` = 1 when the third card wins (three of a
//! kind on a pair, strictly between on a non-consecutive hand) and 0 otherwise:
//!
//! | hand | `base` | `swing` | P(X = 1) |
//! |---|---|---|---|
//! | pair | Σ stake (a push) | Σ stake · three-of-a-kind odds | `(c − 2) / (N − 2)` |
//! | consecutive | Σ stake (a push) | 0 | 0 |
//! | spread `s` | 0 (a loss) | Σ stake · (odds(s) + 1) | `s · c / (N − 2)` |
//!
//! for a standard shoe of `N = 52 · decks` cards with `c = 4 · decks` of each rank, the two
//! dealt cards removed. Hence `E[returned] = base + swing · p` and
//! `Var[returned] = swing² · p · (1 − p)`. A stake is the seat's bet, doubled if it raised.
//!
//! Sizes: a stake is a `u64` and odds at most [`crate::game::paytable::MAX_ODDS`], so for a
//! round of 7 seats `swing` is below 2^81 and `swing · (N − 2)` far inside `i128`;
//! [`round_expectation`] refuses sums past that (checked), so the expectation is always
//! exact. The variance's `swing²` passes `i128` for rounds near the largest table allowed,
//! so [`RoundExpectation::variance`] is checked and [`RoundExpectation::variance_f64`] gives
//! the statistic as a float (statistics, never money).

use super::OddsError;
use super::{Exact, to_f64};
use crate::game::{Decks, HandClass, Money, Paytable};

/// The law of one round's total return: `base + swing · X`, `X` ~ Bernoulli(`p_win`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoundExpectation {
    /// Returned whatever the third card is, in minor units.
    pub base: u128,
    /// Returned in addition when the third card wins, in minor units.
    pub swing: u128,
    /// P(the third card wins | the first two cards), exact.
    pub p_win: Exact,
}

impl RoundExpectation {
    /// `E[returned] = base + swing · p_win`, exact.
    pub fn expected(&self) -> Exact {
        // round_expectation checked that base and swing times the shoe's size fit i128, and
        // p_win's numerator and denominator are at most that size.
        let (numer, denom) = (*self.p_win.numer(), *self.p_win.denom());
        Exact::new(self.base as i128 * denom + self.swing as i128 * numer, denom)
    }

    /// `Var[returned] = swing² · p_win · (1 − p_win)`, exact; `None` if the products pass
    /// `i128`.
    pub fn variance(&self) -> Option<Exact> {
        let swing = i128::try_from(self.swing).ok()?;
        let (w, n) = (*self.p_win.numer(), *self.p_win.denom());
        let numer = swing.checked_mul(swing)?.checked_mul(w)?.checked_mul(n - w)?;
        Some(Exact::new(numer, n * n))
    }

    /// The variance as a float: the statistic the monitor sums (squared minor units).
    pub fn variance_f64(&self) -> f64 {
        let swing = self.swing as f64;
        let p = to_f64(&self.p_win);
        swing * swing * p * (1.0 - p)
    }
}

/// The law of a round's total return given its deal, the deck count, the paytable and each
/// seat's final stake (bet, doubled if it raised). Errors only if the sums overflow `u128`.
pub fn round_expectation(
    decks: Decks,
    class: HandClass,
    paytable: &Paytable,
    stakes: impl IntoIterator<Item = Money>,
) -> Result<RoundExpectation, OddsError> {
    let staked = stakes
        .into_iter()
        .try_fold(0u128, |sum, s| sum.checked_add(u128::from(s.0)))
        .ok_or(OddsError::AmountOverflow { what: "the stakes of a round" })?;
    let per_rank = i128::from(4 * u32::from(decks.get()));
    let left = 13 * per_rank - 2;
    // Bounded so that `expected` cannot overflow: base and swing times the shoe's size fit.
    let bound = i128::MAX as u128 / (13 * per_rank) as u128 / 2;
    let times = |odds: u32| {
        staked
            .checked_mul(u128::from(odds))
            .filter(|&x| x <= bound)
            .ok_or(OddsError::AmountOverflow { what: "a round's swing" })
    };
    if staked > bound {
        return Err(OddsError::AmountOverflow { what: "the stakes of a round" });
    }
    Ok(match class {
        HandClass::Pair => RoundExpectation {
            base: staked,
            swing: times(paytable.three_of_a_kind_odds())?,
            p_win: Exact::new(per_rank - 2, left),
        },
        HandClass::Consecutive => RoundExpectation { base: staked, swing: 0, p_win: Exact::from(0) },
        HandClass::NonConsecutive(s) => RoundExpectation {
            base: 0,
            swing: times(paytable.spread_odds(s) + 1)?,
            p_win: Exact::new(i128::from(s.get()) * per_rank, left),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::{Card, Rank, Spread, Suit};

    /// Every third card the shoe can still deal, with its multiplicity, and what the round
    /// returns for it: E and Var straight from the definition.
    fn by_enumeration(decks: u8, a: Rank, b: Rank, paytable: &Paytable, stakes: &[u64]) -> (Exact, Exact) {
        let per_rank = 4 * i128::from(decks);
        let (lo, hi) = (a.min(b), a.max(b));
        let mut weight_sum = 0i128;
        let mut sum = Exact::from(0);
        let mut sum_sq = Exact::from(0);
        for third in Rank::all() {
            let w = per_rank - i128::from(third == a) - i128::from(third == b);
            let returned: i128 = stakes
                .iter()
                .map(|&s| {
                    let s = i128::from(s);
                    match HandClass::of_ranks(a, b) {
                        HandClass::Pair if third == a => s * (1 + i128::from(paytable.three_of_a_kind_odds())),
                        HandClass::Pair | HandClass::Consecutive => s,
                        HandClass::NonConsecutive(sp) if lo < third && third < hi => {
                            s * (1 + i128::from(paytable.spread_odds(sp)))
                        }
                        HandClass::NonConsecutive(_) => 0,
                    }
                })
                .sum();
            weight_sum += w;
            sum += Exact::from(w * returned);
            sum_sq += Exact::from(w * returned * returned);
        }
        let mean = sum / weight_sum;
        (mean, sum_sq / weight_sum - mean * mean)
    }

    #[test]
    fn the_expectation_and_variance_equal_an_enumeration_of_the_third_card() {
        let odd = Paytable::new([7, 5, 3, 2, 2, 1, 1, 1, 1, 1, 1], 30).unwrap();
        for paytable in [Paytable::STANDARD, odd] {
            for decks in [1u8, 2, 6, 8] {
                for a in Rank::all() {
                    for b in Rank::all() {
                        for stakes in [&[100u64][..], &[1, 2, 50, 7][..], &[0][..]] {
                            let class = HandClass::of_ranks(a, b);
                            let decks_ = Decks::new(u32::from(decks)).unwrap();
                            let law =
                                round_expectation(decks_, class, &paytable, stakes.iter().map(|&s| Money(s))).unwrap();
                            let (mean, var) = by_enumeration(decks, a, b, &paytable, stakes);
                            assert_eq!(law.expected(), mean, "{decks} decks, {a:?} {b:?}, stakes {stakes:?}");
                            assert_eq!(law.variance(), Some(var), "{decks} decks, {a:?} {b:?}, stakes {stakes:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_spread_3_bet_of_100_at_one_deck_expects_72_back() {
        // Spread 3 (e.g. 5 and 9): 3 ranks × 4 cards of 50 win, paying 2:1 on a stake of 100.
        let class = HandClass::of(
            Card::new(Rank::new(5).unwrap(), Suit::Hearts),
            Card::new(Rank::new(9).unwrap(), Suit::Spades),
        );
        assert_eq!(class, HandClass::NonConsecutive(Spread::new(3).unwrap()));
        let law = round_expectation(Decks::ONE, class, &Paytable::STANDARD, [Money(100)]).unwrap();
        assert_eq!((law.base, law.swing), (0, 300));
        assert_eq!(law.expected(), Exact::new(300 * 12, 50));
        assert_eq!(law.variance(), Some(Exact::new(300 * 300 * 12 * 38, 50 * 50)));
        assert!((law.variance_f64() - 300.0 * 300.0 * 0.24 * 0.76).abs() < 1e-6);
    }

    #[test]
    fn the_largest_round_keeps_an_exact_expectation_and_a_float_variance() {
        let paytable = Paytable::new([10_000; 11], 10_000).unwrap();
        let stakes = [Money(u64::MAX); 7];
        let law = round_expectation(
            Decks::new(8).unwrap(),
            HandClass::NonConsecutive(Spread::new(11).unwrap()),
            &paytable,
            stakes,
        )
        .unwrap();
        assert_eq!(law.swing, 7 * u128::from(u64::MAX) * 10_001);
        assert_eq!(law.expected(), Exact::new(law.swing as i128 * 11 * 32, 414));
        assert_eq!(law.variance(), None, "swing² is past i128");
        assert!(law.variance_f64().is_finite() && law.variance_f64() > 0.0);
    }
}
