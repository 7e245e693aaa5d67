//! Analysis of the engine's audit trail (`reddog audit-log`; `docs/AUDIT.md`, "Analysis").
//!
//! The input is any number of files of `reddog-audit-v1` records ([`record`]) from any
//! number of replicas, in any order; lines that are not audit records (diagnostics, other
//! JSON) are skipped and counted. The checks ([`check`]) verify each replica's chain (gaps,
//! edits, reordering) and each round's transcript chain (commitment reuse, forks, peek then
//! play, rounds re-dealt, open rounds), ordering a round's records by their parent links and
//! never by clocks across replicas.
//!
//! Memory stays bounded whatever the input size: the input is read once, each record reduced
//! to compact facts, and the facts written to temporary partition files by their check's key
//! (commitment, table and round id, chain block); then each partition is read back and
//! checked alone. The partition count follows the input size, so each partition holds about
//! [`PARTITION_BYTES`] of input. Small inputs are checked in memory, with the same code and
//! the same findings.
//!
//! [`report`] sums the settled rounds' money per table, currency and day, and reconciles
//! them against a platform's ledger.
//!
//! The generator of valid trails without an engine is a developer tool (`tools/src/generate.rs`,
//! crate `reddog-tools`), not part of this library.

pub mod check;
pub mod record;
pub mod report;
pub mod round;
mod spill;
mod time;

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::PathBuf;

pub use check::{Finding, Kind, RoundFact, Step};
pub use time::{format_timestamp, parse_duration, parse_timestamp};

use check::{ChainFact, DealFact, Fact, RoundOptions, TailClaim};
use record::{SCHEMA, Scan, line_hash};
use spill::Spill;

/// Input bytes per partition: the unit of memory of the partitioned checks. Small partitions
/// keep the peak memory nearly independent of the input size (a partition's facts are a few
/// tens of MB once parsed, freed before the next one is read).
pub const PARTITION_BYTES: u64 = 8 << 20;
/// The most partitions (open temporary files) one run uses: well under the common limit of
/// 1024 open files. A larger input has larger partitions, each split again when read
/// (over 8 MiB of facts).
pub const MAX_PARTITIONS: usize = 512;
/// The partitions used when the input size is unknown (standard input).
pub const UNKNOWN_SIZE_PARTITIONS: usize = 256;

/// How the facts are held between reading and checking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// In memory when the input fits one partition, else partitioned by its size.
    #[default]
    Auto,
    /// All facts in memory: one partition.
    InMemory,
    /// This many partition files.
    Partitions(usize),
}

/// What to check and how.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub mode: Mode,
    /// Also list rounds started and never settled.
    pub open_rounds: bool,
    /// Only open rounds started longer ago than this before the newest record's `at`.
    pub older_than: Option<std::time::Duration>,
    /// Where the partition files go (default: the system's temporary directory).
    pub temp_dir: Option<PathBuf>,
    /// Keep the round records of this commitment (for `--reveal`).
    pub keep_commitment: Option<String>,
    /// Keep every record of this round id, whole (for `--round`).
    pub keep_round: Option<String>,
    /// Check every checkpoint's Ed25519 signature with this public key (the engine's signing
    /// key): a checkpoint without a valid signature is a `checkpoint_signature` finding.
    pub checkpoint_key: Option<[u8; 32]>,
}

/// One input: a name for messages and its lines.
pub struct Input {
    pub name: String,
    pub reader: Box<dyn BufRead>,
    /// Its size in bytes, when known.
    pub len: Option<u64>,
}

/// What the analysis read and found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub files: usize,
    /// Non-empty lines read.
    pub lines: u64,
    /// Audit records used.
    pub records: u64,
    /// Lines that are not audit records.
    pub skipped_lines: u64,
    /// Lines naming the audit schema that are not valid records, or round records without
    /// the fields the checks need.
    pub malformed_records: u64,
    /// Partitions checked (1: in memory).
    pub partitions: usize,
    /// Every finding, sorted.
    pub findings: Vec<Finding>,
    /// The round records of [`Options::keep_commitment`].
    pub kept: Vec<RoundFact>,
    /// The records of [`Options::keep_round`], in the order read.
    pub round_records: Vec<round::RoundRecord>,
    /// Checkpoint records read.
    pub checkpoints: u64,
    /// Checkpoints whose signature verified with [`Options::checkpoint_key`] (0 without one).
    pub checkpoints_verified: u64,
}

