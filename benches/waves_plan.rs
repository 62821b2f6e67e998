//! Wave planning benchmark: classify and plan N findings over N/5 files, at three
//! sizes, in-process (classify + plan + canonical JSON of both artefacts), then
//! `premerge plan` end to end at the largest size (read, parse, classify, plan, write).
//!
//! Run: `cargo bench --bench waves_plan` (release build; a few seconds).

// Tests and benchmarks may unwrap and panic: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::panic, unreachable_pub)]

use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

use premerge::findings::Finding;
use premerge::waves;

fn findings(n: usize, files: usize) -> Vec<Finding> {
    // A fixed multiplicative walk over the files: deterministic, unsorted, every file hit.
    (0..n)
        .map(|i| {
            let f = (i * 7919) % files;
            Finding {
                index: i,
                lens: None,
                severity: Some(if i % 5 == 0 { "suggestion" } else { "blocker" }.to_string()),
                file: format!("src/mod{}/file{f}.rs", f % 97),
                line: Some((i / files) as u64 + 1),
                title: format!("defect number {i} in this file"),
                description: Some("a caller passes a value the change no longer rejects".to_string()),
                category: None,
                verdict: None,
                suggestion: None,
            }
        })
        .collect()
}

/// CPU time of this thread so far (Linux `/proc`, clock ticks of 10 ms): the machine is
/// shared, so wall time alone overstates the cost when other work competes for the cores.
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    // After the `)`: state (field 3), then numeric fields from 4 on; utime and stime
    // are fields 14 and 15.
    let f: Vec<i64> = after.split_whitespace().skip(1).map(|x| x.parse().unwrap_or(0)).collect();
    let ticks = (f.get(10).copied().unwrap_or(0) + f.get(11).copied().unwrap_or(0)).max(0) as u64;
    Duration::from_millis(ticks * 10)
}

/// Best of `runs`: (wall, CPU) of the fastest run by wall time.
fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, Duration) {
    (0..runs)
        .map(|_| {
            let (t, c) = (Instant::now(), thread_cpu());
            black_box(f());
            (t.elapsed(), thread_cpu().saturating_sub(c))
        })
        .min()
        .expect("at least one run")
}

fn main() {
    println!(
        "{:>8} {:>7} {:>9} {:>9} {:>13} {:>12} {:>16}",
        "findings", "files", "plan ms", "plan cpu", "+json ms", "+json cpu", "cpu ns/(n lg n)"
    );
    for n in [25_000usize, 50_000, 100_000] {
        let input = findings(n, n / 5);
        let plan = best_of(3, || {
            let c = waves::classify(&input, waves::MAX_FINDINGS).expect("valid input");
            waves::plan_waves(1, 8, &c).expect("valid plan")
        });
        let total = best_of(3, || {
            let c = waves::classify(&input, waves::MAX_FINDINGS).expect("valid input");
            let p = waves::plan_waves(1, 8, &c).expect("valid plan");
            let a = waves::to_artefact_json(&c).expect("serialises");
            let b = waves::to_artefact_json(&p).expect("serialises");
            a.len() + b.len()
        });
        let nlogn = n as f64 * (n as f64).log2();
        println!(
            "{n:>8} {:>7} {:>9.0} {:>9.0} {:>13.0} {:>12.0} {:>16.1}",
            n / 5,
            plan.0.as_secs_f64() * 1e3,
            plan.1.as_secs_f64() * 1e3,
            total.0.as_secs_f64() * 1e3,
            total.1.as_secs_f64() * 1e3,
            total.1.as_nanos() as f64 / nlogn
        );
    }
    end_to_end(100_000);
}

fn end_to_end(n: usize) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).expect("repo dir");
    let ok = Command::new("git").args(["init", "-q"]).current_dir(&root).status().is_ok_and(|s| s.success());
    if !ok {
        println!("end to end: skipped (git is not available)");
        return;
    }
    let rows: Vec<serde_json::Value> = findings(n, n / 5)
        .into_iter()
        .map(|f| serde_json::json!({"file": f.file, "line": f.line, "summary": f.title, "severity": f.severity}))
        .collect();
    let path = dir.path().join("findings.json");
    std::fs::write(&path, serde_json::to_vec(&rows).expect("serialises")).expect("write findings");
    let run_dir = dir.path().join("run");
    let (took, _) = best_of(3, || {
        let out = Command::new(env!("CARGO_BIN_EXE_premerge"))
            .args(["plan", "--attempt", "1", "--findings"])
            .arg(&path)
            .arg("--run-dir")
            .arg(&run_dir)
            .current_dir(&root)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .expect("premerge runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    });
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!(
        "end to end: premerge plan, {n} findings over {} files ({:.1} MB input): {:.0} ms",
        n / 5,
        size as f64 / 1e6,
        took.as_secs_f64() * 1e3
    );
}
