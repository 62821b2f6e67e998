//! `premerge status [--wait] [--format text|json]`: on one screen, this worktree's fix
//! loop (its id, attempt, run directory and fence mode), the open proposals and pending
//! stripe halts, the stop gate's mode and what it would have blocked, the guard
//! memories recorded, and the hooks' background job: its queue, the results nobody has
//! printed yet (printed here, once, as a hook would), and the scan cache's count of
//! damaged entries. `premerge schema status` is the JSON document's schema.

use clap::Args as ClapArgs;
use serde_json::json;

use super::Ctx;
use crate::cli::Format;
use crate::error::{CmdResult, Exit};
use crate::hook::background;
use crate::overview::{GateSummary, LoopSummary, MemorySummary, ProposalSummary};
use crate::store::background::Background;

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Block until the background job has finished everything queued (runs the queue
    /// here when no job is running, as after a job was killed).
    #[arg(long)]
    pub wait: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

pub fn run(args: Args, ctx: &mut Ctx) -> CmdResult {
    let repo = ctx.repo()?;
    let bg = Background::new(&repo.state_dir());
    if args.wait {
        loop {
            if bg.is_running()? {
                bg.wait_idle()?;
                continue;
            }
            // With the hooks switched off nothing runs the queue, this included.
            if bg.pending_count()? == 0 || crate::hook::master_switch_off() {
                break;
            }
            background::drain(&ctx.cwd, &bg)?;
        }
    }
    let running = bg.is_running()?;
    let pending = bg.pending_count()?;
    let state = bg.read_state();
    // Results are claimed (moved into `shown/`) one at a time and given back when
    // their output cannot be written: `premerge status` on a full disk or a closed
    // stdout loses nothing (issue 27, D16). What a pipe took before its reader went
    // away (`status | head`) was written, and counts as printed.
    let unclaimed = bg.unclaimed()?;
    // The scan cache's damaged entries: each was a miss (scanned again), and counted.
    let cache = crate::store::scan_cache::health(&repo.state_dir().path);
    let (fix_loop, proposals, gate, memories) = overview(ctx, &repo);
    match args.format {
        Format::Json => {
            let job = match &state {
                Some(s) => json!({
                    "state": if running { "running" } else { "idle" },
                    "pid": s.pid,
                    "started_at": s.started_at,
                    "finished_at": if s.finished_at.is_empty() { serde_json::Value::Null } else { json!(s.finished_at) },
                    "entries_done": s.entries_done,
                }),
                None => json!({"state": if running { "running" } else { "never-ran" }}),
            };
            let mut claimed = Vec::new();
            let mut results = Vec::new();
            for name in unclaimed {
                if let Some(r) = bg.claim(&name)? {
                    claimed.push(name);
                    results.push(r);
                }
            }
            let scan_cache = cache.map(|h| json!({"entries": h.entries, "damaged": h.damaged}));
            let doc = crate::overview::StatusDoc {
                schema_version: 1,
                job,
                pending,
                results: results.iter().map(serde_json::to_value).collect::<Result<_, _>>()?,
                scan_cache,
                fix_loop: fix_loop.clone(),
                proposals,
                gate,
                memories,
            };
            let written = crate::canonical::to_line(&doc)
                .map_err(anyhow::Error::from)
                .and_then(|line| Ok(ctx.stdout.write_all(line.as_bytes()).and_then(|()| ctx.stdout.flush())?));
            if let Err(e) = written {
                for name in &claimed {
                    let _ = bg.unclaim(name);
                }
                return Err(e);
            }
        }
        Format::Text => {
            let line = match (&state, running) {
                (Some(s), true) => format!("running (pid {}, started {})", s.pid, s.started_at),
                (None, true) => "running".to_string(),
                (Some(s), false) if !s.finished_at.is_empty() => {
                    format!("idle (last run finished {}, {} range(s) done)", s.finished_at, s.entries_done)
                }
                // The last job did not record its end: it was killed.
                (Some(s), false) => format!("idle (the job started {} was interrupted)", s.started_at),
                (None, false) => "never ran".to_string(),
            };
            for l in overview_lines(&fix_loop, proposals.as_ref(), &gate, &memories) {
                writeln!(ctx.stdout, "{l}")?;
            }
            writeln!(ctx.stdout, "premerge background job: {line}")?;
            if pending > 0 {
                let who = if running {
                    "the running job takes them before it exits"
                } else {
                    "the next hook or `premerge status --wait` runs them"
                };
                writeln!(ctx.stdout, "pending: {pending} range(s); {who}")?;
            }
            if let Some(h) = cache.filter(|h| h.damaged > 0) {
                writeln!(
                    ctx.stdout,
                    "scan cache: {} damaged entr{} found so far, each a miss (scanned again); {} entr{} intact",
                    h.damaged,
                    if h.damaged == 1 { "y" } else { "ies" },
                    h.entries,
                    if h.entries == 1 { "y" } else { "ies" }
                )?;
            }
            ctx.stdout.flush()?;
            let mut printed = 0;
            for name in unclaimed {
                let Some(r) = bg.claim(&name)? else { continue };
                let shown = background::print_results(ctx.stdout, ctx.stderr, std::slice::from_ref(&r))
                    .and_then(|()| ctx.stdout.flush());
                if let Err(e) = shown {
                    let _ = bg.unclaim(&name);
                    return Err(e.into());
                }
                printed += 1;
            }
            if printed == 0 {
                writeln!(ctx.stdout, "no new results")?;
            }
        }
    }
    bg.prune_shown()?;
    Ok(Exit::Ok)
}

/// The loop, proposals, gate and memories, each read on its own: one that cannot be
/// read shows as unknown, and the rest of the screen still shows.
fn overview(ctx: &Ctx, repo: &crate::git::Repo) -> (LoopSummary, Option<ProposalSummary>, GateSummary, MemorySummary) {
    use crate::store::fix_loop::{self, LoopPlace, LoopRecord};
    let config = super::load_config(repo).unwrap_or_default();
    let place = LoopPlace::of_repo(repo);
    let mut l = LoopSummary { fence_mode: config.fence.mode.as_str().to_string(), ..LoopSummary::default() };
    match fix_loop::read(&place) {
        LoopRecord::Absent => l.state = "none".into(),
        LoopRecord::Unreadable(_) => l.state = "unreadable".into(),
        LoopRecord::Loop(r) => {
            l.state = if r.is_open() { "open" } else { "closed" }.into();
            l.id = Some(r.id.clone());
            l.attempt = Some(r.attempt);
            l.run_dir = Some(r.run_dir.clone());
        }
    }
    let proposals = crate::store::proposals::default_root(repo, &config).ok().map(|root| {
        let open = crate::store::proposals::scan_root(&root).map(|s| s.totals.get("open").copied().unwrap_or(0));
        let run_dir = ctx.run_dir(repo, None).ok();
        let events = run_dir.and_then(|d| crate::store::read_events(d.as_std_path()).ok()).unwrap_or_default();
        ProposalSummary {
            root: root.display().to_string(),
            open: open.unwrap_or(0),
            pending_halts: crate::store::proposals::pending_halts(&root, &events).len(),
        }
    });
    let state = repo.state_dir();
    // Reading never creates the database: without one, nothing was recorded.
    let conn = if state.db_path().is_file() { state.open_db().ok() } else { None };
    let day = |days: i64| {
        let d = (crate::store::now() - time::Duration::days(days)).date();
        format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
    };
    let control = conn.as_ref().and_then(|c| crate::store::gate_db::control(c).ok()).unwrap_or_default();
    let mode = match crate::gate::judge::switches(&config, control) {
        crate::gate::Switches::Killed => "off (kill switch)".to_string(),
        crate::gate::Switches::Mode(m) => m.as_str().to_string(),
    };
    let period =
        |days: i64| conn.as_ref().and_then(|c| crate::store::gate_db::period(c, &day(days)).ok()).unwrap_or_default();
    let (today, week) = (period(0), period(6));
    let gate = GateSummary {
        mode,
        kill_switch: control.kill_switch,
        would_block_today: today.would_block,
        would_block_7_days: week.would_block,
        blocked_7_days: week.blocked,
    };
    let recorded = conn.as_ref().and_then(|c| crate::store::memory_db::list(c).ok()).map_or(0, |m| m.len());
    let backend = Some(config.memory.backend_command.clone()).filter(|b| !b.is_empty());
    (l, proposals, gate, MemorySummary { recorded, backend })
}

/// The overview as text, one line a part.
fn overview_lines(l: &LoopSummary, p: Option<&ProposalSummary>, g: &GateSummary, m: &MemorySummary) -> Vec<String> {
    let plain = crate::report::text::plain;
    let mut out = Vec::new();
    out.push(match (l.state.as_str(), &l.id) {
        ("open", Some(id)) => format!(
            "fix loop: {id} open, attempt {}, run directory {}, fence {}",
            l.attempt.unwrap_or(0),
            plain(l.run_dir.as_deref().unwrap_or("?")),
            l.fence_mode
        ),
        ("closed", Some(id)) => format!("fix loop: none open (the last, {id}, is closed); fence {}", l.fence_mode),
        ("unreadable", _) => {
            "fix loop: the record cannot be read, so the fence refuses every push (premerge loop close clears it)"
                .into()
        }
        _ => format!("fix loop: none; fence {}", l.fence_mode),
    });
    out.push(match p {
        Some(p) if p.pending_halts > 0 => format!(
            "proposals: {} open under {}; {} stripe halt(s) pending (premerge drain)",
            p.open,
            plain(&p.root),
            p.pending_halts
        ),
        Some(p) => format!("proposals: {} open under {}; no halt pending", p.open, plain(&p.root)),
        None => "proposals: the proposal root cannot be used (premerge proposal list says why)".into(),
    });
    out.push(format!(
        "stop gate: {}; would block today {}, last 7 days {}; blocked last 7 days {}",
        g.mode, g.would_block_today, g.would_block_7_days, g.blocked_7_days
    ));
    out.push(match &m.backend {
        Some(b) => format!("guard memories: {} recorded (also sent to `{}`)", m.recorded, plain(&b.join(" "))),
        None => format!("guard memories: {} recorded", m.recorded),
    });
    out
}
