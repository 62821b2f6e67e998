//! The hooks' time budget and the background job that finishes what does not fit.
//!
//! A hook's synchronous work is the fence (paths only) and whatever signal work fits
//! in `hooks.budget_ms`. [`fits`] estimates the signal work from a paths-only diff
//! before starting it; work that fits runs on a worker thread the hook waits for at
//! most until the budget is spent. Anything else is queued in the clone's state
//! (`crate::store::background`) and one detached `premerge hook background` process
//! per clone ([`drain`]) runs it, records the output and guard memories, and leaves
//! the output for the next hook or `premerge status` to print, once.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::config::Config;
use crate::context::Ctx;
use crate::diff::{Diff, EntryKind};
use crate::git::{Detail, Repo};
use crate::hook::{HookKind, HookRun};
use crate::store::background::{
    Background, JOB_TIME_LIMIT, JobResult, JobState, MAX_ATTEMPTS, Outcome, Pending, Range, capture_lines,
};
use crate::widen::Language;

/// The signal work of one hook run: which hook, the ranges it covers.
#[derive(Debug, Clone)]
pub(crate) struct Work {
    pub kind: HookKind,
    /// How the summary line names what the hook covers (`2 ref(s)`, `ORIG_HEAD..HEAD`).
    pub scope: String,
    pub ranges: Vec<Range>,
}

