//! The `premerge` binary: parse arguments, run the command, map the result to an
//! exit code (0 ok, 1 policy outcome, 2 error). Errors print as `premerge: <what>: <why>`.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;
use premerge::cli::{Cli, Command};
use premerge::commands::hook::Cmd as HookCmd;
use premerge::commands::{Ctx, dispatch};
use premerge::error::EXIT_ERROR;
use premerge::input::escape_for_message;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// No transparent huge pages: the allocator asks for them, and where the kernel
/// compacts memory to find them (defrag on madvise, the default) a scan spent ~10% of
/// its time faulting them in, for 25 MiB more peak memory (docs/benchmarks.md). This
/// runs as a constructor, before the runtime's first allocation: set from `main`, it
/// came after the allocator had already faulted in its first huge page, which was a
/// quarter of `premerge --version`'s time and a fixed cost of every hook and gate run.
#[cfg(target_os = "linux")]
extern "C" fn no_transparent_huge_pages() {
    // SAFETY: prctl with integer arguments only; it changes this process's THP policy.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static NO_THP_AT_START: extern "C" fn() = no_transparent_huge_pages;

fn main() -> ExitCode {
    // SAFETY: runs first in main, before any tree-sitter object exists, so nothing
    // allocated by one allocator is ever freed by the other.
    unsafe {
        use libmimalloc_sys as mi;
        tree_sitter::set_allocator(Some(mi::mi_malloc), Some(mi::mi_calloc), Some(mi::mi_realloc), Some(mi::mi_free));
    }
    // A file-size limit (`ulimit -f`) must not kill premerge where git itself goes on:
    // with SIGXFSZ ignored, a write past the limit fails with EFBIG and becomes the
    // usual one line (issue 27, D10). First, before any file is written.
    // SAFETY: signal() with a valid signal number and SIG_IGN; no handler runs.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            // --help and --version are successes (a closed pipe is not a failure).
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // Every usage error exits 2, on one line, with the hint clap offers.
            let _ = writeln!(io::stderr(), "{}", usage_line(&e.render().to_string()));
            return ExitCode::from(EXIT_ERROR);
        }
    };
    // The one read of the environment: every variable premerge looks at comes from
    // this snapshot (src/env.rs).
    let env = premerge::env::init(premerge::env::Env::capture());
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            let _ = writeln!(io::stderr(), "premerge: current directory: {e}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    let hook = match &cli.command {
        Command::Hook(HookCmd::PrePush { .. }) => Some("pre-push"),
        Command::Hook(HookCmd::PostMerge { .. }) => Some("post-merge"),
        _ => None,
    };
    let stdin = io::stdin();
    let mut stdin = stdin.lock();
    // A hook's output is for the person watching the push; when it cannot be written
    // (`git push >/dev/full`, a terminal that hung up) the push still goes on, and the
    // hook's exit says only what premerge decided (issue 27, D9).
    let mut stdout: Box<dyn Write> = match hook {
        Some(_) => Box::new(io::LineWriter::new(Lossy(io::stdout().lock()))),
        None => Box::new(io::LineWriter::new(io::stdout().lock())),
    };
    // Not locked for the whole run: a worker thread that writes to stderr (a panic
    // message from a scan thread) would wait for the lock forever while the main
    // thread waits for it.
    let mut stderr: Box<dyn Write> = match hook {
        Some(_) => Box::new(Lossy(io::stderr())),
        None => Box::new(io::stderr()),
    };
    let mut ctx = Ctx { cwd, stdin: &mut stdin, stdout: &mut *stdout, stderr: &mut *stderr, env };
    // A panic is never a bare exit 101: from a hook it is one warning line and git
    // goes on (the stages guard themselves, this catches the rest); elsewhere it is an
    // error line and exit 2.
    premerge::stage::install_panic_hook();
    let result = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        premerge::stage::inject_test_panic("command");
        dispatch(cli, &mut ctx)
    })) {
        Ok(r) => r,
        Err(payload) => {
            let why = premerge::stage::panic_message(payload.as_ref());
            let _ = ctx.stdout.flush();
            return match hook {
                Some(name) => {
                    premerge::stage::warn(&mut io::stderr(), name, &why);
                    ExitCode::SUCCESS
                }
                None => {
                    let _ =
                        writeln!(io::stderr(), "premerge: internal error: {why} (a bug in premerge: please report it)");
                    ExitCode::from(EXIT_ERROR)
                }
            };
        }
    };
    let flushed = ctx.stdout.flush();
    match result {
        Ok(exit) => {
            if let Err(e) = flushed
                && e.kind() != io::ErrorKind::BrokenPipe
            {
                let _ = writeln!(io::stderr(), "premerge: stdout: {e}");
                return ExitCode::from(EXIT_ERROR);
            }
            exit.into()
        }
        Err(e) => {
            // A closed pipe (`premerge ... | head`) is a quiet exit, as in ripgrep.
            if e.chain().any(|c| c.downcast_ref::<io::Error>().is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe))
            {
                return ExitCode::SUCCESS;
            }
            let _ = writeln!(io::stderr(), "premerge: {}", escape_for_message(&format!("{e:#}")));
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// An output stream whose failures are dropped: a write that cannot be done is
/// reported as done. Only the hooks' streams are wrapped so; every other command
/// reports an output error (exit 2), as a pipeline step's output is its result.
struct Lossy<W>(W);

impl<W: Write> Write for Lossy<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _ = self.0.write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let _ = self.0.flush();
        Ok(())
    }
}

/// clap's multi-line usage error as one line: `premerge: usage: <what>; <tip>; try
/// '<command> --help'`.
fn usage_line(rendered: &str) -> String {
    let mut what = String::new();
    let mut tips = Vec::new();
    let mut command = String::from("premerge");
    // The lines clap indents under its error line (the missing arguments' names),
    // up to the first blank line (issue 27, D16: the names were lost).
    let mut listing = false;
    for line in rendered.lines() {
        let t = line.trim();
        if listing && line.starts_with([' ', '\t']) && !t.is_empty() {
            what.push_str(if what.ends_with(':') { " " } else { ", " });
            what.push_str(t);
            continue;
        }
        listing = false;
        if let Some(rest) = t.strip_prefix("error:") {
            what = rest.trim().to_string();
            listing = true;
        } else if let Some(rest) = t.strip_prefix("tip:") {
            tips.push(rest.trim().to_string());
        } else if let Some(rest) = t.strip_prefix("Usage:") {
            // `premerge scan [OPTIONS]` -> `premerge scan`.
            let words: Vec<&str> = rest.split_whitespace().take_while(|w| !w.starts_with(['[', '<', '-'])).collect();
            if !words.is_empty() {
                command = words.join(" ");
            }
        }
    }
    if what.is_empty() {
        what = rendered.lines().next().unwrap_or("invalid arguments").trim().to_string();
    }
    let mut out = format!("premerge: usage: {}", escape_for_message(&what));
    for tip in tips {
        out.push_str("; ");
        out.push_str(&escape_for_message(&tip));
    }
    out.push_str(&format!("; try '{command} --help'"));
    out
}
