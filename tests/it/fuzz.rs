//! Property-based fuzzing of every parser of input from outside premerge.
//!
//! cargo-fuzz needs a nightly compiler, which CI does not have, so each target is a
//! proptest run over three kinds of input: arbitrary bytes (read as text the way a
//! reader does, lossily), mutations of the seed corpus in `fuzz/corpus/<target>/`
//! (byte edits and splices of tokens that matter to the parser), and, for JSON
//! inputs, structure-aware edits of a parsed seed (a node replaced by a generated
//! value, a key added or removed). Every target asserts that the parser never
//! panics, that it ends on bounded input (cases are at most a few KiB; a hang fails
//! the test run), that an error is one non-empty line naming what failed, and the
//! invariants a caller depends on when the input is accepted.
//!
//! `PREMERGE_FUZZ_CASES=N` runs N cases per target (default 1024, which keeps the whole
//! module well under a minute in a debug build on two cores); the figures of the
//! long campaigns are in `docs/reliability.md`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Map, Value};

/// Cases per target.
fn cases() -> u32 {
    std::env::var("PREMERGE_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1024)
}

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join("corpus").join(target)
}

/// The seed corpus of a target, in byte order of the file names (deterministic).
fn seeds(target: &str) -> Vec<String> {
    let dir = corpus_dir(target);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    let out: Vec<String> = paths.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect();
    assert!(!out.is_empty(), "{}: empty seed corpus", dir.display());
    out
}

/// Tokens every text target is tried with: structure, numbers at the edges of every
/// integer type, control and bidi characters, paths that try to leave the repository.
const COMMON_TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "\\",
    "\\u0000",
    "\\ud800",
    "\n",
    "\r",
    "\t",
    " ",
    "\u{202e}",
    "\u{0}",
    "\u{7}",
    "\u{feff}",
    "null",
    "true",
    "false",
    "0",
    "-1",
    "1e999",
    "-0",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "1.5",
    "\"\"",
    "../",
    "/",
    "/etc/passwd",
    "file://",
    "%2e%2e/",
    "%",
    "%zz",
    "C:\\x",
    ".git/config",
    "\u{00e9}",
    "\u{1F600}",
    "=",
    "#",
    "'''",
    "\"\"\"",
];

/// One edit of a text.
#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, String),
    Delete(usize, usize),
    Replace(usize, String),
    Duplicate(usize, usize),
    Byte(usize, u8),
}

fn edit_strategy(tokens: &'static [&'static str]) -> impl Strategy<Value = Edit> {
    let tok = select(tokens.iter().chain(COMMON_TOKENS).map(|s| s.to_string()).collect::<Vec<_>>());
    prop_oneof![
        (any::<usize>(), tok.clone()).prop_map(|(p, t)| Edit::Insert(p, t)),
        (any::<usize>(), 1usize..32).prop_map(|(p, n)| Edit::Delete(p, n)),
        (any::<usize>(), tok).prop_map(|(p, t)| Edit::Replace(p, t)),
        (any::<usize>(), 1usize..64).prop_map(|(p, n)| Edit::Duplicate(p, n)),
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Edit::Byte(p, b)),
    ]
}

