//! The fix loops of a clone: one record per worktree, each loop with its own run
//! directory, attempt counter and artefacts.
//!
//! A loop opens with `premerge plan --attempt 1`, follows the attempts of its run
//! directory, and closes when `converge` says `STOP_*` or an operator runs `premerge loop
//! close`. The pre-push fence of a worktree is active exactly while that worktree's
//! record says `open`; it judges against the plan of the record's attempt in the
//! record's run directory, never a plan guessed from file names, nor the environment of
//! the push it judges.
//!
//! Where the records are (`<state>` is `<git common dir>/premerge/`):
//! - the main worktree (and a bare repository): `<state>/fix-loop.json`, where every
//!   earlier premerge kept the clone's one loop;
//! - a linked worktree `<common dir>/worktrees/<name>`: `<state>/worktrees/<name>/fix-loop.json`.
//!
//! A record of schema version 1 was written by a premerge that kept one loop per clone:
//! it is honoured in every worktree that has no record of its own, so an open loop of
//! an older premerge keeps fencing until it closes (its migration is its next write).
//! A loop's default run directory is `<state>/loops/<loop id>/`, fresh for every loop.
//!
//! Records are premerge's own state: written atomically under one clone-wide lock, read
//! with a byte limit. A record that exists but cannot be read is not guessed at: the
//! fence treats it as an open loop it cannot trust (fails closed) and `premerge loop
//! close` removes it. A state path that is not a directory holds no loop.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{RunLock, StateDir};

/// File name of a loop record.
pub(crate) const LOOP_FILE: &str = "fix-loop.json";
/// Directory (inside the state directory) of the linked worktrees' records.
pub(crate) const WORKTREES_DIR: &str = "worktrees";
/// Directory (inside the state directory) of the loops' default run directories.
pub(crate) const LOOPS_DIR: &str = "loops";
/// The record key of the main worktree (and of a bare repository).
pub(crate) const MAIN_WORKTREE: &str = "main";
/// Largest loop record read: the record is a handful of short fields (well under
/// 1 KiB); anything near this limit was not written by premerge.
pub(crate) const MAX_LOOP_BYTES: u64 = 64 * 1024;
/// Schema version of the records this premerge writes: 2 adds `worktree` (one loop per
/// worktree). Version 1 (one loop per clone) is still read.
pub(crate) const LOOP_SCHEMA_VERSION: u32 = 2;
/// The schema version of the one-loop-per-clone records of earlier premerge versions.
pub(crate) const LEGACY_SCHEMA_VERSION: u32 = 1;
/// Most worktree records `converge` looks through for the loop of its run directory:
/// far beyond the worktrees a runner keeps; a clone with more is named in an error
/// rather than read without end.
pub(crate) const MAX_WORKTREE_RECORDS: usize = 4096;
/// Most tries for a loop id no loop of the clone has had: an 8-hex id from the time in
/// nanoseconds, the process and a counter collides with one in 4 billion; a few
/// retries make a repeat impossible in practice, and a bound keeps it a loop that ends.
const MAX_ID_TRIES: u32 = 64;

/// Whether a loop still fences pushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LoopState {
    Open,
    Closed,
}

/// The loop record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FixLoop {
    pub schema_version: u32,
    /// `loop-<8 hex>`, unique among the clone's loops (even two opened in one second).
    pub id: String,
    pub state: LoopState,
    /// The run directory, absolute (canonical when it exists).
    pub run_dir: String,
    /// The latest attempt planned in this loop: the plan the fence judges by.
    pub attempt: u32,
    /// RFC 3339, UTC.
    pub opened_at: String,
    pub closed_at: Option<String>,
    /// What closed it: `converge STOP_GREEN` (or another STOP_*), `operator`.
    pub closed_by: Option<String>,
    /// The worktree whose pushes the loop fences: `main`, or a linked worktree's name.
    /// Absent in a schema 1 record (one loop for every worktree of the clone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
}

impl FixLoop {
    pub(crate) fn is_open(&self) -> bool {
        self.state == LoopState::Open
    }

    pub(crate) fn run_dir_path(&self) -> PathBuf {
        PathBuf::from(&self.run_dir)
    }

    /// The worktree the loop fences, for messages.
    pub(crate) fn worktree_name(&self) -> &str {
        self.worktree.as_deref().unwrap_or("every worktree (a schema 1 record)")
    }
}

