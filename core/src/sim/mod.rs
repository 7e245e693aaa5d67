//! A Monte Carlo simulator that plays rounds through the same round code the service uses
//! ([`Round::start`], [`Round::decide`], [`Round::settle`]) and estimates the return to
//! player with a confidence interval, to check the exact figures of [`crate::odds`].
//!
//! # Cards
//! Each round deals from a freshly shuffled shoe: a [`FastShoe`] clones an unshuffled
//! [`Shoe`] and draws through [`Shoe::draw_with`] (a lazy forward Fisher–Yates), choosing
//! positions with Lemire's unbiased bounded method over a [`ChaCha8Rng`]. This generator is
//! for simulation only; real deals come from [`crate::fairness`].
//!
//! # Reproducibility
//! The rounds are split into chunks of [`CHUNK_ROUNDS`]. Chunk `i` gets its own generator:
//! key `ChaCha8Rng::seed_from_u64(seed)`, stream `i`. Every sum is an integer, and chunk
//! sums are combined in chunk order, so the result for a given seed is the same bit for bit
//! whatever the number of threads (only the timing differs).
//!
//! # Statistics
//! Rounds are independent; seats at one table share a deal and are not, so the unit of
//! observation is the round. For round `i` let `b_i` be the initial bets of all its seats,
//! `w_i` the total wagered (raises included), `r_i` the amount returned and `x_i = r_i − w_i`
//! the net. The simulator reports
//!
//! - `rtp = 1 + Σx / Σb`: return per unit of *initial* bet, the same definition as
//!   [`crate::odds::PolicyFigures::rtp`];
//! - `rtp_per_total_wagered = Σr / Σw`, as [`crate::odds::PolicyFigures::rtp_per_total_wagered`].
//!
//! Both are ratio estimators `R̂ = Σy / Σz`. Their 99.9% confidence interval is
//! `R̂ ± z·SE` with `z = 3.2905` (two-sided normal quantile) and the delta-method standard
//! error `SE² = Σ(y_i − R̂ z_i)² / ((n − 1) · n · z̄²)`, computed from the integer sums
//! `Σy, Σz, Σy², Σz², Σyz`. (With equal bets `Σb` is fixed and this reduces to the usual
//! interval for a mean.) Floating point is used for these statistics only; money is summed
//! in integers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::Serialize;

use crate::game::{Card, CardSource, Decks, HandClass, MAX_SEATS, Money, Paytable, Round, Shoe, Table};
use crate::odds::{Policy, RaiseSet};

/// Rounds per chunk: the unit of work, of seeding and of progress reports.
pub const CHUNK_ROUNDS: u64 = 1 << 16;

/// Two-sided 99.9% standard normal quantile.
pub const Z_999: f64 = 3.2905;

/// A fast shuffled shoe for simulation: every [`FastShoe::reshuffle`] starts a freshly
/// shuffled shoe; draws are unbiased (Lemire's method, a rejection on the rare biased zone).
#[derive(Clone)]
pub struct FastShoe<R> {
    fresh: Shoe,
    shoe: Shoe,
    rng: R,
}

impl<R: Rng> FastShoe<R> {
    /// A shoe of `decks` decks shuffled by `rng`.
    pub fn new(decks: Decks, rng: R) -> FastShoe<R> {
        let fresh = Shoe::new(decks);
        FastShoe { shoe: fresh.clone(), fresh, rng }
    }

    /// Puts every card back: the next draw is the first card of a new shuffle.
    pub fn reshuffle(&mut self) {
        self.shoe.clone_from(&self.fresh);
    }
}

/// A uniform value in `0..bound` (`bound > 0`) by Lemire's multiply-and-reject method.
pub fn bounded<R: Rng + ?Sized>(rng: &mut R, bound: u32) -> u32 {
    let bound = bound.max(1);
    let mut m = u64::from(rng.next_u32()) * u64::from(bound);
    if (m as u32) < bound {
        let threshold = bound.wrapping_neg() % bound;
        while (m as u32) < threshold {
            m = u64::from(rng.next_u32()) * u64::from(bound);
        }
    }
    (m >> 32) as u32
}

impl<R: Rng> CardSource for FastShoe<R> {
    fn draw(&mut self) -> Card {
        let rng = &mut self.rng;
        match self.shoe.draw_with(|b| bounded(rng, b)) {
            Some(card) => card,
            None => {
                // Exhausted (a round draws at most 3 of at least 52 cards, so only a caller
                // that never reshuffles gets here): start a new shoe rather than fail.
                self.reshuffle();
                let rng = &mut self.rng;
                self.shoe
                    .draw_with(|b| bounded(rng, b))
                    .unwrap_or_else(|| Card::new(crate::game::Rank::TWO, crate::game::Suit::Clubs))
            }
        }
    }
}