/// Apply edits to the bytes of `seed`, then read the result as a reader does.
fn apply(seed: &str, edits: &[Edit]) -> String {
    let mut b = seed.as_bytes().to_vec();
    for e in edits {
        let at = |p: usize, b: &Vec<u8>| if b.is_empty() { 0 } else { p % (b.len() + 1) };
        match e {
            Edit::Insert(p, t) => {
                let i = at(*p, &b);
                b.splice(i..i, t.bytes());
            }
            Edit::Delete(p, n) => {
                let i = at(*p, &b);
                let end = (i + n).min(b.len());
                b.drain(i..end);
            }
            Edit::Replace(p, t) => {
                let i = at(*p, &b);
                let end = (i + t.len()).min(b.len());
                b.splice(i..end, t.bytes());
            }
            Edit::Duplicate(p, n) => {
                let i = at(*p, &b);
                let end = (i + n).min(b.len());
                let copy = b[i..end].to_vec();
                b.splice(end..end, copy);
            }
            Edit::Byte(p, v) => {
                if !b.is_empty() {
                    let i = p % b.len();
                    b[i] = *v;
                }
            }
        }
        b.truncate(64 << 10);
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// A bounded arbitrary JSON value whose keys come from the parser's vocabulary.
fn arb_json(keys: &'static [&'static str]) -> impl Strategy<Value = Value> {
    let key = select(keys.to_vec()).prop_map(str::to_string);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        select(COMMON_TOKENS.to_vec()).prop_map(|s| Value::String(s.to_string())),
        ".{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

/// Structure-aware edits of a JSON seed.
#[derive(Debug, Clone)]
enum JsonEdit {
    /// Replace the n-th node (pre-order) by a value.
    Replace(usize, Value),
    /// Remove a key from the n-th object.
    Remove(usize, usize),
    /// Set a key of the n-th object.
    Set(usize, String, Value),
    /// Duplicate an element of the n-th array many times.
    Grow(usize, usize),
}

fn json_edit_strategy(keys: &'static [&'static str]) -> impl Strategy<Value = JsonEdit> {
    prop_oneof![
        (any::<usize>(), arb_json(keys)).prop_map(|(n, v)| JsonEdit::Replace(n, v)),
        (any::<usize>(), any::<usize>()).prop_map(|(n, k)| JsonEdit::Remove(n, k)),
        (any::<usize>(), select(keys.to_vec()), arb_json(keys)).prop_map(|(n, k, v)| JsonEdit::Set(n, k.into(), v)),
        (any::<usize>(), 1usize..200).prop_map(|(n, k)| JsonEdit::Grow(n, k)),
    ]
}

fn nodes(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(nodes).sum(),
        Value::Object(o) => o.values().map(nodes).sum(),
        _ => 0,
    }
}

/// The n-th node in pre-order (n < nodes(v)).
fn nth(v: &mut Value, n: usize) -> &mut Value {
    if n == 0 {
        return v;
    }
    let mut n = n - 1;
    let children: Vec<&mut Value> = match v {
        Value::Array(a) => a.iter_mut().collect(),
        Value::Object(o) => o.values_mut().collect(),
        _ => unreachable!("n < nodes(v)"),
    };
    for c in children {
        let k = nodes(c);
        if n < k {
            return nth(c, n);
        }
        n -= k;
    }
    unreachable!("n < nodes(v)")
}

fn apply_json(seed: &Value, edits: &[JsonEdit]) -> Value {
    let mut v = seed.clone();
    for e in edits {
        let total = nodes(&v);
        match e {
            JsonEdit::Replace(n, new) => *nth(&mut v, n % total) = new.clone(),
            JsonEdit::Remove(n, k) => {
                if let Value::Object(o) = nth(&mut v, n % total)
                    && !o.is_empty()
                {
                    let key = o.keys().nth(k % o.len()).cloned().unwrap();
                    o.remove(&key);
                }
            }
            JsonEdit::Set(n, k, new) => {
                if let Value::Object(o) = nth(&mut v, n % total) {
                    o.insert(k.clone(), new.clone());
                }
            }
            JsonEdit::Grow(n, times) => {
                if let Value::Array(a) = nth(&mut v, n % total)
                    && let Some(first) = a.first().cloned()
                {
                    a.extend(std::iter::repeat_n(first, *times));
                }
            }
        }
    }
    v
}

