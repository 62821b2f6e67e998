//! `premerge fence`: placeholder until its issue lands.

use super::Ctx;
use crate::error::CmdResult;

#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Not built yet.
    Pending,
}

pub fn run(_: Cmd, _: &mut Ctx) -> CmdResult {
    anyhow::bail!("`premerge fence` is not built yet")
}

pub fn pre_push_stage(_: &mut super::hook::HookRun) -> CmdResult {
    Ok(crate::error::Exit::Ok)
}
