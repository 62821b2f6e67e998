//! `premerge install` / `uninstall` / `doctor` against real repositories and real
//! `git push` to a local bare remote.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Run, TestRepo, bin, hermetic, remote_has, repo_with_remote, run_with_stdin, write_exec};

const ZERO: &str = "0000000000000000000000000000000000000000";

/// Write an executable file.
/// A script that records its argv (one per line) and its stdin bytes under `dir`
/// as `<name>.args` / `<name>.stdin`, then exits with `code`.
fn recorder(dir: &Path, name: &str, code: i32) -> PathBuf {
    let path = dir.join(format!("{name}.sh"));
    let out = dir.join(name);
    write_exec(
        &path,
        &format!(
            "#!/bin/sh\n: > '{o}.args'\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> '{o}.args'; done\ncat > '{o}.stdin'\nexit {code}\n",
            o = out.display()
        ),
    );
    path
}

/// What a recorder saw: (argv, stdin), `None` when it never ran.
fn recorded(dir: &Path, name: &str) -> Option<(Vec<String>, Vec<u8>)> {
    let args = fs::read_to_string(dir.join(format!("{name}.args"))).ok()?;
    let stdin = fs::read(dir.join(format!("{name}.stdin"))).unwrap_or_default();
    Some((args.lines().map(str::to_string).collect(), stdin))
}

/// Every file of a directory with its bytes and mode.
pub(crate) fn snapshot(dir: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let meta = fs::symlink_metadata(e.path()).unwrap();
            let bytes = if meta.is_file() { fs::read(e.path()).unwrap() } else { Vec::new() };
            out.insert(e.file_name().to_string_lossy().into_owned(), (bytes, meta.permissions().mode()));
        }
    }
    out
}

/// A scratch directory for recorders inside the test's temp dir.
fn rec_dir(r: &TestRepo) -> PathBuf {
    let d = r.dir.path().join("rec");
    fs::create_dir_all(&d).unwrap();
    d
}

/// A user's own `hook` in `.git/hooks` (the recorder `user`, exiting `code`), then
/// `premerge install` chaining it. Returns the recorder `premerge` (exit 0), to run
/// through `PREMERGE_BIN`.
fn user_hook_then_install(r: &TestRepo, rec: &Path, hook: &str, code: i32) -> PathBuf {
    let user = fs::read_to_string(recorder(rec, "user", code)).unwrap();
    write_exec(&r.root.join(".git/hooks").join(hook), &user);
    r.premerge(&["install"]).expect_code(0);
    recorder(rec, "premerge", 0)
}

/// `git <args>` in `r` with extra environment, returning the run.
fn git_env(r: &TestRepo, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut c = r.git_cmd(args);
    for (k, v) in env {
        c.env(k, v);
    }
    run_with_stdin(&mut c, b"")
}

/// The `git rev-parse --git-path hooks` answer, made absolute against the worktree.
fn git_hooks_path(r: &TestRepo) -> PathBuf {
    let p = PathBuf::from(r.git(&["rev-parse", "--git-path", "hooks"]));
    let p = if p.is_absolute() { p } else { r.root.join(p) };
    p.canonicalize().unwrap()
}

#[test]
fn chained_user_hook_and_premerge_see_exactly_what_git_sent() {
    let (r, remote) = repo_with_remote();
    let rec = rec_dir(&r);
    let hooks = r.root.join(".git/hooks");
    let user = fs::read_to_string(recorder(&rec, "user", 0)).unwrap();
    write_exec(&hooks.join("pre-push"), &user);
    r.premerge(&["install"]).expect_code(0);
    assert!(hooks.join("pre-push.premerge-chained").is_file());

    let head = r.git(&["rev-parse", "HEAD"]);
    let premerge_rec = recorder(&rec, "premerge", 0);
    let url = remote.to_str().unwrap();
    git_env(
        &r,
        &["push", "-q", "origin", "main", "main:refs/heads/other"],
        &[("PREMERGE_BIN", premerge_rec.to_str().unwrap())],
    )
    .expect_code(0);

    let want_stdin =
        format!("refs/heads/main {head} refs/heads/main {ZERO}\nrefs/heads/main {head} refs/heads/other {ZERO}\n");
    let (args, stdin) = recorded(&rec, "user").expect("the user's hook ran");
    assert_eq!(args, vec!["origin".to_string(), url.to_string()]);
    assert_eq!(String::from_utf8(stdin).unwrap(), want_stdin);
    let (args, stdin) = recorded(&rec, "premerge").expect("premerge ran after it");
    assert_eq!(args, vec!["hook", "pre-push", "origin", url]);
    assert_eq!(String::from_utf8(stdin).unwrap(), want_stdin, "stdin is replayed byte for byte");
    assert!(remote_has(&remote, "refs/heads/other"));
}

#[test]
fn the_real_binary_runs_as_the_hook() {
    let (r, remote) = repo_with_remote();
    r.premerge(&["install"]).expect_code(0);
    r.write("b.txt", "two\n");
    r.commit_all("second");
    let run = git_env(&r, &["push", "origin", "main"], &[]);
    run.expect_code(0);
    // git passes the hook's stdout through on its own stdout.
    assert!(run.stdout.contains("premerge pre-push"), "the hook ran premerge:\n{}\n{}", run.stderr, run.stdout);
    assert!(remote_has(&remote, "refs/heads/main"));
}

#[test]
fn failing_user_hook_blocks_the_push_and_premerge_never_runs() {
    let (r, remote) = repo_with_remote();
    let rec = rec_dir(&r);
    let premerge_rec = user_hook_then_install(&r, &rec, "pre-push", 3);
    let run = git_env(&r, &["push", "origin", "main"], &[("PREMERGE_BIN", premerge_rec.to_str().unwrap())]);
    assert_ne!(run.code, 0);
    assert!(recorded(&rec, "user").is_some());
    assert!(recorded(&rec, "premerge").is_none(), "premerge runs only after the user's hook passed");
    assert!(!remote_has(&remote, "refs/heads/main"));
}

#[test]
fn premerge_failure_blocks_the_push() {
    let (r, remote) = repo_with_remote();
    let rec = rec_dir(&r);
    r.premerge(&["install", "--hooks", "pre-push"]).expect_code(0);
    assert!(!r.root.join(".git/hooks/post-merge").exists(), "--hooks limits what is installed");
    let premerge_rec = recorder(&rec, "premerge", 1);
    let run = git_env(&r, &["push", "origin", "main"], &[("PREMERGE_BIN", premerge_rec.to_str().unwrap())]);
    assert_ne!(run.code, 0);
    assert!(!remote_has(&remote, "refs/heads/main"));
}

