//! The inventory store: what one version of a file constrains (a detector's
//! inventory), by the blob id of that version, so that a later scan whose old version
//! is a version an earlier scan read (the next pull after this one, the next push of a
//! fix loop) does not parse it again.
//!
//! One SQLite file, `<state>/scan-inventories.sqlite`, opened on the first lookup (a
//! scan that never asks, such as one the change window serves whole, never opens it;
//! a scan that finds no file looks nothing up, and makes it only to store something).
//! Lookups go to the file; what a scan stores is encoded and written in one
//! transaction at its end, on the thread that writes the scan cache (while the
//! findings are printed). Like the scan cache it is a signal's
//! helper and never fails a scan: a file that cannot be opened, is not a regular file,
//! or holds another build's inventories is emptied or ignored; a row that does not
//! decode is a miss.
//!
//! Only a version of a path changed in an earlier scan too is stored. Most files of a
//! pull change once in a long while, and encoding and writing an inventory costs about
//! a tenth of parsing its version (measured on the synthetic change of
//! `scripts/bench-scan.sh`: 3,000 inventories, 10 MB, 120 ms), so storing every
//! version would slow every first scan for a later one that rarely comes; a path that
//! changes again is the one whose next change will need its version. The store keeps
//! the paths it was offered, by the generation of the last scan that offered them.
//!
//! Bounded: at most [`MAX_ROWS`] inventories and as many paths, the least recently
//! used (by the generation of the last scan that stored or read them) deleted first;
//! an inventory larger than [`MAX_ROW_BYTES`] is not stored. Keyed by the build as the scan cache is
//! ([`super::scan_cache::ruleset`]): a new build starts from an empty store.
//! `PREMERGE_SCAN_CACHE=0` switches it off with the scan cache.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use rusqlite::{Connection, OptionalExtension, params};

use crate::widen::detector::Encode;
use crate::widen::engine::InventoryCache;

/// File name of the store inside the state directory.
pub(crate) const STORE_FILE: &str = "scan-inventories.sqlite";

/// Most inventories kept. An inventory is a few KiB; a pull that changes a few
/// thousand files fits several times over, and the file stays tens of MiB at most.
pub(crate) const MAX_ROWS: i64 = 20_000;

/// Largest inventory stored: a source file's inventory is far smaller than the file,
/// and the scan reads files of at most `scan.max_file_bytes` (1 MiB by default).
pub(crate) const MAX_ROW_BYTES: usize = 256 * 1024;

