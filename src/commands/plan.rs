//! `premerge plan`: classify an attempt's findings, carry the previous attempt's
//! blocked-on rows, and write `classified-NN.json` and `fix-waves-NN.json`.
//!
//! The artefact paths and readers the fixer-wave commands share live in
//! [`crate::store::run_dir`].

use std::collections::BTreeMap;
use std::fs;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};

use super::Ctx;
use crate::error::{CmdResult, Exit};
use crate::store;
use crate::store::run_dir::{CarryInfo, Classified, artefact, read_classified};
use crate::waves::carry::{self, ARTIFACT_INVALID, PathCheck};
use crate::waves::{self, ClassifiedFinding};

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
    /// Pipeline run directory (default: PREMERGE_RUN_DIR, else a fresh
    /// <git common dir>/premerge/loops/<loop id>/ at attempt 1 and this worktree's
    /// loop's run directory after it).
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
    /// Refuse the whole findings file (exit 2) on its first malformed finding or path
    /// outside the repository, instead of dropping and counting it.
    #[arg(long)]
    pub strict: bool,
}

/// What a `--strict` refusal tells the user to do next.
const STRICT_HINT: &str = "fix the finding, or plan without --strict to drop and count it";

/// Most dropped findings named one by one on stderr; the artefact lists them all.
const MAX_DROP_LINES: usize = 20;

