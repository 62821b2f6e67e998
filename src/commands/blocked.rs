//! `premerge blocked`: placeholder until its issue lands.

use super::Ctx;
use crate::error::CmdResult;

#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Not built yet.
    Pending,
}

pub fn run(_: Cmd, _: &mut Ctx) -> CmdResult {
    anyhow::bail!("`premerge blocked` is not built yet")
}
