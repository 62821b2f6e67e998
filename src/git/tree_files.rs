//! Listing the files under a directory of a commit's tree (the widening scan's
//! migration history reads the earlier migrations of a sequence at the base).

use std::path::Path;

use git2::{ObjectType, Oid};

use super::{GitError, Repo, Result};

/// One regular file of a tree: its repository path, blob id and size in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TreeFile {
    pub path: String,
    pub oid: String,
    /// `None` when the blob is not in the local object store (a partial clone).
    pub bytes: Option<u64>,
}

impl Repo {
    /// The regular files under `dir` in commit `rev`, down to `depth` directory levels
    /// (1: the directory's own files), in tree order. A directory absent at `rev`
    /// has no files.
    pub(crate) fn tree_files(&self, rev: &str, dir: &str, depth: usize) -> Result<Vec<TreeFile>> {
        let oid = Oid::from_str(rev).map_err(|_| GitError::UnknownRevision { rev: rev.to_string() })?;
        let commit = self.inner.find_commit(oid).map_err(|_| GitError::NotACommit { rev: rev.to_string() })?;
        let root = commit.tree()?;
        let tree = if dir.is_empty() {
            root
        } else {
            match root.get_path(Path::new(dir)) {
                Ok(e) if e.kind() == Some(ObjectType::Tree) => self.inner.find_tree(e.id())?,
                Ok(_) => return Ok(Vec::new()),
                Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(Vec::new()),
                Err(e) => return Err(e.into()),
            }
        };
        let odb = self.inner.odb()?;
        let mut out = Vec::new();
        let mut pending = vec![(tree, dir.to_string(), 1usize)];
        while let Some((tree, prefix, level)) = pending.pop() {
            for entry in tree.iter() {
                let Some(name) = entry.name() else { continue };
                let path = if prefix.is_empty() { name.to_string() } else { format!("{prefix}/{name}") };
                match entry.kind() {
                    // Regular files only: a symlink's blob is its target, not content.
                    Some(ObjectType::Blob) if entry.filemode() != 0o120000 => {
                        let bytes = odb.read_header(entry.id()).ok().map(|(size, _)| size as u64);
                        out.push(TreeFile { path, oid: entry.id().to_string(), bytes });
                    }
                    Some(ObjectType::Tree) if level < depth => {
                        pending.push((self.inner.find_tree(entry.id())?, path, level + 1));
                    }
                    _ => {}
                }
            }
        }
        out.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        Ok(out)
    }
}
