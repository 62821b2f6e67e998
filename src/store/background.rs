//! The background signal job's state: `<state>/background/`.
//!
//! A hook runs the signal work that fits in `hooks.budget_ms` itself; what does not
//! fit is queued here as a [`Pending`] entry, and one detached `premerge hook
//! background` process per clone drains the queue. Layout:
//!
//! ```text
//! background/job.lock        flock held by the running job (never two at once)
//! background/job.json        the job's last state (running / finished, counts)
//! background/pending/<id>.json   queued work, removed only once its result is written
//! background/results/<id>.json   results nobody has printed yet
//! background/shown/<id>.json     results printed once (the last MAX_SHOWN kept)
//! ```
//!
//! Nothing is lost when the job dies: an entry leaves `pending/` only after its
//! result is in `results/`, so the next job runs it again; after [`MAX_ATTEMPTS`]
//! starts it is reported as abandoned instead. A result leaves `results/` by one
//! atomic rename into `shown/`, so of several concurrent readers exactly one prints it.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};

use super::{StateDir, atomic_write};

/// Name of the job's directory inside the state directory.
pub(crate) const BACKGROUND_DIR: &str = "background";
/// Most entries waiting at once. A clone that queues more than this without the job
/// draining them has a job that cannot run; more entries would only grow the backlog,
/// so a further hook reports its range as not scanned instead (counted, never silent).
pub(crate) const MAX_PENDING: usize = 32;
/// How many starts an entry gets. A range whose scan kills the job (the time limit,
/// an out-of-memory kill) would otherwise be retried by every later job forever.
pub(crate) const MAX_ATTEMPTS: u32 = 3;
/// Longest the job runs before it stops itself, leaving what is left pending. Ten
/// minutes is far beyond any range measured (a 300-commit pull scans in seconds), and
/// short enough that a stuck job frees the lock the same session.
pub(crate) const JOB_TIME_LIMIT: Duration = Duration::from_secs(600);
/// Printed results kept in `shown/` for `premerge status`'s "last" view.
pub(crate) const MAX_SHOWN: usize = 16;
/// Largest entry or result file read back. Entries are a few hundred bytes; results
/// hold at most [`MAX_CAPTURED_BYTES`] of output.
pub(crate) const MAX_FILE_BYTES: u64 = 1 << 20;
/// Most output kept per result: the hooks print at most a screen per stage.
pub(crate) const MAX_CAPTURED_BYTES: usize = 64 * 1024;

/// One commit range of queued work: `base = None` is the empty tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Range {
    pub base: Option<String>,
    pub head: String,
}

/// Queued signal work: the hook that queued it and the ranges it covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    pub schema_version: u32,
    /// Sortable: the queueing time in nanoseconds, the process id and a counter.
    pub id: String,
    /// `pre-push` or `post-merge`.
    pub hook: String,
    /// The remote a pre-push went to.
    pub remote: Option<String>,
    /// How a pre-push's ranges are described in its summary line (`2 ref(s)`).
    pub scope: String,
    pub ranges: Vec<Range>,
    pub queued_at: String,
    /// How many jobs started on this entry.
    pub attempts: u32,
}

/// What became of one queued entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The signals ran (their own warnings, if any, are in `warnings`).
    Done,
    /// The work could not run at all (the repository, a range, the configuration).
    Failed,
    /// [`MAX_ATTEMPTS`] jobs started on it and none finished.
    Abandoned,
}

/// The recorded result of one entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobResult {
    pub schema_version: u32,
    pub id: String,
    pub hook: String,
    pub ranges: Vec<Range>,
    pub queued_at: String,
    pub finished_at: String,
    pub outcome: Outcome,
    /// What the hook would have printed on stdout, line by line.
    pub stdout: Vec<String>,
    /// Its warnings (stderr), line by line.
    pub warnings: Vec<String>,
}

/// The job's last recorded state (`job.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JobState {
    pub pid: u32,
    pub started_at: String,
    /// Empty while it runs.
    pub finished_at: String,
    /// Entries finished by this job (done, failed or abandoned).
    pub entries_done: u64,
}

