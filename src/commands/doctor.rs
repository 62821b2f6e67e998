//! `premerge doctor`: what is installed where, which binary the shims run, what is
//! chained, the effective configuration and the health of the state directory.
//! Exits 1 when something is broken, naming the fix for each problem.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Ctx;
use super::open_repo;
use crate::cli::Format;
use crate::error::{CmdResult, Exit};
use crate::git::Repo;
use crate::install::probe::{
    git_version, installed_record, installed_record_path, observe, premerge_runner, shim_moved_by_lefthook, shim_runs,
};
use crate::install::{
    CONFIG_HOOK_PREFIX, CONFIG_HOOKS_MIN_GIT, HOOKS, Hook, Manager, Observed, UnderManagerState, parse_shim,
    pre_commit_legacy_name, recognise, under_manager_state,
};

/// How long `<shim binary> --version` may take before doctor reports it as hung.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The repository to check (default: the one premerge runs in).
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
}

/// A problem doctor found, and the fix it names.
struct Problem {
    what: String,
    fix: String,
}

pub fn run(args: Args, ctx: &mut Ctx) -> CmdResult {
    let repo = open_repo(args.repo.as_deref(), ctx)?;
    let mut problems = Vec::new();
    let me = std::env::current_exe().map(|p| p.canonicalize().unwrap_or(p)).ok();
    let me_text = me.as_ref().map_or("(unknown)".to_string(), |p| p.display().to_string());
    writeln!(ctx.stdout, "premerge {} at {me_text}", crate::VERSION)?;
    let where_ = repo.workdir().unwrap_or_else(|| repo.git_dir());
    writeln!(ctx.stdout, "repository: {}", where_.display())?;

    let git = git_version();
    match &git {
        Ok(v) => writeln!(ctx.stdout, "git: {v}")?,
        Err(e) => writeln!(ctx.stdout, "git: {e:#}")?,
    }

    check_hooks(&repo, me.as_deref(), &mut problems, ctx)?;
    check_config_hooks(&repo, git.as_ref().ok().copied(), &mut problems, ctx)?;
    check_config(&repo, &mut problems, ctx)?;
    check_state(&repo, &mut problems, ctx)?;
    let backend = super::load_config(&repo).map(|c| c.memory.backend_command).unwrap_or_default();
    let vipune = crate::memory::backend::on_path(ctx.env.var_os("PATH"), crate::memory::backend::VIPUNE);
    writeln!(ctx.stdout, "{}", crate::memory::backend::describe(&backend, vipune.as_deref()))?;

    if problems.is_empty() {
        writeln!(ctx.stdout, "ok: nothing is broken")?;
        return Ok(Exit::Ok);
    }
    writeln!(ctx.stdout, "{} problem(s):", problems.len())?;
    for p in &problems {
        writeln!(ctx.stdout, "  - {}\n    fix: {}", p.what, p.fix)?;
    }
    Ok(Exit::Policy)
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The version a premerge binary reports (`premerge X`), without running ourselves.
fn binary_version(bin: &Path, me: Option<&Path>) -> Result<String, String> {
    if me.is_some_and(|m| m == bin) {
        return Ok(crate::VERSION.to_string());
    }
    let argv = [bin.display().to_string(), "--version".to_string()];
    let out = crate::exec::run(&argv, b"", VERSION_TIMEOUT).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().strip_prefix("premerge ").map(str::to_string).ok_or_else(|| format!("said {:?}", text.trim()))
}

/// The file premerge would run when a shim's recorded binary is gone: `premerge` on PATH.
fn premerge_on_path() -> Option<PathBuf> {
    let path = crate::env::process().var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("premerge")).find(|p| is_executable(p))
}

