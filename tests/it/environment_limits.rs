//! The limits of the environment a hook runs in (issue 27): an output that cannot be
//! written (D9), a file-size limit (D10), a FIFO where premerge appends (D11), a
//! repository deleted under a running background job (D12), a scan cache changed on
//! disk (D14), and the small wrong outputs of D16 (the full queue's message,
//! `premerge status` on an output that fails, a missing argument's name). Each test
//! is the probe's reproduction, with the real binary and real git.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Run, TestRepo, bin, run_with_stdin, write_exec};

const GUARDED: &str = "def f(x):\n    assert x > 0\n    return x\n";
const UNGUARDED: &str = "def f(x):\n    return x\n";

/// The probe's setup: `a.py` and `c.txt` pushed to a bare `origin`, the plainest
/// hook shims installed, and a local commit removing `a.py`'s assert (one finding).
fn setup() -> (TestRepo, PathBuf) {
    let r = TestRepo::new();
    r.write("a.py", GUARDED);
    r.write("c.txt", "hi\n");
    r.commit_all("init");
    let remote = r.add_bare_remote("origin");
    r.git(&["push", "-q", "origin", "main"]);
    let hooks = r.root.join(".git/hooks");
    for name in ["pre-push", "post-merge"] {
        write_exec(&hooks.join(name), &format!("#!/bin/sh\nexec '{}' hook {name} \"$@\"\n", bin().display()));
    }
    r.write("a.py", UNGUARDED);
    r.commit_all("drop the assert");
    (r, remote)
}