/// The background directory of one clone.
#[derive(Debug, Clone)]
pub struct Background {
    pub dir: PathBuf,
}

/// The job's exclusive lock, held until dropped (or the process ends).
#[derive(Debug)]
pub struct JobLock {
    _file: File,
}

impl Background {
    pub fn new(state: &StateDir) -> Background {
        Background { dir: state.path.join(BACKGROUND_DIR) }
    }

    fn sub(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn lock_file(&self) -> Result<File> {
        super::create_dirs(&self.dir)?;
        super::open_lock_file(&self.dir.join("job.lock"), super::MODE_SHARED)
    }

    /// Take the job lock without waiting: `None` when another job holds it.
    pub fn try_lock(&self) -> Result<Option<JobLock>> {
        let file = self.lock_file()?;
        match file.try_lock() {
            Ok(()) => Ok(Some(JobLock { _file: file })),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(e)) => {
                Err(anyhow!("{}: cannot lock: {e}", self.dir.join("job.lock").display()))
            }
        }
    }

    /// Whether the repository this directory belongs to is gone: its git common
    /// directory (the state directory's parent) holds no `HEAD` any more. The job asks
    /// before each entry and each write, and stops rather than write into a deleted
    /// workspace (issue 27, D12).
    pub(crate) fn repository_gone(&self) -> bool {
        let Some(common) = self.dir.parent().and_then(Path::parent) else { return false };
        fs::symlink_metadata(common.join("HEAD")).is_err()
    }

    /// Whether a job holds the lock right now. Without a directory nothing ever ran.
    pub(crate) fn is_running(&self) -> Result<bool> {
        if !self.dir.is_dir() {
            return Ok(false);
        }
        Ok(self.try_lock()?.is_none())
    }

    /// Block until no job holds the lock (returns at once when none does).
    pub(crate) fn wait_idle(&self) -> Result<()> {
        let file = self.lock_file()?;
        file.lock().with_context(|| format!("{}: cannot wait for the job lock", self.dir.display()))?;
        Ok(())
    }

    /// A new entry id: sortable by queueing time, unique across processes.
    pub(crate) fn new_id() -> String {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        format!("{nanos:020}-{:07}-{:03}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed) % 1000)
    }

    /// Queue an entry. Refused (an error saying so) when [`MAX_PENDING`] wait already.
    pub(crate) fn enqueue(&self, entry: &Pending) -> Result<()> {
        let waiting = names(&self.sub("pending"))?.len();
        if waiting >= MAX_PENDING {
            bail!(
                "{}: {waiting} entries already wait for the background job (at most {MAX_PENDING}); \
                 not scanned: {}; run `premerge status --wait`, then {}",
                self.sub("pending").display(),
                entry
                    .ranges
                    .iter()
                    .map(|r| format!("{}..{}", r.base.as_deref().unwrap_or("(root)"), r.head))
                    .collect::<Vec<_>>()
                    .join(", "),
                scan_commands(&entry.ranges)
            );
        }
        self.write_pending(entry)
    }

    /// Write (or rewrite) an entry in `pending/`.
    pub(crate) fn write_pending(&self, entry: &Pending) -> Result<()> {
        check_id(&entry.id)?;
        let bytes = crate::canonical::to_line(&serde_json::to_value(entry)?)?;
        atomic_write(&self.sub("pending").join(format!("{}.json", entry.id)), bytes.as_bytes())
    }

    /// Every waiting entry, oldest first. A file that does not read back as an entry
    /// is returned as an error string with its id, so the job can report it.
    pub fn pending(&self) -> Result<Vec<std::result::Result<Pending, (String, String)>>> {
        let dir = self.sub("pending");
        let mut out = Vec::new();
        for name in names(&dir)? {
            let id = name.trim_end_matches(".json").to_string();
            match read_json::<Pending>(&dir.join(&name)) {
                Ok(p) if p.id == id && valid_ranges(&p.ranges) => out.push(Ok(p)),
                Ok(_) => out.push(Err((id, "id or ranges do not match an entry premerge wrote".into()))),
                Err(e) => out.push(Err((id, format!("{e:#}")))),
            }
        }
        Ok(out)
    }

    /// How many entries wait.
    pub(crate) fn pending_count(&self) -> Result<usize> {
        Ok(names(&self.sub("pending"))?.len())
    }

    /// Record an entry's result, then remove it from `pending/` (in that order, so a
    /// crash in between runs it again rather than losing it).
    pub(crate) fn finish(&self, id: &str, result: &JobResult) -> Result<()> {
        check_id(id)?;
        let bytes = crate::canonical::to_line(&serde_json::to_value(result)?)?;
        atomic_write(&self.sub("results").join(format!("{id}.json")), bytes.as_bytes())?;
        let p = self.sub("pending").join(format!("{id}.json"));
        match fs::remove_file(&p) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(anyhow!("{}: cannot remove: {e}", p.display())),
        }
    }

