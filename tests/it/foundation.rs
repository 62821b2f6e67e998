//! Foundation: the diff engine on real repositories, hook ranges, configuration,
//! state, bad input and the demo.

use std::collections::BTreeMap;
use std::fs;

use serde_json::Value;

use crate::common::{Run, TestRepo};

const ZERO: &str = "0000000000000000000000000000000000000000";

/// `premerge diff --format json` as a map path -> file object.
fn diff_files(run: &Run) -> BTreeMap<String, Value> {
    let v = run.json();
    assert_eq!(v["schema_version"], 1);
    v["files"].as_array().unwrap().iter().map(|f| (f["path"].as_str().unwrap().to_string(), f.clone())).collect()
}

fn json_diff(repo: &TestRepo, args: &[&str]) -> BTreeMap<String, Value> {
    let mut a = vec!["diff", "--format", "json"];
    a.extend_from_slice(args);
    diff_files(repo.premerge(&a).expect_code(0))
}

fn seeded() -> TestRepo {
    let r = TestRepo::new();
    r.write("keep.txt", "one\ntwo\nthree\n");
    r.write("gone.txt", "bye\n");
    r.write("rename-me.txt", "a fairly long line so rename detection has content\nsecond line\nthird line\n");
    r.write("link-or-file", "plain file\n");
    r.commit_all("base");
    r
}

#[test]
fn every_status_between_two_commits() {
    let r = seeded();
    let base = r.git(&["rev-parse", "HEAD"]);
    r.write("keep.txt", "one\n2\nthree\nfour\n");
    r.write("new.txt", "fresh\n");
    fs::remove_file(r.root.join("gone.txt")).unwrap();
    r.git(&["mv", "rename-me.txt", "renamed.txt"]);
    fs::remove_file(r.root.join("link-or-file")).unwrap();
    std::os::unix::fs::symlink("keep.txt", r.root.join("link-or-file")).unwrap();
    let head = r.commit_all("change everything");
    let files = json_diff(&r, &["--base", &base, "--head", &head]);
    let status = |p: &str| files[p]["status"].as_str().unwrap().to_string();
    assert_eq!(status("keep.txt"), "modified");
    assert_eq!((files["keep.txt"]["additions"].as_u64(), files["keep.txt"]["deletions"].as_u64()), (Some(2), Some(1)));
    assert_eq!(status("new.txt"), "added");
    assert_eq!(files["new.txt"]["old_path"], Value::Null);
    assert_eq!(status("gone.txt"), "deleted");
    assert_eq!(status("renamed.txt"), "renamed");
    assert_eq!(files["renamed.txt"]["old_path"], "rename-me.txt");
    assert_eq!(status("link-or-file"), "typechange");
    assert_eq!(files.len(), 5, "{files:?}");
    let v = r.premerge(&["diff", "--format", "json", "--base", &base, "--head", &head]).json();
    assert_eq!(v["base"], base.as_str());
    assert_eq!(v["head"], head.as_str());
}

#[test]
fn copies_are_detected() {
    let r = seeded();
    let body = "shared content line one\nshared content line two\nshared content line three\n";
    r.write("orig.txt", body);
    r.commit_all("orig");
    r.write("orig.txt", format!("{body}one more\n"));
    r.write("copy.txt", body);
    r.commit_all("copy");
    let files = json_diff(&r, &["--base", "HEAD~1"]);
    assert_eq!(files["copy.txt"]["status"], "copied");
    assert_eq!(files["copy.txt"]["old_path"], "orig.txt");
}

#[test]
fn revisions_git_understands() {
    let r = seeded();
    r.git(&["tag", "v1"]);
    r.write("a.txt", "1\n");
    r.commit_all("a");
    r.write("b.txt", "2\n");
    r.commit_all("b");
    let files = json_diff(&r, &["--base", "v1", "--head", "HEAD"]);
    assert_eq!(files.keys().collect::<Vec<_>>(), ["a.txt", "b.txt"]);
    let files = json_diff(&r, &["--base", "HEAD~2"]);
    assert_eq!(files.len(), 2);
    // No --base: the head's first parent.
    let files = json_diff(&r, &[]);
    assert_eq!(files.keys().collect::<Vec<_>>(), ["b.txt"]);
}

