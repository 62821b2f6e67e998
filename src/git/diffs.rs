//! Diffs between commits, the index and the working tree, converted to `crate::diff`.

use git2::{Delta, DiffFindOptions, DiffOptions, FileMode, Oid, Patch, Tree};

use super::{GitError, Repo, Result};
use crate::diff::{Diff, EntryKind, FileChange, Hunk, Status};

/// How much of each change a diff computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Hunks, line counts and the binary flag: what `premerge diff` shows.
    Hunks,
    /// Paths, statuses, modes and blob ids only (no hunks, zero line counts, `binary`
    /// false): enough for a reader of whole files such as the widening scan, which
    /// would otherwise pay for patches it never looks at.
    Files,
}

impl Repo {
    fn tree_of(&self, oid: &str) -> Result<Tree<'_>> {
        let commit = self
            .inner
            .find_commit(Oid::from_str(oid).map_err(|_| GitError::UnknownRevision { rev: oid.to_string() })?)
            .map_err(|_| GitError::NotACommit { rev: oid.to_string() })?;
        Ok(commit.tree()?)
    }

    fn head_tree(&self) -> Result<Option<Tree<'_>>> {
        match self.head_oid() {
            Some(oid) => Ok(Some(self.tree_of(&oid)?)),
            None => Ok(None),
        }
    }

    /// Diff two commits (`base = None`: the empty tree, as for a root commit).
    pub fn diff_commits(&self, base: Option<&str>, head: &str) -> Result<Diff> {
        self.diff_commits_with(base, head, Detail::Hunks)
    }

    /// [`Repo::diff_commits`] computing only what `detail` asks for.
    pub fn diff_commits_with(&self, base: Option<&str>, head: &str, detail: Detail) -> Result<Diff> {
        let old = match base {
            Some(b) => Some(self.tree_of(b)?),
            None => None,
        };
        let new = self.tree_of(head)?;
        let mut opts = diff_options();
        let diff = self.inner.diff_tree_to_tree(old.as_ref(), Some(&new), Some(&mut opts))?;
        let mut d = convert(diff, Some(self), detail)?;
        d.base = base.map(str::to_string);
        d.head = Some(head.to_string());
        Ok(d)
    }

    /// Diff the index against HEAD (what `git diff --cached` shows).
    pub fn diff_staged(&self) -> Result<Diff> {
        self.diff_staged_with(Detail::Hunks)
    }

    /// [`Repo::diff_staged`] computing only what `detail` asks for.
    pub fn diff_staged_with(&self, detail: Detail) -> Result<Diff> {
        let old = self.head_tree()?;
        let index = self.inner.index()?;
        let mut opts = diff_options();
        let diff = self.inner.diff_tree_to_index(old.as_ref(), Some(&index), Some(&mut opts))?;
        let mut d = convert(diff, Some(self), detail)?;
        d.base = self.head_oid();
        d.head = None;
        Ok(d)
    }

    /// Diff the working tree against HEAD, untracked (not ignored) files included as added.
    pub fn diff_worktree(&self) -> Result<Diff> {
        self.diff_worktree_with(Detail::Hunks)
    }

    /// [`Repo::diff_worktree`] computing only what `detail` asks for.
    pub fn diff_worktree_with(&self, detail: Detail) -> Result<Diff> {
        if self.is_bare() {
            return Err(GitError::Bare);
        }
        let old = self.head_tree()?;
        let mut opts = diff_options();
        opts.include_untracked(true).recurse_untracked_dirs(true).show_untracked_content(true);
        let diff = self.inner.diff_tree_to_workdir_with_index(old.as_ref(), Some(&mut opts))?;
        let mut d = convert(diff, None, detail)?;
        d.base = self.head_oid();
        d.head = None;
        Ok(d)
    }
}

fn diff_options() -> DiffOptions {
    let mut o = DiffOptions::new();
    o.context_lines(0).ignore_submodules(false).include_typechange(true).id_abbrev(40);
    o
}

fn kind(mode: FileMode, exists: bool) -> EntryKind {
    if !exists {
        return EntryKind::Absent;
    }
    match mode {
        FileMode::Commit => EntryKind::Submodule,
        FileMode::Link => EntryKind::Symlink,
        FileMode::Unreadable => EntryKind::Absent,
        _ => EntryKind::File,
    }
}

fn path_string(p: Option<&std::path::Path>) -> Option<String> {
    p.map(|p| p.to_string_lossy().into_owned())
}

fn oid_string(o: Oid) -> Option<String> {
    (!o.is_zero()).then(|| o.to_string())
}

/// Largest number of inexact rename candidates on either side; git's own default for
/// `diff.renameLimit`, so premerge pairs renames exactly where `git diff -M` does.
const RENAME_LIMIT: usize = 1000;

