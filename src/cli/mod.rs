//! Command-line front end: parses arguments and calls into the library. Each subcommand
//! lives in its own module with its own `Args`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod audit_log;
mod certify;
mod fairness;
mod keygen;
mod odds;
mod report;
mod serve;
mod simulate;

/// Red Dog game engine.
#[derive(Debug, Parser)]
#[command(name = "reddog", version = env!("REDDOG_VERSION"), about, long_about = None, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// `reddog` with no subcommand serves: these are `reddog serve`'s flags and environment
    /// variables, parsed by clap like the subcommand's own.
    #[command(flatten)]
    serve: serve::ServeArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the gRPC API (the default when no subcommand is given).
    Serve(serve::ServeArgs),
    /// Print the exact odds, house edge and RTP of the game.
    Odds(odds::OddsArgs),
    /// Play many rounds and compare the observed RTP with the exact one.
    Simulate(simulate::SimulateArgs),
    /// Check a settled round's reveal: the commitment, every card, each seat's money and the
    /// transcript.
    Verify(fairness::VerifyArgs),
    /// Print a fresh server seed and its commitment, for manual experiments.
    Commit(fairness::CommitArgs),
    /// Write the raw deal-generator stream to stdout (for dieharder and friends).
    RngDump(fairness::RngDumpArgs),
    /// Print a new key ring JSON, or an existing one with a new key added (rotation).
    Keygen(keygen::KeygenArgs),
    /// Check the engine's audit trails (any replicas, any order): chain gaps, edits and
    /// reordering, commitment reuse, forks, peek then play, rounds re-dealt, open rounds;
    /// exit 1 when anything is found, 2 when the input holds no audit record.
    AuditLog(audit_log::AuditLogArgs),
    /// Sum the settled rounds' money in the audit trails per table, currency and UTC day
    /// (rounds, seats, staked, returned, GGR, observed and exact expected return, open rounds),
    /// as text, JSON or CSV; with --reconcile LEDGER.csv, list every difference from a
    /// platform's ledger (exit 1 when any).
    Report(report::ReportArgs),
    /// Write the certification evidence (report.json, report.html, SBOM) for this binary and
    /// a table configuration; exit 1 when any check fails.
    Certify(certify::CertifyArgs),
}

/// Runs the command; its exit status on success (`verify` tells verified, not verified and
/// malformed apart).
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let done = match cli.command.unwrap_or(Command::Serve(cli.serve)) {
        Command::Serve(args) => serve::run(args),
        Command::Odds(args) => odds::run(args),
        Command::Simulate(args) => simulate::run(args),
        Command::Verify(args) => return fairness::verify(args),
        Command::AuditLog(args) => return audit_log::run(args),
        Command::Report(args) => return report::run(args),
        Command::Certify(args) => return certify::run(args),
        Command::Commit(args) => fairness::commit(args),
        Command::RngDump(args) => fairness::rng_dump(args),
        Command::Keygen(args) => keygen::run(args),
    };
    done.map(|()| ExitCode::SUCCESS)
}
