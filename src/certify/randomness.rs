//! The randomness section: the production deal ([`FairShoe`]) under statistical test.
//!
//! Every experiment deals from its own server seed, `SHA-256("reddog/certify/v1/" ‖ seed as
//! u64 big-endian ‖ "/" ‖ experiment name)`, client seed `certify`, nonces `0, 1, 2, …` — a
//! fresh derived key per deal, exactly as rounds are dealt — so every deal can be replayed
//! with `reddog commit --server-seed HEX --reveal --client-seed certify --nonce N` or
//! `reddog rng-dump`. The source is a [`DealSource`], so a test can put a deliberately biased
//! shuffle in its place and watch this section fail.
//!
//! Tests (each with its statistic, degrees of freedom and p-value; a test fails when
//! `p < alpha`, `alpha` fixed before any result is seen):
//!
//! - **card × position** per deck count `d`: whole shoes of `n = 52d` cards; count code `c` at
//!   position `i` (`n × 52` cells, `E = N/52`). Each deal is a table with fixed margins, so
//!   `X² · (n−1)/n ~ χ²((n−1)·51)`; the largest standardized cell residual is tested too, with a
//!   Bonferroni bound over the cells.
//! - **runs** per deck count: Wald–Wolfowitz runs of red/black and of low (2–7)/high (8–A)
//!   along each whole shoe, standardized by their exact moments and summed over shoes: `N(0,1)`.
//! - **serial (rank triples)** per deck count: the ranks of the first three cards, 13³ cells
//!   against their exact probabilities from rank counts: `χ²(2196)`.
//! - **hand classes and outcomes** per deck count: the 25 outcome classes of a round (pair
//!   with/without three of a kind, consecutive, each spread with the third card inside/outside)
//!   against the exact fractions of [`crate::odds::Analysis`]: `χ²(24)`.
//! - **p-value uniformity**: the card × position test repeated on independent seeds; under
//!   the null its p-values are uniform: a 10-bin histogram against the uniform, `χ²(9)`.
//! - **dieharder** (when installed): its battery on the raw word stream of one deal. The whole
//!   battery (`DieharderPlan::All`) is what `dieharder -a` runs — every test, and the tuple
//!   sizes `-a` loops over (rgb_bitdist 1–12, rgb_minimum_distance and rgb_permutations 2–5,
//!   rgb_lagged_sum 0–32) — as one dieharder process per test and tuple size ([`all_jobs`]),
//!   each reading the stream from its start, [`DieharderPlan`]'s `parallel` at a time. Each
//!   job's reference cost ([`DieharderJob::cost_ms`], measured) drives the progress bar, so
//!   the ETA includes the battery.

use std::io::Write as _;
use std::process::{Command, Stdio};

use rayon::prelude::*;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::stats::{TestResult, chi_square_sf, count_runs, histogram, normal_two_sided, pearson, runs_moments};
use crate::fairness::{DealInputs, DealStream, FairShoe, ServerSeed};
use crate::game::{Card, CardSource, Decks, HandClass, Paytable, Spread};
use crate::odds::{Analysis, Exact, fraction, to_f64};

/// The client seed of every certification deal.
pub const CLIENT_SEED: &str = "certify";

/// Where the shuffled shoes come from.
pub trait DealSource: Sync {
    /// A shoe being dealt.
    type Shoe: CardSource;
    /// What the source is, for the report.
    fn describe(&self) -> String;
    /// The freshly shuffled shoe of deal `index` of `experiment`.
    fn shoe(&self, experiment: &str, decks: Decks, index: u64) -> Self::Shoe;
}

/// The production deal: [`FairShoe`] under per-experiment server seeds (module docs).
#[derive(Clone, Debug)]
pub struct FairDeals {
    pub seed: u64,
}

impl FairDeals {
    /// The server seed of `experiment`.
    pub fn server_seed(&self, experiment: &str) -> ServerSeed {
        let mut h = Sha256::new();
        h.update(b"reddog/certify/v1/");
        h.update(self.seed.to_be_bytes());
        h.update(b"/");
        h.update(experiment.as_bytes());
        ServerSeed::from_bytes(h.finalize().into())
    }
}

impl DealSource for FairDeals {
    type Shoe = FairShoe;

    fn describe(&self) -> String {
        format!(
            "the production deal (reddog-deal-v1: HMAC-SHA256 key, ChaCha20 words, rejection sampling, forward \
             Fisher-Yates); server seed per experiment SHA-256(\"reddog/certify/v1/\" || u64be({}) || \"/\" || \
             experiment), client seed \"{CLIENT_SEED}\", nonce = deal index",
            self.seed
        )
    }

