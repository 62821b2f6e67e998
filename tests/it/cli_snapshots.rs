//! Snapshots of the real binary's command line, pinned byte for byte with insta-cmd:
//! every `--help`, `premerge demo` and the files it leaves, `premerge config` over a
//! file, git config and the environment, `premerge schema`, and representative runs of
//! diff, scan, plan, blocked, fence, converge, show, gate and proposal on fixed inputs
//! in a repository with fixed commit dates and authors. Only what must vary (temporary
//! paths, the binary's path, random ids, durations) is normalised, by
//! `common::snapshot_settings`.
//!
//! A change of any output shows as a snapshot diff: review it with `cargo insta review`
//! (or read the `.snap.new` file next to the snapshot) and accept it only when the change
//! is meant.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{TestRepo, assert_cli_snapshot, assert_text_snapshot, render_sqlite, render_tree};

/// Run premerge in `r` with `args` and `stdin`, and snapshot the run as `name`.
#[track_caller]
fn snap(name: &str, r: &TestRepo, args: &[&str], stdin: &[u8]) {
    assert_cli_snapshot(name, r, r.premerge_cmd(args), stdin);
}

/// The subcommands listed under `Commands:` in a help text, `help` left out.
fn subcommands(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in help.lines() {
        if line == "Commands:" {
            inside = true;
            continue;
        }
        if inside {
            if line.is_empty() || !line.starts_with("  ") {
                break;
            }
            // A name is indented by two spaces; wrapped descriptions by more.
            if let Some(name) = line.strip_prefix("  ").and_then(|l| l.split_whitespace().next())
                && !line.starts_with("   ")
                && name != "help"
            {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// `--help` of the binary and of every command and subcommand, found by walking the
/// `Commands:` lists, so a command added later gets its snapshot too; and `--version`.
#[test]
fn help_of_every_command() {
    let r = TestRepo::new();
    let mut queue: Vec<Vec<String>> = vec![vec![]];
    let mut seen = 0;
    while let Some(path) = queue.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let run = r.premerge(&args);
        run.expect_code(0);
        for sub in subcommands(&run.stdout).into_iter().rev() {
            let mut p = path.clone();
            p.push(sub);
            queue.push(p);
        }
        let name = if path.is_empty() { "help".to_string() } else { format!("help__{}", path.join("_")) };
        snap(&name, &r, &args, b"");
        seen += 1;
    }
    // premerge has 54 commands and subcommands (the binary included) today.
    assert!(seen >= 54, "the walk found only {seen} commands");
    snap("version", &r, &["--version"], b"");
}

/// `premerge demo --keep`: its output, and every file the demo leaves in its scratch
/// repository (git's own files but hooks left out; SQLite databases as their schema and
/// row counts).
#[test]
fn demo_output_and_the_files_it_leaves() {
    let r = TestRepo::new();
    let tmp = r.dir.path().join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let mut cmd = r.premerge_cmd(["demo", "--keep"]);
    cmd.env("TMPDIR", &tmp);
    assert_cli_snapshot("demo", &r, cmd, b"");
    let scratch: Vec<PathBuf> = fs::read_dir(&tmp).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(scratch.len(), 1, "one scratch directory: {scratch:?}");
    let repo = scratch[0].join("repo");
    let tree = render_tree(&repo, &|rel: &str| {
        let kept = !rel.starts_with(".git/")
            || rel.starts_with(".git/premerge")
            || (rel.starts_with(".git/hooks") && !rel.ends_with(".sample"));
        !kept || rel.ends_with(".db")
    });
    assert_text_snapshot("demo_files", &[r.dir.path()], &tree);
    let db = repo.join(".git/premerge/premerge.db");
    assert_text_snapshot("demo_database", &[r.dir.path()], &render_sqlite(&db));
}

/// `premerge config` with a value from each layer: `premerge.toml`, local git config
/// and the environment, each overriding the one before for one key.
#[test]
fn config_shows_each_value_and_its_source() {
    let mut r = TestRepo::new();
    r.write(
        "premerge.toml",
        "[plan]\nmax_per_wave = 4\n\n[scan]\nmax_file_bytes = 4096\nignore = [\"vendor/**\"]\n\n[scan.severity]\nrust-assert-removed = \"low\"\n\n[gate]\nmode = \"shadow\"\n",
    );
    r.commit_all("config");
    r.git(&["config", "premerge.scan.maxFileBytes", "8192"]);
    r.git(&["config", "premerge.gate.mode", "enforce"]);
    r.git(&["config", "premerge.scan.severity.go-pointer-widened", "off"]);
    r.env.push(("PREMERGE_GATE_MODE".into(), "off".into()));
    r.env.push(("PREMERGE_FENCE_MODE".into(), "shadow".into()));
    snap("config_text", &r, &["config"], b"");
    snap("config_json", &r, &["config", "--format", "json"], b"");
    snap("config_keys", &r, &["config", "--keys"], b"");
    // An unknown key is an error naming the file and the key.
    r.write("premerge.toml", "[plan]\nmax_per_wav = 4\n");
    snap("config_unknown_key", &r, &["config"], b"");
}

#[test]
fn schema_of_every_artefact() {
    let r = TestRepo::new();
    for artefact in ["blocked-on", "classified", "events", "findings", "fix-waves"] {
        snap(&format!("schema_{}", artefact.replace('-', "_")), &r, &["schema", artefact], b"");
    }
}

/// A repository whose last commit widens a field, removes an assertion, renames,
/// deletes and adds files.
fn changed_repo() -> TestRepo {
    let r = TestRepo::new();
    r.write(
        "src/limits.rs",
        "pub struct Page {\n    pub size: u16,\n}\n\npub fn set_size(p: &mut Page, n: u16) {\n    assert!(n <= 500);\n    p.size = n;\n}\n",
    );
    r.write("src/render.rs", "pub fn title() -> &'static str {\n    \"weekly report\"\n}\n");
    r.write("notes.txt", "alpha\nbeta\ngamma\ndelta\n");
    r.write("old.txt", "to be removed\n");
    r.commit_all("base");
    r.write(
        "src/limits.rs",
        "pub struct Page {\n    pub size: u64,\n}\n\npub fn set_size(p: &mut Page, n: u64) {\n    p.size = n;\n}\n",
    );
    r.git(&["mv", "notes.txt", "docs-notes.txt"]);
    fs::remove_file(r.root.join("old.txt")).unwrap();
    r.write("src/extra.rs", "pub fn extra() -> u8 {\n    7\n}\n");
    r.commit_all("widen the page size");
    r
}

#[test]
fn diff_of_a_fixed_change() {
    let r = changed_repo();
    snap("diff_text", &r, &["diff"], b"");
    snap("diff_json", &r, &["diff", "--format", "json"], b"");
    r.write("src/render.rs", "pub fn title() -> &'static str {\n    \"monthly report\"\n}\n");
    r.write("untracked.txt", "new\n");
    snap("diff_worktree", &r, &["diff", "--worktree"], b"");
    snap("diff_bad_revision", &r, &["diff", "--base", "no-such-rev"], b"");
}

#[test]
fn scan_of_a_fixed_change_and_the_memories_it_writes() {
    let r = changed_repo();
    snap("scan_json_no_memory", &r, &["scan", "--format", "json", "--no-memory"], b"");
    snap("scan_text", &r, &["scan", "--issue", "7"], b"");
    snap("scan_again_already_recorded", &r, &["scan", "--issue", "7"], b"");
    snap("memory_list", &r, &["memory", "list"], b"");
    snap("memory_search_file", &r, &["memory", "search", "--file", "src/limits.rs"], b"");
}

/// The fix loop on fixed findings: plan, blocked record, a carried plan, fence
/// allowed and check, converge and show; then every artefact of the run directory.
#[test]
fn plan_blocked_fence_converge_and_show_on_fixed_findings() {
    let r = changed_repo();
    let run_dir = r.dir.path().join("run");
    let run = run_dir.display().to_string();
    let findings = r.dir.path().join("findings-1.json");
    fs::write(
        &findings,
        r#"[
  {"file": "src/limits.rs", "line": 6, "summary": "set_size accepts any size", "failure_scenario": "a page of 10^9 rows", "severity": "blocker"},
  {"file": "src/limits.rs", "line": 2, "summary": "size is u64", "failure_scenario": "allocation blows up", "severity": "blocker"},
  {"file": "src/extra.rs", "line": 2, "summary": "magic number", "failure_scenario": "unclear", "severity": "suggestion"},
  {"file": "src/render.rs", "line": 2, "summary": "title is hard-coded", "failure_scenario": "cannot translate"},
  {"file": "../outside.rs", "line": 1, "summary": "outside the repository", "failure_scenario": "x"}
]
"#,
    )
    .unwrap();
    let f = findings.display().to_string();
    snap("plan_attempt_1", &r, &["plan", "--attempt", "1", "--findings", &f, "--run-dir", &run], b"");
    snap(
        "blocked_record",
        &r,
        &["blocked", "record", "--attempt", "1", "--from-file", "src/limits.rs", "--run-dir", &run],
        br#"{"blocked_on_file": [{"file": "src/render.rs", "reason": "the title must show the page size"}, {"file": "/etc/passwd", "reason": "hostile"}]}"#,
    );
    snap(
        "plan_attempt_2_carried",
        &r,
        &["plan", "--attempt", "2", "--findings", &f, "--carry-blocked", "--run-dir", &run],
        b"",
    );
    snap("fence_allowed", &r, &["fence", "allowed", "--attempt", "2", "--run-dir", &run], b"");
    r.write("src/limits.rs", "pub struct Page {\n    pub size: u16,\n}\n");
    r.write("stray.txt", "not in the plan\n");
    snap("fence_check_stray", &r, &["fence", "check", "--attempt", "2", "--worktree", "--run-dir", &run], b"");
    fs::remove_file(r.root.join("stray.txt")).unwrap();
    snap("fence_check_clean", &r, &["fence", "check", "--attempt", "2", "--worktree", "--run-dir", &run], b"");
    snap("converge_json", &r, &["converge", "--attempt", "2", "--json", "--run-dir", &run], b"");
    snap("converge_word", &r, &["converge", "--attempt", "2", "--run-dir", &run], b"");
    snap("show_waves", &r, &["show", "waves", "--attempt", "2", "--run-dir", &run], b"");
    snap("show_attempt", &r, &["show", "attempt", "--attempt", "2", "--run-dir", &run], b"");
    snap("plan_missing_findings", &r, &["plan", "--attempt", "3", "--findings", "nope.json", "--run-dir", &run], b"");
    assert_text_snapshot("run_dir_files", &[r.dir.path()], &render_tree(&run_dir, &|_: &str| false));
}

fn stop_payload(session: &str, message: &str) -> Vec<u8> {
    serde_json::json!({"session_id": session, "transcript_path": "/nonexistent/t.jsonl", "cwd": "/ignored",
        "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": false,
        "last_assistant_message": message})
    .to_string()
    .into_bytes()
}

/// The stop gate on fixed payloads: session start, a drift stop in shadow and in
/// enforce, a legitimate stop, malformed input, then the log and the status.
#[test]
fn gate_evaluate_on_fixed_payloads() {
    let r = TestRepo::new();
    r.write("src/lib.rs", "pub fn a() {}\n");
    r.write("docs/plans/work.md", "# Plan\n- [x] write the parser\n- [ ] test the parser\n");
    r.commit_all("plan");
    let start = br#"{"session_id": "s-fixed", "hook_event_name": "SessionStart", "source": "startup"}"#;
    snap("gate_session_start", &r, &["gate", "session-start"], start);
    let drift = stop_payload("s-fixed", "The parser is written. I'll stop here and continue in a fresh session.");
    snap("gate_evaluate_shadow", &r, &["gate", "evaluate"], &drift);
    snap("gate_set_enforce", &r, &["gate", "set", "--mode", "enforce"], b"");
    snap("gate_evaluate_enforce_drift", &r, &["gate", "evaluate"], &drift);
    let done = stop_payload("s-fixed", "All steps are complete and the tests pass.");
    snap("gate_evaluate_enforce_done", &r, &["gate", "evaluate"], &done);
    snap("gate_evaluate_malformed", &r, &["gate", "evaluate"], b"{not json");
    snap("gate_log", &r, &["gate", "log"], b"");
    snap("gate_status", &r, &["gate", "status"], b"");
}

/// Proposals on fixed evidence: emit, the same stripe again (halt), a second stripe,
/// list in both formats, apply and reject; then the proposal files.
#[test]
fn proposal_emit_list_apply_reject_on_fixed_evidence() {
    let r = TestRepo::new();
    r.write("README.md", "fixed\n");
    r.commit_all("first");
    let run = r.dir.path().join("run").display().to_string();
    let ev = r.dir.path().join("evidence.json");
    fs::write(
        &ev,
        r#"[{"id": "r1/SECURITY/1", "title": "Token logged", "summary": "src/auth.rs: token in a log line"},
            {"id": "r1/SECURITY/2", "title": "token logged", "summary": "src/session.rs: token in a log line"}]"#,
    )
    .unwrap();
    let ev = ev.display().to_string();
    let emit =
        ["proposal", "emit", "--scope", "review", "--signal", "repeat_seam", "--evidence", &ev, "--run-dir", &run];
    snap("proposal_emit", &r, &emit, b"");
    let mut again = emit.to_vec();
    again.extend(["--workflow", "wf-1"]);
    snap("proposal_emit_repeat_halts", &r, &again, b"");
    let stdin_emit =
        ["proposal", "emit", "--scope", "ci/lint", "--signal", "TRACE-001", "--evidence", "-", "--run-dir", &run];
    snap(
        "proposal_emit_stdin_suppressed",
        &r,
        &stdin_emit,
        br#"{"rows": [{"id": "lint-1", "title": "unused import", "summary": "src/a.rs"}]}"#,
    );
    let second =
        ["proposal", "emit", "--scope", "ci/lint", "--signal", "repeat_seam", "--evidence", "-", "--run-dir", &run];
    snap(
        "proposal_emit_stdin",
        &r,
        &second,
        br#"{"rows": [{"id": "lint-1", "title": "Unused import", "summary": "src/a.rs"}, {"id": "lint-2", "title": "unused import", "summary": "src/b.rs"}]}"#,
    );
    snap(
        "proposal_emit_bad_scope",
        &r,
        &["proposal", "emit", "--scope", "Bad Scope", "--signal", "x", "--evidence", &ev],
        b"",
    );
    snap("proposal_list", &r, &["proposal", "list", "--run-dir", &run], b"");
    snap("proposal_list_json", &r, &["proposal", "list", "--format", "json", "--run-dir", &run], b"");
    snap("drain_halt", &r, &["drain", "--run-dir", &run], b"");
    let list = r.premerge(&["proposal", "list", "--format", "json", "--run-dir", &run]);
    let stripes: Vec<String> = list
        .stdout
        .lines()
        .flat_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .flat_map(|v| {
            let rows = v.get("proposals").cloned().unwrap_or(v);
            rows.as_array().cloned().unwrap_or_default()
        })
        .filter_map(|p| p.get("stripe").and_then(|s| s.as_str()).map(str::to_string))
        .collect();
    assert_eq!(stripes.len(), 2, "two open proposals: {}", list.stdout);
    snap("proposal_apply", &r, &["proposal", "apply", &stripes[0], "--run-dir", &run], b"");
    snap(
        "proposal_reject",
        &r,
        &["proposal", "reject", &stripes[1], "--reason", "not a seam: two files", "--run-dir", &run],
        b"",
    );
    snap("proposal_show", &r, &["proposal", "show", &stripes[0]], b"");
    snap("drain_clear", &r, &["drain", "--run-dir", &run], b"");
    let root: &Path = &r.root.join("docs/proposals");
    assert_text_snapshot("proposal_files", &[r.dir.path()], &render_tree(root, &|_: &str| false));
    assert_text_snapshot(
        "proposal_events",
        &[r.dir.path()],
        &fs::read_to_string(r.dir.path().join("run/events.jsonl")).unwrap(),
    );
}
