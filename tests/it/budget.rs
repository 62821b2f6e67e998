//! The hooks' time budget and the background job: real binary, real repositories,
//! real detached processes.

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::TestRepo;

const BEFORE: &str = "pub struct Query {\n    pub limit: u8,\n}\n\npub fn set_ratio(r: f64) -> f64 {\n    assert!(r >= 0.0 && r <= 1.0);\n    r\n}\n";
const AFTER: &str = "pub struct Query {\n    pub limit: u64,\n}\n\npub fn set_ratio(r: f64) -> f64 {\n    r\n}\n";

/// A repository with a bare remote holding `main`, and a local commit on top that
/// widens `Query.limit` in `src/q<n>.rs` and drops its assert. Returns the pre-push
/// stdin of that commit.
fn pushed_widening(n: usize) -> (TestRepo, String) {
    let r = TestRepo::new();
    for i in 0..n {
        r.write(&format!("src/q{i}.rs"), BEFORE);
    }
    r.write("README.md", "# x\n");
    let base = r.commit_all("base");
    r.add_bare_remote("origin");
    r.git(&["push", "-q", "origin", "main"]);
    for i in 0..n {
        r.write(&format!("src/q{i}.rs"), AFTER);
    }
    let head = r.commit_all("widen");
    (r, format!("refs/heads/main {head} refs/heads/main {base}\n"))
}

fn bg_dir(r: &TestRepo) -> PathBuf {
    r.root.join(".git/premerge/background")
}

fn json_files(dir: &std::path::Path) -> Vec<String> {
    let mut v = crate::common::file_names(dir);
    v.retain(|n| n.ends_with(".json"));
    v
}

/// Wait (without printing anything) until `n` results are recorded and nothing is
/// pending, as the detached job finishes on its own.
#[track_caller]
fn wait_for_results(r: &TestRepo, n: usize) {
    let start = Instant::now();
    while json_files(&bg_dir(r).join("results")).len() < n || !json_files(&bg_dir(r).join("pending")).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(120), "the background job never recorded {n} result(s)");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn status_json(r: &TestRepo, wait: bool) -> Value {
    let mut args = vec!["status", "--format", "json"];
    if wait {
        args.push("--wait");
    }
    r.premerge(&args).expect_code(0).json()
}

fn memories(r: &TestRepo) -> usize {
    r.premerge(&["memory", "list", "--format", "json"]).expect_code(0).json()["memories"].as_array().unwrap().len()
}

fn hook(r: &TestRepo, stdin: &str) -> crate::common::Run {
    r.premerge_stdin(&["hook", "pre-push", "origin", "url"], stdin.as_bytes())
}

