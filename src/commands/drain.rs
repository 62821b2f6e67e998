//! `premerge drain`: placeholder until its issue lands.

use super::Ctx;
use crate::error::CmdResult;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_: Args, _: &mut Ctx) -> CmdResult {
    anyhow::bail!("`premerge drain` is not built yet")
}
