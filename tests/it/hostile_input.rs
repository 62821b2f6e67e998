//! Input from outside premerge that is not a regular file, or is too large: refused at
//! once with an error naming the file, never read without limit, never waited on.

use std::os::unix::fs::symlink;
use std::process::Stdio;
use std::time::Duration;

use wait_timeout::ChildExt;

use crate::common::TestRepo;

/// Run premerge in `r` and fail the test if it has not exited within 20 s.
fn run_bounded(r: &TestRepo, args: &[&str]) -> (i32, String) {
    let mut child =
        r.premerge_cmd(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let status = match child.wait_timeout(Duration::from_secs(20)).unwrap() {
        Some(s) => s,
        None => {
            let _ = child.kill();
            panic!("premerge {args:?} still running after 20 s");
        }
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    (status.code().unwrap_or(-1), err)
}

/// Regression (issue 15): a committed `premerge.toml` symlinked to `/dev/zero` made
/// `premerge config` read without end.
#[test]
fn a_config_file_that_is_a_device_is_refused() {
    let r = TestRepo::new();
    symlink("/dev/zero", r.root.join("premerge.toml")).unwrap();
    let (code, err) = run_bounded(&r, &["config"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("premerge: ") && err.contains("premerge.toml: not a regular file (a device)"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// Regression (issue 15): a FIFO `premerge.toml` hung every command.
#[test]
fn a_config_file_that_is_a_fifo_does_not_hang() {
    let r = TestRepo::new();
    let fifo = r.root.join("premerge.toml");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let (code, err) = run_bounded(&r, &["config"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("premerge.toml: not a regular file (a FIFO)"), "{err}");
}

#[test]
fn a_findings_file_that_is_a_device_or_too_large_is_refused() {
    let r = TestRepo::new();
    r.write("a.rs", "fn a() {}\n");
    r.commit_all("init");
    let (code, err) = run_bounded(&r, &["review", "route", "--round", "1", "--findings", "/dev/zero"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/dev/zero: not a regular file (a device)"), "{err}");
    // Over the configured limit: named with the key that raises it.
    r.write("big.json", format!("[{}]", " ".repeat(4096)));
    r.git(&["config", "premerge.review.maxFindingsBytes", "1024"]);
    let (code, err) = run_bounded(&r, &["review", "route", "--round", "1", "--findings", "big.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("big.json: larger than 1024 bytes (review.max_findings_bytes)"), "{err}");
}

/// Regression (issue 15): clap's usage errors were several lines of `error:` text.
#[test]
fn usage_errors_are_one_line_with_a_hint() {
    let r = TestRepo::new();
    let out = r.premerge(&["scan", "--no-such-flag"]);
    out.expect_code(2);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.starts_with("premerge: usage: unexpected argument '--no-such-flag'"), "{}", out.stderr);
    assert!(out.stderr.trim_end().ends_with("try 'premerge scan --help'"), "{}", out.stderr);
    let out = r.premerge(&["scna"]);
    out.expect_code(2);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("'scan'"), "{}", out.stderr);
    // --help stays a success on stdout.
    let out = r.premerge(&["scan", "--help"]);
    out.expect_code(0);
    assert!(out.stdout.contains("Usage: premerge scan"), "{}", out.stdout);
}

/// Regression (issue 15): a newline in user input split an error across lines.
#[test]
fn control_characters_in_errors_are_escaped() {
    let r = TestRepo::new();
    let out = r.premerge(&["review", "route", "--round", "1", "--findings", "no\nsuch\u{202e}file.json"]);
    out.expect_code(2);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("no\\nsuch\\u{202e}file.json"), "{}", out.stderr);
}

/// Regression (issue 15): a bidi control character in an agent's session id was printed
/// raw by `gate log`, reordering what the terminal showed.
#[test]
fn gate_log_escapes_a_session_id() {
    let r = TestRepo::new();
    r.write("a.rs", "fn a() {}\n");
    r.commit_all("init");
    let payload = serde_json::json!({"session_id": "ab\u{202e}cd\u{2066}e", "hook_event_name": "Stop"});
    r.premerge_stdin(&["gate", "evaluate"], payload.to_string().as_bytes()).expect_code(0);
    let log = r.premerge(&["gate", "log"]);
    log.expect_code(0);
    assert!(log.stdout.contains("session=ab\\u{202e}cd\\u{2066}e "), "{}", log.stdout);
    assert!(!log.stdout.contains('\u{202e}') && !log.stdout.contains('\u{2066}'), "{}", log.stdout);
}

/// Issue 15: a file name or a line of code holding a bidi control character (the
/// "Trojan Source" trick) is shown escaped by every listing: the diff, the scan's text
/// and hook output, and the guard memories read back.
#[test]
fn listings_escape_bidi_controls_in_names_and_code() {
    let r = TestRepo::new();
    let name = "src/pay\u{202e}sr.rs";
    r.write(name, "pub struct Fee {\n    pub cents: u16,\n}\n");
    r.commit_all("init");
    r.write(name, "pub struct Fee {\n    pub cents: u64, // \u{2066}ok\n}\n");
    r.commit_all("widen");
    for args in [&["diff", "--base", "HEAD~1"][..], &["scan", "--base", "HEAD~1"][..], &["memory", "list"][..]] {
        let out = r.premerge(args);
        out.expect_code(0);
        assert!(out.stdout.contains("src/pay\\342\\200\\256sr.rs"), "{args:?}: {}", out.stdout);
        assert!(!out.stdout.contains('\u{202e}') && !out.stdout.contains('\u{2066}'), "{args:?}: {}", out.stdout);
    }
}

/// Regression (issue 15): `premerge completions bash | head -1` panicked with a backtrace.
#[test]
fn a_closed_pipe_is_a_quiet_exit() {
    let r = TestRepo::new();
    let mut child = r
        .premerge_cmd(["completions", "bash"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read one line, then close the pipe as `head -1` does.
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    std::io::Read::read_exact(&mut out, &mut first).unwrap();
    drop(out);
    let status = child.wait_timeout(Duration::from_secs(20)).unwrap().expect("exits");
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.code(), Some(0), "{err}");
}

/// Regression (issue 15): a repository owned by another user was reported as "not a
/// git repository"; git calls it dubious ownership and says how to allow it.
#[test]
fn dubious_ownership_is_said_as_git_says_it() {
    let r = TestRepo::new();
    r.write("a.rs", "fn a() {}\n");
    r.commit_all("init");
    // Hand the repository to another user (the suite runs as root in CI; elsewhere the
    // chown is refused and there is nothing to test).
    let chown = std::process::Command::new("chown").args(["-R", "65534:65534"]).arg(&r.root).status();
    if !chown.is_ok_and(|s| s.success()) {
        // CI runs as root, so there the case is always exercised.
        assert!(
            std::env::var_os(crate::common::REQUIRE_TOOLS_VAR).is_none(),
            "cannot chown the repository to another user under .ci/run"
        );
        eprintln!("skipped: cannot chown the repository to another user here (not root)");
        return;
    }
    let out = r.premerge(&["diff"]);
    out.expect_code(2);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("dubious ownership"), "{}", out.stderr);
    assert!(out.stderr.contains("git config --global --add safe.directory"), "{}", out.stderr);
    // Restore ownership so the temporary directory can be removed.
    let uid = std::process::Command::new("id").arg("-u").output().unwrap();
    let uid = String::from_utf8_lossy(&uid.stdout).trim().to_string();
    std::process::Command::new("chown").args(["-R", &uid]).arg(&r.root).status().unwrap();
}

/// Regression (issue 15): stdin from `/dev/zero` into `blocked record` or `gate
/// evaluate` grew without limit. Each reads stdin under its kind's limit: the blocked
/// return is refused naming the limit, the gate fails open.
#[test]
fn stdin_is_read_under_a_limit() {
    let r = TestRepo::new();
    r.write("a.rs", "fn a() {}\n");
    r.commit_all("init");
    let flood = vec![b' '; 3 << 20];
    let out = r.premerge_stdin(&["blocked", "record", "--attempt", "1", "--from-file", "a.rs"], &flood);
    out.expect_code(2);
    assert!(out.stderr.contains("stdin: larger than 1048576 bytes, the limit for blocked-on rows"), "{}", out.stderr);
    let out = r.premerge_stdin(&["gate", "evaluate"], &flood);
    out.expect_code(0);
    assert!(out.stdout.trim().is_empty(), "the gate allows the stop: {}", out.stdout);
}

/// Regression (issue 15): `proposal emit --evidence /dev/zero` read without end.
#[test]
fn evidence_that_is_a_device_is_refused() {
    let r = TestRepo::new();
    r.write("a.rs", "fn a() {}\n");
    r.commit_all("init");
    let (code, err) = run_bounded(
        &r,
        &["proposal", "emit", "--scope", "premerge", "--signal", "TRACE-001", "--evidence", "/dev/zero"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/dev/zero: not a regular file (a device)"), "{err}");
}

/// Regression (issue 15): a Stop payload whose `transcript_path` is `/dev/zero` grew
/// to gigabytes, and a FIFO there hung the gate. Both are refused; the gate fails open.
#[test]
fn a_transcript_that_is_a_device_or_fifo_fails_open_at_once() {
    let r = TestRepo::new();
    r.write("a.rs", "fn a() {}\n");
    r.commit_all("init");
    let fifo = r.root.join("t.jsonl");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for transcript in ["/dev/zero".to_string(), fifo.display().to_string()] {
        let payload = serde_json::json!({"session_id": "s1", "transcript_path": transcript, "hook_event_name": "Stop"});
        let mut child = r
            .premerge_cmd(["gate", "evaluate"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), payload.to_string().as_bytes()).unwrap();
        drop(child.stdin.take());
        let status = match child.wait_timeout(Duration::from_secs(20)).unwrap() {
            Some(s) => s,
            None => {
                let _ = child.kill();
                panic!("gate evaluate still running after 20 s with transcript {transcript}");
            }
        };
        assert_eq!(status.code(), Some(0), "the gate fails open ({transcript})");
    }
}

// ------------------------------------------------- containment of write roots

const ROWS: &str = r#"[{"id":"r1","title":"Missing error handling","summary":"src/a.rs"}]"#;

/// `proposal emit` of one seam row in `r`, with `extra` arguments.
fn emit_in(r: &TestRepo, extra: &[&str]) -> crate::common::Run {
    let ev = r.dir.path().join("ev.json");
    std::fs::write(&ev, ROWS).unwrap();
    let mut args =
        vec!["proposal", "emit", "--scope", "review", "--signal", "repeat_seam", "--evidence", ev.to_str().unwrap()];
    args.extend_from_slice(extra);
    r.premerge(&args)
}

/// Every file under `dir` (relative names, sorted); empty when it does not exist.
fn tree(dir: &std::path::Path) -> Vec<String> {
    fn walk(base: &std::path::Path, d: &std::path::Path, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    let mut v = Vec::new();
    walk(dir, dir, &mut v);
    v.sort();
    v
}

/// A repository with one commit and an empty directory `outside` beside it.
fn repo_and_outside() -> (TestRepo, std::path::PathBuf) {
    let r = TestRepo::new();
    r.write("a.rs", "fn a() {}\n");
    r.commit_all("init");
    let outside = r.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    (r, outside)
}

/// The refusal of a root from repository content: exit 2, one line naming the key,
/// the path, where it came from and how to allow it; nothing written outside.
#[track_caller]
fn assert_refused(run: &crate::common::Run, key: &str, from: &str, outside: &std::path::Path) {
    run.expect_code(2);
    let err = &run.stderr;
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(&format!("premerge: {key}: ")), "{err}");
    assert!(err.contains(from), "{err}");
    assert!(err.contains("outside the work tree and the state directory"), "{err}");
    assert!(err.contains(&format!("git config premerge.{}", key.replace("signal_root", "signalRoot"))), "{err}");
    assert_eq!(tree(outside), Vec::<String>::new(), "nothing may be written outside");
}

/// Regression (issue 15): a committed symlink `docs/proposals -> /elsewhere` made
/// `proposal emit` write outside the repository.
#[test]
fn a_committed_symlink_proposal_root_is_refused() {
    let (r, outside) = repo_and_outside();
    std::fs::create_dir(r.root.join("docs")).unwrap();
    symlink(&outside, r.root.join("docs/proposals")).unwrap();
    r.commit_all("proposals elsewhere");
    let run = emit_in(&r, &[]);
    assert_refused(&run, "proposal.root", "(from default, through a symlink in the repository)", &outside);
    assert!(
        run.stderr.contains(&format!("resolves to {}", outside.canonicalize().unwrap().display())),
        "{}",
        run.stderr
    );
    // Listing and draining the same root are refused the same way.
    r.premerge(&["proposal", "list"]).expect_code(2);
    r.premerge(&["drain"]).expect_code(2);
}

/// Regression (issue 15): a committed `premerge.toml` with an absolute `proposal.root`
/// or a `../x` root, or a root through a committed `.premerge -> /elsewhere`.
#[test]
fn a_proposal_root_from_premerge_toml_must_stay_inside() {
    let (r, outside) = repo_and_outside();
    for root in [outside.display().to_string(), "../outside".to_string(), "a/../../outside/p".to_string()] {
        r.write("premerge.toml", format!("[proposal]\nroot = {:?}\n", root));
        assert_refused(&emit_in(&r, &[]), "proposal.root", "(from premerge.toml)", &outside);
    }
    // A symlink in the middle of the path.
    symlink(&outside, r.root.join(".premerge")).unwrap();
    r.write("premerge.toml", "[proposal]\nroot = \".premerge/proposals\"\n");
    r.commit_all("premerge dir elsewhere");
    assert_refused(&emit_in(&r, &[]), "proposal.root", "(from premerge.toml)", &outside);
    // A `..` after a symlink is taken from the symlink's target, as the kernel does:
    // `.premerge/../repo/x` is `<outside>/../repo/x`, not `<work tree>/repo/x`.
    r.write("premerge.toml", "[proposal]\nroot = \".premerge/../x\"\n");
    assert_refused(&emit_in(&r, &[]), "proposal.root", "(from premerge.toml)", &outside);
    assert!(!r.dir.path().join("x").exists());
}

/// Roots inside the work tree (also through a symlink that stays inside) or the state
/// directory are written as before.
#[test]
fn roots_that_resolve_inside_are_written() {
    let (r, outside) = repo_and_outside();
    std::fs::create_dir_all(r.root.join("notes/real")).unwrap();
    symlink("real", r.root.join("notes/link")).unwrap();
    r.write("premerge.toml", "[proposal]\nroot = \"notes/link/proposals\"\n");
    emit_in(&r, &[]).expect_code(0);
    assert_eq!(tree(&r.root.join("notes/real/proposals/open")).len(), 1);
    r.write("premerge.toml", "[proposal]\nroot = \".git/premerge/proposals\"\n");
    emit_in(&r, &["--workflow", "w2"]).expect_code(0);
    assert_eq!(tree(&r.root.join(".git/premerge/proposals/open")).len(), 1);
    assert_eq!(tree(&outside), Vec::<String>::new());
}

/// A root outside is the user's to give: on the command line or in git config.
#[test]
fn a_root_outside_given_by_the_user_is_accepted() {
    let (r, outside) = repo_and_outside();
    r.write("premerge.toml", "[proposal]\nroot = \"/nonexistent-premerge-root\"\n");
    let flag = outside.join("flag");
    emit_in(&r, &["--root", flag.to_str().unwrap()]).expect_code(0);
    assert_eq!(tree(&flag).len(), 1, "--root wins over premerge.toml and is written");
    let cfg = outside.join("cfg");
    r.git(&["config", "premerge.proposal.root", cfg.to_str().unwrap()]);
    emit_in(&r, &[]).expect_code(0);
    assert_eq!(tree(&cfg).len(), 1, "git config is the user's: written");
    // A committed symlink followed from a root the user set in git config is theirs too.
    std::fs::create_dir(r.root.join("docs")).unwrap();
    symlink(&outside, r.root.join("docs/elsewhere")).unwrap();
    r.git(&["config", "premerge.proposal.root", "docs/elsewhere/via-config"]);
    emit_in(&r, &[]).expect_code(0);
    assert_eq!(tree(&outside.join("via-config")).len(), 1);
}

/// A run directory that is a symlink (a committed `run -> /etc`, or one placed in the
/// state directory) is refused before anything is written through it.
#[test]
fn a_run_directory_that_resolves_elsewhere_is_refused() {
    let (r, outside) = repo_and_outside();
    symlink(&outside, r.root.join("run")).unwrap();
    r.commit_all("run elsewhere");
    let run = emit_in(&r, &["--run-dir", "run"]);
    run.expect_code(2);
    assert!(run.stderr.contains("run: is a symlink"), "{}", run.stderr);
    assert!(run.stderr.contains("premerge writes only into a real directory"), "{}", run.stderr);
    let mut env_run = r.at(&r.root);
    env_run.env.push(("PREMERGE_RUN_DIR".into(), r.root.join("run").display().to_string()));
    emit_in(&env_run, &[]).expect_code(2);
    assert_eq!(tree(&outside), Vec::<String>::new());
}

/// Regression (issue 15): a pull that brings a `premerge.toml` whose `signal_root`
/// points outside made the post-merge hook's own signals write there. Through the
/// installed hook and a real `git merge`: the signal is refused with a one-line
/// warning, the merge succeeds, nothing is written outside; allowed by git config,
/// the same signal is written there.
#[test]
fn a_pull_cannot_make_the_hooks_signals_write_outside() {
    let r = TestRepo::new();
    let outside = r.dir.path().join("outside");
    r.write("src/q.rs", "pub struct Query {\n    pub limit: u8,\n}\n");
    r.commit_all("query");
    r.premerge(&["install"]).expect_code(0);
    // Each "pull" merges a branch that widens `Query.limit` again.
    let pull = |ty: &str, extra: Option<&str>| {
        r.git(&["checkout", "-q", "-b", &format!("up-{ty}")]);
        r.write("src/q.rs", format!("pub struct Query {{\n    pub limit: {ty},\n}}\n"));
        if let Some(toml) = extra {
            r.write("premerge.toml", toml);
        }
        r.commit_all(&format!("limit {ty}"));
        r.git(&["checkout", "-q", "main"]);
        let run =
            crate::common::run_with_stdin(&mut r.git_cmd(["merge", "--no-ff", "--no-edit", &format!("up-{ty}")]), b"");
        run.expect_code(0);
        run
    };
    pull("u16", Some("[proposal]\nsignal_root = \"../outside\"\n"));
    let second = pull("u32", None);
    let warning: Vec<&str> = second.stderr.lines().filter(|l| l.contains("proposal.signal_root")).collect();
    assert_eq!(warning.len(), 1, "{}", second.stderr);
    assert!(
        warning[0].starts_with("premerge: warning: proposal scan:widening_repeat: proposal.signal_root: "),
        "{}",
        warning[0]
    );
    assert!(
        warning[0].contains("(from premerge.toml)") && warning[0].contains("signal not recorded"),
        "{}",
        warning[0]
    );
    assert!(!outside.exists(), "nothing written outside: {:?}", tree(&outside));
    // The user allows it in git config: the next repeat is written there.
    r.git(&["config", "premerge.proposal.signalRoot", "../outside"]);
    let third = pull("u64", None);
    assert!(third.stderr.contains("scan:widening_repeat:"), "{}", third.stderr);
    assert_eq!(tree(&outside.join("open")).len(), 1, "{}", third.stderr);
}

// ------------------------------------------------- install and working-tree readers

fn mkfifo(p: &std::path::Path) {
    let c = std::ffi::CString::new(p.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

/// Regression (issue 15): a committed `.premerge/pins.json` that is a symlink to
/// `/dev/zero` made `install --agent-docs` read without end; a FIFO there hangs a plain
/// read. Both are refused at once: the pins are treated as empty with a warning naming
/// the file, and the install goes on.
#[test]
fn pins_that_are_a_device_or_fifo_are_refused_at_once() {
    let r = TestRepo::new();
    r.write("AGENTS.md", "# Agents\n");
    r.commit_all("init");
    std::fs::create_dir(r.root.join(".premerge")).unwrap();
    let pins = r.root.join(".premerge/pins.json");
    symlink("/dev/zero", &pins).unwrap();
    let (code, err) = run_bounded(&r, &["install", "--agent-docs"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("pins.json: unreadable, treated as empty: ") && err.contains("(a device)"), "{err}");
    assert!(std::fs::read_to_string(r.root.join("AGENTS.md")).unwrap().contains("premerge"));
    std::fs::remove_file(&pins).unwrap();
    mkfifo(&pins);
    let (code, err) = run_bounded(&r, &["install", "--agent-docs"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("(a FIFO)"), "{err}");
}

/// An agent file that is a FIFO or a device is refused with exit 2 and nothing is
/// changed; one that a committed symlink takes outside the work tree is refused before
/// anything is read or written there.
#[test]
fn agent_files_that_are_special_or_lead_outside_are_refused() {
    let (r, outside) = repo_and_outside();
    r.write("AGENTS.md", "# Agents\n");
    mkfifo(&r.root.join("CLAUDE.md"));
    let (code, err) = run_bounded(&r, &["install", "--agent-docs"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("CLAUDE.md: not a regular file (a FIFO)") && err.ends_with("nothing was changed\n"), "{err}");
    assert_eq!(std::fs::read_to_string(r.root.join("AGENTS.md")).unwrap(), "# Agents\n", "nothing was changed");
    std::fs::remove_file(r.root.join("CLAUDE.md")).unwrap();
    symlink("/dev/zero", r.root.join("CLAUDE.md")).unwrap();
    let (code, err) = run_bounded(&r, &["install", "--agent-docs"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("CLAUDE.md: a symlink to /dev/zero, outside the work tree"), "{err}");
    // A committed `CLAUDE.md -> ../outside/profile`: the file outside keeps its bytes.
    std::fs::remove_file(r.root.join("CLAUDE.md")).unwrap();
    std::fs::write(outside.join("profile"), "export A=1\n").unwrap();
    symlink("../outside/profile", r.root.join("CLAUDE.md")).unwrap();
    r.commit_all("claude elsewhere");
    for args in [&["install", "--agent-docs"][..], &["uninstall", "--agent-docs"][..]] {
        let (code, err) = run_bounded(&r, args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("outside the work tree; premerge edits agent files only inside it"), "{err}");
    }
    assert_eq!(std::fs::read_to_string(outside.join("profile")).unwrap(), "export A=1\n");
    assert_eq!(tree(&outside), ["profile"]);
    // A symlink that stays inside (CLAUDE.md -> AGENTS.md) is edited through, as before.
    std::fs::remove_file(r.root.join("CLAUDE.md")).unwrap();
    symlink("AGENTS.md", r.root.join("CLAUDE.md")).unwrap();
    let (code, err) = run_bounded(&r, &["install", "--agent-docs"]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(r.root.join("AGENTS.md")).unwrap().contains("premerge"));
}

/// A working-tree file over its reader's limit is skipped with a note, its size taken
/// with `fstat` before a byte is read: `scan.max_file_bytes` for the scan, 1 MiB for
/// the seam detector.
#[test]
fn a_working_tree_file_over_the_limit_is_skipped_before_it_is_read() {
    let r = TestRepo::new();
    r.write("premerge.toml", "[scan]\nmax_file_bytes = 400\n");
    r.write("src/big.rs", "pub struct A { a: u8 }\n");
    r.commit_all("initial");
    r.write("src/big.rs", format!("pub struct A {{ a: u64 }}\n{}", "// padding\n".repeat(50)));
    let run = r.premerge(&["scan", "--worktree", "--no-memory", "--format", "json"]);
    run.expect_code(0);
    let v = run.json();
    assert_eq!(v["notes"][0]["file"], "src/big.rs", "{v}");
    assert_eq!(v["notes"][0]["reason"], "new version is over scan.max_file_bytes (400)", "{v}");
    assert_eq!(v["findings"], serde_json::json!([]));
    r.write("src/big.rs", "// a line of padding, repeated\n".repeat(40_000));
    let run = r.premerge(&["seams", "--worktree", "--format", "json"]);
    run.expect_code(0);
    assert_eq!(run.json()["skipped"], serde_json::json!({"too_large": 1}), "{}", run.stdout);
}

/// The run directory is a path premerge names in JSON and events, so it must be UTF-8:
/// one that is not, given by `--run-dir` or `PREMERGE_RUN_DIR`, is refused with exit 2
/// and a one-line error naming it, and nothing is created there.
#[test]
fn a_run_directory_or_proposal_root_that_is_not_utf8_is_refused_by_name() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let r = TestRepo::new();
    r.write("a.txt", "a\n");
    r.commit_all("init");
    let bad = r.root.join(OsStr::from_bytes(b"run-\xff"));
    let cases: [(&[&str], bool); 4] = [
        (&["fence", "allowed", "--attempt", "1"], false),
        (&["show", "waves", "--attempt", "1"], false),
        (&["show", "waves", "--attempt", "1"], true),
        (&["blocked", "record", "--attempt", "1", "--from-file", "a.txt"], true),
    ];
    for (args, by_env) in cases {
        let mut c = r.premerge_cmd(args);
        if by_env {
            c.env("PREMERGE_RUN_DIR", &bad);
        } else {
            c.arg("--run-dir").arg(&bad);
        }
        let out = crate::common::run_with_stdin(&mut c, b"{}");
        assert_eq!(out.code, 2, "{args:?} {}", out.stderr);
        let want = format!("premerge: run directory {}/run-\u{fffd}: not UTF-8", r.root.display());
        assert!(out.stderr.starts_with(&want), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(!bad.exists(), "{args:?} created the run directory");
    }
    // A proposal root premerge lists in JSON: likewise, inside a repository or not.
    for dir in [r.root.clone(), std::env::temp_dir()] {
        let mut c = r.premerge_cmd(["proposal", "list", "--root"]);
        c.arg(&bad).current_dir(&dir);
        let out = crate::common::run_with_stdin(&mut c, b"");
        assert_eq!(out.code, 2, "{}", out.stderr);
        let want = format!("premerge: proposal root {}/run-\u{fffd}: not UTF-8", r.root.display());
        assert!(out.stderr.starts_with(&want), "{}", out.stderr);
        assert!(!bad.exists(), "proposal list created the root");
    }
}