    fn shoe(&self, experiment: &str, decks: Decks, index: u64) -> FairShoe {
        let seed = self.server_seed(experiment);
        FairShoe::new(&DealInputs { server_seed: &seed, client_seed: CLIENT_SEED.as_bytes(), nonce: index, decks })
    }
}

/// Which dieharder tests to run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum DieharderPlan {
    /// Not at all.
    Skip,
    /// These `-d` test numbers.
    Tests(Vec<u32>),
    /// The whole battery, as `-a` runs it ([`all_jobs`]).
    All,
}

/// One dieharder process: `-d test`, and `-n ntup` for the tests `-a` runs at several tuple
/// sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DieharderJob {
    pub test: u32,
    pub ntup: Option<u32>,
}

/// The test numbers `dieharder -a` runs (dieharder 3.31.1: every installed test, the one
/// marked "Do Not Use", diehard_sums, included).
pub const ALL_TESTS: [u32; 31] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 100, 101, 102, 200, 201, 202, 203, 204, 205, 206,
    207, 208, 209,
];

/// The tuple sizes `dieharder -a` loops over for a test (`None`: its one default run).
fn tuple_sizes(test: u32) -> Option<std::ops::RangeInclusive<u32>> {
    match test {
        200 => Some(1..=12),
        201 | 202 => Some(2..=5),
        203 => Some(0..=32),
        _ => None,
    }
}

/// Every job of the whole battery, in `-a`'s order.
pub fn all_jobs() -> Vec<DieharderJob> {
    ALL_TESTS
        .iter()
        .flat_map(|&test| match tuple_sizes(test) {
            Some(r) => r.map(|n| DieharderJob { test, ntup: Some(n) }).collect::<Vec<_>>(),
            None => vec![DieharderJob { test, ntup: None }],
        })
        .collect()
}

impl DieharderJob {
    /// dieharder's arguments for this job (before `-g 200`).
    pub fn args(&self) -> Vec<String> {
        let mut a = vec!["-d".to_string(), self.test.to_string()];
        if let Some(n) = self.ntup {
            a.extend(["-n".to_string(), n.to_string()]);
        }
        a
    }

    /// CPU milliseconds of this job measured on the reference machine (one core of the
    /// 2-core CI machine, dieharder 3.31.1 reading a ChaCha20 stream): the progress bar's
    /// weight; the bar's total is their sum.
    pub fn cost_ms(&self) -> u64 {
        dieharder_cost_ms(self.test, self.ntup)
    }
}

impl DieharderPlan {
    /// The dieharder processes this plan runs.
    pub fn jobs(&self) -> Vec<DieharderJob> {
        match self {
            DieharderPlan::Skip => Vec::new(),
            DieharderPlan::Tests(t) => t.iter().map(|&test| DieharderJob { test, ntup: None }).collect(),
            DieharderPlan::All => all_jobs(),
        }
    }
}

/// Sample sizes and the threshold.
#[derive(Clone, Debug, Serialize)]
pub struct RandomnessPlan {
    /// Whole shoes dealt per deck count for card × position and runs.
    pub shoe_deals: u64,
    /// Deals (first three cards) per deck count for the rank triples and hand classes.
    pub triple_deals: u64,
    /// Independent repetitions of the one-deck card × position test, and deals in each.
    pub repeat_runs: u32,
    pub repeat_deals: u64,
    /// The pre-registered threshold of every test.
    pub alpha: f64,
    pub dieharder: DieharderPlan,
    /// A missing dieharder fails the section (lab grade) instead of being noted.
    pub dieharder_required: bool,
    /// dieharder processes run at once (the full plan: one per CPU the process may use).
    pub dieharder_parallel: usize,
}

/// Progress units (deals) one reference CPU millisecond of dieharder counts as: one CPU
/// millisecond deals this many whole 52-card shoes in the randomness section (measured with
/// the release build; both run on every core, so the ratio of their costs is the ratio of
/// their wall times).
pub const DEALS_PER_DIEHARDER_MS: u64 = DEALS_PER_CPU_MS;

impl RandomnessPlan {
    /// Deals this plan makes for `deck_counts`, for a progress bar (whole shoes count as one
    /// deal per 52 cards), plus dieharder's jobs at their reference cost.
    pub fn work(&self, deck_counts: &[u8]) -> u64 {
        let per: u64 = deck_counts.iter().map(|&d| self.shoe_deals * u64::from(d) + self.triple_deals / 17).sum();
        per + u64::from(self.repeat_runs) * self.repeat_deals + self.dieharder_work()
    }

