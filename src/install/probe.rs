//! What is on disk at a repository's hooks: the probes `premerge install`,
//! `premerge uninstall` and `premerge doctor` share (which file a hook holds, which
//! manager runs it, whether premerge's shim runs, which git runs).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, anyhow};

use super::managers as mgr;
use super::{
    CONFIG_HOOK_PREFIX, GitVersion, Hook, Manager, Observed, lefthook_old_name, parse_git_version, parse_shim,
    pre_commit_legacy_name, recognise,
};
use crate::git::Repo;

/// Environment variable naming the git executable used for version detection
/// (tests point it at a stand-in that reports another version).
pub(crate) const GIT_ENV: &str = "PREMERGE_GIT";
/// How long `git --version` may take: it answers in milliseconds; a hung wrapper
/// script must not hang the install.
pub(crate) const GIT_VERSION_TIMEOUT: Duration = Duration::from_secs(10);
/// How many bytes of a manager's configuration file premerge reads: far more than any
/// hand-written hook configuration; a larger file is not one.
pub(crate) const MANAGER_CONFIG_MAX_BYTES: u64 = 1 << 20;

/// A manager's configuration file under `root`, when it is a regular file within the limit.
pub(crate) fn read_manager_config(path: &Path) -> Option<String> {
    let meta = fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let bytes = crate::input::read_file(path, crate::input::Kind::Settings, MANAGER_CONFIG_MAX_BYTES).ok()?;
    String::from_utf8(bytes).ok()
}

/// The hook managers whose hook runs at `hook` in `dir`: the hook file's, and the
/// chained file's when premerge's shim chains one.
pub(crate) fn live_managers(dir: &Path, hook: Hook) -> Result<Vec<Manager>> {
    let mut out = Vec::new();
    for name in [hook.name().to_string(), hook.chained_name()] {
        if let Observed::File(b) = observe(&dir.join(name))?
            && let Some(m) = recognise(&b)
        {
            out.push(m);
        }
    }
    Ok(out)
}

/// The configuration files through which `manager` could run premerge for `hook`.
pub(crate) fn manager_configs(repo: &Repo, dir: &Path, manager: Manager, hook: Hook) -> Vec<PathBuf> {
    let root = repo.workdir();
    let under_root = |names: &[&str]| -> Vec<PathBuf> {
        root.as_ref().map(|r| names.iter().map(|n| r.join(n)).collect()).unwrap_or_default()
    };
    match manager {
        Manager::PreCommit | Manager::Prek => under_root(mgr::PRE_COMMIT_CONFIGS),
        Manager::Lefthook => under_root(mgr::LEFTHOOK_CONFIGS),
        // husky v9 runs `<husky dir>/<hook>` for the stub `<husky dir>/_/<hook>`.
        Manager::Husky => match (dir.file_name(), dir.parent()) {
            (Some(n), Some(parent)) if n == "_" => vec![parent.join(hook.name())],
            _ => Vec::new(),
        },
    }
}

/// A hook manager that runs at `hook` and whose configuration runs premerge there,
/// with the file that says so.
pub(crate) fn premerge_runner(repo: &Repo, dir: &Path, hook: Hook) -> Result<Option<(Manager, PathBuf)>> {
    for manager in live_managers(dir, hook)? {
        for file in manager_configs(repo, dir, manager, hook) {
            if read_manager_config(&file).is_some_and(|t| mgr::runs_premerge(&t, hook)) {
                return Ok(Some((manager, file)));
            }
        }
    }
    Ok(None)
}

/// Whether premerge's own shim runs at `hook`: the hook file, pre-commit's or prek's
/// legacy hook, or a config-declared hook.
pub(crate) fn shim_runs(repo: &Repo, dir: &Path, hook: Hook) -> Result<Option<PathBuf>> {
    for name in [hook.name().to_string(), pre_commit_legacy_name(hook)] {
        let path = dir.join(&name);
        if matches!(observe(&path)?, Observed::File(b) if parse_shim(&b).is_some()) {
            if name != hook.name()
                && !matches!(live_managers(dir, hook)?.first(), Some(Manager::PreCommit | Manager::Prek))
            {
                continue;
            }
            return Ok(Some(path));
        }
    }
    if repo.config_string(&format!("hook.{CONFIG_HOOK_PREFIX}{hook}.command"))?.is_some() {
        return Ok(Some(config_shim_path(repo, hook)));
    }
    Ok(None)
}