    /// Take every result nobody has printed yet, oldest first: each is moved into
    /// `shown/` by one rename, so a result is returned to exactly one caller.
    pub(crate) fn claim_results(&self) -> Result<Vec<JobResult>> {
        let mut out = Vec::new();
        for name in self.unclaimed()? {
            out.extend(self.claim(&name)?);
        }
        if !out.is_empty() {
            self.prune_shown()?;
        }
        Ok(out)
    }

    /// The file names of the results nobody has printed yet, oldest first.
    pub(crate) fn unclaimed(&self) -> Result<Vec<String>> {
        names(&self.sub("results"))
    }

    /// Claim the result `name` (a name [`Background::unclaimed`] gave): moved into
    /// `shown/` by one rename, so of several readers exactly one gets it; `None` when
    /// another reader claimed it first. A caller that then cannot print it gives it
    /// back with [`Background::unclaim`].
    pub(crate) fn claim(&self, name: &str) -> Result<Option<JobResult>> {
        check_id(name.trim_end_matches(".json"))?;
        let results = self.sub("results");
        let shown = self.sub("shown");
        super::create_dirs(&shown)?;
        let to = shown.join(name);
        match fs::rename(results.join(name), &to) {
            Ok(()) => {}
            // Another reader claimed it first.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => bail!("{}: cannot move into shown/: {e}", results.join(name).display()),
        }
        Ok(Some(match read_json::<JobResult>(&to) {
            Ok(r) => r,
            Err(e) => JobResult {
                schema_version: 1,
                id: name.trim_end_matches(".json").to_string(),
                hook: String::new(),
                ranges: Vec::new(),
                queued_at: String::new(),
                finished_at: String::new(),
                outcome: Outcome::Failed,
                stdout: Vec::new(),
                warnings: vec![format!("result file unreadable: {e:#}")],
            },
        }))
    }

    /// Give back a result claimed by [`Background::claim`] whose output could not be
    /// written (a closed pipe, a full disk): it waits in `results/` again, for the
    /// next reader.
    pub(crate) fn unclaim(&self, name: &str) -> Result<()> {
        check_id(name.trim_end_matches(".json"))?;
        let from = self.sub("shown").join(name);
        fs::rename(&from, self.sub("results").join(name))
            .with_context(|| format!("{}: cannot move back into results/", from.display()))
    }

    /// The last printed results, oldest first (at most [`MAX_SHOWN`]).
    pub fn shown(&self) -> Result<Vec<JobResult>> {
        let dir = self.sub("shown");
        Ok(names(&dir)?.iter().filter_map(|n| read_json(&dir.join(n)).ok()).collect())
    }

    /// Keep the last [`MAX_SHOWN`] printed results.
    pub(crate) fn prune_shown(&self) -> Result<()> {
        let dir = self.sub("shown");
        let names = names(&dir)?;
        for n in names.iter().take(names.len().saturating_sub(MAX_SHOWN)) {
            let _ = fs::remove_file(dir.join(n));
        }
        Ok(())
    }

