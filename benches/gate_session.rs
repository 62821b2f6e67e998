//! Stop gate latency with a 10 MB Claude Code transcript: `premerge gate evaluate`
//! end to end (process start to exit: payload, evidence from a real repository, the
//! transcript's tail read and parsed into the session's structure, the decision, the
//! event row), and the in-process parse of the tail alone.
//!
//! Run: `cargo bench --bench gate_session` (release build); with
//! `PREMERGE_BENCH_BIN=target/dist/premerge` the end-to-end runs use that binary, the one
//! `install.sh` installs (`cargo build --profile dist`). Figures: docs/gate.md
//! ("Latency") and docs/benchmarks.md. The machine may be shared: the figures are
//! medians and 99th percentiles of many runs, with the `--version` floor beside them.

// Tests and benchmarks may unwrap and panic: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::panic, unreachable_pub)]

use std::hint::black_box;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

/// The transcript size the issue names.
const TRANSCRIPT_BYTES: usize = 10 * 1024 * 1024;
/// End-to-end runs per measurement.
const RUNS: usize = 200;
/// The tail the gate reads (`judge::TRANSCRIPT_TAIL_BYTES`).
const TAIL: u64 = 4 * 1024 * 1024;

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
        .env("GIT_COMMITTER_NAME", "Bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

/// A long session: prompts, tool calls with sizeable outputs (reads, test runs,
/// edits), assistant text, until `TRANSCRIPT_BYTES`; the last entries are a failing
/// test run and a completion claim, so the decision reads the whole structure.
fn transcript() -> String {
    let mut out = String::with_capacity(TRANSCRIPT_BYTES + 4096);
    let mut i = 0usize;
    let file_body: String = (0..400).map(|l| format!("    let value_{l} = compute({l}); // line {l}\n")).collect();
    let test_out: String = (0..120).map(|t| format!("test module::case_{t} ... ok\n")).collect();
    out.push_str(&format!(
        "{}\n",
        json!({"type": "user", "message": {"role": "user", "content": "Implement the plan in docs/plans/work.md."}})
    ));
    while out.len() < TRANSCRIPT_BYTES {
        i += 1;
        let id = format!("toolu_{i:06}");
        let (name, input, result) = match i % 4 {
            0 => ("Read", json!({"file_path": format!("/repo/src/m{i}.rs")}), file_body.clone()),
            1 => (
                "Bash",
                json!({"command": "cargo test", "description": "Run tests"}),
                format!("{test_out}test result: ok. 120 passed; 0 failed"),
            ),
            2 => (
                "Edit",
                json!({"file_path": format!("/repo/src/m{i}.rs"), "old_string": file_body[..2000].to_string(), "new_string": file_body[..2100].to_string()}),
                "The file has been updated.".to_string(),
            ),
            _ => ("Bash", json!({"command": format!("rg -n fn src/m{i}.rs")}), file_body[..3000].to_string()),
        };
        out.push_str(&format!("{}\n", json!({"type": "assistant", "uuid": format!("a{i}"), "message": {"role": "assistant",
            "content": [{"type": "text", "text": format!("Working on part {i}.")}, {"type": "tool_use", "id": id, "name": name, "input": input}]}})));
        out.push_str(&format!(
            "{}\n",
            json!({"type": "user", "uuid": format!("r{i}"), "message": {"role": "user",
            "content": [{"type": "tool_result", "tool_use_id": id, "content": result, "is_error": false}]}})
        ));
    }
    out.push_str(&format!(
        "{}\n",
        json!({"type": "assistant", "message": {"role": "assistant",
        "content": [{"type": "tool_use", "id": "last", "name": "Bash", "input": {"command": "cargo test"}}]}})
    ));
    out.push_str(&format!(
        "{}\n",
        json!({"type": "user", "message": {"role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "last", "is_error": true,
            "content": "Exit code 101\ntest result: FAILED. 118 passed; 2 failed"}]}})
    ));
    out.push_str(&format!(
        "{}\n",
        json!({"type": "assistant", "message": {"role": "assistant",
        "content": [{"type": "text", "text": "All steps are complete and the work is done."}]}})
    ));
    out
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[((sorted.len() * p).div_ceil(100)).saturating_sub(1).min(sorted.len() - 1)]
}

