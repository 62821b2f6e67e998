//! `premerge fence allowed|check` and the pre-push fence stage: what an attempt may
//! change, derived from `fix-waves-NN.json` alone, and whether a change stayed inside.
//!
//! The fence fails closed: a missing, unreadable, truncated or schema-invalid plan
//! refuses (exit 1 for `check` and for an enforcing pre-push hook). It is an authority
//! with a mode (`fence.mode`: off | shadow | enforce); shadow decides and logs to the
//! run directory's `events.jsonl`, never blocking.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use serde_json::json;

use super::Ctx;
use super::hook::HookRun;
use crate::config::Mode;
use crate::error::{CmdResult, Exit};
use crate::store;
use crate::waves::fence::{allowed, display_path, strays};

#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Print the allowed set of an attempt (the files of fix-waves-NN.json), byte-sorted.
    Allowed(AllowedArgs),
    /// Compare changed paths with the allowed set; exit 1 naming every stray path.
    Check(CheckArgs),
}

#[derive(Debug, clap::Args)]
pub struct AllowedArgs {
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=99))]
    pub attempt: u32,
    /// Separate paths with NUL instead of newline.
    #[arg(short = 'z')]
    pub nul: bool,
    /// Only this owner's files.
    #[arg(long, value_name = "ID")]
    pub owner: Option<String>,
    /// Pipeline run directory.
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("changes").required(true).args(["staged", "worktree", "range"])))]
pub struct CheckArgs {
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=99))]
    pub attempt: u32,
    /// Check the index (staged changes) against HEAD.
    #[arg(long)]
    pub staged: bool,
    /// Check the working tree against HEAD, untracked files included.
    #[arg(long)]
    pub worktree: bool,
    /// Check the commits of a range `A..B`.
    #[arg(long, value_name = "A..B")]
    pub range: Option<String>,
    /// Compare with one owner's files instead of the whole allowed set.
    #[arg(long, value_name = "ID")]
    pub owner: Option<String>,
    /// Pipeline run directory.
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
}

pub fn run(cmd: Cmd, ctx: &mut Ctx) -> CmdResult {
    match cmd {
        Cmd::Allowed(a) => run_allowed(a, ctx),
        Cmd::Check(a) => run_check(a, ctx),
    }
}

fn allowed_of(run_dir: &Path, attempt: u32, owner: Option<&str>) -> Result<Vec<String>> {
    let plan = super::plan::read_plan(run_dir, attempt)?;
    allowed(&plan, owner)
        .ok_or_else(|| anyhow!("owner `{}` is not in the plan of attempt {attempt}", owner.unwrap_or("")))
}

fn run_allowed(a: AllowedArgs, ctx: &mut Ctx) -> CmdResult {
    let run_dir = super::plan::run_dir_of(ctx, a.run_dir.as_deref())?;
    let set = allowed_of(&run_dir, a.attempt, a.owner.as_deref())?;
    let sep = if a.nul { b'\0' } else { b'\n' };
    for p in set {
        ctx.stdout.write_all(p.as_bytes())?;
        ctx.stdout.write_all(&[sep])?;
    }
    Ok(Exit::Ok)
}

fn changed_paths(ctx: &Ctx, a: &CheckArgs) -> Result<Vec<String>> {
    let repo = ctx.repo()?;
    let diff = if a.staged {
        repo.diff_staged()?
    } else if a.worktree {
        repo.diff_worktree()?
    } else {
        let range = a.range.as_deref().unwrap_or_default();
        let Some((base, head)) = range.split_once("..").filter(|(_, h)| !h.starts_with('.')) else {
            bail!("--range `{range}`: expected A..B");
        };
        let base = repo.resolve_commit(if base.is_empty() { "HEAD" } else { base })?;
        let head = repo.resolve_commit(if head.is_empty() { "HEAD" } else { head })?;
        repo.diff_commits(Some(&base), &head)?
    };
    Ok(diff.touched_paths())
}

fn run_check(a: CheckArgs, ctx: &mut Ctx) -> CmdResult {
    let run_dir = super::plan::run_dir_of(ctx, a.run_dir.as_deref())?;
    let changed = changed_paths(ctx, &a)?;
    let set = match allowed_of(&run_dir, a.attempt, a.owner.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            // Fail closed: no trustworthy plan, nothing is allowed.
            writeln!(ctx.stderr, "premerge: fence: refused: {e:#}")?;
            return Ok(Exit::Policy);
        }
    };
    let stray = strays(&changed, &set);
    let scope = match &a.owner {
        Some(o) => format!("owner {o} of attempt {}", a.attempt),
        None => format!("attempt {}", a.attempt),
    };
    if stray.is_empty() {
        writeln!(ctx.stdout, "fence: ok: {} changed path(s) inside the allowed set of {scope}", changed.len())?;
        return Ok(Exit::Ok);
    }
    for p in &stray {
        writeln!(ctx.stdout, "stray: {}", display_path(p))?;
    }
    writeln!(
        ctx.stderr,
        "premerge: fence: refused: {} of {} changed path(s) outside the allowed set of {scope}",
        stray.len(),
        changed.len()
    )?;
    // The stripe records paths outside the whole plan (a check with --owner records
    // the same class as one without: another owner's file is not a new kind of stray).
    let plan_strays = match &a.owner {
        Some(_) => allowed_of(&run_dir, a.attempt, None).map(|set| strays(&changed, &set)).unwrap_or_default(),
        None => stray,
    };
    if !plan_strays.is_empty() {
        record_violation_stripe(ctx, &run_dir, a.attempt, &plan_strays);
    }
    Ok(Exit::Policy)
}

