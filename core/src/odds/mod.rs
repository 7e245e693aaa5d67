//! Exact odds of Red Dog by enumeration, not simulation.
//!
//! # Method
//! A round's outcome depends only on the ranks of its (at most) three cards, so the
//! enumeration runs over ordered rank triples `(first, second, third)` drawn without
//! replacement from a shoe described by its 13 rank counts (`4 × decks` each for a standard
//! shoe). Each triple is weighted by the number of ordered card triples that produce it,
//! `c[a] · (c[b] − [b=a]) · (c[t] − [t=a] − [t=b])`; the weights sum to `N(N−1)(N−2)` for a
//! shoe of `N` cards. A consecutive hand draws no third card in play, but summing over the
//! third card it would have drawn only marginalizes it out, so every probability below is
//! an exact count divided by `N(N−1)(N−2)`. That is 13³ = 2197 terms whatever the deck
//! count: 8 decks is as instant as one.
//!
//! All figures are exact fractions, [`Exact`] = `Ratio<i128>`. Overflow check, worst case
//! 8 decks (or any [`Analysis::from_counts`] shoe, at most 32 cards a rank) and odds of
//! [`crate::game::paytable::MAX_ODDS`] = 10⁴: the weights sum to `W = 416·415·414 ≈ 7.2e7`;
//! one round's net is at most `2·10⁴` in size, so the numerators over `W` stay below
//! `1.5e12` (EV) and `2.9e16` (`E[net²]`). `EV²` has a denominator dividing `W² ≈ 5.2e15`
//! and a numerator below `2.1e24`; `Ratio` adds over the lcm of the denominators (at most
//! `W²`) and cancels common factors before multiplying, so no intermediate exceeds about
//! `2.1e24`, far inside `i128` (`1.7e38`). [`decimal`] does its long division by repeated
//! addition modulo the denominator, so it cannot overflow for any fraction.
//!
//! # Definitions (published figures mix these up; every output names the one it uses)
//! With *initial bet* = the bet placed before the deal (1 unit), *total wagered* = initial
//! bet plus the raise if any, *returned* = what comes back to the player (stake plus
//! winnings, the stake on a push, 0 on a loss) and *net* = returned − total wagered:
//!
//! - **EV** = `E[net]` per unit of initial bet, an exact fraction.
//! - **House edge** = `−EV`, per unit of *initial* bet.
//! - **Element of risk** = `−E[net] / E[total wagered]`: loss per unit of *total* amount
//!   wagered, raises included.
//! - **RTP** (`rtp`) = `1 + EV` = `1 − house edge`: what comes back per unit of *initial*
//!   bet. This is the convention of the published one-deck figure 0.968446 (standard
//!   paytable, optimal play: `1 + EV = 0.968446455…`), so `rtp` uses it.
//! - **RTP per total wagered** (`rtp_per_total_wagered`) = `E[returned] / E[total wagered]`
//!   = `1 − element of risk`; for one deck it is 0.973282…, not 0.968446. Both are given.
//! - **Variance** = `E[net²] − EV²` of the net result of one round, per unit of initial bet
//!   (so in units of initial bet squared).
//!
//! Policies: see [`Policy`]. The player raises only on non-consecutive hands. Raising
//! doubles the stake at the same odds, so the EV of raising on a hand of spread `s` is twice
//! that of standing; raising is better exactly when the EV of standing given the spread,
//! `P(win | s) · (odds + 1) − 1`, is strictly positive. The optimal policy raises on those
//! spreads and stands on a tie.

mod error;
mod expected;
mod policy;

use num_integer::Integer;
use num_rational::Ratio;
use serde::Serialize;

pub use error::OddsError;
pub use expected::{RoundExpectation, round_expectation};
pub use policy::{Policy, RaiseSet};

use crate::game::{Decks, HandClass, MAX_DECKS, Paytable, Rank, Spread};

/// An exact fraction. Denominators stay far from `i128`'s range for any shoe of up to
/// [`MAX_DECKS`] decks and any valid paytable (see the module docs).
pub type Exact = Ratio<i128>;

