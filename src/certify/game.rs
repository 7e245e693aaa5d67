//! The game section: the rules as configured and every figure of the exact enumeration
//! ([`crate::odds`]) — hand and outcome probabilities as fractions, RTP under both
//! definitions for the best and worst play and each raise threshold, house edge, element of
//! risk, hit frequency, volatility and the largest round's payout.

use serde::Serialize;

use crate::game::{MAX_SEATS, Spread, Table};
use crate::odds::{Analysis, Exact, OddsReport, Policy, REPORT_POLICIES, RtpDefinition, decimal, fraction, to_f64};

/// An exact figure: fraction, decimal to 12 places (exact rounding) and `f64`.
#[derive(Clone, Debug, Serialize)]
pub struct Figure {
    pub fraction: String,
    pub decimal: String,
    pub value: f64,
}

impl From<&Exact> for Figure {
    fn from(r: &Exact) -> Figure {
        Figure { fraction: fraction(r), decimal: decimal(r, 12), value: to_f64(r) }
    }
}

/// One raise rule's figures.
#[derive(Clone, Debug, Serialize)]
pub struct RuleFigures {
    pub policy: String,
    pub raise_spreads: Vec<u8>,
    pub rtp: Figure,
    pub rtp_per_total_wagered: Figure,
    pub house_edge: Figure,
    pub element_of_risk: Figure,
    pub variance: Figure,
    /// Standard deviation of one round's net per unit of initial bet, `sqrt(variance)`.
    pub volatility: f64,
}

/// The largest round a table can deal, in the table's minor units.
#[derive(Clone, Debug, Serialize)]
pub struct LargestPayout {
    /// Largest amount returned to one seat per unit of initial bet (stake included), and the
    /// hand that pays it.
    pub per_unit_returned: u64,
    pub hand: String,
    /// One seat at `max_bet`: winnings and amount returned.
    pub seat_winnings_minor: u64,
    pub seat_returned_minor: u64,
    /// A full table (every seat at `max_bet` with that hand): winnings and amount returned.
    pub seats: usize,
    pub round_winnings_minor: u64,
    pub round_returned_minor: u64,
}

/// The game figures of one table.
#[derive(Clone, Debug, Serialize)]
pub struct GameFigures {
    /// P(win), P(push), P(loss) of a seat: they do not depend on the raise rule.
    pub outcomes: Vec<(String, Figure)>,
    /// P(the seat wins anything) = P(win).
    pub hit_frequency: Figure,
    /// Optimal, worst and the reported policies, then raise-at-least:K for K = 1..=11.
    pub rules: Vec<RuleFigures>,
    /// Best and worst RTP of any strategy under each definition.
    pub rtp_range: Vec<RangeLine>,
    pub largest_payout: Option<LargestPayout>,
    /// `reddog odds --json` for this table, verbatim.
    pub odds: serde_json::Value,
    pub method: String,
}

/// The extremes under one definition.
#[derive(Clone, Debug, Serialize)]
pub struct RangeLine {
    pub definition: String,
    pub worst: Figure,
    pub worst_raise_spreads: Vec<u8>,
    pub best: Figure,
    pub best_raise_spreads: Vec<u8>,
}

/// The method, as stated in the report.
pub const METHOD: &str = "Exact enumeration of every ordered draw of three ranks from the shoe's rank counts \
(13^3 terms, weights = ordered card triples), all figures exact fractions (i128 rationals); nothing here is \
simulated. Definitions as `reddog odds` states them: rtp = 1 + EV per unit of initial bet; rtp_per_total_wagered = \
E[returned]/E[total wagered]; house edge = -EV; element of risk = -EV / E[total wagered]; volatility = standard \
deviation of one round's net per unit of initial bet.";

fn rule(a: &Analysis, policy: Policy) -> RuleFigures {
    let f = a.policy(policy);
    RuleFigures {
        policy: policy.to_string(),
        raise_spreads: f.raise.spreads(),
        rtp: (&f.rtp).into(),
        rtp_per_total_wagered: (&f.rtp_per_total_wagered).into(),
        house_edge: (&f.house_edge).into(),
        element_of_risk: (&f.element_of_risk).into(),
        variance: (&f.variance).into(),
        volatility: to_f64(&f.variance).sqrt(),
    }
}

