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

/// The serde name (`modified`): serde writes a unit variant's name into a formatter.
impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.serialize(f)
    }
}

impl Status {
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
    /// The exact bytes of `path` as git stores them. `path` is their UTF-8 reading (lossy
    /// for a non-UTF-8 name, fine for reading text); every comparison that decides
    /// something (the fence, the union of a push, collisions) uses these bytes.
    #[serde(skip)]
    pub path_bytes: Vec<u8>,
    /// The exact bytes of `old_path`.
    #[serde(skip)]
    pub old_path_bytes: Option<Vec<u8>>,
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
    pub(crate) fn is_submodule(&self) -> bool {
        self.old_kind == EntryKind::Submodule || self.new_kind == EntryKind::Submodule
    }
    /// Every path this change touches: the new path, and the old one for renames.
    /// Lossy for non-UTF-8 names: decisions use [`FileChange::touched_path_bytes`].
    pub(crate) fn touched_paths(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.path.as_str()).chain(self.old_path.as_deref().filter(|o| *o != self.path))
    }

    /// Every path this change touches, as the exact bytes git stores: the new path, and
    /// the old one for renames, copies and deletions.
    pub fn touched_path_bytes(&self) -> impl Iterator<Item = &[u8]> {
        let new = self.raw_path();
        std::iter::once(new).chain(self.raw_old_path().filter(move |o| *o != new))
    }

    /// The exact bytes of the path (its UTF-8 text when the bytes were never recorded).
    pub(crate) fn raw_path(&self) -> &[u8] {
        if self.path_bytes.is_empty() { self.path.as_bytes() } else { &self.path_bytes }
    }

    /// The exact bytes of the old path.
    pub(crate) fn raw_old_path(&self) -> Option<&[u8]> {
        match (&self.old_path_bytes, &self.old_path) {
            (Some(b), _) if !b.is_empty() => Some(b),
            (_, Some(s)) => Some(s.as_bytes()),
            _ => None,
        }
    }
}

/// Whether a path can be shown as it is: UTF-8 without control characters, quotes or
/// backslashes (so it can neither forge a line of output nor be mistaken for a quoted one).
use crate::input::is_bidi_control;

pub(crate) fn is_plain_path(p: &[u8]) -> bool {
    std::str::from_utf8(p)
        .is_ok_and(|s| !s.chars().any(|c| c.is_control() || is_bidi_control(c) || c == '"' || c == '\\'))
}

/// Quote a path for line-oriented text output the way git does (`core.quotePath`
/// off): plain when safe, else in double quotes with C escapes.
pub(crate) fn quote_path(p: &str) -> String {
    quote_path_bytes(p.as_bytes())
}

/// A path as premerge prints it in text, the way git quotes it (`core.quotePath` off):
/// as is when plain, else in double quotes with C escapes, every byte that is not part
/// of valid UTF-8 written as a three-digit octal escape (`w\377.rs`). Never lossy:
/// two different byte strings always print differently.
pub(crate) fn quote_path_bytes(p: &[u8]) -> String {
    if is_plain_path(p) {
        return String::from_utf8_lossy(p).into_owned();
    }
    let mut s = String::from("\"");
    for chunk in p.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => s.push_str("\\\""),
                '\\' => s.push_str("\\\\"),
                '\n' => s.push_str("\\n"),
                '\t' => s.push_str("\\t"),
                '\r' => s.push_str("\\r"),
                // Bidi controls too: printed raw they reorder what a terminal shows.
                c if c.is_control() || is_bidi_control(c) => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        s.push_str(&format!("\\{b:03o}"));
                    }
                }
                c => s.push(c),
            }
        }
        for b in chunk.invalid() {
            s.push_str(&format!("\\{b:03o}"));
        }
    }
    s.push('"');
    s
}

/// A path as a JSON value: the string itself when it is UTF-8; otherwise the quoted,
/// escaped form of [`quote_path_bytes`] (never a lossy reading), with the exact bytes
/// as lowercase hex in the second value, for a `<field>_hex` key beside it.
pub(crate) fn json_path(p: &[u8]) -> (String, Option<String>) {
    match std::str::from_utf8(p) {
        Ok(s) => (s.to_string(), None),
        Err(_) => (quote_path_bytes(p), Some(p.iter().map(|b| format!("{b:02x}")).collect())),
    }
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
        self.files.sort_by(|a, b| a.raw_path().cmp(b.raw_path()).then_with(|| a.raw_old_path().cmp(&b.raw_old_path())));
    }

    /// Every path touched (new and old names), byte-sorted and deduplicated.
    pub(crate) fn touched_paths(&self) -> Vec<String> {
        let mut v: Vec<String> = self.files.iter().flat_map(|f| f.touched_paths().map(str::to_string)).collect();
        v.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        v.dedup();
        v
    }

    /// Every path touched (new and old names) as the exact bytes git stores,
    /// byte-sorted and deduplicated: the set the fence judges.
    pub fn touched_path_bytes(&self) -> Vec<Vec<u8>> {
        let set: std::collections::BTreeSet<&[u8]> = self.files.iter().flat_map(|f| f.touched_path_bytes()).collect();
        set.into_iter().map(<[u8]>::to_vec).collect()
    }

    /// Merge several diffs (pre-push with many ref lines) into one list of changes.
    ///
    /// A change is keyed by both of its paths, so every path any diff touches stays in
    /// the union: one ref renaming `a.rs` to `b.rs` and another adding `b.rs` give two
    /// changes, and `a.rs` is still seen. Only a change with the same new and old path
    /// in two diffs is kept once (the last seen).
    pub fn union(diffs: Vec<Diff>) -> Diff {
        type Key = (Vec<u8>, Option<Vec<u8>>);
        let mut by_paths = std::collections::BTreeMap::<Key, FileChange>::new();
        let mut base = None;
        let mut head = None;
        for d in diffs {
            base = base.or(d.base);
            head = d.head.or(head);
            for f in d.files {
                by_paths.insert((f.raw_path().to_vec(), f.raw_old_path().map(<[u8]>::to_vec)), f);
            }
        }
        Diff { base, head, files: by_paths.into_values().collect() }
    }
}

#[cfg(test)]
mod quote_tests {
    use super::quote_path;

    #[test]
    fn quoting_matches_git_style() {
        assert_eq!(quote_path("a b/ü.rs"), "a b/ü.rs");
        assert_eq!(quote_path("a\nb"), "\"a\\nb\"");
        assert_eq!(quote_path("q\"\\"), "\"q\\\"\\\\\"");
    }
}