/// What the state directory says about a worktree's loop.
#[derive(Debug)]
pub(crate) enum LoopRecord {
    /// No record: no loop was ever opened for this worktree (or the state path is not
    /// a directory, which holds none).
    Absent,
    /// A well-formed record.
    Loop(FixLoop),
    /// A record that exists and cannot be trusted (why).
    Unreadable(String),
}

/// The worktree whose loop is meant: the clone's state directory and the worktree's key.
#[derive(Debug, Clone)]
pub(crate) struct LoopPlace {
    pub state: StateDir,
    /// `main`, or the linked worktree's name under `<common dir>/worktrees/`.
    pub worktree: String,
}

/// Whether a linked worktree's name can be a directory name of ours as it is.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl LoopPlace {
    /// The place of the worktree whose git directory is `git_dir` in the clone whose
    /// common directory is `common_dir` (both as git or libgit2 name them).
    pub(crate) fn of_dirs(git_dir: &Path, common_dir: &Path) -> LoopPlace {
        let canon = |p: &Path| fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let (g, c) = (canon(git_dir), canon(common_dir));
        let worktree = if g == c {
            MAIN_WORKTREE.to_string()
        } else {
            let linked = g.parent().is_some_and(|p| p == c.join("worktrees"));
            match g.file_name().and_then(|n| n.to_str()) {
                Some(n) if linked && plain_name(n) && n != MAIN_WORKTREE => n.to_string(),
                // A git directory outside `<common>/worktrees/` (or with an odd name):
                // keyed by its path, so two of them never share a record.
                _ => {
                    let h = Sha256::digest(g.as_os_str().as_encoded_bytes());
                    let hex: String = h.iter().take(8).map(|b| format!("{b:02x}")).collect();
                    format!("gitdir-{hex}")
                }
            }
        };
        LoopPlace { state: StateDir::new(&c), worktree }
    }

    /// The place of an open repository's worktree.
    pub(crate) fn of_repo(repo: &crate::git::Repo) -> LoopPlace {
        LoopPlace::of_dirs(&repo.git_dir(), &repo.common_dir())
    }

    /// The place git names for the repository at `cwd` (no libgit2).
    pub(crate) fn of_located(l: &crate::git::locate::Located) -> LoopPlace {
        LoopPlace::of_dirs(&l.git_dir, &l.common_dir)
    }

    fn is_main(&self) -> bool {
        self.worktree == MAIN_WORKTREE
    }

    /// Path of this worktree's own record.
    pub(crate) fn record_path(&self) -> PathBuf {
        if self.is_main() {
            self.state.path.join(LOOP_FILE)
        } else {
            self.state.path.join(WORKTREES_DIR).join(&self.worktree).join(LOOP_FILE)
        }
    }
}

/// Directory holding the loop records' writer lock. Not the state directory's own lock:
/// `plan --run-dir <state dir>` holds that one while it records the loop.
pub(crate) const LOOP_LOCK_DIR: &str = "fix-loop.lock.d";

fn lock(state: &StateDir) -> Result<RunLock> {
    RunLock::acquire(&state.path.join(LOOP_LOCK_DIR))
}

/// Path of the main worktree's record (and of the schema 1 record of every worktree).
pub(crate) fn loop_path(state: &StateDir) -> PathBuf {
    state.path.join(LOOP_FILE)
}

/// Why the state path holds no loop: it exists and is not a directory (a file left by
/// something else). `None` when it is a directory or absent.
pub(crate) fn state_path_problem(state: &StateDir) -> Option<String> {
    match fs::symlink_metadata(&state.path) {
        Ok(m) if !m.is_dir() => Some(format!(
            "{}: not a directory, so it holds no fix loop and premerge keeps no state there",
            state.path.display()
        )),
        _ => None,
    }
}

/// Absolute, canonical (when it exists) form of a run directory, as the record holds it.
pub(crate) fn canonical_run_dir(run_dir: &Path) -> Result<String> {
    let p = fs::canonicalize(run_dir).unwrap_or_else(|_| run_dir.to_path_buf());
    p.to_str().map(str::to_string).ok_or_else(|| anyhow!("{}: run directory is not UTF-8", p.display()))
}