/// Every kind of input for a target: arbitrary bytes, arbitrary text, edited seeds,
/// splices of two seeds, and (for JSON targets) structure-aware edits.
fn inputs(
    target: &str,
    tokens: &'static [&'static str],
    json_keys: Option<&'static [&'static str]>,
) -> BoxedStrategy<String> {
    let s = seeds(target);
    let bytes = proptest::collection::vec(any::<u8>(), 0..2048).prop_map(|b| String::from_utf8_lossy(&b).into_owned());
    let text = any::<String>();
    let edited = (select(s.clone()), proptest::collection::vec(edit_strategy(tokens), 1..10))
        .prop_map(|(seed, edits)| apply(&seed, &edits));
    let spliced = (select(s.clone()), select(s.clone()), any::<usize>(), any::<usize>()).prop_map(|(a, b, i, j)| {
        let i = floor_char(&a, i % (a.len() + 1));
        let j = floor_char(&b, j % (b.len() + 1));
        format!("{}{}", &a[..i], &b[j..])
    });
    let mut all = vec![bytes.boxed(), text.boxed(), edited.boxed(), spliced.boxed()];
    if let Some(keys) = json_keys {
        let parsed: Vec<Value> = s.iter().filter_map(|t| serde_json::from_str(t).ok()).collect();
        assert!(!parsed.is_empty(), "{target}: no seed parses as JSON");
        let structured = (select(parsed), proptest::collection::vec(json_edit_strategy(keys), 1..5))
            .prop_map(|(seed, edits)| apply_json(&seed, &edits).to_string())
            .boxed();
        // Weighted: the structure-aware generator reaches past the first checks.
        all.push(structured.clone());
        all.push(structured);
    }
    proptest::strategy::Union::new(all).boxed()
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Run `check` over the target's inputs; a panic or a failed assertion is shrunk by
/// proptest and reported with the input that caused it.
fn fuzz(
    target: &str,
    tokens: &'static [&'static str],
    json_keys: Option<&'static [&'static str]>,
    check: impl Fn(&str),
) {
    let n = cases();
    let mut runner = runner();
    // Every seed as it is, first.
    for s in seeds(target) {
        check(&s);
    }
    let result = runner.run(&inputs(target, tokens, json_keys), |input| {
        check(&input);
        Ok(())
    });
    if let Err(e) = result {
        panic!("fuzz target {target}: {e}");
    }
    eprintln!("fuzz target {target}: {n} cases, no panic");
}

/// A runner with a fixed seed: the same cases on every run, so a red run reproduces.
fn runner() -> TestRunner {
    let config = Config { cases: cases(), failure_persistence: None, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[0x5e; 32]))
}

/// An error message as a user sees it: not empty, one line.
fn one_line(target: &str, msg: &str) {
    assert!(!msg.trim().is_empty(), "{target}: empty error message");
    assert!(!msg.contains('\n') && !msg.contains('\r'), "{target}: error message spans lines: {msg:?}");
}

const FINDINGS_KEYS: &[&str] = &[
    "findings",
    "path",
    "file",
    "title",
    "summary",
    "lens",
    "line",
    "severity",
    "description",
    "failure_scenario",
    "category",
    "verdict",
    "suggestion",
    "version",
    "runs",
    "results",
    "ruleId",
    "level",
    "message",
    "text",
    "markdown",
    "locations",
    "physicalLocation",
    "artifactLocation",
    "uri",
    "uriBaseId",
    "region",
    "startLine",
    "originalUriBaseIds",
];
const FINDINGS_TOKENS: &[&str] = &[
    "\"path\":",
    "\"file\":",
    "\"line\":",
    "\"title\":",
    "\"summary\":",
    "\"runs\":",
    "\"version\":\"2.1.0\"",
    "\"uri\":",
    "\"startLine\":",
    "\"findings\":",
    "/repo/",
    "file:///repo/",
    "file://localhost/repo/",
    "./",
];