/// What to simulate.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub rounds: u64,
    pub decks: Decks,
    /// 1..=7 seats, all betting `bet` and following `policy`.
    pub seats: usize,
    pub policy: Policy,
    pub paytable: Paytable,
    pub seed: u64,
    /// Worker threads; `None` uses rayon's global pool (one per core).
    pub threads: Option<usize>,
}

impl SimConfig {
    /// One seat, one deck, standard paytable, optimal policy, seed 0.
    pub fn new(rounds: u64) -> SimConfig {
        SimConfig {
            rounds,
            decks: Decks::ONE,
            seats: 1,
            policy: Policy::Optimal,
            paytable: Paytable::STANDARD,
            seed: 0,
            threads: None,
        }
    }
}

/// Integer sums over rounds. Adding two is exact and order-independent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Sums {
    pub rounds: u64,
    /// Σ initial bets.
    pub bet: u128,
    /// Σ total wagered (raises included).
    pub wagered: u128,
    /// Σ returned.
    pub returned: u128,
    /// Σ net² per round, Σ bet² per round, Σ net·bet per round.
    pub net_sq: u128,
    pub bet_sq: u128,
    pub net_bet: i128,
    /// Σ returned², Σ wagered², Σ returned·wagered per round.
    pub returned_sq: u128,
    pub wagered_sq: u128,
    pub returned_wagered: u128,
    /// Rounds by hand: pairs, three of a kinds, consecutive, non-consecutive, and wins on
    /// non-consecutive hands.
    pub pairs: u64,
    pub three_of_a_kind: u64,
    pub consecutive: u64,
    pub non_consecutive: u64,
    pub wins: u64,
}

impl Sums {
    /// The component-wise sum.
    pub fn add(&self, o: &Sums) -> Sums {
        Sums {
            rounds: self.rounds + o.rounds,
            bet: self.bet + o.bet,
            wagered: self.wagered + o.wagered,
            returned: self.returned + o.returned,
            net_sq: self.net_sq + o.net_sq,
            bet_sq: self.bet_sq + o.bet_sq,
            net_bet: self.net_bet + o.net_bet,
            returned_sq: self.returned_sq + o.returned_sq,
            wagered_sq: self.wagered_sq + o.wagered_sq,
            returned_wagered: self.returned_wagered + o.returned_wagered,
            pairs: self.pairs + o.pairs,
            three_of_a_kind: self.three_of_a_kind + o.three_of_a_kind,
            consecutive: self.consecutive + o.consecutive,
            non_consecutive: self.non_consecutive + o.non_consecutive,
            wins: self.wins + o.wins,
        }
    }

    /// Σ net (returned − wagered).
    pub fn net(&self) -> i128 {
        self.returned as i128 - self.wagered as i128
    }

    fn record(&mut self, bet: u64, wagered: u64, returned: u64) {
        let (b, w, r) = (u128::from(bet), u128::from(wagered), u128::from(returned));
        let x = r as i128 - w as i128;
        self.rounds += 1;
        self.bet += b;
        self.wagered += w;
        self.returned += r;
        self.net_sq += x.unsigned_abs() * x.unsigned_abs();
        self.bet_sq += b * b;
        self.net_bet += x * b as i128;
        self.returned_sq += r * r;
        self.wagered_sq += w * w;
        self.returned_wagered += r * w;
    }
}

/// A ratio estimate `Σy/Σz` with its 99.9% confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    pub value: f64,
    pub std_error: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

impl Estimate {
    /// The ratio estimator for `n` rounds from `Σy, Σz, Σy², Σz², Σyz` (see module docs),
    /// shifted by `offset` (the `1 +` of `rtp`).
    pub fn ratio(n: u64, sy: f64, sz: f64, syy: f64, szz: f64, syz: f64, offset: f64) -> Estimate {
        let nf = n as f64;
        let r = if sz > 0.0 { sy / sz } else { f64::NAN };
        let std_error = if n > 1 && sz > 0.0 {
            let ss = (syy - 2.0 * r * syz + r * r * szz).max(0.0);
            let zbar = sz / nf;
            (ss / ((nf - 1.0) * nf * zbar * zbar)).sqrt()
        } else {
            f64::NAN
        };
        let value = offset + r;
        Estimate { value, std_error, ci_low: value - Z_999 * std_error, ci_high: value + Z_999 * std_error }
    }

