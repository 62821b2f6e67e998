//! `premerge demo`: build a scratch repository in a temporary directory, make a few
//! commits, and run every stage on it, printing what each stage found and wrote.
//!
//! Each area adds its stage as a `demo_stage(&mut DemoRun)` function in its command
//! module and registers it in `commands::DEMO_STAGES`; a stage runs other commands
//! through the dispatcher ([`DemoRun::cli`]). Stages run in-process against the scratch
//! repository with the embedded default storage; nothing outside the temporary
//! directory is touched.

use std::fs;

use anyhow::{Context as _, Result};
use clap::Args as ClapArgs;

use super::demo_run::write_file;
use super::{Ctx, DemoRun};
use crate::error::{CmdResult, Exit};
use crate::git::Repo;

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Keep the scratch repository instead of deleting it at the end.
    #[arg(long)]
    pub keep: bool,
}

/// The scratch project: a small service with a query type and three handlers.
const INITIAL_FILES: &[(&str, &str)] = &[
    (
        "src/query.rs",
        "/// A page request.\npub struct Query {\n    pub limit: u8,\n    pub name: String,\n}\n\npub fn set_ratio(r: f64) -> f64 {\n    assert!(r >= 0.0 && r <= 1.0);\n    r\n}\n",
    ),
    ("src/lib.rs", "pub mod query;\n"),
    ("README.md", "# demo service\n"),
];

/// The change under review: the page size is widened and the ratio check removed.
const CHANGED_FILES: &[(&str, &str)] = &[(
    "src/query.rs",
    "/// A page request.\npub struct Query {\n    pub limit: u64,\n    pub name: String,\n}\n\npub fn set_ratio(r: f64) -> f64 {\n    r\n}\n",
)];

pub fn run(args: Args, ctx: &mut Ctx) -> CmdResult {
    let tmp =
        tempfile::Builder::new().prefix("premerge-demo-").tempdir().context("cannot create a temporary directory")?;
    let root = tmp.path().join("repo");
    fs::create_dir_all(&root)?;
    let repo = Repo::init(&root)?;
    for (p, t) in INITIAL_FILES {
        write_file(&root, p, t)?;
    }
    let c1 = repo.commit_all("initial: query type and ratio setter")?;
    for (p, t) in CHANGED_FILES {
        write_file(&root, p, t)?;
    }
    let c2 = repo.commit_all("widen the page size; drop the ratio check")?;
    let run_dir = repo.state_dir().default_run_dir();
    writeln!(ctx.stdout, "premerge demo: scratch repository {}", root.display())?;
    writeln!(ctx.stdout, "  commits: {} (initial), {} (change under review)", &c1[..12], &c2[..12])?;
    let mut demo = DemoRun { ctx, root: root.clone(), run_dir };
    for (name, stage) in super::DEMO_STAGES {
        writeln!(demo.ctx.stdout, "\n== {name} ==")?;
        stage(&mut demo).with_context(|| format!("demo stage `{name}`"))?;
    }
    if args.keep {
        let kept = tmp.keep();
        writeln!(demo.ctx.stdout, "\nkept the scratch repository at {}", kept.join("repo").display())?;
    } else {
        writeln!(demo.ctx.stdout, "\ndone; the scratch repository was removed (use --keep to keep it)")?;
    }
    Ok(Exit::Ok)
}

/// The first stage: the change under review as `premerge diff` shows it.
pub(super) fn diff_stage(d: &mut DemoRun) -> Result<()> {
    d.say("$ premerge diff --base HEAD~1")?;
    d.cli(b"", &["diff", "--base", "HEAD~1"]).map(|_| ())
}
