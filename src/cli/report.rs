//! `reddog report [--json | --csv] [--tables FILE] FILE…`: the money of the settled rounds in
//! the audit trails ([`reddog::audit::report`]) per table, rules digest, currency, UTC day and
//! sandbox flag, from the rules the trails describe (`--tables`: a cross-check);
//! `--reconcile LEDGER.csv` compares them with a platform's ledger instead, seat by seat.
//! Exit status: 0 a report (or a ledger without difference); 1 a ledger with differences;
//! 2 an input could not be read, a record's table is not configured as it was played, or the
//! input holds no audit record at all.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use reddog::audit;
use reddog::audit::report::{self, Configured, Difference, Report, Row, Sums, TableRules, opt_decimal};
use reddog::service::Tables;

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Audit record files of the engine's replicas (`-` reads stdin), in any order; other
    /// lines are skipped.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print one JSON object (rows, totals; with --reconcile, the differences).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print the rows as CSV with a header line.
    #[arg(long, conflicts_with = "reconcile")]
    pub csv: bool,
    /// Cross-check: the table configuration (as `reddog serve --table-config`) every record
    /// must have been played under; refused (exit 2) when a record's rules digest differs.
    /// Without it, the rules come from the trail alone.
    #[arg(long, value_name = "FILE")]
    pub tables: Option<PathBuf>,
    /// Compare the settled rounds with this ledger CSV (`round_id,seat,staked,credited`);
    /// exit 1 when anything differs.
    #[arg(long, value_name = "LEDGER.csv")]
    pub reconcile: Option<PathBuf>,
    #[command(flatten)]
    pub partitioning: super::audit_log::PartitionArgs,
}

/// The configured tables' rules and digests.
fn configured(p: &PathBuf) -> Result<Configured, String> {
    let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
    let tables = Tables::from_json(&text).map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(tables
        .iter()
        .map(|t| {
            let rules = TableRules {
                decks: t.table.decks(),
                paytable: t.table.paytable().clone(),
                rules_digest: t.digest().to_hex(),
            };
            (t.id.clone(), rules)
        })
        .collect())
}

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let fail = |msg: String| {
        eprintln!("report: {msg}");
        Ok(ExitCode::from(2))
    };
    let tables = match args.tables.as_ref().map(configured).transpose() {
        Ok(t) => t,
        Err(e) => return fail(format!("cannot read the table configuration {e}")),
    };
    let inputs = match audit::open_files(&args.files) {
        Ok(i) => i,
        Err(e) => return fail(format!("cannot read {e}")),
    };
    let ledger = match &args.reconcile {
        None => None,
        Some(p) => match audit::open_files(std::slice::from_ref(p)) {
            Ok(mut l) => l.pop(),
            Err(e) => return fail(format!("cannot read the ledger {e}")),
        },
    };
    let opts = report::Options { mode: args.partitioning.mode(), temp_dir: args.partitioning.temp_dir.clone() };
    let rep = match report::report(inputs, ledger, tables.as_ref(), &opts) {
        Ok(r) => r,
        Err(e) => return fail(e.to_string()),
    };
    if rep.records == 0 {
        return fail(format!(
            "no reddog-audit-v1 record in the input ({} line(s) read, {} malformed): nothing to report",
            rep.lines, rep.malformed_records
        ));
    }
    if rep.malformed_records > 0 {
        eprintln!(
            "report: {} malformed audit record(s) left out (`reddog audit-log` on the same files names them)",
            rep.malformed_records
        );
    }
    let mut out = io::stdout().lock();
    let code = match &rep.differences {
        Some(diffs) => {
            reconciliation(&mut out, &rep, diffs, args.json)?;
            u8::from(!diffs.is_empty())
        }
        None if args.json => {
            write_json(&mut out, &rep)?;
            0
        }
        None if args.csv => {
            csv(&mut out, &rep.rows)?;
            0
        }
        None => {
            text(&mut out, &rep)?;
            0
        }
    };
    out.flush()?;
    Ok(ExitCode::from(code))
}

/// The columns of a row, in the order of the CSV header.
const COLUMNS: [&str; 17] = [
    "table_id",
    "currency",
    "day",
    "sandbox",
    "rounds",
    "seats",
    "staked",
    "returned",
    "ggr",
    "observed_return",
    "observed_return_ci95_low",
    "observed_return_ci95_high",
    "expected_return",
    "expected_returned",
    "deviation_se",
    "open_rounds",
    "rules_digest",
];

/// Decimals of the return ratios and of the expected amount (in minor units).
const RATIO_PLACES: u32 = 6;
const AMOUNT_PLACES: u32 = 2;

/// An exact integer in JSON, every digit kept whatever its size. serde_json writes `u128` and
/// `i128` only up to 64 bits ("number out of range" beyond); a larger sum goes out as a raw
/// JSON number (JSON sets no size limit; Python's `json` and serde's `u128` read it exactly).
struct JsonInt(i128);