    /// Whether `x` lies inside the interval.
    pub fn contains(&self, x: f64) -> bool {
        self.ci_low <= x && x <= self.ci_high
    }
}

/// The result of a simulation.
#[derive(Clone, Debug)]
pub struct SimReport {
    pub config: SimConfig,
    pub raise: RaiseSet,
    pub sums: Sums,
    /// `1 + Σnet/Σinitial bets`, per unit of initial bet.
    pub rtp: Estimate,
    /// `Σreturned/Σwagered`.
    pub rtp_per_total_wagered: Estimate,
    pub elapsed: Duration,
}

impl SimReport {
    /// Rounds per wall-clock second.
    pub fn rounds_per_second(&self) -> f64 {
        self.sums.rounds as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// The bet every simulated seat places, in minor units: the standard table minimum. Any
/// bet gives the same ratios; a small one keeps the sums small.
pub const SIM_BET: Money = Money(500);

/// Plays `config.rounds` rounds and estimates the RTP. `progress(done)` is called from the
/// worker threads after each chunk with the number of rounds finished so far (in any order).
pub fn simulate(config: &SimConfig, progress: &(dyn Fn(u64) + Sync)) -> Result<SimReport, SimError> {
    let start = Instant::now();
    let (raise, per_chunk) = simulate_chunks(config, progress)?;
    let elapsed = start.elapsed();
    let sums = per_chunk.iter().fold(Sums::default(), |acc, s| acc.add(s));
    let (rtp, rtp_per_total_wagered) = estimates(&sums);
    Ok(SimReport { config: config.clone(), raise, sums, rtp, rtp_per_total_wagered, elapsed })
}

/// Plays `config.rounds` rounds and returns the raise set played and each chunk's sums, in
/// chunk order ([`simulate`] adds them up; their running totals trace the convergence).
pub fn simulate_chunks(config: &SimConfig, progress: &(dyn Fn(u64) + Sync)) -> Result<(RaiseSet, Vec<Sums>), SimError> {
    if config.seats == 0 || config.seats > MAX_SEATS {
        return Err(SimError::SeatCount { seats: config.seats });
    }
    if config.rounds == 0 {
        return Err(SimError::NoRounds);
    }
    let table = Table::default()
        .with_decks(config.decks)
        .with_paytable(config.paytable.clone())
        .map_err(crate::game::GameError::from)?;
    let raise = config.policy.raise_set(config.decks, &config.paytable);
    let chunks = config.rounds.div_ceil(CHUNK_ROUNDS);
    let done = AtomicU64::new(0);
    let work = || -> Result<Vec<Sums>, SimError> {
        (0..chunks)
            .into_par_iter()
            .map(|i| {
                let n = CHUNK_ROUNDS.min(config.rounds - i * CHUNK_ROUNDS);
                let sums = run_chunk(&table, config.seats, raise, config.seed, i, n)?;
                progress(done.fetch_add(n, Ordering::Relaxed) + n);
                Ok(sums)
            })
            .collect()
    };
    let per_chunk = match config.threads {
        Some(t) => rayon::ThreadPoolBuilder::new()
            .num_threads(t.max(1))
            .build()
            .map_err(SimError::ThreadPool)?
            .install(work)?,
        None => work()?,
    };
    Ok((raise, per_chunk))
}

/// The two RTP estimates of `sums`: per unit of initial bet and per total wagered.
pub fn estimates(sums: &Sums) -> (Estimate, Estimate) {
    let f = |v: u128| v as f64;
    let rtp = Estimate::ratio(
        sums.rounds,
        sums.net() as f64,
        f(sums.bet),
        f(sums.net_sq),
        f(sums.bet_sq),
        sums.net_bet as f64,
        1.0,
    );
    let rtp_per_total_wagered = Estimate::ratio(
        sums.rounds,
        f(sums.returned),
        f(sums.wagered),
        f(sums.returned_sq),
        f(sums.wagered_sq),
        f(sums.returned_wagered),
        0.0,
    );
    (rtp, rtp_per_total_wagered)
}

/// The generator of chunk `chunk` for `seed`.
pub fn chunk_rng(seed: u64, chunk: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(chunk);
    rng
}

/// Plays `rounds` rounds of chunk `chunk` and returns their sums.
pub fn run_chunk(
    table: &Table,
    seats: usize,
    raise: RaiseSet,
    seed: u64,
    chunk: u64,
    rounds: u64,
) -> Result<Sums, SimError> {
    let mut shoe = FastShoe::new(table.decks(), chunk_rng(seed, chunk));
    let bets = vec![SIM_BET; seats];
    let mut sums = Sums::default();
    for _ in 0..rounds {
        shoe.reshuffle();
        let s = play_round(table, &bets, raise, &mut shoe)?;
        let (mut wagered, mut returned) = (0u64, 0u64);
        for seat in &s.seats {
            wagered += seat.stake.minor();
            returned += seat.returned.minor();
        }
        match s.class {
            HandClass::Pair => {
                sums.pairs += 1;
                sums.three_of_a_kind += u64::from(s.seats[0].odds > 0);
            }
            HandClass::Consecutive => sums.consecutive += 1,
            HandClass::NonConsecutive(_) => {
                sums.non_consecutive += 1;
                sums.wins += u64::from(s.seats[0].odds > 0);
            }
        }
        sums.record(SIM_BET.minor() * seats as u64, wagered, returned);
    }
    Ok(sums)
}

/// One full round through the core: deal from `source`, every seat decides by `raise`,
/// settle.
pub fn play_round(
    table: &Table,
    bets: &[Money],
    raise: RaiseSet,
    source: &mut impl CardSource,
) -> Result<crate::game::Settlement, crate::game::GameError> {
    let mut round = Round::start(table, bets, source)?;
    if let HandClass::NonConsecutive(spread) = round.class() {
        let decision = raise.decision(spread);
        for seat in 0..bets.len() {
            round.decide(seat, decision)?;
        }
    }
    round.settle(table.paytable())
}

/// How the simulator's interval is computed, as stated in every output.
pub const METHOD: &str = "rounds are the unit of observation; rtp = 1 + sum(net)/sum(initial bets) per unit of \
initial bet (as the exact rtp); rtp_per_total_wagered = sum(returned)/sum(wagered); both are ratio estimators with \
a 99.9% normal interval, z = 3.2905, delta-method standard error";

/// Integer totals of a simulation, in minor units (each seat bets [`SIM_BET`]).
#[derive(Clone, Debug, Serialize)]
pub struct Totals {
    pub initial_bets: u128,
    pub wagered: u128,
    pub returned: u128,
    pub net: i128,
}

/// Round counts by hand.
#[derive(Clone, Debug, Serialize)]
pub struct HandCounts {
    pub pair: u64,
    pub three_of_a_kind: u64,
    pub consecutive: u64,
    pub non_consecutive: u64,
    pub non_consecutive_wins: u64,
}

/// Everything `reddog simulate` shows, ready to print or serialize as one JSON object,
/// beside the exact figures of the same raise set for comparison.
#[derive(Clone, Debug, Serialize)]
pub struct SimSummary {
    pub rounds: u64,
    pub decks: u8,
    pub seats: usize,
    pub policy: String,
    pub raise_spreads: Vec<u8>,
    pub seed: u64,
    /// Simulated return per unit of initial bet, `1 + Σnet/Σinitial bets`.
    pub rtp: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub std_error: f64,
    pub confidence: f64,
    /// The exact `rtp` of the same raise set ([`crate::odds::PolicyFigures::rtp`]).
    pub exact_rtp: f64,
    pub exact_rtp_in_ci: bool,
    pub rtp_per_total_wagered: Estimate,
    pub exact_rtp_per_total_wagered: f64,
    pub rounds_per_second: f64,
    pub elapsed_seconds: f64,
    pub threads: usize,
    pub totals: Totals,
    pub hands: HandCounts,
    pub method: &'static str,
}

impl SimSummary {
    /// Summarizes `report`, comparing it with the exact figures of its raise set.
    pub fn new(report: &SimReport) -> SimSummary {
        let c = &report.config;
        let exact = crate::odds::Analysis::new(c.decks, &c.paytable).figures(report.raise);
        let exact_rtp = crate::odds::to_f64(&exact.rtp);
        let s = &report.sums;
        SimSummary {
            rounds: s.rounds,
            decks: c.decks.get(),
            seats: c.seats,
            policy: c.policy.to_string(),
            raise_spreads: report.raise.spreads(),
            seed: c.seed,
            rtp: report.rtp.value,
            ci_low: report.rtp.ci_low,
            ci_high: report.rtp.ci_high,
            std_error: report.rtp.std_error,
            confidence: 0.999,
            exact_rtp,
            exact_rtp_in_ci: report.rtp.contains(exact_rtp),
            rtp_per_total_wagered: report.rtp_per_total_wagered,
            exact_rtp_per_total_wagered: crate::odds::to_f64(&exact.rtp_per_total_wagered),
            rounds_per_second: report.rounds_per_second(),
            elapsed_seconds: report.elapsed.as_secs_f64(),
            threads: c.threads.unwrap_or_else(rayon::current_num_threads),
            totals: Totals { initial_bets: s.bet, wagered: s.wagered, returned: s.returned, net: s.net() },
            hands: HandCounts {
                pair: s.pairs,
                three_of_a_kind: s.three_of_a_kind,
                consecutive: s.consecutive,
                non_consecutive: s.non_consecutive,
                non_consecutive_wins: s.wins,
            },
            method: METHOD,
        }
    }
}

/// What can stop a simulation.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A simulated round needs 1 to [`MAX_SEATS`] seats.
    #[error("seats: a simulated round has 1 to {MAX_SEATS} seats, not {seats}")]
    SeatCount { seats: usize },
    /// A simulation of no rounds.
    #[error("rounds: at least one round to simulate")]
    NoRounds,
    /// The worker thread pool could not be built.
    #[error("cannot build the simulator's thread pool")]
    ThreadPool(#[source] rayon::ThreadPoolBuildError),
    /// The rules refused a step (a table or paytable that is not valid).
    #[error(transparent)]
    Game(#[from] crate::game::GameError),
}

impl From<crate::game::TableError> for SimError {
    fn from(e: crate::game::TableError) -> SimError {
        SimError::Game(e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lemire_picks_stay_below_the_bound_and_cover_it() {
        let mut rng = chunk_rng(1, 0);
        let mut seen = [false; 7];
        for _ in 0..1000 {
            let v = bounded(&mut rng, 7);
            assert!(v < 7);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(bounded(&mut rng, 1), 0);
    }

    #[test]
    fn fast_shoe_deals_every_card_equally_often_in_each_position() {
        // chi-square over the 52 codes for the 1st and 3rd card of 104,000 fresh 2-deck shoes;
        // 51 degrees of freedom, 99.99% quantile about 98 (fixed seed: deterministic).
        let mut shoe = FastShoe::new(Decks::new(2).unwrap(), chunk_rng(11, 0));
        let (n, mut first, mut third) = (104_000u32, [0u32; 52], [0u32; 52]);
        for _ in 0..n {
            shoe.reshuffle();
            first[usize::from(shoe.draw().code())] += 1;
            let _ = shoe.draw();
            third[usize::from(shoe.draw().code())] += 1;
        }
        let expected = f64::from(n) / 52.0;
        for counts in [first, third] {
            let chi2: f64 = counts.iter().map(|&c| (f64::from(c) - expected).powi(2) / expected).sum();
            assert!(chi2 < 98.0, "chi-square {chi2}");
        }
    }

    #[test]
    fn a_fast_shoe_never_deals_the_same_card_twice_before_a_reshuffle() {
        let mut shoe = FastShoe::new(Decks::ONE, chunk_rng(7, 3));
        let mut seen = [false; 52];
        for _ in 0..52 {
            let c = shoe.draw();
            assert!(!seen[usize::from(c.code())]);
            seen[usize::from(c.code())] = true;
        }
        // exhausted: it starts a new shoe instead of failing
        let _ = shoe.draw();
    }

    #[test]
    fn the_result_does_not_depend_on_the_thread_count() {
        let mut config = SimConfig::new(3 * CHUNK_ROUNDS + 123);
        config.seats = 3;
        config.seed = 42;
        config.threads = Some(1);
        let one = simulate(&config, &|_| {}).unwrap();
        config.threads = Some(2);
        let two = simulate(&config, &|_| {}).unwrap();
        assert_eq!(one.sums, two.sums);
        assert_eq!(one.sums.rounds, 3 * CHUNK_ROUNDS + 123);
        config.seed = 43;
        assert_ne!(simulate(&config, &|_| {}).unwrap().sums, one.sums);
    }

    #[test]
    fn bad_seat_and_round_counts_are_refused() {
        let mut config = SimConfig::new(10);
        config.seats = 8;
        assert!(matches!(simulate(&config, &|_| {}), Err(SimError::SeatCount { seats: 8 })));
        config.seats = 0;
        assert!(matches!(simulate(&config, &|_| {}), Err(SimError::SeatCount { seats: 0 })));
        let config = SimConfig::new(0);
        assert!(matches!(simulate(&config, &|_| {}), Err(SimError::NoRounds)));
    }

    #[test]
    fn the_ratio_interval_of_a_constant_is_a_point() {
        let e = Estimate::ratio(4, 2.0, 4.0, 1.0, 4.0, 2.0, 1.0);
        assert_eq!(e.value, 1.5);
        assert_eq!(e.std_error, 0.0);
        assert!(e.contains(1.5));
    }
}
