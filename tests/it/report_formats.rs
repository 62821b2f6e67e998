//! Findings where reviewers look: `--format sarif` and `--format github` of `scan`,
//! `fence check` and `review route` on real repositories with real findings, the SARIF
//! validated against the OASIS 2.1.0 schema vendored in `tests/schemas/`; and the
//! reviewer's views (`show attempt --format markdown`, `show waves`) fed hostile agent
//! text.

use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use crate::common::{TestRepo, assert_text_snapshot};

/// The vendored OASIS schema, compiled once per test with format assertions on (so a
/// `uri` that is not a URI fails, not only a wrong shape).
fn sarif_schema() -> (boon::Schemas, boon::SchemaIndex) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/sarif-2.1.0.json");
    let schema: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    let id = schema["id"].as_str().unwrap().to_string();
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.enable_format_assertions();
    compiler.add_resource(&id, schema).unwrap();
    let index = compiler.compile(&id, &mut schemas).unwrap();
    (schemas, index)
}

/// Parse stdout as SARIF, check it against the schema and the parts code scanning
/// needs, and return it.
#[track_caller]
fn valid_sarif(stdout: &str) -> Value {
    let log: Value = serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"));
    let (schemas, index) = sarif_schema();
    if let Err(e) = schemas.validate(&log, index) {
        panic!("not valid SARIF 2.1.0: {e:#}\n{stdout}");
    }
    assert_eq!(log["version"], "2.1.0");
    let runs = log["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "one run per tool");
    let driver = &runs[0]["tool"]["driver"];
    assert_eq!(driver["name"], "premerge");
    assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));
    assert!(driver["informationUri"].as_str().unwrap().starts_with("https://"));
    assert!(runs[0]["originalUriBaseIds"]["%SRCROOT%"].is_object());
    let rules = driver["rules"].as_array().unwrap();
    let doc = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/rules.md")).unwrap();
    for rule in rules {
        let id = rule["id"].as_str().unwrap();
        for key in ["name", "shortDescription", "fullDescription"] {
            assert!(!rule[key].is_null(), "{id}: {key}");
        }
        // The help points at a heading that exists in docs/rules.md.
        let help = rule["helpUri"].as_str().unwrap();
        assert!(help.ends_with(&format!("docs/rules.md#{id}")), "{help}");
        assert!(doc.contains(&format!("\n### {id}\n")), "docs/rules.md has no heading for {id}");
    }
    for res in runs[0]["results"].as_array().unwrap() {
        let i = res["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[i]["id"], res["ruleId"], "{res}");
        assert!(["error", "warning", "note"].contains(&res["level"].as_str().unwrap()));
        assert_eq!(res["partialFingerprints"]["premerge/v1"].as_str().unwrap().len(), 32);
        for loc in res["locations"].as_array().unwrap() {
            let art = &loc["physicalLocation"]["artifactLocation"];
            assert_eq!(art["uriBaseId"], "%SRCROOT%");
            let uri = art["uri"].as_str().unwrap();
            assert!(!uri.starts_with('/') && !uri.contains("://"), "relative: {uri}");
        }
    }
    log
}

fn results(log: &Value) -> &Vec<Value> {
    log["runs"][0]["results"].as_array().unwrap()
}

const QUERY_BEFORE: &str = "pub struct Query {\n    pub limit: u8,\n    pub name: String,\n}\n";
const QUERY_AFTER: &str = "pub struct Query {\n    pub limit: u64,\n    pub name: String,\n}\n";

