//! The widening scan: the fixture harness and its meta-test, end-to-end scans of real
//! repositories, guard memories, the external backend, kill switches and hooks.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use premerge::widen::catalogue;
use premerge::widen::engine::{self, FileInput, Policy};
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

/// Run the full engine (every rule, default policies) on a case; the findings as
/// `expected.json` spells them.
fn run_case(case: &Case) -> Value {
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
    let input = FileInput { path, before: before.map(|v| v.1), after: after.map(|v| v.1) };
    let report = engine::scan_file(&input, &Policy::default());
    assert!(report.notes.is_empty(), "{}: the engine noted {:?}", case.id(), report.notes);
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

/// Every rule runs against every fixture: each case's findings (all rules, after
/// policies) must equal its `expected.json` exactly.
#[test]
fn every_fixture_reports_exactly_its_expected_findings() {
    let mut failures = Vec::new();
    for case in cases() {
        let got = run_case(&case);
        let want = expected(&case);
        if got != want {
            failures.push(format!(
                "{}:\n  expected {}\n  actual   {}",
                case.id(),
                serde_json::to_string(&want).unwrap(),
                serde_json::to_string_pretty(&got).unwrap()
            ));
        }
    }
    assert!(failures.is_empty(), "{} fixture(s) differ:\n{}", failures.len(), failures.join("\n"));
}

/// `fires*` cases report their own rule; every other case must not.
#[test]
fn firing_cases_fire_and_near_misses_do_not() {
    let mut failures = Vec::new();
    for case in cases() {
        let got = run_case(&case);
        let own = got["findings"].as_array().unwrap().iter().any(|f| f["rule"] == case.rule.as_str());
        if own != case.fires() {
            failures.push(format!("{}: own rule reported = {own}", case.id()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The meta-test: every rule has a firing and a non-firing fixture, and every fixture
/// folder belongs to a rule of the catalogue.
#[test]
fn every_rule_has_fixtures_and_every_fixture_has_a_rule() {
    let ids: BTreeSet<&str> = catalogue::all().map(|r| r.id).collect();
    let mut by_rule: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut problems = Vec::new();
    for case in cases() {
        if !ids.contains(case.rule.as_str()) {
            problems.push(format!("fixtures/{}: no rule of the catalogue has this id", case.rule));
        }
        if !case.dir.join("expected.json").is_file() {
            problems.push(format!("fixtures/{}: no expected.json", case.id()));
        }
        let e = by_rule.entry(case.rule.clone()).or_default();
        if case.fires() { e.0 += 1 } else { e.1 += 1 }
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
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `docs/rules.md` is generated from the catalogue and must match it.
#[test]
fn rules_doc_matches_the_catalogue() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/rules.md");
    let committed = fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == catalogue::rules_doc(),
        "docs/rules.md is out of date: regenerate it with `premerge scan --rules-doc > docs/rules.md`"
    );
}
