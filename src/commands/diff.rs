//! `premerge diff`: print the owned diff model of a range.

use std::io::Write;

use anyhow::{Result, bail};
use clap::{Args as ClapArgs, ValueEnum};
use serde_json::json;

use super::Ctx;
use crate::diff::{Diff, json_path, quote_path_bytes};
use crate::error::{CmdResult, Exit};
use crate::git::{Detail, Repo};

/// Output format of commands that print a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
}

/// Which two trees to compare. Shared by every command that takes a range: either
/// `--base/--head` or one positional `A..B` (as git writes ranges), never both.
#[derive(Debug, Clone, Default, ClapArgs)]
pub struct RangeArgs {
    /// A range `A..B` (the same as `--base A --head B`; an empty side is HEAD) or
    /// `A...B` (from the merge base of A and B to B).
    #[arg(value_name = "A..B", conflicts_with_all = ["base", "head", "staged", "worktree"])]
    pub range: Option<String>,
    /// Base revision (any revision git understands). Default: the head's first parent
    /// (the empty tree for a root commit), or HEAD with --staged / --worktree.
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Head revision. Default: HEAD.
    #[arg(long, value_name = "REV", conflicts_with_all = ["staged", "worktree"])]
    pub head: Option<String>,
    /// Compare the index (staged changes) against HEAD.
    #[arg(long, conflicts_with = "worktree")]
    pub staged: bool,
    /// Compare the working tree against HEAD; untracked files count as added.
    #[arg(long)]
    pub worktree: bool,
}

impl RangeArgs {
    /// Compute the diff this range names.
    pub fn diff(&self, repo: &Repo) -> Result<Diff> {
        self.diff_with(repo, Detail::Hunks)
    }

    /// Compute the diff this range names, with only the detail asked for.
    pub fn diff_with(&self, repo: &Repo, detail: Detail) -> Result<Diff> {
        if let Some(r) = &self.range {
            let (base, head) = resolve_range(repo, r)?;
            return Ok(repo.diff_commits_with(Some(&base), &head, detail)?);
        }
        if self.staged || self.worktree {
            if let Some(b) = &self.base {
                let base = repo.resolve_commit(b)?;
                if repo.head_oid().as_deref() != Some(base.as_str()) {
                    bail!(
                        "--base with --staged or --worktree must be HEAD (the index and working tree compare against HEAD)"
                    );
                }
            }
            return Ok(if self.staged { repo.diff_staged_with(detail)? } else { repo.diff_worktree_with(detail)? });
        }
        let head = repo.resolve_commit(self.head.as_deref().unwrap_or("HEAD"))?;
        let base = match &self.base {
            Some(b) => Some(repo.resolve_commit(b)?),
            None if repo.is_shallow_boundary(&head) => bail!(
                "{head}: this shallow clone's history is cut here, so its parent and its own changes are unknown \
                 (pass --base, or fetch more history: git fetch --deepen=1)"
            ),
            None => repo.resolve_commit(&format!("{head}^")).ok(),
        };
        Ok(repo.diff_commits_with(base.as_deref(), &head, detail)?)
    }
}

/// Resolve a positional range `A..B` or `A...B` to `(base, head)` commit ids. An empty
/// side means HEAD, as in git; `A...B` starts at the merge base of A and B.
pub fn resolve_range(repo: &Repo, range: &str) -> Result<(String, String)> {
    let bad = || anyhow::anyhow!("range `{range}`: expected A..B or A...B (revisions git understands)");
    let (base, head, symmetric) = if let Some((a, b)) = range.split_once("...") {
        (a, b, true)
    } else if let Some((a, b)) = range.split_once("..") {
        (a, b, false)
    } else {
        return Err(bad());
    };
    if head.contains("..") || (base.is_empty() && head.is_empty()) {
        return Err(bad());
    }
    let or_head = |s: &str| if s.is_empty() { "HEAD".to_string() } else { s.to_string() };
    let head = repo.resolve_commit(&or_head(head))?;
    let base = repo.resolve_commit(&or_head(base))?;
    if symmetric {
        let mb = repo
            .merge_base(&base, &head)?
            .ok_or_else(|| anyhow::anyhow!("range `{range}`: the two sides have no common ancestor"))?;
        return Ok((mb, head));
    }
    Ok((base, head))
}

