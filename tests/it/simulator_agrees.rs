//! Long check (ignored by default): the simulator, playing through the round code, agrees
//! with the exact RTP inside its 99.9% confidence interval over at least 10 million rounds
//! for each of 1, 2, 4, 6 and 8 decks. Run it in release:
//!
//! ```text
//! cargo test --release --test it simulator_agrees:: -- --ignored --nocapture
//! ```
//!
//! `REDDOG_AGREE_ROUNDS` overrides the rounds per deck count (default 10,000,000).

use reddog::game::{Decks, Paytable};
use reddog::odds::{Analysis, Policy, to_f64};
use reddog::sim::{SimConfig, simulate};

fn rounds() -> u64 {
    std::env::var("REDDOG_AGREE_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000_000)
}

#[test]
#[ignore = "long: at least 10 million rounds per deck count; run in release"]
fn the_simulator_agrees_with_the_exact_rtp_for_1_2_4_6_and_8_decks() {
    let rounds = rounds();
    println!(
        "| decks | rounds | seed | exact rtp | simulated rtp | 99.9% CI | exact rtp/total wagered | simulated | 99.9% CI | rounds/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut failures = Vec::new();
    for decks in [1u32, 2, 4, 6, 8] {
        let mut config = SimConfig::new(rounds);
        config.decks = Decks::new(decks).unwrap();
        config.seed = 20_261_201 + u64::from(decks);
        let report = simulate(&config, &|_| {}).unwrap();
        let exact = Analysis::new(config.decks, &Paytable::STANDARD).policy(Policy::Optimal);
        let (rtp, rtp_total) = (to_f64(&exact.rtp), to_f64(&exact.rtp_per_total_wagered));
        let (e, w) = (report.rtp, report.rtp_per_total_wagered);
        println!(
            "| {decks} | {} | {} | {rtp:.6} | {:.6} | [{:.6}, {:.6}] | {rtp_total:.6} | {:.6} | [{:.6}, {:.6}] | {:.0} |",
            report.sums.rounds,
            config.seed,
            e.value,
            e.ci_low,
            e.ci_high,
            w.value,
            w.ci_low,
            w.ci_high,
            report.rounds_per_second()
        );
        assert_eq!(report.sums.rounds, rounds);
        if !e.contains(rtp) {
            failures.push(format!("{decks} decks: exact rtp {rtp} outside [{}, {}]", e.ci_low, e.ci_high));
        }
        if !w.contains(rtp_total) {
            failures.push(format!("{decks} decks: exact rtp/total {rtp_total} outside [{}, {}]", w.ci_low, w.ci_high));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
#[ignore = "long: 10 million rounds per policy; run in release"]
fn the_simulator_agrees_with_the_exact_rtp_for_other_policies_and_seven_seats() {
    let rounds = rounds();
    println!("| decks | seats | policy | rounds | seed | exact rtp | simulated rtp | 99.9% CI | rounds/s |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut failures = Vec::new();
    for (decks, seats, policy) in [
        (4u32, 7usize, Policy::Never),
        (2, 7, Policy::Always),
        (8, 3, Policy::RaiseAtLeast(3)),
        (1, 7, Policy::Optimal),
    ] {
        let mut config = SimConfig::new(rounds);
        config.decks = Decks::new(decks).unwrap();
        config.seats = seats;
        config.policy = policy;
        config.seed = 7 + u64::from(decks);
        let report = simulate(&config, &|_| {}).unwrap();
        let exact = Analysis::new(config.decks, &Paytable::STANDARD).policy(policy);
        let rtp = to_f64(&exact.rtp);
        let e = report.rtp;
        println!(
            "| {decks} | {seats} | {policy} | {} | {} | {rtp:.6} | {:.6} | [{:.6}, {:.6}] | {:.0} |",
            report.sums.rounds,
            config.seed,
            e.value,
            e.ci_low,
            e.ci_high,
            report.rounds_per_second()
        );
        if !e.contains(rtp) || !report.rtp_per_total_wagered.contains(to_f64(&exact.rtp_per_total_wagered)) {
            failures.push(format!("{decks} decks, {seats} seats, {policy}: exact outside the interval"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
