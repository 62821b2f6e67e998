//! The state on disk: the per-clone state directory, pipeline run directories,
//! atomic artefact writes, the run-directory lock, `events.jsonl`, and the SQLite
//! database `premerge.db`.
//!
//! Every artefact is written with [`atomic_write`]: temporary file in the same
//! directory, fsync, rename, fsync of the directory. A reader never sees a torn file.

pub mod background;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use rusqlite::Connection;
use serde_json::Value;

/// Name of the per-clone state directory inside the git common directory.
pub const STATE_DIR_NAME: &str = "premerge";
/// File name of the embedded database.
pub const DB_FILE: &str = "premerge.db";
/// File name of the append-only event log (in the state dir and in each run dir).
pub const EVENTS_FILE: &str = "events.jsonl";
/// File name of the writer lock inside a run directory.
pub const LOCK_FILE: &str = ".premerge.lock";
/// How long a writer waits for another writer of the same run directory before it
/// gives up with a clear message. Long enough for any single artefact write (they
/// take milliseconds), short enough that a stuck pipeline step is noticed.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);
/// Environment variable naming the pipeline run directory.
pub const RUN_DIR_ENV: &str = "PREMERGE_RUN_DIR";

/// The per-clone state directory: `<git common dir>/premerge/`.
#[derive(Debug, Clone)]
pub struct StateDir {
    pub path: PathBuf,
}

impl StateDir {
    /// The state directory of a clone whose git common directory is `common_dir`.
    pub fn new(common_dir: &Path) -> StateDir {
        StateDir { path: common_dir.join(STATE_DIR_NAME) }
    }

    /// Create the directory if needed.
    pub fn ensure(&self) -> Result<&Path> {
        fs::create_dir_all(&self.path)
            .with_context(|| format!("{}: cannot create state directory", self.path.display()))?;
        Ok(&self.path)
    }

    pub fn db_path(&self) -> PathBuf {
        self.path.join(DB_FILE)
    }

    pub fn events_path(&self) -> PathBuf {
        self.path.join(EVENTS_FILE)
    }

    /// The default run directory: `<state>/run/`.
    pub fn default_run_dir(&self) -> PathBuf {
        self.path.join("run")
    }

    /// Resolve the run directory: `--run-dir`, else `PREMERGE_RUN_DIR`, else the default.
    pub fn run_dir(&self, explicit: Option<&Path>) -> PathBuf {
        if let Some(p) = explicit {
            return p.to_path_buf();
        }
        match std::env::var_os(RUN_DIR_ENV) {
            Some(v) if !v.is_empty() => PathBuf::from(v),
            _ => self.default_run_dir(),
        }
    }

    /// Open (creating and migrating as needed) the embedded database.
    pub fn open_db(&self) -> Result<Connection> {
        self.ensure()?;
        open_db(&self.db_path())
    }
}

/// `NN` in artefact names: the attempt or round number, two digits, zero-padded.
pub fn nn(n: u32) -> String {
    format!("{n:02}")
}

/// Write `bytes` to `path` atomically: temporary file in the same directory, fsync,
/// rename over the target, fsync of the directory.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir).with_context(|| format!("{}: cannot create directory", dir.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".premerge-tmp-")
        .tempfile_in(dir)
        .with_context(|| format!("{}: cannot create a temporary file", dir.display()))?;
    tmp.write_all(bytes).with_context(|| format!("{}: write failed", path.display()))?;
    tmp.as_file().sync_all().with_context(|| format!("{}: fsync failed", path.display()))?;
    tmp.persist(path).map_err(|e| anyhow!("{}: rename into place failed: {}", path.display(), e.error))?;
    if let Ok(d) = File::open(dir) {
        // A directory fsync makes the rename durable; some file systems refuse it, which
        // costs durability on a crash, never correctness, so its failure is ignored.
        let _ = d.sync_all();
    }
    Ok(())
}

/// An exclusive lock on a run directory, held until dropped.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
    pub path: PathBuf,
}

impl RunLock {
    /// Take the writer lock of `dir`, waiting at most [`LOCK_WAIT`].
    pub fn acquire(dir: &Path) -> Result<RunLock> {
        RunLock::acquire_within(dir, LOCK_WAIT)
    }

