//! `premerge doctor`: placeholder until its issue lands.

use super::Ctx;
use crate::error::CmdResult;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_: Args, _: &mut Ctx) -> CmdResult {
    anyhow::bail!("`premerge doctor` is not built yet")
}
