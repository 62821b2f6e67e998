//! Hermetic test environment: real git repositories in temporary directories, the
//! real `premerge` binary, no user or system configuration, fixed identities and
//! dates so commit ids are stable.

#![allow(dead_code)]

use std::cell::Cell;
use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The fixed epoch of test commits (2026-01-01T00:00:00Z); each commit adds a minute.
const EPOCH: i64 = 1_767_225_600;

/// Path of the binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_premerge"))
}

/// Apply the hermetic environment to a command: no inherited variables but PATH,
/// a private HOME, no global or system git config, C locale, UTC.
pub fn hermetic(cmd: &mut Command, home: &Path) {
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.invalid")
        .env("GIT_COMMITTER_NAME", "Test Committer")
        .env("GIT_COMMITTER_EMAIL", "committer@example.invalid")
        // Hooks run their signals in the hook, whatever the load of the test machine:
        // the budget's tests set their own (tests/it/budget.rs).
        .env("PREMERGE_HOOKS_BUDGET_MS", "600000")
        .env("LC_ALL", "C")
        .env("TZ", "UTC");
}

/// The result of running a process.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub stdout_bytes: Vec<u8>,
}

impl Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            stdout_bytes: o.stdout,
        }
    }

    /// Assert the exit code, showing both streams when it differs.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Run {
        assert_eq!(self.code, code, "exit code\n--- stdout\n{}\n--- stderr\n{}", self.stdout, self.stderr);
        self
    }

    /// Parse stdout as JSON.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

/// A real git repository in a temporary directory.
pub struct TestRepo {
    pub dir: tempfile::TempDir,
    /// The working tree.
    pub root: PathBuf,
    /// A private HOME for every process run against this repository.
    pub home: PathBuf,
    commits: Cell<i64>,
    /// Extra environment for premerge runs (`PREMERGE_*` settings under test).
    pub env: Vec<(String, String)>,
}

impl TestRepo {
    /// `git init -b main` in a fresh temporary directory.
    pub fn new() -> TestRepo {
        let dir = tempfile::tempdir().expect("temporary directory");
        let root = dir.path().join("repo");
        let home = dir.path().join("home");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&home).unwrap();
        let r = TestRepo { dir, root, home, commits: Cell::new(0), env: Vec::new() };
        r.git(&["init", "-q", "-b", "main"]);
        r
    }

    /// A repository at an existing path (a clone, a worktree) sharing this one's HOME.
    pub fn at(&self, root: &Path) -> TestRepo {
        let dir = tempfile::tempdir().unwrap();
        TestRepo {
            dir,
            root: root.to_path_buf(),
            home: self.home.clone(),
            commits: Cell::new(self.commits.get() + 100),
            env: self.env.clone(),
        }
    }

    /// A git command in the working tree, with the hermetic environment and the next
    /// fixed commit date.
    pub fn git_cmd<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = Command::new("git");
        hermetic(&mut c, &self.home);
        let n = self.commits.get();
        let date = format!("@{} +0000", EPOCH + 60 * n);
        c.env("GIT_AUTHOR_DATE", &date).env("GIT_COMMITTER_DATE", &date);
        c.current_dir(&self.root).args(args);
        c
    }

    /// Run git and panic with its output on failure. Returns trimmed stdout.
    #[track_caller]
    pub fn git(&self, args: &[&str]) -> String {
        let o = self.git_cmd(args).output().expect("git runs");
        assert!(o.status.success(), "git {args:?} failed:\n{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim_end().to_string()
    }

    /// Write a file (creating directories) in the working tree.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let p = self.root.join(rel);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(p, content).unwrap();
    }

    /// Stage everything and commit; returns the new commit id.
    #[track_caller]
    pub fn commit_all(&self, msg: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", msg]);
        self.commits.set(self.commits.get() + 1);
        self.git(&["rev-parse", "HEAD"])
    }

    /// A `premerge` command in the working tree with the hermetic environment.
    pub fn premerge_cmd<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = Command::new(bin());
        hermetic(&mut c, &self.home);
        c.env("PREMERGE_FAKE_NOW", "2026-01-02T03:04:05Z");
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c.current_dir(&self.root).args(args);
        c
    }

    /// Run git with the hermetic environment in another directory (a clone, a bare
    /// remote, a submodule); panics with its output on failure, returns trimmed stdout.
    #[track_caller]
    pub fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        let mut c = Command::new("git");
        hermetic(&mut c, &self.home);
        let o = c.current_dir(dir).args(args).output().expect("git runs");
        assert!(
            o.status.success(),
            "git {args:?} in {} failed:\n{}",
            dir.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).trim_end().to_string()
    }

    /// A bare repository `<name>.git` (HEAD on `main`) beside the working tree, in the
    /// same temporary directory, added as remote `name`. Returns its path.
    #[track_caller]
    pub fn add_bare_remote(&self, name: &str) -> PathBuf {
        let remote = self.dir.path().join(format!("{name}.git"));
        let path = remote.to_str().expect("temporary paths are UTF-8");
        self.git_in(self.dir.path(), &["init", "-q", "--bare", "-b", "main", path]);
        self.git(&["remote", "add", name, path]);
        remote
    }

    /// premerge's state directory (`<git dir>/premerge`) of a plain repository.
    pub fn state_dir(&self) -> PathBuf {
        self.root.join(".git/premerge")
    }

    /// Run premerge with empty stdin.
    pub fn premerge(&self, args: &[&str]) -> Run {
        self.premerge_stdin(args, b"")
    }

    /// Run premerge with the given stdin bytes.
    pub fn premerge_stdin(&self, args: &[&str], stdin: &[u8]) -> Run {
        let mut c = self.premerge_cmd(args);
        run_with_stdin(&mut c, stdin)
    }
}

