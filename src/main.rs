//! `reddog`: the engine's one binary. With no subcommand it serves gRPC (`reddog serve`).
#![forbid(unsafe_code)]

mod cli;

use clap::Parser;

/// jemalloc instead of glibc's malloc, its background threads on: memory freed after a flood
/// goes back to the system within seconds (jemalloc's decay), where glibc's malloc kept the
/// flood's peak resident (docs/RELIABILITY.md, "Memory after a flood").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e:?}");
            std::process::ExitCode::FAILURE
        }
    }
}
