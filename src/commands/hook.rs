//! `premerge hook pre-push|post-merge`: the entry points the installed shims call.
//!
//! Each hook computes its diff once and hands it to the stages registered here, in
//! order: signals first (the widening scan, the copy detector), whose errors are
//! warnings and never block; then, for pre-push, the commit fence, an authority that
//! decides whether the push goes on.

use anyhow::Result;
use clap::Subcommand;

use super::Ctx;
use crate::config::Config;
use crate::diff::Diff;
use crate::error::{CmdResult, Exit};
use crate::git::{Repo, parse_push_lines};

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
/// diff the hook covers.
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
    let repo = ctx.repo()?;
    let (kind, diff, scope, config) = match cmd {
        Cmd::PrePush { remote, url } => {
            let input = ctx.read_stdin()?;
            let lines = parse_push_lines(&input)?;
            let pushed = lines.iter().filter(|l| !l.is_deletion()).count();
            let ranges = repo.push_ranges(&remote, &lines)?;
            // The settings that judge a push come from the base it is compared against,
            // never from the pushed commits or the working tree.
            let base = ranges.iter().find_map(|r| r.0.clone());
            let config = super::load_config_at(ctx, &repo, base.as_deref())?;
            if !config.bool("hooks.enabled") {
                return Ok(Exit::Ok);
            }
            let diff = repo.diff_ranges(&ranges)?;
            super::fence::note_config_change(ctx, &diff, base.as_deref())?;
            (HookKind::PrePush { remote, url }, diff, format!("{pushed} ref(s)"), config)
        }
        Cmd::PostMerge { squash } => {
            let config = super::load_config(&repo)?;
            if !config.bool("hooks.enabled") {
                return Ok(Exit::Ok);
            }
            let diff = repo.diff_post_merge()?;
            let squash = squash.as_deref() == Some("1");
            (HookKind::PostMerge { squash }, diff, "ORIG_HEAD..HEAD".to_string(), config)
        }
    };
    let (adds, dels) =
        diff.files.iter().fold((0u64, 0u64), |(a, d), f| (a + u64::from(f.additions), d + u64::from(f.deletions)));
    writeln!(
        ctx.stdout,
        "premerge {}: {} file(s) changed in {scope} (+{adds} -{dels})",
        kind.name(),
        diff.files.len()
    )?;
    let mut run = HookRun { ctx, repo: &repo, config: &config, kind, diff: &diff };
    signal(&mut run, "widening scan", super::scan::hook_stage);
    if matches!(run.kind, HookKind::PrePush { .. }) {
        signal(&mut run, "copy detector", super::seams::hook_stage);
        return super::fence::pre_push_stage(&mut run);
    }
    Ok(Exit::Ok)
}

/// Run a signal stage: its failure is a warning, never a blocked hook.
fn signal(run: &mut HookRun, name: &str, stage: fn(&mut HookRun) -> Result<()>) {
    if let Err(e) = stage(run) {
        run.ctx.warn(format!("{name}: {e:#} (signal only: continuing)"));
    }
}
