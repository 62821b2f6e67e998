//! `premerge gate`: the stop gate for coding agents. `evaluate` answers Claude Code's
//! Stop hook and always fails open; `session-start` records a session's start and
//! re-grounds the agent after a compaction; the rest are operator commands.
//!
//! The decision logic is pure (`crate::gate`); this module collects evidence, runs
//! the authority, persists state and events, and prints the hook answer.

use crate::gate::judge::{self, switches};
use crate::store::gate_db as db;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context as _, Result, anyhow};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

use super::Ctx;
use crate::config::{Config, Mode, Source};
use crate::error::{CmdResult, Exit};
use crate::gate::{self as core, FailureKind, Switches};

/// Shadow suggests `gate set --mode enforce` once operators have annotated at least
/// this many of its decisions as correct...
pub const SUGGEST_AFTER_CORRECT: i64 = 20;
/// ...and at most this share (in percent) of its annotated decisions as incorrect:
/// the rate the gate's corpus test holds the built-in authority to.
pub(crate) const SUGGEST_MAX_INCORRECT_PERCENT: i64 = 5;

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Answer a Stop hook: read its JSON on stdin; print `{"decision":"block",...}` to
    /// make the agent continue, nothing to allow. Always exits 0 (fails open).
    Evaluate,
    /// SessionStart hook: record the session's start and HEAD; after a compaction,
    /// print a re-grounding message.
    SessionStart,
    /// Add the Stop and SessionStart hooks to `.claude/settings.json` (idempotent:
    /// one entry each, whatever program path an earlier install used).
    InstallAgentHook(InstallArgs),
    /// Remove premerge's Stop and SessionStart hooks from `.claude/settings.json`.
    UninstallAgentHook(UninstallArgs),
    /// Show the effective mode, kill switch, authority and counters.
    Status(StatusArgs),
    /// Store the gate's mode in the database.
    Set(SetArgs),
    /// Set or clear the kill switch (wins over every mode).
    KillSwitch(KillArgs),
    /// Print recent evaluations.
    Log(LogArgs),
    /// Record an operator's verdict on an evaluation.
    Annotate(AnnotateArgs),
    /// Show one evaluation with its annotations; the dwell of the next annotation
    /// of the event is measured from this showing.
    Show(ShowArgs),
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Event id (from `premerge gate log`).
    pub event: i64,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Settings file to edit (default: `.claude/settings.json` in the working tree).
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// How the hook invokes premerge (default: the absolute path of this binary, as
    /// the git hook shims record it).
    #[arg(long, value_name = "PROGRAM")]
    pub program: Option<String>,
}

#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// Settings file to edit (default: `.claude/settings.json` in the working tree).
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum Format {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct SetArgs {
    /// off | shadow | enforce, or `default` to clear the stored mode (configuration
    /// and the default decide again).
    #[arg(long, value_parser = ["off", "shadow", "enforce", "default"])]
    pub mode: String,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("switch").required(true).args(["set", "clear"])))]
pub struct KillArgs {
    /// Allow every stop until cleared.
    #[arg(long)]
    pub set: bool,
    /// Return to the configured mode.
    #[arg(long)]
    pub clear: bool,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// How many of the newest evaluations to print.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub tail: usize,
    /// `json`: one JSON object per line.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum VerdictArg {
    Correct,
    Incorrect,
}

#[derive(Debug, Args)]
pub struct AnnotateArgs {
    /// Event id (from `premerge gate log`).
    pub event: i64,
    #[arg(long, value_enum)]
    pub verdict: VerdictArg,
    #[arg(long)]
    pub rationale: String,
    /// How long the event was looked at, when a review tool measured it; otherwise
    /// the time since `premerge gate show <event>` is recorded.
    #[arg(long, value_name = "SECONDS")]
    pub dwell_secs: Option<u32>,
}

