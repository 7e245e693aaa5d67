//! Statistics of the deal, as a testing lab would ask for them (`docs/FAIRNESS.md`,
//! "Statistical evidence"):
//!
//! 1. **Uniformity of the shuffle.** One deck, `N` deals with nonces `0..N` (a fresh derived key
//!    per deal, exactly as rounds are dealt), the whole shoe drawn; count card code × position
//!    in a 52 × 52 table and compute Pearson's `X² = Σ (O − E)² / E` with `E = N/52`. Every row
//!    and every column of the table sums to `N` (each deal is a permutation), and for uniformly
//!    random permutations `X² · (n−1)/n` follows χ² with `(n−1)² = 2601` degrees of freedom
//!    (`n = 52`; the covariance of a permutation matrix has eigenvalue `n/(n−1)` on the
//!    `(n−1)²`-dimensional space of tables with zero row and column sums, and 0 elsewhere). The
//!    maximum standardized cell residual is checked too: it is what finds a bias in one cell.
//! 2. **Hand classes, spreads and outcomes.** The first three cards of `N` deals of 1 and of 8
//!    decks, classified into 25 outcome classes (pair then trips / no trips, consecutive, and
//!    spread 1..=11 then third card inside / not inside), against exact probabilities computed
//!    here from rank counts; Pearson's `X²` with 24 degrees of freedom.
//!
//! Thresholds: α = 10⁻⁶ for every test, critical values from the Wilson–Hilferty approximation
//! `χ²(df, 1−α) ≈ df · (1 − 2/(9 df) + z · √(2/(9 df)))³` with `z` the standard normal
//! `1−α` quantile, computed below — not tuned. The inputs are fixed, so each run is
//! deterministic. The quick versions run in CI; the `#[ignore]`d long versions, with the
//! sample sizes the power argument needs, run with
//! `cargo test --release --test it fairness_stats:: -- --ignored --nocapture`.

use rayon::prelude::*;
use reddog::fairness::{DealInputs, FairShoe, ServerSeed};
use reddog::game::{Decks, HandClass};

const ALPHA: f64 = 1e-6;
const SEED: [u8; 32] = *b"reddog statistics server seed 01";
const CLIENT: &[u8] = b"statistics";

/// Standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9).
fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -39.696_830_286_653_76,
        220.946_098_424_520_5,
        -275.928_510_446_968_7,
        138.357_751_867_269,
        -30.664_798_066_147_16,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -54.476_098_798_224_06,
        161.585_836_858_040_9,
        -155.698_979_859_886_6,
        66.801_311_887_719_72,
        -13.280_681_552_885_72,
    ];
    const C: [f64; 6] = [
        -0.007_784_894_002_430_293,
        -0.322_396_458_041_136_5,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] =
        [0.007_784_695_709_041_462, 0.322_467_129_070_039_8, 2.445_134_137_142_996, 3.754_408_661_907_416];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The upper `alpha` critical value of χ² with `df` degrees of freedom (Wilson–Hilferty).
fn chi_square_critical(df: f64, alpha: f64) -> f64 {
    let z = normal_quantile(1.0 - alpha);
    let a = 2.0 / (9.0 * df);
    df * (1.0 - a + z * a.sqrt()).powi(3)
}

fn inputs(seed: &ServerSeed, nonce: u64, decks: Decks) -> DealInputs<'_> {
    DealInputs { server_seed: seed, client_seed: CLIENT, nonce, decks }
}

/// Card code × position counts of `n` one-deck deals, nonces `0..n`.
fn card_by_position(n: u64) -> Vec<[u64; 52]> {
    let seed = ServerSeed::from_bytes(SEED);
    let chunks = 64u64;
    (0..chunks)
        .into_par_iter()
        .map(|chunk| {
            let mut counts = vec![[0u64; 52]; 52];
            for nonce in (chunk * n / chunks)..((chunk + 1) * n / chunks) {
                let mut shoe = FairShoe::new(&inputs(&seed, nonce, Decks::ONE));
                for row in counts.iter_mut() {
                    let card = shoe.next_card().expect("a 52-card shoe deals 52 cards");
                    row[usize::from(card.code())] += 1;
                }
            }
            counts
        })
        .reduce(
            || vec![[0u64; 52]; 52],
            |mut a, b| {
                for (ra, rb) in a.iter_mut().zip(&b) {
                    for (x, y) in ra.iter_mut().zip(rb) {
                        *x += y;
                    }
                }
                a
            },
        )
}