/// Number of ranks.
pub const RANKS: usize = 13;

/// Largest count of one rank an [`Analysis::from_counts`] shoe may hold: `4 × MAX_DECKS`.
pub const MAX_RANK_COUNT: u32 = 4 * MAX_DECKS as u32;

const SPREADS: usize = Spread::MAX as usize;

/// The exact distribution of a round's outcome for one shoe and one paytable.
///
/// Invariant: every weight is a count of ordered card triples; `total = N(N−1)(N−2) > 0`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    counts: [u32; RANKS],
    paytable: Paytable,
    total: i128,
    pair: i128,
    three_of_a_kind: i128,
    consecutive: i128,
    spread: [i128; SPREADS],
    spread_win: [i128; SPREADS],
}

/// The figures of one policy, all exact, per unit of initial bet. See the module docs for
/// the definitions.
///
/// Invariants: `house_edge = −ev`; `rtp = 1 + ev`; `expected_returned = expected_wagered + ev`;
/// `element_of_risk = −ev / expected_wagered`; `variance = expected_net_squared − ev²`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyFigures {
    pub raise: RaiseSet,
    pub ev: Exact,
    pub house_edge: Exact,
    pub expected_wagered: Exact,
    pub expected_returned: Exact,
    pub element_of_risk: Exact,
    pub rtp: Exact,
    pub rtp_per_total_wagered: Exact,
    pub expected_net_squared: Exact,
    pub variance: Exact,
}

impl Analysis {
    /// The analysis of a standard shoe of `decks` decks.
    pub fn new(decks: Decks, paytable: &Paytable) -> Analysis {
        let n = 4 * u32::from(decks.get());
        Analysis::enumerate([n; RANKS], paytable)
    }

    /// The analysis of any shoe, given how many cards of each rank it holds (`counts[0]` for
    /// twos, …, `counts[12]` for aces). Each count must be at most [`MAX_RANK_COUNT`] and the
    /// shoe must hold at least three cards.
    pub fn from_counts(counts: [u32; RANKS], paytable: &Paytable) -> Result<Analysis, OddsError> {
        for (i, &c) in counts.iter().enumerate() {
            if c > MAX_RANK_COUNT {
                return Err(OddsError::RankCountOutOfRange { rank: i, count: c });
            }
        }
        let n: u32 = counts.iter().sum();
        if n < 3 {
            return Err(OddsError::ShoeTooSmall { cards: n });
        }
        Ok(Analysis::enumerate(counts, paytable))
    }

    fn enumerate(counts: [u32; RANKS], paytable: &Paytable) -> Analysis {
        let c = counts.map(i128::from);
        let mut a = Analysis {
            counts,
            paytable: paytable.clone(),
            total: 0,
            pair: 0,
            three_of_a_kind: 0,
            consecutive: 0,
            spread: [0; SPREADS],
            spread_win: [0; SPREADS],
        };
        let rank = |i: usize| Rank::new(i as u8 + 2).unwrap_or(Rank::TWO);
        for first in 0..RANKS {
            for second in 0..RANKS {
                let w2 = c[first] * (c[second] - i128::from(second == first)).max(0);
                if w2 == 0 {
                    continue;
                }
                let class = HandClass::of_ranks(rank(first), rank(second));
                let (lo, hi) = (first.min(second), first.max(second));
                for (third, &count) in c.iter().enumerate() {
                    let left = count - i128::from(third == first) - i128::from(third == second);
                    let w = w2 * left.max(0);
                    a.total += w;
                    match class {
                        HandClass::Pair => {
                            a.pair += w;
                            if third == first {
                                a.three_of_a_kind += w;
                            }
                        }
                        HandClass::Consecutive => a.consecutive += w,
                        HandClass::NonConsecutive(s) => {
                            let k = usize::from(s.get() - 1);
                            a.spread[k] += w;
                            if lo < third && third < hi {
                                a.spread_win[k] += w;
                            }
                        }
                    }
                }
            }
        }
        a
    }

