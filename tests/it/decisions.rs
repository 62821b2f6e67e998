//! The decision code's outputs that callers print or count, pinned through the public
//! API (written to kill the mutants cargo-mutants found surviving the lib tests; see
//! docs/reliability.md).

use std::collections::HashSet;

use premerge::waves::carry::{PathCheck, decide};
use serde_json::json;

#[test]
fn carry_counts_and_summarises_every_dropped_row() {
    let rows = vec![
        json!(3),
        json!({"file": "../x", "from_file": "src/a.rs", "reason": "r"}),
        json!({"file": "src/b.rs", "from_file": "src/a.rs", "reason": "r"}),
        json!({"file": "src/b.rs", "from_file": "src/a.rs", "reason": "again"}),
        json!({"file": "src/owned.rs", "from_file": "src/a.rs", "reason": "r"}),
    ];
    let owned: HashSet<String> = ["src/owned.rs".to_string()].into();
    let out = decide(&rows, &owned, 4, &mut |_| PathCheck::Regular);
    // A second reason for the same file, and a row for a file that already has an
    // owner, join that file's group instead of being dropped (nothing a fixer needs is lost).
    assert_eq!(out.admitted.len(), 1);
    assert_eq!(out.joined.len(), 2, "{:?}", out.joined);
    assert_eq!(out.dropped_total(), 2);
    assert_eq!(out.summary().as_deref(), Some("dropped 2 blocked-on row(s): not_object=1 parent_component=1"));
    let clean = decide(&rows[2..3], &owned, 4, &mut |_| PathCheck::Regular);
    assert_eq!((clean.dropped_total(), clean.summary()), (0, None), "nothing dropped: no summary line");
}

fn plan(max_per_wave: usize, waves: &[&[&str]]) -> String {
    use premerge::waves::{SCHEMA_VERSION, WaveEntry, WavePlan, owner_id};
    let waves = waves
        .iter()
        .enumerate()
        .map(|(w, files)| {
            files
                .iter()
                .enumerate()
                .map(|(s, f)| WaveEntry { file: f.to_string(), findings: vec![], owner: owner_id(w + 1, s + 1) })
                .collect()
        })
        .collect();
    serde_json::to_string(&WavePlan { attempt: 1, max_per_wave, schema_version: SCHEMA_VERSION, waves }).unwrap()
}

#[test]
fn the_fence_reads_only_plans_whose_waves_hold_one_to_max_per_wave_files() {
    use premerge::waves::fence::{PlanError, parse_plan};
    assert!(parse_plan(&plan(2, &[&["src/a.rs", "src/b.rs"], &["src/c.rs"]]), 1).is_ok(), "a full wave is valid");
    for (why, text) in [
        ("a wave over max_per_wave", plan(2, &[&["src/a.rs", "src/b.rs", "src/c.rs"]])),
        ("an empty wave", plan(2, &[&[], &["src/a.rs"]])),
    ] {
        assert!(matches!(parse_plan(&text, 1), Err(PlanError::Invalid(_))), "{why} must be refused");
    }
}

#[test]
fn the_fence_quotes_a_path_with_a_quote_or_backslash() {
    use premerge::waves::fence::display_path;
    assert_eq!(display_path("src/a.rs"), "src/a.rs");
    assert_eq!(display_path("a\"b"), "\"a\\\"b\"", "a quote cannot end a quoted name early");
    assert_eq!(display_path("a\\b"), "\"a\\\\b\"", "a backslash cannot start an escape");
    assert_eq!(display_path("a\nb"), "\"a\\nb\"");
}

// ---------------------------------------------------------------- the gate's built-in authority

use premerge::gate::builtin;
use premerge::gate::{Decision, Evidence, PlanArtefact, Rule, SessionCommit};

/// A committed plan with `steps` unchecked steps, predating the session.
fn durable_plan(steps: usize) -> PlanArtefact {
    PlanArtefact {
        path: "docs/plans/p.md".into(),
        introducing_commit: Some("a".repeat(40)),
        latest_commit: Some("a".repeat(40)),
        created_this_session: false,
        modified_this_session: false,
        exists: true,
        worktree_blob: Some("b".repeat(40)),
        unchecked_steps: (0..steps.min(5)).map(|i| format!("step {i}")).collect(),
        unchecked_count: steps,
        head_unchecked_count: steps,
        head_unchecked_steps: (0..steps.min(5)).map(|i| format!("step {i}")).collect(),
    }
}

fn evidence(plans: Vec<PlanArtefact>, commits: usize, uncommitted: Option<usize>) -> Evidence {
    Evidence {
        head: Some("c".repeat(40)),
        session_start_head: Some("a".repeat(40)),
        plan_files: plans,
        commits_since_start: (0..commits)
            .map(|i| SessionCommit { sha: ["c", "d"][i % 2].repeat(40), summary: format!("commit {i}") })
            .collect(),
        truncated: false,
        uncommitted,
    }
}

