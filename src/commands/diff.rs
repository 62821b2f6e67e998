//! `premerge diff`: print the owned diff model of a range.

use std::io::Write;

use anyhow::{Result, bail};
use clap::{Args as ClapArgs, ValueEnum};
use serde_json::json;

use super::Ctx;
use crate::diff::Diff;
use crate::error::{CmdResult, Exit};
use crate::git::{Detail, Repo};

/// Output format of commands that print a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
}

/// Which two trees to compare. Shared by every command that takes a range.
#[derive(Debug, Clone, Default, ClapArgs)]
pub struct RangeArgs {
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
    #[arg(long, value_name = "REMOTE", conflicts_with_all = ["base", "head", "staged", "worktree", "post_merge"])]
    pub pre_push: Option<String>,
    /// Diff `ORIG_HEAD..HEAD` (exactly the range `premerge hook post-merge` covers).
    #[arg(long, conflicts_with_all = ["base", "head", "staged", "worktree"])]
    pub post_merge: bool,
}

pub fn run(args: Args, ctx: &mut Ctx) -> CmdResult {
    let repo = ctx.repo()?;
    let diff = if let Some(remote) = &args.pre_push {
        let input = ctx.read_stdin()?;
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
            json!({
                "path": f.path,
                "old_path": f.old_path,
                "status": f.status.as_str(),
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
            })
        })
        .collect();
    json!({"schema_version": 1, "base": diff.base, "head": diff.head, "files": files})
}

/// Quote a path for line-oriented text output the way git does (`core.quotePath`
/// off): plain when safe, else in double quotes with C escapes.
pub fn quote_path(p: &str) -> String {
    if !p.chars().any(|c| c.is_control() || c == '"' || c == '\\') {
        return p.to_string();
    }
    let mut s = String::from("\"");
    for c in p.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            '\r' => s.push_str("\\r"),
            c if c.is_control() => s.push_str(&format!("\\{:03o}", c as u32)),
            c => s.push(c),
        }
    }
    s.push('"');
    s
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
        match &f.old_path {
            Some(old) if *old != f.path => {
                writeln!(out, "{}\t{}\t{} -> {}", f.status.letter(), stat, quote_path(old), quote_path(&f.path))?
            }
            _ => writeln!(out, "{}\t{}\t{}", f.status.letter(), stat, quote_path(&f.path))?,
        }
    }
    writeln!(out, "{} file(s) changed, +{} -{}", diff.files.len(), adds, dels)?;
    Ok(())
}

fn write_nul(diff: &Diff, out: &mut dyn Write) -> Result<()> {
    for f in &diff.files {
        write!(out, "{}\0{}\0", f.status.letter(), f.path)?;
        if let Some(old) = f.old_path.as_ref().filter(|o| **o != f.path) {
            write!(out, "{old}\0")?;
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
