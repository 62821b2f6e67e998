//! Running external argv templates (memory backend, step-back dispatch, proposal
//! generator, stop-gate authority): never through a shell, with a timeout, stdin
//! fed from a buffer, stdout and stderr captured.
//!
//! A template is a list of strings; `{name}` placeholders inside an element are
//! replaced by values (whole-element or inside a larger string). Values are never
//! split into several arguments, so a value with spaces or shell syntax stays one
//! argument and is never interpreted.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

/// Why an external command did not produce a usable answer.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExecError {
    /// The template has no program.
    #[error("the command template is empty")]
    Empty,
    /// The program could not be started (not found, not executable).
    #[error("cannot start `{program}`: {why}")]
    Spawn { program: String, why: String },
    /// It ran longer than the timeout and was killed.
    #[error("`{program}` timed out after {ms} ms")]
    Timeout { program: String, ms: u128 },
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

/// Run `argv` (no shell) with `stdin` bytes, killing it after `timeout`.
/// A non-zero exit is [`ExecError::Failed`].
pub fn run(argv: &[String], stdin: &[u8], timeout: Duration) -> Result<Output, ExecError> {
    let (program, args) = argv.split_first().ok_or(ExecError::Empty)?;
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ExecError::Spawn { program: program.clone(), why: e.to_string() })?;
    // Feed stdin and drain stdout/stderr on threads so a chatty child cannot deadlock
    // on a full pipe while we wait for it.
    let mut child_in = child.stdin.take().expect("stdin was piped");
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // A child that exits without reading its input closes the pipe; that is its business.
        let _ = child_in.write_all(&input);
    });
    let mut out_pipe = child.stdout.take().expect("stdout was piped");
    let mut err_pipe = child.stderr.take().expect("stderr was piped");
    let out_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out_pipe.read_to_end(&mut b);
        b
    });
    let err_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err_pipe.read_to_end(&mut b);
        b
    });
    let status = match child.wait_timeout(timeout) {
        Ok(Some(s)) => s,
        Ok(None) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ExecError::Timeout { program: program.clone(), ms: timeout.as_millis() });
        }
        Err(e) => return Err(ExecError::Spawn { program: program.clone(), why: e.to_string() }),
    };
    let _ = writer.join();
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
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
}
