//! `premerge memory search|list`: read guard memories back from the embedded store.

use std::io::Write;

use anyhow::Result;
use clap::{Args as ClapArgs, Subcommand};
use serde_json::json;

use super::Ctx;
use crate::cli::Format;
use crate::error::{CmdResult, Exit};
use crate::input::escape_for_message;
use crate::memory::Memory;
use crate::store::memory_db as db;

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
    let state = repo.state_dir();
    // Reading never creates the database: no memories yet is an empty answer.
    let (memories, format) = if !state.db_path().exists() {
        let format = match &cmd {
            Cmd::Search(a) => a.format,
            Cmd::List(a) => a.format,
        };
        if let Cmd::Search(SearchArgs { query: Some(q), .. }) = &cmd
            && !q.chars().any(|c| c.is_alphanumeric())
        {
            return Err(db::MemoryError::EmptyQuery(q.clone()).into());
        }
        (Vec::new(), format)
    } else {
        let conn = state.open_db()?;
        match cmd {
            Cmd::Search(a) => {
                let files: Vec<String> = a.file.iter().map(|f| f.trim_start_matches("./").to_string()).collect();
                (db::search(&conn, a.query.as_deref(), &files)?, a.format)
            }
            Cmd::List(a) => (db::list(&conn)?, a.format),
        }
    };
    print(ctx.stdout, &memories, format)?;
    Ok(Exit::Ok)
}

fn print(w: &mut dyn Write, memories: &[Memory], format: Format) -> Result<()> {
    match format {
        Format::Json => {
            let doc = json!({"schema_version": 1, "memories": memories});
            w.write_all(crate::canonical::to_line(&doc)?.as_bytes())?;
        }
        Format::Text => {
            for m in memories {
                // Text from the repository is shown with its control and bidi characters escaped.
                let (file, symbol) = (crate::diff::quote_path_bytes(m.file.as_bytes()), escape_for_message(&m.symbol));
                writeln!(w, "#{} {}:{} {} ({}, cycle {})", m.id, file, m.line, symbol, m.rule, m.cycle)?;
                writeln!(w, "    {}", escape_for_message(&m.content))?;
            }
            writeln!(w, "{} guard memory(ies)", memories.len())?;
        }
    }
    Ok(())
}
