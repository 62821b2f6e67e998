//! `premerge hook pre-push|post-merge`: the entry points the installed shims call.
//!
//! A hook runs, in this order:
//!
//! 1. the results of earlier background work nobody has printed yet (each once);
//! 2. the ranges it covers and their paths-only diff (no rename pairing, no patches);
//! 3. the signals (the widening scan, and for pre-push the copy detector) on a worker
//!    thread, when their estimated cost fits in `hooks.budget_ms`; otherwise, or when
//!    the budget runs out first, they are queued for the background job
//!    ([`super::background`]), which records what they find for the next hook or
//!    `premerge status`. Their errors are warnings and never block;
//! 4. for pre-push, the commit fence on the pushed paths: an authority, always here,
//!    never deferred, which decides whether the push goes on.

use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Subcommand;

use super::Ctx;
use super::background::{self, InHook, Work, Worker};
use crate::config::Config;
use crate::diff::Diff;
use crate::error::{CmdResult, Exit};
use crate::git::{Repo, parse_push_lines};
use crate::store::background::{Background, Range};

/// Environment variable that turns every hook into a no-op (`PREMERGE=0`).
pub const MASTER_SWITCH_ENV: &str = "PREMERGE";

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Called by git's pre-push hook: ref lines on stdin.
    PrePush {
        /// The remote's name (or its URL when pushing to a URL).
        remote: String,
        /// The remote's URL.
        url: Option<String>,
    },
    /// Called by git's post-merge hook: diffs ORIG_HEAD..HEAD.
    PostMerge {
        /// 1 when the merge was a squash merge.
        squash: Option<String>,
    },
    /// The background job the hooks start (runs queued signal work, then exits).
    #[command(hide = true)]
    Background {
        /// Wait for this process (the hook that started the job, git) to exit first.
        #[arg(long, value_name = "PID")]
        after_pid: Vec<u32>,
    },
}

/// Which hook is running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookKind {
    PrePush { remote: String, url: Option<String> },
    PostMerge { squash: bool },
}

impl HookKind {
    pub fn name(&self) -> &'static str {
        match self {
            HookKind::PrePush { .. } => "pre-push",
            HookKind::PostMerge { .. } => "post-merge",
        }
    }
}

/// Everything a hook stage gets: the open repository, the configuration and the
/// diff the hook covers (for the fence: paths only, no hunks).
pub struct HookRun<'a, 'io> {
    pub ctx: &'a mut Ctx<'io>,
    pub repo: &'a Repo,
    pub config: &'a Config,
    pub kind: HookKind,
    pub diff: &'a Diff,
}

/// Whether the master switch is off (`PREMERGE=0`, `false`, `no`, `off`).
pub fn master_switch_off() -> bool {
    std::env::var(MASTER_SWITCH_ENV)
        .map(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "0" | "false" | "no" | "off"))
        .unwrap_or(false)
}

