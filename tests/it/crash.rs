//! Crash safety and concurrency of premerge's writers, with the real binary: processes
//! killed with SIGKILL at random moments (a seeded generator, so a red run replays)
//! leave no torn artefact, an intact database and no leftover temporaries after the
//! next write; writers running in parallel lose nothing.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::common::TestRepo;

/// A small deterministic generator (xorshift64*): the kill moments of one run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const KILLS: usize = 40;

/// Every file of `dir` (recursively), sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir(dir) else { return out };
    for e in rd.flatten() {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn is_temporary(p: &Path) -> bool {
    p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".premerge-tmp-"))
}

/// No torn artefact: every JSON artefact parses, every event line parses (appends are
/// one write each), and the database passes SQLite's own check.
fn assert_intact(dirs: &[&Path], db: &Path, after: &str) {
    for dir in dirs {
        for p in walk(dir) {
            if is_temporary(&p) {
                continue;
            }
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".json") {
                let text = fs::read_to_string(&p).unwrap();
                assert!(
                    serde_json::from_str::<Value>(&text).is_ok(),
                    "{after}: torn artefact {}: {text:?}",
                    p.display()
                );
            } else if name.ends_with(".jsonl") {
                let text = fs::read_to_string(&p).unwrap();
                for line in text.lines() {
                    assert!(
                        serde_json::from_str::<Value>(line).is_ok(),
                        "{after}: torn line in {}: {line:?}",
                        p.display()
                    );
                }
                assert!(text.is_empty() || text.ends_with('\n'), "{after}: {} ends mid-line", p.display());
            } else if name.ends_with(".md") {
                // Proposals are Markdown with a JSON front block; a torn one would be empty.
                assert!(fs::metadata(&p).unwrap().len() > 0, "{after}: empty proposal {}", p.display());
            }
        }
    }
    if db.exists() {
        let conn = rusqlite::Connection::open(db).unwrap();
        let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(check, "ok", "{after}: database integrity");
    }
}

/// A findings file large enough that `plan` is still writing when it is killed.
fn findings(n: usize) -> String {
    let rows: Vec<Value> = (0..n)
        .map(|i| {
            json!({"file": format!("src/m{}.rs", i % 97), "line": i + 1, "summary": format!("finding {i}"),
                "failure_scenario": "x".repeat(200), "verdict": "confirmed"})
        })
        .collect();
    json!({ "findings": rows }).to_string()
}

/// Evidence of one repeat seam: two findings whose titles normalise alike. Each `tag`
/// gives a distinct stripe, so a distinct proposal.
fn seam_evidence(dir: &Path, tag: &str) -> String {
    let p = dir.join(format!("ev-{tag}.json"));
    let rows = json!([{"id": "r1", "title": format!("Missing check {tag}"), "summary": "src/a.rs"},
        {"id": "r2", "title": format!("missing  CHECK {tag}"), "summary": "src/b.rs"}]);
    fs::write(&p, rows.to_string()).unwrap();
    p.display().to_string()
}

const EMIT: [&str; 6] = ["proposal", "emit", "--scope", "review", "--signal", "repeat_seam"];

fn stop_payload(session: &str) -> Vec<u8> {
    json!({"session_id": session, "hook_event_name": "Stop", "stop_hook_active": false,
        "last_assistant_message": "Step one is done. I'll stop here and continue in a fresh session."})
    .to_string()
    .into_bytes()
}

fn spawn(r: &TestRepo, args: &[&str], stdin: &[u8]) -> Child {
    let mut c = r.premerge_cmd(args);
    c.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = c.spawn().expect("premerge starts");
    let mut i = child.stdin.take().unwrap();
    let _ = i.write_all(stdin);
    drop(i);
    child
}

fn set_old(p: &Path) {
    let f = fs::File::options().write(true).open(p).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(2 * 3600)).unwrap();
}

