//! `reddog audit-log FILE…`: checks the audit trails (`reddog-audit-v1` records) of any
//! number of replicas, in any order ([`reddog::audit`]): chain gaps, edits and reordering;
//! commitment reuse, forks, peek then play, rounds re-dealt; with `--open-rounds`, rounds
//! never settled; with `--reveal FILE`, one disputed reveal against the logged transcripts;
//! with `--public-key HEX`, every checkpoint's signature (else the report says it did not);
//! with `--round ID`, one round: its records in transcript order, state, money and findings.
//! Exit status 0: nothing found; 1: something found (`--round`: a finding of that round, or
//! no record of it); 2: a file could not be read, or the input holds no audit record at all.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use reddog::audit::{self, Finding, Kind, Mode, Options, Report, Step, round};
use reddog::fairness::{AnyReveal, Expectations, Verification};

#[derive(Debug, clap::Args)]
pub struct AuditLogArgs {
    /// Audit record files of the engine's replicas (`-` reads stdin), in any order; other
    /// lines (diagnostics, other JSON) are skipped and counted.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Also list rounds started and never settled (`open_round` findings).
    #[arg(long)]
    pub open_rounds: bool,
    /// With --open-rounds: only rounds started longer than this before the newest record
    /// (`90s`, `15m`, `2h`, `1d`).
    #[arg(long, value_name = "DURATION", value_parser = audit::parse_duration, requires = "open_rounds")]
    pub older_than: Option<Duration>,
    /// Check this disputed reveal against the logged transcripts of its commitment.
    #[arg(long, value_name = "FILE", conflicts_with = "round")]
    pub reveal: Option<PathBuf>,
    /// Print one round: every record of this round id across the replicas in transcript
    /// order, its state (settled, open, abandoned), its money and its findings.
    #[arg(long, value_name = "ROUND_ID")]
    pub round: Option<String>,
    #[command(flatten)]
    pub partitioning: PartitionArgs,
    /// The engine's public signing key (64 hex, `reddog keygen --public`): verify every
    /// checkpoint's Ed25519 signature; an unsigned checkpoint or a signature that does not
    /// verify is a `checkpoint_signature` finding. Without it signatures are not checked.
    #[arg(long, value_name = "HEX")]
    pub public_key: Option<String>,
    /// With --reveal and --public-key: a step receipt the player kept (`receipt_json` of
    /// StartRound or Decide); the reveal must descend from it. Repeatable.
    #[arg(long, value_name = "FILE", requires_all = ["reveal", "public_key"])]
    pub receipt: Vec<PathBuf>,
}

/// Where the facts are held between reading and analysing (`audit-log` and `report`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PartitionArgs {
    /// Everything in memory (no partition files), whatever the input size.
    #[arg(long, conflicts_with = "partitions")]
    pub in_memory: bool,
    /// Partition files to use (default: one per 8 MiB of input, at most 512; in memory when it
    /// fits one; a partition file over 8 MiB is split again before it is read).
    #[arg(long, value_name = "N")]
    pub partitions: Option<usize>,
    /// Directory for the partition files (default: the system's temporary directory).
    #[arg(long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,
}

impl PartitionArgs {
    pub fn mode(&self) -> Mode {
        match (self.in_memory, self.partitions) {
            (true, _) => Mode::InMemory,
            (false, Some(n)) => Mode::Partitions(n),
            (false, None) => Mode::Auto,
        }
    }
}

