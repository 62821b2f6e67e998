//! `premerge drain`: the human checkpoint of stripe halts.
//!
//! A halt is pending while the proposal it names is still in `<root>/open/`: a halt
//! only ever names an open proposal, and resolving that proposal (`apply`, `reject`,
//! or moving it by hand) is what makes the halt older than its proposal's resolution.
//! When any halt is pending, drain writes `DRAIN_HALT.md` (atomically) in the run
//! directory, listing each with its proposal, and exits 1; otherwise it removes a
//! stale `DRAIN_HALT.md` and exits 0.

use std::path::Path;

use anyhow::{Context as _, Result};

use super::Ctx;
use crate::cli::RootArgs;
use crate::error::{CmdResult, Exit};
use crate::store;
use crate::store::proposals::{PendingHalt, pending_halts};

/// File name of the halt report in the run directory.
pub(crate) const DRAIN_HALT_FILE: &str = "DRAIN_HALT.md";

#[derive(Debug, Default, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub root: RootArgs,
}

fn report(pending: &[PendingHalt]) -> String {
    let mut s = format!(
        "# Drain halted: {} pending stripe halt(s)\n\n\
         A stripe fired again while its proposal was still open: its root cause is known and\n\
         going on would be rework. Resolve each proposal (`premerge proposal apply ID`, or\n\
         `premerge proposal reject ID --reason TEXT`), then run `premerge drain` again.\n\n\
         | stripe | proposal | halts | last halt | halted workflows |\n|---|---|---|---|---|\n",
        pending.len()
    );
    for p in pending {
        let wf = if p.workflows.is_empty() { "-".to_string() } else { p.workflows.join(", ") };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            p.stripe,
            p.proposal.display(),
            p.halts,
            p.last,
            wf.replace('|', "\\|")
        ));
    }
    s
}

pub fn run(args: Args, ctx: &mut Ctx) -> CmdResult {
    // Wherever `proposal emit` works, drain works: the same root and events directory,
    // with or without a repository (an explicit `--root` outside one).
    let w = super::proposal_place(ctx, &args.root)?;
    let (root, run_dir) = (w.root, w.events_dir);
    store::proposals::check_root(&root)?;
    let pending = pending_halts(&root, &store::read_events(&run_dir)?);
    let out = run_dir.join(DRAIN_HALT_FILE);
    if pending.is_empty() {
        remove_stale(&out)?;
        writeln!(ctx.stdout, "premerge drain: no pending stripe halts")?;
        return Ok(Exit::Ok);
    }
    store::atomic_write(&out, report(&pending).as_bytes())?;
    writeln!(ctx.stdout, "premerge drain: HALT: {} pending stripe halt(s); wrote {}", pending.len(), out.display())?;
    for p in &pending {
        writeln!(ctx.stdout, "  {}  {}", p.stripe, p.proposal.display())?;
    }
    Ok(Exit::Policy)
}

fn remove_stale(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("{}: cannot remove the stale halt report", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_halt_is_pending_only_while_its_proposal_is_open() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join("open")).unwrap();
        let name = "review:repeat_seam:0123abcd-20260102T030405Z.md";
        std::fs::write(root.join("open").join(name), "x").unwrap();
        let events = vec![
            json!({"kind": "refinement_proposal_emitted", "stripe": "review:repeat_seam:0123abcd"}),
            json!({"kind": "stripe_repeat_halt", "stripe": "review:repeat_seam:0123abcd",
                   "existing_proposal_path": format!("/elsewhere/open/{name}"), "halted_workflow_id": "w2", "ts": "2026-01-02T03:04:06Z"}),
            json!({"kind": "stripe_repeat_halt", "stripe": "review:repeat_seam:0123abcd",
                   "existing_proposal_path": format!("/elsewhere/open/{name}"), "halted_workflow_id": "w1", "ts": "2026-01-02T03:04:07Z"}),
            json!({"kind": "stripe_repeat_halt", "stripe": "x:y:0123abcd", "existing_proposal_path": "gone.md"}),
        ];
        let p = pending_halts(root, &events);
        assert_eq!(p.len(), 1);
        assert_eq!((p[0].halts, p[0].last.as_str()), (2, "2026-01-02T03:04:07Z"));
        assert_eq!(p[0].workflows, ["w1", "w2"]);
        assert!(report(&p).contains("| review:repeat_seam:0123abcd |"));
        std::fs::create_dir_all(root.join("applied")).unwrap();
        std::fs::rename(root.join("open").join(name), root.join("applied").join(name)).unwrap();
        assert!(pending_halts(root, &events).is_empty());
    }
}
