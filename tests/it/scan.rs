//! The widening scan: the fixture harness and its meta-test, end-to-end scans of real
//! repositories, guard memories, the external backend, kill switches and hooks.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use premerge::widen::catalogue;
use premerge::widen::engine::{self, FileInput, Policy};
use premerge::widen::migrations::{self, History};
use serde_json::{Value, json};

// ---------------------------------------------------------------- fixture harness

/// One fixture case: `fixtures/<rule-id>/<case>/`.
struct Case {
    rule: String,
    name: String,
    dir: PathBuf,
}

impl Case {
    fn id(&self) -> String {
        format!("{}/{}", self.rule, self.name)
    }

    /// Whether the case must report its own rule (`fires*`) or must not.
    fn fires(&self) -> bool {
        self.name.starts_with("fires")
    }
}

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for rule_dir in sorted_dirs(&fixtures_root()) {
        let rule = rule_dir.file_name().unwrap().to_string_lossy().into_owned();
        for case_dir in sorted_dirs(&rule_dir) {
            let name = case_dir.file_name().unwrap().to_string_lossy().into_owned();
            out.push(Case { rule: rule.clone(), name, dir: case_dir });
        }
    }
    out
}

/// Find `<stem>.<ext>` in a case directory.
fn version(dir: &Path, stem: &str) -> Option<(String, Vec<u8>)> {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(ext) = name.strip_prefix(&format!("{stem}.")) {
            return Some((ext.to_string(), fs::read(&p).unwrap()));
        }
    }
    None
}

/// The case's path (`path.txt`, else `src/fixture.<ext>`) and both versions.
fn input(case: &Case) -> FileInput {
    let before = version(&case.dir, "before");
    let after = version(&case.dir, "after");
    let ext = before.as_ref().or(after.as_ref()).map(|(e, _)| e.clone()).unwrap_or_else(|| {
        panic!("{}: neither before.<ext> nor after.<ext>", case.id());
    });
    if let (Some((a, _)), Some((b, _))) = (&before, &after) {
        assert_eq!(a, b, "{}: before and after have different extensions", case.id());
    }
    let path = match fs::read_to_string(case.dir.join("path.txt")) {
        Ok(p) => p.trim().to_string(),
        Err(_) => format!("src/fixture.{ext}"),
    };
    FileInput { path, before: before.map(|v| v.1), after: after.map(|v| v.1) }
}

/// `earlier/`: migrations that run before the case's file, placed in its sequence's
/// directory.
fn history(case: &Case, path: &str) -> History {
    let mut earlier = Vec::new();
    if let (Ok(entries), Some(slot)) = (fs::read_dir(case.dir.join("earlier")), migrations::slot(path)) {
        for e in entries {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            earlier.push((format!("{}/{name}", slot.set), fs::read_to_string(e.path()).unwrap()));
        }
    }
    History::new(earlier)
}

/// Run the full engine (every rule, default policies) on a case.
fn run_case(case: &Case) -> engine::Report {
    let input = input(case);
    let report =
        engine::scan_with_history(std::slice::from_ref(&input), &Policy::default(), &history(case, &input.path));
    assert!(report.notes.is_empty(), "{}: the engine noted {:?}", case.id(), report.notes);
    report
}

/// The findings as `expected.json` spells them.
fn as_expected(report: &engine::Report) -> Value {
    let findings: Vec<Value> = report
        .findings
        .iter()
        .map(|f| json!({"rule": f.rule, "symbol": f.symbol, "line": f.line, "before": f.before, "after": f.after}))
        .collect();
    json!({ "findings": findings })
}

fn expected(case: &Case) -> Value {
    let p = case.dir.join("expected.json");
    let text = fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", p.display()))
}

/// `expected.json` as written for a new case (`PREMERGE_BLESS=1`; review the diff).
fn render_expected(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap();
    s.push('\n');
    s
}

/// The one fixture harness. Every rule runs over every fixture (the whole engine,
/// default policies), and:
/// - each case's findings equal its `expected.json` exactly (`PREMERGE_BLESS=1`
///   rewrites a differing one);
/// - `fires*` cases report their own rule, every other case does not;
/// - every fixture folder names a rule of the catalogue, and every rule has a firing
///   and a non-firing case;
/// - the full answer (message and severity of every finding of every case, whichever
///   rule reported it) is one insta snapshot, so a new fixture or rule shows all it
///   triggers in review.
#[test]
fn every_rule_over_every_fixture() {
    let ids: BTreeSet<&str> = catalogue::all().map(|r| r.id.as_str()).collect();
    let bless = std::env::var_os("PREMERGE_BLESS").is_some();
    let mut by_rule: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut problems = Vec::new();
    let mut snapshot = BTreeMap::new();
    for case in cases() {
        if !ids.contains(case.rule.as_str()) {
            problems.push(format!("fixtures/{}: no rule of the catalogue has this id", case.rule));
        }
        if !case.dir.join("expected.json").is_file() && !bless {
            problems.push(format!("fixtures/{}: no expected.json", case.id()));
            continue;
        }
        let e = by_rule.entry(case.rule.clone()).or_default();
        if case.fires() {
            e.0 += 1
        } else {
            e.1 += 1
        }
        let report = run_case(&case);
        let got = as_expected(&report);
        let stale = !case.dir.join("expected.json").is_file() || got != expected(&case);
        if bless && stale {
            fs::write(case.dir.join("expected.json"), render_expected(&got)).unwrap();
        } else if stale {
            problems.push(format!(
                "{}:\n  expected {}\n  actual   {}",
                case.id(),
                serde_json::to_string(&expected(&case)).unwrap(),
                serde_json::to_string_pretty(&got).unwrap()
            ));
        }
        let own = report.findings.iter().any(|f| f.rule == case.rule);
        if own != case.fires() {
            problems.push(format!("{}: own rule reported = {own}, but the case is named {}", case.id(), case.name));
        }
        let lines: Vec<String> = report
            .findings
            .iter()
            .map(|f| format!("{}:{} {} [{}] {}", f.rule, f.line, f.symbol, f.severity.as_str(), f.message))
            .collect();
        snapshot.insert(case.id(), lines);
    }
    for id in &ids {
        let (fires, quiet) = by_rule.get(*id).copied().unwrap_or_default();
        if fires == 0 {
            problems.push(format!("{id}: no `fires*` fixture"));
        }
        if quiet == 0 {
            problems.push(format!("{id}: no near-miss fixture"));
        }
    }
    problems.dedup();
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
    insta::assert_json_snapshot!("rules_over_fixtures", snapshot);
}