    pub(crate) fn write_state(&self, s: &JobState) -> Result<()> {
        let bytes = crate::canonical::to_line(&serde_json::to_value(s)?)?;
        atomic_write(&self.dir.join("job.json"), bytes.as_bytes())
    }

    /// The last recorded job state; `None` when no job ever ran (or it is unreadable).
    pub(crate) fn read_state(&self) -> Option<JobState> {
        read_json(&self.dir.join("job.json")).ok()
    }
}

/// Most ranges a full queue's message names a command for: a push of more refs than
/// this is one of many, and the rest are counted.
const MAX_NAMED_RANGES: usize = 4;

/// The `premerge scan` command of each range (a range from the root: its head alone,
/// from its first parent), the ones beyond [`MAX_NAMED_RANGES`] counted.
pub(crate) fn scan_commands(ranges: &[Range]) -> String {
    let mut cmds: Vec<String> = ranges
        .iter()
        .take(MAX_NAMED_RANGES)
        .map(|r| match &r.base {
            Some(b) => format!("`premerge scan {b}..{}`", r.head),
            None => format!("`premerge scan --head {}`", r.head),
        })
        .collect();
    if ranges.len() > MAX_NAMED_RANGES {
        cmds.push(format!("and {} more range(s)", ranges.len() - MAX_NAMED_RANGES));
    }
    if cmds.is_empty() { "`premerge scan` on it".to_string() } else { cmds.join(", ") }
}

/// Entry ids are premerge's own (`new_id`); anything else in a file name is refused
/// rather than joined into a path.
fn check_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        bail!("background entry id `{id}` is not one premerge wrote");
    }
    Ok(())
}

fn is_oid(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn valid_ranges(ranges: &[Range]) -> bool {
    ranges.iter().all(|r| is_oid(&r.head) && r.base.as_deref().is_none_or(is_oid))
}

/// The `.json` files of a directory, byte-sorted (missing directory: none).
fn names(dir: &Path) -> Result<Vec<String>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => bail!("{}: cannot list: {e}", dir.display()),
    };
    let mut out: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json") && check_id(n.trim_end_matches(".json")).is_ok())
        .collect();
    out.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    Ok(out)
}

/// Read one of the job's JSON files through the bounded reader (`src/input.rs`): a
/// FIFO put in place of `job.json` or a result is refused on the descriptor opened
/// with `O_NONBLOCK`, never waited on (issue 27, D11).
fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let bytes = crate::input::read_file(path, crate::input::Kind::Artefact, MAX_FILE_BYTES)?;
    serde_json::from_slice(&bytes).with_context(|| format!("{}: not valid JSON", path.display()))
}