/// How long a write waits for another premerge process writing the same store (a
/// hook and the background job) before this scan's rows are dropped.
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS build (ruleset TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS inventories (
    grammar TEXT NOT NULL,
    oid TEXT NOT NULL,
    used INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (grammar, oid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS inventories_by_use ON inventories (used);
CREATE TABLE IF NOT EXISTS paths (path TEXT PRIMARY KEY, used INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS paths_by_use ON paths (used);
";

#[derive(Default)]
struct Pending {
    /// Rows stored this scan, not yet encoded: (grammar, oid) -> encoder.
    added: std::collections::HashMap<(String, String), Encode>,
    /// Rows read this scan: (grammar, oid).
    hits: Vec<(String, String)>,
    /// The paths of the versions offered this scan.
    paths: Vec<String>,
}

/// The inventory store of one scan; see the module comment.
pub(crate) struct Inventories {
    path: PathBuf,
    ruleset: String,
    /// Opened on the first lookup or the save; `None` inside when there was no file
    /// to look in, or it could not be opened.
    conn: OnceLock<Option<Mutex<Connection>>>,
    pending: Mutex<Pending>,
    /// [`MAX_ROWS`], lower in tests.
    max_rows: i64,
}

impl Inventories {
    /// The store of the state directory `dir`; `None` when switched off or when the
    /// build cannot be named. Opens nothing yet.
    pub(crate) fn open(dir: &Path) -> Option<Inventories> {
        if crate::env::process().var_os("PREMERGE_SCAN_CACHE").is_some_and(|v| v == "0") {
            return None;
        }
        Some(Inventories::open_with(dir, super::scan_cache::ruleset(true, false)?))
    }

    /// [`Inventories::open`] with a given build identity.
    pub(crate) fn open_with(dir: &Path, ruleset: String) -> Inventories {
        Inventories {
            path: dir.join(STORE_FILE),
            ruleset,
            conn: OnceLock::new(),
            pending: Mutex::new(Pending::default()),
            max_rows: MAX_ROWS,
        }
    }

    /// The connection to the file, if there is one. With none (the first scan of a
    /// clone, a cold benchmark run) every lookup is a miss without a database to ask.
    fn conn(&self) -> Option<&Mutex<Connection>> {
        (self.conn)
            .get_or_init(|| {
                std::fs::symlink_metadata(&self.path).ok()?;
                connect(&self.path, &self.ruleset).ok().map(Mutex::new)
            })
            .as_ref()
    }

    /// Write what this scan stored and mark what it read as used, in one transaction,
    /// then delete the least recently used rows beyond [`MAX_ROWS`]. Best effort: the
    /// error is for the caller to ignore, never to fail the scan on. Whether anything
    /// was written.
    pub(crate) fn save(&self) -> anyhow::Result<bool> {
        let pending = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        if pending.paths.is_empty() && pending.hits.is_empty() {
            return Ok(false);
        }
        let written = match self.conn() {
            Some(conn) => self.write(&mut conn.lock().unwrap_or_else(|e| e.into_inner()), pending),
            None if pending.paths.is_empty() => return Ok(false),
            // No file yet: made now, for what this scan offers.
            None => self.write(&mut connect(&self.path, &self.ruleset)?, pending),
        };
        if written.as_ref().is_err_and(broken) {
            // Damaged past what opening it showed (a power cut with `synchronous =
            // OFF`): the next scan starts a new store rather than failing on this one.
            let _ = std::fs::remove_file(&self.path);
        }
        written?;
        Ok(true)
    }

    fn write(&self, conn: &mut Connection, pending: Pending) -> rusqlite::Result<()> {
        // Encoded on the scan's threads, which are idle by now; in byte order of the
        // key, so that the file's contents never depend on hashing.
        let mut added: Vec<_> = pending.added.into_iter().collect();
        added.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let added: Vec<_> = {
            use rayon::prelude::*;
            added.into_par_iter().map(|(key, encode)| (key, encode().filter(|b| b.len() <= MAX_ROW_BYTES))).collect()
        };
        // IMMEDIATE: the generation is read and then written; a hook and the background
        // job saving at once wait for each other instead of one losing its rows.
        super::tx::immediate(conn, |tx| {
            let now: i64 = tx.query_row(
                "SELECT COALESCE(MAX(u), 0) + 1 FROM
                   (SELECT MAX(used) AS u FROM inventories UNION ALL SELECT MAX(used) FROM paths)",
                [],
                |r| r.get(0),
            )?;
            {
                let mut put = tx.prepare(
                    "INSERT INTO inventories (grammar, oid, used, body) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (grammar, oid) DO UPDATE SET used = excluded.used, body = excluded.body",
                )?;
                for ((grammar, oid), body) in added {
                    if let Some(body) = body {
                        put.execute(params![grammar, oid, now, body])?;
                    }
                }
                let mut offered = tx.prepare(
                    "INSERT INTO paths (path, used) VALUES (?1, ?2) ON CONFLICT (path) DO UPDATE SET used = excluded.used",
                )?;
                for path in &pending.paths {
                    offered.execute(params![path, now])?;
                }
                let mut touch = tx.prepare("UPDATE inventories SET used = ?3 WHERE grammar = ?1 AND oid = ?2")?;
                for (grammar, oid) in &pending.hits {
                    touch.execute(params![grammar, oid, now])?;
                }
            }
            let rows: i64 = tx.query_row("SELECT COUNT(*) FROM inventories", [], |r| r.get(0))?;
            if rows > self.max_rows {
                tx.execute(
                    "DELETE FROM inventories WHERE (grammar, oid) IN
                       (SELECT grammar, oid FROM inventories ORDER BY used, grammar, oid LIMIT ?1)",
                    [rows - self.max_rows],
                )?;
            }
            let paths: i64 = tx.query_row("SELECT COUNT(*) FROM paths", [], |r| r.get(0))?;
            if paths > self.max_rows {
                tx.execute(
                    "DELETE FROM paths WHERE path IN (SELECT path FROM paths ORDER BY used, path LIMIT ?1)",
                    [paths - self.max_rows],
                )?;
            }
            Ok(())
        })
    }

    /// How many inventories the file holds (for tests).
    #[cfg(test)]
    pub(crate) fn rows(&self) -> i64 {
        let conn = self.conn().expect("the store opens").lock().unwrap();
        conn.query_row("SELECT COUNT(*) FROM inventories", [], |r| r.get(0)).unwrap()
    }
}

impl InventoryCache for Inventories {
    fn get(&self, grammar: &str, oid: &str) -> Option<Vec<u8>> {
        let conn = self.conn()?.lock().unwrap_or_else(|e| e.into_inner());
        let body: Option<Vec<u8>> = conn
            .query_row("SELECT body FROM inventories WHERE grammar = ?1 AND oid = ?2", params![grammar, oid], |r| {
                r.get(0)
            })
            .optional()
            .ok()
            .flatten();
        drop(conn);
        if body.is_some() {
            self.pending.lock().unwrap_or_else(|e| e.into_inner()).hits.push((grammar.to_string(), oid.to_string()));
        }
        body
    }

    fn put(&self, grammar: &str, oid: &str, path: &str, encode: Encode) {
        // A path no earlier scan offered: remembered, its version not stored (see the
        // module comment). The encoder is dropped unrun.
        let changed_before = self.conn().is_some_and(|conn| {
            let conn = conn.lock().unwrap_or_else(|e| e.into_inner());
            conn.query_row("SELECT 1 FROM paths WHERE path = ?1", [path], |_| Ok(()))
                .optional()
                .ok()
                .flatten()
                .is_some()
        });
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.paths.push(path.to_string());
        if changed_before {
            p.added.insert((grammar.to_string(), oid.to_string()), encode);
        }
    }
}

/// Whether SQLite found the file damaged, or not a database at all.
fn broken(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(e, _)
        if matches!(e.code, rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt))
}

/// The store's connection, its tables made and emptied when another build wrote them.
/// A path that is a symlink or not a regular file is refused (the store is premerge's
/// own file); a file SQLite cannot read is replaced.
fn connect(path: &Path, ruleset: &str) -> anyhow::Result<Connection> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_file() => anyhow::bail!("{}: not a regular file", path.display()),
        _ => {}
    }
    if let Some(dir) = path.parent() {
        super::create_dirs(dir)?;
    }
    let open = || -> rusqlite::Result<Connection> {
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(BUSY_WAIT)?;
        // A cache: losing the last transaction to a power cut is acceptable, an fsync
        // per scan on the hook's path is not.
        conn.execute_batch("PRAGMA synchronous = OFF;")?;
        conn.execute_batch(SCHEMA)?;
        let stored: Option<String> = conn.query_row("SELECT ruleset FROM build", [], |r| r.get(0)).optional()?;
        if stored.as_deref() != Some(ruleset) {
            // Read again under the write lock: another build's scan may have just
            // emptied and claimed the store.
            super::tx::immediate(&mut conn, |tx| {
                let stored: Option<String> = tx.query_row("SELECT ruleset FROM build", [], |r| r.get(0)).optional()?;
                if stored.as_deref() != Some(ruleset) {
                    tx.execute("DELETE FROM inventories", [])?;
                    tx.execute("DELETE FROM build", [])?;
                    tx.execute("INSERT INTO build (ruleset) VALUES (?1)", [ruleset])?;
                }
                Ok::<_, rusqlite::Error>(())
            })?;
        }
        Ok(conn)
    };
    match open() {
        Err(e) if broken(&e) => {
            // Not a database SQLite can use: start over. (A store another process
            // holds is busy, not broken, and is left alone.)
            std::fs::remove_file(path)?;
            Ok(open()?)
        }
        other => Ok(other?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(b: &[u8]) -> Encode {
        let b = b.to_vec();
        Box::new(move || Some(b))
    }

    fn store(dir: &Path, build: &str, max_rows: i64) -> Inventories {
        Inventories { max_rows, ..Inventories::open_with(dir, build.to_string()) }
    }

    #[test]
    fn inventories_survive_a_save_and_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), "b1", 10);
        assert_eq!(s.get("rust.rs", "aa"), None);
        // First offered: the path is remembered, the version not stored.
        s.put("rust.rs", "aa", "src/a.rs", bytes(b"one"));
        assert!(s.save().unwrap());
        let s = store(dir.path(), "b1", 10);
        assert_eq!(s.get("rust.rs", "aa"), None);
        // Its path changed before: stored.
        s.put("rust.rs", "aa", "src/a.rs", bytes(b"one"));
        assert!(s.save().unwrap());
        assert!(!s.save().unwrap(), "nothing new: nothing written");
        let s = store(dir.path(), "b1", 10);
        assert_eq!(s.get("rust.rs", "aa").as_deref(), Some(&b"one"[..]));
        assert_eq!(s.get("go.go", "aa"), None, "kinds are kept apart");
        // Another build: an empty store.
        let s = store(dir.path(), "b2", 10);
        assert_eq!(s.get("rust.rs", "aa"), None);
        assert_eq!(s.rows(), 0);
    }

    #[test]
    fn the_least_recently_used_inventories_go_first_and_large_ones_never_come() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), "b", 3);
        s.put("rust.rs", "-", "p", bytes(b"-"));
        s.save().unwrap();
        let s = store(dir.path(), "b", 3);
        for oid in ["a", "b", "c"] {
            s.put("rust.rs", oid, "p", bytes(oid.as_bytes()));
        }
        s.save().unwrap();
        // Read `a`, store `d`: `b` is the least recently used one.
        let s = store(dir.path(), "b", 3);
        assert!(s.get("rust.rs", "a").is_some());
        s.put("rust.rs", "d", "p", bytes(b"d"));
        s.put("rust.rs", "huge", "p", bytes(&vec![0; MAX_ROW_BYTES + 1]));
        s.put("rust.rs", "unencodable", "p", Box::new(|| None));
        s.save().unwrap();
        let s = store(dir.path(), "b", 3);
        assert_eq!(s.rows(), 3);
        let present: Vec<&str> =
            ["a", "b", "c", "d", "huge", "unencodable"].into_iter().filter(|o| s.get("rust.rs", o).is_some()).collect();
        assert_eq!(present, ["a", "c", "d"]);
    }

    /// A store damaged inside (its first page intact, so the file still opens as a
    /// database) is started again, never left failing every later scan.
    #[test]
    fn a_store_damaged_inside_is_started_again() {
        let dir = tempfile::tempdir().unwrap();
        let offer = |s: &Inventories| {
            for i in 0..60 {
                s.put("rust.rs", &format!("{i:040}"), &format!("src/f{i}.rs"), bytes(&[7; 3000]));
            }
            s.save()
        };
        offer(&store(dir.path(), "b", 100)).unwrap();
        offer(&store(dir.path(), "b", 100)).unwrap();
        assert_eq!(store(dir.path(), "b", 100).rows(), 60);
        let path = dir.path().join(STORE_FILE);
        // Everything but the schema and the `build` table (the first pages, which the
        // open reads): the damage shows only when the rows are read or written.
        let mut image = std::fs::read(&path).unwrap();
        image[6 * 4096..].fill(0x5a);
        std::fs::write(&path, &image).unwrap();

        let s = store(dir.path(), "b", 100);
        assert_eq!(s.get("rust.rs", &format!("{:040}", 0)), None, "a damaged store is a miss");
        let _ = offer(&s);
        // Whatever this scan managed, the store after it is a sound one.
        let s = store(dir.path(), "b", 100);
        let _ = offer(&s);
        let conn = Connection::open(&path).unwrap();
        let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(ok, "ok");
    }

    #[test]
    fn a_store_that_is_not_a_regular_file_is_never_opened() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(STORE_FILE)).unwrap();
        let s = store(dir.path(), "b", 3);
        s.put("rust.rs", "a", "p", bytes(b"a"));
        let err = s.save().unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
        assert_eq!(s.get("go.go", "x"), None);
        assert!(dir.path().join(STORE_FILE).is_dir(), "left as it was");
    }
}