#[test]
fn install_twice_is_byte_identical_and_uninstall_restores_every_byte() {
    let (r, _) = repo_with_remote();
    let hooks = r.root.join(".git/hooks");
    let user = hooks.join("pre-push");
    fs::write(&user, "#!/bin/sh\n# mine, no trailing newline\nexit 0").unwrap();
    fs::set_permissions(&user, fs::Permissions::from_mode(0o700)).unwrap();
    let before = snapshot(&hooks);

    let first = r.premerge(&["install"]);
    first.expect_code(0);
    let installed = snapshot(&hooks);
    assert_ne!(installed, before);
    assert_eq!(installed["pre-push.premerge-chained"], before["pre-push"], "moved aside untouched");
    let second = r.premerge(&["install"]);
    second.expect_code(0);
    assert!(second.stdout.contains("unchanged"), "{}", second.stdout);
    assert_eq!(snapshot(&hooks), installed, "a second install changes no byte");

    r.premerge(&["uninstall"]).expect_code(0);
    assert_eq!(snapshot(&hooks), before, "uninstall restores content and mode");
    r.premerge(&["uninstall"]).expect_code(0);
    assert_eq!(snapshot(&hooks), before);
}

#[test]
fn install_over_an_older_shim_updates_it() {
    let r = TestRepo::new();
    r.premerge(&["install"]).expect_code(0);
    let path = r.root.join(".git/hooks/pre-push");
    let fresh = fs::read_to_string(&path).unwrap();
    assert!(fresh.contains(&format!("# premerge-shim-version: {}\n", env!("CARGO_PKG_VERSION"))));
    let old = fresh
        .replace(&format!("# premerge-shim-version: {}", env!("CARGO_PKG_VERSION")), "# premerge-shim-version: 0.0.1");
    fs::write(&path, &old).unwrap();
    let run = r.premerge(&["install"]);
    run.expect_code(0);
    assert!(run.stdout.contains("shim of premerge 0.0.1"), "{}", run.stdout);
    assert_eq!(fs::read_to_string(&path).unwrap(), fresh);
    assert!(!r.root.join(".git/hooks/pre-push.premerge-chained").exists(), "an old shim is replaced, not chained");
}

#[test]
fn core_hooks_path_relative_and_absolute() {
    let (r, _) = repo_with_remote();
    let rec = rec_dir(&r);
    let premerge_rec = recorder(&rec, "premerge", 0);
    r.git(&["config", "core.hooksPath", ".githooks"]);
    r.premerge(&["install"]).expect_code(0);
    assert!(r.root.join(".githooks/pre-push").is_file());
    assert_eq!(git_hooks_path(&r), r.root.join(".githooks").canonicalize().unwrap());
    assert!(!r.root.join(".git/hooks/pre-push").exists());
    git_env(&r, &["push", "-q", "origin", "main"], &[("PREMERGE_BIN", premerge_rec.to_str().unwrap())]).expect_code(0);
    assert!(recorded(&rec, "premerge").is_some(), "git ran the shim from core.hooksPath");
    r.premerge(&["uninstall"]).expect_code(0);

    let abs = r.dir.path().join("shared-hooks");
    r.git(&["config", "core.hooksPath", abs.to_str().unwrap()]);
    r.premerge(&["install"]).expect_code(0);
    assert!(abs.join("pre-push").is_file());
    assert_eq!(git_hooks_path(&r), abs.canonicalize().unwrap());
    fs::remove_file(rec.join("premerge.args")).unwrap();
    r.write("b.txt", "b\n");
    r.commit_all("second");
    git_env(&r, &["push", "-q", "origin", "main"], &[("PREMERGE_BIN", premerge_rec.to_str().unwrap())]).expect_code(0);
    assert!(recorded(&rec, "premerge").is_some());
}

#[test]
fn linked_worktree_installs_where_git_looks() {
    let (r, _) = repo_with_remote();
    let rec = rec_dir(&r);
    let premerge_rec = recorder(&rec, "premerge", 0);
    let wt_path = r.dir.path().join("wt");
    r.git(&["worktree", "add", "-q", "-b", "feature", wt_path.to_str().unwrap()]);
    let wt = r.at(&wt_path);
    wt.premerge(&["install"]).expect_code(0);
    let expected = git_hooks_path(&wt);
    assert!(expected.join("pre-push").is_file(), "installed into {}", expected.display());
    assert_eq!(expected, r.root.join(".git/hooks").canonicalize().unwrap(), "worktrees share the common hooks");
    git_env(&wt, &["push", "-q", "origin", "feature"], &[("PREMERGE_BIN", premerge_rec.to_str().unwrap())])
        .expect_code(0);
    let (args, _) = recorded(&rec, "premerge").expect("the hook ran in the linked worktree");
    assert_eq!(args[..2], ["hook", "pre-push"]);
}

#[test]
fn missing_binary_blocks_the_push_and_premerge_0_lets_it_through() {
    let (r, remote) = repo_with_remote();
    let copy_dir = r.dir.path().join("bin");
    fs::create_dir_all(&copy_dir).unwrap();
    let copy = copy_dir.join("premerge");
    // Copied by a child process: a copy written through a file descriptor of this
    // (multi-threaded) test process can be inherited by a concurrent fork and make
    // the exec below fail with "text file busy".
    assert!(Command::new("cp").arg(bin()).arg(&copy).status().unwrap().success());
    let mut c = Command::new(&copy);
    hermetic(&mut c, &r.home);
    c.current_dir(&r.root).arg("install");
    run_with_stdin(&mut c, b"").expect_code(0);
    fs::remove_file(&copy).unwrap();

    // A PATH with git but no premerge on it.
    let git_dir = PathBuf::from(
        String::from_utf8(Command::new("sh").args(["-c", "command -v git"]).output().unwrap().stdout).unwrap().trim(),
    )
    .parent()
    .unwrap()
    .to_path_buf();
    let path = format!("{}:/usr/bin:/bin", git_dir.display());
    let run = git_env(&r, &["push", "origin", "main"], &[("PATH", &path)]);
    assert_ne!(run.code, 0, "a missing binary fails closed");
    assert!(run.stderr.contains("premerge binary is missing"), "{}", run.stderr);
    assert!(run.stderr.contains(copy.to_str().unwrap()), "names the recorded path: {}", run.stderr);
    assert!(run.stderr.contains("install.sh") && run.stderr.contains("PREMERGE=0"), "{}", run.stderr);
    assert!(!remote_has(&remote, "refs/heads/main"));

    git_env(&r, &["push", "-q", "origin", "main"], &[("PATH", &path), ("PREMERGE", "0")]).expect_code(0);
    assert!(remote_has(&remote, "refs/heads/main"));

    let doc = r.premerge(&["doctor"]);
    doc.expect_code(1);
    assert!(doc.stdout.contains("binary is missing") && doc.stdout.contains("fix: run ./install.sh"), "{}", doc.stdout);
}

