//! The only module that names git2 types. It opens repositories and converts git2's
//! borrowed values into the owned types of `crate::diff` (and plain strings), so the
//! rest of premerge never depends on git2 lifetimes.
//!
//! Submodules of this module group `impl Repo` blocks by concern: `diffs` (trees,
//! index, working tree), `push` (pre-push and post-merge ranges), `fence_paths` (what a
//! push lands on the remote, as the fence judges it, through libgit2 or git).

mod cli;
mod diffs;
pub(crate) use diffs::Detail;
mod fence_paths;
pub use fence_paths::{FencePaths, RefPaths, fence_paths_in};
mod gate;
mod install;
pub(crate) mod locate;
mod push;
mod quick;
mod scratch;
mod tree_files;

use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository};

pub(crate) use gate::PathCommits;
pub use push::{PushLine, Range, parse_push_lines};

use crate::store::StateDir;

/// The all-zeros object id git uses for "no object" in a SHA-1 repository's hook input.
#[cfg(test)]
pub(crate) const ZERO_OID: &str = "0000000000000000000000000000000000000000";

/// Errors of repository access.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The directory is not inside a git repository.
    #[error("{path}: not a git repository")]
    NotARepository { path: String },
    /// The repository belongs to another user and git's `safe.directory` does not list it.
    #[error(
        "{path}: detected dubious ownership of the repository (git refuses it too: {why}); to trust it, run `git config --global --add safe.directory {path}`"
    )]
    DubiousOwnership { path: String, why: String },
    /// A revision git could not resolve.
    #[error("unknown revision `{rev}`")]
    UnknownRevision { rev: String },
    /// A revision that names something other than a commit.
    #[error("`{rev}` does not name a commit")]
    NotACommit { rev: String },
    /// A pre-push input line that is not four fields.
    #[error("pre-push input line {line}: {why}")]
    BadPushLine { line: usize, why: String },
    /// git reads the repository, libgit2 cannot open it (reftable refs, the SHA-256
    /// object format, `extensions.partialClone`): the message names the format.
    #[error("{0}")]
    UnsupportedFormat(String),
    /// The operation needs a working tree.
    #[error("repository has no working tree (bare)")]
    Bare,
    /// Anything else libgit2 reported. Its message only, not also as a source: the
    /// error chain would print it twice.
    #[error("git: {}", .0.message())]
    Git(git2::Error),
    /// A push updates a remote ref whose current tip the clone does not have (someone
    /// else pushed since the last fetch): what the update discards cannot be judged.
    #[error(
        "the remote's {remote_ref} is at {oid}, which this clone does not have: fetch it so the fence can judge what the push replaces"
    )]
    RemoteTipUnknown { remote_ref: String, oid: String },
    /// A push sends more commits than the fence judges one by one.
    #[error("the push of {remote_ref} sends more than {max} commits the remote does not have: too many to judge")]
    TooManyCommits { remote_ref: String, max: usize },
    /// The `git` executable (the fallback) failed or answered unexpectedly.
    #[error("{0}")]
    Cli(String),
}

impl From<git2::Error> for GitError {
    fn from(e: git2::Error) -> GitError {
        GitError::Git(e)
    }
}

impl GitError {
    /// Whether git may read what libgit2 could not: its internal errors, objects it
    /// cannot find (a partial clone's missing blobs), anything else it reported. Not
    /// a revision that names nothing or the wrong kind of object: git agrees on those.
    pub(super) fn wants_fallback(&self) -> bool {
        matches!(self, GitError::Git(_))
    }

    /// This libgit2 error, with what the `git` fallback said when it failed too.
    pub(super) fn with_fallback(self, cli: GitError) -> GitError {
        GitError::Cli(format!("{self}; git fallback: {cli}"))
    }
}

pub type Result<T> = std::result::Result<T, GitError>;

/// Why a repository could not be opened: dubious ownership is said as git says it,
/// with the way to allow it; a format git reads and libgit2 does not is named; anything
/// else is "not a git repository".
fn open_error(path: &Path, e: git2::Error) -> GitError {
    if e.code() == git2::ErrorCode::Owner {
        let owned_dir =
            e.message().split('\'').nth(1).map(str::to_string).unwrap_or_else(|| path.display().to_string());
        return GitError::DubiousOwnership { path: owned_dir, why: e.message().to_string() };
    }
    // A repository git reads but libgit2 cannot open is named by its format, never
    // called "not a git repository" (one `git` run, on this failure path only).
    match locate::unopenable_reason(path) {
        Some(why) => GitError::UnsupportedFormat(why),
        None => GitError::NotARepository { path: path.display().to_string() },
    }
}

