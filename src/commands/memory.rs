//! `premerge memory search|list`: read guard memories back from the embedded store.

use clap::{Args as ClapArgs, Subcommand};

use super::Ctx;
use crate::cli::Format;
use crate::error::{CmdResult, Exit};
use crate::memory::listing::{self, Query};

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Search guard memories: full text, and/or the files they are about.
    Search(SearchArgs),
    /// List every guard memory.
    List(ListArgs),
}

#[derive(Debug, ClapArgs)]
pub struct SearchArgs {
    /// Only memories about this repository path (repeatable: any of them).
    #[arg(long, value_name = "PATH")]
    pub file: Vec<String>,
    /// Words to search for (all required, any order).
    pub query: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Debug, ClapArgs)]
pub struct ListArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

pub fn run(cmd: Cmd, ctx: &mut Ctx) -> CmdResult {
    let repo = ctx.repo()?;
    let (query, format) = match &cmd {
        Cmd::Search(a) => (Query::Search { words: a.query.as_deref(), files: &a.file }, a.format),
        Cmd::List(a) => (Query::List, a.format),
    };
    let memories = listing::read(&repo.state_dir(), query)?;
    listing::print(ctx.stdout, &memories, format)?;
    Ok(Exit::Ok)
}
