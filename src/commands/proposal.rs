//! `premerge proposal`: emit a refinement proposal under its stripe (or halt when the
//! stripe is already open), and the operator's `list`, `show`, `apply`, `reject`.
//!
//! This file is also the file-system edge of stripes that other areas call to emit
//! their own signals: [`emit`] (explicit root and event directory) and
//! [`emit_for_repo`] / [`emit_own_signal`] (premerge's own signals: root
//! `proposal.signal_root`, generator and halt mode from the repository's configuration).
//! The pure side (ids, projections, documents) is `crate::stripe`.
//!
//! Layout: `<root>/{open,applied,rejected}/<stripe with / as -->-<YYYYMMDDTHHMMSSZ>[-N].md`.
//! Only `open/` is consulted by the stripe check, so a resolved stripe fires again
//! when its problem recurs. Events (`refinement_proposal_emitted`,
//! `stripe_repeat_halt`, `proposal_applied`, `proposal_rejected`) are appended to
//! `events.jsonl` of the repository's run directory, where `premerge drain` reads them.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use serde::Serialize;
use serde_json::{Value, json};

use super::Ctx;
use crate::config::{Config, Mode};
use crate::error::{CmdResult, Exit, input_error};
use crate::git::Repo;
use crate::store;
use crate::stripe::proposal::{self as doc, ProposalDoc};
use crate::stripe::{ALGORITHM, Evidence, Projection, StripeId, project, validate_scope, validate_signal};

/// The three proposal folders, in listing order.
pub const STATES: [&str; 3] = ["open", "applied", "rejected"];

/// How long a writer waits for another writer of the same proposal root: writing
/// one proposal takes milliseconds, so waiting as long as a run-directory lock is ample.
pub const ROOT_LOCK_WAIT: Duration = store::LOCK_WAIT;

#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Compute the stripe of some evidence and write a proposal, or halt (exit 1)
    /// when a proposal of that stripe is still open.
    Emit(EmitArgs),
    /// List open, applied and rejected proposals with their stripes and ages.
    List(ListArgs),
    /// Print a proposal (ID: a stripe id or a proposal's file name).
    Show(IdArgs),
    /// Mark an open proposal applied (moves it to applied/).
    Apply(IdArgs),
    /// Reject an open proposal: append the rationale and move it to rejected/.
    Reject(RejectArgs),
}