/// The game figures of `table`.
pub fn figures(table: &Table) -> GameFigures {
    let (decks, paytable) = (table.decks(), table.paytable());
    let a = Analysis::new(decks, paytable);
    let one = Exact::from(1);
    let win = a.p_three_of_a_kind()
        + Spread::all().map(|s| a.p_spread(s) * a.p_win_given_spread(s).unwrap_or_default()).sum::<Exact>();
    let push = a.p_consecutive() + a.p_pair() - a.p_three_of_a_kind();
    let loss = one - win - push;
    let mut rules =
        vec![rule(&a, Policy::Optimal), rule(&a, Policy::Worst), rule(&a, Policy::Never), rule(&a, Policy::Always)];
    rules.extend((1..=Spread::MAX).map(|k| rule(&a, Policy::RaiseAtLeast(k))));
    let rtp_range = [RtpDefinition::PerInitialBet, RtpDefinition::PerTotalWagered]
        .into_iter()
        .map(|d| {
            let x = a.rtp_extremes(d);
            RangeLine {
                definition: d.key().to_string(),
                worst: (&x.worst).into(),
                worst_raise_spreads: x.worst_raise.spreads(),
                best: (&x.best).into(),
                best_raise_spreads: x.best_raise.spreads(),
            }
        })
        .collect();
    GameFigures {
        outcomes: vec![("win".into(), (&win).into()), ("push".into(), (&push).into()), ("loss".into(), (&loss).into())],
        hit_frequency: (&win).into(),
        rules,
        rtp_range,
        largest_payout: largest_payout(table),
        odds: serde_json::to_value(OddsReport::new(decks, paytable, &REPORT_POLICIES)).unwrap_or_default(),
        method: METHOD.to_string(),
    }
}

/// The largest amount a round can return, with checked arithmetic (`None` if it would not
/// fit, which [`Table::new`] rules out).
fn largest_payout(table: &Table) -> Option<LargestPayout> {
    let p = table.paytable();
    let trips = u64::from(p.three_of_a_kind_odds());
    let (best_spread, best_odds) =
        Spread::all().map(|s| (s, u64::from(p.spread_odds(s)))).max_by_key(|&(s, o)| (o, u8::MAX - s.get()))?;
    // Largest winnings per unit of initial bet: three of a kind (no raise) or the best spread
    // raised (twice the stake at its odds); a tie names three of a kind.
    let (per_unit, hand, stake_units) = if trips >= 2 * best_odds {
        (trips + 1, format!("three of a kind, paid {trips} to 1"), 1)
    } else {
        (2 * (best_odds + 1), format!("spread {best_spread} raised (stake doubled), paid {best_odds} to 1"), 2)
    };
    let max = table.limits().max().minor();
    let seat_returned = max.checked_mul(per_unit)?;
    let seat_winnings = seat_returned.checked_sub(max.checked_mul(stake_units)?)?;
    let seats = MAX_SEATS as u64;
    Some(LargestPayout {
        per_unit_returned: per_unit,
        hand,
        seat_winnings_minor: seat_winnings,
        seat_returned_minor: seat_returned,
        seats: MAX_SEATS,
        round_winnings_minor: seat_winnings.checked_mul(seats)?,
        round_returned_minor: seat_returned.checked_mul(seats)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_table_pays_at_most_three_of_a_kind_and_outcomes_sum_to_one() {
        let g = figures(&Table::default());
        let lp = g.largest_payout.unwrap();
        // Three of a kind wins 11 per unit; spread 1 raised wins 2 x 5 = 10.
        assert_eq!(lp.per_unit_returned, 12);
        assert_eq!(lp.seat_returned_minor, 30_000 * 12);
        assert_eq!(lp.round_winnings_minor, 7 * 30_000 * 11);
        let sum: f64 = g.outcomes.iter().map(|(_, f)| f.value).sum();
        assert!((sum - 1.0).abs() < 1e-12);
        assert_eq!(g.rules[0].rtp.decimal, "0.968446455505");
        assert_eq!(g.odds["decks"], 1);
        assert_eq!(g.rules.len(), 4 + 11);
    }
}