/// The file-system half of carry validation: `canonicalize` the repository root and
/// the candidate, then require component-wise containment, no symbolic link on the way
/// (the resolved path must be the lexical one), and a regular file.
pub(crate) fn check_path(root_canon: &Path, rel: &str) -> PathCheck {
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

/// Every suggestion of attempts 1..`attempt` (by fingerprint, first seen wins) that
/// `current` does not already hold: the carry of suggestions, which walks every earlier
/// attempt because a suggestion is never fixed by the loop. An earlier attempt whose
/// classified file is missing or unreadable is named in a warning and skipped.
fn carry_suggestions(
    ctx: &mut Ctx,
    run_dir: &camino::Utf8Path,
    attempt: u32,
    current: &[ClassifiedFinding],
) -> Vec<waves::CarriedSuggestion> {
    let mut seen: std::collections::HashSet<String> = current.iter().map(|f| f.fingerprint.clone()).collect();
    let mut out = Vec::new();
    for k in 1..attempt {
        let c = match read_classified(run_dir, k) {
            Ok(c) => c,
            Err(e) if artefact(run_dir, "classified", k).exists() => {
                ctx.warn(format!("suggestions of attempt {k} not carried: {e:#}"));
                continue;
            }
            Err(_) => continue,
        };
        let earlier =
            c.findings.iter().filter(|f| f.severity == waves::Severity::Suggestion).map(|f| waves::CarriedSuggestion {
                attempt: k,
                category: f.category.clone(),
                failure_scenario: f.failure_scenario.clone(),
                file: f.file.clone(),
                fingerprint: f.fingerprint.clone(),
                line: f.line,
                summary: f.summary.clone(),
            });
        for s in earlier.chain(c.carried_suggestions) {
            if seen.insert(s.fingerprint.clone()) {
                out.push(s);
            }
        }
    }
    out
}

pub fn run(args: Args, ctx: &mut Ctx) -> CmdResult {
    let repo = ctx.repo()?;
    let config = super::load_config(&repo)?;
    let root = repo.require_workdir()?;
    let root_canon = fs::canonicalize(&root).with_context(|| format!("{}: cannot resolve", root.display()))?;
    // A loop owns its run directory: without one given, attempt 1 opens a loop in a
    // fresh directory and a later attempt continues in this worktree's loop's.
    let place = crate::store::fix_loop::LoopPlace::of_repo(&repo);
    let (run_dir, fresh_id) = match crate::store::fix_loop::given_run_dir(args.run_dir.as_deref()) {
        Some(_) => (ctx.run_dir(&repo, args.run_dir.as_deref())?, None),
        None => {
            let p = crate::store::fix_loop::plan_run_dir(&place, args.attempt)?;
            (store::run_dir::utf8_path(p.run_dir, "run directory")?, p.fresh_id)
        }
    };
    let max_per_wave = args.max_per_wave.unwrap_or(config.plan.max_per_wave) as usize;
    if max_per_wave == 0 {
        bail!("plan.max_per_wave: must be at least 1");
    }
    let max_findings = config.plan.max_findings as usize;
    let name = args.findings.display().to_string();
    let mut parsed = super::read_findings_as(ctx, &repo, &config, &args.findings, !args.strict)
        .map_err(|e| if args.strict { anyhow!("{e:#} ({STRICT_HINT})") } else { e })?;
    // Dropped and counted, never fatal (unless --strict): one malformed record from a
    // reviewer must not cost the attempt.
    let mut dropped_findings: Vec<waves::DroppedFinding> = parsed
        .dropped
        .iter()
        .map(|d| waves::DroppedFinding { detail: d.detail.clone(), index: d.index, reason: d.reason.to_string() })
        .collect();
    // One owner per real file: every path in its one canonical name, inside the repository.
    let (kept, path_drops) =
        crate::findings::canonical::canonicalise_findings(&root_canon, std::mem::take(&mut parsed.findings));
    if let (true, Some(d)) = (args.strict, path_drops.first()) {
        bail!("{name}: {} ({STRICT_HINT})", d.detail);
    }
    dropped_findings.extend(path_drops);
    parsed.findings = kept;
    let mut classified = if args.strict {
        waves::classify(&parsed.findings, max_findings).map_err(|e| anyhow!("{name}: {e} ({STRICT_HINT})"))?
    } else {
        let (c, d) = waves::classify_lenient(&parsed.findings, max_findings).map_err(|e| anyhow!("{name}: {e}"))?;
        dropped_findings.extend(d);
        c
    };
    dropped_findings.sort_by_key(|d| d.index);
    let mut findings_dropped: BTreeMap<String, usize> = BTreeMap::new();
    for d in &dropped_findings {
        *findings_dropped.entry(d.reason.clone()).or_default() += 1;
    }
    if !dropped_findings.is_empty() {
        let parts: Vec<String> = findings_dropped.iter().map(|(k, v)| format!("{k}={v}")).collect();
        ctx.warn(format!("{name}: dropped {} finding(s): {}", dropped_findings.len(), parts.join(" ")));
        for d in dropped_findings.iter().take(MAX_DROP_LINES) {
            ctx.warn(format!("{name}: {}: {}", d.reason, d.detail));
        }
    }

    let cap = waves::MAX_BLOCKED_ON.min(max_per_wave);
    let _lock = store::RunLock::acquire(run_dir.as_std_path())?;
    let mut carry_info = CarryInfo { enabled: args.carry_blocked, source: None, present: false, cap };
    let mut admitted = 0;
    let mut joined = 0;
    let mut dropped = BTreeMap::new();
    // Attempt 1 has no predecessor: there is nothing to carry and nothing to say about
    // it (a pipeline passes --carry-blocked on every attempt).
    if args.carry_blocked && args.attempt > 1 {
        let prev = args.attempt - 1;
        let path = artefact(&run_dir, "blocked-on", prev);
        carry_info.source = path.file_name().map(str::to_string);
        match store::run_dir::read_blocked_on(path.as_std_path()) {
            Ok(None) => {
                ctx.warn(format!("blocked_on_artifact_absent: {path} does not exist; nothing carried"));
            }
            Err(e) => {
                carry_info.present = true;
                ctx.warn(format!("{e}; nothing carried"));
                dropped.insert(ARTIFACT_INVALID.to_string(), 1);
            }
            Ok(Some(text)) => {
                carry_info.present = true;
                match carry::rows_of(&text, prev) {
                    Err(why) => {
                        ctx.warn(format!("{path}: {why}; nothing carried"));
                        dropped.insert(ARTIFACT_INVALID.to_string(), 1);
                    }
                    Ok(rows) => {
                        let owned = waves::blocker_files(&classified);
                        let outcome = carry::decide(&rows, &owned, cap, &mut |p| check_path(&root_canon, p));
                        if let Some(line) = outcome.summary() {
                            ctx.warn(line);
                        }
                        let base = classified.len();
                        let rows: Vec<carry::CarryRow> =
                            outcome.admitted.iter().chain(&outcome.joined).cloned().collect();
                        classified.extend(waves::synthesise_all(&rows, base));
                        admitted = outcome.admitted.len();
                        joined = outcome.joined.len();
                        dropped = outcome.dropped;
                    }
                }
            }
        }
    }
    let plan = waves::plan_waves(args.attempt, max_per_wave, &classified)?;
    let carried_suggestions = carry_suggestions(ctx, &run_dir, args.attempt, &classified);
    let mut counts = waves::count(&classified);
    counts.blocked_on_admitted = admitted;
    counts.blocked_on_joined = joined;
    counts.findings_dropped = findings_dropped;
    counts.suggestions_carried = carried_suggestions.len();
    counts.blocked_on_dropped = dropped;
    counts.skipped_without_location = parsed.skipped_without_location;
    counts.skipped_outside_repo = parsed.skipped_outside_repo;
    let doc = Classified {
        schema_version: waves::SCHEMA_VERSION,
        attempt: args.attempt,
        shape: format!("{:?}", parsed.shape).to_lowercase(),
        carry: carry_info,
        counts,
        carried_suggestions,
        dropped_findings,
        findings: classified,
    };
    // The loop opens before the plan is written: a failure between the two leaves an
    // open loop without this plan, which the fence refuses (fail closed), never a plan
    // the fence does not see.
    crate::store::fix_loop::on_plan(ctx.stderr, &place, run_dir.as_std_path(), args.attempt, fresh_id)?;
    // The plan is written last: a reader that finds fix-waves-NN.json finds the
    // classified-NN.json it was derived from.
    store::atomic_write(
        artefact(&run_dir, "classified", args.attempt).as_std_path(),
        waves::to_artefact_json(&doc)?.as_bytes(),
    )?;
    store::atomic_write(
        artefact(&run_dir, "fix-waves", args.attempt).as_std_path(),
        waves::to_artefact_json(&plan)?.as_bytes(),
    )?;
    let line = waves::triage_line(args.attempt, &doc.counts, plan.waves.len());
    store::append_event(
        run_dir.as_std_path(),
        &crate::events::Event::Plan {
            attempt: args.attempt,
            waves: plan.waves.len(),
            blocker: doc.counts.blocker,
            blocked_on_admitted: admitted,
            blocked_on_dropped: doc.counts.dropped(),
            blocked_on_joined: joined,
            blocked_on_dropped_reasons: doc.counts.blocked_on_dropped.clone(),
            findings_dropped: doc.counts.findings_dropped.clone(),
            suggestions_carried: doc.counts.suggestions_carried,
        },
    )?;
    if waves::fences_everything(&doc.counts, plan.waves.len()) {
        ctx.warn(format_args!(
            "plan: every finding of attempt {} was dropped as invalid: the allowed set is empty, so while the fix loop is open its fence refuses every changed path (fix the findings and plan again, or premerge loop close)",
            args.attempt
        ));
    }
    writeln!(ctx.stdout, "{line}")?;
    Ok(Exit::Ok)
}

/// Demo: plan attempt 1 from a reviewer's findings, record what a fixer was blocked
/// on, plan attempt 2 with carry, show the waves, and fence a change with one stray.
pub(crate) fn demo_stage(d: &mut super::DemoRun) -> Result<()> {
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
        strict: false,
    };
    d.say("$ premerge plan --attempt 1 --findings review/findings-01.json")?;
    let a1 = plan(1, false, &run_dir);
    d.with_ctx(b"", |c| run(a1, c).map(|_| ()))?;

    d.say("$ echo '{\"blocked_on_file\":[...]}' | premerge blocked record --attempt 1 --from-file src/query.rs")?;
    let ret = br#"{"status":"partial","blocked_on_file":[
        {"file":"src/handlers.rs","reason":"page() must clamp the wider limit"},
        {"file":"../../etc/passwd","reason":"hostile row, dropped at carry"}]}"#;
    let dir = run_dir.to_string_lossy().into_owned();
    d.cli(ret, &["blocked", "record", "--attempt", "1", "--from-file", "src/query.rs", "--run-dir", &dir])?;

    d.say("$ premerge plan --attempt 2 --findings review/findings-01.json --carry-blocked")?;
    let a2 = plan(2, true, &run_dir);
    d.with_ctx(b"", |c| run(a2, c).map(|_| ()))?;

    d.say("$ premerge show waves --attempt 2 --format markdown")?;
    d.cli(b"", &["show", "waves", "--attempt", "2", "--format", "markdown", "--run-dir", &dir])?;

    d.write("src/query.rs", "pub struct Query {\n    pub limit: u32,\n}\n")?;
    d.write("src/ratio.rs", "pub fn clamp(r: f64) -> f64 {\n    r.clamp(0.0, 1.0)\n}\n")?;
    d.say("$ premerge fence check --attempt 2 --worktree   # src/ratio.rs is nobody's file")?;
    let exit = d.cli(b"", &["fence", "check", "--attempt", "2", "--worktree", "--run-dir", &dir])?;
    d.say(format!("fence exit code: {} (1 = refused)", exit.code()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waves::Counts;

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
            carried_suggestions: Vec::new(),
            dropped_findings: Vec::new(),
            findings: Vec::new(),
        };
        assert_eq!(waves::to_artefact_json(&doc).unwrap(), crate::canonical::to_pretty(&doc).unwrap());
    }
}