    /// Take the writer lock of `dir`, waiting at most `wait`.
    pub fn acquire_within(dir: &Path, wait: Duration) -> Result<RunLock> {
        fs::create_dir_all(dir).with_context(|| format!("{}: cannot create run directory", dir.display()))?;
        let path = dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("{}: cannot open lock file", path.display()))?;
        let start = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(RunLock { _file: file, path }),
                Err(fs::TryLockError::WouldBlock) => {
                    if start.elapsed() >= wait {
                        return Err(anyhow!(
                            "{}: another premerge process holds the run directory lock (waited {} ms); retry when it finishes",
                            path.display(),
                            wait.as_millis()
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(fs::TryLockError::Error(e)) => {
                    return Err(anyhow!("{}: cannot lock: {e}", path.display()));
                }
            }
        }
    }
}

/// Append one event as a canonical JSON line to `<dir>/events.jsonl`.
///
/// The event gets a `ts` field (RFC 3339, UTC) when it has none: an event log is one
/// of the places where a timestamp is the point. One `write` call per line with
/// `O_APPEND`, so concurrent appenders never interleave within a line.
pub fn append_event(dir: &Path, event: &Value) -> Result<()> {
    let mut ev = event.clone();
    if let Value::Object(map) = &mut ev {
        map.entry("ts").or_insert_with(|| Value::String(crate::store::now_rfc3339()));
    }
    fs::create_dir_all(dir).with_context(|| format!("{}: cannot create directory", dir.display()))?;
    let path = dir.join(EVENTS_FILE);
    let line = crate::canonical::to_line(&ev)?;
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("{}: cannot open event log", path.display()))?;
    f.write_all(line.as_bytes()).with_context(|| format!("{}: append failed", path.display()))?;
    Ok(())
}

/// Read every event of `<dir>/events.jsonl` (missing file: none). Lines that do not
/// parse are skipped: the log is append-only and a torn last line must not stop a reader.
pub fn read_events(dir: &Path) -> Result<Vec<Value>> {
    let path = dir.join(EVENTS_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(anyhow!("{}: cannot read: {e}", path.display())),
    };
    Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
}

/// Environment variable that pins the clock (RFC 3339), for reproducible tests and demos.
pub const FAKE_NOW_ENV: &str = "PREMERGE_FAKE_NOW";

/// The current time, UTC (or `PREMERGE_FAKE_NOW` when set and valid).
pub fn now() -> time::OffsetDateTime {
    if let Some(v) = std::env::var_os(FAKE_NOW_ENV)
        && let Some(s) = v.to_str()
        && let Ok(t) = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
    {
        return t.to_offset(time::UtcOffset::UTC);
    }
    time::OffsetDateTime::now_utc()
}

/// The current time as RFC 3339 with seconds, UTC (`2026-11-30T03:09:52Z`).
pub fn now_rfc3339() -> String {
    let t = now();
    let fmt = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
    t.format(&fmt).expect("a fixed UTC format cannot fail")
}

/// Schema migrations, applied in order; `PRAGMA user_version` records how many ran.
/// Append only: never edit a migration that has shipped.
pub const MIGRATIONS: &[(&str, &str)] = &[
    ("001_base", include_str!("../../sql/001_base.sql")),
    ("002_memories", include_str!("../../sql/002_memories.sql")),
    ("003_gate", include_str!("../../sql/003_gate.sql")),
];

/// Open a database file: created with mode 0600, WAL, a busy timeout, migrated.
pub fn open_db(path: &Path) -> Result<Connection> {
    if !path.exists() {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(path)
            .with_context(|| format!("{}: cannot create database", path.display()))?;
    }
    // The mode is enforced on every open: the database holds agent transcripts' verdicts
    // and memories, which are nobody else's business on a shared machine.
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))
        .with_context(|| format!("{}: cannot set mode 0600", path.display()))?;
    let mut conn = Connection::open(path).with_context(|| format!("{}: cannot open database", path.display()))?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .with_context(|| format!("{}: cannot enable WAL", path.display()))?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    migrate(&mut conn).with_context(|| format!("{}: migration failed", path.display()))?;
    Ok(conn)
}

/// Apply every migration newer than the database's `user_version`, each in its own
/// transaction together with the version bump.
pub fn migrate(conn: &mut Connection) -> Result<()> {
    let current: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if current as usize > MIGRATIONS.len() {
        return Err(anyhow!(
            "database schema version {current} is newer than this premerge ({}) understands; upgrade premerge",
            MIGRATIONS.len()
        ));
    }
    for (i, (name, sql)) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql).with_context(|| format!("migration {name}"))?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tx.commit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.json");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let leftovers: Vec<_> = fs::read_dir(d.path()).unwrap().filter_map(|e| e.ok()).collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
    }

    #[test]
    fn second_lock_times_out_with_message() {
        let d = tempfile::tempdir().unwrap();
        let _held = RunLock::acquire(d.path()).unwrap();
        let err = RunLock::acquire_within(d.path(), Duration::from_millis(50)).unwrap_err();
        assert!(err.to_string().contains("holds the run directory lock"), "{err}");
    }

    #[test]
    fn database_is_0600_and_migrated() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(DB_FILE);
        let conn = open_db(&p).unwrap();
        let v: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(v as usize, MIGRATIONS.len());
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        drop(conn);
        // Reopening applies nothing twice.
        open_db(&p).unwrap();
    }
}
