//! The paths a push lands on the remote, as the commit fence judges them: what each
//! ref update does to the remote, not what `merge-base..local` adds.
//!
//! For every line of git's pre-push input:
//!
//! - **an update of an existing remote ref**: every path that differs between the
//!   remote's old tip and the new tip (so a force push that deletes a file, a rewind
//!   that reverts the remote's last change and an unrelated history all count), plus
//!   every path each pushed commit touches on its own (so a stray added and removed
//!   again inside the push counts);
//! - **a new ref**: every path each pushed commit touches, the pushed commits being
//!   those reachable from the new tip and from no commit the remote already has (see
//!   [`Reader::known_remote_tips`]). When the clone knows nothing of any remote, every
//!   commit of the history is pushed, the root's whole tree included;
//! - **a ref deletion** lands no path;
//! - **a tag of a tree or a blob** lands no path on a branch: it pushes no commit;
//! - **the remote's old tip missing from the clone** (someone else pushed since the
//!   last fetch): an error, [`GitError::RemoteTipUnknown`]: the fence cannot verify
//!   what the update discards, so it refuses while a loop is open.
//!
//! A commit's own paths are its changes against its first parent (a merge: against
//! the branch it was merged into, so the other side's changes count when that side
//! is not pushed commit by commit; a root commit: against the empty tree). Renames
//! are not paired: the old and the new path both count.
//!
//! The algorithm is written once over [`Reader`], with two implementations that must
//! agree: libgit2 ([`Repo`]) and the `git` executable ([`GitExe`]: `rev-list`,
//! `diff-tree --no-renames`, `for-each-ref`), for repositories libgit2 cannot open
//! (reftable, `extensions.partialClone`, SHA-256) or cannot read.
//! One question goes to git first even on the libgit2 side: which commits a push
//! sends (`rev-list`), where libgit2's walk is several times slower on clones with
//! many remote-tracking refs; libgit2 walks only where git cannot be run.

use std::collections::BTreeSet;
use std::path::Path;

use git2::{DiffOptions, ObjectType, Oid, Sort};

use super::cli::GitExe;
use super::{GitError, PushLine, Repo, Result};

/// Most commits one push may send for the fence to judge one by one. A fix loop
/// pushes a handful; the whole history of a mid-sized project (ripgrep: about 2,300
/// commits) fits with room to spare. Beyond this the push is no fix, and judging
/// each commit would keep a hook busy for minutes: the fence refuses instead.
pub(crate) const MAX_FENCED_COMMITS: usize = 20_000;

/// The paths one ref update lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefPaths {
    /// The remote ref the line updates (`refs/heads/main`).
    pub remote_ref: String,
    /// Its paths, byte-sorted.
    pub paths: BTreeSet<Vec<u8>>,
}

/// The paths a whole push lands: per ref, and all of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FencePaths {
    /// One entry per input line, in input order (deletions with no paths).
    pub refs: Vec<RefPaths>,
}

impl FencePaths {
    /// Every path of every ref, byte-sorted and deduplicated: the set the fence judges.
    pub fn total(&self) -> Vec<Vec<u8>> {
        let set: BTreeSet<&Vec<u8>> = self.refs.iter().flat_map(|r| &r.paths).collect();
        set.into_iter().cloned().collect()
    }
}

/// What an object id names, as far as the fence cares.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Peeled {
    /// Not in the clone's object database.
    Missing,
    /// A commit, directly or through annotated tags (its id).
    Commit(String),
    /// A tree, a blob, or a tag of one.
    NoCommit,
}

