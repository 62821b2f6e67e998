//! Copy detector throughput on real code, every line counted as added (the worst case:
//! a push that adds whole trees).
//!
//! `PREMERGE_BENCH_SRC=dir1:dir2 cargo bench --bench clones` reads every `.rs`, `.py`,
//! `.ts`, `.js` and `.go` file below the given directories (default: this crate's
//! `src/`) and prints the median of RUNS runs of `clones::detect`.

// Tests and benchmarks may unwrap and panic: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::panic, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use premerge::review::clones::{SourceFile, Thresholds, detect};

const RUNS: usize = 3;

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, out);
        } else if matches!(p.extension().and_then(|e| e.to_str()), Some("rs" | "py" | "ts" | "js" | "go")) {
            out.push(p);
        }
    }
}

fn main() {
    let roots =
        std::env::var("PREMERGE_BENCH_SRC").unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/src").into());
    let mut paths = Vec::new();
    for r in roots.split(':').filter(|r| !r.is_empty()) {
        collect(Path::new(r), &mut paths);
    }
    let files: Vec<SourceFile> = paths
        .iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(p).ok()?;
            let n = text.lines().count() as u32;
            Some(SourceFile { path: p.display().to_string(), text, added: (1..=n).collect() })
        })
        .collect();
    let lines: usize = files.iter().map(|f| f.added.len()).sum();
    let t = Thresholds { min_files: 3, min_tokens: 50 };
    let mut times = Vec::new();
    let mut found = 0;
    for _ in 0..RUNS {
        let start = Instant::now();
        found = detect(&files, t).len();
        times.push(start.elapsed());
    }
    times.sort();
    println!(
        "clones::detect: {} files, {lines} lines all added: median {:.1} ms over {RUNS} runs ({found} cluster(s))",
        files.len(),
        times[RUNS / 2].as_secs_f64() * 1e3
    );
}