/// Every fixture's old version against damaged copies of its new version (five bytes
/// cut at a dozen points) and the other way round: the engine answers, and no
/// detector fails (a panic would be noted as "the ... detector failed").
/// Guard memory text is written from the finding itself: for every rule, the memory of
/// each of its fixture findings quotes that finding's own constraint (before and after),
/// names its symbol, rule and invariant, states the old bound where the finding shows
/// one, and carries no other rule's invariant and none of the fixed sentences that used
/// to misdescribe checks and `unsafe` code.
#[test]
fn guard_memory_text_comes_from_each_fixture_finding() {
    use premerge::memory::{self, text::quoted};
    use premerge::widen::{Family, RuleId};
    let invariants: Vec<(&str, &str)> = catalogue::all().map(|r| (r.id.as_str(), r.invariant)).collect();
    let mut checked: BTreeSet<String> = BTreeSet::new();
    for case in cases() {
        let report = run_case(&case);
        for f in &report.findings {
            let m = &memory::plan(std::slice::from_ref(f), "issue-9", Some(9), Some("abc"))[0];
            let c = &m.content;
            let rule = RuleId::parse(&f.rule).unwrap();
            let own = rule.def().invariant;
            let at = format!("{} {} {}", case.id(), f.rule, f.symbol);
            assert!(c.contains(&format!("`{}`", f.symbol)) && c.contains(&f.rule), "{at}: {c}");
            for side in [&f.before, &f.after] {
                assert!(side.is_empty() || c.contains(&quoted(side)), "{at}: {side:?} not quoted: {c}");
            }
            let own = own.trim_end_matches('.');
            assert!(c.contains(own), "{at}: its invariant is missing: {c}");
            for (id, inv) in &invariants {
                let inv = inv.trim_end_matches('.');
                assert!(inv == own || !c.contains(inv), "{at}: carries {id}'s invariant: {c}");
            }
            for stale in ["exploits the widened type", "(removed) became", "became (removed)", ".. Removed", "``."] {
                assert!(!c.contains(stale), "{at}: {stale:?} in {c}");
            }
            match rule.family() {
                Family::CheckRemoved if f.after.is_empty() => {
                    assert!(c.contains(&format!("the check {} was removed", quoted(&f.before))), "{at}: {c}");
                    assert!(c.contains(&format!("Verify what now enforces {}", quoted(&f.before))), "{at}: {c}");
                    assert!(!c.contains("widen"), "{at}: {c}");
                }
                Family::Unsafe if f.before.is_empty() => {
                    assert!(c.contains("had no `unsafe` code and now has"), "{at}: {c}");
                    assert!(!c.contains("widen"), "{at}: {c}");
                }
                _ => {}
            }
            if matches!(rule, RuleId::RustIntegerWidened | RuleId::GoIntWidened | RuleId::SqlNumericWidened) {
                assert!(c.contains("the old type `"), "{at}: no bound: {c}");
            }
            checked.insert(f.rule.clone());
        }
    }
    // Every rule's firing fixtures were read.
    let missing: Vec<&str> = catalogue::all().map(|r| r.id.as_str()).filter(|id| !checked.contains(*id)).collect();
    assert!(missing.is_empty(), "rules whose memory text no fixture exercised: {missing:?}");
}

/// The bound a finding implies is the one of its own types: `u16` to `u64` says "at
/// most 65535", never another width's figure.
#[test]
fn guard_memory_states_the_bound_of_the_old_type() {
    let mk = |before: &str, after: &str, rule: &str| engine::Finding {
        rule: rule.into(),
        language: premerge::widen::Language::Rust,
        file: "src/q.rs".into(),
        symbol: "Q.width".into(),
        line: 3,
        before: before.into(),
        after: after.into(),
        message: String::new(),
        severity: premerge::widen::Severity::Medium,
        linked: Vec::new(),
    };
    let c = |f: engine::Finding| premerge::memory::plan(&[f], "issue-1", Some(1), None)[0].content.clone();
    let m = c(mk("width: u16", "width: u64", "rust-integer-widened"));
    assert!(m.contains("the old type `u16` kept the value between 0 and 65535 (at most 65535)"), "{m}");
    assert!(m.contains("`u64` admits between 0 and 18446744073709551615"), "{m}");
    assert!(!m.contains("255"), "{m}");
    let m = c(mk("n: i8", "n: i32", "rust-integer-widened"));
    assert!(m.contains("between -128 and 127"), "{m}");
    let m = c(mk("qty SMALLINT NOT NULL", "ALTER COLUMN qty TYPE BIGINT", "sql-numeric-widened"));
    assert!(m.contains("the old type `SMALLINT` kept the value between -32768 and 32767"), "{m}");
    let m = c(mk("name VARCHAR(40) NOT NULL", "ALTER COLUMN name TYPE TEXT", "sql-varchar-widened"));
    assert!(m.contains("at most 40 characters"), "{m}");
    let m = c(mk("maximum: 100", "maximum: 10000", "schema-range-loosened"));
    assert!(m.contains("values were at most 100"), "{m}");
}

#[test]
fn damaged_fixtures_never_make_a_detector_fail() {
    let mut runs = 0;
    for case in cases() {
        let i = input(&case);
        let (before, after) = (i.before.clone().unwrap_or_default(), i.after.clone().unwrap_or_default());
        let step = (after.len() / 12).max(1);
        for start in (0..after.len()).step_by(step) {
            let end = (start + 5).min(after.len());
            let damaged = [&after[..start], &after[end..]].concat();
            for (b, a) in [(before.clone(), damaged.clone()), (damaged.clone(), before.clone())] {
                let input = FileInput { path: i.path.clone(), before: Some(b), after: Some(a) };
                let report = engine::scan_file(&input, &Policy::default());
                for n in &report.notes {
                    assert!(!n.reason.contains("detector failed"), "{}: {}", case.id(), n.reason);
                }
                runs += 1;
            }
        }
    }
    assert!(runs > 1000, "damaged versions scanned: {runs}");
}

/// `docs/rules.md` is generated from the catalogue (and the pipeline rules of `src/report/rules.rs`) and must match it.
#[test]
fn rules_doc_matches_the_catalogue() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/rules.md");
    let committed = fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == premerge::report::rules::rules_doc(),
        "docs/rules.md is out of date: regenerate it with `premerge scan --rules-doc > docs/rules.md`"
    );
}

// ---------------------------------------------------------------- end to end

use crate::common::TestRepo;

const QUERY_BEFORE: &str = "/// A page request.\npub struct Query {\n    pub limit: u8,\n    pub name: String,\n}\n\npub fn set_ratio(r: f64) -> f64 {\n    assert!(r >= 0.0 && r <= 1.0);\n    r\n}\n";
const QUERY_AFTER: &str = "/// A page request.\npub struct Query {\n    pub limit: u64,\n    pub name: String,\n}\n\npub fn set_ratio(r: f64) -> f64 {\n    r\n}\n";

/// A repository whose last commit widens `Query.limit` and removes the ratio assert.
fn widened_repo() -> (TestRepo, String, String) {
    let r = TestRepo::new();
    r.write("src/query.rs", QUERY_BEFORE);
    r.write("README.md", "# x\n");
    let base = r.commit_all("initial");
    r.write("src/query.rs", QUERY_AFTER);
    let head = r.commit_all("widen");
    (r, base, head)
}

fn state_dir(r: &TestRepo) -> PathBuf {
    r.root.join(".git/premerge")
}

fn events(r: &TestRepo) -> Vec<Value> {
    crate::common::events_in(&state_dir(r))
}