/// A widening (`u8` -> `u64`) in a real commit: SARIF valid and upload-ready, the same
/// bytes on a second run, and the same fingerprint when the code moves down the file.
#[test]
fn scan_sarif_is_valid_stable_and_survives_a_line_move() {
    let r = TestRepo::new();
    r.write("src/query.rs", QUERY_BEFORE);
    r.commit_all("before");
    r.write("src/query.rs", QUERY_AFTER);
    r.commit_all("after");
    let run = r.premerge(&["scan", "--no-memory", "--format", "sarif"]);
    run.expect_code(0);
    let log = valid_sarif(&run.stdout);
    let res = results(&log);
    assert_eq!(res.len(), 1, "{}", run.stdout);
    assert_eq!(res[0]["ruleId"], "rust-integer-widened");
    assert_eq!(res[0]["level"], "warning", "medium severity is a warning");
    let loc = &res[0]["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "src/query.rs");
    assert_eq!(loc["region"]["startLine"], 2);
    // Deterministic: the same bytes again.
    assert_eq!(r.premerge(&["scan", "--no-memory", "--format", "sarif"]).stdout, run.stdout);

    // The same change three lines further down: another line, the same identity.
    let pad = "// one\n// two\n// three\n";
    r.write("src/query.rs", format!("{pad}{QUERY_BEFORE}"));
    r.commit_all("before, moved");
    r.write("src/query.rs", format!("{pad}{QUERY_AFTER}"));
    r.commit_all("after, moved");
    let moved = valid_sarif(&r.premerge(&["scan", "--no-memory", "--format", "sarif"]).expect_code(0).stdout);
    let m = &results(&moved)[0];
    assert_eq!(m["locations"][0]["physicalLocation"]["region"]["startLine"], 5);
    assert_eq!(m["partialFingerprints"], res[0]["partialFingerprints"]);

    // GitHub annotations: one workflow command at the finding's line.
    let gh = r.premerge(&["scan", "--no-memory", "--format", "github"]);
    gh.expect_code(0);
    assert_eq!(gh.stdout.lines().count(), 1, "{}", gh.stdout);
    assert!(
        gh.stdout.starts_with("::warning file=src/query.rs,line=5,title=rust-integer-widened%3A Query.limit::"),
        "{}",
        gh.stdout
    );
    // Nothing found is an empty run, still valid.
    let none = r.premerge(&["scan", "--no-memory", "--format", "sarif", "--base", "HEAD", "--head", "HEAD"]);
    assert!(results(&valid_sarif(&none.expect_code(0).stdout)).is_empty());
}

/// A run directory outside the repository with attempt 1 planned on `a.rs`.
fn planned(r: &TestRepo) -> std::path::PathBuf {
    let run_dir = r.dir.path().join("run");
    r.write("a.rs", "fn a() {}\n");
    r.write("b.rs", "fn b() {}\n");
    r.commit_all("base");
    let findings = r.dir.path().join("findings.json");
    fs::write(
        &findings,
        json!([{"file": "a.rs", "line": 1, "summary": "bug a", "failure_scenario": "x", "category": "bug"}])
            .to_string(),
    )
    .unwrap();
    r.premerge(&[
        "plan",
        "--attempt",
        "1",
        "--findings",
        findings.to_str().unwrap(),
        "--run-dir",
        run_dir.to_str().unwrap(),
    ])
    .expect_code(0);
    run_dir
}

/// Strays of a real worktree change, names with commas, colons, percent signs, spaces
/// and a newline: SARIF valid with encoded URIs, one escaped annotation per stray, the
/// same exit code (1) and stderr in every format.
#[test]
fn fence_check_reports_strays_as_sarif_and_annotations() {
    let r = TestRepo::new();
    let run_dir = planned(&r);
    let rd = run_dir.to_str().unwrap();
    r.write("a.rs", "fn a() { /* fixed */ }\n");
    r.write("b.rs", "fn b() { /* stray */ }\n");
    r.write("odd, na:me 100%.rs", "x\n");
    r.write("line\nbreak.rs", "x\n");
    let comment = |r: &TestRepo| r.premerge(&["show", "attempt", "1", "--run-dir", rd, "--format", "markdown"]).stdout;
    assert!(comment(&r).contains("- **Fence**: not run (no fence result is recorded for this attempt)"));
    let text = r.premerge(&["fence", "check", "--attempt", "1", "--worktree", "--run-dir", rd]);
    text.expect_code(1);
    // Recorded for the reviewer's comment.
    assert!(comment(&r).contains("- **Fence**: refused, 3 stray path(s) (`fence check`)"), "{}", comment(&r));

    let sarif = r.premerge(&["fence", "check", "--attempt", "1", "--worktree", "--run-dir", rd, "--format", "sarif"]);
    sarif.expect_code(1);
    assert_eq!(sarif.stderr.lines().next(), text.stderr.lines().next());
    let log = valid_sarif(&sarif.stdout);
    let uris: Vec<&str> = results(&log)
        .iter()
        .map(|res| {
            assert_eq!(res["ruleId"], "fence-stray-path");
            assert_eq!(res["level"], "error");
            res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].as_str().unwrap()
        })
        .collect();
    assert_eq!(uris, ["b.rs", "line%0Abreak.rs", "odd%2C%20na%3Ame%20100%25.rs"]);

    let gh = r.premerge(&["fence", "check", "--attempt", "1", "--worktree", "--run-dir", rd, "--format", "github"]);
    gh.expect_code(1);
    let lines: Vec<&str> = gh.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", gh.stdout);
    assert!(lines.iter().all(|l| l.starts_with("::error file=") && l.contains(",title=fence-stray-path::")));
    assert!(lines[2].starts_with("::error file=odd%2C na%3Ame 100%25.rs,title="), "{}", lines[2]);
    // The newline in a name never starts a line of its own (the name is quoted and escaped).
    assert!(lines[1].starts_with("::error file=\"line\\nbreak.rs\",title="), "{}", lines[1]);

    let j = r.premerge(&["fence", "check", "--attempt", "1", "--worktree", "--run-dir", rd, "--format", "json"]);
    j.expect_code(1);
    let v = j.json();
    assert_eq!(v["refused"], true);
    assert_eq!(v["strays"], json!(["b.rs", "line\nbreak.rs", "odd, na:me 100%.rs"]));

    // Inside the allowed set: an empty, valid log and exit 0.
    r.git(&["checkout", "--", "b.rs"]);
    fs::remove_file(r.root.join("odd, na:me 100%.rs")).unwrap();
    fs::remove_file(r.root.join("line\nbreak.rs")).unwrap();
    let ok = r.premerge(&["fence", "check", "--attempt", "1", "--worktree", "--run-dir", rd, "--format", "sarif"]);
    assert!(results(&valid_sarif(&ok.expect_code(0).stdout)).is_empty());
    assert!(comment(&r).contains("- **Fence**: ok (`fence check`)"), "{}", comment(&r));
}