/// The commit `main` names in the bare remote.
fn remote_main(remote: &Path) -> String {
    let o = Command::new("git").arg("--git-dir").arg(remote).args(["rev-parse", "refs/heads/main"]).output().unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn head(r: &TestRepo) -> String {
    r.git(&["rev-parse", "HEAD"])
}

/// Wait for a child at most `limit`; a child still running then is killed and the
/// test fails: the point of these tests is that nothing hangs.
#[track_caller]
fn finishes_within(mut child: Child, limit: Duration, what: &str) -> Run {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            let o = child.wait_with_output().unwrap();
            return Run {
                code: o.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
                stdout_bytes: o.stdout,
            };
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still ran after {} s: it hangs", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn piped(mut c: Command) -> Child {
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c.spawn().expect("process starts")
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Open a fix loop whose plan allows `a.py` only (the probe's `open_loop`).
/// The run directory of the worktree's open loop (a fresh one per loop).
fn loop_run_dir(r: &TestRepo) -> std::path::PathBuf {
    let st = r.premerge(&["loop", "status", "--format", "json"]).expect_code(0).json();
    std::path::PathBuf::from(st["loop"]["run_dir"].as_str().unwrap())
}

fn open_loop(r: &TestRepo) {
    let f = r.dir.path().join("f.json");
    fs::write(
        &f,
        r#"[{"file":"a.py","line":2,"summary":"s","failure_scenario":"x","category":"bug","severity":"blocker"}]"#,
    )
    .unwrap();
    r.premerge(&["plan", "--attempt", "1", "--findings", f.to_str().unwrap()]).expect_code(0);
}

// ------------------------------------------------------------------- D9, D10

/// D9: `git push >/dev/full` was refused: the hook's stdout failed with ENOSPC and
/// the hook exited 2. A hook ignores its output errors; its exit says only what
/// premerge decided.
#[test]
fn a_push_whose_output_cannot_be_written_goes_on() {
    let (r, remote) = setup();
    let full = fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let mut push = r.git_cmd(["push", "origin", "main"]);
    push.stdout(full);
    let o = push.stderr(Stdio::piped()).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(!stderr.contains("No space left"), "{stderr}");
    assert_eq!(remote_main(&remote), head(&r), "the push arrived");
    // The decision still stands: with a loop open, a stray path is refused (exit 1)
    // whether or not its lines could be printed.
    open_loop(&r);
    r.write("c.txt", "stray\n");
    let stray = r.commit_all("stray");
    let full = fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let mut push = r.git_cmd(["push", "origin", "main"]);
    push.stdout(full);
    let o = push.stderr(Stdio::piped()).output().unwrap();
    assert!(!o.status.success(), "the fence refused the stray push");
    assert_ne!(remote_main(&remote), stray);
}

/// `premerge` commands other than the hooks still report a failed output (exit 2):
/// a pipeline step's output is its result.
#[test]
fn other_commands_still_fail_on_a_full_output() {
    let (r, _) = setup();
    let full = fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let mut c = r.premerge_cmd(["scan", "--base", "HEAD~1", "--head", "HEAD", "--no-memory"]);
    let o = c.stdout(full).stderr(Stdio::piped()).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("premerge: ") && stderr.contains("No space left"), "{stderr}");
}

/// D10: under `ulimit -f` the hook was killed by SIGXFSZ ("died of signal 25") where
/// git alone succeeds. With the signal ignored, the write fails with EFBIG and is
/// the usual warning; the push goes on.
#[test]
fn a_file_size_limit_is_a_warning_not_a_killed_hook() {
    let (r, remote) = setup();
    // 8 KiB: git's own writes of this push fit; premerge's database does not.
    let mut sh = Command::new("sh");
    crate::common::hermetic(&mut sh, &r.home);
    sh.current_dir(&r.root).args(["-c", "ulimit -f 8; exec git push origin main"]);
    let o = run_with_stdin(&mut sh, b"");
    let both = format!("{}{}", o.stdout, o.stderr);
    assert!(!both.contains("died of signal"), "{both}");
    o.expect_code(0);
    assert_eq!(remote_main(&remote), head(&r));
    let warnings: Vec<&str> = o.stderr.lines().filter(|l| l.starts_with("premerge: ")).collect();
    assert!(
        warnings.iter().any(|l| l.contains("File too large") || l.contains("disk") || l.contains("full")),
        "the failed write is one warning line: {both}"
    );
}

// ----------------------------------------------------------------------- D11

/// D11: a FIFO at the state directory's `events.jsonl` hung `premerge plan` forever
/// after it opened the loop. Appends open with O_NONBLOCK and check the file type.
#[test]
fn a_fifo_at_the_event_log_never_hangs_plan() {
    let (r, _) = setup();
    fs::create_dir_all(r.state_dir()).unwrap();
    mkfifo(&r.state_dir().join("events.jsonl"));
    let f = r.dir.path().join("f.json");
    fs::write(&f, r#"[{"file":"a.py","line":2,"summary":"s","failure_scenario":"x"}]"#).unwrap();
    let plan = finishes_within(
        piped(r.premerge_cmd(["plan", "--attempt", "1", "--findings", f.to_str().unwrap()])),
        Duration::from_secs(20),
        "plan",
    );
    plan.expect_code(0);
    // The plan is written, so the open loop fences with it; the log that could not
    // be written is one warning line naming the FIFO.
    assert!(loop_run_dir(&r).join("fix-waves-01.json").is_file());
    let fifo: Vec<&str> = plan.stderr.lines().filter(|l| l.contains("FIFO")).collect();
    assert_eq!(fifo.len(), 1, "{}", plan.stderr);
    assert!(fifo[0].starts_with("premerge: warning: ") && fifo[0].contains("events.jsonl: is a FIFO"), "{}", fifo[0]);
}

/// D11: a scan whose event log is a FIFO writes its memories and says so; the log
/// that could not be written is one warning, not "memories not written".
#[test]
fn a_fifo_at_the_event_log_costs_the_log_line_not_the_memories() {
    let (r, _) = setup();
    fs::create_dir_all(r.state_dir()).unwrap();
    mkfifo(&r.state_dir().join("events.jsonl"));
    let scan = finishes_within(
        piped(r.premerge_cmd(["scan", "--issue", "27", "--base", "HEAD~1", "--head", "HEAD"])),
        Duration::from_secs(30),
        "scan",
    );
    scan.expect_code(0);
    assert!(scan.stdout.contains("1 finding(s) in 1 file(s); 1 guard memory(ies) written"), "{}", scan.stdout);
    let lines: Vec<&str> = scan.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", scan.stderr);
    assert!(lines[0].contains("event log: ") && lines[0].contains("is a FIFO"), "{}", lines[0]);
    let listed = r.premerge(&["memory", "list", "--format", "json"]).expect_code(0).json();
    assert_eq!(listed["memories"].as_array().unwrap().len(), 1);
}

/// D11: with a loop open and a FIFO at the run directory's `events.jsonl`, a push
/// hung while the fence logged. It now ends, and a stray path is still refused.
#[test]
fn a_fifo_at_the_run_directory_log_never_hangs_a_push() {
    let (r, remote) = setup();
    open_loop(&r);
    let log = loop_run_dir(&r).join("events.jsonl");
    fs::remove_file(&log).unwrap();
    mkfifo(&log);
    r.write("s.txt", "s\n");
    let stray = r.commit_all("s");
    let push = finishes_within(piped(r.git_cmd(["push", "origin", "main"])), Duration::from_secs(30), "git push");
    assert_ne!(push.code, 0, "the stray push is refused: {}", push.stderr);
    assert_ne!(remote_main(&remote), stray);
}

/// D11: the background job blocked on the same open for its whole time limit, and
/// `status --wait` with it. Both finish, and the result is recorded.
#[test]
fn a_fifo_at_the_event_log_never_holds_the_background_job() {
    let (mut r, _) = setup();
    r.env.push(("PREMERGE_HOOKS_BUDGET_MS".into(), "0".into()));
    fs::create_dir_all(r.state_dir()).unwrap();
    mkfifo(&r.state_dir().join("events.jsonl"));
    let base = r.git(&["rev-parse", "HEAD~1"]);
    let stdin = format!("refs/heads/main {} refs/heads/main {base}\n", head(&r));
    r.premerge_stdin(&["hook", "pre-push", "origin", "url"], stdin.as_bytes()).expect_code(0);
    let status = finishes_within(
        piped(r.premerge_cmd(["status", "--wait", "--format", "json"])),
        Duration::from_secs(60),
        "status --wait",
    );
    status.expect_code(0);
    let v: Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(v["pending"], 0, "{v}");
    let kind = fs::symlink_metadata(r.state_dir().join("events.jsonl")).unwrap().file_type();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&kind), "the FIFO is left where it was");
}

// ----------------------------------------------------------------------- D12

/// D12: a background job that outlived its repository (CI deleting the workspace)
/// rebuilt `<repo>/.git/premerge/...`, and the next `git clone` there failed. The job
/// now stops without creating anything.
#[test]
fn a_background_job_whose_repository_is_deleted_creates_nothing() {
    let (mut r, _) = setup();
    r.env.push(("PREMERGE_HOOKS_BUDGET_MS".into(), "0".into()));
    let bg = r.state_dir().join("background");
    // Queue ten ranges while a stand-in job holds the lock.
    fs::create_dir_all(&bg).unwrap();
    let lock = fs::OpenOptions::new().create(true).truncate(false).write(true).open(bg.join("job.lock")).unwrap();
    lock.try_lock().unwrap();
    for i in 0..10 {
        let old = head(&r);
        r.write(&format!("m{i}.py"), GUARDED);
        r.commit_all("add");
        r.write(&format!("m{i}.py"), UNGUARDED);
        let new = r.commit_all("drop");
        let stdin = format!("refs/heads/b{i} {new} refs/heads/b{i} {old}\n");
        r.premerge_stdin(&["hook", "pre-push", "origin", "url"], stdin.as_bytes()).expect_code(0);
    }
    assert_eq!(crate::common::file_names(&bg.join("pending")).len(), 10);
    drop(lock);
    // A hook with nothing to push starts a job for the queue; once the job has
    // finished a range, the workspace is deleted under it.
    r.premerge(&["hook", "pre-push", "origin", "url"]).expect_code(0);
    let start = Instant::now();
    while crate::common::file_names(&bg.join("results")).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(60), "the job never finished a range");
        std::thread::sleep(Duration::from_millis(10));
    }
    let job: Value = serde_json::from_str(&fs::read_to_string(bg.join("job.json")).unwrap()).unwrap();
    let pid = job["pid"].as_u64().unwrap();
    let root = r.root.clone();
    let start = Instant::now();
    while root.exists() {
        // The job may be writing while the tree goes: remove until it is gone.
        let _ = fs::remove_dir_all(&root);
        assert!(start.elapsed() < Duration::from_secs(30), "{} could not be removed", root.display());
    }
    let start = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(start.elapsed() < Duration::from_secs(120), "the job did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!root.exists(), "the job recreated {}: {:?}", root.display(), tree(&root));
    // And a clone into the path succeeds.
    let origin = r.dir.path().join("origin.git");
    r.git_in(r.dir.path(), &["clone", "-q", origin.to_str().unwrap(), root.to_str().unwrap()]);
}

