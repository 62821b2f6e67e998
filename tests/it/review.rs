//! Review routing (`premerge review route|seams`, `premerge explain-cap`) and the copy
//! detector (`premerge seams`, the pre-push signal), against real repositories.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{Run, TestRepo};

fn lens(lens: &str, path: &str, title: &str) -> Value {
    json!({"lens": lens, "severity": "blocker", "path": path, "line": 4, "title": title,
           "description": "d", "suggestion": "s"})
}

/// Three ARCHITECTURE findings with one shape in three files, titles carrying the file.
fn seam_findings() -> Value {
    json!({"findings": [
        lens("ARCHITECTURE", "src/a.rs", "Duplicated SQL filter builder in src/a.rs"),
        lens("ARCHITECTURE", "src/b.rs", "duplicated sql filter builder (src/b.rs:88)"),
        lens("ARCHITECTURE", "src/c.rs", "Duplicated SQL filter builder at line 12"),
    ]})
}

fn run_dir(r: &TestRepo) -> PathBuf {
    r.dir.path().join("run")
}

fn write_findings(r: &TestRepo, name: &str, doc: &Value) -> String {
    let p = r.dir.path().join(name);
    fs::write(&p, serde_json::to_string(doc).unwrap()).unwrap();
    p.to_string_lossy().into_owned()
}

fn route(r: &TestRepo, round: u32, doc: &Value) -> Run {
    let f = write_findings(r, &format!("findings-{round}.json"), doc);
    let rd = run_dir(r);
    r.premerge(&["review", "route", "--round", &round.to_string(), "--findings", &f, "--run-dir", rd.to_str().unwrap()])
}

fn route_issue(r: &TestRepo, round: u32, doc: &Value, issue: u64) -> Run {
    let f = write_findings(r, &format!("findings-{round}.json"), doc);
    let rd = run_dir(r);
    let (round, issue) = (round.to_string(), issue.to_string());
    r.premerge(&[
        "review",
        "route",
        "--round",
        &round,
        "--issue",
        &issue,
        "--findings",
        &f,
        "--run-dir",
        rd.to_str().unwrap(),
    ])
}

fn events(r: &TestRepo) -> Vec<Value> {
    crate::common::events_in(&run_dir(r))
}

fn kinds(evs: &[Value]) -> Vec<String> {
    evs.iter().map(|e| e["kind"].as_str().unwrap().to_string()).collect()
}

#[test]
fn seam_fixtures_fire_only_on_three_files_one_lens_one_title() {
    let r = TestRepo::new();
    let step = |doc: Value| route(&r, 1, &doc).expect_code(0).json()["nextStep"].as_str().unwrap().to_string();
    // Three files, same lens, titles differing only by file-specific tokens: fires.
    assert_eq!(step(seam_findings()), "step-back");
    // Three findings in two files: no.
    let two = json!([
        lens("A", "src/a.rs", "Duplicated filter"),
        lens("A", "src/b.rs", "Duplicated filter"),
        lens("A", "src/b.rs", "Duplicated filter"),
    ]);
    assert_eq!(step(two), "lens-fix");
    // Three different titles: no.
    let titles = json!([
        lens("A", "src/a.rs", "Missing limit"),
        lens("A", "src/b.rs", "Unused import"),
        lens("A", "src/c.rs", "Dead code")
    ]);
    assert_eq!(step(titles), "lens-fix");
    // The same title under three different lenses: no.
    let lenses = json!([lens("A", "src/a.rs", "Dup"), lens("B", "src/b.rs", "Dup"), lens("C", "src/c.rs", "Dup")]);
    assert_eq!(step(lenses), "lens-fix");
    // `review seams` prints the clusters, seams first, with the normalised title.
    let f = write_findings(&r, "seams.json", &seam_findings());
    let out = r.premerge(&["review", "seams", "--findings", &f]).expect_code(0).json();
    assert_eq!(out["seams"], 1);
    assert_eq!(out["clusters"][0]["title"], "duplicated sql filter builder");
    assert_eq!(out["clusters"][0]["files"], json!(["src/a.rs", "src/b.rs", "src/c.rs"]));
}

