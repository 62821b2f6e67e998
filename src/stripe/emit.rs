//! Emitting refinement proposals: the stripe of some evidence, the open-stripe halt,
//! the generator of a suggested change, and premerge's own signals ([`emit_own_signal`],
//! called by scan, review, fence and converge). Files are written through
//! [`crate::store::proposals`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use serde::Serialize;
use serde_json::{Value, json};

use crate::config::{Config, Mode};
use crate::context::Ctx;
use crate::error::input_error;
use crate::git::Repo;
use crate::store;
use crate::store::proposals::{ROOT_LOCK_WAIT, ensure_root, find_open, write_new};
use crate::stripe::proposal::{self as doc, ProposalDoc};
use crate::stripe::{ALGORITHM, Evidence, Projection, StripeId, project, validate_scope, validate_signal};

/// The external generator of a proposal's suggested change: an argv template (no
/// shell) with `{stripe}`, `{scope}`, `{signal}` placeholders, fed the evidence as
/// JSON on stdin; its stdout becomes `## Suggested change`.
#[derive(Debug, Clone)]
pub struct GeneratorCfg {
    pub argv: Vec<String>,
    pub timeout: Duration,
}

impl GeneratorCfg {
    /// The configured generator, `None` when `proposal.generator_command` is empty.
    pub(crate) fn from_config(cfg: &Config) -> Option<GeneratorCfg> {
        let argv = &cfg.proposal.generator_command;
        (!argv.is_empty()).then(|| GeneratorCfg {
            argv: argv.to_vec(),
            timeout: Duration::from_millis(cfg.proposal.generator_timeout_ms),
        })
    }
}

/// What emitting decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A new proposal was written; the workflow goes on.
    Emitted,
    /// A proposal of this stripe is still open; the workflow should halt for a human.
    StripeRepeatHalt,
    /// No evidence row qualified; nothing written, nothing logged (`reason` says why).
    Suppressed,
    /// One of premerge's own signals observed again on unchanged state: the same stripe
    /// with the same evidence rows was already recorded. Nothing written, nothing logged.
    AlreadyRecorded,
}

/// The result of [`emit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmitOutcome {
    pub outcome: Outcome,
    /// The stripe (none when suppressed).
    pub stripe: Option<StripeId>,
    /// The new proposal (emitted) or the open one (halt).
    pub path: Option<PathBuf>,
    /// Things the caller may want to show (a generator that failed, ...).
    pub warnings: Vec<String>,
    /// The halt authority's mode this decision was made in.
    pub mode: Mode,
    /// Why nothing was emitted (suppressed): `no_qualifying_rows`, with the counts.
    pub reason: Option<Value>,
}

impl EmitOutcome {
    /// Whether the workflow must stop: a repeat under an enforced halt.
    pub fn halts(&self) -> bool {
        self.outcome == Outcome::StripeRepeatHalt && self.mode == Mode::Enforce
    }

    /// The `{"outcome","stripe","path"}` object printed by `premerge proposal emit`
    /// (with `reason` when suppressed).
    pub(crate) fn to_json(&self) -> Value {
        let mut v = json!({
            "outcome": self.outcome,
            "stripe": self.stripe.as_ref().map(|s| s.to_string()),
            "path": self.path.as_ref().map(|p| p.display().to_string()),
        });
        if let Some(r) = &self.reason {
            v["reason"] = r.clone();
        }
        v
    }
}