#[test]
fn refusals_leave_no_partial_state() {
    let r = TestRepo::new();
    let hooks = r.root.join(".git/hooks");
    let target = r.dir.path().join("elsewhere");
    fs::write(&target, "#!/bin/sh\n").unwrap();
    std::os::unix::fs::symlink(&target, hooks.join("pre-push")).unwrap();
    let before = snapshot(&hooks);
    let run = r.premerge(&["install"]);
    run.expect_code(2);
    assert!(run.stderr.contains("symbolic link") && run.stderr.contains("nothing was installed"), "{}", run.stderr);
    assert_eq!(snapshot(&hooks), before, "post-merge was not installed either");
    fs::remove_file(hooks.join("pre-push")).unwrap();

    fs::create_dir(hooks.join("pre-push")).unwrap();
    let before = snapshot(&hooks);
    let run = r.premerge(&["install"]);
    run.expect_code(2);
    assert!(run.stderr.contains("is a directory"), "{}", run.stderr);
    assert_eq!(snapshot(&hooks), before);
    fs::remove_dir(hooks.join("pre-push")).unwrap();

    write_exec(&hooks.join("pre-push"), "#!/bin/sh\nexit 0\n");
    write_exec(&hooks.join("pre-push.premerge-chained"), "#!/bin/sh\nexit 0\n");
    let before = snapshot(&hooks);
    let run = r.premerge(&["install"]);
    run.expect_code(2);
    assert!(run.stderr.contains("interrupted install"), "{}", run.stderr);
    assert_eq!(snapshot(&hooks), before);
    let doc = r.premerge(&["doctor"]);
    doc.expect_code(1);
    assert!(doc.stdout.contains("left over from an interrupted install"), "{}", doc.stdout);

    // A hooks directory that cannot be created or written (even root cannot write /proc).
    r.git(&["config", "core.hooksPath", "/proc/premerge-cannot-write/hooks"]);
    let run = r.premerge(&["install"]);
    run.expect_code(2);
    assert!(run.stderr.contains("/proc/premerge-cannot-write/hooks"), "{}", run.stderr);
}

#[test]
fn not_a_repository_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Command::new(bin());
    hermetic(&mut c, dir.path());
    c.current_dir(dir.path()).arg("install");
    let run = run_with_stdin(&mut c, b"");
    run.expect_code(2);
    assert!(run.stderr.contains("not a git repository"), "{}", run.stderr);
}

/// A hook file written the way pre-commit writes its hooks: it finds its directory
/// from `$0` and hands the hook arguments to `pre-commit hook-impl`.
const PRE_COMMIT_HOOK: &str = r#"#!/usr/bin/env bash
# File generated by pre-commit: https://pre-commit.com
# ID: 138fd403232d2ddd5efb44317e38bf03
INSTALL_PYTHON=/nonexistent/python3
ARGS=(hook-impl --config=.pre-commit-config.yaml --hook-type=pre-push)
HERE="$(cd "$(dirname "$0")" && pwd)"
ARGS+=(--hook-dir "$HERE" -- "$@")
if [ -x "$INSTALL_PYTHON" ]; then
    exec "$INSTALL_PYTHON" -mpre_commit "${ARGS[@]}"
elif command -v pre-commit > /dev/null; then
    exec pre-commit "${ARGS[@]}"
else
    echo '`pre-commit` not found.' 1>&2
    exit 1
fi
"#;

/// Put `hook_text` (a hook file as `tool` writes it) in place, with a recording
/// stand-in for `tool` on PATH; install premerge over it and push. Returns what the
/// stand-in saw, after checking that premerge ran too.
fn chain_manager_hook_and_push(r: &TestRepo, rec: &Path, tool: &str, hook_text: &str) -> (Vec<String>, Vec<u8>) {
    let fake_bin = r.dir.path().join("fakebin");
    let fake = fs::read_to_string(recorder(rec, tool, 0)).unwrap();
    write_exec(&fake_bin.join(tool), &fake);
    write_exec(&r.root.join(".git/hooks/pre-push"), hook_text);
    let run = r.premerge(&["install"]);
    run.expect_code(0);
    assert!(run.stdout.contains(&format!("the existing {tool} hook runs first")), "{}", run.stdout);
    let path = format!("{}:{}", fake_bin.display(), std::env::var("PATH").unwrap());
    let premerge_rec = recorder(rec, "premerge", 0);
    let env = [("PATH", path.as_str()), ("PREMERGE_BIN", premerge_rec.to_str().unwrap())];
    git_env(r, &["push", "-q", "origin", "main"], &env).expect_code(0);
    assert!(recorded(rec, "premerge").is_some(), "premerge ran after {tool}");
    recorded(rec, tool).unwrap_or_else(|| panic!("{tool}'s hook ran"))
}

#[test]
fn premerge_goes_under_a_pre_commit_hook_as_its_legacy_hook() {
    // pre-commit and prek run `<hook>.legacy` first and keep it on a plain reinstall;
    // chaining their hook instead breaks on that reinstall (migration mode, D4 in the
    // adversarial probe). The real tools run through this layout in managers.rs.
    let r = TestRepo::new();
    let hooks = r.root.join(".git/hooks");
    write_exec(&hooks.join("pre-push"), PRE_COMMIT_HOOK);
    write_exec(&hooks.join("pre-push.legacy"), "#!/bin/sh\necho mine\n");
    let before = snapshot(&hooks);
    let run = r.premerge(&["install", "--hooks", "pre-push"]);
    run.expect_code(0);
    assert!(run.stdout.contains("as pre-commit's legacy hook"), "{}", run.stdout);
    assert_eq!(fs::read_to_string(hooks.join("pre-push")).unwrap(), PRE_COMMIT_HOOK, "pre-commit's file is untouched");
    assert!(fs::read_to_string(hooks.join("pre-push.legacy")).unwrap().contains("# premerge hook shim: pre-push"));
    assert_eq!(
        snapshot(&hooks).get("pre-push.premerge-chained"),
        before.get("pre-push.legacy"),
        "the user's legacy hook is chained by the shim, bytes and mode"
    );
    let installed = snapshot(&hooks);
    let again = r.premerge(&["install", "--hooks", "pre-push"]);
    assert!(again.stdout.contains("already installed, unchanged"), "{}", again.stdout);
    assert_eq!(snapshot(&hooks), installed, "a second install changes no byte");
    let doc = r.premerge(&["doctor"]);
    doc.expect_code(0);
    assert!(doc.stdout.contains("a pre-commit hook, which runs premerge's shim as its legacy hook"), "{}", doc.stdout);
    r.premerge(&["uninstall", "--hooks", "pre-push"]).expect_code(0);
    assert_eq!(snapshot(&hooks), before, "uninstall restores byte for byte");
}