/// The questions the fence's path set needs answered about a repository.
trait Reader {
    /// What `oid` names.
    fn peel(&self, oid: &str) -> Result<Peeled>;
    /// The commits a remote is known to have: the tips of `refs/remotes/<remote>/*`;
    /// when there are none (a URL, a remote never fetched), the tips of every
    /// `refs/remotes/*`, since a commit some remote has was fetched from somewhere the
    /// pipeline pushes to. Only refs naming commits.
    fn known_remote_tips(&self, remote: &str) -> Result<Vec<String>>;
    /// The commits reachable from `tip` and from none of `hide`, at most
    /// `MAX_FENCED_COMMITS + 1` of them.
    fn new_commits(&self, tip: &str, hide: &[String]) -> Result<Vec<String>>;
    /// Every path that differs between two commits' trees (`old = None`: the empty tree).
    fn tree_paths(&self, old: Option<&str>, new: &str) -> Result<Vec<Vec<u8>>>;
    /// Every path each commit touches against its first parent (a root: the empty tree).
    fn commit_paths(&self, commits: &[String]) -> Result<Vec<Vec<u8>>>;
}

/// The fence's path set of a push, over any [`Reader`].
fn fence_paths_with(r: &dyn Reader, remote: &str, lines: &[PushLine]) -> Result<FencePaths> {
    let mut known: Option<Vec<String>> = None;
    let mut refs = Vec::with_capacity(lines.len());
    for line in lines {
        let mut paths = BTreeSet::new();
        if !line.is_deletion() {
            // The local side is git's own object: it is pushing it.
            let new = match r.peel(&line.local_oid)? {
                Peeled::Commit(c) => Some(c),
                Peeled::NoCommit => None,
                Peeled::Missing => return Err(GitError::UnknownRevision { rev: line.local_oid.clone() }),
            };
            if let Some(new) = new {
                let known = match &known {
                    Some(k) => k,
                    None => known.insert(r.known_remote_tips(remote)?),
                };
                let mut hide = known.clone();
                if !line.is_new_ref() {
                    let old = match r.peel(&line.remote_oid)? {
                        Peeled::Commit(c) => Some(c),
                        // A ref that held a tree or a blob: the update replaces no tree.
                        Peeled::NoCommit => None,
                        Peeled::Missing => {
                            return Err(GitError::RemoteTipUnknown {
                                remote_ref: line.remote_ref.clone(),
                                oid: line.remote_oid.clone(),
                            });
                        }
                    };
                    paths.extend(r.tree_paths(old.as_deref(), &new)?);
                    hide.extend(old);
                }
                let commits = r.new_commits(&new, &hide)?;
                if commits.len() > MAX_FENCED_COMMITS {
                    return Err(GitError::TooManyCommits {
                        remote_ref: line.remote_ref.clone(),
                        max: MAX_FENCED_COMMITS,
                    });
                }
                paths.extend(r.commit_paths(&commits)?);
            }
        }
        refs.push(RefPaths { remote_ref: line.remote_ref.clone(), paths });
    }
    Ok(FencePaths { refs })
}

impl Repo {
    /// The fence's path set of a push to `remote` (a name or a URL): libgit2 first,
    /// the `git` executable where libgit2 fails on something git may read.
    pub fn fence_paths(&self, remote: &str, lines: &[PushLine]) -> Result<FencePaths> {
        if force_cli() {
            return self.fence_paths_cli(remote, lines);
        }
        match fence_paths_with(self, remote, lines) {
            Err(e) if e.wants_fallback() => self.fence_paths_cli(remote, lines).map_err(|cli| e.with_fallback(cli)),
            other => other,
        }
    }

    /// The same set through the `git` executable alone.
    pub fn fence_paths_cli(&self, remote: &str, lines: &[PushLine]) -> Result<FencePaths> {
        fence_paths_with(&GitExe::for_repo(self), remote, lines)
    }
}

