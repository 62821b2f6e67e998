//! The fence's integrity through real pushes (issue 17): every path of a multi-ref push,
//! file names as bytes, settings from the base and not the pushed tree, the fix loop's
//! lifecycle, one range syntax, and `premerge collisions`.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::common::{Run, TestRepo, run_with_stdin};
use premerge::diff::{Diff, EntryKind, FileChange, Status};

/// A repository with hooks installed, a bare remote that has `main`, and a run
/// directory outside the working tree.
struct Lx {
    repo: TestRepo,
    remote: PathBuf,
    run: PathBuf,
}

impl Lx {
    fn new(files: &[(&str, &str)]) -> Lx {
        let (repo, remote) = crate::common::installed_clone(files);
        let run = repo.dir.path().join("run");
        Lx { repo, remote, run }
    }

    /// Plan an attempt whose blockers are on `files` (no files: nothing to fix).
    fn plan(&self, attempt: u32, files: &[&str]) -> Run {
        let rows: Vec<Value> = files
            .iter()
            .map(|f| json!({"file": f, "line": 1, "summary": format!("fix {f}"), "failure_scenario": "it breaks"}))
            .collect();
        let p = self.repo.dir.path().join(format!("findings-{attempt}.json"));
        fs::write(&p, Value::Array(rows).to_string()).unwrap();
        let a = attempt.to_string();
        let r = self.run.display().to_string();
        self.repo.premerge(&["plan", "--attempt", &a, "--findings", p.to_str().unwrap(), "--run-dir", &r])
    }

    fn converge(&self, attempt: u32) -> Run {
        let a = attempt.to_string();
        let r = self.run.display().to_string();
        self.repo.premerge(&["converge", "--attempt", &a, "--run-dir", &r])
    }

    /// A real `git push origin ARGS...` through the installed hook.
    fn push(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut v = vec!["push", "origin"];
        v.extend_from_slice(args);
        let mut c = self.repo.git_cmd(&v);
        for (k, val) in env {
            c.env(k, val);
        }
        run_with_stdin(&mut c, b"")
    }

    fn remote_has(&self, refname: &str) -> bool {
        crate::common::remote_has(&self.remote, refname)
    }

    fn loop_status(&self) -> Value {
        self.repo.premerge(&["loop", "status", "--format", "json"]).expect_code(0).json()
    }
}

// Issue 17, first case: plan allows only b.rs; X renames the stray a.rs to b.rs, Y adds
// b.rs. `git push origin X Y` used to pass (the union kept one entry per new path) and
// deleted a.rs on the remote.
#[test]
fn a_two_ref_push_keeps_the_renamed_away_path() {
    let lx = Lx::new(&[("a.rs", "stray\n"), ("keep.rs", "keep\n")]);
    lx.plan(1, &["b.rs"]).expect_code(0);
    lx.repo.git(&["checkout", "-q", "-b", "X"]);
    lx.repo.git(&["mv", "a.rs", "b.rs"]);
    lx.repo.commit_all("X renames a.rs to b.rs");
    lx.repo.git(&["checkout", "-q", "main"]);
    lx.repo.git(&["checkout", "-q", "-b", "Y"]);
    lx.repo.write("b.rs", "new in Y\n");
    lx.repo.commit_all("Y adds b.rs");

    let one = lx.push(&["X"], &[]);
    assert_ne!(one.code, 0, "{}", one.stderr);
    assert!(one.stderr.contains("premerge fence: stray: a.rs"), "{}", one.stderr);
    for order in [["X", "Y"], ["Y", "X"]] {
        let both = lx.push(&order, &[]);
        assert_ne!(both.code, 0, "{}", both.stderr);
        assert!(both.stderr.contains("premerge fence: stray: a.rs"), "{order:?}: {}", both.stderr);
        assert!(!both.stderr.contains("stray: b.rs"), "{}", both.stderr);
    }
    assert!(!lx.remote_has("refs/heads/X") && !lx.remote_has("refs/heads/Y"));
    // Y alone only touches b.rs: allowed.
    lx.push(&["Y"], &[]).expect_code(0);
}