    /// dieharder's share of [`RandomnessPlan::work`].
    pub fn dieharder_work(&self) -> u64 {
        self.dieharder.jobs().iter().map(|j| j.cost_ms() * DEALS_PER_DIEHARDER_MS).sum()
    }
}

/// The results for one deck count.
#[derive(Clone, Debug, Serialize)]
pub struct DeckResults {
    pub decks: u8,
    pub card_by_position: TestResult,
    pub largest_cell: TestResult,
    pub runs_colour: TestResult,
    pub runs_high_low: TestResult,
    pub rank_triples: TestResult,
    pub hand_classes: TestResult,
    /// The 25 outcome classes: name, exact probability (fraction), observed count.
    pub classes: Vec<ClassLine>,
}

/// One outcome class of the hand-class test.
#[derive(Clone, Debug, Serialize)]
pub struct ClassLine {
    pub class: String,
    pub probability: String,
    pub probability_decimal: f64,
    pub expected: f64,
    pub observed: u64,
}

/// The p-value histogram of the repeated test.
#[derive(Clone, Debug, Serialize)]
pub struct Repeated {
    pub runs: u32,
    pub deals_per_run: u64,
    pub p_values: Vec<f64>,
    pub histogram: Vec<u64>,
    pub uniformity: TestResult,
}

/// dieharder's results.
#[derive(Clone, Debug, Serialize)]
pub struct Dieharder {
    /// `ran`, `not installed`, `skipped`, or `failed to run: …`.
    pub status: String,
    pub command: String,
    pub rows: Vec<DieharderRow>,
    pub passed: u32,
    pub weak: u32,
    pub failed: u32,
    /// The raw output, as dieharder printed it.
    pub raw: String,
}

/// One line of dieharder's table.
#[derive(Clone, Debug, Serialize)]
pub struct DieharderRow {
    pub test: String,
    pub ntup: String,
    pub p_value: f64,
    pub assessment: String,
}

/// The whole section.
#[derive(Clone, Debug, Serialize)]
pub struct Randomness {
    pub source: String,
    pub plan: RandomnessPlan,
    /// The thresholds, stated before any result.
    pub thresholds: String,
    pub decks: Vec<DeckResults>,
    pub repeated: Repeated,
    pub dieharder: Dieharder,
    /// Server seeds of the experiments (hex), when the source is the production deal.
    pub server_seeds: Vec<(String, String)>,
}

impl Randomness {
    /// Every test result, in report order.
    pub fn tests(&self) -> Vec<&TestResult> {
        let mut out = Vec::new();
        for d in &self.decks {
            out.extend([
                &d.card_by_position,
                &d.largest_cell,
                &d.runs_colour,
                &d.runs_high_low,
                &d.rank_triples,
                &d.hand_classes,
            ]);
        }
        out.push(&self.repeated.uniformity);
        out
    }

    /// Whether dieharder's part passes: it ran with no FAILED, or it was not asked for or not
    /// required.
    pub fn dieharder_passed(&self) -> bool {
        match self.dieharder.status.as_str() {
            "ran" => self.dieharder.failed == 0 && !self.dieharder.rows.is_empty(),
            _ => !self.plan.dieharder_required,
        }
    }
}

fn result(
    name: String,
    sample: u64,
    statistic: f64,
    df: Option<f64>,
    p_value: f64,
    alpha: f64,
    method: &str,
) -> TestResult {
    TestResult {
        name,
        sample,
        statistic,
        distribution: df.map_or("normal(0,1), two-sided".to_string(), |d| format!("chi_square({d})")),
        df,
        p_value,
        min_expected: None,
        max_abs_z: None,
        alpha,
        passed: p_value >= alpha && p_value.is_finite(),
        method: method.to_string(),
    }
}

/// Card × position counts (`n × 52`, row-major by position) and the two runs sums of
/// `deals` whole shoes of `experiment`.
struct ShoeCounts {
    cells: Vec<u64>,
    colour_z: f64,
    high_low_z: f64,
}

