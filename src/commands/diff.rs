//! `premerge diff`: print the owned diff model of a range.

use std::io::Write;

use anyhow::Result;
use clap::Args as ClapArgs;
use serde_json::json;

use super::Ctx;
use crate::cli::{Format, RangeArgs};
use crate::diff::{Diff, json_path, quote_path_bytes};
use crate::error::{CmdResult, Exit};

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
pub(crate) fn json_model(diff: &Diff) -> serde_json::Value {
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
