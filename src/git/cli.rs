//! The `git` executable as the fallback of libgit2: the same data (a diff's changed
//! paths, blob contents), asked of git where libgit2 cannot give it.
//!
//! libgit2 cannot fetch a partial clone's missing blobs from its promisor remote, and
//! it has internal errors of its own on some real histories. git does both: a blob a
//! `--filter=blob:none` clone lacks is fetched on demand, as `git diff` would. Every
//! command here is plumbing with machine-readable output (`diff-tree --raw -z`,
//! `cat-file --batch`), run without a shell and with the repository named explicitly.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

use super::{GitError, Repo, Result};
use crate::diff::{EntryKind, FileChange, Status};

/// What the new side of a fallback diff is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum NewSide<'a> {
    /// A commit (its id).
    Commit(&'a str),
    /// The index, compared with HEAD.
    Index,
    /// The working tree, compared with HEAD (untracked files count as added).
    Worktree,
}

/// The error of one git invocation, with its stderr's last line.
fn failed(what: &str, stderr: &[u8]) -> GitError {
    let text = String::from_utf8_lossy(stderr);
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message").trim();
    GitError::Cli(format!("`git {what}`: {last}"))
}

/// The `git` executable run for one repository, without libgit2: either the way a
/// [`Repo`] names it (git directory and working tree explicit, git's own variables
/// cleared), or the way a hook's git left things (the current directory and the
/// environment git gave the hook), for a repository libgit2 cannot open.
pub(crate) struct GitExe {
    /// `--git-dir` and `--work-tree`, when named explicitly.
    dirs: Option<(std::path::PathBuf, Option<std::path::PathBuf>)>,
    cwd: std::path::PathBuf,
}

impl GitExe {
    /// git as it runs for `repo`.
    pub(crate) fn for_repo(repo: &Repo) -> GitExe {
        let cwd = repo.workdir().unwrap_or_else(|| repo.git_dir());
        GitExe { dirs: Some((repo.git_dir(), repo.workdir())), cwd }
    }

    /// git run in `cwd` with the process's environment (`GIT_DIR` and the like as the
    /// hook got them).
    pub(crate) fn in_dir(cwd: &std::path::Path) -> GitExe {
        GitExe { dirs: None, cwd: cwd.to_path_buf() }
    }

    /// A `git` command with fixed output, independent of the user's diff settings.
    pub(crate) fn command(&self) -> Command {
        let mut c = Command::new("git");
        if let Some((git_dir, work_tree)) = &self.dirs {
            c.arg("--git-dir").arg(git_dir);
            if let Some(w) = work_tree {
                c.arg("--work-tree").arg(w);
            }
            c.env_remove("GIT_DIR").env_remove("GIT_WORK_TREE");
        }
        c.current_dir(&self.cwd).env("LC_ALL", "C");
        c.args(["-c", "core.quotePath=false", "-c", "color.ui=never"]);
        c
    }

    /// Run git with `args`, returning stdout; an error names the command.
    pub(crate) fn output(&self, args: &[&str]) -> Result<Vec<u8>> {
        let out = self
            .command()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| GitError::Cli(format!("cannot run `git`: {e}")))?;
        if !out.status.success() {
            return Err(failed(args.first().copied().unwrap_or("git"), &out.stderr));
        }
        Ok(out.stdout)
    }

    /// Run git with `args` and `input` on its stdin, returning stdout. `offline`: no
    /// lazy fetch of a partial clone's missing objects (whether the clone has an
    /// object is a question for the clone, not for its promisor remote).
    pub(crate) fn output_with_input(&self, args: &[&str], input: &[u8], offline: bool) -> Result<Vec<u8>> {
        let what = args.first().copied().unwrap_or("git");
        let mut cmd = self.command();
        if offline {
            cmd.env("GIT_NO_LAZY_FETCH", "1");
        }
        let mut child = cmd
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| GitError::Cli(format!("cannot run `git`: {e}")))?;
        let stdin = child.stdin.take();
        let input = input.to_vec();
        // Written from another thread: git answers while it reads, and a pipe holds
        // only so much of its answer.
        let writer = std::thread::spawn(move || {
            if let Some(mut stdin) = stdin {
                let _ = stdin.write_all(&input);
            }
        });
        let out = child.wait_with_output().map_err(|e| GitError::Cli(format!("`git {what}`: {e}")))?;
        let _ = writer.join();
        if !out.status.success() {
            return Err(failed(what, &out.stderr));
        }
        Ok(out.stdout)
    }

    /// The id of the empty tree in this repository's hash (SHA-1 or SHA-256).
    pub(crate) fn empty_tree(&self) -> Result<String> {
        let out = self.output(&["hash-object", "-t", "tree", "/dev/null"])?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }
}