#[test]
fn uninstall_after_install_force_gives_the_chained_hook_back_as_the_legacy_hook() {
    // `pre-commit install -f` deletes the legacy hook (premerge's shim); the hook
    // premerge chained is the user's, and goes back where pre-commit keeps it.
    let r = TestRepo::new();
    let hooks = r.root.join(".git/hooks");
    write_exec(&hooks.join("pre-push"), PRE_COMMIT_HOOK);
    write_exec(&hooks.join("pre-push.legacy"), "#!/bin/sh\necho mine\n");
    let before = snapshot(&hooks);
    r.premerge(&["install", "--hooks", "pre-push"]).expect_code(0);
    fs::remove_file(hooks.join("pre-push.legacy")).unwrap();
    let doc = r.premerge(&["doctor"]);
    doc.expect_code(1);
    assert!(doc.stdout.contains("the hook premerge chained is left at"), "{}", doc.stdout);
    r.premerge(&["uninstall", "--hooks", "pre-push"]).expect_code(0);
    assert_eq!(snapshot(&hooks), before);
}

#[test]
fn a_shim_removed_by_install_force_is_found_by_the_install_record_or_an_open_loop() {
    // `pre-commit install -f` on every hook leaves nothing of premerge's beside
    // pre-commit's hooks: install's record says premerge was there (D13). Without the
    // record (an older install) an open fix loop still makes it a problem, because
    // its pushes then go unfenced.
    let r = TestRepo::new();
    let hooks = r.root.join(".git/hooks");
    write_exec(&hooks.join("pre-push"), PRE_COMMIT_HOOK);
    r.premerge(&["install", "--hooks", "pre-push"]).expect_code(0);
    fs::remove_file(hooks.join("pre-push.legacy")).unwrap();
    let doc = r.premerge(&["doctor"]);
    doc.expect_code(1);
    assert!(doc.stdout.contains("premerge install put premerge on it (recorded in"), "{}", doc.stdout);
    fs::remove_file(r.root.join(".git/premerge/installed-hooks")).unwrap();
    let doc = r.premerge(&["doctor"]);
    doc.expect_code(0);
    assert!(doc.stdout.contains("pre-push: a pre-commit hook; premerge's shim is not installed"), "{}", doc.stdout);
    let findings = r.dir.path().join("f.json");
    fs::write(&findings, r#"[{"file":"README.md","line":1,"summary":"s","failure_scenario":"f"}]"#).unwrap();
    r.premerge(&["plan", "--attempt", "1", "--findings", findings.to_str().unwrap()]).expect_code(0);
    let doc = r.premerge(&["doctor"]);
    doc.expect_code(1);
    assert!(doc.stdout.contains("`pre-commit install -f` removes the legacy hook"), "{}", doc.stdout);
    assert!(doc.stdout.contains("a fix loop is open"), "{}", doc.stdout);
    assert!(doc.stdout.contains("fix: premerge install (puts the shim back"), "{}", doc.stdout);
    r.premerge(&["install", "--hooks", "pre-push"]).expect_code(0);
    r.premerge(&["doctor"]).expect_code(0);
}

#[test]
fn uninstall_in_migration_mode_leaves_pre_commit_working() {
    // D4's layout: pre-commit's hook, premerge's shim as its legacy hook, and an
    // older pre-commit hook chained by the shim. Uninstall must not hand that older
    // hook back to pre-commit as its legacy hook (pre-commit refuses to run it).
    let r = TestRepo::new();
    let hooks = r.root.join(".git/hooks");
    write_exec(&hooks.join("pre-push"), PRE_COMMIT_HOOK);
    r.premerge(&["install", "--hooks", "pre-push"]).expect_code(0);
    write_exec(&hooks.join("pre-push.premerge-chained"), PRE_COMMIT_HOOK);
    let doc = r.premerge(&["doctor"]);
    doc.expect_code(1);
    assert!(doc.stdout.contains("every push fails and premerge never runs"), "{}", doc.stdout);
    let run = r.premerge(&["uninstall", "--hooks", "pre-push"]);
    run.expect_code(0);
    assert!(!hooks.join("pre-push.legacy").exists(), "{}", run.stdout);
    assert!(!hooks.join("pre-push.premerge-chained").exists(), "{}", run.stdout);
    assert_eq!(fs::read_to_string(hooks.join("pre-push")).unwrap(), PRE_COMMIT_HOOK);
}

#[test]
fn a_shim_replaced_by_anything_is_a_problem_until_uninstall_forgets_it() {
    let r = TestRepo::new();
    let hooks = r.root.join(".git/hooks");
    r.premerge(&["install"]).expect_code(0);
    assert_eq!(fs::read_to_string(r.root.join(".git/premerge/installed-hooks")).unwrap(), "pre-push\npost-merge\n");
    r.premerge(&["doctor"]).expect_code(0);
    write_exec(&hooks.join("pre-push"), "#!/bin/sh\necho another tool\n");
    let doc = r.premerge(&["doctor"]);
    doc.expect_code(1);
    assert!(doc.stdout.contains("premerge no longer runs there"), "{}", doc.stdout);
    assert!(
        doc.stdout.contains("fix: premerge install (puts it back), or premerge uninstall --hooks pre-push"),
        "{}",
        doc.stdout
    );
    r.premerge(&["uninstall", "--hooks", "pre-push"]).expect_code(0);
    r.premerge(&["doctor"]).expect_code(0);
    assert_eq!(fs::read_to_string(r.root.join(".git/premerge/installed-hooks")).unwrap(), "post-merge\n");
    r.premerge(&["uninstall"]).expect_code(0);
    assert!(!r.root.join(".git/premerge/installed-hooks").exists());
}

#[test]
fn a_husky_hook_keeps_working_when_chained() {
    // husky (v9) points core.hooksPath at .husky/_, whose hook stubs source a helper
    // `h` beside them; the helper takes the hook's name from `$0` and runs the user's
    // script .husky/<name>. Reproduced here with the same contract.
    let (r, _) = repo_with_remote();
    let rec = rec_dir(&r);
    r.git(&["config", "core.hooksPath", ".husky/_"]);
    write_exec(
        &r.root.join(".husky/_/h"),
        "#!/usr/bin/env sh\nn=$(basename \"$0\")\ns=$(dirname \"$(dirname \"$0\")\")/$n\n[ ! -f \"$s\" ] && exit 0\nsh -e \"$s\" \"$@\"\nc=$?\n[ $c != 0 ] && echo \"husky - $n script failed (code $c)\"\nexit $c\n",
    );
    write_exec(&r.root.join(".husky/_/pre-push"), "#!/usr/bin/env sh\n. \"${0%/*}/h\"");
    let user = fs::read_to_string(recorder(&rec, "husky-user", 0)).unwrap();
    r.write(".husky/pre-push", user);
    let run = r.premerge(&["install", "--hooks", "pre-push"]);
    run.expect_code(0);
    assert!(run.stdout.contains("existing husky hook"), "{}", run.stdout);

    let premerge_rec = recorder(&rec, "premerge", 0);
    git_env(&r, &["push", "-q", "origin", "main"], &[("PREMERGE_BIN", premerge_rec.to_str().unwrap())]).expect_code(0);
    let head = r.git(&["rev-parse", "HEAD"]);
    let (args, stdin) = recorded(&rec, "husky-user").expect("the user's husky script ran");
    assert_eq!(args[0], "origin");
    assert_eq!(String::from_utf8(stdin).unwrap(), format!("refs/heads/main {head} refs/heads/main {ZERO}\n"));
    assert!(recorded(&rec, "premerge").is_some());

    // A failing husky script still blocks.
    let failing = fs::read_to_string(recorder(&rec, "husky-fail", 5)).unwrap();
    r.write(".husky/pre-push", failing);
    r.write("b.txt", "b\n");
    r.commit_all("second");
    let run = git_env(&r, &["push", "origin", "main"], &[("PREMERGE_BIN", premerge_rec.to_str().unwrap())]);
    assert_ne!(run.code, 0);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(said.contains("husky - pre-push script failed (code 5)"), "{said}");
}

#[test]
fn post_merge_runs_the_chained_hook_then_premerge() {
    let r = TestRepo::new();
    let rec = rec_dir(&r);
    r.write("a.txt", "a\n");
    r.commit_all("first");
    r.git(&["checkout", "-q", "-b", "topic"]);
    r.write("b.txt", "b\n");
    r.commit_all("topic");
    r.git(&["checkout", "-q", "main"]);
    let premerge_rec = user_hook_then_install(&r, &rec, "post-merge", 0);
    git_env(&r, &["merge", "-q", "--no-edit", "topic"], &[("PREMERGE_BIN", premerge_rec.to_str().unwrap())])
        .expect_code(0);
    assert_eq!(recorded(&rec, "user").unwrap().0, vec!["0"]);
    assert_eq!(recorded(&rec, "premerge").unwrap().0, vec!["hook", "post-merge", "0"]);
}

fn fake_git(r: &TestRepo, version: &str) -> PathBuf {
    let p = r.dir.path().join(format!("fake-git-{version}"));
    write_exec(&p, &format!("#!/bin/sh\necho 'git version {version}'\n"));
    p
}

#[test]
fn config_hooks_on_new_git_write_config_entries() {
    let mut r = TestRepo::new();
    let git = fake_git(&r, "2.54.0");
    r.env.push(("PREMERGE_GIT".into(), git.display().to_string()));
    let run = r.premerge(&["install", "--config-hooks"]);
    run.expect_code(0);
    assert!(run.stdout.contains("hook.premerge-pre-push"), "{}", run.stdout);
    assert!(!r.root.join(".git/hooks/pre-push").exists(), "no hook file on this path");
    let shim = r.root.join(".git/premerge/hooks/pre-push");
    assert_eq!(r.git(&["config", "--get", "hook.premerge-pre-push.command"]), format!("'{}'", shim.display()));
    assert_eq!(r.git(&["config", "--get", "hook.premerge-pre-push.event"]), "pre-push");
    assert_eq!(r.git(&["config", "--get", "hook.premerge-post-merge.event"]), "post-merge");

    // Run the command the way git runs a configured hook (through the shell, hook
    // arguments appended), since this machine's git predates config-declared hooks.
    let rec = rec_dir(&r);
    let premerge_rec = recorder(&rec, "premerge", 0);
    let command = r.git(&["config", "--get", "hook.premerge-pre-push.command"]);
    let mut c = Command::new("sh");
    hermetic(&mut c, &r.home);
    c.current_dir(&r.root).env("PREMERGE_BIN", &premerge_rec).args([
        "-c",
        &format!("{command} \"$@\""),
        &command,
        "origin",
        "url",
    ]);
    run_with_stdin(&mut c, b"ref line\n").expect_code(0);
    let (args, stdin) = recorded(&rec, "premerge").unwrap();
    assert_eq!(args, vec!["hook", "pre-push", "origin", "url"]);
    assert_eq!(stdin, b"ref line\n");

    let doc = r.premerge(&["doctor"]);
    assert!(doc.stdout.contains("config-declared hook: hook.premerge-pre-push.command"), "{}", doc.stdout);
    let both = r.premerge(&["install"]);
    both.expect_code(0);
    assert!(both.stderr.contains("would run premerge twice"), "hook files beside config hooks: {}", both.stderr);
    r.premerge(&["uninstall"]).expect_code(0);
    assert!(
        r.git_cmd(["config", "--get", "hook.premerge-pre-push.command"]).output().unwrap().status.code() == Some(1)
    );
    assert!(!shim.exists());
}

#[test]
fn config_hooks_on_old_git_fall_back_to_hook_files() {
    let mut r = TestRepo::new();
    let git = fake_git(&r, "2.47.3");
    r.env.push(("PREMERGE_GIT".into(), git.display().to_string()));
    let run = r.premerge(&["install", "--config-hooks"]);
    run.expect_code(0);
    assert!(
        run.stderr.contains("git 2.47.3 runs no config-declared hooks")
            && run.stderr.contains("installing hook files instead"),
        "{}",
        run.stderr
    );
    assert!(r.root.join(".git/hooks/pre-push").is_file());
    assert!(
        r.git_cmd(["config", "--get", "hook.premerge-pre-push.command"]).output().unwrap().status.code() == Some(1)
    );
}

#[test]
fn doctor_on_a_config_hook_that_this_git_cannot_run_names_the_fix() {
    let r = TestRepo::new();
    r.git(&["config", "hook.premerge-pre-push.command", "/x/pre-push"]);
    let mut r2 = r.at(&r.root);
    r2.env.push(("PREMERGE_GIT".into(), fake_git(&r, "2.40.0").display().to_string()));
    let doc = r2.premerge(&["doctor"]);
    doc.expect_code(1);
    assert!(doc.stdout.contains("git 2.40.0 ignores config-declared hooks"), "{}", doc.stdout);
}

#[test]
fn doctor_reports_a_healthy_install() {
    let r = TestRepo::new();
    r.premerge(&["install"]).expect_code(0);
    let doc = r.premerge(&["doctor"]);
    doc.expect_code(0);
    for want in [
        "pre-push: premerge shim",
        "post-merge: premerge shim",
        "hooks.enabled = true",
        "integrity ok",
        "ok: nothing is broken",
    ] {
        assert!(doc.stdout.contains(want), "{want}:\n{}", doc.stdout);
    }
}

#[test]
fn print_config_snippets_are_valid_for_their_manager() {
    let r = TestRepo::new();
    let pc = r.premerge(&["install", "--print-config", "pre-commit"]);
    pc.expect_code(0);
    let y: serde_json::Value = serde_norway::from_str(&pc.stdout).unwrap();
    let hooks = &y["repos"][0]["hooks"];
    assert_eq!(hooks[0]["stages"][0], "pre-push");
    assert!(hooks[0]["entry"].as_str().unwrap().contains("premerge hook pre-push"));
    let lh = r.premerge(&["install", "--print-config", "lefthook"]);
    let y: serde_json::Value = serde_norway::from_str(&lh.stdout).unwrap();
    assert_eq!(y["pre-push"]["commands"]["premerge"]["use_stdin"], true);
    let hk = r.premerge(&["install", "--print-config", "husky"]);
    assert!(hk.stdout.contains("premerge hook pre-push \"$@\""));
    r.premerge(&["install", "--print-config", "overcommit"]).expect_code(2);
}

#[test]
fn repository_ships_a_pre_commit_hook_definition() {
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".pre-commit-hooks.yaml")).unwrap();
    let y: serde_json::Value = serde_norway::from_str(&text).unwrap();
    let ids: Vec<&str> = y.as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&"premerge-pre-push"), "{ids:?}");
}