/// Emit a proposal for `signal` under `scope` from evidence `rows`, or halt when the
/// stripe is already open under `root`. Events go to `<events_dir>/events.jsonl`.
///
/// Errors (bad scope or signal, rows that are not objects or lack an `id`, a root that
/// is a file, I/O) leave nothing written. A generator that fails is a warning and the
/// deterministic outline is used instead. The halt authority is in `mode`: `enforce`
/// halts on a repeat, `shadow` decides and logs the halt (event field `mode:
/// "shadow"`, ignored by drain) but [`EmitOutcome::halts`] is false, `off` skips the
/// open-stripe check so every emission writes a proposal (the behaviour without
/// stripes).
#[allow(clippy::too_many_arguments)]
pub fn emit(
    root: &Path,
    events_dir: &Path,
    scope: &str,
    signal: &str,
    rows: &[Value],
    workflow: Option<&str>,
    generator: Option<&GeneratorCfg>,
    mode: Mode,
) -> Result<EmitOutcome> {
    validate_scope(scope).map_err(|e| input_error("--scope", e))?;
    validate_signal(signal).map_err(|e| input_error("--signal", e))?;
    let evidence = Evidence::from_rows(rows).map_err(|e| input_error("evidence", e))?;
    let projection = project(signal, &evidence);
    let mut warnings = Vec::new();
    if projection.ignored > 0 {
        warnings.push(ignored_warning(signal, &projection));
    }
    if projection.is_empty() {
        let fields = crate::stripe::projection::projection_fields(signal);
        let reason = json!({
            "code": "no_qualifying_rows",
            "rows": evidence.rows.len(),
            "ignored": projection.ignored,
            "required_fields": fields,
        });
        return Ok(EmitOutcome {
            outcome: Outcome::Suppressed,
            stripe: None,
            path: None,
            warnings,
            mode,
            reason: Some(reason),
        });
    }
    let stripe = StripeId::compute(scope, &projection).map_err(|e| input_error("stripe", e))?;
    let open_dir = ensure_root(root)?;
    let check = |root: &Path| if mode == Mode::Off { Ok(None) } else { find_open(root, &stripe) };
    // Fast path without the lock: a repeat halts without running the generator.
    if let Some(existing) = check(root)? {
        return halt(events_dir, &stripe, &projection, existing, workflow, mode);
    }
    let (suggested, by) = match generator.map(|g| generate(g, &stripe, &projection, workflow)) {
        Some(Ok(text)) => (text, "generator"),
        Some(Err(e)) => {
            warnings.push(format!("proposal generator: {e:#}; using the deterministic outline"));
            (doc::outline(&stripe, &projection), "outline")
        }
        None => (doc::outline(&stripe, &projection), "outline"),
    };
    let _lock = store::RunLock::acquire_dir(&open_dir, "proposal lock", ROOT_LOCK_WAIT)?;
    // Checked again under the lock: of two racing emitters exactly one writes.
    if let Some(existing) = check(root)? {
        return halt(events_dir, &stripe, &projection, existing, workflow, mode).map(|mut o| {
            o.warnings.extend(warnings);
            o
        });
    }
    let created = store::now_rfc3339();
    let text = doc::render(&ProposalDoc {
        stripe: &stripe,
        projection: &projection,
        created: &created,
        workflow,
        suggested_change: &suggested,
        suggested_by: by,
    });
    let path = write_new(root, &stripe, &doc::file_timestamp(store::now()), text.as_bytes())?;
    let ids: Vec<&str> = projection.contributing.iter().map(|c| c.row_id.as_str()).collect();
    store::append_event(
        events_dir,
        &crate::events::Event::ProposalEmitted {
            stripe: stripe.to_string(),
            scope: scope.to_string(),
            signal: signal.to_string(),
            algorithm: ALGORITHM.to_string(),
            evidence_row_ids: ids.iter().map(|s| s.to_string()).collect(),
            proposal_path: path.display().to_string(),
            workflow_id: workflow.map(str::to_string),
        },
    )?;
    Ok(EmitOutcome { outcome: Outcome::Emitted, stripe: Some(stripe), path: Some(path), warnings, mode, reason: None })
}

/// The warning of evidence rows that lack the fields the signal projects: counted and
/// said, never suppressed silently.
fn ignored_warning(signal: &str, p: &Projection) -> String {
    let fields = crate::stripe::projection::projection_fields(signal);
    format!(
        "{} evidence row(s) without the fields signal `{signal}` projects ({}) were ignored",
        p.ignored,
        fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
    )
}