fn event_kinds(r: &TestRepo) -> Vec<String> {
    events(r).iter().map(|e| e["kind"].as_str().unwrap().to_string()).collect()
}

fn scan_json(r: &TestRepo, args: &[&str]) -> Value {
    let mut a = vec!["scan", "--format", "json"];
    a.extend_from_slice(args);
    r.premerge(&a).expect_code(0).json()
}

#[test]
fn scan_reports_the_contract_json_and_writes_memories() {
    let (r, base, head) = widened_repo();
    let v = scan_json(&r, &["--issue", "4"]);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["base"], base.as_str());
    assert_eq!(v["head"], head.as_str());
    assert_eq!(
        v["findings"],
        json!([
            {"rule": "rust-integer-widened", "language": "rust", "file": "src/query.rs", "symbol": "Query.limit",
             "line": 3, "before": "limit: u8", "after": "limit: u64", "severity": "medium",
             "message": "Query.limit: `limit: u8` became `limit: u64`; values outside the old range are now representable"},
            {"rule": "rust-assert-removed", "language": "rust", "file": "src/query.rs", "symbol": "set_ratio",
             "line": 7, "before": "assert!(r >= 0.0 && r <= 1.0)", "after": "", "severity": "medium",
             "message": "set_ratio: the check `assert!(r >= 0.0 && r <= 1.0)` was removed"}
        ])
    );
    assert_eq!(v["memories_written"], 2);
    let m = r.premerge(&["memory", "list", "--format", "json"]).expect_code(0).json();
    let mems = m["memories"].as_array().unwrap();
    assert_eq!(mems.len(), 2);
    assert_eq!(mems[0]["symbol"], "Query.limit");
    let content = mems[0]["content"].as_str().unwrap();
    assert!(content.contains("`limit: u8` became `limit: u64`"), "{content}");
    assert!(content.contains("issue #4"), "{content}");
    assert!(content.contains("verify what now guarantees the old invariant".trim_start_matches('v')), "{content}");
    assert_eq!(
        mems[0]["metadata"],
        json!({"kind": "guard", "rule": "rust-integer-widened", "rules": ["rust-integer-widened"], "file": "src/query.rs",
               "symbol": "Query.limit", "commit": head, "issue": 4, "cycle": "issue-4"})
    );
    // Text output: grouped by file, with the changed tokens marked.
    let t = r.premerge(&["scan", "--no-memory"]).expect_code(0).stdout.clone();
    assert!(t.starts_with("src/query.rs\n"), "{t}");
    assert!(t.contains("~ limit: [-u8-]{+u64+}"), "{t}");
    assert!(t.ends_with("2 finding(s) in 1 file(s); 0 guard memory(ies) written, 0 already recorded\n"), "{t}");
}

#[test]
fn memories_are_never_duplicated_within_a_cycle() {
    let (r, _, head) = widened_repo();
    assert_eq!(scan_json(&r, &["--issue", "4"])["memories_written"], 2);
    let again = scan_json(&r, &["--issue", "4"]);
    assert_eq!(again["memories_written"], 0);
    assert_eq!(again["memories_skipped_duplicate"], 2);
    assert_eq!(again["findings"].as_array().unwrap().len(), 2, "findings are reported on every run");
    // A memory's identity is the change itself: another cycle (an issue, or the head
    // commit without one) seeing the same change records nothing new.
    assert_eq!(scan_json(&r, &["--issue", "5"])["memories_written"], 0);
    assert_eq!(scan_json(&r, &[])["memories_written"], 0);
    let kinds = event_kinds(&r);
    let count = |k: &str| kinds.iter().filter(|x| *x == k).count();
    assert_eq!(count("guard-memory-written"), 2);
    assert_eq!(count("guard-memory-duplicate-skipped"), 6);
    let ev = events(&r).into_iter().find(|e| e["kind"] == "guard-memory-written").unwrap();
    assert_eq!(ev["file"], "src/query.rs");
    assert!(ev["ts"].is_string());
    let list = r.premerge(&["memory", "list", "--format", "json"]).expect_code(0).json();
    let cycles: BTreeSet<String> =
        list["memories"].as_array().unwrap().iter().map(|m| m["cycle"].as_str().unwrap().to_string()).collect();
    assert_eq!(cycles, BTreeSet::from(["issue-4".into()]));
    let _ = head;
    // --no-memory writes nothing and logs nothing.
    let before = events(&r).len();
    assert_eq!(scan_json(&r, &["--issue", "9", "--no-memory"])["memories_written"], 0);
    assert_eq!(events(&r).len(), before);
}

#[test]
fn memory_search_by_text_and_file() {
    let (r, _, _) = widened_repo();
    r.write("src/other.rs", "pub struct Page {\n    pub size: u16,\n}\n");
    r.commit_all("page");
    r.write("src/other.rs", "pub struct Page {\n    pub size: u32,\n}\n");
    r.commit_all("page wider");
    // Over HEAD~3..HEAD the page file is new (nothing to widen): scan its own change too.
    scan_json(&r, &["--base", "HEAD~3", "--head", "HEAD~2", "--issue", "4"]);
    scan_json(&r, &["--issue", "4"]);
    let s = r.premerge(&["memory", "search", "--file", "src/query.rs", "--format", "json"]).expect_code(0).json();
    let syms: Vec<&str> = s["memories"].as_array().unwrap().iter().map(|m| m["symbol"].as_str().unwrap()).collect();
    assert_eq!(syms, ["Query.limit", "set_ratio"]);
    let s = r.premerge(&["memory", "search", "ratio", "--format", "json"]).expect_code(0).json();
    assert_eq!(s["memories"][0]["symbol"], "set_ratio");
    assert_eq!(s["memories"].as_array().unwrap().len(), 1);
    let s = r
        .premerge(&[
            "memory",
            "search",
            "widened",
            "--file",
            "src/other.rs",
            "--file",
            "src/none.rs",
            "--format",
            "json",
        ])
        .expect_code(0)
        .json();
    assert_eq!(s["memories"].as_array().unwrap().len(), 1);
    assert_eq!(s["memories"][0]["symbol"], "Page.size");
    let t = r.premerge(&["memory", "list"]).expect_code(0).stdout.clone();
    assert!(t.ends_with("3 guard memory(ies)\n"), "{t}");
    r.premerge(&["memory", "search", "((("]).expect_code(2);
}

#[test]
fn no_memories_yet_is_an_empty_answer_and_creates_nothing() {
    let (r, _, _) = widened_repo();
    let s = r.premerge(&["memory", "search", "--file", "src/query.rs", "--format", "json"]).expect_code(0).json();
    assert_eq!(s["memories"], json!([]));
    assert!(!state_dir(&r).join("premerge.db").exists());
}

/// A fake memory backend: records its argv (NUL-separated) and behaves as told.
fn fake_backend(r: &TestRepo, body: &str) -> (PathBuf, PathBuf) {
    let rec = r.dir.path().join("backend.rec");
    let exe = r.dir.path().join("fake-memory");
    fs::write(&exe, format!("#!/bin/sh\nprintf '%s\\0' \"$@\" >> '{}'\n{body}\n", rec.display())).unwrap();
    let mut p = fs::metadata(&exe).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o755);
    fs::set_permissions(&exe, p).unwrap();
    (exe, rec)
}

