//! One file per subcommand: thin, does the I/O, calls the pure core.
//!
//! Every command function has the shape `fn run(args, &mut Ctx) -> CmdResult` and
//! writes to the injected writers of [`Ctx`], never straight to stdout, so tests can
//! run it in-process and `premerge demo` can chain stages.

pub mod blocked;
pub mod collisions;
pub mod completions;
pub mod config;
pub mod converge;
pub mod demo;
pub mod diff;
pub mod doctor;
pub mod drain;
pub mod fence;
pub(crate) mod fix_loop;
pub mod gate;
pub mod hook;
pub mod install;
pub mod memory;
pub mod plan;
pub mod proposal;
pub mod review;
pub mod scan;
pub mod schema;
pub mod seams;
pub mod show;
pub mod status;

mod demo_run;

pub(crate) use demo_run::{DemoRun, DemoStage};

/// Every demo stage, in order: (name, function). Named here, the one module that
/// names every command, so no command imports another for the demo.
pub(crate) const DEMO_STAGES: &[(&str, DemoStage)] = &[
    ("diff", demo::diff_stage),
    ("widening scan", scan::demo_stage),
    ("review routing", review::demo_stage),
    ("copies in a push", seams::demo_stage),
    ("fixer waves, carry, fence", plan::demo_stage),
    ("stripes and proposals", proposal::demo_stage),
    ("stop gate", gate::demo_stage),
    ("install", install::demo_stage),
];

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::error::input_error;
use crate::findings::Findings;

use crate::cli::{Cli, Command};
use crate::config::Config;
use crate::error::CmdResult;
use crate::git::Repo;

// The context and the configuration loaders live below the commands (src/context.rs),
// so the hooks, the scan, the stripes and the gate use them without naming a command.
pub use crate::context::Ctx;
pub(crate) use crate::context::{load_config, load_config_at, load_config_without_repo};

/// Open `--repo DIR` (relative to the command's directory) or the current repository.
pub(crate) fn open_repo(dir: Option<&Path>, ctx: &Ctx) -> Result<Repo> {
    match dir {
        Some(d) => {
            let d = if d.is_absolute() { d.to_path_buf() } else { ctx.cwd.join(d) };
            Ok(Repo::discover(&d)?)
        }
        None => ctx.repo(),
    }
}

/// Read and parse a findings file (`-`: stdin), refusing one larger than
/// `review.max_findings_bytes`; errors name the file and the JSON path. With `lenient`,
/// malformed records and paths outside the repository are dropped (listed in
/// `Findings::dropped`) instead of refusing the document.
pub(crate) fn read_findings_as(
    ctx: &mut Ctx,
    repo: &Repo,
    config: &Config,
    path: &Path,
    lenient: bool,
) -> Result<Findings> {
    let max = config.review.max_findings_bytes;
    let name = path.display().to_string();
    let read = if path == Path::new("-") {
        crate::input::read_stream(&mut ctx.stdin, crate::input::Kind::Findings, max)
    } else {
        let full = if path.is_absolute() { path.to_path_buf() } else { ctx.cwd.join(path) };
        crate::input::read_file(&full, crate::input::Kind::Findings, max)
    };
    let bytes = read.map_err(|e| match e {
        crate::input::InputError::TooLarge { .. } => input_error(
            &name,
            format!("larger than {max} bytes (review.max_findings_bytes); split the round or raise the limit"),
        ),
        e => anyhow::Error::new(e),
    })?;
    let text = String::from_utf8(bytes).map_err(|_| input_error(&name, "not UTF-8"))?;
    let root = repo.workdir().unwrap_or_else(|| repo.common_dir());
    let parse = if lenient { crate::findings::parse_lenient } else { crate::findings::parse };
    let f = parse(&text, &root.to_string_lossy()).map_err(|e| input_error(&name, e))?;
    // Counted, never silent: SARIF results premerge cannot place in the repository.
    if f.skipped_without_location > 0 {
        ctx.warn(format!("{name}: skipped {} SARIF result(s) without a location", f.skipped_without_location));
    }
    if f.skipped_outside_repo > 0 {
        ctx.warn(format!("{name}: skipped {} SARIF location(s) outside the repository", f.skipped_outside_repo));
    }
    Ok(f)
}

