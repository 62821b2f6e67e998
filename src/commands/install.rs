//! `premerge install` / `premerge uninstall`: hook shims (chaining whatever hook was
//! there), config-declared hooks on new enough git, snippets for other hook managers,
//! and the marker blocks of agent instruction files.
//!
//! Install is all-or-nothing: every check runs and every new file is written beside
//! its target before anything is renamed into place, and a failed rename rolls the
//! earlier ones back.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};
use tempfile::NamedTempFile;

use super::{Ctx, open_repo};
use crate::error::{CmdResult, Exit};
use crate::git::Repo;
use crate::install::agent_docs::{self, Injected};
use crate::install::managers::{self as mgr, Snippet};
use crate::install::probe::{
    config_shim_path, git_version, observe, premerge_runner, read_manager_config, shim_moved_by_lefthook, shim_runs,
    update_installed_record,
};
use crate::install::{
    CONFIG_HOOK_PREFIX, CONFIG_HOOKS_MIN_GIT, ChainMode, GitVersion, Hook, InstallAction, Manager, Observed,
    UnderManager, UninstallAction, is_pre_commit_family, plan_install, plan_under_manager, plan_uninstall,
    pre_commit_legacy_name, recognise, shim_text,
};

/// Mode of the shims: executable by everyone, like the samples git writes.
const SHIM_MODE: u32 = 0o755;

const DEFAULT_HOOKS: &str = "pre-push,post-merge";

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The repository to install into (default: the one premerge runs in).
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Which hooks, comma-separated.
    #[arg(long, value_name = "LIST", default_value = DEFAULT_HOOKS)]
    pub hooks: String,
    /// Declare the hooks in git config (`hook.<name>.command`/`.event`, git 2.54 or
    /// newer) instead of writing hook files; falls back to hook files on older git.
    #[arg(long)]
    pub config_hooks: bool,
    /// Print the snippet that runs premerge from another hook manager, fitted to the
    /// repository's configuration so that appending it works, and exit.
    #[arg(long, value_name = "MANAGER", value_parser = ["pre-commit", "prek", "lefthook", "husky"])]
    pub print_config: Option<String>,
    /// Add premerge's marker blocks to AGENTS.md and CLAUDE.md (hooks are not touched).
    #[arg(long)]
    pub agent_docs: bool,
    /// With --agent-docs: create AGENTS.md and CLAUDE.md when missing.
    #[arg(long, requires = "agent_docs")]
    pub create: bool,
}

#[derive(Debug, clap::Args)]
pub struct UninstallArgs {
    /// The repository to uninstall from (default: the one premerge runs in).
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Which hooks, comma-separated.
    #[arg(long, value_name = "LIST", default_value = DEFAULT_HOOKS)]
    pub hooks: String,
    /// Remove premerge's marker blocks from AGENTS.md and CLAUDE.md (hooks are not touched).
    #[arg(long)]
    pub agent_docs: bool,
    /// Remove the stop gate's agent hooks from `.claude/settings.json` (git hooks are not touched).
    #[arg(long)]
    pub agent_hook: bool,
}

pub(crate) fn run_install(args: InstallArgs, ctx: &mut Ctx) -> CmdResult {
    if let Some(name) = &args.print_config {
        let manager = Manager::parse(name).ok_or_else(|| anyhow!("--print-config: unknown manager `{name}`"))?;
        let root = open_repo(args.repo.as_deref(), ctx).ok().and_then(|r| r.workdir());
        let snippet = print_config(manager, root.as_deref())?;
        if let Some(w) = &snippet.warning {
            ctx.warn(format_args!("--print-config {name}: {w}"));
        }
        ctx.stdout.write_all(snippet.text.as_bytes())?;
        return Ok(Exit::Ok);
    }
    let repo = open_repo(args.repo.as_deref(), ctx)?;
    if args.agent_docs {
        return agent_docs_install(&repo, args.create, ctx);
    }
    let hooks = Hook::parse_list(&args.hooks)?;
    if hooks.is_empty() {
        bail!("--hooks: no hook named");
    }
    let bin = installing_binary()?;
    if args.config_hooks {
        match git_version() {
            Ok(v) if v >= CONFIG_HOOKS_MIN_GIT => return install_config_hooks(&repo, &hooks, &bin, v, ctx),
            Ok(v) => ctx.warn(format_args!(
                "--config-hooks: git {v} runs no config-declared hooks (they need git {CONFIG_HOOKS_MIN_GIT} or newer); installing hook files instead"
            )),
            Err(e) => ctx.warn(format_args!("--config-hooks: {e:#}; installing hook files instead")),
        }
    }
    let exit = install_files(&repo, &hooks, &bin, ctx)?;
    offer_memory_backend(&repo, ctx)?;
    Ok(exit)
}

/// The memory CLI the source names is installed and guard memories do not go to it:
/// say the one command that sends them there too (premerge never configures it itself).
fn offer_memory_backend(repo: &Repo, ctx: &mut Ctx) -> Result<()> {
    use crate::memory::backend;
    let Some(vipune) = backend::on_path(ctx.env.var_os("PATH"), backend::VIPUNE) else { return Ok(()) };
    let configured = super::load_config(repo).map(|c| !c.memory.backend_command.is_empty()).unwrap_or(true);
    if !configured {
        writeln!(
            ctx.stdout,
            "{} is installed ({}): to send guard memories to it as well as the embedded store, run: {}",
            backend::VIPUNE,
            vipune.display(),
            backend::vipune_config_command()
        )?;
    }
    Ok(())
}

