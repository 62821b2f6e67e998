//! `premerge completions <shell>`: print a completion script.

use clap::{Args as ClapArgs, CommandFactory};
use clap_complete::Shell;

use super::Ctx;
use crate::cli::Cli;
use crate::error::{CmdResult, Exit};

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// The shell to generate for.
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn run(args: Args, ctx: &mut Ctx) -> CmdResult {
    let mut cmd = Cli::command();
    // Into a buffer first: clap_complete panics when its writer fails, and a closed
    // pipe (`premerge completions bash | head -1`) must be a quiet exit.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "premerge", &mut script);
    ctx.stdout.write_all(&script)?;
    Ok(Exit::Ok)
}
