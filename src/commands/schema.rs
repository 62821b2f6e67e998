//! `premerge schema`: placeholder until its issue lands.

use super::Ctx;
use crate::error::CmdResult;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_: Args, _: &mut Ctx) -> CmdResult {
    anyhow::bail!("`premerge schema` is not built yet")
}