// ---- agent instruction files ----

const MEM: &str = "<!-- PREMERGE:GUARD-MEMORY-SEARCH -->";
const STOP: &str = "<!-- PREMERGE:NO-HALFWAY-STOP -->";
const STOP_END: &str = "<!-- /PREMERGE:NO-HALFWAY-STOP -->";

fn read(r: &TestRepo, f: &str) -> String {
    fs::read_to_string(r.root.join(f)).unwrap()
}

#[test]
fn agent_docs_inject_into_the_section_idempotently_and_uninstall_exactly() {
    let r = TestRepo::new();
    let agents = "# Agents\n\n## Anti-patterns\n\n- Apology-only responses.\n\n## Tools\n\nUse cargo.\n";
    r.write("AGENTS.md", agents);
    let run = r.premerge(&["install", "--agent-docs"]);
    run.expect_code(0);
    assert!(run.stdout.contains("CLAUDE.md: not present, skipped"), "{}", run.stdout);
    assert!(!r.root.join("CLAUDE.md").exists());
    let once = read(&r, "AGENTS.md");
    assert_eq!(once.matches(STOP).count(), 1);
    assert_eq!(once.matches(MEM).count(), 1);
    let (stop_at, tools_at) = (once.find(STOP).unwrap(), once.find("## Tools").unwrap());
    assert!(once.find("## Anti-patterns").unwrap() < stop_at && once.find(STOP_END).unwrap() < tools_at);
    assert!(once.contains("context running low is not a reason to stop"));
    assert!(once.find("## Before analysing a file").unwrap() > tools_at, "missing section appended at the end");
    assert!(once.contains("premerge memory search --file <path>"));

    r.premerge(&["install", "--agent-docs"]).expect_code(0);
    r.premerge(&["install", "--agent-docs"]).expect_code(0);
    let thrice = read(&r, "AGENTS.md");
    assert_eq!(thrice, once, "re-running changes nothing");
    assert_eq!(thrice.matches(STOP).count(), 1);
    assert_eq!(thrice.matches(MEM).count(), 1);

    r.premerge(&["uninstall", "--agent-docs"]).expect_code(0);
    let removed = read(&r, "AGENTS.md");
    assert_eq!(removed.matches("PREMERGE:").count(), 0);
    assert_eq!(removed, agents, "the blocks and the section premerge created go: the file is restored byte for byte");
}