/// What stands under `root` (for a failure message).
fn tree(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            out.push(e.path().display().to_string());
            if e.path().is_dir() {
                stack.push(e.path());
            }
        }
    }
    out
}

// ----------------------------------------------------------------------- D14

/// D14's reproduction: the cache entry of a scanned range edited so that its line
/// stays valid (its findings emptied) gave 0 findings instead of 1. The entry's sum
/// makes it a miss: the same findings as a cold scan, and `status` counts it.
#[test]
fn an_edited_scan_cache_entry_gives_the_cold_scan_findings() {
    let (r, _) = setup();
    let scan = || {
        let run = r.premerge(&["scan", "--base", "HEAD~1", "--head", "HEAD", "--no-memory", "--format", "json"]);
        run.expect_code(0).json()["findings"].clone()
    };
    let cold = {
        let mut c = r.premerge_cmd(["scan", "--base", "HEAD~1", "--head", "HEAD", "--no-memory", "--format", "json"]);
        c.env("PREMERGE_SCAN_CACHE", "0");
        run_with_stdin(&mut c, b"").expect_code(0).json()["findings"].clone()
    };
    assert_eq!(cold.as_array().unwrap().len(), 1);
    assert_eq!(scan(), cold, "the first scan fills the cache");
    let cache = r.state_dir().join("scan-cache");
    let text = fs::read_to_string(&cache).unwrap();
    // The probe's `sed 's/ \[\[.*$/ []/'`: the findings emptied, the line still valid.
    let emptied: String =
        text.lines().map(|l| l.split_once(" [[").map_or(l.to_string(), |(k, _)| format!("{k} []")) + "\n").collect();
    assert_ne!(emptied, text);
    fs::write(&cache, &emptied).unwrap();
    assert_eq!(scan(), cold, "an emptied entry is a miss");
    // One flipped bit in the rebuilt entry's findings text.
    let text = fs::read_to_string(&cache).unwrap();
    let at = text.find("assert").expect("the finding quotes the removed assert");
    let mut bytes = text.into_bytes();
    bytes[at] ^= 0x20;
    fs::write(&cache, &bytes).unwrap();
    assert_eq!(scan(), cold, "a flipped bit is a miss");
    let status = r.premerge(&["status", "--format", "json"]).expect_code(0).json();
    assert_eq!(status["scan_cache"]["damaged"], 2, "{status}");
    assert_eq!(status["scan_cache"]["entries"], 1, "{status}");
    let text = r.premerge(&["status"]).expect_code(0).stdout.clone();
    assert!(text.contains("scan cache: 2 damaged entries found so far"), "{text}");
}

