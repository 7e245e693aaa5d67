//! `reddog odds`: the exact odds table ([`reddog::odds`]), as text or one JSON object.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use reddog::game::{Decks, Paytable};
use reddog::odds::{DEFINITIONS, OddsReport, REPORT_POLICIES};

#[derive(Debug, clap::Args)]
pub struct OddsArgs {
    /// Decks in the shoe, 1 to 8.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=8))]
    decks: u32,
    /// A paytable JSON file, e.g. {"spread":[5,4,2,1,1,1,1,1,1,1,1],"three_of_a_kind":11}.
    #[arg(long, value_name = "FILE")]
    paytable: Option<PathBuf>,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    json: bool,
}

/// The paytable in `path`, or the standard one.
pub fn load_paytable(path: Option<&Path>) -> anyhow::Result<Paytable> {
    let Some(path) = path else { return Ok(Paytable::STANDARD) };
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not a valid paytable", path.display()))
}

pub fn run(args: OddsArgs) -> anyhow::Result<()> {
    let decks = Decks::new(args.decks)?;
    let paytable = load_paytable(args.paytable.as_deref())?;
    let report = OddsReport::new(decks, &paytable, &REPORT_POLICIES);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(())
}

fn spreads_text(spreads: &[u8]) -> String {
    match spreads {
        [] => "none".into(),
        [one] => one.to_string(),
        [first, .., last] if usize::from(last - first) + 1 == spreads.len() => format!("{first}-{last}"),
        many => many.iter().map(u8::to_string).collect::<Vec<_>>().join(","),
    }
}

fn render(r: &OddsReport) -> String {
    let mut o = String::new();
    let pays: Vec<String> = r.hands.spreads.iter().map(|s| s.pays.to_string()).collect();
    let _ = writeln!(
        o,
        "Red Dog exact odds: {} deck{} ({} cards); spreads 1-11 pay {} to 1; three of a kind pays {} to 1",
        r.decks,
        if r.decks == 1 { "" } else { "s" },
        r.cards,
        pays.join("/"),
        r.paytable.three_of_a_kind_odds(),
    );
    let _ = writeln!(o, "Exact enumeration of every ordered draw of three cards (by rank counts), not simulation.\n");
    let _ = writeln!(o, "{:<26} {:>26} {:>10}", "hand", "probability", "decimal");
    let h = &r.hands;
    for (name, f) in [
        ("pair", &h.pair),
        ("three of a kind | pair", &h.three_of_a_kind_given_pair),
        ("three of a kind", &h.three_of_a_kind),
        ("consecutive (push)", &h.consecutive),
    ] {
        let _ = writeln!(o, "{name:<26} {:>26} {:>10.6}", f.fraction, f.decimal);
    }
    let _ = writeln!(
        o,
        "\n{:>6} {:>5} {:>14} {:>10} {:>12} {:>10} {:>10} {:>7}",
        "spread", "pays", "P(spread)", "decimal", "P(win|sprd)", "decimal", "EV stand", "raise?"
    );
    for s in &h.spreads {
        let (wf, wd) = s.win_probability.as_ref().map_or(("-".into(), f64::NAN), |w| (w.fraction.clone(), w.decimal));
        let ev = s.ev_stand.as_ref().map_or(f64::NAN, |e| e.decimal);
        let _ = writeln!(
            o,
            "{:>6} {:>5} {:>14} {:>10.6} {:>12} {:>10.6} {:>+10.6} {:>7}",
            s.spread,
            format!("{}:1", s.pays),
            s.probability.fraction,
            s.probability.decimal,
            wf,
            wd,
            ev,
            if s.optimal_raises { "raise" } else { "stand" }
        );
    }
    let _ = writeln!(o, "\nOptimal raise rule: raise on spread {}", spreads_text(&r.raise_spreads));
    let _ = writeln!(
        o,
        "\n{:<18} {:>9} {:>28} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "policy", "raises on", "EV (exact)", "EV", "house edge", "EoR", "RTP", "RTP/total", "variance"
    );
    for p in &r.policy_lines {
        let _ = writeln!(
            o,
            "{:<18} {:>9} {:>28} {:>+12.8} {:>10.6} {:>10.6} {:>10.6} {:>10.6} {:>10.6}",
            p.policy,
            spreads_text(&p.raise_spreads),
            p.ev,
            p.ev_decimal,
            p.house_edge,
            p.element_of_risk,
            p.rtp,
            p.rtp_per_total_wagered,
            p.variance.decimal,
        );
    }
    let _ = writeln!(o, "\nDefinitions (all figures are decimal fractions, not percentages):");
    for (k, v) in DEFINITIONS {
        let _ = writeln!(o, "  {k:<22} {v}");
    }
    let _ =
        writeln!(o, "  {:<22} the RTP column is rtp; RTP/total is rtp_per_total_wagered; EoR is element_of_risk", "");
    o
}
