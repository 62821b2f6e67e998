//! `premerge review route|seams` and `premerge explain-cap`: read a round's findings,
//! route the cycle, and on a step-back write the brief, dispatch it and record the
//! handoff in the run directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use serde_json::{Value, json};

use super::Ctx;
use crate::config::Config;
use crate::error::{CmdResult, Exit, input_error};
use crate::git::Repo;
use crate::review::route::{NextStep, Route, route};
use crate::review::stepback::{self, Dispatch, GuardMemory};
use crate::review::{caps, seam};
use crate::store;

#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Route one review round: done, lens-fix, step-back (a seam on round 1) or handoff.
    ///
    /// Prints the routing decision as one line of JSON and appends its events to the
    /// run directory's events.jsonl. On a step-back it writes step-back-NN.md, runs
    /// review.dispatch_command with the brief on stdin, and writes handoff-NN.json.
    Route(RouteArgs),
    /// Print the clusters of a round's findings (same lens, same normalised title), seams first.
    Seams(SeamsArgs),
    /// Explain why a cap fired, for operators (same as `premerge explain-cap`).
    ExplainCap(ExplainCapArgs),
}

#[derive(Debug, clap::Args)]
pub struct RouteArgs {
    /// The review round, from 1.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub round: u32,
    /// Findings file: lens findings, reviewer findings or SARIF 2.1.0 (`-` for stdin).
    #[arg(long, value_name = "FILE")]
    pub findings: PathBuf,
    /// The issue the cycle works on (recorded in events and the brief).
    #[arg(long, value_name = "N")]
    pub issue: Option<u64>,
    /// Pipeline run directory (default: PREMERGE_RUN_DIR, else <git common dir>/premerge/run).
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
    /// Output format: the routing decision (json), or the round's findings and seams.
    //
    // sarif: a SARIF 2.1.0 log; github: GitHub workflow commands. The artefacts, the
    // events and the exit code are the same in every format.
    #[arg(long, value_enum, default_value_t)]
    pub format: crate::cli::RouteFormat,
}