pub(crate) fn run_uninstall(args: UninstallArgs, ctx: &mut Ctx) -> CmdResult {
    let repo = open_repo(args.repo.as_deref(), ctx)?;
    if args.agent_docs {
        return agent_docs_uninstall(&repo, ctx);
    }
    if args.agent_hook {
        let path = repo.require_workdir()?.join(".claude").join("settings.json");
        crate::gate::agent_hook::uninstall_at(&path, ctx.stdout)?;
        return Ok(Exit::Ok);
    }
    if let Some(path) = crate::gate::agent_hook::present(&repo) {
        writeln!(
            ctx.stdout,
            "note: {} has the stop gate's agent hooks; `premerge uninstall --agent-hook` removes them",
            path.display()
        )?;
    }
    let hooks = Hook::parse_list(&args.hooks)?;
    let dir = repo.hooks_dir()?.path;
    for hook in &hooks {
        let path = dir.join(hook.name());
        let chained = dir.join(hook.chained_name());
        let legacy = dir.join(pre_commit_legacy_name(*hook));
        let at_hook = observe(&path)?;
        let shim_under_pre_commit = matches!(&at_hook, Observed::File(b) if matches!(recognise(b), Some(Manager::PreCommit | Manager::Prek)))
            && matches!(observe(&legacy)?, Observed::File(b) if crate::install::parse_shim(&b).is_some());
        let chained_manager_hook =
            matches!(observe(&chained)?, Observed::File(b) if is_pre_commit_family(&b).is_some());
        let under_manager = matches!(&at_hook, Observed::File(b) if is_pre_commit_family(b).is_some());
        if under_manager && chained_manager_hook {
            // An older hook of pre-commit's or prek's that premerge had chained (the
            // migration-mode leftover): the manager's current hook does what it did.
            fs::remove_file(&chained).with_context(|| format!("{}: cannot remove", chained.display()))?;
            writeln!(ctx.stdout, "{hook}: removed {}, an older pre-commit or prek hook", chained.display())?;
        }
        if under_manager && !shim_under_pre_commit && !chained_manager_hook && chained.exists() && !legacy.exists() {
            // `pre-commit install -f` removed premerge's shim (its legacy hook): the
            // user's hook premerge had chained becomes the manager's legacy hook, where
            // the manager would have put it.
            fs::rename(&chained, &legacy).with_context(|| format!("{}: cannot restore", chained.display()))?;
            writeln!(
                ctx.stdout,
                "{hook}: the legacy hook of pre-commit or prek is again the hook premerge had chained"
            )?;
            remove_config_hook_reporting(&repo, *hook, ctx)?;
            continue;
        }
        if shim_under_pre_commit {
            // pre-commit runs premerge's shim as its legacy hook: the hook premerge had
            // chained becomes pre-commit's legacy hook, as it would have been.
            if chained.exists() {
                fs::rename(&chained, &legacy).with_context(|| format!("{}: cannot restore", chained.display()))?;
                writeln!(
                    ctx.stdout,
                    "{hook}: the legacy hook of pre-commit or prek is again the hook premerge had chained"
                )?;
            } else {
                fs::remove_file(&legacy).with_context(|| format!("{}: cannot remove", legacy.display()))?;
                writeln!(
                    ctx.stdout,
                    "{hook}: removed {} (premerge's shim under pre-commit or prek)",
                    legacy.display()
                )?;
            }
            remove_config_hook_reporting(&repo, *hook, ctx)?;
            continue;
        }
        if let Some(old) = shim_moved_by_lefthook(&dir, *hook)? {
            fs::remove_file(&old).with_context(|| format!("{}: cannot remove", old.display()))?;
            writeln!(ctx.stdout, "{hook}: removed premerge's shim that lefthook had moved to {}", old.display())?;
        }
        match plan_uninstall(&at_hook, &observe(&chained)?) {
            UninstallAction::NotInstalled => writeln!(ctx.stdout, "{hook}: not installed")?,
            UninstallAction::Remove => {
                fs::remove_file(&path).with_context(|| format!("{}: cannot remove", path.display()))?;
                writeln!(ctx.stdout, "{hook}: removed {}", path.display())?;
            }
            UninstallAction::Restore => {
                fs::rename(&chained, &path).with_context(|| format!("{}: cannot restore", chained.display()))?;
                writeln!(ctx.stdout, "{hook}: removed premerge's shim, restored the hook that was there before")?;
            }
            UninstallAction::LeftoverChained => ctx.warn(format_args!(
                "{}: left alone: the hook beside it is not premerge's shim; move it back to {} or delete it",
                chained.display(),
                path.display()
            )),
        }
        remove_config_hook_reporting(&repo, *hook, ctx)?;
    }
    sync_dir(&dir);
    uninstall_unused_default(&repo, &dir, &hooks, ctx)?;
    if let Err(e) = update_installed_record(&repo, &hooks, false) {
        // The hooks are uninstalled; a stale record only makes doctor ask for a repair.
        ctx.warn(format_args!("the record of installed hooks was not updated: {e:#}"));
    }
    // The block covers every hook premerge added there: it goes when every hook is uninstalled.
    let every_hook = crate::install::HOOKS.iter().all(|h| hooks.iter().any(|x| x.name() == *h));
    if let (true, Some(root)) = (every_hook, repo.workdir()) {
        let file = root.join(mgr::LEFTHOOK_LOCAL);
        if let Some(rest) = read_manager_config(&file).and_then(|t| mgr::without_block(&t)) {
            if rest.trim().is_empty() {
                fs::remove_file(&file).with_context(|| format!("{}: cannot remove", file.display()))?;
            } else {
                let mode = fs::metadata(&file).map(|m| m.permissions().mode() & 0o7777).unwrap_or(0o644);
                stage(&root, rest.as_bytes(), mode)?
                    .persist(&file)
                    .map_err(|e| anyhow!("{}: rename into place failed: {}", file.display(), e.error))?;
            }
            writeln!(ctx.stdout, "removed premerge's block from {}", file.display())?;
        }
    }
    Ok(Exit::Ok)
}

