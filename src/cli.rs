//! The command line, as clap derive types. Each subcommand's arguments live beside
//! its implementation in `crate::commands::<name>`; this file only lists them.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::commands;

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