fn configure_backend(r: &TestRepo, exe: &Path, timeout_ms: u64) {
    r.write(
        "premerge.toml",
        format!(
            "[memory]\nbackend_command = [\"{}\", \"add\", \"{{text}}\", \"--memory-type\", \"guard\", \"-m\", \"{{metadata}}\"]\nbackend_timeout_ms = {timeout_ms}\n",
            exe.display()
        ),
    );
}

#[test]
fn external_backend_gets_text_and_metadata_as_single_arguments() {
    let (r, _, _) = widened_repo();
    let (exe, rec) = fake_backend(&r, "exit 0");
    configure_backend(&r, &exe, 5000);
    let run = r.premerge(&["scan", "--format", "json", "--issue", "4"]);
    run.expect_code(0);
    assert_eq!(run.json()["memories_written"], 2);
    let recorded = fs::read_to_string(&rec).unwrap();
    let args: Vec<&str> = recorded.split('\0').collect();
    // Two calls of 6 arguments each (plus the trailing empty split).
    assert_eq!(args.len(), 13, "{args:?}");
    assert_eq!(&args[..2], ["add", args[1]]);
    assert_eq!(args[0], "add");
    assert!(args[1].starts_with("Guard memory for src/query.rs `Query.limit`"), "{}", args[1]);
    assert!(args[1].contains("issue #4"));
    assert_eq!(&args[2..5], ["--memory-type", "guard", "-m"]);
    let meta: Value = serde_json::from_str(args[5]).unwrap();
    assert_eq!(meta["symbol"], "Query.limit");
    assert_eq!(meta["issue"], 4);
    let m = r.premerge(&["memory", "list", "--format", "json"]).json();
    assert_eq!(m["memories"][0]["backend"], "sent");
    // A duplicate is not sent again.
    r.premerge(&["scan", "--issue", "4"]).expect_code(0);
    assert_eq!(fs::read_to_string(&rec).unwrap().split('\0').count(), 13);
}

#[test]
fn external_backend_failure_and_timeout_are_warnings_and_the_embedded_copy_stays() {
    for (body, timeout, needle) in [("echo boom >&2; exit 3", 5000, "exited with"), ("sleep 5", 200, "timed out")] {
        let (r, _, _) = widened_repo();
        let (exe, rec) = fake_backend(&r, body);
        configure_backend(&r, &exe, timeout);
        let run = r.premerge(&["scan", "--format", "json", "--issue", "4"]);
        run.expect_code(0);
        assert_eq!(run.json()["memories_written"], 2);
        assert!(run.stderr.contains("premerge: warning: memory backend failed for src/query.rs"), "{}", run.stderr);
        assert!(run.stderr.contains(needle), "{}", run.stderr);
        assert!(rec.exists(), "the backend was called");
        let m = r.premerge(&["memory", "list", "--format", "json"]).json();
        let backend = m["memories"][0]["backend"].as_str().unwrap();
        assert!(backend.starts_with("failed: ") && backend.contains(needle), "{backend}");
        assert_eq!(event_kinds(&r).iter().filter(|k| *k == "guard-memory-backend-failed").count(), 2);
    }
}

#[test]
fn kill_switch_widening_scan_restores_the_hook_without_the_scan() {
    let (r, base, head) = widened_repo();
    let stdin = format!("refs/heads/main {head} refs/heads/main {base}\n");
    // Same repository content, scan off: the hook prints only its own header line.
    let mut off = widened_repo().0;
    off.env.push(("PREMERGE_WIDENING_SCAN".into(), "0".into()));
    let stdin_off = format!(
        "refs/heads/main {} refs/heads/main {}\n",
        off.git(&["rev-parse", "HEAD"]),
        off.git(&["rev-parse", "HEAD~1"])
    );
    let on = r.premerge_stdin(&["hook", "pre-push", "origin", "url"], stdin.as_bytes());
    on.expect_code(0);
    assert!(on.stdout.contains("premerge widening scan: 2 finding(s), 2 guard memory(ies) written"), "{}", on.stdout);
    let offrun = off.premerge_stdin(&["hook", "pre-push", "origin", "url"], stdin_off.as_bytes());
    offrun.expect_code(0);
    assert_eq!(offrun.stdout, "premerge pre-push: 1 file(s) changed in 1 ref(s) (+1 -2)\n");
    assert_eq!(offrun.stderr, "");
    assert!(!state_dir(&off).join("premerge.db").exists());
    assert!(!state_dir(&off).join("events.jsonl").exists());
    // The command itself reports nothing and writes nothing.
    let v = off.premerge(&["scan", "--format", "json"]);
    v.expect_code(0);
    assert_eq!(v.json()["findings"], json!([]));
    assert!(!state_dir(&off).join("premerge.db").exists());
}

#[test]
fn kill_switch_invariant_memory_keeps_findings_and_writes_nothing() {
    let (mut r, base, head) = widened_repo();
    r.env.push(("PREMERGE_INVARIANT_MEMORY".into(), "0".into()));
    let v = scan_json(&r, &["--issue", "4"]);
    assert_eq!(v["findings"].as_array().unwrap().len(), 2);
    assert_eq!(v["memories_written"], 0);
    let stdin = format!("refs/heads/main {head} refs/heads/main {base}\n");
    let run = r.premerge_stdin(&["hook", "pre-push", "origin", "url"], stdin.as_bytes());
    run.expect_code(0);
    assert!(run.stdout.contains("premerge widening scan: 2 finding(s) (signal only, not blocking)"), "{}", run.stdout);
    assert!(!state_dir(&r).join("premerge.db").exists());
    assert!(!state_dir(&r).join("events.jsonl").exists());
}