/// Whether a checkpoint record carries a valid Ed25519 signature by `key` over its chain head
/// (`docs/AUDIT.md`: the message of [`crate::fairness::receipt::checkpoint_message`]).
fn checkpoint_signed(key: &[u8; 32], replica: &str, run: &str, seq: u64, scan: &Scan<'_>) -> Result<(), String> {
    let mut head = [0u8; 32];
    if scan.head.as_deref().is_none_or(|h| hex::decode_to_slice(h, &mut head).is_err()) {
        return Err("a checkpoint without a 64-hex head".into());
    }
    let Some(text) = scan.signature.as_deref() else {
        return Err("an unsigned checkpoint (the public key given expects signed ones)".into());
    };
    let mut signature = [0u8; 64];
    if hex::decode_to_slice(text, &mut signature).is_err() {
        return Err("a checkpoint signature that is not 128 hex digits".into());
    }
    let message = crate::fairness::receipt::checkpoint_message(replica, run, seq, &head);
    let verifies = crate::fairness::receipt::verify_message(key, &signature, &message);
    if verifies { Ok(()) } else { Err("a checkpoint signature that does not verify with the public key given".into()) }
}

/// Whether an `audit_stopped` record carries a valid Ed25519 signature by `key` over
/// [`record::stopped_message`].
fn stop_signed(key: &[u8; 32], replica: &str, run: &str, seq: u64, scan: &Scan<'_>) -> Result<(), String> {
    let mut head = [0u8; 32];
    if scan.head.as_deref().is_none_or(|h| hex::decode_to_slice(h, &mut head).is_err()) {
        return Err("an audit_stopped without a 64-hex head (the public key given expects a signed one)".into());
    }
    let Some(text) = scan.signature.as_deref() else {
        return Err("an unsigned audit_stopped (the public key given expects a signed one)".into());
    };
    let mut signature = [0u8; 64];
    if hex::decode_to_slice(text, &mut signature).is_err() {
        return Err("an audit_stopped signature that is not 128 hex digits".into());
    }
    let message = record::stopped_message(replica, run, seq, &head);
    if crate::fairness::receipt::verify_message(key, &signature, &message) {
        Ok(())
    } else {
        Err("an audit_stopped signature that does not verify with the public key given".into())
    }
}

/// What a run's own records say about the trail: `audit_resumed` (an outage, a finding) and
/// `audit_started.previous` (the run before it, returned to check against the input).
fn run_events(
    scan: &Scan<'_>,
    (replica, run, seq, event): (&str, &str, u64, &str),
    place: &str,
    report: &mut Report,
) -> Option<TailClaim> {
    match event {
        "audit_resumed" => {
            report.findings.push(Finding::chain(
                Kind::SinkOutage,
                replica,
                run,
                seq,
                format!(
                    "{place}: the trail's output failed ({}) from {} to {}; {} call(s) were refused \
                     AUDIT_UNAVAILABLE meanwhile, none answered without its record",
                    scan.cause.as_deref().unwrap_or("?"),
                    scan.failed_at.as_deref().unwrap_or("?"),
                    scan.at.as_deref().unwrap_or("?"),
                    scan.refused_calls.map_or_else(|| "?".to_string(), |n| n.to_string()),
                ),
            ));
            None
        }
        "audit_started" => scan.previous.as_ref().map(|p| TailClaim {
            replica: p.replica.to_string(),
            run: p.run.to_string(),
            seq: p.seq,
            event: p.event.to_string(),
            hash: p.hash.to_string(),
            by_run: run.to_string(),
            at: place.to_string(),
        }),
        _ => None,
    }
}

/// The partition count for `mode` and an input of `bytes` (when known).
pub fn partition_count(mode: Mode, bytes: Option<u64>) -> usize {
    match mode {
        Mode::InMemory => 1,
        Mode::Partitions(n) => n.clamp(1, MAX_PARTITIONS),
        Mode::Auto => match bytes {
            // At most MAX_PARTITIONS: the cast cannot truncate.
            Some(b) => b.div_ceil(PARTITION_BYTES).clamp(1, MAX_PARTITIONS as u64) as usize,
            None => UNKNOWN_SIZE_PARTITIONS,
        },
    }
}