/// Runs the card × position test on `n` deals; returns (scaled X², critical value, max |z|,
/// its Bonferroni threshold) after asserting both.
fn check_card_by_position(n: u64) {
    let counts = card_by_position(n);
    for row in &counts {
        assert_eq!(row.iter().sum::<u64>(), n, "every position holds one card per deal");
    }
    let p = 1.0 / 52.0;
    let expected = n as f64 * p;
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    let mut x2 = 0.0;
    let mut max_z = 0.0f64;
    for row in &counts {
        for &o in row {
            let d = o as f64 - expected;
            x2 += d * d / expected;
            max_z = max_z.max(d.abs() / sd);
        }
    }
    let df = 51.0 * 51.0;
    let scaled = x2 * 51.0 / 52.0;
    let critical = chi_square_critical(df, ALPHA);
    // Two-sided, Bonferroni over the 2704 cells at family-wise α.
    let z_limit = normal_quantile(1.0 - ALPHA / 2.0 / 2704.0);
    println!(
        "card x position, 1 deck, N = {n}: X² = {x2:.1}, X²·51/52 = {scaled:.1} (df {df}, mean {df}), \
         critical value at α = {ALPHA:e}: {critical:.1}; max |z| = {max_z:.2} (limit {z_limit:.2})"
    );
    assert!(scaled < critical, "the shuffle is not uniform: X²·51/52 = {scaled:.1} ≥ {critical:.1}");
    assert!(max_z < z_limit, "one card × position cell is off: max |z| = {max_z:.2} ≥ {z_limit:.2}");
}

#[test]
fn the_wilson_hilferty_critical_values_match_published_tables() {
    // Tabulated: χ²(10, 0.999) = 29.588, χ²(100, 0.999) = 149.449; z(0.999999) = 4.753424.
    assert!((normal_quantile(1.0 - 1e-6) - 4.753_424).abs() < 1e-5);
    assert!((chi_square_critical(10.0, 1e-3) - 29.588).abs() < 0.2);
    assert!((chi_square_critical(100.0, 1e-3) - 149.449).abs() < 0.2);
}

#[test]
fn every_card_is_equally_likely_at_every_position_of_a_one_deck_shuffle() {
    check_card_by_position(if cfg!(debug_assertions) { 10_000 } else { 200_000 });
}

/// The sample size that detects a 1% relative bias in one cell with power 0.99 (see the
/// module docs and `docs/FAIRNESS.md`): 3.8 · 10⁷ deals.
#[test]
#[ignore = "long run: about a minute in release on two idle cores"]
fn long_run_every_card_is_equally_likely_at_every_position() {
    check_card_by_position(38_000_000);
}

/// Outcome classes of a round's first three cards: 0 pair+trips, 1 pair+no trips,
/// 2 consecutive, 3 + 2(s−1) spread s with the third card inside, 4 + 2(s−1) outside.
const CLASSES: usize = 25;

fn class_of(cards: &[reddog::game::Card]) -> usize {
    let inside = |lo: u8, hi: u8, r: u8| lo < r && r < hi;
    let (a, b, c) = (cards[0].rank().value(), cards[1].rank().value(), cards[2].rank().value());
    match HandClass::of(cards[0], cards[1]) {
        HandClass::Pair if c == a => 0,
        HandClass::Pair => 1,
        HandClass::Consecutive => 2,
        HandClass::NonConsecutive(s) => {
            let base = 3 + 2 * usize::from(s.get() - 1);
            if inside(a.min(b), a.max(b), c) { base } else { base + 1 }
        }
    }
}

