//! Many premerge processes at once on one clone's state (issue 27, D3): real `git
//! push` processes running the real hooks, in one clone and from worktrees sharing
//! its state, and parallel `premerge scan` runs. Every guard memory is kept (counted
//! with `premerge memory list`), every run exits 0, and a damaged database costs the
//! memory write only.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::common::{Run, TestRepo, bin, run_with_stdin, write_exec};

/// Branches pushed at once: the probe's 20-way case.
const PARALLEL: usize = 20;
/// Files each branch changes (one memory each): 100 memories across 20 branches.
const FILES_PER_BRANCH: usize = 5;

fn py(i: usize, guarded: bool) -> String {
    let guard = if guarded { format!("    assert x > {i}\n") } else { String::new() };
    format!("def g{i}(x):\n{guard}    return x\n")
}

/// A clone with a bare `origin` holding `main`, and `branches` local branches
/// `b0..bN`, each removing the asserts of its own five Python files: five findings,
/// five guard memories per branch, none shared. The hooks are the plainest shims
/// (`exec premerge hook ...`), installed in the common directory.
fn clone_with_branches(branches: usize) -> (TestRepo, String) {
    let r = TestRepo::new();
    for i in 0..branches * FILES_PER_BRANCH {
        r.write(&format!("f{i}.py"), py(i, true));
    }
    let base = r.commit_all("base");
    r.add_bare_remote("origin");
    r.git(&["push", "-q", "origin", "main"]);
    for b in 0..branches {
        r.git(&["checkout", "-q", "-b", &format!("b{b}"), &base]);
        for i in b * FILES_PER_BRANCH..(b + 1) * FILES_PER_BRANCH {
            r.write(&format!("f{i}.py"), py(i, false));
        }
        r.commit_all(&format!("branch {b}"));
    }
    r.git(&["checkout", "-q", "main"]);
    let hooks = PathBuf::from(r.git(&["rev-parse", "--git-common-dir"]));
    let hooks = if hooks.is_absolute() { hooks } else { r.root.join(hooks) }.join("hooks");
    for name in ["pre-push", "post-merge"] {
        write_exec(&hooks.join(name), &format!("#!/bin/sh\nexec '{}' hook {name} \"$@\"\n", bin().display()));
    }
    (r, base)
}

fn spawn(mut c: Command) -> Child {
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c.spawn().expect("process starts")
}

/// Wait for every child; each must exit 0 without "database is locked".
#[track_caller]
fn all_succeed(children: Vec<Child>, what: &str) -> Vec<String> {
    let mut outs = Vec::new();
    for (i, c) in children.into_iter().enumerate() {
        let o = c.wait_with_output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "{what} {i}: {:?}\n--- stdout\n{stdout}\n--- stderr\n{stderr}", o.status);
        assert!(!stderr.contains("locked"), "{what} {i} lost its memories to a lock:\n{stderr}");
        outs.push(format!("{stdout}{stderr}"));
    }
    outs
}

fn memory_count(r: &TestRepo) -> usize {
    let run = r.premerge(&["memory", "list", "--format", "json"]);
    run.expect_code(0).json()["memories"].as_array().unwrap().len()
}

/// What `premerge memory list` says on its last line, as a person counts them.
fn memory_list_total(r: &TestRepo) -> String {
    let run = r.premerge(&["memory", "list"]);
    run.expect_code(0).stdout.lines().last().unwrap_or_default().to_string()
}

/// 20 `git push` processes of 20 branches from one clone, all at once: every hook
/// writes its five memories (the probe kept 20-70% of them).
#[test]
fn twenty_parallel_pushes_in_one_clone_keep_every_memory() {
    let (r, _) = clone_with_branches(PARALLEL);
    let children: Vec<Child> =
        (0..PARALLEL).map(|b| spawn(r.git_cmd(["push", "-q", "origin", &format!("b{b}")]))).collect();
    let outs = all_succeed(children, "push");
    for (b, out) in outs.iter().enumerate() {
        assert!(out.contains("premerge widening scan: 5 finding(s), 5 guard memory(ies) written"), "push {b}:\n{out}");
    }
    r.premerge(&["status", "--wait"]).expect_code(0);
    assert_eq!(memory_count(&r), PARALLEL * FILES_PER_BRANCH);
    assert_eq!(memory_list_total(&r), format!("{} guard memory(ies)", PARALLEL * FILES_PER_BRANCH));
}

