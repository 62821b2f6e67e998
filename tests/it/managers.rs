//! premerge beside the real hook managers (pre-commit, prek, lefthook, husky): the
//! snippet pasted as a user pastes it, a real `git push` to a local bare remote and a
//! real `git merge`, and the repairs `install` and `doctor` make after a manager
//! rewrote the hooks. Each test skips (or, under `.ci/run`, fails) without its tool.
//!
//! `premerge` on the tests' PATH is a small wrapper that records every call (its
//! arguments and stdin) and then runs the real binary with the same bytes, so a test
//! can count how often premerge ran and what it was fed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Run, TestRepo, bin, have_tool, hermetic, run_with_stdin, write_exec};

/// The repository, its bare remote, and the directory the `premerge` wrapper and its
/// call records live in.
struct Setup {
    r: TestRepo,
    remote: PathBuf,
    calls: PathBuf,
    path: String,
}

/// A repository with one commit already on `origin/main`.
fn setup() -> Setup {
    let (r, remote) = crate::common::repo_with_remote();
    r.git(&["push", "-q", "--no-verify", "origin", "main"]);
    let calls = r.dir.path().join("calls");
    let wrapper_dir = r.dir.path().join("bin");
    fs::create_dir_all(&calls).unwrap();
    write_exec(
        &wrapper_dir.join("premerge"),
        &format!(
            "#!/bin/sh\nd='{calls}'\ni=0\nwhile [ -e \"$d/$i.args\" ]; do i=$((i+1)); done\nprintf '%s\\n' \"$@\" >\"$d/$i.args\"\ncat >\"$d/$i.stdin\"\necho \"premerge-wrapper: call $i\"\nexec '{real}' \"$@\" <\"$d/$i.stdin\"\n",
            calls = calls.display(),
            real = bin().display()
        ),
    );
    let path = format!("{}:{}", wrapper_dir.display(), std::env::var("PATH").unwrap_or_default());
    Setup { r, remote, calls, path }
}

impl Setup {
    /// A command in the working tree with the hermetic environment and the wrapper first on PATH.
    fn cmd(&self, program: &str, args: &[&str]) -> Command {
        let mut c = if program == "git" { self.r.git_cmd(args) } else { Command::new(program) };
        if program != "git" {
            hermetic(&mut c, &self.r.home);
            c.current_dir(&self.r.root).args(args);
        }
        // premerge's own shims run PREMERGE_BIN first: the wrapper counts them too.
        c.env("PATH", &self.path).env("PREMERGE_BIN", self.r.dir.path().join("bin/premerge"));
        c
    }

    fn run(&self, program: &str, args: &[&str]) -> Run {
        run_with_stdin(&mut self.cmd(program, args), b"")
    }

    /// Run and require success.
    #[track_caller]
    fn ok(&self, program: &str, args: &[&str]) -> Run {
        let run = self.run(program, args);
        assert_eq!(run.code, 0, "{program} {args:?}:\n{}\n{}", run.stdout, run.stderr);
        run
    }

    fn premerge(&self, args: &[&str]) -> Run {
        let mut c = self.r.premerge_cmd(args);
        c.env("PATH", &self.path);
        run_with_stdin(&mut c, b"")
    }

    /// Every recorded premerge call (arguments, stdin), in order; clears the record.
    fn take_calls(&self) -> Vec<(Vec<String>, String)> {
        let mut out = Vec::new();
        for i in 0.. {
            let args = self.calls.join(format!("{i}.args"));
            let Ok(a) = fs::read_to_string(&args) else { break };
            let stdin = fs::read_to_string(self.calls.join(format!("{i}.stdin"))).unwrap();
            fs::remove_file(args).unwrap();
            fs::remove_file(self.calls.join(format!("{i}.stdin"))).unwrap();
            out.push((a.lines().map(str::to_string).collect(), stdin));
        }
        out
    }

    /// Commit a change and push it; returns (the run, the ref line git sends).
    fn commit_and_push(&self, file: &str) -> (Run, String) {
        let before = self.remote_main();
        self.r.write(file, format!("{file}\n"));
        let head = self.r.commit_all(file);
        let run = self.run("git", &["push", "origin", "main"]);
        (run, format!("refs/heads/main {head} refs/heads/main {before}\n"))
    }

