//! The fix loop of a clone: `<git common dir>/premerge/fix-loop.json`.
//!
//! A loop opens with `premerge plan` (a new one at `--attempt 1`), follows the attempts
//! of one run directory, and closes when `converge` says `STOP_*` or an operator runs
//! `premerge loop close`. The pre-push fence is active exactly while the record says
//! `open`, and finds the wave plan through the record's run directory, never through
//! the environment of the push it judges.
//!
//! The record is premerge's own state: written atomically under the state directory's
//! lock, read with a byte limit. A record that exists but cannot be read is not
//! guessed at: the fence treats it as an open loop it cannot trust (fails closed) and
//! `premerge loop close` replaces it.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{RunLock, StateDir};

/// File name of the loop record inside the state directory.
pub(crate) const LOOP_FILE: &str = "fix-loop.json";
/// Largest loop record read: the record is a handful of short fields (well under
/// 1 KiB); anything near this limit was not written by premerge.
pub(crate) const MAX_LOOP_BYTES: u64 = 64 * 1024;
/// Schema version of the loop record.
pub(crate) const LOOP_SCHEMA_VERSION: u32 = 1;

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
    /// `loop-<8 hex>`: SHA-256 of the run directory and the opening time.
    pub id: String,
    pub state: LoopState,
    /// The run directory, absolute (canonical when it exists).
    pub run_dir: String,
    /// The latest attempt planned in this loop.
    pub attempt: u32,
    /// RFC 3339, UTC.
    pub opened_at: String,
    pub closed_at: Option<String>,
    /// What closed it: `converge STOP_GREEN` (or another STOP_*), `operator`.
    pub closed_by: Option<String>,
}

impl FixLoop {
    pub(crate) fn is_open(&self) -> bool {
        self.state == LoopState::Open
    }

    pub(crate) fn run_dir_path(&self) -> PathBuf {
        PathBuf::from(&self.run_dir)
    }
}

/// What the state directory says about the loop.
#[derive(Debug)]
pub(crate) enum LoopRecord {
    /// No record: no loop was ever opened in this clone.
    Absent,
    /// A well-formed record.
    Loop(FixLoop),
    /// A record that exists and cannot be trusted (why).
    Unreadable(String),
}

/// Directory holding the loop record's writer lock. Not the state directory's own lock:
/// `plan --run-dir <state dir>` holds that one while it records the loop.
pub(crate) const LOOP_LOCK_DIR: &str = "fix-loop.lock.d";

fn lock(state: &StateDir) -> Result<RunLock> {
    RunLock::acquire(&state.path.join(LOOP_LOCK_DIR))
}

/// Path of the loop record of a state directory.
pub(crate) fn loop_path(state: &StateDir) -> PathBuf {
    state.path.join(LOOP_FILE)
}

/// Absolute, canonical (when it exists) form of a run directory, as the record holds it.
pub(crate) fn canonical_run_dir(run_dir: &Path) -> Result<String> {
    let p = fs::canonicalize(run_dir).unwrap_or_else(|_| run_dir.to_path_buf());
    p.to_str().map(str::to_string).ok_or_else(|| anyhow!("{}: run directory is not UTF-8", p.display()))
}

/// Read the loop record.
pub(crate) fn read(state: &StateDir) -> LoopRecord {
    let path = loop_path(state);
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return LoopRecord::Absent,
        Err(e) => return LoopRecord::Unreadable(format!("{}: cannot read: {e}", path.display())),
    };
    if !meta.is_file() {
        return LoopRecord::Unreadable(format!("{}: not a regular file", path.display()));
    }
    let mut text = String::new();
    let read = fs::File::open(&path).and_then(|f| f.take(MAX_LOOP_BYTES + 1).read_to_string(&mut text));
    if let Err(e) = read {
        return LoopRecord::Unreadable(format!("{}: cannot read: {e}", path.display()));
    }
    if text.len() as u64 > MAX_LOOP_BYTES {
        return LoopRecord::Unreadable(format!("{}: larger than {MAX_LOOP_BYTES} bytes", path.display()));
    }
    match serde_json::from_str::<FixLoop>(&text) {
        Ok(l) if l.schema_version == LOOP_SCHEMA_VERSION => LoopRecord::Loop(l),
        Ok(l) => LoopRecord::Unreadable(format!(
            "{}: schema_version {} is not {LOOP_SCHEMA_VERSION}",
            path.display(),
            l.schema_version
        )),
        Err(e) => LoopRecord::Unreadable(format!("{}: not a loop record: {e}", path.display())),
    }
}

