//! `reddog certify`: writes the certification evidence ([`reddog::certify`]) for this binary
//! and a table configuration into a directory: `report.json`, `report.html`, `sbom.cdx.json`
//! and one `paytable-<id>.json` per table (the reproduction commands use them), and — only
//! when every check passed — `certified-rules.json` (for `reddog serve --certified-rules`;
//! a run that does not pass removes any earlier one from the directory). Exits 0 when every
//! check passed, 1 when any failed.
//!
//! With `--against PREVIOUS` (the certified rules in force) it first prints what changed,
//! table by table ([`reddog::certify::change`]); a change that alters a paytable entry, lowers
//! an RTP or flips a sandbox or promotion flag needs `--approve "NOTE"`, and without it the
//! command exits 1 before running any check.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use reddog::certify::{self, Options, Plan};
use reddog::game::Table;
use reddog::service::CertifiedRules;
use reddog::service::Tables;

#[derive(Debug, clap::Args)]
pub struct CertifyArgs {
    /// The table configuration to certify (the `reddog serve --table-config` format); without
    /// it, the built-in default table.
    #[arg(long, value_name = "FILE")]
    table_config: Option<PathBuf>,
    /// Directory for the report (created if missing; existing report files are replaced).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// The quick plan (the default): seconds on two cores; what CI runs.
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// The lab-grade plan: 10^8 simulated rounds per table, large statistical samples and
    /// dieharder's whole battery as -a runs it (required), one process per CPU at a time.
    /// About 20 minutes on two cores (release build); a progress bar's ETA includes dieharder.
    #[arg(long)]
    full: bool,
    /// Seed of every simulation and deal of the run (same seed, same figures).
    #[arg(long, default_value_t = 20_261_202)]
    seed: u64,
    /// Fail on warnings too (a table whose best play returns more than the stake).
    #[arg(long)]
    strict: bool,
    /// Never show a progress bar.
    #[arg(long)]
    no_progress: bool,
    /// The certified-rules.json in force: print what the new rules change against it (each
    /// paytable entry, limits, decks, currency, flags, exact RTP before and after) and record
    /// it in the new file.
    #[arg(long, value_name = "PREVIOUS")]
    against: Option<PathBuf>,
    /// The approver's note for a change that alters a paytable entry, lowers an RTP or flips a
    /// sandbox or promotion flag (required for such a change; recorded in the new file).
    #[arg(long, value_name = "NOTE", requires = "against")]
    approve: Option<String>,
}

pub fn run(args: CertifyArgs) -> anyhow::Result<ExitCode> {
    // A run that does not pass leaves no certified-rules.json behind, not even an earlier one.
    let certified_path = args.out.join("certified-rules.json");
    match std::fs::remove_file(&certified_path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("removing the earlier {}", certified_path.display()));
        }
        _ => {}
    }
    let (tables, table_config) = match &args.table_config {
        Some(path) => {
            let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            let text = std::str::from_utf8(&bytes).with_context(|| format!("{} is not UTF-8", path.display()))?;
            let tables = Tables::from_json(text).with_context(|| format!("{}", path.display()))?;
            (tables, Some((path.display().to_string(), bytes)))
        }
        None => (Tables::single(Table::default()), None),
    };
    let change = match &args.against {
        Some(path) => {
            let bytes = std::fs::read(path).with_context(|| format!("--against: reading {}", path.display()))?;
            let text = String::from_utf8_lossy(&bytes);
            let previous =
                CertifiedRules::from_json(&text).with_context(|| format!("--against: {}", path.display()))?;
            let note = args.approve.clone().filter(|n| !n.trim().is_empty());
            let sha = reddog::certify::identity::sha256_hex(&bytes);
            let change = certify::change::diff(&previous, &path.display().to_string(), &sha, &tables, note);
            print!("{}", certify::change::render(&change));
            if !change.needs_approval.is_empty() && change.approval.is_none() {
                eprintln!(
                    "certify: not run: the change needs an approver's note (--approve \"...\"); nothing written to {}",
                    args.out.display()
                );
                return Ok(ExitCode::from(1));
            }
            Some(change)
        }
        None => None,
    };
    let plan = if args.full { Plan::full() } else { Plan::quick() };
    let options = Options {
        plan,
        seed: args.seed,
        tables,
        table_config,
        command_line: std::env::args().collect(),
        strict: args.strict,
        change,
    };
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let show = !args.no_progress && (args.full || std::io::stderr().is_terminal());
    let bar = if show {
        let bar = ProgressBar::with_draw_target(Some(options.plan.work(&options.tables)), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {percent}% certify, eta {eta}")?
                .progress_chars("=> "),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let report = certify::run(&options, &|n| bar.inc(n))?;
    bar.finish_and_clear();
    let write = |name: &str, text: String| -> anyhow::Result<()> {
        let path = args.out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    };
    write("report.json", serde_json::to_string_pretty(&report)?)?;
    write("report.html", certify::html::render(&report))?;
    write("sbom.cdx.json", serde_json::to_string_pretty(&report.sbom())?)?;
    if let Some(certified) = &report.certified_rules {
        write("certified-rules.json", serde_json::to_string_pretty(certified)?)?;
    }
    for t in &report.tables {
        write(&t.reproduce.paytable_file, serde_json::to_string(&t.rules.paytable)?)?;
    }
    for w in &report.warnings {
        eprintln!("WARNING {w}");
    }
    for c in report.checks.iter().filter(|c| !c.passed) {
        eprintln!("FAIL {}: {}", c.description, c.detail);
    }
    println!(
        "certify ({}, {} table{}): {} passed, {} failed, {} warning(s); {} in {:.0} s -> {}{}",
        report.plan.name,
        report.tables.len(),
        if report.tables.len() == 1 { "" } else { "s" },
        report.verdict.checks_passed,
        report.verdict.checks_failed,
        report.warnings.len(),
        if report.verdict.passed { "PASS" } else { "FAIL" },
        report.elapsed_seconds,
        args.out.display(),
        if report.certified_rules.is_some() {
            " (certified-rules.json written)"
        } else {
            " (no certified-rules.json: only a pass writes it)"
        }
    );
    Ok(ExitCode::from(report.exit_code()))
}