/// Shims left in git's default hooks directory after `core.hooksPath` (husky sets it)
/// sent git elsewhere: unused, but they would run again once the setting goes, so
/// uninstall removes them too (restoring any hook they chained).
fn uninstall_unused_default(repo: &Repo, dir: &Path, hooks: &[Hook], ctx: &mut Ctx) -> Result<()> {
    let default_dir = repo.common_dir().join("hooks");
    match (default_dir.canonicalize(), dir.canonicalize()) {
        (Ok(a), Ok(b)) if a != b => {}
        _ => return Ok(()),
    }
    for hook in hooks {
        let path = default_dir.join(hook.name());
        let chained = default_dir.join(hook.chained_name());
        if !matches!(observe(&path)?, Observed::File(b) if crate::install::parse_shim(&b).is_some()) {
            continue;
        }
        match plan_uninstall(&observe(&path)?, &observe(&chained)?) {
            UninstallAction::Remove => {
                fs::remove_file(&path).with_context(|| format!("{}: cannot remove", path.display()))?;
                writeln!(ctx.stdout, "{hook}: removed {} (unused while core.hooksPath is set)", path.display())?;
            }
            UninstallAction::Restore => {
                fs::rename(&chained, &path).with_context(|| format!("{}: cannot restore", chained.display()))?;
                writeln!(
                    ctx.stdout,
                    "{hook}: removed premerge's unused shim from {}, restored the hook that was there before",
                    default_dir.display()
                )?;
            }
            UninstallAction::NotInstalled | UninstallAction::LeftoverChained => {}
        }
    }
    sync_dir(&default_dir);
    Ok(())
}

/// The snippet `--print-config` prints for the repository at `root` (none: outside one).
fn print_config(manager: Manager, root: Option<&Path>) -> Result<Snippet> {
    let first = |names: &[&str]| root.and_then(|r| names.iter().find_map(|n| read_manager_config(&r.join(n))));
    Ok(match manager {
        Manager::PreCommit | Manager::Prek => {
            mgr::pre_commit_snippet(manager, first(mgr::PRE_COMMIT_CONFIGS).as_deref())
        }
        Manager::Lefthook => mgr::lefthook_snippet(first(&mgr::LEFTHOOK_CONFIGS[..4]).as_deref()),
        Manager::Husky => mgr::husky_snippet(),
    })
}

/// The absolute path of the running binary, which the shims record.
fn installing_binary() -> Result<String> {
    let exe = std::env::current_exe().context("cannot tell where the premerge binary is")?;
    let exe = exe.canonicalize().unwrap_or(exe);
    exe.to_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow!("{}: the binary's path is not UTF-8; move premerge elsewhere", exe.display()))
}

/// Write `bytes` to a new temporary file in `dir` with `mode`, synced: the first half
/// of an atomic replace (the caller renames it into place).
fn stage(dir: &Path, bytes: &[u8], mode: u32) -> Result<NamedTempFile> {
    let mut tmp = tempfile::Builder::new()
        .prefix(".premerge-tmp-")
        .tempfile_in(dir)
        .with_context(|| format!("{}: not writable", dir.display()))?;
    tmp.write_all(bytes).with_context(|| format!("{}: write failed", dir.display()))?;
    tmp.as_file()
        .set_permissions(fs::Permissions::from_mode(mode))
        .with_context(|| format!("{}: cannot set file mode", dir.display()))?;
    tmp.as_file().sync_all().with_context(|| format!("{}: fsync failed", dir.display()))?;
    Ok(tmp)
}