/// Exact class probabilities for a shoe of `d` decks, from rank counts: `4d` cards of each
/// of the 13 ranks among `52d`.
fn exact_class_probabilities(d: u32) -> [f64; CLASSES] {
    let per_rank = 4.0 * f64::from(d);
    let total = 52.0 * f64::from(d);
    let mut p = [0.0; CLASSES];
    let pair = (per_rank - 1.0) / (total - 1.0);
    let trips = (per_rank - 2.0) / (total - 2.0);
    p[0] = pair * trips;
    p[1] = pair * (1.0 - trips);
    // Ordered rank pairs at distance k: 2(13 − k); each has (4d)² card pairs of 52d(52d−1).
    let distance = |k: u32| 2.0 * f64::from(13 - k) * per_rank * per_rank / (total * (total - 1.0));
    p[2] = distance(1);
    for s in 1..=11u32 {
        let win = f64::from(s) * per_rank / (total - 2.0);
        p[3 + 2 * (s as usize - 1)] = distance(s + 1) * win;
        p[4 + 2 * (s as usize - 1)] = distance(s + 1) * (1.0 - win);
    }
    p
}

fn check_outcome_classes(decks: u32, n: u64) {
    let seed = ServerSeed::from_bytes(SEED);
    let decks = Decks::new(decks).unwrap();
    let counts = (0..n)
        .into_par_iter()
        .fold(
            || [0u64; CLASSES],
            |mut acc, nonce| {
                // Nonces from 2^40 on, apart from those of the card × position test.
                acc[class_of(&FairShoe::deal(&inputs(&seed, (1 << 40) + nonce, decks), 3))] += 1;
                acc
            },
        )
        .reduce(|| [0u64; CLASSES], |a, b| std::array::from_fn(|i| a[i] + b[i]));
    let p = exact_class_probabilities(u32::from(decks.get()));
    assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12, "the classes partition all deals");
    let x2: f64 = counts
        .iter()
        .zip(&p)
        .map(|(&o, &p)| {
            let e = n as f64 * p;
            (o as f64 - e).powi(2) / e
        })
        .sum();
    let df = (CLASSES - 1) as f64;
    let critical = chi_square_critical(df, ALPHA);
    println!(
        "outcome classes, {} deck(s), N = {n}: X² = {x2:.2} (df {df}), critical value at α = {ALPHA:e}: {critical:.2}",
        decks.get()
    );
    assert!(x2 < critical, "hand classes deviate from the exact odds: X² = {x2:.2} ≥ {critical:.2}");
}

#[test]
fn the_exact_class_probabilities_match_known_red_dog_odds() {
    // One deck: pair 3/51, consecutive 2·12·16/(52·51) = 384/2652.
    let p = exact_class_probabilities(1);
    assert!((p[0] + p[1] - 3.0 / 51.0).abs() < 1e-15);
    assert!((p[2] - 384.0 / 2652.0).abs() < 1e-15);
    // Spread 11 (A and 2): 2·16/2652, and then 44 of 50 cards are inside.
    assert!((p[23] - 32.0 / 2652.0 * 44.0 / 50.0).abs() < 1e-15);
}

#[test]
fn hand_classes_spreads_and_outcomes_follow_the_exact_odds() {
    let n = if cfg!(debug_assertions) { 20_000 } else { 400_000 };
    check_outcome_classes(1, n);
    check_outcome_classes(8, n);
}

#[test]
#[ignore = "long run: a few minutes in release"]
fn long_run_hand_classes_spreads_and_outcomes_follow_the_exact_odds() {
    check_outcome_classes(1, 20_000_000);
    check_outcome_classes(8, 20_000_000);
}

/// Independent runs (server seeds `[k; 32]`): the unscaled `X²` of the card × position
/// table must average `n(n−1) = 2652` with standard deviation `√(2n²) ≈ 73.5`, i.e. the
/// reference distribution of the card × position test is the right one, for small and for
/// large samples.
#[test]
#[ignore = "long run: a few minutes in release"]
fn long_run_repeated_card_by_position_statistics_have_the_predicted_mean_and_spread() {
    repeated_card_by_position("fair shoe", 0..40, 20_000, fair_counts);
    repeated_card_by_position("fair shoe", 0..16, 2_000_000, fair_counts);
    repeated_card_by_position("fair shoe", 100..132, 2_000_000, fair_counts);
}