/// CPU time (user + system) used by this process's waited-for children so far: the
/// difference around one run is that run's CPU time, which a loaded machine does not
/// inflate the way it inflates wall time.
fn children_cpu() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid `who` and a pointer to a live rusage.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    // The binary measured end to end: this build's by default; `PREMERGE_BENCH_BIN` names
    // another one, such as the `dist` build that `install.sh` installs (what users run).
    let bin = std::env::var_os("PREMERGE_BENCH_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_BIN_EXE_premerge")));
    println!("binary: {}", bin.display());
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "premerge.gate.mode", "enforce"]);
    std::fs::create_dir_all(repo.join("docs/plans")).unwrap();
    std::fs::write(repo.join("docs/plans/work.md"), "# Plan\n- [x] one\n- [ ] two\n- [ ] three\n").unwrap();
    std::fs::write(repo.join("a.txt"), "a\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "plan"]);
    let text = transcript();
    let path = tmp.path().join("session.jsonl");
    std::fs::write(&path, &text).unwrap();
    println!("transcript: {:.1} MB, {} lines", text.len() as f64 / 1048576.0, text.lines().count());

    // In-process: read the tail as the gate does (streamed through a small buffer into
    // the session's structure, the final message searched from the end).
    let mut parse = Vec::new();
    for _ in 0..30 {
        let t0 = Instant::now();
        let tail = premerge::input::Tail::open(&path, premerge::input::Kind::Transcript, TAIL).unwrap();
        let last = tail.find_from_end(64 * 1024, |l| premerge::gate::payload::last_assistant_text(l)).unwrap();
        let facts =
            premerge::gate::session::read_lines(&["docs/plans/work.md"], |each| tail.for_each_line(each)).unwrap();
        black_box((&facts, &last));
        parse.push(t0.elapsed());
        assert_eq!(facts.last_test.as_ref().map(|t| t.ok), Some(false));
        assert_eq!(last.as_deref(), Some("All steps are complete and the work is done."));
    }
    parse.sort();
    println!(
        "in-process tail read + session parse (4 MiB of 10 MB), 30 runs: p50 {}, max {}",
        ms(parse[15]),
        ms(parse[29])
    );

    let run = |args: &[&str], stdin: &[u8]| {
        let c0 = children_cpu();
        let t0 = Instant::now();
        let mut child = Command::new(&bin)
            .args(args)
            .current_dir(&repo)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        let out = child.wait_with_output().unwrap();
        (t0.elapsed(), out.stdout, children_cpu().saturating_sub(c0))
    };
    let mut evals = Vec::new();
    let mut floor = Vec::new();
    let mut eval_cpu = Vec::new();
    let mut floor_cpu = Vec::new();
    // Alternating with the `--version` floor, so both see the same machine load.
    for i in 0..RUNS {
        let payload = json!({"session_id": format!("bench-{i}"), "transcript_path": path, "cwd": repo,
            "hook_event_name": "Stop", "stop_hook_active": false});
        let (t, out, cpu) = run(&["gate", "evaluate"], payload.to_string().as_bytes());
        assert!(!out.is_empty(), "run {i} was not blocked: the benchmark did not take the full path");
        evals.push(t);
        eval_cpu.push(cpu);
        let (t, _, cpu) = run(&["--version"], b"");
        floor.push(t);
        floor_cpu.push(cpu);
    }
    evals.sort();
    floor.sort();
    eval_cpu.sort();
    floor_cpu.sort();
    println!(
        "gate evaluate end to end, 10 MB transcript, {RUNS} runs: p50 {}, p99 {}, max {} (`--version` floor p50 {}, p99 {})",
        ms(percentile(&evals, 50)),
        ms(percentile(&evals, 99)),
        ms(*evals.last().unwrap()),
        ms(percentile(&floor, 50)),
        ms(percentile(&floor, 99)),
    );
    println!(
        "CPU time (user + system) per run: gate evaluate p50 {}, p99 {}; `--version` p50 {}; load average {}",
        ms(percentile(&eval_cpu, 50)),
        ms(percentile(&eval_cpu, 99)),
        ms(percentile(&floor_cpu, 50)),
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split(' ').take(3).collect::<Vec<_>>().join(" "),
    );
}
