//! premerge: the deterministic controller side of automated review-and-fix loops.
//!
//! Pure domain logic lives in one module per domain (`diff`, `widen`, `review`,
//! `waves`, `stripe`, `gate`, ...) and never touches the file system, git, a process
//! or the clock. The edges are `git` (the only module that names git2 types),
//! `store` (every file and table premerge owns: state and run directories, proposals,
//! atomic writes, the lock, SQLite), `exec` (external argv templates) and `commands`
//! (one file per subcommand, importing no other command). `docs/architecture.md`
//! says where code lives.

pub mod canonical;
pub mod cli;
pub mod commands;
pub mod config;
pub(crate) mod config_render;
pub mod context;
pub mod diff;
pub mod env;
pub mod error;
pub mod events;
pub mod exec;
pub mod findings;
pub mod gate;
pub mod git;
pub mod hook;
pub mod input;
pub mod install;
pub mod memory;
pub(crate) mod overview;
pub mod report;
pub mod review;
pub mod scan;
pub mod stage;
pub mod store;
pub mod stripe;
pub mod waves;
pub mod widen;

#[cfg(test)]
mod layering_tests;

/// Version string shown by `--version` and written into hook shims.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");