/// premerge's shim where `lefthook install` moved it (`<hook>.old`, which lefthook
/// never runs), when the hook is lefthook's.
pub(crate) fn shim_moved_by_lefthook(dir: &Path, hook: Hook) -> Result<Option<PathBuf>> {
    let at_hook = observe(&dir.join(hook.name()))?;
    if !matches!(&at_hook, Observed::File(b) if recognise(b) == Some(Manager::Lefthook)) {
        return Ok(None);
    }
    let old = dir.join(lefthook_old_name(hook));
    Ok(matches!(observe(&old)?, Observed::File(b) if parse_shim(&b).is_some()).then_some(old))
}

/// The version of the git premerge would run (`PREMERGE_GIT`, else `git` on PATH).
pub(crate) fn git_version() -> Result<GitVersion> {
    let git = crate::env::process().non_empty(GIT_ENV).unwrap_or("git").to_string();
    let out = crate::exec::run(&[git.clone(), "--version".to_string()], b"", GIT_VERSION_TIMEOUT)
        .map_err(|e| anyhow!("cannot tell git's version: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    parse_git_version(&text)
        .ok_or_else(|| anyhow!("cannot tell git's version: `{git} --version` said {:?}", text.trim()))
}

/// `lstat` a path and read it when it is a regular file.
pub(crate) fn observe(path: &Path) -> Result<Observed> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Observed::Absent),
        Err(e) => return Err(anyhow!("{}: cannot inspect: {e}", path.display())),
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        Ok(Observed::Symlink)
    } else if ft.is_dir() {
        Ok(Observed::Directory)
    } else if ft.is_file() {
        Ok(Observed::File(crate::input::read(path, crate::input::Kind::Hook)?))
    } else {
        Ok(Observed::Special)
    }
}

/// The shims of config-declared hooks live in the state directory (they chain
/// nothing: git runs every configured hook of an event itself).
pub(crate) fn config_shim_path(repo: &Repo, hook: Hook) -> PathBuf {
    repo.state_dir().path.join("hooks").join(hook.name())
}

/// The file in the state directory naming the hooks `premerge install` put premerge
/// on, one per line: how doctor tells a shim another tool removed (`pre-commit
/// install -f` on every hook leaves no other trace) from a hook premerge was never
/// installed on. `premerge uninstall` takes the hooks out again.
pub(crate) const INSTALLED_RECORD: &str = "installed-hooks";
/// How many bytes of [`INSTALLED_RECORD`] are read: it names at most every hook
/// premerge has (a few dozen bytes); a larger file is not premerge's.
const INSTALLED_RECORD_MAX_BYTES: u64 = 4096;

pub(crate) fn installed_record_path(repo: &Repo) -> PathBuf {
    repo.state_dir().path.join(INSTALLED_RECORD)
}

/// The hooks [`INSTALLED_RECORD`] names; none when it is missing or unreadable (a
/// record that cannot be read only costs doctor that one clue).
pub(crate) fn installed_record(repo: &Repo) -> Vec<Hook> {
    let path = installed_record_path(repo);
    let Ok(bytes) = crate::input::read_file(&path, crate::input::Kind::Settings, INSTALLED_RECORD_MAX_BYTES) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut hooks: Vec<Hook> = text.lines().filter_map(|l| Hook::parse(l).ok()).collect();
    hooks.sort();
    hooks.dedup();
    hooks
}

/// Add (`installed`) or take out hooks from [`INSTALLED_RECORD`]; the file is written
/// only when its content changes and removed when it names nothing.
pub(crate) fn update_installed_record(repo: &Repo, hooks: &[Hook], installed: bool) -> Result<()> {
    let before = installed_record(repo);
    let mut after: Vec<Hook> = before.iter().copied().filter(|h| installed || !hooks.contains(h)).collect();
    if installed {
        after.extend_from_slice(hooks);
    }
    after.sort();
    after.dedup();
    if after == before {
        return Ok(());
    }
    let path = installed_record_path(repo);
    if after.is_empty() {
        return match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(anyhow!("{}: cannot remove: {e}", path.display()))
            }
            _ => Ok(()),
        };
    }
    repo.state_dir().ensure()?;
    let text: String = after.iter().map(|h| format!("{h}\n")).collect();
    crate::store::atomic_write(&path, text.as_bytes())
}