#[derive(Debug, clap::Args)]
pub struct SeamsArgs {
    /// Findings file: lens findings, reviewer findings or SARIF 2.1.0 (`-` for stdin).
    #[arg(long, value_name = "FILE")]
    pub findings: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct ExplainCapArgs {
    /// The cap, as named in a `cap-hit` event (`repeat-finding-seam`, `round-cap`).
    pub cap: String,
    /// The number of files the seam spans (the `files` field of the event).
    #[arg(long, value_name = "N")]
    pub files: Option<u64>,
}

pub fn run(cmd: Cmd, ctx: &mut Ctx) -> CmdResult {
    match cmd {
        Cmd::Route(a) => run_route(a, ctx),
        Cmd::Seams(a) => run_seams(a, ctx),
        Cmd::ExplainCap(a) => run_explain_cap(a, ctx),
    }
}

pub(crate) fn run_explain_cap(args: ExplainCapArgs, ctx: &mut Ctx) -> CmdResult {
    match caps::explain_checked(&args.cap, args.files) {
        Ok(text) => {
            ctx.stdout.write_all(text.as_bytes())?;
            Ok(Exit::Ok)
        }
        Err(e) => Err(input_error("explain-cap", e)),
    }
}

/// Read a round's findings with every path in its canonical name inside the repository
/// (one real file is one file for a seam); findings outside the repository are dropped,
/// warned about and counted by reason.
fn read_round(
    ctx: &mut Ctx,
    repo: &Repo,
    config: &Config,
    path: &Path,
) -> Result<(crate::findings::Findings, std::collections::BTreeMap<String, usize>)> {
    // Lenient, so that a path outside the repository, however it is written (`../x`,
    // `/etc/hosts`, `file:///etc/hosts`), drops its finding instead of the round; a
    // malformed record still refuses the document.
    let mut f = super::read_findings_as(ctx, repo, config, path, true)?;
    if let Some(bad) = f.dropped.iter().find(|d| d.reason != crate::findings::OUTSIDE_REPO) {
        let (at, why) = bad.detail.split_once(": ").unwrap_or(("$", bad.detail.as_str()));
        return Err(input_error(path.display(), format!("{at}: {why}")));
    }
    let mut dropped = std::collections::BTreeMap::new();
    for d in std::mem::take(&mut f.dropped) {
        ctx.warn(format!("{}: dropped: {}", path.display(), d.detail));
        *dropped.entry(d.reason.to_string()).or_default() += 1;
    }
    if f.skipped_outside_repo > 0 {
        *dropped.entry(crate::findings::OUTSIDE_REPO.to_string()).or_default() += f.skipped_outside_repo;
    }
    let Some(root) = repo.workdir() else { return Ok((f, dropped)) };
    let root_canon = std::fs::canonicalize(&root).map_err(|e| input_error(root.display(), e))?;
    let (kept, drops) = crate::findings::canonical::canonicalise_findings(&root_canon, std::mem::take(&mut f.findings));
    for d in &drops {
        ctx.warn(format!("{}: dropped: {}", path.display(), d.detail));
        *dropped.entry(d.reason.clone()).or_default() += 1;
    }
    f.findings = kept;
    Ok((f, dropped))
}

fn run_seams(args: SeamsArgs, ctx: &mut Ctx) -> CmdResult {
    let repo = ctx.repo()?;
    let config = super::load_config(&repo)?;
    let (f, _) = read_round(ctx, &repo, &config, &args.findings)?;
    // The same findings `review route` counts, so the two never disagree on a seam.
    let blockers_only = config.review.seam_min_severity == crate::config::SEAM_BLOCKER;
    let clusters = seam::clusters(&crate::review::route::seam_candidates(&f.findings, blockers_only));
    let out = json!({
        "schema_version": 1,
        "findings": f.findings.len(),
        "seams": clusters.iter().filter(|c| c.seam).count(),
        "clusters": clusters,
    });
    ctx.stdout.write_all(crate::canonical::to_line(&out)?.as_bytes())?;
    Ok(Exit::Ok)
}

fn run_route(args: RouteArgs, ctx: &mut Ctx) -> CmdResult {
    let repo = ctx.repo()?;
    let config = super::load_config(&repo)?;
    let (f, dropped) = read_round(ctx, &repo, &config, &args.findings)?;
    let blockers_only = config.review.seam_min_severity == crate::config::SEAM_BLOCKER;
    let r = route(args.round, &f.findings, config.review.seam_escalation, blockers_only, args.issue);
    let run_dir = ctx.run_dir(&repo, args.run_dir.as_deref())?.into_std_path_buf();
    let mut out = serde_json::to_value(&r)?;
    if !dropped.is_empty() {
        out["dropped"] = json!(dropped);
    }
    if !r.events.is_empty() {
        let _lock = store::RunLock::acquire(&run_dir)?;
        for ev in &r.events {
            store::append_event(&run_dir, ev)?;
        }
        if r.next_step == NextStep::StepBack {
            let sb = step_back(ctx, &repo, &config, &run_dir, &r, args.issue)?;
            out["stepBack"] = sb;
        }
    }
    let mut exit = Exit::Ok;
    if r.next_step == NextStep::StepBack {
        // The seam class is a stripe: the first time it escalates a proposal is written;
        // the same class escalating again while that proposal is open halts the workflow.
        let nn = store::nn(r.round);
        let rows: Vec<Value> = r
            .seams
            .iter()
            .enumerate()
            .map(|(i, s)| {
                // Named after the observation (cycle, round, seam): routing the same
                // round again is a read and records nothing new.
                let cycle = args.issue.map(|n| format!("issue-{n}:")).unwrap_or_default();
                json!({"id": format!("{cycle}round-{nn}-seam-{}", i + 1), "title": s.title, "lens": s.lens, "files": s.files})
            })
            .collect();
        if let Some(o) =
            crate::stripe::emit::emit_own_signal(ctx, &repo, &config, &run_dir, "review", "repeat_seam", &rows)
        {
            if o.halts() {
                exit = Exit::Policy;
            }
            out["stripe"] = o.to_json();
        }
    }
    let target = match args.format {
        crate::cli::RouteFormat::Json => None,
        crate::cli::RouteFormat::Sarif => Some(crate::report::Target::Sarif),
        crate::cli::RouteFormat::Github => Some(crate::report::Target::Github),
    };
    match target {
        Some(t) => crate::report::write(ctx.stdout, t, &crate::report::from_route(&f.findings, &r))?,
        None => ctx.stdout.write_all(crate::canonical::to_line(&out)?.as_bytes())?,
    }
    Ok(exit)
}

/// Write the brief, dispatch it, write the handoff; returns the `stepBack` summary.
/// The caller holds the run-directory lock.
fn step_back(
    ctx: &mut Ctx,
    repo: &Repo,
    config: &Config,
    run_dir: &Path,
    r: &Route,
    issue: Option<u64>,
) -> Result<Value> {
    let nn = store::nn(r.round);
    let brief_path = run_dir.join(format!("step-back-{nn}.md"));
    let handoff_path = run_dir.join(format!("handoff-{nn}.json"));
    let mut files: Vec<String> = r.seams.iter().flat_map(|s| s.files.iter().cloned()).collect();
    files.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    files.dedup();
    let memories = match guard_memories(repo, &files) {
        Ok(m) => m,
        Err(e) => {
            ctx.warn(format!("guard memories: {e:#} (the brief lists none)"));
            Vec::new()
        }
    };
    let brief = stepback::render_brief(r.round, issue, &r.seam_clusters, &memories);
    store::atomic_write(&brief_path, brief.as_bytes())?;
    let dispatch = dispatch(config, &brief, &brief_path, run_dir, r.round, issue);
    let brief_file = format!("step-back-{nn}.md");
    let handoff = stepback::handoff(r.round, issue, &brief_file, &brief, &r.seam_clusters, &dispatch);
    store::atomic_write(&handoff_path, crate::canonical::to_pretty(&handoff)?.as_bytes())?;
    let ev = crate::events::Event::StepBackHandoff {
        round: r.round,
        status: handoff["status"].clone(),
        brief: brief_file,
        handoff: format!("handoff-{nn}.json"),
        issue,
    };
    store::append_event(run_dir, &ev)?;
    // Not configured is an ordinary setup (a person reads the brief); anything else
    // that went wrong with a configured dispatch deserves a warning.
    if let (Some(why), false) = (handoff["failure"].as_str(), dispatch == Dispatch::NotConfigured) {
        ctx.warn(format!("step-back dispatch: {why}"));
    }
    Ok(json!({
        "brief": brief_path.to_string_lossy(),
        "handoff": handoff_path.to_string_lossy(),
        "status": handoff["status"],
    }))
}

/// Run `review.dispatch_command` with the brief on stdin. Placeholders: `{brief}`
/// (the brief's path), `{round}`, `{issue}`, `{run_dir}`.
fn dispatch(
    config: &Config,
    brief: &str,
    brief_path: &Path,
    run_dir: &Path,
    round: u32,
    issue: Option<u64>,
) -> Dispatch {
    let template = &config.review.dispatch_command;
    if template.is_empty() {
        return Dispatch::NotConfigured;
    }
    let mut values = std::collections::BTreeMap::new();
    values.insert("brief", brief_path.to_string_lossy().into_owned());
    values.insert("round", round.to_string());
    values.insert("issue", issue.map(|n| n.to_string()).unwrap_or_default());
    values.insert("run_dir", run_dir.to_string_lossy().into_owned());
    let argv = crate::exec::render(template, &values);
    let timeout = Duration::from_millis(config.review.dispatch_timeout_ms);
    match crate::exec::run(&argv, brief.as_bytes(), timeout) {
        Ok(o) => Dispatch::Answered { argv, output: String::from_utf8_lossy(&o.stdout).into_owned() },
        Err(e) => Dispatch::Failed { argv, why: e.to_string() },
    }
}

/// Guard memories touching `files`, from the embedded memory store (none when the
/// clone has no database yet).
fn guard_memories(repo: &Repo, files: &[String]) -> Result<Vec<GuardMemory>> {
    let state = repo.state_dir();
    if !state.db_path().exists() {
        return Ok(Vec::new());
    }
    let conn = state.open_db()?;
    let mut out: Vec<GuardMemory> = crate::store::memory_db::search_by_files(&conn, files)?
        .into_iter()
        .map(|m| GuardMemory { file: m.file.clone(), symbol: Some(m.symbol.clone()), text: m.content.clone() })
        .collect();
    out.dedup();
    Ok(out)
}

/// Demo: three handlers each re-implement the page-limit check; round 1 of the review
/// reports it once per file and routes to a step-back.
pub(crate) fn demo_stage(d: &mut super::DemoRun) -> Result<()> {
    for (name, var) in [("users", "n"), ("orders", "count"), ("items", "size")] {
        d.write(&format!("src/handlers/{name}.rs"), &demo_handler(name, var))?;
    }
    d.write("src/handlers/mod.rs", "pub mod items;\npub mod orders;\npub mod users;\n")?;
    d.commit("add list handlers for users, orders and items")?;
    let items: Vec<Value> = ["users", "orders", "items"]
        .iter()
        .map(|n| {
            json!({
                "lens": "ARCHITECTURE", "severity": "blocker", "path": format!("src/handlers/{n}.rs"), "line": 3,
                "title": format!("Page-limit validation re-implemented in src/handlers/{n}.rs"),
                "description": "the handler checks the limit itself instead of using a shared check",
                "suggestion": "clamp the limit",
            })
        })
        .collect();
    let findings = json!({ "findings": items });
    let findings_path = d.run_dir.join("lens-findings-01.json");
    store::atomic_write(&findings_path, crate::canonical::to_pretty(&findings)?.as_bytes())?;
    d.say("three lens findings, one per handler: \"Page-limit validation re-implemented in src/handlers/<name>.rs\"")?;
    d.say("$ premerge review route --round 1 --findings lens-findings-01.json")?;
    let args = RouteArgs {
        round: 1,
        findings: findings_path,
        issue: Some(42),
        run_dir: Some(d.run_dir.clone()),
        format: crate::cli::RouteFormat::Json,
    };
    d.with_ctx(b"", |c| run(Cmd::Route(args), c).map(|_| ()))?;
    let artefact = |name: &str| crate::input::read_text(&d.run_dir.join(name), crate::input::Kind::Artefact);
    let handoff: Value = serde_json::from_str(&artefact("handoff-01.json")?)?;
    let brief = artefact("step-back-01.md")?;
    for line in brief.lines().filter(|l| l.starts_with("## Seam") || l.contains("` [")) {
        d.say(format!("  brief> {line}"))?;
    }
    d.say(format!(
        "brief: {}\nhandoff: {} (status {}: no dispatch command in this demo, so it carries the brief)",
        d.run_dir.join("step-back-01.md").display(),
        d.run_dir.join("handoff-01.json").display(),
        handoff["status"]
    ))?;
    d.say("$ premerge explain-cap repeat-finding-seam --files 3")?;
    let args = ExplainCapArgs { cap: "repeat-finding-seam".into(), files: Some(3) };
    d.with_ctx(b"", |c| run_explain_cap(args, c).map(|_| ()))
}

/// A list handler with its own copy of the page-limit check (the demo's seam).
pub(crate) fn demo_handler(name: &str, var: &str) -> String {
    format!(
        "pub fn list_{name}(limit: Option<u64>) -> Result<Vec<String>, String> {{\n    let {var} = limit.unwrap_or(20);\n    \
         if {var} == 0 || {var} > 500 {{\n        return Err(format!(\"{name}: limit {{}} out of range\", {var}));\n    }}\n    \
         let page = {var}.min(100) as usize;\n    Ok(vec![String::from(\"{name}\"); page])\n}}\n"
    )
}