/// Read the record at `path` (any schema this premerge reads).
fn read_at(path: &Path) -> LoopRecord {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return LoopRecord::Absent,
        Err(e) => return LoopRecord::Unreadable(format!("{}: cannot read: {e}", path.display())),
    };
    if !meta.is_file() {
        return LoopRecord::Unreadable(format!("{}: not a regular file", path.display()));
    }
    let mut text = String::new();
    let read = fs::File::open(path).and_then(|f| f.take(MAX_LOOP_BYTES + 1).read_to_string(&mut text));
    if let Err(e) = read {
        return LoopRecord::Unreadable(format!("{}: cannot read: {e}", path.display()));
    }
    if text.len() as u64 > MAX_LOOP_BYTES {
        return LoopRecord::Unreadable(format!("{}: larger than {MAX_LOOP_BYTES} bytes", path.display()));
    }
    match serde_json::from_str::<FixLoop>(&text) {
        Ok(l) if l.schema_version == LOOP_SCHEMA_VERSION && l.worktree.is_some() => LoopRecord::Loop(l),
        Ok(l) if l.schema_version == LEGACY_SCHEMA_VERSION && l.worktree.is_none() => LoopRecord::Loop(l),
        Ok(l) => LoopRecord::Unreadable(format!(
            "{}: schema_version {} is not {LEGACY_SCHEMA_VERSION} or {LOOP_SCHEMA_VERSION} (or its worktree field does not match it)",
            path.display(),
            l.schema_version
        )),
        Err(e) => LoopRecord::Unreadable(format!("{}: not a loop record: {e}", path.display())),
    }
}

/// Where a worktree's loop comes from: its own record, or a schema 1 record of the
/// clone that a linked worktree without a record of its own still honours.
fn locate_record(place: &LoopPlace) -> (PathBuf, LoopRecord) {
    if state_path_problem(&place.state).is_some() {
        return (place.record_path(), LoopRecord::Absent);
    }
    let own = place.record_path();
    let rec = read_at(&own);
    if place.is_main() || !matches!(rec, LoopRecord::Absent) {
        return (own, rec);
    }
    let legacy = loop_path(&place.state);
    match read_at(&legacy) {
        LoopRecord::Loop(l) if l.schema_version == LEGACY_SCHEMA_VERSION => (legacy, LoopRecord::Loop(l)),
        // A record there that cannot be read may be an open clone-wide loop: fail closed.
        LoopRecord::Unreadable(why) => (legacy, LoopRecord::Unreadable(why)),
        _ => (own, LoopRecord::Absent),
    }
}

/// Read the loop of a worktree.
pub(crate) fn read(place: &LoopPlace) -> LoopRecord {
    locate_record(place).1
}

fn write(path: &Path, l: &FixLoop) -> Result<()> {
    let text = crate::canonical::to_line(&serde_json::to_value(l)?)?;
    super::atomic_write(path, text.as_bytes())
}

/// The default run directory of the loop `id`: `<state>/loops/<id>/`.
pub(crate) fn loop_run_dir(state: &StateDir, id: &str) -> PathBuf {
    state.path.join(LOOPS_DIR).join(id)
}

/// Counter mixed into loop ids, so two ids made by one process differ whatever the clock.
static ID_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A loop id no loop of the clone has (its default run directory does not exist, and it
/// is not `avoid`): from the time in nanoseconds, the process id and a counter, so two
/// loops opened in one second, even by two processes, get different ids.
fn fresh_id(state: &StateDir, worktree: &str, avoid: &[&str]) -> Result<String> {
    for _ in 0..MAX_ID_TRIES {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let n = ID_COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let seed = format!("{}\n{worktree}\n{nanos}\n{}\n{n}", state.path.display(), std::process::id());
        let h = Sha256::digest(seed.as_bytes());
        let hex: String = h.iter().take(4).map(|b| format!("{b:02x}")).collect();
        let id = format!("loop-{hex}");
        if !avoid.contains(&id.as_str()) && fs::symlink_metadata(loop_run_dir(state, &id)).is_err() {
            return Ok(id);
        }
    }
    bail!("{}: no unused fix loop id after {MAX_ID_TRIES} tries", state.path.join(LOOPS_DIR).display())
}

/// Every record of the clone (the main worktree's and each linked worktree's), with its
/// path. At most [`MAX_WORKTREE_RECORDS`] linked worktrees are looked at.
fn all_records(state: &StateDir) -> Result<Vec<(PathBuf, LoopRecord)>> {
    let mut out = vec![(loop_path(state), read_at(&loop_path(state)))];
    let dir = state.path.join(WORKTREES_DIR);
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => bail!("{}: cannot list: {e}", dir.display()),
    };
    let mut names: Vec<PathBuf> = Vec::new();
    for e in entries {
        let e = e.map_err(|e| anyhow!("{}: cannot list: {e}", dir.display()))?;
        if names.len() == MAX_WORKTREE_RECORDS {
            bail!("{}: more than {MAX_WORKTREE_RECORDS} worktree records", dir.display());
        }
        names.push(e.path().join(LOOP_FILE));
    }
    names.sort();
    out.extend(names.into_iter().map(|p| {
        let r = read_at(&p);
        (p, r)
    }));
    Ok(out)
}