    fn remote_main(&self) -> String {
        let o = Command::new("git")
            .arg("--git-dir")
            .arg(&self.remote)
            .args(["rev-parse", "refs/heads/main"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// Assert premerge ran exactly once, as the pre-push hook, with `stdin`, and that
    /// the push went through.
    #[track_caller]
    fn assert_pushed_once(&self, run: &Run, stdin: &str) {
        assert_eq!(run.code, 0, "the push goes through:\n{}\n{}", run.stdout, run.stderr);
        let url = self.remote.to_str().unwrap();
        let calls = self.take_calls();
        assert_eq!(calls.len(), 1, "premerge runs exactly once: {calls:?}\n{}\n{}", run.stdout, run.stderr);
        assert_eq!(calls[0].0, vec!["hook", "pre-push", "origin", url]);
        assert_eq!(calls[0].1, stdin, "premerge reads git's ref line");
        let shown = format!("{}{}", run.stdout, run.stderr);
        assert!(shown.contains("premerge-wrapper: call 0"), "premerge's output is shown:\n{shown}");
        assert_eq!(self.remote_main(), self.r.git(&["rev-parse", "HEAD"]));
    }

    /// Merge a side branch; assert premerge ran exactly once as post-merge.
    #[track_caller]
    fn assert_merge_runs_premerge_once(&self, name: &str) {
        self.r.git(&["checkout", "-q", "-b", name, "HEAD~1"]);
        self.r.write(&format!("{name}.txt"), "side\n");
        self.r.commit_all(name);
        self.r.git(&["checkout", "-q", "main"]);
        let run = self.run("git", &["merge", "-q", "--no-edit", name]);
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        let calls = self.take_calls();
        assert_eq!(calls.len(), 1, "premerge runs once after the merge: {calls:?}\n{}\n{}", run.stdout, run.stderr);
        assert_eq!(calls[0].0, vec!["hook", "post-merge", "0"]);
    }

    #[track_caller]
    fn assert_blocked(&self, run: &Run) {
        assert_ne!(run.code, 0, "a failing hook of the user's blocks the push");
        assert_ne!(self.remote_main(), self.r.git(&["rev-parse", "HEAD"]));
        self.take_calls();
    }

    fn append(&self, rel: &str, text: &str) {
        let p = self.r.root.join(rel);
        let mut cur = fs::read_to_string(&p).unwrap_or_default();
        cur.push_str(text);
        fs::write(p, cur).unwrap();
    }

    fn log(&self, name: &str) -> String {
        fs::read_to_string(self.r.dir.path().join(name)).unwrap_or_default()
    }

    fn log_path(&self, name: &str) -> String {
        self.r.dir.path().join(name).display().to_string()
    }
}

/// A user's own pre-commit configuration, in pre-commit's own sample style (items
/// flush with `repos:`), with a hook that logs each stage it runs in.
fn user_pre_commit_config(log: &str, code: i32) -> String {
    format!(
        "# my hooks\nrepos:\n-   repo: local\n    hooks:\n    -   id: mine\n        name: mine\n        language: system\n        entry: sh -c 'echo ran >> {log}; exit {code}'\n        stages: [pre-push, post-merge]\n        pass_filenames: false\n        always_run: true\n"
    )
}

fn pre_commit_family(tool: &str) {
    if !have_tool(tool, &["--version"]) {
        return;
    }
    let s = setup();
    s.r.write(".pre-commit-config.yaml", user_pre_commit_config(&s.log_path("user.log"), 0));
    // As a user does it: append the printed entry to the existing configuration.
    let snippet = s.premerge(&["install", "--print-config", tool]);
    assert_eq!(snippet.code, 0, "{}", snippet.stderr);
    assert!(!snippet.stdout.contains("repos:"), "only the entry: a second repos: key would drop the user's hooks");
    s.append(".pre-commit-config.yaml", &snippet.stdout);
    s.r.commit_all("hooks");
    s.ok(tool, &["install", "-t", "pre-push", "-t", "post-merge"]);

    let (run, line) = s.commit_and_push("b.txt");
    s.assert_pushed_once(&run, &line);
    assert_eq!(s.log("user.log"), "ran\n", "the user's own hook ran too");
    s.assert_merge_runs_premerge_once("side");
    assert_eq!(s.log("user.log"), "ran\nran\n", "and again after the merge");

    let doctor = s.premerge(&["doctor"]);
    assert!(doctor.stdout.contains(&format!("pre-push: {tool} runs premerge")), "{}", doctor.stdout);
    assert_eq!(doctor.code, 0, "{}", doctor.stdout);

    // A failing hook of the user's still blocks the push.
    let cfg = fs::read_to_string(s.r.root.join(".pre-commit-config.yaml")).unwrap();
    s.r.write(".pre-commit-config.yaml", cfg.replace("exit 0", "exit 3"));
    s.r.commit_all("failing");
    let (run, _) = s.commit_and_push("c.txt");
    s.assert_blocked(&run);
}

#[test]
fn pre_commit_runs_premerge_once_from_the_appended_entry() {
    pre_commit_family("pre-commit");
}

#[test]
fn prek_runs_premerge_once_from_the_appended_entry() {
    pre_commit_family("prek");
}

#[test]
fn the_shipped_hook_manifest_is_valid_for_pre_commit_and_prek() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join(".pre-commit-hooks.yaml");
    for tool in ["pre-commit", "prek"] {
        if !have_tool(tool, &["--version"]) {
            continue;
        }
        let o = Command::new(tool).arg("validate-manifest").arg(&manifest).output().unwrap();
        assert!(
            o.status.success(),
            "{tool}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// premerge's shim installed first, then pre-commit (or prek) installed over it with
/// premerge in its configuration too: premerge would run twice on every push.
fn runs_twice_is_detected(tool: &str) {
    if !have_tool(tool, &["--version"]) {
        return;
    }
    let s = setup();
    s.premerge(&["install"]).expect_code(0);
    s.r.write(".pre-commit-config.yaml", s.premerge(&["install", "--print-config", tool]).stdout);
    s.r.commit_all("hooks");
    s.ok(tool, &["install", "-t", "pre-push", "-t", "post-merge"]);

    let doctor = s.premerge(&["doctor"]);
    assert_eq!(doctor.code, 1, "{}", doctor.stdout);
    assert!(doctor.stdout.contains("premerge runs twice on every pre-push"), "{}", doctor.stdout);
    assert!(doctor.stdout.contains("premerge uninstall --hooks pre-push"), "{}", doctor.stdout);
    let install = s.premerge(&["install"]);
    install.expect_code(0);
    assert!(install.stderr.contains("premerge runs twice on every pre-push"), "{}", install.stderr);
    assert!(install.stderr.contains("premerge uninstall --hooks pre-push"), "{}", install.stderr);

    // The fix doctor names leaves one premerge.
    s.premerge(&["uninstall"]).expect_code(0);
    s.premerge(&["doctor"]).expect_code(0);
    let (run, line) = s.commit_and_push("b.txt");
    s.assert_pushed_once(&run, &line);
}

#[test]
fn pre_commit_over_premerge_with_premerge_in_its_config_is_caught_running_twice() {
    runs_twice_is_detected("pre-commit");
}

#[test]
fn prek_over_premerge_with_premerge_in_its_config_is_caught_running_twice() {
    runs_twice_is_detected("prek");
}

#[test]
fn install_writes_no_shim_where_a_manager_already_runs_premerge() {
    if !have_tool("pre-commit", &["--version"]) {
        return;
    }
    let s = setup();
    s.r.write(".pre-commit-config.yaml", s.premerge(&["install", "--print-config", "pre-commit"]).stdout);
    s.r.commit_all("hooks");
    s.ok("pre-commit", &["install", "-t", "pre-push", "-t", "post-merge"]);
    let install = s.premerge(&["install"]);
    install.expect_code(0);
    assert!(install.stdout.contains("pre-push: pre-commit runs premerge"), "{}", install.stdout);
    let (run, line) = s.commit_and_push("b.txt");
    s.assert_pushed_once(&run, &line);
}

// ---- lefthook ----

fn user_lefthook_config(log: &str, code: i32) -> String {
    format!(
        "pre-push:\n  commands:\n    mine:\n      run: cat >> {log}; exit {code}\n      use_stdin: true\npost-merge:\n  commands:\n    mine:\n      run: echo post-merge >> {log}\n"
    )
}

#[test]
fn lefthook_runs_premerge_once_from_the_local_snippet() {
    if !have_tool("lefthook", &["version"]) {
        return;
    }
    let s = setup();
    s.r.write("lefthook.yml", user_lefthook_config(&s.log_path("user.log"), 0));
    s.r.commit_all("hooks");
    let snippet = s.premerge(&["install", "--print-config", "lefthook"]);
    assert!(snippet.stderr.contains("lefthook-local.yml"), "the user's pre-push: key is taken: {}", snippet.stderr);
    s.append("lefthook-local.yml", &snippet.stdout);
    s.ok("lefthook", &["install"]);

    let (run, line) = s.commit_and_push("b.txt");
    s.assert_pushed_once(&run, &line);
    assert_eq!(s.log("user.log"), line, "the user's command read the same ref line");
    s.assert_merge_runs_premerge_once("side");
    assert_eq!(s.log("user.log"), format!("{line}post-merge\n"), "the user's post-merge command ran too");

    s.r.write("lefthook.yml", user_lefthook_config(&s.log_path("user.log"), 3));
    s.r.commit_all("failing");
    let (run, _) = s.commit_and_push("c.txt");
    s.assert_blocked(&run);
}

#[test]
fn lefthook_install_moving_the_shim_aside_is_reported_and_repaired_for_good() {
    if !have_tool("lefthook", &["version"]) {
        return;
    }
    let s = setup();
    s.premerge(&["install"]).expect_code(0);
    s.r.write("lefthook.yml", user_lefthook_config(&s.log_path("user.log"), 0));
    s.r.commit_all("hooks");
    s.ok("lefthook", &["install"]);
    let hooks = s.r.root.join(".git/hooks");
    assert!(hooks.join("pre-push.old").is_file(), "lefthook moved premerge's shim aside");

    // Before the repair, a push runs no premerge at all, and doctor says so.
    let (run, _) = s.commit_and_push("b.txt");
    assert_eq!(run.code, 0);
    assert!(s.take_calls().is_empty(), "lefthook never runs pre-push.old");
    let doctor = s.premerge(&["doctor"]);
    assert_eq!(doctor.code, 1, "{}", doctor.stdout);
    assert!(
        doctor.stdout.contains("which lefthook never runs: premerge does not run on pre-push"),
        "{}",
        doctor.stdout
    );
    assert!(doctor.stdout.contains("fix: premerge install"), "{}", doctor.stdout);

    let install = s.premerge(&["install"]);
    install.expect_code(0);
    assert!(install.stdout.contains("lefthook-local.yml"), "{}", install.stdout);
    assert!(!hooks.join("pre-push.old").exists(), "the stale shim is gone (lefthook refuses to install over it)");
    // The repair survives the next `lefthook install`.
    s.ok("lefthook", &["install"]);
    s.premerge(&["doctor"]).expect_code(0);
    fs::remove_file(s.r.dir.path().join("user.log")).unwrap();
    let (run, line) = s.commit_and_push("c.txt");
    s.assert_pushed_once(&run, &line);
    assert_eq!(s.log("user.log"), line, "the user's own command still runs");
    s.assert_merge_runs_premerge_once("side");

    // Uninstall takes premerge's block out again.
    s.premerge(&["uninstall"]).expect_code(0);
    assert!(!s.r.root.join("lefthook-local.yml").exists());
}

// ---- husky ----

/// `husky` as a package's `prepare` script runs it on `npm install`: it points
/// core.hooksPath at `.husky/_` and writes its stubs there.
fn run_husky(s: &Setup) {
    let run = s.ok("husky", &[]);
    assert!(!run.stdout.contains("not allowed") && !run.stdout.contains("can't"), "{}", run.stdout);
}

/// husky has no version flag; `husky ..` refuses the directory and changes nothing,
/// which makes it a safe presence check in any working directory.
fn have_husky() -> bool {
    have_tool("husky", &[".."])
}

/// The set-up with husky run as on `npm install`; `None` (the test returns) where
/// husky is not installed and not required.
fn husky_setup() -> Option<Setup> {
    if !have_husky() {
        return None;
    }
    let s = setup();
    run_husky(&s);
    Some(s)
}

fn husky_snippet(s: &Setup, hook: &str) -> String {
    let out = s.premerge(&["install", "--print-config", "husky"]).stdout;
    let marker = "# and to .husky/post-merge\n";
    let (pre_push, post_merge) = out.split_once(marker).expect("both hooks");
    if hook == "pre-push" { pre_push.to_string() } else { post_merge.to_string() }
}

#[test]
fn husky_snippet_hands_the_ref_lines_to_premerge_and_the_users_lines_appended_or_prepended() {
    let Some(s) = husky_setup() else { return };
    let log = s.log_path("user.log");
    // A user's line that reads git's ref lines itself, the commonest pre-push check.
    let reads = format!(
        "while read local_ref local_oid remote_ref remote_oid; do echo \"$remote_ref $local_oid\" >> {log}; done\n"
    );
    let snippet = husky_snippet(&s, "pre-push");

    // Prepended: premerge and the user's loop both see git's line.
    s.r.write(".husky/pre-push", format!("{snippet}{reads}"));
    s.r.write(".husky/post-merge", format!("echo post-merge >> {log}\n{}", husky_snippet(&s, "post-merge")));
    let (run, line) = s.commit_and_push("b.txt");
    s.assert_pushed_once(&run, &line);
    let head = s.r.git(&["rev-parse", "HEAD"]);
    assert_eq!(s.log("user.log"), format!("refs/heads/main {head}\n"), "the user's loop read the same line");
    s.assert_merge_runs_premerge_once("side");
    assert!(s.log("user.log").ends_with("post-merge\n"), "the user's post-merge line ran too");

    // Appended after a line that does not read stdin: premerge gets the whole line.
    fs::remove_file(s.r.dir.path().join("user.log")).unwrap();
    s.r.write(".husky/pre-push", format!("echo tests >> {log}\n{snippet}"));
    let (run, line) = s.commit_and_push("c.txt");
    s.assert_pushed_once(&run, &line);
    assert_eq!(s.log("user.log"), "tests\n");

    // Appended after a line that reads stdin itself: never silently empty.
    s.r.write(".husky/pre-push", format!("{reads}{snippet}"));
    let (run, _) = s.commit_and_push("d.txt");
    assert_eq!(run.code, 0);
    assert!(run.stderr.contains("move this block to the top of .husky/pre-push"), "{}", run.stderr);
    s.take_calls();

    // A failing line of the user's blocks the push, before or after premerge.
    for text in [format!("exit 3\n{snippet}"), format!("{snippet}exit 3\n")] {
        s.r.write(".husky/pre-push", text);
        let (run, _) = s.commit_and_push("e.txt");
        s.assert_blocked(&run);
    }
}

#[test]
fn husky_rewriting_its_hooks_directory_is_reported_and_repaired() {
    let Some(s) = husky_setup() else { return };
    let log = s.log_path("user.log");
    s.r.write(".husky/pre-push", format!("cat >> {log}\n"));
    s.premerge(&["install"]).expect_code(0);
    let dir = s.r.root.join(".husky/_");
    assert!(dir.join("pre-push.premerge-chained").is_file());

    // `npm install` runs husky's prepare script, which rewrites .husky/_.
    run_husky(&s);
    let (run, _) = s.commit_and_push("b.txt");
    assert_eq!(run.code, 0);
    assert!(s.take_calls().is_empty(), "the shim is gone: premerge did not run");
    let doctor = s.premerge(&["doctor"]);
    assert_eq!(doctor.code, 1, "{}", doctor.stdout);
    assert!(doctor.stdout.contains("husky rewrote"), "{}", doctor.stdout);
    assert!(doctor.stdout.contains("fix: premerge install"), "{}", doctor.stdout);
    assert!(doctor.stdout.contains("--print-config husky"), "{}", doctor.stdout);

    // install repairs instead of refusing over the orphaned chained file.
    let install = s.premerge(&["install"]);
    install.expect_code(0);
    assert!(install.stdout.contains("repaired"), "{}", install.stdout);
    s.premerge(&["doctor"]).expect_code(0);
    fs::remove_file(s.r.dir.path().join("user.log")).unwrap();
    let (run, line) = s.commit_and_push("c.txt");
    s.assert_pushed_once(&run, &line);
    assert_eq!(s.log("user.log"), line, "the user's .husky/pre-push still runs, with git's line");
}

#[test]
fn husky_running_premerge_beside_premerges_shim_is_caught_running_twice() {
    let Some(s) = husky_setup() else { return };
    let snippet = husky_snippet(&s, "pre-push");
    // Where .husky/pre-push already runs premerge, install writes no shim.
    s.r.write(".husky/pre-push", &snippet);
    let install = s.premerge(&["install", "--hooks", "pre-push"]);
    install.expect_code(0);
    assert!(install.stdout.contains("pre-push: husky runs premerge"), "{}", install.stdout);
    let (run, line) = s.commit_and_push("b.txt");
    s.assert_pushed_once(&run, &line);

    // The shim first, the snippet added afterwards: premerge really runs twice, and
    // doctor and install both say which one to remove.
    s.r.write(".husky/pre-push", "echo tests\n");
    s.premerge(&["install", "--hooks", "pre-push"]).expect_code(0);
    s.r.write(".husky/pre-push", &snippet);
    let (run, _) = s.commit_and_push("c.txt");
    assert_eq!(run.code, 0);
    assert_eq!(s.take_calls().len(), 2, "the situation doctor reports is real");
    let doctor = s.premerge(&["doctor"]);
    assert_eq!(doctor.code, 1, "{}", doctor.stdout);
    assert!(doctor.stdout.contains("premerge runs twice on every pre-push: husky runs it"), "{}", doctor.stdout);
    let install = s.premerge(&["install", "--hooks", "pre-push"]);
    assert!(install.stderr.contains("remove one: `premerge uninstall --hooks pre-push`"), "{}", install.stderr);
    s.premerge(&["uninstall", "--hooks", "pre-push"]).expect_code(0);
    let (run, line) = s.commit_and_push("d.txt");
    s.assert_pushed_once(&run, &line);
}

// ---- each manager's reinstall, in both install orders ----

/// A user's own pre-push hook: it appends the ref lines it reads to `log`.
fn user_hook(log: &str) -> String {
    format!("#!/bin/sh\ncat >> {log}\n")
}

impl Setup {
    /// The manager's own hook (`mine`, logging to user.log) ran once per push so far:
    /// `pushes` pushes got through the manager.
    #[track_caller]
    fn assert_own_hook_ran(&self, pushes: usize) {
        assert_eq!(self.log("user.log").lines().count(), pushes, "the manager's own hook ran once per push");
    }

    fn hooks(&self) -> PathBuf {
        self.r.root.join(".git/hooks")
    }

    /// `premerge doctor`, asserted to exit `code` and to say each of `says`.
    #[track_caller]
    fn doctor(&self, code: i32, says: &[&str]) -> String {
        let run = self.premerge(&["doctor"]);
        assert_eq!(run.code, code, "{}", run.stdout);
        for s in says {
            assert!(run.stdout.contains(s), "doctor says {s:?}:\n{}", run.stdout);
        }
        run.stdout
    }

    /// `premerge install`, asserted to succeed and to say `says`.
    #[track_caller]
    fn install(&self, says: &str) -> String {
        let run = self.premerge(&["install"]);
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        assert!(run.stdout.contains(says), "install says {says:?}:\n{}", run.stdout);
        run.stdout
    }

    /// The layout of an older premerge installed after the manager: premerge's shim
    /// at the hook, chaining the manager's hook (what D4's second step leaves).
    fn older_install_over(&self, hook: &str) {
        let h = self.hooks();
        let shim = fs::read(h.join(format!("{hook}.legacy"))).unwrap();
        fs::rename(h.join(hook), h.join(format!("{hook}.premerge-chained"))).unwrap();
        fs::remove_file(h.join(format!("{hook}.legacy"))).unwrap();
        write_exec(&h.join(hook), std::str::from_utf8(&shim).unwrap());
    }
}

/// pre-commit or prek with premerge, as they really behave: `install` moves a hook
/// it does not know to `<hook>.legacy` and runs it first ("migration mode"); it
/// refuses to run when its own older hook is that legacy hook; `install -f` deletes
/// the legacy hook. Both orders, each reinstall, each repair, pushes through the
/// real tool.
fn pre_commit_family_reinstalls(tool: &str) {
    if !have_tool(tool, &["--version"]) {
        return;
    }
    let s = setup();
    let hooks = s.hooks();
    let ulog = s.log_path("u.log");
    s.r.write(".pre-commit-config.yaml", user_pre_commit_config(&s.log_path("user.log"), 0));
    s.r.commit_all("hooks");

    // The manager first, over a hook of the user's (which it keeps as its legacy hook).
    write_exec(&hooks.join("pre-push"), &user_hook(&ulog));
    s.ok(tool, &["install", "-t", "pre-push"]);
    let before = crate::install::snapshot(&hooks);
    s.install(&format!("as {tool}'s legacy hook"));
    assert!(
        fs::read_to_string(hooks.join("pre-push.legacy")).unwrap().contains("# premerge hook shim: pre-push"),
        "the shim is the manager's legacy hook"
    );
    assert_eq!(fs::read_to_string(hooks.join("pre-push.premerge-chained")).unwrap(), user_hook(&ulog));
    let installed = crate::install::snapshot(&hooks);
    s.install("already installed, unchanged");
    assert_eq!(crate::install::snapshot(&hooks), installed, "a second install changes no byte");
    s.doctor(0, &[&format!("a {tool} hook, which runs premerge's shim as its legacy hook")]);
    let (run, line) = s.commit_and_push("b.txt");
    s.assert_pushed_once(&run, &line);
    assert_eq!(s.log("u.log"), line, "the user's hook ran first, with git's ref line");
    assert_eq!(s.log("user.log"), "ran\n", "the manager's own hooks ran");

    // The manager's plain reinstall rewrites only its own file: premerge stays.
    s.ok(tool, &["install", "-t", "pre-push"]);
    s.doctor(0, &[]);
    let (run, line) = s.commit_and_push("c.txt");
    s.assert_pushed_once(&run, &line);
    s.assert_own_hook_ran(2);

    // `install -f` deletes the legacy hook: doctor names it, install puts it back.
    s.ok(tool, &["install", "-f", "-t", "pre-push"]);
    assert!(!hooks.join("pre-push.legacy").exists(), "{tool} -f removed premerge");
    s.doctor(1, &[&format!("`{tool} install -f` removes the legacy hook"), "fix: premerge install"]);
    s.install(&format!("as {tool}'s legacy hook"));
    s.doctor(0, &[]);
    fs::remove_file(s.r.dir.path().join("u.log")).unwrap();
    let (run, line) = s.commit_and_push("d.txt");
    s.assert_pushed_once(&run, &line);
    assert_eq!(s.log("u.log"), line, "the user's hook survived -f and runs again");
    s.assert_own_hook_ran(3);

    // Uninstall gives the manager back its legacy hook, byte for byte.
    s.premerge(&["uninstall"]).expect_code(0);
    let mut after = crate::install::snapshot(&hooks);
    after.remove("pre-push"); // the manager rewrote its own file on each reinstall
    let mut expected = before.clone();
    expected.remove("pre-push");
    assert_eq!(after, expected, "uninstall restores the manager's legacy hook byte for byte");

    // premerge first (the report's D13: no hook of the user's; the manager moves
    // the shim to its legacy hook), then `install -f`.
    for f in ["pre-push", "pre-push.legacy"] {
        fs::remove_file(hooks.join(f)).unwrap();
    }
    s.install("pre-push: installed");
    s.ok(tool, &["install", "-t", "pre-push"]);
    s.ok(tool, &["install", "-t", "pre-push"]);
    s.doctor(0, &[&format!("a {tool} hook, which runs premerge's shim as its legacy hook")]);
    s.ok(tool, &["install", "-f", "-t", "pre-push"]);
    s.doctor(1, &["premerge's post-merge shim is installed", "fix: premerge install"]);
    s.install(&format!("as {tool}'s legacy hook"));
    s.doctor(0, &[]);
    let (run, line) = s.commit_and_push("e.txt");
    s.assert_pushed_once(&run, &line);
    s.assert_own_hook_ran(4);

    // An older premerge installed after the manager chained the manager's hook; the
    // manager's next install runs it in migration mode and every push fails (D4).
    s.older_install_over("pre-push");
    s.doctor(0, &[&format!("the next `{tool} install` would turn this chain into {tool}'s migration mode")]);
    s.ok(tool, &["install", "-t", "pre-push"]);
    let (run, _) = s.commit_and_push("f.txt");
    assert_ne!(run.code, 0, "the manager refuses in migration mode: {}", run.stderr);
    assert!(run.stderr.contains("migration mode"), "{}", run.stderr);
    assert!(s.take_calls().is_empty(), "premerge never ran");
    s.doctor(1, &["every push fails and premerge never runs", "migration mode", "fix: premerge install"]);
    s.install("repaired: removed");
    s.doctor(0, &[]);
    assert!(!hooks.join("pre-push.premerge-chained").exists());
    let line = format!("refs/heads/main {} refs/heads/main {}\n", s.r.git(&["rev-parse", "HEAD"]), s.remote_main());
    let run = s.run("git", &["push", "origin", "main"]);
    s.assert_pushed_once(&run, &line);
    s.assert_own_hook_ran(6);

    // The same, then the `-f` the manager's own error message suggests.
    s.older_install_over("pre-push");
    s.ok(tool, &["install", "-t", "pre-push"]);
    s.ok(tool, &["install", "-f", "-t", "pre-push"]);
    s.doctor(1, &["the hook premerge chained is left at", "fix: premerge install"]);
    s.install("repaired: removed");
    s.doctor(0, &[]);
    let (run, line) = s.commit_and_push("g.txt");
    s.assert_pushed_once(&run, &line);
    s.assert_own_hook_ran(7);

    // An older install's layout is moved under the manager by install, once.
    s.older_install_over("pre-push");
    s.install(&format!("{tool}'s hook is back at"));
    s.install("already installed, unchanged");
    s.ok(tool, &["install", "-t", "pre-push"]);
    s.doctor(0, &[]);
    let (run, line) = s.commit_and_push("h.txt");
    s.assert_pushed_once(&run, &line);
    s.assert_own_hook_ran(8);

    s.premerge(&["uninstall"]).expect_code(0);
    assert!(!hooks.join("pre-push.legacy").exists() && !hooks.join("pre-push.premerge-chained").exists());
    assert!(String::from_utf8_lossy(&fs::read(hooks.join("pre-push")).unwrap()).contains(tool));
}

#[test]
fn pre_commit_reinstalled_in_either_order_or_forced_keeps_or_gets_back_premerge() {
    pre_commit_family_reinstalls("pre-commit");
}

#[test]
fn prek_reinstalled_in_either_order_or_forced_keeps_or_gets_back_premerge() {
    pre_commit_family_reinstalls("prek");
}

#[test]
fn husky_installed_after_premerge_is_reported_and_repaired() {
    // husky points core.hooksPath at .husky/_, so the shim in .git/hooks stops
    // running without a trace in the new directory.
    if !have_husky() {
        return;
    }
    let s = setup();
    let hooks = s.hooks();
    s.r.write(".husky/pre-push", format!("echo ran >> {}\n", s.log_path("user.log")));
    let before = crate::install::snapshot(&hooks);
    s.install("pre-push: installed");
    run_husky(&s);
    s.doctor(1, &["core.hooksPath = .husky/_", "no longer runs", "fix: premerge install"]);
    s.install("the existing husky hook runs first");
    s.doctor(0, &["is unused while core.hooksPath"]);
    let (run, line) = s.commit_and_push("b.txt");
    s.assert_pushed_once(&run, &line);
    s.assert_own_hook_ran(1);

    // husky's reinstall (its prepare script) drops the shim again: repaired.
    run_husky(&s);
    s.doctor(1, &["husky rewrote", "fix: premerge install"]);
    s.install("repaired");
    s.doctor(0, &[]);
    let (run, line) = s.commit_and_push("c.txt");
    s.assert_pushed_once(&run, &line);
    s.assert_own_hook_ran(2);

    // Uninstall removes both shims: .git/hooks is as before premerge.
    s.premerge(&["uninstall"]).expect_code(0);
    assert_eq!(crate::install::snapshot(&hooks), before, "the unused shims in .git/hooks go too");
    assert!(
        fs::read_dir(s.r.root.join(".husky/_"))
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().contains("premerge"))
    );
}

#[test]
fn lefthook_installed_first_keeps_premerge_across_install_and_install_force() {
    if !have_tool("lefthook", &["version"]) {
        return;
    }
    let s = setup();
    s.r.write(
        "lefthook.yml",
        format!("pre-push:\n  commands:\n    mine:\n      run: echo ran >> {}\n", s.log_path("user.log")),
    );
    s.r.commit_all("hooks");
    s.ok("lefthook", &["install"]);
    s.install("added premerge to");
    s.doctor(0, &[]);
    for args in [&["install"][..], &["install", "-f"][..]] {
        s.ok("lefthook", args);
        s.doctor(0, &["pre-push: lefthook runs premerge"]);
    }
    let (run, line) = s.commit_and_push("b.txt");
    s.assert_pushed_once(&run, &line);
    s.assert_own_hook_ran(1);
    s.assert_merge_runs_premerge_once("side");

    // premerge first, then `lefthook install -f`: the shim moved aside is reported
    // and repaired like after a plain install.
    s.premerge(&["uninstall"]).expect_code(0);
    assert!(!s.r.root.join("lefthook-local.yml").exists());
    s.ok("lefthook", &["uninstall"]);
    s.install("pre-push: installed");
    s.ok("lefthook", &["install", "-f"]);
    s.doctor(1, &["which lefthook never runs", "fix: premerge install"]);
    s.install("added premerge to");
    s.doctor(0, &[]);
    let (run, line) = s.commit_and_push("c.txt");
    s.assert_pushed_once(&run, &line);
    s.assert_own_hook_ran(2);
    s.premerge(&["uninstall"]).expect_code(0);
    assert!(!s.r.root.join("lefthook-local.yml").exists());
    for (name, (bytes, _)) in crate::install::snapshot(&s.hooks()) {
        assert!(!String::from_utf8_lossy(&bytes).contains("premerge hook shim"), "{name} is premerge's");
    }
}
