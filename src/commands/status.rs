//! `premerge status [--wait] [--format text|json]`: the hooks' background job, its
//! queue, the results nobody has printed yet (printed here, once, as a hook would),
//! and the scan cache's count of damaged entries.

use clap::Args as ClapArgs;
use serde_json::json;

use super::Ctx;
use crate::cli::Format;
use crate::error::{CmdResult, Exit};
use crate::hook::background;
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
            let doc = json!({"schema_version": 1, "job": job, "pending": pending, "results": results,
                             "scan_cache": scan_cache});
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