#[test]
fn root_commit_diffs_against_the_empty_tree() {
    let r = TestRepo::new();
    r.write("first.txt", "x\n");
    r.commit_all("root");
    let v = r.premerge(&["diff", "--format", "json"]).expect_code(0).json();
    assert_eq!(v["base"], Value::Null);
    assert_eq!(v["files"][0]["status"], "added");
}

#[test]
fn binary_and_submodule_are_reported_not_read() {
    let r = seeded();
    r.write("img.bin", [0u8, 159, 146, 150, 0, 1, 2, 3]);
    let sub = r.git(&["rev-parse", "HEAD"]);
    r.git(&["add", "img.bin"]);
    // A gitlink with no checkout: `add -A` would stage its removal, so commit the index.
    r.git(&["update-index", "--add", "--cacheinfo", &format!("160000,{sub},vendor/sub")]);
    r.git(&["commit", "-q", "-m", "binary and gitlink"]);
    let files = json_diff(&r, &[]);
    assert_eq!(files["img.bin"]["binary"], true);
    assert_eq!(files["img.bin"]["additions"], 0);
    assert_eq!(files["vendor/sub"]["submodule"], true);
    assert_eq!(files["vendor/sub"]["status"], "added");
    let text = r.premerge(&["diff"]).expect_code(0).stdout.clone();
    assert!(text.contains("A\tbin\timg.bin"), "{text}");
    assert!(text.contains("A\tsub\tvendor/sub"), "{text}");
}

#[test]
fn awkward_paths_survive() {
    let r = seeded();
    r.write("dir with space/ünï cödé.rs", "fn main() {}\n");
    r.write("line\nbreak.txt", "x\n");
    r.commit_all("awkward");
    let files = json_diff(&r, &[]);
    assert!(files.contains_key("dir with space/ünï cödé.rs"), "{files:?}");
    assert!(files.contains_key("line\nbreak.txt"), "{files:?}");
    let z = r.premerge(&["diff", "-z"]).expect_code(0).stdout_bytes.clone();
    let fields: Vec<&[u8]> = z.split(|b| *b == 0).collect();
    assert!(fields.contains(&"line\nbreak.txt".as_bytes()), "{z:?}");
    assert!(fields.contains(&"dir with space/ünï cödé.rs".as_bytes()));
    let text = r.premerge(&["diff"]).stdout.clone();
    assert!(text.contains("\"line\\nbreak.txt\""), "newline is quoted in text output: {text}");
}

#[test]
fn crlf_lines_are_counted_like_git() {
    let r = seeded();
    r.write("win.txt", "a\r\nb\r\n");
    r.commit_all("crlf");
    r.write("win.txt", "a\r\nB\r\nc\r\n");
    r.commit_all("crlf edit");
    let files = json_diff(&r, &[]);
    let numstat = r.git(&["diff", "--numstat", "HEAD~1", "HEAD"]);
    let parts: Vec<&str> = numstat.split('\t').collect();
    assert_eq!(files["win.txt"]["additions"].as_u64().unwrap().to_string(), parts[0]);
    assert_eq!(files["win.txt"]["deletions"].as_u64().unwrap().to_string(), parts[1]);
}

#[test]
fn staged_and_worktree() {
    let r = seeded();
    r.write("keep.txt", "changed\n");
    r.git(&["add", "keep.txt"]);
    r.write("untracked/new.txt", "new\n");
    r.write("gone.txt", "edited but not staged\n");
    let staged = json_diff(&r, &["--staged"]);
    assert_eq!(staged.keys().collect::<Vec<_>>(), ["keep.txt"]);
    let wt = json_diff(&r, &["--worktree"]);
    assert_eq!(wt.keys().collect::<Vec<_>>(), ["gone.txt", "keep.txt", "untracked/new.txt"]);
    assert_eq!(wt["untracked/new.txt"]["status"], "added");
}

/// A bare remote with `main` pushed; returns (work repo, remote path).
fn with_remote() -> (TestRepo, std::path::PathBuf) {
    let r = seeded();
    let remote = r.add_bare_remote("origin");
    r.git(&["push", "-q", "origin", "main"]);
    (r, remote)
}

fn push_diff(r: &TestRepo, stdin: &str) -> BTreeMap<String, Value> {
    diff_files(r.premerge_stdin(&["diff", "--format", "json", "--pre-push", "origin"], stdin.as_bytes()).expect_code(0))
}