pub fn run(cmd: Cmd, ctx: &mut Ctx) -> CmdResult {
    match cmd {
        Cmd::Evaluate => {
            evaluate(ctx);
            Ok(Exit::Ok)
        }
        Cmd::SessionStart => {
            session_start(ctx);
            Ok(Exit::Ok)
        }
        Cmd::InstallAgentHook(a) => install_agent_hook(a, ctx),
        Cmd::UninstallAgentHook(a) => {
            let path = settings_path(a.settings, ctx)?;
            crate::gate::agent_hook::uninstall_at(&path, ctx.stdout)?;
            Ok(Exit::Ok)
        }
        Cmd::Status(a) => status(a, ctx),
        Cmd::Set(a) => {
            let repo = ctx.repo()?;
            let mode = match a.mode.as_str() {
                "default" => None,
                m => Some(Mode::parse(m).ok_or_else(|| anyhow!("gate set: unknown mode `{m}`"))?),
            };
            let cfg = super::load_config(&repo)?;
            let conn = repo.state_dir().open_db()?;
            let (before, before_from) = effective(&cfg, db::control(&conn)?);
            db::set_mode(&conn, mode, &crate::store::now_rfc3339())?;
            let (after, after_from) = effective(&cfg, db::control(&conn)?);
            writeln!(ctx.stdout, "before: {before} (from {before_from})")?;
            let same = if (&before, &before_from) == (&after, &after_from) { " (unchanged)" } else { "" };
            writeln!(ctx.stdout, "after:  {after} (from {after_from}){same}")?;
            if matches!(cfg.source("gate.mode"), Some(Source::Env(_))) {
                ctx.warn("PREMERGE_GATE_MODE is set in this environment and wins over the stored mode");
            }
            Ok(Exit::Ok)
        }
        Cmd::KillSwitch(a) => {
            let repo = ctx.repo()?;
            db::set_kill_switch(&repo.state_dir().open_db()?, a.set, &crate::store::now_rfc3339())?;
            let what = if a.set { "set: every stop is allowed" } else { "cleared" };
            writeln!(ctx.stdout, "stop gate kill switch {what}")?;
            Ok(Exit::Ok)
        }
        Cmd::Log(a) => log(a, ctx),
        Cmd::Annotate(a) => {
            let repo = ctx.repo()?;
            if a.rationale.trim().is_empty() {
                return Err(crate::error::input_error("gate annotate: --rationale", "must not be empty"));
            }
            let verdict = match a.verdict {
                VerdictArg::Correct => "correct",
                VerdictArg::Incorrect => "incorrect",
            };
            let conn = repo.state_dir().open_db()?;
            let dwell = a.dwell_secs.map(|s| i64::from(s) * 1000);
            let now = crate::store::now_rfc3339();
            let (id, dwell) = db::annotate(&conn, a.event, verdict, &a.rationale, &now, now_ms(), dwell)?;
            writeln!(ctx.stdout, "annotation {id} recorded on event {}: {verdict}, {}", a.event, dwell_text(dwell))?;
            Ok(Exit::Ok)
        }
        Cmd::Show(a) => show(a, ctx),
    }
}

