//! `premerge show waves|attempt`: the wave plan and an attempt's triage rendered for
//! the people who review what a fix pipeline did (text, or a Markdown table fit for a
//! pull-request comment, or the plan's JSON).
//!
//! Fixers and reviewers wrote the reasons, summaries and paths shown here: text output
//! escapes their control and bidi characters (`crate::report::text`), Markdown escapes
//! them for Markdown and HTML (`crate::report::markdown`).

use std::path::PathBuf;

use anyhow::Result;

use super::Ctx;
use crate::error::{CmdResult, Exit};
use crate::report::markdown::{self, AttemptView, CarriedRow, FenceResult, WaveRow};
use crate::report::text;
use crate::waves::WavePlan;
use crate::waves::fence::{allowed, display_path};

#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Render an attempt's wave plan: wave, owner, file, findings, carried.
    Waves(WavesArgs),
    /// Summarise an attempt: classified counts, blocked-on drops by reason, allowed set.
    Attempt(AttemptArgs),
    /// Every attempt of a loop's run directory: a timeline (html: one self-contained page).
    Loop(LoopArgs),
}

/// Output formats of `show loop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum LoopFormat {
    /// One line per attempt.
    #[default]
    Text,
    /// One JSON object: the loop and each attempt as `show attempt --format json` has it.
    Json,
    /// One self-contained page (inline style, no script, nothing loaded from anywhere).
    Html,
}

#[derive(Debug, clap::Args)]
pub struct LoopArgs {
    #[arg(long, value_enum, default_value_t)]
    pub format: LoopFormat,
    /// Pipeline run directory (default: this worktree's latest fix loop's).
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    #[default]
    Text,
    Markdown,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct WavesArgs {
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=99))]
    pub attempt: u32,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Pipeline run directory.
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct AttemptArgs {
    /// The attempt number.
    #[arg(value_name = "N", value_parser = clap::value_parser!(u32).range(1..=99))]
    pub attempt: u32,
    /// Output format (markdown: the pull-request comment, marked to be updated in place).
    //
    // The comment's first line is `<!-- premerge:attempt-comment -->` (docs/ci.md).
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Pipeline run directory.
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
}

pub fn run(cmd: Cmd, ctx: &mut Ctx) -> CmdResult {
    match cmd {
        Cmd::Waves(a) => {
            let run_dir = ctx.run_dir_of(a.run_dir.as_deref())?;
            let plan = crate::store::run_dir::read_plan(&run_dir, a.attempt)?;
            let out = match a.format {
                Format::Json => crate::canonical::to_pretty(&plan)?,
                f => render_waves(&plan, f == Format::Markdown),
            };
            ctx.stdout.write_all(out.as_bytes())?;
        }
        Cmd::Attempt(a) => {
            let run_dir = ctx.run_dir_of(a.run_dir.as_deref())?;
            let out = match a.format {
                Format::Text => render_attempt(&run_dir, a.attempt)?,
                Format::Markdown => markdown::attempt_comment(&attempt_view(&run_dir, a.attempt)?),
                Format::Json => crate::canonical::to_line(&attempt_json(&attempt_view(&run_dir, a.attempt)?))?,
            };
            ctx.stdout.write_all(out.as_bytes())?;
        }
        Cmd::Loop(a) => show_loop(a, ctx)?,
    }
    Ok(Exit::Ok)
}

/// The largest attempt a run directory holds (two digits in the artefacts' names).
const MAX_ATTEMPT: u32 = 99;

/// Every attempt of the run directory (each with a `classified-NN.json`), in order.
fn show_loop(a: LoopArgs, ctx: &mut Ctx) -> Result<()> {
    let repo = ctx.repo()?;
    let run_dir = ctx.run_dir(&repo, a.run_dir.as_deref())?;
    let attempts: Vec<u32> =
        (1..=MAX_ATTEMPT).filter(|n| crate::store::run_dir::artefact(&run_dir, "classified", *n).is_file()).collect();
    if attempts.is_empty() {
        return Err(crate::error::input_error(
            run_dir.as_str(),
            "no attempt here (no classified-NN.json): run premerge plan first",
        ));
    }
    let views = attempts.iter().map(|n| attempt_view(&run_dir, *n)).collect::<Result<Vec<_>>>()?;
    // The loop that owns the run directory, when this worktree's record names it.
    let place = crate::store::fix_loop::LoopPlace::of_repo(&repo);
    let owner = match crate::store::fix_loop::read(&place) {
        crate::store::fix_loop::LoopRecord::Loop(l)
            if crate::store::fix_loop::canonical_run_dir(run_dir.as_std_path()).is_ok_and(|c| c == l.run_dir) =>
        {
            Some(l)
        }
        _ => None,
    };
    let title = owner.as_ref().map_or_else(|| "(run directory)".to_string(), |l| l.id.clone());
    let out = match a.format {
        LoopFormat::Html => crate::report::html::loop_page(&title, run_dir.as_str(), &views),
        LoopFormat::Json => crate::canonical::to_line(&serde_json::json!({
            "schema_version": 1,
            "loop": owner.as_ref().map(|l| serde_json::json!({"id": l.id, "state": l.state, "attempt": l.attempt})),
            "run_dir": run_dir.as_str(),
            "attempts": views.iter().map(attempt_json).collect::<Vec<_>>(),
        }))?,
        LoopFormat::Text => {
            let mut t = format!("fix loop {} in {}\n", text::plain(&title), text::plain(run_dir.as_str()));
            for v in &views {
                let fence = match &v.fence {
                    None => "fence not run".to_string(),
                    Some(f) if f.refused => format!("fence refused {} stray path(s)", f.strays.len()),
                    Some(_) => "fence ok".to_string(),
                };
                t.push_str(&format!(
                    "attempt {}: {} finding(s), {} carried, {} wave(s), {fence}, {}\n",
                    crate::store::nn(v.attempt),
                    v.totals[0],
                    v.totals[3],
                    v.wave_count,
                    v.converge.as_deref().unwrap_or("not decided")
                ));
            }
            t
        }
    };
    ctx.stdout.write_all(out.as_bytes())?;
    Ok(())
}

