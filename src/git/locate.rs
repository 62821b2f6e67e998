//! Where a repository keeps its state, asked of the `git` executable, not libgit2.
//!
//! The pre-push hook looks up the fix loop before libgit2 opens anything: libgit2 cannot
//! open some repositories git reads (`extensions.refStorage = reftable`,
//! `extensions.partialClone`, the SHA-256 object format), and a loop that is open there
//! must still refuse the push it cannot judge. The same answers name the format that
//! was met, so a message never says "not a git repository" of a repository git reads.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The two directories a loop lookup needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Located {
    /// This worktree's git directory (`.git`, or `.git/worktrees/<name>`), absolute.
    pub git_dir: PathBuf,
    /// The git directory every worktree of the clone shares, absolute.
    pub common_dir: PathBuf,
}

/// A `git` command run in `cwd` with the caller's environment (a hook's `GIT_DIR` is
/// honoured, as git itself would) and output that does not depend on the locale.
fn git_in(cwd: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let out = Command::new("git")
        .args(args)
        .current_dir(cwd)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// The git directory and common directory of the repository at `cwd`, as git reads
/// them. `None` when git is missing or does not see a repository there.
pub(crate) fn locate(cwd: &Path) -> Option<Located> {
    let out = git_in(cwd, &["rev-parse", "--absolute-git-dir", "--git-common-dir"])?;
    let text = String::from_utf8(out).ok()?;
    let mut lines = text.lines();
    let git_dir = PathBuf::from(lines.next()?);
    let common = PathBuf::from(lines.next()?);
    // `--git-common-dir` is relative to the directory git ran in when it is not absolute.
    let common_dir = if common.is_absolute() { common } else { cwd.join(common) };
    let canon = |p: PathBuf| std::fs::canonicalize(&p).unwrap_or(p);
    Some(Located { git_dir: canon(git_dir), common_dir: canon(common_dir) })
}

/// What git says the repository's format is: `repository format version N` and every
/// `extensions.*` key with its value, byte-sorted (git lists them in file order).
pub(crate) fn describe_format(cwd: &Path) -> String {
    let version = git_in(cwd, &["config", "--get", "core.repositoryformatversion"])
        .map(|o| String::from_utf8_lossy(&o).trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "0".to_string());
    let mut exts: Vec<String> = git_in(cwd, &["config", "--get-regexp", r"^extensions\."])
        .map(|o| String::from_utf8_lossy(&o).lines().map(|l| l.trim().replacen(' ', "=", 1)).collect())
        .unwrap_or_default();
    exts.retain(|e| !e.is_empty());
    exts.sort();
    if exts.is_empty() {
        format!("repository format version {version}, no extensions")
    } else {
        format!("repository format version {version}, {}", exts.join(", "))
    }
}

/// The reason to give when libgit2 could not open the repository at `cwd`: `None` when
/// git cannot read it either (then it is not a repository), else what git says its
/// format is.
pub(crate) fn unopenable_reason(cwd: &Path) -> Option<String> {
    let located = locate(cwd)?;
    Some(format!(
        "{}: libgit2 cannot open this repository, which git reads ({})",
        located.git_dir.display(),
        describe_format(cwd)
    ))
}
