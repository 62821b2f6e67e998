//! The command line, as clap derive types. Each subcommand's arguments live beside
//! its implementation in `crate::commands::<name>`; this file lists them and holds the
//! argument types several commands share (`Format`, `RangeArgs`, `RootArgs`), so no
//! command imports another for them.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args as ClapArgs, Parser, Subcommand, ValueEnum};

use crate::commands;
use crate::diff::Diff;
use crate::git::{Detail, Repo};

/// The deterministic controller side of automated review-and-fix loops.
///
/// premerge runs as the pre-push and post-merge hooks of a repository and as steps
/// inside merge pipelines: it diffs with git, records guard memories about removed
/// invariants, routes repeat-finding seams to a step-back, plans fixer waves with one
/// owner per file, fences commits to the plan, halts repeated problem classes and
/// gates an agent's unjustified stop.
///
/// Exit codes: 0 success or allowed; 1 a policy outcome (fence refused, stripe halt,
/// drain halt, gate blocked a push); 2 usage or operational error.
#[derive(Debug, Parser)]
#[command(name = "premerge", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    /// Run as if premerge was started in DIR (like `git -C`).
    #[arg(short = 'C', global = true, value_name = "DIR")]
    pub chdir: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the changes of a range as premerge sees them.
    Diff(commands::diff::Args),
    /// Print the effective configuration and where each value came from.
    Config(commands::config::Args),
    /// Print a shell completion script.
    Completions(commands::completions::Args),
    /// Entry points for git hooks (called by the installed shims).
    #[command(subcommand)]
    Hook(commands::hook::Cmd),
    /// Install premerge's hooks into a repository, chaining any hook already there.
    Install(commands::install::InstallArgs),
    /// Remove premerge's hooks and restore what was there before.
    Uninstall(commands::install::UninstallArgs),
    /// Check what is installed where, and the health of premerge's state.
    Doctor(commands::doctor::Args),
    /// Run every stage on a scratch repository it creates.
    Demo(commands::demo::Args),
    /// Widening scan: find removed invariants in a diff and record guard memories.
    Scan(commands::scan::Args),
    /// Read guard memories back.
    #[command(subcommand)]
    Memory(commands::memory::Cmd),
    /// Review routing: seams and the next step of a review cycle.
    #[command(subcommand)]
    Review(commands::review::Cmd),
    /// Explain why a cap fired, for operators.
    ExplainCap(commands::review::ExplainCapArgs),
    /// Find code a change copies into three or more files.
    Seams(commands::seams::Args),
    /// Plan fixer waves (one owner per file) from findings.
    Plan(commands::plan::Args),
    /// Record what a fixer reported it was blocked on.
    #[command(subcommand)]
    Blocked(commands::blocked::Cmd),
    /// The commit fence: what an attempt may change, and whether it did.
    #[command(subcommand)]
    Fence(commands::fence::Cmd),
    /// Decide whether the fix loop should go on, from blocker fingerprints.
    Converge(commands::converge::Args),
    /// The clone's fix loop: while it is open, the pre-push fence blocks stray paths.
    #[command(subcommand)]
    Loop(commands::fix_loop::Cmd),
    /// Pairs of branches whose changes since the target touch the same path.
    Collisions(commands::collisions::Args),
    /// Render artefacts for reviewers.
    #[command(subcommand)]
    Show(commands::show::Cmd),
    /// Print the JSON Schema of an artefact.
    Schema(commands::schema::Args),
    /// Refinement proposals keyed by stripe.
    #[command(subcommand)]
    Proposal(commands::proposal::Cmd),
    /// Halt when a repeated stripe is pending (writes DRAIN_HALT.md).
    Drain(commands::drain::Args),
    /// The stop gate for coding agents.
    #[command(subcommand)]
    Gate(commands::gate::Cmd),
    /// The background job of the hooks: its state and what it found.
    Status(commands::status::Args),
}

/// Where proposals live, shared by `premerge proposal` and `premerge drain`.
#[derive(Debug, Default, clap::Args)]
pub struct RootArgs {
    /// Proposal root (default: config `proposal.root`, relative to the repository root).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Run directory whose events.jsonl records proposal events.
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
}

/// Output format of commands that print a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
}

