//! `premerge install`: placeholder until its issue lands.

use super::Ctx;
use crate::error::CmdResult;

#[derive(Debug, clap::Args)]
pub struct InstallArgs {}
#[derive(Debug, clap::Args)]
pub struct UninstallArgs {}

pub fn run_install(_: InstallArgs, _: &mut Ctx) -> CmdResult {
    anyhow::bail!("`premerge install` is not built yet")
}

pub fn run_uninstall(_: UninstallArgs, _: &mut Ctx) -> CmdResult {
    anyhow::bail!("`premerge uninstall` is not built yet")
}