impl Repo {
    /// The oldest of the commits reachable from `tip` and from nothing `remote` is known
    /// to have ([`Reader::known_remote_tips`]), in git's topological order: where a new
    /// ref's pushed range starts. `None` when the remote has every one of them.
    ///
    /// git is asked first (`for-each-ref`, then `rev-list --topo-order --reverse
    /// --stdin`): on a clone with many remote-tracking refs libgit2's limited walk parses
    /// far more commits than git's (langfuse, 733 remote refs: about 200 ms of CPU
    /// against git's 25 ms), and git's order is the one pre-commit reads the same range
    /// from. libgit2 answers where git cannot be run or fails.
    pub(crate) fn oldest_new_commit(&self, remote: &str, tip: &str) -> Result<Option<String>> {
        let git = GitExe::for_repo(self);
        match git.known_remote_tips(remote).and_then(|hide| git.oldest_new_commit_cli(tip, &hide)) {
            Ok(first) => Ok(first),
            Err(_) => self.oldest_new_commit_git2(tip, &self.known_remote_tips(remote)?),
        }
    }

    fn oldest_new_commit_git2(&self, tip: &str, hide: &[String]) -> Result<Option<String>> {
        let mut walk = self.inner.revwalk()?;
        walk.set_sorting(Sort::TOPOLOGICAL | Sort::REVERSE)?;
        walk.push(oid(tip)?)?;
        for h in hide {
            walk.hide(oid(h)?)?;
        }
        Ok(walk.next().transpose()?.map(|o| o.to_string()))
    }
}

impl GitExe {
    fn oldest_new_commit_cli(&self, tip: &str, hide: &[String]) -> Result<Option<String>> {
        let input = rev_list_input(tip, hide);
        let out =
            self.output_with_input(&["rev-list", "--topo-order", "--reverse", "--stdin"], input.as_bytes(), true)?;
        let first = out.split(|b| *b == b'\n').next().unwrap_or_default();
        let first = String::from_utf8_lossy(first).trim().to_ascii_lowercase();
        if first.is_empty() {
            return Ok(None);
        }
        // Anything but an object id is not an answer: libgit2 is asked instead.
        match Oid::from_str(&first) {
            Ok(_) => Ok(Some(first)),
            Err(_) => Err(GitError::Cli(format!("`git rev-list`: unexpected output `{}`", first.escape_debug()))),
        }
    }
}

/// The fence's path set of a push, computed by the `git` executable run in `cwd` with
/// the environment git gave the hook: for a repository libgit2 cannot open.
pub fn fence_paths_in(cwd: &Path, remote: &str, lines: &[PushLine]) -> Result<FencePaths> {
    fence_paths_with(&GitExe::in_dir(cwd), remote, lines)
}

/// Debug builds only: with this variable set to `1`, [`Repo::fence_paths`] asks the
/// `git` executable even where libgit2 can answer, so the integration tests can show
/// both give the same answer on the same pushes.
#[cfg(debug_assertions)]
pub(crate) const TEST_FORCE_CLI_ENV: &str = "PREMERGE_TEST_FENCE_GIT_CLI";

#[cfg(debug_assertions)]
fn force_cli() -> bool {
    crate::env::process().var(TEST_FORCE_CLI_ENV).is_some_and(|v| v == "1")
}

#[cfg(not(debug_assertions))]
fn force_cli() -> bool {
    false
}

fn oid(s: &str) -> Result<Oid> {
    Oid::from_str(s).map_err(|_| GitError::UnknownRevision { rev: s.to_string() })
}

impl Reader for Repo {
    fn peel(&self, id: &str) -> Result<Peeled> {
        let Ok(obj) = self.inner.find_object(oid(id)?, None) else { return Ok(Peeled::Missing) };
        Ok(match obj.peel(ObjectType::Commit) {
            Ok(c) => Peeled::Commit(c.id().to_string()),
            Err(_) => Peeled::NoCommit,
        })
    }

    fn known_remote_tips(&self, remote: &str) -> Result<Vec<String>> {
        let own = format!("refs/remotes/{remote}/");
        let mut own_tips = Vec::new();
        let mut all_tips = Vec::new();
        for r in self.inner.references_glob("refs/remotes/*")? {
            let r = r?;
            let Ok(resolved) = r.resolve() else { continue };
            let Some(target) = resolved.target() else { continue };
            if self.inner.find_commit(target).is_err() {
                continue;
            }
            if r.name_bytes().starts_with(own.as_bytes()) {
                own_tips.push(target.to_string());
            }
            all_tips.push(target.to_string());
        }
        Ok(if own_tips.is_empty() { all_tips } else { own_tips })
    }