fn findings_target(target: &str) {
    fuzz(target, FINDINGS_TOKENS, Some(FINDINGS_KEYS), |text| match premerge::findings::parse(text, "/repo") {
        Ok(f) => {
            for x in &f.findings {
                // Never absolute, however the slashes are doubled or spelt
                // (`open_findings_double_slash_path_stays_relative`).
                assert!(!x.file.starts_with('/'), "{target}: accepted an absolute path {:?} from {text:?}", x.file);
                assert_ne!(x.line, Some(0), "{target}: accepted line 0 from {text:?}");
            }
        }
        Err(e) => {
            let msg = e.to_string();
            one_line(target, &msg);
            assert!(msg.starts_with('$'), "{target}: error does not name the JSON path: {msg:?}");
        }
    });
}

#[test]
fn fuzz_findings_lens() {
    findings_target("findings_lens");
}

#[test]
fn fuzz_findings_reviewer() {
    findings_target("findings_reviewer");
}

#[test]
fn fuzz_sarif() {
    findings_target("sarif");
}

const BLOCKED_KEYS: &[&str] =
    &["schema_version", "attempt", "blocked_on", "blocked_on_file", "file", "from_file", "reason", "status"];
const BLOCKED_TOKENS: &[&str] = &[
    "\"file\":",
    "\"from_file\":",
    "\"reason\":",
    "\"attempt\":",
    "\"schema_version\":",
    "\"blocked_on\":",
    "</external-untrusted-input>",
    ".git/",
    "..",
    "\u{200b}",
    "\u{ff0f}",
];

/// What carry's decision must hold for any rows: every row is admitted or dropped for
/// a named reason, at most `cap` admitted, and an admitted path is plain.
fn check_carry(target: &str, rows: &[Value]) {
    use premerge::waves::carry::{DROP_REASONS, PathCheck, decide};
    let owned: HashSet<String> = ["src/owned.rs".to_string()].into();
    let cap = 4;
    let mut asked = Vec::new();
    let out = decide(rows, &owned, cap, &mut |p: &str| {
        asked.push(p.to_string());
        PathCheck::Regular
    });
    assert_eq!(out.admitted.len() + out.dropped_total(), rows.len(), "{target}: a row neither admitted nor dropped");
    assert!(out.admitted.len() <= cap, "{target}: more than cap admitted");
    for reason in out.dropped.keys() {
        assert!(DROP_REASONS.contains(&reason.as_str()), "{target}: undeclared drop reason {reason}");
    }
    let mut seen = HashSet::new();
    for row in &out.admitted {
        let f = &row.file;
        assert!(seen.insert(f.clone()), "{target}: {f:?} admitted twice");
        assert!(!f.is_empty() && !f.starts_with('/'), "{target}: admitted {f:?}");
        assert!(!f.split('/').any(|c| c == ".." || c == "." || c.is_empty()), "{target}: admitted {f:?}");
        assert!(!f.chars().any(char::is_control), "{target}: admitted a control character in {f:?}");
        assert!(!row.from_file.chars().any(char::is_control), "{target}: control character in from_file");
        assert!(f != "src/owned.rs", "{target}: admitted an owned file");
    }
    if let Some(s) = out.summary() {
        one_line(target, &s);
    }
}

#[test]
fn fuzz_blocked_on_rows() {
    fuzz("blocked_on", BLOCKED_TOKENS, Some(BLOCKED_KEYS), |text| match premerge::waves::carry::rows_of(text, 1) {
        Ok(rows) => check_carry("blocked_on", &rows),
        Err(e) => one_line("blocked_on", &e),
    });
}

#[test]
fn fuzz_blocked_return() {
    fuzz(
        "blocked_return",
        BLOCKED_TOKENS,
        Some(BLOCKED_KEYS),
        |text| match premerge::commands::blocked::rows_of_return(text, "src/a.rs") {
            Ok(rows) => check_carry("blocked_return", &rows),
            Err(e) => {
                let msg = format!("{e:#}");
                one_line("blocked_return", &msg);
                assert!(msg.starts_with("stdin:"), "blocked_return: error does not name stdin: {msg:?}");
            }
        },
    );
}

