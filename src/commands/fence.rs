//! `premerge fence allowed|check` (the pre-push fence stage is
//! `crate::hook::stages::pre_push_fence`): what an attempt may change, derived from
//! `fix-waves-NN.json` alone, and whether a change stayed inside.
//!
//! The fence fails closed: a missing, unreadable, truncated or schema-invalid plan
//! refuses (exit 1 for `check` and for an enforcing pre-push hook). It is an authority
//! with a mode (`fence.mode`: off | shadow | enforce); shadow decides and logs to the
//! run directory's `events.jsonl`, never blocking.

use std::path::PathBuf;

use anyhow::Result;

use super::Ctx;
use crate::diff::json_path;
use crate::error::{CmdResult, Exit};
use crate::store;
use crate::store::fence_plan::allowed_of;
use crate::waves::fence::{display_path_bytes, strays, unrepresentable_note};

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
    /// Output format of the strays (sarif: code scanning; github: annotations); exit code alike.
    //
    // `stray:` lines, one JSON line, a SARIF 2.1.0 log or GitHub workflow commands, one
    // result per stray path (rule `fence-stray-path`); stderr and the exit code are the
    // same in every format.
    #[arg(long, value_enum, default_value_t)]
    pub format: crate::cli::FindingsFormat,
}

pub fn run(cmd: Cmd, ctx: &mut Ctx) -> CmdResult {
    match cmd {
        Cmd::Allowed(a) => run_allowed(a, ctx),
        Cmd::Check(a) => run_check(a, ctx),
    }
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
            // Every changed path is refused; the machine formats name each one.
            if a.format != crate::cli::FindingsFormat::Text {
                print_strays(ctx, &a, &changed, &changed, &scope_of(&a), true)?;
            }
            record_check(ctx, &run_dir, &a, changed.len(), &changed, true);
            return Ok(Exit::Policy);
        }
    };
    let stray = strays(&changed, &set);
    let scope = scope_of(&a);
    print_strays(ctx, &a, &changed, &stray, &scope, false)?;
    record_check(ctx, &run_dir, &a, changed.len(), &stray, false);
    if stray.is_empty() {
        return Ok(Exit::Ok);
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

/// Append the check's result to the run directory's `events.jsonl` (a `fence_check`
/// event), for the reviewer's comment. The fence has decided either way: a log that
/// cannot be written is a warning, never another outcome.
fn record_check(
    ctx: &mut Ctx,
    run_dir: &camino::Utf8Path,
    a: &CheckArgs,
    changed: usize,
    stray: &[Vec<u8>],
    no_plan: bool,
) {
    let event = crate::events::Event::FenceCheck {
        attempt: a.attempt,
        owner: a.owner.clone(),
        changed,
        strays: stray.iter().map(|p| json_path(p).0).collect(),
        refused: no_plan || !stray.is_empty(),
        plan: if no_plan { "untrustworthy" } else { "ok" }.to_string(),
    };
    let dir = run_dir.as_std_path();
    // A run directory that does not exist is not made for this (a mistyped --run-dir).
    if !dir.is_dir() {
        return;
    }
    let written = store::RunLock::acquire(dir).and_then(|_lock| store::append_event(dir, &event));
    if let Err(e) = written {
        ctx.warn(format!("fence: the result was not recorded in {run_dir}/events.jsonl: {e:#}"));
    }
}

/// `attempt 2`, or `owner w01-01 of attempt 2` with `--owner`.
fn scope_of(a: &CheckArgs) -> String {
    match &a.owner {
        Some(o) => format!("owner {o} of attempt {}", a.attempt),
        None => format!("attempt {}", a.attempt),
    }
}

/// The check's result on stdout in the format asked for. `no_plan`: there was no
/// trustworthy plan, and `stray` is every changed path.
fn print_strays(
    ctx: &mut Ctx,
    a: &CheckArgs,
    changed: &[Vec<u8>],
    stray: &[Vec<u8>],
    scope: &str,
    no_plan: bool,
) -> Result<()> {
    use crate::cli::FindingsFormat;
    if let Some(target) = a.format.report() {
        return crate::report::write(ctx.stdout, target, &crate::report::from_strays(stray, scope, no_plan));
    }
    match a.format {
        FindingsFormat::Json => {
            let out = serde_json::json!({
                "schema_version": 1,
                "attempt": a.attempt,
                "owner": a.owner,
                "changed": changed.len(),
                "strays": stray.iter().map(|p| json_path(p).0).collect::<Vec<_>>(),
                "refused": no_plan || !stray.is_empty(),
                "plan": if no_plan { "untrustworthy" } else { "ok" },
            });
            ctx.stdout.write_all(crate::canonical::to_line(&out)?.as_bytes())?;
        }
        _ if stray.is_empty() => {
            writeln!(ctx.stdout, "fence: ok: {} changed path(s) inside the allowed set of {scope}", changed.len())?;
        }
        _ => {
            for p in stray {
                writeln!(ctx.stdout, "stray: {}", display_path_bytes(p))?;
            }
        }
    }
    Ok(())
}

/// A fence violation is a stripe (`premerge`, `fence_violation`, keyed by the stray
/// paths): the first one opens a proposal, the same strays again while it is open are
/// a repeat for a human. The fence has refused either way; this only records the class.
/// Rows are named after the observation (attempt and path), so checking unchanged
/// state again records nothing new.
fn record_violation_stripe(ctx: &mut Ctx, run_dir: &camino::Utf8Path, attempt: u32, stray: &[String]) {
    let Ok(repo) = ctx.repo() else { return };
    let Ok(cfg) = super::load_config(&repo) else { return };
    let nn = store::nn(attempt);
    let rows: Vec<serde_json::Value> =
        stray.iter().map(|p| serde_json::json!({"id": format!("attempt-{nn}:stray:{p}"), "path": p})).collect();
    if let Some(o) = crate::stripe::emit::emit_own_signal(
        ctx,
        &repo,
        &cfg,
        run_dir.as_std_path(),
        "premerge",
        "fence_violation",
        &rows,
    ) {
        let _ = writeln!(
            ctx.stderr,
            "premerge: fence: stripe {}",
            crate::canonical::to_compact(&o.to_json()).unwrap_or_default()
        );
    }
}