/// Who needs this file changed and why: `from src/a.rs: reason; from src/b.rs: reason`
/// over every carried finding of an entry (`-` when nothing was carried).
fn carried_text(e: &crate::waves::WaveEntry) -> String {
    let mut parts = Vec::new();
    for f in e.findings.iter().filter(|f| f.carried) {
        if f.carried_reasons.is_empty() {
            let from = f.carried_from.as_deref().map(display_path).unwrap_or_else(|| "?".into());
            parts.push(format!("from {from}: {}", f.failure_scenario.as_deref().unwrap_or("")));
        } else {
            for r in &f.carried_reasons {
                parts.push(format!("from {}: {}", display_path(&r.from_file), r.reason));
            }
        }
    }
    if parts.is_empty() {
        return "-".into();
    }
    parts.join("; ")
}

/// One row per file: wave, owner, file, findings, carried, and who it was carried from.
pub(crate) fn render_waves(plan: &WavePlan, markdown: bool) -> String {
    let rows: Vec<[String; 6]> = plan
        .entries()
        .map(|(w, e)| {
            let carried = e.findings.iter().filter(|f| f.carried).count();
            // The reasons are the fixers' words and the names come from the plan, which
            // anyone can write: escaped for the format, one line per cell.
            let why = carried_text(e);
            let (why, owner, file) = if markdown {
                (markdown::text(&why), markdown::text(&e.owner), markdown::code(&e.file))
            } else {
                (text::cell(&why), text::cell(&e.owner), text::plain(&display_path(&e.file)))
            };
            [
                w.to_string(),
                owner,
                file,
                e.findings.len().to_string(),
                if carried > 0 { format!("yes ({carried})") } else { "no".to_string() },
                why,
            ]
        })
        .collect();
    let head = ["wave", "owner", "file", "findings", "carried", "carried_from and reason"];
    let mut out = String::new();
    if markdown {
        out.push_str(&format!(
            "**premerge fix waves, attempt {}**: {} file(s) in {} wave(s) of at most {}\n\n",
            plan.attempt,
            rows.len(),
            plan.waves.len(),
            plan.max_per_wave
        ));
        out.push_str(&format!("| {} |\n|---:|---|---|---:|---|---|\n", head.join(" | ")));
        for r in &rows {
            out.push_str(&format!("| {} |\n", r.join(" | ")));
        }
        return out;
    }
    let mut width = head.map(str::len);
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  ", w = width[i]));
            }
        }
        s.push('\n');
        s
    };
    out.push_str(&line(head.to_vec()));
    for r in &rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out.push_str(&format!("{} file(s) in {} wave(s), attempt {}\n", rows.len(), plan.waves.len(), plan.attempt));
    out
}

fn render_attempt(run_dir: &camino::Utf8Path, attempt: u32) -> Result<String> {
    let c = crate::store::run_dir::read_classified(run_dir, attempt)?;
    let mut out = format!("attempt {}\n", crate::store::nn(attempt));
    let k = &c.counts;
    out.push_str(&format!(
        "findings: {} total, {} blocker, {} suggestion ({} carried)\n",
        k.total, k.blocker, k.suggestion, k.carried
    ));
    if !k.findings_dropped.is_empty() {
        let drops: Vec<String> = k.findings_dropped.iter().map(|(r, n)| format!("{r}={n}")).collect();
        out.push_str(&format!("findings dropped: {} ({})\n", c.dropped_findings.len(), drops.join(", ")));
    }
    if k.suggestions_carried > 0 {
        out.push_str(&format!("suggestions carried from earlier attempts: {}\n", k.suggestions_carried));
    }
    if c.carry.enabled {
        let drops: Vec<String> = k.blocked_on_dropped.iter().map(|(r, n)| format!("{r}={n}")).collect();
        out.push_str(&format!(
            "blocked-on: read {} ({}), admitted {} of at most {}, joined {}, dropped {}{}\n",
            c.carry.source.as_deref().unwrap_or("-"),
            if c.carry.present { "present" } else { "absent" },
            k.blocked_on_admitted,
            c.carry.cap,
            k.blocked_on_joined,
            k.dropped(),
            if drops.is_empty() { String::new() } else { format!(" ({})", drops.join(", ")) }
        ));
    } else {
        out.push_str("blocked-on: carry not requested\n");
    }
    match crate::store::run_dir::read_plan(run_dir, attempt) {
        Ok(plan) => {
            let set = allowed(&plan, None).unwrap_or_default();
            out.push_str(&format!("waves: {}\nallowed set ({} file(s)):\n", plan.waves.len(), set.len()));
            for p in set {
                out.push_str(&format!("  {}\n", text::plain(&display_path(&p))));
            }
        }
        Err(e) => out.push_str(&format!("allowed set: none (the fence refuses everything): {e:#}\n")),
    }
    Ok(out)
}

