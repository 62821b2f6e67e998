//! Running external commands (memory backend, step-back dispatch, proposal generator,
//! stop-gate authority, `git --version`): never through a shell, each in a process
//! group of its own, with one deadline for the whole run, stdin fed from a buffer, and
//! stdout and stderr captured up to a byte limit.
//!
//! A template is a list of strings; `{name}` placeholders inside an element are
//! replaced by values (whole-element or inside a larger string). Values are never
//! split into several arguments, so a value with spaces or shell syntax stays one
//! argument and is never interpreted.
//!
//! The deadline covers the child *and* its output pipes: a child that exits but leaves
//! a background grandchild holding stdout open (`sh -c "sleep 100 & echo x"`) still
//! ends at the deadline, when the whole process group is killed.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

/// The most a child may print on one stream before it is stopped: 8 MiB. Every
/// command premerge runs answers in a line or a short JSON document (an authority's
/// verdict, a memory id, a generated proposal of a few KiB); 8 MiB is three orders of
/// magnitude above that and keeps a runaway child (`yes`) from taking the memory.
pub(crate) const MAX_CHILD_OUTPUT: usize = 8 << 20;

/// How long to wait for the pipes to close after the process group was killed before
/// giving up on them (a descendant that left the group with `setsid` can hold them).
const PIPE_GRACE: Duration = Duration::from_millis(200);

/// Why an external command did not produce a usable answer.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExecError {
    /// The template has no program.
    #[error("the command template is empty")]
    Empty,
    /// The program could not be started (not found, not executable).
    #[error("cannot start `{program}`: {why}")]
    Spawn { program: String, why: String },
    /// It, or something it left running with its output, ran past the timeout; the
    /// whole process group was killed.
    #[error("`{program}` timed out after {ms} ms")]
    Timeout { program: String, ms: u128 },
    /// It printed more than [`MAX_CHILD_OUTPUT`] bytes on one stream; it was killed.
    #[error("`{program}` printed more than {limit} bytes on {stream}; stopped")]
    OutputTooLarge { program: String, stream: &'static str, limit: usize },
    /// It exited non-zero (or by a signal).
    #[error("`{program}` exited with {status}: {stderr}")]
    Failed { program: String, status: String, stderr: String },
}

/// What a finished command printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub elapsed: Duration,
}

/// Replace `{name}` placeholders in every element of `template`.
pub fn render(template: &[String], values: &BTreeMap<&str, String>) -> Vec<String> {
    template
        .iter()
        .map(|arg| {
            let mut out = arg.clone();
            for (k, v) in values {
                out = out.replace(&format!("{{{k}}}"), v);
            }
            out
        })
        .collect()
}

/// Which stream a reader thread drained, and what it got.
enum Drained {
    Stdout(Result<Vec<u8>, ()>),
    Stderr(Result<Vec<u8>, ()>),
}

/// Read `pipe` to its end, keeping at most `limit` bytes; `Err(())` when it printed more.
fn drain(mut pipe: impl Read, limit: usize) -> Result<Vec<u8>, ()> {
    let mut kept = Vec::new();
    // One byte past the limit tells "exactly the limit" from "more".
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    let _ = pipe.by_ref().take(cap).read_to_end(&mut kept);
    if kept.len() > limit { Err(()) } else { Ok(kept) }
}