/// The open loops of the clone's other worktrees (not `place`'s own), for `loop status`.
/// A record that cannot be read is left out here: its own worktree's fence reports it.
pub(crate) fn others_open(place: &LoopPlace) -> Result<Vec<FixLoop>> {
    if state_path_problem(&place.state).is_some() {
        return Ok(Vec::new());
    }
    let me = locate_record(place).0;
    Ok(all_records(&place.state)?
        .into_iter()
        .filter(|(path, _)| *path != me)
        .filter_map(|(_, rec)| match rec {
            LoopRecord::Loop(l) if l.is_open() && l.worktree.is_some() => Some(l),
            _ => None,
        })
        .collect())
}

/// The open loop of another worktree whose run directory is `run_dir`, if any.
fn other_owner(state: &StateDir, me: &Path, run_dir: &str) -> Result<Option<FixLoop>> {
    for (path, rec) in all_records(state)? {
        if let LoopRecord::Loop(l) = rec
            && l.is_open()
            && l.run_dir == run_dir
            && path != me
            && l.schema_version == LOOP_SCHEMA_VERSION
        {
            return Ok(Some(l));
        }
    }
    Ok(None)
}

/// The run directory given to a command: `--run-dir`, else `PREMERGE_RUN_DIR`.
pub(crate) fn given_run_dir(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    match crate::env::process().var_os(super::RUN_DIR_ENV) {
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => None,
    }
}

/// The run directory of a command other than the `plan` that opens a loop: the given
/// one, else the run directory of this worktree's latest loop (open or closed), else
/// `<state>/run` (no loop was ever opened here).
pub(crate) fn resolve_run_dir(place: &LoopPlace, explicit: Option<&Path>) -> PathBuf {
    if let Some(g) = given_run_dir(explicit) {
        return g;
    }
    match read(place) {
        LoopRecord::Loop(l) => l.run_dir_path(),
        LoopRecord::Absent | LoopRecord::Unreadable(_) => place.state.default_run_dir(),
    }
}

/// The run directory `plan --attempt N` writes into when none is given, and the id of
/// the loop it opens when that directory is a fresh one.
#[derive(Debug)]
pub(crate) struct PlanDir {
    pub run_dir: PathBuf,
    pub fresh_id: Option<String>,
}

/// `plan --attempt N` without a run directory: attempt 1 opens a loop in a fresh
/// `<state>/loops/<id>/`; a later attempt continues in the run directory of this
/// worktree's latest loop, and there is none to continue without a loop.
pub(crate) fn plan_run_dir(place: &LoopPlace, attempt: u32) -> Result<PlanDir> {
    if attempt > 1 {
        return match read(place) {
            LoopRecord::Loop(l) => Ok(PlanDir { run_dir: l.run_dir_path(), fresh_id: None }),
            LoopRecord::Absent => Err(crate::error::input_error(
                format!("plan --attempt {attempt}"),
                "no fix loop in this worktree to continue and no run directory given: open the loop with --attempt 1, or give --run-dir",
            )),
            LoopRecord::Unreadable(why) => {
                bail!("fix loop record unreadable: {why}; `premerge loop close` resets it")
            }
        };
    }
    if let Some(p) = state_path_problem(&place.state) {
        bail!("{p}");
    }
    place.state.ensure()?;
    let _lock = lock(&place.state)?;
    let previous = match read(place) {
        LoopRecord::Loop(l) => Some(l.id),
        _ => None,
    };
    let avoid: Vec<&str> = previous.iter().map(String::as_str).collect();
    let id = fresh_id(&place.state, &place.worktree, &avoid)?;
    let run_dir = loop_run_dir(&place.state, &id);
    // Created under the lock: the next fresh id sees it taken.
    super::ensure_real_dir(&run_dir)?;
    Ok(PlanDir { run_dir, fresh_id: Some(id) })
}

