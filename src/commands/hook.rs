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
use crate::stage;

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
    let pre_push = matches!(cmd, Cmd::PrePush { .. });
    // Every failure of premerge's own below is one warning line and the git command
    // goes on; only an open fix loop's fence refuses (crate::stage).
    let repo = match stage::catch("repository", || ctx.repo()) {
        Ok(r) => r,
        Err(why) => return Ok(before_fence(ctx, None, None, pre_push, "repository", &why)),
    };
    // What the hook covers. A push's ranges come first: the settings that judge a push
    // are read as of the base it is compared against, never from the pushed commits or
    // the working tree.
    enum Covered {
        Push { remote: String, url: Option<String>, ranges: Vec<crate::git::Range>, pushed: usize },
        Merge { squash: bool },
    }
    let covered = stage::catch("diff", || -> Result<Covered> {
        Ok(match cmd {
            Cmd::PrePush { remote, url } => {
                let input = ctx.read_stdin()?;
                let lines = parse_push_lines(&input)?;
                let pushed = lines.iter().filter(|l| !l.is_deletion()).count();
                let ranges = repo.push_ranges(&remote, &lines)?;
                Covered::Push { remote, url, ranges, pushed }
            }
            Cmd::PostMerge { squash } => Covered::Merge { squash: squash.as_deref() == Some("1") },
        })
    });
    let covered = match covered {
        Ok(c) => c,
        Err(why) => return Ok(before_fence(ctx, Some(&repo), None, pre_push, "diff", &why)),
    };
    let base = match &covered {
        Covered::Push { ranges, .. } => ranges.iter().find_map(|r| r.0.clone()),
        Covered::Merge { .. } => None,
    };
    let config = match stage::catch("configuration", || match &covered {
        Covered::Push { .. } => super::load_config_at(ctx, &repo, base.as_deref()),
        Covered::Merge { .. } => super::load_config(&repo),
    }) {
        Ok(c) => c,
        Err(why) => return Ok(before_fence(ctx, Some(&repo), None, pre_push, "configuration", &why)),
    };
    if !config.bool("hooks.enabled") {
        return Ok(Exit::Ok);
    }
    let computed = stage::catch("diff", || -> Result<(HookKind, Diff, String)> {
        Ok(match covered {
            Covered::Push { remote, url, ranges, pushed } => {
                let diff = repo.diff_ranges(&ranges)?;
                super::fence::note_config_change(ctx, &diff, base.as_deref())?;
                (HookKind::PrePush { remote, url }, diff, format!("{pushed} ref(s)"))
            }
            Covered::Merge { squash } => {
                if squash {
                    // `git merge --squash` commits nothing: its changes are staged.
                    (HookKind::PostMerge { squash }, repo.diff_staged()?, "the squash's staged changes".to_string())
                } else {
                    (HookKind::PostMerge { squash }, repo.diff_post_merge()?, "ORIG_HEAD..HEAD".to_string())
                }
            }
        })
    });
    let (kind, diff, scope) = match computed {
        Ok(v) => v,
        Err(why) => return Ok(before_fence(ctx, Some(&repo), Some(&config), pre_push, "diff", &why)),
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
        // The authority: its own failure refuses while a fix loop is open.
        return match stage::catch("fence", || super::fence::pre_push_stage(&mut run)) {
            Ok(exit) => Ok(exit),
            Err(why) => Ok(before_fence(run.ctx, Some(run.repo), Some(run.config), true, "fence", &why)),
        };
    }
    Ok(Exit::Ok)
}

/// Run a signal stage: its failure (an error or a panic) is one warning line, never
/// a blocked hook.
fn signal(run: &mut HookRun, name: &str, f: fn(&mut HookRun) -> Result<()>) {
    if let Err(why) = stage::catch(name, || f(run)) {
        stage::warn(run.ctx.stderr, name, &why);
    }
}

/// A stage failed before the fence could judge the push: a warning and exit 0, or,
/// while a fix loop is open, the fence's refusal.
fn before_fence(
    ctx: &mut Ctx,
    repo: Option<&Repo>,
    config: Option<&Config>,
    pre_push: bool,
    name: &str,
    why: &str,
) -> Exit {
    if stage::failed_before_fence(ctx.stderr, repo, config, pre_push, name, why) { Exit::Policy } else { Exit::Ok }
}
