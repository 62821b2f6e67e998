//! The state on disk: the per-clone state directory, pipeline run directories,
//! atomic artefact writes, the run-directory lock, `events.jsonl`, and the SQLite
//! database `premerge.db`.
//!
//! Every artefact is written with [`atomic_write`]: temporary file in the same
//! directory, fsync, rename, fsync of the directory. A reader never sees a torn file.

pub mod background;
pub(crate) mod contain;
pub(crate) mod fence_plan;
pub(crate) mod fix_loop;
pub(crate) mod gate_db;
pub(crate) mod inventories;
pub mod memory_db;
pub mod proposals;
pub mod run_dir;
pub mod scan_cache;
pub(crate) mod tx;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use rusqlite::Connection;

/// An open connection to `premerge.db`, as the store hands it out: callers outside
/// `src/store/` name this type, never the SQLite crate.
pub(crate) type Db = Connection;
use serde_json::Value;

/// Name of the per-clone state directory inside the git common directory.
pub(crate) const STATE_DIR_NAME: &str = "premerge";
/// File name of the embedded database.
pub(crate) const DB_FILE: &str = "premerge.db";
/// File name of the append-only event log (in the state dir and in each run dir).
pub(crate) const EVENTS_FILE: &str = "events.jsonl";
/// File name of the writer lock inside a run directory.
pub(crate) const LOCK_FILE: &str = ".premerge.lock";
/// How long a writer waits for another writer of the same run directory before it
/// gives up with a clear message. Long enough for any single artefact write (they
/// take milliseconds), short enough that a stuck pipeline step is noticed.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(10);
/// Environment variable naming the pipeline run directory.
pub(crate) const RUN_DIR_ENV: &str = "PREMERGE_RUN_DIR";

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
    pub(crate) fn ensure(&self) -> Result<&Path> {
        create_dirs(&self.path).context("cannot create state directory")?;
        Ok(&self.path)
    }

    pub fn db_path(&self) -> PathBuf {
        self.path.join(DB_FILE)
    }

    /// The default run directory: `<state>/run/`.
    pub(crate) fn default_run_dir(&self) -> PathBuf {
        self.path.join("run")
    }

    /// Resolve the run directory: `--run-dir`, else `PREMERGE_RUN_DIR`, else the default.
    pub fn run_dir(&self, explicit: Option<&Path>) -> PathBuf {
        if let Some(p) = explicit {
            return p.to_path_buf();
        }
        match crate::env::process().var_os(RUN_DIR_ENV) {
            Some(v) if !v.is_empty() => PathBuf::from(v),
            _ => self.default_run_dir(),
        }
    }

    /// Open (creating and migrating as needed) the embedded database.
    pub fn open_db(&self) -> Result<Connection> {
        self.ensure()?;
        open_db(&self.db_path())
    }

    /// [`StateDir::open_db`] with a shorter wait for a locked database (the stop
    /// gate's hook: it fails open rather than keep the agent waiting).
    pub(crate) fn open_db_within(&self, busy: Duration) -> Result<Connection> {
        self.ensure()?;
        open_db_within(&self.db_path(), busy)
    }
}

/// `NN` in artefact names: the attempt or round number, two digits, zero-padded.
pub fn nn(n: u32) -> String {
    format!("{n:02}")
}

/// Prefix of every temporary file premerge writes next to its target.
pub(crate) const TMP_PREFIX: &str = ".premerge-tmp-";

/// Age after which a temporary file is taken for a leftover of a killed writer and
/// removed by the next write in its directory. A write takes milliseconds; an hour is
/// far beyond any live writer, even on a machine stalled by load.
pub(crate) const STALE_TMP_AGE: Duration = Duration::from_secs(3600);

/// Mode of artefacts meant for reviewers (wave plans, proposals, reports).
pub(crate) const MODE_SHARED: u32 = 0o644;
/// Mode of files that may hold an agent's text or a secret (gate log, transcripts' excerpts).
pub(crate) const MODE_PRIVATE: u32 = 0o600;