/// Kill the child's whole process group (it leads one: see `process_group(0)`).
fn kill_group(child: &mut Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: killpg only sends a signal; the group id is the child's own pid,
        // which it leads because it was spawned with `process_group(0)`.
        unsafe {
            libc::killpg(pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
}

/// Run `argv` (no shell) with `stdin` bytes; the whole run, output pipes included,
/// ends by `timeout`. A non-zero exit is [`ExecError::Failed`].
pub fn run(argv: &[String], stdin: &[u8], timeout: Duration) -> Result<Output, ExecError> {
    run_limited(argv, stdin, timeout, MAX_CHILD_OUTPUT)
}

/// [`run`] with an explicit per-stream output limit.
pub(crate) fn run_limited(argv: &[String], stdin: &[u8], timeout: Duration, limit: usize) -> Result<Output, ExecError> {
    let (program, args) = argv.split_first().ok_or(ExecError::Empty)?;
    let start = Instant::now();
    let deadline = start + timeout;
    let timed_out = || ExecError::Timeout { program: program.clone(), ms: timeout.as_millis() };
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so a timeout can end everything it started.
        .process_group(0)
        .spawn()
        .map_err(|e| ExecError::Spawn { program: program.clone(), why: e.to_string() })?;
    // Feed stdin and drain stdout/stderr on threads so a chatty child cannot deadlock
    // on a full pipe while we wait for it.
    let (Some(mut child_in), Some(out_pipe), Some(err_pipe)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        kill_group(&mut child);
        let _ = child.wait();
        return Err(ExecError::Spawn { program: program.clone(), why: "its pipes could not be opened".to_string() });
    };
    let input = stdin.to_vec();
    std::thread::spawn(move || {
        // A child that exits without reading its input closes the pipe; that is its business.
        let _ = child_in.write_all(&input);
    });
    let (tx, rx) = mpsc::channel();
    let tx_err = tx.clone();
    std::thread::spawn(move || {
        let _ = tx.send(Drained::Stdout(drain(out_pipe, limit)));
    });
    std::thread::spawn(move || {
        let _ = tx_err.send(Drained::Stderr(drain(err_pipe, limit)));
    });

    // Collect both streams (or stop at the deadline or an oversized stream), then the exit status.
    let (mut stdout, mut stderr) = (None, None);
    let mut failure = None;
    while stdout.is_none() || stderr.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Drained::Stdout(Ok(b))) => stdout = Some(b),
            Ok(Drained::Stderr(Ok(b))) => stderr = Some(b),
            Ok(Drained::Stdout(Err(()))) => {
                failure = Some(ExecError::OutputTooLarge { program: program.clone(), stream: "stdout", limit });
                break;
            }
            Ok(Drained::Stderr(Err(()))) => {
                failure = Some(ExecError::OutputTooLarge { program: program.clone(), stream: "stderr", limit });
                break;
            }
            Err(_) => {
                failure = Some(timed_out());
                break;
            }
        }
    }
    if let Some(e) = failure {
        kill_group(&mut child);
        let _ = child.wait();
        // Let the readers see the end of their pipes; a descendant that escaped the
        // group may keep them open, and then the threads are left to the process's exit.
        let _ = rx.recv_timeout(PIPE_GRACE);
        return Err(e);
    }
    let left = deadline.saturating_duration_since(Instant::now());
    let status = match child.wait_timeout(left) {
        Ok(Some(s)) => s,
        Ok(None) => {
            kill_group(&mut child);
            let _ = child.wait();
            return Err(timed_out());
        }
        Err(e) => return Err(ExecError::Spawn { program: program.clone(), why: e.to_string() }),
    };
    let (stdout, stderr) = (stdout.unwrap_or_default(), stderr.unwrap_or_default());
    if !status.success() {
        let msg = String::from_utf8_lossy(&stderr);
        let first = msg.lines().next().unwrap_or("").chars().take(200).collect();
        return Err(ExecError::Failed { program: program.clone(), status: status.to_string(), stderr: first });
    }
    Ok(Output { stdout, stderr, elapsed: start.elapsed() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".to_string(), "-c".to_string(), script.to_string()]
    }

    #[test]
    fn placeholders_stay_single_arguments() {
        let t = vec!["tool".to_string(), "add".to_string(), "{text}".to_string(), "-m={meta}".to_string()];
        let mut v = BTreeMap::new();
        v.insert("text", "a b; rm -rf /".to_string());
        v.insert("meta", "{}".to_string());
        assert_eq!(render(&t, &v), ["tool", "add", "a b; rm -rf /", "-m={}"]);
    }

    #[test]
    fn runs_without_shell_and_times_out() {
        let out = run(&["cat".to_string()], b"hello", Duration::from_secs(5)).unwrap();
        assert_eq!(out.stdout, b"hello");
        let e = run(&["sleep".to_string(), "5".to_string()], b"", Duration::from_millis(100)).unwrap_err();
        assert!(matches!(e, ExecError::Timeout { .. }));
        let e = run(&["/nonexistent/premerge-x".to_string()], b"", Duration::from_secs(1)).unwrap_err();
        assert!(matches!(e, ExecError::Spawn { .. }));
        let e = run(&["false".to_string()], b"", Duration::from_secs(5)).unwrap_err();
        assert!(matches!(e, ExecError::Failed { .. }));
    }

    /// Regression (issue 15): a grandchild holding stdout open kept the caller waiting
    /// past its timeout. The deadline covers the pipes, and the group is killed.
    #[test]
    fn a_background_grandchild_cannot_hold_the_caller_past_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("grandchild-alive");
        let script = format!("(sleep 30; touch '{}') & echo x", marker.display());
        let start = Instant::now();
        let e = run(&sh(&script), b"", Duration::from_millis(300)).unwrap_err();
        assert!(matches!(e, ExecError::Timeout { .. }), "{e:?}");
        assert!(start.elapsed() < Duration::from_secs(5), "took {:?}", start.elapsed());
        // The grandchild was killed with the group: its marker never appears. The wait
        // only has to outlast a kill, not the grandchild's 30 s sleep.
        std::thread::sleep(Duration::from_millis(300));
        let ps = Command::new("sh").args(["-c", "ps -eo args"]).output().unwrap();
        let listing = String::from_utf8_lossy(&ps.stdout);
        assert!(!listing.lines().any(|l| l.contains(&marker.display().to_string())), "{listing}");
    }

    #[test]
    fn a_timeout_kills_every_process_of_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("late");
        // The child waits on its own child; both must die at the deadline.
        let script = format!("sh -c 'sleep 1; touch \"{}\"'", marker.display());
        let e = run(&sh(&script), b"", Duration::from_millis(200)).unwrap_err();
        assert!(matches!(e, ExecError::Timeout { .. }), "{e:?}");
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!marker.exists(), "a process of the group outlived the timeout");
    }

    #[test]
    fn output_is_bounded() {
        let e = run_limited(&sh("yes"), b"", Duration::from_secs(10), 1 << 16).unwrap_err();
        assert_eq!(e, ExecError::OutputTooLarge { program: "sh".to_string(), stream: "stdout", limit: 1 << 16 });
        let e = run_limited(&sh("yes >&2"), b"", Duration::from_secs(10), 1 << 16).unwrap_err();
        assert!(matches!(e, ExecError::OutputTooLarge { stream: "stderr", .. }), "{e:?}");
        // Exactly the limit is fine.
        let out = run_limited(&sh("printf 'abcd'"), b"", Duration::from_secs(10), 4).unwrap();
        assert_eq!(out.stdout, b"abcd");
    }

    #[test]
    fn large_input_and_output_do_not_deadlock() {
        let input = vec![b'z'; 1 << 20];
        let out = run(&["cat".to_string()], &input, Duration::from_secs(10)).unwrap();
        assert_eq!(out.stdout.len(), 1 << 20);
    }
}