/// Copy a git2 diff into the owned model, with rename and copy detection on.
///
/// `odb` is the repository when both sides are in its object database
/// (commits and the index): patches are then computed in parallel from blob ids.
fn convert(mut diff: git2::Diff<'_>, odb: Option<&Repo>, detail: Detail) -> Result<Diff> {
    // Exact renames first, as git does: pairing identical blobs by id is cheap and takes
    // them out of the inexact pass, whose similarity matrix is the expensive part.
    let mut exact = DiffFindOptions::new();
    exact.renames(true).copies(true).for_untracked(true).exact_match_only(true);
    diff.find_similar(Some(&mut exact))?;
    let mut find = DiffFindOptions::new();
    // Inexact copies would compare every modified file against every addition, which
    // `git diff -M` does not do either; inexact renames only.
    find.renames(true).for_untracked(true).rename_limit(RENAME_LIMIT);
    diff.find_similar(Some(&mut find))?;
    let mut files = Vec::with_capacity(diff.deltas().len());
    let mut pending = Vec::new();
    for idx in 0..diff.deltas().len() {
        let delta = diff.get_delta(idx).expect("index is within deltas().len()");
        let status = match delta.status() {
            Delta::Added | Delta::Untracked => Status::Added,
            Delta::Deleted => Status::Deleted,
            Delta::Modified => Status::Modified,
            Delta::Renamed => Status::Renamed,
            Delta::Copied => Status::Copied,
            Delta::Typechange => Status::Typechange,
            // Unmodified, ignored, unreadable and conflicted entries are not changes.
            _ => continue,
        };
        let old_f = delta.old_file();
        let new_f = delta.new_file();
        let old_exists = !matches!(status, Status::Added);
        let new_exists = !matches!(status, Status::Deleted);
        let old_kind = kind(old_f.mode(), old_exists);
        let new_kind = kind(new_f.mode(), new_exists);
        let new_path = path_string(new_f.path());
        let old_path = path_string(old_f.path());
        let path = if new_exists { new_path.clone() } else { old_path.clone() }.unwrap_or_default();
        let new_bytes = new_f.path_bytes().map(<[u8]>::to_vec);
        let old_bytes = old_f.path_bytes().map(<[u8]>::to_vec);
        let path_bytes = if new_exists { new_bytes } else { old_bytes.clone() }.unwrap_or_default();
        let mut change = FileChange {
            path,
            old_path: if status == Status::Added { None } else { old_path },
            path_bytes,
            old_path_bytes: if status == Status::Added { None } else { old_bytes },
            status,
            binary: false,
            old_kind,
            new_kind,
            old_oid: if old_exists { oid_string(old_f.id()) } else { None },
            new_oid: if new_exists { oid_string(new_f.id()) } else { None },
            additions: 0,
            deletions: 0,
            hunks: Vec::new(),
        };
        if change.is_submodule() || detail == Detail::Files {
            // A gitlink is reported, never read: there is no text to diff.
            files.push(change);
            continue;
        }
        if odb.is_some() {
            // Both sides live in the object database: the patch is computed below, in
            // parallel, from the blob ids alone.
            pending.push(files.len());
        } else {
            let patch = Patch::from_diff(&diff, idx)?;
            let delta_after = diff.get_delta(idx).expect("index is within deltas().len()");
            change.binary = delta_after.flags().is_binary()
                || delta_after.old_file().is_binary()
                || delta_after.new_file().is_binary();
            if let Some(patch) = patch
                && !change.binary
            {
                fill_hunks(&mut change, &patch)?;
            }
        }
        files.push(change);
    }
    if let Some(repo) = odb {
        patch_in_parallel(repo, &mut files, &pending)?;
    }
    let mut d = Diff { base: None, head: None, files };
    d.sort();
    Ok(d)
}

/// Compute the hunks of `files[i]` for every `i` in `pending` from their blob ids,
/// spread over rayon's threads ([`Repo::on_threads`]).
fn patch_in_parallel(repo: &Repo, files: &mut [FileChange], pending: &[usize]) -> Result<()> {
    let work: Vec<(usize, Option<String>, Option<String>, String)> = pending
        .iter()
        .map(|&i| (i, files[i].old_oid.clone(), files[i].new_oid.clone(), files[i].path.clone()))
        .collect();
    let results = repo.on_threads(&work, |repo, (i, old, new, path)| {
        let load = |oid: &Option<String>| -> Result<Vec<u8>> {
            match oid {
                Some(o) => Ok(repo.find_blob(Oid::from_str(o)?)?.content().to_vec()),
                None => Ok(Vec::new()),
            }
        };
        let (a, b) = (load(old)?, load(new)?);
        let p = std::path::Path::new(path.as_str());
        let mut opts = diff_options();
        let patch = Patch::from_buffers(&a, Some(p), &b, Some(p), Some(&mut opts))?;
        let mut change = FileChange {
            path: String::new(),
            old_path: None,
            path_bytes: Vec::new(),
            old_path_bytes: None,
            status: Status::Modified,
            binary: patch.delta().flags().is_binary(),
            old_kind: EntryKind::Absent,
            new_kind: EntryKind::Absent,
            old_oid: None,
            new_oid: None,
            additions: 0,
            deletions: 0,
            hunks: Vec::new(),
        };
        if !change.binary {
            fill_hunks(&mut change, &patch)?;
        }
        Ok((*i, change))
    })?;
    for (i, c) in results {
        files[i].binary = c.binary;
        files[i].additions = c.additions;
        files[i].deletions = c.deletions;
        files[i].hunks = c.hunks;
    }
    Ok(())
}

/// Copy a patch's hunks and added/removed line numbers into `change`.
fn fill_hunks(change: &mut FileChange, patch: &Patch<'_>) -> Result<()> {
    for h in 0..patch.num_hunks() {
        let (hunk, nlines) = patch.hunk(h)?;
        let mut out = Hunk {
            old_start: hunk.old_start(),
            old_lines: hunk.old_lines(),
            new_start: hunk.new_start(),
            new_lines: hunk.new_lines(),
            added: Vec::new(),
            removed: Vec::new(),
        };
        for l in 0..nlines {
            let line = patch.line_in_hunk(h, l)?;
            match line.origin() {
                '+' => out.added.extend(line.new_lineno()),
                '-' => out.removed.extend(line.old_lineno()),
                _ => {}
            }
        }
        change.additions += out.added.len() as u32;
        change.deletions += out.removed.len() as u32;
        change.hunks.push(out);
    }
    Ok(())
}