/// One attempt as the reviewer's comment shows it, from what the run directory holds:
/// `classified-NN.json` (required), `fix-waves-NN.json` (its absence is shown), and the
/// last `fence_check` or `fence_pre_push` event and the last `converge` event of the
/// attempt in `events.jsonl`.
fn attempt_view(run_dir: &camino::Utf8Path, attempt: u32) -> Result<AttemptView> {
    let c = crate::store::run_dir::read_classified(run_dir, attempt)?;
    let k = &c.counts;
    let mut v = AttemptView {
        attempt,
        totals: [k.total, k.blocker, k.suggestion, k.carried],
        blocked_on_dropped: k.blocked_on_dropped.clone(),
        findings_dropped: k.findings_dropped.clone(),
        ..AttemptView::default()
    };
    match crate::store::run_dir::read_plan(run_dir, attempt) {
        Ok(plan) => {
            v.wave_count = plan.waves.len();
            let mut rows = Vec::new();
            for (w, e) in plan.entries() {
                let carried: Vec<_> = e.findings.iter().filter(|f| f.carried).collect();
                rows.push(WaveRow {
                    wave: w,
                    owner: e.owner.clone(),
                    file: e.file.clone(),
                    findings: e.findings.len(),
                    carried: carried.len(),
                });
                for f in carried {
                    if f.carried_reasons.is_empty() {
                        v.carried.push(CarriedRow {
                            file: e.file.clone(),
                            from: f.carried_from.clone().unwrap_or_else(|| "?".into()),
                            reason: f.failure_scenario.clone().unwrap_or_default(),
                        });
                    }
                    for r in &f.carried_reasons {
                        v.carried.push(CarriedRow {
                            file: e.file.clone(),
                            from: r.from_file.clone(),
                            reason: r.reason.clone(),
                        });
                    }
                }
            }
            v.waves = Ok(rows);
        }
        Err(e) => v.waves = Err(format!("{e:#}")),
    }
    // The log is append-only: the last record of the attempt is its current state.
    let events = crate::store::read_events(run_dir.as_std_path())?;
    let of_attempt = |kind: &str| {
        events.iter().rev().find(|e| e["kind"] == kind && e["attempt"].as_u64() == Some(u64::from(attempt)))
    };
    let fence = events.iter().rev().find(|e| {
        (e["kind"] == "fence_check" || e["kind"] == "fence_pre_push")
            && e["attempt"].as_u64() == Some(u64::from(attempt))
    });
    if let Some(e) = fence {
        let hook = e["kind"] == "fence_pre_push";
        v.fence = Some(FenceResult {
            source: if hook { "pre-push" } else { "fence check" }.into(),
            mode: if hook { Some(e["mode"].as_str().unwrap_or("?").to_string()) } else { None },
            refused: e["refused"].as_bool().unwrap_or(false),
            strays: e["strays"]
                .as_array()
                .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
                .unwrap_or_default(),
        });
    }
    v.converge = of_attempt("converge").and_then(|e| e["decision"].as_str().map(str::to_string));
    Ok(v)
}

/// [`attempt_view`] as one JSON object (`show attempt --format json`).
fn attempt_json(v: &AttemptView) -> serde_json::Value {
    let waves = match &v.waves {
        Ok(rows) => serde_json::json!(
            rows.iter()
                .map(|r| serde_json::json!({"wave": r.wave, "owner": r.owner, "file": r.file,
                                        "findings": r.findings, "carried": r.carried}))
                .collect::<Vec<_>>()
        ),
        Err(_) => serde_json::Value::Null,
    };
    serde_json::json!({
        "schema_version": 1,
        "attempt": v.attempt,
        "findings": {"total": v.totals[0], "blocker": v.totals[1], "suggestion": v.totals[2], "carried": v.totals[3]},
        "waves": waves,
        "plan_error": v.waves.as_ref().err(),
        "carried": v.carried.iter().map(|c| serde_json::json!({"file": c.file, "from_file": c.from, "reason": c.reason}))
            .collect::<Vec<_>>(),
        "blocked_on_dropped": v.blocked_on_dropped,
        "findings_dropped": v.findings_dropped,
        "fence": v.fence.as_ref().map(|f| serde_json::json!({"source": f.source, "mode": f.mode,
                                                               "refused": f.refused, "strays": f.strays})),
        "converge": v.converge,
    })
}