fn sync_dir(dir: &Path) {
    // Makes the renames durable; a file system that refuses a directory fsync costs
    // durability on a crash, never correctness.
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// One step of an install already carried out, for rolling back.
enum Done {
    /// A file was renamed from `.0` to `.1`.
    Renamed(PathBuf, PathBuf),
    /// A file was written at `.0`, over `.1` (its previous bytes) or over nothing.
    Wrote(PathBuf, Option<Vec<u8>>),
}

fn roll_back(done: Vec<Done>) {
    for step in done.into_iter().rev() {
        // Best effort: the install already failed and says so; each undo that fails
        // leaves a state `premerge doctor` names.
        match step {
            Done::Renamed(from, to) => {
                let _ = fs::rename(&to, &from);
            }
            Done::Wrote(path, Some(bytes)) => {
                let _ = fs::write(&path, bytes);
            }
            Done::Wrote(path, None) => {
                let _ = fs::remove_file(&path);
            }
        }
    }
}

fn install_files(repo: &Repo, hooks: &[Hook], bin: &str, ctx: &mut Ctx) -> CmdResult {
    let hooks_dir = repo.hooks_dir()?;
    let dir = hooks_dir.path.clone();
    match fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() || m.file_type().is_symlink() && dir.is_dir() => {}
        Ok(_) => bail!("{}: the hooks directory is not a directory", dir.display()),
        Err(_) => {
            fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create the hooks directory", dir.display()))?
        }
    }

    // Decide everything before changing anything.
    let mut plans = Vec::new();
    let mut refusals = Vec::new();
    let mut notes = Vec::new();
    let mut stale = Vec::new();
    let mut to_lefthook = Vec::new();
    for hook in hooks {
        if let Some(old) = shim_moved_by_lefthook(&dir, *hook)? {
            stale.push((*hook, old));
        }
        if let Some((manager, file)) = premerge_runner(repo, &dir, *hook)? {
            let m = manager.name();
            match shim_runs(repo, &dir, *hook)? {
                Some(shim) => ctx.warn(format_args!(
                    "premerge runs twice on every {hook}: {m} runs it ({}) and so does premerge's shim {}; remove one: `premerge uninstall --hooks {hook}` (keeps {m}'s), or take premerge out of {}",
                    file.display(),
                    shim.display(),
                    file.display()
                )),
                None => notes.push(format!(
                    "{hook}: {m} runs premerge ({}); no shim written (it would run premerge twice)",
                    file.display()
                )),
            }
            continue;
        }
        let path = dir.join(hook.name());
        if matches!(observe(&path)?, Observed::File(b) if recognise(&b) == Some(Manager::Lefthook)) {
            to_lefthook.push(*hook);
        }
    }
    // lefthook moves any hook file of premerge's aside on its next install: where
    // lefthook runs a hook, premerge goes into lefthook's local configuration instead.
    let mut lefthook_local = None;
    if let (false, Some(root)) = (to_lefthook.is_empty(), repo.workdir()) {
        let file = root.join(mgr::LEFTHOOK_LOCAL);
        let existing = match observe(&file)? {
            Observed::Absent => None,
            Observed::File(b) => Some(String::from_utf8_lossy(&b).into_owned()),
            _ => bail!("{}: not a regular file; remove it, then install again", file.display()),
        };
        match mgr::lefthook_local_with_block(existing.as_deref(), &to_lefthook) {
            Some(text) => lefthook_local = Some((file, text, to_lefthook.clone())),
            None => ctx.warn(format_args!(
                "{}: already defines {}: add premerge there by hand (premerge install --print-config lefthook); until then premerge's shim chains lefthook's hook, and the next `lefthook install` moves it aside",
                file.display(),
                to_lefthook.iter().map(|h| h.name()).collect::<Vec<_>>().join(", ")
            )),
        }
    }
    for hook in hooks {
        let runs_elsewhere = premerge_runner(repo, &dir, *hook)?.is_some()
            || lefthook_local.as_ref().is_some_and(|(_, _, hs)| hs.contains(hook));
        if runs_elsewhere {
            continue;
        }
        let path = dir.join(hook.name());
        let chained = dir.join(hook.chained_name());
        let (at_hook, at_chained) = (observe(&path)?, observe(&chained)?);
        let legacy = dir.join(pre_commit_legacy_name(*hook));
        let at_legacy = observe(&legacy)?;
        let under = plan_under_manager(
            *hook,
            &at_hook,
            &at_legacy,
            &at_chained,
            crate::VERSION,
            bin,
            &legacy.display().to_string(),
            &chained.display().to_string(),
        );
        match under {
            Some(Ok(action)) => {
                plans.push((*hook, legacy, chained, at_legacy, action));
                continue;
            }
            Some(Err(e)) => {
                refusals.push(e.to_string());
                continue;
            }
            None => {}
        }
        let plan = plan_install(
            *hook,
            &at_hook,
            &at_chained,
            crate::VERSION,
            bin,
            &path.display().to_string(),
            &chained.display().to_string(),
        );
        match plan {
            Ok(action) => plans.push((*hook, path, chained, at_hook, action)),
            Err(e) => refusals.push(e.to_string()),
        }
    }
    if !refusals.is_empty() {
        bail!("nothing was installed: {}", refusals.join("; "));
    }
    if let Some((file, text, hs)) = &lefthook_local {
        let root = file.parent().expect("a file under the working tree");
        let mode = fs::metadata(file).map(|m| m.permissions().mode() & 0o7777).unwrap_or(0o644);
        stage(root, text.as_bytes(), mode)?
            .persist(file)
            .map_err(|e| anyhow!("{}: rename into place failed: {}", file.display(), e.error))?;
        for hook in hs {
            notes.push(format!(
                "{hook}: lefthook runs this hook; added premerge to {} (lefthook merges it into its configuration, and `lefthook install` keeps it)",
                file.display()
            ));
        }
    }
    for hook in hooks {
        if repo.config_string(&format!("hook.{CONFIG_HOOK_PREFIX}{hook}.command"))?.is_some() {
            ctx.warn(format_args!(
                "hook.{CONFIG_HOOK_PREFIX}{hook} is declared in git config too, so git 2.54+ would run premerge twice; `premerge uninstall --hooks {hook}` removes both, then install again"
            ));
        }
    }

    // Write every new shim beside its target.
    let mut staged = Vec::new();
    for (_, _, _, _, action) in &plans {
        let shim = match action {
            InstallAction::Unchanged | InstallAction::UnderManager(UnderManager { shim: None, .. }) => None,
            InstallAction::UnderManager(UnderManager { shim: Some(shim), .. })
            | InstallAction::Write { shim }
            | InstallAction::Update { shim, .. }
            | InstallAction::Chain { shim, .. }
            | InstallAction::Rechain { shim, .. } => {
                Some(stage(&dir, shim.as_bytes(), SHIM_MODE).context("nothing was installed")?)
            }
        };
        staged.push(shim);
    }

    // Rename into place; undo on the first failure.
    let mut done = Vec::new();
    // Files set aside under a temporary name until every step succeeded.
    let mut leftovers: Vec<PathBuf> = Vec::new();
    let mut report = Vec::new();
    for ((hook, path, chained, at_hook, action), tmp) in plans.into_iter().zip(staged) {
        let step = (|| -> Result<String> {
            if let InstallAction::UnderManager(steps) = &action {
                return under_manager(&dir, hook, &path, &chained, steps, tmp, &mut done, &mut leftovers);
            }
            let Some(tmp) = tmp else {
                return Ok(format!("{hook}: already installed, unchanged ({})", path.display()));
            };
            let line = match &action {
                InstallAction::Chain { manager, .. } => {
                    fs::rename(&path, &chained).with_context(|| format!("{}: cannot move aside", path.display()))?;
                    done.push(Done::Renamed(path.clone(), chained.clone()));
                    let whose =
                        manager.map_or("the existing hook".to_string(), |m| format!("the existing {} hook", m.name()));
                    let mut line = format!(
                        "{hook}: installed {}; {whose} runs first, kept as {}",
                        path.display(),
                        chained.display()
                    );
                    if *manager == Some(Manager::Husky) {
                        line.push_str(&husky_advice(&dir, hook));
                    }
                    line
                }
                InstallAction::Rechain { manager, .. } => {
                    let orphan = crate::input::read(&chained, crate::input::Kind::Hook)?;
                    done.push(Done::Wrote(chained.clone(), Some(orphan)));
                    fs::rename(&path, &chained).with_context(|| format!("{}: cannot move aside", path.display()))?;
                    done.push(Done::Renamed(path.clone(), chained.clone()));
                    let m = manager.name();
                    let mut line = format!(
                        "{hook}: repaired: {m} had rewritten {} and dropped premerge's shim; the shim is back, and {m}'s current hook runs first, kept as {}",
                        path.display(),
                        chained.display()
                    );
                    if *manager == Manager::Husky {
                        line.push_str(&husky_advice(&dir, hook));
                    }
                    line
                }
                InstallAction::Update { from_version, .. } => {
                    format!("{hook}: updated {} (shim of premerge {from_version})", path.display())
                }
                _ => format!("{hook}: installed {}", path.display()),
            };
            let previous = match at_hook {
                Observed::File(b) if !matches!(action, InstallAction::Chain { .. } | InstallAction::Rechain { .. }) => {
                    Some(b)
                }
                _ => None,
            };
            tmp.persist(&path).map_err(|e| anyhow!("{}: rename into place failed: {}", path.display(), e.error))?;
            done.push(Done::Wrote(path.clone(), previous));
            Ok(line)
        })();
        match step {
            Ok(line) => report.push(line),
            Err(e) => {
                roll_back(done);
                return Err(e.context("nothing was installed (every change was rolled back)"));
            }
        }
    }
    for file in &leftovers {
        // Set aside only so that a failed install could put it back; the install
        // succeeded, so a file that will not go is harmless beside the hooks.
        let _ = fs::remove_file(file);
    }
    sync_dir(&dir);
    for (hook, old) in &stale {
        fs::remove_file(old).with_context(|| format!("{}: cannot remove", old.display()))?;
        notes.push(format!(
            "{hook}: removed premerge's shim that `lefthook install` had moved to {}, where it never ran",
            old.display()
        ));
    }
    if let Err(e) = update_installed_record(repo, hooks, true) {
        // Only doctor's clue for a shim another tool removes later is lost.
        ctx.warn(format_args!("the record of installed hooks was not written: {e:#}"));
    }
    let why = match &hooks_dir.hooks_path_config {
        Some(v) => format!("core.hooksPath = {v}"),
        None => "git's default".to_string(),
    };
    writeln!(ctx.stdout, "hooks directory: {} ({why})", dir.display())?;
    let any_shim = !report.is_empty();
    for line in report.into_iter().chain(notes) {
        writeln!(ctx.stdout, "{line}")?;
    }
    if any_shim {
        writeln!(ctx.stdout, "the shims run {bin} (premerge {}); PREMERGE=0 skips premerge", crate::VERSION)?;
    }
    Ok(Exit::Ok)
}

