//! `reddog`: the engine's one binary. With no subcommand it serves gRPC (`reddog serve`).
#![forbid(unsafe_code)]

mod cli;

use clap::Parser;

fn main() -> anyhow::Result<()> {
    let args = cli::Cli::parse();
    cli::run(args)
}
