//! Hooks that never stand in the way: every failure of premerge's own is one warning
//! line and git goes on, except an open fix loop's fence, which fails closed; and a
//! diff engine that survives the repositories people have (twin files renamed and
//! edited, annotated tags, tags of trees, partial, shallow, submodules, missing
//! objects, valueless config keys), falling back to the `git` executable where
//! libgit2 cannot read what git can.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::common::{Run, TestRepo, bin, run_with_stdin, write_exec};

const ZERO: &str = "0000000000000000000000000000000000000000";

const QUERY_BEFORE: &str = "/// A page request.\npub struct Query {\n    pub limit: u8,\n    pub name: String,\n}\n";
const QUERY_AFTER: &str = "/// A page request.\npub struct Query {\n    pub limit: u64,\n    pub name: String,\n}\n";

/// `premerge diff --format json` as path -> file object.
fn diff_json(r: &TestRepo, args: &[&str]) -> BTreeMap<String, Value> {
    let mut a = vec!["diff", "--format", "json"];
    a.extend_from_slice(args);
    let run = r.premerge(&a);
    run.expect_code(0);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    run.json()["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap().to_string(), f.clone()))
        .collect()
}

/// `git diff --name-status -M` of a range as (status letter, path, old path) rows,
/// and premerge's `diff -z` of the same range in the same shape.
fn name_status(r: &TestRepo, base: &str, head: &str) -> (Vec<String>, Vec<String>) {
    let git = r.git(&["diff", "--name-status", "-M", base, head]);
    let mut g: Vec<String> = git
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            match f[0].as_bytes()[0] {
                b'R' | b'C' => format!("{} {} <- {}", &f[0][..1], f[2], f[1]),
                _ => format!("{} {}", f[0], f[1]),
            }
        })
        .collect();
    let run = r.premerge(&["diff", "-z", "--base", base, "--head", head]);
    run.expect_code(0);
    let fields: Vec<&str> = run.stdout.split('\0').collect();
    let mut p = Vec::new();
    let mut i = 0;
    while i + 1 < fields.len() {
        match fields[i] {
            "R" | "C" => {
                p.push(format!("{} {} <- {}", fields[i], fields[i + 1], fields[i + 2]));
                i += 3;
            }
            s => {
                p.push(format!("{s} {}", fields[i + 1]));
                i += 2;
            }
        }
    }
    g.sort();
    p.sort();
    (g, p)
}

/// Install the plainest possible hook: `exec premerge hook <name> "$@"`, so git
/// itself feeds it (real pre-push stdin, real post-merge flag).
fn hook_script(r: &TestRepo, name: &str, env: &str) {
    let p = PathBuf::from(r.git(&["rev-parse", "--absolute-git-dir"])).join("hooks").join(name);
    write_exec(&p, &format!("#!/bin/sh\n{env}exec '{}' hook {name} \"$@\"\n", bin().display()));
}

/// Run git (with its hooks) and capture both streams.
fn git_run(r: &TestRepo, args: &[&str]) -> Run {
    run_with_stdin(&mut r.git_cmd(args), b"")
}

/// premerge's own lines on stderr (git's are left out).
fn premerge_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains("premerge")).collect()
}

fn pre_push(r: &TestRepo, stdin: &str) -> Run {
    r.premerge_stdin(&["hook", "pre-push", "origin", "url"], stdin.as_bytes())
}

/// Open a fix loop: `premerge plan --attempt 1` in the default run directory, with
/// one finding on `src/query.rs`.
fn open_loop(r: &TestRepo) {
    let findings = r.dir.path().join("findings.json");
    let rows = json!([{"file": "src/query.rs", "line": 3, "summary": "limit", "failure_scenario": "it breaks"}]);
    fs::write(&findings, rows.to_string()).unwrap();
    r.premerge(&["plan", "--attempt", "1", "--findings", findings.to_str().unwrap()]).expect_code(0);
}

