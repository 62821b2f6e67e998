//! Storing and searching guard memories in the embedded SQLite database
//! (`sql/002_memories.sql`: the `memories` table and its FTS5 index).

use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter};

use crate::memory::{Memory, NewMemory};

/// Errors of the memory store.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The database refused a statement.
    #[error("memory store: {0}")]
    Sql(#[from] rusqlite::Error),
    /// A search query with no word to search for.
    #[error("memory search: the query `{0}` contains no word to search for")]
    EmptyQuery(String),
}

pub type Result<T> = std::result::Result<T, MemoryError>;

/// What happened to one memory write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// A new row, with its id.
    Written(i64),
    /// The cycle already has a memory for this `(file, symbol)`, or a memory of the same
    /// change exists (same file, symbol, rule, before and after, whichever hook or cycle
    /// saw it): nothing written.
    Duplicate(i64),
}

/// Write a memory unless its `(cycle, file, symbol)` already has one or the same change
/// (file, symbol, rule, before, after) is already remembered. A memory's identity is the
/// change itself: pre-push and post-merge seeing one widening (under two head commits)
/// record one memory.
pub fn insert(conn: &mut Connection, m: &NewMemory, created_at: &str) -> Result<Write> {
    Ok(insert_all(conn, std::slice::from_ref(m), created_at)?[0])
}

/// Write memories in one transaction (one sync to disk however many there are),
/// skipping each whose `(cycle, file, symbol)` already has one. Answers in order.
/// IMMEDIATE ([`super::tx::immediate`]): the duplicate check reads what a concurrent
/// hook may be writing, so the write lock is taken first and a second hook waits for
/// the first instead of losing its memories to "database is locked".
pub(crate) fn insert_all(conn: &mut Connection, memories: &[NewMemory], created_at: &str) -> Result<Vec<Write>> {
    super::tx::immediate(conn, |tx| {
        let mut out = Vec::with_capacity(memories.len());
        for m in memories {
            out.push(insert_one(tx, m, created_at)?);
        }
        Ok(out)
    })
}

fn insert_one(tx: &rusqlite::Transaction, m: &NewMemory, created_at: &str) -> Result<Write> {
    // `memories_by_file (file, symbol)` serves both conditions.
    let existing: Option<i64> = tx
        .query_row(
            "SELECT id FROM memories WHERE file = ?2 AND symbol = ?3
               AND (cycle = ?1 OR (rule = ?4 AND before_text = ?5 AND after_text = ?6))
             ORDER BY id LIMIT 1",
            params![m.cycle, m.file, m.symbol, m.rule, m.before, m.after],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = existing {
        return Ok(Write::Duplicate(id));
    }
    let meta =
        crate::canonical::to_compact(&m.metadata).map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?;
    tx.execute(
        "INSERT INTO memories (cycle, file, symbol, rule, language, line, before_text, after_text, issue, commit_oid, content, metadata, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        params![
            m.cycle,
            m.file,
            m.symbol,
            m.rule,
            m.language,
            m.line,
            m.before,
            m.after,
            m.issue.map(|i| i as i64),
            m.commit,
            m.content,
            meta,
            created_at
        ],
    )?;
    let id = tx.last_insert_rowid();
    tx.execute(
        "INSERT INTO memories_fts (rowid, content, file, symbol, rule) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, m.content, m.file, m.symbol, m.rule],
    )?;
    Ok(Write::Written(id))
}

/// Record what the external backend did with a memory.
/// How many memories of `(file, symbol)` other cycles than `cycle` wrote: more than
/// none makes a new memory a repeat.
pub(crate) fn earlier_cycles(conn: &Connection, file: &str, symbol: &str, cycle: &str) -> Result<i64> {
    Ok(conn.query_row(
        "SELECT count(*) FROM memories WHERE file = ?1 AND symbol = ?2 AND cycle != ?3",
        params![file, symbol, cycle],
        |r| r.get(0),
    )?)
}

pub(crate) fn set_backend(conn: &Connection, id: i64, status: &str) -> Result<()> {
    conn.execute("UPDATE memories SET backend = ?1 WHERE id = ?2", params![status, id])?;
    Ok(())
}

const COLUMNS: &str = "m.id, m.cycle, m.file, m.symbol, m.rule, m.language, m.line, m.before_text, m.after_text, \
                       m.issue, m.commit_oid, m.content, m.metadata, m.created_at, m.backend";

fn from_row(r: &Row) -> rusqlite::Result<Memory> {
    let meta: String = r.get(12)?;
    let issue: Option<i64> = r.get(9)?;
    Ok(Memory {
        id: r.get(0)?,
        memory: NewMemory {
            cycle: r.get(1)?,
            file: r.get(2)?,
            symbol: r.get(3)?,
            rule: r.get(4)?,
            language: r.get(5)?,
            line: r.get(6)?,
            before: r.get(7)?,
            after: r.get(8)?,
            issue: issue.map(|i| i as u64),
            commit: r.get(10)?,
            content: r.get(11)?,
            metadata: serde_json::from_str(&meta).unwrap_or(serde_json::Value::String(meta)),
        },
        created_at: r.get(13)?,
        backend: r.get(14)?,
    })
}

