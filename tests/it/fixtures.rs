//! Fixture corpora through the real binary, each pinned by one insta snapshot through
//! the shared harness `common::assert_fixture_snapshot` (the widening scan's rule
//! fixtures have theirs in `scan.rs`): the stop gate's labelled stop messages, the
//! scan's change-window corpus under edits, and review seam clustering cases.

use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use crate::common::{TestRepo, assert_fixture_snapshot};

fn manifest(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The labelled records of a `tests/fixtures/gate/stops-*.txt` file: `@<class> <kind>`
/// then the message lines; `#` and blank lines before the first record are comments.
fn stop_records(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if out.is_empty() && (line.starts_with('#') || line.is_empty()) {
            continue;
        }
        if let Some(label) = line.strip_prefix('@') {
            out.push((label.to_string(), String::new()));
        } else if let Some((_, msg)) = out.last_mut() {
            if !msg.is_empty() {
                msg.push('\n');
            }
            msg.push_str(line);
        }
    }
    out
}

/// Every labelled stop message of the gate's corpus, answered by `premerge gate
/// evaluate` in enforce mode in a repository with a committed plan that has a next
/// step and nothing uncommitted: the decision and rule of each, and whether it agrees
/// with the label (the agreement figures are asserted in `src/gate/builtin.rs`).
#[test]
fn gate_stop_corpus_verdicts() {
    let r = TestRepo::new();
    r.write("docs/plans/work.md", "# Plan\n- [x] step one\n- [ ] step two\n");
    r.commit_all("plan");
    r.git(&["config", "premerge.gate.mode", "enforce"]);
    let mut cases = Vec::new();
    for file in ["stops-halfway.txt", "stops-legit.txt", "stops-second-pass.txt", "stops-heldout.txt"] {
        for (i, (label, msg)) in stop_records(&manifest(&format!("tests/fixtures/gate/{file}"))).into_iter().enumerate()
        {
            cases.push((format!("{file} #{:03} @{label}", i + 1), msg));
        }
    }
    assert!(cases.len() >= 170, "{} labelled messages", cases.len());
    let mut n = 0;
    assert_fixture_snapshot("fixtures__gate_stop_corpus", &[r.dir.path()], cases, |case, msg| {
        n += 1;
        // One session per message: the ceiling of continues per session never applies.
        let session = format!("corpus-{n:03}");
        let payload = json!({"session_id": session, "hook_event_name": "Stop", "stop_hook_active": false,
            "last_assistant_message": msg});
        let run = r.premerge_stdin(&["gate", "evaluate"], payload.to_string().as_bytes());
        run.expect_code(0);
        let log = r.premerge(&["gate", "log", "--tail", "1", "--format", "json"]);
        let ev: Value = serde_json::from_str(log.stdout.trim()).unwrap();
        assert_eq!(ev["session_id"], session.as_str(), "{}", log.stdout);
        let blocked = run.stdout.contains("\"decision\":\"block\"");
        let halfway = case.contains("@halfway");
        format!(
            "{} {} {}",
            if blocked { "block" } else { "allow" },
            ev["rule"].as_str().unwrap_or("-"),
            if blocked == halfway { "agrees" } else { "DISAGREES with the label" }
        )
    });
}