const PAYLOAD_KEYS: &[&str] = &[
    "session_id",
    "transcript_path",
    "cwd",
    "permission_mode",
    "hook_event_name",
    "stop_hook_active",
    "last_assistant_message",
    "source",
];
const PAYLOAD_TOKENS: &[&str] = &["\"session_id\":", "\"stop_hook_active\":", "\"transcript_path\":", "/dev/zero"];

#[test]
fn fuzz_stop_payload() {
    use premerge::gate::payload::{
        MAX_SESSION_ID, MAX_STOP_REASON_CHARS, bound_reason, parse_session_start, parse_stop,
    };
    fuzz("stop_payload", PAYLOAD_TOKENS, Some(PAYLOAD_KEYS), |text| {
        let plausible = |id: &str| {
            assert!(!id.is_empty() && id.chars().count() <= MAX_SESSION_ID, "accepted session id {id:?}");
            assert!(!id.chars().any(char::is_control), "accepted a control character in session id {id:?}");
        };
        match parse_stop(text) {
            Ok(p) => {
                plausible(&p.session_id);
                if let Some(m) = &p.last_assistant_message {
                    let b = bound_reason(m);
                    assert!(b.chars().count() <= MAX_STOP_REASON_CHARS && m.ends_with(&b));
                }
            }
            Err(e) => one_line("stop_payload", &e.to_string()),
        }
        match parse_session_start(text) {
            Ok(p) => plausible(&p.session_id),
            Err(e) => one_line("stop_payload", &e.to_string()),
        }
    });
}

const TRANSCRIPT_TOKENS: &[&str] = &[
    "{\"type\":\"assistant\",\"message\":{\"role\":\"assistant\",\"content\":\"x\"}}\n",
    "\"content\":[{\"type\":\"text\",\"text\":\"y\"}]",
    "- [ ] ",
    "* [ ] ",
    "1. [ ] ",
    "99999999999999999999. [ ] ",
    "- [x] ",
    "\u{2028}",
];

#[test]
fn fuzz_transcript_and_plan() {
    use premerge::gate::payload::{MAX_STEP_CHARS, MAX_STEPS, last_assistant_text, unchecked_steps};
    fuzz("transcript", TRANSCRIPT_TOKENS, None, |text| {
        if let Some(t) = last_assistant_text(text) {
            assert!(!t.trim().is_empty(), "transcript: an empty message counted as the last one");
        }
        let (steps, count) = unchecked_steps(text);
        assert!(steps.len() <= MAX_STEPS && steps.len() <= count);
        for s in &steps {
            assert!(s.chars().count() <= MAX_STEP_CHARS, "plan step longer than the bound: {s:?}");
            assert!(!s.chars().any(char::is_control), "plan step with a control character: {s:?}");
        }
    });
}

const PINS_KEYS: &[&str] = &["GUARD-MEMORY-SEARCH", "NO-HALFWAY-STOP", "contentHash", "pinnedAt"];

#[test]
fn fuzz_pins() {
    fuzz("pins", &["\"contentHash\":", "\"pinnedAt\":"], Some(PINS_KEYS), |text| {
        if let Err(e) = premerge::install::agent_docs::parse_pins(text) {
            one_line("pins", &e);
        }
    });
}

const SETTINGS_KEYS: &[&str] = &["hooks", "Stop", "SessionStart", "PreToolUse", "matcher", "type", "command", "model"];

#[test]
fn fuzz_settings_json() {
    use premerge::gate::settings::{AGENT_HOOKS, merge};
    fuzz("settings", &["\"hooks\":", "\"Stop\":", "\"command\":"], Some(SETTINGS_KEYS), |text| {
        match merge(text, "premerge") {
            Ok((out, merged)) => {
                assert!(merged.added <= AGENT_HOOKS.len());
                let v: Value = serde_json::from_str(&out)
                    .unwrap_or_else(|e| panic!("settings: merged text is not JSON ({e}) for {text:?}"));
                assert!(v.is_object());
                // Idempotent: merging again adds nothing and keeps the bytes.
                let (again, merged2) = merge(&out, "premerge").expect("merged settings merge again");
                assert_eq!(
                    (merged2.changed(), again.as_str()),
                    (false, out.as_str()),
                    "settings: merge is not idempotent on {text:?}"
                );
            }
            Err(e) => one_line("settings", &e.to_string()),
        }
    });
}

