//! Guards around the hooks' stages: a failure of premerge's own (an error or a panic)
//! in a signal stage, the diff, the configuration or the store becomes one warning
//! line, `premerge: <stage>: <why> (<fix>)`, and the git command goes on. Only the
//! commit fence blocks, and only while a fix loop is open: then a stage the fence
//! depends on (the configuration, the diff of the pushed files) failing means the
//! fence cannot see what it judges, and it refuses (fails closed).

use std::any::Any;
use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;

use crate::config::{Config, Mode};
use crate::store::fix_loop::{self, LoopPlace, LoopRecord};

/// The last panic's message and place, recorded by [`install_panic_hook`] so that
/// the guard that catches the panic can print it on one line.
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Debug builds only: the stage named by this variable panics on entry, so the
/// integration tests can prove a panic anywhere becomes one warning line.
#[cfg(debug_assertions)]
pub(crate) const TEST_PANIC_ENV: &str = "PREMERGE_TEST_PANIC";

/// Replace Rust's default panic report (several lines on stderr) with a record the
/// guards turn into one line. With `RUST_BACKTRACE` set, the default report is kept
/// as well, for whoever is debugging premerge.
pub fn install_panic_hook() {
    let default = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        let place = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        let msg = format!("{}{place}", payload_message(info.payload()));
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = Some(msg);
        }
        if crate::env::process().var_os("RUST_BACKTRACE").is_some_and(|v| v != "0") {
            default(info);
        }
    }));
}

fn payload_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-text payload".to_string()
    }
}

/// The message of a caught panic: what the panic hook recorded (with its place),
/// else the payload's text.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    let recorded = LAST_PANIC.lock().ok().and_then(|mut l| l.take());
    format!("panicked: {}", recorded.unwrap_or_else(|| payload_message(payload)))
}

/// Run `f`, turning its error or its panic into one line of text (the error chain
/// joined with `: `, never a newline).
pub(crate) fn catch<T>(stage: &str, f: impl FnOnce() -> anyhow::Result<T>) -> Result<T, String> {
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        inject_test_panic(stage);
        f()
    }));
    match result {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(one_line(&format!("{e:#}"))),
        Err(payload) => Err(one_line(&panic_message(payload.as_ref()))),
    }
}

/// Panic here when [`TEST_PANIC_ENV`] names `stage` (debug builds only).
#[cfg(debug_assertions)]
#[allow(clippy::panic, reason = "the point of the injection: a debug-only test hook")]
pub fn inject_test_panic(stage: &str) {
    if crate::env::process().var(TEST_PANIC_ENV).is_some_and(|v| v == stage) {
        panic!("injected by {TEST_PANIC_ENV}={stage}");
    }
}

/// Release builds: never panics.
#[cfg(not(debug_assertions))]
pub fn inject_test_panic(_stage: &str) {}

fn one_line(s: &str) -> String {
    let lines: Vec<&str> = s.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines.join("; ")
}

/// How to turn a stage off, for the warning line.
pub(crate) fn fix_for(stage: &str) -> &'static str {
    match stage {
        "widening scan" => "scan.enabled = false or PREMERGE_WIDENING_SCAN=0 turns the scan off",
        "copy detector" => "clones.enabled = false turns the copy detector off",
        "configuration" => "fix the named file or key",
        "fence" => "fence.mode = shadow or off (PREMERGE_FENCE_MODE) lets pushes through",
        _ => "hooks.enabled = false turns premerge's hooks off",
    }
}

/// Print the one warning line of a failed signal (or preparatory) stage.
pub fn warn(stderr: &mut dyn Write, stage: &str, why: &str) {
    let _ = writeln!(
        stderr,
        "premerge: {stage}: {why} (signal only, not blocking; PREMERGE=0 skips premerge once; {})",
        fix_for(stage)
    );
}

/// The open fix loop whose fence would judge a push: the fence is enforcing and the
/// worktree's loop record says a loop is open (or cannot be read, which the fence treats
/// as an open loop it cannot see). `config` is `None` when the configuration itself
/// could not be loaded: then only `PREMERGE_FENCE_MODE` is known. The place comes from
/// libgit2 or, where libgit2 cannot open the repository, from the `git` executable.
pub(crate) fn open_loop(place: &LoopPlace, config: Option<&Config>) -> Option<String> {
    let mode = match config {
        Some(c) => c.fence.mode,
        None => crate::env::process()
            .var("PREMERGE_FENCE_MODE")
            .and_then(|v| Mode::parse(v.trim()))
            .unwrap_or(Mode::Enforce),
    };
    if mode != Mode::Enforce {
        return None;
    }
    // The loop record, not the push's environment, says whether a loop is open.
    match fix_loop::read(place) {
        LoopRecord::Loop(l) if l.is_open() => {
            Some(format!("{}, run directory {}, attempt {}", l.id, l.run_dir, l.attempt))
        }
        LoopRecord::Loop(_) | LoopRecord::Absent => None,
        LoopRecord::Unreadable(_) => Some("an unreadable loop record".to_string()),
    }
}

/// A stage the fence depends on failed before the fence could run: a warning line
/// and the push goes on, unless a fix loop is open (pre-push only), when the fence
/// refuses because it cannot see what it would judge. Returns whether to refuse.
pub(crate) fn failed_before_fence(
    stderr: &mut dyn Write,
    place: Option<&LoopPlace>,
    config: Option<&Config>,
    pre_push: bool,
    stage: &str,
    why: &str,
) -> bool {
    let open = if pre_push { place.and_then(|p| open_loop(p, config)) } else { None };
    match open {
        None => {
            warn(stderr, stage, why);
            false
        }
        Some(attempt) => {
            let _ = writeln!(
                stderr,
                "premerge fence: push refused: the fix loop ({attempt}) is open and the {stage} failed, so the pushed \
                 files cannot be checked: {why} (to end the loop: premerge loop close; PREMERGE=0 skips premerge once; {})",
                fix_for("fence")
            );
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_and_panics_become_one_line() {
        let e = catch("t", || -> anyhow::Result<()> { Err(anyhow::anyhow!("inner\nsecond line").context("outer")) });
        assert_eq!(e.unwrap_err(), "outer: inner; second line");
        let p = catch("t", || -> anyhow::Result<()> { panic!("boom {}", 1) });
        let msg = p.unwrap_err();
        assert!(msg.starts_with("panicked: boom 1"), "{msg}");
        assert!(!msg.contains('\n'));
        assert_eq!(catch("t", || Ok(7)).unwrap(), 7);
    }
}