/// The current time in unix milliseconds (the dwell clock).
fn now_ms() -> i64 {
    i64::try_from(crate::store::now().unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// An annotation's dwell as `gate annotate` and `gate show` print it.
fn dwell_text(dwell: Option<i64>) -> String {
    match dwell {
        None => "dwell unknown (the event was not shown with `premerge gate show`)".to_string(),
        Some(ms) if ms < db::MIN_DWELL_MS => {
            format!("dwell {:.1} s (under {} s: not counted for enforce)", ms as f64 / 1000.0, db::MIN_DWELL_MS / 1000)
        }
        Some(ms) => format!("dwell {:.1} s", ms as f64 / 1000.0),
    }
}

/// `gate show <event>`: the event, what the gate read, and its annotations.
fn show(a: ShowArgs, ctx: &mut Ctx) -> CmdResult {
    let repo = ctx.repo()?;
    let conn = repo.state_dir().open_db()?;
    let Some(e) = db::event(&conn, a.event)? else {
        return Err(crate::error::input_error(
            format!("gate show: event {}", a.event),
            "does not exist (see `premerge gate log`)",
        ));
    };
    let notes = db::annotations(&conn, a.event)?;
    db::record_view(&conn, a.event, now_ms())?;
    match a.format {
        Format::Json => {
            let v = json!({"schema_version": 1, "event": e, "annotations": notes});
            ctx.stdout.write_all(crate::canonical::to_line(&v)?.as_bytes())?;
        }
        Format::Text => {
            let esc = |s: &str| crate::input::escape_for_message(s);
            let o = &mut ctx.stdout;
            writeln!(o, "{}", log_line(&e))?;
            writeln!(o, "stop reason ({}): {}", e.stop_reason_source, esc(e.stop_reason.as_deref().unwrap_or("-")))?;
            writeln!(o, "authority: {}", e.authority)?;
            writeln!(o, "rationale: {}", esc(e.rationale.as_deref().unwrap_or("-")))?;
            if let Some(d) = &e.detail {
                writeln!(o, "detail: {}", esc(d))?;
            }
            if let Some(r) = &e.reminder {
                writeln!(o, "reminder: {}", esc(r))?;
            }
            if notes.is_empty() {
                writeln!(o, "annotations: none")?;
            } else {
                writeln!(o, "annotations:")?;
            }
            for n in &notes {
                writeln!(
                    o,
                    "  #{} {} {}: {} ({})",
                    n.id,
                    n.created_at,
                    n.verdict,
                    esc(&n.rationale),
                    dwell_text(n.dwell_ms)
                )?;
            }
        }
    }
    Ok(Exit::Ok)
}

// ---------------------------------------------------------------------------
// evaluate

/// Evaluate a stop. Never fails and never panics outward: every error allows the stop.
fn evaluate(ctx: &mut Ctx) {
    // PREMERGE=0: premerge does nothing, so every stop is allowed and nothing is written.
    if crate::hook::master_switch_off() {
        return;
    }
    let t0 = Instant::now();
    let input = ctx.read_stdin(crate::input::Kind::HookPayload).unwrap_or_default();
    let cwd = ctx.cwd.clone();
    let outcome = std::panic::catch_unwind(|| judge::evaluate(&cwd, &input, t0));
    if let Ok(Some(reminder)) = outcome {
        let answer = json!({"decision": "block", "reason": reminder});
        if let Ok(line) = crate::canonical::to_line(&answer) {
            // A failed write leaves the stop allowed, which is the fail-open direction.
            let _ = ctx.stdout.write_all(line.as_bytes());
        }
    }
}

// ---------------------------------------------------------------------------
// session-start

fn session_start(ctx: &mut Ctx) {
    if crate::hook::master_switch_off() {
        return;
    }
    let input = ctx.read_stdin(crate::input::Kind::HookPayload).unwrap_or_default();
    let cwd = ctx.cwd.clone();
    let text = std::panic::catch_unwind(|| judge::session_start(&cwd, &input)).ok().flatten();
    if let Some(t) = text {
        let _ = ctx.stdout.write_all(t.as_bytes());
    }
}

// ---------------------------------------------------------------------------
// operator commands

/// The settings file: `--settings` (relative to the command's directory) or
/// `.claude/settings.json` in the working tree.
fn settings_path(explicit: Option<PathBuf>, ctx: &Ctx) -> Result<PathBuf> {
    Ok(match explicit {
        Some(p) if p.is_absolute() => p,
        Some(p) => ctx.cwd.join(p),
        None => ctx.repo()?.require_workdir()?.join(".claude").join("settings.json"),
    })
}

/// The program the hooks run: `--program`, else this binary's absolute path (the
/// path the git shims record), quoted for the shell Claude Code runs hooks with.
fn hook_program(explicit: Option<String>) -> Result<String> {
    let program = match explicit {
        Some(p) => p,
        None => {
            let exe = std::env::current_exe().context("cannot tell where the premerge binary is")?;
            let exe = exe.canonicalize().unwrap_or(exe);
            exe.to_str()
                .map(str::to_string)
                .ok_or_else(|| anyhow!("{}: the binary's path is not UTF-8; pass --program", exe.display()))?
        }
    };
    let plain = program.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b));
    Ok(if plain { program } else { crate::install::sh_quote(&program) })
}

fn install_agent_hook(a: InstallArgs, ctx: &mut Ctx) -> CmdResult {
    let path = settings_path(a.settings, ctx)?;
    let program = hook_program(a.program)?;
    let existing = crate::gate::agent_hook::read_settings(&path)?;
    let (text, m) =
        crate::gate::settings::merge(&existing, &program).map_err(|e| crate::error::input_error(path.display(), e))?;
    if !m.changed() {
        writeln!(ctx.stdout, "{}: premerge agent hooks already installed ({program})", path.display())?;
        return Ok(Exit::Ok);
    }
    crate::install::agent_docs::write_through(&path, text.as_bytes(), crate::gate::agent_hook::SETTINGS_MODE)?;
    let mut what = Vec::new();
    if m.added > 0 {
        what.push(format!("added {}", m.added));
    }
    if m.updated > 0 {
        what.push(format!("pointed {} at {program}", m.updated));
    }
    if m.duplicates_removed > 0 {
        what.push(format!("removed {} duplicate(s)", m.duplicates_removed));
    }
    writeln!(ctx.stdout, "{}: premerge agent hooks (Stop, SessionStart): {}", path.display(), what.join(", "))?;
    writeln!(ctx.stdout, "they run {program}; `premerge gate uninstall-agent-hook` removes them")?;
    Ok(Exit::Ok)
}

