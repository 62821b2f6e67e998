//! Issue 27, part 1 (report D1): generated input as deep or as long as it comes never
//! crashes the widening scan. Each language gets one change whose new version holds an
//! expression nested [`DEPTH`] levels deep and a sum of [`TERMS`] terms, beside a change
//! the scan must still find; that one change then goes through every place the scan
//! runs: `premerge scan`, the pre-push hook under a real `git push`, the post-merge
//! hook under a real `git merge`, and the background job (`hooks.budget_ms` 0) that
//! `premerge status --wait` finishes. Before the walks kept their own stacks, each of
//! these died of a stack overflow (SIGABRT) and the push was refused.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Run, TestRepo, bin, remote_has, run_with_stdin, write_exec};

/// Nesting levels of the deep expression (the figure; the report saw crashes
/// from 2,000).
const DEPTH: usize = 100_000;

/// Terms of the long sum (`1 + 1 + ...`), a tree as deep as it is long.
const TERMS: usize = 100_000;

/// What a debug build may take for all the runs of one language: the scan is linear in
/// the input, and these runs take a few seconds; a walk gone quadratic takes minutes.
const MAX_SECONDS_PER_LANGUAGE: u64 = 120;

/// `open` repeated `DEPTH` times around `1`, closed by `close`.
fn nested(open: &str, close: &str) -> String {
    format!("{}1{}", open.repeat(DEPTH), close.repeat(DEPTH))
}

/// `1 + 1 + ...`, [`TERMS`] terms.
fn sum() -> String {
    vec!["1"; TERMS].join(" + ")
}

/// One language's change: the path, both versions, and the rule ids the scan must
/// find there (the generated code did not cost the file its findings). For a format
/// whose parser has a recursion limit of its own (SQL, JSON, YAML), the deep part is
/// `refused`, a second file added in the same change that the scan leaves out with a
/// note naming it.
struct Case {
    path: &'static str,
    before: String,
    after: String,
    rules: &'static [&'static str],
    refused: Option<(&'static str, String)>,
}

fn rust() -> Case {
    Case {
        path: "src/deep.rs",
        before: "pub struct Query {\n    pub limit: u8,\n}\n\npub fn deep(x: u64) -> u64 {\n    assert!(x > 0);\n    if x > 100 {\n        panic!(\"too big\");\n    }\n    x\n}\n".into(),
        after: format!(
            "pub struct Query {{\n    pub limit: u64,\n}}\n\npub fn deep(x: u64) -> u64 {{\n    if x > 100 {{\n        panic!(\"too big\");\n    }}\n    let nested = {};\n    let sum = {};\n    x + nested + sum\n}}\n",
            nested("(", ")"),
            sum()
        ),
        rules: &["rust-assert-removed", "rust-integer-widened"],
        refused: None,
    }
}

fn python() -> Case {
    Case {
        path: "app/deep.py",
        before: "class Query:\n    limit: int\n\n\ndef deep(x: int) -> int:\n    assert x > 0\n    if x > 100:\n        raise ValueError(\"too big\")\n    return x\n".into(),
        after: format!(
            "class Query:\n    limit: int | None\n\n\ndef deep(x: int) -> int:\n    if x > 100:\n        raise ValueError(\"too big\")\n    nested = {}\n    total = {}\n    return x + nested + total\n",
            nested("(", ")"),
            sum()
        ),
        rules: &["py-assert-removed", "py-optional-widened"],
        refused: None,
    }
}

fn typescript() -> Case {
    Case {
        path: "src/deep.ts",
        before: "export interface Query {\n  limit: number;\n}\n\nexport function deep(x: number): number {\n  if (x < 0) {\n    throw new Error(\"negative\");\n  }\n  return x;\n}\n".into(),
        after: format!(
            "export interface Query {{\n  limit?: number;\n}}\n\nexport function deep(x: number): number {{\n  const nested = {};\n  const sum = {};\n  return x + sum + nested.length;\n}}\n",
            nested("[", "]"),
            sum()
        ),
        rules: &["ts-property-made-optional", "ts-throw-guard-removed"],
        refused: None,
    }
}