/// Run a command feeding `stdin`, capturing both streams.
pub fn run_with_stdin(c: &mut Command, stdin: &[u8]) -> Run {
    c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().expect("process starts");
    {
        let mut i = child.stdin.take().unwrap();
        let _ = i.write_all(stdin);
    }
    Run::from(child.wait_with_output().expect("process finishes"))
}

/// The variable `.ci/run` sets after installing every outside tool the suite drives.
/// With it set, a missing tool fails the test; without it (a developer's fresh
/// machine), the test is skipped with a message naming the tool and how to get it.
pub const REQUIRE_TOOLS_VAR: &str = "PREMERGE_TEST_REQUIRE_TOOLS";

/// Whether an outside tool (ruff, jq, a hook manager) can be run here. Returns false
/// after printing a skip line when it is missing and tools are not required; panics
/// when `.ci/run` promised every tool (so CI never skips silently).
#[track_caller]
pub fn have_tool(tool: &str, version_args: &[&str]) -> bool {
    let found = Command::new(tool)
        .args(version_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if found {
        return true;
    }
    if std::env::var_os(REQUIRE_TOOLS_VAR).is_some_and(|v| v == "1") {
        panic!(
            "{tool} is required here ({REQUIRE_TOOLS_VAR}=1) but `{tool}` did not run; .ci/install-tools installs it"
        );
    }
    eprintln!(
        "skipped: `{tool}` is not installed (run .ci/install-tools, or set {REQUIRE_TOOLS_VAR}=1 to make this a failure)"
    );
    false
}

/// Write an executable script (mode 0755), creating its directory.
pub fn write_exec(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    if let Some(p) = path.parent() {
        fs::create_dir_all(p).unwrap();
    }
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// A repository whose first commit holds `files`, pushed to a bare remote `origin`,
/// with premerge's hooks installed: the start of every fix-loop push test.
pub fn installed_clone(files: &[(&str, &str)]) -> (TestRepo, PathBuf) {
    let repo = TestRepo::new();
    for (p, c) in files {
        repo.write(p, c);
    }
    repo.commit_all("base");
    let remote = repo.add_bare_remote("origin");
    repo.git(&["push", "-q", "origin", "main"]);
    repo.premerge(&["install"]).expect_code(0);
    (repo, remote)
}

/// A repository with one commit and a bare remote `origin` in the same temp dir.
pub fn repo_with_remote() -> (TestRepo, PathBuf) {
    let r = TestRepo::new();
    r.write("a.txt", "one\n");
    r.commit_all("first");
    let remote = r.add_bare_remote("origin");
    (r, remote)
}

/// Whether the bare repository `remote` has `refname`.
pub fn remote_has(remote: &Path, refname: &str) -> bool {
    Command::new("git")
        .arg("--git-dir")
        .arg(remote)
        .args(["rev-parse", "--verify", "-q", refname])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("git runs")
        .success()
}

/// The names of the entries of `dir`, byte-sorted; none when it does not exist.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = match fs::read_dir(dir) {
        Ok(rd) => rd.map(|e| e.expect("directory entry").file_name().to_string_lossy().into_owned()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("{}: {e}", dir.display()),
    };
    v.sort();
    v
}

/// The JSON values of a JSON-lines text, one a line.
#[track_caller]
pub fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}"))).collect()
}