fn deal_whole_shoes<S: DealSource>(
    source: &S,
    experiment: &str,
    decks: Decks,
    deals: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> ShoeCounts {
    let n = decks.cards();
    let d = u64::from(decks.get());
    let (colour_mean, colour_var) = runs_moments(26 * d, 26 * d);
    let (hl_mean, hl_var) = runs_moments(24 * d, 28 * d);
    let chunks = deals.div_ceil(256).max(1);
    let parts: Vec<(Vec<u64>, f64, f64)> = (0..chunks)
        .into_par_iter()
        .map(|c| {
            let mut cells = vec![0u64; n * 52];
            let (mut colour, mut high_low) = (0.0, 0.0);
            let mut shoe_cards = vec![0u8; n];
            let (from, to) = (c * deals / chunks, (c + 1) * deals / chunks);
            for index in from..to {
                let mut shoe = source.shoe(experiment, decks, index);
                for (position, slot) in shoe_cards.iter_mut().enumerate() {
                    let code = shoe.draw().code();
                    *slot = code;
                    cells[position * 52 + usize::from(code)] += 1;
                }
                let red = count_runs(shoe_cards.iter().map(|&c| matches!(c % 4, 1 | 2)));
                let high = count_runs(shoe_cards.iter().map(|&c| c / 4 >= 6));
                colour += red as f64 - colour_mean;
                high_low += high as f64 - hl_mean;
            }
            progress((to - from) * d);
            (cells, colour, high_low)
        })
        .collect();
    let mut cells = vec![0u64; n * 52];
    let (mut colour, mut high_low) = (0.0, 0.0);
    for (c, r, h) in parts {
        for (a, b) in cells.iter_mut().zip(c) {
            *a += b;
        }
        colour += r;
        high_low += h;
    }
    let nf = deals as f64;
    ShoeCounts { cells, colour_z: colour / (nf * colour_var).sqrt(), high_low_z: high_low / (nf * hl_var).sqrt() }
}

/// Counts of the first three cards' rank triples (13³, index `a·169 + b·13 + t`, ranks 0..13).
fn deal_triples<S: DealSource>(
    source: &S,
    experiment: &str,
    decks: Decks,
    deals: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Vec<u64> {
    let chunks = deals.div_ceil(4096).max(1);
    (0..chunks)
        .into_par_iter()
        .map(|c| {
            let mut counts = vec![0u64; 2197];
            let (from, to) = (c * deals / chunks, (c + 1) * deals / chunks);
            for index in from..to {
                let mut shoe = source.shoe(experiment, decks, index);
                let r = |card: Card| usize::from(card.rank().value() - 2);
                let (a, b, t) = (r(shoe.draw()), r(shoe.draw()), r(shoe.draw()));
                counts[a * 169 + b * 13 + t] += 1;
            }
            progress((to - from) / 17);
            counts
        })
        .reduce(|| vec![0u64; 2197], |a, b| a.iter().zip(&b).map(|(x, y)| x + y).collect())
}

/// Exact probabilities of the rank triples of a standard shoe of `decks`.
fn triple_probabilities(decks: Decks) -> Vec<f64> {
    let c = 4.0 * f64::from(decks.get());
    let n = 13.0 * c;
    let mut p = vec![0.0; 2197];
    for a in 0..13 {
        for b in 0..13 {
            for t in 0..13 {
                let eq = |x: usize, y: usize| if x == y { 1.0 } else { 0.0 };
                let w = c * (c - eq(a, b)) * (c - eq(t, a) - eq(t, b)).max(0.0);
                p[a * 169 + b * 13 + t] = w / (n * (n - 1.0) * (n - 2.0));
            }
        }
    }
    p
}

/// The 25 outcome classes with their exact probabilities (from the enumeration), in order:
/// three of a kind, pair without, consecutive, then spread 1..=11 inside / outside.
pub fn outcome_classes(decks: Decks) -> Vec<(String, Exact)> {
    let a = Analysis::new(decks, &Paytable::STANDARD);
    let one = Exact::from(1);
    let mut out = vec![
        ("pair, three of a kind".to_string(), a.p_three_of_a_kind()),
        ("pair, no three of a kind".to_string(), a.p_pair() - a.p_three_of_a_kind()),
        ("consecutive".to_string(), a.p_consecutive()),
    ];
    for s in Spread::all() {
        let win = a.p_win_given_spread(s).unwrap_or_default();
        out.push((format!("spread {s}, third card inside"), a.p_spread(s) * win));
        out.push((format!("spread {s}, third card not inside"), a.p_spread(s) * (one - win)));
    }
    out
}

fn class_index(a: usize, b: usize, t: usize) -> usize {
    let (ra, rb) = (crate::game::Rank::new(a as u8 + 2), crate::game::Rank::new(b as u8 + 2));
    let (Some(ra), Some(rb)) = (ra, rb) else { return 0 };
    match HandClass::of_ranks(ra, rb) {
        HandClass::Pair if t == a => 0,
        HandClass::Pair => 1,
        HandClass::Consecutive => 2,
        HandClass::NonConsecutive(s) => {
            let base = 3 + 2 * usize::from(s.get() - 1);
            if a.min(b) < t && t < a.max(b) { base } else { base + 1 }
        }
    }
}

/// The card × position test of one table of counts (`n × 52`) over `deals` shoes.
fn card_by_position_tests(cells: &[u64], decks: Decks, deals: u64, alpha: f64, name: &str) -> (TestResult, TestResult) {
    let n = decks.cards() as f64;
    let p = vec![1.0 / 52.0; cells.len()];
    let (x2, cells_used, min_e, max_z) = pearson(cells, &p, deals);
    let df = (n - 1.0) * 51.0;
    let scaled = x2 * (n - 1.0) / n;
    let mut main = result(
        format!("{name}: card x position, {} deck(s)", decks.get()),
        deals,
        scaled,
        Some(df),
        chi_square_sf(scaled, df),
        alpha,
        "Pearson X^2 of the (52d positions x 52 codes) table of whole shoes, scaled by (n-1)/n for the fixed \
         margins of a permutation, against chi_square((n-1)*51)",
    );
    main.min_expected = Some(min_e);
    main.max_abs_z = Some(max_z);
    let bonferroni = (cells_used as f64 * normal_two_sided(max_z)).min(1.0);
    let mut largest = result(
        format!("{name}: largest card x position cell, {} deck(s)", decks.get()),
        deals,
        max_z,
        None,
        bonferroni,
        alpha,
        "max |O-E|/sqrt(N p (1-p)) over the cells (each cell is binomial(N, 1/52)); p = cells x two-sided normal \
         tail (Bonferroni)",
    );
    largest.distribution = format!("max of {cells_used} |normal(0,1)|, Bonferroni");
    (main, largest)
}

/// Runs every test of `plan` on `source` for each deck count in `deck_counts`.
pub fn run<S: DealSource>(
    source: &S,
    deck_counts: &[u8],
    plan: &RandomnessPlan,
    progress: &(dyn Fn(u64) + Sync),
    seeds_of: Option<&FairDeals>,
) -> Randomness {
    let alpha = plan.alpha;
    let mut decks_out = Vec::new();
    let mut server_seeds = Vec::new();
    for &d in deck_counts {
        let Ok(decks) = Decks::new(u32::from(d)) else { continue };
        let shoe_exp = format!("card-position/{d}");
        let triple_exp = format!("triples/{d}");
        if let Some(f) = seeds_of {
            for e in [&shoe_exp, &triple_exp] {
                server_seeds.push((e.clone(), f.server_seed(e).reveal_hex()));
            }
        }
        let shoes = deal_whole_shoes(source, &shoe_exp, decks, plan.shoe_deals, progress);
        let (card_by_position, largest_cell) =
            card_by_position_tests(&shoes.cells, decks, plan.shoe_deals, alpha, "shuffle");
        let runs = |z: f64, what: &str| {
            result(
                format!("runs of {what} along the shoe, {d} deck(s)"),
                plan.shoe_deals,
                z,
                None,
                normal_two_sided(z),
                alpha,
                "Wald-Wolfowitz: number of runs per whole shoe minus its exact mean for a random arrangement, summed \
                 over shoes and divided by sqrt(N * exact variance)",
            )
        };
        let runs_colour = runs(shoes.colour_z, "red/black");
        let runs_high_low = runs(shoes.high_low_z, "low (2-7)/high (8-A)");
        let triples = deal_triples(source, &triple_exp, decks, plan.triple_deals, progress);
        let tp = triple_probabilities(decks);
        let (x2, cells, min_e, max_z) = pearson(&triples, &tp, plan.triple_deals);
        let df = cells as f64 - 1.0;
        let mut rank_triples = result(
            format!("serial: ranks of the first three cards, {d} deck(s)"),
            plan.triple_deals,
            x2,
            Some(df),
            chi_square_sf(x2, df),
            alpha,
            "Pearson X^2 of the 13^3 rank triples (first, second, third card) against their exact probabilities from \
             rank counts",
        );
        rank_triples.min_expected = Some(min_e);
        rank_triples.max_abs_z = Some(max_z);
        let exact = outcome_classes(decks);
        let mut observed = vec![0u64; exact.len()];
        for a in 0..13 {
            for b in 0..13 {
                for t in 0..13 {
                    observed[class_index(a, b, t)] += triples[a * 169 + b * 13 + t];
                }
            }
        }
        let p: Vec<f64> = exact.iter().map(|(_, f)| to_f64(f)).collect();
        let (x2, cells, min_e, max_z) = pearson(&observed, &p, plan.triple_deals);
        let df = cells as f64 - 1.0;
        let mut hand_classes = result(
            format!("hand classes and outcomes vs exact odds, {d} deck(s)"),
            plan.triple_deals,
            x2,
            Some(df),
            chi_square_sf(x2, df),
            alpha,
            "Pearson X^2 of the 25 outcome classes of a round against the exact fractions of the enumeration",
        );
        hand_classes.min_expected = Some(min_e);
        hand_classes.max_abs_z = Some(max_z);
        let classes = exact
            .iter()
            .zip(&observed)
            .map(|((name, f), &o)| ClassLine {
                class: name.clone(),
                probability: fraction(f),
                probability_decimal: to_f64(f),
                expected: to_f64(f) * plan.triple_deals as f64,
                observed: o,
            })
            .collect();
        decks_out.push(DeckResults {
            decks: d,
            card_by_position,
            largest_cell,
            runs_colour,
            runs_high_low,
            rank_triples,
            hand_classes,
            classes,
        });
    }
    let repeated = repeated(source, plan, progress);
    if let Some(f) = seeds_of {
        server_seeds.push((
            "repeated/K".to_string(),
            format!(
                "SHA-256 rule above with experiment repeated/K, e.g. K=0: {}",
                f.server_seed("repeated/0").reveal_hex()
            ),
        ));
        server_seeds.push(("dieharder".to_string(), f.server_seed("dieharder").reveal_hex()));
    }
    let dieharder = match seeds_of {
        Some(f) => run_dieharder(plan, &f.server_seed("dieharder"), progress),
        None => Dieharder {
            status: "skipped: the source is not the production deal".into(),
            command: String::new(),
            rows: Vec::new(),
            passed: 0,
            weak: 0,
            failed: 0,
            raw: String::new(),
        },
    };
    Randomness {
        source: source.describe(),
        plan: plan.clone(),
        thresholds: format!(
            "Fixed before any result: every test fails when its p-value is below alpha = {alpha:e}; dieharder fails on \
             any FAILED assessment (WEAK is reported, not failed). The sample sizes are those of the plan above; \
             nothing is re-run or re-seeded after a result is seen."
        ),
        decks: decks_out,
        repeated,
        dieharder,
        server_seeds,
    }
}

fn repeated<S: DealSource>(source: &S, plan: &RandomnessPlan, progress: &(dyn Fn(u64) + Sync)) -> Repeated {
    let p_values: Vec<f64> = (0..plan.repeat_runs)
        .into_par_iter()
        .map(|k| {
            let decks = Decks::ONE;
            let mut cells = vec![0u64; 52 * 52];
            let exp = format!("repeated/{k}");
            for index in 0..plan.repeat_deals {
                let mut shoe = source.shoe(&exp, decks, index);
                for position in 0..52 {
                    cells[position * 52 + usize::from(shoe.draw().code())] += 1;
                }
            }
            progress(plan.repeat_deals);
            card_by_position_tests(&cells, decks, plan.repeat_deals, plan.alpha, "repeat").0.p_value
        })
        .collect();
    let bins = 10;
    let h = histogram(&p_values, bins);
    let p = vec![1.0 / bins as f64; bins];
    let (x2, cells, min_e, max_z) = pearson(&h, &p, u64::from(plan.repeat_runs));
    let df = cells as f64 - 1.0;
    let mut uniformity = result(
        format!("p-values of {} repeated card x position tests (1 deck) are uniform", plan.repeat_runs),
        u64::from(plan.repeat_runs),
        x2,
        Some(df),
        chi_square_sf(x2, df),
        plan.alpha,
        "each run: the one-deck card x position test on its own server seed; the p-values in 10 equal bins against \
         the uniform distribution, Pearson X^2",
    );
    uniformity.min_expected = Some(min_e);
    uniformity.max_abs_z = Some(max_z);
    Repeated { runs: plan.repeat_runs, deals_per_run: plan.repeat_deals, p_values, histogram: h, uniformity }
}

/// Runs dieharder (`-g 200`: raw 32-bit words on stdin) on the keystream of the deal with
/// server seed `seed`, client seed [`CLIENT_SEED`], nonce 0, one deck — the bytes `reddog
/// rng-dump` writes for the same inputs — one process per job of the plan, each fed the
/// stream from its start, `plan.dieharder_parallel` at a time; `progress` gets each finished
/// job's weight. Rows and raw output are in job order whatever order the jobs finish in.
fn run_dieharder(plan: &RandomnessPlan, seed: &ServerSeed, progress: &(dyn Fn(u64) + Sync)) -> Dieharder {
    let command_for = |args: &str| {
        format!(
            "reddog rng-dump --server-seed {} --client-seed {CLIENT_SEED} --nonce 0 | dieharder {args} -g 200",
            seed.reveal_hex()
        )
    };
    let mut out = Dieharder {
        status: "skipped".into(),
        command: String::new(),
        rows: Vec::new(),
        passed: 0,
        weak: 0,
        failed: 0,
        raw: String::new(),
    };
    let jobs = plan.dieharder.jobs();
    if jobs.is_empty() {
        return out;
    }
    out.command = jobs.iter().map(|j| command_for(&j.args().join(" "))).collect::<Vec<_>>().join("\n");
    let installed = Command::new("dieharder").arg("-l").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    if !installed {
        out.status = "not installed (apt-get install dieharder)".into();
        progress(plan.dieharder_work());
        return out;
    }
    let key = crate::fairness::derive_key(&DealInputs {
        server_seed: seed,
        client_seed: CLIENT_SEED.as_bytes(),
        nonce: 0,
        decks: Decks::ONE,
    });
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Result<String, String>>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..plan.dieharder_parallel.clamp(1, jobs.len()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { break };
                    let result = run_dieharder_job(job, &key);
                    *results[i].lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(result);
                    progress(job.cost_ms() * DEALS_PER_DIEHARDER_MS);
                }
            });
        }
    });
    for r in results {
        match r.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
            Some(Ok(text)) => {
                for row in parse_dieharder(&text) {
                    match row.assessment.as_str() {
                        "PASSED" => out.passed += 1,
                        "WEAK" => out.weak += 1,
                        _ => out.failed += 1,
                    }
                    out.rows.push(row);
                }
                out.raw.push_str(&text);
            }
            Some(Err(e)) => {
                out.status = format!("failed to run: {e}");
                return out;
            }
            None => {
                out.status = "failed to run: a job did not finish".into();
                return out;
            }
        }
    }
    out.status = "ran".into();
    out
}

