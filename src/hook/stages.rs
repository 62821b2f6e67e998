//! The bodies of the hooks' stages, in one place: the widening scan (both hooks), the
//! copy detector (pre-push), the note on a pushed `premerge.toml` and the commit fence
//! (pre-push). The order the hooks run them in is `commands/hook.rs` (and
//! [`super::background`] for the deferred signals).

use std::path::Path;

use anyhow::{Result, anyhow};

use super::{HookKind, HookRun};
use crate::config::Mode;
use crate::context::Ctx;
use crate::diff::json_path;
use crate::error::{CmdResult, Exit};
use crate::input::escape_for_message as esc;
use crate::review::copies;
use crate::store;
use crate::store::fence_plan;
use crate::store::fix_loop::{self, FixLoop, LoopRecord};
use crate::waves::fence::{display_path_bytes, strays};

/// Most findings the hooks print; the rest are counted on one line. A hook's output
/// is read by someone waiting for a push: one screen at most.
const MAX_HOOK_LINES: usize = 8;
/// Most stray paths the fence's refusal names; the rest are counted on one line and
/// every one is in the `fence_pre_push` event. A 5,000-file push once printed 5,005
/// lines; 20 is what a person reads before acting, and names a whole wave (8) twice.
const MAX_STRAY_LINES: usize = 20;

/// The hooks' widening scan: one short block of findings, memories written, never blocks.
pub(crate) fn widening_scan(run: &mut HookRun) -> Result<()> {
    if !run.config.scan.enabled {
        return Ok(());
    }
    let opts = crate::scan::ScanOptions { issue: None, memory: true, backend: true };
    let out = crate::scan::scan_diff(run.repo, run.config, run.diff, opts)?;
    crate::scan::report_notes(run.ctx, &out);
    crate::scan::record_repeats(run.ctx, run.repo, run.config, &out);
    if out.findings.is_empty() {
        return Ok(());
    }
    let w = &mut *run.ctx.stdout;
    let memories = if run.config.memory.enabled {
        format!(", {} guard memory(ies) written", out.memory.written)
    } else {
        String::new()
    };
    writeln!(w, "premerge widening scan: {} finding(s){memories} (signal only, not blocking)", out.findings.len())?;
    for f in out.findings.head(MAX_HOOK_LINES)? {
        let after = if f.after.is_empty() { "(removed)".into() } else { esc(&f.after) };
        let file = crate::diff::quote_path(&f.file);
        writeln!(w, "  {}:{} {} {}: {} -> {}", file, f.line, f.rule, esc(&f.symbol), esc(&f.before), after)?;
    }
    if out.findings.len() > MAX_HOOK_LINES {
        writeln!(
            w,
            "  ... and {} more: run `premerge scan` on the range for all of them",
            out.findings.len() - MAX_HOOK_LINES
        )?;
    }
    Ok(())
}

/// The pre-push signal: report copies in the pushed commits; silent when there are none.
pub(crate) fn copy_detector(run: &mut HookRun) -> Result<()> {
    if !run.config.clones.enabled {
        return Ok(());
    }
    let t = copies::thresholds(run.config, None, None)?;
    let r = copies::detect(run.repo, run.diff, t)?;
    if !r.clusters.is_empty() {
        write!(run.ctx.stdout, "premerge pre-push: copy detector: {}", copies::text_report(&r))?;
    }
    Ok(())
}

/// One line when a push changes `premerge.toml`: its settings take effect for pushes
/// after it lands, this one is judged by the base's (see `load_config_at`).
pub(crate) fn note_config_change(ctx: &mut Ctx, diff: &crate::diff::Diff, base: Option<&str>) -> Result<()> {
    let name = crate::config::CONFIG_FILE_NAME.as_bytes();
    if diff.files.iter().any(|f| f.touched_path_bytes().any(|p| p == name)) {
        let at =
            base.map_or_else(|| "the defaults".to_string(), |b| format!("premerge.toml at {}", &b[..b.len().min(12)]));
        writeln!(
            ctx.stderr,
            "premerge: this push changes premerge.toml: it applies once it is on the remote; this push is judged by {at}"
        )?;
    }
    Ok(())
}

