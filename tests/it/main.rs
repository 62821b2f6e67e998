//! premerge's one integration test binary. Each area has its own module; `common`
//! holds the hermetic repository builder and the runner of the real binary.

// Tests and benchmarks may unwrap and panic: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::panic, unreachable_pub)]

mod common;

mod budget;
mod ci_templates;
mod cli_snapshots;
mod concurrency;
mod crash;
mod decisions;
mod deep_input;
mod environment_limits;
mod fence_loop;
mod fence_push;
mod fixtures;
mod foundation;
mod fuzz;
mod gate;
mod hooks_safety;
mod hostile_input;
mod install;
mod layers;
mod loop_model;
mod managers;
mod renames;
mod report_formats;
mod review;
mod scan;
mod schemas;
mod show_loop;
mod stripes;
mod waves;
