//! `reddog serve`.

#[derive(Debug, Default, clap::Args)]
pub struct ServeArgs {}

pub fn run(_args: ServeArgs) -> anyhow::Result<()> {
    anyhow::bail!("`reddog serve` is not built yet")
}