#[test]
fn budget_zero_defers_every_signal_and_status_wait_prints_them_once() {
    let (r, stdin) = deferred(2);
    let out = hook(&r, &stdin);
    out.expect_code(0);
    assert!(
        out.stdout.contains("premerge pre-push: 2 path(s) changed in 1 ref(s); signals continue in the background")
    );
    assert!(!out.stdout.contains("widening scan"), "no signal ran in the hook:\n{}", out.stdout);
    let s = status_json(&r, true);
    assert_eq!(s["pending"], 0);
    assert_eq!(s["job"]["state"], "idle");
    let results = s["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{s}");
    assert_eq!(results[0]["outcome"], "done");
    assert_eq!(results[0]["hook"], "pre-push");
    let lines: Vec<&str> = results[0]["stdout"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert_eq!(lines[0], "premerge pre-push: 2 file(s) changed in 1 ref(s) (+2 -4)");
    assert!(lines[1].starts_with("premerge widening scan: 4 finding(s), 4 guard memory(ies) written"), "{lines:?}");
    assert_eq!(memories(&r), 4, "the job recorded the guard memories");
    // Printed once: neither status nor the next hook shows them again.
    assert_eq!(status_json(&r, false)["results"], Value::Array(Vec::new()));
    let again = r.premerge(&["status"]);
    again.expect_code(0);
    assert!(again.stdout.contains("no new results"), "{}", again.stdout);
    let next = hook(&r, "");
    assert!(!next.stdout.contains("background job"), "{}", next.stdout);
}

#[test]
fn the_next_hook_prints_what_the_job_found_exactly_once() {
    let (r, stdin) = deferred(1);
    hook(&r, &stdin).expect_code(0);
    wait_for_results(&r, 1);
    // The next hook (any: here an empty push) prints the result before its own work.
    let next = hook(&r, "");
    next.expect_code(0);
    let first_line = next.stdout.lines().next().unwrap();
    assert!(first_line.starts_with("premerge: background job, the pre-push of "), "{}", next.stdout);
    assert!(first_line.ends_with(", done):"), "{first_line}");
    assert!(
        next.stdout.contains("  premerge widening scan: 2 finding(s), 2 guard memory(ies) written"),
        "{}",
        next.stdout
    );
    assert!(next.stdout.contains("premerge pre-push: 0 file(s) changed in 0 ref(s)"), "{}", next.stdout);
    for _ in 0..2 {
        let later = hook(&r, "");
        assert!(!later.stdout.contains("background job"), "printed once:\n{}", later.stdout);
    }
    assert_eq!(status_json(&r, false)["results"], Value::Array(Vec::new()));
}

#[test]
fn concurrent_hooks_run_one_job_at_a_time_and_every_range_once() {
    let (r, _) = deferred(1);
    // Four pushes of four different commits, all started at once.
    let mut stdins = Vec::new();
    for i in 0..4 {
        let old = r.git(&["rev-parse", "HEAD"]);
        r.write(&format!("src/extra{i}.rs"), BEFORE);
        r.commit_all("add");
        r.write(&format!("src/extra{i}.rs"), AFTER);
        let new = r.commit_all("widen");
        stdins.push(format!("refs/heads/b{i} {new} refs/heads/b{i} {old}\n"));
    }
    let children: Vec<_> = stdins
        .iter()
        .map(|s| {
            let mut c = r.premerge_cmd(["hook", "pre-push", "origin", "url"]);
            c.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
            let mut child = c.spawn().unwrap();
            std::io::Write::write_all(&mut child.stdin.take().unwrap(), s.as_bytes()).unwrap();
            child
        })
        .collect();
    // A hook that starts after the job finished an earlier range prints (claims) that
    // result itself; the rest are left for `status`. Together: each range once.
    let mut claimed_by_hooks = 0;
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success());
        claimed_by_hooks += String::from_utf8_lossy(&out.stdout).matches("premerge: background job, ").count();
    }
    let s = status_json(&r, true);
    let results = s["results"].as_array().unwrap();
    assert_eq!(results.len() + claimed_by_hooks, 4, "{s}");
    let mut heads: Vec<&str> = results.iter().map(|x| x["ranges"][0]["head"].as_str().unwrap()).collect();
    heads.sort();
    heads.dedup();
    assert_eq!(heads.len(), results.len(), "each range ran exactly once");
    assert!(results.iter().all(|x| x["outcome"] == "done"));
    // The job's log: a start is always followed by its own end before the next start.
    let kinds: Vec<Value> = crate::common::events_in(&r.state_dir())
        .into_iter()
        .filter(|e| e["kind"].as_str().is_some_and(|k| k.starts_with("background-job-")))
        .collect();
    assert!(!kinds.is_empty());
    for pair in kinds.chunks(2) {
        assert_eq!(pair[0]["kind"], "background-job-started", "{kinds:?}");
        assert_eq!(pair.get(1).map(|e| &e["kind"]), Some(&Value::from("background-job-finished")), "{kinds:?}");
        assert_eq!(pair[0]["pid"], pair[1]["pid"], "one job's start and end: never two jobs at once");
    }
    let done: u64 = kinds.iter().filter_map(|e| e["entries_done"].as_u64()).sum();
    assert_eq!(done, 4);
}

