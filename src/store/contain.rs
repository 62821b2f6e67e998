//! Containment of write roots that come from repository content.
//!
//! A proposal root or signal root named by a committed `premerge.toml`, or reached
//! through a committed symlink (`docs/proposals -> /elsewhere`, `.premerge -> /tmp`),
//! is repository content: anyone who can land a commit chooses it, and a pull is
//! enough for the hooks to write there. Such a root must resolve inside the work tree
//! or the state directory. A root outside is accepted only when the user gave it: on
//! the command line, in git config or in the environment (the configuration records
//! each value's source).
//!
//! Resolution is what the kernel will do when premerge writes: the real path of the
//! deepest existing ancestor, then the remaining components, each symlink followed
//! where it is met (also a dangling one, whose target the write would create), and
//! `..` taken after the symlinks before it, never lexically across one.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use anyhow::{Result, anyhow};

use crate::config::{Config, Source};
use crate::git::Repo;
use crate::input::escape_for_message;

/// How many symlinks a resolution follows before it gives up (Linux's own limit).
const MAX_SYMLINKS: usize = 40;

/// Where `path` leads when written to: every symlink on the way followed, `.` and `..`
/// taken in order after them. A relative `path` is taken from the current directory.
pub(crate) fn resolve(path: &Path) -> Result<PathBuf> {
    let mut todo: VecDeque<OsString> = VecDeque::new();
    let mut cur = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        std::env::current_dir().map_err(|e| anyhow!("cannot read the current directory: {e}"))?
    };
    push_front(&mut todo, path, &mut cur);
    let mut hops = 0;
    while let Some(c) = todo.pop_front() {
        if c == ".." {
            cur.pop();
            continue;
        }
        let next = cur.join(&c);
        match std::fs::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_SYMLINKS {
                    return Err(anyhow!("{}: more than {MAX_SYMLINKS} symlinks", shown(path)));
                }
                let target =
                    std::fs::read_link(&next).map_err(|e| anyhow!("{}: cannot read link: {e}", shown(&next)))?;
                // A relative target is taken from the link's directory, `cur`.
                push_front(&mut todo, &target, &mut cur);
            }
            _ => cur = next,
        }
    }
    Ok(cur)
}

/// Queue the components of `p` before what is left; an absolute `p` restarts at `/`.
fn push_front(todo: &mut VecDeque<OsString>, p: &Path, cur: &mut PathBuf) {
    let mut parts = Vec::new();
    for c in p.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => {
                *cur = PathBuf::from("/");
                parts.clear();
            }
            Component::CurDir => {}
            Component::ParentDir => parts.push(OsString::from("..")),
            Component::Normal(n) => parts.push(n.to_os_string()),
        }
    }
    for part in parts.into_iter().rev() {
        todo.push_front(part);
    }
}

fn shown(p: &Path) -> String {
    escape_for_message(&p.to_string_lossy())
}

/// Whether a value from `source` is the user's own choice (command line aside, which
/// never reaches the configuration): git config or the environment. A default or a
/// `premerge.toml` value is repository content.
pub(crate) fn chosen_by_user(source: Option<&Source>) -> bool {
    matches!(source, Some(Source::GitConfig(_) | Source::Env(_)))
}

/// Whether `path` resolves inside one of `bounds` (each resolved the same way).
pub(crate) fn resolves_inside(path: &Path, bounds: &[&Path]) -> Result<(PathBuf, bool)> {
    let real = resolve(path)?;
    for b in bounds {
        if real.starts_with(resolve(b)?) {
            return Ok((real, true));
        }
    }
    Ok((real, false))
}

/// The directory a path-valued configuration key names (`value`, the key's effective
/// value), relative to the work tree, refused when it came from repository content and
/// resolves outside the work tree and the state directory. `hint` says how the user
/// allows it (the git config key, a flag).
pub(crate) fn config_root(repo: &Repo, cfg: &Config, key: &str, value: &str, hint: &str) -> Result<PathBuf> {
    let work_tree = repo.require_workdir()?;
    let path = work_tree.join(value);
    let source = cfg.source(key);
    if chosen_by_user(source) {
        return Ok(path);
    }
    let state = repo.state_dir().path;
    let (real, inside) = resolves_inside(&path, &[&work_tree, &state])?;
    if inside {
        return Ok(path);
    }
    let from = match source {
        Some(Source::File) => "from premerge.toml".to_string(),
        Some(s) => format!("from {s}, through a symlink in the repository"),
        None => "from the repository".to_string(),
    };
    Err(anyhow!(
        "{key}: {} ({from}) resolves to {}, outside the work tree and the state directory; premerge writes outside them only where you ask: {hint}",
        shown(&path),
        shown(&real)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn real_tmp() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = std::fs::canonicalize(d.path()).unwrap();
        (d, p)
    }

    #[test]
    fn plain_paths_resolve_lexically_where_nothing_exists() {
        let (_d, t) = real_tmp();
        assert_eq!(resolve(&t.join("a/b/../c/./d")).unwrap(), t.join("a/c/d"));
        assert_eq!(resolve(&t.join("../x")).unwrap(), t.parent().unwrap().join("x"));
    }

    #[test]
    fn a_symlink_in_the_middle_is_followed_before_dotdot() {
        let (_d, t) = real_tmp();
        let (_e, elsewhere) = real_tmp();
        std::fs::create_dir_all(elsewhere.join("deep/er")).unwrap();
        std::fs::create_dir(t.join("repo")).unwrap();
        symlink(elsewhere.join("deep/er"), t.join("repo/docs")).unwrap();
        // `docs/..` is `deep`, not `repo`: the kernel follows the link first.
        assert_eq!(resolve(&t.join("repo/docs/../x")).unwrap(), elsewhere.join("deep/x"));
        let (real, inside) = resolves_inside(&t.join("repo/docs/proposals"), &[&t.join("repo")]).unwrap();
        assert_eq!(real, elsewhere.join("deep/er/proposals"));
        assert!(!inside);
    }

    #[test]
    fn relative_and_dangling_links_are_followed() {
        let (_d, t) = real_tmp();
        std::fs::create_dir(t.join("repo")).unwrap();
        symlink("../outside/new", t.join("repo/p")).unwrap();
        assert_eq!(resolve(&t.join("repo/p/open")).unwrap(), t.join("outside/new/open"));
        symlink("inner", t.join("repo/q")).unwrap();
        assert!(resolves_inside(&t.join("repo/q/open"), &[&t.join("repo")]).unwrap().1);
    }

    #[test]
    fn a_symlink_loop_is_an_error_not_a_hang() {
        let (_d, t) = real_tmp();
        symlink(t.join("b"), t.join("a")).unwrap();
        symlink(t.join("a"), t.join("b")).unwrap();
        let e = resolve(&t.join("a/x")).unwrap_err().to_string();
        assert!(e.contains("more than 40 symlinks"), "{e}");
    }

    #[test]
    fn a_prefix_of_a_name_is_not_inside() {
        let (_d, t) = real_tmp();
        assert!(!resolves_inside(&t.join("repo-evil/x"), &[&t.join("repo")]).unwrap().1);
        assert!(resolves_inside(&t.join("repo/x"), &[&t.join("repo")]).unwrap().1);
    }
}
