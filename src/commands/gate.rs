//! `premerge gate`: placeholder until its issue lands.

use super::Ctx;
use crate::error::CmdResult;

#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Not built yet.
    Pending,
}

pub fn run(_: Cmd, _: &mut Ctx) -> CmdResult {
    anyhow::bail!("`premerge gate` is not built yet")
}

pub fn demo_stage(_: &mut super::demo::DemoRun) -> anyhow::Result<()> {
    Ok(())
}
