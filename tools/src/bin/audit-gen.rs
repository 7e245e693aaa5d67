//! `audit-gen`: writes generated audit trails (`reddog-audit-v1` records of honest rounds and
//! planted misuse, [`reddog_tools::generate`]) for tests and benchmarks. A developer tool, not
//! part of the shipped `reddog` binary:
//!
//! ```text
//! cargo run --release -p reddog-tools --bin audit-gen -- --rounds N --replicas R [--misuse K] --out DIR
//! ```

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use reddog_tools::generate;

/// Write generated audit trails (honest rounds and planted misuse), for tests and benchmarks.
#[derive(Debug, Parser)]
#[command(name = "audit-gen")]
pub struct AuditGenArgs {
    /// Honest rounds to write.
    #[arg(long, default_value_t = 1000)]
    pub rounds: u64,
    /// Replica chains.
    #[arg(long, default_value_t = 2)]
    pub replicas: usize,
    /// Instances of each misuse pattern to plant.
    #[arg(long, default_value_t = 0)]
    pub misuse: u32,
    /// Seeds every choice: the same arguments write the same bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Shift replica N's clock by MS milliseconds (`N=MS`, repeatable; MS may be negative).
    #[arg(long, value_name = "N=MS", value_parser = parse_skew, allow_hyphen_values = true)]
    pub skew: Vec<(usize, i64)>,
    /// A directory for one file per replica (`replica-N.jsonl`), or `-` for all on stdout.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Write the findings the trail must produce, as JSON, to this file.
    #[arg(long, value_name = "FILE")]
    pub expected: Option<PathBuf>,
    /// Write reveals (`ROUND_ID.json`) of the first honest round and of each one-seat peek
    /// into this directory.
    #[arg(long, value_name = "DIR")]
    pub reveals: Option<PathBuf>,
}

fn parse_skew(text: &str) -> Result<(usize, i64), String> {
    let (n, ms) = text.split_once('=').ok_or_else(|| format!("{text:?}: expected N=MS"))?;
    Ok((
        n.parse().map_err(|_| format!("{n:?}: not a replica index"))?,
        ms.parse().map_err(|_| format!("{ms:?}: not milliseconds"))?,
    ))
}

fn run(args: AuditGenArgs) -> anyhow::Result<()> {
    let mut skew_ms = vec![0; args.replicas];
    for (n, ms) in &args.skew {
        if let Some(s) = skew_ms.get_mut(*n) {
            *s = *ms;
        } else {
            anyhow::bail!("--skew {n}={ms}: there are {} replicas", args.replicas);
        }
    }
    let opts = generate::Options {
        rounds: args.rounds,
        replicas: args.replicas,
        misuse: args.misuse,
        seed: args.seed,
        skew_ms,
        reveals: args.reveals.is_some(),
        ..generate::Options::default()
    };
    let summary = if args.out.as_os_str() == "-" {
        let mut outs = [BufWriter::with_capacity(1 << 20, io::stdout().lock())];
        generate::generate(&opts, &mut outs)?
    } else {
        std::fs::create_dir_all(&args.out)?;
        let mut outs = (0..args.replicas.max(1))
            .map(|r| Ok(BufWriter::with_capacity(1 << 20, File::create(args.out.join(format!("replica-{r}.jsonl")))?)))
            .collect::<io::Result<Vec<_>>>()?;
        generate::generate(&opts, &mut outs)?
    };
    if let Some(dir) = &args.reveals {
        std::fs::create_dir_all(dir)?;
        for (round_id, json) in &summary.reveals {
            std::fs::write(dir.join(format!("{round_id}.json")), json)?;
        }
    }
    if let Some(path) = &args.expected {
        std::fs::write(path, serde_json::to_string_pretty(&summary)?)?;
    }
    eprintln!(
        "audit-gen: {} rounds, {} records, {} planted findings",
        summary.rounds,
        summary.records,
        summary.expected.len()
    );
    Ok(())
}

fn main() -> ExitCode {
    match run(AuditGenArgs::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("audit-gen: {e:#}");
            ExitCode::FAILURE
        }
    }
}