/// A fence violation is a stripe (`premerge`, `fence_violation`, keyed by the stray
/// paths): the first one opens a proposal, the same strays again while it is open are
/// a repeat for a human. The fence has refused either way; this only records the class.
/// Rows are named after the observation (attempt and path), so checking unchanged
/// state again records nothing new.
fn record_violation_stripe(ctx: &mut Ctx, run_dir: &Path, attempt: u32, stray: &[String]) {
    let Ok(repo) = ctx.repo() else { return };
    let Ok(cfg) = super::load_config(&repo) else { return };
    let nn = store::nn(attempt);
    let rows: Vec<serde_json::Value> =
        stray.iter().map(|p| serde_json::json!({"id": format!("attempt-{nn}:stray:{p}"), "path": p})).collect();
    if let Some(o) = super::proposal::emit_own_signal(ctx, &repo, &cfg, run_dir, "premerge", "fence_violation", &rows) {
        let _ = writeln!(
            ctx.stderr,
            "premerge: fence: stripe {}",
            crate::canonical::to_compact(&o.to_json()).unwrap_or_default()
        );
    }
}

/// The current plan of a run directory: the highest-numbered `fix-waves-NN.json`
/// (NN all digits). `None` when the directory holds no plan (the fence is inactive).
pub fn current_attempt(run_dir: &Path) -> Result<Option<u32>> {
    let entries = match fs::read_dir(run_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!("{}: cannot list: {e}", run_dir.display()),
    };
    let mut best = None;
    for e in entries {
        let name = e?.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(nn) = name.strip_prefix("fix-waves-").and_then(|r| r.strip_suffix(".json")) else { continue };
        if nn.len() >= 2 && nn.bytes().all(|b| b.is_ascii_digit()) {
            let n: u32 = nn.parse().unwrap_or(u32::MAX);
            best = best.max(Some(n));
        }
    }
    Ok(best)
}

/// Pre-push: when the run directory holds a current plan, fence the pushed files.
pub fn pre_push_stage(run: &mut HookRun) -> CmdResult {
    let mode = run.config.mode("fence.mode");
    if mode == Mode::Off {
        return Ok(Exit::Ok);
    }
    let run_dir = run.repo.state_dir().run_dir(None);
    let attempt = match current_attempt(&run_dir) {
        Ok(Some(n)) => n,
        Ok(None) => return Ok(Exit::Ok),
        Err(e) => return decide(run, mode, &run_dir, 0, Err(e)),
    };
    let outcome = allowed_of(&run_dir, attempt, None).map(|set| strays(&run.diff.touched_paths(), &set));
    decide(run, mode, &run_dir, attempt, outcome)
}

fn decide(run: &mut HookRun, mode: Mode, run_dir: &Path, attempt: u32, outcome: Result<Vec<String>>) -> CmdResult {
    let mode_name = if mode == Mode::Shadow { "shadow" } else { "enforce" };
    let (strays, why) = match outcome {
        Ok(s) if s.is_empty() => {
            writeln!(run.ctx.stdout, "premerge fence: pushed files are inside the plan of attempt {attempt}")?;
            return Ok(Exit::Ok);
        }
        Ok(s) => {
            let why = format!("{} pushed path(s) outside fix-waves-{}.json", s.len(), store::nn(attempt));
            (s, why)
        }
        Err(e) => (Vec::new(), format!("no trustworthy wave plan: {e:#}")),
    };
    let event = json!({"kind": "fence_pre_push", "mode": mode_name, "attempt": attempt,
                       "strays": strays, "refused": mode == Mode::Enforce, "why": why});
    if let Err(e) = store::append_event(run_dir, &event) {
        run.ctx.warn(format!("fence: cannot log the decision: {e:#}"));
    }
    for p in &strays {
        writeln!(run.ctx.stderr, "premerge fence: stray: {}", display_path(p))?;
    }
    if mode == Mode::Shadow {
        writeln!(run.ctx.stderr, "premerge fence (shadow, not blocking): would refuse: {why}")?;
        return Ok(Exit::Ok);
    }
    writeln!(run.ctx.stderr, "premerge fence: push refused: {why} (fence.mode=shadow or off to let it through)")?;
    Ok(Exit::Policy)
}
