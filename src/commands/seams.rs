//! `premerge seams`: find blocks a change copies into several distinct files (the
//! copy detector of `crate::review::clones`), and the same check in `premerge hook
//! pre-push`, where it is a signal: it reports and never blocks.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use clap::Args as ClapArgs;
use serde_json::json;

use super::Ctx;
use crate::cli::{Format, RangeArgs};
use crate::config::Config;
use crate::diff::{Diff, EntryKind, Status};
use crate::error::{CmdResult, Exit};
use crate::git::Repo;
use crate::review::clones::{self, CloneCluster, SourceFile, Thresholds};

/// Files larger than this are not read: generated or vendored code, whose copies are
/// not a reviewer's concern, and whose size would dominate the detector's time.
pub const MAX_FILE_BYTES: usize = 1024 * 1024;

#[derive(Debug, ClapArgs)]
pub struct Args {
    #[command(flatten)]
    pub range: RangeArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// A cluster must span at least this many distinct files (default: clones.min_files).
    #[arg(long, value_name = "N")]
    pub min_files: Option<u64>,
    /// Smallest copied block, in normalised tokens (default: clones.min_tokens).
    #[arg(long, value_name = "N")]
    pub min_tokens: Option<u64>,
}

/// What the detector found in one diff.
pub struct Report {
    pub clusters: Vec<CloneCluster>,
    pub thresholds: Thresholds,
    pub files_scanned: usize,
    /// Files not read, counted by reason.
    pub skipped: BTreeMap<&'static str, usize>,
}

fn thresholds(config: &Config, min_files: Option<u64>, min_tokens: Option<u64>) -> Result<Thresholds> {
    let f = min_files.unwrap_or(config.int("clones.min_files"));
    let t = min_tokens.unwrap_or(config.int("clones.min_tokens"));
    if f < 2 {
        bail!("clones.min_files: must be at least 2 (a copy needs two places), got {f}");
    }
    if t < 1 {
        bail!("clones.min_tokens: must be at least 1, got {t}");
    }
    Ok(Thresholds { min_files: f as usize, min_tokens: t as usize })
}

/// Read the new side of every file the diff adds lines to and run the detector.
pub fn detect(repo: &Repo, diff: &Diff, t: Thresholds) -> Result<Report> {
    let mut skipped: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut files = Vec::new();
    for f in &diff.files {
        let added: Vec<u32> = f.hunks.iter().flat_map(|h| h.added.iter().copied()).collect();
        if added.is_empty() || f.status == Status::Deleted {
            continue;
        }
        if f.binary || f.new_kind != EntryKind::File {
            *skipped.entry("not_text").or_default() += 1;
            continue;
        }
        let bytes = match &f.new_oid {
            Some(oid) => repo.blob(oid)?,
            // A working-tree file: a FIFO or a device is skipped, never read or waited on.
            None => match crate::input::read_file(
                &repo.require_workdir()?.join(&f.path),
                crate::input::Kind::Source,
                MAX_FILE_BYTES as u64,
            ) {
                Ok(b) => b,
                Err(crate::input::InputError::NotRegular { .. }) => {
                    *skipped.entry("not_regular").or_default() += 1;
                    continue;
                }
                Err(crate::input::InputError::TooLarge { .. }) => {
                    *skipped.entry("too_large").or_default() += 1;
                    continue;
                }
                Err(e) => return Err(e.into()),
            },
        };
        if bytes.len() > MAX_FILE_BYTES {
            *skipped.entry("too_large").or_default() += 1;
            continue;
        }
        let Ok(text) = String::from_utf8(bytes) else {
            *skipped.entry("not_utf8").or_default() += 1;
            continue;
        };
        files.push(SourceFile { path: f.path.clone(), text, added });
    }
    let clusters = clones::detect(&files, t);
    Ok(Report { clusters, thresholds: t, files_scanned: files.len(), skipped })
}

fn text_report(r: &Report) -> String {
    let mut s = format!(
        "{} cluster(s) of code copied into {} or more files ({} file(s) scanned, blocks of {}+ tokens)\n",
        r.clusters.len(),
        r.thresholds.min_files,
        r.files_scanned,
        r.thresholds.min_tokens
    );
    for (i, c) in r.clusters.iter().enumerate() {
        s.push_str(&format!("copy {}: {} files\n", i + 1, c.files.len()));
        for b in &c.blocks {
            s.push_str(&format!("  {}:{}-{} ({} tokens)\n", b.file, b.start_line, b.end_line, b.tokens));
        }
    }
    for (why, n) in &r.skipped {
        s.push_str(&format!("skipped {n} file(s): {why}\n"));
    }
    s
}

pub fn run(args: Args, ctx: &mut Ctx) -> CmdResult {
    let repo = ctx.repo()?;
    let config = super::load_config(&repo)?;
    let t = thresholds(&config, args.min_files, args.min_tokens)?;
    let diff = args.range.diff(&repo)?;
    if !config.bool("clones.enabled") {
        match args.format {
            Format::Json => {
                let out = json!({"schema_version": 1, "enabled": false, "clusters": []});
                ctx.stdout.write_all(crate::canonical::to_line(&out)?.as_bytes())?;
            }
            Format::Text => writeln!(ctx.stdout, "premerge seams: the copy detector is off (clones.enabled)")?,
        }
        return Ok(Exit::Ok);
    }
    let r = detect(&repo, &diff, t)?;
    match args.format {
        Format::Json => {
            let out = json!({
                "schema_version": 1,
                "enabled": true,
                "base": diff.base,
                "head": diff.head,
                "min_files": t.min_files,
                "min_tokens": t.min_tokens,
                "files_scanned": r.files_scanned,
                "skipped": r.skipped,
                "clusters": r.clusters,
            });
            ctx.stdout.write_all(crate::canonical::to_line(&out)?.as_bytes())?;
        }
        Format::Text => write!(ctx.stdout, "premerge seams: {}", text_report(&r))?,
    }
    // A signal: finding copies is information for the reviewer, not a failure.
    Ok(Exit::Ok)
}

/// The pre-push signal: report copies in the pushed commits; silent when there are none.
pub fn hook_stage(run: &mut crate::hook::HookRun) -> Result<()> {
    if !run.config.bool("clones.enabled") {
        return Ok(());
    }
    let t = thresholds(run.config, None, None)?;
    let r = detect(run.repo, run.diff, t)?;
    if !r.clusters.is_empty() {
        write!(run.ctx.stdout, "premerge pre-push: copy detector: {}", text_report(&r))?;
    }
    Ok(())
}

/// Demo: the review stage committed three handlers that each paste the same
/// page-limit check; the detector finds it in the commit.
pub fn demo_stage(d: &mut super::DemoRun) -> Result<()> {
    d.say("the last commit pasted one page-limit helper into three handlers (names and messages differ)")?;
    d.say("$ premerge seams --base HEAD~1 --head HEAD")?;
    let args = Args {
        range: RangeArgs { base: Some("HEAD~1".into()), head: Some("HEAD".into()), ..Default::default() },
        format: Format::Text,
        min_files: None,
        min_tokens: None,
    };
    d.with_ctx(b"", |c| run(args, c).map(|_| ()))
}