/// What a stage wrote while its output was held back.
#[derive(Debug, Default)]
pub struct Captured {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Run `f` against a context whose streams are buffers.
pub fn capture<T>(cwd: &Path, f: impl FnOnce(&mut Ctx) -> Result<T>) -> (Captured, Result<T>) {
    let mut out = Captured::default();
    let mut stdin = std::io::empty();
    let result = {
        let mut ctx = Ctx {
            cwd: cwd.to_path_buf(),
            stdin: &mut stdin,
            stdout: &mut out.stdout,
            stderr: &mut out.stderr,
            env: crate::env::process(),
        };
        f(&mut ctx)
    };
    (out, result)
}

// The cost model of the signal work, from the release build on the project's 2-core
// machine (docs/benchmarks.md, "Hook time budget"): what the widening scan, the copy
// detector and the full diff cost per file and per byte. It only has to tell "a few
// files" from "hundreds of files"; a wrong guess costs at most the budget, because the
// hook stops waiting when the budget is spent.
/// Fixed cost of the signal work: a second repository handle, the full diff, the store.
const FIXED_US: u64 = 2_000;
/// Each changed path: its delta, rename candidates, its patch.
const PER_PATH_US: u64 = 60;
/// Each file the scan parses (both versions read, the change located).
const PER_SCANNED_FILE_US: u64 = 400;
/// Parsing: bytes of source (old plus new version) per microsecond.
const SCAN_BYTES_PER_US: u64 = 8;
/// The copy detector (pre-push): bytes of new text per microsecond.
const CLONE_BYTES_PER_US: u64 = 40;

/// Whether the signal work of `paths` is expected to fit in `budget`. Reads blob
/// headers only, and stops as soon as the estimate passes the budget.
pub(crate) fn fits(repo: &Repo, config: &Config, kind: &HookKind, paths: &Diff, budget: Duration) -> bool {
    let budget_us = budget.as_micros() as u64;
    if budget_us == 0 {
        return false;
    }
    let scan = config.scan.enabled;
    let clones = matches!(kind, HookKind::PrePush { .. }) && config.clones.enabled;
    let readable = |k: EntryKind| k == EntryKind::File;
    let scanned = |path: &str| scan && Language::for_path(path).is_some();
    // A lower bound first, from counts alone: hundreds of files never read a header.
    let n_scanned = paths.files.iter().filter(|f| scanned(&f.path)).count() as u64;
    let mut cost = FIXED_US + PER_PATH_US * paths.files.len() as u64 + PER_SCANNED_FILE_US * n_scanned;
    if cost > budget_us {
        return false;
    }
    for f in &paths.files {
        let is_scanned = scanned(&f.path);
        if !is_scanned && !clones {
            continue;
        }
        let size = |oid: &Option<String>, k: EntryKind| -> Option<u64> {
            match oid {
                Some(o) if readable(k) => repo.blob_size(o),
                _ => Some(0),
            }
        };
        // A blob that is not here (a partial clone) would be fetched: never in the hook.
        let (Some(old), Some(new)) = (size(&f.old_oid, f.old_kind), size(&f.new_oid, f.new_kind)) else {
            return false;
        };
        if is_scanned {
            cost += (old + new) / SCAN_BYTES_PER_US;
        }
        if clones {
            cost += new / CLONE_BYTES_PER_US;
        }
        if cost > budget_us {
            return false;
        }
    }
    true
}

/// The paths-only diff of every range (the union), for the fence and the estimate.
pub(crate) fn paths_of(repo: &Repo, ranges: &[Range]) -> Result<Diff> {
    let mut diffs = Vec::with_capacity(ranges.len());
    for r in ranges {
        // libgit2's quick tree diff first; where it cannot read the trees (a treeless
        // partial clone), the full diff, which asks git.
        let quick = repo.diff_paths(r.base.as_deref(), &r.head);
        diffs.push(match quick {
            Ok(d) => d,
            Err(_) => repo.diff_commits_with(r.base.as_deref(), &r.head, Detail::Files)?,
        });
    }
    Ok(Diff::union(diffs))
}

/// The signal work itself: the full diff, the summary line, the widening scan and
/// (pre-push) the copy detector. Stage failures are warnings; only a diff that cannot
/// be computed at all is an error.
pub(crate) fn signal_work(ctx: &mut Ctx, config: &Config, work: &Work) -> Result<()> {
    let repo = ctx.repo()?;
    let pre_push = matches!(work.kind, HookKind::PrePush { .. });
    // The scan reads whole files; only the copy detector needs the added lines, and the
    // post-merge summary goes without line counts rather than pay for patches.
    let detail = if pre_push { Detail::Hunks } else { Detail::Files };
    let mut diffs = Vec::with_capacity(work.ranges.len());
    for r in &work.ranges {
        diffs.push(repo.diff_commits_with(r.base.as_deref(), &r.head, detail)?);
    }
    let diff = Diff::union(diffs);
    let counts = if pre_push {
        let (a, d) =
            diff.files.iter().fold((0u64, 0u64), |(a, d), f| (a + u64::from(f.additions), d + u64::from(f.deletions)));
        format!(" (+{a} -{d})")
    } else {
        String::new()
    };
    writeln!(
        ctx.stdout,
        "premerge {}: {} file(s) changed in {}{counts}",
        work.kind.name(),
        diff.files.len(),
        work.scope
    )?;
    let mut run = HookRun { ctx, repo: &repo, config, kind: work.kind.clone(), diff: &diff };
    crate::hook::signal(&mut run, "widening scan", crate::hook::stages::widening_scan);
    if pre_push {
        crate::hook::signal(&mut run, "copy detector", crate::hook::stages::copy_detector);
    }
    Ok(())
}

/// How the hook's own signal work ended.
pub(crate) enum InHook {
    /// Finished within the budget: its output.
    Done(Captured),
    /// The worker stopped without an answer (it panicked).
    Lost,
    /// Still running when the budget was spent.
    OverBudget,
}

/// A running worker thread of the hook's signal work.
pub(crate) struct Worker {
    rx: mpsc::Receiver<Captured>,
}

impl Worker {
    /// Start the signal work on a thread of its own (with its own repository handle).
    pub(crate) fn start(cwd: PathBuf, config: Config, work: Work) -> Worker {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let (mut out, result) = capture(&cwd, |c| signal_work(c, &config, &work));
            if let Err(e) = result {
                let _ = writeln!(out.stderr, "premerge: warning: signals: {e:#} (signal only: continuing)");
            }
            let _ = tx.send(out);
        });
        Worker { rx }
    }

    /// Wait for the worker until `deadline`.
    pub(crate) fn wait_until(self, deadline: Instant) -> InHook {
        match self.rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(out) => InHook::Done(out),
            Err(mpsc::RecvTimeoutError::Timeout) => InHook::OverBudget,
            Err(mpsc::RecvTimeoutError::Disconnected) => InHook::Lost,
        }
    }
}