/// The same measurement with the same harness, the shoe driven by `rand`'s `StdRng` instead
/// of the fair deal: a control for the harness and the reference distribution.
#[test]
#[ignore = "long run: a few minutes in release"]
fn long_run_control_the_same_statistics_with_a_different_generator() {
    repeated_card_by_position("StdRng control", 0..32, 2_000_000, |k, n| {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(0xC0FFEE + u64::from(k));
        let mut counts = vec![[0u64; 52]; 52];
        for _ in 0..n {
            let mut shoe = reddog::game::Shoe::new(Decks::ONE);
            for row in counts.iter_mut() {
                row[usize::from(shoe.draw_with(|b| rng.random_range(0..b)).unwrap().code())] += 1;
            }
        }
        counts
    });
}

/// Card × position counts of `n` fair one-deck deals under server seed `[k; 32]`.
fn fair_counts(k: u8, n: u64) -> Vec<[u64; 52]> {
    fair_counts_of([k; 32], n)
}

fn repeated_card_by_position(
    label: &str,
    seeds: std::ops::Range<u8>,
    n: u64,
    counts_of: impl Fn(u8, u64) -> Vec<[u64; 52]> + Sync,
) {
    let runs = seeds.len();
    let stats: Vec<(f64, f64)> = seeds
        .into_par_iter()
        .map(|k| {
            let counts = counts_of(k, n);
            let e = n as f64 / 52.0;
            let x2 = |row: &[u64; 52]| row.iter().map(|&o| (o as f64 - e).powi(2) / e).sum::<f64>();
            (counts.iter().map(x2).sum::<f64>(), x2(&counts[0]))
        })
        .collect();
    let xs: Vec<f64> = stats.iter().map(|s| s.0).collect();
    let first_card = stats.iter().map(|s| s.1).sum::<f64>() / runs as f64;
    let runs = runs as f64;
    let mean = xs.iter().sum::<f64>() / runs;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (runs - 1.0)).sqrt();
    let (mean_0, sd_0) = (52.0 * 51.0, (2.0f64 * 52.0 * 52.0).sqrt());
    let below = xs.iter().filter(|&&x| x < mean_0).count();
    println!(
        "{label}: {runs} runs of N = {n}: mean X² = {mean:.1} (predicted {mean_0}, standard error {:.1}), \
         sd = {sd:.1} (predicted {sd_0:.1}), {below} below the predicted mean; first card alone: mean X² = \
         {first_card:.2} (predicted 51, standard error {:.2})",
        sd_0 / runs.sqrt(),
        (102.0 / runs).sqrt()
    );
    // ±5 standard errors of the mean; the sample sd within a factor 1.6.
    assert!((mean - mean_0).abs() < 5.0 * sd_0 / runs.sqrt());
    assert!(sd > sd_0 / 1.6 && sd < sd_0 * 1.6);
}

#[test]
fn the_expected_class_probabilities_equal_the_game_cores_exact_odds() {
    use reddog::game::{Paytable, Spread};
    use reddog::odds::{Analysis, to_f64};
    for d in 1..=8u32 {
        let odds = Analysis::new(Decks::new(d).unwrap(), &Paytable::STANDARD);
        let p = exact_class_probabilities(d);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(p[0], to_f64(&odds.p_three_of_a_kind())), "{d} decks: trips");
        assert!(close(p[0] + p[1], to_f64(&odds.p_pair())), "{d} decks: pair");
        assert!(close(p[2], to_f64(&odds.p_consecutive())), "{d} decks: consecutive");
        for s in Spread::all() {
            let i = 3 + 2 * usize::from(s.get() - 1);
            let win = to_f64(&odds.p_win_given_spread(s).unwrap());
            assert!(close(p[i] + p[i + 1], to_f64(&odds.p_spread(s))), "{d} decks: spread {s}");
            assert!(close(p[i], to_f64(&odds.p_spread(s)) * win), "{d} decks: spread {s} won");
        }
    }
}