#[test]
fn post_merge_hook_scans_orig_head_to_head() {
    let r = TestRepo::new();
    r.write("src/query.rs", QUERY_BEFORE);
    r.commit_all("initial");
    r.git(&["checkout", "-q", "-b", "feature"]);
    r.write("src/query.rs", QUERY_AFTER);
    r.commit_all("widen");
    r.git(&["checkout", "-q", "main"]);
    r.git(&["merge", "-q", "feature"]);
    let run = r.premerge(&["hook", "post-merge", "0"]);
    run.expect_code(0);
    assert!(run.stdout.contains("premerge widening scan: 2 finding(s)"), "{}", run.stdout);
    assert!(
        run.stdout.contains("src/query.rs:3 rust-integer-widened Query.limit: limit: u8 -> limit: u64"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("set_ratio: assert!(r >= 0.0 && r <= 1.0) -> (removed)"), "{}", run.stdout);
}

#[test]
fn a_scan_error_in_a_hook_is_a_warning_and_the_push_goes_on() {
    let (r, base, head) = widened_repo();
    // Local git config: the pre-push hook reads premerge.toml as of the base only.
    r.git(&["config", "premerge.scan.ignore", "[\"[\"]"]);
    let stdin = format!("refs/heads/main {head} refs/heads/main {base}\n");
    let run = r.premerge_stdin(&["hook", "pre-push", "origin", "url"], stdin.as_bytes());
    run.expect_code(0);
    assert!(run.stderr.starts_with("premerge: widening scan: scan.ignore"), "{}", run.stderr);
    assert!(run.stderr.contains("signal only, not blocking"), "{}", run.stderr);
    assert!(run.stderr.contains("PREMERGE_WIDENING_SCAN=0"), "{}", run.stderr);
}

#[test]
fn bad_input_is_skipped_with_a_note_and_never_crashes() {
    let r = TestRepo::new();
    r.write("premerge.toml", "[scan]\nmax_file_bytes = 400\n");
    r.write("src/query.rs", QUERY_BEFORE);
    r.write("src/bin.rs", b"pub struct A { a: u8 }\0\x01\x02");
    r.write("src/latin.rs", b"pub struct A { a: u8 } // caf\xe9\n");
    r.write("src/big.rs", format!("pub struct A {{ a: u8 }}\n{}", "// padding\n".repeat(50)));
    r.write("src/broken.rs", "pub struct A { a: u8 }\n");
    r.commit_all("initial");
    r.write("src/query.rs", QUERY_AFTER);
    r.write("src/bin.rs", b"pub struct A { a: u64 }\0\x01\x02");
    r.write("src/latin.rs", b"pub struct A { a: u64 } // caf\xe9\n");
    r.write("src/big.rs", format!("pub struct A {{ a: u64 }}\n{}", "// padding\n".repeat(50)));
    r.write("src/broken.rs", "pub struct A { a: u64 \n");
    r.commit_all("change");
    let run = r.premerge(&["scan", "--format", "json", "--no-memory"]);
    run.expect_code(0);
    let v = run.json();
    let files: Vec<&str> = v["findings"].as_array().unwrap().iter().map(|f| f["file"].as_str().unwrap()).collect();
    assert_eq!(files, ["src/query.rs", "src/query.rs"]);
    let notes: Vec<(String, String)> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["file"].as_str().unwrap().to_string(), n["kind"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        notes,
        [
            ("src/big.rs".to_string(), "skipped".to_string()),
            ("src/bin.rs".to_string(), "skipped".to_string()),
            ("src/broken.rs".to_string(), "parse-failed".to_string()),
            ("src/latin.rs".to_string(), "skipped".to_string()),
        ]
    );
    assert!(run.stderr.contains("scan: src/big.rs: skipped: old version is"), "{}", run.stderr);
    assert!(run.stderr.contains("over scan.max_file_bytes (400)"), "{}", run.stderr);
    assert!(run.stderr.contains("scan: src/bin.rs: skipped: old version is binary"), "{}", run.stderr);
    assert!(run.stderr.contains("scan: src/latin.rs: skipped: not valid UTF-8"), "{}", run.stderr);
    assert!(
        run.stderr.contains("scan: src/broken.rs: not scanned: new version does not parse as Rust"),
        "{}",
        run.stderr
    );
}

#[test]
fn unknown_revision_is_exit_2() {
    let (r, _, _) = widened_repo();
    let run = r.premerge(&["scan", "--base", "no-such-rev"]);
    run.expect_code(2);
    assert!(run.stderr.contains("premerge: unknown revision `no-such-rev`"), "{}", run.stderr);
}

#[test]
fn staged_and_worktree_changes_are_scanned() {
    let r = TestRepo::new();
    r.write("src/query.rs", QUERY_BEFORE);
    r.commit_all("initial");
    r.write("src/query.rs", QUERY_AFTER);
    let v = scan_json(&r, &["--worktree"]);
    assert_eq!(v["head"], Value::Null);
    assert_eq!(v["findings"].as_array().unwrap().len(), 2);
    assert_eq!(v["memories_written"], 2);
    assert_eq!(scan_json(&r, &["--staged"])["findings"], json!([]));
    r.git(&["add", "src/query.rs"]);
    let v = scan_json(&r, &["--staged"]);
    assert_eq!(v["findings"].as_array().unwrap().len(), 2);
    assert_eq!(v["memories_written"], 0, "same cycle (the commit the changes sit on)");
}

#[test]
fn policies_from_premerge_toml() {
    let (r, _, _) = widened_repo();
    r.write("premerge.toml", "[scan.severity]\nrust-integer-widened = \"high\"\nrust-assert-removed = \"off\"\n");
    let v = scan_json(&r, &["--no-memory"]);
    assert_eq!(v["findings"].as_array().unwrap().len(), 1);
    assert_eq!(v["findings"][0]["severity"], "high");
    r.write("premerge.toml", "[scan]\nignore = [\"src/**\"]\n");
    assert_eq!(scan_json(&r, &["--no-memory"])["findings"], json!([]));
    r.write("premerge.toml", "[scan.severity]\nno-such-rule = \"low\"\n");
    let run = r.premerge(&["scan"]);
    run.expect_code(2);
    assert!(run.stderr.contains("scan.severity: unknown rule `no-such-rule`"), "{}", run.stderr);
}

#[test]
fn test_code_is_dropped_by_default_and_low_with_include_tests() {
    let r = TestRepo::new();
    r.write("tests/api.rs", QUERY_BEFORE);
    r.commit_all("initial");
    r.write("tests/api.rs", QUERY_AFTER);
    r.commit_all("change");
    assert_eq!(scan_json(&r, &["--no-memory"])["findings"], json!([]));
    r.write("premerge.toml", "[scan]\ninclude_tests = true\n");
    let v = scan_json(&r, &["--no-memory"]);
    let sev: Vec<&str> = v["findings"].as_array().unwrap().iter().map(|f| f["severity"].as_str().unwrap()).collect();
    assert_eq!(sev, ["low", "low"]);
}

/// A file that is test code by its path is not parsed when its findings would be
/// dropped: a test file that does not parse gets no "not scanned" note by default,
/// and gets one when test code is reported.
#[test]
fn a_test_file_is_not_parsed_unless_test_code_is_reported() {
    let r = TestRepo::new();
    r.write("tests/api.rs", QUERY_BEFORE);
    r.commit_all("initial");
    r.write("tests/api.rs", format!("{QUERY_AFTER}\nfn broken( {{\n"));
    r.commit_all("change");
    let v = scan_json(&r, &["--no-memory"]);
    assert_eq!((&v["findings"], &v["notes"]), (&json!([]), &json!([])), "{v}");
    r.write("premerge.toml", "[scan]\ninclude_tests = true\n");
    let v = scan_json(&r, &["--no-memory"]);
    let notes = v["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{v}");
    assert_eq!(notes[0]["file"], "tests/api.rs");
}

#[test]
fn rules_doc_flag_prints_the_committed_catalogue() {
    let r = TestRepo::new();
    let run = r.premerge(&["scan", "--rules-doc"]);
    run.expect_code(0);
    let committed = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/rules.md")).unwrap();
    assert_eq!(run.stdout, committed);
}

#[test]
fn demo_shows_both_findings_and_the_memories_written() {
    let r = TestRepo::new();
    let run = r.premerge(&["demo"]);
    run.expect_code(0);
    let out = &run.stdout;
    let stage = out.split("== widening scan ==").nth(1).unwrap().split("\n== ").next().unwrap();
    assert!(stage.contains("line 3: rust-integer-widened [medium] Query.limit"), "{stage}");
    assert!(stage.contains("line 7: rust-assert-removed [medium] set_ratio"), "{stage}");
    assert!(stage.contains("2 guard memory(ies) written"), "{stage}");
    assert!(stage.contains("$ premerge memory search --file src/query.rs"), "{stage}");
    assert!(stage.contains("Removed in issue #4. Verify what now guarantees the old invariant"), "{stage}");
}

/// The same `(file, symbol)` widened again in a later cycle is a stripe
/// (`scan:widening_repeat`): a proposal the first time, a recorded halt when it comes
/// back while that proposal is open. The scan stays a signal: exit 0 throughout.
#[test]
fn widening_the_same_symbol_in_a_later_cycle_is_a_stripe() {
    let r = TestRepo::new();
    let widen = |ty: &str, issue: &str| {
        r.write("src/q.rs", format!("pub struct Query {{\n    pub limit: {ty},\n}}\n"));
        r.commit_all(&format!("limit {ty}"));
        let out = r.premerge(&["scan", "--issue", issue, "--format", "json"]);
        out.expect_code(0);
        out
    };
    r.write("src/q.rs", "pub struct Query {\n    pub limit: u8,\n}\n");
    r.commit_all("query");
    let first = widen("u16", "1");
    assert!(!first.stderr.contains("widening_repeat"), "a first widening is no repeat: {}", first.stderr);
    let second = widen("u32", "2");
    assert!(second.stderr.contains("scan:widening_repeat:"), "{}", second.stderr);
    assert!(second.stderr.contains("\"outcome\":\"emitted\""), "{}", second.stderr);
    let third = widen("u64", "3");
    assert!(third.stderr.contains("\"outcome\":\"stripe_repeat_halt\""), "{}", third.stderr);
    // The halt is pending for a human.
    r.premerge(&["drain"]).expect_code(1);
}

/// The change window at the CLI: a repository whose changed file also holds helpers
/// the change does not touch, and one old declaration tree-sitter cannot parse (a
/// pre-1.0 fixed-length array type). With the window (the default) the touched
/// declarations are scanned and the widening found; `PREMERGE_SCAN_WINDOW=0` parses the
/// file whole, which fails, and says so in a note. On a file that parses, both give
/// the same JSON.
#[test]
fn the_change_window_scans_what_the_edit_touches_and_can_be_switched_off() {
    let helpers: String =
        (0..30).map(|k| format!("pub fn helper_{k}(x: u32) -> u32 {{\n    x + {k}\n}}\n\n")).collect();
    let old_syntax = "pub static NAMES: [&'static str, ..2] = [\"a\", \"b\"];\n";
    let r = TestRepo::new();
    r.write("src/query.rs", format!("{QUERY_BEFORE}\n{helpers}"));
    r.write("src/legacy.rs", format!("{QUERY_BEFORE}\n{helpers}{old_syntax}"));
    r.commit_all("initial");
    r.write("src/query.rs", format!("{QUERY_AFTER}\n{helpers}"));
    r.write("src/legacy.rs", format!("{QUERY_AFTER}\n{helpers}{old_syntax}"));
    r.commit_all("widen");

    let windowed = scan_json(&r, &["--no-memory", "--base", "HEAD~1"]);
    let mut whole_repo = r.at(&r.root);
    whole_repo.env.push(("PREMERGE_SCAN_WINDOW".into(), "0".into()));
    let whole = scan_json(&whole_repo, &["--no-memory", "--base", "HEAD~1"]);

    let of = |v: &Value, file: &str| -> Vec<Value> {
        v["findings"].as_array().unwrap().iter().filter(|f| f["file"] == file).cloned().collect()
    };
    // The file that parses: the same findings both ways, the widening among them.
    assert_eq!(of(&windowed, "src/query.rs"), of(&whole, "src/query.rs"));
    let rules: Vec<String> =
        of(&windowed, "src/query.rs").iter().map(|f| f["rule"].as_str().unwrap().to_string()).collect();
    assert_eq!(rules, ["rust-integer-widened", "rust-assert-removed"], "{windowed}");
    // The file with an unparseable old declaration far from the edit.
    assert_eq!(of(&windowed, "src/legacy.rs").len(), 2, "{windowed}");
    assert_eq!(windowed["notes"], json!([]));
    assert_eq!(of(&whole, "src/legacy.rs"), Vec::<Value>::new());
    assert_eq!(whole["notes"][0]["file"], "src/legacy.rs", "{whole}");
    assert_eq!(whole["notes"][0]["kind"], "parse-failed", "{whole}");
}

/// A new migration is judged against the tables the earlier migrations of its sequence
/// built, read at the base revision: `DROP CONSTRAINT` names a check declared two
/// migrations back, and `TYPE TEXT` retypes a column declared as `UUID` there.
#[test]
fn a_new_migration_is_judged_against_the_earlier_migrations_at_the_base() {
    let r = TestRepo::new();
    r.write(
        "db/migrations/1_create_orders.up.sql",
        "CREATE TABLE orders (\n  id UUID PRIMARY KEY,\n  qty INT NOT NULL,\n  CONSTRAINT qty_positive CHECK (qty > 0)\n);\n",
    );
    r.write("db/migrations/1_create_orders.down.sql", "DROP TABLE orders;\n");
    r.write("db/migrations/2_index.up.sql", "CREATE UNIQUE INDEX orders_one_qty ON orders (qty);\n");
    r.write("README.md", "# x\n");
    let base = r.commit_all("earlier migrations");
    // An unknown constraint name says no kind: it is a constraint dropped
    // (`sql-constraint-dropped`), never guessed to be a check or a key.
    r.write("db/migrations/3_cleanup.up.sql", "ALTER TABLE orders DROP CONSTRAINT some_name;\n");
    let head = r.commit_all("lookalike");
    let out = scan_json(&r, &["--base", &base, "--head", &head, "--no-memory"]);
    let rules: Vec<&str> = out["findings"].as_array().unwrap().iter().map(|f| f["rule"].as_str().unwrap()).collect();
    assert_eq!(rules, ["sql-constraint-dropped"], "{out}");
    r.write(
        "db/migrations/4_relax.up.sql",
        "ALTER TABLE orders DROP CONSTRAINT qty_positive;\nALTER TABLE orders ALTER COLUMN id TYPE TEXT;\nDROP INDEX orders_one_qty;\n",
    );
    let head2 = r.commit_all("relax");
    let out = scan_json(&r, &["--base", &head, "--head", &head2, "--no-memory"]);
    let got: Vec<(String, String)> = out["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["rule"].as_str().unwrap().to_string(), f["symbol"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        got,
        [
            ("sql-check-removed".to_string(), "orders.qty_positive".to_string()),
            ("sql-type-to-text".to_string(), "orders.id".to_string()),
            ("sql-unique-index-dropped".to_string(), "orders.orders_one_qty".to_string()),
        ],
        "{out}"
    );
    // Without the history (the file alone) none of the three can be judged as what it
    // was: the check is only a constraint dropped, of no known kind.
    let alone = engine::scan_file(
        &FileInput {
            path: "db/migrations/4_relax.up.sql".into(),
            before: None,
            after: Some(fs::read(r.root.join("db/migrations/4_relax.up.sql")).unwrap()),
        },
        &Policy::default(),
    );
    let rules: Vec<&str> = alone.findings.iter().map(|f| f.rule.as_str()).collect();
    assert_eq!(rules, ["sql-constraint-dropped"], "{alone:?}");
}

/// The scan cache (`<state>/scan-cache`): a second scan of the same range reads the
/// detectors' answers back and reports the same JSON byte for byte; the answer it
/// serves is the stored one (an entry altered by hand shows through, so the test
/// proves the cache is read); a damaged file or entry is a miss, never an error; and
/// `PREMERGE_SCAN_CACHE=0` neither reads nor writes it.
#[test]
fn the_scan_cache_serves_identical_findings_and_ignores_damage() {
    let (r, _, _) = widened_repo();
    let cache = state_dir(&r).join("scan-cache");
    let args = ["scan", "--no-memory", "--format", "json", "--base", "HEAD~1"];
    let cold = r.premerge(&args).expect_code(0).stdout.clone();
    assert_eq!(serde_json::from_str::<Value>(&cold).unwrap()["findings"].as_array().unwrap().len(), 2);
    let text = fs::read_to_string(&cache).expect("the first scan writes the cache");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "a header and the one Rust file: {text}");
    assert!(lines[0].starts_with("premerge-scan-cache 2 "), "{text}");
    let warm = r.premerge(&args).expect_code(0).stdout.clone();
    assert_eq!(warm, cold, "a cache hit gives the same output");

    // The entry, altered with its sum made again (what only premerge's own writer
    // does): the scan reports what the cache holds.
    let (key, rest) = lines[1].split_once(' ').unwrap();
    let generation = rest.split_once(' ').unwrap().0;
    let entry = |findings: &str| {
        use sha2::Digest;
        let sum = sha2::Sha256::digest(format!("{key} {findings}").as_bytes());
        let sum: String = sum[..8].iter().map(|b| format!("{b:02x}")).collect();
        format!("{key} {generation} {sum} {findings}")
    };
    let forged = format!(
        "{}\n{}\n",
        lines[0],
        entry("[[3,\"rust-integer-widened\",\"Forged.limit\",\"limit: u8\",\"limit: u64\",false]]")
    );
    fs::write(&cache, &forged).unwrap();
    let served = r.premerge(&args).expect_code(0).json();
    let symbols: Vec<&str> =
        served["findings"].as_array().unwrap().iter().map(|f| f["symbol"].as_str().unwrap()).collect();
    assert_eq!(symbols, ["Forged.limit"], "the stored answer is served");

    // Damaged: a rule id no build knows, a torn line, garbage, another format.
    let damaged = [
        format!("{}\n{}\n", lines[0], entry("[[3,\"no-such-rule\",\"A.b\",\"x\",\"y\",false]]")),
        format!("{}\n{}", lines[0], entry("[[3,\"rust-int")),
        "\u{0}\u{1} not a cache".to_string(),
        format!("premerge-scan-cache 999 {}", &lines[0]["premerge-scan-cache 2 ".len()..]),
    ];
    for junk in damaged {
        fs::write(&cache, &junk).unwrap();
        let out = r.premerge(&args);
        out.expect_code(0);
        assert_eq!(out.stdout, cold, "damaged cache {junk:?}");
        assert!(!out.stderr.contains("scan-cache"), "{}", out.stderr);
    }

    // Switched off: not read (the forged answer is not served), not written.
    fs::write(&cache, &forged).unwrap();
    let mut off = r.at(&r.root);
    off.env.push(("PREMERGE_SCAN_CACHE".into(), "0".into()));
    assert_eq!(off.premerge(&args).expect_code(0).stdout, cold);
    assert_eq!(fs::read_to_string(&cache).unwrap(), forged);
    fs::remove_file(&cache).unwrap();
    off.premerge(&args).expect_code(0);
    assert!(!cache.exists());

    // Without the window the cache is another one: the forged entry is not served.
    fs::write(&cache, &forged).unwrap();
    let mut whole = r.at(&r.root);
    whole.env.push(("PREMERGE_SCAN_WINDOW".into(), "0".into()));
    assert_eq!(whole.premerge(&args).expect_code(0).stdout, cold);
}