impl Repo {
    /// A `git` command for this repository: the git directory and working tree named
    /// explicitly (a hook's `GIT_DIR` may be relative to another directory), fixed
    /// output independent of the user's diff settings.
    fn git_command(&self) -> Command {
        GitExe::for_repo(self).command()
    }

    /// Run git with `args`, returning stdout; an error names the command.
    fn git_output(&self, args: &[&str]) -> Result<Vec<u8>> {
        GitExe::for_repo(self).output(args)
    }

    /// The id of the empty tree in this repository's hash (SHA-1 or SHA-256).
    fn empty_tree_cli(&self) -> Result<String> {
        let out = self.git_output(&["hash-object", "-t", "tree", "/dev/null"])?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    /// The changed files between `base` (`None`: the empty tree) and `new`, as git
    /// reports them with rename detection (`-M`), without hunks.
    pub(super) fn diff_files_cli(&self, base: Option<&str>, new: NewSide) -> Result<Vec<FileChange>> {
        let base = match base {
            Some(b) => b.to_string(),
            None => self.empty_tree_cli()?,
        };
        let common = ["-r", "-z", "--raw", "-M", "--no-abbrev", "--ignore-submodules=none", "--no-ext-diff"];
        let raw = match new {
            NewSide::Commit(head) => {
                let mut a = vec!["diff-tree"];
                a.extend(common);
                a.extend([base.as_str(), head]);
                self.git_output(&a)?
            }
            NewSide::Index => {
                let mut a = vec!["diff-index"];
                a.extend(common);
                a.extend(["--cached", base.as_str()]);
                self.git_output(&a)?
            }
            NewSide::Worktree => {
                // Porcelain `diff`, not `diff-index`: it refreshes stat information
                // (in memory), so a file touched but unchanged is not reported.
                let mut a = vec!["diff"];
                a.extend(common);
                a.push(base.as_str());
                self.git_output(&a)?
            }
        };
        let mut files = parse_raw(&raw)?;
        if matches!(new, NewSide::Worktree) {
            let untracked = self.git_output(&["ls-files", "-z", "--others", "--exclude-standard"])?;
            for p in untracked.split(|b| *b == 0).filter(|p| !p.is_empty()) {
                let path = String::from_utf8_lossy(p).into_owned();
                files.push(FileChange {
                    path,
                    old_path: None,
                    path_bytes: p.to_vec(),
                    old_path_bytes: None,
                    status: Status::Added,
                    binary: false,
                    old_kind: EntryKind::Absent,
                    new_kind: EntryKind::File,
                    old_oid: None,
                    new_oid: None,
                    additions: 0,
                    deletions: 0,
                    hunks: Vec::new(),
                });
            }
        }
        Ok(files)
    }

    /// The renames git pairs (`-M`, as `git diff -M` would: exact first, then by file
    /// name, then by similarity, within `diff.renameLimit`) between `base` and `new`
    /// among `paths`, the added and deleted paths of the change, as (old path, new path)
    /// bytes. The paths narrow git's walk to the change's additions and deletions,
    /// which are all rename detection compares (a path naming a directory on the
    /// other side brings only more of them): the same pairs as the whole diff's. A
    /// list too long for one command line is left out and the whole diff asked.
    pub(super) fn rename_pairs_cli(
        &self,
        base: &str,
        new: NewSide,
        paths: &[&[u8]],
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        use std::os::unix::ffi::OsStrExt;
        let mut cmd = self.git_command();
        // Paths are file names, never patterns.
        cmd.arg("--literal-pathspecs");
        match new {
            NewSide::Commit(head) => cmd.args(["diff-tree", "-r", "-z", "--raw", "-M", "--no-abbrev", base, head]),
            NewSide::Index => cmd.args(["diff-index", "-r", "-z", "--raw", "-M", "--no-abbrev", "--cached", base]),
            // The working tree is paired by libgit2 (its side has no blob ids to give).
            NewSide::Worktree => return Err(GitError::Cli("rename pairs of the working tree are libgit2's".into())),
        };
        let bytes: usize = paths.iter().map(|p| p.len() + 1).sum();
        if bytes <= MAX_PATHSPEC_BYTES {
            cmd.arg("--");
            cmd.args(paths.iter().map(|p| std::ffi::OsStr::from_bytes(p)));
        }
        let out = cmd
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| GitError::Cli(format!("cannot run `git`: {e}")))?;
        if !out.status.success() {
            return Err(failed("diff-tree -M", &out.stderr));
        }
        Ok(parse_raw(&out.stdout)?
            .into_iter()
            .filter(|f| f.status == Status::Renamed)
            .filter_map(|f| Some((f.old_path_bytes?, f.path_bytes)))
            .collect())
    }