// --- The pre-registered experiment of docs/FAIRNESS.md §11.1 ---------------------------------
//
// Fixed before it was first run (the design is committed with this code): `RUNS` independent
// runs of `N` one-deck deals each, on fresh server seeds never used by any other test,
// `s_k = SHA-256("reddog/fairness-stats/11.1-preregistered/" ‖ k)` (k in decimal), client
// seed `statistics`, nonces `0..N`; the unscaled card × position `X²` of each run. Under the
// null hypothesis (uniform, independent permutations) `E[X²] = 52·51 = 2652` exactly, for
// any `N` (each cell count is Binomial(N, 1/52), so `E[(O − E)²/E] = 1 − 1/52`), and the
// standard deviation is `√(2·52²) = 73.5` (asymptotically; the `N`-dependent correction is
// below 10⁻³ here), so the mean of 256 runs has standard error 4.6. The same statistic with
// the shoe driven by raw HMAC-SHA256 outputs instead of ChaCha20 (`hmac_counts`) is the
// control. Decision rule (two-sided, α = 0.01): the finding is closed as chance when
// `|z| < 2.576` for the fair deal, `z = (mean − 2652) / 4.6`; if the fair deal is outside
// and the control inside, the effect stands and is reported as such; if both are outside,
// the harness or the reference distribution is wrong.

/// Runs of the pre-registered experiment (standard error of the mean X²: 73.5/16 = 4.6).
const PREREGISTERED_RUNS: u32 = 256;
/// Deals per run, sized to the CPU share a `nice -n 19` job gets on the shared build machine
/// (FAIRNESS.md §11.1): the mean and spread of X² under the null do not depend on `N`. The
/// control costs about three times as much per deal.
const PREREGISTERED_N: u64 = 200_000;
const PREREGISTERED_CONTROL_N: u64 = 50_000;

fn preregistered_seed(label: &str, k: u32) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(format!("reddog/fairness-stats/11.1-preregistered/{label}{k}").as_bytes()).into()
}

/// The deal's HMAC message (FAIRNESS.md §3.4) for one deck and client seed `statistics`.
fn deal_message(nonce: u64) -> Vec<u8> {
    let mut msg = Vec::new();
    for field in [&b"reddog/deal"[..], &1u32.to_be_bytes(), CLIENT, &nonce.to_be_bytes(), &[1u8]] {
        msg.extend_from_slice(&(field.len() as u32).to_be_bytes());
        msg.extend_from_slice(field);
    }
    msg
}

/// The control: card × position counts of `n` one-deck shuffles (nonces `0..n`) whose words
/// are raw HMAC-SHA256 outputs, `HMAC(server_seed, message(nonce) ‖ u32be(i))` for
/// i = 0, 1, … (each 32-byte output is 8 little-endian words), with the rejection rule and
/// the Fisher–Yates shuffle of the fair deal. ChaCha20 is not involved.
fn hmac_counts(seed: [u8; 32], n: u64) -> Vec<[u64; 52]> {
    use hmac::{Hmac, KeyInit, Mac};
    let keyed = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(&seed).unwrap();
    let mut counts = vec![[0u64; 52]; 52];
    for nonce in 0..n {
        let msg = deal_message(nonce);
        let mut block = 0u32;
        let mut words: Vec<u32> = Vec::new();
        let mut next_word = || {
            if words.is_empty() {
                let mut mac = keyed.clone();
                mac.update(&msg);
                mac.update(&block.to_be_bytes());
                block += 1;
                let out = mac.finalize().into_bytes();
                words = out.chunks(4).rev().map(|w| u32::from_le_bytes(w.try_into().unwrap())).collect();
            }
            words.pop().unwrap()
        };
        let mut shoe = reddog::game::Shoe::new(Decks::ONE);
        for row in counts.iter_mut() {
            let card = shoe
                .draw_with(|bound| {
                    let limit = (1u64 << 32) - (1u64 << 32) % u64::from(bound);
                    loop {
                        let x = next_word();
                        if u64::from(x) < limit {
                            return x % bound;
                        }
                    }
                })
                .unwrap();
            row[usize::from(card.code())] += 1;
        }
    }
    counts
}

/// Standard normal CDF from `erfc` (Numerical Recipes' Chebyshev fit, |error| < 1.2·10⁻⁷).
fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x);
    let erfc = t
        * (-x * x - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if z >= 0.0 { 1.0 - erfc / 2.0 } else { erfc / 2.0 }
}