/// Pre-push: while this worktree's fix loop is open, fence the pushed files against
/// the plan of the loop's recorded attempt in its run directory. The loop record, not
/// the push's environment nor the plan files present, says which plan that is: a
/// `PREMERGE_RUN_DIR` set for the push neither moves nor disables the fence, and a
/// higher-numbered plan left by another loop is never read.
pub(crate) fn pre_push_fence(run: &mut HookRun) -> CmdResult {
    let mode = run.config.fence.mode;
    if mode == Mode::Off {
        return Ok(Exit::Ok);
    }
    let place = fix_loop::LoopPlace::of_repo(run.repo);
    let state = place.state.clone();
    let l = match fix_loop::read(&place) {
        LoopRecord::Absent => return Ok(Exit::Ok),
        LoopRecord::Loop(l) if !l.is_open() => return Ok(Exit::Ok),
        LoopRecord::Loop(l) => l,
        LoopRecord::Unreadable(why) => {
            // Fail closed: a record that exists may be an open loop.
            let log = state.path.clone();
            return decide(run.ctx, mode, None, &log, 0, Err(anyhow!("fix loop record unreadable: {why}")));
        }
    };
    let run_dir = l.run_dir_path();
    if let Some(env) = run.ctx.env.var_os(store::RUN_DIR_ENV).filter(|v| !v.is_empty()) {
        let same = fix_loop::canonical_run_dir(Path::new(&env)).is_ok_and(|c| c == l.run_dir);
        if !same {
            writeln!(
                run.ctx.stderr,
                "premerge fence: {}={} is ignored: the open loop {} fences with {}",
                store::RUN_DIR_ENV,
                Path::new(&env).display(),
                l.id,
                l.run_dir
            )?;
        }
    }
    // The record's attempt is the plan: `plan --attempt N` sets it.
    let attempt = l.attempt;
    let pushed = match fenced_paths(run) {
        Ok(p) => p,
        Err(e) => return decide(run.ctx, mode, Some(&l), &run_dir, attempt, Err(e)),
    };
    let outcome =
        fence_plan::allowed_of(camino::Utf8Path::new(&l.run_dir), attempt, None).map(|set| strays(&pushed, &set));
    decide(run.ctx, mode, Some(&l), &run_dir, attempt, outcome)
}

/// The pre-push fence where libgit2 cannot open the repository git reads (reftable,
/// SHA-256, `extensions.partialClone`): while this worktree's loop is open, the paths
/// the push lands come from the `git` executable alone ([`crate::git::fence_paths_in`])
/// and are judged against the loop's plan; the fence mode comes from the environment
/// or, without it, the strictest (`premerge.toml` as of the base cannot be read without
/// libgit2). `None` when no loop is open here, or the fence is not enforcing: the hook
/// then warns and the push goes on. An error of git's refuses (fail closed).
pub(crate) fn pre_push_fence_through_git(
    ctx: &mut Ctx,
    place: &fix_loop::LoopPlace,
    remote: &str,
    unopened: &str,
) -> Result<Option<Exit>> {
    let mode =
        crate::env::process().var("PREMERGE_FENCE_MODE").and_then(|v| Mode::parse(v.trim())).unwrap_or(Mode::Enforce);
    if mode != Mode::Enforce {
        return Ok(None);
    }
    let l = match fix_loop::read(place) {
        LoopRecord::Loop(l) if l.is_open() => l,
        _ => return Ok(None),
    };
    writeln!(ctx.stderr, "premerge: libgit2 cannot open this repository ({unopened}); the fence asks git")?;
    let run_dir = l.run_dir_path();
    let pushed = (|| -> Result<Vec<Vec<u8>>> {
        let input = ctx.read_stdin(crate::input::Kind::PrePushLines)?;
        let lines = crate::git::parse_push_lines(&input)?;
        Ok(crate::git::fence_paths_in(&ctx.cwd, remote, &lines).map_err(|e| PushUnseen(e.to_string()))?.total())
    })();
    let outcome = pushed.and_then(|p| {
        fence_plan::allowed_of(camino::Utf8Path::new(&l.run_dir), l.attempt, None).map(|set| strays(&p, &set))
    });
    decide(ctx, mode, Some(&l), &run_dir, l.attempt, outcome).map(Some)
}

/// The fence cannot tell what a push lands on the remote (git could not read
/// something): it refuses while a loop is open, saying what git could not read.
#[derive(Debug, thiserror::Error)]
#[error("the fence cannot see what the push lands on the remote: {0}")]
struct PushUnseen(String);