    fn new_commits(&self, tip: &str, hide: &[String]) -> Result<Vec<String>> {
        // git first, for speed only: the set is the same, and libgit2's limited walk
        // parses far more commits than git's where many tips are hidden (see
        // [`Repo::oldest_new_commit`]). libgit2 answers where git cannot be run.
        if let Ok(commits) = GitExe::for_repo(self).new_commits(tip, hide) {
            return Ok(commits);
        }
        let mut walk = self.inner.revwalk()?;
        walk.set_sorting(Sort::TOPOLOGICAL)?;
        walk.push(oid(tip)?)?;
        for h in hide {
            walk.hide(oid(h)?)?;
        }
        let mut out = Vec::new();
        for c in walk.take(MAX_FENCED_COMMITS + 1) {
            out.push(c?.to_string());
        }
        Ok(out)
    }

    fn tree_paths(&self, old: Option<&str>, new: &str) -> Result<Vec<Vec<u8>>> {
        let old_tree = match old {
            Some(o) => Some(self.inner.find_commit(oid(o)?)?.tree()?),
            None => None,
        };
        let new_tree = self.inner.find_commit(oid(new)?)?.tree()?;
        self.paths_between(old_tree.as_ref(), &new_tree)
    }

    fn commit_paths(&self, commits: &[String]) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        for c in commits {
            let commit = self.inner.find_commit(oid(c)?)?;
            let parent = match commit.parent_ids().next() {
                Some(p) => Some(self.inner.find_commit(p)?.tree()?),
                None => None,
            };
            out.extend(self.paths_between(parent.as_ref(), &commit.tree()?)?);
        }
        Ok(out)
    }
}

impl Repo {
    /// Every path of a tree-to-tree diff, without rename pairing (both sides count).
    fn paths_between(&self, old: Option<&git2::Tree<'_>>, new: &git2::Tree<'_>) -> Result<Vec<Vec<u8>>> {
        let mut opts = DiffOptions::new();
        opts.ignore_submodules(false).include_typechange(true).skip_binary_check(true);
        let diff = self.inner.diff_tree_to_tree(old, Some(new), Some(&mut opts))?;
        let mut out = Vec::with_capacity(diff.deltas().len());
        for d in diff.deltas() {
            for f in [d.old_file(), d.new_file()] {
                if let Some(p) = f.path_bytes()
                    && out.last().is_none_or(|l: &Vec<u8>| l.as_slice() != p)
                {
                    out.push(p.to_vec());
                }
            }
        }
        Ok(out)
    }
}

impl Reader for GitExe {
    fn peel(&self, id: &str) -> Result<Peeled> {
        // `cat-file --batch-check` answers `<oid> <type> <size>`, or `<name> missing`
        // for an object the clone lacks, without failing.
        let out = self.output_with_input(
            &["cat-file", "--batch-check"],
            format!("{id}\n{id}^{{commit}}\n").as_bytes(),
            true,
        )?;
        let text = String::from_utf8_lossy(&out);
        let mut lines = text.lines();
        let (Some(obj), Some(commit)) = (lines.next(), lines.next()) else {
            return Err(GitError::Cli(format!("`git cat-file --batch-check`: no answer for {id}")));
        };
        if obj.ends_with(" missing") {
            return Ok(Peeled::Missing);
        }
        Ok(match commit.split(' ').collect::<Vec<_>>().as_slice() {
            [c, "commit", _] => Peeled::Commit(c.to_ascii_lowercase()),
            _ => Peeled::NoCommit,
        })
    }