/// What to tell a husky user whose hooks directory premerge's shim sits in.
fn husky_advice(dir: &Path, hook: Hook) -> String {
    let script = dir.parent().map_or_else(|| format!(".husky/{hook}"), |p| p.join(hook.name()).display().to_string());
    format!(
        " (husky rewrites {} whenever its prepare script runs, e.g. on npm install, which drops the shim again: to keep premerge, add `premerge install --print-config husky` to {script} instead)",
        dir.display()
    )
}

/// A name in the hooks directory to set a file aside under until the install is done.
fn aside_name(dir: &Path, hook: Hook, what: &str) -> PathBuf {
    dir.join(format!(".premerge-tmp-{hook}-{what}"))
}

/// Carry out [`UnderManager`] for `hook`: `legacy` is `<hook>.legacy`. Each step is
/// recorded in `done` so a later failure rolls it back; files removed for good are
/// first set aside (in `leftovers`) so that the rollback can bring them back.
#[allow(clippy::too_many_arguments)]
fn under_manager(
    dir: &Path,
    hook: Hook,
    legacy: &Path,
    chained: &Path,
    steps: &UnderManager,
    tmp: Option<NamedTempFile>,
    done: &mut Vec<Done>,
    leftovers: &mut Vec<PathBuf>,
) -> Result<String> {
    let m = steps.manager.name();
    let path = dir.join(hook.name());
    let mut said = Vec::new();
    if steps.hook_from_chained {
        // An older install chained the manager's hook: it goes back to its own name.
        let aside = aside_name(dir, hook, "shim");
        fs::rename(&path, &aside).with_context(|| format!("{}: cannot move aside", path.display()))?;
        done.push(Done::Renamed(path.clone(), aside.clone()));
        leftovers.push(aside);
        fs::rename(chained, &path).with_context(|| format!("{}: cannot move back", chained.display()))?;
        done.push(Done::Renamed(chained.to_path_buf(), path.clone()));
        said.push(format!("{m}'s hook is back at {} (its next install keeps premerge there)", path.display()));
    }
    if steps.drop_chained {
        let aside = aside_name(dir, hook, "manager");
        fs::rename(chained, &aside).with_context(|| format!("{}: cannot remove", chained.display()))?;
        done.push(Done::Renamed(chained.to_path_buf(), aside.clone()));
        leftovers.push(aside);
        said.push(format!(
            "repaired: removed {}, an older {m} hook that {m} refused to run in migration mode (every push failed)",
            chained.display()
        ));
    }
    if steps.legacy_to_chained {
        fs::rename(legacy, chained).with_context(|| format!("{}: cannot move aside", legacy.display()))?;
        done.push(Done::Renamed(legacy.to_path_buf(), chained.to_path_buf()));
        said.push(format!("your legacy hook runs first, kept as {}", chained.display()));
    }
    if let Some(tmp) = tmp {
        let previous = match observe(legacy)? {
            Observed::File(b) => Some(b),
            _ => None,
        };
        let fresh = previous.is_none();
        tmp.persist(legacy).map_err(|e| anyhow!("{}: rename into place failed: {}", legacy.display(), e.error))?;
        done.push(Done::Wrote(legacy.to_path_buf(), previous));
        said.insert(
            0,
            if fresh {
                format!(
                    "installed {} as {m}'s legacy hook ({m} runs it before its own hooks, and `{m} install` keeps it)",
                    legacy.display()
                )
            } else {
                format!("updated {}, which {m} runs as its legacy hook", legacy.display())
            },
        );
    }
    if said.is_empty() {
        return Ok(format!("{hook}: already installed, unchanged ({m} runs it as {})", legacy.display()));
    }
    Ok(format!("{hook}: {}", said.join("; ")))
}