    /// Fetch, in one request, the blobs of `oids` a partial clone lacks, as git itself
    /// does before a diff; without this, `cat-file` would fetch them one at a time.
    /// Best effort: whatever this misses, `cat-file` still fetches on demand.
    fn prefetch_cli(&self, oids: &[&str]) {
        let Ok(Some(remote)) = self.config_string("extensions.partialclone") else { return };
        let missing: Vec<&str> = oids.iter().copied().filter(|o| !self.has_object(o)).collect();
        if missing.is_empty() {
            return;
        }
        let spawned = self
            .git_command()
            .args(["-c", "fetch.negotiationAlgorithm=noop", "fetch", &remote, "--no-tags", "--no-write-fetch-head"])
            .args(["--recurse-submodules=no", "--filter=blob:none", "--stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(mut child) = spawned else { return };
        if let Some(mut stdin) = child.stdin.take() {
            let list: String = missing.iter().map(|o| format!("{o}\n")).collect();
            let _ = stdin.write_all(list.as_bytes());
        }
        let _ = child.wait();
    }

    /// The contents of blobs through `git cat-file --batch`, in the order asked;
    /// a partial clone's missing blobs are fetched from its promisor remote.
    pub(super) fn blobs_cli(&self, oids: &[&str]) -> Result<Vec<Vec<u8>>> {
        if oids.is_empty() {
            return Ok(Vec::new());
        }
        self.prefetch_cli(oids);
        let mut child = self
            .git_command()
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| GitError::Cli(format!("cannot run `git`: {e}")))?;
        let mut stdin = child.stdin.take().expect("stdin was piped");
        let list: String = oids.iter().map(|o| format!("{o}\n")).collect();
        // Written from another thread: git answers while it reads, and a pipe holds
        // only so much of its answer.
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(list.as_bytes());
        });
        let mut out = BufReader::new(child.stdout.take().expect("stdout was piped"));
        let mut blobs = Vec::with_capacity(oids.len());
        let mut header = Vec::new();
        let mut result = Ok(());
        for oid in oids {
            header.clear();
            if out.read_until(b'\n', &mut header).map_err(|e| GitError::Cli(format!("`git cat-file`: {e}")))? == 0 {
                result = Err(GitError::Cli("`git cat-file`: output ended early".into()));
                break;
            }
            let line = String::from_utf8_lossy(&header).trim_end().to_string();
            let fields: Vec<&str> = line.split(' ').collect();
            if fields.len() != 3 || fields[1] != "blob" {
                result = Err(GitError::Cli(format!("`git cat-file`: {oid}: {}", fields[1..].join(" "))));
                break;
            }
            let size: usize =
                fields[2].parse().map_err(|_| GitError::Cli(format!("`git cat-file`: bad header `{line}`")))?;
            let mut content = vec![0u8; size + 1];
            out.read_exact(&mut content).map_err(|e| GitError::Cli(format!("`git cat-file`: {e}")))?;
            content.truncate(size);
            blobs.push(content);
        }
        drop(out);
        let _ = writer.join();
        let mut stderr = Vec::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_end(&mut stderr);
        }
        let status = child.wait().map_err(|e| GitError::Cli(format!("`git cat-file`: {e}")))?;
        result?;
        if !status.success() && blobs.len() < oids.len() {
            return Err(failed("cat-file", &stderr));
        }
        Ok(blobs)
    }
}

/// Most bytes of paths given to one git command as pathspecs: Linux allows 2 MiB of
/// arguments and environment together; past this the whole diff is asked instead
/// (slower where the change is a small part of a large tree, the same answer).
const MAX_PATHSPEC_BYTES: usize = 512 * 1024;