    fn known_remote_tips(&self, remote: &str) -> Result<Vec<String>> {
        let out = self.output(&["for-each-ref", "--format=%(objecttype) %(objectname) %(refname)", "refs/remotes/"])?;
        let own = format!("refs/remotes/{remote}/");
        let mut own_tips = Vec::new();
        let mut all_tips = Vec::new();
        for line in out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let mut parts = line.splitn(3, |b| *b == b' ');
            let (Some(kind), Some(id), Some(name)) = (parts.next(), parts.next(), parts.next()) else { continue };
            if kind != b"commit" {
                continue;
            }
            let id = String::from_utf8_lossy(id).into_owned();
            if name.starts_with(own.as_bytes()) {
                own_tips.push(id.clone());
            }
            all_tips.push(id);
        }
        Ok(if own_tips.is_empty() { all_tips } else { own_tips })
    }

    fn new_commits(&self, tip: &str, hide: &[String]) -> Result<Vec<String>> {
        let input = rev_list_input(tip, hide);
        let max = format!("--max-count={}", MAX_FENCED_COMMITS + 1);
        let out = self.output_with_input(&["rev-list", "--topo-order", &max, "--stdin"], input.as_bytes(), false)?;
        Ok(String::from_utf8_lossy(&out).lines().map(str::to_string).collect())
    }

    fn tree_paths(&self, old: Option<&str>, new: &str) -> Result<Vec<Vec<u8>>> {
        let old = match old {
            Some(o) => o.to_string(),
            None => self.empty_tree()?,
        };
        let out = self.output(&[
            "diff-tree",
            "-r",
            "-z",
            "--no-renames",
            "--name-only",
            "--ignore-submodules=none",
            &old,
            new,
        ])?;
        Ok(nul_separated(&out))
    }

    fn commit_paths(&self, commits: &[String]) -> Result<Vec<Vec<u8>>> {
        if commits.is_empty() {
            return Ok(Vec::new());
        }
        // One process for every commit: ids on stdin, each diffed against its first
        // parent (`--diff-merges=first-parent`), a root against the empty tree
        // (`--root`), paths only with no commit id lines between them.
        let input: String = commits.iter().map(|c| format!("{c}\n")).collect();
        let args = [
            "diff-tree",
            "--stdin",
            "-r",
            "-z",
            "--no-renames",
            "--name-only",
            "--no-commit-id",
            "--root",
            "--diff-merges=first-parent",
            "--ignore-submodules=none",
        ];
        Ok(nul_separated(&self.output_with_input(&args, input.as_bytes(), false)?))
    }
}

/// `rev-list --stdin`'s input for the commits reachable from `tip` and from none of
/// `hide`: the hidden tips on stdin, since there may be more than a command line holds.
fn rev_list_input(tip: &str, hide: &[String]) -> String {
    let mut input = format!("{tip}\n--not\n");
    for h in hide {
        input.push_str(h);
        input.push('\n');
    }
    input
}

fn nul_separated(out: &[u8]) -> Vec<Vec<u8>> {
    out.split(|b| *b == 0).filter(|p| !p.is_empty()).map(<[u8]>::to_vec).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_is_the_sorted_union_of_every_ref() {
        let set = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<BTreeSet<_>>();
        let f = FencePaths {
            refs: vec![
                RefPaths { remote_ref: "refs/heads/a".into(), paths: set(&["b.txt", "a.py"]) },
                RefPaths { remote_ref: "refs/heads/b".into(), paths: set(&[]) },
                RefPaths { remote_ref: "refs/heads/c".into(), paths: set(&["a.py", "Z"]) },
            ],
        };
        assert_eq!(f.total(), vec![b"Z".to_vec(), b"a.py".to_vec(), b"b.txt".to_vec()]);
    }

    #[test]
    fn nul_separated_output_keeps_every_byte_of_a_path() {
        assert_eq!(nul_separated(b"a b\0\xff\n\0"), vec![b"a b".to_vec(), b"\xff\n".to_vec()]);
        assert!(nul_separated(b"").is_empty());
    }
}