fn check_hooks(repo: &Repo, me: Option<&Path>, problems: &mut Vec<Problem>, ctx: &mut Ctx) -> anyhow::Result<()> {
    let hooks_dir = repo.hooks_dir()?;
    let dir = &hooks_dir.path;
    let why =
        hooks_dir.hooks_path_config.as_ref().map_or("git's default".to_string(), |v| format!("core.hooksPath = {v}"));
    writeln!(ctx.stdout, "hooks directory: {} ({why})", dir.display())?;
    for name in HOOKS {
        let hook = Hook::parse(name).expect("HOOKS holds known hooks");
        let path = dir.join(name);
        let chained = dir.join(hook.chained_name());
        let at_hook = observe(&path)?;
        let at_chained = observe(&chained)?;
        match &at_hook {
            Observed::File(bytes) => match parse_shim(bytes) {
                Some(info) => {
                    let mut line = format!("{name}: premerge shim (written by premerge {})", info.version);
                    if info.version != crate::VERSION {
                        problems.push(Problem {
                            what: format!(
                                "{name}: the shim was written by premerge {}, this is {}",
                                info.version,
                                crate::VERSION
                            ),
                            fix: "premerge install (updates the shim in place)".to_string(),
                        });
                    }
                    if !is_executable(&path) {
                        problems.push(Problem {
                            what: format!("{}: not executable, so git skips it", path.display()),
                            fix: format!("chmod +x {}", path.display()),
                        });
                    }
                    let recorded = info.bin.as_deref().map(PathBuf::from);
                    let runs = match ctx.env.var_os("PREMERGE_BIN").filter(|v| !v.is_empty()) {
                        Some(b) => Some(PathBuf::from(b)),
                        None => recorded.clone().filter(|p| is_executable(p)).or_else(premerge_on_path),
                    };
                    match runs {
                        Some(bin) => {
                            let v = binary_version(&bin, me).unwrap_or_else(|e| format!("unknown: {e}"));
                            line.push_str(&format!(", runs {} (premerge {v})", bin.display()));
                        }
                        None => problems.push(Problem {
                            what: format!(
                                "{name}: the shim's binary is missing ({} is gone and no premerge is on PATH); the hook fails closed",
                                recorded.map_or("no recorded path".to_string(), |p| p.display().to_string())
                            ),
                            fix: "run ./install.sh in a premerge checkout, then premerge install (or PREMERGE=0 to skip premerge)".to_string(),
                        }),
                    }
                    writeln!(ctx.stdout, "{line}")?;
                    if let Observed::File(c) = &at_chained {
                        let whose =
                            recognise(c).map_or("a hook of your own".to_string(), |m| format!("a {} hook", m.name()));
                        let note = if is_executable(&chained) {
                            ""
                        } else {
                            " (not executable: git would not run it either, so it is skipped)"
                        };
                        writeln!(ctx.stdout, "{name}: chains {whose}, kept as {}{note}", chained.display())?;
                    }
                }
                None if legacy_shim(dir, hook).is_some() => {
                    let legacy = dir.join(crate::install::pre_commit_legacy_name(hook));
                    let whose = recognise(bytes).map_or("pre-commit", |m| m.name());
                    writeln!(
                        ctx.stdout,
                        "{name}: a {whose} hook, which runs premerge's shim as its legacy hook {}",
                        legacy.display()
                    )?;
                }
                None => {
                    let mentions = String::from_utf8_lossy(bytes).contains("premerge");
                    let whose =
                        recognise(bytes).map_or("a hook of your own".to_string(), |m| format!("a {} hook", m.name()));
                    if mentions {
                        writeln!(
                            ctx.stdout,
                            "{name}: {whose} that mentions premerge (premerge's shim is not installed)"
                        )?;
                    } else {
                        writeln!(ctx.stdout, "{name}: {whose}; premerge's shim is not installed")?;
                    }
                }
            },
            Observed::Absent => writeln!(ctx.stdout, "{name}: not installed (premerge install puts it there)")?,
            Observed::Symlink | Observed::Directory | Observed::Special => problems.push(Problem {
                what: format!(
                    "{}: not a regular file (a symbolic link or directory); premerge cannot install there",
                    path.display()
                ),
                fix: "replace it with a regular file (or remove it), then premerge install".to_string(),
            }),
        }
        let problems_before = problems.len();
        let runner = premerge_runner(repo, dir, hook)?;
        let handled = check_under_manager(repo, dir, hook, &at_hook, &at_chained, runner.is_some(), problems, ctx)?;
        check_hooks_path_moved(
            repo,
            dir,
            hooks_dir.hooks_path_config.as_deref(),
            hook,
            runner.is_some(),
            problems,
            ctx,
        )?;
        let ours = matches!(&at_hook, Observed::File(b) if parse_shim(b).is_some()) || legacy_shim(dir, hook).is_some();
        let rewritten_by = match (&at_hook, &at_chained) {
            (Observed::File(h), Observed::File(c)) => recognise(h).filter(|m| recognise(c) == Some(*m)),
            _ => None,
        };
        // A problem check_under_manager named is not named again as a leftover.
        let ours = ours || handled;
        if let (false, Some(m)) = (ours, rewritten_by) {
            let (why, keep) = if m == Manager::Husky {
                let script =
                    dir.parent().map_or_else(|| format!(".husky/{name}"), |p| p.join(name).display().to_string());
                (
                    format!("husky rewrote {} (its prepare script, run by npm install)", dir.display()),
                    format!(
                        "; to keep premerge across the next npm install, add `premerge install --print-config husky` to {script} instead"
                    ),
                )
            } else {
                (format!("{} rewrote {}", m.name(), path.display()), String::new())
            };
            problems.push(Problem {
                what: format!(
                    "{why}: premerge's shim is gone, so premerge does not run on {name}, and {} is left over",
                    chained.display()
                ),
                fix: format!("premerge install (puts the shim back and chains {}'s current hook){keep}", m.name()),
            });
        } else if !ours && !matches!(at_chained, Observed::Absent) {
            problems.push(Problem {
                what: format!("{}: left over from an interrupted install", chained.display()),
                fix: format!("move it back to {} (or delete it), then premerge install", path.display()),
            });
        }
        if let Some(old) = shim_moved_by_lefthook(dir, hook)? {
            if runner.is_some() {
                writeln!(
                    ctx.stdout,
                    "{name}: {} is a stale premerge shim lefthook moved aside (premerge install removes it)",
                    old.display()
                )?;
            } else {
                problems.push(Problem {
                    what: format!(
                        "`lefthook install` moved premerge's shim to {}, which lefthook never runs: premerge does not run on {name}",
                        old.display()
                    ),
                    fix: "premerge install (adds premerge to lefthook-local.yml, which `lefthook install` keeps, and removes the stale shim)".to_string(),
                });
            }
        }
        let recorded = installed_record(repo).contains(&hook);
        if recorded && problems.len() == problems_before && runner.is_none() && shim_runs(repo, dir, hook)?.is_none() {
            problems.push(Problem {
                what: format!(
                    "{name}: premerge install put premerge on this hook (recorded in {}), and premerge no longer runs there: {} replaced or removed its shim",
                    installed_record_path(repo).display(),
                    match &at_hook {
                        Observed::File(b) => recognise(b).map_or("something".to_string(), |m| m.name().to_string()),
                        _ => "something".to_string(),
                    }
                ),
                fix: format!("premerge install (puts it back), or premerge uninstall --hooks {name} (forgets it)"),
            });
        }
        if let Some((m, file)) = runner {
            writeln!(ctx.stdout, "{name}: {} runs premerge ({})", m.name(), file.display())?;
            if let Some(shim) = shim_runs(repo, dir, hook)? {
                problems.push(Problem {
                    what: format!(
                        "premerge runs twice on every {name}: {} runs it ({}) and so does premerge's shim {}",
                        m.name(),
                        file.display(),
                        shim.display()
                    ),
                    fix: format!(
                        "remove one: premerge uninstall --hooks {name} (keeps {}'s), or take premerge out of {}",
                        m.name(),
                        file.display()
                    ),
                });
            }
        }
    }
    Ok(())
}

