//! The owned diff model: what changed between two trees, copied once out of git2
//! by `crate::git` so nothing else depends on git2 types or lifetimes.

use serde::Serialize;

/// The status of one changed file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Added,
    Modified,
    Deleted,
    Renamed,
    Copied,
    Typechange,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Added => "added",
            Status::Modified => "modified",
            Status::Deleted => "deleted",
            Status::Renamed => "renamed",
            Status::Copied => "copied",
            Status::Typechange => "typechange",
        }
    }
    /// One-letter code, as `git diff --name-status` prints it.
    pub fn letter(self) -> char {
        match self {
            Status::Added => 'A',
            Status::Modified => 'M',
            Status::Deleted => 'D',
            Status::Renamed => 'R',
            Status::Copied => 'C',
            Status::Typechange => 'T',
        }
    }
}

/// The kind of object on one side of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// A regular (or executable) file.
    File,
    Symlink,
    /// A gitlink: reported, never read.
    Submodule,
    /// Nothing on this side (added or deleted).
    Absent,
}

/// A contiguous changed region, with 1-based line numbers as in a unified diff header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    pub old_start: u32,
    pub old_lines: u32,
    pub new_start: u32,
    pub new_lines: u32,
    /// New-side line numbers that were added.
    pub added: Vec<u32>,
    /// Old-side line numbers that were removed.
    pub removed: Vec<u32>,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileChange {
    /// New path (the old path for a deletion). Repository-relative, `/`-separated.
    pub path: String,
    /// The old path: differs from `path` for renames and copies; `None` for additions.
    pub old_path: Option<String>,
    pub status: Status,
    pub binary: bool,
    pub old_kind: EntryKind,
    pub new_kind: EntryKind,
    /// Blob id of the old side (`None` when absent).
    pub old_oid: Option<String>,
    /// Blob id of the new side (`None` when absent or not hashed, as for worktree files).
    pub new_oid: Option<String>,
    pub additions: u32,
    pub deletions: u32,
    pub hunks: Vec<Hunk>,
}

impl FileChange {
    /// Whether either side is a submodule (never read as text).
    pub fn is_submodule(&self) -> bool {
        self.old_kind == EntryKind::Submodule || self.new_kind == EntryKind::Submodule
    }
    /// Every path this change touches: the new path, and the old one for renames.
    pub fn touched_paths(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.path.as_str()).chain(self.old_path.as_deref().filter(|o| *o != self.path))
    }
}

/// Which comparison a diff describes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Side {
    /// A commit (its id).
    Commit { oid: String },
    /// The index (staging area).
    Index,
    /// The working tree.
    Worktree,
    /// Nothing (the empty tree: a root commit's parent).
    Empty,
}

/// The whole owned diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diff {
    /// Base commit id, or `null` for the empty tree.
    pub base: Option<String>,
    /// Head commit id, or `null` for the index / working tree.
    pub head: Option<String>,
    pub files: Vec<FileChange>,
}

impl Diff {
    /// Sort files by path bytes: the one order every output uses.
    pub fn sort(&mut self) {
        self.files.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    }

    /// Every path touched (new and old names), byte-sorted and deduplicated.
    pub fn touched_paths(&self) -> Vec<String> {
        let mut v: Vec<String> = self.files.iter().flat_map(|f| f.touched_paths().map(str::to_string)).collect();
        v.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        v.dedup();
        v
    }

    /// Merge several diffs (pre-push with many ref lines) into one list of changes,
    /// keeping the last change seen for a path.
    pub fn union(diffs: Vec<Diff>) -> Diff {
        let mut by_path = std::collections::BTreeMap::<Vec<u8>, FileChange>::new();
        let mut base = None;
        let mut head = None;
        for d in diffs {
            base = base.or(d.base);
            head = d.head.or(head);
            for f in d.files {
                by_path.insert(f.path.as_bytes().to_vec(), f);
            }
        }
        Diff { base, head, files: by_path.into_values().collect() }
    }
}
