//! `premerge plan`: placeholder until its issue lands.

use super::Ctx;
use crate::error::CmdResult;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_: Args, _: &mut Ctx) -> CmdResult {
    anyhow::bail!("`premerge plan` is not built yet")
}

pub fn demo_stage(_: &mut super::demo::DemoRun) -> anyhow::Result<()> {
    Ok(())
}