    /// The shoe's rank counts, twos first.
    pub fn counts(&self) -> [u32; RANKS] {
        self.counts
    }

    /// The shoe's size in cards.
    pub fn cards(&self) -> u32 {
        self.counts.iter().sum()
    }

    pub fn paytable(&self) -> &Paytable {
        &self.paytable
    }

    fn p(&self, weight: i128) -> Exact {
        Exact::new(weight, self.total)
    }

    /// P(the first two cards are a pair).
    pub fn p_pair(&self) -> Exact {
        self.p(self.pair)
    }

    /// P(three of a kind | pair); zero if the shoe cannot make a pair.
    pub fn p_three_of_a_kind_given_pair(&self) -> Exact {
        if self.pair == 0 { Exact::from(0) } else { Exact::new(self.three_of_a_kind, self.pair) }
    }

    /// P(three of a kind), unconditional.
    pub fn p_three_of_a_kind(&self) -> Exact {
        self.p(self.three_of_a_kind)
    }

    /// P(the first two cards are consecutive).
    pub fn p_consecutive(&self) -> Exact {
        self.p(self.consecutive)
    }

    /// P(the first two cards are non-consecutive with this spread).
    pub fn p_spread(&self, spread: Spread) -> Exact {
        self.p(self.spread[usize::from(spread.get() - 1)])
    }

    /// P(the third card falls strictly between | spread); `None` if the shoe cannot deal
    /// that spread.
    pub fn p_win_given_spread(&self, spread: Spread) -> Option<Exact> {
        let k = usize::from(spread.get() - 1);
        (self.spread[k] != 0).then(|| Exact::new(self.spread_win[k], self.spread[k]))
    }

    /// Expected net per unit of bet of *standing* on a hand of this spread:
    /// `P(win | s) · odds − P(lose | s)`. Raising doubles it. `None` if the spread cannot occur.
    pub fn ev_stand_given_spread(&self, spread: Spread) -> Option<Exact> {
        let k = usize::from(spread.get() - 1);
        let odds = i128::from(self.paytable.spread_odds(spread));
        let (win, all) = (self.spread_win[k], self.spread[k]);
        (all != 0).then(|| Exact::new(win * odds - (all - win), all))
    }

    /// The spreads where raising has the strictly higher expected value.
    pub fn optimal_raise_set(&self) -> RaiseSet {
        RaiseSet::from_spreads(
            Spread::all().filter(|&s| self.ev_stand_given_spread(s).is_some_and(|ev| ev > Exact::from(0))),
        )
    }

    /// The set of spreads `policy` raises on for this shoe and paytable.
    pub fn raise_set(&self, policy: Policy) -> RaiseSet {
        match policy {
            Policy::Optimal => self.optimal_raise_set(),
            Policy::Never => RaiseSet::NONE,
            Policy::Always => RaiseSet::ALL,
            Policy::RaiseAtLeast(k) => RaiseSet::at_least(k),
            Policy::Worst => self.worst_raise_set(),
        }
    }

    /// The spreads where raising has the strictly lower expected value (standing loses on
    /// average, raising doubles the loss): the play with the lowest RTP per initial bet.
    pub fn worst_raise_set(&self) -> RaiseSet {
        RaiseSet::from_spreads(
            Spread::all().filter(|&s| self.ev_stand_given_spread(s).is_some_and(|ev| ev < Exact::from(0))),
        )
    }