/// The inventory store (`<state>/scan-inventories.sqlite`): a scan stores the
/// inventories of the new versions it read whole (every changed Go file: Go has no
/// change window) whose path an earlier scan saw change too, the next scan of a later
/// range finds its old versions there, and its output is the uncached scan's byte for
/// byte. A store that is not a database is
/// replaced, a symlink in its place is never followed, and `PREMERGE_SCAN_CACHE=0`
/// leaves it alone.
#[test]
fn the_inventory_store_carries_a_version_to_the_next_scan() {
    let r = TestRepo::new();
    let version = |ty: &str, guard: &str| {
        format!(
            "package limits\n\nfunc Clamp(n {ty}) {ty} {{\n{guard}\treturn n\n}}\n\nfunc Keep(n int8) int8 {{\n\tif n < 0 {{\n\t\tpanic(\"negative\")\n\t}}\n\treturn n\n}}\n"
        )
    };
    let guard = "\tif n > 100 {\n\t\tpanic(\"too large\")\n\t}\n";
    r.write("limits/limits.go", version("uint8", guard));
    r.commit_all("zero");
    r.write("limits/limits.go", version("int8", guard));
    r.commit_all("one");
    r.write("limits/limits.go", version("int16", guard));
    r.commit_all("two");
    r.write("limits/limits.go", version("int32", ""));
    r.commit_all("three");
    let store = state_dir(&r).join("scan-inventories.sqlite");
    let blob = |rev: &str| r.git(&["rev-parse", &format!("{rev}:limits/limits.go")]).trim().to_string();
    let stored = || -> BTreeSet<String> {
        let conn = rusqlite::Connection::open(&store).unwrap();
        let mut q = conn.prepare("SELECT oid FROM inventories").unwrap();
        q.query_map([], |row| row.get(0)).unwrap().map(Result::unwrap).collect()
    };
    let scan = |env: &[(&str, &str)], base: &str, head: &str| {
        let mut at = r.at(&r.root);
        at.env.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        at.premerge(&["scan", "--no-memory", "--format", "json", "--base", base, "--head", head])
            .expect_code(0)
            .stdout
            .clone()
    };
    let off = [("PREMERGE_SCAN_CACHE", "0")];
    let reference = [scan(&off, "HEAD~3", "HEAD~2"), scan(&off, "HEAD~2", "HEAD~1"), scan(&off, "HEAD~1", "HEAD")];
    assert!(!store.exists(), "switched off, the store is not made");
    assert!(reference[2].contains("go-panic-removed") && reference[2].contains("go-int-widened"), "{}", reference[2]);

    // The path's first change: remembered, no version stored.
    assert_eq!(scan(&[], "HEAD~3", "HEAD~2"), reference[0]);
    assert_eq!(stored(), BTreeSet::new());
    // Its second: the new version is stored (the old one is no later change's old one).
    assert_eq!(scan(&[], "HEAD~2", "HEAD~1"), reference[1]);
    assert_eq!(stored(), BTreeSet::from([blob("HEAD~1")]));
    // The next range: its old version is the one stored.
    assert_eq!(scan(&[], "HEAD~1", "HEAD"), reference[2]);
    assert_eq!(stored(), BTreeSet::from([blob("HEAD~1"), blob("HEAD")]));

    // Not a database: replaced, the scan unchanged. (The scan cache, which answers a
    // range scanned before without asking the store, is removed first.)
    let findings_cache = state_dir(&r).join("scan-cache");
    fs::write(&store, b"\x00\x01 not a database at all, but long enough to be read as one").unwrap();
    fs::remove_file(&findings_cache).unwrap();
    assert_eq!(scan(&[], "HEAD~1", "HEAD"), reference[2]);
    assert_eq!(stored(), BTreeSet::new(), "a new store, which has seen the path once");

    // A symlink in its place: not followed (its target is not touched), the scan unchanged.
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("victim");
    fs::write(&target, b"keep me").unwrap();
    fs::remove_file(&store).unwrap();
    std::os::unix::fs::symlink(&target, &store).unwrap();
    fs::remove_file(&findings_cache).unwrap();
    assert_eq!(scan(&[], "HEAD~1", "HEAD"), reference[2]);
    assert_eq!(fs::read(&target).unwrap(), b"keep me");
    assert!(fs::symlink_metadata(&store).unwrap().file_type().is_symlink());
}

