//! The statistics of the randomness section: Pearson's chi-square against exact cell
//! probabilities, a runs test summed over independent shoes, and a histogram of p-values.
//! Tail probabilities come from `statrs` (regularized incomplete gamma, error function), not
//! from hand-written approximations.

use serde::Serialize;
use statrs::distribution::{ChiSquared, ContinuousCDF, Normal};

/// One statistical test's result: the statistic, its reference distribution and its p-value.
#[derive(Clone, Debug, Serialize)]
pub struct TestResult {
    /// What was tested.
    pub name: String,
    /// The sample: how many deals (or runs) went in.
    pub sample: u64,
    /// The statistic as compared with the reference distribution.
    pub statistic: f64,
    /// `chi_square(df)` or `normal(0,1)`.
    pub distribution: String,
    /// Degrees of freedom (`None` for a normal statistic).
    pub df: Option<f64>,
    /// Upper-tail probability (two-sided for a normal statistic).
    pub p_value: f64,
    /// Smallest expected cell count (chi-square tests).
    pub min_expected: Option<f64>,
    /// The largest standardized cell residual, where it is meaningful.
    pub max_abs_z: Option<f64>,
    /// The pre-registered threshold: the test fails when `p_value < alpha`.
    pub alpha: f64,
    pub passed: bool,
    /// How the statistic was computed, in one sentence.
    pub method: String,
}

/// `P(X ≥ x)` for `X ~ χ²(df)`.
pub fn chi_square_sf(x: f64, df: f64) -> f64 {
    match ChiSquared::new(df) {
        Ok(d) => d.sf(x.max(0.0)),
        Err(_) => f64::NAN,
    }
}

/// Two-sided `P(|Z| ≥ |z|)` for a standard normal `Z`.
pub fn normal_two_sided(z: f64) -> f64 {
    match Normal::new(0.0, 1.0) {
        Ok(n) => 2.0 * n.sf(z.abs()),
        Err(_) => f64::NAN,
    }
}

/// Pearson's `X² = Σ (O − E)² / E` of `observed` against probabilities `p` over `n` trials,
/// skipping cells of probability zero (which must then be empty: a count there adds
/// infinity). Returns `(X², cells with p > 0, min E, max |z|)`.
pub fn pearson(observed: &[u64], p: &[f64], n: u64) -> (f64, usize, f64, f64) {
    let nf = n as f64;
    let (mut x2, mut cells, mut min_e, mut max_z) = (0.0, 0usize, f64::INFINITY, 0.0f64);
    for (&o, &p) in observed.iter().zip(p) {
        if p <= 0.0 {
            if o > 0 {
                x2 = f64::INFINITY;
            }
            continue;
        }
        cells += 1;
        let e = nf * p;
        let d = o as f64 - e;
        x2 += d * d / e;
        min_e = min_e.min(e);
        max_z = max_z.max(d.abs() / (nf * p * (1.0 - p)).sqrt().max(f64::MIN_POSITIVE));
    }
    (x2, cells, min_e, max_z)
}

/// Wald–Wolfowitz runs: the mean and variance of the number of runs in a uniformly random
/// arrangement of `a` items of one kind and `b` of the other.
pub fn runs_moments(a: u64, b: u64) -> (f64, f64) {
    let (a, b) = (a as f64, b as f64);
    let n = a + b;
    let mean = 1.0 + 2.0 * a * b / n;
    let var = 2.0 * a * b * (2.0 * a * b - n) / (n * n * (n - 1.0));
    (mean, var)
}

/// The number of runs (maximal blocks of equal kind) in `kinds`.
pub fn count_runs(kinds: impl IntoIterator<Item = bool>) -> u64 {
    let mut runs = 0;
    let mut last = None;
    for k in kinds {
        if last != Some(k) {
            runs += 1;
            last = Some(k);
        }
    }
    runs
}

/// Counts of `p_values` in `bins` equal bins of `[0, 1]` (1.0 falls in the last).
pub fn histogram(p_values: &[f64], bins: usize) -> Vec<u64> {
    let mut h = vec![0u64; bins.max(1)];
    for &p in p_values {
        let i = ((p * bins as f64) as usize).min(bins.max(1) - 1);
        h[i] += 1;
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_probabilities_match_published_tables() {
        // χ²(10) at its 0.999 quantile 29.588; χ²(100) at 149.449; z = 3.2905 is two-sided 0.001.
        assert!((chi_square_sf(29.588, 10.0) - 0.001).abs() < 1e-5);
        assert!((chi_square_sf(149.449, 100.0) - 0.001).abs() < 1e-5);
        assert!((normal_two_sided(3.2905) - 0.001).abs() < 1e-5);
        assert!((normal_two_sided(-1.959_964) - 0.05).abs() < 1e-6);
    }

    #[test]
    fn pearson_of_a_perfect_fit_is_zero_and_of_an_impossible_count_infinite() {
        let (x2, cells, min_e, _) = pearson(&[25, 25, 50, 0], &[0.25, 0.25, 0.5, 0.0], 100);
        assert_eq!((x2, cells, min_e), (0.0, 3, 25.0));
        assert!(pearson(&[25, 25, 49, 1], &[0.25, 0.25, 0.5, 0.0], 100).0.is_infinite());
    }

    #[test]
    fn runs_are_counted_and_their_moments_match_enumeration() {
        assert_eq!(count_runs([true, true, false, true]), 3);
        assert_eq!(count_runs([]), 0);
        // All 6 arrangements of two of each kind: runs 2,3,4,3,2... enumerate.
        let all = [[1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 0, 1], [0, 1, 1, 0], [0, 1, 0, 1], [0, 0, 1, 1]];
        let r: Vec<f64> = all.iter().map(|a| count_runs(a.iter().map(|&x| x == 1)) as f64).collect();
        let mean = r.iter().sum::<f64>() / 6.0;
        let var = r.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 6.0;
        let (m, v) = runs_moments(2, 2);
        assert!((mean - m).abs() < 1e-12 && (var - v).abs() < 1e-12, "{mean} {var} vs {m} {v}");
    }

    #[test]
    fn histogram_bins_include_both_ends() {
        assert_eq!(histogram(&[0.0, 0.05, 0.5, 0.99, 1.0], 10), vec![2, 0, 0, 0, 0, 1, 0, 0, 0, 2]);
    }
}