    /// The lowest and the highest RTP of any strategy under `definition`, with the raise
    /// sets that reach them, found by trying all 2¹¹ raise sets.
    ///
    /// Why that covers every strategy: a player sees only the two cards, and given the
    /// spread the third card's distribution does not depend on which ranks they are, so any
    /// strategy — randomised, mixed across players or seats, with any bet sizes chosen before
    /// the deal — is a raise probability `x_s ∈ [0, 1]` per spread. Both RTPs are ratios of
    /// functions linear in `x` (per initial bet the denominator is constant), so their
    /// extremes over the cube `[0, 1]¹¹` lie at its corners: the deterministic raise sets.
    /// Stake-weighted aggregates over many seats (what `returned / staked` measures) are
    /// mediants of per-seat ratios and stay inside the same range. Ties keep the set with the
    /// fewest raises (the lowest bit mask).
    pub fn rtp_extremes(&self, definition: RtpDefinition) -> RtpExtremes {
        let key = |f: &PolicyFigures| match definition {
            RtpDefinition::PerInitialBet => f.rtp,
            RtpDefinition::PerTotalWagered => f.rtp_per_total_wagered,
        };
        let mut worst = self.figures(RaiseSet::NONE);
        let mut best = worst.clone();
        for mask in 1..(1u16 << Spread::MAX) {
            let f = self.figures(RaiseSet::from_spreads(Spread::all().filter(|s| mask & (1 << (s.get() - 1)) != 0)));
            if key(&f) < key(&worst) {
                worst = f.clone();
            }
            if key(&f) > key(&best) {
                best = f;
            }
        }
        RtpExtremes {
            definition,
            worst: key(&worst),
            worst_raise: worst.raise,
            best: key(&best),
            best_raise: best.raise,
        }
    }

    /// The exact figures of `policy`.
    pub fn policy(&self, policy: Policy) -> PolicyFigures {
        self.figures(self.raise_set(policy))
    }

    /// The exact figures of raising on exactly the spreads of `raise`.
    pub fn figures(&self, raise: RaiseSet) -> PolicyFigures {
        let t = i128::from(self.paytable.three_of_a_kind_odds());
        let mut net = self.three_of_a_kind * t;
        let mut net_sq = self.three_of_a_kind * t * t;
        let mut wagered = self.total;
        for s in Spread::all() {
            let k = usize::from(s.get() - 1);
            let m: i128 = if raise.raises(s) { 2 } else { 1 };
            let odds = i128::from(self.paytable.spread_odds(s));
            let (win, lose) = (self.spread_win[k], self.spread[k] - self.spread_win[k]);
            net += m * (win * odds - lose);
            net_sq += m * m * (win * odds * odds + lose);
            wagered += (m - 1) * self.spread[k];
        }
        let one = Exact::from(1);
        let ev = self.p(net);
        let expected_wagered = self.p(wagered);
        let expected_returned = expected_wagered + ev;
        let expected_net_squared = self.p(net_sq);
        PolicyFigures {
            raise,
            ev,
            house_edge: -ev,
            expected_wagered,
            expected_returned,
            element_of_risk: -ev / expected_wagered,
            rtp: one + ev,
            rtp_per_total_wagered: expected_returned / expected_wagered,
            expected_net_squared,
            variance: expected_net_squared - ev * ev,
        }
    }
}

/// The two ways an RTP is quoted (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RtpDefinition {
    /// `rtp` = `1 + EV`: returned per unit of initial bet.
    PerInitialBet,
    /// `rtp_per_total_wagered` = `E[returned] / E[total wagered]`: what `returned / staked`
    /// over many rounds measures.
    PerTotalWagered,
}

impl RtpDefinition {
    /// `per_initial_bet` or `per_total_wagered`.
    pub const fn key(self) -> &'static str {
        match self {
            RtpDefinition::PerInitialBet => "per_initial_bet",
            RtpDefinition::PerTotalWagered => "per_total_wagered",
        }
    }

    /// The definition in words.
    pub const fn text(self) -> &'static str {
        match self {
            RtpDefinition::PerInitialBet => {
                "1 + EV: expected amount returned per unit of initial bet (the raise counts as money wagered, not as a \
                 second bet)"
            }
            RtpDefinition::PerTotalWagered => {
                "E[returned] / E[total wagered]: expected amount returned per unit of all money wagered, initial bets \
                 plus raises (what returned / staked measures over many rounds)"
            }
        }
    }
}

/// The lowest and highest RTP any strategy can have under one definition, exact.
///
/// Invariant: `worst <= best`; `worst_raise` and `best_raise` reach them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtpExtremes {
    pub definition: RtpDefinition,
    pub worst: Exact,
    pub worst_raise: RaiseSet,
    pub best: Exact,
    pub best_raise: RaiseSet,
}