pub fn run(cmd: Cmd, ctx: &mut Ctx) -> CmdResult {
    if master_switch_off() {
        return Ok(Exit::Ok);
    }
    let started = Instant::now();
    if let Cmd::Background { after_pid } = cmd {
        background::run_job(ctx, &after_pid)?;
        return Ok(Exit::Ok);
    }
    let repo = ctx.repo()?;
    let config = super::load_config(&repo)?;
    if !config.bool("hooks.enabled") {
        return Ok(Exit::Ok);
    }
    let bg = Background::new(&repo.state_dir());
    show_background_results(ctx, &bg);

    let work = match cmd {
        Cmd::PrePush { remote, url } => {
            let input = ctx.read_stdin()?;
            let lines = parse_push_lines(&input)?;
            let pushed = lines.iter().filter(|l| !l.is_deletion()).count();
            let mut ranges = Vec::new();
            for line in &lines {
                if let Some((base, head)) = repo.push_range(&remote, line)? {
                    ranges.push(Range { base, head });
                }
            }
            Work { kind: HookKind::PrePush { remote, url }, scope: format!("{pushed} ref(s)"), ranges }
        }
        Cmd::PostMerge { squash } => {
            let squash = squash.as_deref() == Some("1");
            let ranges = repo.post_merge_range()?.map(|(base, head)| Range { base, head }).into_iter().collect();
            Work { kind: HookKind::PostMerge { squash }, scope: "ORIG_HEAD..HEAD".into(), ranges }
        }
        Cmd::Background { .. } => unreachable!("handled above"),
    };
    // Paths only: all the fence reads, and the input of the budget's estimate.
    let paths = background::paths_of(&repo, &work.ranges)?;
    let budget = Duration::from_millis(config.int("hooks.budget_ms"));

    // Stage list: the signals (on a worker, within the budget), then the fence.
    let worker = (paths.files.is_empty() || background::fits(&repo, &config, &work.kind, &paths, budget))
        .then(|| Worker::start(ctx.cwd.clone(), config.clone(), work.clone()));
    let fence = match work.kind {
        HookKind::PrePush { .. } => {
            let cwd = ctx.cwd.clone();
            Some(background::capture(&cwd, |c| {
                let mut run = HookRun { ctx: c, repo: &repo, config: &config, kind: work.kind.clone(), diff: &paths };
                super::fence::pre_push_stage(&mut run)
            }))
        }
        HookKind::PostMerge { .. } => None,
    };
    // An empty range has nothing to defer: the worker answers at once.
    let deadline = if paths.files.is_empty() { started + Duration::from_secs(10) } else { started + budget };
    match worker.map(|w| w.wait_until(deadline)) {
        Some(InHook::Done(out)) => {
            ctx.stdout.write_all(&out.stdout)?;
            ctx.stderr.write_all(&out.stderr)?;
        }
        Some(InHook::Lost) => ctx.warn("signals: stopped without an answer (signal only: continuing)"),
        Some(InHook::OverBudget) | None => defer(ctx, &repo, &bg, &work, &paths, budget)?,
    }
    if let Err(e) = resume_interrupted(ctx, &bg) {
        ctx.warn(format!("background job: {e:#}"));
    }
    match fence {
        None => Ok(Exit::Ok),
        Some((out, result)) => {
            ctx.stdout.write_all(&out.stdout)?;
            ctx.stderr.write_all(&out.stderr)?;
            result
        }
    }
}

/// Queue the signal work for the background job and say so in one line.
fn defer(ctx: &mut Ctx, repo: &Repo, bg: &Background, work: &Work, paths: &Diff, budget: Duration) -> Result<()> {
    let n = paths.touched_paths().len();
    match background::defer(repo, bg, &ctx.cwd, work) {
        Ok(()) => writeln!(
            ctx.stdout,
            "premerge {}: {n} path(s) changed in {}; signals continue in the background (over hooks.budget_ms = {} ms): \
             the next hook or `premerge status` prints what they find",
            work.kind.name(),
            work.scope,
            budget.as_millis()
        )?,
        Err(e) => ctx.warn(format!("background job: {e:#} (signal only: continuing; PREMERGE=0 skips the hooks)")),
    }
    Ok(())
}

/// Entries left by a job that was killed: start a job for them.
fn resume_interrupted(ctx: &Ctx, bg: &Background) -> Result<()> {
    if bg.pending_count()? > 0 {
        background::ensure_job(bg, &ctx.cwd)?;
    }
    Ok(())
}

/// Print what earlier background work found and nobody has printed yet.
fn show_background_results(ctx: &mut Ctx, bg: &Background) {
    match bg.claim_results() {
        Ok(results) => {
            if let Err(e) = background::print_results(ctx.stdout, ctx.stderr, &results) {
                ctx.warn(format!("background job: cannot print its results: {e}"));
            }
        }
        Err(e) => ctx.warn(format!("background job: cannot read its results: {e:#} (signal only: continuing)")),
    }
}

/// Run a signal stage: its failure is a warning, never a blocked hook.
pub(crate) fn signal(run: &mut HookRun, name: &str, stage: fn(&mut HookRun) -> Result<()>) {
    if let Err(e) = stage(run) {
        run.ctx.warn(format!("{name}: {e:#} (signal only: continuing)"));
    }
}