#[test]
fn routing_table_and_events() {
    let r = TestRepo::new();
    let out = route(&r, 1, &json!({"findings": []})).expect_code(0).json();
    assert_eq!((out["nextStep"].as_str(), out["verdict"].as_str()), (Some("done"), Some("CLEAN")));
    let out = route(&r, 1, &seam_findings()).expect_code(0).json();
    assert_eq!(out["cap"], "repeat-finding-seam");
    assert_eq!(out["seams"][0]["lens"], "ARCHITECTURE");
    assert_eq!(kinds(out["events"].as_array().unwrap()), ["step-back-triggered", "cap-hit"]);
    assert_eq!(out["events"][1]["nextStep"], "step-back");
    assert_eq!(out["events"][1]["files"], 3);
    let before = events(&r).len();
    assert_eq!(
        kinds(&events(&r)),
        ["step-back-triggered", "cap-hit", "step-back-handoff", "refinement_proposal_emitted"]
    );
    // Round 2 with the same seam stays in the fix loop and records nothing new.
    let out = route(&r, 2, &seam_findings()).expect_code(0).json();
    assert_eq!((out["nextStep"].as_str(), &out["cap"], &out["events"]), (Some("lens-fix"), &Value::Null, &json!([])));
    assert_eq!(events(&r).len(), before);
    assert!(!run_dir(&r).join("step-back-02.md").exists());
    // Round 3 (the cap) and later hand off.
    for round in [3, 4] {
        let out = route(&r, round, &seam_findings()).expect_code(0).json();
        assert_eq!(out["nextStep"], "handoff");
        assert_eq!(out["events"][0]["cap"], "round-cap");
    }
    assert_eq!(events(&r).last().unwrap()["cap"], "round-cap");
    route(&r, 0, &seam_findings()).expect_code(2);
}

#[test]
fn kill_switch_restores_plain_routing_exactly() {
    let plain = r#"{"cap":null,"events":[],"nextStep":"lens-fix","round":1,"schema_version":1,"seams":[],"verdict":"ISSUES_FOUND"}"#;
    let mut r = TestRepo::new();
    r.env.push(("PREMERGE_SEAM_ESCALATION".into(), "0".into()));
    assert_eq!(route(&r, 1, &seam_findings()).expect_code(0).stdout.trim_end(), plain);
    assert!(!run_dir(&r).exists(), "nothing is written to the run directory");
    // The same through the committed config.
    let r = TestRepo::new();
    r.write("premerge.toml", "[review]\nseam_escalation = false\n");
    assert_eq!(route(&r, 1, &seam_findings()).expect_code(0).stdout.trim_end(), plain);
}

