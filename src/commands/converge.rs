//! `premerge converge --attempt N`: one decision (CONTINUE, STOP_GREEN,
//! STOP_NO_PROGRESS, STOP_REGRESSED, STOP_EXHAUSTED) from the blocker fingerprints of
//! `classified-NN.json` and, after the first attempt, `classified-<N-1>.json`.

use std::path::PathBuf;

use serde_json::json;

use super::Ctx;
use crate::error::{CmdResult, Exit};
use crate::store;
use crate::waves::converge::{blocker_fingerprints, decide};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=99))]
    pub attempt: u32,
    /// Print the decision with its numbers as one JSON line instead of the bare word.
    #[arg(long)]
    pub json: bool,
    /// Pipeline run directory.
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
}

pub fn run(args: Args, ctx: &mut Ctx) -> CmdResult {
    let run_dir = ctx.run_dir_of(args.run_dir.as_deref())?;
    let now = blocker_fingerprints(&crate::store::run_dir::read_classified(&run_dir, args.attempt)?.findings);
    let previous = if args.attempt > 1 {
        Some(blocker_fingerprints(&crate::store::run_dir::read_classified(&run_dir, args.attempt - 1)?.findings))
    } else {
        None
    };
    let v = decide(args.attempt, &now, previous.as_ref());
    {
        let _lock = store::RunLock::acquire(run_dir.as_std_path())?;
        store::append_event(
            run_dir.as_std_path(),
            &crate::events::Event::Converge { attempt: args.attempt, decision: v.decision },
        )?;
    }
    // Blockers that survived two attempts are a stripe (`premerge`, `blocker_recurring`,
    // keyed by their fingerprints): a proposal the first time, a halt when the same set
    // survives again while that proposal is open.
    let survived: Vec<&String> = previous.as_ref().map(|p| now.intersection(p).collect()).unwrap_or_default();
    let mut stripe = None;
    if !survived.is_empty()
        && let Ok(repo) = ctx.repo()
        && let Ok(cfg) = super::load_config(&repo)
    {
        let rows: Vec<serde_json::Value> = survived
            .iter()
            .map(|fp| json!({"id": format!("attempt-{}:{fp}", args.attempt), "fingerprint": fp}))
            .collect();
        stripe = crate::stripe::emit::emit_own_signal(
            ctx,
            &repo,
            &cfg,
            run_dir.as_std_path(),
            "premerge",
            "blocker_recurring",
            &rows,
        );
    }
    // Any STOP_* ends the fix loop of this run directory: the fence stops blocking.
    let closed_loop = match ctx.repo() {
        Ok(repo) => {
            crate::store::fix_loop::on_converge(ctx.stderr, &repo, run_dir.as_std_path(), &v.decision.to_string())?
        }
        Err(_) => None,
    };
    let halts = stripe.as_ref().is_some_and(|o| o.halts());
    if args.json {
        let mut out = serde_json::to_value(&v)?;
        if let Some(o) = &stripe {
            out["stripe"] = o.to_json();
        }
        if let Some(id) = &closed_loop {
            out["loop_closed"] = json!(id);
        }
        write!(ctx.stdout, "{}", crate::canonical::to_line(&out)?)?;
    } else {
        writeln!(ctx.stdout, "{}", v.decision)?;
        writeln!(
            ctx.stderr,
            "premerge: converge: attempt {}: {} blocker(s), previous {}, fixed {}, new {}",
            v.attempt,
            v.blockers,
            v.previous.map_or_else(|| "none".to_string(), |p| p.to_string()),
            v.fixed,
            v.new
        )?;
        if let Some(o) = &stripe {
            writeln!(ctx.stderr, "premerge: converge: stripe {}", crate::canonical::to_compact(&o.to_json())?)?;
        }
    }
    Ok(if halts { Exit::Policy } else { Exit::Ok })
}
