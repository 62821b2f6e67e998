//! Stripes and proposals: emit or halt, the operator workflow, drain, bad input.

use std::fs;
use std::path::PathBuf;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::common::{Run, TestRepo, file_names};

const SEAM_ROWS: &str = r#"[{"id":"r1","title":"Missing error handling","summary":"src/a.rs"},
 {"id":"r2","title":"missing  ERROR-handling","summary":"src/b.rs"}]"#;
/// sha256(`["missing error handling"]`)[..8], computed outside premerge.
const SEAM_STRIPE: &str = "review:repeat_seam:09a7523c";

fn repo_with(evidence: &str) -> TestRepo {
    let r = TestRepo::new();
    r.write("ev.json", evidence);
    r
}

fn emit(r: &TestRepo, extra: &[&str]) -> Run {
    let mut args = vec!["proposal", "emit", "--scope", "review", "--signal", "repeat_seam", "--evidence", "ev.json"];
    args.extend_from_slice(extra);
    r.premerge(&args)
}

fn proposals(r: &TestRepo, state: &str) -> Vec<String> {
    file_names(&r.root.join("docs/proposals").join(state))
}

fn events(r: &TestRepo) -> Vec<Value> {
    crate::common::events_in(&r.state_dir().join("run"))
}

#[test]
fn first_emit_writes_one_proposal_with_every_section() {
    let r = repo_with(SEAM_ROWS);
    let out = emit(&r, &["--workflow", "wf-1"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["outcome"], "emitted");
    assert_eq!(v["stripe"], SEAM_STRIPE);
    let name = format!("{SEAM_STRIPE}-20260102T030405Z.md");
    assert_eq!(proposals(&r, "open"), vec![name.clone()]);
    assert_eq!(v["path"].as_str().unwrap(), r.root.join("docs/proposals/open").join(&name).to_str().unwrap());
    assert!(out.stdout.ends_with("}\n") && out.stdout.starts_with(r#"{"outcome":"#), "canonical line: {}", out.stdout);
    let text = fs::read_to_string(r.root.join("docs/proposals/open").join(&name)).unwrap();
    assert!(text.starts_with("---\nkind: refinement_proposal@1\n"), "{text}");
    assert!(text.contains(&format!("## Stripe\n\n{SEAM_STRIPE}\n")), "{text}");
    for s in ["## Triggering signal", "## Evidence rows", "## Suggested change", "## Risk class"] {
        assert!(text.contains(s), "{s} missing:\n{text}");
    }
    assert!(text.contains("| r1 | title=missing error handling — src/a.rs |"), "{text}");
    assert!(text.contains("| r2 |"), "{text}");
    let suggested = text.split("## Suggested change\n").nth(1).unwrap().split("## Risk class").next().unwrap();
    assert!(suggested.trim().len() > 20, "suggested change is never empty: {suggested:?}");
    let ev = events(&r);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["kind"], "refinement_proposal_emitted");
    assert_eq!(ev[0]["stripe"], SEAM_STRIPE);
    assert_eq!(ev[0]["scope"], "review");
    assert_eq!(ev[0]["signal"], "repeat_seam");
    assert_eq!(ev[0]["evidence_row_ids"], json!(["r1", "r2"]));
    assert_eq!(ev[0]["proposal_path"], v["path"]);
}

#[test]
fn repeat_while_open_halts_without_a_new_file() {
    let r = repo_with(SEAM_ROWS);
    let first = emit(&r, &[]).expect_code(0).json();
    // Different row ids and order, same class of problem.
    r.write("ev.json", r#"{"rows":[{"id":"n9","title":"MISSING error handling!"}]}"#);
    let out = emit(&r, &["--workflow", "wf-2"]);
    out.expect_code(1);
    let v = out.json();
    assert_eq!(v["outcome"], "stripe_repeat_halt");
    assert_eq!(v["stripe"], SEAM_STRIPE);
    assert_eq!(v["path"], first["path"]);
    assert_eq!(proposals(&r, "open").len(), 1);
    let ev = events(&r);
    assert_eq!(ev.len(), 2);
    assert_eq!(ev[1]["kind"], "stripe_repeat_halt");
    assert_eq!(ev[1]["stripe"], SEAM_STRIPE);
    assert_eq!(ev[1]["existing_proposal_path"], first["path"]);
    assert_eq!(ev[1]["new_evidence_row_ids"], json!(["n9"]));
    assert_eq!(ev[1]["halted_workflow_id"], "wf-2");
}

#[test]
fn zero_qualifying_rows_are_suppressed_with_a_reason() {
    let r = repo_with(r#"[{"id":"a","summary":"no title"},{"id":"b","title":""}]"#);
    let out = emit(&r, &[]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(
        v,
        json!({"outcome": "suppressed", "stripe": null, "path": null,
               "reason": {"code": "no_qualifying_rows", "rows": 2, "ignored": 2, "required_fields": ["title"]}})
    );
    assert!(
        out.stderr
            .contains("2 evidence row(s) without the fields signal `repeat_seam` projects (`title`) were ignored"),
        "{}",
        out.stderr
    );
    assert!(proposals(&r, "open").is_empty());
    assert!(events(&r).is_empty());
    let r = repo_with("[]");
    assert_eq!(emit(&r, &[]).expect_code(0).json()["outcome"], "suppressed");
}

#[test]
fn same_stripe_across_processes_repositories_and_row_order() {
    let a = repo_with(SEAM_ROWS);
    let b = repo_with(r#"[{"id":"zz","title":"missing error handling"},{"id":7,"title":"Missing Error Handling"}]"#);
    let sa = emit(&a, &[]).expect_code(0).json()["stripe"].clone();
    let sb = emit(&b, &[]).expect_code(0).json()["stripe"].clone();
    assert_eq!(sa, sb);
    assert_eq!(sa, SEAM_STRIPE);
}

fn sha8(canonical: &str) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(canonical.as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect::<String>()[..8].to_string()
}

#[test]
fn each_signal_hashes_its_documented_projection() {
    let long = "x".repeat(70);
    let x64 = "x".repeat(64);
    // (signal, rows, the canonical projection, the pinned stripe hash)
    let cases: Vec<(&str, Value, String, &str)> = vec![
        (
            "confidence_low_streak",
            json!([{"id":1,"rule_id":"TRACE-002"},{"id":2,"rule_id":"TRACE-001"},{"id":3,"rule_id":"TRACE-002"}]),
            r#"["TRACE-001","TRACE-002"]"#.into(),
            "ee963aa0",
        ),
        (
            "user_correction_streak",
            json!([{"id":"a","audit_kind":"tone"},{"id":"b","audit_kind":"scope"}]),
            r#"["scope","tone"]"#.into(),
            "1dc02a72",
        ),
        (
            "tests_failed",
            json!([{"id":"a","test":"it::b","ts":"2026-01-01T00:00:00Z"},{"id":"b","test":"it::a"}]),
            r#"["it::a","it::b"]"#.into(),
            "cfb5b9d1",
        ),
        (
            "routed_back",
            json!([{"id":"a","task_id":42,"phase":"review"},{"id":"b","task_id":"42","phase":"review"}]),
            r#"[["42","review"]]"#.into(),
            "7dda21e9",
        ),
        (
            "repeat_seam",
            json!([{"id":"a","title":"Missing  Error-Handling"},{"id":"b","title":"missing error handling"}]),
            r#"["missing error handling"]"#.into(),
            "09a7523c",
        ),
        (
            "blocker_recurring",
            json!([{"id":"a","fingerprint":"fp2"},{"id":"b","fingerprint":"fp1"}]),
            r#"["fp1","fp2"]"#.into(),
            "ca0058f8",
        ),
        (
            "fence_violation",
            json!([{"id":"a","path":"src/b.rs"},{"id":"b","path":"src/a.rs"}]),
            r#"["src/a.rs","src/b.rs"]"#.into(),
            "f5cd1434",
        ),
        (
            "widening_repeat",
            json!([{"id":"a","file":"src/query.rs","symbol":"Query.limit","rule":"int-widen","line":3}]),
            r#"[["src/query.rs","Query.limit","int-widen"]]"#.into(),
            "de37e161",
        ),
        (
            "custom_thing",
            json!([{"id":"a","op":"write","path":long},{"id":"b","op":"write","path":format!("{x64}zz")}]),
            // stripe/v2: whole paths (v1 cut both to the same 64 characters).
            format!(r#"[["write","{long}"],["write","{x64}zz"]]"#),
            "a7f2b8f1",
        ),
        (
            "TRACE-001",
            json!([{"id":"c1","clause":"§1.5","summary":"no AC"},{"id":"c2","clause":"§1.3"},{"id":"c3","clause":"§ 1.3"}]),
            r#"["§1.3","§1.5"]"#.into(),
            "39a33edb",
        ),
    ];
    let r = TestRepo::new();
    for (signal, rows, canonical, pinned) in cases {
        assert_eq!(sha8(&canonical), pinned, "{signal}: the pinned hash is SHA-256 of the projection");
        r.write("ev.json", rows.to_string());
        let out = r.premerge(&["proposal", "emit", "--scope", "premerge", "--signal", signal, "--evidence", "ev.json"]);
        out.expect_code(0);
        assert_eq!(out.json()["stripe"], format!("premerge:{signal}:{pinned}"), "{signal}");
    }
    assert_eq!(proposals(&r, "open").len(), 10);
}

#[test]
fn two_racing_emitters_write_exactly_one_proposal() {
    let r = repo_with(SEAM_ROWS);
    for round in 0..3 {
        let root = format!("race{round}");
        let children: Vec<_> = (0..6)
            .map(|_| {
                let mut c = r.premerge_cmd([
                    "proposal",
                    "emit",
                    "--scope",
                    "review",
                    "--signal",
                    "repeat_seam",
                    "--evidence",
                    "ev.json",
                    "--root",
                    &root,
                ]);
                c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
            })
            .collect();
        let outs: Vec<_> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
        let codes: Vec<i32> = outs.iter().map(|o| o.status.code().unwrap()).collect();
        assert_eq!(codes.iter().filter(|c| **c == 0).count(), 1, "{codes:?} {outs:?}");
        assert_eq!(codes.iter().filter(|c| **c == 1).count(), 5, "{codes:?} {outs:?}");
        let open = file_names(&r.root.join(&root).join("open"));
        assert_eq!(open.len(), 1, "{open:?}");
    }
}

fn only_path(r: &TestRepo, state: &str) -> PathBuf {
    let v = proposals(r, state);
    assert_eq!(v.len(), 1, "{state}: {v:?}");
    r.root.join("docs/proposals").join(state).join(&v[0])
}

#[test]
fn apply_reopens_the_stripe() {
    let r = repo_with(SEAM_ROWS);
    emit(&r, &[]).expect_code(0);
    let v = r.premerge(&["proposal", "apply", SEAM_STRIPE]).expect_code(0).json();
    assert_eq!(v["outcome"], "applied");
    assert!(proposals(&r, "open").is_empty());
    let applied = only_path(&r, "applied");
    assert_eq!(v["path"], applied.to_str().unwrap());
    // Same second (fixed clock): the new proposal takes a suffix instead of the
    // applied one's name.
    let again = emit(&r, &[]).expect_code(0).json();
    assert_eq!(again["outcome"], "emitted");
    assert_eq!(proposals(&r, "open"), [format!("{SEAM_STRIPE}-20260102T030405Z-2.md")]);
    // Applying by file name works too.
    let name = proposals(&r, "open")[0].clone();
    r.premerge(&["proposal", "apply", &name]).expect_code(0);
    assert_eq!(proposals(&r, "applied").len(), 2);
    let kinds: Vec<_> = events(&r).iter().map(|e| e["kind"].as_str().unwrap().to_string()).collect();
    assert_eq!(
        kinds,
        ["refinement_proposal_emitted", "proposal_applied", "refinement_proposal_emitted", "proposal_applied"]
    );
}

#[test]
fn reject_appends_the_rationale_and_reopens_the_stripe() {
    let r = repo_with(SEAM_ROWS);
    emit(&r, &[]).expect_code(0);
    r.premerge(&["proposal", "reject", SEAM_STRIPE, "--reason", "   "]).expect_code(2);
    let v = r.premerge(&["proposal", "reject", SEAM_STRIPE, "--reason", "intended: errors bubble up"]);
    assert_eq!(v.expect_code(0).json()["outcome"], "rejected");
    let text = fs::read_to_string(only_path(&r, "rejected")).unwrap();
    assert!(text.ends_with("## Rejection rationale\n\nintended: errors bubble up\n"), "{text}");
    assert!(text.contains("## Risk class"));
    assert!(proposals(&r, "open").is_empty());
    r.premerge(&["proposal", "reject", SEAM_STRIPE, "--reason", "x"]).expect_code(2);
    assert_eq!(emit(&r, &[]).expect_code(0).json()["outcome"], "emitted");
}

#[test]
fn drain_halts_while_a_repeat_is_pending_and_passes_after_resolution() {
    let r = repo_with(SEAM_ROWS);
    let report = r.root.join(".git/premerge/run/DRAIN_HALT.md");
    r.premerge(&["drain"]).expect_code(0);
    emit(&r, &[]).expect_code(0);
    // An open proposal alone is not a halt.
    r.premerge(&["drain"]).expect_code(0);
    assert!(!report.exists());
    emit(&r, &["--workflow", "wf-9"]).expect_code(1);
    let out = r.premerge(&["drain"]);
    out.expect_code(1);
    assert!(out.stdout.contains(SEAM_STRIPE), "{}", out.stdout);
    let text = fs::read_to_string(&report).unwrap();
    assert!(text.contains(SEAM_STRIPE) && text.contains("wf-9"), "{text}");
    assert!(text.contains(&proposals(&r, "open")[0]), "{text}");
    r.premerge(&["proposal", "apply", SEAM_STRIPE]).expect_code(0);
    r.premerge(&["drain"]).expect_code(0);
    assert!(!report.exists(), "a stale halt report is removed");
    // The stripe fires again, is open, repeats: a new pending halt.
    emit(&r, &[]).expect_code(0);
    emit(&r, &[]).expect_code(1);
    r.premerge(&["drain"]).expect_code(1);
    r.premerge(&["proposal", "reject", SEAM_STRIPE, "--reason", "no"]).expect_code(0);
    r.premerge(&["drain"]).expect_code(0);
}

#[test]
fn list_totals_match_the_disk_and_skip_hand_broken_files() {
    let r = repo_with(SEAM_ROWS);
    emit(&r, &[]).expect_code(0);
    r.write("ev.json", r#"[{"id":"f","path":"src/x.rs"}]"#);
    r.premerge(&["proposal", "emit", "--scope", "premerge", "--signal", "fence_violation", "--evidence", "ev.json"])
        .expect_code(0);
    r.premerge(&["proposal", "apply", SEAM_STRIPE]).expect_code(0);
    let broken = "premerge:fence_violation:00000000-20260101T000000Z.md";
    r.write(&format!("docs/proposals/open/{broken}"), "---\nkind: refinement_proposal@1\nstripe: NOT AN ID\n");
    r.write("docs/proposals/rejected/notes.md", "hand-written notes");
    let out = r.premerge(&["proposal", "list", "--format", "json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["totals"], json!({"open": 2, "applied": 1, "rejected": 1, "total": 4, "unparseable": 2}));
    let on_disk = proposals(&r, "open").len() + proposals(&r, "applied").len() + proposals(&r, "rejected").len();
    assert_eq!(v["totals"]["total"], on_disk);
    let listed = v["proposals"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!((listed[0]["status"].as_str(), listed[1]["status"].as_str()), (Some("open"), Some("applied")));
    assert_eq!(listed[1]["stripe"], SEAM_STRIPE);
    assert_eq!(listed[0]["age_seconds"], 0);
    assert_eq!(v["unparseable"].as_array().unwrap().len(), 2);
    assert!(out.stderr.contains(broken) && out.stderr.contains("skipped"), "{}", out.stderr);
    let text = r.premerge(&["proposal", "list"]);
    text.expect_code(0);
    assert!(text.stdout.contains("totals: open 2, applied 1, rejected 1, total 4 (2 unparseable)"), "{}", text.stdout);
    // show by stripe and by file name
    let shown = r.premerge(&["proposal", "show", SEAM_STRIPE]).expect_code(0).stdout.clone();
    assert!(shown.contains(&format!("## Stripe\n\n{SEAM_STRIPE}")));
    let name = proposals(&r, "applied")[0].clone();
    assert_eq!(r.premerge(&["proposal", "show", &name]).expect_code(0).stdout, shown);
}

#[test]
fn a_configured_generator_writes_the_suggested_change() {
    let r = repo_with(SEAM_ROWS);
    r.write(
        "premerge.toml",
        "[proposal]\ngenerator_command = [\"sh\", \"-c\", \"printf 'mock diff for %s\\\\n' \\\"$1\\\"; cat >/dev/null\", \"gen\", \"{stripe}\"]\n",
    );
    emit(&r, &[]).expect_code(0);
    let text = fs::read_to_string(only_path(&r, "open")).unwrap();
    assert!(text.contains(&format!("## Suggested change\n\nmock diff for {SEAM_STRIPE}\n")), "{text}");
    assert!(text.contains("suggested_by: generator"));
    // A failing generator falls back to the outline, with a warning.
    let r = repo_with(SEAM_ROWS);
    r.write("premerge.toml", "[proposal]\ngenerator_command = [\"false\"]\n");
    let out = emit(&r, &[]);
    out.expect_code(0);
    assert!(out.stderr.contains("proposal generator"), "{}", out.stderr);
    let text = fs::read_to_string(only_path(&r, "open")).unwrap();
    assert!(text.contains("Outline (deterministic"), "{text}");
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    let r = repo_with(SEAM_ROWS);
    let expect = |args: &[&str], needle: &str| {
        let out = r.premerge(args);
        out.expect_code(2);
        assert!(out.stderr.starts_with("premerge: ") && out.stderr.contains(needle), "{args:?}: {}", out.stderr);
    };
    expect(&["proposal", "show", "review:repeat_seam:XYZ"], "neither a stripe id nor a proposal file name");
    expect(&["proposal", "apply", "review:repeat_seam:0123abcd"], "no open proposal");
    expect(&["proposal", "emit", "--scope", "Review", "--signal", "x", "--evidence", "ev.json"], "scope");
    expect(&["proposal", "emit", "--scope", "review", "--signal", "x.1", "--evidence", "ev.json"], "signal");
    expect(
        &["proposal", "emit", "--scope", "review", "--signal", "x", "--evidence", "missing.json"],
        "missing.json: no such file (evidence)",
    );
    r.write("bad.json", r#"[{"id":"a","title":"t"}, "a string"]"#);
    expect(
        &["proposal", "emit", "--scope", "review", "--signal", "x", "--evidence", "bad.json"],
        "rows[1] is not an object",
    );
    r.write("bad.json", r#"[{"title":"t"}]"#);
    expect(&["proposal", "emit", "--scope", "review", "--signal", "x", "--evidence", "bad.json"], "no `id`");
    r.write("bad.json", "{not json");
    expect(&["proposal", "emit", "--scope", "review", "--signal", "x", "--evidence", "bad.json"], "not JSON");
    r.write("afile", "x");
    expect(
        &[
            "proposal",
            "emit",
            "--scope",
            "review",
            "--signal",
            "repeat_seam",
            "--evidence",
            "ev.json",
            "--root",
            "afile",
        ],
        "not a directory",
    );
    expect(&["proposal", "list", "--root", "afile"], "not a directory");
    expect(&["drain", "--root", "afile"], "not a directory");
    assert!(!r.root.join("docs/proposals/open").exists() || proposals(&r, "open").is_empty());
    assert!(events(&r).is_empty(), "nothing was logged for refused input");
}

#[test]
fn halt_mode_shadow_logs_without_halting_and_off_writes_every_time() {
    let mut r = repo_with(SEAM_ROWS);
    r.env.push(("PREMERGE_STRIPE_HALT_MODE".into(), "shadow".into()));
    emit(&r, &[]).expect_code(0);
    let out = emit(&r, &[]);
    out.expect_code(0);
    assert_eq!(out.json()["outcome"], "stripe_repeat_halt");
    assert!(out.stderr.contains("shadow"), "{}", out.stderr);
    assert_eq!(proposals(&r, "open").len(), 1);
    assert_eq!(events(&r)[1]["mode"], "shadow");
    r.premerge(&["drain"]).expect_code(0);
    r.env = vec![("PREMERGE_STRIPE_HALT_MODE".into(), "off".into())];
    assert_eq!(emit(&r, &[]).expect_code(0).json()["outcome"], "emitted");
    assert_eq!(proposals(&r, "open").len(), 2);
    // Back to the default (enforce): the repeat halts.
    r.env.clear();
    emit(&r, &[]).expect_code(1);
}

/// Signal ids of audit rule sets (`TRACE-001`) are signals; evidence rows without the
/// default projection's `op`/`path` are counted and said.
#[test]
fn audit_signal_ids_are_accepted_and_ignored_rows_are_said() {
    let r = repo_with(
        r#"[{"id":"t1","op":"missing-ac","path":"tasks/a.md"},{"id":"t2","op":"missing-ac"},{"id":"t3","note":"x"}]"#,
    );
    let out =
        r.premerge(&["proposal", "emit", "--scope", "task-audit", "--signal", "TRACE-001", "--evidence", "ev.json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["outcome"], "emitted");
    let stripe = v["stripe"].as_str().unwrap();
    assert!(stripe.starts_with("task-audit:TRACE-001:"), "{stripe}");
    assert!(
        out.stderr.contains("2 evidence row(s) without the fields signal `TRACE-001` projects (`op`, `path`)"),
        "{}",
        out.stderr
    );
    let text = fs::read_to_string(r.root.join("docs/proposals/open").join(&proposals(&r, "open")[0])).unwrap();
    assert!(text.contains("2 evidence row(s) without the projected fields were ignored"), "{text}");
    // The id round-trips through list and show.
    let list = r.premerge(&["proposal", "list", "--format", "json"]).expect_code(0).json();
    assert_eq!(list["proposals"][0]["stripe"], stripe);
    r.premerge(&["proposal", "show", stripe]).expect_code(0);
}

/// A proposal file named `<stripe>-handwritten.md` (a person wrote it) is an open
/// proposal of that stripe: the next emit halts on it, list shows it, apply moves it.
#[test]
fn a_hand_named_proposal_is_seen_as_open() {
    let r = repo_with(SEAM_ROWS);
    let open = r.root.join("docs/proposals/open");
    fs::create_dir_all(&open).unwrap();
    let body = format!(
        "---\nkind: refinement_proposal@1\nstripe: {SEAM_STRIPE}\ncreated: 2026-01-02T03:04:05Z\n---\n\nby hand\n"
    );
    fs::write(open.join(format!("{SEAM_STRIPE}-handwritten.md")), body).unwrap();
    let v = emit(&r, &[]).expect_code(1).json();
    assert_eq!(v["outcome"], "stripe_repeat_halt");
    assert!(v["path"].as_str().unwrap().ends_with("-handwritten.md"), "{v}");
    let list = r.premerge(&["proposal", "list", "--format", "json"]).expect_code(0).json();
    assert_eq!(list["proposals"][0]["stripe"], SEAM_STRIPE);
    assert_eq!(list["unparseable"], json!([]));
    r.premerge(&["proposal", "apply", SEAM_STRIPE]).expect_code(0);
    assert_eq!(proposals(&r, "applied"), [format!("{SEAM_STRIPE}-handwritten.md")]);
    assert_eq!(emit(&r, &[]).expect_code(0).json()["outcome"], "emitted");
}

/// `emit --root DIR` works outside any git repository: events go beside the proposals.
#[test]
fn emit_with_a_root_works_outside_a_repository() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("plain");
    fs::create_dir_all(&home).unwrap();
    fs::create_dir_all(&work).unwrap();
    fs::write(work.join("ev.json"), SEAM_ROWS).unwrap();
    let run = |args: &[&str]| {
        let mut c = std::process::Command::new(crate::common::bin());
        crate::common::hermetic(&mut c, &home);
        c.env("GIT_CEILING_DIRECTORIES", dir.path()).current_dir(&work).args(args).stdin(Stdio::null());
        let o = c.output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let emit_args = [
        "proposal",
        "emit",
        "--scope",
        "review",
        "--signal",
        "repeat_seam",
        "--evidence",
        "ev.json",
        "--root",
        "props",
    ];
    let (code, out, err) = run(&emit_args);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["outcome"].as_str(), v["stripe"].as_str()), (Some("emitted"), Some(SEAM_STRIPE)));
    assert_eq!(file_names(&work.join("props/open")).len(), 1);
    assert!(fs::read_to_string(work.join("props/events.jsonl")).unwrap().contains("refinement_proposal_emitted"));
    let (code, _, _) = run(&emit_args);
    assert_eq!(code, Some(1), "the repeat halts outside a repository too");
    // Without --root there is no default root to use: a clear error.
    let (code, _, err) = run(&emit_args[..8]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("premerge: "), "{err}");
    // Stripes audit D2: drain works wherever emit works. The halt is pending, drain
    // writes DRAIN_HALT.md beside the events and exits 1; after apply it exits 0.
    let (code, out, err) = run(&["drain", "--root", "props"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(work.join("props").join("DRAIN_HALT.md").is_file(), "{out}");
    let stripe = SEAM_STRIPE;
    let (code, _, err) = run(&["proposal", "apply", "--root", "props", stripe]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = run(&["drain", "--root", "props", "--run-dir", "props"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!work.join("props").join("DRAIN_HALT.md").exists(), "the stale report is removed");
}

/// Stripes audit D1: two files under one long directory are two problem classes, so
/// the second emit writes its own proposal instead of halting the pipeline.
#[test]
fn long_paths_under_one_directory_never_share_a_stripe() {
    let r = TestRepo::new();
    let dir = "src/main/java/com/example/payments/gateway/adapters/stripe/webhooks";
    let mut stripes = Vec::new();
    for (id, file) in [("a", "RefundHandler.java"), ("b", "DisputeHandler.java")] {
        r.write("ev.json", json!([{"id": id, "op": "edit", "path": format!("{dir}/{file}")}]).to_string());
        let out =
            r.premerge(&["proposal", "emit", "--scope", "java", "--signal", "TRACE-001", "--evidence", "ev.json"]);
        out.expect_code(0);
        assert_eq!(out.json()["outcome"], "emitted", "{}", out.stdout);
        stripes.push(out.json()["stripe"].as_str().unwrap().to_string());
    }
    assert_ne!(stripes[0], stripes[1]);
    assert_eq!(proposals(&r, "open").len(), 2);
}

/// Stripes audit D3: TRACE-001 evidence that names clauses is a class of its own (the
/// same set of clauses), emitted and then halted on a repeat, never suppressed.
#[test]
fn trace_evidence_naming_clauses_is_emitted_and_halts_on_a_repeat() {
    let r = TestRepo::new();
    let args = ["proposal", "emit", "--scope", "task-audit", "--signal", "TRACE-001", "--evidence", "ev.json"];
    r.write("ev.json", r#"[{"id":"c1","clause":"§1.3","summary":"no AC"},{"id":"c2","clause":"§1.5"}]"#);
    let out = r.premerge(&args);
    out.expect_code(0);
    assert_eq!(out.json()["outcome"], "emitted", "{}{}", out.stdout, out.stderr);
    // The same clauses in other words and order are the same class: a halt.
    r.write("ev.json", r#"[{"id":"z","clause":"§ 1.5","summary":"other words"},{"id":"y","clause":"§1.3"}]"#);
    let out = r.premerge(&args);
    out.expect_code(1);
    assert_eq!(out.json()["outcome"], "stripe_repeat_halt");
}

/// Stripes audit D6: the scopes `scan/rust` and `scan--rust` are two stripes with two
/// file names; each is shown and applied by its own id.
#[test]
fn scopes_with_a_slash_and_with_dashes_never_share_a_name() {
    let r = TestRepo::new();
    r.write("ev.json", r#"[{"id":"a","rule_id":"R1"}]"#);
    let mut ids = Vec::new();
    for scope in ["scan/rust", "scan--rust"] {
        let out = r.premerge(&[
            "proposal",
            "emit",
            "--scope",
            scope,
            "--signal",
            "confidence_low_streak",
            "--evidence",
            "ev.json",
        ]);
        out.expect_code(0);
        ids.push(out.json()["stripe"].as_str().unwrap().to_string());
    }
    let names = proposals(&r, "open");
    assert_eq!(names.len(), 2);
    assert!(names.iter().any(|n| n.starts_with("scan+rust:")), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("scan--rust:")), "{names:?}");
    for id in &ids {
        let shown = r.premerge(&["proposal", "show", id]);
        shown.expect_code(0);
        assert!(shown.stdout.contains(&format!("stripe: {id}")), "{}", shown.stdout);
    }
    r.premerge(&["proposal", "apply", &ids[0]]).expect_code(0);
    assert_eq!(proposals(&r, "applied").len(), 1);
    r.premerge(&["proposal", "apply", &ids[1]]).expect_code(0);
    assert_eq!(proposals(&r, "open").len(), 0);
}

/// A proposal written before `+` (scope `/` as `--` in its name) is still found: the
/// same stripe halts on a repeat and is applied by its id.
#[test]
fn a_legacy_named_proposal_is_still_found() {
    let r = TestRepo::new();
    r.write("ev.json", r#"[{"id":"a","rule_id":"R1"}]"#);
    let args =
        ["proposal", "emit", "--scope", "scan/rust", "--signal", "confidence_low_streak", "--evidence", "ev.json"];
    let out = r.premerge(&args);
    out.expect_code(0);
    let id = out.json()["stripe"].as_str().unwrap().to_string();
    let open = r.root.join("docs/proposals/open");
    let name = proposals(&r, "open").remove(0);
    fs::rename(open.join(&name), open.join(name.replacen('+', "--", 1))).unwrap();
    r.premerge(&args).expect_code(1);
    r.premerge(&["proposal", "apply", &id]).expect_code(0);
    assert_eq!(proposals(&r, "applied").len(), 1);
}

/// A guard memory's identity is the change: the same widening seen by the pre-push
/// scan (head: the pushed commit) and again by post-merge (head: the merge) is one
/// memory, and no "widened again" proposal.
#[test]
fn one_widening_seen_by_two_hooks_is_one_memory_and_no_repeat() {
    let r = TestRepo::new();
    r.write("src/q.rs", "pub struct Query {\n    pub limit: u8,\n}\n");
    let base = r.commit_all("query");
    r.git(&["checkout", "-q", "-b", "topic"]);
    r.write("src/q.rs", "pub struct Query {\n    pub limit: u64,\n}\n");
    let pushed = r.commit_all("widen limit");
    // What pre-push scans: base..pushed.
    let first = r.premerge(&["scan", "--base", &base, "--head", &pushed, "--format", "json"]);
    assert_eq!(first.expect_code(0).json()["memories_written"], 1);
    // The branch lands through a merge commit; post-merge scans ORIG_HEAD..HEAD.
    r.git(&["checkout", "-q", "main"]);
    r.write("README.md", "x\n");
    let orig = r.commit_all("unrelated");
    r.git(&["merge", "-q", "--no-ff", "--no-edit", "topic"]);
    let merged = r.git(&["rev-parse", "HEAD"]).trim().to_string();
    let second = r.premerge(&["scan", "--base", &orig, "--head", &merged, "--format", "json"]);
    second.expect_code(0);
    assert_eq!(second.json()["memories_written"], 0, "{}", second.stdout);
    assert_eq!(second.json()["memories_skipped_duplicate"], 1);
    assert!(!second.stderr.contains("widening_repeat"), "{}", second.stderr);
    let list = r.premerge(&["memory", "list", "--format", "json"]).expect_code(0).json();
    assert_eq!(list["memories"].as_array().unwrap().len(), 1);
    r.premerge(&["drain"]).expect_code(0);
}
