//! `premerge plan`: classify an attempt's findings, carry the previous attempt's
//! blocked-on rows, and write `classified-NN.json` and `fix-waves-NN.json`.
//!
//! Also home of the artefact paths and readers the other fixer-wave commands share
//! (`blocked`, `fence`, `converge`, `show`).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::Ctx;
use crate::error::{CmdResult, Exit};
use crate::store;
use crate::waves::carry::{self, ARTIFACT_INVALID, PathCheck};
use crate::waves::{self, ClassifiedFinding, Counts};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The attempt number (1 for the first).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=99))]
    pub attempt: u32,
    /// Findings file: lens findings, reviewer findings or SARIF 2.1.0.
    #[arg(long, value_name = "FILE")]
    pub findings: PathBuf,
    /// Carry the rows of blocked-on-<N-1>.json (and nothing older) into this plan.
    #[arg(long)]
    pub carry_blocked: bool,
    /// Largest wave (default: plan.max_per_wave, 8).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub max_per_wave: Option<u64>,
    /// Pipeline run directory (default: PREMERGE_RUN_DIR, else <git common dir>/premerge/run).
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
}

/// `classified-NN.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Classified {
    pub attempt: u32,
    pub carry: CarryInfo,
    pub counts: Counts,
    pub findings: Vec<ClassifiedFinding>,
    pub schema_version: u32,
    /// The findings document's shape: `lens`, `reviewer` or `sarif`.
    pub shape: String,
}

/// What carry read, under `carry` in `classified-NN.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CarryInfo {
    /// Most rows admitted: min(MAX_BLOCKED_ON, max_per_wave).
    pub cap: usize,
    pub enabled: bool,
    /// Whether that file existed.
    pub present: bool,
    /// The one file carry reads (`blocked-on-<N-1>.json`), when enabled.
    pub source: Option<String>,
}

/// Path of an attempt's artefact: `<run dir>/<stem>-NN.json`.
pub fn artefact(run_dir: &Path, stem: &str, attempt: u32) -> PathBuf {
    run_dir.join(format!("{stem}-{}.json", store::nn(attempt)))
}

/// The run directory of a command: `--run-dir`, else the environment, else the default.
pub fn run_dir_of(ctx: &Ctx, explicit: Option<&Path>) -> Result<PathBuf> {
    Ok(ctx.run_dir(&ctx.repo()?, explicit))
}

/// Read and validate `fix-waves-NN.json`. Every failure is an error: the fence turns
/// it into a refusal.
pub fn read_plan(run_dir: &Path, attempt: u32) -> Result<waves::WavePlan> {
    let path = artefact(run_dir, "fix-waves", attempt);
    let text = fs::read_to_string(&path).map_err(|e| anyhow!("{}: cannot read the wave plan: {e}", path.display()))?;
    waves::fence::parse_plan(&text, attempt).map_err(|e| anyhow!("{}: {e}", path.display()))
}

/// Read `classified-NN.json`.
pub fn read_classified(run_dir: &Path, attempt: u32) -> Result<Classified> {
    let path = artefact(run_dir, "classified", attempt);
    let text = fs::read_to_string(&path).map_err(|e| anyhow!("{}: cannot read: {e}", path.display()))?;
    let c: Classified =
        serde_json::from_str(&text).map_err(|e| anyhow!("{}: not a classified artefact: {e}", path.display()))?;
    if c.schema_version != waves::SCHEMA_VERSION || c.attempt != attempt {
        bail!("{}: schema_version/attempt are not {}/{attempt}", path.display(), waves::SCHEMA_VERSION);
    }
    Ok(c)
}

/// The file-system half of carry validation: `canonicalize` the repository root and
/// the candidate, then require component-wise containment, no symbolic link on the way
/// (the resolved path must be the lexical one), and a regular file.
pub fn check_path(root_canon: &Path, rel: &str) -> PathCheck {
    let lexical = root_canon.join(rel);
    let real = match fs::canonicalize(&lexical) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A dangling symlink is "not found" by canonicalize; say what it is.
            return match fs::symlink_metadata(&lexical) {
                Ok(_) => PathCheck::Symlinked,
                Err(_) => PathCheck::NotFound,
            };
        }
        Err(_) => return PathCheck::NotFound,
    };
    // Path::starts_with compares whole components, never a string prefix
    // (`/repo-other` is not inside `/repo`).
    if !real.starts_with(root_canon) {
        return PathCheck::Outside;
    }
    let same = real.components().filter(|c| !matches!(c, Component::CurDir)).eq(lexical.components());
    if !same {
        return PathCheck::Symlinked;
    }
    match fs::metadata(&real) {
        Ok(m) if m.is_file() => PathCheck::Regular,
        Ok(_) => PathCheck::NotRegular,
        Err(_) => PathCheck::NotFound,
    }
}

