//! `premerge drain`: the human checkpoint of stripe halts.
//!
//! A halt is pending while the proposal it names is still in `<root>/open/`: a halt
//! only ever names an open proposal, and resolving that proposal (`apply`, `reject`,
//! or moving it by hand) is what makes the halt older than its proposal's resolution.
//! When any halt is pending, drain writes `DRAIN_HALT.md` (atomically) in the run
//! directory, listing each with its proposal, and exits 1; otherwise it removes a
//! stale `DRAIN_HALT.md` and exits 0.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde_json::Value;

use super::Ctx;
use crate::cli::RootArgs;
use crate::error::{CmdResult, Exit};
use crate::store;

/// File name of the halt report in the run directory.
pub(crate) const DRAIN_HALT_FILE: &str = "DRAIN_HALT.md";

#[derive(Debug, Default, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub root: RootArgs,
}

/// One open proposal with the halts recorded against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PendingHalt {
    pub stripe: String,
    /// The open proposal.
    pub proposal: PathBuf,
    pub halts: usize,
    /// `ts` of the newest halt.
    pub last: String,
    /// Workflow ids the halts stopped, sorted, deduplicated.
    pub workflows: Vec<String>,
}

/// Every pending halt recorded in `events` whose proposal is still open under `root`.
pub(crate) fn pending_halts(root: &Path, events: &[Value]) -> Vec<PendingHalt> {
    let mut by_file: BTreeMap<String, PendingHalt> = BTreeMap::new();
    for ev in events {
        // A shadow-mode halt was decided and logged but never meant to stop anything.
        if ev.get("kind").and_then(Value::as_str) != Some("stripe_repeat_halt")
            || ev.get("mode").and_then(Value::as_str) == Some("shadow")
        {
            continue;
        }
        let (Some(stripe), Some(existing)) =
            (ev.get("stripe").and_then(Value::as_str), ev.get("existing_proposal_path").and_then(Value::as_str))
        else {
            continue;
        };
        let Some(name) = Path::new(existing).file_name().and_then(|n| n.to_str()) else { continue };
        // The proposal is looked up under this root, or where the halt recorded it (the
        // proposals of premerge's own signals live under the run directory).
        let recorded = Path::new(existing);
        let open = if root.join("open").join(name).is_file() {
            root.join("open").join(name)
        } else if recorded.is_absolute()
            && recorded.parent().and_then(Path::file_name).is_some_and(|d| d == "open")
            && recorded.is_file()
        {
            recorded.to_path_buf()
        } else {
            continue;
        };
        let entry = by_file.entry(name.to_string()).or_insert_with(|| PendingHalt {
            stripe: stripe.to_string(),
            proposal: open,
            halts: 0,
            last: String::new(),
            workflows: Vec::new(),
        });
        entry.halts += 1;
        if let Some(ts) = ev.get("ts").and_then(Value::as_str)
            && ts > entry.last.as_str()
        {
            entry.last = ts.to_string();
        }
        if let Some(w) = ev.get("halted_workflow_id").and_then(Value::as_str) {
            entry.workflows.push(w.to_string());
        }
    }
    let mut out: Vec<PendingHalt> = by_file.into_values().collect();
    for p in &mut out {
        p.workflows.sort();
        p.workflows.dedup();
    }
    out.sort_by(|a, b| (&a.stripe, &a.proposal).cmp(&(&b.stripe, &b.proposal)));
    out
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
