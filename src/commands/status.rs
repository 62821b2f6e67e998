//! `premerge status [--wait] [--format text|json]`: the hooks' background job, its
//! queue, and the results nobody has printed yet (printed here, once, as a hook would).

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
    let results = bg.claim_results()?;
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
            let doc = json!({"schema_version": 1, "job": job, "pending": pending, "results": results});
            ctx.stdout.write_all(crate::canonical::to_line(&doc)?.as_bytes())?;
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
            if results.is_empty() {
                writeln!(ctx.stdout, "no new results")?;
            }
            background::print_results(ctx.stdout, ctx.stderr, &results)?;
        }
    }
    Ok(Exit::Ok)
}
