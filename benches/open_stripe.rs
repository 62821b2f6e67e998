//! The open-stripe check with 1,000 open proposals: how long `find_open` takes to
//! decide "already open" (a hit) or "new" (a miss), and a whole in-process `emit`
//! that halts. Run: `cargo bench --bench open_stripe`.

// Tests and benchmarks may unwrap and panic: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::panic, unreachable_pub)]

use std::time::{Duration, Instant};

use premerge::config::Mode;
use premerge::store::proposals::find_open;
use premerge::stripe::emit::emit;
use premerge::stripe::proposal::{ProposalDoc, file_name, render};
use premerge::stripe::{Evidence, StripeId, project};
use serde_json::json;

const OPEN: usize = 1000;
const SAMPLES: usize = 2000;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn measure(name: &str, mut f: impl FnMut()) {
    for _ in 0..50 {
        f();
    }
    let mut t: Vec<Duration> = (0..SAMPLES)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    println!(
        "{name:<34} n={SAMPLES} p50={:>8.3} ms  p95={:>8.3} ms  max={:>8.3} ms",
        percentile(&t, 0.50).as_secs_f64() * 1e3,
        percentile(&t, 0.95).as_secs_f64() * 1e3,
        t[t.len() - 1].as_secs_f64() * 1e3
    );
}

fn main() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let root = dir.path().join("proposals");
    let open = root.join("open");
    std::fs::create_dir_all(&open).expect("open/");
    let mut last = None;
    for i in 0..OPEN {
        let ev = Evidence::from_value(&json!([{"id": i, "title": format!("seam number {i}")}])).expect("rows");
        let p = project("repeat_seam", &ev);
        let id = StripeId::compute("review", &p).expect("valid scope");
        let text = render(&ProposalDoc {
            stripe: &id,
            projection: &p,
            created: "2026-01-02T03:04:05Z",
            workflow: None,
            suggested_change: "x",
            suggested_by: "outline",
        });
        std::fs::write(open.join(file_name(&id, "20260102T030405Z", 1)), text).expect("write");
        last = Some(id);
    }
    let hit = last.expect("1000 written");
    let miss = StripeId::parse("review:repeat_seam:00000000").expect("valid id");
    println!("open-stripe check, {OPEN} open proposals in {}", open.display());
    measure("find_open (hit)", || assert!(find_open(&root, &hit).expect("reads").is_some()));
    measure("find_open (miss)", || assert!(find_open(&root, &miss).expect("reads").is_none()));
    let rows = vec![json!({"id": "new", "title": format!("seam number {}", OPEN - 1)})];
    let events = dir.path().join("run");
    measure("emit -> stripe_repeat_halt", || {
        let o = emit(&root, &events, "review", "repeat_seam", &rows, None, None, Mode::Enforce).expect("emits");
        assert_eq!(o.outcome, premerge::stripe::emit::Outcome::StripeRepeatHalt);
    });
}