/// P(X ≤ x) for X ~ χ²(df), by the Wilson–Hilferty cube-root transform.
fn chi_square_cdf(x: f64, df: f64) -> f64 {
    let a = 2.0 / (9.0 * df);
    normal_cdf(((x / df).cbrt() - (1.0 - a)) / a.sqrt())
}

/// Kolmogorov–Smirnov distance of the sample from a CDF, and its asymptotic p-value.
fn kolmogorov_smirnov(sample: &[f64], cdf: impl Fn(f64) -> f64) -> (f64, f64) {
    let mut xs = sample.to_vec();
    xs.sort_by(f64::total_cmp);
    let m = xs.len() as f64;
    let d = xs
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = cdf(x);
            (f - i as f64 / m).max((i as f64 + 1.0) / m - f)
        })
        .fold(0.0, f64::max);
    let lambda = (m.sqrt() + 0.12 + 0.11 / m.sqrt()) * d;
    let p = (1..=100)
        .map(|j| {
            let j = f64::from(j);
            2.0 * (-1f64).powf(j - 1.0) * (-2.0 * j * j * lambda * lambda).exp()
        })
        .sum::<f64>()
        .clamp(0.0, 1.0);
    (d, p)
}

/// Runs the experiment for one generator and prints every figure §11.1 records; asserts
/// only that the mean lies within 5 standard errors (the decision rule is applied in the doc).
fn preregistered(label: &str, runs: u32, n: u64, counts_of: impl Fn(u32, u64) -> Vec<[u64; 52]> + Sync) {
    let started = std::time::Instant::now();
    let stats: Vec<(f64, f64)> = (0..runs)
        .into_par_iter()
        .map(|k| {
            let counts = counts_of(k, n);
            if runs > 100 {
                eprintln!("{label}: run {k} done at {:.0} s", started.elapsed().as_secs_f64());
            }
            assert!(counts.iter().all(|row| row.iter().sum::<u64>() == n), "every position holds one card per deal");
            for card in 0..52 {
                assert_eq!(counts.iter().map(|row| row[card]).sum::<u64>(), n, "every card is dealt once per deal");
            }
            let e = n as f64 / 52.0;
            let x2 = |row: &[u64; 52]| row.iter().map(|&o| (o as f64 - e).powi(2) / e).sum::<f64>();
            (counts.iter().map(x2).sum::<f64>(), x2(&counts[0]))
        })
        .collect();
    let xs: Vec<f64> = stats.iter().map(|s| s.0).collect();
    let m = f64::from(runs);
    let mean = xs.iter().sum::<f64>() / m;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (m - 1.0)).sqrt();
    let (mean_0, sd_0) = (52.0 * 51.0, (2.0f64 * 52.0 * 52.0).sqrt());
    let se = sd_0 / m.sqrt();
    let z = (mean - mean_0) / se;
    let below = xs.iter().filter(|&&x| x < mean_0).count();
    let first = stats.iter().map(|s| s.1).sum::<f64>() / m;
    let first_z = (first - 51.0) / (102.0 / m).sqrt();
    let (d, p_ks) = kolmogorov_smirnov(&xs, |x| chi_square_cdf(x * 51.0 / 52.0, 2601.0));
    println!(
        "{label}: {runs} runs × N = {n} ({:.0} s): mean X² = {mean:.1} (predicted {mean_0}, s.e. {se:.2}, z = {z:.2}, \
         two-sided p = {:.3}); sd = {sd:.1} (predicted {sd_0:.1}); {below} of {runs} below {mean_0}; KS of X²·51/52 \
         against χ²(2601): D = {d:.4}, p = {p_ks:.3}; first card: mean X² = {first:.2} (predicted 51, z = {first_z:.2})",
        started.elapsed().as_secs_f64(),
        2.0 * normal_cdf(-z.abs()),
    );
    if std::env::var_os("REDDOG_STATS_PRINT_RUNS").is_some() {
        println!("{label} runs: {xs:.1?}");
    }
    assert!(z.abs() < 5.0, "{label}: mean X² {mean:.1} is {z:.2} standard errors from {mean_0}");
}

