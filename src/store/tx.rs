//! The one way premerge opens an SQLite transaction: [`immediate`].
//!
//! A deferred transaction (`BEGIN`, rusqlite's `transaction()`) that reads and then
//! writes takes its read lock first and asks for the write lock later. When another
//! connection committed in between, SQLite cannot upgrade the stale read and answers
//! `SQLITE_BUSY` at once: the busy timeout is not consulted, because waiting could
//! never help. Concurrent hooks in one clone lost their guard memories that way
//! (issue 27, D3). `BEGIN IMMEDIATE` takes the write lock before the first read, so a
//! second writer waits its busy timeout for the first and then reads what it wrote.
//!
//! Every transaction in `src/` goes through [`immediate`]; a test below fails on a
//! `transaction()`, a `transaction_with_behavior` or an SQL `BEGIN` anywhere else.

use rusqlite::{Connection, Transaction, TransactionBehavior};

/// Run `f` inside a `BEGIN IMMEDIATE` transaction of `conn` and commit it when `f`
/// succeeds (an error rolls it back when the transaction is dropped). The wait for
/// the write lock is the connection's busy timeout.
pub(crate) fn immediate<T, E>(conn: &mut Connection, f: impl FnOnce(&Transaction) -> Result<T, E>) -> Result<T, E>
where
    E: From<rusqlite::Error>,
{
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let value = f(&tx)?;
    tx.commit()?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use super::*;

    /// Every `.rs` file under `dir` (an explicit stack, no recursion).
    fn rust_files(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        out.sort();
        out
    }

    /// What opens a transaction other than through [`immediate`]: rusqlite's methods
    /// and SQL `BEGIN` statements in string literals. (Built from pieces, so that this
    /// file's own list is not a match.)
    fn opens_a_transaction(text: &str) -> Vec<String> {
        let methods = [".transaction(", "transaction_with_behavior(", "unchecked_transaction(", ".savepoint("];
        let sql = ["BEGIN;", "BEGIN DEFERRED", "BEGIN IMMEDIATE", "BEGIN EXCLUSIVE", "BEGIN TRANSACTION"];
        let mut found: Vec<String> = methods.iter().filter(|m| text.contains(*m)).map(|m| m.to_string()).collect();
        for kw in sql {
            let quoted = format!("\"{kw}");
            if text.contains(&quoted) || text.contains(&format!("\"{}\"", kw.trim_end_matches(';'))) {
                found.push(kw.to_string());
            }
            // `"...; BEGIN; ..."` in a batch.
            if text.match_indices(kw).any(|(i, _)| text[..i].trim_end().ends_with([';', '"'])) {
                found.push(kw.to_string());
            }
        }
        found.sort();
        found.dedup();
        found
    }

    #[test]
    fn every_transaction_goes_through_the_immediate_helper() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let me = src.join("store").join("tx.rs");
        let mut offenders = Vec::new();
        for path in rust_files(&src) {
            if path == me {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let found = opens_a_transaction(&text);
            if !found.is_empty() {
                offenders.push(format!("{}: {found:?}", path.strip_prefix(&src).unwrap().display()));
            }
        }
        assert!(offenders.is_empty(), "transactions outside store::tx::immediate: {offenders:?}");
        // The check itself sees what it looks for.
        assert_eq!(opens_a_transaction("let tx = conn.transaction()?;"), [".transaction("]);
        assert_eq!(opens_a_transaction("conn.execute_batch(\"BEGIN; DELETE FROM t; COMMIT;\")"), ["BEGIN;"]);
        assert!(!opens_a_transaction("// DO $$ BEGIN PERFORM 1; END $$;").iter().any(|f| f.starts_with("BEGIN")));
    }

    /// A database file with a table of counters, opened twice as the hooks open it.
    fn open(path: &Path) -> Connection {
        let c = Connection::open(path).unwrap();
        c.busy_timeout(Duration::from_secs(5)).unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c
    }

    /// Regression (issue 27, D3): two writers that each read and then write, from two
    /// threads with their own connections to one file, never see SQLITE_BUSY: the
    /// second waits for the first. With a deferred transaction this fails within a
    /// few rounds ("database is locked").
    #[test]
    fn concurrent_read_then_write_transactions_wait_instead_of_failing() {
        const ROUNDS: i64 = 300;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        open(&path).execute_batch("CREATE TABLE n (writer INTEGER, seq INTEGER)").unwrap();
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || -> rusqlite::Result<()> {
                    let mut c = open(&path);
                    for _ in 0..ROUNDS {
                        immediate(&mut c, |tx| {
                            let seq: i64 = tx.query_row("SELECT COUNT(*) FROM n", [], |r| r.get(0))?;
                            tx.execute("INSERT INTO n (writer, seq) VALUES (?1, ?2)", [w, seq])?;
                            Ok::<_, rusqlite::Error>(())
                        })?;
                    }
                    Ok(())
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap().expect("no writer is refused with SQLITE_BUSY");
        }
        let c = open(&path);
        let (rows, distinct): (i64, i64) =
            c.query_row("SELECT COUNT(*), COUNT(DISTINCT seq) FROM n", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        assert_eq!(rows, 2 * ROUNDS, "every write kept");
        assert_eq!(distinct, rows, "each transaction read what the one before it wrote");
    }

    #[test]
    fn an_error_rolls_back_and_is_returned() {
        let mut c = Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
        let r: Result<(), rusqlite::Error> = immediate(&mut c, |tx| {
            tx.execute("INSERT INTO t VALUES (1)", [])?;
            Err(rusqlite::Error::InvalidQuery)
        });
        assert!(r.is_err());
        let n: i64 = c.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 0);
    }
}
