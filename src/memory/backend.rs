//! Where guard memories go besides the embedded store: the memory CLI the source names
//! (`vipune`), offered by `premerge install` when it is on `PATH` and reported by
//! `premerge doctor`. Sending is `crate::scan`'s (the `memory.backend_command` template).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The memory CLI the guard-memory source names; its `add` takes the text, a memory
/// type and metadata.
pub(crate) const VIPUNE: &str = "vipune";

/// The `memory.backend_command` premerge offers for `vipune`: one guard memory per
/// `add`, typed `guard`, the canonical metadata beside it (docs/scan.md).
pub(crate) const VIPUNE_TEMPLATE: &[&str] = &["vipune", "add", "{text}", "--memory-type", "guard", "-m", "{metadata}"];

/// The first executable file `name` in the directories of `path` (a `PATH` value).
pub(crate) fn on_path(path: Option<&std::ffi::OsStr>, name: &str) -> Option<PathBuf> {
    std::env::split_paths(path?).map(|d| d.join(name)).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The command that sends guard memories to `vipune` too, as a person types it.
pub(crate) fn vipune_config_command() -> String {
    let json = serde_json::to_string(VIPUNE_TEMPLATE).unwrap_or_default();
    format!("git config premerge.memory.backendCommand '{json}'")
}

/// Where guard memories go, in one line for `doctor`: the embedded store always, the
/// configured backend when there is one, and an offer when `vipune` is on `PATH` but
/// not configured.
pub(crate) fn describe(backend: &[String], vipune: Option<&Path>) -> String {
    let mut s = String::from("guard memories: the embedded store");
    if !backend.is_empty() {
        let shown: Vec<String> = backend.iter().map(|a| crate::input::escape_for_message(a)).collect();
        s.push_str(&format!(", and memory.backend_command `{}`", shown.join(" ")));
    } else if let Some(v) = vipune {
        s.push_str(&format!(
            " only ({VIPUNE} is installed at {}; to send them there too: {})",
            v.display(),
            vipune_config_command()
        ));
    } else {
        s.push_str(" only (no memory.backend_command)");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offer_is_the_documented_template_and_found_on_path() {
        assert_eq!(
            vipune_config_command(),
            r#"git config premerge.memory.backendCommand '["vipune","add","{text}","--memory-type","guard","-m","{metadata}"]'"#
        );
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("vipune");
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        assert_eq!(on_path(Some(d.path().as_os_str()), VIPUNE), None, "not executable yet");
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(on_path(Some(d.path().as_os_str()), VIPUNE), Some(bin.clone()));
        assert!(describe(&[], Some(&bin)).contains("to send them there too: git config"));
        let configured: Vec<String> = VIPUNE_TEMPLATE.iter().map(|s| s.to_string()).collect();
        assert!(describe(&configured, Some(&bin)).contains("and memory.backend_command `vipune add {text}"));
        assert!(describe(&[], None).ends_with("only (no memory.backend_command)"));
    }
}
