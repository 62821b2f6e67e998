//! Diffs between commits, the index and the working tree, converted to `crate::diff`.

use git2::{Delta, DiffFindOptions, DiffOptions, FileMode, Oid, Patch, Tree};

use super::cli::NewSide;
use super::{GitError, Repo, Result};
use crate::diff::{Diff, EntryKind, FileChange, Hunk, Status};

/// How much of each change a diff computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Detail {
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
    pub(crate) fn diff_commits(&self, base: Option<&str>, head: &str) -> Result<Diff> {
        self.diff_commits_with(base, head, Detail::Hunks)
    }

    /// [`Repo::diff_commits`] computing only what `detail` asks for.
    pub(crate) fn diff_commits_with(&self, base: Option<&str>, head: &str, detail: Detail) -> Result<Diff> {
        // A treeless clone (`--filter=tree:0`) lacks even the trees: git fetches them.
        let git2 = (|| {
            let old = match base {
                Some(b) => Some(self.tree_of(b)?),
                None => None,
            };
            let new = self.tree_of(head)?;
            let sides = base.map(|b| (b, NewSide::Commit(head)));
            self.odb_changes(sides, |opts| Ok(self.inner.diff_tree_to_tree(old.as_ref(), Some(&new), Some(opts))?))
        })();
        let files = self.or_git(git2, || self.diff_files_cli(base, NewSide::Commit(head)))?;
        let mut d = self.with_patches(files, detail)?;
        d.base = base.map(str::to_string);
        d.head = Some(head.to_string());
        Ok(d)
    }

    /// Diff the index against HEAD (what `git diff --cached` shows).
    pub(crate) fn diff_staged(&self) -> Result<Diff> {
        self.diff_staged_with(Detail::Hunks)
    }

    /// [`Repo::diff_staged`] computing only what `detail` asks for.
    pub(crate) fn diff_staged_with(&self, detail: Detail) -> Result<Diff> {
        let base = self.head_oid();
        let git2 = (|| {
            let old = self.head_tree()?;
            let index = self.inner.index()?;
            let sides = base.as_deref().map(|b| (b, NewSide::Index));
            self.odb_changes(sides, |opts| Ok(self.inner.diff_tree_to_index(old.as_ref(), Some(&index), Some(opts))?))
        })();
        let files = self.or_git(git2, || self.diff_files_cli(base.as_deref(), NewSide::Index))?;
        let mut d = self.with_patches(files, detail)?;
        d.base = base;
        d.head = None;
        Ok(d)
    }

    /// Diff the working tree against HEAD, untracked (not ignored) files included as added.
    pub fn diff_worktree(&self) -> Result<Diff> {
        self.diff_worktree_with(Detail::Hunks)
    }

    /// [`Repo::diff_worktree`] computing only what `detail` asks for.
    pub(crate) fn diff_worktree_with(&self, detail: Detail) -> Result<Diff> {
        if self.is_bare() {
            return Err(GitError::Bare);
        }
        let base = self.head_oid();
        let mut d = match self.worktree_git2(detail) {
            Ok(d) => d,
            Err(e) if e.wants_fallback() => {
                let files =
                    self.diff_files_cli(base.as_deref(), NewSide::Worktree).map_err(|cli| e.with_fallback(cli))?;
                self.with_patches(files, detail)?
            }
            Err(e) => return Err(e),
        };
        d.base = base;
        d.head = None;
        Ok(d)
    }

    fn worktree_git2(&self, detail: Detail) -> Result<Diff> {
        let old = self.head_tree()?;
        let mut opts = diff_options();
        opts.include_untracked(true).recurse_untracked_dirs(true).show_untracked_content(true);
        let mut diff = self.inner.diff_tree_to_workdir_with_index(old.as_ref(), Some(&mut opts))?;
        // The working tree is not hashed, so renames cannot be paired by blob id
        // beforehand: one pass of libgit2's detection, renames only (never twice on one
        // diff: a second pass trips its internal assertions).
        let mut find = DiffFindOptions::new();
        find.renames(true).for_untracked(true).rename_limit(RENAME_LIMIT);
        diff.find_similar(Some(&mut find))?;
        let mut d = convert_with_patches(&diff, detail)?;
        // libgit2 hashes a working-tree file whose size matches its index entry (to see
        // whether it changed) but does not store it: that id names no object. The new
        // side keeps an id only when the object database has it (an unchanged or staged
        // file); any other working-tree side is `None`, read from the file itself.
        let odb = self.inner.odb()?;
        for f in &mut d.files {
            if f.new_oid.as_deref().is_some_and(|o| !Oid::from_str(o).is_ok_and(|o| odb.exists(o))) {
                f.new_oid = None;
            }
        }
        Ok(d)
    }

    /// libgit2's answer, or, where libgit2 failed on something git can read (its own
    /// internal errors, a partial clone's missing blobs), git's answer to the same question.
    pub(super) fn or_git<T>(&self, git2: Result<T>, git: impl FnOnce() -> Result<T>) -> Result<T> {
        match git2 {
            Ok(v) => Ok(v),
            Err(e) if e.wants_fallback() => git().map_err(|cli| e.with_fallback(cli)),
            Err(e) => Err(e),
        }
    }

    /// The changed files of a diff whose both sides are in the object database (two
    /// trees, or a tree and the index), renames paired, without hunks. `build` makes
    /// the diff with the given options (called again, narrowed by a path list, for
    /// libgit2's inexact rename pass). `sides` names the diff to git (the base commit
    /// and the new side; `None`: no base, so nothing deleted to pair).
    ///
    /// Renames are paired the way git pairs them, exact first: identical blobs by id
    /// here, cheaply. Where added and deleted files are left unpaired, git itself is
    /// asked for the pairs of the whole change ([`Repo::rename_pairs_cli`]): its
    /// pairing by file name and its similarity estimate are what `git diff -M`
    /// reports, and several times cheaper than libgit2's similarity pass (on 1,100
    /// added and 360 deleted files, 1.0 s against 0.25 s). Where git cannot be run,
    /// libgit2's similarity pass pairs them, on a diff narrowed to the files still
    /// unpaired (`find_similar` runs once per diff: run twice on one diff it fails,
    /// `delta_is_split(tgt)`, on twin files, one renamed and one edited).
    fn odb_changes<'r>(
        &'r self,
        sides: Option<(&str, NewSide)>,
        build: impl Fn(&mut DiffOptions) -> Result<git2::Diff<'r>>,
    ) -> Result<Vec<FileChange>> {
        let mut opts = diff_options();
        let diff = build(&mut opts)?;
        let mut files = owned_changes(&diff);
        drop(diff);
        let unpaired = |files: &[FileChange]| {
            let deleted = files.iter().any(|f| f.status == Status::Deleted && f.old_kind == EntryKind::File);
            deleted && files.iter().any(|f| f.status == Status::Added && f.new_kind == EntryKind::File)
        };
        let original = unpaired(&files).then(|| files.clone());
        pair_exact_renames(&mut files);
        if let Some(original) = original
            && unpaired(&files)
        {
            let asked = sides.map(|(base, new)| {
                let paths: Vec<&[u8]> = original
                    .iter()
                    .filter(|f| matches!(f.status, Status::Added | Status::Deleted))
                    .map(|f| f.path_bytes.as_slice())
                    .collect();
                self.rename_pairs_cli(base, new, &paths)
            });
            match asked {
                Some(Ok(pairs)) => {
                    // git's answer covers the exact renames too: laid over the
                    // unpaired changes, so every pair is git's.
                    files = original;
                    apply_renames(&mut files, &pairs);
                }
                _ => self.similar_renames(&mut files, &build)?,
            }
        }
        mark_exact_copies(&mut files);
        Ok(files)
    }

    /// Pair the added and deleted files of `files` still unpaired by libgit2's
    /// similarity pass, on a diff `build` makes narrowed to them.
    fn similar_renames<'r>(
        &'r self,
        files: &mut Vec<FileChange>,
        build: &impl Fn(&mut DiffOptions) -> Result<git2::Diff<'r>>,
    ) -> Result<()> {
        let deleted = files.iter().filter(|f| f.status == Status::Deleted && f.old_kind == EntryKind::File);
        let added = files.iter().filter(|f| f.status == Status::Added && f.new_kind == EntryKind::File);
        let mut opts = diff_options();
        opts.disable_pathspec_match(true);
        // Paths as git stores them: a name that is not UTF-8 is matched by its bytes.
        let mut paths: Vec<&[u8]> = deleted.chain(added).map(|f| f.path_bytes.as_slice()).collect();
        paths.sort_unstable();
        for p in paths {
            use std::os::unix::ffi::OsStrExt;
            opts.pathspec(std::ffi::OsStr::from_bytes(p));
        }
        let mut narrow = build(&mut opts)?;
        let mut find = DiffFindOptions::new();
        find.renames(true).rename_limit(RENAME_LIMIT);
        narrow.find_similar(Some(&mut find))?;
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = narrow
            .deltas()
            .filter(|d| d.status() == Delta::Renamed)
            .filter_map(|d| Some((d.old_file().path_bytes()?.to_vec(), d.new_file().path_bytes()?.to_vec())))
            .collect();
        apply_renames(files, &pairs);
        Ok(())
    }

    /// The owned diff of `files`, with hunks computed from blob ids (and, for the
    /// working tree's unhashed side, from the files themselves) when `detail` asks.
    fn with_patches(&self, files: Vec<FileChange>, detail: Detail) -> Result<Diff> {
        let mut files = files;
        if detail == Detail::Hunks {
            // Identical sides (an exact rename or copy) have no hunks: nothing to read,
            // as in git, which matters where the blob is not there to read.
            let pending: Vec<usize> = (0..files.len())
                .filter(|&i| {
                    !files[i].is_submodule() && (files[i].new_oid.is_none() || files[i].old_oid != files[i].new_oid)
                })
                .collect();
            self.patch_in_parallel(&mut files, &pending)?;
        }
        let mut d = Diff { base: None, head: None, files };
        d.sort();
        Ok(d)
    }

    /// Compute the hunks of `files[i]` for every `i` in `pending` from their blob ids,
    /// spread over rayon's threads ([`Repo::on_threads`]). Where libgit2 cannot read a
    /// blob, every blob is read through git instead ([`Repo::blobs_cli`]).
    fn patch_in_parallel(&self, files: &mut [FileChange], pending: &[usize]) -> Result<()> {
        let work: Vec<PatchJob> = pending
            .iter()
            .map(|&i| (i, files[i].old_oid.clone(), files[i].new_oid.clone(), files[i].path.clone(), files[i].new_kind))
            .collect();
        let root = self.workdir();
        let worktree_side = |path: &str, kind: EntryKind| -> Result<Vec<u8>> {
            let root = root.as_ref().ok_or(GitError::Bare)?;
            read_worktree(&root.join(path), kind)
        };
        let git2 = self.on_threads(&work, |repo, (i, old, new, path, kind)| {
            let load = |oid: &Option<String>| -> Result<Vec<u8>> {
                match oid {
                    Some(o) => Ok(repo.find_blob(Oid::from_str(o)?)?.content().to_vec()),
                    None => Ok(Vec::new()),
                }
            };
            let a = load(old)?;
            let b = match (new, kind) {
                (None, EntryKind::File | EntryKind::Symlink) => worktree_side(path, *kind)?,
                _ => load(new)?,
            };
            Ok((*i, patch_of(&a, &b, path)?))
        });
        let results = self.or_git(git2, || {
            let mut oids: Vec<&str> = Vec::new();
            for (_, old, new, _, _) in &work {
                oids.extend(old.as_deref());
                oids.extend(new.as_deref());
            }
            let mut blobs = self.blobs_cli(&oids)?.into_iter();
            let mut out = Vec::with_capacity(work.len());
            for (i, old, new, path, kind) in &work {
                let mut next =
                    |o: &Option<String>| if o.is_some() { blobs.next().unwrap_or_default() } else { Vec::new() };
                let a = next(old);
                let b = match (new, kind) {
                    (None, EntryKind::File | EntryKind::Symlink) => worktree_side(path, *kind)?,
                    _ => next(new),
                };
                out.push((*i, patch_of(&a, &b, path)?));
            }
            Ok(out)
        })?;
        for (i, c) in results {
            files[i].binary = c.binary;
            files[i].additions = c.additions;
            files[i].deletions = c.deletions;
            files[i].hunks = c.hunks;
        }
        Ok(())
    }
}

