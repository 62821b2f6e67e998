//! The CI templates run for real: `action.yml` and `ci/github/*.yml` pass actionlint and
//! the vendored workflow and action schemas, `ci/gitlab/*.yml` the GitLab CI schema;
//! the GitLab fix loop runs end to end under gitlab-ci-local over three attempts (and
//! its fence refuses a stray inside the CI run); the GitHub workflows run under act in
//! host mode, with local stand-ins for the actions and the `gh` API they would download
//! or call. Each tool is one `.ci/install-tools` installs.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common::{bin, have_tool, hermetic, write_exec};

fn checkout() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn github_workflows() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(checkout().join("ci/github"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml"))
        .collect();
    v.sort();
    assert!(v.len() >= 2, "the fix-loop and the scan workflows: {v:?}");
    v
}

/// Run a command with the hermetic environment plus `extra` on PATH; (code, stdout+stderr).
fn run(cmd: &mut Command, home: &Path, extra_path: &[&Path]) -> (i32, String) {
    hermetic(cmd, home);
    let mut path: Vec<PathBuf> = extra_path.iter().map(|p| p.to_path_buf()).collect();
    path.push(bin().parent().unwrap().to_path_buf());
    path.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    cmd.env("PATH", std::env::join_paths(path).unwrap()).stdin(Stdio::null());
    let o = cmd.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    (o.status.code().unwrap_or(-1), text)
}

fn git(dir: &Path, home: &Path, args: &[&str]) -> String {
    let (code, out) = run(Command::new("git").current_dir(dir).args(args), home, &[]);
    assert_eq!(code, 0, "git {args:?}: {out}");
    out
}

#[test]
fn templates_pass_actionlint_and_the_vendored_schemas() {
    if !have_tool("actionlint", &["--version"]) || !have_tool("check-jsonschema", &["--version"]) {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let workflows = github_workflows();
    let (code, out) = run(Command::new("actionlint").args(&workflows), home.path(), &[]);
    assert_eq!(code, 0, "actionlint: {out}");
    let schema = |builtin: &str, files: &[PathBuf]| {
        let (code, out) =
            run(Command::new("check-jsonschema").arg("--builtin-schema").arg(builtin).args(files), home.path(), &[]);
        assert_eq!(code, 0, "{builtin}: {out}");
    };
    schema("vendor.github-workflows", &workflows);
    schema("vendor.github-actions", &[checkout().join("action.yml")]);
    schema("vendor.gitlab-ci", &[checkout().join("ci/gitlab/premerge.gitlab-ci.yml")]);
    // The schemas are not vacuous: a workflow without `jobs` is refused.
    let bad = home.path().join("bad.yml");
    fs::write(&bad, "name: x\non: push\n").unwrap();
    let (code, _) = run(
        Command::new("check-jsonschema").args(["--builtin-schema", "vendor.github-workflows"]).arg(&bad),
        home.path(),
        &[],
    );
    assert_ne!(code, 0);
}

/// A project for the fix loop: files `a.py`, `b.py`, `c.py`, a bare `origin`, and a
/// scripted review and fixer. The review finds `a.py` on attempt 1 and `c.py` on
/// attempt 2; the fixer fixes what it owns, reports on attempt 1 that it was blocked
/// on `b.py` (so attempt 2 carries it), and with `STRAY=1` also writes a file the plan
/// never named.
struct Project {
    _dir: tempfile::TempDir,
    home: PathBuf,
    root: PathBuf,
    remote: PathBuf,
}

const REVIEW: &str = r#"#!/bin/sh
case "$PREMERGE_ATTEMPT" in
1) echo '[{"file":"a.py","line":2,"summary":"the ratio is never checked","failure_scenario":"f(0) divides by zero","category":"bug","severity":"blocker"}]' ;;
2) echo '[{"file":"c.py","line":1,"summary":"unbounded retry count","failure_scenario":"retries forever","category":"bug","severity":"blocker"}]' ;;
*) echo '[]' ;;
esac
"#;

const FIX: &str = r#"#!/bin/sh
set -e
case "$PREMERGE_ATTEMPT" in
1) printf 'def f(x):\n    assert 0 < x < LIMIT\n    return 1 / x\n' > a.py
   echo '{"from_file":"a.py","blocked_on_file":[{"file":"b.py","reason":"the bound belongs in the shared LIMIT"}]}' >> "$PREMERGE_RETURNS"
   if [ "$STRAY" = 1 ]; then echo 'not in the plan' > stray.txt; fi ;;
