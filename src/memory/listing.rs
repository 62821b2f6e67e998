//! Reading guard memories back (`premerge memory search` and `list`, and the demo's
//! scan stage) and printing them.

use std::io::Write;

use anyhow::Result;
use serde_json::json;

use super::Memory;
use crate::cli::Format;
use crate::input::escape_for_message;
use crate::store::StateDir;
use crate::store::memory_db as db;

/// Which memories to read.
#[derive(Debug, Clone, Copy)]
pub enum Query<'a> {
    /// Full text (`words`: all required) and/or the files they are about (any of them).
    Search { words: Option<&'a str>, files: &'a [String] },
    /// Every memory.
    List,
}

/// The memories `query` selects. Reading never creates the database: no memories yet
/// is an empty answer (a query without a word is still refused).
pub fn read(state: &StateDir, query: Query) -> Result<Vec<Memory>> {
    if !state.db_path().exists() {
        if let Query::Search { words: Some(q), .. } = query
            && !q.chars().any(|c| c.is_alphanumeric())
        {
            return Err(db::MemoryError::EmptyQuery(q.to_string()).into());
        }
        return Ok(Vec::new());
    }
    let conn = state.open_db()?;
    Ok(match query {
        Query::Search { words, files } => {
            let files: Vec<String> = files.iter().map(|f| f.trim_start_matches("./").to_string()).collect();
            db::search(&conn, words, &files)?
        }
        Query::List => db::list(&conn)?,
    })
}

/// Print memories as `premerge memory` does: text lines or canonical JSON.
pub fn print(w: &mut dyn Write, memories: &[Memory], format: Format) -> Result<()> {
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