#[test]
fn agent_docs_pins_are_honoured_and_malformed_pins_soft_fail() {
    let r = TestRepo::new();
    r.write(
        ".premerge/pins.json",
        r#"{"NO-HALFWAY-STOP": {"contentHash": "abc", "pinnedAt": "2026-01-01T00:00:00Z"}}"#,
    );
    let run = r.premerge(&["install", "--agent-docs", "--create"]);
    run.expect_code(0);
    for f in ["AGENTS.md", "CLAUDE.md"] {
        let t = read(&r, f);
        assert_eq!(t.matches(STOP).count(), 0, "{f}: pinned block skipped entirely");
        assert_eq!(t.matches(MEM).count(), 1, "{f}");
    }
    assert!(run.stdout.contains("NO-HALFWAY-STOP pinned"), "{}", run.stdout);

    r.write(".premerge/pins.json", "{ this is not json");
    let run = r.premerge(&["install", "--agent-docs"]);
    run.expect_code(0);
    assert!(run.stderr.contains(".premerge/pins.json: malformed, treated as empty"), "{}", run.stderr);
    for f in ["AGENTS.md", "CLAUDE.md"] {
        let t = read(&r, f);
        assert_eq!(t.matches(STOP).count(), 1, "{f}: migration went on");
        assert_eq!(t.matches(MEM).count(), 1, "{f}");
    }
}

#[test]
fn agent_docs_without_files_or_create_change_nothing() {
    let r = TestRepo::new();
    let run = r.premerge(&["install", "--agent-docs"]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("AGENTS.md: not present, skipped")
            && run.stdout.contains("CLAUDE.md: not present, skipped")
    );
    assert!(!r.root.join("AGENTS.md").exists() && !r.root.join("CLAUDE.md").exists());
    assert!(!r.root.join(".git/hooks/pre-push").exists(), "--agent-docs does not install hooks");
}

#[test]
fn install_sh_installs_the_binary_then_the_hooks_and_reruns_cleanly() {
    // A stand-in cargo that records its arguments and "installs" the binary under
    // test, so the script's wiring is exercised without a release build.
    let r = TestRepo::new();
    let rec = rec_dir(&r);
    let root = r.dir.path().join("cargo-root");
    let fake_cargo = r.dir.path().join("fake-cargo");
    write_exec(
        &fake_cargo,
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nmkdir -p \"$CARGO_INSTALL_ROOT/bin\"\ncp '{}' \"$CARGO_INSTALL_ROOT/bin/premerge\"\n",
            rec.join("cargo.args").display(),
            bin().display()
        ),
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("install.sh");
    let run_script = |cwd: &Path, args: &[&str]| {
        let mut c = Command::new("sh");
        hermetic(&mut c, &r.home);
        c.current_dir(cwd).env("CARGO", &fake_cargo).env("CARGO_INSTALL_ROOT", &root).arg(&script).args(args);
        run_with_stdin(&mut c, b"")
    };
    let dest = root.join("bin/premerge");
    let run = run_script(r.dir.path(), &[r.root.to_str().unwrap()]);
    run.expect_code(0);
    assert!(run.stdout.contains(&format!("installed {} (premerge ", dest.display())), "{}", run.stdout);
    let args = fs::read_to_string(rec.join("cargo.args")).unwrap();
    assert!(args.starts_with("install\n--path\n") && args.contains("--locked\n"), "{args}");
    // The distribution profile: no debug sections in the installed binary.
    assert!(args.contains("--profile\ndist\n"), "{args}");
    let shim = fs::read_to_string(r.root.join(".git/hooks/pre-push")).unwrap();
    assert!(shim.contains(&format!("recorded='{}'", dest.display())), "{shim}");

    // Inside the repository, no argument needed; a re-run changes nothing.
    let before = snapshot(&r.root.join(".git/hooks"));
    let run = run_script(&r.root, &[]);
    run.expect_code(0);
    assert!(run.stdout.contains("pre-push: already installed, unchanged"), "{}", run.stdout);
    assert_eq!(snapshot(&r.root.join(".git/hooks")), before);
}