/// What [`record_plan`] did.
#[derive(Debug)]
pub(crate) struct Opened {
    pub current: FixLoop,
    /// True when this plan opened a new loop (rather than advancing the open one).
    pub new: bool,
    /// True when this plan opened this worktree's closed loop of the same run
    /// directory again (same id): a pipeline resumed after a close.
    pub reopened: bool,
    /// This worktree's open loop that this plan replaced (another run directory, or an
    /// earlier first attempt).
    pub replaced: Option<FixLoop>,
    /// Where the artefacts of an earlier loop in the same run directory were moved, and
    /// how many.
    pub set_aside: Option<(PathBuf, usize)>,
}

/// Record that `plan --attempt N` writes a plan in `run_dir`: attempt 1 opens a new
/// loop (artefacts an earlier loop left in `run_dir` are moved aside first); a later
/// attempt advances this worktree's loop of the same run directory (opening it again
/// when it was closed: a pipeline resumed after a close is fenced again), or opens a
/// loop there when this worktree's latest loop is of another run directory. A run directory of
/// another worktree's open loop is refused: two loops never share one.
pub(crate) fn record_plan(place: &LoopPlace, run_dir: &Path, attempt: u32, fresh: Option<String>) -> Result<Opened> {
    if let Some(p) = state_path_problem(&place.state) {
        bail!("{p}");
    }
    let state = &place.state;
    state.ensure()?;
    let _lock = lock(state)?;
    let run_dir_s = canonical_run_dir(run_dir)?;
    let me = place.record_path();
    if let Some(o) = other_owner(state, &me, &run_dir_s)? {
        return Err(crate::error::input_error(
            format!("run directory {run_dir_s}"),
            format!(
                "fix loop {} of worktree {} is open there (attempt {}): give this pipeline its own run directory, or close that loop with `premerge loop close` in that worktree",
                o.id,
                o.worktree_name(),
                o.attempt
            ),
        ));
    }
    let (src, rec) = locate_record(place);
    let latest = match rec {
        LoopRecord::Loop(l) => Some(l),
        LoopRecord::Absent | LoopRecord::Unreadable(_) => None,
    };
    let previous = latest.clone().filter(FixLoop::is_open);
    if let Some(p) = &latest
        && attempt > 1
        && p.run_dir == run_dir_s
    {
        // The same loop goes on: advanced while open, or opened again when this
        // worktree's loop of this run directory was closed (a pipeline resumed after a
        // close keeps its id and its artefacts, and is fenced again).
        let reopened = !p.is_open();
        let mut current = p.clone();
        current.attempt = attempt;
        current.state = LoopState::Open;
        current.closed_at = None;
        current.closed_by = None;
        // Migration: the record is written as this worktree's own, schema 2.
        current.schema_version = LOOP_SCHEMA_VERSION;
        current.worktree = Some(place.worktree.clone());
        write(&me, &current)?;
        if src != me && p.is_open() {
            // A linked worktree took over the clone-wide loop of an older premerge:
            // that record no longer fences the other worktrees.
            let mut old = p.clone();
            old.state = LoopState::Closed;
            old.closed_at = Some(super::now_rfc3339());
            old.closed_by = Some(format!("moved to worktree {}", place.worktree));
            write(&src, &old)?;
        }
        return Ok(Opened { current, new: false, reopened, replaced: None, set_aside: None });
    }
    let id = match fresh {
        Some(id) => id,
        None => {
            let avoid: Vec<&str> = previous.iter().map(|p| p.id.as_str()).collect();
            fresh_id(state, &place.worktree, &avoid)?
        }
    };
    // Nothing of an earlier loop stays where this one's commands look: its plans,
    // classified files and blocked-on rows move to a dated subdirectory.
    let set_aside = if attempt == 1 { super::run_dir::set_aside_artefacts(run_dir)? } else { None };
    let opened_at = super::now_rfc3339();
    let current = FixLoop {
        schema_version: LOOP_SCHEMA_VERSION,
        id,
        state: LoopState::Open,
        run_dir: run_dir_s,
        attempt,
        opened_at,
        closed_at: None,
        closed_by: None,
        worktree: Some(place.worktree.clone()),
    };
    write(&me, &current)?;
    if let Some(p) = &previous
        && src != me
    {
        // The clone-wide loop of an older premerge, replaced from a linked worktree.
        let mut old = p.clone();
        old.state = LoopState::Closed;
        old.closed_at = Some(current.opened_at.clone());
        old.closed_by = Some(format!("replaced by {} in worktree {}", current.id, place.worktree));
        write(&src, &old)?;
    }
    Ok(Opened { current, new: true, reopened: false, replaced: previous, set_aside })
}