/// Queue `work` for the background job and make sure a job runs.
pub(crate) fn defer(repo: &Repo, bg: &Background, cwd: &Path, work: &Work) -> Result<()> {
    let remote = match &work.kind {
        HookKind::PrePush { remote, .. } => Some(remote.clone()),
        HookKind::PostMerge { .. } => None,
    };
    let entry = Pending {
        schema_version: 1,
        id: Background::new_id(),
        hook: work.kind.name().to_string(),
        remote,
        scope: work.scope.clone(),
        ranges: work.ranges.clone(),
        queued_at: crate::store::now_rfc3339(),
        attempts: 0,
    };
    repo.state_dir().ensure()?;
    bg.enqueue(&entry)?;
    ensure_job(bg, cwd)
}

/// Start a job unless one runs (it drains everything pending before it exits,
/// including entries queued while it runs).
pub(crate) fn ensure_job(bg: &Background, cwd: &Path) -> Result<()> {
    if bg.is_running()? {
        return Ok(());
    }
    spawn_job(cwd)
}

/// Start `premerge hook background` detached: its own process group (a Ctrl-C at
/// the terminal does not reach it), no standard stream of the hook's (git returns as
/// soon as the hook exits, not when the job does), at a low CPU priority (`nice`,
/// where there is one). It first waits for the hook to exit and, when git ran the
/// hook, for git itself: a pre-push hook runs before git packs and sends the push,
/// which the job must not slow down.
fn spawn_job(cwd: &Path) -> Result<()> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("background job: cannot find premerge: {e}"))?;
    let mut after = vec![std::process::id()];
    let parent = std::os::unix::process::parent_id();
    if std::fs::read_to_string(format!("/proc/{parent}/comm")).is_ok_and(|c| c.trim() == "git") {
        after.push(parent);
    }
    let nice = Path::new("/usr/bin/nice");
    let mut cmd = if nice.is_file() {
        let mut c = Command::new(nice);
        c.args(["-n", "10"]).arg(exe);
        c
    } else {
        Command::new(exe)
    };
    cmd.arg("-C").arg(cwd).args(["hook", "background"]);
    for pid in after {
        cmd.args(["--after-pid", &pid.to_string()]);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| anyhow::anyhow!("background job: cannot start: {e}"))?;
    Ok(())
}

/// Longest the job waits for the processes it was told to wait for: the hook that
/// started it (whose abandoned worker thread may still be writing memories) and the
/// git command that ran the hook (a push still sending). Two minutes covers a large
/// push over a slow link; after that the job starts anyway, at its low priority.
const AFTER_PID_WAIT: Duration = Duration::from_secs(120);