/// pre-commit or prek beside premerge at `hook`: migration mode (every push fails) and
/// a shim their `install -f` removed are problems; the layout an older install left
/// (the shim chaining their hook) is described. Returns whether a problem was named
/// (so the generic "left over" checks do not name the same files again).
#[allow(clippy::too_many_arguments)]
fn check_under_manager(
    repo: &Repo,
    dir: &Path,
    hook: Hook,
    at_hook: &Observed,
    at_chained: &Observed,
    manager_runs_premerge: bool,
    problems: &mut Vec<Problem>,
    ctx: &mut Ctx,
) -> anyhow::Result<bool> {
    let name = hook.name();
    let legacy = dir.join(pre_commit_legacy_name(hook));
    let chained = dir.join(hook.chained_name());
    match under_manager_state(at_hook, &observe(&legacy)?, at_chained) {
        Some(UnderManagerState::MigrationMode(m)) => {
            let m = m.name();
            problems.push(Problem {
                what: format!(
                    "{name}: every push fails and premerge never runs: {m} runs premerge's shim {} as its legacy hook, and the shim runs an older {m} hook kept as {}, which {m} refuses to run (\"installed in migration mode\")",
                    legacy.display(),
                    chained.display()
                ),
                fix: format!(
                    "premerge install (removes the older {m} hook and keeps premerge as {m}'s legacy hook); not `{m} install -f`, which removes premerge"
                ),
            });
            Ok(true)
        }
        Some(UnderManagerState::NoShim(m)) if !manager_runs_premerge => {
            let m = m.name();
            let mut traces = Vec::new();
            if !matches!(at_chained, Observed::Absent) {
                traces.push(format!("the hook premerge chained is left at {}", chained.display()));
            }
            for other in HOOKS.iter().filter(|h| **h != name) {
                let other = Hook::parse(other).expect("HOOKS holds known hooks");
                if let Some(shim) = shim_runs(repo, dir, other)? {
                    traces.push(format!("premerge's {other} shim is installed ({})", shim.display()));
                }
            }
            if installed_record(repo).contains(&hook) {
                traces.push(format!(
                    "premerge install put premerge on it (recorded in {})",
                    installed_record_path(repo).display()
                ));
            }
            let config = super::load_config(repo).ok();
            if let (Hook::PrePush, Some(open)) =
                (hook, crate::stage::open_loop(&crate::store::fix_loop::LoopPlace::of_repo(repo), config.as_ref()))
            {
                traces.push(format!("a fix loop is open ({open}) and no fence judges its pushes"));
            }
            if traces.is_empty() {
                return Ok(false);
            }
            problems.push(Problem {
                what: format!(
                    "{name}: premerge's shim is gone (`{m} install -f` removes the legacy hook premerge ran as), so premerge does not run on {name}; yet {}",
                    traces.join(", and ")
                ),
                fix: format!(
                    "premerge install (puts the shim back as {m}'s legacy hook, which a plain `{m} install` keeps; -f removes it again)"
                ),
            });
            Ok(true)
        }
        Some(UnderManagerState::ShimChainsManager(m)) => {
            let m = m.name();
            writeln!(
                ctx.stdout,
                "{name}: note: the next `{m} install` would turn this chain into {m}'s migration mode, where every push fails; premerge install moves the shim to {m}'s legacy hook {}, which `{m} install` keeps",
                legacy.display()
            )?;
            Ok(false)
        }
        _ => Ok(false),
    }
}