2) echo 'LIMIT = 10' > b.py
   echo 'RETRIES = 3' > c.py ;;
esac
"#;

impl Project {
    fn new(branch: &str) -> Project {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let root = dir.path().join("proj");
        let remote = dir.path().join("remote.git");
        fs::create_dir_all(&home).unwrap();
        fs::create_dir_all(&root).unwrap();
        git(dir.path(), &home, &["init", "-q", "--bare", "-b", branch, remote.to_str().unwrap()]);
        git(&root, &home, &["init", "-q", "-b", branch]);
        fs::write(root.join("a.py"), "def f(x):\n    return 1 / x\n").unwrap();
        fs::write(root.join("b.py"), "LIMIT = None\n").unwrap();
        fs::write(root.join("c.py"), "RETRIES = None\n").unwrap();
        write_exec(&root.join("scripts/premerge-review.sh"), REVIEW);
        write_exec(&root.join("scripts/premerge-fix.sh"), FIX);
        Project { _dir: dir, home, root, remote }
    }

    fn commit_and_push(&self, branch: &str) {
        git(&self.root, &self.home, &["add", "-A"]);
        git(&self.root, &self.home, &["commit", "-qm", "base"]);
        git(&self.root, &self.home, &["remote", "add", "origin", self.remote.to_str().unwrap()]);
        git(&self.root, &self.home, &["push", "-q", "origin", branch]);
    }

    fn remote_log(&self, branch: &str) -> String {
        git(&self.remote, &self.home, &["log", "--format=%s", branch])
    }
}

fn gitlab_project(stray: bool) -> Project {
    let p = Project::new("main");
    fs::create_dir_all(p.root.join("ci")).unwrap();
    fs::copy(checkout().join("ci/gitlab/premerge.gitlab-ci.yml"), p.root.join("ci/premerge.gitlab-ci.yml")).unwrap();
    let stray = if stray { "1" } else { "0" };
    fs::write(
        p.root.join(".gitlab-ci.yml"),
        format!(
            "include:\n  - local: ci/premerge.gitlab-ci.yml\nvariables:\n  PREMERGE_REVIEW_COMMAND: ./scripts/premerge-review.sh\n  \
             PREMERGE_FIXER_COMMAND: ./scripts/premerge-fix.sh\n  PREMERGE_FIX_LOOP: \"1\"\n  STRAY: \"{stray}\"\n"
        ),
    )
    .unwrap();
    p.commit_and_push("main");
    p
}

/// One pipeline of the project: gitlab-ci-local with shell isolation (each job in its
/// own copy of the project, as a runner has), the fix-loop job only.
fn gitlab_pipeline(p: &Project) -> (i32, String) {
    let push = format!("PREMERGE_PUSH_URL={}", p.remote.display());
    run(
        Command::new("gitlab-ci-local").current_dir(&p.root).args([
            "--shell-isolation",
            "--no-color",
            "--variable",
            &push,
            "premerge-fix-attempt",
        ]),
        &p.home,
        &[],
    )
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

fn wave_files(plan: &Value) -> Vec<String> {
    let mut v: Vec<String> = plan["waves"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w.as_array().unwrap().iter().map(|e| e["file"].as_str().unwrap().to_string()))
        .collect();
    v.sort();
    v
}

#[test]
fn gitlab_fix_loop_runs_three_attempts_to_stop_green() {
    if !have_tool("gitlab-ci-local", &["--version"])
        || !have_tool("rsync", &["--version"])
        || !have_tool("jq", &["--version"])
    {
        return;
    }
    let p = gitlab_project(false);
    let cache = p.root.join(".gitlab-ci-local/cache/premerge-run-main/.premerge-run");
    for attempt in 1..=3 {
        let (code, out) = gitlab_pipeline(&p);
        assert_eq!(code, 0, "attempt {attempt}:\n{out}");
        assert!(out.contains(&format!("premerge: attempt {attempt}")), "attempt {attempt}:\n{out}");
        // The fixer's push starts the next pipeline: the next run sees its commit.
        git(&p.root, &p.home, &["pull", "-q", "--ff-only", "origin", "main"]);
    }
    // Attempt 1 planned a.py; its fixer was blocked on b.py, which attempt 2 carried
    // beside the review's new finding; attempt 3 found nothing and the loop stopped.
    assert_eq!(wave_files(&read_json(&cache.join("fix-waves-01.json"))), ["a.py"]);
    assert_eq!(wave_files(&read_json(&cache.join("fix-waves-02.json"))), ["b.py", "c.py"]);
    let classified = read_json(&cache.join("classified-02.json"));
    assert_eq!(classified["counts"]["blocked_on_admitted"], 1, "{classified}");
    assert_eq!(fs::read_to_string(cache.join("decision")).unwrap().trim(), "STOP_GREEN");
    assert_eq!(
        p.remote_log("main").lines().collect::<Vec<_>>(),
        ["premerge: fix attempt 2", "premerge: fix attempt 1", "base"]
    );
    assert_eq!(fs::read_to_string(p.root.join("b.py")).unwrap(), "LIMIT = 10\n");
    // Every comment the pipeline rendered is there for the merge request.
    for nn in ["01", "02", "03"] {
        let md = fs::read_to_string(cache.join(format!("comment-{nn}.md"))).unwrap();
        assert!(md.starts_with("<!-- premerge"), "comment-{nn}.md: {md}");
    }
    // A fourth pipeline of the same branch does nothing: the loop is over.
    let (code, out) = gitlab_pipeline(&p);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("the fix loop of this branch has stopped: STOP_GREEN"), "{out}");
}