#[test]
fn pre_push_multi_ref_new_branch_deletion_and_force() {
    let (r, _remote) = with_remote();
    let main_remote = r.git(&["rev-parse", "origin/main"]);
    // main gains one commit (fast-forward).
    r.write("ff.txt", "ff\n");
    let main_new = r.commit_all("ff");
    // A new branch from main with two commits.
    r.git(&["checkout", "-q", "-b", "feature"]);
    r.write("f1.txt", "1\n");
    r.commit_all("f1");
    r.write("f2.txt", "2\n");
    let feature = r.commit_all("f2");
    let stdin = format!(
        "refs/heads/main {main_new} refs/heads/main {main_remote}\n\
         refs/heads/feature {feature} refs/heads/feature {ZERO}\n\
         (delete) {ZERO} refs/heads/old {main_remote}\n"
    );
    let files = push_diff(&r, &stdin);
    // The new branch covers only commits no ref of origin has: ff, f1, f2.
    assert_eq!(files.keys().collect::<Vec<_>>(), ["f1.txt", "f2.txt", "ff.txt"]);

    // Force push: main rewritten from the remote's commit's parent.
    r.git(&["checkout", "-q", "main"]);
    r.git(&["push", "-q", "origin", "main"]);
    let pushed = r.git(&["rev-parse", "HEAD"]);
    r.git(&["reset", "-q", "--hard", "HEAD~1"]);
    r.write("rewrite.txt", "r\n");
    let rewritten = r.commit_all("rewrite");
    let files = push_diff(&r, &format!("refs/heads/main {rewritten} refs/heads/main {pushed}\n"));
    assert_eq!(files.keys().collect::<Vec<_>>(), ["rewrite.txt"], "merge base..local");
}

#[test]
fn pre_push_empty_stdin_and_hook_summary() {
    let (r, _) = with_remote();
    let out = r.premerge_stdin(&["hook", "pre-push", "origin", "url"], b"");
    out.expect_code(0);
    assert!(out.stdout.contains("premerge pre-push: 0 file(s) changed in 0 ref(s)"), "{}", out.stdout);
    let files = push_diff(&r, "");
    assert!(files.is_empty());
}

#[test]
fn pre_push_through_real_git_push() {
    let (r, _) = with_remote();
    let hook = r.root.join(".git/hooks/pre-push");
    let script = format!("#!/bin/sh\nexec '{}' hook pre-push \"$@\"\n", crate::common::bin().display());
    fs::write(&hook, script).unwrap();
    fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    r.write("pushed.txt", "p\n");
    r.commit_all("p");
    let out = r.git_cmd(["push", "origin", "main"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}");
    assert!(format!("{so}{err}").contains("premerge pre-push: 1 file(s) changed in 1 ref(s)"), "{so}{err}");
}

#[test]
fn malformed_pre_push_line_names_the_line() {
    let (r, _) = with_remote();
    let head = r.git(&["rev-parse", "HEAD"]);
    let stdin = format!("refs/heads/main {head} refs/heads/main {head}\nbogus line\n");
    let out = r.premerge_stdin(&["hook", "pre-push", "origin", "url"], stdin.as_bytes());
    // premerge's own failure never blocks a push outside a fix loop: one warning line.
    out.expect_code(0);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.starts_with("premerge: diff: pre-push input line 2: expected 4 space-separated fields, found 2 ("),
        "{}",
        out.stderr
    );
}

#[test]
fn master_switch_makes_hooks_exit_at_once() {
    let r = TestRepo::new();
    // Not even a commit: the hook would fail if it did anything.
    let mut c = r.premerge_cmd(["hook", "pre-push", "origin", "url"]);
    c.env("PREMERGE", "0");
    let out = crate::common::run_with_stdin(&mut c, b"garbage that would not parse\n");
    out.expect_code(0);
    assert_eq!(out.stdout, "");
}

#[test]
fn post_merge_after_a_real_merge() {
    let r = seeded();
    r.git(&["checkout", "-q", "-b", "side"]);
    r.write("side.txt", "s\n");
    r.commit_all("side");
    r.git(&["checkout", "-q", "main"]);
    r.write("main.txt", "m\n");
    r.commit_all("main");
    r.git(&["merge", "-q", "--no-edit", "side"]);
    let files = diff_files(r.premerge(&["diff", "--format", "json", "--post-merge"]).expect_code(0));
    assert_eq!(files.keys().collect::<Vec<_>>(), ["side.txt"]);
    let out = r.premerge(&["hook", "post-merge", "0"]);
    out.expect_code(0);
    assert!(out.stdout.contains("premerge post-merge: 1 file(s) changed in ORIG_HEAD..HEAD"), "{}", out.stdout);
}