const CONFIG_TOKENS: &[&str] = &[
    "[plan]\n",
    "[gate]\n",
    "[review]\n",
    "[scan]\n",
    "[proposal]\n",
    "max_per_wave = ",
    "max_findings_bytes = ",
    "authority_timeout_ms = ",
    "mode = \"",
    "ignore = [",
    "root = \"",
    "signal_root = \"",
    "enabled = ",
    "\n",
    "[[plan]]\n",
    "inf",
    "nan",
    "0x7f",
    "1_000",
    "+1",
    "1979-05-27T07:32:00Z",
];

#[test]
fn fuzz_premerge_toml() {
    use premerge::config::{Config as PmConfig, int_range};
    fuzz("config", CONFIG_TOKENS, None, |text| {
        match PmConfig::load(Some(("premerge.toml", text)), &[], &|_| None) {
            Ok(cfg) => {
                // Every integer the rest of premerge reads is inside its declared range.
                for (name, v) in cfg.ints() {
                    if let Some((lo, hi)) = int_range(name) {
                        assert!((lo..=hi).contains(&v), "config: {name} = {v} accepted outside {lo}..={hi}");
                    }
                }
            }
            Err(e) => {
                let msg = e.to_string();
                one_line("config", &msg);
                assert!(msg.starts_with("premerge.toml"), "config: error does not name the file: {msg:?}");
            }
        }
    });
}