/// The scan's change-window corpus (`tests/fixtures/window/corpus.ts`), committed,
/// then each edit applied to the working tree both ways (widening, and its reverse
/// from the edited version): `premerge scan --worktree` text output for each.
#[test]
fn window_corpus_scanned_under_edits() {
    let corpus = manifest("tests/fixtures/window/corpus.ts");
    let edits: &[(&str, &str)] = &[
        ("?:", ":"),
        (": string", ": any"),
        (": number", ": number | null"),
        (": Role", ": string"),
        ("readonly ", ""),
        ("private ", ""),
        ("throw ", "void "),
        ("invariant(", "void ("),
        ("enum Role", "enum Rank"),
        ("\"dark\" | \"light\"", "string"),
        ("Array<number>", "Array<number | undefined>"),
        ("if (low > high) throw", "if (low > high) void"),
    ];
    let r = TestRepo::new();
    let mut cases = Vec::new();
    for (from, to) in edits {
        let edited = corpus.replace(from, to);
        assert_ne!(edited, corpus, "edit {from:?} changes the corpus");
        cases.push((format!("{from:?} -> {to:?}"), edited.clone()));
        cases.push((format!("{to:?} -> {from:?} (reverse)"), edited));
    }
    let mut base = String::new();
    assert_fixture_snapshot("fixtures__window_corpus_scan", &[r.dir.path()], cases, |case, edited| {
        // Forward: the corpus committed, the edit in the working tree; reverse: the
        // edited text committed, the corpus in the working tree.
        let (committed, worktree) =
            if case.ends_with("(reverse)") { (edited, corpus.as_str()) } else { (corpus.as_str(), edited) };
        if base != committed {
            r.write("src/corpus.ts", committed);
            r.commit_all("corpus");
            base = committed.to_string();
        }
        r.write("src/corpus.ts", worktree);
        let run = r.premerge(&["scan", "--worktree", "--no-memory"]);
        run.expect_code(0);
        format!("{}{}", run.stdout, run.stderr)
    });
}

fn lens(lens: &str, path: &str, title: &str) -> Value {
    json!({"lens": lens, "severity": "blocker", "path": path, "line": 4, "title": title,
           "description": "d", "suggestion": "s"})
}

/// Review seam clustering: which sets of lens findings make a seam (three files, one
/// lens, one normalised title) and which do not; `premerge review seams` for each.
#[test]
fn review_seam_cases() {
    let r = TestRepo::new();
    let cases: Vec<(&str, Value)> = vec![
        (
            "three files, one lens, titles differing by file tokens: a seam",
            json!({"findings": [
                lens("ARCHITECTURE", "src/a.rs", "Duplicated SQL filter builder in src/a.rs"),
                lens("ARCHITECTURE", "src/b.rs", "duplicated sql filter builder (src/b.rs:88)"),
                lens("ARCHITECTURE", "src/c.rs", "Duplicated SQL filter builder at line 12"),
            ]}),
        ),
        (
            "three findings in two files: no seam",
            json!([
                lens("A", "src/a.rs", "Duplicated filter"),
                lens("A", "src/b.rs", "Duplicated filter"),
                lens("A", "src/b.rs", "Duplicated filter")
            ]),
        ),
        (
            "three titles: no seam",
            json!([
                lens("A", "src/a.rs", "Missing limit"),
                lens("A", "src/b.rs", "Unused import"),
                lens("A", "src/c.rs", "Dead code")
            ]),
        ),
        (
            "one title under three lenses: no seam",
            json!([lens("A", "src/a.rs", "Dup"), lens("B", "src/b.rs", "Dup"), lens("C", "src/c.rs", "Dup")]),
        ),
        (
            "four files and a second, smaller cluster",
            json!([
                lens("SECURITY", "src/a.rs", "Token written to the log"),
                lens("SECURITY", "src/b.rs", "token written to the log"),
                lens("SECURITY", "src/c.rs", "Token written to the log!"),
                lens("SECURITY", "src/d.rs", "Token written to the log"),
                lens("STYLE", "src/a.rs", "Long function"),
                lens("STYLE", "src/b.rs", "Long function")
            ]),
        ),
        (
            "one file spelt three ways: no seam",
            json!([lens("A", "src/a.rs", "Dup"), lens("A", "./src/a.rs", "Dup"), lens("A", "src//a.rs", "Dup")]),
        ),
    ];
    let cases = cases.into_iter().map(|(name, doc)| (name.to_string(), doc.to_string()));
    assert_fixture_snapshot("fixtures__review_seams", &[r.dir.path()], cases, |_, doc| {
        let run = r.premerge_stdin(&["review", "seams", "--findings", "-"], doc.as_bytes());
        format!("exit {}\n{}{}", run.code, run.stdout, run.stderr)
    });
}