fn install_config_hooks(repo: &Repo, hooks: &[Hook], bin: &str, git: GitVersion, ctx: &mut Ctx) -> CmdResult {
    let state = repo.state_dir();
    let dir = state.path.join("hooks");
    fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let hooks_dir = repo.hooks_dir()?.path;
    for hook in hooks {
        if let Some((manager, file)) = premerge_runner(repo, &hooks_dir, *hook)? {
            ctx.warn(format_args!(
                "premerge runs twice on every {hook}: {} runs it ({}) and so will the config-declared hook; remove one: `premerge uninstall --hooks {hook}` (keeps {}'s), or take premerge out of {}",
                manager.name(),
                file.display(),
                manager.name(),
                file.display()
            ));
        }
        let file = hooks_dir.join(hook.name());
        if matches!(observe(&file)?, Observed::File(b) if crate::install::parse_shim(&b).is_some()) {
            ctx.warn(format_args!(
                "{}: premerge's hook file is installed too, so premerge would run twice; `premerge uninstall --hooks {hook}` removes both, then install again",
                file.display()
            ));
        }
    }
    let mut staged = Vec::new();
    for hook in hooks {
        let shim = shim_text(*hook, crate::VERSION, bin, ChainMode::Exec);
        staged.push((*hook, stage(&dir, shim.as_bytes(), SHIM_MODE)?));
    }
    for (hook, tmp) in staged {
        let path = config_shim_path(repo, hook);
        tmp.persist(&path).map_err(|e| anyhow!("{}: rename into place failed: {}", path.display(), e.error))?;
        let name = format!("{CONFIG_HOOK_PREFIX}{hook}");
        let command = crate::install::sh_quote(&path.display().to_string());
        repo.set_local_config(&format!("hook.{name}.command"), &command)?;
        repo.set_local_config(&format!("hook.{name}.event"), hook.name())?;
        writeln!(ctx.stdout, "{hook}: declared in git config as hook.{name} (command {command})")?;
    }
    sync_dir(&dir);
    writeln!(ctx.stdout, "git {git} runs config-declared hooks beside any hook file; PREMERGE=0 skips premerge")?;
    Ok(Exit::Ok)
}