/// How much of a pack file libgit2 maps at a time. Its default (1 GiB) maps a whole
/// pack, and every page a scan reads stays in the process's resident memory to its
/// end: the synthetic change of 60,000 files read 33 MiB of pack that way (issue 30
/// part 5: peak memory whatever the size of the change). Smaller windows cost a few
/// more `mmap` calls on a large read, and minor faults on pages read again.
const PACK_WINDOW_BYTES: usize = 4 << 20;

/// Most bytes of pack files mapped at once (libgit2's default is 8 GiB); past it,
/// libgit2 unmaps the windows used least recently. Four windows: one for each of the
/// scan's threads reading blobs, and room for the trees.
const PACK_MAPPED_BYTES: usize = 16 << 20;

/// Process-wide libgit2 settings, applied once before the first repository opens.
///
/// libgit2 re-hashes every object it reads to verify its id (with the slow
/// collision-detecting SHA-1); git itself does not on read. premerge only reads local
/// objects that git already verified on write, and skipping the check saves about a
/// tenth of a large diff's time.
fn tune_libgit2() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        git2::opts::strict_hash_verification(false);
        // SAFETY: libgit2's global settings are written here once, before the first
        // repository opens, so no other thread reads them meanwhile.
        unsafe {
            // Best effort: libgit2's own defaults stand if it refuses.
            let _ = git2::opts::set_mwindow_size(PACK_WINDOW_BYTES);
            let _ = git2::opts::set_mwindow_mapped_limit(PACK_MAPPED_BYTES);
        }
    });
}

/// An open repository.
pub struct Repo {
    inner: Repository,
}

/// Fewest items worth a thread of their own in [`Repo::on_threads`]: below this, opening
/// another repository handle costs more than the reads it would share.
const MIN_ITEMS_PER_THREAD: usize = 64;

impl Repo {
    /// Open the repository containing `path`, searching upwards like git does.
    pub fn discover(path: &Path) -> Result<Repo> {
        tune_libgit2();
        Repository::discover(path).map(|inner| Repo { inner }).map_err(|e| open_error(path, e))
    }

    /// Open the repository the way a git subcommand would: honouring `GIT_DIR` and
    /// `GIT_WORK_TREE` (set by git when it runs a hook), else discovering from `cwd`.
    pub(crate) fn open_for_command(cwd: &Path) -> Result<Repo> {
        if crate::env::process().var_os("GIT_DIR").is_some() {
            tune_libgit2();
            return Repository::open_from_env().map(|inner| Repo { inner }).map_err(|e| open_error(cwd, e));
        }
        Repo::discover(cwd)
    }

    /// The working tree root, `None` for a bare repository.
    pub(crate) fn workdir(&self) -> Option<PathBuf> {
        self.inner.workdir().map(|p| p.to_path_buf())
    }

    /// The working tree root, or [`GitError::Bare`].
    pub(crate) fn require_workdir(&self) -> Result<PathBuf> {
        self.workdir().ok_or(GitError::Bare)
    }

    /// This worktree's git directory (`.git`, or `.git/worktrees/<name>`).
    pub fn git_dir(&self) -> PathBuf {
        self.inner.path().to_path_buf()
    }

    /// The common git directory shared by all worktrees of the clone.
    pub(crate) fn common_dir(&self) -> PathBuf {
        self.inner.commondir().to_path_buf()
    }

    /// The per-clone premerge state directory.
    pub fn state_dir(&self) -> StateDir {
        StateDir::new(&self.common_dir())
    }

    /// Resolve any revision git understands to a commit id.
    pub(crate) fn resolve_commit(&self, rev: &str) -> Result<String> {
        let obj = self.inner.revparse_single(rev).map_err(|_| GitError::UnknownRevision { rev: rev.to_string() })?;
        let commit = obj.peel(ObjectType::Commit).map_err(|_| GitError::NotACommit { rev: rev.to_string() })?;
        Ok(commit.id().to_string())
    }

    /// The commit HEAD points at, `None` on an unborn branch.
    pub(crate) fn head_oid(&self) -> Option<String> {
        self.inner.head().ok().and_then(|h| h.peel_to_commit().ok()).map(|c| c.id().to_string())
    }

    /// Whether an object with this id exists in the repository.
    pub(crate) fn has_object(&self, oid: &str) -> bool {
        Oid::from_str(oid).ok().is_some_and(|o| self.inner.find_object(o, None).is_ok())
    }

    /// Whether `ancestor` is reachable from `descendant` (or equal to it).
    pub(crate) fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool> {
        let a = Oid::from_str(ancestor)?;
        let d = Oid::from_str(descendant)?;
        Ok(a == d || self.inner.graph_descendant_of(d, a)?)
    }

