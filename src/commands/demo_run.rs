//! What a demo stage works on ([`DemoRun`]): the scratch repository, its run
//! directory, and the demo's streams. Shared by every command's `demo_stage`.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use super::Ctx;
use crate::error::CmdResult;
use crate::git::Repo;

/// A demo stage: one area shown on the scratch repository.
pub(crate) type DemoStage = fn(&mut DemoRun) -> Result<()>;

/// What a demo stage works on.
pub(crate) struct DemoRun<'a, 'io> {
    pub ctx: &'a mut Ctx<'io>,
    /// The scratch repository's working tree.
    pub root: PathBuf,
    /// The pipeline run directory the stages share.
    pub run_dir: PathBuf,
}

impl DemoRun<'_, '_> {
    /// Open the scratch repository.
    pub(crate) fn repo(&self) -> Result<Repo> {
        Ok(Repo::discover(&self.root)?)
    }

    /// Write a file (creating parent directories) in the scratch working tree.
    pub(crate) fn write(&self, rel: &str, text: &str) -> Result<()> {
        write_file(&self.root, rel, text)
    }

    /// Commit every change in the scratch working tree.
    pub(crate) fn commit(&self, message: &str) -> Result<String> {
        Ok(self.repo()?.commit_all(message)?)
    }

    /// A `Ctx` for running another command in-process inside the scratch repository,
    /// with `stdin` as its standard input and output going to the demo's stdout.
    pub(crate) fn with_ctx<T>(&mut self, stdin: &[u8], f: impl FnOnce(&mut Ctx) -> Result<T>) -> Result<T> {
        let mut input = stdin;
        let mut sub = Ctx {
            cwd: self.root.clone(),
            stdin: &mut input,
            stdout: self.ctx.stdout,
            stderr: self.ctx.stderr,
            env: self.ctx.env,
        };
        f(&mut sub)
    }

    /// Run another command in-process through the dispatcher, as `premerge <argv...>`
    /// in the scratch repository: a stage runs other commands without importing them.
    pub(crate) fn cli(&mut self, stdin: &[u8], argv: &[&str]) -> CmdResult {
        let cli =
            <crate::cli::Cli as clap::Parser>::try_parse_from(std::iter::once("premerge").chain(argv.iter().copied()))
                .with_context(|| format!("demo: premerge {}", argv.join(" ")))?;
        self.with_ctx(stdin, |c| super::dispatch(cli, c))
    }

    /// Print a line of the demo's narrative.
    pub(crate) fn say(&mut self, line: impl std::fmt::Display) -> Result<()> {
        writeln!(self.ctx.stdout, "{line}")?;
        Ok(())
    }
}

pub(super) fn write_file(root: &Path, rel: &str, text: &str) -> Result<()> {
    let p = root.join(rel);
    if let Some(parent) = p.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::write(&p, text).with_context(|| format!("{}: cannot write", p.display()))
}
