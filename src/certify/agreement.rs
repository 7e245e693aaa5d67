//! The agreement section: the simulator ([`crate::sim`], the production [`crate::game::Round`]
//! code: `Round::start`, `decide`, `settle`) plays each table's rules with the optimal raise
//! rule, and every exact figure it can estimate must lie inside the simulation's 99.9 %
//! interval. The running estimate at each chunk boundary is kept for the convergence chart.
//! The final figures are those `reddog simulate --json` prints for the same arguments, to the
//! last digit (same chunks, same seeds, same order of addition).

use serde::Serialize;

use crate::game::{Paytable, Spread, Table};
use crate::odds::{Analysis, Exact, Policy, to_f64};
use crate::sim::SimError;
use crate::sim::{CHUNK_ROUNDS, SimConfig, Sums, Z_999, estimates, run_chunk, simulate_chunks};

/// One exact figure against its simulated estimate.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub figure: String,
    pub exact: f64,
    pub exact_fraction: String,
    pub simulated: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub inside: bool,
}

/// A point of the convergence chart.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Point {
    pub rounds: u64,
    pub rtp: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// The agreement of one table.
#[derive(Clone, Debug, Serialize)]
pub struct Agreement {
    pub rounds: u64,
    pub seed: u64,
    pub policy: String,
    pub raise_spreads: Vec<u8>,
    pub comparisons: Vec<Comparison>,
    pub convergence: Vec<Point>,
    pub sums: Sums,
    pub elapsed_seconds: f64,
    pub method: String,
}

impl Agreement {
    /// Whether every exact figure lies inside its interval.
    pub fn passed(&self) -> bool {
        self.comparisons.iter().all(|c| c.inside)
    }
}

/// How the intervals are computed, as stated in the report.
pub const METHOD: &str = "One seat betting the simulator's fixed bet with the optimal raise rule, one freshly \
shuffled shoe per round (the simulator's ChaCha8 generator, chunk i on stream i of the seed), played through \
Round::start / decide / settle. RTPs: ratio estimators with a 99.9% normal interval (z = 3.2905, delta-method \
standard error), exactly as `reddog simulate`. Frequencies: the binomial 99.9% interval around the exact \
probability, p +- z sqrt(p (1 - p) / n).";

fn proportion(figure: &str, exact: &Exact, count: u64, n: u64) -> Comparison {
    let p = to_f64(exact);
    let half = Z_999 * (p * (1.0 - p) / n as f64).sqrt();
    let observed = count as f64 / n as f64;
    Comparison {
        figure: figure.to_string(),
        exact: p,
        exact_fraction: crate::odds::fraction(exact),
        simulated: observed,
        ci_low: p - half,
        ci_high: p + half,
        inside: (observed - p).abs() <= half,
    }
}

/// Simulates `rounds` rounds of `table` with `seed`.
pub fn run(table: &Table, rounds: u64, seed: u64, progress: &(dyn Fn(u64) + Sync)) -> Result<Agreement, SimError> {
    let config = SimConfig {
        rounds,
        decks: table.decks(),
        seats: 1,
        policy: Policy::Optimal,
        paytable: table.paytable().clone(),
        seed,
        threads: None,
    };
    let start = std::time::Instant::now();
    let last = std::sync::atomic::AtomicU64::new(0);
    let (raise, chunks) = simulate_chunks(&config, &|done| {
        let before = last.fetch_max(done, std::sync::atomic::Ordering::Relaxed);
        if done > before {
            progress(done - before);
        }
    })?;
    let elapsed = start.elapsed().as_secs_f64();
    // The first chunk's prefixes (1024, 2048, … rounds: the same generator, so the same
    // rounds), then the running totals at chunk boundaries, thinned to about 200 points
    // spaced evenly in log(rounds).
    let mut convergence = Vec::new();
    let point = |s: &Sums| {
        let (rtp, _) = estimates(s);
        Point { rounds: s.rounds, rtp: rtp.value, ci_low: rtp.ci_low, ci_high: rtp.ci_high }
    };
    let sim_table = Table::default().with_decks(table.decks()).with_paytable(table.paytable().clone())?;
    let mut prefix = 1024;
    while prefix < CHUNK_ROUNDS.min(rounds) {
        convergence.push(point(&run_chunk(&sim_table, 1, raise, seed, 0, prefix)?));
        prefix *= 2;
    }
    let mut total = Sums::default();
    let mut next = 0.0f64;
    let step = ((chunks.len().max(2)) as f64).ln() / 200.0;
    for (i, c) in chunks.iter().enumerate() {
        total = total.add(c);
        let at = ((i + 1) as f64).ln();
        if at >= next || i + 1 == chunks.len() {
            convergence.push(point(&total));
            next = at + step;
        }
    }
    let (rtp, per_total) = estimates(&total);
    let a = Analysis::new(table.decks(), table.paytable());
    let exact = a.figures(raise);
    let est = |figure: &str, e: crate::sim::Estimate, x: &Exact| Comparison {
        figure: figure.to_string(),
        exact: to_f64(x),
        exact_fraction: crate::odds::fraction(x),
        simulated: e.value,
        ci_low: e.ci_low,
        ci_high: e.ci_high,
        inside: e.contains(to_f64(x)),
    };
    let n = total.rounds;
    let win_nc: Exact = Spread::all().map(|s| a.p_spread(s) * a.p_win_given_spread(s).unwrap_or_default()).sum();
    let comparisons = vec![
        est("rtp (per initial bet)", rtp, &exact.rtp),
        est("rtp per total wagered", per_total, &exact.rtp_per_total_wagered),
        proportion("P(pair)", &a.p_pair(), total.pairs, n),
        proportion("P(three of a kind)", &a.p_three_of_a_kind(), total.three_of_a_kind, n),
        proportion("P(consecutive)", &a.p_consecutive(), total.consecutive, n),
        proportion("P(non-consecutive and the third card inside)", &win_nc, total.wins, n),
        proportion("hit frequency P(win)", &(a.p_three_of_a_kind() + win_nc), total.wins + total.three_of_a_kind, n),
    ];
    Ok(Agreement {
        rounds,
        seed,
        policy: Policy::Optimal.to_string(),
        raise_spreads: raise.spreads(),
        comparisons,
        convergence,
        sums: total,
        elapsed_seconds: elapsed,
        method: METHOD.to_string(),
    })
}

/// The paytable is part of the reproduction command only when it is not the standard one.
pub fn is_standard(p: &Paytable) -> bool {
    *p == Paytable::STANDARD
}