/// "Everything is committed" is a completion only when the working tree agrees: with
/// uncommitted paths the claim is false and the agent is sent back to its plan.
#[test]
fn a_claim_that_everything_is_committed_is_checked_against_the_working_tree() {
    let msg = Some("All done, everything is committed.");
    let clean = builtin::decide(msg, &evidence(vec![durable_plan(2)], 1, Some(0)));
    assert_eq!((clean.decision, clean.rule), (Decision::Allow, Rule::LegitCompletion));
    let dirty = builtin::decide(msg, &evidence(vec![durable_plan(2)], 1, Some(3)));
    assert_eq!(dirty.decision, Decision::Continue, "{dirty:?}");
    assert!(dirty.rationale.contains("false excuse"), "{}", dirty.rationale);
    let unknown = builtin::decide(msg, &evidence(vec![durable_plan(2)], 1, None));
    assert_eq!(unknown.rule, Rule::LegitCompletion, "an unknown tree refutes nothing");
}

/// Without a durable artefact the built-in authority escalates either way, and the
/// rationale recorded in the gate log (`gate log --format json`) says which case it
/// was: halfway-stop talk, or nothing at all to go on.
#[test]
fn without_a_durable_artefact_the_logged_rationale_says_why() {
    use premerge::gate::reasons;
    let none = evidence(vec![], 0, Some(0));
    // Only drift: no stated continuation, no false excuse, no reason to stop.
    let drift = "Good checkpoint, pausing here.";
    let r = reasons::read(drift, Some(false));
    assert!(r.drift && !r.stated_continuation && !r.false_excuse && r.reason.is_none(), "{r:?}");
    let v = builtin::decide(Some(drift), &none);
    assert_eq!((v.decision, v.rule), (Decision::Escalate, Rule::AmbiguousInsufficientSignal));
    assert_eq!(v.rationale, "built-in: halfway-stop talk but no durable artefact to continue from");
    let neutral = "Here is a summary of the diff.";
    let r = reasons::read(neutral, Some(false));
    assert!(!r.drift && !r.stated_continuation && !r.false_excuse && r.reason.is_none(), "{r:?}");
    let v = builtin::decide(Some(neutral), &none);
    assert_eq!((v.decision, v.rule), (Decision::Escalate, Rule::AmbiguousInsufficientSignal));
    assert_eq!(v.rationale, "built-in: no legitimate reason and no durable artefact");
}

/// A continue cites what the evidence holds and nothing else: the plan's commit when
/// it is known (U2 carries it), and never U1 when the plan's commit is unknown (a
/// history walk that stopped at its bound, a shallow clone): that is U2 without it.
#[test]
fn a_continue_cites_the_plan_commit_only_when_known() {
    use premerge::gate::rules::validate;
    let drift = Some("Good checkpoint, pausing here.");
    let ev = evidence(vec![durable_plan(2)], 0, Some(0));
    let v = builtin::decide(drift, &ev);
    assert_eq!((v.decision, v.rule), (Decision::Continue, Rule::U2PlanFileNextStepExplicit));
    assert_eq!(v.pointer.plan_file.as_deref(), Some("docs/plans/p.md"));
    assert_eq!(v.pointer.plan_commit_sha, Some("a".repeat(40)));
    validate(&v, &ev).unwrap();
    let mut unknown = durable_plan(2);
    unknown.latest_commit = None;
    let ev = evidence(vec![unknown], 1, Some(0));
    let v = builtin::decide(drift, &ev);
    assert_eq!(v.rule, Rule::U2PlanFileNextStepExplicit, "{v:?}");
    assert_eq!(v.pointer.plan_commit_sha, None);
    assert_eq!(v.pointer.incremental_commit_sha, None);
}