/// What `premerge loop close` did.
#[derive(Debug)]
pub(crate) enum Closed {
    /// No open loop in this worktree.
    Nothing,
    /// This loop was open and is now closed.
    Loop(FixLoop),
    /// A record that could not be read was removed (why it could not be read).
    Cleared(String),
    /// The state path is not a directory: there is no record to close (why).
    NoState(String),
}

/// The operator's close of this worktree's loop: an open loop is closed, an unreadable
/// record removed (a symlink or directory in its place is removed, never followed).
pub(crate) fn close_operator(place: &LoopPlace) -> Result<Closed> {
    if let Some(p) = state_path_problem(&place.state) {
        return Ok(Closed::NoState(p));
    }
    if matches!(read(place), LoopRecord::Absent) {
        return Ok(Closed::Nothing);
    }
    let _lock = lock(&place.state)?;
    let (path, rec) = locate_record(place);
    match rec {
        LoopRecord::Absent => Ok(Closed::Nothing),
        LoopRecord::Loop(l) if !l.is_open() => Ok(Closed::Nothing),
        LoopRecord::Loop(mut l) => {
            l.state = LoopState::Closed;
            l.closed_at = Some(super::now_rfc3339());
            l.closed_by = Some("operator".into());
            write(&path, &l)?;
            Ok(Closed::Loop(l))
        }
        LoopRecord::Unreadable(why) => {
            let meta = fs::symlink_metadata(&path);
            let removed =
                if meta.is_ok_and(|m| m.is_dir()) { fs::remove_dir_all(&path) } else { fs::remove_file(&path) };
            match removed {
                Ok(()) => Ok(Closed::Cleared(why)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Closed::Cleared(why)),
                Err(e) => Err(anyhow!("{}: cannot remove the unreadable fix loop record: {e}", path.display())),
            }
        }
    }
}

/// `converge` said `STOP_*` for `run_dir`: close every open loop of the clone whose run
/// directory it is (whichever worktree converge runs in). Returns the first closed.
pub(crate) fn close_run_dir(state: &StateDir, by: &str, run_dir: &Path) -> Result<Option<FixLoop>> {
    if state_path_problem(state).is_some() || fs::symlink_metadata(&state.path).is_err() {
        return Ok(None);
    }
    let run_dir = canonical_run_dir(run_dir)?;
    let _lock = lock(state)?;
    let now = super::now_rfc3339();
    let mut first = None;
    for (path, rec) in all_records(state)? {
        let LoopRecord::Loop(mut l) = rec else { continue };
        if !l.is_open() || l.run_dir != run_dir {
            continue;
        }
        l.state = LoopState::Closed;
        l.closed_at = Some(now.clone());
        l.closed_by = Some(by.to_string());
        write(&path, &l)?;
        first.get_or_insert(l);
    }
    Ok(first)
}

/// `plan --attempt N` writes a plan in `run_dir`: open or advance the loop, and say so
/// on `err` (stderr; stdout carries the triage line alone).
pub(crate) fn on_plan(
    err: &mut dyn Write,
    place: &LoopPlace,
    run_dir: &Path,
    attempt: u32,
    fresh: Option<String>,
) -> Result<()> {
    let o = record_plan(place, run_dir, attempt, fresh)?;
    if let Some(old) = &o.replaced {
        writeln!(
            err,
            "premerge: plan: replaced open fix loop {} (run directory {}, attempt {})",
            old.id, old.run_dir, old.attempt
        )?;
    }
    if let Some((dir, n)) = &o.set_aside {
        writeln!(
            err,
            "premerge: plan: moved {n} artefact(s) of an earlier loop in this run directory to {}",
            dir.display()
        )?;
    }
    let l = &o.current;
    let verb = match (o.new, o.reopened) {
        (true, _) => "opened",
        (false, true) => "reopened",
        (false, false) => "continues",
    };
    writeln!(
        err,
        "premerge: plan: fix loop {} {verb} (run directory {}, attempt {}): the pre-push fence is active until converge says STOP_* or `premerge loop close`",
        l.id, l.run_dir, l.attempt
    )?;
    let (loop_id, run_dir) = (l.id.clone(), l.run_dir.clone());
    let ev = if o.new || o.reopened {
        crate::events::Event::LoopOpened { loop_id, attempt, run_dir }
    } else {
        crate::events::Event::LoopAdvanced { loop_id, attempt, run_dir }
    };
    if let Err(e) = crate::store::append_event(&place.state.path, &ev) {
        let _ = writeln!(err, "premerge: warning: loop: cannot log: {e:#}");
    }
    Ok(())
}