fn javascript() -> Case {
    Case {
        path: "src/deep.js",
        before: "export function deep(x) {\n  if (x < 0) {\n    throw new Error(\"negative\");\n  }\n  return x;\n}\n"
            .into(),
        after: format!(
            "export function deep(x) {{\n  const nested = {};\n  const sum = {};\n  return x + sum + nested.length;\n}}\n",
            nested("[", "]"),
            sum()
        ),
        rules: &["ts-throw-guard-removed"],
        refused: None,
    }
}

fn go() -> Case {
    Case {
        path: "deep/deep.go",
        before: "package deep\n\ntype Query struct {\n\tLimit int32\n}\n\nfunc Deep(x int) int {\n\tif x < 0 {\n\t\tpanic(\"negative\")\n\t}\n\treturn x\n}\n".into(),
        after: format!(
            "package deep\n\ntype Query struct {{\n\tLimit int64\n}}\n\nfunc Deep(x int) int {{\n\tnested := {}\n\tsum := {}\n\treturn x + nested + sum\n}}\n",
            nested("(", ")"),
            sum()
        ),
        rules: &["go-int-widened", "go-panic-removed"],
        refused: None,
    }
}

fn sql() -> Case {
    // sqlparser keeps a chain of operators as a tree one level per operator, which the
    // scan refuses past `MAX_OPERATOR_DEPTH` as sqlparser refuses deep brackets: both
    // generated statements go in the file left out with a note.
    Case {
        path: "migrations/0001_init.sql",
        before: "CREATE TABLE accounts (\n  id integer NOT NULL,\n  email text NOT NULL\n);\n".into(),
        after: "CREATE TABLE accounts (\n  id integer NOT NULL,\n  email text\n);\n".into(),
        rules: &["sql-not-null-dropped"],
        refused: Some((
            "migrations/0002_generated.sql",
            format!(
                "CREATE TABLE generated (\n  nested integer DEFAULT {},\n  total integer DEFAULT {}\n);\n",
                nested("(", ")"),
                sum()
            ),
        )),
    }
}

fn json_schema() -> Case {
    let head = "{\"$schema\": \"https://json-schema.org/draft/2020-12/schema\", \"type\": \"object\"";
    Case {
        path: "schemas/query.schema.json",
        before: format!("{head}, \"properties\": {{\"limit\": {{\"type\": \"integer\", \"maximum\": 10}}}}}}\n"),
        after: format!(
            "{head}, \"properties\": {{\"limit\": {{\"type\": \"integer\", \"maximum\": 100}}, \"sum\": {{\"default\": [{}]}}}}}}\n",
            vec!["1"; TERMS].join(", ")
        ),
        rules: &["schema-range-loosened"],
        refused: Some((
            "schemas/deep.schema.json",
            format!("{head}, \"properties\": {{\"nested\": {{\"default\": {}}}}}}}\n", nested("[", "]")),
        )),
    }
}

fn openapi() -> Case {
    let head = "openapi: 3.0.0\ninfo:\n  title: t\n  version: '1'\npaths: {}\n";
    let limit = |max: u32| {
        format!(
            "components:\n  schemas:\n    Query:\n      type: object\n      properties:\n        limit:\n          type: integer\n          maximum: {max}\n"
        )
    };
    Case {
        path: "api/openapi.yaml",
        before: format!("{head}{}", limit(10)),
        after: format!("{head}x-sum: [{}]\n{}", vec!["1"; TERMS].join(", "), limit(100)),
        rules: &["schema-range-loosened"],
        refused: Some(("api/deep.yaml", format!("{head}x-deep: {}\n", nested("[", "]")))),
    }
}

/// The hook shim `premerge install` would write, running the binary under test.
fn hook_script(r: &TestRepo, name: &str) {
    let p = PathBuf::from(r.git(&["rev-parse", "--absolute-git-dir"])).join("hooks").join(name);
    write_exec(&p, &format!("#!/bin/sh\nexec '{}' hook {name} \"$@\"\n", bin().display()));
}