/// Three lens findings with one title in three files (a seam) and hostile text in a
/// title: route's SARIF has every finding and the seam (a location per file); its
/// annotations keep an injected workflow command and escapes inside one line.
#[test]
fn review_route_reports_findings_and_the_seam() {
    let r = TestRepo::new();
    for f in ["a", "b", "c"] {
        r.write(&format!("src/{f}.rs"), "pub fn f() {}\n");
    }
    r.commit_all("three handlers");
    let mut items: Vec<Value> = ["a", "b", "c"]
        .iter()
        .enumerate()
        .map(|(i, f)| {
            json!({"lens": "ARCHITECTURE", "severity": "high", "path": format!("src/{f}.rs"), "line": i + 2,
                   "title": "Page limit checked by hand", "description": "use the shared check"})
        })
        .collect();
    items.push(json!({"lens": "SECURITY", "severity": "low", "path": "src/a.rs", "line": 1,
                      "title": "odd\n::error file=x::forged \u{1b}[2J 50%, a:b", "description": ""}));
    let findings = r.dir.path().join("round-1.json");
    fs::write(&findings, json!({ "findings": items }).to_string()).unwrap();
    let run_dir = r.dir.path().join("run");
    let args = |format: &str| {
        vec![
            "review".to_string(),
            "route".into(),
            "--round".into(),
            "1".into(),
            "--findings".into(),
            findings.display().to_string(),
            "--run-dir".into(),
            run_dir.display().to_string(),
            "--format".into(),
            format.into(),
        ]
    };
    let json_run = r.premerge(&args("json").iter().map(String::as_str).collect::<Vec<_>>());
    json_run.expect_code(0);
    assert_eq!(json_run.json()["nextStep"], "step-back");

    let sarif = r.premerge(&args("sarif").iter().map(String::as_str).collect::<Vec<_>>());
    sarif.expect_code(0);
    let log = valid_sarif(&sarif.stdout);
    let res = results(&log);
    assert_eq!(res.iter().filter(|x| x["ruleId"] == "review-finding").count(), 4, "{}", sarif.stdout);
    let seam: Vec<&Value> = res.iter().filter(|x| x["ruleId"] == "review-seam").collect();
    assert_eq!(seam.len(), 1);
    let files: Vec<&str> = seam[0]["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["physicalLocation"]["artifactLocation"]["uri"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["src/a.rs", "src/b.rs", "src/c.rs"]);
    assert_eq!(seam[0]["locations"][1]["physicalLocation"]["region"]["startLine"], 3);
    // A high finding is an error, a low one a note; no raw control character anywhere.
    let levels: Vec<&str> = res.iter().map(|x| x["level"].as_str().unwrap()).collect();
    assert!(levels.contains(&"error") && levels.contains(&"note"), "{levels:?}");
    assert!(!sarif.stdout.contains('\u{1b}') && !sarif.stdout.contains("\\u001b"), "{}", sarif.stdout);

    let gh = r.premerge(&args("github").iter().map(String::as_str).collect::<Vec<_>>());
    gh.expect_code(0);
    for line in gh.stdout.lines() {
        assert!(
            line.starts_with("::error ") || line.starts_with("::warning ") || line.starts_with("::notice "),
            "{line}"
        );
        assert!(!line.contains('\u{1b}'), "{line}");
    }
    assert_eq!(gh.stdout.lines().count(), 5, "{}", gh.stdout);
    let hostile = gh.stdout.lines().find(|l| l.starts_with("::notice ")).unwrap();
    assert_eq!(
        hostile,
        "::notice file=src/a.rs,line=1,title=SECURITY::odd%0A::error file=x::forged \\u{1b}[2J 50%25, a:b"
    );
}

/// The fixer's reason of the audit's D5 and D7: terminal escapes, an image tag, a link,
/// a mention and a bare URL. Returns the run directory after attempt 2 carried it.
fn hostile_attempt(r: &TestRepo) -> std::path::PathBuf {
    let run_dir = planned(r);
    let rd = run_dir.to_str().unwrap();
    let reason = "ok\u{1b}[2J\u{1b}]0;owned\u{7}\u{1b}[31mRED see <img src=https://evil.example/p.png> \
                  [approve](https://evil.example) ![x](y) @admin www.evil.example *now* | `rm -rf` \u{202e}gpj.exe \
                  <!-- premerge:attempt-comment -->";
    let row = json!({"blocked_on_file": [{"file": "b.rs", "reason": reason}]}).to_string();
    r.premerge_stdin(&["blocked", "record", "--attempt", "1", "--from-file", "a.rs", "--run-dir", rd], row.as_bytes())
        .expect_code(0);
    let findings = r.dir.path().join("findings.json");
    r.premerge(&[
        "plan",
        "--attempt",
        "2",
        "--findings",
        findings.to_str().unwrap(),
        "--carry-blocked",
        "--run-dir",
        rd,
    ])
    .expect_code(0);
    r.premerge(&["converge", "--attempt", "2", "--run-dir", rd]).expect_code(0);
    // The fixer of b.rs also touched c.rs, which attempt 2 does not allow.
    r.write("b.rs", "fn b() { /* fixed */ }\n");
    r.write("c.rs", "fn c() {}\n");
    r.premerge(&["fence", "check", "--attempt", "2", "--worktree", "--run-dir", rd]).expect_code(1);
    run_dir
}

/// D5: no raw ESC, BEL or bidi character from a fixer's reason reaches the terminal in
/// `show waves` or `show attempt`.
#[test]
fn text_views_escape_terminal_controls_from_agent_text() {
    let r = TestRepo::new();
    let run_dir = hostile_attempt(&r);
    let rd = run_dir.to_str().unwrap();
    for args in [&["show", "waves", "--attempt", "2", "--run-dir", rd][..], &["show", "attempt", "2", "--run-dir", rd]]
    {
        let run = r.premerge(args);
        run.expect_code(0);
        assert!(
            !run.stdout.chars().any(|c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c)),
            "{args:?}: {}",
            run.stdout.escape_debug()
        );
    }
    let waves = r.premerge(&["show", "waves", "--attempt", "2", "--run-dir", rd]).stdout;
    assert!(waves.contains("from a.rs: ok\\u{1b}[2J\\u{1b}]0;owned\\u{7}\\u{1b}[31mRED"), "{waves}");
}