fn remove_config_hook_reporting(repo: &Repo, hook: Hook, ctx: &mut Ctx) -> Result<()> {
    if remove_config_hook(repo, hook)? {
        writeln!(ctx.stdout, "{hook}: removed config-declared hook hook.{CONFIG_HOOK_PREFIX}{hook}")?;
    }
    Ok(())
}

fn remove_config_hook(repo: &Repo, hook: Hook) -> Result<bool> {
    let name = format!("{CONFIG_HOOK_PREFIX}{hook}");
    let a = repo.unset_local_config(&format!("hook.{name}.command"))?;
    let b = repo.unset_local_config(&format!("hook.{name}.event"))?;
    let shim = config_shim_path(repo, hook);
    if shim.exists() {
        fs::remove_file(&shim).with_context(|| format!("{}: cannot remove", shim.display()))?;
    }
    Ok(a || b)
}

/// Read `.premerge/pins.json`; missing is empty, malformed is empty with a warning.
fn read_pins(root: &Path, ctx: &mut Ctx) -> std::collections::BTreeMap<String, agent_docs::Pin> {
    let path = root.join(agent_docs::PINS_PATH);
    match crate::input::read_text(&path, crate::input::Kind::Settings) {
        Ok(text) => agent_docs::parse_pins(&text).unwrap_or_else(|why| {
            ctx.warn(format_args!("{}: malformed, treated as empty: {why}", agent_docs::PINS_PATH));
            Default::default()
        }),
        Err(e) if e.is_missing() => Default::default(),
        Err(e) => {
            ctx.warn(format_args!("{}: unreadable, treated as empty: {e}", agent_docs::PINS_PATH));
            Default::default()
        }
    }
}

/// Refuse an agent file that a symlink takes outside the work tree: a committed
/// `CLAUDE.md -> ~/.profile` must not get premerge's blocks written into it.
fn agent_file_inside(path: &Path, file: &str, root: &Path) -> Result<()> {
    let (real, inside) = crate::store::contain::resolves_inside(path, &[root])?;
    if !inside {
        bail!(
            "{file}: a symlink to {}, outside the work tree; premerge edits agent files only inside it (replace the link with the file to let it); nothing was changed",
            real.display()
        );
    }
    Ok(())
}

/// An agent file's text, `None` when it does not exist.
fn read_agent_file(path: &Path, file: &str) -> Result<Option<String>> {
    match crate::input::read(path, crate::input::Kind::AgentDoc) {
        Ok(b) => Ok(Some(String::from_utf8(b).map_err(|_| anyhow!("{file}: not UTF-8; nothing was changed"))?)),
        Err(e) if e.is_missing() => Ok(None),
        Err(e) => bail!("{e}; nothing was changed"),
    }
}

/// Compute the new text of every agent file, then write the changed ones.
fn agent_docs_install(repo: &Repo, create: bool, ctx: &mut Ctx) -> CmdResult {
    let root = repo.require_workdir()?;
    let pins = read_pins(&root, ctx);
    let mut writes = Vec::new();
    let mut seen = Vec::new();
    for file in agent_docs::FILES {
        let path = root.join(file);
        if same_file_as_earlier(&path, file, &mut seen, ctx)? {
            continue;
        }
        agent_file_inside(&path, file, &root)?;
        let (mut text, existed) = match read_agent_file(&path, file)? {
            Some(t) => (t, true),
            None if create => (String::new(), false),
            None => {
                writeln!(ctx.stdout, "{file}: not present, skipped (--create makes it)")?;
                continue;
            }
        };
        let original = text.clone();
        for block in agent_docs::BLOCKS {
            if pins.contains_key(block.id) {
                writeln!(ctx.stdout, "{file}: {} pinned in {}, skipped", block.id, agent_docs::PINS_PATH)?;
                continue;
            }
            let (next, how) = agent_docs::inject(&text, block);
            let what = match how {
                Injected::AlreadyPresent => "already present".to_string(),
                Injected::IntoSection => format!("added to section \"{}\"", block.section),
                Injected::AppendedSection => format!("added in a new section \"{}\"", block.section),
            };
            writeln!(ctx.stdout, "{file}: {} {what}", block.id)?;
            text = next;
        }
        if text != original || !existed {
            writes.push((path, text, existed));
        }
    }
    write_docs(writes)
}