fn write(state: &StateDir, l: &FixLoop) -> Result<()> {
    let text = crate::canonical::to_line(&serde_json::to_value(l)?)?;
    super::atomic_write(&loop_path(state), text.as_bytes())
}

fn loop_id(run_dir: &str, opened_at: &str) -> String {
    let h = Sha256::digest(format!("{run_dir}\n{opened_at}").as_bytes());
    let hex: String = h.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("loop-{hex}")
}

/// What [`record_plan`] did.
#[derive(Debug)]
pub(crate) struct Opened {
    pub current: FixLoop,
    /// True when this plan opened a new loop (rather than advancing the open one).
    pub new: bool,
    /// An open loop of another run directory (or an earlier first attempt) this plan replaced.
    pub replaced: Option<FixLoop>,
}

/// Record that `plan --attempt N` wrote a plan in `run_dir`: attempt 1 opens a new loop;
/// a later attempt advances the open loop of the same run directory, or opens one when
/// none is (a pipeline resumed after a close is fenced again).
pub(crate) fn record_plan(state: &StateDir, run_dir: &Path, attempt: u32) -> Result<Opened> {
    state.ensure()?;
    let _lock = lock(state)?;
    let run_dir = canonical_run_dir(run_dir)?;
    let previous = match read(state) {
        LoopRecord::Loop(l) if l.is_open() => Some(l),
        _ => None,
    };
    if let Some(p) = &previous
        && attempt > 1
        && p.run_dir == run_dir
    {
        let mut current = p.clone();
        current.attempt = attempt;
        write(state, &current)?;
        return Ok(Opened { current, new: false, replaced: None });
    }
    let opened_at = super::now_rfc3339();
    let current = FixLoop {
        schema_version: LOOP_SCHEMA_VERSION,
        id: loop_id(&run_dir, &opened_at),
        state: LoopState::Open,
        run_dir,
        attempt,
        opened_at,
        closed_at: None,
        closed_by: None,
    };
    write(state, &current)?;
    Ok(Opened { current, new: true, replaced: previous })
}

/// Close the open loop (when `run_dir` is given, only if it is that run directory's).
/// Returns the closed loop, `None` when nothing was open (or it belongs to another run
/// directory). An unreadable record is replaced by a closed one when `run_dir` is `None`
/// (the operator's `premerge loop close`).
pub(crate) fn close(state: &StateDir, by: &str, run_dir: Option<&Path>) -> Result<Option<FixLoop>> {
    let path = loop_path(state);
    if fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    let _lock = lock(state)?;
    let now = super::now_rfc3339();
    let mut l = match read(state) {
        LoopRecord::Absent => return Ok(None),
        LoopRecord::Loop(l) if !l.is_open() => return Ok(None),
        LoopRecord::Loop(l) => l,
        LoopRecord::Unreadable(why) => {
            if run_dir.is_some() {
                return Ok(None);
            }
            // The operator resets a record premerge cannot read: replace it (a symlink or
            // directory in its place is removed, never followed).
            if fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                fs::remove_dir_all(&path).map_err(|e| anyhow!("{}: cannot remove: {e}", path.display()))?;
            }
            FixLoop {
                schema_version: LOOP_SCHEMA_VERSION,
                id: "loop-unreadable".into(),
                state: LoopState::Open,
                run_dir: why,
                attempt: 0,
                opened_at: now.clone(),
                closed_at: None,
                closed_by: None,
            }
        }
    };
    if let Some(d) = run_dir
        && canonical_run_dir(d)? != l.run_dir
    {
        return Ok(None);
    }
    l.state = LoopState::Closed;
    l.closed_at = Some(now);
    l.closed_by = Some(by.to_string());
    write(state, &l)?;
    Ok(Some(l))
}