/// `converge` decided `decision` for `run_dir`: any `STOP_*` closes that run directory's
/// open loop. Returns the closed loop's id.
pub(crate) fn on_converge(
    err: &mut dyn Write,
    repo: &crate::git::Repo,
    run_dir: &Path,
    decision: &str,
) -> Result<Option<String>> {
    if !decision.starts_with("STOP_") {
        return Ok(None);
    }
    let state = repo.state_dir();
    let by = format!("converge {decision}");
    let Some(l) = close_run_dir(&state, &by, run_dir)? else { return Ok(None) };
    writeln!(err, "premerge: converge: {decision}: closed fix loop {} (run directory {})", l.id, l.run_dir)?;
    let ev = crate::events::Event::LoopClosed { loop_id: l.id.clone(), by, attempt: l.attempt };
    if let Err(e) = crate::store::append_event(&state.path, &ev) {
        let _ = writeln!(err, "premerge: warning: loop: cannot log the close: {e:#}");
    }
    Ok(Some(l.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place() -> (tempfile::TempDir, LoopPlace) {
        let d = tempfile::tempdir().unwrap();
        let common = d.path().join("common");
        fs::create_dir_all(&common).unwrap();
        let p = LoopPlace::of_dirs(&common, &common);
        (d, p)
    }

    fn linked(main: &LoopPlace, name: &str) -> LoopPlace {
        let common = main.state.path.parent().unwrap().to_path_buf();
        let g = common.join("worktrees").join(name);
        fs::create_dir_all(&g).unwrap();
        LoopPlace::of_dirs(&g, &common)
    }

    #[test]
    fn attempt_one_opens_later_attempts_advance_converge_closes() {
        let (d, s) = place();
        let run = d.path().join("run");
        fs::create_dir_all(&run).unwrap();
        assert!(matches!(read(&s), LoopRecord::Absent));
        let o = record_plan(&s, &run, 1, None).unwrap();
        assert!(o.new && o.current.is_open() && o.current.attempt == 1);
        assert_eq!(o.current.worktree.as_deref(), Some("main"));
        let o2 = record_plan(&s, &run, 2, None).unwrap();
        assert!(!o2.new);
        assert_eq!(o2.current.id, o.current.id);
        assert_eq!(o2.current.attempt, 2);
        // Another run directory's converge does not close this loop.
        let other = d.path().join("other");
        fs::create_dir_all(&other).unwrap();
        assert!(close_run_dir(&s.state, "converge STOP_GREEN", &other).unwrap().is_none());
        let closed = close_run_dir(&s.state, "converge STOP_GREEN", &run).unwrap().unwrap();
        assert_eq!(closed.closed_by.as_deref(), Some("converge STOP_GREEN"));
        match read(&s) {
            LoopRecord::Loop(l) => assert!(!l.is_open()),
            other => panic!("{other:?}"),
        }
        assert!(matches!(close_operator(&s).unwrap(), Closed::Nothing), "closing twice changes nothing");
        // A later attempt of the same run directory resumes the same loop.
        let o3 = record_plan(&s, &run, 3, None).unwrap();
        assert!(o3.reopened && !o3.new && o3.current.is_open());
        assert_eq!((o3.current.id.as_str(), o3.current.attempt), (o.current.id.as_str(), 3));
        assert_eq!((o3.current.closed_at.clone(), o3.current.closed_by.clone()), (None, None));
    }

    #[test]
    fn a_plan_whose_run_directory_is_the_state_directory_records_its_loop() {
        let (_d, s) = place();
        s.state.ensure().unwrap();
        // `plan --run-dir <state dir>` holds this lock while it records the loop.
        let _held = RunLock::acquire_within(&s.state.path, std::time::Duration::from_millis(10)).unwrap();
        let o = record_plan(&s, &s.state.path, 1, None).unwrap();
        assert!(o.current.is_open());
        assert!(matches!(close_operator(&s).unwrap(), Closed::Loop(_)));
    }

    #[test]
    fn unreadable_record_is_reported_and_the_operator_can_clear_it() {
        let (d, s) = place();
        s.state.ensure().unwrap();
        fs::write(loop_path(&s.state), "{\"schema_version\":1,").unwrap();
        assert!(matches!(read(&s), LoopRecord::Unreadable(_)));
        assert!(close_run_dir(&s.state, "converge STOP_GREEN", d.path()).unwrap().is_none());
        match close_operator(&s).unwrap() {
            Closed::Cleared(why) => assert!(why.contains("not a loop record"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(read(&s), LoopRecord::Absent));
        fs::write(loop_path(&s.state), "x".repeat(MAX_LOOP_BYTES as usize + 1)).unwrap();
        assert!(matches!(read(&s), LoopRecord::Unreadable(w) if w.contains("larger than")));
    }

    #[test]
    fn ids_differ_even_within_one_second_and_each_loop_gets_a_fresh_directory() {
        let (_d, s) = place();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..50 {
            let p = plan_run_dir(&s, 1).unwrap();
            let id = p.fresh_id.clone().unwrap();
            assert_eq!(p.run_dir, loop_run_dir(&s.state, &id));
            assert!(p.run_dir.is_dir());
            record_plan(&s, &p.run_dir, 1, p.fresh_id).unwrap();
            assert!(seen.insert(id), "ids repeat");
        }
    }

    #[test]
    fn worktrees_have_their_own_loops_and_a_schema_1_record_fences_them_until_moved() {
        let (d, main) = place();
        let b = linked(&main, "wt-b");
        assert_eq!(b.worktree, "wt-b");
        let (ra, rb) = (d.path().join("ra"), d.path().join("rb"));
        record_plan(&main, &ra, 1, None).unwrap();
        record_plan(&b, &rb, 1, None).unwrap();
        let (LoopRecord::Loop(la), LoopRecord::Loop(lb)) = (read(&main), read(&b)) else { panic!() };
        assert_ne!(la.id, lb.id);
        assert!(la.is_open() && lb.is_open());
        // B's run directory cannot be taken by A.
        let e = record_plan(&main, &rb, 1, None).unwrap_err().to_string();
        assert!(e.contains(&lb.id) && e.contains("wt-b"), "{e}");
        // B's converge closes B's loop only.
        close_run_dir(&main.state, "converge STOP_GREEN", &rb).unwrap().unwrap();
        assert!(matches!(read(&main), LoopRecord::Loop(l) if l.is_open()));
        assert!(matches!(read(&b), LoopRecord::Loop(l) if !l.is_open()));

        // A schema 1 record (an older premerge's clone-wide loop) fences a worktree
        // without a record of its own.
        let c = linked(&main, "wt-c");
        let legacy = format!(
            r#"{{"attempt":2,"closed_at":null,"closed_by":null,"id":"loop-0000abcd","opened_at":"2026-01-01T00:00:00Z","run_dir":"{}","schema_version":1,"state":"open"}}"#,
            ra.display()
        );
        fs::write(loop_path(&main.state), &legacy).unwrap();
        assert!(matches!(read(&c), LoopRecord::Loop(l) if l.id == "loop-0000abcd" && l.is_open()));
        assert!(matches!(read(&b), LoopRecord::Loop(l) if !l.is_open()), "B has its own record");
        // The main worktree continues it: migrated to schema 2, C no longer fenced by it.
        let o = record_plan(&main, &ra, 3, None).unwrap();
        assert_eq!((o.current.id.as_str(), o.current.attempt, o.current.schema_version), ("loop-0000abcd", 3, 2));
        assert!(matches!(read(&c), LoopRecord::Absent));
    }

    #[test]
    fn a_state_path_that_is_a_file_holds_no_loop() {
        let (_d, s) = place();
        fs::write(&s.state.path, "not a directory").unwrap();
        assert!(matches!(read(&s), LoopRecord::Absent));
        assert!(matches!(close_operator(&s).unwrap(), Closed::NoState(w) if w.contains("not a directory")));
    }
}