fn change(path: &[u8], old: Option<&[u8]>, status: Status) -> FileChange {
    FileChange {
        path: String::from_utf8_lossy(path).into_owned(),
        old_path: old.map(|o| String::from_utf8_lossy(o).into_owned()),
        path_bytes: path.to_vec(),
        old_path_bytes: old.map(<[u8]>::to_vec),
        status,
        binary: false,
        old_kind: EntryKind::File,
        new_kind: EntryKind::File,
        old_oid: None,
        new_oid: None,
        additions: 0,
        deletions: 0,
        hunks: vec![],
    }
}

fn arb_path() -> impl Strategy<Value = Vec<u8>> {
    // A small alphabet so refs share paths often; two non-UTF-8 names whose lossy
    // readings are equal, and a name that is that lossy reading.
    prop::sample::select(vec![
        b"a.rs".to_vec(),
        b"b.rs".to_vec(),
        b"src/c.rs".to_vec(),
        b"w\xff.rs".to_vec(),
        b"w\xfe.rs".to_vec(),
        "w\u{fffd}.rs".as_bytes().to_vec(),
    ])
}

fn arb_change() -> impl Strategy<Value = FileChange> {
    (arb_path(), arb_path(), 0..5usize).prop_map(|(p, o, kind)| match kind {
        0 => change(&p, None, Status::Added),
        1 => change(&p, Some(&p), Status::Modified),
        2 => change(&p, Some(&p), Status::Deleted),
        3 => change(&p, Some(&o), Status::Renamed),
        _ => change(&p, Some(&o), Status::Copied),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    /// The fence's set for a push of many refs is the union of each ref's own set, and
    /// its strays are the union of each ref's strays.
    #[test]
    fn the_union_of_a_push_keeps_every_path_of_every_ref(
        refs in prop::collection::vec(prop::collection::vec(arb_change(), 0..5), 0..6),
        allowed in prop::collection::vec(prop::sample::select(vec!["a.rs", "b.rs", "w\u{fffd}.rs"]), 0..3),
    ) {
        let diffs: Vec<Diff> = refs.into_iter().map(|files| Diff { base: None, head: None, files }).collect();
        let mut each = BTreeSet::new();
        let mut each_stray = BTreeSet::new();
        let allowed: Vec<String> = allowed.iter().map(|s| s.to_string()).collect();
        for d in &diffs {
            each.extend(d.touched_path_bytes());
            each_stray.extend(premerge::waves::fence::strays(&d.touched_path_bytes(), &allowed));
        }
        let union = Diff::union(diffs).touched_path_bytes();
        prop_assert_eq!(union.iter().cloned().collect::<BTreeSet<_>>(), each.clone());
        prop_assert_eq!(union.len(), each.len(), "byte-sorted and deduplicated");
        let strays: BTreeSet<Vec<u8>> = premerge::waves::fence::strays(&union, &allowed).into_iter().collect();
        prop_assert_eq!(strays, each_stray);
    }
}

// Issue 17: `w\xff.rs` and `w\xfe.rs` both became `w\u{fffd}.rs`, so a plan naming
// the lossy name let both through, and `diff -z` and JSON printed the lossy names.
#[test]
fn non_utf8_names_are_bytes_through_the_fence_and_escaped_in_output() {
    let lx = Lx::new(&[("keep.rs", "keep\n")]);
    let base = lx.repo.git(&["rev-parse", "HEAD"]);
    for name in [&b"w\xff.rs"[..], b"w\xfe.rs"] {
        fs::write(lx.repo.root.join(OsStr::from_bytes(name)), "x\n").unwrap();
    }
    // The lossy reading exists as a real file, so a plan can name it.
    lx.repo.write("w\u{fffd}.rs", "x\n");
    lx.repo.commit_all("odd names");
    let head = lx.repo.git(&["rev-parse", "HEAD"]);
    fs::remove_file(lx.repo.root.join("w\u{fffd}.rs")).unwrap();
    lx.repo.commit_all("drop the lossy twin");
    let range = format!("{base}..{head}");

    // diff -z: the exact bytes, as git writes them.
    let z = lx.repo.premerge(&["diff", &range, "-z"]);
    z.expect_code(0);
    let git_z = lx.repo.git_cmd(["diff", "--name-status", "--no-renames", "-z", &base, &head]).output().unwrap();
    assert_eq!(z.stdout_bytes, git_z.stdout, "premerge diff -z equals git diff -z");
    // Text and JSON: escaped, distinct, never the replacement character for a byte.
    let text = lx.repo.premerge(&["diff", &range]).expect_code(0).stdout.clone();
    assert!(text.contains("\"w\\376.rs\"") && text.contains("\"w\\377.rs\""), "{text}");
    let j = lx.repo.premerge(&["diff", &range, "--format", "json"]).expect_code(0).json();
    let paths: Vec<(&str, Option<&str>)> =
        j["files"].as_array().unwrap().iter().map(|f| (f["path"].as_str().unwrap(), f["path_hex"].as_str())).collect();
    assert_eq!(
        paths,
        // Byte order: U+FFFD is ef bf bd, before fe and ff.
        [("w\u{fffd}.rs", None), ("\"w\\376.rs\"", Some("77fe2e7273")), ("\"w\\377.rs\"", Some("77ff2e7273"))]
    );

    // A plan naming the lossy reading allows that file only: both byte names are strays.
    lx.plan(1, &["w\u{fffd}.rs"]).expect_code(0);
    let r = lx.repo.premerge(&["fence", "check", "--attempt", "1", &range, "--run-dir", lx.run.to_str().unwrap()]);
    r.expect_code(1);
    assert_eq!(r.stdout, "stray: \"w\\376.rs\"\nstray: \"w\\377.rs\"\n");
    assert!(r.stderr.contains("2 path(s) are not UTF-8 and no wave plan can name them"), "{}", r.stderr);
    // And through a real push.
    let p = lx.push(&["main"], &[]);
    assert_ne!(p.code, 0, "{}", p.stderr);
    assert!(p.stderr.contains("premerge fence: stray: \"w\\377.rs\""), "{}", p.stderr);
    let events = fs::read_to_string(lx.run.join("events.jsonl")).unwrap();
    assert!(events.contains(r#""strays":["\"w\\376.rs\"","\"w\\377.rs\""]"#), "{events}");
}

// Issue 17: a `premerge.toml` committed in the push switched off the fence judging it.
#[test]
fn the_pushed_premerge_toml_cannot_switch_off_its_own_fence() {
    let lx = Lx::new(&[("a.rs", "a\n"), ("free.rs", "free\n")]);
    lx.plan(1, &["a.rs"]).expect_code(0);
    for toml in ["[fence]\nmode = \"off\"\n", "[hooks]\nenabled = false\n"] {
        lx.repo.git(&["reset", "-q", "--hard", "origin/main"]);
        lx.repo.write("premerge.toml", toml);
        lx.repo.write("free.rs", "sneaked in\n");
        lx.repo.commit_all("switch the fence off");
        let p = lx.push(&["main"], &[]);
        assert_ne!(p.code, 0, "{toml}: {}", p.stderr);
        assert!(p.stderr.contains("premerge fence: stray: free.rs"), "{}", p.stderr);
        assert!(p.stderr.contains("premerge fence: stray: premerge.toml"), "{}", p.stderr);
        assert_eq!(p.stderr.matches("this push changes premerge.toml").count(), 1, "said once: {}", p.stderr);
    }
    // Nor on a new branch, whose base is the parent of its oldest commit the remote lacks.
    let p = lx.push(&["main:refs/heads/evil"], &[]);
    assert_ne!(p.code, 0, "{}", p.stderr);
    assert!(p.stderr.contains("premerge fence: stray: free.rs"), "{}", p.stderr);
    assert!(!lx.remote_has("refs/heads/evil"));
    // The working tree is not trusted either.
    lx.repo.git(&["reset", "-q", "--hard", "origin/main"]);
    lx.repo.write("free.rs", "sneaked in\n");
    lx.repo.commit_all("stray only");
    lx.repo.write("premerge.toml", "[fence]\nmode = \"off\"\n");
    assert_ne!(lx.push(&["main"], &[]).code, 0);
    fs::remove_file(lx.repo.root.join("premerge.toml")).unwrap();
    // git config and the environment stay trusted.
    lx.push(&["main"], &[("PREMERGE_FENCE_MODE", "shadow")]).expect_code(0);
    lx.repo.git(&["push", "-q", "--no-verify", "origin", "+origin/main~0:refs/heads/main"]);
    // A premerge.toml already on the remote (the base) does govern the next push.
    lx.repo.git(&["reset", "-q", "--hard", "origin/main"]);
    lx.repo.write("premerge.toml", "[fence]\nmode = \"shadow\"\n");
    lx.repo.commit_all("policy: shadow");
    lx.repo.git(&["push", "-q", "--no-verify", "origin", "main"]);
    lx.repo.write("free.rs", "later\n");
    lx.repo.commit_all("stray after the policy landed");
    let p = lx.push(&["main"], &[]);
    p.expect_code(0);
    assert!(p.stderr.contains("shadow, not blocking"), "{}", p.stderr);
}

#[test]
fn a_fix_loop_opens_with_plan_closes_with_converge_or_the_operator() {
    let lx = Lx::new(&[("a.rs", "a\n"), ("free.rs", "free\n")]);
    assert_eq!(lx.loop_status()["state"], "none");
    // No loop: a stray push passes (only an open loop's fence blocks).
    lx.repo.write("free.rs", "one\n");
    lx.repo.commit_all("before any loop");
    lx.push(&["main"], &[]).expect_code(0);

    let p = lx.plan(1, &["a.rs"]);
    p.expect_code(0);
    assert!(p.stderr.contains("fix loop loop-") && p.stderr.contains("opened"), "{}", p.stderr);
    let st = lx.loop_status();
    assert_eq!(st["state"], "open");
    let run_dir = fs::canonicalize(&lx.run).unwrap();
    assert_eq!(st["loop"]["run_dir"], run_dir.to_str().unwrap());
    assert_eq!(st["loop"]["attempt"], 1);
    let id = st["loop"]["id"].as_str().unwrap().to_string();

    lx.repo.write("free.rs", "two\n");
    lx.repo.commit_all("stray in the loop");
    // A different PREMERGE_RUN_DIR in the push's environment neither moves nor disables it.
    let elsewhere = lx.repo.dir.path().join("elsewhere");
    let p = lx.push(&["main"], &[("PREMERGE_RUN_DIR", elsewhere.to_str().unwrap())]);
    assert_ne!(p.code, 0, "{}", p.stderr);
    for needle in [
        "premerge fence: stray: free.rs",
        &format!("fix loop {id} is open"),
        &format!("run directory {}", run_dir.display()),
        "attempt 1",
        "premerge loop close",
        "PREMERGE=0 git push",
        "PREMERGE_RUN_DIR=",
    ] {
        assert!(p.stderr.contains(needle), "refusal names `{needle}`:\n{}", p.stderr);
    }
    // Skip once.
    lx.push(&["main"], &[("PREMERGE", "0")]).expect_code(0);
    lx.repo.write("free.rs", "three\n");
    lx.repo.commit_all("another stray");

    // CONTINUE keeps it open; a later attempt advances the same loop; STOP_* closes it.
    assert_eq!(lx.converge(1).expect_code(0).stdout, "CONTINUE\n");
    assert_eq!(lx.loop_status()["state"], "open");
    lx.plan(2, &[]).expect_code(0);
    let st = lx.loop_status();
    assert_eq!((st["loop"]["id"].as_str().unwrap(), st["loop"]["attempt"].as_u64()), (id.as_str(), Some(2)));
    assert_ne!(lx.push(&["main"], &[]).code, 0, "attempt 2 allows nothing");
    let c = lx.converge(2);
    assert_eq!(c.expect_code(0).stdout, "STOP_GREEN\n");
    assert!(c.stderr.contains(&format!("closed fix loop {id}")), "{}", c.stderr);
    let st = lx.loop_status();
    assert_eq!(st["state"], "closed");
    assert_eq!(st["loop"]["closed_by"], "converge STOP_GREEN");
    lx.push(&["main"], &[]).expect_code(0);
    // Converging again changes nothing about the closed loop.
    lx.converge(2).expect_code(0);
    assert_eq!(lx.loop_status()["loop"]["closed_by"], "converge STOP_GREEN");

    // The operator's close.
    lx.plan(1, &["a.rs"]).expect_code(0);
    let id2 = lx.loop_status()["loop"]["id"].as_str().unwrap().to_string();
    lx.repo.write("free.rs", "four\n");
    lx.repo.commit_all("stray in the second loop");
    assert_ne!(lx.push(&["main"], &[]).code, 0);
    let text = lx.repo.premerge(&["loop", "status"]).expect_code(0).stdout.clone();
    assert!(
        text.contains(&format!("fix loop {id2}: open")) && text.contains("close it: premerge loop close"),
        "{text}"
    );
    let closed = lx.repo.premerge(&["loop", "close", "--format", "json"]).expect_code(0).json();
    assert_eq!((closed["closed"].as_bool(), closed["loop"]["id"].as_str()), (Some(true), Some(id2.as_str())));
    assert_eq!(lx.repo.premerge(&["loop", "close"]).expect_code(0).stdout, "no open fix loop: nothing to close\n");
    lx.push(&["main"], &[]).expect_code(0);

    // A record premerge cannot read fails closed, names what to do, and `loop close` resets it.
    lx.plan(1, &["a.rs"]).expect_code(0);
    let record = PathBuf::from(lx.repo.git(&["rev-parse", "--git-common-dir"]));
    let record = lx.repo.root.join(record).join("premerge/fix-loop.json");
    fs::write(&record, "{\"schema_version\":1,").unwrap();
    lx.repo.write("free.rs", "five\n");
    lx.repo.commit_all("stray with a torn record");
    let p = lx.push(&["main"], &[]);
    assert_ne!(p.code, 0);
    assert!(
        p.stderr.contains("fix loop record unreadable") && p.stderr.contains("premerge loop close"),
        "{}",
        p.stderr
    );
    assert_eq!(lx.loop_status()["state"], "unreadable");
    lx.repo.premerge(&["loop", "close"]).expect_code(0);
    lx.push(&["main"], &[]).expect_code(0);
}

#[test]
fn every_range_command_takes_base_head_and_a_positional_range() {
    let lx = Lx::new(&[("a.rs", "a\n"), ("b.rs", "b\n")]);
    let base = lx.repo.git(&["rev-parse", "HEAD"]);
    lx.repo.write("a.rs", "a2\n");
    lx.repo.commit_all("one");
    lx.repo.write("b.rs", "b2\n");
    let head = lx.repo.commit_all("two");
    let range = format!("{base}..{head}");
    for cmd in [
        &["diff", "--format", "json"][..],
        &["scan", "--no-memory", "--format", "json"],
        &["seams", "--format", "json"],
    ] {
        let flags =
            lx.repo.premerge(&[cmd, &["--base", &base, "--head", &head]].concat()).expect_code(0).stdout.clone();
        let pos = lx.repo.premerge(&[cmd, &[range.as_str()]].concat()).expect_code(0).stdout.clone();
        assert_eq!(pos, flags, "{cmd:?}");
        let r = lx.repo.premerge(&[cmd, &[range.as_str(), "--base", &base]].concat());
        r.expect_code(2);
        lx.repo.premerge(&[cmd, &["nonsense"]].concat()).expect_code(2);
    }
    // `A...B` starts at the merge base.
    let sym = lx.repo.premerge(&["diff", &format!("{head}...{base}")]).expect_code(0).stdout.clone();
    assert_eq!(sym, "0 file(s) changed, +0 -0\n");

    lx.plan(1, &["a.rs"]).expect_code(0);
    let run = lx.run.to_str().unwrap();
    let fence =
        |args: &[&str]| lx.repo.premerge(&[&["fence", "check", "--attempt", "1", "--run-dir", run], args].concat());
    let pos = fence(&[&range]);
    pos.expect_code(1);
    assert_eq!(pos.stdout, "stray: b.rs\n");
    assert_eq!(fence(&["--range", &range]).expect_code(1).stdout, pos.stdout);
    assert_eq!(fence(&["--base", &base, "--head", &head]).expect_code(1).stdout, pos.stdout);
    assert_eq!(fence(&["--base", &base, "--head", &format!("{head}~1")]).expect_code(0).code, 0);
    fence(&[&range, "--staged"]).expect_code(2);
    fence(&["--range", "nonsense"]).expect_code(2);
    fence(&[]).expect_code(2);
}

#[test]
fn collisions_lists_each_pair_touching_a_path_since_the_target() {
    let lx = Lx::new(&[("x.rs", "x\n"), ("y.rs", "y\n"), ("w.rs", "w\n")]);
    let branch = |name: &str, f: &dyn Fn(&TestRepo)| {
        lx.repo.git(&["checkout", "-q", "-b", name, "main"]);
        f(&lx.repo);
        lx.repo.commit_all(name);
    };
    branch("p", &|r| r.write("x.rs", "p\n"));
    branch("q", &|r| {
        r.git(&["mv", "y.rs", "z.rs"]);
    });
    branch("r", &|r| r.write("y.rs", "r\n"));
    branch("s", &|r| r.write("w.rs", "s\n"));
    // main moves on after the branches forked: its own changes do not count.
    lx.repo.git(&["checkout", "-q", "main"]);
    lx.repo.write("x.rs", "main\n");
    lx.repo.commit_all("main moves");

    let r = lx.repo.premerge(&["collisions", "--target", "main", "p", "q", "r", "s"]);
    r.expect_code(1);
    assert_eq!(
        r.stdout,
        "collision: q and r: 1 path(s)\n  y.rs\n1 of 6 pair(s) collide against main: rebase or serialise them before fixers start\n"
    );
    let j = lx.repo.premerge(&["collisions", "--target", "main", "p", "q", "r", "s", "--format", "json"]);
    let j = j.expect_code(1).json();
    assert_eq!(j["collisions"], json!([{"branches": ["q", "r"], "paths": ["y.rs"]}]));
    assert_eq!(j["pairs_checked"], 6);
    assert_eq!(j["branches"][1]["paths"], 2, "a rename counts both of its paths");
    // The same bytes under other locales and time zones.
    let args = ["collisions", "--target", "main", "p", "q", "r", "s", "--format", "json"];
    let c_bytes = lx.repo.premerge(&args).stdout_bytes;
    for (lc, tz) in [("tr_TR.UTF-8", "Asia/Kolkata"), ("de_DE.UTF-8", "America/St_Johns"), ("C.UTF-8", "UTC")] {
        let mut c = lx.repo.premerge_cmd(args);
        c.env("LC_ALL", lc).env("LANG", lc).env("TZ", tz);
        assert_eq!(run_with_stdin(&mut c, b"").stdout_bytes, c_bytes, "{lc} {tz}");
    }
    let ok = lx.repo.premerge(&["collisions", "--target", "main", "p", "s"]);
    assert_eq!(ok.expect_code(0).stdout, "no collisions: 1 pair(s) of 2 branch(es) against main\n");
    // Bad input: a clear line and exit 2.
    let bad = lx.repo.premerge(&["collisions", "--target", "main", "p", "nope"]);
    bad.expect_code(2);
    assert!(bad.stderr.starts_with("premerge: collisions: branch `nope`"), "{}", bad.stderr);
    let twice = lx.repo.premerge(&["collisions", "--target", "main", "p", "p"]);
    twice.expect_code(2);
    assert!(twice.stderr.contains("given twice"), "{}", twice.stderr);
    lx.repo.premerge(&["collisions", "--target", "nope", "p"]).expect_code(2);
    lx.repo.premerge(&["collisions", "--target", "main"]).expect_code(2);
}