fn widened() -> (TestRepo, String, String) {
    let r = TestRepo::new();
    r.write("src/query.rs", QUERY_BEFORE);
    let base = r.commit_all("initial");
    r.write("src/query.rs", QUERY_AFTER);
    let head = r.commit_all("widen");
    (r, base, head)
}

// ---------------------------------------------------------------- fail open

#[test]
fn a_panic_in_any_stage_is_one_warning_line_and_the_push_goes_on() {
    let (r, base, head) = widened();
    let stdin = format!("refs/heads/main {head} refs/heads/main {base}\n");
    for (stage, switch) in [
        ("widening scan", "scan.enabled = false"),
        ("copy detector", "clones.enabled = false"),
        ("diff", "hooks.enabled = false"),
        ("configuration", "fix the named file"),
        ("repository", "hooks.enabled = false"),
        ("fence", "fence.mode"),
    ] {
        let mut c = r.premerge_cmd(["hook", "pre-push", "origin", "url"]);
        c.env("PREMERGE_TEST_PANIC", stage);
        let run = run_with_stdin(&mut c, stdin.as_bytes());
        run.expect_code(0);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{stage}: one line only:\n{}", run.stderr);
        assert!(lines[0].starts_with(&format!("premerge: {stage}: panicked: injected")), "{}", lines[0]);
        assert!(lines[0].contains("PREMERGE=0") && lines[0].contains(switch), "{}", lines[0]);
        assert!(!run.stderr.contains("thread '"), "no Rust panic report: {}", run.stderr);
    }
    // The scan's panic does not stop the fence or the copy detector from running.
    let mut c = r.premerge_cmd(["hook", "pre-push", "origin", "url"]);
    c.env("PREMERGE_TEST_PANIC", "widening scan");
    let run = run_with_stdin(&mut c, stdin.as_bytes());
    assert!(run.stdout.contains("premerge pre-push: 1 file(s) changed"), "{}", run.stdout);
}

#[test]
fn post_merge_failures_never_block_either() {
    let (r, _, _) = widened();
    for stage in ["widening scan", "diff", "configuration"] {
        let mut c = r.premerge_cmd(["hook", "post-merge", "0"]);
        c.env("PREMERGE_TEST_PANIC", stage);
        let run = run_with_stdin(&mut c, b"");
        run.expect_code(0);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(run.stderr.starts_with(&format!("premerge: {stage}: panicked")), "{}", run.stderr);
    }
}

#[test]
fn a_panic_outside_every_stage_is_caught_by_main() {
    let (r, _, _) = widened();
    // From a hook: one warning line, exit 0.
    let mut c = r.premerge_cmd(["hook", "post-merge", "0"]);
    c.env("PREMERGE_TEST_PANIC", "command");
    let run = run_with_stdin(&mut c, b"");
    run.expect_code(0);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("premerge: post-merge: panicked: injected"), "{}", run.stderr);
    // Any other command: one error line and exit 2, never Rust's exit 101.
    let mut c = r.premerge_cmd(["config"]);
    c.env("PREMERGE_TEST_PANIC", "command");
    let run = run_with_stdin(&mut c, b"");
    run.expect_code(2);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("premerge: internal error: panicked: injected"), "{}", run.stderr);
}

