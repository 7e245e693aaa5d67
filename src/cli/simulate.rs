//! `reddog simulate`.

#[derive(Debug, clap::Args)]
pub struct SimulateArgs {}

pub fn run(_args: SimulateArgs) -> anyhow::Result<()> {
    anyhow::bail!("`reddog simulate` is not built yet")
}