/// The outcome already recorded in `events` for `stripe` with exactly the evidence row
/// ids `ids` (an emission, or a halt whose proposal is still open), if any. Premerge's own
/// signals name their rows after the observation (`attempt-02:<fingerprint>`), so the
/// same ids mean the same observation: a read on unchanged state, not a recurrence.
fn recorded_observation(events: &[Value], stripe: &StripeId, ids: &[&str], mode: Mode) -> Option<EmitOutcome> {
    let mut want: Vec<&str> = ids.to_vec();
    want.sort_unstable();
    want.dedup();
    let stripe_s = stripe.to_string();
    for ev in events.iter().rev() {
        if ev.get("stripe").and_then(Value::as_str) != Some(stripe_s.as_str()) {
            continue;
        }
        let (ids_key, path_key, outcome) = match ev.get("kind").and_then(Value::as_str) {
            Some("refinement_proposal_emitted") => ("evidence_row_ids", "proposal_path", Outcome::AlreadyRecorded),
            Some("stripe_repeat_halt") => ("new_evidence_row_ids", "existing_proposal_path", Outcome::StripeRepeatHalt),
            _ => continue,
        };
        let mut got: Vec<&str> = ev
            .get(ids_key)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        got.sort_unstable();
        got.dedup();
        if got != want {
            continue;
        }
        let path = ev.get(path_key).and_then(Value::as_str).map(PathBuf::from);
        // A recorded halt stands while its proposal is open; once resolved, the same
        // observation is simply already recorded.
        let outcome = match (outcome, &path) {
            (Outcome::StripeRepeatHalt, Some(p)) if p.is_file() => Outcome::StripeRepeatHalt,
            (Outcome::StripeRepeatHalt, _) => Outcome::AlreadyRecorded,
            (o, _) => o,
        };
        let recorded_mode = match ev.get("mode").and_then(Value::as_str) {
            Some("shadow") => Mode::Shadow,
            _ => mode,
        };
        return Some(EmitOutcome {
            outcome,
            stripe: Some(stripe.clone()),
            path,
            warnings: Vec::new(),
            mode: recorded_mode,
            reason: None,
        });
    }
    None
}

/// [`emit`] with the root, run directory and generator of a repository's configuration.
pub(crate) fn emit_for_repo(
    repo: &Repo,
    cfg: &Config,
    events_dir: &Path,
    scope: &str,
    signal: &str,
    rows: &[Value],
    workflow: Option<&str>,
) -> Result<EmitOutcome> {
    let root = signal_root(repo, cfg, events_dir)?;
    let generator = GeneratorCfg::from_config(cfg);
    let mode = cfg.proposal.halt_mode;
    // Idempotent reads: the same observation (stripe and row ids) seen again on
    // unchanged state answers what was recorded, and records nothing new.
    if mode != Mode::Off
        && let Ok(evidence) = Evidence::from_rows(rows)
        && validate_scope(scope).is_ok()
        && validate_signal(signal).is_ok()
    {
        let projection = project(signal, &evidence);
        if !projection.is_empty()
            && let Ok(stripe) = StripeId::compute(scope, &projection)
        {
            let ids: Vec<&str> = projection.contributing.iter().map(|c| c.row_id.as_str()).collect();
            if let Some(o) = recorded_observation(&store::read_events(events_dir)?, &stripe, &ids, mode) {
                return Ok(o);
            }
        }
    }
    emit(&root, events_dir, scope, signal, rows, workflow, generator.as_ref(), mode)
}

/// Where premerge's own signals keep their proposals: `proposal.signal_root` relative to
/// the repository root, or by default `<run dir>/proposals`. The default is outside the
/// working tree on purpose: a proposal written during an attempt must never show up as
/// a changed path that the commit fence would have to refuse.
pub fn signal_root(repo: &Repo, cfg: &Config, run_dir: &Path) -> Result<PathBuf> {
    match cfg.proposal.signal_root.as_str() {
        "" => Ok(run_dir.join("proposals")),
        _ => crate::store::contain::config_root(
            repo,
            cfg,
            "proposal.signal_root",
            cfg.proposal.signal_root.as_str(),
            "git config premerge.proposal.signalRoot",
        ),
    }
}

/// Emit one of premerge's own signals from inside another command (review seams,
/// recurring blockers, fence violations, repeated widening). The stripe halt is an
/// authority, but a proposal store that cannot be written must not break the step
/// that noticed the signal: an error becomes a warning and `None` (fail open), and the
/// caller reports the outcome beside its own result.
pub(crate) fn emit_own_signal(
    ctx: &mut Ctx,
    repo: &Repo,
    cfg: &Config,
    events_dir: &Path,
    scope: &str,
    signal: &str,
    rows: &[Value],
) -> Option<EmitOutcome> {
    match emit_for_repo(repo, cfg, events_dir, scope, signal, rows, None) {
        Ok(o) => {
            for w in &o.warnings {
                ctx.warn(format!("proposal {scope}:{signal}: {w}"));
            }
            if o.halts() {
                ctx.warn(format!(
                    "stripe {} repeats while its proposal is open ({}): halt for a human (premerge drain)",
                    o.stripe.as_ref().map(|s| s.to_string()).unwrap_or_default(),
                    o.path.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
                ));
            }
            Some(o)
        }
        Err(e) => {
            ctx.warn(format!("proposal {scope}:{signal}: {e:#} (signal not recorded)"));
            None
        }
    }
}

