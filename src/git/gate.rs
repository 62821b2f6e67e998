//! Evidence for the stop gate: plan files in HEAD matched by globs, each file's
//! introducing and latest commit, the commits made since a session started, and
//! blob ids of working-tree files.

use std::path::Path;

use git2::{ObjectType, Oid, Sort, TreeWalkMode, TreeWalkResult};
use globset::GlobSet;

use super::{Repo, Result};

/// The commits of one path's history that the stop gate cites.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PathCommits {
    /// The oldest first-parent commit whose parent lacks the path (its introduction).
    pub introducing: Option<String>,
    /// The newest commit that changed the path's blob.
    pub latest: Option<String>,
    /// The walk stopped at its bound before finding the introduction.
    pub truncated: bool,
}

impl Repo {
    /// Files of HEAD's tree matching `globs`, with their blob ids, byte-sorted.
    pub(crate) fn gate_plan_paths(&self, globs: &GlobSet) -> Result<Vec<(String, String)>> {
        let Some(head) = self.head_oid() else { return Ok(Vec::new()) };
        let tree = self.inner.find_commit(Oid::from_str(&head)?)?.tree()?;
        let mut out = Vec::new();
        tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(ObjectType::Blob)
                && let Some(name) = entry.name()
            {
                let path = format!("{dir}{name}");
                if globs.is_match(&path) {
                    out.push((path, entry.id().to_string()));
                }
            }
            TreeWalkResult::Ok
        })?;
        out.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        Ok(out)
    }

    /// Walk first parents from `head` (at most `max` commits) to find the commit that
    /// last changed `path` and the one that introduced it. `known` is an earlier answer
    /// for the same path computed at commit `at`: the walk stops when it reaches `at`
    /// and completes the answer from it, so repeated evaluations walk only new commits.
    pub(crate) fn gate_path_commits(
        &self,
        head: &str,
        path: &str,
        max: usize,
        known: Option<(&str, &PathCommits)>,
    ) -> Result<PathCommits> {
        let p = Path::new(path);
        let blob_at = |c: &git2::Commit| -> Result<Option<Oid>> {
            match c.tree()?.get_path(p) {
                Ok(e) => Ok(Some(e.id())),
                Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
                Err(e) => Err(e.into()),
            }
        };
        let mut out = PathCommits::default();
        let mut commit = self.inner.find_commit(Oid::from_str(head)?)?;
        let Some(mut blob) = blob_at(&commit)? else { return Ok(out) };
        let known = known.and_then(|(at, k)| Oid::from_str(at).ok().map(|o| (o, k)));
        for _ in 0..max {
            if let Some((at, k)) = known
                && commit.id() == at
            {
                if out.latest.is_none() {
                    out.latest.clone_from(&k.latest);
                }
                out.introducing.clone_from(&k.introducing);
                out.truncated = k.truncated;
                return Ok(out);
            }
            let parent = match commit.parent(0) {
                Ok(p) => p,
                Err(_) => {
                    // A root commit introduces everything it has.
                    out.latest.get_or_insert_with(|| commit.id().to_string());
                    out.introducing = Some(commit.id().to_string());
                    return Ok(out);
                }
            };
            // Cheap skip: an unchanged root tree means an unchanged path.
            if parent.tree_id() == commit.tree_id() {
                commit = parent;
                continue;
            }
            match blob_at(&parent)? {
                None => {
                    out.latest.get_or_insert_with(|| commit.id().to_string());
                    out.introducing = Some(commit.id().to_string());
                    return Ok(out);
                }
                Some(b) if b != blob => {
                    out.latest.get_or_insert_with(|| commit.id().to_string());
                    blob = b;
                }
                Some(_) => {}
            }
            commit = parent;
        }
        out.truncated = true;
        Ok(out)
    }

    /// Commits reachable from `head` but not from `start`, newest first, at most `max`,
    /// as `(sha, summary)`.
    pub(crate) fn gate_commits_since(&self, start: &str, head: &str, max: usize) -> Result<Vec<(String, String)>> {
        let mut walk = self.inner.revwalk()?;
        // No topological sort: it would make libgit2 walk the whole history first.
        walk.set_sorting(Sort::TIME)?;
        walk.push(Oid::from_str(head)?)?;
        walk.hide(Oid::from_str(start)?)?;
        let mut out = Vec::new();
        for oid in walk.take(max) {
            let oid = oid?;
            let c = self.inner.find_commit(oid)?;
            out.push((oid.to_string(), c.summary().unwrap_or("").to_string()));
        }
        Ok(out)
    }

    /// Git blob id of a working-tree file (`None`: missing or unreadable).
    pub(crate) fn gate_worktree_blob(&self, rel: &str) -> Option<String> {
        let root = self.workdir()?;
        Oid::hash_file(ObjectType::Blob, root.join(rel)).ok().map(|o| o.to_string())
    }
}

impl Repo {
    /// Paths of the working tree with uncommitted changes (staged, unstaged or
    /// untracked, not ignored), byte-sorted, at most `max`; `None` when the status
    /// cannot be read (a bare repository, an unreadable index).
    pub(crate) fn gate_uncommitted(&self, max: usize) -> Option<Vec<String>> {
        self.inner.workdir()?;
        let mut opts = git2::StatusOptions::new();
        opts.include_untracked(true).include_ignored(false).recurse_untracked_dirs(false).exclude_submodules(true);
        let statuses = self.inner.statuses(Some(&mut opts)).ok()?;
        let mut out: Vec<String> = statuses
            .iter()
            .filter(|e| e.status() != git2::Status::CURRENT && !e.status().contains(git2::Status::IGNORED))
            .filter_map(|e| e.path().map(str::to_string))
            .collect();
        out.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        out.truncate(max);
        Some(out)
    }
}