/// Environment variable pre-commit and prek set for their pre-push hooks: the one
/// ref they pass on (they read git's ref lines themselves and hand over the first).
const MANAGER_REMOTE_BRANCH_ENV: &str = "PRE_COMMIT_REMOTE_BRANCH";

/// The paths the fence judges: what each ref update does to the remote
/// ([`crate::git::FencePaths`]), computed here only, while a loop is open, so that a
/// push with no loop never pays for it.
fn fenced_paths(run: &mut HookRun) -> Result<Vec<Vec<u8>>> {
    let HookKind::PrePush { remote, lines, .. } = &run.kind else { return Ok(run.diff.touched_path_bytes()) };
    if let Some(first) = run.ctx.env.non_empty(MANAGER_REMOTE_BRANCH_ENV) {
        // pre-commit and prek read git's ref lines and pass on the first ref only:
        // premerge cannot see the others, so while a loop is open it cannot judge the
        // push, and refuses it (docs/guide.md, "What the fence judges on a push").
        return Err(PushUnseen(format!(
            "under pre-commit or prek only the first ref of a push reaches premerge ({}), so the other refs cannot be judged; run `premerge install` (premerge then runs as the manager's legacy hook, which gets every ref), or PREMERGE=0 for this push",
            esc(first)
        ))
        .into());
    }
    let paths = run.repo.fence_paths(remote, lines).map_err(|e| PushUnseen(e.to_string()))?;
    Ok(paths.total())
}

fn decide(
    ctx: &mut Ctx,
    mode: Mode,
    l: Option<&FixLoop>,
    log_dir: &Path,
    attempt: u32,
    outcome: Result<Vec<Vec<u8>>>,
) -> CmdResult {
    let loop_name = l.map_or_else(|| "(unreadable)".to_string(), |l| l.id.clone());
    let (strays, why) = match outcome {
        Ok(s) if s.is_empty() => {
            writeln!(
                ctx.stdout,
                "premerge fence: pushed files are inside the plan of attempt {attempt} (fix loop {loop_name})"
            )?;
            return Ok(Exit::Ok);
        }
        Ok(s) => {
            let why = format!("{} pushed path(s) outside fix-waves-{}.json", s.len(), store::nn(attempt));
            (s, why)
        }
        Err(e) if e.is::<PushUnseen>() => (Vec::new(), format!("{e:#}")),
        Err(e) => (Vec::new(), format!("no trustworthy wave plan: {e:#}")),
    };
    let shown: Vec<String> = strays.iter().map(|p| display_path_bytes(p)).collect();
    let logged: Vec<String> = strays.iter().map(|p| json_path(p).0).collect();
    let event = crate::events::Event::FencePrePush {
        mode: if mode == Mode::Shadow { Mode::Shadow } else { Mode::Enforce },
        attempt,
        loop_id: loop_name.clone(),
        strays: logged,
        refused: mode == Mode::Enforce,
        why: why.clone(),
    };
    if let Err(e) = store::append_event(log_dir, &event) {
        ctx.warn(format!("fence: cannot log the decision: {e:#}"));
    }
    for p in shown.iter().take(MAX_STRAY_LINES) {
        writeln!(ctx.stderr, "premerge fence: stray: {p}")?;
    }
    if shown.len() > MAX_STRAY_LINES {
        writeln!(
            ctx.stderr,
            "premerge fence: ... and {} more stray path(s) (all of them: the fence_pre_push event in {})",
            shown.len() - MAX_STRAY_LINES,
            log_dir.join(store::EVENTS_FILE).display()
        )?;
    }
    crate::waves::fence::unrepresentable_note(ctx.stderr, "premerge fence", &strays)?;
    if mode == Mode::Shadow {
        writeln!(ctx.stderr, "premerge fence (shadow, not blocking): would refuse: {why}")?;
        return Ok(Exit::Ok);
    }
    writeln!(ctx.stderr, "premerge fence: push refused: {why}")?;
    match l {
        Some(l) => writeln!(
            ctx.stderr,
            "premerge fence: fix loop {} is open (run directory {}, attempt {attempt}, opened {})",
            l.id, l.run_dir, l.opened_at
        )?,
        None => writeln!(ctx.stderr, "premerge fence: the fix loop record cannot be read, so a loop may be open")?,
    }
    writeln!(
        ctx.stderr,
        "premerge fence: to end the loop: premerge loop close; to skip premerge for this push only: PREMERGE=0 git push"
    )?;
    Ok(Exit::Policy)
}