/// The events of `<dir>/events.jsonl` (a state or run directory), in order; none when
/// the file does not exist.
#[track_caller]
pub fn events_in(dir: &Path) -> Vec<serde_json::Value> {
    match fs::read_to_string(dir.join("events.jsonl")) {
        Ok(text) => json_lines(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("{}: {e}", dir.join("events.jsonl").display()),
    }
}

/// Escape a literal for use in an insta filter (a regular expression).
fn regex_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The one snapshot harness's settings: insta settings that normalise only what must
/// vary between runs, for output of processes run against `scratch` directories
/// (temporary directories, normally `TestRepo::dir`). Everything else stays byte-exact.
///
/// - each scratch directory (as given and canonical) becomes `[TMP]`;
/// - the path of the binary under test becomes `[PREMERGE]`;
/// - the demo's random scratch directory name becomes `premerge-demo-[RANDOM]`;
/// - a fix loop's random id becomes `loop-[ID]`;
/// - the duration of a gate evaluation in `gate log` becomes `[N]ms`.
///
/// The metadata insta-cmd records (arguments, environment) gets the same paths
/// replaced and the test machine's `PATH` hidden, so an accepted snapshot file is the
/// same on every machine.
pub fn snapshot_settings(scratch: &[&Path]) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    let mut literals: Vec<(String, &str)> = Vec::new();
    for dir in scratch {
        if let Ok(c) = fs::canonicalize(dir) {
            literals.push((c.display().to_string(), "[TMP]"));
        }
        literals.push((dir.display().to_string(), "[TMP]"));
    }
    literals.push((bin().display().to_string(), "[PREMERGE]"));
    // Longest first, so a path is never half-replaced by a prefix of it.
    literals.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
    literals.dedup();
    for (lit, to) in &literals {
        s.add_filter(&regex_literal(lit), *to);
    }
    s.add_filter(r"premerge-demo-[A-Za-z0-9]{6}", "premerge-demo-[RANDOM]");
    s.add_filter(r"\bloop-[0-9a-f]{8}\b", "loop-[ID]");
    // The scan cache's header names the build that wrote it (the executable's size and time).
    s.add_filter(r"premerge-scan-cache (\d+) [0-9a-f]{32}", "premerge-scan-cache $1 [BUILD]");
    s.add_filter(r"(?m)( failure=\S+) [0-9]+ms$", "$1 [N]ms");
    let path_var = std::env::var("PATH").unwrap_or_default();
    let redact = move |v: insta::internals::Content, _: insta::internals::ContentPath<'_>| -> String {
        let text = v.as_str().unwrap_or_default().to_string();
        if text == path_var {
            return "[PATH]".to_string();
        }
        let mut text = text;
        for (lit, to) in &literals {
            text = text.replace(lit.as_str(), to);
        }
        text
    };
    let redact2 = redact.clone();
    s.add_dynamic_redaction(".env.*", redact);
    s.add_dynamic_redaction(".args[]", redact2);
    s
}

