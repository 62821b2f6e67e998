//! The published JSON Schemas (`premerge schema <artefact>`, derived from the types
//! that write the artefacts) validate the artefacts the real binary writes: the demo's
//! whole pipeline run is kept and every artefact and event line of it is checked.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::TestRepo;

/// The schema `premerge schema <artefact>` prints, compiled.
struct Compiled {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

fn compiled(r: &TestRepo, artefact: &str) -> Compiled {
    let out = r.premerge(&["schema", artefact]);
    out.expect_code(0);
    let schema: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema", "{artefact}");
    let id = schema["$id"].as_str().unwrap().to_string();
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.add_resource(&id, schema).unwrap();
    let index = compiler.compile(&id, &mut schemas).unwrap_or_else(|e| panic!("{artefact}: {e}"));
    Compiled { schemas, index }
}

impl Compiled {
    fn check(&self, what: &str, v: &Value) -> Result<(), String> {
        self.schemas.validate(v, self.index).map_err(|e| format!("{what}: {e}"))
    }
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(p).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Files of `dir` whose name starts with `stem-` and ends with `.json`, sorted.
fn artefacts(dir: &Path, stem: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_str().unwrap();
            n.starts_with(&format!("{stem}-")) && n.ends_with(".json")
        })
        .collect();
    v.sort();
    v
}

/// Run the demo keeping its scratch repository; returns the repository's path.
fn kept_demo(r: &TestRepo, tmp: &Path) -> PathBuf {
    let out = r.premerge_cmd(["demo", "--keep"]).env("TMPDIR", tmp).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let line = stdout.lines().find_map(|l| l.strip_prefix("kept the scratch repository at ")).expect("demo names it");
    PathBuf::from(line.trim())
}

#[test]
fn real_artefacts_validate_against_their_derived_schemas() {
    let r = TestRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let repo = kept_demo(&r, tmp.path());
    let run = repo.join(".git/premerge/run");
    // One more step of the pipeline the demo leaves open: converge (its event, and the
    // loop's close, are lines of their own kinds).
    let demo = r.at(&repo);
    let conv = demo.premerge(&["converge", "--attempt", "2", "--run-dir", run.to_str().unwrap()]);
    assert!(conv.code == 0 || conv.code == 1, "{}", conv.stderr);

    let mut checked = 0;
    for (artefact, stem, min) in
        [("fix-waves", "fix-waves", 2), ("classified", "classified", 2), ("blocked-on", "blocked-on", 1)]
    {
        let schema = compiled(&r, artefact);
        let files = artefacts(&run, stem);
        assert!(files.len() >= min, "{artefact}: the demo wrote {files:?}");
        for f in files {
            schema.check(&f.display().to_string(), &read_json(&f)).unwrap();
            checked += 1;
        }
    }

    let events = compiled(&r, "events");
    let mut kinds = std::collections::BTreeSet::new();
    for dir in [run.clone(), repo.join(".git/premerge")] {
        let text = fs::read_to_string(dir.join("events.jsonl")).unwrap();
        for (i, line) in text.lines().enumerate() {
            let v: Value = serde_json::from_str(line).unwrap();
            events.check(&format!("{}/events.jsonl:{}", dir.display(), i + 1), &v).unwrap();
            kinds.insert(v["kind"].as_str().unwrap().to_string());
            checked += 1;
        }
    }
    for k in ["plan", "blocked_recorded", "converge", "refinement_proposal_emitted", "cap-hit", "guard-memory-written"]
    {
        assert!(kinds.contains(k), "no `{k}` line in {kinds:?}");
    }

    let findings = compiled(&r, "findings");
    for f in [repo.join("review/findings-01.json"), run.join("lens-findings-01.json")] {
        findings.check(&f.display().to_string(), &read_json(&f)).unwrap();
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} documents checked");
}