/// One dieharder process fed the deal's keystream (from its start) until it closes stdin.
fn run_dieharder_job(job: &DieharderJob, key: &[u8; 32]) -> Result<String, String> {
    let mut child = Command::new("dieharder")
        .args(job.args())
        .args(["-g", "200"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let key = *key;
    // Feed the keystream until dieharder closes its end (a write error ends the loop).
    let writer = std::thread::spawn(move || {
        let mut stream = DealStream::from_key(key);
        let mut buf = vec![0u8; 1 << 16];
        loop {
            stream.fill_bytes(&mut buf);
            if stdin.write_all(&buf).is_err() {
                break;
            }
        }
    });
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = writer.join();
    Ok(String::from_utf8_lossy(&output.stdout).to_string())
}

/// Deals (whole 52-card shoes) the randomness section makes per CPU millisecond with the
/// release build, measured on the reference machine as [`DieharderJob::cost_ms`] was: `reddog
/// certify --full` on one one-deck table without dieharder took 33.3 CPU-seconds, of which
/// the randomness section's share of the wall time (47.9 of 70.1 s) is 22.8 s for its
/// 12,176,470 deals.
pub const DEALS_PER_CPU_MS: u64 = 534;

/// Reference CPU milliseconds of each job (see [`DieharderJob::cost_ms`]): dieharder's own CPU
/// time per test on the reference machine, measured once (dieharder 3.31.1, `-g 200` fed a
/// ChaCha20 stream; the tests with 100 or 1,000 p-samples run at a tenth and scaled, each
/// p-sample being an independent repetition); at least 100 ms for a process's start.
fn dieharder_cost_ms(test: u32, ntup: Option<u32>) -> u64 {
    const RGB_BITDIST: [u64; 12] = [350, 3440, 3740, 4130, 4340, 7180, 10480, 14250, 19890, 25220, 41490, 88040];
    const RGB_MINIMUM_DISTANCE: [u64; 4] = [30150, 29550, 33920, 45970];
    const RGB_PERMUTATIONS: [u64; 4] = [2630, 3190, 4160, 5640];
    const RGB_LAGGED_SUM: [u64; 33] = [
        4040, 5760, 7960, 8970, 13810, 15350, 21010, 20040, 25270, 21980, 23690, 34010, 37680, 30670, 34320, 37610,
        38030, 37520, 36900, 37530, 40360, 46140, 49420, 61630, 58880, 55810, 55810, 58940, 59810, 58880, 65060, 72580,
        66870,
    ];
    let n = ntup.unwrap_or(0) as usize;
    let ms = match test {
        0 => 1400,
        1 => 5180,
        2 => 19530,
        3 => 3680,
        4 => 1630,
        5 => 7170,
        6 => 5050,
        7 => 106730,
        8 => 270,
        9 => 3380,
        10 => 1650,
        11 => 830,
        12 => 2620,
        13 => 5760,
        14 => 70,
        15 => 150,
        16 => 3060,
        17 => 123730,
        100 => 190,
        101 => 7920,
        102 => 14440,
        200 => RGB_BITDIST.get(n.wrapping_sub(1)).copied().unwrap_or(0),
        201 => RGB_MINIMUM_DISTANCE.get(n.wrapping_sub(2)).copied().unwrap_or(0),
        202 => RGB_PERMUTATIONS.get(n.wrapping_sub(2)).copied().unwrap_or(0),
        203 => RGB_LAGGED_SUM.get(n).copied().unwrap_or(0),
        204 => 21150,
        205 => 3430,
        206 => 770,
        207 => 4130,
        208 => 3720,
        209 => 5000,
        _ => 0,
    };
    if ms == 0 { 0 } else { ms.max(100) }
}

/// The sum of every job's reference cost: the whole battery's CPU time on one core.
pub fn dieharder_reference_ms() -> u64 {
    all_jobs().iter().map(DieharderJob::cost_ms).sum()
}

/// The result rows of dieharder's table (`test_name|ntup|tsamples|psamples|p-value|Assessment`);
/// headers, rules and comments are skipped.
pub fn parse_dieharder(text: &str) -> Vec<DieharderRow> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split('|').map(str::trim).collect();
            let p = f.get(4)?.parse::<f64>().ok()?;
            (f.len() == 6).then(|| DieharderRow {
                test: f[0].to_string(),
                ntup: f[1].to_string(),
                p_value: p,
                assessment: f[5].to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole battery is `-a`'s: 31 tests, 80 processes (rgb_bitdist at 12 tuple sizes,
    /// rgb_minimum_distance and rgb_permutations at 4, rgb_lagged_sum at 33), each with a
    /// measured cost.
    #[test]
    fn the_whole_battery_is_every_test_and_tuple_size_of_dash_a() {
        let jobs = all_jobs();
        assert_eq!(jobs.len(), 27 + 12 + 4 + 4 + 33);
        assert_eq!(jobs.iter().filter(|j| j.test == 203).count(), 33);
        assert_eq!(jobs[0].args(), ["-d", "0"]);
        assert!(jobs.contains(&DieharderJob { test: 203, ntup: Some(32) }));
        let missing: Vec<_> = jobs.iter().filter(|j| j.cost_ms() == 0).collect();
        assert!(missing.is_empty(), "jobs without a measured cost: {missing:?}");
    }

    #[test]
    fn dieharder_rows_are_read_and_headers_skipped() {
        let text = "#====#\n        test_name   |ntup| tsamples |psamples|  p-value |Assessment\n\
                    stdin_input_raw|  1.64e+06  | 437458520|\n\
                    \x20  diehard_birthdays|   0|       100|     100|0.57269240|  PASSED  \n\
                    \x20 rgb_lagged_sum|  27|   1000000|     100|0.99686000|   WEAK   \n\
                    rgb_minimum_distance|   0|     10000|    1000|0.00000000|  FAILED  \n";
        let rows = parse_dieharder(text);
        assert_eq!(rows.len(), 3);
        assert_eq!((rows[0].test.as_str(), rows[0].p_value), ("diehard_birthdays", 0.5726924));
        assert_eq!(rows[1].assessment, "WEAK");
        assert_eq!((rows[2].ntup.as_str(), rows[2].assessment.as_str()), ("0", "FAILED"));
    }

    #[test]
    fn the_triple_probabilities_sum_to_one_and_the_classes_partition_them() {
        for d in [1u32, 8] {
            let decks = Decks::new(d).unwrap();
            let p = triple_probabilities(decks);
            assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            let mut by_class = [0.0; 25];
            for a in 0..13 {
                for b in 0..13 {
                    for t in 0..13 {
                        by_class[class_index(a, b, t)] += p[a * 169 + b * 13 + t];
                    }
                }
            }
            for (got, (_, exact)) in by_class.iter().zip(outcome_classes(decks)) {
                assert!((got - to_f64(&exact)).abs() < 1e-12);
            }
        }
    }
}