/// [`pushed_widening`] with a hook budget of 0: the hook defers every signal.
fn deferred(n: usize) -> (TestRepo, String) {
    let (mut r, stdin) = pushed_widening(n);
    r.env.push(("PREMERGE_HOOKS_BUDGET_MS".into(), "0".into()));
    (r, stdin)
}

/// A [`deferred`] push whose range the hook queued while the job lock is held: no job
/// runs it until the returned lock is dropped.
fn queued_while_locked(n: usize) -> (TestRepo, fs::File) {
    let (r, stdin) = deferred(n);
    let lock = hold_job_lock(&r);
    hook(&r, &stdin).expect_code(0);
    (r, lock)
}

/// Hold the job lock as a running job would (released on drop).
fn hold_job_lock(r: &TestRepo) -> fs::File {
    fs::create_dir_all(bg_dir(r)).unwrap();
    let f = fs::OpenOptions::new().create(true).truncate(false).write(true).open(bg_dir(r).join("job.lock")).unwrap();
    f.try_lock().unwrap();
    f
}

#[test]
fn a_range_left_by_a_killed_job_is_run_again_and_status_wait_waits() {
    let (r, stdin) = deferred(1);
    // A job holds the lock and dies without running the queue.
    let lock = hold_job_lock(&r);
    hook(&r, &stdin).expect_code(0);
    assert_eq!(json_files(&bg_dir(&r).join("pending")).len(), 1);
    let s = status_json(&r, false);
    assert_eq!(s["job"]["state"], "running");
    assert_eq!(s["pending"], 1);
    // `status --wait` blocks while the job runs.
    let mut waiter = r.premerge_cmd(["status", "--wait", "--format", "json"]);
    waiter.stdout(std::process::Stdio::piped());
    let waiter = waiter.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(json_files(&bg_dir(&r).join("pending")).len(), 1, "nothing ran while the lock was held");
    drop(lock);
    // The killed job's entry is still pending; status --wait runs it and prints it.
    let out = waiter.wait_with_output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pending"], 0);
    assert_eq!(v["results"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["results"][0]["outcome"], "done");
    assert_eq!(memories(&r), 2);
}

#[test]
fn the_next_hook_restarts_a_killed_job() {
    let (r, lock) = queued_while_locked(1);
    drop(lock);
    // No job runs now; an unrelated hook notices the queue and starts one.
    hook(&r, "").expect_code(0);
    wait_for_results(&r, 1);
    assert_eq!(memories(&r), 2);
}

#[test]
fn an_entry_no_job_ever_finishes_is_reported_abandoned() {
    let (r, lock) = queued_while_locked(1);
    // Three jobs started on it and died (the count each job records before it works).
    let pending = bg_dir(&r).join("pending");
    let name = &json_files(&pending)[0];
    let mut entry: Value = serde_json::from_str(&fs::read_to_string(pending.join(name)).unwrap()).unwrap();
    entry["attempts"] = Value::from(3);
    fs::write(pending.join(name), entry.to_string()).unwrap();
    drop(lock);
    let out = r.premerge(&["status", "--wait"]);
    out.expect_code(0);
    assert!(out.stdout.contains("abandoned):"), "{}", out.stdout);
    assert!(out.stderr.contains("3 jobs started on this range and none finished"), "{}", out.stderr);
    assert_eq!(memories(&r), 0);
}

#[test]
fn a_tampered_queue_entry_is_reported_and_never_run() {
    let (r, lock) = queued_while_locked(1);
    let pending = bg_dir(&r).join("pending");
    let name = &json_files(&pending)[0];
    fs::write(pending.join(name), "{\"ranges\": [{\"head\": \"--output=/tmp/x\"}]}").unwrap();
    drop(lock);
    let out = r.premerge(&["status", "--wait"]);
    out.expect_code(0);
    assert!(out.stdout.contains("failed):"), "{}", out.stdout);
    assert!(out.stderr.contains("unreadable queue entry"), "{}", out.stderr);
    assert_eq!(memories(&r), 0);
}

#[test]
fn budget_zero_still_runs_the_fence_in_the_hook() {
    let (r, stdin) = deferred(1);
    // A plan that allows only README.md: the pushed src/q0.rs is a stray.
    let findings = r.dir.path().join("f.json");
    fs::write(&findings, r#"[{"file":"README.md","line":1,"summary":"s","failure_scenario":"f"}]"#).unwrap();
    r.premerge(&["plan", "--attempt", "1", "--findings", findings.to_str().unwrap()]).expect_code(0);
    let out = hook(&r, &stdin);
    out.expect_code(1);
    assert!(out.stderr.contains("premerge fence: stray: src/q0.rs"), "{}", out.stderr);
    assert!(out.stdout.contains("signals continue in the background"), "{}", out.stdout);
    // The signals still ran, in the background.
    let s = status_json(&r, true);
    assert_eq!(s["results"][0]["outcome"], "done", "{s}");
}

#[test]
fn a_large_push_is_deferred_at_once_by_the_estimate() {
    // 300 changed Rust files: far more than 100 ms of parsing by the cost model, so the
    // hook defers without starting the worker (no memory is written by the hook).
    let (mut r, stdin) = pushed_widening(300);
    r.env.push(("PREMERGE_HOOKS_BUDGET_MS".into(), "100".into()));
    let lock = hold_job_lock(&r);
    let out = hook(&r, &stdin);
    out.expect_code(0);
    assert!(
        out.stdout.contains("300 path(s) changed in 1 ref(s); signals continue in the background"),
        "{}",
        out.stdout
    );
    assert!(!r.root.join(".git/premerge/premerge.db").exists(), "the hook wrote no memory");
    drop(lock);
    let s = status_json(&r, true);
    assert_eq!(s["results"][0]["outcome"], "done");
    assert_eq!(memories(&r), 600);
}

#[test]
fn git_push_returns_while_the_job_still_runs() {
    let (mut r, _) = pushed_widening(1);
    // A slow memory backend keeps the job busy for seconds.
    let slow = r.dir.path().join("slow-backend");
    fs::write(&slow, "#!/bin/sh\nsleep 4\n").unwrap();
    fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    r.write(
        "premerge.toml",
        format!("[memory]\nbackend_command = [\"{}\"]\nbackend_timeout_ms = 20000\n", slow.display()),
    );
    r.commit_all("config");
    r.env.push(("PREMERGE_HOOKS_BUDGET_MS".into(), "0".into()));
    let hook_path = r.root.join(".git/hooks/pre-push");
    fs::write(&hook_path, format!("#!/bin/sh\nexec '{}' hook pre-push \"$@\"\n", crate::common::bin().display()))
        .unwrap();
    fs::set_permissions(&hook_path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut push = r.git_cmd(["push", "origin", "main"]);
    push.env("PREMERGE_HOOKS_BUDGET_MS", "0");
    let out = push.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // git has returned (its output pipes closed) while the job still works on the push.
    let s = status_json(&r, false);
    assert!(s["job"]["state"] == "running" || s["pending"] == 1, "{s}");
    assert_eq!(s["results"], Value::Array(Vec::new()), "nothing finished yet");
    let s = status_json(&r, true);
    assert_eq!(s["results"][0]["outcome"], "done", "{s}");
}

#[test]
fn master_switch_disables_the_budget_and_the_job() {
    let (mut r, stdin) = deferred(1);
    r.env.push(("PREMERGE".into(), "0".into()));
    let out = hook(&r, &stdin);
    out.expect_code(0);
    assert_eq!(out.stdout, "");
    assert!(!bg_dir(&r).exists(), "nothing queued");
    // Queue something with the hooks on, then switch them off: no job runs it.
    r.env.pop();
    let lock = hold_job_lock(&r);
    hook(&r, &stdin).expect_code(0);
    drop(lock);
    r.env.push(("PREMERGE".into(), "0".into()));
    r.premerge(&["hook", "background"]).expect_code(0);
    hook(&r, "").expect_code(0);
    let s = status_json(&r, true);
    assert_eq!(s["pending"], 1, "{s}");
    assert_eq!(memories(&r), 0);
}
