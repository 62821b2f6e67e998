//! What `premerge install` needs from git: where git looks for hooks, and the local
//! config entries of config-declared hooks.

use std::path::{Path, PathBuf};

use git2::ConfigLevel;

use super::{Repo, Result};

/// Where git runs hooks from, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HooksDir {
    /// The absolute directory.
    pub path: PathBuf,
    /// The `core.hooksPath` value that chose it, `None` for the default
    /// `<git common dir>/hooks` (shared by every worktree of the clone).
    pub hooks_path_config: Option<String>,
}

impl Repo {
    /// The directory git runs hooks from, as `git rev-parse --git-path hooks` resolves
    /// it: `core.hooksPath` when set (`~/` expanded; a relative value is relative to the
    /// top of the working tree hooks run in, or to the git directory of a bare
    /// repository), else the `hooks` directory of the common git directory.
    pub(crate) fn hooks_dir(&self) -> Result<HooksDir> {
        let Some(value) = self.config_string("core.hooksPath")? else {
            return Ok(HooksDir { path: self.common_dir().join("hooks"), hooks_path_config: None });
        };
        let expanded = match value.strip_prefix("~/") {
            Some(rest) => {
                crate::env::process().var_os("HOME").map_or_else(|| PathBuf::from(&value), |h| Path::new(h).join(rest))
            }
            None => PathBuf::from(&value),
        };
        let path = if expanded.is_absolute() {
            expanded
        } else {
            let base = self.workdir().unwrap_or_else(|| self.git_dir());
            base.join(expanded)
        };
        Ok(HooksDir { path: normalise(&path), hooks_path_config: Some(value) })
    }

    /// Every entry of the effective config whose name matches `regex` (git2's syntax),
    /// in the order git reads them.
    pub(crate) fn config_entries(&self, regex: &str) -> Result<Vec<(String, String)>> {
        let cfg = self.inner.config()?;
        let mut out = Vec::new();
        let mut entries = cfg.entries(Some(regex))?;
        while let Some(e) = entries.next() {
            let e = e?;
            // Valueless (git's shorthand for true): git2 panics when asked its value.
            let value = if e.has_value() { e.value() } else { Some("true") };
            if let (Some(name), Some(value)) = (e.name(), value) {
                out.push((name.to_string(), value.to_string()));
            }
        }
        Ok(out)
    }

    /// Set a key in the repository's local config (`.git/config`).
    pub(crate) fn set_local_config(&self, key: &str, value: &str) -> Result<()> {
        let mut cfg = self.inner.config()?.open_level(ConfigLevel::Local)?;
        cfg.set_str(key, value)?;
        Ok(())
    }

    /// Remove a key from the repository's local config; absent keys are fine.
    pub(crate) fn unset_local_config(&self, key: &str) -> Result<bool> {
        let mut cfg = self.inner.config()?.open_level(ConfigLevel::Local)?;
        match cfg.remove(key) {
            Ok(()) => Ok(true),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

/// Drop `.` components and trailing slashes so printed paths are tidy; `..` is kept
/// (resolving it lexically could cross a symbolic link wrongly).
fn normalise(p: &Path) -> PathBuf {
    p.components().filter(|c| !matches!(c, std::path::Component::CurDir)).collect()
}