impl serde::Serialize for JsonInt {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let Ok(n) = u64::try_from(self.0) {
            s.serialize_u64(n)
        } else if let Ok(n) = i64::try_from(self.0) {
            s.serialize_i64(n)
        } else {
            let raw =
                serde_json::value::RawValue::from_string(self.0.to_string()).map_err(serde::ser::Error::custom)?;
            raw.serialize(s)
        }
    }
}

/// A sum of minor units (`u128`) as an exact JSON integer; sums past `i128` cannot occur (the
/// report's additions are checked and stop there).
fn amount(v: u128) -> JsonInt {
    JsonInt(i128::try_from(v).unwrap_or(i128::MAX))
}

#[derive(serde::Serialize)]
struct RowJson<'a> {
    table_id: &'a str,
    rules_digest: &'a str,
    currency: &'a str,
    day: &'a str,
    sandbox: bool,
    rounds: u64,
    seats: u64,
    staked: JsonInt,
    returned: JsonInt,
    ggr: Option<JsonInt>,
    observed_return: Option<String>,
    observed_return_ci95: Option<[f64; 2]>,
    expected_return: Option<String>,
    expected_returned: Option<String>,
    deviation_se: Option<f64>,
    open_rounds: u64,
}

fn row_json(r: &Row) -> RowJson<'_> {
    let s = &r.sums;
    RowJson {
        table_id: &r.key.table_id,
        rules_digest: &r.key.rules_digest,
        currency: &r.key.currency,
        day: &r.key.day,
        sandbox: r.key.sandbox,
        rounds: s.rounds,
        seats: s.seats,
        staked: amount(s.staked),
        returned: amount(s.returned),
        ggr: s.ggr().map(JsonInt),
        observed_return: opt_decimal(s.observed_return(), RATIO_PLACES),
        observed_return_ci95: s.observed_return_ci95().map(|(lo, hi)| [lo, hi]),
        expected_return: opt_decimal(s.expected_return(), RATIO_PLACES),
        expected_returned: opt_decimal(s.expected_returned(), AMOUNT_PLACES),
        deviation_se: s.deviation_se(),
        open_rounds: s.open_rounds,
    }
}

/// Totals per currency and sandbox flag: sandbox rounds are never added to real ones, and
/// amounts of different currencies never to each other.
fn totals(rows: &[Row]) -> io::Result<BTreeMap<(bool, String), Sums>> {
    let mut t: BTreeMap<(bool, String), Sums> = BTreeMap::new();
    let over = || io::Error::other("overflow: a total");
    for r in rows {
        let e = t.entry((r.key.sandbox, r.key.currency.clone())).or_default();
        // Only the money and counts: the expectation's denominator differs between tables.
        e.rounds = e.rounds.checked_add(r.sums.rounds).ok_or_else(over)?;
        e.seats = e.seats.checked_add(r.sums.seats).ok_or_else(over)?;
        e.staked = e.staked.checked_add(r.sums.staked).ok_or_else(over)?;
        e.returned = e.returned.checked_add(r.sums.returned).ok_or_else(over)?;
        e.open_rounds = e.open_rounds.checked_add(r.sums.open_rounds).ok_or_else(over)?;
    }
    Ok(t)
}

#[derive(serde::Serialize)]
struct TotalJson<'a> {
    currency: &'a str,
    sandbox: bool,
    rounds: u64,
    seats: u64,
    staked: JsonInt,
    returned: JsonInt,
    ggr: Option<JsonInt>,
    open_rounds: u64,
}

#[derive(serde::Serialize)]
struct ReportJson<'a> {
    files: usize,
    lines: u64,
    records: u64,
    malformed_records: u64,
    settled_records: u64,
    repeated_settlements: u64,
    partitions: usize,
    rows: Vec<RowJson<'a>>,
    totals: Vec<TotalJson<'a>>,
}

/// Writes the report as one JSON object and a newline.
fn write_json(out: &mut impl Write, rep: &Report) -> io::Result<()> {
    let totals = totals(&rep.rows)?;
    let report = ReportJson {
        files: rep.files,
        lines: rep.lines,
        records: rep.records,
        malformed_records: rep.malformed_records,
        settled_records: rep.settled_records,
        repeated_settlements: rep.repeated_settlements,
        partitions: rep.partitions,
        rows: rep.rows.iter().map(row_json).collect(),
        totals: totals
            .iter()
            .map(|((sandbox, currency), s)| TotalJson {
                currency,
                sandbox: *sandbox,
                rounds: s.rounds,
                seats: s.seats,
                staked: amount(s.staked),
                returned: amount(s.returned),
                ggr: s.ggr().map(JsonInt),
                open_rounds: s.open_rounds,
            })
            .collect(),
    };
    serde_json::to_writer(&mut *out, &report)?;
    writeln!(out)
}