/// Which two trees to compare. Shared by every command that takes a range: either
/// `--base/--head` or one positional `A..B` (as git writes ranges), never both.
#[derive(Debug, Clone, Default, ClapArgs)]
pub struct RangeArgs {
    /// A range `A..B` (the same as `--base A --head B`; an empty side is HEAD) or
    /// `A...B` (from the merge base of A and B to B).
    #[arg(value_name = "A..B", conflicts_with_all = ["base", "head", "staged", "worktree"])]
    pub range: Option<String>,
    /// Base revision (any revision git understands). Default: the head's first parent
    /// (the empty tree for a root commit), or HEAD with --staged / --worktree.
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Head revision. Default: HEAD.
    #[arg(long, value_name = "REV", conflicts_with_all = ["staged", "worktree"])]
    pub head: Option<String>,
    /// Compare the index (staged changes) against HEAD.
    #[arg(long, conflicts_with = "worktree")]
    pub staged: bool,
    /// Compare the working tree against HEAD; untracked files count as added.
    #[arg(long)]
    pub worktree: bool,
}

impl RangeArgs {
    /// Compute the diff this range names.
    pub fn diff(&self, repo: &Repo) -> Result<Diff> {
        self.diff_with(repo, Detail::Hunks)
    }

    /// Compute the diff this range names, with only the detail asked for.
    pub(crate) fn diff_with(&self, repo: &Repo, detail: Detail) -> Result<Diff> {
        if let Some(r) = &self.range {
            let (base, head) = resolve_range(repo, r)?;
            return Ok(repo.diff_commits_with(Some(&base), &head, detail)?);
        }
        if self.staged || self.worktree {
            if let Some(b) = &self.base {
                let base = repo.resolve_commit(b)?;
                if repo.head_oid().as_deref() != Some(base.as_str()) {
                    bail!(
                        "--base with --staged or --worktree must be HEAD (the index and working tree compare against HEAD)"
                    );
                }
            }
            return Ok(if self.staged { repo.diff_staged_with(detail)? } else { repo.diff_worktree_with(detail)? });
        }
        let head = repo.resolve_commit(self.head.as_deref().unwrap_or("HEAD"))?;
        let base = match &self.base {
            Some(b) => Some(repo.resolve_commit(b)?),
            None if repo.is_shallow_boundary(&head) => bail!(
                "{head}: this shallow clone's history is cut here, so its parent and its own changes are unknown \
                 (pass --base, or fetch more history: git fetch --deepen=1)"
            ),
            None => repo.resolve_commit(&format!("{head}^")).ok(),
        };
        Ok(repo.diff_commits_with(base.as_deref(), &head, detail)?)
    }
}

/// Resolve a positional range `A..B` or `A...B` to `(base, head)` commit ids. An empty
/// side means HEAD, as in git; `A...B` starts at the merge base of A and B.
pub(crate) fn resolve_range(repo: &Repo, range: &str) -> Result<(String, String)> {
    let bad = || anyhow::anyhow!("range `{range}`: expected A..B or A...B (revisions git understands)");
    let (base, head, symmetric) = if let Some((a, b)) = range.split_once("...") {
        (a, b, true)
    } else if let Some((a, b)) = range.split_once("..") {
        (a, b, false)
    } else {
        return Err(bad());
    };
    if head.contains("..") || (base.is_empty() && head.is_empty()) {
        return Err(bad());
    }
    let or_head = |s: &str| if s.is_empty() { "HEAD".to_string() } else { s.to_string() };
    let head = repo.resolve_commit(&or_head(head))?;
    let base = repo.resolve_commit(&or_head(base))?;
    if symmetric {
        let mb = repo
            .merge_base(&base, &head)?
            .ok_or_else(|| anyhow::anyhow!("range `{range}`: the two sides have no common ancestor"))?;
        return Ok((mb, head));
    }
    Ok((base, head))
}

/// Output format of the commands that report findings or strays (`scan`, `fence
/// check`): their own text and JSON, or SARIF 2.1.0 and GitHub workflow commands
/// (`crate::report`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum FindingsFormat {
    #[default]
    Text,
    Json,
    // No doc comments on the values: clap would list them one per line in `--help`.
    Sarif,
    Github,
}

impl FindingsFormat {
    /// The report format, for the two that [`crate::report::write`] renders.
    pub fn report(self) -> Option<crate::report::Target> {
        match self {
            FindingsFormat::Sarif => Some(crate::report::Target::Sarif),
            FindingsFormat::Github => Some(crate::report::Target::Github),
            FindingsFormat::Text | FindingsFormat::Json => None,
        }
    }
}

/// Output format of `review route`: its JSON decision (the default), or the round's
/// findings and seams as SARIF 2.1.0 or GitHub workflow commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum RouteFormat {
    #[default]
    Json,
    Sarif,
    Github,
}