/// D7 and the reviewer's comment: the Markdown of `show waves` and `show attempt` has
/// no raw tag, link, image, mention or autolink from agent text; the comment starts with
/// its marker line (which agent text cannot forge) and records the converge decision.
#[test]
fn markdown_views_escape_agent_text_and_the_comment_is_pinned() {
    let r = TestRepo::new();
    let run_dir = hostile_attempt(&r);
    let rd = run_dir.to_str().unwrap();
    let waves = r.premerge(&["show", "waves", "--attempt", "2", "--run-dir", rd, "--format", "markdown"]);
    let comment = r.premerge(&["show", "attempt", "2", "--run-dir", rd, "--format", "markdown"]);
    for out in [&waves.expect_code(0).stdout, &comment.expect_code(0).stdout] {
        for raw in ["<img", "](", "![", "https://", "www.evil", "@admin", "*now*", "`rm -rf`", "\u{1b}", "\u{202e}"] {
            assert!(!out.contains(raw), "{raw:?} in\n{out}");
        }
    }
    let c = &comment.stdout;
    assert_eq!(c.lines().next(), Some("<!-- premerge:attempt-comment -->"));
    assert_eq!(c.matches("<!--").count(), 1, "agent text forged the marker:\n{c}");
    assert!(c.contains("- **Converge**: `CONTINUE`") || c.contains("- **Converge**: `STOP_"), "{c}");
    assert!(c.contains("- **Fence**: refused, 1 stray path(s) (`fence check`)"), "{c}");
    assert!(c.contains("#### Stray paths\n\n- `c.rs`\n"), "{c}");
    assert!(c.len() <= 65_536);
    assert_text_snapshot("report_formats_hostile_attempt_comment", &[r.dir.path()], c);
    assert_text_snapshot("report_formats_hostile_waves_markdown", &[r.dir.path()], &waves.stdout);

    // Rendered as GitHub renders a comment (GFM: tables, autolinks of bare URLs and
    // `www.`, raw HTML passed through): no link, image, tag or mention comes out.
    for (what, md) in [("comment", c.as_str()), ("waves", waves.stdout.as_str())] {
        let html = gfm_html(md);
        for raw in ["<a ", "<img", "<script", "<b>", "href="] {
            assert!(!html.contains(raw), "{what}: {raw:?} in the rendered HTML:\n{html}");
        }
        assert!(html.contains("<table>"), "{what}: the waves are a table:\n{html}");
        assert!(html.contains("&lt;img src=https:"), "{what}: the tag is text:\n{html}");
    }

    // The JSON view carries the same facts, unescaped (JSON escapes its own way).
    let j = r.premerge(&["show", "attempt", "2", "--run-dir", rd, "--format", "json"]);
    let v = j.expect_code(0).json();
    assert_eq!(v["carried"][0]["file"], "b.rs");
    assert!(v["carried"][0]["reason"].as_str().unwrap().contains("<img src=https://evil.example/p.png>"));
}