#[test]
fn real_failures_outside_a_loop_warn_and_exit_0() {
    let (r, base, head) = widened();
    // Unparseable push input (diff), a broken premerge.toml (configuration): each is
    // one line naming the stage and the way out, and the push goes on.
    let run = pre_push(&r, "refs/heads/main not-an-oid refs/heads/main\n");
    run.expect_code(0);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("premerge: diff: pre-push input line 1: expected 4"), "{}", run.stderr);
    assert!(run.stderr.contains("PREMERGE=0 skips premerge once"), "{}", run.stderr);

    // (The pre-push hook reads premerge.toml as of the push's base, never the working
    // tree's, so the broken configuration here is a local git config key.)
    r.git(&["config", "premerge.scan.bogus", "1"]);
    let run = pre_push(&r, &format!("refs/heads/main {head} refs/heads/main {base}\n"));
    run.expect_code(0);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("premerge: configuration: git config premerge.scan.bogus"), "{}", run.stderr);
    r.git(&["config", "--unset", "premerge.scan.bogus"]);

    // The store cannot be opened (its database is a directory): the scan's memories
    // cannot be written, one warning, the push goes on. The findings still print
    // (issue 27, D3: a damaged store cost the whole stage).
    fs::create_dir_all(r.root.join(".git/premerge/premerge.db")).unwrap();
    let run = pre_push(&r, &format!("refs/heads/main {head} refs/heads/main {base}\n"));
    run.expect_code(0);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("premerge: warning: guard memories not written: "), "{}", run.stderr);
    assert!(run.stderr.contains("PREMERGE_INVARIANT_MEMORY=0"), "{}", run.stderr);
    assert!(run.stdout.contains("premerge widening scan: 1 finding(s), 0 guard memory(ies) written"), "{}", run.stdout);
    fs::remove_dir_all(r.root.join(".git/premerge/premerge.db")).unwrap();

    // A commit git cannot read either: the diff fails in libgit2 and in git, the
    // hook warns once, naming libgit2's error once.
    let run = pre_push(&r, &format!("refs/heads/main {} refs/heads/main {base}\n", "1".repeat(40)));
    run.expect_code(0);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("premerge: diff: "), "{}", run.stderr);
}

#[test]
fn an_open_loop_fence_fails_closed_when_it_cannot_see_the_push() {
    let (r, base, head) = widened();
    open_loop(&r);
    let good = format!("refs/heads/main {head} refs/heads/main {base}\n");
    // The pushed file is in the plan: the push goes on, even when a signal panics.
    let mut c = r.premerge_cmd(["hook", "pre-push", "origin", "url"]);
    c.env("PREMERGE_TEST_PANIC", "widening scan");
    let run = run_with_stdin(&mut c, good.as_bytes());
    run.expect_code(0);
    assert!(run.stdout.contains("pushed files are inside the plan of attempt 1"), "{}", run.stdout);
    assert!(run.stderr.starts_with("premerge: widening scan: panicked"), "{}", run.stderr);
    // What the fence needs fails: it refuses, naming why and the way out.
    for stage in ["diff", "configuration", "fence"] {
        let mut c = r.premerge_cmd(["hook", "pre-push", "origin", "url"]);
        c.env("PREMERGE_TEST_PANIC", stage);
        let run = run_with_stdin(&mut c, good.as_bytes());
        run.expect_code(1);
        assert!(
            run.stderr.starts_with("premerge fence: push refused: the fix loop (loop-")
                && run.stderr.contains(&format!("attempt 1) is open and the {stage} failed")),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("PREMERGE=0"), "{}", run.stderr);
    }
    let run = pre_push(&r, "garbage\n");
    run.expect_code(1);
    assert!(run.stderr.contains("the diff failed"), "{}", run.stderr);
    // Shadow mode never blocks, so it never fails closed either.
    let mut c = r.premerge_cmd(["hook", "pre-push", "origin", "url"]);
    c.env("PREMERGE_FENCE_MODE", "shadow");
    run_with_stdin(&mut c, b"garbage\n").expect_code(0);
    // Post-merge has no fence: never refused.
    let mut c = r.premerge_cmd(["hook", "post-merge", "0"]);
    c.env("PREMERGE_TEST_PANIC", "diff");
    run_with_stdin(&mut c, b"").expect_code(0);
}

#[test]
fn a_non_ascii_type_change_never_fails_the_push() {
    // Regression: `x: u8` to `x: é` once panicked a detector (a byte index inside a
    // character) and the push was refused with exit 101.
    let r = TestRepo::new();
    r.write("src/lib.rs", "pub struct S {\n    pub x: u8,\n}\n");
    let base = r.commit_all("base");
    r.write("src/lib.rs", "pub struct S {\n    pub x: é,\n}\n");
    let head = r.commit_all("non-ascii");
    let run = pre_push(&r, &format!("refs/heads/main {head} refs/heads/main {base}\n"));
    run.expect_code(0);
    assert!(!run.stderr.contains("thread '"), "{}", run.stderr);
    assert!(run.stderr.lines().count() <= 1, "{}", run.stderr);
}

