//! The stop gate's agent hooks in a settings file (`.claude/settings.json`): reading
//! the file and removing them, shared by `premerge gate uninstall-agent-hook` and
//! `premerge uninstall`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::git::Repo;

/// New settings files are readable by all, like the rest of a working tree.
pub(crate) const SETTINGS_MODE: u32 = 0o644;

/// The settings text (empty when the file does not exist; read through symlinks).
pub(crate) fn read_settings(path: &Path) -> Result<String> {
    Ok(crate::input::read_text_if_present(path, crate::input::Kind::Settings)?.unwrap_or_default())
}

/// Remove premerge's agent hooks from the settings file at `path`.
pub(crate) fn uninstall_at(path: &Path, out: &mut dyn Write) -> Result<()> {
    let existing = read_settings(path)?;
    let (text, n) =
        crate::gate::settings::remove(&existing).map_err(|e| crate::error::input_error(path.display(), e))?;
    if n == 0 {
        writeln!(out, "{}: no premerge agent hook", path.display())?;
    } else {
        crate::install::agent_docs::write_through(path, text.as_bytes(), SETTINGS_MODE)?;
        writeln!(out, "{}: removed {n} premerge agent hook(s)", path.display())?;
    }
    Ok(())
}

/// For `premerge uninstall`: the working tree's `.claude/settings.json` when it has a
/// premerge agent hook.
pub(crate) fn present(repo: &Repo) -> Option<PathBuf> {
    let path = repo.workdir()?.join(".claude").join("settings.json");
    let text = crate::input::read_text(&path, crate::input::Kind::Settings).ok()?;
    crate::gate::settings::installed(&text).then_some(path)
}
