//! What every command and every area below the commands runs against: the command
//! context ([`Ctx`]: its directory, standard streams and environment snapshot) and the
//! loaders of the effective configuration. It lives below `crate::commands` so the
//! hooks, the scan, the stripes and the gate use it without naming a command module
//! (`src/layering_tests.rs` keeps it so).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::config::Config;
use crate::git::Repo;

/// What a command runs against: its directory and its standard streams.
pub struct Ctx<'a> {
    /// The directory the command runs in (`-C`, else the process's).
    pub cwd: PathBuf,
    pub stdin: &'a mut dyn Read,
    pub stdout: &'a mut dyn Write,
    pub stderr: &'a mut dyn Write,
    /// The environment snapshot `main` took ([`crate::env`]): commands read variables
    /// here, never from the process.
    pub env: &'a crate::env::Env,
}

impl Ctx<'_> {
    /// Open the repository the command runs in (honours `GIT_DIR` as git's hooks set it).
    pub fn repo(&self) -> Result<Repo> {
        Ok(Repo::open_for_command(&self.cwd)?)
    }

    /// Read all of stdin as UTF-8.
    /// Read all of stdin as UTF-8, at most the limit of `kind` (src/input.rs): stdin
    /// from `/dev/zero` is refused at the limit, never read without end.
    pub(crate) fn read_stdin(&mut self, kind: crate::input::Kind) -> Result<String> {
        Ok(crate::input::read_stream_text(&mut self.stdin, kind, kind.default_limit())?)
    }

    /// The pipeline run directory: `--run-dir` (relative to the command's directory),
    /// else `PREMERGE_RUN_DIR` (likewise), else the run directory of this worktree's
    /// latest fix loop, else `<state>/run/`. A UTF-8 path (premerge writes it into
    /// events and artefacts): one that is not is an error naming it.
    pub fn run_dir(&self, repo: &Repo, explicit: Option<&Path>) -> Result<camino::Utf8PathBuf> {
        let place = crate::store::fix_loop::LoopPlace::of_repo(repo);
        let dir = crate::store::fix_loop::resolve_run_dir(&place, explicit);
        let dir = if dir.is_absolute() { dir } else { self.cwd.join(dir) };
        crate::store::run_dir::utf8_path(dir, "run directory")
    }

    /// The run directory of a command: `--run-dir`, else the environment, else the default.
    pub(crate) fn run_dir_of(&self, explicit: Option<&Path>) -> Result<camino::Utf8PathBuf> {
        self.run_dir(&self.repo()?, explicit)
    }

    /// Print a warning line `premerge: warning: ...` on stderr.
    pub fn warn(&mut self, msg: impl std::fmt::Display) {
        let _ = writeln!(self.stderr, "premerge: warning: {msg}");
    }
}

/// Load the effective configuration of a repository: `premerge.toml` at the root of
/// its working tree, `premerge.*` git config, and the process environment.
pub(crate) fn load_config(repo: &Repo) -> Result<Config> {
    let file = match repo.workdir() {
        Some(root) => read_config_file(&root.join(crate::config::config_file()))?,
        None => None,
    };
    let entries = repo.premerge_config_entries()?;
    let env = |k: &str| crate::env::process().lookup(k);
    Ok(Config::load(file.as_ref().map(|t| (crate::config::CONFIG_FILE_NAME, t.as_str())), &entries, &env)?)
}

/// The configuration a pre-push hook runs with: `premerge.toml` as of `base` (the
/// commit the push is compared against, already on the remote), never the pushed
/// commits or the working tree, so a push cannot switch off the fence that judges it;
/// then `premerge.*` git config and the environment, which stay trusted. No base (a
/// first push of a root) means no file. A file at the base that cannot be read or
/// parsed is reported and skipped: the defaults are the strictest settings.
pub(crate) fn load_config_at(ctx: &mut Ctx, repo: &Repo, base: Option<&str>) -> Result<Config> {
    let entries = repo.premerge_config_entries()?;
    let env = |k: &str| crate::env::process().lookup(k);
    let text = match base {
        None => None,
        Some(b) => match repo.file_at(b, crate::config::CONFIG_FILE_NAME) {
            Ok(None) => None,
            Ok(Some(bytes)) => match String::from_utf8(bytes) {
                Ok(t) => Some(t),
                Err(_) => {
                    ctx.warn(format!("premerge.toml at {b}: not UTF-8; using the defaults"));
                    None
                }
            },
            Err(e) => {
                ctx.warn(format!("premerge.toml at {b}: cannot read: {e}; using the defaults"));
                None
            }
        },
    };
    let label = base.map(|b| format!("premerge.toml at {}", &b[..b.len().min(12)]));
    if let (Some(t), Some(l)) = (&text, &label) {
        match Config::load(Some((l.as_str(), t.as_str())), &entries, &env) {
            Ok(c) => return Ok(c),
            Err(e) => ctx.warn(format!("{e}; using the defaults")),
        }
    }
    Ok(Config::load(None, &entries, &env)?)
}

/// Configuration outside any repository: defaults and the environment only.
pub(crate) fn load_config_without_repo() -> Result<Config> {
    let env = |k: &str| crate::env::process().lookup(k);
    Ok(Config::load(None, &[], &env)?)
}

fn read_config_file(path: &Path) -> Result<Option<String>> {
    // Only a regular file under the configuration limit: a committed `premerge.toml`
    // that is a FIFO or a symlink to a device must not hang or flood every command.
    Ok(crate::input::read_text_if_present(path, crate::input::Kind::Config)?)
}