#[test]
fn sigkill_at_random_moments_leaves_no_torn_artefact() {
    let r = TestRepo::new();
    for i in 0..97 {
        r.write(&format!("src/m{i}.rs"), format!("pub fn f{i}() {{}}\n"));
    }
    r.write("docs/plans/work.md", "# Plan\n- [ ] step two\n");
    r.commit_all("base");
    let f = r.dir.path().join("findings.json");
    fs::write(&f, findings(6000)).unwrap();
    let evidence: Vec<String> = ["a", "b", "c", "d", "e"].iter().map(|t| seam_evidence(r.dir.path(), t)).collect();
    let run = r.dir.path().join("run");
    let (f, run_s) = (f.display().to_string(), run.display().to_string());
    r.premerge_stdin(&["gate", "session-start"], br#"{"session_id":"s0","source":"startup"}"#).expect_code(0);
    let state = r.root.join(".git").join("premerge");
    let db = state.join("premerge.db");
    let proposals = r.root.join("docs").join("proposals");

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut finished = 0;
    for k in 0..KILLS {
        let attempt = (k % 3 + 1).to_string();
        let ev = &evidence[k % evidence.len()];
        let session = format!("s{}", k % 4);
        let mut child = match rng.below(3) {
            0 => spawn(&r, &["plan", "--attempt", &attempt, "--findings", &f, "--run-dir", &run_s], b""),
            1 => spawn(&r, &[&EMIT[..], &["--evidence", ev]].concat(), b""),
            _ => spawn(&r, &["gate", "evaluate"], &stop_payload(&session)),
        };
        // Processes take tens to hundreds of milliseconds here: some are killed before
        // they write, some while writing, some after.
        std::thread::sleep(Duration::from_millis(rng.below(250)));
        if child.try_wait().unwrap().is_some() {
            finished += 1;
        }
        let _ = child.kill();
        child.wait().unwrap();
        assert_intact(&[&run, &state, &proposals], &db, &format!("kill {k}"));
    }
    eprintln!("crash harness: {KILLS} SIGKILLs ({finished} processes had already finished)");

    // Leftover temporaries of the killed writers, made older than the hour, are removed
    // by the next write in their directory.
    let temps: Vec<PathBuf> =
        [&run, &state, &proposals.join("open")].iter().flat_map(|d| walk(d)).filter(|p| is_temporary(p)).collect();
    for t in &temps {
        set_old(t);
    }
    eprintln!("crash harness: {} temporaries left by killed writers", temps.len());
    r.premerge(&["plan", "--attempt", "1", "--findings", &f, "--run-dir", &run_s]).expect_code(0);
    r.premerge_stdin(&["gate", "evaluate"], &stop_payload("s9")).expect_code(0);
    let after = seam_evidence(r.dir.path(), "after");
    r.premerge(&[&EMIT[..], &["--evidence", &after]].concat()).expect_code(0);
    // The run and state directories are written through `store::atomic_write`, which
    // removes old temporaries; `proposals/open/` is not yet (see
    // `open_proposal_temporaries_are_removed_by_the_next_emit`).
    for t in temps.iter().filter(|t| t.parent() == Some(&run) || t.parent() == Some(&state)) {
        assert!(!t.exists(), "old temporary {} survived the next write", t.display());
    }
    assert_intact(&[&run, &state, &proposals], &db, "after the next writes");
    // And the state still works: the plan artefact reads back.
    let plan: Value = serde_json::from_str(&fs::read_to_string(run.join("fix-waves-01.json")).unwrap()).unwrap();
    assert!(plan.is_object());
}

#[test]
fn parallel_writers_lose_nothing() {
    let r = TestRepo::new();
    r.write("src/a.rs", "pub fn a() {}\n");
    r.commit_all("base");
    // Migrate first, so the processes race on their rows, not on the schema.
    r.premerge_stdin(&["gate", "session-start"], br#"{"session_id":"s0","source":"startup"}"#).expect_code(0);
    const N: usize = 8;
    let mut children = Vec::new();
    for i in 0..N {
        let ev = seam_evidence(r.dir.path(), &format!("parallel{i}"));
        children.push(spawn(&r, &[&EMIT[..], &["--evidence", &ev]].concat(), b""));
        children.push(spawn(&r, &["gate", "evaluate"], &stop_payload(&format!("p{i}"))));
    }
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{:?}: {}", o.status, String::from_utf8_lossy(&o.stderr));
    }
    let open: Vec<PathBuf> =
        walk(&r.root.join("docs/proposals/open")).into_iter().filter(|p| !is_temporary(p)).collect();
    assert_eq!(open.len(), N, "one proposal per distinct stripe: {open:?}");
    let log = r.premerge(&["gate", "log", "--tail", "1000", "--format", "json"]);
    log.expect_code(0);
    let mut sessions: Vec<String> = log
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|e| e["session_id"].as_str().map(str::to_string))
        .filter(|s| s.starts_with('p'))
        .collect();
    sessions.sort();
    sessions.dedup();
    assert_eq!(sessions.len(), N, "one logged decision per evaluation: {sessions:?}");
    let state = r.root.join(".git").join("premerge");
    assert_intact(&[&state, &r.root.join("docs/proposals")], &state.join("premerge.db"), "parallel writers");
}

/// Regression: `proposal emit` wrote its temporary with its own `tempfile` call
/// (`write_new`) that never removed stale temporaries, so a killed emitter's leftover
/// stayed for ever.
#[test]
fn open_proposal_temporaries_are_removed_by_the_next_emit() {
    let r = TestRepo::new();
    let open = r.root.join("docs/proposals/open");
    fs::create_dir_all(&open).unwrap();
    let leftover = open.join(".premerge-tmp-killed");
    fs::write(&leftover, "half a proposal").unwrap();
    set_old(&leftover);
    let ev = seam_evidence(r.dir.path(), "x");
    r.premerge(&[&EMIT[..], &["--evidence", &ev]].concat()).expect_code(0);
    assert!(!leftover.exists(), "an hour-old temporary in proposals/open survived the next emit");
}
