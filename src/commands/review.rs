//! `premerge review`: placeholder until its issue lands.

use super::Ctx;
use crate::error::CmdResult;

#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Not built yet.
    Pending,
}
#[derive(Debug, clap::Args)]
pub struct ExplainCapArgs {}

pub fn run(_: Cmd, _: &mut Ctx) -> CmdResult {
    anyhow::bail!("`premerge review` is not built yet")
}

pub fn run_explain_cap(_: ExplainCapArgs, _: &mut Ctx) -> CmdResult {
    anyhow::bail!("`premerge explain-cap` is not built yet")
}

pub fn demo_stage(_: &mut super::demo::DemoRun) -> anyhow::Result<()> {
    Ok(())
}
