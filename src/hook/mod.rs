//! What every hook stage shares: which hook runs ([`HookKind`]), what a stage gets
//! ([`HookRun`]), how a signal stage fails ([`signal`]: one warning, never a blocked
//! hook), and the master switch (`PREMERGE=0`). The stage list itself is
//! `commands/hook.rs`; the stages themselves are [`stages`].

pub mod background;
pub mod stages;

use anyhow::Result;

use crate::config::Config;
use crate::context::Ctx;
use crate::diff::Diff;
use crate::git::{PushLine, Repo};
use crate::stage;

/// Environment variable that turns every hook into a no-op (`PREMERGE=0`).
pub(crate) const MASTER_SWITCH_ENV: &str = "PREMERGE";

/// Which hook is running (for pre-push, with git's ref lines as the hook read them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookKind {
    PrePush { remote: String, url: Option<String>, lines: Vec<PushLine> },
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
pub(crate) fn master_switch_off() -> bool {
    crate::env::process()
        .var(MASTER_SWITCH_ENV)
        .is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "0" | "false" | "no" | "off"))
}

/// A signal stage: reports what it finds, never decides.
pub(crate) type SignalStage = fn(&mut HookRun) -> Result<()>;

/// Run a signal stage: its failure (an error or a panic) is one warning line, never
/// a blocked hook.
pub fn signal(run: &mut HookRun, name: &str, f: SignalStage) {
    if let Err(why) = stage::catch(name, || f(run)) {
        stage::warn(run.ctx.stderr, name, &why);
    }
}