// ----------------------------------------------------------------------- D16

/// D16: the full queue's message named no range. It names the range and the
/// `premerge scan` command for it.
#[test]
fn a_full_queue_names_the_range_and_its_scan_command() {
    let (mut r, _) = setup();
    r.env.push(("PREMERGE_HOOKS_BUDGET_MS".into(), "0".into()));
    let bg = r.state_dir().join("background");
    fs::create_dir_all(bg.join("pending")).unwrap();
    let lock = fs::OpenOptions::new().create(true).truncate(false).write(true).open(bg.join("job.lock")).unwrap();
    lock.try_lock().unwrap();
    let base = r.git(&["rev-parse", "HEAD~1"]);
    let new = head(&r);
    for i in 0..32 {
        let stdin = format!("refs/heads/q{i} {new} refs/heads/q{i} {base}\n");
        r.premerge_stdin(&["hook", "pre-push", "origin", "url"], stdin.as_bytes()).expect_code(0);
    }
    let stdin = format!("refs/heads/main {new} refs/heads/main {base}\n");
    let run = r.premerge_stdin(&["hook", "pre-push", "origin", "url"], stdin.as_bytes());
    run.expect_code(0);
    let line: Vec<&str> = run.stderr.lines().filter(|l| l.contains("not scanned")).collect();
    assert_eq!(line.len(), 1, "{}", run.stderr);
    assert!(line[0].contains(&format!("not scanned: {base}..{new}")), "{}", line[0]);
    assert!(line[0].contains(&format!("`premerge scan {base}..{new}`")), "{}", line[0]);
    drop(lock);
}

