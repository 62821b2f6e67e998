//! Test helpers over the fixture tree (`fixtures/<rule-id>/<case>/`): the fixture
//! texts of a language, for the equivalence tests of the window and the incremental
//! walk. The fixture harness itself (every rule over every fixture) is in
//! `tests/it/scan.rs`.

use std::path::Path;

use crate::widen::RuleDef;

/// Both versions of every fixture case of the rules whose id starts with `prefix`,
/// with the extension of the case's files (an absent side is empty).
pub(crate) fn pairs(prefix: &str, exts: &[&str]) -> Vec<(String, String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut out = Vec::new();
    let mut rules: Vec<_> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).collect();
    rules.sort();
    for rule in rules.iter().filter(|r| r.file_name().unwrap().to_string_lossy().starts_with(prefix)) {
        let mut cases: Vec<_> = std::fs::read_dir(rule).unwrap().map(|e| e.unwrap().path()).collect();
        cases.sort();
        for case in cases {
            let (before, after, ext) = read_pair(&case, exts);
            out.push((ext, before, after));
        }
    }
    out
}

/// The premise of the engine's shortcut for added files: run each detector with an
/// empty old version on every fixture text of its language (both sides, as if each
/// were a new file) and require no finding wherever `added_may_fire` says none is
/// possible.
#[test]
fn added_files_are_skipped_only_where_nothing_can_fire() {
    use crate::widen::{Language, added_may_fire, go, python, rust, ts};
    let detectors: [(&[RuleDef], &[&str], Language); 4] = [
        (rust::RULES, &["rs"], Language::Rust),
        (ts::RULES, &["ts", "tsx", "js", "mjs", "cjs", "jsx", "mts", "cts"], Language::Typescript),
        (python::RULES, &["py", "pyi"], Language::Python),
        (go::RULES, &["go"], Language::Go),
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    for (rules, exts, lang) in detectors {
        let mut checked = 0;
        for rule in rules {
            for case in std::fs::read_dir(root.join(rule.id.as_str())).unwrap() {
                let case = case.unwrap().path();
                let (before, after, ext) = read_pair(&case, exts);
                let path = format!("src/fixture.{ext}");
                for text in [before, after] {
                    if text.is_empty() || added_may_fire(lang, &text) {
                        continue;
                    }
                    // A text that does not parse alone (a fragment) proves nothing either way.
                    if let Ok(found) = crate::widen::detector::run(lang, &path, "", &text, true) {
                        assert!(found.is_empty(), "{}: an added file gave {found:?}", case.display());
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 10, "{lang:?}: fixture texts checked: {checked}");
    }
}

fn read_pair(case: &Path, exts: &[&str]) -> (String, String, String) {
    for ext in exts {
        let b = case.join(format!("before.{ext}"));
        let a = case.join(format!("after.{ext}"));
        if b.exists() || a.exists() {
            let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
            return (read(&b), read(&a), ext.to_string());
        }
    }
    panic!("{}: no before/after file with extension {exts:?}", case.display());
}

/// A declared-constraint pass's findings as `(rule, symbol)` pairs are exactly `want`
/// (in any order), each missing one named.
pub(crate) fn assert_found(got: &[(crate::widen::RuleId, String)], want: &[(crate::widen::RuleId, &str)]) {
    for (rule, symbol) in want {
        assert!(got.contains(&(*rule, symbol.to_string())), "{rule} {symbol} missing in {got:?}");
    }
    assert_eq!(got.len(), want.len(), "{got:?}");
}