/// Write `bytes` to `path` atomically with mode 0644 (an artefact for reviewers):
/// temporary file in the same directory, fsync, rename over the target, fsync of the
/// directory.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<()> {
    atomic_write_mode(path, bytes, MODE_SHARED)
}

/// [`atomic_write`] with mode 0600, for anything holding an agent's text or a secret.
pub(crate) fn atomic_write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    atomic_write_mode(path, bytes, MODE_PRIVATE)
}

/// [`atomic_write`] with an explicit mode (set on the temporary file, so the target
/// never exists with another mode).
pub(crate) fn atomic_write_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    create_dirs(dir)?;
    remove_stale_temporaries(dir);
    let mut tmp = tempfile::Builder::new()
        .prefix(TMP_PREFIX)
        .permissions(fs::Permissions::from_mode(mode))
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

/// Create `dir` and its missing parents as `create_dir_all` does, except inside a
/// state directory: from its last component named `premerge` down, directories are
/// made one level at a time and the directory holding that component (a clone's git
/// common directory) is never made. A background job that outlives its repository
/// (CI deleting the workspace) then fails its writes instead of building a `.git`
/// at the deleted path, where the next `git clone` would refuse to go (issue 27, D12).
pub(crate) fn create_dirs(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let chain: Vec<&Path> = dir.ancestors().filter(|a| !a.as_os_str().is_empty()).collect();
    // `ancestors` runs from `dir` to the root: the first match is the state directory
    // itself (a clone checked out at `.../premerge/` has another above it, whose
    // `.git` must not be made either).
    let Some(top) = chain.iter().position(|a| a.file_name().is_some_and(|n| n == STATE_DIR_NAME)) else {
        return fs::create_dir_all(dir).with_context(|| format!("{}: cannot create directory", dir.display()));
    };
    for level in chain[..=top].iter().rev() {
        match fs::create_dir(level) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let holder = chain[top].parent().unwrap_or(Path::new("."));
                bail!(
                    "{}: no such directory (its repository was removed?); nothing is written there",
                    holder.display()
                );
            }
            Err(e) => bail!("{}: cannot create directory: {e}", level.display()),
        }
    }
    Ok(())
}