#[test]
fn gitlab_fence_refuses_a_stray_inside_the_ci_run() {
    if !have_tool("gitlab-ci-local", &["--version"])
        || !have_tool("rsync", &["--version"])
        || !have_tool("jq", &["--version"])
    {
        return;
    }
    let p = gitlab_project(true);
    let (code, out) = gitlab_pipeline(&p);
    assert_ne!(code, 0, "the job fails: {out}");
    assert!(out.contains("stray: stray.txt"), "{out}");
    assert!(!out.contains("stray: a.py"), "the planned file is no stray: {out}");
    // Nothing was committed or pushed past the fence.
    assert_eq!(p.remote_log("main").trim(), "base");
}

/// Local stand-ins for what act would download or call: `actions/checkout` clones the
/// project's bare remote (GitHub's place) at the ref, `actions/cache` restores the
/// test's premerge as a cache hit (so the action does not build it), the artifact
/// actions keep the run directory in a local folder, `upload-sarif` copies the SARIF
/// where the test reads it, and `gh` answers the two API calls of the workflow from
/// local files.
struct Standins {
    dir: PathBuf,
    out: PathBuf,
}

fn composite(dir: &Path, rel: &str, inputs: &[&str], script: &str) {
    let d = dir.join(rel);
    fs::create_dir_all(&d).unwrap();
    let mut y = format!("name: {rel} stand-in\ndescription: local stand-in\ninputs:\n");
    let mut env = String::new();
    for i in inputs {
        y.push_str(&format!("  {i}:\n    description: {i}\n    required: false\n    default: \"\"\n"));
        env.push_str(&format!("        IN_{}: ${{{{ inputs.{i} }}}}\n", i.replace('-', "_").to_uppercase()));
    }
    y.push_str("runs:\n  using: composite\n  steps:\n    - shell: bash\n      env:\n");
    y.push_str(&env);
    y.push_str("      run: |\n");
    for l in script.lines() {
        y.push_str(&format!("        {l}\n"));
    }
    fs::write(d.join("action.yml"), y).unwrap();
}

const GH: &str = r#"#!/bin/sh
# gh stand-in: `run list` names the previous run when an artifact was kept; `api`
# lists, creates and updates pull request comments as files under $PREMERGE_TEST_OUT.
out="$PREMERGE_TEST_OUT"; mkdir -p "$out/comments"
case "$1" in
run) [ -d "$out/artifacts/premerge-run" ] && echo 41 ; exit 0 ;;
api) shift ;;
*) echo "gh stand-in: unexpected $*" >&2; exit 2 ;;
esac
method=GET; body=; path=; jq=
while [ $# -gt 0 ]; do
  case "$1" in
  --method) method=$2; shift 2 ;;
  -F) body=${2#body=@}; shift 2 ;;
  --jq) jq=$2; shift 2 ;;
  --paginate) shift ;;
  *) path=$1; shift ;;
  esac