fn agent_docs_uninstall(repo: &Repo, ctx: &mut Ctx) -> CmdResult {
    let root = repo.require_workdir()?;
    let pins = read_pins(&root, ctx);
    let mut writes = Vec::new();
    let mut seen = Vec::new();
    for file in agent_docs::FILES {
        let path = root.join(file);
        if same_file_as_earlier(&path, file, &mut seen, ctx)? {
            continue;
        }
        agent_file_inside(&path, file, &root)?;
        let Some(mut text) = read_agent_file(&path, file)? else { continue };
        let original = text.clone();
        for block in agent_docs::BLOCKS {
            if pins.contains_key(block.id) {
                writeln!(ctx.stdout, "{file}: {} pinned in {}, left alone", block.id, agent_docs::PINS_PATH)?;
                continue;
            }
            let (next, n) = agent_docs::remove_block(&text, block);
            if n > 0 {
                writeln!(ctx.stdout, "{file}: {} removed", block.id)?;
            }
            if agent_docs::count(&next, block.id) > 0 {
                ctx.warn(format_args!("{file}: {} has a start marker without its end marker; left alone", block.id));
            }
            text = next;
        }
        if text != original {
            writes.push((path, text, true));
        }
    }
    write_docs(writes)
}

/// Whether `path` resolves (through symlinks) to a file an earlier name already
/// covered, such as `CLAUDE.md -> AGENTS.md`; says so when it does.
fn same_file_as_earlier(path: &Path, file: &str, seen: &mut Vec<(PathBuf, String)>, ctx: &mut Ctx) -> Result<bool> {
    let real = crate::store::contain::resolve(path)?;
    if let Some((_, earlier)) = seen.iter().find(|(p, _)| *p == real) {
        writeln!(ctx.stdout, "{file}: a link to {earlier}, handled with it")?;
        return Ok(true);
    }
    seen.push((real, file.to_string()));
    Ok(false)
}

/// Write each file atomically, keeping the mode of a file that existed.
fn write_docs(writes: Vec<(PathBuf, String, bool)>) -> CmdResult {
    let mut staged = Vec::new();
    for (path, text, existed) in writes {
        // A symlinked agent file (`CLAUDE.md -> AGENTS.md`) stays a link: its target is written.
        let path = crate::store::contain::resolve(&path)?;
        let mode =
            if existed { fs::metadata(&path).map(|m| m.permissions().mode() & 0o7777).unwrap_or(0o644) } else { 0o644 };
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
        staged.push((path, stage(&dir, text.as_bytes(), mode).context("nothing was changed")?));
    }
    for (path, tmp) in staged {
        tmp.persist(&path).map_err(|e| anyhow!("{}: rename into place failed: {}", path.display(), e.error))?;
    }
    Ok(Exit::Ok)
}

/// Demo stage: chain a hook the scratch repository already has, show that a second
/// install changes nothing, retrofit the agent files, then undo both.
pub(crate) fn demo_stage(d: &mut super::DemoRun) -> Result<()> {
    let hooks = d.root.join(".git/hooks");
    let user_hook = hooks.join("pre-push");
    fs::create_dir_all(&hooks)?;
    fs::write(&user_hook, "#!/bin/sh\necho 'the team hook ran'\n")?;
    fs::set_permissions(&user_hook, fs::Permissions::from_mode(0o755))?;
    d.say("a pre-push hook of the team's own is in place; premerge install chains it:")?;
    let args = |hooks: &str| InstallArgs {
        repo: None,
        hooks: hooks.to_string(),
        config_hooks: false,
        print_config: None,
        agent_docs: false,
        create: false,
    };
    d.with_ctx(b"", |ctx| run_install(args(DEFAULT_HOOKS), ctx))?;
    d.say("installing again changes no byte:")?;
    d.with_ctx(b"", |ctx| run_install(args("pre-push"), ctx))?;
    d.say("agent instruction files get premerge's marker blocks (--agent-docs --create):")?;
    d.with_ctx(b"", |ctx| run_install(InstallArgs { agent_docs: true, create: true, ..args(DEFAULT_HOOKS) }, ctx))?;
    d.say("premerge uninstall puts the team's hook back, byte for byte:")?;
    let un = |agent_docs| UninstallArgs { repo: None, hooks: DEFAULT_HOOKS.to_string(), agent_docs, agent_hook: false };
    d.with_ctx(b"", |ctx| run_uninstall(un(false), ctx))?;
    d.with_ctx(b"", |ctx| run_uninstall(un(true), ctx))?;
    let back = crate::input::read_text(&user_hook, crate::input::Kind::Hook)?;
    d.say(format_args!("  .git/hooks/pre-push is the team's again: {}", back.lines().nth(1).unwrap_or("")))?;
    Ok(())
}