/// One change to patch: its index, old and new blob ids, path and new kind.
type PatchJob = (usize, Option<String>, Option<String>, String, EntryKind);

/// One side of a change in the working tree: a file's bytes, a symlink's target.
fn read_worktree(path: &std::path::Path, kind: EntryKind) -> Result<Vec<u8>> {
    let io = |e: std::io::Error| GitError::Cli(format!("{}: cannot read: {e}", path.display()));
    if kind == EntryKind::Symlink {
        use std::os::unix::ffi::OsStrExt;
        return Ok(std::fs::read_link(path).map_err(io)?.as_os_str().as_bytes().to_vec());
    }
    std::fs::read(path).map_err(io)
}

/// How many leading bytes libgit2 searches for a NUL to call a side binary (its
/// `GIT_FILTER_BYTES_TO_CHECK_NUL`, as git's own `buffer_is_binary`).
const BINARY_CHECK_BYTES: usize = 8000;

/// The hunks of one change from the bytes of its two sides.
fn patch_of(a: &[u8], b: &[u8], path: &str) -> Result<FileChange> {
    if let Some(change) = one_sided_patch(a, b) {
        return Ok(change);
    }
    libgit2_patch_of(a, b, path)
}

/// The patch of an added or deleted file (one side empty) without libgit2: one hunk
/// of every line of the other side, or none for an empty file, and binary where a NUL
/// is in its first [`BINARY_CHECK_BYTES`] bytes, as libgit2 says (tested against it).
/// Most of a long range's patches are of added files (trpc `HEAD~1500`: 1,109 of
/// 1,569), and libgit2 hashes both sides and runs its line diff for them.
/// `None` when both sides hold bytes.
fn one_sided_patch(a: &[u8], b: &[u8]) -> Option<FileChange> {
    let (text, added) = match (a.is_empty(), b.is_empty()) {
        (true, _) => (b, true),
        (false, true) => (a, false),
        (false, false) => return None,
    };
    let mut change = FileChange {
        path: String::new(),
        old_path: None,
        path_bytes: Vec::new(),
        old_path_bytes: None,
        status: Status::Modified,
        binary: text[..text.len().min(BINARY_CHECK_BYTES)].contains(&0),
        old_kind: EntryKind::Absent,
        new_kind: EntryKind::Absent,
        old_oid: None,
        new_oid: None,
        additions: 0,
        deletions: 0,
        hunks: Vec::new(),
    };
    if change.binary || text.is_empty() {
        return Some(change);
    }
    // A last line without its newline is a line too. Line numbers are u32, as
    // libgit2's; a side of more lines than that is read by libgit2.
    let lines = u32::try_from(memchr::memchr_iter(b'\n', text).count() + usize::from(!text.ends_with(b"\n"))).ok()?;
    let numbers: Vec<u32> = (1..=lines).collect();
    let hunk = if added {
        change.additions = lines;
        Hunk { old_start: 0, old_lines: 0, new_start: 1, new_lines: lines, added: numbers, removed: Vec::new() }
    } else {
        change.deletions = lines;
        Hunk { old_start: 1, old_lines: lines, new_start: 0, new_lines: 0, added: Vec::new(), removed: numbers }
    };
    change.hunks.push(hunk);
    Some(change)
}