/// The kind of one side of a raw diff entry, from its octal mode.
fn kind_of_mode(mode: &str) -> EntryKind {
    match mode {
        "000000" => EntryKind::Absent,
        "160000" => EntryKind::Submodule,
        "120000" => EntryKind::Symlink,
        _ => EntryKind::File,
    }
}

fn oid_of(s: &str) -> Option<String> {
    (!s.bytes().all(|b| b == b'0')).then(|| s.to_ascii_lowercase())
}

/// Parse `git diff --raw -z` output:
/// `:<old mode> <new mode> <old oid> <new oid> <status>[score]\0<path>\0[<new path>\0]`.
pub(crate) fn parse_raw(raw: &[u8]) -> Result<Vec<FileChange>> {
    let bad = |why: &str| GitError::Cli(format!("unexpected `git diff --raw` output: {why}"));
    let mut fields = raw.split(|b| *b == 0);
    let mut out = Vec::new();
    while let Some(meta) = fields.next() {
        if meta.is_empty() {
            continue;
        }
        let meta = std::str::from_utf8(meta).map_err(|_| bad("header is not UTF-8"))?;
        let meta = meta.strip_prefix(':').ok_or_else(|| bad("header without `:`"))?;
        let parts: Vec<&str> = meta.split(' ').collect();
        if parts.len() != 5 || parts[4].is_empty() {
            return Err(bad(meta));
        }
        let (old_mode, new_mode, old_oid, new_oid) = (parts[0], parts[1], parts[2], parts[3]);
        let letter = parts[4].as_bytes()[0];
        // Paths stay the bytes git printed; `path` is their UTF-8 reading.
        let mut next_path =
            || fields.next().filter(|p| !p.is_empty()).map(<[u8]>::to_vec).ok_or_else(|| bad("path missing"));
        let first = next_path()?;
        let (status, path_bytes, old_path_bytes) = match letter {
            b'A' => (Status::Added, first, None),
            b'D' => (Status::Deleted, first.clone(), Some(first)),
            b'M' => (Status::Modified, first.clone(), Some(first)),
            b'T' => (Status::Typechange, first.clone(), Some(first)),
            b'R' => (Status::Renamed, next_path()?, Some(first)),
            b'C' => (Status::Copied, next_path()?, Some(first)),
            // Unmerged and unknown entries are not changes.
            _ => continue,
        };
        let old_kind = if status == Status::Added { EntryKind::Absent } else { kind_of_mode(old_mode) };
        let new_kind = if status == Status::Deleted { EntryKind::Absent } else { kind_of_mode(new_mode) };
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        out.push(FileChange {
            path: lossy(&path_bytes),
            old_path: old_path_bytes.as_deref().map(lossy),
            path_bytes,
            old_path_bytes,
            status,
            binary: false,
            old_oid: if old_kind == EntryKind::Absent { None } else { oid_of(old_oid) },
            new_oid: if new_kind == EntryKind::Absent { None } else { oid_of(new_oid) },
            old_kind,
            new_kind,
            additions: 0,
            deletions: 0,
            hunks: Vec::new(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_records_of_every_status_parse() {
        let z = "0".repeat(40);
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let raw = format!(
            ":000000 100644 {z} {a} A\0new.txt\0:100644 100644 {a} {b} M\0mod.txt\0\
             :100644 000000 {a} {z} D\0gone.txt\0:100644 100644 {a} {a} R100\0old.rs\0new.rs\0\
             :160000 160000 {a} {b} M\0sub\0:100644 120000 {a} {b} T\0link\0"
        );
        let files = parse_raw(raw.as_bytes()).unwrap();
        assert_eq!(files.len(), 6);
        assert_eq!(
            (files[0].status, files[0].old_oid.as_deref(), files[0].new_oid.as_deref()),
            (Status::Added, None, Some(a.as_str()))
        );
        assert_eq!(files[2].status, Status::Deleted);
        assert_eq!(files[2].new_kind, EntryKind::Absent);
        assert_eq!((files[3].path.as_str(), files[3].old_path.as_deref()), ("new.rs", Some("old.rs")));
        assert!(files[4].is_submodule());
        assert_eq!((files[5].old_kind, files[5].new_kind), (EntryKind::File, EntryKind::Symlink));
    }

    #[test]
    fn truncated_raw_output_is_an_error() {
        let a = "a".repeat(40);
        assert!(parse_raw(format!(":100644 100644 {a} {a} R100\0old\0").as_bytes()).is_err());
        assert!(parse_raw(b":garbage\0x\0").is_err());
    }
}