/// The effective mode and where it comes from, as `gate status` and `gate set` print it.
fn effective(cfg: &Config, control: db::Control) -> (String, String) {
    match switches(cfg, control) {
        Switches::Killed if control.kill_switch => {
            ("off (kill switch)".to_string(), "gate kill-switch --set".to_string())
        }
        Switches::Killed => {
            ("off (kill switch)".to_string(), format!("gate.enabled from {}", source(cfg, "gate.enabled")))
        }
        Switches::Mode(m) => {
            let from = match (cfg.source("gate.mode"), control.mode) {
                (Some(Source::Env(k)), _) => format!("env {k}"),
                (_, Some(_)) => "gate set --mode".to_string(),
                _ => source(cfg, "gate.mode"),
            };
            (m.as_str().to_string(), from)
        }
    }
}

/// The day `days` before today's (UTC), `YYYY-MM-DD`.
fn day_before(days: i64) -> String {
    let d = (crate::store::now() - time::Duration::days(days)).date();
    format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
}

/// Whether shadow has seen enough agreeing decisions to suggest enforcing.
fn suggest_enforce(mode: &str, a: &db::Annotated) -> bool {
    let judged = a.shadow_correct + a.shadow_incorrect;
    mode == "shadow"
        && a.shadow_correct >= SUGGEST_AFTER_CORRECT
        && a.shadow_incorrect * 100 <= SUGGEST_MAX_INCORRECT_PERCENT * judged
}

fn counts_line(m: &std::collections::BTreeMap<String, i64>) -> String {
    if m.is_empty() {
        return "none".to_string();
    }
    m.iter().map(|(k, n)| format!("{k}={n}")).collect::<Vec<_>>().join(" ")
}

fn status(a: StatusArgs, ctx: &mut Ctx) -> CmdResult {
    let repo = ctx.repo()?;
    let cfg = super::load_config(&repo)?;
    let conn = repo.state_dir().open_db()?;
    let control = db::control(&conn)?;
    let (effective, from) = effective(&cfg, control);
    let argv = &cfg.gate.authority_command;
    let now = crate::store::now();
    let (authority, breaker) = if argv.is_empty() {
        ("builtin".to_string(), None)
    } else {
        let b = db::breaker(&conn, &argv.join("\u{1f}"))?;
        let state = if b.admits(now.unix_timestamp()) { "closed" } else { "open" };
        (format!("external {argv:?}"), Some(json!({"state": state, "consecutive_failures": b.consecutive_failures})))
    };
    let today_day = day_before(0);
    let counts = db::counts(&conn, &today_day)?;
    let today = db::period(&conn, &today_day)?;
    let week = db::period(&conn, &day_before(6))?;
    let annotated = db::annotated(&conn)?;
    let suggest = suggest_enforce(&effective, &annotated);
    let suggestion = suggest.then(|| {
        format!(
            "shadow agrees with operators on {} of {} annotated decisions: `premerge gate set --mode enforce` to start blocking",
            annotated.shadow_correct,
            annotated.shadow_correct + annotated.shadow_incorrect
        )
    });
    match a.format {
        Format::Json => {
            let v = json!({"schema_version": 1, "mode": effective, "mode_source": from,
                "kill_switch": control.kill_switch, "stored_mode": control.mode.map(Mode::as_str),
                "authority": authority, "breaker": breaker, "continue_ceiling": core::CONTINUE_CEILING, "counts": counts,
                "today": today, "last_7_days": week, "annotated": annotated, "suggest_enforce": suggest,
                "suggestion": suggestion});
            ctx.stdout.write_all(crate::canonical::to_line(&v)?.as_bytes())?;
        }
        Format::Text => {
            let o = &mut ctx.stdout;
            writeln!(o, "stop gate: {effective} (from {from})")?;
            writeln!(o, "kill switch: {}", if control.kill_switch { "set" } else { "clear" })?;
            writeln!(o, "authority: {authority}")?;
            if let Some(b) = breaker {
                let state = b["state"].as_str().unwrap_or("?");
                writeln!(o, "breaker: {state} ({} consecutive failures)", b["consecutive_failures"])?;
            }
            writeln!(o, "continue ceiling: {} per session", core::CONTINUE_CEILING)?;
            writeln!(
                o,
                "sessions: {}, stuck: {}, evaluations: {}, annotations: {}",
                counts.sessions, counts.stuck_sessions, counts.events, counts.annotations
            )?;
            for (name, p) in [("today", &today), ("last 7 days", &week)] {
                writeln!(o, "{name}: {}", counts_line(&p.decisions))?;
                writeln!(o, "  would block (shadow): {}, blocked (enforce): {}", p.would_block, p.blocked)?;
                writeln!(o, "  failures (stop allowed): {}", counts_line(&p.failures))?;
            }
            writeln!(
                o,
                "annotated: correct={} incorrect={} (shadow: correct={} incorrect={}; would-block: correct={} incorrect={})",
                annotated.correct,
                annotated.incorrect,
                annotated.shadow_correct,
                annotated.shadow_incorrect,
                annotated.would_block_correct,
                annotated.would_block_incorrect
            )?;
            if annotated.hasty > 0 {
                writeln!(
                    o,
                    "  not counted: {} annotated within {} s of `gate show`",
                    annotated.hasty,
                    db::MIN_DWELL_MS / 1000
                )?;
            }
            match &suggestion {
                Some(line) => writeln!(o, "suggestion: {line}")?,
                None if effective == "shadow" => writeln!(
                    o,
                    "suggestion: keep observing; enforce is suggested after {SUGGEST_AFTER_CORRECT} shadow decisions annotated correct with at most {SUGGEST_MAX_INCORRECT_PERCENT}% incorrect (`premerge gate annotate`)"
                )?,
                None => {}
            }
        }
    }
    Ok(Exit::Ok)
}

