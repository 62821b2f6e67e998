//! The cheap part of a hook's diff: which paths a range touches, without rename
//! detection or patches, and the sizes of the blobs involved.
//!
//! The commit fence needs paths only, and a rename's old and new paths are both
//! touched whether or not the pair is detected; the hook's time budget needs an
//! estimate of the signal work before starting it. Both come from one tree-to-tree
//! walk that reads trees but no blob, which stays cheap on a range of hundreds of
//! commits (the expensive parts of a full diff are rename similarity and patches).

use git2::{Delta, DiffOptions, ObjectType, Oid, Tree};

use super::{GitError, Repo, Result};
use crate::diff::{Diff, EntryKind, FileChange, Status};

impl Repo {
    fn commit_tree(&self, oid: &str) -> Result<Tree<'_>> {
        let id = Oid::from_str(oid).map_err(|_| GitError::UnknownRevision { rev: oid.to_string() })?;
        let commit = self.inner.find_commit(id).map_err(|_| GitError::NotACommit { rev: oid.to_string() })?;
        Ok(commit.tree()?)
    }

    /// The changes between two commits as additions, deletions and modifications only
    /// (no rename pairing, no hunks, zero line counts). `base = None`: the empty tree.
    pub(crate) fn diff_paths(&self, base: Option<&str>, head: &str) -> Result<Diff> {
        let old = match base {
            Some(b) => Some(self.commit_tree(b)?),
            None => None,
        };
        let new = self.commit_tree(head)?;
        let mut opts = DiffOptions::new();
        opts.ignore_submodules(false).include_typechange(true).skip_binary_check(true);
        let diff = self.inner.diff_tree_to_tree(old.as_ref(), Some(&new), Some(&mut opts))?;
        let mut files = Vec::with_capacity(diff.deltas().len());
        for delta in diff.deltas() {
            let status = match delta.status() {
                Delta::Added => Status::Added,
                Delta::Deleted => Status::Deleted,
                Delta::Modified => Status::Modified,
                Delta::Typechange => Status::Typechange,
                _ => continue,
            };
            let (old_f, new_f) = (delta.old_file(), delta.new_file());
            let kind = |mode: git2::FileMode, exists: bool| match (exists, mode) {
                (false, _) => EntryKind::Absent,
                (true, git2::FileMode::Commit) => EntryKind::Submodule,
                (true, git2::FileMode::Link) => EntryKind::Symlink,
                (true, _) => EntryKind::File,
            };
            let old_exists = status != Status::Added;
            let new_exists = status != Status::Deleted;
            let file = if new_exists { &new_f } else { &old_f };
            let path = file.path().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
            // The exact bytes too: the fence compares paths as git stores them.
            let path_bytes = file.path_bytes().map(<[u8]>::to_vec).unwrap_or_default();
            files.push(FileChange {
                old_path: old_exists.then(|| path.clone()),
                path,
                old_path_bytes: old_exists.then(|| path_bytes.clone()),
                path_bytes,
                status,
                binary: false,
                old_kind: kind(old_f.mode(), old_exists),
                new_kind: kind(new_f.mode(), new_exists),
                old_oid: old_exists.then(|| old_f.id().to_string()),
                new_oid: new_exists.then(|| new_f.id().to_string()),
                additions: 0,
                deletions: 0,
                hunks: Vec::new(),
            });
        }
        let mut d = Diff { base: base.map(str::to_string), head: Some(head.to_string()), files };
        d.sort();
        Ok(d)
    }

    /// The size of a blob from its header alone (no content is inflated), `None` when
    /// it is not in the object database (a partial clone's missing blob).
    pub(crate) fn blob_size(&self, oid: &str) -> Option<u64> {
        let id = Oid::from_str(oid).ok()?;
        let odb = self.inner.odb().ok()?;
        match odb.read_header(id) {
            Ok((size, ObjectType::Blob)) => Some(size as u64),
            _ => None,
        }
    }
}
