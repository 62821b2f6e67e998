//! `premerge seams`: placeholder until its issue lands.

use super::Ctx;
use crate::error::CmdResult;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_: Args, _: &mut Ctx) -> CmdResult {
    anyhow::bail!("`premerge seams` is not built yet")
}

pub fn hook_stage(_: &mut super::hook::HookRun) -> anyhow::Result<()> {
    Ok(())
}

pub fn demo_stage(_: &mut super::demo::DemoRun) -> anyhow::Result<()> {
    Ok(())
}