    /// The merge base of two commits, if they share history.
    pub(crate) fn merge_base(&self, a: &str, b: &str) -> Result<Option<String>> {
        match self.inner.merge_base(Oid::from_str(a)?, Oid::from_str(b)?) {
            Ok(o) => Ok(Some(o.to_string())),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The contents of a blob.
    pub fn blob(&self, oid: &str) -> Result<Vec<u8>> {
        let git2 = (|| Ok(self.inner.find_blob(Oid::from_str(oid)?)?.content().to_vec()))();
        self.or_git(git2, || Ok(self.blobs_cli(&[oid])?.pop().unwrap_or_default()))
    }

    /// The contents of many blobs, in the order asked. Large batches are read on rayon's
    /// threads, each with its own repository handle (a git2 `Repository` is not `Sync`),
    /// as inflating thousands of objects one after another would leave cores idle.
    /// Where libgit2 cannot read one (a partial clone's missing blob), all are read
    /// through git, which fetches what is missing from the promisor remote.
    pub fn blobs(&self, oids: &[&str]) -> Result<Vec<Vec<u8>>> {
        // Read from the object database: a blob looked up as an object would also be
        // kept in the repository's object cache, for nothing.
        let git2 = self.on_threads(oids, |repo, oid| {
            let odb = repo.odb()?;
            let object = odb.read(Oid::from_str(oid)?)?;
            if object.kind() != git2::ObjectType::Blob {
                return Err(git2::Error::from_str(&format!("{oid} is a {}, not a blob", object.kind())).into());
            }
            Ok(object.data().to_vec())
        });
        self.or_git(git2, || self.blobs_cli(oids))
    }

    /// `f` over every item, in order. Many items are spread over rayon's threads in
    /// chunks, each chunk with its own handle on the repository (a git2 `Repository` is
    /// not `Sync`); a few run here, on this handle.
    fn on_threads<T: Sync, R: Send>(
        &self,
        items: &[T],
        f: impl Fn(&Repository, &T) -> Result<R> + Sync,
    ) -> Result<Vec<R>> {
        use rayon::prelude::*;
        let threads = rayon::current_num_threads().max(1);
        if threads == 1 || items.len() < 2 * MIN_ITEMS_PER_THREAD {
            return items.iter().map(|item| f(&self.inner, item)).collect();
        }
        let per = items.len().div_ceil(threads).max(MIN_ITEMS_PER_THREAD);
        let dir = self.inner.path();
        let chunks: Vec<Result<Vec<R>>> = items
            .par_chunks(per)
            .map(|chunk| {
                let repo = Repository::open(dir)?;
                chunk.iter().map(|item| f(&repo, item)).collect()
            })
            .collect();
        let mut out = Vec::with_capacity(items.len());
        for c in chunks {
            out.extend(c?);
        }
        Ok(out)
    }

    /// The contents of `path` in commit `rev`, `None` when the path is absent there.
    pub(crate) fn file_at(&self, rev: &str, path: &str) -> Result<Option<Vec<u8>>> {
        let commit = self.inner.find_commit(Oid::from_str(rev)?)?;
        let tree = commit.tree()?;
        let entry = match tree.get_path(Path::new(path)) {
            Ok(e) => e,
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        match entry.to_object(&self.inner)?.into_blob() {
            Ok(b) => Ok(Some(b.content().to_vec())),
            Err(_) => Ok(None),
        }
    }

    /// Every `premerge.*` entry of the repository's effective git config, in the
    /// order git reads them (later entries win).
    pub(crate) fn premerge_config_entries(&self) -> Result<Vec<(String, String)>> {
        let cfg = self.inner.config()?;
        let mut out = Vec::new();
        let mut entries = cfg.entries(Some("premerge\\..*"))?;
        while let Some(e) = entries.next() {
            let e = e?;
            // A key without `=` is git's shorthand for true; git2 panics when asked
            // for its value, so it is never asked.
            let value = if e.has_value() { e.value() } else { Some("true") };
            if let (Some(name), Some(value)) = (e.name(), value) {
                out.push((name.to_string(), value.to_string()));
            }
        }
        Ok(out)
    }

    /// A string value of the effective git config (`core.hooksPath` and the like).
    pub(crate) fn config_string(&self, key: &str) -> Result<Option<String>> {
        let cfg = self.inner.config()?;
        match cfg.get_string(key) {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether `oid` is where a shallow clone's history was cut (listed in
    /// `<git dir>/shallow`): libgit2 shows it without parents, but it is no root.
    pub(crate) fn is_shallow_boundary(&self, oid: &str) -> bool {
        if !self.inner.is_shallow() {
            return false;
        }
        std::fs::read_to_string(self.common_dir().join("shallow"))
            .is_ok_and(|list| list.lines().any(|l| l.trim().eq_ignore_ascii_case(oid)))
    }

    /// Whether the repository is bare.
    pub(crate) fn is_bare(&self) -> bool {
        self.inner.is_bare()
    }
}