#[test]
fn the_statistics_helpers_match_known_values() {
    assert!((normal_cdf(1.959_964) - 0.975).abs() < 1e-6);
    assert!((normal_cdf(-2.575_829) - 0.005).abs() < 1e-6);
    // χ²(2601) has median ≈ df − 2/3; Wilson–Hilferty is accurate to ~1e-4 at this df.
    assert!((chi_square_cdf(2600.333, 2601.0) - 0.5).abs() < 1e-3);
    // A sample that is exactly the uniform quantiles has KS distance 1/(2m).
    let sample: Vec<f64> = (0..100).map(|i| (f64::from(i) + 0.5) / 100.0).collect();
    let (d, p) = kolmogorov_smirnov(&sample, |x| x.clamp(0.0, 1.0));
    assert!((d - 0.005).abs() < 1e-12 && p > 0.99);
    // Fresh seeds differ from each other and from every seed the other tests use.
    assert_ne!(preregistered_seed("", 0), preregistered_seed("", 1));
    assert_ne!(preregistered_seed("", 0), SEED);
    // The control's message is the deal's message of FAIRNESS.md §3.4 (44 + 10 bytes).
    assert_eq!(deal_message(0).len(), 54);
}

/// A fair one-deck deal's card × position counts under server seed `seed`, nonces `0..n`.
fn fair_counts_of(seed: [u8; 32], n: u64) -> Vec<[u64; 52]> {
    let seed = ServerSeed::from_bytes(seed);
    let mut counts = vec![[0u64; 52]; 52];
    for nonce in 0..n {
        let mut shoe = FairShoe::new(&inputs(&seed, nonce, Decks::ONE));
        for row in counts.iter_mut() {
            row[usize::from(shoe.next_card().unwrap().code())] += 1;
        }
    }
    counts
}

/// The experiment's harness on a small sample (seconds): both generators deal permutations
/// and their statistics sit within 5 standard errors of the prediction.
#[test]
fn the_preregistered_harness_on_a_small_sample() {
    let n = if cfg!(debug_assertions) { 500 } else { 20_000 };
    preregistered("fair deal, small", 16, n, |k, n| fair_counts_of(preregistered_seed("small/", k), n));
    preregistered("raw HMAC outputs, small", 16, n, |k, n| hmac_counts(preregistered_seed("small/hmac/", k), n));
}

/// The pre-registered run, fair deal (§11.1): 51 M deals; run it alone with
/// `nice -n 19 cargo test --release --test it fairness_stats::preregistered_fair_deal_on -- --ignored --nocapture`.
#[test]
#[ignore = "long run: the pre-registered experiment of FAIRNESS.md §11.1"]
fn preregistered_fair_deal_on_fresh_seeds() {
    preregistered("fair deal, fresh seeds", PREREGISTERED_RUNS, PREREGISTERED_N, |k, n| {
        fair_counts_of(preregistered_seed("", k), n)
    });
}

/// The control of the pre-registered run: raw HMAC-SHA256 outputs drive the same shuffle.
#[test]
#[ignore = "long run: the control of the pre-registered experiment of FAIRNESS.md §11.1"]
fn preregistered_control_raw_hmac_outputs() {
    preregistered("raw HMAC outputs, fresh seeds", PREREGISTERED_RUNS, PREREGISTERED_CONTROL_N, |k, n| {
        hmac_counts(preregistered_seed("hmac-control/", k), n)
    });
}

/// The design first registered for §11.1 (commit 43659ab: N = 2 × 10⁶ per run, the size of
/// the earlier series, same seeds `s_k`), run after the resized one because the CPU share
/// allowed it: it tests a shift that grows with `N`, which the resized run cannot see. Its
/// first 2 × 10⁵ deals per run are those of `preregistered_fair_deal_on_fresh_seeds`.
#[test]
#[ignore = "long run (about half an hour): FAIRNESS.md §11.1, the first registered size"]
fn preregistered_fair_deal_at_the_first_registered_size() {
    preregistered("fair deal, fresh seeds, N = 2e6", PREREGISTERED_RUNS, 2_000_000, |k, n| {
        fair_counts_of(preregistered_seed("", k), n)
    });
}