/// Split captured output into lines, keeping at most [`MAX_CAPTURED_BYTES`] (the cut
/// is said on a last line, never silent).
pub(crate) fn capture_lines(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_CAPTURED_BYTES)]);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if bytes.len() > MAX_CAPTURED_BYTES {
        lines.push(format!("... output cut at {MAX_CAPTURED_BYTES} bytes of {}", bytes.len()));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bg() -> (tempfile::TempDir, Background) {
        let d = tempfile::tempdir().unwrap();
        let b = Background::new(&StateDir { path: d.path().to_path_buf() });
        (d, b)
    }

    fn entry(id: &str) -> Pending {
        Pending {
            schema_version: 1,
            id: id.into(),
            hook: "post-merge".into(),
            remote: None,
            scope: "ORIG_HEAD..HEAD".into(),
            ranges: vec![Range { base: Some("a".repeat(40)), head: "b".repeat(40) }],
            queued_at: "2026-01-01T00:00:00Z".into(),
            attempts: 0,
        }
    }

    fn result(id: &str) -> JobResult {
        JobResult {
            schema_version: 1,
            id: id.into(),
            hook: "post-merge".into(),
            ranges: Vec::new(),
            queued_at: String::new(),
            finished_at: String::new(),
            outcome: Outcome::Done,
            stdout: vec!["x".into()],
            warnings: Vec::new(),
        }
    }

    #[test]
    fn an_entry_leaves_pending_only_with_its_result() {
        let (_d, b) = bg();
        b.enqueue(&entry("1-1")).unwrap();
        b.enqueue(&entry("2-1")).unwrap();
        let ids: Vec<String> = b.pending().unwrap().into_iter().map(|p| p.unwrap().id).collect();
        assert_eq!(ids, ["1-1", "2-1"], "oldest first");
        b.finish("1-1", &result("1-1")).unwrap();
        assert_eq!(b.pending_count().unwrap(), 1);
        let claimed = b.claim_results().unwrap();
        assert_eq!(claimed.len(), 1);
        assert!(b.claim_results().unwrap().is_empty(), "a result is claimed once");
        assert_eq!(b.shown().unwrap().len(), 1);
    }

    #[test]
    fn the_queue_is_bounded() {
        let (_d, b) = bg();
        for i in 0..MAX_PENDING {
            b.enqueue(&entry(&format!("{i:03}-1"))).unwrap();
        }
        let e = b.enqueue(&entry("999-1")).unwrap_err().to_string();
        // Regression (issue 27, D16): the message names the range and the command for it.
        let (base, head) = ("a".repeat(40), "b".repeat(40));
        assert!(e.contains(&format!("not scanned: {base}..{head}")), "{e}");
        assert!(e.contains(&format!("then `premerge scan {base}..{head}`")), "{e}");
    }

    #[test]
    fn a_tampered_entry_is_reported_not_run() {
        let (_d, b) = bg();
        let mut e = entry("5-1");
        e.ranges[0].head = "../../etc/passwd".into();
        b.write_pending(&e).unwrap();
        assert!(b.pending().unwrap()[0].is_err());
        assert!(b.write_pending(&entry("../x")).is_err(), "an id is never a path");
    }

    #[test]
    fn the_lock_admits_one_job() {
        let (_d, b) = bg();
        let held = b.try_lock().unwrap();
        assert!(held.is_some());
        assert!(b.try_lock().unwrap().is_none());
        assert!(b.is_running().unwrap());
        drop(held);
        assert!(!b.is_running().unwrap());
    }

    /// Regression (issue 27, D11): a FIFO in place of `job.json` or a result is
    /// refused at once, never waited on for a writer.
    #[test]
    fn a_fifo_among_the_jobs_files_is_refused_not_waited_on() {
        let (_d, b) = bg();
        b.finish("1-1", &result("1-1")).unwrap();
        for path in [b.dir.join("job.json"), b.dir.join("results").join("2-1.json")] {
            let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: mkfifo with a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        }
        assert_eq!(b.read_state(), None);
        // The FIFO is not listed as a result; the real one is claimed.
        let claimed = b.claim_results().unwrap();
        assert_eq!(claimed.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["1-1"]);
        assert!(b.write_state(&JobState::default()).is_ok(), "the state is written over the FIFO by a rename");
        assert_eq!(b.read_state(), Some(JobState::default()));
    }

    /// A result claimed and given back waits for the next reader.
    #[test]
    fn a_result_given_back_is_claimed_again() {
        let (_d, b) = bg();
        b.finish("1-1", &result("1-1")).unwrap();
        let names = b.unclaimed().unwrap();
        assert_eq!(names, ["1-1.json"]);
        assert!(b.claim(&names[0]).unwrap().is_some());
        assert!(b.claim(&names[0]).unwrap().is_none(), "claimed once");
        b.unclaim(&names[0]).unwrap();
        assert_eq!(b.claim_results().unwrap().len(), 1);
        assert!(b.unclaim("../x.json").is_err(), "a name is never a path");
    }

    #[test]
    fn shown_keeps_the_last_few() {
        let (_d, b) = bg();
        for i in 0..MAX_SHOWN + 3 {
            let id = format!("{i:03}-1");
            b.finish(&id, &result(&id)).unwrap();
        }
        assert_eq!(b.claim_results().unwrap().len(), MAX_SHOWN + 3);
        let kept = b.shown().unwrap();
        assert_eq!(kept.len(), MAX_SHOWN);
        assert_eq!(kept[0].id, "003-1");
    }
}