#[test]
fn a_valueless_git_config_key_means_true() {
    // `[premerge "gate"]` + a bare `enabled` is git's shorthand for true; git2 panics
    // when asked for its value.
    let (r, base, head) = widened();
    let cfg = r.root.join(".git/config");
    let mut text = fs::read_to_string(&cfg).unwrap();
    text.push_str("[premerge \"gate\"]\n\tenabled\n[hook \"premerge-x\"]\n\tcommand\n");
    fs::write(&cfg, text).unwrap();
    let run = r.premerge(&["config", "--format", "json"]);
    run.expect_code(0);
    assert!(run.stdout.contains("premerge.gate.enabled"), "{}", run.stdout);
    pre_push(&r, &format!("refs/heads/main {head} refs/heads/main {base}\n")).expect_code(0);
    r.premerge(&["doctor"]);
    let run = r.premerge(&["doctor"]);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    // A valueless key of another type is an error naming the key, not a panic.
    let mut text = fs::read_to_string(&cfg).unwrap();
    text.push_str("[premerge \"scan\"]\n\tmax-file-bytes\n");
    fs::write(&cfg, text).unwrap();
    let run = r.premerge(&["config"]);
    run.expect_code(2);
    assert!(run.stderr.contains("max-file-bytes"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn a_missing_object_is_one_error_naming_libgit2_once() {
    let (r, base, head) = widened();
    // Remove the new blob of src/query.rs: neither libgit2 nor git can read it.
    let blob = r.git(&["rev-parse", &format!("{head}:src/query.rs")]);
    fs::remove_file(r.root.join(".git/objects").join(&blob[..2]).join(&blob[2..])).unwrap();
    let run = r.premerge(&["diff", "--base", &base, "--head", &head]);
    run.expect_code(2);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains(&blob), "{}", run.stderr);
    assert!(run.stderr.contains("git fallback"), "{}", run.stderr);
    let first = run.stderr.split("; git fallback").next().unwrap();
    assert_eq!(first.matches("object not found").count(), 1, "libgit2's error once: {}", run.stderr);
    // In the hook the push goes on: a blob that is not here is never read in the hook
    // (hooks.budget_ms), so the signals are left to the background job.
    let run = pre_push(&r, &format!("refs/heads/main {head} refs/heads/main {base}\n"));
    run.expect_code(0);
    assert!(run.stdout.contains("signals continue in the background"), "{}", run.stdout);
}

// ---------------------------------------------------------------- diff engine

#[test]
fn rename_twins_diff_like_git() {
    // Two files with identical content; one is moved, the other edited. libgit2's
    // rename detection run twice on one diff failed here (`delta_is_split(tgt)`).
    let r = TestRepo::new();
    let body: String = (1..=40).map(|i| format!("line {i}\n")).collect();
    r.write("a.txt", &body);
    r.write("b.txt", &body);
    let base = r.commit_all("twins");
    r.git(&["mv", "b.txt", "c.txt"]);
    r.write("a.txt", format!("{body}one more\n"));
    let head = r.commit_all("move one, edit the other");
    let (git, premerge) = name_status(&r, &base, &head);
    assert_eq!(premerge, git);
    assert_eq!(git, ["M a.txt", "R c.txt <- b.txt"]);
    // Twins: one moved, the other deleted; and one moved and edited with its twin left.
    let r2 = TestRepo::new();
    r2.write("a.txt", &body);
    r2.write("b.txt", &body);
    let base2 = r2.commit_all("twins");
    r2.git(&["mv", "a.txt", "c.txt"]);
    r2.git(&["rm", "-q", "b.txt"]);
    r2.write("d.txt", format!("{body}changed\n"));
    let head2 = r2.commit_all("move one, delete the other, add a near copy");
    let files = diff_json(&r2, &["--base", &base2, "--head", &head2]);
    assert_eq!(files.len(), 2, "{files:?}");
    assert_eq!(
        (files["c.txt"]["status"].as_str(), files["c.txt"]["old_path"].as_str()),
        (Some("renamed"), Some("a.txt"))
    );
    assert_eq!(
        (files["d.txt"]["status"].as_str(), files["d.txt"]["old_path"].as_str()),
        (Some("renamed"), Some("b.txt"))
    );
    let (git, premerge) = name_status(&r2, &base2, &head2);
    assert_eq!(premerge, git);
    // The pre-push hook over the twin push.
    let run = pre_push(&r, &format!("refs/heads/main {head} refs/heads/main {base}\n"));
    run.expect_code(0);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    assert!(run.stdout.contains("2 file(s) changed"), "{}", run.stdout);
}

#[test]
fn inexact_renames_and_exact_copies_keep_their_meaning() {
    let r = TestRepo::new();
    let body: String = (1..=30).map(|i| format!("fn f{i}() {{}}\n")).collect();
    r.write("src/old.rs", &body);
    r.write("src/keep.rs", "a\nb\n");
    r.write("src/gone.rs", "unrelated\n");
    let base = r.commit_all("base");
    r.git(&["mv", "src/old.rs", "src/new.rs"]);
    r.write("src/new.rs", format!("{body}fn extra() {{}}\n"));
    r.write("src/copy.rs", "a\nb\n");
    r.write("src/keep.rs", "a\nb\nc\n");
    fs::remove_file(r.root.join("src/gone.rs")).unwrap();
    let head = r.commit_all("rename with an edit, copy, delete");
    let files = diff_json(&r, &["--base", &base, "--head", &head]);
    assert_eq!(files["src/new.rs"]["status"], "renamed");
    assert_eq!(files["src/new.rs"]["old_path"], "src/old.rs");
    assert_eq!(
        (files["src/new.rs"]["additions"].as_u64(), files["src/new.rs"]["deletions"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(files["src/copy.rs"]["status"], "copied");
    assert_eq!(files["src/copy.rs"]["old_path"], "src/keep.rs");
    assert_eq!(files["src/gone.rs"]["status"], "deleted");
    assert_eq!(files.len(), 4, "{files:?}");
    // The same through the index.
    r.git(&["mv", "src/new.rs", "src/newer.rs"]);
    let staged = diff_json(&r, &["--staged"]);
    assert_eq!(staged["src/newer.rs"]["status"], "renamed");
}

#[test]
fn follow_tags_pushes_an_annotated_tag_and_a_tag_of_a_tree() {
    let (r, _, _) = widened();
    let remote = r.add_bare_remote("origin");
    hook_script(&r, "pre-push", "");
    let run = git_run(&r, &["push", "-q", "origin", "main"]);
    run.expect_code(0);
    // A new commit and a new annotated tag on it, pushed together.
    r.write("src/query.rs", format!("{QUERY_AFTER}// more\n"));
    r.commit_all("more");
    r.git(&["tag", "-a", "v1", "-m", "release"]);
    let run = git_run(&r, &["push", "--follow-tags", "origin", "main"]);
    run.expect_code(0);
    assert!(!run.stderr.contains("does not name a commit"), "{}", run.stderr);
    assert!(premerge_lines(&run.stderr).iter().all(|l| !l.starts_with("premerge:")), "{}", run.stderr);
    assert_eq!(r.git_in(&remote, &["rev-parse", "v1^{commit}"]), r.git(&["rev-parse", "HEAD"]));
    // The hook's range for a tag line alone: the tagged commit is on the remote.
    let tag = r.git(&["rev-parse", "v1"]);
    let run = pre_push(&r, &format!("refs/tags/v2 {tag} refs/tags/v2 {ZERO}\n"));
    run.expect_code(0);
    assert!(run.stdout.contains("0 file(s) changed"), "{}", run.stdout);
    // A tag of a tree pushes no commits.
    r.git(&["tag", "-a", "tree-tag", "-m", "a tree", "HEAD^{tree}"]);
    let run = git_run(&r, &["push", "origin", "tree-tag"]);
    run.expect_code(0);
    assert!(premerge_lines(&run.stderr).iter().all(|l| !l.starts_with("premerge:")), "{}", run.stderr);
    let tree_tag = r.git(&["rev-parse", "tree-tag"]);
    let run = pre_push(&r, &format!("refs/tags/t {tree_tag} refs/tags/t {ZERO}\n"));
    run.expect_code(0);
    assert!(run.stdout.contains("0 file(s) changed"), "{}", run.stdout);
    // An annotated tag on a new commit the remote lacks: that commit's changes.
    r.write("src/query.rs", QUERY_BEFORE);
    r.commit_all("narrow again");
    r.git(&["tag", "-a", "v3", "-m", "x"]);
    let v3 = r.git(&["rev-parse", "v3"]);
    let run = pre_push(&r, &format!("refs/tags/v3 {v3} refs/tags/v3 {ZERO}\n"));
    run.expect_code(0);
    assert!(run.stdout.contains("1 file(s) changed"), "{}", run.stdout);
}

/// A repository served as a promisor remote (`uploadpack.allowFilter`), with three
/// commits: a Rust field widened and a file renamed with an edit between HEAD~1 and
/// HEAD, and a gitlink that moves.
fn promisor_server() -> TestRepo {
    let s = TestRepo::new();
    s.write("src/query.rs", QUERY_BEFORE);
    let body: String = (1..=30).map(|i| format!("fn g{i}() {{}}\n")).collect();
    s.write("src/util.rs", &body);
    s.write("README.md", "# served\n");
    s.commit_all("one");
    // A gitlink with no repository behind it: `commit_all`'s `add -A` would drop it.
    s.git(&["update-index", "--add", "--cacheinfo", &format!("160000,{},vendor/lib", "a".repeat(40))]);
    s.git(&["commit", "-q", "-m", "two"]);
    s.write("src/query.rs", QUERY_AFTER);
    s.git(&["mv", "src/util.rs", "src/helpers.rs"]);
    s.write("src/helpers.rs", format!("{body}fn g31() {{}}\n"));
    s.git(&["add", "src"]);
    s.git(&["update-index", "--cacheinfo", &format!("160000,{},vendor/lib", "b".repeat(40))]);
    s.git(&["commit", "-q", "-m", "three"]);
    s.git(&["config", "uploadpack.allowFilter", "true"]);
    s.git(&["config", "uploadpack.allowAnySHA1InWant", "true"]);
    s
}

#[test]
fn a_partial_clone_reads_missing_blobs_through_git() {
    let s = promisor_server();
    let url = format!("file://{}", s.root.display());
    let clone = s.dir.path().join("clone");
    s.git_in(s.dir.path(), &["clone", "-q", "--filter=blob:none", &url, clone.to_str().unwrap()]);
    let c = s.at(&clone);
    // The old versions are not there: libgit2 alone cannot read them.
    let old = c.git(&["rev-parse", "HEAD~1:src/query.rs"]);
    let present = c.git(&["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"]);
    assert!(!present.lines().any(|l| l == old), "the old blob is not in the partial clone yet");
    let files = diff_json(&c, &["--base", "HEAD~1"]);
    assert_eq!(files["src/query.rs"]["status"], "modified");
    assert_eq!(
        (files["src/query.rs"]["additions"].as_u64(), files["src/query.rs"]["deletions"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(files["src/helpers.rs"]["status"], "renamed");
    assert_eq!(files["src/helpers.rs"]["old_path"], "src/util.rs");
    assert_eq!(files["vendor/lib"]["submodule"], true);
    assert_eq!(files.len(), 3, "{files:?}");
    let scan = c.premerge(&["scan", "--base", "HEAD~1", "--format", "json", "--no-memory"]);
    scan.expect_code(0);
    let findings = scan.json()["findings"].as_array().unwrap().clone();
    assert!(findings.iter().any(|f| f["symbol"] == "Query.limit"), "{findings:?}");
    // A treeless clone lacks the old trees as well: git fetches them.
    let treeless = s.dir.path().join("treeless");
    s.git_in(s.dir.path(), &["clone", "-q", "--filter=tree:0", &url, treeless.to_str().unwrap()]);
    let t = s.at(&treeless);
    assert_eq!(diff_json(&t, &["--base", "HEAD~1"]), files);
    // The pre-push hook over the same range.
    let (base, head) = (c.git(&["rev-parse", "HEAD~2"]), c.git(&["rev-parse", "HEAD"]));
    let fresh = s.dir.path().join("clone2");
    s.git_in(s.dir.path(), &["clone", "-q", "--filter=blob:none", "--no-checkout", &url, fresh.to_str().unwrap()]);
    let c2 = s.at(&fresh);
    let run = pre_push(&c2, &format!("refs/heads/x {head} refs/heads/x {base}\n"));
    run.expect_code(0);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    // Blobs the clone lacks are never fetched in the hook: the scan goes to the
    // background job, which fetches them through git and records what it finds.
    assert!(run.stdout.contains("signals continue in the background"), "{}", run.stdout);
    let status = c2.premerge(&["status", "--wait"]);
    status.expect_code(0);
    assert!(status.stdout.contains("rust-integer-widened Query.limit"), "{}", status.stdout);
}

#[test]
fn a_shallow_boundary_is_history_cut_not_everything_added() {
    let s = promisor_server();
    let url = format!("file://{}", s.root.display());
    let clone = s.dir.path().join("shallow");
    s.git_in(s.dir.path(), &["clone", "-q", "--depth", "1", &url, clone.to_str().unwrap()]);
    let c = s.at(&clone);
    c.add_bare_remote("mirror");
    c.write("NOTES.md", "a note\n");
    c.commit_all("a note");
    let head = c.git(&["rev-parse", "HEAD"]);
    // A new branch to a remote that has nothing: only the commit made here.
    let run = c.premerge_stdin(
        &["hook", "pre-push", "mirror", "url"],
        format!("refs/heads/main {head} refs/heads/main {ZERO}\n").as_bytes(),
    );
    run.expect_code(0);
    assert!(run.stdout.contains("1 file(s) changed"), "{}", run.stdout);
    let diff = c.premerge_stdin(
        &["diff", "--pre-push", "mirror", "--format", "json"],
        format!("refs/heads/main {head} refs/heads/main {ZERO}\n").as_bytes(),
    );
    diff.expect_code(0);
    let paths: Vec<Value> = diff.json()["files"].as_array().unwrap().iter().map(|f| f["path"].clone()).collect();
    assert_eq!(paths, [json!("NOTES.md")]);
    // No guard memory came from the truncated history.
    let list = c.premerge(&["memory", "list"]);
    list.expect_code(0);
    assert!(!list.stdout.contains("src/query.rs"), "{}", list.stdout);
    // The boundary commit itself has unknown changes: said so, not "everything added".
    let run = c.premerge(&["diff", "--head", "HEAD~1"]);
    run.expect_code(2);
    assert!(run.stderr.contains("shallow clone's history is cut here"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    // Pushing exactly the boundary: nothing new.
    let boundary = c.git(&["rev-parse", "HEAD~1"]);
    let run = c.premerge_stdin(
        &["hook", "pre-push", "mirror", "url"],
        format!("refs/heads/b {boundary} refs/heads/b {ZERO}\n").as_bytes(),
    );
    run.expect_code(0);
    assert!(run.stdout.contains("0 file(s) changed"), "{}", run.stdout);
}

#[test]
fn submodules_are_reported_never_read() {
    let sub = TestRepo::new();
    sub.write("lib.rs", "pub fn f() {}\n");
    sub.commit_all("sub one");
    let r = TestRepo::new();
    r.write("src/query.rs", QUERY_BEFORE);
    r.commit_all("base");
    r.git(&["-c", "protocol.file.allow=always", "submodule", "add", "-q", sub.root.to_str().unwrap(), "deps/sub"]);
    let base = r.commit_all("add a submodule");
    sub.write("lib.rs", "pub fn f() {}\npub fn g() {}\n");
    let moved = sub.commit_all("sub two");
    r.git_in(&r.root.join("deps/sub"), &["-c", "protocol.file.allow=always", "fetch", "-q", "origin"]);
    r.git_in(&r.root.join("deps/sub"), &["checkout", "-q", &moved]);
    r.write("src/query.rs", QUERY_AFTER);
    let head = r.commit_all("move the submodule, widen");
    let files = diff_json(&r, &["--base", &base, "--head", &head]);
    assert_eq!(files["deps/sub"]["submodule"], true);
    assert_eq!(files["deps/sub"]["status"], "modified");
    assert_eq!(files["deps/sub"]["hunks"], json!([]));
    let (git, premerge) = name_status(&r, &base, &head);
    assert_eq!(premerge, git);
    let run = pre_push(&r, &format!("refs/heads/main {head} refs/heads/main {base}\n"));
    run.expect_code(0);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    assert!(run.stdout.contains("2 file(s) changed"), "{}", run.stdout);
    // The working tree with a submodule whose checkout moved.
    r.git_in(&r.root.join("deps/sub"), &["checkout", "-q", "HEAD~1"]);
    let wt = diff_json(&r, &["--worktree"]);
    assert_eq!(wt["deps/sub"]["submodule"], true);
}

// ---------------------------------------------------------------- squash merges

#[test]
fn a_squash_merge_scans_its_staged_changes() {
    let r = TestRepo::new();
    r.write("src/query.rs", QUERY_BEFORE);
    r.commit_all("initial");
    r.git(&["checkout", "-q", "-b", "feature"]);
    r.write("src/query.rs", QUERY_AFTER);
    r.commit_all("widen");
    r.git(&["checkout", "-q", "main"]);
    hook_script(&r, "post-merge", "");
    let run = git_run(&r, &["merge", "--squash", "feature"]);
    run.expect_code(0);
    // git ran the hook with the squash flag (its output goes to git's stderr):
    // premerge scanned what the squash staged.
    assert!(
        run.stderr.contains("premerge post-merge: 1 file(s) changed in the squash's staged changes"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("rust-integer-widened Query.limit"), "{}", run.stderr);
    // The same through the command, and a non-squash post-merge is unchanged.
    let direct = r.premerge(&["hook", "post-merge", "1"]);
    direct.expect_code(0);
    assert!(direct.stdout.contains("1 file(s) changed in the squash's staged changes (+1 -1)"), "{}", direct.stdout);
}

#[test]
fn a_sparse_partial_clone_diffs_its_working_tree_through_git() {
    // `--sparse` checks out only the top level: the blobs under src/ are never
    // fetched, and libgit2, blind to skip-worktree, takes them for deleted files it
    // cannot read. git knows better.
    let s = promisor_server();
    let url = format!("file://{}", s.root.display());
    let clone = s.dir.path().join("sparse");
    s.git_in(s.dir.path(), &["clone", "-q", "--filter=blob:none", "--sparse", &url, clone.to_str().unwrap()]);
    let c = s.at(&clone);
    assert!(!clone.join("src").exists());
    c.write("NEW.txt", "a new file\n");
    c.write("README.md", "# served\nmore\n");
    let files = diff_json(&c, &["--worktree"]);
    assert_eq!(files.keys().collect::<Vec<_>>(), ["NEW.txt", "README.md"]);
    assert_eq!(files["NEW.txt"]["status"], "added");
    assert_eq!(
        (files["README.md"]["additions"].as_u64(), files["README.md"]["deletions"].as_u64()),
        (Some(1), Some(0))
    );
}
