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
