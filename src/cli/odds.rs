//! `reddog odds`.

#[derive(Debug, clap::Args)]
pub struct OddsArgs {}

pub fn run(_args: OddsArgs) -> anyhow::Result<()> {
    anyhow::bail!("`reddog odds` is not built yet")
}