done
echo "$method $path" >> "$out/gh-calls"
case "$method" in
GET) marker=$(printf '%s' "$jq" | sed -n 's/.*startswith("\(.*\)")).*/\1/p')
     for f in "$out"/comments/*.md; do
       [ -e "$f" ] || continue
       [ "$(head -n 1 "$f")" = "$marker" ] && basename "$f" .md
     done ;;
POST) n=$(ls "$out/comments" | wc -l); cp "$body" "$out/comments/$((n + 100)).md" ;;
PATCH) cp "$body" "$out/comments/${path##*/}.md" ;;
esac
"#;

impl Standins {
    fn new(root: &Path) -> Standins {
        let dir = root.join("standins");
        let out = root.join("out");
        fs::create_dir_all(&out).unwrap();
        composite(
            &dir,
            "cache",
            &["path", "key"],
            "mkdir -p \"$IN_PATH/bin\"\ncp \"$PREMERGE_TEST_BIN\" \"$IN_PATH/bin/premerge\"",
        );
        composite(
            &dir,
            "codeql-action/upload-sarif",
            &["sarif_file", "category"],
            "cp \"$IN_SARIF_FILE\" \"$PREMERGE_TEST_OUT/$IN_CATEGORY.sarif\"",
        );
        composite(
            &dir,
            "upload-artifact",
            &["name", "path", "include-hidden-files", "overwrite"],
            "rm -rf \"$PREMERGE_TEST_OUT/artifacts/$IN_NAME\"\nmkdir -p \"$PREMERGE_TEST_OUT/artifacts\"\ncp -R \"$IN_PATH\" \"$PREMERGE_TEST_OUT/artifacts/$IN_NAME\"",
        );
        composite(
            &dir,
            "download-artifact",
            &["name", "path", "run-id", "github-token"],
            "mkdir -p \"$IN_PATH\"\ncp -R \"$PREMERGE_TEST_OUT/artifacts/$IN_NAME/.\" \"$IN_PATH/\"",
        );
        // What the real checkout does, from the project's bare remote instead of GitHub:
        // the whole history (fetch-depth 0), the ref asked for, `origin` to push to.
        composite(
            &dir,
            "checkout",
            &["fetch-depth", "ref", "token"],
            "git clone -q \"$PREMERGE_TEST_ORIGIN\" .\nif [ -n \"$IN_REF\" ]; then git checkout -q \"$IN_REF\"; fi",
        );
        write_exec(&dir.join("bin/gh"), GH);
        // The action's own checkout, without the build directory: what the action reads
        // (its definition, and the sources it hashes for the cache key).
        let action = dir.join("premerge");
        fs::create_dir_all(&action).unwrap();
        for f in ["action.yml", "Cargo.toml", "Cargo.lock"] {
            fs::copy(checkout().join(f), action.join(f)).unwrap();
        }
        let (code, copied) =
            run(Command::new("cp").arg("-R").arg(checkout().join("src")).arg(action.join("src")), root, &[]);
        assert_eq!(code, 0, "{copied}");
        Standins { dir, out }
    }

    /// act in host mode on the project's workflows, for a pull_request event.
    fn act(&self, p: &Project, event: &Path) -> (i32, String) {
        let local = |spec: &str, rel: &str| format!("{spec}={}", self.dir.join(rel).display());
        let mut cmd = Command::new("act");
        cmd.current_dir(&p.root)
            .arg("pull_request")
            .arg("-e")
            .arg(event)
            .args(["-P", "ubuntu-latest=-self-hosted", "--action-offline-mode"])
            .arg("--action-cache-path")
            .arg(self.dir.join("act-cache"))
            .args(["--local-repository", &local("premerge/premerge@main", "premerge")])
            .args(["--local-repository", &local("actions/cache@v4", "cache")])
            .args(["--local-repository", &local("actions/checkout@v4", "checkout")])
            .args(["--local-repository", &local("actions/upload-artifact@v4", "upload-artifact")])
            .args(["--local-repository", &local("actions/download-artifact@v4", "download-artifact")])
            .args(["--local-repository", &local("github/codeql-action@v3", "codeql-action")])
            .arg("--env")
            .arg(format!("PREMERGE_TEST_BIN={}", bin().display()))
            .arg("--env")
            .arg(format!("PREMERGE_TEST_OUT={}", self.out.display()))
            .arg("--env")
            .arg(format!("PREMERGE_TEST_ORIGIN={}", p.remote.display()))
            .arg("--env")
            .arg(format!("PATH={}:{}", self.dir.join("bin").display(), std::env::var("PATH").unwrap_or_default()));
        run(&mut cmd, &p.home, &[&self.dir.join("bin")])
    }
}

