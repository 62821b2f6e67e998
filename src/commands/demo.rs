//! `premerge demo`: build a scratch repository in a temporary directory, make a few
//! commits, and run every stage on it, printing what each stage found and wrote.
//!
//! Each area adds its stage as a `demo_stage(&mut DemoRun)` function in its command
//! module and registers it in [`STAGES`]. Stages run in-process against the scratch
//! repository with the embedded default storage; nothing outside the temporary
//! directory is touched.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::Args as ClapArgs;

use super::Ctx;
use crate::error::{CmdResult, Exit};
use crate::git::Repo;

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Keep the scratch repository instead of deleting it at the end.
    #[arg(long)]
    pub keep: bool,
}

/// What a demo stage works on.
pub struct DemoRun<'a, 'io> {
    pub ctx: &'a mut Ctx<'io>,
    /// The scratch repository's working tree.
    pub root: PathBuf,
    /// The pipeline run directory the stages share.
    pub run_dir: PathBuf,
}

impl DemoRun<'_, '_> {
    /// Open the scratch repository.
    pub fn repo(&self) -> Result<Repo> {
        Ok(Repo::discover(&self.root)?)
    }

    /// Write a file (creating parent directories) in the scratch working tree.
    pub fn write(&self, rel: &str, text: &str) -> Result<()> {
        write_file(&self.root, rel, text)
    }

    /// Commit every change in the scratch working tree.
    pub fn commit(&self, message: &str) -> Result<String> {
        Ok(self.repo()?.commit_all(message)?)
    }

    /// A `Ctx` for running another command in-process inside the scratch repository,
    /// with `stdin` as its standard input and output going to the demo's stdout.
    pub fn with_ctx<T>(&mut self, stdin: &[u8], f: impl FnOnce(&mut Ctx) -> Result<T>) -> Result<T> {
        let mut input = stdin;
        let mut sub = Ctx {
            cwd: self.root.clone(),
            stdin: &mut input,
            stdout: self.ctx.stdout,
            stderr: self.ctx.stderr,
            env: self.ctx.env,
        };
        f(&mut sub)
    }

    /// Print a line of the demo's narrative.
    pub fn say(&mut self, line: impl std::fmt::Display) -> Result<()> {
        writeln!(self.ctx.stdout, "{line}")?;
        Ok(())
    }
}

fn write_file(root: &Path, rel: &str, text: &str) -> Result<()> {
    let p = root.join(rel);
    if let Some(parent) = p.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::write(&p, text).with_context(|| format!("{}: cannot write", p.display()))
}

type Stage = fn(&mut DemoRun) -> Result<()>;

/// Every demo stage, in order: (name, function).
pub const STAGES: &[(&str, Stage)] = &[
    ("diff", diff_stage),
    ("widening scan", super::scan::demo_stage),
    ("review routing", super::review::demo_stage),
    ("copies in a push", super::seams::demo_stage),
    ("fixer waves, carry, fence", super::plan::demo_stage),
    ("stripes and proposals", super::proposal::demo_stage),
    ("stop gate", super::gate::demo_stage),
    ("install", super::install::demo_stage),
];

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
    for (name, stage) in STAGES {
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

fn diff_stage(d: &mut DemoRun) -> Result<()> {
    let args = super::diff::Args {
        range: super::diff::RangeArgs { base: Some("HEAD~1".into()), ..Default::default() },
        format: super::diff::Format::Text,
        nul: false,
        pre_push: None,
        post_merge: false,
    };
    d.say("$ premerge diff --base HEAD~1")?;
    d.with_ctx(b"", |c| super::diff::run(args, c).map(|_| ()))
}
