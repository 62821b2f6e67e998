//! Ranges for the hooks: the commits a `git push` sends, and `ORIG_HEAD..HEAD`
//! after a merge.

use git2::Oid;

use super::{GitError, Repo, Result};
use crate::diff::Diff;

/// One line of git's pre-push input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushLine {
    pub local_ref: String,
    pub local_oid: String,
    pub remote_ref: String,
    pub remote_oid: String,
}

impl PushLine {
    /// A deletion pushes no commits (`git push origin :branch`).
    pub(crate) fn is_deletion(&self) -> bool {
        is_null_oid(&self.local_oid)
    }
    /// The remote does not have the ref yet.
    pub(crate) fn is_new_ref(&self) -> bool {
        is_null_oid(&self.remote_oid)
    }
}

/// git's "no object": all zeros, 40 of them in a SHA-1 repository and 64 in a
/// SHA-256 one.
fn is_null_oid(s: &str) -> bool {
    s.bytes().all(|b| b == b'0')
}

fn is_oid(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Parse git's pre-push stdin: `<local ref> <local oid> <remote ref> <remote oid>` per
/// line. Empty input is valid (nothing to push). Blank lines are skipped.
pub fn parse_push_lines(input: &str) -> Result<Vec<PushLine>> {
    let mut out = Vec::new();
    for (i, raw) in input.lines().enumerate() {
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let parts: Vec<&str> = line.split(' ').collect();
        if parts.len() != 4 {
            return Err(GitError::BadPushLine {
                line: i + 1,
                why: format!("expected 4 space-separated fields, found {}", parts.len()),
            });
        }
        for (name, v) in [("local oid", parts[1]), ("remote oid", parts[3])] {
            if !is_oid(v) {
                return Err(GitError::BadPushLine {
                    line: i + 1,
                    why: format!("{name} `{}` is not an object id", v.escape_debug()),
                });
            }
        }
        out.push(PushLine {
            local_ref: parts[0].to_string(),
            local_oid: parts[1].to_ascii_lowercase(),
            remote_ref: parts[2].to_string(),
            remote_oid: parts[3].to_ascii_lowercase(),
        });
    }
    Ok(out)
}

/// The diff range one push line covers: `(base, head)` with `base = None` for the
/// empty tree, or `None` when the line pushes no new commits.
pub type Range = (Option<String>, String);

impl Repo {
    /// The range of one pre-push line.
    ///
    /// - deletion: nothing;
    /// - the remote already has the commit's ancestor: `remote..local`;
    /// - force push (remote oid not an ancestor) and the remote commit is known
    ///   locally: merge base..local;
    /// - new ref, or a remote commit we do not have: the commits reachable from
    ///   `local` and from no commit the remote is known to have (its remote-tracking
    ///   refs; for a URL or a remote never fetched, every remote-tracking ref of the
    ///   clone, see [`Repo::known_remote_tips_of`]); the base is the first parent of the
    ///   oldest such commit (the empty tree when it is a root), as pre-commit does.
    pub(crate) fn push_range(&self, remote: &str, line: &PushLine) -> Result<Option<Range>> {
        if line.is_deletion() {
            return Ok(None);
        }
        // An annotated tag (`git push --follow-tags`) pushes the commit it points at;
        // a tag of a tree or a blob pushes no commits at all.
        let Some(local) = self.commit_of(&line.local_oid)? else { return Ok(None) };
        let remote_oid = match self.has_object(&line.remote_oid) {
            true => self.commit_of(&line.remote_oid)?,
            false => None,
        };
        if !line.is_new_ref()
            && let Some(remote_oid) = remote_oid
        {
            let line = PushLine { remote_oid, ..line.clone() };
            if line.remote_oid == local {
                return Ok(None);
            }
            if self.is_ancestor(&line.remote_oid, &local)? {
                return Ok(Some((Some(line.remote_oid.clone()), local)));
            }
            if let Some(base) = self.merge_base(&line.remote_oid, &local)? {
                if base == local {
                    // Rewinding the remote to an ancestor adds nothing.
                    return Ok(None);
                }
                return Ok(Some((Some(base), local)));
            }
        }
        self.new_commits_range(remote, &local)
    }

    fn new_commits_range(&self, remote: &str, local: &str) -> Result<Option<Range>> {
        // What the remote already has: its remote-tracking refs, or for a URL or a
        // remote never fetched, every remote-tracking ref (never the whole history).
        let Some(first) = self.oldest_new_commit(remote, local)? else {
            return Ok(None);
        };
        let first = self.inner.find_commit(Oid::from_str(&first)?)?;
        if first.parent_count() == 0 && self.is_shallow_boundary(&first.id().to_string()) {
            // A shallow clone's oldest commit is where history was cut, not a root:
            // its own changes are unknown, so the range starts after it.
            return Ok((first.id().to_string() != local).then(|| (Some(first.id().to_string()), local.to_string())));
        }
        let base = first.parent_id(0).ok().map(|o| o.to_string());
        Ok(Some((base, local.to_string())))
    }

    /// The commit `oid` names, peeling annotated tags; `None` when it names a tree
    /// or a blob (directly or through tags).
    fn commit_of(&self, oid: &str) -> Result<Option<String>> {
        let obj = Oid::from_str(oid)
            .and_then(|o| self.inner.find_object(o, None))
            .map_err(|_| GitError::UnknownRevision { rev: oid.to_string() })?;
        Ok(obj.peel(git2::ObjectType::Commit).ok().map(|c| c.id().to_string()))
    }

    /// The ranges of every line of one push, in input order (lines that push no new
    /// commits have none).
    pub(crate) fn push_ranges(&self, remote: &str, lines: &[PushLine]) -> Result<Vec<Range>> {
        let mut out = Vec::new();
        for line in lines {
            if let Some(r) = self.push_range(remote, line)? {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// The union diff of every line of one push: every path any line touches (both
    /// sides of renames, copies and deletions) stays in it, see [`Diff::union`].
    pub(crate) fn diff_push(&self, remote: &str, lines: &[PushLine]) -> Result<Diff> {
        self.diff_ranges(&self.push_ranges(remote, lines)?)
    }

    /// The union diff of several ranges.
    pub(crate) fn diff_ranges(&self, ranges: &[Range]) -> Result<Diff> {
        let mut diffs = Vec::new();
        for (base, head) in ranges {
            diffs.push(self.diff_commits(base.as_deref(), head)?);
        }
        Ok(Diff::union(diffs))
    }

    /// The diff a post-merge hook covers: `ORIG_HEAD..HEAD`, empty without ORIG_HEAD.
    pub(crate) fn diff_post_merge(&self) -> Result<Diff> {
        match self.post_merge_range()? {
            Some((base, head)) => self.diff_commits(base.as_deref(), &head),
            None => Ok(Diff { base: None, head: self.head_oid(), files: Vec::new() }),
        }
    }

    /// The range `ORIG_HEAD..HEAD` a post-merge hook covers, `None` without ORIG_HEAD.
    pub(crate) fn post_merge_range(&self) -> Result<Option<Range>> {
        let Some(head) = self.head_oid() else { return Ok(None) };
        match self.resolve_commit("ORIG_HEAD") {
            Ok(orig) if orig != head => Ok(Some((Some(orig), head))),
            Ok(_) => Ok(None),
            Err(GitError::UnknownRevision { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::ZERO_OID;

    #[test]
    fn empty_input_is_no_lines() {
        assert!(parse_push_lines("").unwrap().is_empty());
        assert!(parse_push_lines("\n\n").unwrap().is_empty());
    }

    #[test]
    fn malformed_line_names_its_number() {
        let good = format!("refs/heads/a {} refs/heads/a {}\n", "1".repeat(40), ZERO_OID);
        let input = format!("{good}refs/heads/b deadbeef refs/heads/b\n");
        let e = parse_push_lines(&input).unwrap_err();
        assert_eq!(e.to_string(), "pre-push input line 2: expected 4 space-separated fields, found 3");
    }

    #[test]
    fn deletion_and_new_ref_are_recognised() {
        let l = parse_push_lines(&format!("(delete) {ZERO_OID} refs/heads/x {}\n", "a".repeat(40))).unwrap();
        assert!(l[0].is_deletion());
        let l = parse_push_lines(&format!("refs/heads/x {} refs/heads/x {ZERO_OID}\n", "a".repeat(40))).unwrap();
        assert!(l[0].is_new_ref());
        // A SHA-256 repository's null id is 64 zeros.
        let z64 = "0".repeat(64);
        let l = parse_push_lines(&format!(
            "(delete) {z64} refs/heads/x {}\nrefs/heads/y {} refs/heads/y {z64}\n",
            "b".repeat(64),
            "c".repeat(64)
        ))
        .unwrap();
        assert!(l[0].is_deletion() && !l[0].is_new_ref());
        assert!(l[1].is_new_ref() && !l[1].is_deletion());
    }
}
