//! What the fence judges on a push (issue 26, part 2): what each ref update does to
//! the remote, through real `git push` to bare remotes with a fix loop open. Force
//! pushes, rewinds and unrelated histories are judged on the remote's old tip against
//! the new one; a stray added and removed inside the pushed commits counts; a new ref
//! is judged against what the remote already has, never the whole history. Every case
//! runs twice: with libgit2, and with the `git` executable forced
//! (`PREMERGE_TEST_FENCE_GIT_CLI=1`), which must give the same answer.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::prelude::*;

use crate::common::{REQUIRE_TOOLS_VAR, Run, TestRepo, hermetic, run_with_stdin};
use premerge::git::{Repo, fence_paths_in, parse_push_lines};

/// The debug-only switch that makes the fence ask the `git` executable.
const FORCE_CLI: &str = "PREMERGE_TEST_FENCE_GIT_CLI";

/// Both ways the fence computes its paths.
const BACKENDS: [bool; 2] = [false, true];

/// A clone with hooks installed, a bare `origin` holding `main` (a.py, c.txt, d.txt),
/// and a findings file whose plan allows `a.py` only.
struct Px {
    repo: TestRepo,
    remote: PathBuf,
    findings: PathBuf,
}

impl Px {
    fn new(cli: bool) -> Px {
        let mut repo = TestRepo::new();
        if cli {
            repo.env.push((FORCE_CLI.into(), "1".into()));
        }
        repo.write("a.py", "def f(x):\n    assert x > 0\n    return x\n");
        repo.write("c.txt", "hi\n");
        repo.write("d.txt", "dee\n");
        repo.commit_all("init");
        let remote = repo.add_bare_remote("origin");
        repo.git(&["push", "-q", "origin", "main"]);
        repo.premerge(&["install"]).expect_code(0);
        let findings = repo.dir.path().join("f.json");
        fs::write(
            &findings,
            r#"[{"file":"a.py","line":2,"summary":"s","failure_scenario":"x","category":"bug","severity":"blocker"}]"#,
        )
        .unwrap();
        Px { repo, remote, findings }
    }

    /// Open a fix loop the way a pipeline does: `premerge plan --attempt 1 --findings F`.
    fn open_loop(&self) {
        self.repo.premerge(&["plan", "--attempt", "1", "--findings", self.findings.to_str().unwrap()]).expect_code(0);
    }

    /// A real `git push ARGS...` through the installed hook, with the repository's
    /// premerge environment (the backend switch) reaching the hook.
    fn push(&self, args: &[&str]) -> Run {
        let mut v = vec!["push"];
        v.extend_from_slice(args);
        let mut c = self.repo.git_cmd(&v);
        for (k, val) in &self.repo.env {
            c.env(k, val);
        }
        run_with_stdin(&mut c, b"")
    }

    fn edit(&self, path: &str, text: &str, msg: &str) -> String {
        self.repo.write(path, text);
        self.repo.commit_all(msg)
    }

    /// The remote's commit at `refname`, if it has it.
    fn remote_oid(&self, refname: &str) -> Option<String> {
        let mut c = Command::new("git");
        hermetic(&mut c, &self.repo.home);
        let o = c.arg("--git-dir").arg(&self.remote).args(["rev-parse", "--verify", "-q", refname]).output().unwrap();
        o.status.success().then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
    }

    fn url(&self) -> &str {
        self.remote.to_str().unwrap()
    }
}

/// The stray paths a refusal names, in the order printed.
fn strays(r: &Run) -> Vec<String> {
    r.stderr.lines().filter_map(|l| l.strip_prefix("premerge fence: stray: ")).map(str::to_string).collect()
}