/// Reads every input once and checks it.
pub fn analyse(inputs: Vec<Input>, opts: &Options) -> io::Result<Report> {
    let total = inputs.iter().try_fold(0u64, |sum, i| i.len.map(|l| sum.saturating_add(l)));
    let mut sink = Spill::new(partition_count(opts.mode, total), opts.temp_dir.as_deref(), "reddog-audit-")?;
    let mut report = Report { files: inputs.len(), ..Report::default() };
    let mut newest: Option<(i64, u32)> = None;
    let mut line = Vec::with_capacity(4096);
    // Each run's end as the next run found it, and each run's format revision (one entry a
    // run: small whatever the input).
    let mut claims: Vec<TailClaim> = Vec::new();
    let mut revisions: HashMap<(String, String), u32> = HashMap::new();
    for mut input in inputs {
        // The seq of the last record of each chain in this file (the order check).
        let mut last_seq: HashMap<(String, String), u64> = HashMap::new();
        let mut line_no = 0u64;
        while next_line(&mut input.reader, &mut line, &mut line_no)? {
            report.lines += 1;
            let scan = match serde_json::from_slice::<Scan<'_>>(&line) {
                Ok(s) if s.schema.as_deref() == Some(SCHEMA) => s,
                Ok(_) => {
                    report.skipped_lines += 1;
                    continue;
                }
                Err(_) => {
                    if line.windows(SCHEMA.len()).any(|w| w == SCHEMA.as_bytes()) {
                        report.malformed_records += 1;
                        report.findings.push(Finding::line(
                            Kind::TornRecord,
                            format!(
                                "{}:{line_no}: {} bytes naming the audit schema are not a whole record (cut off \
                                 mid-line, or glued to the next)",
                                input.name,
                                line.len()
                            ),
                        ));
                    } else {
                        report.skipped_lines += 1;
                    }
                    continue;
                }
            };
            let (Some(replica), Some(run), Some(seq), Some(prev), Some(at), Some(event)) =
                (&scan.replica, &scan.run, scan.seq, &scan.prev, &scan.at, &scan.event)
            else {
                report.malformed_records += 1;
                continue;
            };
            report.records += 1;
            if opts.keep_round.is_some() && opts.keep_round.as_deref() == scan.round_id.as_deref() {
                report.round_records.push(round::RoundRecord {
                    source: format!("{}:{line_no}", input.name),
                    record: serde_json::from_slice(&line).unwrap_or_default(),
                });
            }
            if let Some(t) = parse_timestamp(at) {
                newest = newest.max(Some(t));
            }
            let key = (replica.to_string(), run.to_string());
            let before = last_seq.get(&key).copied().filter(|&b| seq < b);
            if let Some(before) = before {
                report.findings.push(Finding::chain(
                    Kind::ChainOrder,
                    replica,
                    run,
                    seq,
                    format!("{}:{line_no}: seq {seq} comes after seq {before} in this file", input.name),
                ));
            }
            last_seq.insert(key, seq);
            if matches!(event.as_ref(), "audit_resumed" | "audit_started") {
                let place = format!("{}:{line_no}", input.name);
                claims.extend(run_events(&scan, (replica, run, seq, event), &place, &mut report));
            }
            if event == "audit_started" {
                revisions.insert((replica.to_string(), run.to_string()), scan.revision.unwrap_or(1));
            }
            if event == "audit_stopped"
                && let Some(key) = &opts.checkpoint_key
                && (scan.signature.is_some()
                    || revisions.get(&(replica.to_string(), run.to_string())).is_some_and(|&r| r >= 2))
                && let Err(why) = stop_signed(key, replica, run, seq, &scan)
            {
                report.findings.push(Finding::chain(
                    Kind::CheckpointSignature,
                    replica,
                    run,
                    seq,
                    format!("{}:{line_no}: {why}", input.name),
                ));
            }
            if event == "checkpoint" {
                report.checkpoints += 1;
                if let Some(key) = &opts.checkpoint_key {
                    match checkpoint_signed(key, replica, run, seq, &scan) {
                        Ok(()) => report.checkpoints_verified += 1,
                        Err(why) => report.findings.push(Finding::chain(
                            Kind::CheckpointSignature,
                            replica,
                            run,
                            seq,
                            format!("{}:{line_no}: {why}", input.name),
                        )),
                    }
                }
            }
            sink.push(Fact::Chain(ChainFact {
                replica: replica.to_string(),
                run: run.to_string(),
                seq,
                prev: prev.to_string(),
                hash: line_hash(&line),
                head_ok: match event.as_ref() {
                    "checkpoint" => scan.head.as_deref() == Some(prev.as_ref()),
                    "audit_stopped" => scan.head.as_deref().is_none_or(|h| h == prev.as_ref()),
                    _ => true,
                },
            }))?;
            let step = match event.as_ref() {
                "round_started" => Step::Started,
                "seats_decided" => Step::Decided,
                "round_settled" => Step::Settled,
                _ => continue,
            };
            let fields = (&scan.commitment, &scan.table_id, &scan.round_id, &scan.transcript);
            let (Some(commitment), Some(table_id), Some(round_id), Some(transcript)) = fields else {
                report.malformed_records += 1;
                continue;
            };
            if step == Step::Decided && scan.parent_transcript.is_none() {
                report.malformed_records += 1;
                continue;
            }
            let fact = RoundFact {
                step,
                commitment: commitment.to_string(),
                table_id: table_id.to_string(),
                round_id: round_id.to_string(),
                transcript: transcript.to_string(),
                parent: scan.parent_transcript.as_ref().map(Cow::to_string),
                at: at.to_string(),
                replica: replica.to_string(),
            };
            if opts.keep_commitment.as_deref() == Some(commitment.as_ref()) {
                report.kept.push(fact.clone());
            }
            if step == Step::Started {
                sink.push(Fact::Deal(DealFact {
                    table_id: fact.table_id.clone(),
                    round_id: fact.round_id.clone(),
                    commitment: fact.commitment.clone(),
                }))?;
            }
            sink.push(Fact::Round(fact))?;
        }
    }
    let open_before = opts.older_than.and_then(|d| {
        let (s, n) = newest?;
        let d_secs = i64::try_from(d.as_secs()).ok()?;
        let (mut s, mut n) = (s.checked_sub(d_secs)?, i64::from(n) - i64::from(d.subsec_nanos()));
        if n < 0 {
            n += 1_000_000_000;
            s -= 1;
        }
        // 0 ≤ n < 10⁹ here: the cast is exact.
        Some((s, n as u32))
    });
    let round_opts = RoundOptions { open_rounds: opts.open_rounds, open_before };
    let (mut findings, mut blocks) = (Vec::new(), Vec::new());
    let partitions = sink.for_each_partition(|facts| {
        let (f, b) = check::check_partition(facts, round_opts);
        findings.extend(f);
        blocks.extend(b);
        Ok::<(), io::Error>(())
    })?;
    findings.extend(check::check_tails(&blocks, &claims));
    findings.extend(check::join_blocks(blocks));
    report.findings.extend(findings);
    report.findings.sort();
    report.partitions = partitions;
    Ok(report)
}

/// Reads the next line of `reader` that is not blank into `line` (without its line feed),
/// counting every line read, blank or not, in `line_no`; false at the end of the input.
pub(crate) fn next_line(reader: &mut dyn BufRead, line: &mut Vec<u8>, line_no: &mut u64) -> io::Result<bool> {
    loop {
        line.clear();
        if reader.read_until(b'\n', line)? == 0 {
            return Ok(false);
        }
        *line_no += 1;
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if !line.iter().all(u8::is_ascii_whitespace) {
            return Ok(true);
        }
    }
}

/// Reads `files` (`-` = standard input) as [`Input`]s.
pub fn open_files(files: &[PathBuf]) -> io::Result<Vec<Input>> {
    files
        .iter()
        .map(|path| {
            if path.as_os_str() == "-" {
                return Ok(Input { name: "-".into(), reader: Box::new(BufReader::new(io::stdin())), len: None });
            }
            let file = File::open(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            let len = file.metadata().ok().map(|m| m.len());
            Ok(Input {
                name: path.display().to_string(),
                reader: Box::new(BufReader::with_capacity(256 << 10, file)),
                len,
            })
        })
        .collect()
}
