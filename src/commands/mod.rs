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

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::error::input_error;
use crate::findings::Findings;

use crate::cli::{Cli, Command};
use crate::config::Config;
use crate::error::CmdResult;
use crate::git::Repo;

/// What a command runs against: its directory and its standard streams.
pub struct Ctx<'a> {
    /// The directory the command runs in (`-C`, else the process's).
    pub cwd: PathBuf,
    pub stdin: &'a mut dyn Read,
    pub stdout: &'a mut dyn Write,
    pub stderr: &'a mut dyn Write,
    /// The environment snapshot `main` took ([`crate::env`]): commands read variables
    /// here, never from the process.
    pub env: &'a crate::env::Env,
}

impl Ctx<'_> {
    /// Open the repository the command runs in (honours `GIT_DIR` as git's hooks set it).
    pub fn repo(&self) -> Result<Repo> {
        Ok(Repo::open_for_command(&self.cwd)?)
    }

    /// Read all of stdin as UTF-8.
    /// Read all of stdin as UTF-8, at most the limit of `kind` (src/input.rs): stdin
    /// from `/dev/zero` is refused at the limit, never read without end.
    pub(crate) fn read_stdin(&mut self, kind: crate::input::Kind) -> Result<String> {
        Ok(crate::input::read_stream_text(&mut self.stdin, kind, kind.default_limit())?)
    }

    /// The pipeline run directory: `--run-dir` (relative to the command's directory),
    /// else `PREMERGE_RUN_DIR` (likewise), else the run directory of this worktree's
    /// latest fix loop, else `<state>/run/`. A UTF-8 path (premerge writes it into
    /// events and artefacts): one that is not is an error naming it.
    pub fn run_dir(&self, repo: &Repo, explicit: Option<&Path>) -> Result<camino::Utf8PathBuf> {
        let place = crate::store::fix_loop::LoopPlace::of_repo(repo);
        let dir = crate::store::fix_loop::resolve_run_dir(&place, explicit);
        let dir = if dir.is_absolute() { dir } else { self.cwd.join(dir) };
        crate::store::run_dir::utf8_path(dir, "run directory")
    }

    /// The run directory of a command: `--run-dir`, else the environment, else the default.
    pub(crate) fn run_dir_of(&self, explicit: Option<&Path>) -> Result<camino::Utf8PathBuf> {
        self.run_dir(&self.repo()?, explicit)
    }

    /// Print a warning line `premerge: warning: ...` on stderr.
    pub fn warn(&mut self, msg: impl std::fmt::Display) {
        let _ = writeln!(self.stderr, "premerge: warning: {msg}");
    }
}

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

/// Load the effective configuration of a repository: `premerge.toml` at the root of
/// its working tree, `premerge.*` git config, and the process environment.
pub(crate) fn load_config(repo: &Repo) -> Result<Config> {
    let file = match repo.workdir() {
        Some(root) => read_config_file(&root.join(crate::config::config_file()))?,
        None => None,
    };
    let entries = repo.premerge_config_entries()?;
    let env = |k: &str| crate::env::process().lookup(k);
    Ok(Config::load(file.as_ref().map(|t| (crate::config::CONFIG_FILE_NAME, t.as_str())), &entries, &env)?)
}

/// The configuration a pre-push hook runs with: `premerge.toml` as of `base` (the
/// commit the push is compared against, already on the remote), never the pushed
/// commits or the working tree, so a push cannot switch off the fence that judges it;
/// then `premerge.*` git config and the environment, which stay trusted. No base (a
/// first push of a root) means no file. A file at the base that cannot be read or
/// parsed is reported and skipped: the defaults are the strictest settings.
pub(crate) fn load_config_at(ctx: &mut Ctx, repo: &Repo, base: Option<&str>) -> Result<Config> {
    let entries = repo.premerge_config_entries()?;
    let env = |k: &str| crate::env::process().lookup(k);
    let text = match base {
        None => None,
        Some(b) => match repo.file_at(b, crate::config::CONFIG_FILE_NAME) {
            Ok(None) => None,
            Ok(Some(bytes)) => match String::from_utf8(bytes) {
                Ok(t) => Some(t),
                Err(_) => {
                    ctx.warn(format!("premerge.toml at {b}: not UTF-8; using the defaults"));
                    None
                }
            },
            Err(e) => {
                ctx.warn(format!("premerge.toml at {b}: cannot read: {e}; using the defaults"));
                None
            }
        },
    };
    let label = base.map(|b| format!("premerge.toml at {}", &b[..b.len().min(12)]));
    if let (Some(t), Some(l)) = (&text, &label) {
        match Config::load(Some((l.as_str(), t.as_str())), &entries, &env) {
            Ok(c) => return Ok(c),
            Err(e) => ctx.warn(format!("{e}; using the defaults")),
        }
    }
    Ok(Config::load(None, &entries, &env)?)
}

/// Configuration outside any repository: defaults and the environment only.
pub(crate) fn load_config_without_repo() -> Result<Config> {
    let env = |k: &str| crate::env::process().lookup(k);
    Ok(Config::load(None, &[], &env)?)
}

fn read_config_file(path: &Path) -> Result<Option<String>> {
    // Only a regular file under the configuration limit: a committed `premerge.toml`
    // that is a FIFO or a symlink to a device must not hang or flood every command.
    Ok(crate::input::read_text_if_present(path, crate::input::Kind::Config)?)
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