/// Neither stream shows a crash of premerge's own.
#[track_caller]
fn no_crash(what: &str, run: &Run) {
    for sign in ["overflowed its stack", "died of signal", "fatal runtime error", "panicked"] {
        assert!(
            !run.stdout.contains(sign) && !run.stderr.contains(sign),
            "{what}: {sign}\n--- stdout\n{}\n--- stderr\n{}",
            run.stdout,
            run.stderr
        );
    }
}

/// Whether hook output shows the scan's outcome: its summary line, and the refused
/// file left out with its reason.
fn scan_reported(case: &Case, said: &str) -> bool {
    said.contains("premerge widening scan: ")
        && case.refused.as_ref().is_none_or(|(path, _)| said.contains(&format!("{path}: not scanned: ")))
}

/// The rule ids of a scan's JSON findings, and whether a note names `path`.
fn rules_and_note(scan: &Value, path: &str) -> (Vec<String>, bool) {
    let rules = scan["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["file"] == path)
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect();
    let noted = scan["notes"].as_array().unwrap().iter().any(|n| n["file"] == path);
    (rules, noted)
}

#[track_caller]
fn check_scan(case: &Case, scan: &Value) {
    let (rules, noted) = rules_and_note(scan, case.path);
    assert!(!noted, "{}: the file was left out: {}", case.path, scan["notes"]);
    for rule in case.rules {
        assert!(rules.iter().any(|r| r == rule), "{}: {rule} missing from {rules:?}", case.path);
    }
    if let Some((path, _)) = &case.refused {
        assert!(rules_and_note(scan, path).1, "{path}: no note: {scan}");
    }
}

/// The change through `premerge scan`, `git push` (pre-push), `git merge`
/// (post-merge) and the background job with `status --wait`.
fn everywhere(case: Case) {
    let started = Instant::now();
    let r = TestRepo::new();
    r.write(case.path, &case.before);
    let base = r.commit_all("base");
    let remote = r.add_bare_remote("origin");
    r.git(&["push", "-q", "origin", "main"]);
    hook_script(&r, "pre-push");
    hook_script(&r, "post-merge");
    r.write(case.path, &case.after);
    if let Some((path, text)) = &case.refused {
        r.write(path, text);
    }
    let head = r.commit_all("generated");

    // `premerge scan`: exit 0, and what the change holds besides the generated code.
    let scan = r.premerge(&["scan", "--base", &base, "--head", &head, "--no-memory", "--format", "json"]);
    no_crash("scan", &scan);
    check_scan(&case, &scan.expect_code(0).json());

    // The pre-push hook under a real push: exit 0, the push lands, the scan ran.
    let push = run_with_stdin(&mut r.git_cmd(["push", "origin", "main"]), b"");
    no_crash("pre-push", &push);
    push.expect_code(0);
    assert_eq!(r.git_in(&remote, &["rev-parse", "main"]), head, "the push landed");
    assert!(remote_has(&remote, "refs/heads/main"));
    let said = format!("{}{}", push.stdout, push.stderr);
    assert!(scan_reported(&case, &said), "{said}");

    // The post-merge hook under a real (fast-forward) merge.
    r.git(&["checkout", "-q", "-b", "behind", &base]);
    let merge = run_with_stdin(&mut r.git_cmd(["merge", "--ff-only", "main"]), b"");
    no_crash("post-merge", &merge);
    merge.expect_code(0);
    let said = format!("{}{}", merge.stdout, merge.stderr);
    assert!(said.contains("premerge post-merge: "), "{said}");
    assert_eq!(r.git(&["rev-parse", "HEAD"]), head);

    // The background job: budget 0 defers the scan; `status --wait` finishes it.
    let mut deferred = r.premerge_cmd(["hook", "pre-push", "origin", "url"]);
    deferred.env("PREMERGE_HOOKS_BUDGET_MS", "0");
    let stdin = format!("refs/heads/main {head} refs/heads/main {base}\n");
    let hook = run_with_stdin(&mut deferred, stdin.as_bytes());
    no_crash("deferred pre-push", &hook);
    hook.expect_code(0);
    assert!(hook.stdout.contains("signals continue in the background"), "{}", hook.stdout);
    let status = r.premerge(&["status", "--wait", "--format", "json"]);
    no_crash("status --wait", &status);
    let status = status.expect_code(0).json();
    assert_eq!(status["pending"], 0, "{status}");
    let results = status["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{status}");
    assert_eq!(results[0]["outcome"], "done", "{status}");
    let said: Vec<&str> = ["stdout", "warnings"]
        .iter()
        .flat_map(|k| results[0][*k].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    assert!(scan_reported(&case, &said.join("\n")), "{status}");

    let took = started.elapsed();
    assert!(took < Duration::from_secs(MAX_SECONDS_PER_LANGUAGE), "{}: {took:?}", case.path);
}

#[test]
fn rust_at_depth_and_length() {
    everywhere(rust());
}

#[test]
fn python_at_depth_and_length() {
    everywhere(python());
}

#[test]
fn typescript_at_depth_and_length() {
    everywhere(typescript());
}

#[test]
fn javascript_at_depth_and_length() {
    everywhere(javascript());
}

#[test]
fn go_at_depth_and_length() {
    everywhere(go());
}

#[test]
fn sql_at_depth_and_length() {
    everywhere(sql());
}

#[test]
fn json_schema_at_depth_and_length() {
    everywhere(json_schema());
}

#[test]
fn openapi_at_depth_and_length() {
    everywhere(openapi());
}

/// Both versions deep, one guard removed far from the generated code: the new version
/// is read by the window or an incremental reparse of the old tree (and with
/// `PREMERGE_SCAN_WINDOW=0`, whole), and the guard's removal is still found.
#[test]
fn an_edit_beside_deep_code_is_found_by_every_parse() {
    // (path, the file with or without its guard, the rule its removal breaks)
    type Edit = (&'static str, fn(bool) -> String, &'static str);
    let cases: [Edit; 4] = [
        (
            "src/deep.rs",
            |guard| {
                let g = if guard { "    assert!(x > 0);\n" } else { "" };
                format!(
                    "pub fn deep(x: u64) -> u64 {{\n{g}    let a = {};\n    let b = {};\n    x + a + b\n}}\n",
                    nested("(", ")"),
                    sum()
                )
            },
            "rust-assert-removed",
        ),
        (
            "app/deep.py",
            |guard| {
                let g = if guard { "    assert x > 0\n" } else { "" };
                format!("def deep(x):\n{g}    a = {}\n    b = {}\n    return x\n", nested("(", ")"), sum())
            },
            "py-assert-removed",
        ),
        (
            "src/deep.ts",
            |guard| {
                let g = if guard { "  if (x < 0) { throw new Error('neg'); }\n" } else { "" };
                format!(
                    "export function deep(x: number): number {{\n{g}  const a = {};\n  const b = {};\n  return x;\n}}\n",
                    nested("[", "]"),
                    sum()
                )
            },
            "ts-throw-guard-removed",
        ),
        (
            "deep/deep.go",
            |guard| {
                let g = if guard { "\tif x < 0 {\n\t\tpanic(\"neg\")\n\t}\n" } else { "" };
                format!(
                    "package deep\n\nfunc Deep(x int) int {{\n{g}\ta := {}\n\tb := {}\n\treturn x + a + b\n}}\n",
                    nested("(", ")"),
                    sum()
                )
            },
            "go-panic-removed",
        ),
    ];
    for (path, text, rule) in cases {
        let mut r = TestRepo::new();
        r.write(path, text(true));
        let base = r.commit_all("base");
        r.write(path, text(false));
        let head = r.commit_all("guard removed");
        for window in ["1", "0"] {
            r.env = vec![("PREMERGE_SCAN_WINDOW".into(), window.into())];
            let _ = std::fs::remove_dir_all(r.state_dir());
            let scan = r.premerge(&["scan", "--base", &base, "--head", &head, "--no-memory", "--format", "json"]);
            no_crash("scan", &scan);
            let (rules, noted) = rules_and_note(&scan.expect_code(0).json(), path);
            assert!(!noted && rules == [rule], "{path} (window {window}): {rules:?}");
        }
    }
}