/// A fake dispatch: records its arguments and stdin, then answers with the three fields.
fn fake_dispatch(r: &TestRepo, body: &str) -> PathBuf {
    let p = r.dir.path().join("dispatch.sh");
    fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn configure_dispatch(r: &TestRepo, script: &Path) {
    r.write(
        "premerge.toml",
        format!(
            "[review]\ndispatch_command = [\"{}\", \"{{brief}}\", \"round={{round}}\"]\ndispatch_timeout_ms = 10000\n",
            script.display()
        ),
    );
}

/// Seed a guard memory the way the widening scan's store keeps them: a `memories`
/// table in premerge.db. (When the memory store lands, seed it through its API.)
/// Write a guard memory through the real store (what `premerge scan` does).
fn seed_guard_memory(r: &TestRepo, file: &str, symbol: &str, text: &str) {
    let repo = premerge::git::Repo::discover(&r.root).unwrap();
    let mut conn = repo.state_dir().open_db().unwrap();
    let m = premerge::memory::NewMemory {
        cycle: "issue-7".into(),
        file: file.into(),
        symbol: symbol.into(),
        rule: "rust-integer-widened".into(),
        language: "rust".into(),
        line: 3,
        before: "limit: u8".into(),
        after: "limit: u64".into(),
        issue: Some(7),
        commit: None,
        content: text.into(),
        metadata: json!({}),
    };
    premerge::store::memory_db::insert(&mut conn, &m, "2026-01-02T03:04:05Z").unwrap();
}

#[test]
fn full_chain_route_brief_dispatch_handoff() {
    let r = TestRepo::new();
    let seen = r.dir.path().join("seen");
    let script = fake_dispatch(
        &r,
        &format!(
            "cat > '{s}.stdin'\necho \"$1 $2\" > '{s}.args'\necho 'Looking at the seam...'\n\
             echo '**sddElement:** Query filtering, section 3.2'\necho 'diagnosis: the spec never names one owner'\n\
             echo '  of filter construction, so each handler grew its own.'\n\
             echo 'proposedRevision: add a FilterBuilder element the handlers share'",
            s = seen.display()
        ),
    );
    configure_dispatch(&r, &script);
    seed_guard_memory(&r, "src/b.rs", "Filter.limit", "limit: u8 -> u64 removed in issue #7");
    seed_guard_memory(&r, "src/z.rs", "Other.x", "unrelated memory");
    let out = route(&r, 1, &seam_findings());
    out.expect_code(0);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    let out = out.json();
    assert_eq!(out["nextStep"], "step-back");
    assert_eq!(out["stepBack"]["status"], "analysed");

    let brief_path = run_dir(&r).join("step-back-01.md");
    let brief = fs::read_to_string(&brief_path).unwrap();
    for want in ["ARCHITECTURE", "duplicated sql filter builder", "`src/c.rs:4`", "Filter.limit", "sddElement:"] {
        assert!(brief.contains(want), "brief lacks {want}:\n{brief}");
    }
    assert!(!brief.contains("unrelated memory"), "only memories touching the seam files");
    assert!(brief.contains("under-specifies the shared"));
    // The dispatch got the brief on stdin and its path as an argument.
    assert_eq!(fs::read_to_string(seen.with_extension("stdin")).unwrap(), brief);
    assert_eq!(fs::read_to_string(seen.with_extension("args")).unwrap(), format!("{} round=1\n", brief_path.display()));

    let h: Value = serde_json::from_str(&fs::read_to_string(run_dir(&r).join("handoff-01.json")).unwrap()).unwrap();
    assert_eq!(h["status"], "analysed");
    assert_eq!(h["analysis"]["sddElement"], "Query filtering, section 3.2");
    assert_eq!(
        h["analysis"]["diagnosis"],
        "the spec never names one owner\n  of filter construction, so each handler grew its own."
    );
    assert_eq!(h["analysis"]["proposedRevision"], "add a FilterBuilder element the handlers share");
    assert_eq!(h["brief"], brief);
    assert_eq!(h["failure"], Value::Null);
    assert_eq!(h["seams"][0]["files"], json!(["src/a.rs", "src/b.rs", "src/c.rs"]));
    let evs = events(&r);
    assert_eq!(kinds(&evs), ["step-back-triggered", "cap-hit", "step-back-handoff", "refinement_proposal_emitted"]);
    assert_eq!(evs[2]["status"], "analysed");
}

#[test]
fn handoff_carries_brief_and_failure_when_dispatch_fails_or_is_missing() {
    let r = TestRepo::new();
    let out = route(&r, 1, &seam_findings()).expect_code(0).json();
    assert_eq!(out["stepBack"]["status"], "not-configured");
    let h: Value = serde_json::from_str(&fs::read_to_string(run_dir(&r).join("handoff-01.json")).unwrap()).unwrap();
    assert!(h["brief"].as_str().unwrap().contains("duplicated sql filter builder"));
    assert!(h["failure"].as_str().unwrap().contains("not configured"));

    let r = TestRepo::new();
    let script = fake_dispatch(&r, "echo 'agent crashed' >&2\nexit 3");
    configure_dispatch(&r, &script);
    let out = route(&r, 1, &seam_findings());
    out.expect_code(0);
    assert!(out.stderr.contains("step-back dispatch"), "{}", out.stderr);
    let h: Value = serde_json::from_str(&fs::read_to_string(run_dir(&r).join("handoff-01.json")).unwrap()).unwrap();
    assert_eq!(h["status"], "failed");
    assert!(h["failure"].as_str().unwrap().contains("agent crashed"), "{h}");
    assert!(h["brief"].as_str().unwrap().starts_with("# Step-back"));

    let r = TestRepo::new();
    let script = fake_dispatch(&r, "echo 'diagnosis: only this'");
    configure_dispatch(&r, &script);
    route(&r, 1, &seam_findings()).expect_code(0);
    let h: Value = serde_json::from_str(&fs::read_to_string(run_dir(&r).join("handoff-01.json")).unwrap()).unwrap();
    assert_eq!(h["status"], "incomplete");
    assert_eq!(h["analysis"]["diagnosis"], "only this");
    assert!(h["failure"].as_str().unwrap().contains("sddElement"));
}

#[test]
fn bad_findings_name_the_json_path_and_oversized_files_are_refused() {
    let r = TestRepo::new();
    let bad = json!({"findings": [lens("A", "a.rs", "t"), {"lens": "A", "path": "b.rs", "title": "t", "line": "x"}]});
    let out = route(&r, 1, &bad);
    out.expect_code(2);
    assert!(out.stderr.contains("$.findings[1].line"), "{}", out.stderr);
    let sarif = json!({"version": "2.1.0", "runs": [{"results": [{"ruleId": "X", "message": {"text": "m"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": "file:///elsewhere/x.py"}}}]}]}]});
    let out = route(&r, 1, &sarif);
    assert_eq!(out.expect_code(0).json()["nextStep"], "done");
    assert!(out.stderr.contains("skipped 1 SARIF location(s) outside the repository"), "{}", out.stderr);
    r.write("premerge.toml", "[review]\nmax_findings_bytes = 100\n");
    let out = route(&r, 1, &seam_findings());
    out.expect_code(2);
    assert!(out.stderr.contains("larger than 100 bytes"), "{}", out.stderr);
}

/// Seed audit D3: a path outside the repository drops its finding, however it is
/// written (absolute, `file://`, `../`), and is counted; the round's seam still fires.
#[test]
fn paths_outside_the_repository_drop_the_finding_not_the_round() {
    let r = TestRepo::new();
    for outside in ["/etc/hosts", "file:///etc/hosts", "../x.rs", "src/../../x.rs"] {
        let mut doc = seam_findings();
        doc["findings"]
            .as_array_mut()
            .unwrap()
            .insert(0, lens("ARCHITECTURE", outside, "Duplicated SQL filter builder"));
        let out = route(&r, 1, &doc);
        let v = out.expect_code(0).json();
        assert_eq!(v["nextStep"], "step-back", "{outside}: {}", out.stdout);
        assert_eq!(v["dropped"], json!({"outside_repo": 1}), "{outside}");
        assert!(out.stderr.contains("dropped: ") && out.stderr.contains("outside"), "{outside}: {}", out.stderr);
        let f = write_findings(&r, "seams-outside.json", &doc);
        let seams = r.premerge(&["review", "seams", "--findings", &f]).expect_code(0).json();
        assert_eq!((seams["findings"].as_u64(), seams["seams"].as_u64()), (Some(3), Some(1)), "{outside}");
    }
    // SARIF locations outside the repository are counted under the same reason.
    let sarif = json!({"version": "2.1.0", "runs": [{"results": [{"ruleId": "X", "message": {"text": "m"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": "file:///elsewhere/x.py"}}}]}]}]});
    assert_eq!(route(&r, 1, &sarif).expect_code(0).json()["dropped"], json!({"outside_repo": 1}));
    // A malformed record still refuses the document: a drop is for paths only.
    let bad = json!([lens("A", "/etc/hosts", "t"), {"lens": "A", "path": "b.rs", "title": "t", "line": "x"}]);
    let out = route(&r, 1, &bad);
    out.expect_code(2);
    assert!(out.stderr.contains("[1].line"), "{}", out.stderr);
}

/// Seed audit D4: three files, one lens and title, make a seam whatever the severity
/// (the source's rule); `review.seam_min_severity = "blocker"` restores the stricter
/// rule, and `review seams` always agrees with `review route`.
#[test]
fn seams_count_every_severity_unless_configured() {
    let low = |p: &str| {
        let mut f = lens("MAINTAINABILITY", p, "Duplicated SQL filter builder");
        f["severity"] = json!("low");
        f
    };
    let doc = json!({"findings": [low("a.rs"), low("b.rs"), low("c.rs")]});
    let r = TestRepo::new();
    let f = write_findings(&r, "low.json", &doc);
    assert_eq!(route(&r, 1, &doc).expect_code(0).json()["nextStep"], "step-back");
    assert_eq!(r.premerge(&["review", "seams", "--findings", &f]).expect_code(0).json()["seams"], 1);
    let r = TestRepo::new();
    r.write("premerge.toml", "[review]\nseam_min_severity = \"blocker\"\n");
    let f = write_findings(&r, "low.json", &doc);
    let v = route(&r, 1, &doc).expect_code(0).json();
    assert_eq!((v["nextStep"].as_str(), &v["seams"]), (Some("lens-fix"), &json!([])));
    assert_eq!(r.premerge(&["review", "seams", "--findings", &f]).expect_code(0).json()["seams"], 0);
    r.write("premerge.toml", "[review]\nseam_min_severity = \"high\"\n");
    let out = route(&r, 1, &doc);
    out.expect_code(2);
    assert!(
        out.stderr.contains("review.seam_min_severity") && out.stderr.contains("not one of any, blocker"),
        "{}",
        out.stderr
    );
}

#[test]
fn explain_cap_covers_every_cap() {
    let r = TestRepo::new();
    let out = r.premerge(&["explain-cap", "repeat-finding-seam", "--files", "4"]).expect_code(0).stdout.clone();
    for want in ["across 4 files", "missing seam", "entrench the duplication", "under-specifies the shared"] {
        assert!(out.contains(want), "{want}: {out}");
    }
    let out = r.premerge(&["explain-cap", "round-cap"]).expect_code(0).stdout.clone();
    assert!(out.contains("round 3"), "{out}");
    let out = r.premerge(&["explain-cap", "no-such-cap"]);
    out.expect_code(2);
    assert!(out.stderr.contains("unknown cap `no-such-cap`") && out.stderr.contains("round-cap"), "{}", out.stderr);
}

/// Real linter SARIF: ruff (installed by .ci/install-tools) reports the same problem
/// in three files of a package; the round routes to a step-back.
#[test]
fn ruff_sarif_routes_to_step_back() {
    if !crate::common::have_tool("ruff", &["--version"]) {
        return;
    }
    let r = TestRepo::new();
    for m in ["orders", "users", "items"] {
        r.write(
            &format!("pkg/{m}.py"),
            format!(
                "import os\n\n\ndef page_{m}(limit):\n    if limit == None:\n        return 20\n    return limit\n"
            ),
        );
    }
    r.write("pkg/__init__.py", "");
    let out = Command::new("ruff")
        .args(["check", "--isolated", "--no-cache", "--select", "E711,F401", "--output-format", "sarif", "pkg"])
        .current_dir(&r.root)
        .output()
        .unwrap_or_else(|e| panic!("ruff is required for this test (run .ci/install-tools): {e}"));
    let sarif: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("ruff did not print SARIF ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    let out = route(&r, 1, &sarif).expect_code(0).json();
    assert_eq!(out["nextStep"], "step-back", "{out}");
    assert_eq!(out["seams"][0]["lens"], "E711");
    let files = json!(["pkg/items.py", "pkg/orders.py", "pkg/users.py"]);
    assert_eq!(out["seams"][0]["files"], files);
    // `os` imported but unused, once per file: the quoted name does not split the cluster.
    assert_eq!(out["seams"][1]["lens"], "F401");
    assert_eq!(out["seams"][1]["files"], files);
}

// ---- the copy detector on real repositories ----

/// A helper of about 90 normalised tokens; `name`, `var` and the message vary per copy.
fn helper(name: &str, var: &str, msg: &str) -> String {
    format!(
        "pub fn {name}(raw: Option<u64>) -> Result<u64, String> {{\n    let {var} = raw.unwrap_or(20);\n    \
         if {var} == 0 || {var} > 500 {{\n        return Err(format!(\"{msg}: {{}}\", {var}));\n    }}\n    \
         let page = {var}.min(100);\n    Ok(page)\n}}\n"
    )
}

fn base_repo() -> TestRepo {
    let r = TestRepo::new();
    r.write("src/lib.rs", "pub mod a;\npub mod b;\npub mod c;\n");
    for f in ["a", "b", "c"] {
        r.write(&format!("src/{f}.rs"), format!("pub fn {f}() -> u32 {{\n    1\n}}\n"));
    }
    r.commit_all("base");
    r
}

fn seams_json(r: &TestRepo) -> Value {
    r.premerge(&["seams", "--base", "HEAD~1", "--head", "HEAD", "--format", "json"]).expect_code(0).json()
}

#[test]
fn copies_in_three_files_are_found_with_line_ranges() {
    let r = base_repo();
    r.write("src/a.rs", format!("pub fn a() -> u32 {{\n    1\n}}\n\n{}", helper("clamp_a", "v", "a out of range")));
    r.write("src/b.rs", format!("pub fn b() -> u32 {{\n    1\n}}\n\n{}", helper("limit_b", "n", "bad b")));
    r.write("src/c.rs", format!("pub fn c() -> u32 {{\n    1\n}}\n\n{}", helper("page_c", "size", "c")));
    r.commit_all("paste the helper three times");
    let out = seams_json(&r);
    let clusters = out["clusters"].as_array().unwrap();
    assert_eq!(clusters.len(), 1, "{out}");
    assert_eq!(clusters[0]["files"], json!(["src/a.rs", "src/b.rs", "src/c.rs"]));
    for b in clusters[0]["blocks"].as_array().unwrap() {
        assert_eq!((b["start_line"].as_u64(), b["end_line"].as_u64()), (Some(5), Some(12)), "{b}");
    }
    let text = r.premerge(&["seams", "--base", "HEAD~1"]).expect_code(0).stdout.clone();
    assert!(text.contains("src/b.rs:5-12"), "{text}");
    // Configurable: demanding four files silences it.
    r.write("premerge.toml", "[clones]\nmin_files = 4\n");
    assert_eq!(seams_json(&r)["clusters"], json!([]));
    // And the detector can be turned off.
    r.write("premerge.toml", "[clones]\nenabled = false\n");
    assert_eq!(seams_json(&r)["enabled"], false);
}

#[test]
fn near_misses_do_not_fire() {
    // Two files only.
    let r = base_repo();
    r.write("src/a.rs", helper("x", "v", "a"));
    r.write("src/b.rs", helper("y", "n", "b"));
    r.commit_all("two copies");
    assert_eq!(seams_json(&r)["clusters"], json!([]));

    // The third copy was already there: the change adds only two.
    let r = TestRepo::new();
    r.write("src/c.rs", helper("z", "s", "c"));
    r.commit_all("old copy");
    r.write("src/a.rs", helper("x", "v", "a"));
    r.write("src/b.rs", helper("y", "n", "b"));
    r.commit_all("two new copies");
    assert_eq!(seams_json(&r)["clusters"], json!([]));

    // Three files, but the shared part is boilerplate below the minimum size.
    let r = base_repo();
    for f in ["a", "b", "c"] {
        r.write(
            &format!("src/{f}.rs"),
            format!("use std::fmt;\n\npub fn {f}() -> u32 {{\n    let x = 1;\n    x\n}}\n"),
        );
    }
    r.commit_all("small shared shape");
    assert_eq!(seams_json(&r)["clusters"], json!([]));

    // Three files with the same names but different control flow.
    let r = base_repo();
    r.write("src/a.rs", helper("x", "v", "a"));
    r.write("src/b.rs", helper("x", "v", "a").replace("if v == 0", "while v == 0").replace("let page", "let mut page"));
    r.write(
        "src/c.rs",
        helper("x", "v", "a").replace("Ok(page)", "match page { 0 => Err(String::new()), p => Ok(p) }"),
    );
    r.commit_all("similar names, different code");
    let out = seams_json(&r);
    assert_eq!(out["clusters"], json!([]), "{out}");
}

#[test]
fn pre_push_reports_copies_as_a_signal() {
    let remote = TestRepo::new();
    remote.git(&["config", "receive.denyCurrentBranch", "ignore"]);
    let r = base_repo();
    let url = remote.root.to_string_lossy().into_owned();
    r.git(&["remote", "add", "origin", &url]);
    r.git(&["push", "-q", "origin", "main"]);
    let old = r.git(&["rev-parse", "HEAD"]);
    for (f, n) in [("a", "v"), ("b", "n"), ("c", "s")] {
        r.write(&format!("src/{f}.rs"), helper(&format!("h_{f}"), n, f));
    }
    let new = r.commit_all("copies");
    let line = format!("refs/heads/main {new} refs/heads/main {old}\n");
    let out = r.premerge_stdin(&["hook", "pre-push", "origin", &url], line.as_bytes());
    out.expect_code(0);
    assert!(out.stdout.contains("copy detector: 1 cluster(s)"), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("src/c.rs:1-7"), "{}", out.stdout);
}

#[test]
fn reviewer_findings_on_stdin_cluster_by_category() {
    let r = TestRepo::new();
    let doc: Vec<Value> = ["a.py", "b.py", "c.py"]
        .iter()
        .map(|f| {
            json!({"file": f, "line": 3, "summary": format!("Row mapper in {f} skips the id check"),
                        "failure_scenario": "x", "category": "correctness", "verdict": "confirmed"})
        })
        .collect();
    let rd = run_dir(&r);
    let args = ["review", "route", "--round", "1", "--findings", "-", "--run-dir", rd.to_str().unwrap()];
    let out = r.premerge_stdin(&args, serde_json::to_string(&doc).unwrap().as_bytes());
    let out = out.expect_code(0).json();
    assert_eq!(out["nextStep"], "step-back");
    assert_eq!(out["seams"][0]["lens"], "correctness");
    assert_eq!(out["seams"][0]["title"], "row mapper skips the id check");
}

/// The seam class is a stripe: the first escalation writes a proposal; the same class
/// escalating in a later cycle while that proposal is open halts (exit 1); once the
/// proposal is applied the class may escalate again.
#[test]
fn repeated_seam_class_halts_while_its_proposal_is_open() {
    let r = TestRepo::new();
    let first = route(&r, 1, &seam_findings()).expect_code(0).json();
    assert_eq!(first["stripe"]["outcome"], "emitted");
    let stripe = first["stripe"]["stripe"].as_str().unwrap().to_string();
    assert!(stripe.starts_with("review:repeat_seam:"), "{stripe}");
    // premerge's own signals keep proposals under the run directory, outside the tree.
    let props = run_dir(&r).join("proposals");
    let open: Vec<_> = std::fs::read_dir(props.join("open")).unwrap().collect();
    assert_eq!(open.len(), 1);
    assert!(!r.root.join("docs/proposals").exists());
    // Routing the unchanged round again is a read: no new stripe, no halt.
    let same = route(&r, 1, &seam_findings()).expect_code(0).json();
    assert_eq!(same["stripe"]["outcome"], "already_recorded");
    let rd = run_dir(&r);
    r.premerge(&["drain", "--run-dir", rd.to_str().unwrap()]).expect_code(0);
    // The next cycle (a new issue) hits the same seam class on its round 1.
    let again = route_issue(&r, 1, &seam_findings(), 8).expect_code(1).json();
    assert_eq!(again["stripe"]["outcome"], "stripe_repeat_halt");
    assert_eq!(again["stripe"]["stripe"], stripe.as_str());
    assert_eq!(again["nextStep"], "step-back");
    assert_eq!(std::fs::read_dir(props.join("open")).unwrap().count(), 1, "no second proposal");
    r.premerge(&["drain", "--run-dir", rd.to_str().unwrap()]).expect_code(1);
    r.premerge(&["proposal", "apply", &stripe, "--root", props.to_str().unwrap()]).expect_code(0);
    r.premerge(&["drain", "--run-dir", rd.to_str().unwrap()]).expect_code(0);
    let third = route_issue(&r, 1, &seam_findings(), 9).expect_code(0).json();
    assert_eq!(third["stripe"]["outcome"], "emitted");
}

/// With `review.seam_min_severity = "blocker"` severity counts: a linter nit in three
/// files stays in the fix loop on round 1, while the same shape as blockers escalates.
#[test]
fn a_nit_in_three_files_does_not_escalate_round_one_with_blockers_only() {
    let r = TestRepo::new();
    r.write("premerge.toml", "[review]\nseam_min_severity = \"blocker\"\n");
    let doc = |sev: &str| {
        let items: Vec<Value> = ["a", "b", "c"]
            .iter()
            .map(|f| {
                json!({"lens": "STYLE", "severity": sev, "path": format!("src/{f}.rs"), "line": 1,
                       "title": "Trailing whitespace"})
            })
            .collect();
        json!({ "findings": items })
    };
    let out = route(&r, 1, &doc("low")).expect_code(0).json();
    assert_eq!(out["nextStep"], "lens-fix", "{out}");
    assert_eq!(out["seams"], json!([]));
    let out = route(&r, 1, &doc("high")).expect_code(0).json();
    assert_eq!(out["nextStep"], "step-back", "{out}");
    // A SARIF result without a level is a warning: no escalation either.
    let results: Vec<Value> = ["a", "b", "c"]
        .iter()
        .map(|f| {
            let uri = format!("src/{f}%20x.rs");
            json!({"ruleId": "W1", "message": {"text": "line too long"},
                   "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri}}}]})
        })
        .collect();
    let sarif = json!({"version": "2.1.0", "runs": [{ "results": results }]});
    let out = route(&r, 1, &sarif).expect_code(0).json();
    assert_eq!(out["nextStep"], "lens-fix", "{out}");
    let seams = r.premerge_stdin(&["review", "seams", "--findings", "-"], sarif.to_string().as_bytes());
    assert_eq!(seams.expect_code(0).json()["clusters"], json!([]), "warnings are suggestions: no cluster counts");
    // By default every severity counts, and SARIF URIs are percent-decoded.
    let plain = TestRepo::new();
    let seams = plain.premerge_stdin(&["review", "seams", "--findings", "-"], sarif.to_string().as_bytes());
    let v = seams.expect_code(0).json();
    assert_eq!(v["seams"], 1);
    assert_eq!(v["clusters"][0]["files"], json!(["src/a x.rs", "src/b x.rs", "src/c x.rs"]), "URIs percent-decoded");
}

/// A seam counts real files: `src//a.rs`, `src/../src/a.rs` and a path through a link
/// to the same directory are one file, so two real files are no seam.
#[test]
fn a_seam_counts_real_files_not_spellings() {
    let r = TestRepo::new();
    r.write("src/a.rs", "a\n");
    r.write("src/b.rs", "b\n");
    std::os::unix::fs::symlink("src", r.root.join("srclink")).unwrap();
    std::os::unix::fs::symlink("/etc", r.root.join("etclink")).unwrap();
    r.commit_all("tree");
    let finding = |p: &str| json!({"lens": "ARCH", "severity": "high", "path": p, "line": 1, "title": "Limit check re-implemented"});
    let doc = json!({"findings": [finding("src/a.rs"), finding("src//a.rs"), finding("src/../src/a.rs"),
                                   finding("srclink/a.rs"), finding("src/b.rs"), finding("etclink/passwd")]});
    let out = route(&r, 1, &doc);
    out.expect_code(0);
    assert!(out.stderr.contains("etclink/passwd") && out.stderr.contains("outside_repo"), "{}", out.stderr);
    let v = out.json();
    assert_eq!(v["nextStep"], "lens-fix", "{v}");
    assert_eq!(v["dropped"], json!({"outside_repo": 1}));
    let seams = r.premerge(&["review", "seams", "--findings", &write_findings(&r, "s.json", &doc)]);
    assert_eq!(seams.expect_code(0).json()["clusters"][0]["files"], json!(["src/a.rs", "src/b.rs"]));
}

#[test]
fn explain_cap_refuses_a_seam_of_fewer_than_three_files_and_lives_under_review() {
    let r = TestRepo::new();
    for n in ["1", "2"] {
        let out = r.premerge(&["explain-cap", "repeat-finding-seam", "--files", n]);
        out.expect_code(2);
        assert!(out.stderr.starts_with("premerge: explain-cap: --files"), "{}", out.stderr);
        assert!(out.stderr.contains("at least 3 files"), "{}", out.stderr);
    }
    let top = r.premerge(&["explain-cap", "repeat-finding-seam", "--files", "3"]);
    let sub = r.premerge(&["review", "explain-cap", "repeat-finding-seam", "--files", "3"]);
    assert_eq!(sub.expect_code(0).stdout, top.expect_code(0).stdout);
    assert!(sub.stdout.contains("across 3 files"));
    r.premerge(&["review", "explain-cap", "no-such-cap"]).expect_code(2);
}