#[track_caller]
fn refused(r: &Run, expected: &[&str], backend: bool) {
    assert_ne!(r.code, 0, "cli={backend}: the push went through\n{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("premerge fence: push refused"), "cli={backend}: {}", r.stderr);
    assert_eq!(strays(r), expected, "cli={backend}: {}", r.stderr);
}

#[track_caller]
fn allowed(r: &Run, backend: bool) {
    assert_eq!(r.code, 0, "cli={backend}: refused\n{}\n{}", r.stdout, r.stderr);
    assert!(strays(r).is_empty(), "cli={backend}: {}", r.stderr);
    assert!(r.stdout.contains("premerge fence: pushed files are inside the plan"), "cli={backend}: {}", r.stdout);
}

// Probe D5 (a): an unrelated history replacing main deletes c.txt and d.txt on the
// remote; merge-base..local saw only a.py.
#[test]
fn a_force_push_of_an_unrelated_history_is_judged_on_what_it_deletes() {
    for cli in BACKENDS {
        let p = Px::new(cli);
        p.open_loop();
        let before = p.remote_oid("refs/heads/main");
        p.repo.git(&["checkout", "-q", "--orphan", "o"]);
        p.repo.git(&["rm", "-rqf", "--cached", "."]);
        fs::remove_file(p.repo.root.join("c.txt")).unwrap();
        fs::remove_file(p.repo.root.join("d.txt")).unwrap();
        p.edit("a.py", "def f(x):\n    return x\n", "orphan");
        refused(&p.push(&["-f", "origin", "o:main"]), &["c.txt", "d.txt"], cli);
        assert_eq!(p.remote_oid("refs/heads/main"), before, "the remote keeps its main");
    }
}

// Probe D5 (b): a rewind to main~1 reverts the remote's last change to c.txt; it adds
// no commit, so the old range was empty.
#[test]
fn a_rewind_is_judged_on_the_change_it_reverts() {
    for cli in BACKENDS {
        let p = Px::new(cli);
        p.edit("c.txt", "more\n", "legit");
        p.repo.git(&["push", "-q", "origin", "main"]);
        p.open_loop();
        refused(&p.push(&["-f", "origin", "main~1:main"]), &["c.txt"], cli);
        // The same rewind of a change to the planned file only is allowed.
        let q = Px::new(cli);
        q.edit("a.py", "# earlier fix\n", "fix a.py");
        q.repo.git(&["push", "-q", "origin", "main"]);
        q.open_loop();
        allowed(&q.push(&["-f", "origin", "main~1:main"]), cli);
    }
}

// Probe D5: a sibling force push (same base, the remote's change to c.txt dropped, a
// change to a.py added) reverted c.txt on the remote.
#[test]
fn a_sibling_force_push_is_judged_on_the_remote_change_it_drops() {
    for cli in BACKENDS {
        let p = Px::new(cli);
        p.edit("c.txt", "remote's change\n", "theirs");
        p.repo.git(&["push", "-q", "origin", "main"]);
        p.open_loop();
        p.repo.git(&["reset", "-q", "--hard", "HEAD~1"]);
        p.edit("a.py", "# fix\n", "ours");
        refused(&p.push(&["-f", "origin", "main"]), &["c.txt"], cli);
    }
}

// Probe D5, related: a stray added by one pushed commit and removed by the next nets
// to nothing in the tree diff, but the remote's history would hold it.
#[test]
fn a_stray_added_and_removed_inside_the_push_is_refused() {
    for cli in BACKENDS {
        let p = Px::new(cli);
        p.open_loop();
        p.edit("stray.txt", "x\n", "add stray");
        fs::remove_file(p.repo.root.join("stray.txt")).unwrap();
        p.repo.commit_all("remove stray");
        p.edit("a.py", "# fix\n", "fix");
        refused(&p.push(&["origin", "main"]), &["stray.txt"], cli);
        // Without the round trip, the same push is allowed: the fence is what refused.
        p.repo.git(&["reset", "-q", "--hard", "origin/main"]);
        p.edit("a.py", "# fix\n", "fix");
        allowed(&p.push(&["origin", "main"]), cli);
    }
}

// Probe D7: a new branch pushed to a URL was judged on the whole history (c.txt,
// d.txt refused although the remote has them). Now only the new commits count.
#[test]
fn a_new_branch_pushed_to_a_url_is_judged_on_its_new_commits_only() {
    for cli in BACKENDS {
        let p = Px::new(cli);
        p.open_loop();
        p.edit("a.py", "# fix\n", "fix");
        allowed(&p.push(&[p.url(), "HEAD:refs/heads/fix-1"]), cli);
        assert!(p.remote_oid("refs/heads/fix-1").is_some());
        p.edit("s.txt", "stray\n", "stray");
        refused(&p.push(&[p.url(), "HEAD:refs/heads/fix-2"]), &["s.txt"], cli);
        assert!(p.remote_oid("refs/heads/fix-2").is_none());
    }
}

// Probe D7: a remote added but never fetched has no remote-tracking refs; what the
// clone knows of any remote (origin's refs) counts as already there.
#[test]
fn a_new_branch_pushed_to_a_never_fetched_remote_is_judged_on_its_new_commits_only() {
    for cli in BACKENDS {
        let p = Px::new(cli);
        let mirror = p.repo.dir.path().join("mirror.git");
        p.repo.git_in(p.repo.dir.path(), &["clone", "-q", "--bare", p.url(), mirror.to_str().unwrap()]);
        p.repo.git(&["remote", "add", "mirror", mirror.to_str().unwrap()]);
        p.open_loop();
        p.edit("a.py", "# fix\n", "fix");
        allowed(&p.push(&["mirror", "HEAD:refs/heads/fix-1"]), cli);
        p.edit("c.txt", "stray edit\n", "stray");
        refused(&p.push(&["mirror", "HEAD:refs/heads/fix-2"]), &["c.txt"], cli);
    }
}

// Probe D15's shape through git's own hook: every ref of a multi-ref push is judged.
#[test]
fn every_ref_of_a_multi_ref_push_is_judged() {
    for cli in BACKENDS {
        let p = Px::new(cli);
        p.open_loop();
        p.repo.git(&["checkout", "-q", "-b", "r1"]);
        p.edit("a.py", "# fix\n", "fix");
        p.repo.git(&["checkout", "-q", "-b", "r2", "main"]);
        p.edit("s.txt", "stray\n", "stray");
        refused(&p.push(&["origin", "r1", "r2"]), &["s.txt"], cli);
        assert!(p.remote_oid("refs/heads/r1").is_none() && p.remote_oid("refs/heads/r2").is_none());
        allowed(&p.push(&["origin", "r1"]), cli);
    }
}

// A merge commit is judged against its first parent: merging the remote's main into
// the pushed branch brings main's changes into the branch's update (decided in
// docs/guide.md), though every commit of main is already on the remote.
#[test]
fn merging_main_into_a_pushed_branch_brings_mains_paths_into_its_update() {
    for cli in BACKENDS {
        let p = Px::new(cli);
        p.repo.git(&["checkout", "-q", "-b", "fix"]);
        p.edit("a.py", "# first fix\n", "first fix");
        p.repo.git(&["push", "-q", "origin", "fix"]);
        p.repo.git(&["checkout", "-q", "main"]);
        p.edit("c.txt", "main moved on\n", "main moves");
        p.repo.git(&["push", "-q", "origin", "main"]);
        p.open_loop();
        p.repo.git(&["checkout", "-q", "fix"]);
        p.repo.git(&["merge", "-q", "--no-edit", "main"]);
        refused(&p.push(&["origin", "fix"]), &["c.txt"], cli);
        // Rebuilt on main instead, the branch's update is a force push whose old tip
        // lacked main's change: refused too, for the same path.
        p.repo.git(&["reset", "-q", "--hard", "main"]);
        p.edit("a.py", "# first fix\n", "first fix again");
        refused(&p.push(&["-f", "origin", "fix"]), &["c.txt"], cli);
        // A new branch from main with the fix is judged on the fix alone.
        allowed(&p.push(&["origin", "fix:refs/heads/fix-on-main"]), cli);
    }
}

// A ref deletion while a loop is open lands no path: allowed (decided in docs/guide.md).
#[test]
fn deleting_a_remote_ref_while_a_loop_is_open_is_allowed() {
    for cli in BACKENDS {
        let p = Px::new(cli);
        p.repo.git(&["checkout", "-q", "-b", "old"]);
        p.edit("c.txt", "old work\n", "old work");
        p.repo.git(&["push", "-q", "origin", "old"]);
        p.open_loop();
        allowed(&p.push(&["origin", ":old"]), cli);
        assert!(p.remote_oid("refs/heads/old").is_none());
    }
}

// Someone else pushed since the last fetch: the remote's tip is not in the clone, so
// what a force push would discard cannot be judged. Refused, saying so.
#[test]
fn a_push_over_a_remote_tip_the_clone_lacks_is_refused() {
    for cli in BACKENDS {
        let p = Px::new(cli);
        let other = p.repo.dir.path().join("other");
        p.repo.git_in(p.repo.dir.path(), &["clone", "-q", p.url(), other.to_str().unwrap()]);
        let o = p.repo.at(&other);
        o.write("c.txt", "someone else\n");
        o.commit_all("theirs");
        o.git(&["push", "-q", "origin", "main"]);
        p.open_loop();
        p.edit("a.py", "# fix\n", "fix");
        let r = p.push(&["-f", "origin", "main"]);
        assert_ne!(r.code, 0, "cli={cli}: {}", r.stderr);
        assert!(r.stderr.contains("which this clone does not have"), "cli={cli}: {}", r.stderr);
        assert!(
            r.stderr.contains("premerge fence: push refused: the fence cannot see what the push lands"),
            "{}",
            r.stderr
        );
    }
}

// Outside a loop nothing is fenced (D7's other half): a one-file branch to a URL is a
// one-path signal diff, not the whole history.
#[test]
fn without_a_loop_a_new_branch_to_a_url_reports_its_own_paths() {
    let p = Px::new(false);
    p.edit("a.py", "# fix\n", "fix");
    let r = p.push(&[p.url(), "HEAD:refs/heads/fix-1"]);
    r.expect_code(0);
    assert!(!r.stdout.contains("premerge fence"), "{}", r.stdout);
    let head = p.repo.git(&["rev-parse", "HEAD"]);
    let line = format!("HEAD {head} refs/heads/fix-9 {}\n", "0".repeat(40));
    let mut c = p.repo.premerge_cmd(["hook", "pre-push", p.url(), p.url()]);
    c.env("PREMERGE_HOOKS_BUDGET_MS", "0");
    let r = run_with_stdin(&mut c, line.as_bytes());
    r.expect_code(0);
    assert!(r.stdout.contains("1 path(s) changed in 1 ref(s)"), "{}", r.stdout);
}

fn git_supports(r: &TestRepo, args: &[&str]) -> bool {
    let probe = r.dir.path().join("probe");
    let mut c = Command::new("git");
    hermetic(&mut c, &r.home);
    let ok = c.args(["init", "-q"]).args(args).arg(&probe).output().is_ok_and(|o| o.status.success());
    let _ = fs::remove_dir_all(&probe);
    if !ok {
        assert!(
            std::env::var_os(REQUIRE_TOOLS_VAR).is_none_or(|v| v != "1"),
            "this git cannot `git init {args:?}` and {REQUIRE_TOOLS_VAR}=1"
        );
        eprintln!("skipped: this git cannot `git init {args:?}`");
    }
    ok
}

/// The fence's paths of one push as text, sorted.
fn paths_text(paths: &[Vec<u8>]) -> Vec<String> {
    paths.iter().map(|p| String::from_utf8_lossy(p).into_owned()).collect()
}

/// A repository made with `init_args` (reftable, SHA-256), its remote `origin`, and the
/// cases of the fence: force push deleting a file, add-then-remove, a new ref to a URL.
/// `libgit2` says whether libgit2 may open it (then both backends must agree).
fn fallback_cases(init_args: &[&str]) {
    let t = TestRepo::new();
    if !git_supports(&t, init_args) {
        return;
    }
    let root = t.dir.path().join("w");
    let mut args = vec!["init", "-q", "-b", "main"];
    args.extend_from_slice(init_args);
    args.push(root.to_str().unwrap());
    t.git_in(t.dir.path(), &args);
    let r = t.at(&root);
    let remote = t.dir.path().join("remote.git");
    let mut bare = vec!["init", "-q", "--bare", "-b", "main"];
    bare.extend_from_slice(init_args);
    bare.push(remote.to_str().unwrap());
    t.git_in(t.dir.path(), &bare);
    r.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    r.write("a.py", "a\n");
    r.write("c.txt", "c\n");
    let base = r.commit_all("base");
    r.git(&["push", "-q", "origin", "main"]);
    let zero = "0".repeat(base.len());

    // An unrelated history over main: c.txt deleted on the remote.
    r.git(&["checkout", "-q", "--orphan", "o"]);
    r.git(&["rm", "-rqf", "--cached", "c.txt"]);
    fs::remove_file(root.join("c.txt")).unwrap();
    r.write("a.py", "fixed\n");
    let orphan = r.commit_all("orphan");
    // A new branch from main with a stray added and removed again.
    r.git(&["checkout", "-q", "-b", "n", "main"]);
    r.write("s.txt", "s\n");
    r.commit_all("add s");
    fs::remove_file(root.join("s.txt")).unwrap();
    r.write("a.py", "fixed too\n");
    let n = r.commit_all("remove s, fix a");

    let input = format!(
        "refs/heads/o {orphan} refs/heads/main {base}\nrefs/heads/n {n} refs/heads/n {zero}\n(delete) {zero} refs/heads/gone {base}\n"
    );
    let lines = parse_push_lines(&input).unwrap();
    for remote_name in ["origin", remote.to_str().unwrap()] {
        let got = fence_paths_in(&root, remote_name, &lines).unwrap();
        let per_ref: Vec<Vec<String>> =
            got.refs.iter().map(|r| paths_text(&r.paths.iter().cloned().collect::<Vec<_>>())).collect();
        assert_eq!(
            per_ref,
            vec![vec!["a.py", "c.txt"], vec!["a.py", "s.txt"], vec![]],
            "{init_args:?} to {remote_name}"
        );
        assert_eq!(paths_text(&got.total()), ["a.py", "c.txt", "s.txt"]);
        if let Ok(repo) = Repo::discover(&root) {
            assert_eq!(repo.fence_paths(remote_name, &lines).unwrap(), got, "libgit2 agrees with git");
        }
    }
}

// Probe D2: where libgit2 cannot open the repository, git computes the same paths.
#[test]
fn the_git_fallback_computes_the_fence_paths_of_a_reftable_repository() {
    fallback_cases(&["--ref-format=reftable"]);
}

#[test]
fn the_git_fallback_computes_the_fence_paths_of_a_sha256_repository() {
    fallback_cases(&["--object-format=sha256"]);
}

// Probe D2: a partial clone (`--filter=blob:none`, with `extensions.partialClone`) lacks
// blobs; the fence's paths come from trees alone, so git computes them without
// fetching anything.
#[test]
fn the_git_fallback_computes_the_fence_paths_of_a_partial_clone() {
    let p = Px::new(false);
    p.edit("big.txt", "only on the remote\n", "big");
    p.repo.git(&["push", "-q", "origin", "main"]);
    p.repo.git_in(&p.remote, &["config", "uploadpack.allowFilter", "true"]);
    let root = p.repo.dir.path().join("partial");
    let url = format!("file://{}", p.url());
    p.repo.git_in(
        p.repo.dir.path(),
        &["clone", "-q", "--filter=blob:none", "--no-checkout", &url, root.to_str().unwrap()],
    );
    let c = p.repo.at(&root);
    // As older git wrote it (git 2.47 honours it; libgit2 1.9 refuses to open it).
    c.git(&["config", "core.repositoryformatversion", "1"]);
    c.git(&["config", "extensions.partialClone", "origin"]);
    let old = c.git(&["rev-parse", "origin/main"]);
    // A commit made from trees alone (no checkout, no blob read): it deletes big.txt.
    let tree = c.git(&["rev-parse", "origin/main~1^{tree}"]);
    let new = c.git(&["commit-tree", &tree, "-p", &old, "-m", "drop big.txt"]);
    let lines = parse_push_lines(&format!("refs/heads/main {new} refs/heads/main {old}\n")).unwrap();
    let got = fence_paths_in(&root, "origin", &lines).unwrap();
    assert_eq!(paths_text(&got.total()), ["big.txt"]);
    let missing = c.git(&["rev-list", "--objects", "--all", "--missing=print"]);
    assert!(missing.lines().any(|l| l.starts_with('?')), "blobs are still missing: nothing was fetched");
}

#[test]
fn libgit2_and_git_agree_on_one_repository() {
    fallback_cases(&[]);
    // And on a repository libgit2 opens, the forced fallback through Repo too.
    let p = Px::new(false);
    let base = p.repo.git(&["rev-parse", "HEAD"]);
    p.repo.git(&["checkout", "-q", "-b", "m"]);
    p.edit("x/y.txt", "y\n", "side");
    p.repo.git(&["checkout", "-q", "main"]);
    p.edit("a.py", "# fix\n", "fix");
    p.repo.git(&["merge", "-q", "--no-edit", "m"]);
    p.repo.git(&["mv", "c.txt", "renamed.txt"]);
    let head = p.repo.commit_all("rename");
    let zero = "0".repeat(40);
    let input =
        format!("refs/heads/main {head} refs/heads/main {base}\nrefs/heads/main {head} refs/heads/new {zero}\n");
    let lines = parse_push_lines(&input).unwrap();
    let repo = Repo::discover(&p.repo.root).unwrap();
    let git2 = repo.fence_paths("origin", &lines).unwrap();
    assert_eq!(repo.fence_paths_cli("origin", &lines).unwrap(), git2);
    assert_eq!(fence_paths_in(&p.repo.root, "origin", &lines).unwrap(), git2);
    // Renames count as both paths; the merge's other side counts.
    assert_eq!(paths_text(&git2.total()), ["a.py", "c.txt", "renamed.txt", "x/y.txt"]);
}

/// One step of the property test's pushes.
#[derive(Debug, Clone)]
enum Step {
    /// Commit on local branch `b`: 0 the planned a.py, 1 a stray edit of c.txt, 2 a new
    /// stray file, 3 a stray added and removed again, 4 c.txt deleted.
    Commit { b: usize, kind: u8 },
    /// `git push origin bN` (refused by the remote when not a fast-forward).
    Push { b: usize },
    /// `git push -f origin bN:<target>`, the target main or another branch.
    Force { b: usize, target: usize },
    /// Rewind local branch `b` by one commit, then force push it.
    Rewind { b: usize },
    /// Make `b` an unrelated history holding a.py only, then force push it over main.
    Unrelated { b: usize },
    /// `git push -f origin bN bM`.
    Multi { b: usize, c: usize },
    /// `git push <url> bN:refs/heads/url-N`.
    Url { b: usize },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..3usize, 0..5u8).prop_map(|(b, kind)| Step::Commit { b, kind }),
        2 => (0..3usize).prop_map(|b| Step::Push { b }),
        1 => (0..3usize, 0..3usize).prop_map(|(b, target)| Step::Force { b, target }),
        1 => (0..3usize).prop_map(|b| Step::Rewind { b }),
        1 => (0..3usize).prop_map(|b| Step::Unrelated { b }),
        1 => (0..3usize, 0..3usize).prop_map(|(b, c)| Step::Multi { b, c }),
        1 => (0..3usize).prop_map(|b| Step::Url { b }),
    ]
}

