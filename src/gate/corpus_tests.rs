//! The session corpus: scenarios written for premerge under
//! `tests/fixtures/gate/sessions/` (the set the rules were written against) and
//! `tests/fixtures/gate/sessions-heldout/` (written after the rules were frozen).
//! Each scenario is a repository state (the plan at HEAD and in the work tree,
//! session commits, uncommitted paths), a session rendered as Claude Code JSONL,
//! the final message and the expected verdict. The test renders each transcript to
//! the real JSONL shape, reads it with `session::read` and judges it with
//! `builtin::decide_session`; it fails when agreement or legitimate stops blocked
//! fall below the figures `docs/gate.md` states.
//!
//! Scenario format (one file holds many; `#` lines are comments):
//!
//! ```text
//! === <id>
//! expect: block | allow
//! kind: <what the scenario is about>
//! plan: x Parse the config; _ Wire the CLI     (HEAD; `x` checked, `_` open; absent: no plan)
//! work: x Parse the config; x Wire the CLI     (work tree; absent: as at HEAD)
//! plan-new: yes                                (the plan was committed in this session)
//! commits: 2                                   (session commits; default: the transcript's)
//! uncommitted: 3                               (default 0)
//! user: <the user's turn>
//! say: <assistant text>
//! bash: <command> => <exit> | <output>         (`=> <exit>` and `| <output>` optional)
//! edit: <path>   write: <path>   read: <path>
//! interrupt:                                   (`[Request interrupted by user]`)
//! meta: <harness text>   compact: <summary>
//! final: <the agent's final message>
//! final+: <a further line of it>               (appended after a newline)
//! shape: codex                                 (a Codex CLI rollout; default: Claude Code)
//! ```

use serde_json::json;

use super::builtin::decide_session;
use super::rules::{Decision, validate};
use super::session;
use super::{Evidence, PlanArtefact, SessionCommit};

const PLAN: &str = "docs/plans/work.md";

#[derive(Debug, Default)]
struct Scenario {
    id: String,
    block: bool,
    kind: String,
    plan: Option<String>,
    work: Option<String>,
    plan_new: bool,
    commits: Option<usize>,
    uncommitted: usize,
    lines: Vec<(String, String)>,
    final_msg: String,
    /// `codex`: the session is rendered as a Codex CLI rollout, not Claude Code JSONL.
    codex: bool,
}

fn plan_markdown(spec: &str) -> String {
    let mut out = String::from("# Plan\n\n");
    for step in spec.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let (mark, text) = step.split_once(' ').unwrap_or((step, ""));
        let box_ = match mark {
            "x" => "[x]",
            "_" => "[ ]",
            other => panic!("plan step must start with `x` or `_`: {other}"),
        };
        out.push_str(&format!("- {box_} {text}\n"));
    }
    out
}

fn parse(file: &str, text: &str) -> Vec<Scenario> {
    let mut out: Vec<Scenario> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(id) = line.strip_prefix("=== ") {
            out.push(Scenario { id: id.trim().to_string(), ..Scenario::default() });
            continue;
        }
        let s = out.last_mut().unwrap_or_else(|| panic!("{file}:{}: directive before `===`", n + 1));
        let (key, value) = line.split_once(':').unwrap_or_else(|| panic!("{file}:{}: `{line}`", n + 1));
        let value = value.trim().to_string();
        match key {
            "expect" => {
                s.block = match value.as_str() {
                    "block" => true,
                    "allow" => false,
                    v => panic!("{file}:{}: expect {v}", n + 1),
                }
            }
            "kind" => s.kind = value,
            "plan" => s.plan = Some(plan_markdown(&value)),
            "work" => s.work = Some(plan_markdown(&value)),
            "plan-new" => s.plan_new = value == "yes",
            "commits" => s.commits = Some(value.parse().unwrap()),
            "uncommitted" => s.uncommitted = value.parse().unwrap(),
            "final" => s.final_msg = value,
            // A further line of the final message (markdown headings, bullets): agents'
            // long summaries span lines, and one `final:` line cannot hold them.
            "final+" => {
                s.final_msg.push('\n');
                s.final_msg.push_str(&value);
            }
            "shape" => {
                s.codex = match value.as_str() {
                    "codex" => true,
                    "claude" => false,
                    v => panic!("{file}:{}: shape {v}", n + 1),
                }
            }
            "user" | "say" | "bash" | "edit" | "write" | "read" | "interrupt" | "meta" | "compact" => {
                s.lines.push((key.to_string(), value))
            }
            other => panic!("{file}:{}: unknown directive `{other}`", n + 1),
        }
    }
    for s in &out {
        assert!(!s.final_msg.is_empty(), "{file}: {} has no final message", s.id);
        assert!(!s.kind.is_empty(), "{file}: {} has no kind", s.id);
    }
    out
}

