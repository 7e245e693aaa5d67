//! `reddog simulate`: plays many rounds through the round core ([`reddog::sim`]) and
//! compares the observed RTP with the exact one.

use std::io::IsTerminal as _;
use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand::Rng as _;
use reddog::game::Decks;
use reddog::odds::Policy;
use reddog::sim::{CHUNK_ROUNDS, SimConfig, SimSummary, simulate};

#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// Rounds to play (at least 1).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    rounds: u64,
    /// Decks in the shoe, 1 to 8.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=8))]
    decks: u32,
    /// Seats at the table, 1 to 7, all following the policy (they share each deal).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=7))]
    seats: u64,
    /// optimal (raise where raising has the higher expected value) | worst (raise where
    /// standing loses on average: the lowest RTP of any play) | never | always |
    /// raise-at-least:K (raise on spread K or more, K 1 to 11)
    #[arg(long, default_value = "optimal", value_parser = parse_policy)]
    policy: Policy,
    /// Seed for a reproducible run (same seed, same result, whatever the thread count).
    /// Default: a random seed, printed with the result.
    #[arg(long)]
    seed: Option<u64>,
    /// Worker threads (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=256))]
    threads: Option<u64>,
    /// A paytable JSON file, e.g. {"spread":[5,4,2,1,1,1,1,1,1,1,1],"three_of_a_kind":11}.
    #[arg(long, value_name = "FILE")]
    paytable: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Never show a progress bar.
    #[arg(long)]
    no_progress: bool,
}

fn parse_policy(s: &str) -> Result<Policy, String> {
    s.parse().map_err(|e: reddog::odds::OddsError| e.to_string())
}

pub fn run(args: SimulateArgs) -> anyhow::Result<()> {
    let config = SimConfig {
        rounds: args.rounds,
        decks: Decks::new(args.decks)?,
        seats: usize::try_from(args.seats)?,
        policy: args.policy,
        paytable: super::odds::load_paytable(args.paytable.as_deref())?,
        seed: args.seed.unwrap_or_else(|| rand::rng().next_u64()),
        threads: args.threads.map(usize::try_from).transpose()?,
    };
    // A bar only where someone can see it, and only when the run lasts long enough to matter.
    let show = !args.no_progress && std::io::stderr().is_terminal() && args.rounds >= 16 * CHUNK_ROUNDS;
    let bar = if show {
        let bar = ProgressBar::with_draw_target(Some(args.rounds), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {human_pos}/{human_len} rounds, eta {eta}")?
                .progress_chars("=> "),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let report = simulate(&config, &|done| bar.set_position(done))?;
    bar.finish_and_clear();
    let s = SimSummary::new(&report);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(());
    }
    println!(
        "Red Dog simulation: {} rounds, {} deck{}, {} seat{}, policy {} (raises on {}), seed {}",
        s.rounds,
        s.decks,
        if s.decks == 1 { "" } else { "s" },
        s.seats,
        if s.seats == 1 { "" } else { "s" },
        s.policy,
        if s.raise_spreads.is_empty() {
            "none".to_string()
        } else {
            s.raise_spreads.iter().map(u8::to_string).collect::<Vec<_>>().join(",")
        },
        s.seed,
    );
    println!("rtp (per unit of initial bet)   {:.6}   99.9% CI [{:.6}, {:.6}]", s.rtp, s.ci_low, s.ci_high);
    println!(
        "exact rtp                       {:.6}   {}",
        s.exact_rtp,
        if s.exact_rtp_in_ci { "inside the interval" } else { "OUTSIDE the interval" }
    );
    let w = &s.rtp_per_total_wagered;
    println!("rtp per total wagered           {:.6}   99.9% CI [{:.6}, {:.6}]", w.value, w.ci_low, w.ci_high);
    println!("exact rtp per total wagered     {:.6}", s.exact_rtp_per_total_wagered);
    println!(
        "speed                           {:.0} rounds/s ({:.2} s, {} thread{})",
        s.rounds_per_second,
        s.elapsed_seconds,
        s.threads,
        if s.threads == 1 { "" } else { "s" }
    );
    println!("method: {}", s.method);
    Ok(())
}
