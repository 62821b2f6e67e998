//! `premerge seams`: find blocks a change copies into several distinct files (the
//! copy detector of `crate::review::copies`). `premerge hook pre-push` runs the same
//! check (`crate::hook::stages::copy_detector`), where it is a signal: it reports and
//! never blocks.

use anyhow::Result;
use clap::Args as ClapArgs;
use serde_json::json;

use super::Ctx;
use crate::cli::{FindingsFormat as Format, RangeArgs};
use crate::error::{CmdResult, Exit};
use crate::review::copies::{detect, text_report, thresholds};

#[derive(Debug, ClapArgs)]
pub struct Args {
    #[command(flatten)]
    pub range: RangeArgs,
    /// Output format (sarif: code scanning; github: workflow-command annotations).
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// A cluster must span at least this many distinct files (default: clones.min_files).
    #[arg(long, value_name = "N")]
    pub min_files: Option<u64>,
    /// Smallest copied block, in normalised tokens (default: clones.min_tokens).
    #[arg(long, value_name = "N")]
    pub min_tokens: Option<u64>,
}

pub fn run(args: Args, ctx: &mut Ctx) -> CmdResult {
    let repo = ctx.repo()?;
    let config = super::load_config(&repo)?;
    let t = thresholds(&config, args.min_files, args.min_tokens)?;
    let diff = args.range.diff(&repo)?;
    if !config.clones.enabled {
        if let Some(target) = args.format.report() {
            crate::report::write(ctx.stdout, target, &crate::report::from_copies(&[]))?;
            return Ok(Exit::Ok);
        }
        match args.format {
            Format::Json => {
                let out = json!({"schema_version": 1, "enabled": false, "clusters": []});
                ctx.stdout.write_all(crate::canonical::to_line(&out)?.as_bytes())?;
            }
            _ => writeln!(ctx.stdout, "premerge seams: the copy detector is off (clones.enabled)")?,
        }
        return Ok(Exit::Ok);
    }
    let r = detect(&repo, &diff, t)?;
    if let Some(target) = args.format.report() {
        crate::report::write(ctx.stdout, target, &crate::report::from_copies(&r.clusters))?;
        return Ok(Exit::Ok);
    }
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
        _ => write!(ctx.stdout, "premerge seams: {}", text_report(&r))?,
    }
    // A signal: finding copies is information for the reviewer, not a failure.
    Ok(Exit::Ok)
}

/// Demo: the review stage committed three handlers that each paste the same
/// page-limit check; the detector finds it in the commit.
pub(crate) fn demo_stage(d: &mut super::DemoRun) -> Result<()> {
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