/// `premerge hook background`: wait for the starting hook (and git) to exit, then drain.
pub(crate) fn run_job(ctx: &mut Ctx, after_pid: &[u32]) -> Result<()> {
    let start = Instant::now();
    for pid in after_pid {
        let proc = PathBuf::from(format!("/proc/{pid}"));
        while proc.exists() && start.elapsed() < AFTER_PID_WAIT {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let repo = ctx.repo()?;
    let bg = Background::new(&repo.state_dir());
    // Bounded in time even if one entry hangs: the entry stays pending with its
    // attempt counted, and is reported abandoned after MAX_ATTEMPTS.
    std::thread::spawn(|| {
        std::thread::sleep(JOB_TIME_LIMIT + Duration::from_secs(30));
        std::process::exit(3);
    });
    drain(&ctx.cwd, &bg)
}

/// Run every pending entry, oldest first, under the job lock; return at once when
/// another job holds it (that job will run what is queued). After releasing the lock
/// the queue is checked again, so an entry queued just as a job was finishing is
/// never left without a job.
pub fn drain(cwd: &Path, bg: &Background) -> Result<()> {
    let deadline = Instant::now() + JOB_TIME_LIMIT;
    // Asked before each entry and each write: a job whose repository was deleted
    // (CI cleaning its workspace) stops, and what it did not write stays unwritten.
    let gone = || bg.repository_gone();
    loop {
        if gone() {
            return Ok(());
        }
        let Some(lock) = bg.try_lock()? else { return Ok(()) };
        let mut state =
            JobState { pid: std::process::id(), started_at: crate::store::now_rfc3339(), ..Default::default() };
        bg.write_state(&state)?;
        let log = |ev: fn(u32, u64) -> crate::events::Event, done: u64| {
            let ev = ev(std::process::id(), done);
            // The log is for people and tests reading the job's history; losing a line
            // never stops the job.
            let _ = crate::store::append_event(bg.dir.parent().unwrap_or(&bg.dir), &ev);
        };
        log(|pid, entries_done| crate::events::Event::BackgroundJobStarted { pid, entries_done }, 0);
        while Instant::now() < deadline {
            if gone() {
                return Ok(());
            }
            let Some(next) = bg.pending()?.into_iter().next() else { break };
            let result = match next {
                Err((id, why)) => JobResult {
                    schema_version: 1,
                    id,
                    hook: String::new(),
                    ranges: Vec::new(),
                    queued_at: String::new(),
                    finished_at: crate::store::now_rfc3339(),
                    outcome: Outcome::Failed,
                    stdout: Vec::new(),
                    warnings: vec![format!("premerge: warning: background job: unreadable queue entry: {why}")],
                },
                Ok(mut entry) => {
                    entry.attempts += 1;
                    if entry.attempts > MAX_ATTEMPTS {
                        let why = format!(
                            "premerge: warning: background job: {} jobs started on this range and none finished; \
                             run `premerge scan` on it",
                            MAX_ATTEMPTS
                        );
                        result_of(&entry, Outcome::Abandoned, Captured::default(), vec![why])
                    } else {
                        if gone() {
                            return Ok(());
                        }
                        bg.write_pending(&entry)?;
                        run_entry(cwd, &entry)
                    }
                }
            };
            if gone() {
                return Ok(());
            }
            bg.finish(&result.id, &result)?;
            state.entries_done += 1;
            bg.write_state(&state)?;
        }
        if gone() {
            return Ok(());
        }
        state.finished_at = crate::store::now_rfc3339();
        bg.write_state(&state)?;
        log(|pid, entries_done| crate::events::Event::BackgroundJobFinished { pid, entries_done }, state.entries_done);
        drop(lock);
        if Instant::now() >= deadline || bg.pending_count()? == 0 {
            return Ok(());
        }
    }
}

fn run_entry(cwd: &Path, entry: &Pending) -> JobResult {
    let kind = match entry.hook.as_str() {
        "pre-push" => {
            HookKind::PrePush { remote: entry.remote.clone().unwrap_or_default(), url: None, lines: Vec::new() }
        }
        _ => HookKind::PostMerge { squash: false },
    };
    let work = Work { kind, scope: entry.scope.clone(), ranges: entry.ranges.clone() };
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        capture(cwd, |c| {
            let repo = c.repo()?;
            let config = crate::context::load_config(&repo)?;
            signal_work(c, &config, &work)
        })
    }));
    match run {
        Ok((out, Ok(()))) => result_of(entry, Outcome::Done, out, Vec::new()),
        Ok((out, Err(e))) => {
            result_of(entry, Outcome::Failed, out, vec![format!("premerge: warning: background job: {e:#}")])
        }
        Err(_) => result_of(
            entry,
            Outcome::Failed,
            Captured::default(),
            vec!["premerge: warning: background job: the signal work panicked (signal only)".into()],
        ),
    }
}

fn result_of(entry: &Pending, outcome: Outcome, out: Captured, extra: Vec<String>) -> JobResult {
    let mut warnings = capture_lines(&out.stderr);
    warnings.extend(extra);
    JobResult {
        schema_version: 1,
        id: entry.id.clone(),
        hook: entry.hook.clone(),
        ranges: entry.ranges.clone(),
        queued_at: entry.queued_at.clone(),
        finished_at: crate::store::now_rfc3339(),
        outcome,
        stdout: capture_lines(&out.stdout),
        warnings,
    }
}

/// `abc1234..def5678` (and `+N more`) for a result's header line.
pub(crate) fn describe_ranges(ranges: &[Range]) -> String {
    let short = |s: &str| s.chars().take(12).collect::<String>();
    let Some(first) = ranges.first() else { return "no range".into() };
    let base = first.base.as_deref().map(short).unwrap_or_else(|| "(root)".into());
    let more = if ranges.len() > 1 { format!(" and {} more range(s)", ranges.len() - 1) } else { String::new() };
    format!("{base}..{}{more}", short(&first.head))
}