/// Every memory, ordered by file, symbol, then age.
pub fn list(conn: &Connection) -> Result<Vec<Memory>> {
    let sql = format!("SELECT {COLUMNS} FROM memories m ORDER BY m.file, m.symbol, m.id");
    let mut st = conn.prepare(&sql)?;
    let rows = st.query_map([], from_row)?.collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// The memories recorded about any of `files` (exact repository paths), ordered by
/// file, symbol, then age. This is what the stop gate and the review step-back call
/// before work touches those files.
pub(crate) fn search_by_files(conn: &Connection, files: &[String]) -> Result<Vec<Memory>> {
    search(conn, None, files)
}

/// Turn free text into an FTS5 query: every word quoted, all words required.
fn fts_query(q: &str) -> String {
    q.split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{w}\""))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Full-text search (`query`, every word required, any order), optionally restricted
/// to memories about `files`. Without a query, the memories about `files` (or all).
/// Ranked by relevance when there is a query, else by file, symbol and age.
pub fn search(conn: &Connection, query: Option<&str>, files: &[String]) -> Result<Vec<Memory>> {
    let mut args: Vec<String> = Vec::new();
    let mut sql = format!("SELECT {COLUMNS} FROM memories m");
    let mut wheres = Vec::new();
    if let Some(q) = query {
        let fq = fts_query(q);
        if fq.is_empty() {
            return Err(MemoryError::EmptyQuery(q.to_string()));
        }
        sql.push_str(" JOIN memories_fts f ON f.rowid = m.id");
        wheres.push("memories_fts MATCH ?".to_string());
        args.push(fq);
    }
    if !files.is_empty() {
        wheres.push(format!("m.file IN ({})", vec!["?"; files.len()].join(", ")));
        args.extend(files.iter().cloned());
    }
    if !wheres.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&wheres.join(" AND "));
    }
    sql.push_str(if query.is_some() { " ORDER BY f.rank, m.id" } else { " ORDER BY m.file, m.symbol, m.id" });
    let mut st = conn.prepare(&sql)?;
    let rows = st.query_map(params_from_iter(args.iter()), from_row)?.collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn db() -> Connection {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate(&mut c).unwrap();
        c
    }

    fn mem(cycle: &str, file: &str, symbol: &str) -> NewMemory {
        NewMemory {
            cycle: cycle.into(),
            file: file.into(),
            symbol: symbol.into(),
            rule: "rust-integer-widened".into(),
            language: "rust".into(),
            line: 3,
            before: "limit: u8".into(),
            after: "limit: u64".into(),
            issue: Some(4),
            commit: Some("abc".into()),
            content: format!("Guard memory for {file} `{symbol}`: limit widened"),
            metadata: json!({"rule": "rust-integer-widened"}),
        }
    }

    #[test]
    fn dedupes_per_cycle_file_and_symbol() {
        let mut c = db();
        let a = insert(&mut c, &mem("issue-4", "a.rs", "Q.limit"), "t").unwrap();
        assert!(matches!(a, Write::Written(_)));
        assert!(matches!(insert(&mut c, &mem("issue-4", "a.rs", "Q.limit"), "t").unwrap(), Write::Duplicate(_)));
        let mut later = mem("issue-5", "a.rs", "Q.limit");
        later.after = "limit: u128".into();
        assert!(matches!(insert(&mut c, &later, "t").unwrap(), Write::Written(_)));
        assert!(matches!(insert(&mut c, &mem("issue-4", "a.rs", "Q.other"), "t").unwrap(), Write::Written(_)));
        assert_eq!(list(&c).unwrap().len(), 3);
    }

    #[test]
    fn the_same_change_in_another_cycle_is_one_memory() {
        let mut c = db();
        let first = insert(&mut c, &mem("commit-aaa", "a.rs", "Q.limit"), "t").unwrap();
        // The post-merge hook sees the same widening under another head commit.
        let again = insert(&mut c, &mem("commit-bbb", "a.rs", "Q.limit"), "t").unwrap();
        let Write::Written(id) = first else { panic!("{first:?}") };
        assert_eq!(again, Write::Duplicate(id));
        // A different change to the same symbol in a later cycle is a new memory.
        let mut wider = mem("commit-ccc", "a.rs", "Q.limit");
        wider.after = "u128".into();
        assert!(matches!(insert(&mut c, &wider, "t").unwrap(), Write::Written(_)));
        assert_eq!(list(&c).unwrap().len(), 2);
    }

    #[test]
    fn searches_text_and_files() {
        let mut c = db();
        insert(&mut c, &mem("c", "src/a.rs", "Q.limit"), "t").unwrap();
        insert(&mut c, &mem("c", "src/b.rs", "set_ratio"), "t").unwrap();
        assert_eq!(search_by_files(&c, &["src/b.rs".into()]).unwrap()[0].symbol, "set_ratio");
        assert_eq!(search(&c, Some("limit widened"), &[]).unwrap().len(), 2);
        assert_eq!(search(&c, Some("set_ratio"), &["src/a.rs".into()]).unwrap().len(), 0);
        assert_eq!(search(&c, Some("\"; DROP"), &[]).unwrap().len(), 0);
        assert!(matches!(search(&c, Some("  ( "), &[]), Err(MemoryError::EmptyQuery(_))));
    }
}