/// D16: `premerge status` claimed every result before printing, so an output that
/// failed lost them for good. A result is given back when its lines cannot be
/// written, and the next `status` prints it.
#[test]
fn status_claims_a_result_only_once_it_is_written() {
    let (mut r, _) = setup();
    r.env.push(("PREMERGE_HOOKS_BUDGET_MS".into(), "0".into()));
    let base = r.git(&["rev-parse", "HEAD~1"]);
    let stdin = format!("refs/heads/main {} refs/heads/main {base}\n", head(&r));
    r.premerge_stdin(&["hook", "pre-push", "origin", "url"], stdin.as_bytes()).expect_code(0);
    let results = r.state_dir().join("background/results");
    let start = Instant::now();
    while crate::common::file_names(&results).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(60), "no result recorded");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The job records its end after its last result: wait for it, so a loaded machine
    // cannot show the job still running at the last `status`.
    let job = r.state_dir().join("background/job.json");
    while !fs::read_to_string(&job).is_ok_and(|t| t.contains("\"finished_at\":\"2")) {
        assert!(start.elapsed() < Duration::from_secs(60), "the job never finished");
        std::thread::sleep(Duration::from_millis(20));
    }
    for format in ["text", "json"] {
        let full = fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let mut c = r.premerge_cmd(["status", "--format", format]);
        let o = c.stdout(full).stderr(Stdio::piped()).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(crate::common::file_names(&results).len(), 1, "{format}: the result waits still");
    }
    let shown = r.premerge(&["status"]).expect_code(0).stdout.clone();
    assert!(shown.contains("premerge: background job, the pre-push of"), "{shown}");
    assert!(shown.contains("a.py"), "{shown}");
    assert!(crate::common::file_names(&results).is_empty());
}

/// D16: a missing required argument's name was lost from the one-line usage error
/// (`the following required arguments were not provided:; try ...`).
#[test]
fn a_missing_argument_is_named() {
    let (r, _) = setup();
    let run = r.premerge(&["collisions", "--target", "main"]);
    run.expect_code(2);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("were not provided: <BRANCH"), "{}", run.stderr);
}