fn halt(
    events_dir: &Path,
    stripe: &StripeId,
    projection: &Projection,
    existing: PathBuf,
    workflow: Option<&str>,
    mode: Mode,
) -> Result<EmitOutcome> {
    let ids: Vec<&str> = projection.contributing.iter().map(|c| c.row_id.as_str()).collect();
    store::append_event(
        events_dir,
        &crate::events::Event::StripeRepeatHalt {
            stripe: stripe.to_string(),
            existing_proposal_path: existing.display().to_string(),
            new_evidence_row_ids: ids.iter().map(|s| s.to_string()).collect(),
            halted_workflow_id: workflow.map(str::to_string),
            mode,
        },
    )?;
    Ok(EmitOutcome {
        outcome: Outcome::StripeRepeatHalt,
        stripe: Some(stripe.clone()),
        path: Some(existing),
        warnings: Vec::new(),
        mode,
        reason: None,
    })
}

fn generate(g: &GeneratorCfg, stripe: &StripeId, p: &Projection, workflow: Option<&str>) -> Result<String> {
    let mut vals = BTreeMap::new();
    vals.insert("stripe", stripe.to_string());
    vals.insert("scope", stripe.scope().to_string());
    vals.insert("signal", stripe.signal().to_string());
    let argv = crate::exec::render(&g.argv, &vals);
    let rows: Vec<Value> = p.contributing.iter().map(|c| json!({"id": c.row_id, "summary": c.summary})).collect();
    let input = crate::canonical::to_pretty(&json!({
        "stripe": stripe.to_string(),
        "scope": stripe.scope(),
        "signal": stripe.signal(),
        "algorithm": ALGORITHM,
        "items": p.items,
        "rows": rows,
        "workflow_id": workflow,
    }))?;
    let out = crate::exec::run(&argv, input.as_bytes(), g.timeout)?;
    let text = String::from_utf8(out.stdout).map_err(|_| anyhow!("output is not UTF-8"))?;
    if text.trim().is_empty() {
        bail!("printed nothing");
    }
    Ok(text.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_emit_suppresses_emits_then_halts() {
        let d = tempfile::tempdir().unwrap();
        let (root, events) = (d.path().join("proposals"), d.path().join("run"));
        let none = emit(&root, &events, "premerge", "fence_violation", &[json!({"id": 1})], None, None, Mode::Enforce)
            .unwrap();
        assert_eq!((none.outcome, none.stripe, none.path), (Outcome::Suppressed, None, None));
        let rows = [json!({"id": "a", "path": "src/x.rs"}), json!({"id": "b", "path": "src/y.rs"})];
        let first = emit(&root, &events, "premerge", "fence_violation", &rows, Some("w"), None, Mode::Enforce).unwrap();
        assert_eq!(first.outcome, Outcome::Emitted);
        let path = first.path.clone().unwrap();
        assert!(path.starts_with(root.join("open")) && path.is_file());
        assert_eq!(find_open(&root, first.stripe.as_ref().unwrap()).unwrap(), Some(path.clone()));
        let rows = [json!({"id": "c", "path": "src/y.rs"}), json!({"id": "d", "path": "src/x.rs"})];
        let again = emit(&root, &events, "premerge", "fence_violation", &rows, None, None, Mode::Enforce).unwrap();
        assert_eq!((again.outcome, again.path), (Outcome::StripeRepeatHalt, Some(path)));
        assert_eq!(again.stripe, first.stripe);
        let kinds: Vec<String> =
            store::read_events(&events).unwrap().iter().map(|e| e["kind"].as_str().unwrap().to_string()).collect();
        assert_eq!(kinds, ["refinement_proposal_emitted", "stripe_repeat_halt"]);
        assert!(emit(&root, &events, "premerge", "fence_violation", &[json!("x")], None, None, Mode::Enforce).is_err());
    }
}
