//! `premerge hook pre-push|post-merge`: the entry points the installed shims call.
//!
//! A hook runs, in this order:
//!
//! 1. the results of earlier background work nobody has printed yet (each once);
//! 2. the ranges it covers and their paths-only diff (no rename pairing, no patches);
//! 3. the signals (the widening scan, and for pre-push the copy detector) on a worker
//!    thread, when their estimated cost fits in `hooks.budget_ms`; otherwise, or when
//!    the budget runs out first, they are queued for the background job
//!    ([`crate::hook::background`]), which records what they find for the next hook or
//!    `premerge status`. Their errors are warnings and never block;
//! 4. for pre-push, the commit fence on the pushed paths: an authority, always here,
//!    never deferred, which decides whether the push goes on.

use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Subcommand;

use super::Ctx;
use crate::config::Config;
use crate::diff::Diff;
use crate::error::{CmdResult, Exit};
use crate::git::{PushLine, Repo, parse_push_lines};
use crate::hook::background::{self, InHook, Work, Worker};
use crate::hook::{HookKind, HookRun, master_switch_off, signal};
use crate::stage;
use crate::store::background::{Background, Range};
use crate::store::fix_loop::{self, LoopPlace};

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

pub fn run(cmd: Cmd, ctx: &mut Ctx) -> CmdResult {
    if master_switch_off() {
        return Ok(Exit::Ok);
    }
    let started = Instant::now();
    if let Cmd::Background { after_pid } = cmd {
        if let Err(why) = stage::catch("background job", || background::run_job(ctx, &after_pid)) {
            stage::warn(ctx.stderr, "background job", &why);
        }
        return Ok(Exit::Ok);
    }
    let pre_push = matches!(cmd, Cmd::PrePush { .. });
    // The fix loop is looked up through the `git` executable before libgit2 opens
    // anything: where libgit2 cannot open a repository git reads (reftable, SHA-256,
    // extensions.partialClone), an open loop must still refuse the push it cannot see.
    let located = if pre_push { crate::git::locate::locate(&ctx.cwd) } else { None };
    let early_place = located.as_ref().map(LoopPlace::of_located);
    if let Some(why) = early_place.as_ref().and_then(|p| fix_loop::state_path_problem(&p.state)) {
        // Nothing premerge keeps can be there: one line, and the git command goes on.
        writeln!(ctx.stderr, "premerge: state: {why} (move it aside to use premerge; PREMERGE=0 skips premerge)")?;
        return Ok(Exit::Ok);
    }
    // Every failure of premerge's own below is one warning line and the git command
    // goes on; only an open fix loop's fence refuses (crate::stage).
    let repo = match stage::catch("repository", || ctx.repo()) {
        Ok(r) => r,
        // The error names the format git met where git reads what libgit2 cannot
        // (`GitError::UnsupportedFormat`).
        Err(why) => {
            // Where git reads what libgit2 cannot, an open loop's fence still judges the
            // push, through git alone.
            if let (Some(place), Cmd::PrePush { remote, .. }) = (early_place.as_ref(), &cmd) {
                match stage::catch("fence", || {
                    crate::hook::stages::pre_push_fence_through_git(ctx, place, remote, &why)
                }) {
                    Ok(Some(exit)) => return Ok(exit),
                    Ok(None) => {}
                    Err(fence_why) => return Ok(before_fence(ctx, Some(place), None, true, "fence", &fence_why)),
                }
            }
            return Ok(before_fence(ctx, early_place.as_ref(), None, pre_push, "repository", &why));
        }
    };
    let place = LoopPlace::of_repo(&repo);
    if let Some(why) = fix_loop::state_path_problem(&place.state) {
        writeln!(ctx.stderr, "premerge: state: {why} (move it aside to use premerge; PREMERGE=0 skips premerge)")?;
        return Ok(Exit::Ok);
    }
    // What the hook covers. A push's ranges come first: the settings that judge a push
    // are read as of the base it is compared against, never from the pushed commits or
    // the working tree.
    enum Covered {
        Push { remote: String, url: Option<String>, ranges: Vec<Range>, pushed: usize, lines: Vec<PushLine> },
        Merge { squash: bool },
    }
    let covered = stage::catch("diff", || -> Result<Covered> {
        Ok(match cmd {
            Cmd::PrePush { remote, url } => {
                let input = ctx.read_stdin(crate::input::Kind::PrePushLines)?;
                let lines = parse_push_lines(&input)?;
                let pushed = lines.iter().filter(|l| !l.is_deletion()).count();
                let ranges =
                    repo.push_ranges(&remote, &lines)?.into_iter().map(|(base, head)| Range { base, head }).collect();
                Covered::Push { remote, url, ranges, pushed, lines }
            }
            Cmd::PostMerge { squash } => Covered::Merge { squash: squash.as_deref() == Some("1") },
            Cmd::Background { .. } => unreachable!("handled above"),
        })
    });
    let covered = match covered {
        Ok(c) => c,
        Err(why) => return Ok(before_fence(ctx, Some(&place), None, pre_push, "diff", &why)),
    };
    let base = match &covered {
        Covered::Push { ranges, .. } => ranges.iter().find_map(|r| r.base.clone()),
        Covered::Merge { .. } => None,
    };
    let config = match stage::catch("configuration", || match &covered {
        Covered::Push { .. } => super::load_config_at(ctx, &repo, base.as_deref()),
        Covered::Merge { .. } => super::load_config(&repo),
    }) {
        Ok(c) => c,
        Err(why) => return Ok(before_fence(ctx, Some(&place), None, pre_push, "configuration", &why)),
    };
    if !config.hooks.enabled {
        return Ok(Exit::Ok);
    }
    let bg = Background::new(&repo.state_dir());
    show_background_results(ctx, &bg);
    if let Covered::Merge { squash: true } = covered {
        // `git merge --squash` commits nothing: its changes are staged, and a queued
        // entry holds commit ranges only, so the squash is scanned here.
        return Ok(squash_merge(ctx, &repo, &config));
    }

    // Paths only: all the fence reads, and the input of the budget's estimate.
    let computed = stage::catch("diff", || -> Result<(Work, Diff)> {
        Ok(match covered {
            Covered::Push { remote, url, ranges, pushed, lines } => {
                let paths = background::paths_of(&repo, &ranges)?;
                crate::hook::stages::note_config_change(ctx, &paths, base.as_deref())?;
                let kind = HookKind::PrePush { remote, url, lines };
                (Work { kind, scope: format!("{pushed} ref(s)"), ranges }, paths)
            }
            Covered::Merge { squash } => {
                let ranges: Vec<Range> =
                    repo.post_merge_range()?.map(|(base, head)| Range { base, head }).into_iter().collect();
                let paths = background::paths_of(&repo, &ranges)?;
                (Work { kind: HookKind::PostMerge { squash }, scope: "ORIG_HEAD..HEAD".into(), ranges }, paths)
            }
        })
    });
    let (work, paths) = match computed {
        Ok(v) => v,
        Err(why) => return Ok(before_fence(ctx, Some(&place), Some(&config), pre_push, "diff", &why)),
    };
    let budget = Duration::from_millis(config.hooks.budget_ms);

    // Stage list: the signals (on a worker, within the budget), then the fence.
    let worker = (paths.files.is_empty() || background::fits(&repo, &config, &work.kind, &paths, budget))
        .then(|| Worker::start(ctx.cwd.clone(), config.clone(), work.clone()));
    let fence = match work.kind {
        HookKind::PrePush { .. } => {
            let cwd = ctx.cwd.clone();
            Some(background::capture(&cwd, |c| {
                let mut run = HookRun { ctx: c, repo: &repo, config: &config, kind: work.kind.clone(), diff: &paths };
                // The authority: its own failure refuses while a fix loop is open.
                Ok(stage::catch("fence", || crate::hook::stages::pre_push_fence(&mut run)))
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
        Some(InHook::Lost) => stage::warn(ctx.stderr, "signals", "stopped without an answer"),
        Some(InHook::OverBudget) | None => defer(ctx, &repo, &bg, &work, &paths, budget)?,
    }
    if let Err(e) = resume_interrupted(ctx, &bg) {
        stage::warn(ctx.stderr, "background job", &format!("{e:#}"));
    }
    match fence {
        None => Ok(Exit::Ok),
        Some((out, result)) => {
            ctx.stdout.write_all(&out.stdout)?;
            ctx.stderr.write_all(&out.stderr)?;
            match result {
                Ok(Ok(exit)) => Ok(exit),
                Ok(Err(why)) => Ok(before_fence(ctx, Some(&place), Some(&config), true, "fence", &why)),
                Err(e) => Ok(before_fence(ctx, Some(&place), Some(&config), true, "fence", &format!("{e:#}"))),
            }
        }
    }
}

/// A squash merge's staged changes, diffed and scanned in the hook. Never blocks.
fn squash_merge(ctx: &mut Ctx, repo: &Repo, config: &Config) -> Exit {
    let diff = match stage::catch("diff", || Ok(repo.diff_staged()?)) {
        Ok(d) => d,
        Err(why) => {
            stage::warn(ctx.stderr, "diff", &why);
            return Exit::Ok;
        }
    };
    let (adds, dels) =
        diff.files.iter().fold((0u64, 0u64), |(a, d), f| (a + u64::from(f.additions), d + u64::from(f.deletions)));
    let _ = writeln!(
        ctx.stdout,
        "premerge post-merge: {} file(s) changed in the squash's staged changes (+{adds} -{dels})",
        diff.files.len()
    );
    let mut run = HookRun { ctx, repo, config, kind: HookKind::PostMerge { squash: true }, diff: &diff };
    signal(&mut run, "widening scan", crate::hook::stages::widening_scan);
    Exit::Ok
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

/// A stage failed before the fence could judge the push: a warning and exit 0, or,
/// while a fix loop is open, the fence's refusal.
fn before_fence(
    ctx: &mut Ctx,
    place: Option<&LoopPlace>,
    config: Option<&Config>,
    pre_push: bool,
    name: &str,
    why: &str,
) -> Exit {
    if stage::failed_before_fence(ctx.stderr, place, config, pre_push, name, why) { Exit::Policy } else { Exit::Ok }
}
