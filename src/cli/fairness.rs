//! `reddog verify`, `reddog commit` and `reddog rng-dump`.

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {}
#[derive(Debug, clap::Args)]
pub struct CommitArgs {}
#[derive(Debug, clap::Args)]
pub struct RngDumpArgs {}

pub fn verify(_args: VerifyArgs) -> anyhow::Result<()> {
    anyhow::bail!("`reddog verify` is not built yet")
}

pub fn commit(_args: CommitArgs) -> anyhow::Result<()> {
    anyhow::bail!("`reddog commit` is not built yet")
}

pub fn rng_dump(_args: RngDumpArgs) -> anyhow::Result<()> {
    anyhow::bail!("`reddog rng-dump` is not built yet")
}