fn pull_request_event(p: &Project, base: &str, head_ref: &str) -> PathBuf {
    let head = git(&p.root, &p.home, &["rev-parse", "HEAD"]);
    let ev = serde_json::json!({"pull_request": {"number": 7, "base": {"sha": base, "ref": "main"},
                                "head": {"sha": head.trim(), "ref": head_ref}}});
    let path = p.root.parent().unwrap().join("event.json");
    fs::write(&path, ev.to_string()).unwrap();
    path
}

fn install_workflow(p: &Project, name: &str) {
    let wf = p.root.join(".github/workflows");
    fs::create_dir_all(&wf).unwrap();
    fs::copy(checkout().join("ci/github").join(name), wf.join(name)).unwrap();
}

#[test]
fn github_scan_workflow_runs_under_act() {
    if !have_tool("act", &["--version"]) {
        return;
    }
    let p = Project::new("feature");
    install_workflow(&p, "premerge-scan.yml");
    fs::write(p.root.join("q.rs"), "pub struct Query {\n    pub limit: u8,\n}\n").unwrap();
    p.commit_and_push("feature");
    let base = git(&p.root, &p.home, &["rev-parse", "HEAD"]).trim().to_string();
    fs::write(p.root.join("q.rs"), "pub struct Query {\n    pub limit: u64,\n}\n").unwrap();
    git(&p.root, &p.home, &["commit", "-qam", "widen the limit"]);
    git(&p.root, &p.home, &["push", "-q", "origin", "feature"]);
    let s = Standins::new(p.root.parent().unwrap());
    let event = pull_request_event(&p, &base, "feature");
    let (code, out) = s.act(&p, &event);
    assert_eq!(code, 0, "{out}");
    // The SARIF went to code scanning with the widening, and the annotations to the log.
    let sarif = read_json(&s.out.join("premerge-scan.sarif"));
    assert_eq!(sarif["version"], "2.1.0");
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert!(results.iter().any(|r| r["ruleId"] == "rust-integer-widened"), "{sarif}");
    assert!(out.contains("file=q.rs"), "the annotation names the file: {out}");
}

#[test]
fn github_fix_loop_workflow_runs_three_attempts_under_act() {
    if !have_tool("act", &["--version"]) || !have_tool("jq", &["--version"]) {
        return;
    }
    let p = Project::new("feature");
    install_workflow(&p, "premerge-fix-loop.yml");
    p.commit_and_push("feature");
    let base = git(&p.root, &p.home, &["rev-parse", "HEAD"]).trim().to_string();
    let s = Standins::new(p.root.parent().unwrap());
    let artifact = s.out.join("artifacts/premerge-run");
    for attempt in 1..=3 {
        let event = pull_request_event(&p, &base, "feature");
        let (code, out) = s.act(&p, &event);
        assert_eq!(code, 0, "attempt {attempt}:\n{out}");
        assert!(artifact.join(format!("fix-waves-{attempt:02}.json")).is_file(), "attempt {attempt}:\n{out}");
        git(&p.root, &p.home, &["pull", "-q", "--ff-only", "origin", "feature"]);
    }
    assert_eq!(wave_files(&read_json(&artifact.join("fix-waves-02.json"))), ["b.py", "c.py"]);
    assert_eq!(fs::read_to_string(artifact.join("decision")).unwrap().trim(), "STOP_GREEN");
    assert_eq!(
        p.remote_log("feature").lines().collect::<Vec<_>>(),
        ["premerge: fix attempt 2", "premerge: fix attempt 1", "base"]
    );
    // One comment, posted once and updated in place by the later attempts.
    let calls = fs::read_to_string(s.out.join("gh-calls")).unwrap();
    assert_eq!(calls.matches("POST ").count(), 1, "{calls}");
    assert_eq!(calls.matches("PATCH ").count(), 2, "{calls}");
    let comments = fs::read_dir(s.out.join("comments")).unwrap().count();
    assert_eq!(comments, 1);
}