/// An external authority's answer: `escalate` is one of its three decisions; a
/// `continue` under U2 must name the plan file; the decision names in the gate log and
/// in a refusal's detail are the documented ones (`gate log --format json` readers
/// match on them).
#[test]
fn an_external_authoritys_answer_is_read_and_checked_as_documented() {
    use premerge::gate::FailureKind;
    use premerge::gate::rules::parse_answer;
    let ev = evidence(vec![durable_plan(2)], 1, Some(0));
    let v = parse_answer(r#"{"decision":"escalate","rule":"U_AMBIGUOUS_INSUFFICIENT_SIGNAL"}"#, &ev).unwrap();
    assert_eq!((v.decision, v.rule), (Decision::Escalate, Rule::AmbiguousInsufficientSignal));
    let f = parse_answer(r#"{"decision":"continue","rule":"U2_PLAN_FILE_NEXT_STEP_EXPLICIT"}"#, &ev).unwrap_err();
    assert_eq!(f.kind, FailureKind::MissingPointer, "{f:?}");
    assert_eq!(f.detail, "U2_PLAN_FILE_NEXT_STEP_EXPLICIT requires `plan_file`");
    let ok = parse_answer(
        r#"{"decision":"continue","rule":"U2_PLAN_FILE_NEXT_STEP_EXPLICIT","evidence":{"plan_file":"docs/plans/p.md"}}"#,
        &ev,
    )
    .unwrap();
    assert_eq!(ok.rule, Rule::U2PlanFileNextStepExplicit);
    let f = parse_answer(r#"{"decision":"allow","rule":"U2_PLAN_FILE_NEXT_STEP_EXPLICIT"}"#, &ev).unwrap_err();
    assert_eq!(f.detail, "decision `allow` disagrees with the class of U2_PLAN_FILE_NEXT_STEP_EXPLICIT");
    let names: Vec<&str> =
        [Decision::Continue, Decision::Allow, Decision::Escalate, Decision::ForceAllow].map(Decision::as_str).into();
    assert_eq!(names, ["continue", "allow", "escalate", "force_allow"]);
}

/// A `continue` under U2 must cite a plan that still has an unchecked step; and what an
/// authority sent is echoed into a refusal's detail (the gate log) clipped to 80
/// characters with its control characters removed, so it cannot forge log lines.
#[test]
fn an_authoritys_refusal_detail_is_clipped_and_u2_needs_a_next_step() {
    use premerge::gate::FailureKind;
    use premerge::gate::rules::parse_answer;
    let ev = evidence(vec![durable_plan(0)], 1, Some(0));
    let f = parse_answer(
        r#"{"decision":"continue","rule":"U2_PLAN_FILE_NEXT_STEP_EXPLICIT","evidence":{"plan_file":"docs/plans/p.md"}}"#,
        &ev,
    )
    .unwrap_err();
    assert_eq!(
        (f.kind, f.detail.as_str()),
        (FailureKind::InvalidEvidence, "the cited plan file has no unchecked step")
    );
    let f = parse_answer(r#"{"decision":"nope\u001b[31m\nforged","rule":"x"}"#, &ev).unwrap_err();
    assert_eq!(f.detail, "unknown decision `nope[31mforged`");
    let long = "R".repeat(200);
    let f = parse_answer(&format!(r#"{{"decision":"allow","rule":"{long}"}}"#), &ev).unwrap_err();
    assert_eq!(f.detail, format!("rule `{}` is not enumerated", "R".repeat(80)));
}

/// The parts of a stripe id, as the proposal's front matter (`scope:`, `signal:`) and
/// the generator's `{signal}` placeholder carry them.
#[test]
fn a_stripe_id_gives_back_its_parts() {
    use premerge::stripe::StripeId;
    let id = StripeId::parse("scan/rust:TRACE-001:0123abcd").unwrap();
    assert_eq!((id.scope(), id.signal(), id.hash()), ("scan/rust", "TRACE-001", "0123abcd"));
    assert_eq!(id.file_stem(), "scan+rust:TRACE-001:0123abcd");
    assert_eq!(id.legacy_file_stem(), "scan--rust:TRACE-001:0123abcd");
}

/// Wave numbers are 1-based, as the plan's readers print them (`wave 1`, `wave 2`).
#[test]
fn a_wave_plans_entries_carry_one_based_wave_numbers() {
    use premerge::waves::{WaveEntry, WavePlan};
    let entry = |f: &str| WaveEntry { file: f.into(), findings: Vec::new(), owner: format!("fixer-{f}") };
    let plan = WavePlan {
        attempt: 1,
        max_per_wave: 1,
        schema_version: 1,
        waves: vec![vec![entry("a.rs")], vec![entry("b.rs")]],
    };
    let got: Vec<(usize, &str)> = plan.entries().map(|(n, e)| (n, e.file.as_str())).collect();
    assert_eq!(got, [(1, "a.rs"), (2, "b.rs")]);
}

// ---------------------------------------------------------------- classification and carried blockers

use premerge::findings::Finding;
use premerge::waves::{self, Severity, carry::CarryRow};

fn finding(index: usize, severity: &str, file: &str, title: &str) -> Finding {
    Finding {
        index,
        lens: None,
        severity: Some(severity.into()),
        file: file.into(),
        line: Some(3),
        title: title.into(),
        description: None,
        category: None,
        verdict: None,
        suggestion: None,
    }
}

/// `plan`'s lenient reading keeps the good findings and lists each bad one; the
/// findings limit admits exactly `max` findings; a finding's severity is what it says.
#[test]
fn classification_keeps_good_findings_lists_bad_ones_and_admits_exactly_max() {
    let fs = vec![
        finding(0, "blocker", "src/a.rs", "Null deref"),
        finding(1, "catastrophic", "src/b.rs", "Unknown severity"),
        finding(2, "suggestion", "src/c.rs", "Rename"),
    ];
    let (kept, dropped) = waves::classify_lenient(&fs, 3).unwrap();
    let files: Vec<&str> = kept.iter().map(|c| c.file.as_str()).collect();
    assert_eq!(files, ["src/a.rs", "src/c.rs"]);
    assert_eq!(dropped.len(), 1);
    assert_eq!((dropped[0].index, dropped[0].reason.as_str()), (1, "invalid_finding"));
    assert!(waves::classify(&fs[..2], 2).is_err(), "the unknown severity refuses the strict reading");
    assert_eq!(waves::classify(&[fs[0].clone(), fs[2].clone()], 2).unwrap().len(), 2, "exactly max is admitted");
    let too_many = waves::classify_lenient(&fs, 2).unwrap_err().to_string();
    assert!(too_many.contains('3') && too_many.contains('2'), "{too_many}");
    assert_eq!(waves::severity_of(&fs[0]), Some(Severity::Blocker));
    assert_eq!(waves::severity_of(&fs[2]), Some(Severity::Suggestion));
    assert_eq!(waves::severity_of(&fs[1]), None);
    // The files a plan owns: those with a blocker, and only those.
    let owned = waves::blocker_files(&kept);
    assert_eq!(owned, ["src/a.rs".to_string()].into());
}

/// Carried blocked-on rows become one blocker per file, in the order the files first
/// appear, ranked from `base`; one row keeps its reason as it is, several name who
/// reported each.
#[test]
fn carried_rows_become_one_ranked_blocker_per_file() {
    let row = |file: &str, from: &str, reason: &str| CarryRow {
        file: file.into(),
        from_file: from.into(),
        reason: reason.into(),
    };
    let rows = vec![
        row("src/x.rs", "src/a.rs", "needs the new signature"),
        row("src/y.rs", "src/b.rs", "type changed"),
        row("src/x.rs", "src/c.rs", "also needed here"),
    ];
    let out = waves::synthesise_all(&rows, 5);
    let got: Vec<(&str, usize)> = out.iter().map(|c| (c.file.as_str(), c.rank)).collect();
    assert_eq!(got, [("src/x.rs", 5), ("src/y.rs", 6)]);
    assert!(out.iter().all(|c| c.severity == Severity::Blocker && c.carried));
    assert_eq!(
        out[0].failure_scenario.as_deref(),
        Some("src/a.rs: needs the new signature\nsrc/c.rs: also needed here")
    );
    assert_eq!(out[1].failure_scenario.as_deref(), Some("type changed"));
    assert_eq!(waves::blocker_files(&out), ["src/x.rs".to_string(), "src/y.rs".to_string()].into());
}

/// The counts of a plan and its `PREMERGE_TRIAGE` line, which pipelines parse:
/// `JOINED=` and `INVALID=` appear only when non-zero.
#[test]
fn counts_and_the_triage_line_are_exact() {
    let classified = waves::classify(
        &[
            finding(0, "suggestion", "src/a.rs", "One"),
            finding(1, "suggestion", "src/b.rs", "Two"),
            finding(2, "suggestion", "src/c.rs", "Three"),
        ],
        10,
    )
    .unwrap();
    let carried = waves::synthesise_all(
        &[CarryRow { file: "src/x.rs".into(), from_file: "src/a.rs".into(), reason: "r".into() }],
        3,
    );
    let all: Vec<_> = classified.into_iter().chain(carried).collect();
    let mut c = waves::count(&all);
    assert_eq!((c.total, c.blocker, c.suggestion, c.carried), (4, 1, 3, 1));
    assert_eq!(
        waves::triage_line(2, &c, 1),
        "PREMERGE_TRIAGE TOTAL=4 BLOCKER=1 SUGGESTION=3 WAVES=1 ATTEMPT=2 BLOCKED=0 DROPPED=0"
    );
    c.blocked_on_joined = 2;
    c.findings_dropped.insert("invalid_finding".into(), 1);
    c.findings_dropped.insert("duplicate_finding".into(), 2);
    assert_eq!(
        waves::triage_line(2, &c, 1),
        "PREMERGE_TRIAGE TOTAL=4 BLOCKER=1 SUGGESTION=3 WAVES=1 ATTEMPT=2 BLOCKED=0 DROPPED=0 JOINED=2 INVALID=3"
    );
}