/// [`patch_of`] by libgit2's line diff.
fn libgit2_patch_of(a: &[u8], b: &[u8], path: &str) -> Result<FileChange> {
    let p = std::path::Path::new(path);
    let mut opts = diff_options();
    let patch = Patch::from_buffers(a, Some(p), b, Some(p), Some(&mut opts))?;
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
    Ok(change)
}

/// Pair each added file with a deleted file of the identical blob as a rename, as
/// git's exact rename pass does: among several candidates, one with the same file
/// name first, then the first in byte order of path.
fn pair_exact_renames(files: &mut Vec<FileChange>) {
    use std::collections::BTreeMap;
    let blob_side = |k: EntryKind| matches!(k, EntryKind::File | EntryKind::Symlink);
    let mut deleted: BTreeMap<(&str, bool), Vec<usize>> = BTreeMap::new();
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by(|&a, &b| files[a].path.as_bytes().cmp(files[b].path.as_bytes()));
    for &i in &order {
        let f = &files[i];
        if f.status == Status::Deleted
            && blob_side(f.old_kind)
            && let Some(oid) = f.old_oid.as_deref()
        {
            deleted.entry((oid, f.old_kind == EntryKind::Symlink)).or_default().push(i);
        }
    }
    if deleted.is_empty() {
        return;
    }
    let name = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for &i in &order {
        let f = &files[i];
        if f.status != Status::Added || !blob_side(f.new_kind) {
            continue;
        }
        let Some(oid) = f.new_oid.as_deref() else { continue };
        let Some(cands) = deleted.get_mut(&(oid, f.new_kind == EntryKind::Symlink)) else { continue };
        if cands.is_empty() {
            continue;
        }
        let own = name(&f.path);
        let pick = cands.iter().position(|&d| name(&files[d].path) == own).unwrap_or(0);
        pairs.push((cands.remove(pick), i));
    }
    let mut gone = vec![false; files.len()];
    for (d, a) in pairs {
        let old_path = files[d].path.clone();
        files[a].status = Status::Renamed;
        files[a].old_path = Some(old_path);
        files[a].old_path_bytes = Some(files[d].path_bytes.clone());
        files[a].old_kind = files[d].old_kind;
        files[a].old_oid = files[d].old_oid.clone();
        gone[d] = true;
    }
    let mut i = 0;
    files.retain(|_| {
        i += 1;
        !gone[i - 1]
    });
}