#[test]
fn premerge_0_skips_premerge_but_not_the_users_own_hook() {
    // The kill switch restores the behaviour without premerge exactly: the hook the
    // user had still runs, and still blocks.
    let (r, remote) = repo_with_remote();
    let rec = rec_dir(&r);
    let premerge_rec = user_hook_then_install(&r, &rec, "pre-push", 4);
    let env = [("PREMERGE", "0"), ("PREMERGE_BIN", premerge_rec.to_str().unwrap())];
    assert_ne!(git_env(&r, &["push", "origin", "main"], &env).code, 0);
    assert!(recorded(&rec, "user").is_some() && recorded(&rec, "premerge").is_none());
    let user = fs::read_to_string(recorder(&rec, "user", 0)).unwrap();
    write_exec(&r.root.join(".git/hooks/pre-push.premerge-chained"), &user);
    git_env(&r, &["push", "-q", "origin", "main"], &env).expect_code(0);
    assert!(recorded(&rec, "premerge").is_none(), "PREMERGE=0: premerge never ran");
    assert!(remote_has(&remote, "refs/heads/main"));
}

#[test]
fn a_husky_v5_to_v8_script_keeps_working_when_chained() {
    // husky v5–v8 point core.hooksPath at .husky, whose scripts source _/husky.sh,
    // which re-runs `$0` once with a guard variable set. Reproduced with that contract.
    let (r, _) = repo_with_remote();
    let rec = rec_dir(&r);
    r.git(&["config", "core.hooksPath", ".husky"]);
    r.write(
        ".husky/_/husky.sh",
        "if [ -z \"$husky_skip_init\" ]; then\n  export husky_skip_init=1\n  sh -e \"$0\" \"$@\"\n  exit $?\nfi\n",
    );
    let record = fs::read_to_string(recorder(&rec, "husky-user", 0)).unwrap().replacen("#!/bin/sh\n", "", 1);
    write_exec(&r.root.join(".husky/pre-push"), &format!("#!/bin/sh\n. \"$(dirname -- \"$0\")/_/husky.sh\"\n{record}"));
    r.premerge(&["install", "--hooks", "pre-push"]).expect_code(0);
    let premerge_rec = recorder(&rec, "premerge", 0);
    git_env(&r, &["push", "-q", "origin", "main"], &[("PREMERGE_BIN", premerge_rec.to_str().unwrap())]).expect_code(0);
    let head = r.git(&["rev-parse", "HEAD"]);
    let (args, stdin) = recorded(&rec, "husky-user").expect("the husky script ran");
    assert_eq!(args[0], "origin");
    assert_eq!(String::from_utf8(stdin).unwrap(), format!("refs/heads/main {head} refs/heads/main {ZERO}\n"));
    assert!(recorded(&rec, "premerge").is_some());
}

#[test]
fn a_lefthook_hook_keeps_working_when_chained() {
    // lefthook writes the hook name into its hook file and calls `lefthook run`.
    // premerge goes into lefthook-local.yml where it can (tests/it/managers.rs); where
    // that file already defines pre-push, premerge's shim chains lefthook's hook.
    let (r, _) = repo_with_remote();
    r.write("lefthook-local.yml", "pre-push:\n  commands: {}\n");
    let rec = rec_dir(&r);
    let hook = "#!/bin/sh\nif [ \"$LEFTHOOK\" = \"0\" ]; then\n  exit 0\nfi\ncall_lefthook()\n{\n  lefthook \"$@\"\n}\ncall_lefthook run \"pre-push\" \"$@\"\n";
    let (args, stdin) = chain_manager_hook_and_push(&r, &rec, "lefthook", hook);
    assert_eq!(args[..3], ["run", "pre-push", "origin"]);
    assert!(!stdin.is_empty(), "lefthook got git's ref lines");
}

#[test]
fn the_pre_commit_entry_rebuilds_the_ref_line_premerge_reads() {
    // pre-commit splits `entry` like a shell and executes it with PRE_COMMIT_* set;
    // run the same argv with a recording `premerge` first on PATH.
    let (r, remote) = repo_with_remote();
    let rec = rec_dir(&r);
    let fake_bin = r.dir.path().join("fakebin");
    let fake = fs::read_to_string(recorder(&rec, "premerge", 0)).unwrap();
    write_exec(&fake_bin.join("premerge"), &fake);
    let path = format!("{}:{}", fake_bin.display(), std::env::var("PATH").unwrap());

    let shipped = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".pre-commit-hooks.yaml")).unwrap();
    let shipped: serde_json::Value = serde_norway::from_str(&shipped).unwrap();
    let printed: serde_json::Value =
        serde_norway::from_str(&r.premerge(&["install", "--print-config", "pre-commit"]).stdout).unwrap();
    let entry = printed["repos"][0]["hooks"][0]["entry"].as_str().unwrap().to_string();
    assert_eq!(shipped[0]["entry"].as_str().unwrap(), entry, "the shipped hook and the snippet agree");
    let script = entry.strip_prefix("sh -c '").and_then(|s| s.strip_suffix('\'')).expect("sh -c '<script>'");

    let head = r.git(&["rev-parse", "HEAD"]);
    let url = remote.to_str().unwrap();
    let base = [
        ("PATH", path.as_str()),
        ("PRE_COMMIT_REMOTE_NAME", "origin"),
        ("PRE_COMMIT_REMOTE_URL", url),
        ("PRE_COMMIT_LOCAL_BRANCH", "refs/heads/main"),
        ("PRE_COMMIT_REMOTE_BRANCH", "refs/heads/main"),
    ];
    let run_entry = |extra: &[(&str, &str)]| {
        let mut c = Command::new("sh");
        hermetic(&mut c, &r.home);
        c.current_dir(&r.root).args(["-c", script]);
        for (k, v) in base.iter().chain(extra) {
            c.env(k, v);
        }
        run_with_stdin(&mut c, b"").expect_code(0);
        recorded(&rec, "premerge").unwrap()
    };
    // A new branch the remote has nothing of: pre-commit passes no range.
    let (args, stdin) = run_entry(&[]);
    assert_eq!(args, vec!["hook", "pre-push", "origin", url]);
    assert_eq!(String::from_utf8(stdin).unwrap(), format!("refs/heads/main {head} refs/heads/main {ZERO}\n"));
    // An update: pre-commit passes FROM_REF (the remote's) and TO_REF (the local one).
    let (_, stdin) =
        run_entry(&[("PRE_COMMIT_FROM_REF", "1111111111111111111111111111111111111111"), ("PRE_COMMIT_TO_REF", &head)]);
    assert_eq!(
        String::from_utf8(stdin).unwrap(),
        format!("refs/heads/main {head} refs/heads/main 1111111111111111111111111111111111111111\n")
    );
}