/// The scenario's session as Claude Code writes it: one JSON object per line with
/// `type`, `message.role`, `message.content` blocks, tool ids pairing each
/// `tool_use` with its `tool_result`, and the envelope fields around them.
fn render(s: &Scenario) -> (String, usize) {
    let mut out = Vec::new();
    let mut commits = 0;
    let envelope = |i: usize, kind: &str, message: serde_json::Value| {
        json!({"parentUuid": if i == 0 { serde_json::Value::Null } else { json!(format!("u{}", i - 1)) },
            "isSidechain": false, "userType": "external", "cwd": "/repo", "sessionId": "s-corpus",
            "version": "1.0.98", "gitBranch": "main", "type": kind, "message": message,
            "uuid": format!("u{i}"), "timestamp": format!("2026-12-01T09:{:02}:00.000Z", i % 60)})
    };
    let assistant = |content: serde_json::Value| {
        json!({"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4",
            "content": content, "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 20}})
    };
    let mut tool = 0;
    for (key, value) in &s.lines {
        let i = out.len();
        match key.as_str() {
            "user" => out.push(envelope(i, "user", json!({"role": "user", "content": value}))),
            "interrupt" => out.push(envelope(
                i,
                "user",
                json!({"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]}),
            )),
            "meta" => {
                let mut e = envelope(i, "user", json!({"role": "user", "content": value}));
                e["isMeta"] = json!(true);
                out.push(e);
            }
            "compact" => {
                let mut e = envelope(i, "user", json!({"role": "user", "content": value}));
                e["isCompactSummary"] = json!(true);
                out.push(e);
            }
            "say" => out.push(envelope(i, "assistant", assistant(json!([{"type": "text", "text": value}])))),
            "bash" | "edit" | "write" | "read" => {
                tool += 1;
                let id = format!("toolu_{tool:04}");
                let (input, name, code, output) = match key.as_str() {
                    "bash" => {
                        let (cmd, rest) = value.split_once("=>").unwrap_or((value, ""));
                        let (code, output) = rest.split_once('|').unwrap_or((rest, ""));
                        let code: i32 = code.trim().parse().unwrap_or(0);
                        let cmd = cmd.trim();
                        if code == 0 && cmd.contains("git commit") {
                            commits += 1;
                        }
                        let output = output.trim().replace("\\n", "\n");
                        (json!({"command": cmd, "description": "Run a command"}), "Bash", code, output)
                    }
                    "edit" => (
                        json!({"file_path": format!("/repo/{value}"), "old_string": "a", "new_string": "b"}),
                        "Edit",
                        0,
                        format!("The file /repo/{value} has been updated."),
                    ),
                    "write" => (
                        json!({"file_path": format!("/repo/{value}"), "content": "…"}),
                        "Write",
                        0,
                        format!("File created successfully at: /repo/{value}"),
                    ),
                    _ => (json!({"file_path": format!("/repo/{value}")}), "Read", 0, "     1\tcontents".to_string()),
                };
                out.push(envelope(
                    i,
                    "assistant",
                    assistant(json!([{"type": "tool_use", "id": id, "name": name, "input": input}])),
                ));
                let content = if code == 0 { output.clone() } else { format!("Exit code {code}\n{output}") };
                let mut r = envelope(
                    i + 1,
                    "user",
                    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
                        "content": content, "is_error": code != 0}]}),
                );
                r["toolUseResult"] = json!({"stdout": output, "stderr": "", "interrupted": false, "isImage": false});
                out.push(r);
            }
            _ => unreachable!(),
        }
    }
    let i = out.len();
    out.push(envelope(i, "assistant", assistant(json!([{"type": "text", "text": s.final_msg}]))));
    let mut text: String = out.iter().map(|v| format!("{v}\n")).collect();
    // Claude Code may still be writing: a torn line at the end is part of the format.
    text.push_str(r#"{"type":"system","subtype":"stop_hook_summary","content":"#);
    (text, commits)
}

/// The scenario's session as Codex CLI records it (a rollout): one
/// `{"timestamp","type","payload"}` object per line, the session's metadata and
/// environment first, user and assistant `message` items, shell calls as
/// `function_call` (an argv under `bash -lc`) with a `function_call_output` holding
/// the output and exit code as JSON text, edits as `apply_patch` custom tool calls,
/// an abort as a `turn_aborted` event, and `event_msg` copies of the messages.
fn render_codex(s: &Scenario) -> (String, usize) {
    let mut out = Vec::new();
    let mut commits = 0;
    let line = |i: usize, kind: &str, payload: serde_json::Value| json!({"timestamp": format!("2026-12-01T09:{:02}:{:02}.000Z", i / 60 % 60, i % 60), "type": kind, "payload": payload});
    out.push(line(
        0,
        "session_meta",
        json!({"id": "s-corpus", "cwd": "/repo", "originator": "codex_cli_rs", "cli_version": "0.63.0"}),
    ));
    out.push(line(1, "response_item", json!({"type": "message", "role": "user", "content": [{"type": "input_text",
        "text": "<environment_context>\n  <cwd>/repo</cwd>\n  <approval_policy>on-request</approval_policy>\n</environment_context>"}]})));
    let mut call = 0;
    for (key, value) in &s.lines {
        let i = out.len();
        match key.as_str() {
            "user" => {
                out.push(line(
                    i,
                    "response_item",
                    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": value}]}),
                ));
                out.push(line(i + 1, "event_msg", json!({"type": "user_message", "message": value, "kind": "plain"})));
                out.push(line(
                    i + 2,
                    "turn_context",
                    json!({"cwd": "/repo", "approval_policy": "on-request", "model": "gpt-5-codex"}),
                ));
            }
            "interrupt" => out.push(line(i, "event_msg", json!({"type": "turn_aborted", "reason": "interrupted"}))),
            "meta" => out.push(line(i, "event_msg", json!({"type": "agent_reasoning", "text": value}))),
            "compact" => out.push(line(i, "compacted", json!({"message": value}))),
            "say" => {
                out.push(line(i, "response_item", json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": value}]})));
                out.push(line(i + 1, "event_msg", json!({"type": "agent_message", "message": value})));
            }
            "bash" | "read" => {
                call += 1;
                let id = format!("call_{call:04}");
                let (cmd, code, output) = if key == "bash" {
                    let (cmd, rest) = value.split_once("=>").unwrap_or((value, ""));
                    let (code, output) = rest.split_once('|').unwrap_or((rest, ""));
                    let code: i32 = code.trim().parse().unwrap_or(0);
                    if code == 0 && cmd.contains("git commit") {
                        commits += 1;
                    }
                    (cmd.trim().to_string(), code, output.trim().replace("\\n", "\n"))
                } else {
                    (format!("sed -n '1,200p' {value}"), 0, "contents".to_string())
                };
                let args =
                    json!({"command": ["bash", "-lc", cmd], "workdir": "/repo", "timeout_ms": 120000}).to_string();
                out.push(line(
                    i,
                    "response_item",
                    json!({"type": "function_call", "name": "shell", "arguments": args, "call_id": id}),
                ));
                let result =
                    json!({"output": output, "metadata": {"exit_code": code, "duration_seconds": 0.4}}).to_string();
                out.push(line(
                    i + 1,
                    "response_item",
                    json!({"type": "function_call_output", "call_id": id, "output": result}),
                ));
            }
            "edit" | "write" => {
                call += 1;
                let id = format!("call_{call:04}");
                let verb = if key == "edit" { "Update" } else { "Add" };
                let patch = format!("*** Begin Patch\n*** {verb} File: {value}\n@@\n-a\n+b\n*** End Patch\n");
                out.push(line(i, "response_item", json!({"type": "custom_tool_call", "name": "apply_patch", "input": patch, "call_id": id, "status": "completed"})));
                let mark = if key == "edit" { "M" } else { "A" };
                out.push(line(
                    i + 1,
                    "response_item",
                    json!({"type": "custom_tool_call_output", "call_id": id,
                    "output": format!("Success. Updated the following files:\n{mark} {value}\n")}),
                ));
            }
            _ => unreachable!(),
        }
    }
    let i = out.len();
    out.push(line(
        i,
        "response_item",
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": s.final_msg}]}),
    ));
    out.push(line(i + 1, "event_msg", json!({"type": "task_complete", "last_agent_message": s.final_msg})));
    let mut text: String = out.iter().map(|v| format!("{v}\n")).collect();
    // A rollout may be read while Codex appends to it.
    text.push_str(r#"{"timestamp":"2026-12-01T10:00:00.000Z","type":"event_msg","payload":{"type":"token_co"#);
    (text, commits)
}

fn evidence(s: &Scenario, transcript_commits: usize) -> Evidence {
    let commits = s.commits.unwrap_or(transcript_commits);
    let mut ev = Evidence {
        head: Some("c".repeat(40)),
        session_start_head: Some("a".repeat(40)),
        commits_since_start: (0..commits)
            .map(|i| SessionCommit { sha: format!("{:040x}", 0xc0ffee + i), summary: format!("commit {i}") })
            .collect(),
        uncommitted: Some(s.uncommitted),
        ..Evidence::default()
    };
    if let Some(head) = &s.plan {
        let work = s.work.as_deref().unwrap_or(head);
        let (steps, count) = super::payload::unchecked_steps(work);
        let (head_steps, head_count) = super::payload::unchecked_steps(head);
        ev.plan_files.push(PlanArtefact {
            path: PLAN.into(),
            introducing_commit: Some("a".repeat(40)),
            latest_commit: Some("a".repeat(40)),
            created_this_session: s.plan_new,
            modified_this_session: s.plan_new,
            exists: true,
            worktree_blob: Some("b".repeat(40)),
            unchecked_steps: steps,
            unchecked_count: count,
            head_unchecked_count: head_count,
            head_unchecked_steps: head_steps,
        });
    }
    ev
}

/// Agreement, legitimate stops blocked, legitimate stops, and the disagreements.
/// Every scenario of the `.txt` files in `dir`, in file order; ids must be unique.
fn load(name: &str, dir: &str) -> Vec<Scenario> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let mut all = Vec::new();
    for f in files.iter().filter(|f| f.extension().is_some_and(|e| e == "txt")) {
        all.extend(parse(&f.display().to_string(), &std::fs::read_to_string(f).unwrap()));
    }
    let mut ids: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
    ids.sort_unstable();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "{name}: scenario ids must be unique");
    all
}

fn measure(name: &str, dir: &str) -> (usize, usize, usize, usize, Vec<String>) {
    let all = load(name, dir);
    let mut wrong = Vec::new();
    let mut legit_blocked = 0;
    let legit = all.iter().filter(|s| !s.block).count();
    for s in &all {
        let (jsonl, transcript_commits) = if s.codex { render_codex(s) } else { render(s) };
        let ev = evidence(s, transcript_commits);
        let plans: Vec<&str> = ev.plan_files.iter().map(|p| p.path.as_str()).collect();
        let mut facts = session::read(&jsonl, &plans);
        // As the judge does: where the work tree's plan stands, for a numbered stop point.
        if facts.stop_point.as_ref().is_some_and(|sp| sp.last_step.is_some()) && !s.plan_new {
            facts.first_open_step =
                s.work.as_deref().or(s.plan.as_deref()).and_then(super::payload::first_open_position);
        }
        // As the judge does: steps the user left by number, by their text.
        if !s.plan_new
            && let Some(text) = s.work.as_deref().or(s.plan.as_deref())
        {
            facts.left_steps =
                facts.left_step_numbers.iter().filter_map(|n| super::payload::step_at(text, *n)).collect();
        }
        assert_eq!(facts.last_assistant_text.as_deref(), Some(s.final_msg.as_str()), "{}", s.id);
        let v = decide_session(Some(&s.final_msg), &ev, Some(&facts));
        validate(&v, &ev).unwrap_or_else(|f| panic!("{}: invalid verdict {f:?}", s.id));
        let blocked = v.decision == Decision::Continue;
        if blocked != s.block {
            legit_blocked += usize::from(blocked);
            wrong.push(format!(
                "{} ({}; expected {}): {} -> {}",
                s.id,
                s.kind,
                if s.block { "block" } else { "allow" },
                v.rule.id(),
                v.rationale
            ));
        }
    }
    let agree = all.len() - wrong.len();
    eprintln!(
        "{name}: {} scenarios ({} halfway, {legit} legitimate), agreement {agree}/{} = {:.1}%, legitimate stops blocked {legit_blocked}/{legit}",
        all.len(),
        all.len() - legit,
        all.len(),
        agree as f64 * 100.0 / all.len() as f64
    );
    for w in &wrong {
        eprintln!("  {w}");
    }
    (agree, all.len(), legit_blocked, legit, wrong)
}

/// `cargo test --lib sessions_ -- --nocapture` prints the figures of docs/gate.md
/// ("Sessions") with every disagreement.
#[test]
fn sessions_corpus_agreement() {
    // The floors are the figures docs/gate.md states for this set.
    holds_floors(
        "sessions",
        "tests/fixtures/gate/sessions",
        200,
        CORPUS_AGREEMENT_PERMILLE,
        CORPUS_MAX_LEGIT_BLOCKED_SHARE,
    );
}

/// `dir` has at least `min` scenarios, agrees on at least `permille` of them and blocks
/// at most `share` of its legitimate stops.
fn holds_floors(name: &str, dir: &str, min: usize, permille: usize, share: f64) {
    let (agree, total, blocked, legit, _) = measure(name, dir);
    assert!(total >= min, "{name}: {total} scenarios");
    assert!(agree * 1000 >= total * permille, "{name}: agreement {agree}/{total}");
    assert!(blocked as f64 <= share * legit as f64, "{name}: legitimate stops blocked {blocked}/{legit}");
}

/// The corpus floor: docs/gate.md's measured agreement (505 of 505 in round 6), in
/// tenths of a percent. The rules were written against this set, so its figure is an upper
/// bound of what to expect; the held-out figure is the estimate.
const CORPUS_AGREEMENT_PERMILLE: usize = 1000;
/// The corpus ceiling of the share of legitimate stops blocked, as docs/gate.md
/// states it (0 of 263 in round 6).
const CORPUS_MAX_LEGIT_BLOCKED_SHARE: f64 = 0.0;

/// The held-out set: written after the rules were frozen and never used to change
/// one (docs/gate.md, "Sessions"). The floors are its measured figures, so a rule
/// change that does worse on unseen sessions fails here.
#[test]
fn sessions_heldout_agreement() {
    holds_floors(
        "held-out",
        "tests/fixtures/gate/sessions-heldout",
        60,
        HELDOUT_AGREEMENT_PERMILLE,
        HELDOUT_MAX_LEGIT_BLOCKED_SHARE,
    );
}

/// The held-out floor, in tenths of a percent. Its first run against the frozen rules
/// agreed on 56 of 60 with 3 of 33 legitimate stops blocked (docs/gate.md, the honest
/// estimate); the four misses were then fixed in general terms, so the set now agrees
/// on 60 of 60 and no longer estimates anything: these floors only catch regressions.
const HELDOUT_AGREEMENT_PERMILLE: usize = 1000;
/// The held-out ceiling of the share of legitimate stops blocked since the fix (0 of 33).
const HELDOUT_MAX_LEGIT_BLOCKED_SHARE: f64 = 0.0;

/// The second held-out set's directory: written blind to the rules on 2026-12-01 while
/// they were being changed, and never used to change one.
const HELDOUT_2_DIR: &str = "tests/fixtures/gate/sessions-heldout-2";
/// At least this many scenarios, as issue 29 asks of a held-out set.
const HELDOUT_2_MIN_SCENARIOS: usize = 60;
/// At least this many legitimate stops, so "at most one legitimate stop in 30 blocked"
/// can be measured on the set at all.
const HELDOUT_2_MIN_LEGIT: usize = 30;

/// The second held-out set is what issue 29 asks of one: it parses with unique ids,
/// every scenario has a user turn, and it holds at least 60 scenarios of which at
/// least 30 legitimate stops (rendering and reading back are checked where it is
/// measured, [`sessions_heldout_2_agreement`]).
#[test]
fn sessions_heldout_2_parses() {
    let all = load("held-out 2", HELDOUT_2_DIR);
    for s in &all {
        assert!(s.lines.iter().any(|(k, _)| k == "user"), "{}: no user turn", s.id);
    }
    let legit = all.iter().filter(|s| !s.block).count();
    assert!(all.len() >= HELDOUT_2_MIN_SCENARIOS, "{} scenarios", all.len());
    assert!(legit >= HELDOUT_2_MIN_LEGIT, "{legit} legitimate stops");
}

/// The second held-out set, training data since round 3 (`wt3/gate`): prints the
/// figures and every disagreement (`cargo test --lib sessions_heldout_2_agreement --
/// --nocapture`).
#[test]
fn sessions_heldout_2_agreement() {
    holds_floors(
        "held-out 2",
        HELDOUT_2_DIR,
        HELDOUT_2_MIN_SCENARIOS,
        HELDOUT_2_AGREEMENT_PERMILLE,
        HELDOUT_2_MAX_LEGIT_BLOCKED_SHARE,
    );
}

/// The second held-out set's first run against the rules frozen at the merge of
/// `wt2/gate` (2026-12-01) agreed on 68 of 78 and blocked 5 of 39 legitimate stops
/// (docs/gate.md keeps that honest record). Its ten misses were then fixed as classes
/// in `wt3/gate`, so the set became training data and agrees on 78 of 78: these floors
/// only catch regressions; the third held-out set is the estimate.
const HELDOUT_2_AGREEMENT_PERMILLE: usize = 1000;
/// See [`HELDOUT_2_AGREEMENT_PERMILLE`]: no legitimate stop of the set is blocked since round 3.
const HELDOUT_2_MAX_LEGIT_BLOCKED_SHARE: f64 = 0.0;

/// The third held-out set's directory: written blind to the rules on 2026-12-01 while
/// they were being changed again, measured once by the lead after the merge of
/// `wt3/gate`, and training data since round 4 (`wt4/gate4`).
const HELDOUT_3_DIR: &str = "tests/fixtures/gate/sessions-heldout-3";
/// At least this many scenarios, so the set estimates agreement more finely than issue
/// 29's minimum of 60 (one disagreement moves the figure by under 1.5 points).
const HELDOUT_3_MIN_SCENARIOS: usize = 70;
/// At least this many legitimate stops, so "at most one legitimate stop in 30 blocked"
/// can be measured on the set with room to spare.
const HELDOUT_3_MIN_LEGIT: usize = 35;

/// The third held-out set parses with unique ids, every scenario has a user turn, and it
/// holds at least 70 scenarios of which at least 35 legitimate stops. Parse-only on
/// purpose: no verdict is computed here, so the set cannot be tuned to the rules before
/// the lead's one measurement.
#[test]
fn sessions_heldout_3_parses() {
    let all = load("held-out 3", HELDOUT_3_DIR);
    for s in &all {
        assert!(s.lines.iter().any(|(k, _)| k == "user"), "{}: no user turn", s.id);
    }
    let legit = all.iter().filter(|s| !s.block).count();
    assert!(all.len() >= HELDOUT_3_MIN_SCENARIOS, "{} scenarios", all.len());
    assert!(legit >= HELDOUT_3_MIN_LEGIT, "{legit} legitimate stops");
}

/// The third held-out set's first run against the rules frozen at `wt3/gate`'s final
/// commit (`a274f12`), measured once by the lead after the merge (2026-12-01): 79 of 96
/// agreed and 6 of 46 legitimate stops were blocked (docs/gate.md keeps that honest
/// record and lists every disagreement). No later figure may fall below it.
const HELDOUT_3_FIRST_AGREE: usize = 79;
/// See [`HELDOUT_3_FIRST_AGREE`].
const HELDOUT_3_FIRST_LEGIT_BLOCKED: usize = 6;
/// Since round 4 the set is training data: its 17 misses were fixed as classes, and it
/// agrees on 96 of 96. In tenths of a percent; only catches regressions now.
const HELDOUT_3_AGREEMENT_PERMILLE: usize = 1000;
/// See [`HELDOUT_3_AGREEMENT_PERMILLE`]: no legitimate stop of the set is blocked since round 4.
const HELDOUT_3_MAX_LEGIT_BLOCKED_SHARE: f64 = 0.0;

/// The third held-out set: never below its first run, and at the floors of round 4
/// (`cargo test --lib sessions_heldout_3_agreement -- --nocapture` prints them).
#[test]
fn sessions_heldout_3_agreement() {
    let (agree, total, blocked, legit, _) = measure("held-out 3", HELDOUT_3_DIR);
    assert!(agree >= HELDOUT_3_FIRST_AGREE, "agreement {agree}/{total}, below the first run's");
    assert!(
        blocked <= HELDOUT_3_FIRST_LEGIT_BLOCKED,
        "legitimate stops blocked {blocked}/{legit}, above the first run's"
    );
    assert!(agree * 1000 >= total * HELDOUT_3_AGREEMENT_PERMILLE, "agreement {agree}/{total}");
    assert!(
        blocked as f64 <= HELDOUT_3_MAX_LEGIT_BLOCKED_SHARE * legit as f64,
        "legitimate stops blocked {blocked}/{legit}"
    );
}

/// The fourth held-out set's directory: written blind to the rules on 2026-12-01 while
/// another helper was changing them, and never used to change one. The lead measures it
/// once, after the rules freeze; until then only its form is checked here.
const HELDOUT_4_DIR: &str = "tests/fixtures/gate/sessions-heldout-4";
/// At least this many scenarios, so one disagreement moves the agreement figure by under
/// 1.5 points (issue 29 asks for at least 60).
const HELDOUT_4_MIN_SCENARIOS: usize = 70;
/// At least this many legitimate stops, so "at most one legitimate stop in 30 blocked"
/// can be measured on the set with room to spare.
const HELDOUT_4_MIN_LEGIT: usize = 35;

/// The fourth held-out set parses with unique ids, every scenario has a user turn, and it
/// holds at least 70 scenarios of which at least 35 legitimate stops. Parse-only on
/// purpose: no verdict is computed here, so the set cannot be tuned to the rules before
/// the lead's one measurement.
#[test]
fn sessions_heldout_4_parses() {
    let all = load("held-out 4", HELDOUT_4_DIR);
    for s in &all {
        assert!(s.lines.iter().any(|(k, _)| k == "user"), "{}: no user turn", s.id);
    }
    let legit = all.iter().filter(|s| !s.block).count();
    assert!(all.len() >= HELDOUT_4_MIN_SCENARIOS, "{} scenarios", all.len());
    assert!(legit >= HELDOUT_4_MIN_LEGIT, "{legit} legitimate stops");
}

/// The fourth held-out set's first run against the rules frozen at `wt4/gate4`'s final
/// commit (`1521663`), measured once by the lead after the merge (2026-12-01): 78 of 94
/// agreed and 6 of 47 legitimate stops were blocked (docs/gate.md keeps that honest
/// record and lists every disagreement). No later figure may fall below it.
const HELDOUT_4_FIRST_AGREE: usize = 78;
/// See [`HELDOUT_4_FIRST_AGREE`].
const HELDOUT_4_FIRST_LEGIT_BLOCKED: usize = 6;
/// Since round 5 (`wt5/gate5`) the set is training data: its misses were fixed as
/// classes and it agrees on 93 of 94 (the one left, `h4-agent-plan-then-stops`, is an
/// agent that wrote its own plan in the session and stopped: no durable artefact to
/// point to, so the gate does not refuse it; docs/gate.md says why). Floors only.
const HELDOUT_4_AGREE: usize = 93;
/// See [`HELDOUT_4_AGREE`]: no legitimate stop of the set is blocked since round 5
/// (a share, like the other sets' ceilings).
const HELDOUT_4_MAX_LEGIT_BLOCKED_SHARE: f64 = 0.0;

/// The fourth held-out set: never below its first run, and at the floors of round 5
/// (`cargo test --lib sessions_heldout_4_agreement -- --nocapture` prints them).
#[test]
fn sessions_heldout_4_agreement() {
    let (agree, total, blocked, legit, _) = measure("held-out 4", HELDOUT_4_DIR);
    assert!(agree >= HELDOUT_4_FIRST_AGREE, "agreement {agree}/{total}, below the first run's");
    assert!(
        blocked <= HELDOUT_4_FIRST_LEGIT_BLOCKED,
        "legitimate stops blocked {blocked}/{legit}, above the first run's"
    );
    assert!(agree >= HELDOUT_4_AGREE, "agreement {agree}/{total}, below round 5's");
    assert!(
        blocked as f64 <= HELDOUT_4_MAX_LEGIT_BLOCKED_SHARE * legit as f64,
        "legitimate stops blocked {blocked}/{legit}, above round 5's"
    );
}

/// The fifth held-out set's directory: written blind to the rules on 2026-12-01 while
/// another helper was changing them, and never used to change one. The lead measures it
/// once, after the rules freeze; until then only its form is checked here.
const HELDOUT_5_DIR: &str = "tests/fixtures/gate/sessions-heldout-5";
/// At least this many scenarios, so one disagreement moves the agreement figure by under
/// 1.5 points (issue 29 asks for at least 60).
const HELDOUT_5_MIN_SCENARIOS: usize = 70;
/// At least this many legitimate stops, so "at most one legitimate stop in 30 blocked"
/// can be measured on the set with room to spare.
const HELDOUT_5_MIN_LEGIT: usize = 35;

/// The fifth held-out set parses with unique ids, every scenario has a user turn, and it
/// holds at least 70 scenarios of which at least 35 legitimate stops. Parse-only on
/// purpose: no verdict is computed here, so the set cannot be tuned to the rules before
/// the lead's one measurement.
#[test]
fn sessions_heldout_5_parses() {
    let all = load("held-out 5", HELDOUT_5_DIR);
    for s in &all {
        assert!(s.lines.iter().any(|(k, _)| k == "user"), "{}: no user turn", s.id);
    }
    let legit = all.iter().filter(|s| !s.block).count();
    assert!(all.len() >= HELDOUT_5_MIN_SCENARIOS, "{} scenarios", all.len());
    assert!(legit >= HELDOUT_5_MIN_LEGIT, "{legit} legitimate stops");
}

/// The fifth held-out set's first run against the rules frozen at `wt5/gate5`'s final
/// commit (`605efe9`), measured once by the lead after the merge (2026-12-01): 84 of 94
/// agreed and 4 of 47 legitimate stops were blocked; docs/gate.md keeps that honest
/// record and lists every disagreement. No later figure may fall below it.
const HELDOUT_5_FIRST_AGREE: usize = 84;
/// See [`HELDOUT_5_FIRST_AGREE`].
const HELDOUT_5_FIRST_LEGIT_BLOCKED: usize = 4;
/// Since round 6 (`wt6/gate6`) the set is training data: its ten misses were fixed as
/// classes (new scenarios in `sessions/15-*.txt`) and it agrees on 94 of 94. Floors only.
const HELDOUT_5_AGREE: usize = 94;
/// See [`HELDOUT_5_AGREE`]: no legitimate stop of the set is blocked since round 6 (a
/// share, like the other sets' ceilings).
const HELDOUT_5_MAX_LEGIT_BLOCKED_SHARE: f64 = 0.0;

/// The fifth held-out set: never below its first run, and at the floors of round 6
/// (`cargo test --lib sessions_heldout_5_agreement -- --nocapture` prints them).
#[test]
fn sessions_heldout_5_agreement() {
    let (agree, total, blocked, legit, _) = measure("held-out 5", HELDOUT_5_DIR);
    assert!(agree >= HELDOUT_5_FIRST_AGREE, "agreement {agree}/{total}, below the first run's");
    assert!(
        blocked <= HELDOUT_5_FIRST_LEGIT_BLOCKED,
        "legitimate stops blocked {blocked}/{legit}, above the first run's"
    );
    assert!(agree >= HELDOUT_5_AGREE, "agreement {agree}/{total}, below round 6's");
    assert!(
        blocked as f64 <= HELDOUT_5_MAX_LEGIT_BLOCKED_SHARE * legit as f64,
        "legitimate stops blocked {blocked}/{legit}, above round 6's"
    );
}

/// The sixth held-out set's directory: written blind to the rules on 2026-12-02 while
/// another helper was changing them, and never used to change one. The lead measures it
/// once, after the rules freeze; until then only its form is checked here.
const HELDOUT_6_DIR: &str = "tests/fixtures/gate/sessions-heldout-6";
/// At least this many scenarios, so one disagreement moves the agreement figure by under
/// 1.5 points (issue 29 asks for at least 60).
const HELDOUT_6_MIN_SCENARIOS: usize = 70;
/// At least this many legitimate stops, so "at most one legitimate stop in 30 blocked"
/// can be measured on the set with room to spare.
const HELDOUT_6_MIN_LEGIT: usize = 35;

/// The sixth held-out set parses with unique ids, every scenario has a user turn, and it
/// holds at least 70 scenarios of which at least 35 legitimate stops. Parse-only on
/// purpose: no verdict is computed here, so the set cannot be tuned to the rules before
/// the lead's one measurement.
#[test]
fn sessions_heldout_6_parses() {
    let all = load("held-out 6", HELDOUT_6_DIR);
    for s in &all {
        assert!(s.lines.iter().any(|(k, _)| k == "user"), "{}: no user turn", s.id);
        assert!(s.id.starts_with("h6-"), "{}: ids of the sixth set start with `h6-`", s.id);
    }
    let legit = all.iter().filter(|s| !s.block).count();
    assert!(all.len() >= HELDOUT_6_MIN_SCENARIOS, "{} scenarios", all.len());
    assert!(legit >= HELDOUT_6_MIN_LEGIT, "{legit} legitimate stops");
}

/// The sixth held-out set, run once by the lead after `wt6/gate6` was merged (rules
/// frozen at `b9d6f13`): 78 of 98 agree and 4 of 49 legitimate stops are blocked. Kept
/// as floors. See docs/gate.md.
const HELDOUT_6_FIRST_AGREE: usize = 78;
/// See [`HELDOUT_6_FIRST_AGREE`].
const HELDOUT_6_FIRST_LEGIT_BLOCKED: usize = 4;
/// Since round 6b (`wt6/gate7`) the set is training data: its error and obstacle
/// routes, its misread user words, claims past the runs ("done and tested" after
/// later edits, an answer's test result never run), a step the user forbade in a turn
/// of leave and a question's failing probe run were fixed as classes (new scenarios in
/// `sessions/17-*.txt`) and it agrees on 94 of 98, 2 of 49 legitimate stops blocked.
/// Floors only; no blind set has measured these changes.
const HELDOUT_6_AGREE: usize = 94;
/// See [`HELDOUT_6_AGREE`].
const HELDOUT_6_LEGIT_BLOCKED: usize = 2;

/// The sixth held-out set: never below its first run
/// (`cargo test --lib sessions_heldout_6_agreement -- --nocapture` prints the figures
/// and every disagreement).
#[test]
fn sessions_heldout_6_agreement() {
    let (agree, total, blocked, legit, _) = measure("held-out 6", HELDOUT_6_DIR);
    assert!(agree >= HELDOUT_6_FIRST_AGREE, "agreement {agree}/{total}, below the first run's");
    assert!(
        blocked <= HELDOUT_6_FIRST_LEGIT_BLOCKED,
        "legitimate stops blocked {blocked}/{legit}, above the first run's"
    );
    assert!(agree >= HELDOUT_6_AGREE, "agreement {agree}/{total}, below round 6b's");
    assert!(blocked <= HELDOUT_6_LEGIT_BLOCKED, "legitimate stops blocked {blocked}/{legit}, above round 6b's");
}