/// The schemas are not vacuous: what the readers refuse, the schemas refuse too.
#[test]
fn derived_schemas_refuse_what_the_contract_forbids() {
    let r = TestRepo::new();
    let waves = compiled(&r, "fix-waves");
    let finding = json!({"fingerprint": "0123456789abcdef", "line": 3, "summary": "s",
                         "failure_scenario": null, "category": null, "carried": false});
    let plan = |entry: Value| json!({"schema_version": 1, "attempt": 1, "max_per_wave": 8, "waves": [[entry]]});
    let good = plan(json!({"file": "src/a.rs", "owner": "w01-01", "findings": [finding]}));
    waves.check("good", &good).unwrap();
    for (why, bad) in [
        ("owner pattern", plan(json!({"file": "src/a.rs", "owner": "me", "findings": []}))),
        ("empty file", plan(json!({"file": "", "owner": "w01-01", "findings": []}))),
        ("missing findings", plan(json!({"file": "a", "owner": "w01-01"}))),
        ("schema_version", json!({"schema_version": 2, "attempt": 1, "max_per_wave": 8, "waves": []})),
        ("attempt 0", json!({"schema_version": 1, "attempt": 0, "max_per_wave": 8, "waves": []})),
        ("empty wave", json!({"schema_version": 1, "attempt": 1, "max_per_wave": 8, "waves": [[]]})),
        ("missing nullable key", {
            let mut f = finding.clone();
            f.as_object_mut().unwrap().remove("category");
            plan(json!({"file": "src/a.rs", "owner": "w01-01", "findings": [f]}))
        }),
        ("bad fingerprint", {
            let mut f = finding.clone();
            f["fingerprint"] = json!("XYZ");
            plan(json!({"file": "src/a.rs", "owner": "w01-01", "findings": [f]}))
        }),
    ] {
        assert!(waves.check(why, &bad).is_err(), "{why}: accepted {bad}");
    }

    let events = compiled(&r, "events");
    let ok = json!({"kind": "converge", "attempt": 2, "decision": "CONTINUE", "ts": "2026-01-02T03:04:05Z"});
    events.check("converge", &ok).unwrap();
    for (why, bad) in [
        ("no ts", json!({"kind": "converge", "attempt": 2, "decision": "CONTINUE"})),
        ("unknown kind", json!({"kind": "nope", "ts": "t"})),
        ("missing field", json!({"kind": "converge", "attempt": 2, "ts": "t"})),
        (
            "fence mode",
            json!({"kind": "fence_pre_push", "mode": "loud", "attempt": 1, "loop": "l",
                              "strays": [], "refused": false, "why": "", "ts": "t"}),
        ),
    ] {
        assert!(events.check(why, &bad).is_err(), "{why}: accepted {bad}");
    }

    let blocked = compiled(&r, "blocked-on");
    let row = json!({"file": "b.rs", "from_file": "a.rs", "reason": "r"});
    blocked.check("ok", &json!({"schema_version": 1, "attempt": 1, "blocked_on": [row]})).unwrap();
    let zero = json!({"schema_version": 1, "attempt": 1, "blocked_on": [], "dropped": {"unknown_key": 0}});
    assert!(blocked.check("zero count", &zero).is_err());
}

/// Issue 28: `premerge status` shows on one screen the open loop (id, attempt, run
/// directory, fence mode), open proposals and pending halts, the stop gate and the
/// guard memories, beside the background job; its JSON validates against `premerge
/// schema status`, empty and full.
#[test]
fn status_shows_loop_proposals_gate_and_memories_and_validates() {
    let r = TestRepo::new();
    let schema = compiled(&r, "status");
    let empty = r.premerge(&["status", "--format", "json"]).expect_code(0).json();
    schema.check("status of a fresh repository", &empty).unwrap();
    assert_eq!(empty["loop"]["state"], "none");
    assert_eq!(empty["memories"]["recorded"], 0);
    assert!(!r.state_dir().join("premerge.db").exists(), "status creates no database");
    // A widening with its memory, an open loop, a halted stripe.
    r.write("q.rs", "pub struct Query {\n    pub limit: u8,\n}\n");
    r.commit_all("base");
    r.write("q.rs", "pub struct Query {\n    pub limit: u64,\n}\n");
    r.commit_all("widen");
    r.premerge(&["scan", "--issue", "5"]).expect_code(0);
    r.write("f.json", r#"[{"file":"q.rs","line":2,"summary":"s","failure_scenario":"x","severity":"blocker"}]"#);
    r.premerge(&["plan", "--attempt", "1", "--findings", "f.json"]).expect_code(0);
    r.write("ev.json", r#"[{"id":"a","rule_id":"R1"}]"#);
    let emit = ["proposal", "emit", "--scope", "ci", "--signal", "confidence_low_streak", "--evidence", "ev.json"];
    r.premerge(&emit).expect_code(0);
    r.premerge(&emit).expect_code(1);
    let text = r.premerge(&["status"]).expect_code(0).stdout.clone();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("fix loop: loop-") && lines[0].contains("open, attempt 1, run directory "), "{text}");
    assert!(lines[0].ends_with("fence enforce") || lines[0].contains("fence "), "{text}");
    assert!(
        lines[1].starts_with("proposals: 1 open under ") && lines[1].contains("1 stripe halt(s) pending"),
        "{text}"
    );
    assert!(lines[2].starts_with("stop gate: "), "{text}");
    assert_eq!(lines[3], "guard memories: 1 recorded", "{text}");
    assert!(lines[4].starts_with("premerge background job: "), "{text}");
    let full = r.premerge(&["status", "--format", "json"]).expect_code(0).json();
    schema.check("status with a loop, a halt and a memory", &full).unwrap();
    assert_eq!((full["loop"]["state"].as_str(), full["loop"]["attempt"].as_u64()), (Some("open"), Some(1)));
    assert_eq!((full["proposals"]["open"].as_u64(), full["proposals"]["pending_halts"].as_u64()), (Some(1), Some(1)));
    assert_eq!(full["memories"]["recorded"], 1);
    // The schema is not vacuous: a document without the loop is refused.
    let mut broken = full.clone();
    broken.as_object_mut().unwrap().remove("loop");
    assert!(schema.check("no loop", &broken).is_err());
}