/// Print results nobody has printed yet, each exactly once (stdout: the hook's own
/// lines; stderr: its warnings).
pub(crate) fn print_results(out: &mut dyn Write, err: &mut dyn Write, results: &[JobResult]) -> std::io::Result<()> {
    for r in results {
        let what = if r.hook.is_empty() { "a queued hook".to_string() } else { format!("the {}", r.hook) };
        writeln!(
            out,
            "premerge: background job, {what} of {} (queued {}, {}):",
            describe_ranges(&r.ranges),
            if r.queued_at.is_empty() { "?" } else { &r.queued_at },
            match r.outcome {
                Outcome::Done => "done",
                Outcome::Failed => "failed",
                Outcome::Abandoned => "abandoned",
            }
        )?;
        for l in &r.stdout {
            writeln!(out, "  {l}")?;
        }
        for w in &r.warnings {
            writeln!(err, "{w}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch repository whose second commit changes `n` Rust files of `size` bytes.
    fn repo_changing(n: usize, size: usize) -> (tempfile::TempDir, Repo, Diff) {
        let d = tempfile::tempdir().unwrap();
        let repo = Repo::init(d.path()).unwrap();
        let body = |tag: &str| format!("// {tag}\n{}", "x".repeat(size));
        for i in 0..n {
            std::fs::write(d.path().join(format!("f{i}.rs")), body("a")).unwrap();
        }
        std::fs::write(d.path().join("README.md"), "r\n").unwrap();
        let base = repo.commit_all("base").unwrap();
        for i in 0..n {
            std::fs::write(d.path().join(format!("f{i}.rs")), body("b")).unwrap();
        }
        let head = repo.commit_all("change").unwrap();
        let paths = repo.diff_paths(Some(&base), &head).unwrap();
        (d, repo, paths)
    }

    fn post_merge() -> HookKind {
        HookKind::PostMerge { squash: false }
    }

    #[test]
    fn a_few_small_files_fit_and_budget_zero_never_does() {
        let (_d, repo, paths) = repo_changing(3, 200);
        assert_eq!(paths.files.len(), 3);
        let config = Config::defaults();
        assert!(fits(&repo, &config, &post_merge(), &paths, Duration::from_millis(100)));
        assert!(!fits(&repo, &config, &post_merge(), &paths, Duration::ZERO));
    }

    #[test]
    fn hundreds_of_files_or_megabytes_do_not_fit() {
        let (_d, repo, paths) = repo_changing(300, 10);
        assert!(!fits(&repo, &Config::defaults(), &post_merge(), &paths, Duration::from_millis(100)));
        // Two files, but 2 MB of source each: the sizes, read from blob headers, decide.
        let (_d, repo, paths) = repo_changing(2, 2 << 20);
        assert!(!fits(&repo, &Config::defaults(), &post_merge(), &paths, Duration::from_millis(100)));
    }

    #[test]
    fn the_paths_diff_keeps_both_sides_of_a_rename() {
        let d = tempfile::tempdir().unwrap();
        let repo = Repo::init(d.path()).unwrap();
        std::fs::write(d.path().join("old.rs"), "fn a() {}\n".repeat(20)).unwrap();
        let base = repo.commit_all("base").unwrap();
        std::fs::rename(d.path().join("old.rs"), d.path().join("new.rs")).unwrap();
        let head = repo.commit_all("rename").unwrap();
        let paths = repo.diff_paths(Some(&base), &head).unwrap();
        assert_eq!(paths.touched_paths(), ["new.rs", "old.rs"], "the fence sees both paths");
    }

    #[test]
    fn ranges_are_described_shortly() {
        let r = |b: Option<&str>, h: &str| Range { base: b.map(str::to_string), head: h.to_string() };
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        assert_eq!(describe_ranges(&[r(Some(&a), &b)]), "aaaaaaaaaaaa..bbbbbbbbbbbb");
        assert_eq!(describe_ranges(&[r(None, &b), r(Some(&a), &b)]), "(root)..bbbbbbbbbbbb and 1 more range(s)");
    }
}
