//! `reddog audit-log FILE…`: reads the JSON logs (`--log-format json`) of any number of
//! replicas, in any order, and reports commitment reuse, forks, peek-then-play and rounds
//! re-dealt ([`reddog::audit`]). Exit status 0: nothing found; 1: something found; 2: a file could
//! not be read, or holds no JSON log line at all.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use reddog::audit::{self, Skip};

#[derive(Debug, clap::Args)]
pub struct AuditLogArgs {
    /// JSON log files of the engine's replicas (`-` reads stdin), in any order.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

pub fn run(args: AuditLogArgs) -> anyhow::Result<ExitCode> {
    let mut events = Vec::new();
    let (mut not_json, mut incomplete) = (0usize, 0usize);
    for path in &args.files {
        let text =
            if path.as_os_str() == "-" { io::read_to_string(io::stdin()) } else { std::fs::read_to_string(path) };
        let text = match text {
            Ok(t) => t,
            Err(e) => {
                eprintln!("audit-log: cannot read {}: {e}", path.display());
                return Ok(ExitCode::from(2));
            }
        };
        let mut json_lines = 0usize;
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            match audit::parse_line(line, format!("{}:{}", path.display(), i + 1)) {
                Ok(e) => {
                    json_lines += 1;
                    events.push(e);
                }
                Err(Skip::NotJson) => not_json += 1,
                Err(Skip::Other) => json_lines += 1,
                Err(Skip::Incomplete(field)) => {
                    json_lines += 1;
                    incomplete += 1;
                    if incomplete <= 3 {
                        eprintln!("audit-log: {}:{}: an audit event without `{field}`: skipped", path.display(), i + 1);
                    }
                }
            }
        }
        if json_lines == 0 && !text.trim().is_empty() {
            eprintln!("audit-log: {} holds no JSON log line (run the engine with --log-format json)", path.display());
            return Ok(ExitCode::from(2));
        }
    }
    let count = events.len();
    let findings = audit::analyse(events);
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "audit-log: {count} round events from {} file(s); {not_json} non-JSON line(s) and {incomplete} incomplete audit event(s) skipped",
        args.files.len()
    )?;
    for f in &findings {
        writeln!(out, "{f}")?;
    }
    writeln!(out, "findings: {}", findings.len())?;
    Ok(ExitCode::from(u8::from(!findings.is_empty())))
}