#[derive(Debug, ClapArgs)]
pub struct Args {
    #[command(flatten)]
    pub range: RangeArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Text format only: NUL-separated records (`<status>\0<path>\0[<old path>\0]`).
    #[arg(short = 'z')]
    pub nul: bool,
    /// Diff what a push to REMOTE would send, reading git's pre-push ref lines on stdin
    /// (exactly the range `premerge hook pre-push` covers).
    #[arg(long, value_name = "REMOTE", conflicts_with_all = ["range", "base", "head", "staged", "worktree", "post_merge"])]
    pub pre_push: Option<String>,
    /// Diff `ORIG_HEAD..HEAD` (exactly the range `premerge hook post-merge` covers).
    #[arg(long, conflicts_with_all = ["range", "base", "head", "staged", "worktree"])]
    pub post_merge: bool,
}

pub fn run(args: Args, ctx: &mut Ctx) -> CmdResult {
    let repo = ctx.repo()?;
    let diff = if let Some(remote) = &args.pre_push {
        let input = ctx.read_stdin(crate::input::Kind::PrePushLines)?;
        repo.diff_push(remote, &crate::git::parse_push_lines(&input)?)?
    } else if args.post_merge {
        repo.diff_post_merge()?
    } else {
        args.range.diff(&repo)?
    };
    match args.format {
        Format::Json => ctx.stdout.write_all(crate::canonical::to_line(&json_model(&diff))?.as_bytes())?,
        Format::Text if args.nul => write_nul(&diff, ctx.stdout)?,
        Format::Text => write_text(&diff, ctx.stdout)?,
    }
    Ok(Exit::Ok)
}

/// The `premerge diff --format json` document (schema_version 1).
pub fn json_model(diff: &Diff) -> serde_json::Value {
    let files: Vec<_> = diff
        .files
        .iter()
        .map(|f| {
            let (path, path_hex) = json_path(f.raw_path());
            let old = f.raw_old_path().map(json_path);
            let mut v = json!({
                "path": path,
                "old_path": old.as_ref().map(|o| o.0.clone()),
                "status": f.status,
                "binary": f.binary,
                "submodule": f.is_submodule(),
                "old_oid": f.old_oid,
                "new_oid": f.new_oid,
                "additions": f.additions,
                "deletions": f.deletions,
                "hunks": f.hunks.iter().map(|h| json!({
                    "old_start": h.old_start, "old_lines": h.old_lines,
                    "new_start": h.new_start, "new_lines": h.new_lines,
                })).collect::<Vec<_>>(),
            });
            // A name that is not UTF-8 is shown quoted and escaped, with its exact bytes
            // beside it: never a lossy reading two names could share.
            if let Some(h) = path_hex {
                v["path_hex"] = json!(h);
            }
            if let Some((_, Some(h))) = old {
                v["old_path_hex"] = json!(h);
            }
            v
        })
        .collect();
    json!({"schema_version": 1, "base": diff.base, "head": diff.head, "files": files})
}

/// Quote a path for line-oriented text output the way git does (`core.quotePath`
/// off): plain when safe, else in double quotes with C escapes.
pub fn quote_path(p: &str) -> String {
    crate::diff::quote_path_bytes(p.as_bytes())
}

fn write_text(diff: &Diff, out: &mut dyn Write) -> Result<()> {
    let (mut adds, mut dels) = (0u64, 0u64);
    for f in &diff.files {
        let stat = if f.binary {
            "bin".to_string()
        } else if f.is_submodule() {
            "sub".to_string()
        } else {
            format!("+{} -{}", f.additions, f.deletions)
        };
        adds += u64::from(f.additions);
        dels += u64::from(f.deletions);
        let path = quote_path_bytes(f.raw_path());
        match f.raw_old_path() {
            Some(old) if old != f.raw_path() => {
                writeln!(out, "{}\t{}\t{} -> {}", f.status.letter(), stat, quote_path_bytes(old), path)?
            }
            _ => writeln!(out, "{}\t{}\t{}", f.status.letter(), stat, path)?,
        }
    }
    writeln!(out, "{} file(s) changed, +{} -{}", diff.files.len(), adds, dels)?;
    Ok(())
}

fn write_nul(diff: &Diff, out: &mut dyn Write) -> Result<()> {
    // Exact bytes, as `git diff -z` writes them: NUL cannot occur in a path, so
    // nothing needs quoting and a non-UTF-8 name arrives unchanged.
    for f in &diff.files {
        write!(out, "{}\0", f.status.letter())?;
        out.write_all(f.raw_path())?;
        out.write_all(b"\0")?;
        if let Some(old) = f.raw_old_path().filter(|o| *o != f.raw_path()) {
            out.write_all(old)?;
            out.write_all(b"\0")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::quote_path;

    #[test]
    fn quoting_matches_git_style() {
        assert_eq!(quote_path("a b/ü.rs"), "a b/ü.rs");
        assert_eq!(quote_path("a\nb"), "\"a\\nb\"");
        assert_eq!(quote_path("q\"\\"), "\"q\\\"\\\\\"");
    }
}