/// What the remote holds outside the plan's reach, path by path: in `main` (the one
/// ref it had before the loop), every path that differs from the tree the loop started
/// from; in any ref, every path whose content is not the start's; and every path a
/// commit the remote gained touches on its own (a root commit: its whole tree).
fn landed_paths(remote: &Path, start: &str, home: &Path) -> BTreeSet<String> {
    let git = |args: &[&str]| {
        let mut c = Command::new("git");
        hermetic(&mut c, home);
        let o = c.arg("--git-dir").arg(remote).args(args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let entries =
        |tip: &str| -> BTreeSet<String> { git(&["ls-tree", "-r", tip]).lines().map(str::to_string).collect() };
    let at_start = entries(start);
    let mut out = BTreeSet::new();
    let main = git(&["rev-parse", "refs/heads/main"]);
    out.extend(
        git(&["diff-tree", "-r", "--no-renames", "--name-only", start, main.trim()]).lines().map(str::to_string),
    );
    for tip in git(&["for-each-ref", "--format=%(objectname)"]).lines() {
        for e in entries(tip).difference(&at_start) {
            out.insert(e.split_once('\t').map(|(_, p)| p.to_string()).unwrap_or_default());
        }
        for c in git(&["rev-list", tip, "--not", start]).lines() {
            let d = git(&[
                "diff-tree",
                "-r",
                "--no-renames",
                "--name-only",
                "--no-commit-id",
                "--root",
                "--diff-merges=first-parent",
                c,
            ]);
            out.extend(d.lines().map(str::to_string));
        }
    }
    out
}

proptest! {
    // Each case runs a dozen real pushes through the hook: few cases.
    #![proptest_config(ProptestConfig::with_cases(24))]

    // Issue 26: any sequence of pushes with a loop open never lands a path outside the
    // plan on the remote, in any ref's tree or in any commit the remote gains.
    #[test]
    fn no_sequence_of_pushes_lands_a_stray_on_the_remote(steps in prop::collection::vec(step(), 1..10), cli in any::<bool>()) {
        let p = Px::new(cli);
        let start = p.repo.git(&["rev-parse", "HEAD"]);
        for b in 0..3 {
            p.repo.git(&["branch", &format!("b{b}"), "main"]);
        }
        p.open_loop();
        let mut n = 0;
        for s in &steps {
            n += 1;
            let name = |b: usize| format!("b{b}");
            match s {
                Step::Commit { b, kind } => {
                    p.repo.git(&["checkout", "-q", &name(*b)]);
                    match kind {
                        0 => { p.edit("a.py", &format!("# fix {n}\n"), "fix"); }
                        1 => { p.edit("c.txt", &format!("stray {n}\n"), "stray edit"); }
                        2 => { p.edit(&format!("s{n}.txt"), "s\n", "stray file"); }
                        3 => {
                            p.edit("t.txt", "t\n", "add t");
                            fs::remove_file(p.repo.root.join("t.txt")).unwrap();
                            p.repo.commit_all("remove t");
                        }
                        _ => {
                            let _ = fs::remove_file(p.repo.root.join("c.txt"));
                            p.repo.commit_all("delete c.txt");
                        }
                    }
                }
                Step::Push { b } => { p.push(&["origin", &name(*b)]); }
                Step::Force { b, target } => {
                    let to = if target == b { "main".to_string() } else { name(*target) };
                    p.push(&["-f", "origin", &format!("{}:refs/heads/{to}", name(*b))]);
                }
                Step::Rewind { b } => {
                    let parent = format!("{}~1", name(*b));
                    let has_parent = p.repo.git_cmd(["rev-parse", "-q", "--verify", &parent]).output().unwrap().status.success();
                    if has_parent {
                        p.repo.git(&["checkout", "-q", "main"]);
                        p.repo.git(&["branch", "-f", &name(*b), &parent]);
                    }
                    p.push(&["-f", "origin", &name(*b)]);
                }
                Step::Unrelated { b } => {
                    p.repo.git(&["checkout", "-q", "--orphan", &format!("u{n}")]);
                    p.repo.git(&["rm", "-rqf", "--cached", "."]);
                    p.repo.git(&["clean", "-qfd"]);
                    p.edit("a.py", &format!("# unrelated {n}\n"), "unrelated");
                    p.repo.git(&["branch", "-f", &name(*b), "HEAD"]);
                    p.repo.git(&["checkout", "-q", "-f", &name(*b)]);
                    p.push(&["-f", "origin", &format!("{}:refs/heads/main", name(*b))]);
                }
                Step::Multi { b, c } => { p.push(&["-f", "origin", &name(*b), &name(*c)]); }
                Step::Url { b } => { p.push(&[p.url(), &format!("{}:refs/heads/url-{n}", name(*b))]); }
            }
            let landed = landed_paths(&p.remote, &start, &p.repo.home);
            let outside: Vec<&String> = landed.iter().filter(|l| l.as_str() != "a.py").collect();
            prop_assert!(outside.is_empty(), "cli={}: after {:?}: the remote holds {:?}", cli, &steps[..n], outside);
        }
    }
}

/// Probe D15 with the real manager: pre-commit and prek hand premerge's entry the
/// first ref only, so while a loop is open the fence refuses the push, saying it cannot
/// judge the other refs; premerge's own hook under the manager (installed first) gets
/// every ref and refuses the stray by name.
fn manager_passes_the_first_ref_only(tool: &str) {
    if !crate::common::have_tool(tool, &["--version"]) {
        return;
    }
    let path =
        format!("{}:{}", crate::common::bin().parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let with_path = |mut c: Command| {
        c.env("PATH", &path);
        c
    };
    let run = |p: &Px, program: &str, args: &[&str]| {
        let c = if program == "git" {
            p.repo.git_cmd(args)
        } else {
            let mut c = Command::new(program);
            hermetic(&mut c, &p.repo.home);
            c.current_dir(&p.repo.root).args(args);
            c
        };
        run_with_stdin(&mut with_path(c), b"")
    };
    let branches = |p: &Px| {
        p.repo.git(&["checkout", "-q", "-b", "r1", "main"]);
        p.edit("a.py", "# fix\n", "fix");
        p.repo.git(&["checkout", "-q", "-b", "r2", "main"]);
        p.edit("s.txt", "stray\n", "stray");
        p.repo.git(&["checkout", "-q", "main"]);
    };

    // The entry `--print-config` prints, in the manager's configuration.
    let p = Px::new(false);
    p.repo.premerge(&["uninstall"]).expect_code(0);
    let snippet = p.repo.premerge(&["install", "--print-config", tool]);
    snippet.expect_code(0);
    // With no configuration yet, the snippet is a whole one (`repos:` included).
    assert!(snippet.stdout.contains("repos:"), "{}", snippet.stdout);
    p.repo.write(".pre-commit-config.yaml", &snippet.stdout);
    p.repo.commit_all("hooks");
    p.repo.git(&["push", "-q", "--no-verify", "origin", "main"]);
    let installed = run(&p, tool, &["install", "-t", "pre-push"]);
    assert_eq!(installed.code, 0, "{}\n{}", installed.stdout, installed.stderr);
    p.open_loop();
    branches(&p);
    let r = run(&p, "git", &["push", "origin", "r1", "r2"]);
    let shown = format!("{}{}", r.stdout, r.stderr);
    // The fence cannot see r2 (the stray): it refuses the push and says why.
    assert_ne!(r.code, 0, "{tool}: {shown}");
    assert!(
        shown.contains("under pre-commit or prek only the first ref of a push reaches premerge (refs/heads/r1)")
            && shown.contains("premerge install"),
        "{tool}: {shown}"
    );
    assert!(p.remote_oid("refs/heads/r1").is_none() && p.remote_oid("refs/heads/r2").is_none(), "{tool}: {shown}");

    // premerge's own hook first, then the manager's: every ref reaches premerge.
    let q = Px::new(false);
    let installed = run(&q, tool, &["install", "-t", "pre-push"]);
    assert_eq!(installed.code, 0, "{}\n{}", installed.stdout, installed.stderr);
    q.repo.write(
        ".pre-commit-config.yaml",
        "repos:\n- repo: local\n  hooks:\n  - id: noop\n    name: noop\n    language: system\n    entry: 'true'\n    stages: [pre-push]\n    pass_filenames: false\n    always_run: true\n",
    );
    q.repo.commit_all("a hook of the manager's own");
    q.repo.git(&["push", "-q", "--no-verify", "origin", "main"]);
    q.open_loop();
    branches(&q);
    let r = run(&q, "git", &["push", "origin", "r1", "r2"]);
    assert_ne!(r.code, 0, "{tool}: {}\n{}", r.stdout, r.stderr);
    assert_eq!(strays(&r), ["s.txt"], "{tool}: {}", r.stderr);
    assert!(q.remote_oid("refs/heads/r1").is_none() && q.remote_oid("refs/heads/r2").is_none());
}

#[test]
fn under_pre_commit_a_push_the_fence_cannot_see_whole_is_refused() {
    manager_passes_the_first_ref_only("pre-commit");
}

#[test]
fn under_prek_a_push_the_fence_cannot_see_whole_is_refused() {
    manager_passes_the_first_ref_only("prek");
}

// Which commits a new ref sends is asked of git first, for speed; with no git to run
// (the hook called directly, PATH empty), libgit2 walks the same commits and the
// fence judges the same paths.
#[test]
fn a_new_branch_is_judged_the_same_with_no_git_to_ask() {
    let p = Px::new(false);
    p.open_loop();
    p.edit("a.py", "# fix\n", "fix");
    let tip = p.edit("s.txt", "stray\n", "stray");
    let line = format!("refs/heads/fix-2 {tip} refs/heads/fix-2 {}\n", "0".repeat(40));
    let empty = tempfile::tempdir().unwrap();
    for path in [None, Some(empty.path())] {
        let mut c = p.repo.premerge_cmd(["hook", "pre-push", "origin", p.url()]);
        if let Some(dir) = path {
            c.env("PATH", dir);
        }
        let r = run_with_stdin(&mut c, line.as_bytes());
        refused(&r, &["s.txt"], path.is_some());
    }
}