pub fn run(args: Args, ctx: &mut Ctx) -> CmdResult {
    let repo = ctx.repo()?;
    let config = super::load_config(&repo)?;
    let root = repo.require_workdir()?;
    let root_canon = fs::canonicalize(&root).with_context(|| format!("{}: cannot resolve", root.display()))?;
    let run_dir = run_dir_of(ctx, args.run_dir.as_deref())?;
    let max_per_wave = args.max_per_wave.unwrap_or(config.int("plan.max_per_wave")) as usize;
    if max_per_wave == 0 {
        bail!("plan.max_per_wave: must be at least 1");
    }
    let max_findings = config.int("plan.max_findings") as usize;
    let parsed = super::read_findings(ctx, &repo, &config, &args.findings)?;
    let mut classified =
        waves::classify(&parsed.findings, max_findings).map_err(|e| anyhow!("{}: {e}", args.findings.display()))?;

    let cap = waves::MAX_BLOCKED_ON.min(max_per_wave);
    let _lock = store::RunLock::acquire(&run_dir)?;
    let mut carry_info = CarryInfo { enabled: args.carry_blocked, source: None, present: false, cap };
    let mut admitted = 0;
    let mut dropped = BTreeMap::new();
    if args.carry_blocked {
        let prev = args.attempt - 1;
        let path = artefact(&run_dir, "blocked-on", prev);
        carry_info.source = path.file_name().map(|n| n.to_string_lossy().into_owned());
        match fs::read_to_string(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                ctx.warn(format!("blocked_on_artifact_absent: {} does not exist; nothing carried", path.display()));
            }
            Err(e) => {
                carry_info.present = true;
                ctx.warn(format!("{}: cannot read ({e}); nothing carried", path.display()));
                dropped.insert(ARTIFACT_INVALID.to_string(), 1);
            }
            Ok(text) => {
                carry_info.present = true;
                match carry::rows_of(&text, prev) {
                    Err(why) => {
                        ctx.warn(format!("{}: {why}; nothing carried", path.display()));
                        dropped.insert(ARTIFACT_INVALID.to_string(), 1);
                    }
                    Ok(rows) => {
                        let owned = waves::blocker_files(&classified);
                        let outcome = carry::decide(&rows, &owned, cap, &mut |p| check_path(&root_canon, p));
                        if let Some(line) = outcome.summary() {
                            ctx.warn(line);
                        }
                        let base = classified.len();
                        for (i, row) in outcome.admitted.iter().enumerate() {
                            classified.push(waves::synthesise(row, base + i));
                        }
                        admitted = outcome.admitted.len();
                        dropped = outcome.dropped;
                    }
                }
            }
        }
    }
    let plan = waves::plan_waves(args.attempt, max_per_wave, &classified)?;
    let mut counts = waves::count(&classified);
    counts.blocked_on_admitted = admitted;
    counts.blocked_on_dropped = dropped;
    counts.skipped_without_location = parsed.skipped_without_location;
    counts.skipped_outside_repo = parsed.skipped_outside_repo;
    let doc = Classified {
        schema_version: waves::SCHEMA_VERSION,
        attempt: args.attempt,
        shape: format!("{:?}", parsed.shape).to_lowercase(),
        carry: carry_info,
        counts,
        findings: classified,
    };
    // The loop opens before the plan is written: a failure between the two leaves an
    // open loop without this plan, which the fence refuses (fail closed), never a plan
    // the fence does not see.
    super::fix_loop::on_plan(ctx, &repo, &run_dir, args.attempt)?;
    // The plan is written last: a reader that finds fix-waves-NN.json finds the
    // classified-NN.json it was derived from.
    store::atomic_write(&artefact(&run_dir, "classified", args.attempt), waves::to_artefact_json(&doc)?.as_bytes())?;
    store::atomic_write(&artefact(&run_dir, "fix-waves", args.attempt), waves::to_artefact_json(&plan)?.as_bytes())?;
    let line = waves::triage_line(args.attempt, &doc.counts, plan.waves.len());
    store::append_event(
        &run_dir,
        &json!({"kind": "plan", "attempt": args.attempt, "waves": plan.waves.len(),
                "blocker": doc.counts.blocker, "blocked_on_admitted": admitted,
                "blocked_on_dropped": doc.counts.dropped()}),
    )?;
    writeln!(ctx.stdout, "{line}")?;
    Ok(Exit::Ok)
}

