//! `premerge loop status|close`: show and end this worktree's fix loop.
//!
//! The pre-push fence blocks only while a loop is open; `plan --attempt 1` opens it and
//! `converge` returning `STOP_*` closes it. An operator who tried a plan out, or whose
//! pipeline died, ends it here. Both work where libgit2 cannot open the repository
//! (the loop is found through the `git` executable), so a loop left open in a
//! repository of a format libgit2 does not read can still be seen and closed.

use serde_json::{Value, json};

use super::Ctx;
use crate::cli::Format;
use crate::error::{CmdResult, Exit};
use crate::store::fix_loop::{self, Closed, FixLoop, LoopPlace, LoopRecord};

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

/// This worktree's loop place: through libgit2, else through the `git` executable.
fn place_of(ctx: &Ctx) -> anyhow::Result<LoopPlace> {
    match ctx.repo() {
        Ok(repo) => Ok(LoopPlace::of_repo(&repo)),
        Err(e) => match crate::git::locate::locate(&ctx.cwd) {
            Some(l) => Ok(LoopPlace::of_located(&l)),
            None => Err(e),
        },
    }
}

pub(crate) fn run(cmd: Cmd, ctx: &mut Ctx) -> CmdResult {
    let place = place_of(ctx)?;
    let state = place.state.clone();
    match cmd {
        Cmd::Status(a) => {
            let rec = fix_loop::read(&place);
            let no_state = fix_loop::state_path_problem(&state);
            // Loops of other worktrees never judge this one's pushes; shown so that an
            // operator sees every pipeline running in the clone.
            let others = fix_loop::others_open(&place).unwrap_or_else(|e| {
                ctx.warn(format!("loop: other worktrees' loops not listed: {e:#}"));
                Vec::new()
            });
            match a.format {
                Format::Json => {
                    let mut v = status_json(&rec);
                    v["worktree"] = json!(place.worktree);
                    v["other_worktrees_open"] = json!(others);
                    if let Some(why) = &no_state {
                        v["why"] = json!(why);
                    }
                    write!(ctx.stdout, "{}", crate::canonical::to_line(&v)?)?
                }
                Format::Text => match &rec {
                    LoopRecord::Absent => match &no_state {
                        Some(why) => writeln!(ctx.stdout, "no fix loop: {why}")?,
                        None => writeln!(ctx.stdout, "no fix loop in this worktree: the fence is inactive")?,
                    },
                    LoopRecord::Unreadable(why) => {
                        writeln!(ctx.stdout, "fix loop record unreadable: {why}")?;
                        writeln!(ctx.stdout, "the fence refuses pushes until it is reset: premerge loop close")?;
                    }
                    LoopRecord::Loop(l) => write_loop(ctx, l)?,
                },
            }
            if a.format == Format::Text {
                for o in &others {
                    writeln!(
                        ctx.stdout,
                        "open in worktree {}: fix loop {} (run directory {}, attempt {}); it fences that worktree's pushes only",
                        o.worktree_name(),
                        o.id,
                        o.run_dir,
                        o.attempt
                    )?;
                }
            }
            Ok(Exit::Ok)
        }
        Cmd::Close(a) => {
            let closed = fix_loop::close_operator(&place)?;
            let event = match &closed {
                Closed::Loop(l) => Some(crate::events::Event::LoopClosed {
                    loop_id: l.id.clone(),
                    by: "operator".into(),
                    attempt: l.attempt,
                }),
                Closed::Cleared(_) => Some(crate::events::Event::LoopClosed {
                    loop_id: "(unreadable)".into(),
                    by: "operator".into(),
                    attempt: 0,
                }),
                Closed::Nothing | Closed::NoState(_) => None,
            };
            if let Some(ev) = event
                && let Err(e) = crate::store::append_event(&state.path, &ev)
            {
                ctx.warn(format!("loop: cannot log the close: {e:#}"));
            }
            match a.format {
                Format::Json => {
                    let v = match &closed {
                        Closed::Loop(l) => json!({"schema_version": 1, "closed": true, "loop": l}),
                        Closed::Cleared(why) => {
                            json!({"schema_version": 1, "closed": true, "loop": null, "unreadable": why})
                        }
                        Closed::Nothing => json!({"schema_version": 1, "closed": false, "loop": null}),
                        Closed::NoState(why) => json!({"schema_version": 1, "closed": false, "loop": null, "why": why}),
                    };
                    write!(ctx.stdout, "{}", crate::canonical::to_line(&v)?)?
                }
                Format::Text => match &closed {
                    Closed::Loop(l) => writeln!(
                        ctx.stdout,
                        "closed fix loop {} (run directory {}, attempt {}): the fence no longer blocks pushes",
                        l.id, l.run_dir, l.attempt
                    )?,
                    Closed::Cleared(why) => {
                        // The reason is a diagnosis, on stderr; the outcome is the result.
                        writeln!(ctx.stderr, "premerge: loop close: the record was unreadable: {why}")?;
                        writeln!(
                            ctx.stdout,
                            "removed the unreadable fix loop record: the fence no longer blocks pushes"
                        )?
                    }
                    Closed::Nothing => writeln!(ctx.stdout, "no open fix loop: nothing to close")?,
                    Closed::NoState(why) => writeln!(ctx.stdout, "no open fix loop: {why}; nothing to close")?,
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
    writeln!(ctx.stdout, "worktree: {}", l.worktree_name())?;
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
