//! Runs `fixtures/<rule-id>/<case>/` through one detector and compares with
//! `expected.json`, until the engine's harness covers the same ground.

use std::path::Path;

use serde_json::Value;

use crate::widen::{DetectError, RawFinding, RuleDef};

type Detect = fn(&str, &str, &str) -> Result<Vec<RawFinding>, DetectError>;
/// A detector that also takes the earlier migrations (`earlier/` of a case).
type DetectAfter = fn(&str, &str, &str, &[&str]) -> Result<Vec<RawFinding>, DetectError>;

pub(crate) fn run(rules: &[RuleDef], detect: Detect) {
    run_inner(rules, &move |path, before, after, earlier| {
        if !earlier.is_empty() {
            return Err(DetectError("this detector takes no earlier/ files".into()));
        }
        detect(path, before, after)
    });
}

/// [`run`] where a case may hold `earlier/`: the migrations that run before the
/// file, applied in the byte order of their names.
pub(crate) fn run_with_earlier(rules: &[RuleDef], detect: DetectAfter) {
    run_inner(rules, &detect);
}

fn run_inner(rules: &[RuleDef], detect: &Detect4) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut failures = Vec::new();
    for rule in rules {
        let dir = root.join(rule.id);
        let mut cases: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("readable dir entry").path())
            .collect();
        cases.sort();
        let has = |prefix: bool| {
            cases.iter().any(|c| {
                let name = c.file_name().expect("case name").to_string_lossy().to_string();
                name.starts_with("fires") == prefix
            })
        };
        assert!(has(true) && has(false), "{}: needs a fires and a non-firing case", rule.id);
        for case in cases {
            if let Err(e) = run_case(rule.id, &case, detect) {
                failures.push(format!("{}: {e}", case.display()));
            }
        }
    }
    assert!(failures.is_empty(), "fixture failures:\n{}", failures.join("\n\n"));
}

/// `expected.json` in the fixture format, one finding per line, fields in the
/// documented order (for `PREMERGE_BLESS=1`; review the diff before committing).
fn render_expected(found: &[Value]) -> String {
    let rows: Vec<String> = found
        .iter()
        .map(|f| {
            let s = |k: &str| serde_json::to_string(&f[k]).unwrap_or_default();
            format!(
                "  {{\"rule\": {}, \"symbol\": {}, \"line\": {}, \"before\": {}, \"after\": {}}}",
                s("rule"),
                s("symbol"),
                s("line"),
                s("before"),
                s("after")
            )
        })
        .collect();
    if rows.is_empty() {
        return "{\"findings\": []}\n".to_string();
    }
    format!("{{\"findings\": [\n{}\n]}}\n", rows.join(",\n"))
}

type Detect4 = dyn Fn(&str, &str, &str, &[&str]) -> Result<Vec<RawFinding>, DetectError>;

fn run_case(rule: &str, case: &Path, detect: &Detect4) -> Result<(), String> {
    let mut ext = None;
    for entry in std::fs::read_dir(case).map_err(|e| e.to_string())? {
        let name = entry.map_err(|e| e.to_string())?.file_name().to_string_lossy().to_string();
        for side in ["before.", "after."] {
            if let Some(e) = name.strip_prefix(side) {
                ext = Some(e.to_string());
            }
        }
    }
    let ext = ext.ok_or("no before/after file")?;
    let read = |name: String| std::fs::read_to_string(case.join(name)).unwrap_or_default();
    let before = read(format!("before.{ext}"));
    let after = read(format!("after.{ext}"));
    let path = std::fs::read_to_string(case.join("path.txt"))
        .map(|p| p.trim().to_string())
        .unwrap_or_else(|_| format!("src/fixture.{ext}"));
    let mut earlier: Vec<(String, String)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(case.join("earlier")) {
        for e in entries {
            let e = e.map_err(|e| e.to_string())?;
            let text = std::fs::read_to_string(e.path()).map_err(|e| e.to_string())?;
            earlier.push((e.file_name().to_string_lossy().to_string(), text));
        }
    }
    earlier.sort();
    let earlier: Vec<&str> = earlier.iter().map(|(_, t)| t.as_str()).collect();
    let got: Vec<Value> = detect(&path, &before, &after, &earlier)
        .map_err(|e| format!("detect failed: {e}"))?
        .into_iter()
        .map(|f| {
            serde_json::json!({
                "rule": f.rule, "symbol": f.symbol, "line": f.line,
                "before": f.before, "after": f.after,
            })
        })
        .collect();
    let expected: Value =
        serde_json::from_str(&read("expected.json".into())).map_err(|e| format!("expected.json: {e}"))?;
    let want = expected["findings"].as_array().cloned().unwrap_or_default();
    if got != want && std::env::var_os("PREMERGE_BLESS").is_some() {
        std::fs::write(case.join("expected.json"), render_expected(&got)).map_err(|e| e.to_string())?;
    } else if got != want {
        return Err(format!(
            "got {}\nwant {}",
            serde_json::to_string_pretty(&got).unwrap_or_default(),
            serde_json::to_string_pretty(&want).unwrap_or_default()
        ));
    }
    let name = case.file_name().expect("case name").to_string_lossy().to_string();
    let own = got.iter().any(|f| f["rule"] == rule);
    if name.starts_with("fires") != own {
        return Err(format!("case name and own-rule finding disagree (own rule fired: {own})"));
    }
    Ok(())
}
