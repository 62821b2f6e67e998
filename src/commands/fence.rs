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

use super::Ctx;
use crate::config::Mode;
use crate::diff::json_path;
use crate::error::{CmdResult, Exit};
use crate::hook::HookRun;
use crate::store;
use crate::store::fix_loop::{self, FixLoop, LoopRecord};
use crate::waves::fence::{allowed, display_path_bytes, strays};

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

#[derive(Debug, Default, clap::Args)]
#[command(group(clap::ArgGroup::new("changes").required(true).multiple(true)
    .args(["staged", "worktree", "range", "range_pos", "base", "head"])))]
pub struct CheckArgs {
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=99))]
    pub attempt: u32,
    /// Check the index (staged changes) against HEAD.
    #[arg(long)]
    pub staged: bool,
    /// Check the working tree against HEAD, untracked files included.
    #[arg(long)]
    pub worktree: bool,
    /// Check the commits of a range `A..B` (or `A...B`), as with every range-taking command.
    #[arg(value_name = "A..B", conflicts_with_all = ["staged", "worktree", "range", "base", "head"])]
    pub range_pos: Option<String>,
    /// The same as the positional `A..B` (kept for pipelines written against it).
    #[arg(long, value_name = "A..B", conflicts_with_all = ["staged", "worktree", "base", "head"])]
    pub range: Option<String>,
    /// Check the commits from REV (default: the head's first parent).
    #[arg(long, value_name = "REV", conflicts_with_all = ["staged", "worktree"])]
    pub base: Option<String>,
    /// Check the commits up to REV (default: HEAD).
    #[arg(long, value_name = "REV", conflicts_with_all = ["staged", "worktree"])]
    pub head: Option<String>,
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
    let plan = crate::store::run_dir::read_plan(run_dir, attempt)?;
    allowed(&plan, owner)
        .ok_or_else(|| anyhow!("owner `{}` is not in the plan of attempt {attempt}", owner.unwrap_or("")))
}

fn run_allowed(a: AllowedArgs, ctx: &mut Ctx) -> CmdResult {
    let run_dir = ctx.run_dir_of(a.run_dir.as_deref())?;
    let set = allowed_of(&run_dir, a.attempt, a.owner.as_deref())?;
    let sep = if a.nul { b'\0' } else { b'\n' };
    for p in set {
        ctx.stdout.write_all(p.as_bytes())?;
        ctx.stdout.write_all(&[sep])?;
    }
    Ok(Exit::Ok)
}

fn changed_paths(ctx: &Ctx, a: &CheckArgs) -> Result<Vec<Vec<u8>>> {
    let repo = ctx.repo()?;
    let range = crate::cli::RangeArgs {
        range: a.range_pos.clone().or_else(|| a.range.clone()),
        base: a.base.clone(),
        head: a.head.clone(),
        staged: a.staged,
        worktree: a.worktree,
    };
    let diff = range.diff_with(&repo, crate::git::Detail::Files)?;
    Ok(diff.touched_path_bytes())
}