/// A shim in git's default hooks directory that stopped running when
/// `core.hooksPath` (husky sets it) sent git elsewhere.
fn check_hooks_path_moved(
    repo: &Repo,
    dir: &Path,
    hooks_path_config: Option<&str>,
    hook: Hook,
    runs_elsewhere: bool,
    problems: &mut Vec<Problem>,
    ctx: &mut Ctx,
) -> anyhow::Result<()> {
    let Some(setting) = hooks_path_config else { return Ok(()) };
    let default_dir = repo.common_dir().join("hooks");
    let same = |a: &Path, b: &Path| a.canonicalize().ok().is_some_and(|a| b.canonicalize().ok() == Some(a));
    if same(&default_dir, dir) {
        return Ok(());
    }
    let stale = default_dir.join(hook.name());
    if !matches!(observe(&stale)?, Observed::File(b) if parse_shim(&b).is_some()) {
        return Ok(());
    }
    let name = hook.name();
    if runs_elsewhere || shim_runs(repo, dir, hook)?.is_some() {
        writeln!(
            ctx.stdout,
            "{name}: premerge's shim in {} is unused while core.hooksPath = {setting}",
            stale.display()
        )?;
        return Ok(());
    }
    problems.push(Problem {
        what: format!(
            "{name}: core.hooksPath = {setting} (husky sets it) sends git to {}, so premerge's shim {} no longer runs: premerge does not run on {name}",
            dir.display(),
            stale.display()
        ),
        fix: format!("premerge install (installs the shim in {})", dir.display()),
    });
    Ok(())
}