/// Turn each `(old path, new path)` rename (found by git or by libgit2's similarity
/// pass) into one renamed change, replacing the deletion and the addition it pairs.
fn apply_renames(files: &mut Vec<FileChange>, pairs: &[(Vec<u8>, Vec<u8>)]) {
    use std::collections::HashMap;
    if pairs.is_empty() {
        return;
    }
    // By path, so that thousands of pairs cost one pass over the change.
    let mut deleted: HashMap<&[u8], usize> = HashMap::new();
    let mut added: HashMap<&[u8], usize> = HashMap::new();
    for (i, f) in files.iter().enumerate() {
        match f.status {
            Status::Deleted => deleted.insert(f.path_bytes.as_slice(), i),
            Status::Added => added.insert(f.path_bytes.as_slice(), i),
            _ => None,
        };
    }
    let mut found: Vec<(usize, usize)> = Vec::with_capacity(pairs.len());
    for (old, new) in pairs {
        if let (Some(d), Some(a)) = (deleted.remove(old.as_slice()), added.remove(new.as_slice())) {
            found.push((d, a));
        }
    }
    drop((deleted, added));
    let mut gone = vec![false; files.len()];
    for (d, a) in found {
        let old_path = std::mem::take(&mut files[d].path);
        let old_bytes = std::mem::take(&mut files[d].path_bytes);
        let (old_kind, old_oid) = (files[d].old_kind, files[d].old_oid.take());
        let add = &mut files[a];
        add.status = Status::Renamed;
        add.old_path = Some(old_path);
        add.old_path_bytes = Some(old_bytes);
        add.old_kind = old_kind;
        add.old_oid = old_oid;
        gone[d] = true;
    }
    let mut i = 0;
    files.retain(|_| {
        i += 1;
        !gone[i - 1]
    });
}