/// Snapshot one run of the real binary (exit code, stdout, stderr) with insta-cmd,
/// under `name` (snapshot files are `tests/it/snapshots/it__common__<name>.snap`), with
/// the normalisation of [`snapshot_settings`] for `r`'s temporary directory.
#[track_caller]
pub fn assert_cli_snapshot(name: &str, r: &TestRepo, mut cmd: Command, stdin: &[u8]) {
    let settings = snapshot_settings(&[r.dir.path()]);
    settings.bind(|| {
        insta_cmd::assert_cmd_snapshot!(name, cmd.pass_stdin(stdin));
    });
}

/// Snapshot a text under `name` with the normalisation of [`snapshot_settings`].
#[track_caller]
pub fn assert_text_snapshot(name: &str, scratch: &[&Path], text: &str) {
    snapshot_settings(scratch).bind(|| insta::assert_snapshot!(name, text));
}

/// Every file under `root` (byte-sorted relative paths), each with its content when it
/// is UTF-8 text, or its size when it is not; directories for which `skip` is true
/// are left out. What a command leaves on disk, as one text.
pub fn render_tree(root: &Path, skip: &dyn Fn(&str) -> bool) -> String {
    fn walk(root: &Path, dir: &Path, skip: &dyn Fn(&str) -> bool, out: &mut Vec<(String, PathBuf)>) {
        let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for p in entries {
            let rel = p.strip_prefix(root).unwrap().to_str().unwrap().to_string();
            if skip(&rel) {
                continue;
            }
            let meta = fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                walk(root, &p, skip, out);
            } else {
                out.push((rel, p));
            }
        }
    }
    let mut files = Vec::new();
    walk(root, root, skip, &mut files);
    files.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut out = String::new();
    for (rel, p) in files {
        let bytes = fs::read(&p).unwrap();
        match String::from_utf8(bytes) {
            Ok(text) if !text.contains('\0') => {
                out.push_str(&format!("=== {rel} ({} bytes)\n{text}", text.len()));
                if !text.is_empty() && !text.ends_with('\n') {
                    out.push_str("\n[no newline at end]\n");
                }
            }
            Ok(text) => out.push_str(&format!("=== {rel} (binary, {} bytes)\n", text.len())),
            Err(e) => out.push_str(&format!("=== {rel} (binary, {} bytes)\n", e.as_bytes().len())),
        }
    }
    out
}

/// The schema of a SQLite database premerge wrote (every object of `sqlite_master`,
/// byte-sorted by type and name) and the row count of each table.
pub fn render_sqlite(path: &Path) -> String {
    let db = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut stmt = db.prepare("SELECT type, name, COALESCE(sql, '') FROM sqlite_master ORDER BY type, name").unwrap();
    let rows: Vec<(String, String, String)> =
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(|r| r.unwrap()).collect();
    let mut out = String::new();
    for (ty, name, sql) in &rows {
        out.push_str(&format!("{ty} {name}\n{sql}\n"));
        if ty == "table" && !name.starts_with("sqlite_") {
            let n: i64 = db.query_row(&format!("SELECT COUNT(*) FROM \"{name}\""), [], |r| r.get(0)).unwrap();
            out.push_str(&format!("  rows: {n}\n"));
        }
    }
    out
}

/// The one fixture harness: run `check` on every case of a fixture corpus, in the
/// order given, and snapshot one report under `name`: a `=== <case>` line, then what
/// `check` returned for it. A case whose outcome changes shows as a one-case diff in
/// the snapshot; normalised as by [`snapshot_settings`] for `scratch`.
#[track_caller]
pub fn assert_fixture_snapshot<C, F>(name: &str, scratch: &[&Path], cases: C, mut check: F)
where
    C: IntoIterator<Item = (String, String)>,
    F: FnMut(&str, &str) -> String,
{
    let mut report = String::new();
    let mut n = 0usize;
    for (case, input) in cases {
        let outcome = check(&case, &input);
        report.push_str(&format!("=== {case}\n{}", outcome));
        if !outcome.ends_with('\n') {
            report.push('\n');
        }
        n += 1;
    }
    assert!(n > 0, "fixture corpus {name} has no case");
    assert_text_snapshot(name, scratch, &report);
}