/// Remove this directory's temporary files older than [`STALE_TMP_AGE`]: what a
/// writer killed between create and rename leaves behind. Best effort: a file that
/// cannot be examined or removed is left for the next write.
pub(crate) fn remove_stale_temporaries(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    let now = std::time::SystemTime::now();
    let mut removed = 0;
    for e in entries.flatten() {
        if !e.file_name().as_encoded_bytes().starts_with(TMP_PREFIX.as_bytes()) {
            continue;
        }
        // symlink_metadata: a leftover is a regular file; anything else is not ours.
        let Ok(meta) = e.path().symlink_metadata() else { continue };
        let old = meta.modified().ok().and_then(|m| now.duration_since(m).ok()).is_some_and(|age| age > STALE_TMP_AGE);
        if meta.is_file() && old && fs::remove_file(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Create `dir` if needed and refuse it when it is a symlink: a run directory (or the
/// state directory) that resolves somewhere other than where it was asked to be, such
/// as a committed `run -> /etc`, would take premerge's writes outside the repository.
/// Only the last component is checked: a parent that is a symlink (a home directory on
/// another disk) is where the user put it.
pub(crate) fn ensure_real_dir(dir: &Path) -> Result<()> {
    if let Ok(meta) = fs::symlink_metadata(dir)
        && meta.file_type().is_symlink()
    {
        let target = fs::read_link(dir).map(|t| t.display().to_string()).unwrap_or_else(|_| "?".to_string());
        return Err(anyhow!(
            "{}: is a symlink (to {target}); premerge writes only into a real directory: give the real path with --run-dir",
            dir.display()
        ));
    }
    create_dirs(dir)
}

/// Open (creating with `mode`) a lock file without blocking on a FIFO standing in its
/// place (see [`open_append`]).
pub(crate) fn open_lock_file(path: &Path, mode: u32) -> Result<File> {
    open_writable(path, mode, false)
}

/// The store's one lock type: an exclusive `flock`, held until dropped. A run
/// directory is locked through its lock file ([`RunLock::acquire`]); a proposal root
/// through its `open/` directory itself ([`RunLock::acquire_dir`]), which leaves no
/// file behind in a tree that usually lives inside the working tree.
#[derive(Debug)]
pub(crate) struct RunLock {
    _file: File,
}

impl RunLock {
    /// Take the writer lock of `dir`, waiting at most [`LOCK_WAIT`].
    pub(crate) fn acquire(dir: &Path) -> Result<RunLock> {
        RunLock::acquire_within(dir, LOCK_WAIT)
    }

    /// Take the writer lock of `dir`, waiting at most `wait`.
    pub(crate) fn acquire_within(dir: &Path, wait: Duration) -> Result<RunLock> {
        ensure_real_dir(dir)?;
        let path = dir.join(LOCK_FILE);
        let file = open_lock_file(&path, MODE_SHARED)?;
        RunLock::hold(file, path, "run directory lock", wait, Duration::from_millis(20))
    }

    /// Take an exclusive lock on the directory `dir` itself (no lock file), waiting at
    /// most `wait`; `what` names the lock in the message of a timeout.
    pub(crate) fn acquire_dir(dir: &Path, what: &str, wait: Duration) -> Result<RunLock> {
        let file = File::open(dir).with_context(|| format!("{}: cannot open to lock", dir.display()))?;
        RunLock::hold(file, dir.to_path_buf(), what, wait, Duration::from_millis(10))
    }

    fn hold(file: File, path: PathBuf, what: &str, wait: Duration, poll: Duration) -> Result<RunLock> {
        let start = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(RunLock { _file: file }),
                Err(fs::TryLockError::WouldBlock) => {
                    if start.elapsed() >= wait {
                        return Err(anyhow!(
                            "{}: another premerge process holds the {what} (waited {} ms); retry when it finishes",
                            path.display(),
                            wait.as_millis()
                        ));
                    }
                    std::thread::sleep(poll);
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
pub fn append_event(dir: &Path, event: &crate::events::Event) -> Result<()> {
    let mut ev = event.to_value()?;
    if let Value::Object(map) = &mut ev {
        map.entry("ts").or_insert_with(|| Value::String(crate::store::now_rfc3339()));
    }
    ensure_real_dir(dir)?;
    let path = dir.join(EVENTS_FILE);
    let line = crate::canonical::to_line(&ev)?;
    // 0600: events can quote an agent's text (the gate's fallback rows, reasons).
    let mut f = open_append(&path, MODE_PRIVATE).context("cannot open event log")?;
    f.write_all(line.as_bytes()).with_context(|| format!("{}: append failed", path.display()))?;
    Ok(())
}

/// Open `path` for appending (created with `mode` when missing) without ever
/// blocking: `O_NONBLOCK`, so a FIFO standing there fails the open (no reader) instead
/// of waiting for one, and the descriptor is checked with `fstat` to be a regular file
/// before a byte is written (issue 27, D11: a FIFO at `events.jsonl` hung `plan`, a
/// push and the background job). On a regular file `O_NONBLOCK` changes nothing.
pub(crate) fn open_append(path: &Path, mode: u32) -> Result<File> {
    open_writable(path, mode, true)
}

/// [`open_append`]'s open, appending or not (a lock file is opened for writing only).
fn open_writable(path: &Path, mode: u32, append: bool) -> Result<File> {
    let f = OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(false)
        .mode(mode)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // What opening a FIFO with no reader for writing answers under O_NONBLOCK.
            Some(libc::ENXIO) => anyhow!("{}: is a FIFO; premerge writes only to a regular file", path.display()),
            _ => anyhow!("{}: cannot open for writing: {e}", path.display()),
        })?;
    let meta = f.metadata().with_context(|| format!("{}: cannot examine", path.display()))?;
    if let Some(what) = crate::input::not_regular(&meta.file_type()) {
        bail!("{}: is {what}; premerge writes only to a regular file", path.display());
    }
    Ok(f)
}

/// [`append_event`] for events that may hold an agent's text: the file is created
/// with mode 0600 and an existing file is set to 0600.
pub(crate) fn append_private_event(dir: &Path, event: &crate::events::Event) -> Result<()> {
    create_dirs(dir)?;
    let path = dir.join(EVENTS_FILE);
    let f = open_append(&path, MODE_PRIVATE).context("cannot open event log")?;
    f.set_permissions(fs::Permissions::from_mode(0o600))
        .with_context(|| format!("{}: cannot set mode 0600", path.display()))?;
    drop(f);
    append_event(dir, event)
}

/// How much of the end of an `events.jsonl` a reader takes: the artefact limit,
/// 32 MiB, about a hundred thousand events of a few hundred bytes. The log only grows,
/// and its readers (drain's pending halts, the stripe check's recorded observations)
/// want the recent events; a log beyond this is read from its end, never whole.
pub(crate) const EVENTS_TAIL_BYTES: u64 = 32 << 20;

/// Read the events of `<dir>/events.jsonl` (missing file: none), at most its last
/// [`EVENTS_TAIL_BYTES`], through `src/input.rs` (a FIFO or device there is an error,
/// never a hang). Lines that do not parse are skipped: the log is append-only and a
/// torn last line must not stop a reader.
pub fn read_events(dir: &Path) -> Result<Vec<Value>> {
    read_events_within(dir, EVENTS_TAIL_BYTES)
}

/// [`read_events`] with at most the last `limit` bytes.
pub(crate) fn read_events_within(dir: &Path, limit: u64) -> Result<Vec<Value>> {
    let path = dir.join(EVENTS_FILE);
    let bytes = match crate::input::read_tail(&path, crate::input::Kind::Artefact, limit) {
        Ok(b) => b,
        Err(e) if e.is_missing() => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    Ok(bytes.split(|b| *b == b'\n').filter_map(|l| serde_json::from_slice(l).ok()).collect())
}

/// Environment variable that pins the clock (RFC 3339), for reproducible tests and demos.
pub(crate) const FAKE_NOW_ENV: &str = "PREMERGE_FAKE_NOW";

/// The current time, UTC (or `PREMERGE_FAKE_NOW` when set and valid).
pub fn now() -> time::OffsetDateTime {
    if let Some(s) = crate::env::process().var(FAKE_NOW_ENV)
        && let Ok(t) = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
    {
        return t.to_offset(time::UtcOffset::UTC);
    }
    time::OffsetDateTime::now_utc()
}

/// The current time as RFC 3339 with seconds, UTC (`2026-11-30T03:09:52Z`).
pub(crate) fn now_rfc3339() -> String {
    let t = now();
    let fmt = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
    t.format(&fmt).expect("a fixed UTC format cannot fail")
}

/// Schema migrations, applied in order; `PRAGMA user_version` records how many ran.
/// Append only: never edit a migration that has shipped.
pub(crate) const MIGRATIONS: &[(&str, &str)] = &[
    ("001_base", include_str!("../../sql/001_base.sql")),
    ("002_memories", include_str!("../../sql/002_memories.sql")),
    ("003_gate", include_str!("../../sql/003_gate.sql")),
    ("004_gate_annotation_dwell", include_str!("../../sql/004_gate_annotation_dwell.sql")),
];

/// How long a command waits for a locked database: long enough for any other
/// premerge write (they take milliseconds), short enough that a stuck process is noticed.
pub(crate) const DB_BUSY: Duration = Duration::from_secs(5);
/// How long an opener waits for another process's schema migration of the same
/// database (once per clone, a few milliseconds of work).
pub(crate) const MIGRATION_WAIT: Duration = Duration::from_secs(10);

/// Open a database file: created with mode 0600, WAL, a busy timeout, migrated.
pub fn open_db(path: &Path) -> Result<Connection> {
    open_db_within(path, DB_BUSY)
}

/// [`open_db`] waiting at most `busy` for a locked database. Migrations run under an
/// exclusive lock file beside the database, so concurrent first opens of a fresh
/// database wait for one another instead of failing with "database is locked".
pub(crate) fn open_db_within(path: &Path, busy: Duration) -> Result<Connection> {
    // Created (or found) as a regular file first: SQLite's own open would wait forever
    // on a FIFO standing there, and a device is nobody's database.
    drop(open_writable(path, MODE_PRIVATE, false)?);
    // The mode is enforced on every open: the database holds agent transcripts' verdicts
    // and memories, which are nobody else's business on a shared machine.
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))
        .with_context(|| format!("{}: cannot set mode 0600", path.display()))?;
    let mut conn = Connection::open(path).with_context(|| format!("{}: cannot open database", path.display()))?;
    conn.busy_timeout(busy)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    let ready = |c: &Connection| -> bool {
        let wal = c
            .pragma_query_value(None, "journal_mode", |r| r.get::<_, String>(0))
            .is_ok_and(|m| m.eq_ignore_ascii_case("wal"));
        let version = c.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0)).ok();
        wal && version.is_some_and(|v| v as usize >= MIGRATIONS.len())
    };
    if !ready(&conn) {
        let _lock = migration_lock(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .with_context(|| format!("{}: cannot enable WAL", path.display()))?;
        migrate(&mut conn).with_context(|| format!("{}: migration failed", path.display()))?;
    }
    Ok(conn)
}

/// The exclusive lock file of a database's migrations, waiting at most [`MIGRATION_WAIT`].
fn migration_lock(db: &Path) -> Result<File> {
    let mut name = db.as_os_str().to_owned();
    name.push(".migrate-lock");
    let path = PathBuf::from(name);
    let file = open_lock_file(&path, MODE_PRIVATE)?;
    let start = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(fs::TryLockError::WouldBlock) if start.elapsed() < MIGRATION_WAIT => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(fs::TryLockError::WouldBlock) => {
                return Err(anyhow!("{}: another process is migrating the database", path.display()));
            }
            Err(fs::TryLockError::Error(e)) => return Err(anyhow!("{}: cannot lock: {e}", path.display())),
        }
    }
}

/// Apply every migration newer than the database's `user_version`, each in its own
/// transaction together with the version bump.
pub(crate) fn migrate(conn: &mut Connection) -> Result<()> {
    let current: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if current as usize > MIGRATIONS.len() {
        return Err(anyhow!(
            "database schema version {current} is newer than this premerge ({}) understands; upgrade premerge",
            MIGRATIONS.len()
        ));
    }
    for (i, (name, sql)) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        // IMMEDIATE: the write lock is taken first, and the version read again under
        // it, so a migration another connection finished meanwhile is not run twice.
        tx::immediate(conn, |tx| {
            let now: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
            if now as usize > i {
                return Ok(());
            }
            tx.execute_batch(sql).with_context(|| format!("migration {name}"))?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            Ok::<_, anyhow::Error>(())
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_from_the_end_of_a_long_log_whole_lines_only() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..100 {
            let ev = crate::events::Event::BackgroundJobFinished { pid: 1, entries_done: n };
            append_event(dir.path(), &ev).unwrap();
        }
        let all = read_events(dir.path()).unwrap();
        assert_eq!(all.len(), 100);
        // 200 bytes hold the last few events; the line cut at the start is dropped,
        // never parsed as half an event.
        let tail = read_events_within(dir.path(), 200).unwrap();
        assert!(!tail.is_empty() && tail.len() < 100);
        assert_eq!(tail.last().unwrap()["entries_done"], 99);
        let first = tail[0]["entries_done"].as_i64().unwrap();
        let want: Vec<i64> = (first..100).collect();
        assert_eq!(tail.iter().map(|e| e["entries_done"].as_i64().unwrap()).collect::<Vec<_>>(), want);
    }

    #[test]
    fn an_events_log_that_is_a_fifo_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let c = std::ffi::CString::new(dir.path().join(EVENTS_FILE).to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_events(dir.path()).unwrap_err().to_string();
        assert!(e.contains("a FIFO"), "{e}");
        assert!(read_events(&dir.path().join("missing")).unwrap().is_empty());
    }

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
    fn artefacts_are_0644_and_private_files_0600() {
        let d = tempfile::tempdir().unwrap();
        let shared = d.path().join("fix-waves-01.json");
        let private = d.path().join("gate-note.json");
        atomic_write(&shared, b"{}").unwrap();
        atomic_write_private(&private, b"{}").unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        // The process umask can only take bits away: reviewers' artefacts are readable
        // by the group and others unless the user's umask says otherwise.
        let umask = {
            let probe = d.path().join("probe");
            fs::OpenOptions::new().create(true).truncate(true).write(true).mode(0o777).open(&probe).unwrap();
            0o777 & !mode(&probe)
        };
        assert_eq!(mode(&shared), 0o644 & !umask);
        assert_eq!(mode(&private), 0o600);
        // Rewriting keeps the mode of the kind, not of the old file.
        atomic_write_private(&shared, b"{}").unwrap();
        assert_eq!(mode(&shared), 0o600);
    }

    /// Regression (issue 15): temporary files of writers killed mid-write were never cleaned.
    #[test]
    fn stale_temporaries_are_removed_by_the_next_write() {
        let d = tempfile::tempdir().unwrap();
        let old = d.path().join(format!("{TMP_PREFIX}killed"));
        let fresh = d.path().join(format!("{TMP_PREFIX}live"));
        let foreign = d.path().join("notes.tmp");
        for p in [&old, &fresh, &foreign] {
            fs::write(p, b"x").unwrap();
        }
        let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
        for p in [&old, &foreign] {
            File::options().write(true).open(p).unwrap().set_modified(two_hours_ago).unwrap();
        }
        atomic_write(&d.path().join("a.json"), b"{}").unwrap();
        assert!(!old.exists(), "a two-hour-old temporary is a leftover");
        assert!(fresh.exists(), "a recent one may belong to a live writer");
        assert!(foreign.exists(), "files premerge did not name are not touched");
    }

    /// Regression (issue 15): a run directory that was a symlink to `/etc` got a wave
    /// plan, a lock and an event log written there.
    #[test]
    fn a_run_directory_that_is_a_symlink_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let elsewhere = d.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        let run = d.path().join("run");
        std::os::unix::fs::symlink(&elsewhere, &run).unwrap();
        let e = RunLock::acquire(&run).unwrap_err().to_string();
        assert!(e.contains("is a symlink") && e.contains("--run-dir"), "{e}");
        let ev = crate::events::Event::Converge { attempt: 1, decision: crate::waves::converge::Decision::Continue };
        assert!(append_event(&run, &ev).is_err());
        assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0, "nothing was written through the link");
        // A real directory, and one reached through a symlinked parent, are fine.
        let parent_link = d.path().join("parent");
        std::os::unix::fs::symlink(&elsewhere, &parent_link).unwrap();
        RunLock::acquire(&parent_link.join("run")).unwrap();
        append_event(&parent_link.join("run"), &ev).unwrap();
    }

    /// Regression (issue 27, D12): a state directory is made only inside a git
    /// directory that exists, even for a clone whose own directory is named
    /// `premerge` (this project's CI checkout).
    #[test]
    fn a_state_directory_is_never_made_where_the_repository_was() {
        let d = tempfile::tempdir().unwrap();
        let gone = d.path().join("premerge").join(".git");
        let state = gone.join(STATE_DIR_NAME).join("background").join("pending");
        let e = create_dirs(&state).unwrap_err().to_string();
        assert!(e.contains("no such directory"), "{e}");
        assert!(!d.path().join("premerge").exists(), "nothing was made");
        assert!(atomic_write(&state.join("x.json"), b"{}").is_err());
        assert!(
            append_event(
                &gone.join(STATE_DIR_NAME),
                &crate::events::Event::BackgroundJobFinished { pid: 1, entries_done: 0 }
            )
            .is_err()
        );
        assert!(StateDir::new(&gone).ensure().is_err());
        assert!(!d.path().join("premerge").exists(), "nothing was made");
        // With the git directory there, every level is made; elsewhere, as create_dir_all.
        fs::create_dir_all(&gone).unwrap();
        create_dirs(&state).unwrap();
        assert!(state.is_dir());
        let plain = d.path().join("a").join("b");
        create_dirs(&plain).unwrap();
        assert!(plain.is_dir());
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