/// `plan --attempt N` wrote (or is about to write) a plan in `run_dir`: open or advance
/// the loop, and say so on `err` (stderr; warnings as `Ctx::warn` writes them) (stdout carries the triage line alone).
pub(crate) fn on_plan(err: &mut dyn Write, repo: &crate::git::Repo, run_dir: &Path, attempt: u32) -> Result<()> {
    let state = repo.state_dir();
    let o = record_plan(&state, run_dir, attempt)?;
    if let Some(old) = &o.replaced {
        writeln!(
            err,
            "premerge: plan: replaced open fix loop {} (run directory {}, attempt {})",
            old.id, old.run_dir, old.attempt
        )?;
    }
    let l = &o.current;
    let verb = if o.new { "opened" } else { "continues" };
    writeln!(
        err,
        "premerge: plan: fix loop {} {verb} (run directory {}, attempt {}): the pre-push fence is active until converge says STOP_* or `premerge loop close`",
        l.id, l.run_dir, l.attempt
    )?;
    let (loop_id, run_dir) = (l.id.clone(), l.run_dir.clone());
    let ev = if o.new {
        crate::events::Event::LoopOpened { loop_id, attempt, run_dir }
    } else {
        crate::events::Event::LoopAdvanced { loop_id, attempt, run_dir }
    };
    if let Err(e) = crate::store::append_event(&state.path, &ev) {
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
    let Some(l) = close(&state, &by, Some(run_dir))? else { return Ok(None) };
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

    fn state() -> (tempfile::TempDir, StateDir) {
        let d = tempfile::tempdir().unwrap();
        let s = StateDir::new(d.path());
        (d, s)
    }

    #[test]
    fn attempt_one_opens_later_attempts_advance_converge_closes() {
        let (d, s) = state();
        let run = d.path().join("run");
        fs::create_dir_all(&run).unwrap();
        assert!(matches!(read(&s), LoopRecord::Absent));
        let o = record_plan(&s, &run, 1).unwrap();
        assert!(o.new && o.current.is_open() && o.current.attempt == 1);
        let o2 = record_plan(&s, &run, 2).unwrap();
        assert!(!o2.new);
        assert_eq!(o2.current.id, o.current.id);
        assert_eq!(o2.current.attempt, 2);
        // Another run directory's converge does not close this loop.
        let other = d.path().join("other");
        fs::create_dir_all(&other).unwrap();
        assert!(close(&s, "converge STOP_GREEN", Some(&other)).unwrap().is_none());
        let closed = close(&s, "converge STOP_GREEN", Some(&run)).unwrap().unwrap();
        assert_eq!(closed.closed_by.as_deref(), Some("converge STOP_GREEN"));
        match read(&s) {
            LoopRecord::Loop(l) => assert!(!l.is_open()),
            other => panic!("{other:?}"),
        }
        assert!(close(&s, "operator", None).unwrap().is_none(), "closing twice changes nothing");
    }

    #[test]
    fn a_plan_whose_run_directory_is_the_state_directory_records_its_loop() {
        let (_d, s) = state();
        s.ensure().unwrap();
        // `plan --run-dir <state dir>` holds this lock while it records the loop.
        let _held = RunLock::acquire_within(&s.path, std::time::Duration::from_millis(10)).unwrap();
        let o = record_plan(&s, &s.path, 1).unwrap();
        assert!(o.current.is_open());
        assert!(close(&s, "operator", None).unwrap().is_some());
    }

    #[test]
    fn unreadable_record_is_reported_and_the_operator_can_reset_it() {
        let (d, s) = state();
        s.ensure().unwrap();
        fs::write(loop_path(&s), "{\"schema_version\":1,").unwrap();
        assert!(matches!(read(&s), LoopRecord::Unreadable(_)));
        assert!(close(&s, "converge STOP_GREEN", Some(d.path())).unwrap().is_none());
        let l = close(&s, "operator", None).unwrap().unwrap();
        assert!(!l.is_open());
        assert!(matches!(read(&s), LoopRecord::Loop(_)));
        fs::write(loop_path(&s), "x".repeat(MAX_LOOP_BYTES as usize + 1)).unwrap();
        assert!(matches!(read(&s), LoopRecord::Unreadable(w) if w.contains("larger than")));
    }
}