/// 20 worktrees of one clone share its state (`<common dir>/premerge`): 20 pushes
/// from them at once keep every memory (the probe kept 40 of 200).
#[test]
fn twenty_pushes_from_worktrees_sharing_state_keep_every_memory() {
    let (r, _) = clone_with_branches(PARALLEL);
    let trees: Vec<PathBuf> = (0..PARALLEL)
        .map(|b| {
            let wt = r.dir.path().join(format!("wt{b}"));
            r.git(&["worktree", "add", "-q", wt.to_str().unwrap(), &format!("b{b}")]);
            wt
        })
        .collect();
    let children: Vec<Child> = trees
        .iter()
        .enumerate()
        .map(|(b, wt)| {
            let mut c = r.git_cmd(["push", "-q", "origin", &format!("b{b}")]);
            c.current_dir(wt);
            spawn(c)
        })
        .collect();
    all_succeed(children, "worktree push");
    let state = r.state_dir();
    assert!(state.join("premerge.db").is_file(), "one state, in the common directory");
    for wt in &trees {
        assert!(!Path::new(wt).join(".git/premerge").exists());
    }
    r.premerge(&["status", "--wait"]).expect_code(0);
    assert_eq!(memory_count(&r), PARALLEL * FILES_PER_BRANCH);
}

/// 10 `premerge scan --issue N` of 10 ranges at once all exit 0 and keep every
/// memory (3 of 10 exited 2 in the probe).
#[test]
fn ten_parallel_scans_all_exit_0() {
    const SCANS: usize = 10;
    let (r, base) = clone_with_branches(SCANS);
    let children: Vec<Child> = (0..SCANS)
        .map(|b| spawn(r.premerge_cmd(["scan", "--issue", "27", "--base", &base, "--head", &format!("b{b}")])))
        .collect();
    let outs = all_succeed(children, "scan");
    for out in &outs {
        assert!(out.contains("5 guard memory(ies) written"), "{out}");
    }
    assert_eq!(memory_count(&r), SCANS * FILES_PER_BRANCH);
}

/// A `premerge.db` of garbage bytes costs the memory write only: the scan's findings
/// still print, with one warning, and the hook and the scan exit 0.
#[test]
fn a_damaged_database_costs_the_memories_not_the_findings() {
    let (r, base) = clone_with_branches(1);
    std::fs::create_dir_all(r.state_dir()).unwrap();
    let junk: Vec<u8> = (0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(r.state_dir().join("premerge.db"), &junk).unwrap();
    let scan = r.premerge(&["scan", "--issue", "27", "--base", &base, "--head", "b0"]);
    scan.expect_code(0);
    assert!(scan.stdout.contains("5 finding(s)"), "{}", scan.stdout);
    assert!(scan.stdout.contains("f0.py"), "{}", scan.stdout);
    let warnings: Vec<&str> = scan.stderr.lines().filter(|l| l.contains("guard memories not written")).collect();
    assert_eq!(warnings.len(), 1, "{}", scan.stderr);
    // The same through a real push: the findings are printed and the push goes on.
    let push: Run = run_with_stdin(&mut r.git_cmd(["push", "origin", "b0"]), b"");
    push.expect_code(0);
    // git gives a pre-push hook its own stdout; either way, both streams are read.
    let both = format!("{}{}", push.stdout, push.stderr);
    assert!(both.contains("premerge widening scan: 5 finding(s)"), "{both}");
    assert!(both.contains("guard memories not written"), "{both}");
    assert_eq!(std::fs::read(r.state_dir().join("premerge.db")).unwrap(), junk, "the damaged file is left as it was");
}