/// Dispatch a parsed command line.
pub fn dispatch(cli: Cli, ctx: &mut Ctx) -> CmdResult {
    if let Some(dir) = &cli.chdir {
        ctx.cwd = if dir.is_absolute() { dir.clone() } else { ctx.cwd.join(dir) };
    }
    match cli.command {
        Command::Diff(a) => diff::run(a, ctx),
        Command::Config(a) => config::run(a, ctx),
        Command::Completions(a) => completions::run(a, ctx),
        Command::Hook(c) => hook::run(c, ctx),
        Command::Install(a) => install::run_install(a, ctx),
        Command::Uninstall(a) => install::run_uninstall(a, ctx),
        Command::Doctor(a) => doctor::run(a, ctx),
        Command::Demo(a) => demo::run(a, ctx),
        Command::Scan(a) => scan::run(a, ctx),
        Command::Memory(c) => memory::run(c, ctx),
        Command::Review(c) => review::run(c, ctx),
        Command::ExplainCap(a) => review::run_explain_cap(a, ctx),
        Command::Seams(a) => seams::run(a, ctx),
        Command::Plan(a) => plan::run(a, ctx),
        Command::Blocked(c) => blocked::run(c, ctx),
        Command::Fence(c) => fence::run(c, ctx),
        Command::Converge(a) => converge::run(a, ctx),
        Command::Loop(c) => fix_loop::run(c, ctx),
        Command::Collisions(a) => collisions::run(a, ctx),
        Command::Show(c) => show::run(c, ctx),
        Command::Schema(a) => schema::run(a, ctx),
        Command::Proposal(c) => proposal::run(c, ctx),
        Command::Drain(a) => drain::run(a, ctx),
        Command::Gate(c) => gate::run(c, ctx),
        Command::Status(a) => status::run(a, ctx),
    }
}

/// Where `proposal` and `drain` find proposals and their events: the same place for
/// both, with or without a repository (an explicit `--root` outside one).
pub(crate) struct ProposalPlace {
    pub(crate) root: PathBuf,
    pub(crate) events_dir: PathBuf,
    pub(crate) generator: Option<crate::stripe::emit::GeneratorCfg>,
    pub(crate) mode: crate::config::Mode,
}

pub(crate) fn proposal_place(ctx: &Ctx, args: &crate::cli::RootArgs) -> Result<ProposalPlace> {
    // With an explicit root, a repository is not needed: outside one, the configuration
    // is the defaults and the environment, and events go to `--run-dir`, else
    // PREMERGE_RUN_DIR, else the proposal root itself.
    let repo = match (ctx.repo(), &args.root) {
        (Ok(repo), _) => repo,
        (Err(_), Some(r)) => {
            let cfg = load_config_without_repo()?;
            let root = crate::store::run_dir::utf8_path(ctx.cwd.join(r), "proposal root")?.into_std_path_buf();
            let events_dir = match (&args.run_dir, ctx.env.var_os("PREMERGE_RUN_DIR")) {
                (Some(d), _) => ctx.cwd.join(d),
                (None, Some(d)) if !d.is_empty() => ctx.cwd.join(d),
                _ => root.clone(),
            };
            return Ok(ProposalPlace {
                root,
                events_dir,
                generator: crate::stripe::emit::GeneratorCfg::from_config(&cfg),
                mode: cfg.proposal.halt_mode,
            });
        }
        (Err(e), None) => return Err(e),
    };
    let cfg = load_config(&repo)?;
    let root = match &args.root {
        Some(r) => ctx.cwd.join(r),
        None => crate::store::proposals::default_root(&repo, &cfg)?,
    };
    let root = crate::store::run_dir::utf8_path(root, "proposal root")?.into_std_path_buf();
    let events_dir = ctx.run_dir(&repo, args.run_dir.as_deref())?.into_std_path_buf();
    Ok(ProposalPlace {
        root,
        events_dir,
        generator: crate::stripe::emit::GeneratorCfg::from_config(&cfg),
        mode: cfg.proposal.halt_mode,
    })
}
