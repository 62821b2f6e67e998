//! `premerge loop status|close`: show and end the clone's fix loop.
//!
//! The pre-push fence blocks only while a loop is open; `plan --attempt 1` opens it and
//! `converge` returning `STOP_*` closes it. An operator who tried a plan out, or whose
//! pipeline died, ends it here.

use serde_json::{Value, json};

use super::Ctx;
use crate::cli::Format;
use crate::error::{CmdResult, Exit};
use crate::store::fix_loop::{self, FixLoop, LoopRecord};

#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Show the fix loop: open or closed, its run directory and attempt.
    Status(FormatArgs),
    /// Close the open fix loop: the pre-push fence stops blocking.
    Close(FormatArgs),
}

#[derive(Debug, clap::Args)]
pub struct FormatArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

pub(crate) fn run(cmd: Cmd, ctx: &mut Ctx) -> CmdResult {
    let repo = ctx.repo()?;
    let state = repo.state_dir();
    match cmd {
        Cmd::Status(a) => {
            let rec = fix_loop::read(&state);
            match a.format {
                Format::Json => write!(ctx.stdout, "{}", crate::canonical::to_line(&status_json(&rec))?)?,
                Format::Text => match &rec {
                    LoopRecord::Absent => writeln!(ctx.stdout, "no fix loop in this clone: the fence is inactive")?,
                    LoopRecord::Unreadable(why) => {
                        writeln!(ctx.stdout, "fix loop record unreadable: {why}")?;
                        writeln!(ctx.stdout, "the fence refuses pushes until it is reset: premerge loop close")?;
                    }
                    LoopRecord::Loop(l) => write_loop(ctx, l)?,
                },
            }
            Ok(Exit::Ok)
        }
        Cmd::Close(a) => {
            let closed = fix_loop::close(&state, "operator", None)?;
            if let Some(l) = &closed {
                let ev = crate::events::Event::LoopClosed {
                    loop_id: l.id.clone(),
                    by: "operator".into(),
                    attempt: l.attempt,
                };
                if let Err(e) = crate::store::append_event(&state.path, &ev) {
                    ctx.warn(format!("loop: cannot log the close: {e:#}"));
                }
            }
            match a.format {
                Format::Json => {
                    let v = json!({"schema_version": 1, "closed": closed.is_some(), "loop": closed});
                    write!(ctx.stdout, "{}", crate::canonical::to_line(&v)?)?
                }
                Format::Text => match &closed {
                    Some(l) => writeln!(
                        ctx.stdout,
                        "closed fix loop {} (run directory {}, attempt {}): the fence no longer blocks pushes",
                        l.id, l.run_dir, l.attempt
                    )?,
                    None => writeln!(ctx.stdout, "no open fix loop: nothing to close")?,
                },
            }
            Ok(Exit::Ok)
        }
    }
}

fn status_json(rec: &LoopRecord) -> Value {
    match rec {
        LoopRecord::Absent => json!({"schema_version": 1, "state": "none", "loop": null}),
        LoopRecord::Unreadable(why) => json!({"schema_version": 1, "state": "unreadable", "loop": null, "why": why}),
        LoopRecord::Loop(l) => {
            let state = if l.is_open() { "open" } else { "closed" };
            json!({"schema_version": 1, "state": state, "loop": l})
        }
    }
}

fn write_loop(ctx: &mut Ctx, l: &FixLoop) -> anyhow::Result<()> {
    let state = if l.is_open() { "open: the pre-push fence is active" } else { "closed" };
    writeln!(ctx.stdout, "fix loop {}: {state}", l.id)?;
    writeln!(ctx.stdout, "run directory: {}", l.run_dir)?;
    writeln!(ctx.stdout, "attempt: {}", l.attempt)?;
    writeln!(ctx.stdout, "opened: {}", l.opened_at)?;
    if let (Some(at), Some(by)) = (&l.closed_at, &l.closed_by) {
        writeln!(ctx.stdout, "closed: {at} by {by}")?;
    } else {
        writeln!(ctx.stdout, "close it: premerge loop close")?;
    }
    Ok(())
}