#[test]
fn linked_worktree_shares_the_state_directory() {
    let r = seeded();
    let wt = r.dir.path().join("wt");
    r.git(&["worktree", "add", "-q", "-b", "wt", wt.to_str().unwrap()]);
    let w = r.at(&wt);
    w.write("in-wt.txt", "w\n");
    w.commit_all("in worktree");
    let files = json_diff(&w, &[]);
    assert_eq!(files.keys().collect::<Vec<_>>(), ["in-wt.txt"]);
    // Configuration written in the main repository applies to the worktree too.
    r.git(&["config", "premerge.fence.mode", "shadow"]);
    let v = w.premerge(&["config", "--format", "json"]).expect_code(0).json();
    assert_eq!(v["values"]["fence.mode"]["value"], "shadow");
}

#[test]
fn config_precedence_and_sources() {
    let r = seeded();
    r.write("premerge.toml", "[fence]\nmode = \"shadow\"\n[scan]\nmax_file_bytes = 10\n[plan]\nmax_per_wave = 4\n");
    r.git(&["config", "premerge.scan.maxFileBytes", "20"]);
    let mut c = r.premerge_cmd(["config", "--format", "json"]);
    c.env("PREMERGE_FENCE_MODE", "off");
    let v = crate::common::run_with_stdin(&mut c, b"").expect_code(0).json();
    let val = |k: &str| (v["values"][k]["value"].clone(), v["values"][k]["source"].as_str().unwrap().to_string());
    assert_eq!(val("fence.mode"), (Value::from("off"), "env PREMERGE_FENCE_MODE".to_string()));
    assert_eq!(val("scan.max_file_bytes"), (Value::from(20), "git config premerge.scan.maxfilebytes".to_string()));
    assert_eq!(val("plan.max_per_wave"), (Value::from(4), "premerge.toml".to_string()));
    assert_eq!(val("gate.mode").1, "default");
    let text = r.premerge(&["config"]).expect_code(0).stdout.clone();
    assert!(text.contains("plan.max_per_wave = 4  # premerge.toml"), "{text}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let r = seeded();
    let out = r.premerge(&["diff", "--base", "no-such-rev"]);
    out.expect_code(2);
    assert_eq!(out.stderr.trim(), "premerge: unknown revision `no-such-rev`");

    r.write("premerge.toml", "[scan]\nmax_bytes = 1\n");
    let out = r.premerge(&["config"]);
    out.expect_code(2);
    assert_eq!(out.stderr.trim(), "premerge: premerge.toml: unknown key `scan.max_bytes`");

    r.write("premerge.toml", "[scan\n");
    // In a hook the same bad file is a warning: the merge is done, premerge stands aside.
    let out = r.premerge(&["hook", "post-merge", "0"]);
    out.expect_code(0);
    assert!(out.stderr.starts_with("premerge: configuration: premerge.toml: "), "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);

    fs::remove_file(r.root.join("premerge.toml")).unwrap();
    fs::create_dir(r.root.join("premerge.toml")).unwrap();
    let out = r.premerge(&["config"]);
    out.expect_code(2);
    assert!(out.stderr.contains("premerge.toml: not a regular file (a directory)"), "{}", out.stderr);

    let not_repo = tempfile::tempdir().unwrap();
    let mut c = r.premerge_cmd(["diff"]);
    c.current_dir(not_repo.path()).env("GIT_CEILING_DIRECTORIES", not_repo.path().parent().unwrap());
    let out = crate::common::run_with_stdin(&mut c, b"");
    out.expect_code(2);
    assert!(out.stderr.trim().ends_with(": not a git repository"), "{}", out.stderr);
    assert!(!out.stderr.contains("panicked"));

    let out = r.premerge(&["diff", "--no-such-flag"]);
    out.expect_code(2);
}

#[test]
fn version_help_and_completions() {
    let r = TestRepo::new();
    let v = r.premerge(&["--version"]);
    v.expect_code(0);
    assert_eq!(v.stdout.trim(), format!("premerge {}", env!("CARGO_PKG_VERSION")));
    let h = r.premerge(&["--help"]);
    h.expect_code(0);
    for cmd in ["diff", "scan", "plan", "fence", "review", "proposal", "gate", "demo"] {
        assert!(h.stdout.contains(cmd), "--help lists {cmd}");
    }
    let c = r.premerge(&["completions", "bash"]);
    c.expect_code(0);
    assert!(c.stdout.contains("_premerge"), "a bash completion function");
}

#[test]
fn state_directory_is_in_the_common_dir_with_a_private_database() {
    let r = seeded();
    // `premerge doctor`-independent check: run the demo-free path that opens the database.
    let conn_dir = r.root.join(".git/premerge");
    assert!(!conn_dir.exists());
    let repo = premerge::git::Repo::discover(&r.root).unwrap();
    let state = repo.state_dir();
    assert_eq!(state.path, fs::canonicalize(r.root.join(".git")).unwrap().join("premerge"));
    let _db = state.open_db().unwrap();
    let mode = std::os::unix::fs::PermissionsExt::mode(&fs::metadata(state.db_path()).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let ev = premerge::events::Event::Converge { attempt: 1, decision: premerge::waves::converge::Decision::Continue };
    premerge::store::append_event(&state.path, &ev).unwrap();
    let events = premerge::store::read_events(&state.path).unwrap();
    assert_eq!(events[0]["kind"], "converge");
    assert!(events[0]["ts"].is_string());
}

#[test]
fn demo_runs_on_a_fresh_machine() {
    let r = TestRepo::new();
    let out = r.premerge(&["demo"]);
    out.expect_code(0);
    assert!(out.stdout.contains("== diff =="), "{}", out.stdout);
    assert!(out.stdout.contains("M\t+1 -2\tsrc/query.rs"), "{}", out.stdout);
    assert!(out.stdout.contains("the scratch repository was removed"));
}

#[test]
fn hooks_path_and_linked_worktree_push() {
    let (r, _) = with_remote();
    let hooks = r.dir.path().join("shared-hooks");
    fs::create_dir_all(&hooks).unwrap();
    let hook = hooks.join("pre-push");
    fs::write(&hook, format!("#!/bin/sh\nexec '{}' hook pre-push \"$@\"\n", crate::common::bin().display())).unwrap();
    fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    r.git(&["config", "core.hooksPath", hooks.to_str().unwrap()]);
    let wt = r.dir.path().join("wt");
    r.git(&["worktree", "add", "-q", "-b", "topic", wt.to_str().unwrap()]);
    let w = r.at(&wt);
    w.write("topic-a.txt", "a\n");
    w.write("topic-b.txt", "b\n");
    w.commit_all("topic");
    let out = w.git_cmd(["push", "origin", "topic"]).output().unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{all}");
    assert!(all.contains("premerge pre-push: 2 file(s) changed in 1 ref(s)"), "{all}");
}

/// A relative run directory (flag or `PREMERGE_RUN_DIR`) means the same place for every
/// command: relative to the directory the command runs in, `-C` included.
#[test]
fn relative_run_dir_resolves_against_the_command_directory_for_every_command() {
    let r = seeded();
    let findings = r#"[{"file":"keep.txt","line":1,"summary":"s","severity":"blocker"},
        {"file":"gone.txt","line":1,"summary":"s","severity":"blocker"}]"#;
    r.write("f.json", findings);
    let root = r.root.to_str().unwrap().to_string();
    let run = |args: &[&str]| {
        let mut c = r.premerge_cmd(args);
        c.current_dir(&r.home).env("PREMERGE_RUN_DIR", "pipeline/run");
        crate::common::run_with_stdin(&mut c, b"")
    };
    run(&["-C", &root, "plan", "--attempt", "1", "--findings", "f.json"]).expect_code(0);
    run(&["-C", &root, "review", "route", "--round", "1", "--findings", "f.json"]).expect_code(0);
    let dir = r.root.join("pipeline/run");
    assert!(dir.join("fix-waves-01.json").is_file(), "plan wrote under -C");
    assert!(dir.join("events.jsonl").is_file(), "review route wrote under -C");
    assert!(!r.home.join("pipeline").exists(), "nothing relative to the process directory");
    // The findings file may also come on stdin, with the same size limit and parser.
    let mut c = r.premerge_cmd(["plan", "--attempt", "2", "--findings", "-"]);
    c.env("PREMERGE_RUN_DIR", "pipeline/run");
    crate::common::run_with_stdin(&mut c, findings.as_bytes()).expect_code(0);
    assert!(dir.join("fix-waves-02.json").is_file());
}

/// A working-tree edit that keeps the file's size (`u32` to `u64`) is one libgit2
/// hashes without storing: `scan`, `seams` and `diff --worktree` read it from the file
/// (it used to fail with "object not found", exit 2), and `diff --format json` names no
/// object that is not in the repository.
#[test]
fn a_same_size_worktree_edit_is_read_from_the_file() {
    let r = TestRepo::new();
    r.write("src/q.rs", "pub struct Q {\n    pub limit: u32,\n}\n");
    r.commit_all("q");
    r.write("src/q.rs", "pub struct Q {\n    pub limit: u64,\n}\n");
    // A modification time other than the index entry's makes libgit2 hash the file.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(10);
    fs::File::options().write(true).open(r.root.join("src/q.rs")).unwrap().set_modified(later).unwrap();
    let scan = r.premerge(&["scan", "--worktree", "--no-memory"]);
    scan.expect_code(0);
    assert!(scan.stdout.contains("line 2: rust-integer-widened [medium] Q.limit"), "{}", scan.stdout);
    r.premerge(&["seams", "--worktree"]).expect_code(0);
    let diff = r.premerge(&["diff", "--worktree", "--format", "json"]);
    diff.expect_code(0);
    assert_eq!(diff.json()["files"][0]["new_oid"], Value::Null, "{}", diff.stdout);
    // Staged, the same change is an object in the repository, named by its id.
    r.git(&["add", "src/q.rs"]);
    let staged = r.premerge(&["diff", "--staged", "--format", "json"]);
    let oid = r.git(&["rev-parse", ":src/q.rs"]);
    assert_eq!(staged.json()["files"][0]["new_oid"], oid.as_str());
    r.premerge(&["scan", "--staged", "--no-memory"]).expect_code(0);
}

/// A new branch whose history merges two unpushed branches, one of them started from
/// an older pushed commit, in a clone with many remote-tracking refs: its range starts
/// at the parent of the oldest new commit in git's topological order (what pre-commit
/// reads from `git rev-list --topo-order --reverse <tip> --not --remotes=<remote>`),
/// whether premerge asks git or, with no git to run, libgit2.
#[test]
fn a_new_branch_with_merged_side_branches_starts_where_git_says() {
    let (r, _remote) = with_remote();
    let older = r.git(&["rev-parse", "HEAD"]);
    r.write("pushed-later.txt", "x\n");
    r.commit_all("pushed later");
    r.git(&["push", "-q", "origin", "main"]);
    // Remote-tracking refs beside origin/main, as a busy clone has.
    for i in 0..40 {
        r.git(&["update-ref", &format!("refs/remotes/origin/stale-{i:02}"), &older]);
    }
    r.git(&["checkout", "-q", "-b", "side-old", &older]);
    r.write("side-old.txt", "s\n");
    r.commit_all("side from the older commit");
    r.git(&["checkout", "-q", "-b", "feature", "main"]);
    r.write("feature-1.txt", "1\n");
    r.commit_all("feature 1");
    r.git(&["merge", "-q", "--no-ff", "--no-edit", "side-old"]);
    r.write("feature-2.txt", "2\n");
    let tip = r.commit_all("feature 2");

    let rev_list = r.git(&["rev-list", "--topo-order", "--reverse", &tip, "--not", "--remotes=origin"]);
    let oldest = rev_list.lines().next().expect("new commits");
    let base = r.git(&["rev-parse", &format!("{oldest}^")]);
    let want = r.git(&["diff", "--name-only", "--no-renames", &base, &tip]);
    let want: Vec<&str> = want.lines().collect();
    assert!(!want.is_empty());

    let stdin = format!("refs/heads/feature {tip} refs/heads/feature {ZERO}\n");
    let files = push_diff(&r, &stdin);
    assert_eq!(files.keys().map(String::as_str).collect::<Vec<_>>(), want, "asking git");

    // No git on PATH: libgit2 walks the same range.
    let empty = tempfile::tempdir().unwrap();
    let mut c = r.premerge_cmd(["diff", "--format", "json", "--pre-push", "origin"]);
    c.env("PATH", empty.path());
    let out = crate::common::run_with_stdin(&mut c, stdin.as_bytes());
    let files = diff_files(out.expect_code(0));
    assert_eq!(files.keys().map(String::as_str).collect::<Vec<_>>(), want, "libgit2 alone");
}