pub fn run(args: AuditLogArgs) -> anyhow::Result<ExitCode> {
    let mut checkpoint_key = None;
    if let Some(text) = &args.public_key {
        let mut key = [0u8; 32];
        if hex::decode_to_slice(text, &mut key).is_err() {
            eprintln!("audit-log: --public-key: an Ed25519 public key is 64 hexadecimal digits");
            return Ok(ExitCode::from(2));
        }
        checkpoint_key = Some(key);
    }
    // The disputed reveal's own checks (FAIRNESS 4.5) are the one `Verification` every
    // verifier renders: the log can be consistent only with a reveal that holds.
    let checked = match &args.reveal {
        None => None,
        Some(path) => match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| Verification::check(&t, &Expectations::default(), None).map_err(|e| e.to_string()))
        {
            Ok(v) => Some(v),
            Err(e) => {
                eprintln!("audit-log: cannot read the reveal {}: {e}", path.display());
                return Ok(ExitCode::from(2));
            }
        },
    };
    let reveal = checked.as_ref().map(|v| v.reveal.clone());
    let steps = match super::fairness::read_step_receipts(&args.receipt) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("audit-log: {e:#}");
            return Ok(ExitCode::from(2));
        }
    };
    // Each step receipt: signed by the key, and the reveal descends from it.
    let receipts = match (&reveal, checkpoint_key) {
        (Some(r), Some(key)) if !steps.is_empty() => {
            let chain = r.verify().map(|v| v.chain).unwrap_or_default();
            super::fairness::check_steps(&key, &steps, r, &chain)
        }
        _ => Vec::new(),
    };
    let keep_commitment = reveal.as_ref().map(|r| match r {
        AnyReveal::V1(v) => v.commitment.clone(),
        AnyReveal::V2(v) => v.commitment.clone(),
    });
    let opts = Options {
        mode: args.partitioning.mode(),
        open_rounds: args.open_rounds || args.round.is_some(),
        older_than: args.older_than,
        temp_dir: args.partitioning.temp_dir.clone(),
        keep_commitment,
        keep_round: args.round.clone(),
        checkpoint_key,
    };
    let inputs = match audit::open_files(&args.files) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("audit-log: cannot read {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let report = match audit::analyse(inputs, &opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("audit-log: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    if report.records == 0 {
        eprintln!(
            "audit-log: no reddog-audit-v1 record in the input ({} line(s) read, {} malformed): nothing was checked",
            report.lines, report.malformed_records
        );
        return Ok(ExitCode::from(2));
    }
    let mut out = io::stdout().lock();
    let code = match (&reveal, &args.round) {
        (Some(r), _) => {
            let failures = checked.as_ref().map(Verification::failures).unwrap_or_default();
            reveal_report(&mut out, &report, r, &failures, &receipts, args.json)?
        }
        (None, Some(id)) => round_report(&mut out, report, id, args.json)?,
        (None, None) => full_report(&mut out, &report, args.json, checkpoint_key.is_some())?,
    };
    out.flush()?;
    Ok(ExitCode::from(code))
}

fn by_kind(findings: &[Finding]) -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    for f in findings {
        *m.entry(f.kind.name()).or_insert(0) += 1;
    }
    m
}

fn full_report(out: &mut impl Write, report: &Report, json: bool, keyed: bool) -> io::Result<u8> {
    if json {
        let value = serde_json::json!({
            "files": report.files,
            "lines": report.lines,
            "records": report.records,
            "skipped_lines": report.skipped_lines,
            "malformed_records": report.malformed_records,
            "partitions": report.partitions,
            "checkpoints": {
                "records": report.checkpoints,
                "signatures_checked": keyed,
                "signatures_verified": report.checkpoints_verified,
            },
            "findings": report.findings,
            "summary": { "findings": report.findings.len(), "by_kind": by_kind(&report.findings) },
        });
        serde_json::to_writer(&mut *out, &value)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "audit-log: {} audit record(s) from {} file(s), {} partition(s); {} other line(s) skipped, {} malformed audit record(s)",
            report.records, report.files, report.partitions, report.skipped_lines, report.malformed_records
        )?;
        if keyed {
            writeln!(
                out,
                "checkpoints: {} read, {} signature(s) verified with the public key given",
                report.checkpoints, report.checkpoints_verified
            )?;
        } else {
            writeln!(
                out,
                "checkpoints: {} read, signatures not checked (give the engine's key with --public-key)",
                report.checkpoints
            )?;
        }
        for f in &report.findings {
            writeln!(out, "{}", line(f))?;
        }
        let kinds: Vec<String> = by_kind(&report.findings).iter().map(|(k, n)| format!("{k} {n}")).collect();
        if kinds.is_empty() {
            writeln!(out, "findings: 0")?;
        } else {
            writeln!(out, "findings: {} ({})", report.findings.len(), kinds.join(", "))?;
        }
    }
    Ok(u8::from(!report.findings.is_empty()))
}

/// One finding as a text line: the kind, where, then the detail.
fn line(f: &Finding) -> String {
    let place = match (&f.table_id, &f.round_id, &f.replica, &f.run, f.seq) {
        (Some(t), Some(r), _, _, _) => match &f.commitment {
            Some(c) => format!("table {t} round {r} commitment {c}"),
            None => format!("table {t} round {r}"),
        },
        (_, _, Some(replica), Some(run), Some(seq)) => format!("replica {replica} run {run} seq {seq}"),
        _ => String::new(),
    };
    format!("{:<17} {place}: {}", f.kind.name(), f.detail)
}