#[test]
fn fuzz_config_from_git_and_env() {
    use premerge::config::int_range;
    // The same values through git config and the environment, which are parsed apart
    // from TOML: (key, raw value) pairs built from the vocabulary.
    let keys = ["plan.maxPerWave", "plan.max_per_wave", "review.max_findings_bytes", "gate.mode", "scan.ignore"];
    let values = prop_oneof![
        select(COMMON_TOKENS.to_vec()).prop_map(str::to_string),
        ".{0,24}",
        any::<i128>().prop_map(|i| i.to_string())
    ];
    let mut runner = runner();
    let strat = proptest::collection::vec((select(keys.to_vec()), values), 0..4);
    runner
        .run(&strat, |pairs| {
            let git: Vec<(String, String)> = pairs.iter().map(|(k, v)| (format!("premerge.{k}"), v.clone())).collect();
            let env_v = pairs.first().map(|(_, v)| v.clone());
            let env = move |var: &str| if var == "PREMERGE_GATE_MODE" { env_v.clone() } else { None };
            match premerge::config::Config::load(None, &git, &env) {
                Ok(cfg) => {
                    for (name, v) in cfg.ints() {
                        if let Some((lo, hi)) = int_range(name) {
                            prop_assert!((lo..=hi).contains(&v), "{} out of range", name);
                        }
                    }
                }
                Err(e) => one_line("config (git/env)", &e.to_string()),
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("fuzz target config (git/env): {e}"));
}

const PUSH_TOKENS: &[&str] = &[
    "refs/heads/main ",
    "0000000000000000000000000000000000000000",
    "1111111111111111111111111111111111111111",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "(delete) ",
    "HEAD ",
];

#[test]
fn fuzz_pre_push_lines() {
    fuzz("pre_push", PUSH_TOKENS, None, |text| match premerge::git::parse_push_lines(text) {
        Ok(lines) => {
            let nonblank = text.lines().filter(|l| !l.trim_end_matches('\r').trim().is_empty()).count();
            assert_eq!(lines.len(), nonblank, "pre_push: a line was dropped from {text:?}");
            for l in &lines {
                for oid in [&l.local_oid, &l.remote_oid] {
                    assert!(
                        (oid.len() == 40 || oid.len() == 64)
                            && oid.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
                        "pre_push: accepted object id {oid:?}"
                    );
                }
            }
        }
        Err(e) => one_line("pre_push", &e.to_string()),
    });
}

/// Regression, found by `fuzz_findings_lens`: `relativise` stripped the root and one
/// `/`, or a leading `./`, and kept the rest, so `/repo//etc/passwd` or
/// `.//etc/passwd` became the absolute `/etc/passwd`, which a wave plan would then
/// give a fixer to own.
#[test]
fn open_findings_double_slash_path_stays_relative() {
    for raw in ["/repo//etc/passwd", ".//etc/passwd", "file:///repo//etc/passwd"] {
        let doc = serde_json::json!([{"path": raw, "title": "t"}]).to_string();
        if let Ok(f) = premerge::findings::parse(&doc, "/repo") {
            assert!(!f.findings[0].file.starts_with('/'), "{raw} accepted as {:?}", f.findings[0].file);
        }
    }
}

const CACHE_TOKENS: &[&str] = &[
    "premerge-scan-cache 2 ",
    "premerge-scan-cache 1 ",
    " 0 ",
    " 99 ",
    "[]",
    "[[",
    "]]",
    "\"rust-integer-widened\"",
    "\"no-such-rule\"",
    "0000000000000000",
    "ffffffffffffffff",
    "0123456789abcdef0123456789abcdef01234567",
];

/// The scan cache's reader (issue 27, D14): whatever the file holds, reading it never
/// panics, serves at most one entry per line, and counts what it cannot serve; an
/// entry whose key, sum or findings changed by one byte is never served.
#[test]
fn fuzz_scan_cache() {
    use premerge::store::scan_cache::inspect;
    let entry_lines = |text: &str| text.split('\n').skip(1).filter(|l| !l.is_empty()).count() as u64;
    fuzz("scan_cache", CACHE_TOKENS, None, |text| {
        if let Some(h) = inspect(text) {
            assert!(h.entries <= entry_lines(text), "scan_cache: more entries served than lines in {text:?}");
        }
    });
    // Every seed is whole: each line served, nothing counted beyond the header's count.
    let seeds = seeds("scan_cache");
    for seed in &seeds {
        let h = inspect(seed).expect("a seed is a cache file");
        let header_count: u64 = seed.lines().next().unwrap().rsplit(' ').next().unwrap().parse().unwrap();
        assert_eq!((h.entries, h.damaged), (entry_lines(seed), header_count), "{seed}");
    }
    // One byte of one entry changed anywhere but its generation: that entry is a miss.
    let mut runner = runner();
    let strat = (select(seeds), any::<usize>(), any::<usize>(), 1u8..=255);
    runner
        .run(&strat, |(seed, line, at, delta)| {
            let mut lines: Vec<Vec<u8>> = seed.lines().map(|l| l.as_bytes().to_vec()).collect();
            let n = lines.len() - 1;
            let line = 1 + line % n;
            let gen_field = {
                let l = &lines[line];
                let first = l.iter().position(|b| *b == b' ').unwrap();
                let second = first + 1 + l[first + 1..].iter().position(|b| *b == b' ').unwrap();
                first..=second
            };
            let at = at % lines[line].len();
            if gen_field.contains(&at) {
                return Ok(());
            }
            lines[line][at] = lines[line][at].wrapping_add(delta);
            let Ok(text) = String::from_utf8(lines.join(&b'\n')) else { return Ok(()) };
            // A newline made by the edit splits the entry: still never served whole.
            let h = inspect(&(text + "\n")).expect("the header is untouched");
            prop_assert!(h.entries < n as u64, "a changed entry was served: line {line}, byte {at}");
            Ok(())
        })
        .unwrap_or_else(|e| panic!("fuzz target scan_cache (one byte changed): {e}"));
    eprintln!("fuzz target scan_cache: {} cases, no panic", cases());
}