/// Demo: plan attempt 1 from a reviewer's findings, record what a fixer was blocked
/// on, plan attempt 2 with carry, show the waves, and fence a change with one stray.
pub fn demo_stage(d: &mut super::demo::DemoRun) -> Result<()> {
    let run_dir = d.run_dir.clone();
    d.write("src/handlers.rs", "pub fn page(limit: u64) -> u64 {\n    limit\n}\n")?;
    d.write("src/ratio.rs", "pub fn clamp(r: f64) -> f64 {\n    r\n}\n")?;
    d.commit("add handlers and ratio helpers")?;
    let findings = r#"[
  {"file":"src/query.rs","line":8,"summary":"set_ratio no longer rejects values outside 0..=1","failure_scenario":"a ratio of 7 is stored","category":"correctness"},
  {"file":"src/query.rs","line":3,"summary":"limit: u64 lets a caller ask for 2^64 rows","failure_scenario":"one request scans the table"},
  {"file":"README.md","line":1,"summary":"title could name the crate","failure_scenario":"cosmetic","category":"docs"}
]
"#;
    d.write("review/findings-01.json", findings)?;
    d.commit("review findings of attempt 1")?;
    let plan = |attempt: u32, carry_blocked: bool, run_dir: &Path| Args {
        attempt,
        findings: PathBuf::from("review/findings-01.json"),
        carry_blocked,
        max_per_wave: None,
        run_dir: Some(run_dir.to_path_buf()),
    };
    d.say("$ premerge plan --attempt 1 --findings review/findings-01.json")?;
    let a1 = plan(1, false, &run_dir);
    d.with_ctx(b"", |c| run(a1, c).map(|_| ()))?;

    d.say("$ echo '{\"blocked_on_file\":[...]}' | premerge blocked record --attempt 1 --from-file src/query.rs")?;
    let ret = br#"{"status":"partial","blocked_on_file":[
        {"file":"src/handlers.rs","reason":"page() must clamp the wider limit"},
        {"file":"../../etc/passwd","reason":"hostile row, dropped at carry"}]}"#;
    let rec = super::blocked::Cmd::Record(super::blocked::RecordArgs {
        attempt: 1,
        from_file: "src/query.rs".into(),
        run_dir: Some(run_dir.clone()),
    });
    d.with_ctx(ret, |c| super::blocked::run(rec, c).map(|_| ()))?;

    d.say("$ premerge plan --attempt 2 --findings review/findings-01.json --carry-blocked")?;
    let a2 = plan(2, true, &run_dir);
    d.with_ctx(b"", |c| run(a2, c).map(|_| ()))?;

    d.say("$ premerge show waves --attempt 2 --format markdown")?;
    let show = super::show::Cmd::Waves(super::show::WavesArgs {
        attempt: 2,
        format: super::show::Format::Markdown,
        run_dir: Some(run_dir.clone()),
    });
    d.with_ctx(b"", |c| super::show::run(show, c).map(|_| ()))?;

    d.write("src/query.rs", "pub struct Query {\n    pub limit: u32,\n}\n")?;
    d.write("src/ratio.rs", "pub fn clamp(r: f64) -> f64 {\n    r.clamp(0.0, 1.0)\n}\n")?;
    d.say("$ premerge fence check --attempt 2 --worktree   # src/ratio.rs is nobody's file")?;
    let check = super::fence::Cmd::Check(super::fence::CheckArgs {
        attempt: 2,
        worktree: true,
        run_dir: Some(run_dir),
        ..Default::default()
    });
    let exit = d.with_ctx(b"", |c| super::fence::run(check, c))?;
    d.say(format!("fence exit code: {} (1 = refused)", exit.code()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classified_serialises_canonically() {
        let mut counts = Counts::default();
        counts.blocked_on_dropped.insert("over_cap".into(), 2);
        let doc = Classified {
            schema_version: 1,
            attempt: 2,
            shape: "reviewer".into(),
            carry: CarryInfo { enabled: true, source: Some("blocked-on-01.json".into()), present: true, cap: 8 },
            counts,
            findings: Vec::new(),
        };
        assert_eq!(waves::to_artefact_json(&doc).unwrap(), crate::canonical::to_pretty(&doc).unwrap());
    }
}
