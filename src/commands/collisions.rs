//! `premerge collisions --target main BRANCH...`: which pairs of branches touch the same
//! path since their merge base with the target.
//!
//! A merge pipeline with several open pull requests runs this before fixers start: two
//! branches that both touch a path will conflict or silently override each other when
//! merged, so the pipeline rebases or serialises them first. Paths are compared as the
//! exact bytes git stores (byte order, never the locale), and a rename counts on both
//! of its paths, on either side.

use std::collections::BTreeSet;

use anyhow::{Result, anyhow, bail};
use serde_json::json;

use super::Ctx;
use crate::cli::Format;
use crate::diff::{json_path, quote_path_bytes};
use crate::error::{CmdResult, Exit};
use crate::git::Detail;

/// Most branches compared in one run: the pairs grow as n², and a merge queue with more
/// open pull requests than this is better split by area. 256 branches are 32,640 pairs.
pub(crate) const MAX_BRANCHES: usize = 256;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The branch the others merge into (any revision git understands).
    #[arg(long, value_name = "REV")]
    pub target: String,
    /// The branches to compare, pairwise.
    #[arg(value_name = "BRANCH", required = true)]
    pub branches: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// One branch's changes since its merge base with the target.
#[derive(Debug, Clone)]
pub struct BranchPaths {
    pub name: String,
    pub head: String,
    pub merge_base: String,
    /// Byte-sorted, deduplicated.
    pub paths: BTreeSet<Vec<u8>>,
}

/// Two branches that touch the same paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    pub a: usize,
    pub b: usize,
    /// Byte-sorted.
    pub paths: Vec<Vec<u8>>,
}

/// Every colliding pair `(i, j)` with `i < j`, in the order the branches were given.
pub fn collisions(branches: &[BranchPaths]) -> Vec<Collision> {
    let mut out = Vec::new();
    for (i, x) in branches.iter().enumerate() {
        for (j, y) in branches.iter().enumerate().skip(i + 1) {
            let paths: Vec<Vec<u8>> = x.paths.intersection(&y.paths).cloned().collect();
            if !paths.is_empty() {
                out.push(Collision { a: i, b: j, paths });
            }
        }
    }
    out
}

pub fn run(args: Args, ctx: &mut Ctx) -> CmdResult {
    if args.branches.len() > MAX_BRANCHES {
        bail!("collisions: {} branches given: at most {MAX_BRANCHES} (split the queue)", args.branches.len());
    }
    let mut seen = BTreeSet::new();
    for b in &args.branches {
        if !seen.insert(b.as_str()) {
            bail!("collisions: branch `{b}` is given twice: name each branch once");
        }
    }
    let repo = ctx.repo()?;
    let target =
        repo.resolve_commit(&args.target).map_err(|e| anyhow!("collisions: --target `{}`: {e}", args.target))?;
    let mut branches = Vec::with_capacity(args.branches.len());
    for name in &args.branches {
        let head = repo.resolve_commit(name).map_err(|e| anyhow!("collisions: branch `{name}`: {e}"))?;
        let Some(mb) = repo.merge_base(&target, &head)? else {
            bail!("collisions: branch `{name}`: no common ancestor with `{}`", args.target);
        };
        let diff = repo.diff_commits_with(Some(&mb), &head, Detail::Files)?;
        let paths: BTreeSet<Vec<u8>> = diff.touched_path_bytes().into_iter().collect();
        branches.push(BranchPaths { name: name.clone(), head, merge_base: mb, paths });
    }
    let found = collisions(&branches);
    let pairs = branches.len() * branches.len().saturating_sub(1) / 2;
    match args.format {
        Format::Json => {
            let show = |p: &Vec<u8>| json_path(p).0;
            let v = json!({
                "schema_version": 1,
                "target": args.target,
                "target_oid": target,
                "pairs_checked": pairs,
                "branches": branches.iter().map(|b| json!({
                    "name": b.name, "head": b.head, "merge_base": b.merge_base, "paths": b.paths.len(),
                })).collect::<Vec<_>>(),
                "collisions": found.iter().map(|c| json!({
                    "branches": [branches[c.a].name, branches[c.b].name],
                    "paths": c.paths.iter().map(show).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            });
            write!(ctx.stdout, "{}", crate::canonical::to_line(&v)?)?;
        }
        Format::Text => write_text(ctx, &args.target, &branches, &found, pairs)?,
    }
    Ok(if found.is_empty() { Exit::Ok } else { Exit::Policy })
}

fn write_text(ctx: &mut Ctx, target: &str, branches: &[BranchPaths], found: &[Collision], pairs: usize) -> Result<()> {
    for c in found {
        writeln!(
            ctx.stdout,
            "collision: {} and {}: {} path(s)",
            branches[c.a].name,
            branches[c.b].name,
            c.paths.len()
        )?;
        for p in &c.paths {
            writeln!(ctx.stdout, "  {}", quote_path_bytes(p))?;
        }
    }
    if found.is_empty() {
        writeln!(ctx.stdout, "no collisions: {pairs} pair(s) of {} branch(es) against {target}", branches.len())?;
    } else {
        writeln!(
            ctx.stdout,
            "{} of {pairs} pair(s) collide against {target}: rebase or serialise them before fixers start",
            found.len()
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(name: &str, paths: &[&[u8]]) -> BranchPaths {
        BranchPaths {
            name: name.into(),
            head: String::new(),
            merge_base: String::new(),
            paths: paths.iter().map(|p| p.to_vec()).collect(),
        }
    }

    #[test]
    fn pairs_in_given_order_with_byte_sorted_paths() {
        let bs = [b("x", &[b"b.rs", b"a.rs"]), b("y", &[b"c.rs"]), b("z", &[b"a.rs", b"c.rs", b"B.rs", b"b.rs"])];
        let c = collisions(&bs);
        assert_eq!(
            c,
            [
                Collision { a: 0, b: 2, paths: vec![b"a.rs".to_vec(), b"b.rs".to_vec()] },
                Collision { a: 1, b: 2, paths: vec![b"c.rs".to_vec()] },
            ]
        );
        // Bytes, not a lossy reading: two non-UTF-8 names never collide with each other.
        assert!(collisions(&[b("p", &[b"w\xff.rs"]), b("q", &[b"w\xfe.rs"])]).is_empty());
    }
}