/// An added file identical to the old side of a file the change also modifies is a
/// copy of it (what `git diff -C` reports for an exact copy).
fn mark_exact_copies(files: &mut [FileChange]) {
    use std::collections::BTreeMap;
    let mut sources: BTreeMap<String, (Vec<u8>, String, EntryKind)> = BTreeMap::new();
    for f in files.iter() {
        if matches!(f.status, Status::Modified | Status::Renamed)
            && f.old_kind == EntryKind::File
            && let (Some(oid), Some(old), Some(old_bytes)) = (&f.old_oid, &f.old_path, &f.old_path_bytes)
        {
            let e = sources.entry(oid.clone()).or_insert_with(|| (old_bytes.clone(), old.clone(), f.old_kind));
            if *old_bytes < e.0 {
                *e = (old_bytes.clone(), old.clone(), f.old_kind);
            }
        }
    }
    for f in files.iter_mut() {
        if f.status == Status::Added
            && f.new_kind == EntryKind::File
            && let Some((old_bytes, old, kind)) = f.new_oid.as_ref().and_then(|o| sources.get(o))
        {
            f.status = Status::Copied;
            f.old_path = Some(old.clone());
            f.old_path_bytes = Some(old_bytes.clone());
            f.old_kind = *kind;
            f.old_oid = f.new_oid.clone();
        }
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

/// Copy a git2 diff's changes into the owned model, without hunks.
fn owned_changes(diff: &git2::Diff<'_>) -> Vec<FileChange> {
    let mut files = Vec::with_capacity(diff.deltas().len());
    for delta in diff.deltas() {
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
        let new_path = path_string(new_f.path());
        let old_path = path_string(old_f.path());
        let path = if new_exists { new_path.clone() } else { old_path.clone() }.unwrap_or_default();
        let new_bytes = new_f.path_bytes().map(<[u8]>::to_vec);
        let old_bytes = old_f.path_bytes().map(<[u8]>::to_vec);
        let path_bytes = if new_exists { new_bytes } else { old_bytes.clone() }.unwrap_or_default();
        files.push(FileChange {
            path,
            old_path: if status == Status::Added { None } else { old_path },
            path_bytes,
            old_path_bytes: if status == Status::Added { None } else { old_bytes },
            status,
            binary: false,
            old_kind: kind(old_f.mode(), old_exists),
            new_kind: kind(new_f.mode(), new_exists),
            old_oid: if old_exists { oid_string(old_f.id()) } else { None },
            new_oid: if new_exists { oid_string(new_f.id()) } else { None },
            additions: 0,
            deletions: 0,
            hunks: Vec::new(),
        });
    }
    files
}

/// The owned model of a working-tree diff (renames already found), hunks computed by
/// libgit2 from the diff itself when `detail` asks: the working tree's side is not in
/// the object database.
fn convert_with_patches(diff: &git2::Diff<'_>, detail: Detail) -> Result<Diff> {
    let mut files = owned_changes(diff);
    if detail == Detail::Hunks {
        // `owned_changes` skips the same deltas in the same order: walk both together.
        let mut next = 0;
        for idx in 0..diff.deltas().len() {
            let delta = diff.get_delta(idx).expect("index is within deltas().len()");
            if matches!(delta.status(), Delta::Unmodified | Delta::Ignored | Delta::Unreadable | Delta::Conflicted) {
                continue;
            }
            let change = &mut files[next];
            next += 1;
            if change.is_submodule() {
                // A gitlink is reported, never read: there is no text to diff.
                continue;
            }
            let patch = Patch::from_diff(diff, idx)?;
            let delta_after = diff.get_delta(idx).expect("index is within deltas().len()");
            change.binary = delta_after.flags().is_binary()
                || delta_after.old_file().is_binary()
                || delta_after.new_file().is_binary();
            if let Some(patch) = patch
                && !change.binary
            {
                fill_hunks(change, &patch)?;
            }
        }
    }
    let mut d = Diff { base: None, head: None, files };
    d.sort();
    Ok(d)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The patch of an added or deleted file, counted without libgit2, is libgit2's:
    /// lines with and without a last newline, an empty file, carriage returns, a NUL
    /// inside and past the bytes searched for one, a single newline.
    #[test]
    fn one_sided_patches_are_libgit2s() {
        let long_then_nul = [vec![b'a'; BINARY_CHECK_BYTES], b"\0\nb\n".to_vec()].concat();
        let texts: [&[u8]; 8] = [
            b"one\ntwo\n",
            b"one\ntwo",
            b"",
            b"\n",
            b"crlf\r\nlines\r\n\r",
            b"bin\0ary\n",
            &long_then_nul,
            b"\n\n\nlast",
        ];
        for text in texts {
            for (a, b) in [(&b""[..], text), (text, &b""[..])] {
                let ours = one_sided_patch(a, b).expect("one side is empty");
                let theirs = libgit2_patch_of(a, b, "f.txt").unwrap();
                assert_eq!(ours, theirs, "{:?} -> {:?}", String::from_utf8_lossy(a), String::from_utf8_lossy(b));
            }
        }
        assert!(one_sided_patch(b"a\n", b"b\n").is_none());
    }

    fn change(path: &str, status: Status, old: Option<&str>, new: Option<&str>) -> FileChange {
        FileChange {
            path: path.to_string(),
            old_path: (status != Status::Added).then(|| path.to_string()),
            path_bytes: path.as_bytes().to_vec(),
            old_path_bytes: (status != Status::Added).then(|| path.as_bytes().to_vec()),
            status,
            binary: false,
            old_kind: if old.is_some() { EntryKind::File } else { EntryKind::Absent },
            new_kind: if new.is_some() { EntryKind::File } else { EntryKind::Absent },
            old_oid: old.map(str::to_string),
            new_oid: new.map(str::to_string),
            additions: 0,
            deletions: 0,
            hunks: Vec::new(),
        }
    }

    #[test]
    fn exact_renames_prefer_the_same_file_name_then_byte_order() {
        let mut files = vec![
            change("a/x.rs", Status::Deleted, Some("1"), None),
            change("b/y.rs", Status::Deleted, Some("1"), None),
            change("c/y.rs", Status::Added, None, Some("1")),
            change("d/z.rs", Status::Added, None, Some("1")),
            change("e/z.rs", Status::Added, None, Some("1")),
        ];
        pair_exact_renames(&mut files);
        let got: Vec<(&str, Status, Option<&str>)> =
            files.iter().map(|f| (f.path.as_str(), f.status, f.old_path.as_deref())).collect();
        assert_eq!(
            got,
            [
                ("c/y.rs", Status::Renamed, Some("b/y.rs")),
                ("d/z.rs", Status::Renamed, Some("a/x.rs")),
                ("e/z.rs", Status::Added, None),
            ]
        );
    }

    #[test]
    fn an_added_twin_of_a_modified_file_is_a_copy() {
        let mut files = vec![
            change("keep.rs", Status::Modified, Some("1"), Some("2")),
            change("copy.rs", Status::Added, None, Some("1")),
            change("other.rs", Status::Added, None, Some("3")),
        ];
        pair_exact_renames(&mut files);
        mark_exact_copies(&mut files);
        assert_eq!((files[1].status, files[1].old_path.as_deref()), (Status::Copied, Some("keep.rs")));
        assert_eq!(files[2].status, Status::Added);
    }
}