/// A change larger than one part of the scan (`scan::SCAN_PART_FILES`, 256 files, read
/// and scanned apart): an assert removed from a file of the first part and moved into
/// a helper added in a later part is recognised as moved, as in a small change; the
/// range without the helper still reports it.
#[test]
fn a_check_moved_across_the_parts_of_a_large_change_is_not_removed() {
    let r = TestRepo::new();
    let filler =
        |k: usize, note: &str| format!("/// {note} record {k}.\npub struct Record{k} {{\n    pub a: u8,\n}}\n");
    let before = "pub fn g(x: u8) -> u8 {\n    assert!(x < 10 && x != 3);\n    x\n}\n";
    r.write("src/a.rs", before);
    for k in 0..300 {
        r.write(&format!("src/f{k:03}.rs"), filler(k, "A"));
    }
    r.commit_all("initial");
    r.write("src/a.rs", "pub fn g(x: u8) -> u8 {\n    check(x);\n    x\n}\n");
    for k in 0..300 {
        r.write(&format!("src/f{k:03}.rs"), filler(k, "The"));
    }
    r.commit_all("the assert leaves g");
    r.write("src/z.rs", "pub fn check(x: u8) {\n    assert!(x < 10 && x != 3);\n}\n");
    r.commit_all("the assert arrives in a helper");

    let removed = |v: &Value| -> Vec<Value> {
        v["findings"].as_array().unwrap().iter().filter(|f| f["rule"] == "rust-assert-removed").cloned().collect()
    };
    let without_helper = scan_json(&r, &["--no-memory", "--base", "HEAD~2", "--head", "HEAD~1"]);
    assert_eq!(removed(&without_helper).len(), 1, "{without_helper}");
    assert_eq!(removed(&without_helper)[0]["file"], "src/a.rs");
    let with_helper = scan_json(&r, &["--no-memory", "--base", "HEAD~2"]);
    assert_eq!(removed(&with_helper), Vec::<Value>::new(), "{with_helper}");
    assert_eq!(with_helper["notes"], json!([]));
}