#[derive(Debug, Default, clap::Args)]
pub struct RootArgs {
    /// Proposal root (default: config `proposal.root`, relative to the repository root).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Run directory whose events.jsonl records proposal events.
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct EmitArgs {
    /// Scope of the stripe: [a-z0-9_-]+, optionally /another-segment.
    #[arg(long)]
    pub scope: String,
    /// Signal name: a letter or digit, then [A-Za-z0-9_-] (e.g. repeat_seam, TRACE-001).
    #[arg(long)]
    pub signal: String,
    /// JSON array of evidence rows (or {"rows": [...]}); `-` reads stdin.
    #[arg(long, value_name = "FILE")]
    pub evidence: PathBuf,
    /// Workflow id recorded in the proposal and in a halt event.
    #[arg(long, value_name = "ID")]
    pub workflow: Option<String>,
    #[command(flatten)]
    pub root: RootArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub root: RootArgs,
}

#[derive(Debug, clap::Args)]
pub struct IdArgs {
    /// A stripe id or a proposal's file name.
    pub id: String,
    #[command(flatten)]
    pub root: RootArgs,
}

#[derive(Debug, clap::Args)]
pub struct RejectArgs {
    /// A stripe id or a proposal's file name.
    pub id: String,
    /// Why the proposal is rejected (appended as `## Rejection rationale`).
    #[arg(long)]
    pub reason: String,
    #[command(flatten)]
    pub root: RootArgs,
}

// ---------------------------------------------------------------------------
// Library API

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
    pub fn from_config(cfg: &Config) -> Option<GeneratorCfg> {
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
    pub fn to_json(&self) -> Value {
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
/// deterministic outline is used instead. The halt is enforced; see [`emit_in_mode`].
pub fn emit(
    root: &Path,
    events_dir: &Path,
    scope: &str,
    signal: &str,
    rows: &[Value],
    workflow: Option<&str>,
    generator: Option<&GeneratorCfg>,
) -> Result<EmitOutcome> {
    emit_in_mode(root, events_dir, scope, signal, rows, workflow, generator, Mode::Enforce)
}

/// [`emit`] with the halt authority in `mode`: `enforce` halts on a repeat, `shadow`
/// decides and logs the halt (event field `mode: "shadow"`, ignored by drain) but
/// [`EmitOutcome::halts`] is false, `off` skips the open-stripe check so every
/// emission writes a proposal (the behaviour without stripes).
#[allow(clippy::too_many_arguments)]
pub fn emit_in_mode(
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
    let _lock = DirLock::acquire(&open_dir, ROOT_LOCK_WAIT)?;
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
        &json!({
            "kind": "refinement_proposal_emitted",
            "stripe": stripe.to_string(),
            "scope": scope,
            "signal": signal,
            "algorithm": ALGORITHM,
            "evidence_row_ids": ids,
            "proposal_path": path.display().to_string(),
            "workflow_id": workflow,
        }),
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
pub fn emit_for_repo(
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
    emit_in_mode(&root, events_dir, scope, signal, rows, workflow, generator.as_ref(), mode)
}

/// Where premerge's own signals keep their proposals: `proposal.signal_root` relative to
/// the repository root, or by default `<run dir>/proposals`. The default is outside the
/// working tree on purpose: a proposal written during an attempt must never show up as
/// a changed path that the commit fence would have to refuse.
pub fn signal_root(repo: &Repo, cfg: &Config, run_dir: &Path) -> Result<PathBuf> {
    match cfg.proposal.signal_root.as_str() {
        "" => Ok(run_dir.join("proposals")),
        rel => Ok(repo.require_workdir()?.join(rel)),
    }
}

/// Emit one of premerge's own signals from inside another command (review seams,
/// recurring blockers, fence violations, repeated widening). The stripe halt is an
/// authority, but a proposal store that cannot be written must not break the step
/// that noticed the signal: an error becomes a warning and `None` (fail open), and the
/// caller reports the outcome beside its own result.
pub fn emit_own_signal(
    ctx: &mut super::Ctx,
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

/// The configured proposal root: `proposal.root`, relative to the repository root.
pub fn default_root(repo: &Repo, cfg: &Config) -> Result<PathBuf> {
    Ok(repo.require_workdir()?.join(cfg.proposal.root.as_str()))
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
        &json!({
            "kind": "stripe_repeat_halt",
            "stripe": stripe.to_string(),
            "existing_proposal_path": existing.display().to_string(),
            "new_evidence_row_ids": ids,
            "halted_workflow_id": workflow,
            "mode": mode,
        }),
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

/// Refuse a root that exists but is not a directory; create `<root>/open/`.
fn ensure_root(root: &Path) -> Result<PathBuf> {
    check_root(root)?;
    let open = root.join("open");
    fs::create_dir_all(&open).with_context(|| format!("{}: cannot create", open.display()))?;
    Ok(open)
}

/// Refuse a proposal root that exists but is not a directory (exit 2).
pub fn check_root(root: &Path) -> Result<()> {
    if root.exists() && !root.is_dir() {
        return Err(input_error(root.display(), "proposal root is not a directory"));
    }
    Ok(())
}

/// Whether the file `name` is a proposal of the stripe whose file stem is `stem`: it
/// starts with `<stem>-` and ends with `.md` (matched by the stripe prefix only, whatever
/// the suffix: a premerge timestamp or a hand-written `<stripe>-handwritten.md`).
pub fn names_stripe(name: &str, stem: &str) -> bool {
    name.ends_with(".md")
        && !name.starts_with('.')
        && name.strip_prefix(stem).is_some_and(|rest| rest.starts_with('-'))
        && doc::parse_file_name(name).is_none_or(|n| n.stem == stem)
}

/// The open proposal of `stripe` under `root`, if any: a file in `<root>/open/` whose
/// name starts with the stripe. Only a matching name is opened, to confirm its front
/// matter (a scope `a--b` and a scope `a/b` share a file-name prefix); a match whose
/// front matter does not parse still counts, because its name says it is that stripe.
pub fn find_open(root: &Path, stripe: &StripeId) -> Result<Option<PathBuf>> {
    let dir = root.join("open");
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(anyhow!("{}: cannot read: {e}", dir.display())),
    };
    let stem = stripe.file_stem();
    let prefix = format!("{stem}-");
    let mut found: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("{}: cannot read", dir.display()))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(&prefix) || !names_stripe(name, &stem) {
            continue;
        }
        let path = entry.path();
        let same = match fs::read_to_string(&path).ok().and_then(|t| doc::parse_front_matter(&t).ok()) {
            Some(fm) => fm.stripe == *stripe,
            None => true,
        };
        if same {
            found.push(path);
        }
    }
    found.sort();
    Ok(found.into_iter().next())
}

/// Write `bytes` as a new proposal in `<root>/open/` without ever replacing a file:
/// a temporary file is linked into place only when the name is free in every folder.
fn write_new(root: &Path, stripe: &StripeId, timestamp: &str, bytes: &[u8]) -> Result<PathBuf> {
    let open = root.join("open");
    // Leftovers of an emit killed between create and rename (docs/reliability.md).
    store::remove_stale_temporaries(&open);
    let mut tmp = tempfile::Builder::new()
        .prefix(store::TMP_PREFIX)
        // A proposal is for reviewers: 0644 like every artefact (umask permitting).
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(store::MODE_SHARED))
        .tempfile_in(&open)
        .with_context(|| format!("{}: cannot create a temporary file", open.display()))?;
    tmp.write_all(bytes).with_context(|| format!("{}: write failed", open.display()))?;
    tmp.as_file().sync_all().with_context(|| format!("{}: fsync failed", open.display()))?;
    // Same-second proposals of one stripe get -2, -3, ...; names stay unique across
    // open/applied/rejected so a move never overwrites a resolved proposal.
    const MAX_SEQ: u32 = 1000;
    for seq in 1..=MAX_SEQ {
        let name = doc::file_name(stripe, timestamp, seq);
        if STATES.iter().any(|s| root.join(s).join(&name).exists()) {
            continue;
        }
        let target = open.join(&name);
        match tmp.persist_noclobber(&target) {
            Ok(_) => {
                if let Ok(d) = File::open(&open) {
                    // Durability of the rename only; a refusal costs nothing but that.
                    let _ = d.sync_all();
                }
                return Ok(target);
            }
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => tmp = e.file,
            Err(e) => return Err(anyhow!("{}: cannot write: {}", target.display(), e.error)),
        }
    }
    bail!("{}: more than {MAX_SEQ} proposals of {stripe} in one second", open.display())
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

/// An exclusive `flock` on a directory, held until dropped: no lock file is left in
/// the proposal tree (which usually lives inside the repository's working tree).
pub struct DirLock {
    _file: File,
}

impl DirLock {
    pub fn acquire(dir: &Path, wait: Duration) -> Result<DirLock> {
        let file = File::open(dir).with_context(|| format!("{}: cannot open to lock", dir.display()))?;
        let start = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(DirLock { _file: file }),
                Err(fs::TryLockError::WouldBlock) if start.elapsed() < wait => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(fs::TryLockError::WouldBlock) => bail!(
                    "{}: another premerge process holds the proposal lock (waited {} ms); retry when it finishes",
                    dir.display(),
                    wait.as_millis()
                ),
                Err(fs::TryLockError::Error(e)) => bail!("{}: cannot lock: {e}", dir.display()),
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Listing

/// One readable proposal on disk.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    pub status: &'static str,
    pub stripe: String,
    pub created: String,
    pub age_seconds: Option<i64>,
    pub path: String,
}

/// A proposal file that could not be read back.
#[derive(Debug, Clone, Serialize)]
pub struct Unparseable {
    pub path: String,
    pub reason: String,
}

/// What is on disk under a proposal root.
#[derive(Debug, Clone, Default)]
pub struct RootScan {
    /// Readable proposals: open, then applied, then rejected, by file name.
    pub listed: Vec<Listed>,
    /// `*.md` files that could not be read back (reported, skipped).
    pub unparseable: Vec<Unparseable>,
    /// `*.md` files per folder, readable or not: the totals match the disk.
    pub totals: BTreeMap<&'static str, usize>,
}

/// Every `*.md` file of the three folders.
pub fn scan_root(root: &Path) -> Result<RootScan> {
    check_root(root)?;
    let now = store::now();
    let (mut listed, mut bad, mut totals) = (Vec::new(), Vec::new(), BTreeMap::new());
    for status in STATES {
        let dir = root.join(status);
        let mut names: Vec<String> = match fs::read_dir(&dir) {
            Ok(rd) => rd
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| n.ends_with(".md") && !n.starts_with('.'))
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(anyhow!("{}: cannot read: {e}", dir.display())),
        };
        names.sort();
        totals.insert(status, names.len());
        for name in names {
            let path = dir.join(&name);
            let shown = path.display().to_string();
            let named = doc::parse_file_name(&name).is_some();
            let text = match fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) => {
                    bad.push(Unparseable { path: shown, reason: format!("cannot read: {e}") });
                    continue;
                }
            };
            match doc::parse_front_matter(&text) {
                // A hand-named file counts when its name starts with its own stripe.
                Ok(fm) if !named && !names_stripe(&name, &fm.stripe.file_stem()) => bad.push(Unparseable {
                    path: shown,
                    reason: format!("file name does not start with its stripe `{}-`", fm.stripe.file_stem()),
                }),
                Err(_) if !named => bad.push(Unparseable {
                    path: shown,
                    reason: "file name is not <stripe>-<YYYYMMDDTHHMMSSZ>.md".into(),
                }),
                Ok(fm) => listed.push(Listed {
                    status,
                    stripe: fm.stripe.to_string(),
                    age_seconds: doc::age_seconds(&fm.created, now),
                    created: fm.created,
                    path: shown,
                }),
                Err(e) => bad.push(Unparseable { path: shown, reason: e.to_string() }),
            }
        }
    }
    Ok(RootScan { listed, unparseable: bad, totals })
}

// ---------------------------------------------------------------------------
// Commands

struct Where {
    root: PathBuf,
    events_dir: PathBuf,
    generator: Option<GeneratorCfg>,
    mode: Mode,
}

fn locate(ctx: &Ctx, args: &RootArgs) -> Result<Where> {
    // With an explicit root, a repository is not needed: outside one, the configuration
    // is the defaults and the environment, and events go to `--run-dir`, else
    // PREMERGE_RUN_DIR, else the proposal root itself.
    let repo = match (ctx.repo(), &args.root) {
        (Ok(repo), _) => repo,
        (Err(_), Some(r)) => {
            let cfg = super::load_config_without_repo()?;
            let root = ctx.cwd.join(r);
            let events_dir = match (&args.run_dir, ctx.env.var_os("PREMERGE_RUN_DIR")) {
                (Some(d), _) => ctx.cwd.join(d),
                (None, Some(d)) if !d.is_empty() => ctx.cwd.join(d),
                _ => root.clone(),
            };
            return Ok(Where {
                root,
                events_dir,
                generator: GeneratorCfg::from_config(&cfg),
                mode: cfg.proposal.halt_mode,
            });
        }
        (Err(e), None) => return Err(e),
    };
    let cfg = super::load_config(&repo)?;
    let root = match &args.root {
        Some(r) => ctx.cwd.join(r),
        None => default_root(&repo, &cfg)?,
    };
    let events_dir = ctx.run_dir(&repo, args.run_dir.as_deref());
    Ok(Where { root, events_dir, generator: GeneratorCfg::from_config(&cfg), mode: cfg.proposal.halt_mode })
}

pub fn run(cmd: Cmd, ctx: &mut Ctx) -> CmdResult {
    match cmd {
        Cmd::Emit(a) => run_emit(a, ctx),
        Cmd::List(a) => run_list(a, ctx),
        Cmd::Show(a) => run_show(a, ctx),
        Cmd::Apply(a) => run_apply(a, ctx),
        Cmd::Reject(a) => run_reject(a, ctx),
    }
}

fn read_evidence(ctx: &mut Ctx, file: &Path) -> Result<Vec<Value>> {
    let (name, text) = if file == Path::new("-") {
        ("stdin".to_string(), ctx.read_stdin(crate::input::Kind::Evidence)?)
    } else {
        let p = ctx.cwd.join(file);
        let t = crate::input::read_text(&p, crate::input::Kind::Evidence)?;
        (p.display().to_string(), t)
    };
    let ev = Evidence::parse(&text).map_err(|e| input_error(&name, e))?;
    // Re-serialised rows: `emit` takes plain values so other areas can pass theirs.
    Ok(ev.rows.into_iter().map(|r| Value::Object(r.fields)).collect())
}

fn run_emit(a: EmitArgs, ctx: &mut Ctx) -> CmdResult {
    validate_scope(&a.scope).map_err(|e| input_error("--scope", e))?;
    validate_signal(&a.signal).map_err(|e| input_error("--signal", e))?;
    let rows = read_evidence(ctx, &a.evidence)?;
    let w = locate(ctx, &a.root)?;
    let out = emit_in_mode(
        &w.root,
        &w.events_dir,
        &a.scope,
        &a.signal,
        &rows,
        a.workflow.as_deref(),
        w.generator.as_ref(),
        w.mode,
    )?;
    for warning in &out.warnings {
        ctx.warn(warning);
    }
    ctx.stdout.write_all(crate::canonical::to_line(&out.to_json())?.as_bytes())?;
    if out.outcome == Outcome::StripeRepeatHalt && !out.halts() {
        ctx.warn("stripe repeat in shadow mode (proposal.halt_mode): logged, not halting");
    }
    Ok(if out.halts() { Exit::Policy } else { Exit::Ok })
}

fn run_list(a: ListArgs, ctx: &mut Ctx) -> CmdResult {
    let w = locate(ctx, &a.root)?;
    let RootScan { listed, unparseable: bad, totals } = scan_root(&w.root)?;
    for b in &bad {
        ctx.warn(format!("{}: unparseable proposal skipped: {}", b.path, b.reason));
    }
    let total: usize = totals.values().sum();
    match a.format {
        Format::Json => {
            let mut t = serde_json::Map::new();
            for (k, v) in &totals {
                t.insert((*k).to_string(), json!(v));
            }
            t.insert("total".into(), json!(total));
            t.insert("unparseable".into(), json!(bad.len()));
            let v = json!({"schema_version": 1, "root": w.root.display().to_string(), "proposals": listed, "unparseable": bad, "totals": t});
            ctx.stdout.write_all(crate::canonical::to_line(&v)?.as_bytes())?;
        }
        Format::Text => {
            if !listed.is_empty() {
                writeln!(ctx.stdout, "{:<9} {:<40} {:>5}  PATH", "STATUS", "STRIPE", "AGE")?;
            }
            for l in &listed {
                let age = l.age_seconds.map(doc::format_age).unwrap_or_else(|| "?".into());
                writeln!(ctx.stdout, "{:<9} {:<40} {:>5}  {}", l.status, l.stripe, age, l.path)?;
            }
            writeln!(
                ctx.stdout,
                "totals: open {}, applied {}, rejected {}, total {} ({} unparseable)",
                totals["open"],
                totals["applied"],
                totals["rejected"],
                total,
                bad.len()
            )?;
        }
    }
    Ok(Exit::Ok)
}

/// Find the proposal files `id` names among `states`: a stripe id matches every
/// proposal of that stripe, a file name matches that file.
fn resolve(root: &Path, id: &str, states: &[&'static str]) -> Result<Vec<(&'static str, PathBuf)>> {
    check_root(root)?;
    let stem = match StripeId::parse(id) {
        Ok(s) => Some(s.file_stem()),
        Err(stripe_err) => {
            let name = if id.ends_with(".md") { id.to_string() } else { format!("{id}.md") };
            if id.contains('/') || doc::parse_file_name(&name).is_none() {
                return Err(input_error(
                    format!("`{id}`"),
                    format!("neither a stripe id nor a proposal file name ({stripe_err})"),
                ));
            }
            let mut out = Vec::new();
            for s in states {
                let p = root.join(s).join(&name);
                if p.is_file() {
                    out.push((*s, p));
                }
            }
            return Ok(out);
        }
    };
    let stem = stem.expect("set above");
    let mut out = Vec::new();
    for s in states {
        let dir = root.join(s);
        let Ok(rd) = fs::read_dir(&dir) else { continue };
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| names_stripe(n, &stem))
            .collect();
        names.sort();
        out.extend(names.into_iter().map(|n| (*s, dir.join(n))));
    }
    Ok(out)
}

fn one_open(root: &Path, id: &str) -> Result<PathBuf> {
    let mut found = resolve(root, id, &["open"])?;
    match found.len() {
        0 => Err(input_error(format!("`{id}`"), format!("no open proposal under {}", root.join("open").display()))),
        1 => Ok(found.remove(0).1),
        _ => Err(input_error(
            format!("`{id}`"),
            format!(
                "names {} open proposals; give a file name: {}",
                found.len(),
                found.iter().map(|(_, p)| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

fn run_show(a: IdArgs, ctx: &mut Ctx) -> CmdResult {
    let w = locate(ctx, &a.root)?;
    let found = resolve(&w.root, &a.id, &STATES)?;
    let open: Vec<_> = found.iter().filter(|(s, _)| *s == "open").collect();
    let path = match (found.len(), open.len()) {
        (0, _) => return Err(input_error(format!("`{}`", a.id), format!("no proposal under {}", w.root.display()))),
        (1, _) => found[0].1.clone(),
        (_, 1) => open[0].1.clone(),
        _ => {
            return Err(input_error(
                format!("`{}`", a.id),
                format!(
                    "names {} proposals; give a file name: {}",
                    found.len(),
                    found.iter().map(|(_, p)| p.display().to_string()).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    };
    let text = fs::read_to_string(&path).with_context(|| format!("{}: cannot read", path.display()))?;
    ctx.stdout.write_all(text.as_bytes())?;
    Ok(Exit::Ok)
}

/// Move an open proposal to `state`, optionally rewriting it first; returns the new path.
fn resolve_open(
    root: &Path,
    events_dir: &Path,
    id: &str,
    state: &str,
    reason: Option<&str>,
) -> Result<(String, PathBuf)> {
    check_root(root)?;
    let open_dir = root.join("open");
    if !open_dir.is_dir() {
        return Err(input_error(format!("`{id}`"), format!("no open proposal under {}", open_dir.display())));
    }
    let _lock = DirLock::acquire(&open_dir, ROOT_LOCK_WAIT)?;
    let from = one_open(root, id)?;
    let text = fs::read_to_string(&from).with_context(|| format!("{}: cannot read", from.display()))?;
    let stripe = doc::parse_front_matter(&text)
        .map(|fm| fm.stripe.to_string())
        .map_err(|e| input_error(from.display(), format!("unparseable proposal: {e}")))?;
    let dest_dir = root.join(state);
    fs::create_dir_all(&dest_dir).with_context(|| format!("{}: cannot create", dest_dir.display()))?;
    let to = dest_dir.join(from.file_name().expect("a resolved file has a name"));
    if to.exists() {
        bail!("{}: already exists; refusing to overwrite it", to.display());
    }
    if let Some(reason) = reason {
        store::atomic_write(&from, doc::append_rejection(&text, reason).as_bytes())?;
    }
    fs::rename(&from, &to).with_context(|| format!("{}: cannot move to {}", from.display(), to.display()))?;
    let mut ev = json!({
        "kind": format!("proposal_{state}"),
        "stripe": stripe,
        "from": from.display().to_string(),
        "proposal_path": to.display().to_string(),
    });
    if let Some(r) = reason {
        ev["reason"] = json!(r.trim());
    }
    store::append_event(events_dir, &ev)?;
    Ok((stripe, to))
}

fn run_apply(a: IdArgs, ctx: &mut Ctx) -> CmdResult {
    let w = locate(ctx, &a.root)?;
    let (stripe, to) = resolve_open(&w.root, &w.events_dir, &a.id, "applied", None)?;
    let v = json!({"outcome": "applied", "stripe": stripe, "path": to.display().to_string()});
    ctx.stdout.write_all(crate::canonical::to_line(&v)?.as_bytes())?;
    Ok(Exit::Ok)
}

fn run_reject(a: RejectArgs, ctx: &mut Ctx) -> CmdResult {
    if a.reason.trim().is_empty() {
        return Err(input_error("--reason", "must not be empty"));
    }
    let w = locate(ctx, &a.root)?;
    let (stripe, to) = resolve_open(&w.root, &w.events_dir, &a.id, "rejected", Some(&a.reason))?;
    let v = json!({"outcome": "rejected", "stripe": stripe, "path": to.display().to_string()});
    ctx.stdout.write_all(crate::canonical::to_line(&v)?.as_bytes())?;
    Ok(Exit::Ok)
}

// ---------------------------------------------------------------------------
// Demo

pub fn demo_stage(d: &mut super::demo::DemoRun) -> Result<()> {
    let evidence = r#"[
  {"id": "round-1/ARCHITECTURE/1", "title": "Unchecked numeric range", "summary": "src/query.rs: limit widened"},
  {"id": "round-1/ARCHITECTURE/2", "title": "unchecked numeric range", "summary": "src/query.rs: ratio check removed"}
]
"#;
    d.write("evidence/seam.json", evidence)?;
    let run_dir = d.run_dir.clone();
    let here = || RootArgs { root: None, run_dir: Some(run_dir.clone()) };
    let emit_args = || EmitArgs {
        scope: "review".into(),
        signal: "repeat_seam".into(),
        evidence: "evidence/seam.json".into(),
        workflow: Some("demo-1".into()),
        root: here(),
    };
    d.say("$ premerge proposal emit --scope review --signal repeat_seam --evidence evidence/seam.json")?;
    let first = d.with_ctx(b"", |c| run_emit(emit_args(), c))?;
    d.say(format!("  (exit {}: the workflow goes on)", first.code()))?;
    d.say("$ premerge proposal emit ...   # the same seam again while its proposal is open")?;
    let second = d.with_ctx(b"", |c| run_emit(emit_args(), c))?;
    d.say(format!("  (exit {}: stripe repeat, the workflow halts for a human)", second.code()))?;
    d.say("$ premerge drain")?;
    let drained = d.with_ctx(b"", |c| super::drain::run(super::drain::Args { root: here() }, c))?;
    d.say(format!("  (exit {})", drained.code()))?;
    d.say("$ premerge proposal list")?;
    d.with_ctx(b"", |c| run_list(ListArgs { format: Format::Text, root: here() }, c))?;
    // The review stage's step-back opened a proposal of its own; apply the one this
    // stage emitted, whose id follows from the evidence alone.
    let projection = crate::stripe::projection::project("repeat_seam", &Evidence::parse(evidence)?);
    let stripe = StripeId::compute("review", &projection)?.to_string();
    d.say(format!("$ premerge proposal apply {stripe}"))?;
    d.with_ctx(b"", |c| run_apply(IdArgs { id: stripe.clone(), root: here() }, c))?;
    d.say("$ premerge drain")?;
    let drained = d.with_ctx(b"", |c| super::drain::run(super::drain::Args { root: here() }, c))?;
    d.say(format!("  (exit {}: the halt is resolved)", drained.code()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_emit_suppresses_emits_then_halts() {
        let d = tempfile::tempdir().unwrap();
        let (root, events) = (d.path().join("proposals"), d.path().join("run"));
        let none = emit(&root, &events, "premerge", "fence_violation", &[json!({"id": 1})], None, None).unwrap();
        assert_eq!((none.outcome, none.stripe, none.path), (Outcome::Suppressed, None, None));
        let rows = [json!({"id": "a", "path": "src/x.rs"}), json!({"id": "b", "path": "src/y.rs"})];
        let first = emit(&root, &events, "premerge", "fence_violation", &rows, Some("w"), None).unwrap();
        assert_eq!(first.outcome, Outcome::Emitted);
        let path = first.path.clone().unwrap();
        assert!(path.starts_with(root.join("open")) && path.is_file());
        assert_eq!(find_open(&root, first.stripe.as_ref().unwrap()).unwrap(), Some(path.clone()));
        let rows = [json!({"id": "c", "path": "src/y.rs"}), json!({"id": "d", "path": "src/x.rs"})];
        let again = emit(&root, &events, "premerge", "fence_violation", &rows, None, None).unwrap();
        assert_eq!((again.outcome, again.path), (Outcome::StripeRepeatHalt, Some(path)));
        assert_eq!(again.stripe, first.stripe);
        let kinds: Vec<String> =
            store::read_events(&events).unwrap().iter().map(|e| e["kind"].as_str().unwrap().to_string()).collect();
        assert_eq!(kinds, ["refinement_proposal_emitted", "stripe_repeat_halt"]);
        assert!(emit(&root, &events, "premerge", "fence_violation", &[json!("x")], None, None).is_err());
    }
}