/// `premerge seams`: a helper pasted into three files is one `copied-block` result with
/// a location at each copy, in valid SARIF and as one annotation.
#[test]
fn seams_reports_a_copied_block_as_sarif_and_an_annotation() {
    let helper = |name: &str, var: &str| {
        format!(
            "pub fn {name}(raw: Option<u64>) -> Result<u64, String> {{\n    let {var} = raw.unwrap_or(20);\n    \
             if {var} == 0 || {var} > 500 {{\n        return Err(format!(\"out of range: {{}}\", {var}));\n    }}\n    \
             let page = {var}.min(100);\n    Ok(page)\n}}\n"
        )
    };
    let r = TestRepo::new();
    for f in ["a", "b", "c"] {
        r.write(&format!("src/{f}.rs"), format!("pub fn {f}() -> u32 {{\n    1\n}}\n"));
    }
    r.commit_all("base");
    for (f, var) in [("a", "v"), ("b", "n"), ("c", "size")] {
        r.write(
            &format!("src/{f}.rs"),
            format!("pub fn {f}() -> u32 {{\n    1\n}}\n\n{}", helper(&format!("clamp_{f}"), var)),
        );
    }
    r.commit_all("paste the helper three times");
    let sarif = r.premerge(&["seams", "--base", "HEAD~1", "--format", "sarif"]);
    let log = valid_sarif(&sarif.expect_code(0).stdout);
    let res = results(&log);
    assert_eq!(res.len(), 1, "{}", sarif.stdout);
    assert_eq!(res[0]["ruleId"], "copied-block");
    let at: Vec<(&str, u64)> = res[0]["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let p = &l["physicalLocation"];
            (p["artifactLocation"]["uri"].as_str().unwrap(), p["region"]["startLine"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(at, [("src/a.rs", 5), ("src/b.rs", 5), ("src/c.rs", 5)]);
    let gh = r.premerge(&["seams", "--base", "HEAD~1", "--format", "github"]);
    assert!(
        gh.expect_code(0).stdout.starts_with("::notice file=src/a.rs,line=5,title=copied-block::"),
        "{}",
        gh.stdout
    );
    assert_eq!(gh.stdout.lines().count(), 1);
}

/// Markdown to HTML as GitHub renders a comment: GitHub Flavored Markdown with tables,
/// strikethrough, task lists and autolinks, raw HTML passed through (GitHub then
/// sanitises it, but a tag that reached the HTML was a tag the agent wrote).
fn gfm_html(md: &str) -> String {
    let mut o = comrak::Options::default();
    o.extension.table = true;
    o.extension.strikethrough = true;
    o.extension.autolink = true;
    o.extension.tasklist = true;
    o.render.r#unsafe = true;
    comrak::markdown_to_html(md, &o)
}