/// A diesel migration dropping a column's implicit unique key (`<table>_<column>_key`,
/// declared as `UNIQUE` on the column two migrations back) beside the `down.sql` that
/// adds it back: the finding names the column, and the down half (which undoes the
/// change, never moves the key elsewhere) does not hide it (LemmyNet/lemmy `53147596`).
#[test]
fn an_implicit_unique_key_dropped_beside_its_down_migration_is_reported_on_its_column() {
    let r = TestRepo::new();
    r.write(
        "migrations/2019-02-01-000000_create_site/up.sql",
        "CREATE TABLE site (\n    id serial PRIMARY KEY,\n    title varchar(20) NOT NULL UNIQUE\n);\n",
    );
    r.write("migrations/2019-02-01-000000_create_site/down.sql", "DROP TABLE site;\n");
    let base = r.commit_all("site");
    r.write(
        "migrations/2024-02-02-080000_title_not_unique/up.sql",
        "ALTER TABLE site\n    DROP CONSTRAINT site_title_key;\n",
    );
    r.write(
        "migrations/2024-02-02-080000_title_not_unique/down.sql",
        "ALTER TABLE site\n    ADD CONSTRAINT site_title_key UNIQUE (title);\n",
    );
    let head = r.commit_all("titles may repeat");
    let out = scan_json(&r, &["--base", &base, "--head", &head, "--no-memory"]);
    let got: Vec<(&str, &str)> = out["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["rule"].as_str().unwrap(), f["symbol"].as_str().unwrap()))
        .collect();
    assert_eq!(got, [("sql-unique-dropped", "site.title")], "{out}");
}

/// A named CHECK constraint dropped in `up.sql` and added back by its `down.sql`: the down
/// half undoes the migration and is never where the check moved, so the drop stays a
/// finding (the engine's moved-check pass leaves down migrations out, whatever the name).
#[test]
fn a_named_check_dropped_beside_its_down_migration_is_still_reported() {
    let r = TestRepo::new();
    r.write(
        "migrations/2020-01-01-000000_create_site/up.sql",
        "CREATE TABLE site (\n    id serial PRIMARY KEY,\n    title varchar(20) NOT NULL,\n    CONSTRAINT site_title_nonblank CHECK (length(trim(title)) > 0)\n);\n",
    );
    r.write("migrations/2020-01-01-000000_create_site/down.sql", "DROP TABLE site;\n");
    let base = r.commit_all("site");
    r.write(
        "migrations/2024-03-03-000000_blank_titles/up.sql",
        "ALTER TABLE site DROP CONSTRAINT site_title_nonblank;\n",
    );
    r.write(
        "migrations/2024-03-03-000000_blank_titles/down.sql",
        // Spelt as the finding quotes the old definition, so that only the rule
        // "a down migration is never where a check moved" keeps the finding.
        "ALTER TABLE site ADD CONSTRAINT site_title_nonblank CHECK (length(TRIM(title)) > 0);\n",
    );
    let head = r.commit_all("titles may be blank");
    let out = scan_json(&r, &["--base", &base, "--head", &head, "--no-memory"]);
    let files: Vec<&str> = out["findings"].as_array().unwrap().iter().map(|f| f["file"].as_str().unwrap()).collect();
    assert_eq!(files, ["migrations/2024-03-03-000000_blank_titles/up.sql"], "{out}");
}