#[test]
fn premerge_kept_by_pre_commit_as_its_legacy_hook_is_not_chained_again() {
    // pre-commit installed after premerge renames premerge's shim to pre-push.legacy
    // and runs it itself; installing premerge again must not chain pre-commit's hook
    // (premerge would run twice), and uninstall gives pre-commit back the user's hook.
    let r = TestRepo::new();
    let hooks = r.root.join(".git/hooks");
    write_exec(&hooks.join("pre-push"), "#!/bin/sh\necho mine\n");
    r.premerge(&["install", "--hooks", "pre-push"]).expect_code(0);
    fs::rename(hooks.join("pre-push"), hooks.join("pre-push.legacy")).unwrap();
    write_exec(&hooks.join("pre-push"), PRE_COMMIT_HOOK);
    let before = snapshot(&hooks);

    let run = r.premerge(&["install", "--hooks", "pre-push"]);
    run.expect_code(0);
    assert!(run.stdout.contains("pre-commit runs it as"), "{}", run.stdout);
    assert_eq!(snapshot(&hooks), before, "nothing moved");
    let doc = r.premerge(&["doctor"]);
    doc.expect_code(0);
    assert!(doc.stdout.contains("runs premerge's shim as its legacy hook"), "{}", doc.stdout);

    r.premerge(&["uninstall", "--hooks", "pre-push"]).expect_code(0);
    assert_eq!(fs::read_to_string(hooks.join("pre-push")).unwrap(), PRE_COMMIT_HOOK);
    assert_eq!(fs::read_to_string(hooks.join("pre-push.legacy")).unwrap(), "#!/bin/sh\necho mine\n");
    assert!(!hooks.join("pre-push.premerge-chained").exists());
}

#[test]
fn a_symlinked_lefthook_local_file_is_never_written_through() {
    // Where lefthook runs pre-push, install adds premerge to lefthook-local.yml; a
    // symbolic link there could point anywhere, so install refuses and changes nothing.
    let (r, _) = repo_with_remote();
    let hooks = r.root.join(".git/hooks");
    write_exec(&hooks.join("pre-push"), "#!/bin/sh\ncall_lefthook run \"pre-push\" \"$@\"\n");
    let outside = r.dir.path().join("outside.yml");
    fs::write(&outside, "keep: me\n").unwrap();
    std::os::unix::fs::symlink(&outside, r.root.join("lefthook-local.yml")).unwrap();
    let before = snapshot(&hooks);
    let run = r.premerge(&["install"]);
    run.expect_code(2);
    assert!(run.stderr.contains("lefthook-local.yml: not a regular file"), "{}", run.stderr);
    assert_eq!(fs::read_to_string(&outside).unwrap(), "keep: me\n");
    assert_eq!(snapshot(&hooks), before, "nothing was installed");
}

#[test]
fn config_hooks_beside_a_manager_that_runs_premerge_warn_and_doctor_fails() {
    // lefthook runs pre-push and its configuration names premerge; declaring premerge
    // in git config too would run it twice on every push.
    let mut r = TestRepo::new();
    let git = fake_git(&r, "2.54.0");
    r.env.push(("PREMERGE_GIT".into(), git.display().to_string()));
    write_exec(&r.root.join(".git/hooks/pre-push"), "#!/bin/sh\ncall_lefthook run \"pre-push\" \"$@\"\n");
    r.write(
        "lefthook.yml",
        "pre-push:\n  commands:\n    premerge:\n      run: premerge hook pre-push {1} {2}\n      use_stdin: true\n",
    );
    let run = r.premerge(&["install", "--config-hooks"]);
    run.expect_code(0);
    assert!(run.stderr.contains("premerge runs twice on every pre-push: lefthook runs it"), "{}", run.stderr);
    let doctor = r.premerge(&["doctor"]);
    assert_eq!(doctor.code, 1, "{}", doctor.stdout);
    assert!(doctor.stdout.contains("premerge runs twice on every pre-push"), "{}", doctor.stdout);
    assert!(!doctor.stdout.contains("premerge runs twice on every post-merge"), "{}", doctor.stdout);
}

/// Issue 28: where the memory CLI the source names (`vipune`) is installed, `premerge
/// install` offers the one command that sends guard memories there too, `doctor` says
/// where they go, and once configured a widening's memory reaches it.
#[test]
fn vipune_on_path_is_offered_reported_and_used_once_configured() {
    let mut r = TestRepo::new();
    let bin_dir = r.dir.path().join("tools");
    let calls = r.dir.path().join("vipune-calls");
    crate::common::write_exec(
        &bin_dir.join("vipune"),
        &format!("#!/bin/sh\nprintf '%s\\n' \"$@\" >> '{}'\n", calls.display()),
    );
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    r.env.push(("PATH".into(), path));
    let out = r.premerge(&["install"]);
    out.expect_code(0);
    let offer = out.stdout.lines().find(|l| l.starts_with("vipune is installed")).unwrap_or_default().to_string();
    assert!(offer.contains("git config premerge.memory.backendCommand"), "{}", out.stdout);
    let doctor = r.premerge(&["doctor"]);
    assert!(
        doctor.stdout.contains("guard memories: the embedded store only (vipune is installed"),
        "{}",
        doctor.stdout
    );
    // The offered command, as a person runs it.
    let cmd = offer.split("run: ").nth(1).unwrap();
    let json = cmd.split('\'').nth(1).unwrap();
    r.git(&["config", "premerge.memory.backendCommand", json]);
    let doctor = r.premerge(&["doctor"]);
    assert!(
        doctor.stdout.contains("and memory.backend_command `vipune add {text} --memory-type guard"),
        "{}",
        doctor.stdout
    );
    assert!(!r.premerge(&["install"]).stdout.contains("vipune is installed"), "no offer once configured");
    // A widening's guard memory goes to vipune as well as the embedded store.
    r.write("q.rs", "pub struct Query {\n    pub limit: u8,\n}\n");
    r.commit_all("base");
    r.write("q.rs", "pub struct Query {\n    pub limit: u64,\n}\n");
    r.commit_all("widen");
    r.premerge(&["scan", "--issue", "3"]).expect_code(0);
    let sent = std::fs::read_to_string(&calls).unwrap();
    assert!(sent.starts_with("add\n") && sent.contains("--memory-type\nguard\n-m\n"), "{sent}");
    assert!(sent.contains("Query.limit"), "{sent}");
}