fn run_check(a: CheckArgs, ctx: &mut Ctx) -> CmdResult {
    let run_dir = ctx.run_dir_of(a.run_dir.as_deref())?;
    let changed = changed_paths(ctx, &a)?;
    let set = match allowed_of(&run_dir, a.attempt, a.owner.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            // Fail closed: no trustworthy plan, nothing is allowed.
            writeln!(ctx.stderr, "premerge: fence: refused: {e:#}")?;
            writeln!(
                ctx.stderr,
                "premerge: fence: no trustworthy plan means nothing is allowed: rerun `premerge plan --attempt {}` to rewrite it",
                a.attempt
            )?;
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
        writeln!(ctx.stdout, "stray: {}", display_path_bytes(p))?;
    }
    writeln!(
        ctx.stderr,
        "premerge: fence: refused: {} of {} changed path(s) outside the allowed set of {scope}",
        stray.len(),
        changed.len()
    )?;
    unrepresentable_note(ctx.stderr, "premerge: fence", &stray)?;
    writeln!(ctx.stderr, "premerge: fence: undo the stray changes, or have a later attempt's plan name those files")?;
    // The stripe records paths outside the whole plan (a check with --owner records
    // the same class as one without: another owner's file is not a new kind of stray).
    let plan_strays = match &a.owner {
        Some(_) => allowed_of(&run_dir, a.attempt, None).map(|set| strays(&changed, &set)).unwrap_or_default(),
        None => stray,
    };
    if !plan_strays.is_empty() {
        // Stripe rows keep a UTF-8 name as it is (so stripe ids are stable) and show any
        // other name escaped, never lossily.
        let rows: Vec<String> = plan_strays.iter().map(|p| json_path(p).0).collect();
        record_violation_stripe(ctx, &run_dir, a.attempt, &rows);
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
    if let Some(o) =
        crate::stripe::emit::emit_own_signal(ctx, &repo, &cfg, run_dir, "premerge", "fence_violation", &rows)
    {
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

/// One line when some strays are not UTF-8: no wave plan (JSON text) can name them,
/// so the fence can only refuse them; renaming the file is the way through.
fn unrepresentable_note(out: &mut dyn std::io::Write, prefix: &str, stray: &[Vec<u8>]) -> std::io::Result<()> {
    let n = stray.iter().filter(|p| std::str::from_utf8(p).is_err()).count();
    if n > 0 {
        writeln!(
            out,
            "{prefix}: {n} path(s) are not UTF-8 and no wave plan can name them: rename them to UTF-8 names"
        )?;
    }
    Ok(())
}

/// One line when a push changes `premerge.toml`: its settings take effect for pushes
/// after it lands, this one is judged by the base's (see `load_config_at`).
pub fn note_config_change(ctx: &mut Ctx, diff: &crate::diff::Diff, base: Option<&str>) -> Result<()> {
    let name = crate::config::CONFIG_FILE_NAME.as_bytes();
    if diff.files.iter().any(|f| f.touched_path_bytes().any(|p| p == name)) {
        let at =
            base.map_or_else(|| "the defaults".to_string(), |b| format!("premerge.toml at {}", &b[..b.len().min(12)]));
        writeln!(
            ctx.stderr,
            "premerge: this push changes premerge.toml: it applies once it is on the remote; this push is judged by {at}"
        )?;
    }
    Ok(())
}

/// Pre-push: while the clone's fix loop is open, fence the pushed files against the
/// plan of the loop's run directory. The loop record, not the push's environment,
/// says where that plan is: a `PREMERGE_RUN_DIR` set for the push neither moves nor
/// disables the fence.
pub fn pre_push_stage(run: &mut HookRun) -> CmdResult {
    let mode = run.config.mode("fence.mode");
    if mode == Mode::Off {
        return Ok(Exit::Ok);
    }
    let state = run.repo.state_dir();
    let l = match fix_loop::read(&state) {
        LoopRecord::Absent => return Ok(Exit::Ok),
        LoopRecord::Loop(l) if !l.is_open() => return Ok(Exit::Ok),
        LoopRecord::Loop(l) => l,
        LoopRecord::Unreadable(why) => {
            // Fail closed: a record that exists may be an open loop.
            let log = state.path.clone();
            return decide(run, mode, None, &log, 0, Err(anyhow!("fix loop record unreadable: {why}")));
        }
    };
    let run_dir = l.run_dir_path();
    if let Some(env) = std::env::var_os(store::RUN_DIR_ENV).filter(|v| !v.is_empty()) {
        let same = fix_loop::canonical_run_dir(Path::new(&env)).is_ok_and(|c| c == l.run_dir);
        if !same {
            writeln!(
                run.ctx.stderr,
                "premerge fence: {}={} is ignored: the open loop {} fences with {}",
                store::RUN_DIR_ENV,
                Path::new(&env).display(),
                l.id,
                l.run_dir
            )?;
        }
    }
    // A newer plan in the loop's run directory than the loop recorded is the current one.
    let attempt = match current_attempt(&run_dir) {
        Ok(n) => n.unwrap_or(0).max(l.attempt),
        Err(e) => return decide(run, mode, Some(&l), &run_dir, l.attempt, Err(e)),
    };
    let outcome = allowed_of(&run_dir, attempt, None).map(|set| strays(&run.diff.touched_path_bytes(), &set));
    decide(run, mode, Some(&l), &run_dir, attempt, outcome)
}

fn decide(
    run: &mut HookRun,
    mode: Mode,
    l: Option<&FixLoop>,
    log_dir: &Path,
    attempt: u32,
    outcome: Result<Vec<Vec<u8>>>,
) -> CmdResult {
    let loop_name = l.map_or_else(|| "(unreadable)".to_string(), |l| l.id.clone());
    let (strays, why) = match outcome {
        Ok(s) if s.is_empty() => {
            writeln!(
                run.ctx.stdout,
                "premerge fence: pushed files are inside the plan of attempt {attempt} (fix loop {loop_name})"
            )?;
            return Ok(Exit::Ok);
        }
        Ok(s) => {
            let why = format!("{} pushed path(s) outside fix-waves-{}.json", s.len(), store::nn(attempt));
            (s, why)
        }
        Err(e) => (Vec::new(), format!("no trustworthy wave plan: {e:#}")),
    };
    let shown: Vec<String> = strays.iter().map(|p| display_path_bytes(p)).collect();
    let logged: Vec<String> = strays.iter().map(|p| json_path(p).0).collect();
    let event = crate::events::Event::FencePrePush {
        mode: if mode == Mode::Shadow { Mode::Shadow } else { Mode::Enforce },
        attempt,
        loop_id: loop_name.clone(),
        strays: logged,
        refused: mode == Mode::Enforce,
        why: why.clone(),
    };
    if let Err(e) = store::append_event(log_dir, &event) {
        run.ctx.warn(format!("fence: cannot log the decision: {e:#}"));
    }
    for p in &shown {
        writeln!(run.ctx.stderr, "premerge fence: stray: {p}")?;
    }
    unrepresentable_note(run.ctx.stderr, "premerge fence", &strays)?;
    if mode == Mode::Shadow {
        writeln!(run.ctx.stderr, "premerge fence (shadow, not blocking): would refuse: {why}")?;
        return Ok(Exit::Ok);
    }
    writeln!(run.ctx.stderr, "premerge fence: push refused: {why}")?;
    match l {
        Some(l) => writeln!(
            run.ctx.stderr,
            "premerge fence: fix loop {} is open (run directory {}, attempt {attempt}, opened {})",
            l.id, l.run_dir, l.opened_at
        )?,
        None => writeln!(run.ctx.stderr, "premerge fence: the fix loop record cannot be read, so a loop may be open")?,
    }
    writeln!(
        run.ctx.stderr,
        "premerge fence: to end the loop: premerge loop close; to skip premerge for this push only: PREMERGE=0 git push"
    )?;
    Ok(Exit::Policy)
}