/// premerge's shim kept by pre-commit as its legacy hook, if that is where it is.
fn legacy_shim(dir: &Path, hook: Hook) -> Option<crate::install::ShimInfo> {
    match observe(&dir.join(crate::install::pre_commit_legacy_name(hook))).ok()? {
        Observed::File(b) => parse_shim(&b),
        _ => None,
    }
}

fn check_config_hooks(
    repo: &Repo,
    git: Option<crate::install::GitVersion>,
    problems: &mut Vec<Problem>,
    ctx: &mut Ctx,
) -> anyhow::Result<()> {
    let entries = repo.config_entries(&format!("^hook\\.{CONFIG_HOOK_PREFIX}.*\\.command$"))?;
    for (key, value) in entries {
        writeln!(ctx.stdout, "config-declared hook: {key} = {value}")?;
        if let Some(v) = git.filter(|v| *v < CONFIG_HOOKS_MIN_GIT) {
            problems.push(Problem {
                what: format!("{key}: git {v} ignores config-declared hooks (they need {CONFIG_HOOKS_MIN_GIT})"),
                fix: "premerge uninstall, then premerge install (hook files)".to_string(),
            });
        }
    }
    Ok(())
}

fn check_config(repo: &Repo, problems: &mut Vec<Problem>, ctx: &mut Ctx) -> anyhow::Result<()> {
    match super::load_config(repo) {
        Ok(cfg) => {
            writeln!(ctx.stdout, "effective configuration:")?;
            let mut buf = Vec::new();
            crate::config_render::write_config(&cfg, Format::Text, &mut buf)?;
            for line in String::from_utf8_lossy(&buf).lines() {
                writeln!(ctx.stdout, "  {line}")?;
            }
        }
        Err(e) => problems.push(Problem {
            what: format!("configuration: {e:#}"),
            fix: "correct premerge.toml or the premerge.* git config (premerge config --keys lists the keys)"
                .to_string(),
        }),
    }
    Ok(())
}

fn check_state(repo: &Repo, problems: &mut Vec<Problem>, ctx: &mut Ctx) -> anyhow::Result<()> {
    let state = repo.state_dir();
    let db = state.db_path();
    let health = state.open_db().and_then(|conn| {
        let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        Ok((check, version))
    });
    match health {
        Ok((check, version)) if check == "ok" => {
            writeln!(ctx.stdout, "state: {} (database schema {version}, integrity ok)", state.path.display())?;
        }
        Ok((check, _)) => problems.push(Problem {
            what: format!("{}: integrity check failed: {check}", db.display()),
            fix: format!(
                "move {} aside; premerge creates a new one (guard memories and gate events in it are lost)",
                db.display()
            ),
        }),
        Err(e) => problems.push(Problem {
            what: format!("state: {e:#}"),
            fix: format!(
                "make {} writable, or move {} aside so premerge creates a new one",
                state.path.display(),
                db.display()
            ),
        }),
    }
    Ok(())
}