/// `r` as a decimal string with exactly `places` digits (at most 18) after the point,
/// rounded half away from zero, computed exactly (no floating point).
pub fn decimal(r: &Exact, places: u32) -> String {
    let places = places.min(18);
    let negative = *r.numer() < 0;
    let den = r.denom().unsigned_abs(); // Ratio keeps den > 0
    let (mut int, mut rem) = r.numer().unsigned_abs().div_rem(&den);
    // Long division, one digit at a time; 10·rem is formed by repeated addition modulo
    // `den`, so nothing can overflow whatever the fraction.
    let mut digits = Vec::with_capacity(places as usize);
    let next_digit = |rem: &mut u128| {
        let mut digit = 0u8;
        let mut acc = 0u128;
        for _ in 0..10 {
            if acc >= den - *rem {
                acc -= den - *rem;
                digit += 1;
            } else {
                acc += *rem;
            }
        }
        *rem = acc;
        digit
    };
    for _ in 0..places {
        digits.push(next_digit(&mut rem));
    }
    if next_digit(&mut rem) >= 5 {
        // round half away from zero: carry through the digits
        let mut i = digits.len();
        loop {
            if i == 0 {
                int += 1;
                break;
            }
            i -= 1;
            if digits[i] == 9 {
                digits[i] = 0;
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    let zero = int == 0 && digits.iter().all(|&d| d == 0);
    let sign = if negative && !zero { "-" } else { "" };
    let frac: String = digits.iter().map(|d| char::from(b'0' + d)).collect();
    if places == 0 { format!("{sign}{int}") } else { format!("{sign}{int}.{frac}") }
}

/// `r` as the nearest `f64` (via a 15-place exact decimal), for JSON and statistics only.
pub fn to_f64(r: &Exact) -> f64 {
    decimal(r, 15).parse().unwrap_or(f64::NAN)
}

/// `r` as `"num/den"` in lowest terms (`"0/1"` for zero).
pub fn fraction(r: &Exact) -> String {
    format!("{}/{}", r.numer(), r.denom())
}

/// The definitions every output states, as `(field, definition)`.
pub const DEFINITIONS: [(&str, &str); 7] = [
    ("ev", "expected net result (returned minus total wagered) per unit of initial bet, exact"),
    ("house_edge", "-ev: expected loss per unit of initial bet"),
    ("element_of_risk", "expected loss per unit of total amount wagered (initial bet plus raise)"),
    (
        "rtp",
        "1 + ev = 1 - house_edge: return per unit of initial bet, the convention of the published 0.968446 (one deck)",
    ),
    ("rtp_per_total_wagered", "E[returned] / E[total wagered] = 1 - element_of_risk"),
    ("variance", "variance of the net result of one round, per unit of initial bet (units of initial bet squared)"),
    (
        "raise_spreads",
        "the spreads on which the policy raises; the optimal policy raises exactly where raising has the strictly higher expected value",
    ),
];

/// A figure as both an exact fraction and a decimal.
#[derive(Clone, Debug, Serialize)]
pub struct ExactFigure {
    pub fraction: String,
    pub decimal: f64,
}

impl From<&Exact> for ExactFigure {
    fn from(r: &Exact) -> Self {
        ExactFigure { fraction: fraction(r), decimal: to_f64(r) }
    }
}

/// One spread's line of the odds table.
#[derive(Clone, Debug, Serialize)]
pub struct SpreadLine {
    pub spread: u8,
    /// "X to 1" paid on a win.
    pub pays: u32,
    pub probability: ExactFigure,
    /// P(win | spread); null if the shoe cannot deal this spread.
    pub win_probability: Option<ExactFigure>,
    /// Expected net per unit of bet of standing on this spread (raising doubles it).
    pub ev_stand: Option<ExactFigure>,
    /// Whether the optimal policy raises here.
    pub optimal_raises: bool,
}

/// The figures of one policy, serializable: `ev` as `"num/den"`, the rest as decimal
/// fractions (not percentages).
#[derive(Clone, Debug, Serialize)]
pub struct PolicyLine {
    pub policy: String,
    pub raise_spreads: Vec<u8>,
    pub ev: String,
    pub ev_decimal: f64,
    pub house_edge: f64,
    pub element_of_risk: f64,
    pub rtp: f64,
    pub rtp_per_total_wagered: f64,
    pub expected_total_wagered: ExactFigure,
    pub variance: ExactFigure,
}

/// The hand probabilities of the odds table.
#[derive(Clone, Debug, Serialize)]
pub struct HandLines {
    pub pair: ExactFigure,
    pub three_of_a_kind_given_pair: ExactFigure,
    pub three_of_a_kind: ExactFigure,
    pub consecutive: ExactFigure,
    pub spreads: Vec<SpreadLine>,
}

/// Everything `reddog odds` shows, ready to print or serialize as one JSON object.
#[derive(Clone, Debug, Serialize)]
pub struct OddsReport {
    pub decks: u8,
    pub cards: u32,
    pub paytable: Paytable,
    /// The spreads the optimal policy raises on.
    pub raise_spreads: Vec<u8>,
    pub hands: HandLines,
    /// Keyed by [`Policy::key`]: `never`, `always`, `raise_at_least_7`, `worst`, `optimal`.
    pub policies: serde_json::Map<String, serde_json::Value>,
    /// The lowest and highest RTP of any strategy, under each definition:
    /// `{"per_initial_bet": {"worst": {...}, "best": {...}}, "per_total_wagered": {...}}`,
    /// each `{"fraction", "decimal", "raise_spreads"}`.
    pub rtp_range: serde_json::Map<String, serde_json::Value>,
    /// The policies' figures in display order.
    #[serde(skip)]
    pub policy_lines: Vec<PolicyLine>,
    pub definitions: serde_json::Map<String, serde_json::Value>,
}

/// The policies `reddog odds` reports: never and always raise, raise on spread ≥ 7, the worst
/// play and the optimal one.
pub const REPORT_POLICIES: [Policy; 5] =
    [Policy::Never, Policy::Always, Policy::RaiseAtLeast(7), Policy::Worst, Policy::Optimal];

impl OddsReport {
    /// The odds table for `decks` decks and `paytable`, with the figures of `policies`.
    pub fn new(decks: Decks, paytable: &Paytable, policies: &[Policy]) -> OddsReport {
        let a = Analysis::new(decks, paytable);
        let optimal = a.optimal_raise_set();
        let spreads = Spread::all()
            .map(|s| SpreadLine {
                spread: s.get(),
                pays: paytable.spread_odds(s),
                probability: (&a.p_spread(s)).into(),
                win_probability: a.p_win_given_spread(s).as_ref().map(Into::into),
                ev_stand: a.ev_stand_given_spread(s).as_ref().map(Into::into),
                optimal_raises: optimal.raises(s),
            })
            .collect();
        let policy_lines: Vec<PolicyLine> = policies
            .iter()
            .map(|&p| {
                let f = a.policy(p);
                PolicyLine {
                    policy: p.to_string(),
                    raise_spreads: f.raise.spreads(),
                    ev: fraction(&f.ev),
                    ev_decimal: to_f64(&f.ev),
                    house_edge: to_f64(&f.house_edge),
                    element_of_risk: to_f64(&f.element_of_risk),
                    rtp: to_f64(&f.rtp),
                    rtp_per_total_wagered: to_f64(&f.rtp_per_total_wagered),
                    expected_total_wagered: (&f.expected_wagered).into(),
                    variance: (&f.variance).into(),
                }
            })
            .collect();
        let policies_json = policies
            .iter()
            .zip(&policy_lines)
            .map(|(p, line)| (p.key(), serde_json::to_value(line).unwrap_or(serde_json::Value::Null)))
            .collect();
        let rtp_range = [RtpDefinition::PerInitialBet, RtpDefinition::PerTotalWagered]
            .into_iter()
            .map(|d| {
                let x = a.rtp_extremes(d);
                let side = |r: &Exact, set: RaiseSet| {
                    serde_json::json!({"fraction": fraction(r), "decimal": to_f64(r), "raise_spreads": set.spreads()})
                };
                let v = serde_json::json!({
                    "worst": side(&x.worst, x.worst_raise),
                    "best": side(&x.best, x.best_raise),
                    "definition": d.text(),
                });
                (d.key().to_string(), v)
            })
            .collect();
        let definitions =
            DEFINITIONS.iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string()))).collect();
        OddsReport {
            decks: decks.get(),
            cards: a.cards(),
            paytable: paytable.clone(),
            raise_spreads: optimal.spreads(),
            hands: HandLines {
                pair: (&a.p_pair()).into(),
                three_of_a_kind_given_pair: (&a.p_three_of_a_kind_given_pair()).into(),
                three_of_a_kind: (&a.p_three_of_a_kind()).into(),
                consecutive: (&a.p_consecutive()).into(),
                spreads,
            },
            policies: policies_json,
            rtp_range,
            policy_lines,
            definitions,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standard(decks: u32) -> Analysis {
        Analysis::new(Decks::new(decks).unwrap(), &Paytable::STANDARD)
    }

    fn q(n: i128, d: i128) -> Exact {
        Exact::new(n, d)
    }

    #[test]
    fn one_deck_hand_probabilities_match_the_closed_forms() {
        let a = standard(1);
        assert_eq!(a.p_pair(), q(3, 51));
        assert_eq!(a.p_three_of_a_kind_given_pair(), q(2, 50));
        assert_eq!(a.p_consecutive(), q(24 * 16, 52 * 51));
        for s in Spread::all() {
            let k = i128::from(s.get());
            assert_eq!(a.p_spread(s), q(2 * (12 - k) * 16, 52 * 51), "spread {s}");
            assert_eq!(a.p_win_given_spread(s), Some(q(4 * k, 50)), "spread {s}");
        }
    }

    #[test]
    fn probabilities_sum_to_one_for_every_deck_count() {
        for d in 1..=8 {
            let a = standard(d);
            let total = a.p_pair() + a.p_consecutive() + Spread::all().map(|s| a.p_spread(s)).sum::<Exact>();
            assert_eq!(total, Exact::from(1), "{d} decks");
        }
    }

    #[test]
    fn eight_deck_closed_forms_hold() {
        let a = standard(8);
        let (n, t) = (32, 416);
        assert_eq!(a.p_pair(), q(n - 1, t - 1));
        assert_eq!(a.p_three_of_a_kind_given_pair(), q(n - 2, t - 2));
        for s in Spread::all() {
            assert_eq!(a.p_win_given_spread(s), Some(q(i128::from(s.get()) * n, t - 2)));
        }
    }

    #[test]
    fn one_deck_optimal_rtp_is_the_published_0_968446() {
        let f = standard(1).policy(Policy::Optimal);
        assert_eq!(decimal(&f.rtp, 6), "0.968446");
        assert_eq!(f.raise.spreads(), vec![7, 8, 9, 10, 11]);
        assert_eq!(f.house_edge, -f.ev);
        assert_eq!(decimal(&f.rtp_per_total_wagered, 6), "0.973282");
    }

    #[test]
    fn the_optimal_policy_is_never_worse_than_any_other_raise_set() {
        for d in [1, 2, 8] {
            let a = standard(d);
            let best = a.policy(Policy::Optimal).ev;
            for mask in 0..(1u16 << 11) {
                let set = RaiseSet::from_spreads(Spread::all().filter(|s| mask & (1 << (s.get() - 1)) != 0));
                assert!(a.figures(set).ev <= best, "{d} decks, mask {mask:b}");
            }
        }
    }

    #[test]
    fn the_worst_play_is_the_minimum_over_every_raise_set_and_always_raise_is_not_it() {
        for d in [1, 2, 6, 8] {
            let a = standard(d);
            let per_bet = a.rtp_extremes(RtpDefinition::PerInitialBet);
            let per_total = a.rtp_extremes(RtpDefinition::PerTotalWagered);
            // Per initial bet the extremes are exactly the worst and the optimal rules.
            assert_eq!(per_bet.worst, a.policy(Policy::Worst).rtp, "{d} decks");
            assert_eq!(per_bet.worst_raise, a.worst_raise_set());
            assert_eq!(per_bet.best, a.policy(Policy::Optimal).rtp);
            for mask in 0..(1u16 << 11) {
                let f = a.figures(RaiseSet::from_spreads(Spread::all().filter(|s| mask & (1 << (s.get() - 1)) != 0)));
                assert!(per_total.worst <= f.rtp_per_total_wagered && f.rtp_per_total_wagered <= per_total.best);
                assert!(per_bet.worst <= f.rtp && f.rtp <= per_bet.best);
            }
            // "never raise" is not the worst play under either definition.
            assert!(per_total.worst < a.policy(Policy::Never).rtp_per_total_wagered);
            assert!(per_total.worst < a.policy(Policy::Always).rtp_per_total_wagered);
        }
        let one = standard(1);
        // The figure: always raising returns 0.8833 of what is staked (one deck).
        assert_eq!(decimal(&one.policy(Policy::Always).rtp_per_total_wagered, 4), "0.8833");
        assert_eq!(one.worst_raise_set().spreads(), vec![1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn figures_satisfy_their_defining_identities() {
        let a = standard(6);
        for p in [Policy::Never, Policy::Always, Policy::RaiseAtLeast(7), Policy::Optimal, Policy::Worst] {
            let f = a.policy(p);
            assert_eq!(f.rtp, Exact::from(1) - f.house_edge);
            assert_eq!(f.element_of_risk * f.expected_wagered, f.house_edge);
            assert_eq!(f.rtp_per_total_wagered, Exact::from(1) - f.element_of_risk);
            assert_eq!(f.variance, f.expected_net_squared - f.ev * f.ev);
            assert!(f.variance > Exact::from(0));
        }
        assert_eq!(a.policy(Policy::Never).expected_wagered, Exact::from(1));
    }

    #[test]
    fn a_paytable_that_pays_more_makes_the_optimal_policy_raise_more() {
        let generous = Paytable::new([20; 11], 11).unwrap(); // spread 1: 4/50 · 21 > 1
        let a = Analysis::new(Decks::ONE, &generous);
        assert_eq!(a.optimal_raise_set(), RaiseSet::ALL);
    }

    #[test]
    fn a_shoe_without_a_spread_reports_none_for_it() {
        let mut counts = [0; RANKS];
        counts[0] = 3; // three twos, three aces: only pairs and spread 11
        counts[12] = 3;
        let a = Analysis::from_counts(counts, &Paytable::STANDARD).unwrap();
        assert_eq!(a.p_win_given_spread(Spread::new(1).unwrap()), None);
        assert_eq!(a.p_win_given_spread(Spread::new(11).unwrap()), Some(Exact::from(0)));
        assert_eq!(
            Analysis::from_counts([0; RANKS], &Paytable::STANDARD).err(),
            Some(OddsError::ShoeTooSmall { cards: 0 })
        );
        assert_eq!(
            Analysis::from_counts([33; RANKS], &Paytable::STANDARD).err(),
            Some(OddsError::RankCountOutOfRange { rank: 0, count: 33 })
        );
    }

    #[test]
    fn decimals_are_rounded_exactly() {
        assert_eq!(decimal(&q(2, 3), 4), "0.6667");
        assert_eq!(decimal(&q(-2, 3), 4), "-0.6667");
        assert_eq!(decimal(&q(1, 2), 0), "1");
        assert_eq!(decimal(&q(999_999, 1_000_000), 3), "1.000");
        assert_eq!(decimal(&q(-1, 10_000_000), 3), "0.000");
        assert_eq!(decimal(&q(7, 1), 2), "7.00");
        // no overflow however large the terms
        assert_eq!(decimal(&q(i128::MAX - 1, i128::MAX), 5), "1.00000");
        assert_eq!(decimal(&q(i128::MIN + 1, 3), 0), "-56713727820156410577229101238628035242");
    }
}