fn source(cfg: &Config, key: &str) -> String {
    cfg.source(key).map(|s| s.to_string()).unwrap_or_else(|| "default".into())
}

fn log(a: LogArgs, ctx: &mut Ctx) -> CmdResult {
    let repo = ctx.repo()?;
    let conn = repo.state_dir().open_db()?;
    for e in db::events(&conn, a.tail)? {
        match a.format {
            Format::Json => ctx.stdout.write_all(crate::canonical::to_line(&e)?.as_bytes())?,
            Format::Text => writeln!(ctx.stdout, "{}", log_line(&e))?,
        }
    }
    Ok(Exit::Ok)
}

/// One event as a `gate log` line.
fn log_line(e: &db::EventRow) -> String {
    let session: String = e.session_id.as_deref().unwrap_or("-").chars().take(12).collect();
    let session = crate::input::escape_for_message(&session);
    format!(
        "#{} {} session={} mode={} decision={}{} rule={} failure={}{} {}ms",
        e.id,
        e.ts,
        session,
        e.mode,
        e.decision.as_str(),
        if e.blocked { " (blocked)" } else { "" },
        e.rule.as_deref().unwrap_or("-"),
        e.failure_kind.map_or("-", FailureKind::as_str),
        e.short_circuit.as_deref().map(|s| format!(" short_circuit={s}")).unwrap_or_default(),
        e.latency_ms
    )
}

// ---------------------------------------------------------------------------
// demo

pub(crate) fn demo_stage(d: &mut super::DemoRun) -> Result<()> {
    d.write(
        "docs/plans/demo.md",
        "# Plan: tighten the query bounds\n\n- [x] widen `limit` to u64\n- [ ] restore the ratio check in `set_ratio`\n- [ ] add a test for `limit` above 255\n",
    )?;
    d.commit("plan: tighten the query bounds")?;
    d.say("$ premerge gate session-start   (session demo-1; plan docs/plans/demo.md committed)")?;
    let start = br#"{"session_id":"demo-1","hook_event_name":"SessionStart","source":"startup"}"#;
    d.with_ctx(start, |c| run(Cmd::SessionStart, c).map(|_| ()))?;
    let drift = json!({"session_id": "demo-1", "hook_event_name": "Stop", "stop_hook_active": false,
        "last_assistant_message": "The first step is done. I'll stop here to preserve context; the rest can be picked up in a fresh session."});
    d.say("$ premerge gate evaluate   (shadow, the default: decided and logged, not blocked)")?;
    d.with_ctx(drift.to_string().as_bytes(), |c| run(Cmd::Evaluate, c).map(|_| ()))?;
    d.say("  (no output: shadow never blocks)")?;
    d.say("$ premerge gate set --mode enforce")?;
    d.with_ctx(b"", |c| run(Cmd::Set(SetArgs { mode: "enforce".into() }), c).map(|_| ()))?;
    d.say("$ premerge gate evaluate   (last message: \"... stop here to preserve context ...\")")?;
    d.with_ctx(drift.to_string().as_bytes(), |c| run(Cmd::Evaluate, c).map(|_| ()))?;
    let done = json!({"session_id": "demo-1", "hook_event_name": "Stop", "stop_hook_active": true,
        "last_assistant_message": "All steps are complete and the tests pass."});
    d.say("$ premerge gate evaluate   (last message: \"All steps are complete and the tests pass.\")")?;
    d.with_ctx(done.to_string().as_bytes(), |c| run(Cmd::Evaluate, c).map(|_| ()))?;
    d.say("  (no output: the stop is allowed)")?;
    d.say("$ premerge gate log")?;
    d.with_ctx(b"", |c| log(LogArgs { tail: 10, format: Format::Text }, c).map(|_| ()))
}