/// One row's cells, in [`COLUMNS`] order, as text.
fn cells(r: &Row) -> Vec<String> {
    let s = &r.sums;
    let ci = s.observed_return_ci95();
    let float = |v: Option<f64>| v.filter(|v| v.is_finite()).map(|v| format!("{v:.6}")).unwrap_or_default();
    vec![
        r.key.table_id.clone(),
        r.key.currency.clone(),
        r.key.day.clone(),
        r.key.sandbox.to_string(),
        s.rounds.to_string(),
        s.seats.to_string(),
        s.staked.to_string(),
        s.returned.to_string(),
        s.ggr().map(|g| g.to_string()).unwrap_or_default(),
        opt_decimal(s.observed_return(), RATIO_PLACES).unwrap_or_default(),
        float(ci.map(|c| c.0)),
        float(ci.map(|c| c.1)),
        opt_decimal(s.expected_return(), RATIO_PLACES).unwrap_or_default(),
        opt_decimal(s.expected_returned(), AMOUNT_PLACES).unwrap_or_default(),
        float(s.deviation_se()),
        s.open_rounds.to_string(),
        r.key.rules_digest.clone(),
    ]
}

/// CSV (the `csv` crate: a field is quoted when it needs it): a header, then one line per row.
fn csv(out: &mut impl Write, rows: &[Row]) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(COLUMNS)?;
    for r in rows {
        w.write_record(cells(r))?;
    }
    w.flush()
}

fn text(out: &mut impl Write, rep: &Report) -> io::Result<()> {
    writeln!(
        out,
        "report: {} audit record(s) from {} file(s); {} round_settled record(s), {} of them repeats of a settlement already counted (retried Settle)",
        rep.records, rep.files, rep.settled_records, rep.repeated_settlements
    )?;
    writeln!(
        out,
        "{:<16} {:<4} {:<10} {:<7} {:>8} {:>8} {:>14} {:>14} {:>14} {:>9} {:>19} {:>9} {:>7} {:>5} {:<12}",
        "table",
        "cur",
        "day",
        "kind",
        "rounds",
        "seats",
        "staked",
        "returned",
        "ggr",
        "return",
        "95% interval",
        "expected",
        "dev/se",
        "open",
        "rules"
    )?;
    for r in &rep.rows {
        let c = cells(r);
        let interval = if c[10].is_empty() { String::new() } else { format!("{}..{}", &c[10], &c[11]) };
        let dev = r.sums.deviation_se().map(|d| format!("{d:.2}")).unwrap_or_default();
        writeln!(
            out,
            "{:<16} {:<4} {:<10} {:<7} {:>8} {:>8} {:>14} {:>14} {:>14} {:>9} {:>19} {:>9} {:>7} {:>5} {:.12}",
            c[0],
            c[1],
            c[2],
            if r.key.sandbox { "sandbox" } else { "real" },
            c[4],
            c[5],
            c[6],
            c[7],
            c[8],
            c[9],
            interval,
            c[12],
            dev,
            c[15],
            c[16]
        )?;
    }
    for ((sandbox, currency), s) in totals(&rep.rows)? {
        writeln!(
            out,
            "total {} {currency}: {} round(s), {} seat(s), staked {}, returned {}, GGR {}, {} open round(s)",
            if sandbox { "sandbox" } else { "real" },
            s.rounds,
            s.seats,
            s.staked,
            s.returned,
            s.ggr().map(|g| g.to_string()).unwrap_or_default(),
            s.open_rounds
        )?;
    }
    writeln!(
        out,
        "amounts in minor units; return = returned / staked (exact), its 95% interval: ratio estimator, normal approximation; \
         expected: the exact expected return of these deals and decisions; dev/se: (returned - expected) in standard errors"
    )?;
    Ok(())
}

fn reconciliation(out: &mut impl Write, rep: &Report, diffs: &[Difference], json: bool) -> io::Result<()> {
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for d in diffs {
        *by_kind.entry(d.kind).or_insert(0) += 1;
    }
    if json {
        let v = serde_json::json!({
            "ledger_rows": rep.ledger_rows,
            "rounds_compared": rep.rounds_compared,
            "differences": diffs,
            "summary": { "differences": diffs.len(), "by_kind": by_kind },
        });
        serde_json::to_writer(&mut *out, &v)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "reconcile: {} ledger row(s), {} round(s) compared ({} round_settled record(s), {} repeated)",
        rep.ledger_rows, rep.rounds_compared, rep.settled_records, rep.repeated_settlements
    )?;
    let amounts = |a: Option<report::LedgerAmounts>| match a {
        Some(a) => format!("staked {} credited {}", a.staked, a.credited),
        None => "-".to_string(),
    };
    for d in diffs {
        let seat = d.seat.map(|s| format!(" seat {s}")).unwrap_or_default();
        let table = match (&d.table_id, &d.currency) {
            (Some(t), Some(c)) => format!(" (table {t}, {c})"),
            _ => String::new(),
        };
        writeln!(
            out,
            "{:<29} round {:?}{seat}{table}: audit {}; ledger {}",
            d.kind,
            d.round_id,
            amounts(d.audit),
            amounts(d.ledger)
        )?;
    }
    let kinds: Vec<String> = by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
    if kinds.is_empty() {
        writeln!(out, "differences: 0")?;
    } else {
        writeln!(out, "differences: {} ({})", diffs.len(), kinds.join(", "))?;
    }
    Ok(())
}