fn round_report(out: &mut impl Write, report: Report, round_id: &str, json: bool) -> io::Result<u8> {
    let Some(view) = round::view(round_id, report.round_records, &report.findings) else {
        eprintln!("audit-log: round {round_id:?}: no record of this round id in the {} record(s) read", report.records);
        return Ok(1);
    };
    if json {
        serde_json::to_writer(&mut *out, &view)?;
        writeln!(out)?;
    } else {
        let m = &view.money;
        let state = match view.state {
            round::State::Settled => "settled",
            round::State::Open => "open: dealt, never settled (settle its newest token)",
            round::State::Abandoned => "abandoned: committed, never dealt (nothing staked at the engine)",
        };
        writeln!(out, "round {}: {state}", view.round_id)?;
        let currency = match (&m.currency, m.exponent) {
            (Some(c), Some(e)) => format!("{c} (exponent {e})"),
            _ => "?".into(),
        };
        let sandbox = if m.sandbox { ", a sandbox round (requested cards, never a fair round)" } else { "" };
        writeln!(out, "table {} currency {currency}{sandbox}", m.table_id.as_deref().unwrap_or("?"))?;
        let bets: Vec<String> = m.bets.iter().map(u64::to_string).collect();
        let returned = m.returned.map_or_else(|| "-".to_owned(), |r| r.to_string());
        writeln!(out, "money: bets {} raised {} staked {} returned {returned}", bets.join(","), m.raised, m.staked)?;
        writeln!(out, "records: {}", view.records.len())?;
        for r in &view.records {
            writeln!(out, "  {}", round::record_line(r))?;
        }
        for f in &view.findings {
            writeln!(out, "{}", line(f))?;
        }
        writeln!(out, "findings: {}", view.findings.len())?;
    }
    Ok(u8::from(!view.findings.is_empty()))
}

fn reveal_report(
    out: &mut impl Write,
    report: &Report,
    reveal: &AnyReveal,
    failures: &[String],
    receipts: &[(String, bool, bool)],
    json: bool,
) -> io::Result<u8> {
    let (commitment, transcript, table_id, round_id) = match reveal {
        AnyReveal::V1(v) => (v.commitment.as_str(), None, None, v.round_id.as_deref()),
        AnyReveal::V2(v) => {
            (v.commitment.as_str(), Some(v.transcript.as_str()), Some(v.table_id.as_str()), Some(v.round_id.as_str()))
        }
    };
    let settled: std::collections::BTreeSet<&str> =
        report.kept.iter().filter(|f| f.step == Step::Settled).map(|f| f.transcript.as_str()).collect();
    let logged: std::collections::BTreeSet<&str> = report.kept.iter().map(|f| f.transcript.as_str()).collect();
    let findings: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| {
            f.commitment.as_deref() == Some(commitment)
                || (f.kind == Kind::RoundRedealt
                    && f.round_id.as_deref() == round_id
                    && (table_id.is_none() || f.table_id.as_deref() == table_id))
        })
        .collect();
    let transcript_settled = transcript.is_some_and(|t| settled.contains(t));
    let ok =
        failures.is_empty() && transcript_settled && findings.is_empty() && receipts.iter().all(|&(_, s, d)| s && d);
    if json {
        let value = serde_json::json!({
            "commitment": commitment,
            "transcript": transcript,
            "records_of_commitment": report.kept.len(),
            "transcript_logged": transcript.is_some_and(|t| logged.contains(t)),
            "reveal_verified": failures.is_empty(),
            "reveal_failures": failures,
            "transcript_settled": transcript_settled,
            "settled_transcripts": settled,
            "findings": findings,
            "receipts": receipts
                .iter()
                .map(|(name, signed, descends)| serde_json::json!({"receipt": name, "signed": signed, "descends": descends}))
                .collect::<Vec<_>>(),
            "consistent": ok,
        });
        serde_json::to_writer(&mut *out, &value)?;
        writeln!(out)?;
    } else {
        writeln!(out, "reveal: commitment {commitment}: {} logged round record(s)", report.kept.len())?;
        if failures.is_empty() {
            writeln!(out, "reveal: its own checks hold (commitment, cards, payouts, transcript, rules)")?;
        }
        for why in failures {
            writeln!(out, "reveal: NOT VERIFIED: {why}")?;
        }
        match transcript {
            None => writeln!(out, "reveal: a version-1 reveal carries no transcript: it cannot be matched")?,
            Some(t) if transcript_settled => writeln!(out, "reveal: transcript {t} was settled as logged")?,
            Some(t) if logged.contains(t) => writeln!(out, "reveal: transcript {t} was logged but never settled")?,
            Some(t) => writeln!(out, "reveal: transcript {t} appears nowhere in the log: not the round played")?,
        }
        for t in settled.iter().filter(|t| Some(**t) != transcript) {
            writeln!(out, "reveal: the log also settles transcript {t}")?;
        }
        for f in &findings {
            writeln!(out, "{}", line(f))?;
        }
        for (name, signed, descends) in receipts {
            let why = match (signed, descends) {
                (false, _) => "not signed by the key given",
                (true, false) => "signed, and the reveal does not descend from it: not the round played",
                (true, true) => "signed, and the reveal descends from it",
            };
            writeln!(out, "reveal: receipt {name}: {why}")?;
        }
        writeln!(out, "reveal: {}", if ok { "consistent with the log" } else { "NOT consistent with the log" })?;
    }
    Ok(u8::from(!ok))
}
