//! Fixer waves: triage of findings into blockers and suggestions, the wave plan that
//! gives every blocker file exactly one owner, the carry of blocked-on rows from the
//! previous attempt, the commit fence's allowed set, and the converge decision.
//!
//! Pure: no file system, git, process or clock. The command layer reads the inputs,
//! passes owned values in, and writes what comes back (`commands::{plan, blocked,
//! fence, converge, show, schema}`). The one question that needs the file system,
//! whether a carried path resolves to a regular file inside the repository, is asked
//! through a checker the caller injects ([`carry::PathCheck`]).

pub mod carry;
pub mod converge;
pub mod envelope;
pub mod fence;
pub mod schema;

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::findings::Finding;

/// Version of every artefact this module defines (`classified`, `fix-waves`, `blocked-on`).
pub const SCHEMA_VERSION: u32 = 1;

/// Largest findings list `premerge plan` accepts (the default of `plan.max_findings`).
/// A findings file is written by a reviewer agent or a tool; beyond this size the input
/// is a runaway producer, and planning it would hand fixers more waves than any attempt
/// can finish. The benchmark plans exactly this many in well under a second.
pub const MAX_FINDINGS: usize = 100_000;

/// Most blocked-on rows one attempt admits. Equal to the largest wave, so carry adds
/// at most one wave of files per attempt; overflow is dropped (a dropped path is a path
/// no fixer may touch, the fail-closed direction), never refused.
pub(crate) const MAX_BLOCKED_ON: usize = 8;

/// The token of the envelope in which fixer prompts quote untrusted text. A carried
/// string containing it could close the envelope early and read as the controller's words.
pub(crate) const ENVELOPE_TOKEN: &str = "external-untrusted-input";

/// The controller-authored summary of every carried finding. Constant, so the carried
/// finding's fingerprint depends on the validated file path alone and never on an
/// agent's words.
pub const CARRIED_SUMMARY: &str = "carried blocker: a fix in another file needs a change in this file";

/// The category written on carried findings.
pub(crate) const CARRIED_CATEGORY: &str = "carried";

/// Categories that make a finding a suggestion when it has no explicit severity,
/// and contradict an explicit `blocker`.
pub(crate) const CLEANUP_CATEGORIES: &[&str] = &[
    "cleanup",
    "dead-code",
    "docs",
    "documentation",
    "formatting",
    "naming",
    "nit",
    "readability",
    "refactor",
    "style",
    "typo",
];

/// Categories that make a finding a blocker, and contradict an explicit `suggestion`.
pub(crate) const BLOCKER_CATEGORIES: &[&str] =
    &["bug", "concurrency", "correctness", "crash", "data-loss", "race", "regression", "security"];

/// Explicit severities read as `blocker` (reviewer, lens and SARIF vocabularies).
pub(crate) const BLOCKER_SEVERITIES: &[&str] = &["blocker", "critical", "error", "high", "major", "medium", "must-fix"];

/// Explicit severities read as `suggestion`.
pub(crate) const SUGGESTION_SEVERITIES: &[&str] =
    &["info", "low", "minor", "nit", "none", "note", "optional", "suggestion", "warning"];

/// Errors that refuse a findings document as a whole.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WavesError {
    /// More findings than the configured bound.
    #[error(
        "{count} findings exceed the bound of {max} (plan.max_findings): a runaway producer, not a reviewable attempt"
    )]
    TooManyFindings { count: usize, max: usize },
    /// A severity none of the vocabularies knows.
    #[error("finding {index}: severity `{value}` is neither a blocker ({blockers}) nor a suggestion ({suggestions})", blockers = BLOCKER_SEVERITIES.join(", "), suggestions = SUGGESTION_SEVERITIES.join(", "))]
    UnknownSeverity { index: usize, value: String },
    /// A category that says the opposite of the explicit severity.
    #[error("finding {index}: category `{category}` contradicts severity `{severity}`")]
    Contradiction { index: usize, severity: String, category: String },
    /// The same `(file, line, normalised summary)` twice.
    #[error("finding {index}: duplicate of finding {first} ({file}, line {line}, same summary)")]
    Duplicate { index: usize, first: usize, file: String, line: String },
    /// A finding's file that could not be a path inside the repository.
    #[error("finding {index}: file `{file}`: {reason}")]
    UnsafePath { index: usize, file: String, reason: &'static str },
    /// A wave size below one.
    #[error("max_per_wave must be at least 1")]
    BadMaxPerWave,
}

/// Blocker or suggestion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Blocker,
    Suggestion,
}

/// What decided a finding's severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SeveritySource {
    /// The producer's own severity.
    Explicit,
    /// The category (no explicit severity).
    Category,
    /// Neither: a finding nobody classified is a blocker (fixing it is the safe side).
    Default,
    /// A carried blocked-on row (always a blocker).
    Carried,
}

/// One classified finding, as written into `classified-NN.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClassifiedFinding {
    pub carried: bool,
    /// For carried findings: the file whose fixer reported the block (the first, when
    /// several did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "string"))]
    pub carried_from: Option<String>,
    /// For carried findings: every blocked-on row merged into this one, in row order,
    /// each with the file that reported it and its reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carried_reasons: Vec<CarriedReason>,
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub category: Option<String>,
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub failure_scenario: Option<String>,
    #[schemars(length(min = 1))]
    pub file: String,
    /// First 16 hex digits of SHA-256 of `file 0x1f folded-summary`: line-independent.
    #[schemars(regex(pattern = r"^[0-9a-f]{16}$"))]
    pub fingerprint: String,
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub lens: Option<String>,
    #[schemars(required, extend("type" = ["integer", "null"]), range(min = 1))]
    pub line: Option<u64>,
    /// Position in the input (carried rows come after every input finding).
    pub rank: usize,
    pub severity: Severity,
    pub severity_source: SeveritySource,
    pub summary: String,
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub verdict: Option<String>,
}

/// One blocked-on row behind a carried finding: who needs this file changed, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CarriedReason {
    pub from_file: String,
    pub reason: String,
}

/// One finding as a fixer receives it in the wave plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WaveFinding {
    pub carried: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "string"))]
    pub carried_from: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carried_reasons: Vec<CarriedReason>,
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub category: Option<String>,
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub failure_scenario: Option<String>,
    #[schemars(regex(pattern = r"^[0-9a-f]{16}$"))]
    pub fingerprint: String,
    #[schemars(required, extend("type" = ["integer", "null"]), range(min = 1))]
    pub line: Option<u64>,
    pub summary: String,
}

/// One file of a wave and its only owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WaveEntry {
    #[schemars(length(min = 1))]
    pub file: String,
    pub findings: Vec<WaveFinding>,
    #[schemars(regex(pattern = r"^w[0-9]{2,}-[0-9]{2,}$"))]
    pub owner: String,
}

/// `fix-waves-NN.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WavePlan {
    #[schemars(range(min = 1))]
    pub attempt: u32,
    #[schemars(range(min = 1))]
    pub max_per_wave: usize,
    #[schemars(extend("const" = 1))]
    pub schema_version: u32,
    #[schemars(inner(length(min = 1)))]
    pub waves: Vec<Vec<WaveEntry>>,
}

impl WavePlan {
    /// Every entry, wave by wave, with its 1-based wave number.
    pub fn entries(&self) -> impl Iterator<Item = (usize, &WaveEntry)> {
        self.waves.iter().enumerate().flat_map(|(i, w)| w.iter().map(move |e| (i + 1, e)))
    }
}

/// Pretty JSON of an artefact struct of this module, written straight from the struct.
///
/// Equal to [`crate::canonical::to_pretty`] because every artefact struct here declares
/// its fields in byte order (a test pins the equality); it skips the intermediate
/// `serde_json::Value`, which is most of the cost of writing 100,000 findings.
pub fn to_artefact_json<T: Serialize>(value: &T) -> serde_json::Result<String> {
    let mut s = serde_json::to_string_pretty(value)?;
    s.push('\n');
    Ok(s)
}

/// Fold a summary for identity: lowercase, whitespace runs collapsed to one space, trimmed.
pub(crate) fn fold_summary(s: &str) -> String {
    let lower = s.to_lowercase();
    let mut out = String::with_capacity(lower.len());
    for word in lower.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The fingerprint of a finding: SHA-256 of `file`, a 0x1f unit separator and the folded
/// summary, first 16 hex digits. The line is left out on purpose: fixes move lines, and
/// the same defect must keep its identity from one attempt to the next.
pub fn fingerprint(file: &str, summary: &str) -> String {
    fingerprint_folded(file, &fold_summary(summary))
}

/// [`fingerprint`] of a summary already folded with [`fold_summary`].
pub(crate) fn fingerprint_folded(file: &str, folded: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut h = Sha256::new();
    h.update(file.as_bytes());
    h.update([0x1f]);
    h.update(folded.as_bytes());
    let digest = h.finalize();
    let mut s = String::with_capacity(16);
    for b in &digest[..8] {
        s.push(char::from(HEX[usize::from(b >> 4)]));
        s.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    s
}

/// Why a repository-relative path is lexically unsafe, if it is. The same predicate
/// guards findings, carried rows and the plan the fence reads.
pub(crate) fn lexical_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("empty_path");
    }
    if path.chars().any(char::is_control) {
        return Some("control_character");
    }
    if path.starts_with('/') {
        return Some("absolute_path");
    }
    if path.contains('\\') {
        return Some("non_canonical_path");
    }
    let mut non_canonical = false;
    for comp in path.split('/') {
        match comp {
            ".." => return Some("parent_component"),
            "" | "." => non_canonical = true,
            c if c.eq_ignore_ascii_case(".git") => return Some("git_internal"),
            _ => {}
        }
    }
    non_canonical.then_some("non_canonical_path")
}

fn norm_word(s: &Option<String>) -> Option<String> {
    s.as_deref().map(|v| v.trim().to_ascii_lowercase()).filter(|v| !v.is_empty())
}

fn classify_one(f: &Finding) -> Result<(Severity, SeveritySource), WavesError> {
    let category = norm_word(&f.category);
    let implied = category.as_deref().and_then(|c| {
        if CLEANUP_CATEGORIES.contains(&c) {
            Some(Severity::Suggestion)
        } else if BLOCKER_CATEGORIES.contains(&c) {
            Some(Severity::Blocker)
        } else {
            None
        }
    });
    match norm_word(&f.severity) {
        Some(sev) => {
            let explicit = if BLOCKER_SEVERITIES.contains(&sev.as_str()) {
                Severity::Blocker
            } else if SUGGESTION_SEVERITIES.contains(&sev.as_str()) {
                Severity::Suggestion
            } else {
                return Err(WavesError::UnknownSeverity { index: f.index, value: sev });
            };
            if let Some(imp) = implied
                && imp != explicit
            {
                return Err(WavesError::Contradiction {
                    index: f.index,
                    severity: sev,
                    category: category.unwrap_or_default(),
                });
            }
            Ok((explicit, SeveritySource::Explicit))
        }
        None => match implied {
            Some(s) => Ok((s, SeveritySource::Category)),
            None => Ok((Severity::Blocker, SeveritySource::Default)),
        },
    }
}

/// Classify parsed findings: severity, fingerprint, duplicates and the size bound.
/// The output keeps the input order; `rank` is the position in the input. Strict: the
/// first malformed finding refuses the whole document (`premerge plan --strict`).
pub fn classify(findings: &[Finding], max_findings: usize) -> Result<Vec<ClassifiedFinding>, WavesError> {
    classify_inner(findings, max_findings, None)
}

/// A finding [`classify_lenient`] left out, with its reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DroppedFinding {
    /// What was wrong, for the reader (never hashed, never routed).
    pub detail: String,
    /// Position of the record in the findings document.
    pub index: usize,
    /// `invalid_finding` (unknown severity, a contradiction, malformed), `duplicate_finding`,
    /// `outside_repo`, or a path reason of [`lexical_problem`].
    pub reason: String,
}

/// The reason of a finding that repeats an earlier one (same file, line and summary).
pub(crate) const DUPLICATE_FINDING: &str = "duplicate_finding";

/// [`classify`] that drops each malformed finding (and lists it) instead of refusing the
/// document: one bad record from a reviewer must not cost the attempt. Only the size
/// bound still refuses.
pub fn classify_lenient(
    findings: &[Finding],
    max_findings: usize,
) -> Result<(Vec<ClassifiedFinding>, Vec<DroppedFinding>), WavesError> {
    let mut dropped = Vec::new();
    let out = classify_inner(findings, max_findings, Some(&mut dropped))?;
    Ok((out, dropped))
}

fn classify_inner(
    findings: &[Finding],
    max_findings: usize,
    mut lenient: Option<&mut Vec<DroppedFinding>>,
) -> Result<Vec<ClassifiedFinding>, WavesError> {
    if findings.len() > max_findings {
        return Err(WavesError::TooManyFindings { count: findings.len(), max: max_findings });
    }
    let mut seen: HashMap<(&str, Option<u64>, String), usize> = HashMap::with_capacity(findings.len());
    let mut out = Vec::with_capacity(findings.len());
    for f in findings.iter() {
        let mut refuse = |e: WavesError, reason: &str| -> Result<(), WavesError> {
            match lenient.as_deref_mut() {
                Some(d) => {
                    d.push(DroppedFinding { index: f.index, reason: reason.to_string(), detail: e.to_string() });
                    Ok(())
                }
                None => Err(e),
            }
        };
        if let Some(reason) = lexical_problem(&f.file) {
            refuse(WavesError::UnsafePath { index: f.index, file: f.file.escape_debug().to_string(), reason }, reason)?;
            continue;
        }
        let (severity, severity_source) = match classify_one(f) {
            Ok(s) => s,
            Err(e) => {
                refuse(e, crate::findings::INVALID_FINDING)?;
                continue;
            }
        };
        let folded = fold_summary(&f.title);
        let fingerprint = fingerprint_folded(&f.file, &folded);
        match seen.entry((f.file.as_str(), f.line, folded)) {
            std::collections::hash_map::Entry::Occupied(first) => {
                let e = WavesError::Duplicate {
                    index: f.index,
                    first: *first.get(),
                    file: f.file.clone(),
                    line: f.line.map_or_else(|| "none".to_string(), |l| l.to_string()),
                };
                refuse(e, DUPLICATE_FINDING)?;
                continue;
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(f.index);
            }
        }
        let rank = out.len();
        out.push(ClassifiedFinding {
            fingerprint,
            file: f.file.clone(),
            line: f.line,
            summary: f.title.clone(),
            failure_scenario: f.description.clone(),
            category: f.category.clone(),
            severity,
            severity_source,
            rank,
            carried: false,
            carried_from: None,
            carried_reasons: Vec::new(),
            lens: f.lens.clone(),
            verdict: f.verdict.clone(),
        });
    }
    Ok(out)
}

/// The severity a finding classifies as, `None` when its severity is unknown or
/// contradicts its category (such a finding is dropped by [`classify_lenient`]).
pub fn severity_of(f: &Finding) -> Option<Severity> {
    classify_one(f).ok().map(|(s, _)| s)
}

/// The synthesised blocker finding of the blocked-on rows of one file (admitted or
/// joining an owned file). The summary is the controller's template; the fixers' words
/// go only into `failure_scenario` and `carried_reasons`. One finding per file, so its
/// fingerprint depends on the validated path alone.
pub(crate) fn synthesise(rows: &[&carry::CarryRow], rank: usize) -> ClassifiedFinding {
    let first = rows[0];
    let failure = if rows.len() == 1 {
        first.reason.clone()
    } else {
        rows.iter().map(|r| format!("{}: {}", r.from_file, r.reason)).collect::<Vec<_>>().join("\n")
    };
    ClassifiedFinding {
        fingerprint: fingerprint(&first.file, CARRIED_SUMMARY),
        file: first.file.clone(),
        line: None,
        summary: CARRIED_SUMMARY.to_string(),
        failure_scenario: Some(failure),
        category: Some(CARRIED_CATEGORY.to_string()),
        severity: Severity::Blocker,
        severity_source: SeveritySource::Carried,
        rank,
        carried: true,
        carried_from: Some(first.from_file.clone()),
        carried_reasons: rows
            .iter()
            .map(|r| CarriedReason { from_file: r.from_file.clone(), reason: r.reason.clone() })
            .collect(),
        lens: None,
        verdict: None,
    }
}

/// The synthesised findings of every carried row, one per file in the order the files
/// first appear, ranks from `base`.
pub fn synthesise_all(rows: &[carry::CarryRow], base: usize) -> Vec<ClassifiedFinding> {
    let mut order: Vec<&str> = Vec::new();
    let mut by_file: HashMap<&str, Vec<&carry::CarryRow>> = HashMap::new();
    for r in rows {
        let e = by_file.entry(r.file.as_str()).or_default();
        if e.is_empty() {
            order.push(r.file.as_str());
        }
        e.push(r);
    }
    order.iter().enumerate().map(|(i, f)| synthesise(&by_file[f], base + i)).collect()
}

/// The files that have at least one blocker: the set a plan owns.
pub fn blocker_files(findings: &[ClassifiedFinding]) -> HashSet<String> {
    findings.iter().filter(|f| f.severity == Severity::Blocker).map(|f| f.file.clone()).collect()
}

/// Owner id of the file at `slot` (1-based) of wave `wave` (1-based): `w01-03`.
/// Derived from the position alone, so it is deterministic and unique within an attempt.
pub fn owner_id(wave: usize, slot: usize) -> String {
    format!("w{wave:02}-{slot:02}")
}

/// Plan the waves: blockers grouped by file (one owner per file), files ordered by
/// their best (lowest) rank and then by path bytes, cut into waves of at most
/// `max_per_wave`. Suggestions are not planned.
pub fn plan_waves(attempt: u32, max_per_wave: usize, findings: &[ClassifiedFinding]) -> Result<WavePlan, WavesError> {
    if max_per_wave == 0 {
        return Err(WavesError::BadMaxPerWave);
    }
    let mut by_file: HashMap<&str, Vec<&ClassifiedFinding>> = HashMap::new();
    for f in findings.iter().filter(|f| f.severity == Severity::Blocker) {
        by_file.entry(f.file.as_str()).or_default().push(f);
    }
    let mut files: Vec<(usize, &str, Vec<&ClassifiedFinding>)> = by_file
        .into_iter()
        .map(|(file, mut fs)| {
            fs.sort_by_key(|f| f.rank);
            (fs[0].rank, file, fs)
        })
        .collect();
    files.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.as_bytes().cmp(b.1.as_bytes())));
    let mut waves: Vec<Vec<WaveEntry>> = Vec::with_capacity(files.len().div_ceil(max_per_wave));
    for (i, (_, file, fs)) in files.into_iter().enumerate() {
        let (wave, slot) = (i / max_per_wave, i % max_per_wave);
        if slot == 0 {
            waves.push(Vec::with_capacity(max_per_wave));
        }
        waves[wave].push(WaveEntry {
            file: file.to_string(),
            owner: owner_id(wave + 1, slot + 1),
            findings: fs
                .into_iter()
                .map(|f| WaveFinding {
                    fingerprint: f.fingerprint.clone(),
                    line: f.line,
                    summary: f.summary.clone(),
                    failure_scenario: f.failure_scenario.clone(),
                    category: f.category.clone(),
                    carried: f.carried,
                    carried_from: f.carried_from.clone(),
                    carried_reasons: f.carried_reasons.clone(),
                })
                .collect(),
        });
    }
    Ok(WavePlan { schema_version: SCHEMA_VERSION, attempt, max_per_wave, waves })
}

/// Counts of one attempt's triage, as written under `counts` in `classified-NN.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Counts {
    pub blocked_on_admitted: usize,
    #[schemars(extend("additionalProperties" = {"type": "integer", "minimum": 1}))]
    pub blocked_on_dropped: std::collections::BTreeMap<String, usize>,
    /// Blocked-on rows that joined a file the plan already had (no file added).
    #[serde(default)]
    pub blocked_on_joined: usize,
    pub blocker: usize,
    pub carried: usize,
    /// Findings of the input dropped, by reason (`dropped_findings` lists each).
    #[serde(default)]
    #[schemars(extend("additionalProperties" = {"type": "integer", "minimum": 1}))]
    pub findings_dropped: std::collections::BTreeMap<String, usize>,
    pub skipped_outside_repo: usize,
    pub skipped_without_location: usize,
    pub suggestion: usize,
    /// Suggestions of earlier attempts carried into this one.
    #[serde(default)]
    pub suggestions_carried: usize,
    pub total: usize,
}

/// A suggestion of an earlier attempt, kept in `classified-NN.json` of every later one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct CarriedSuggestion {
    /// The attempt that first reported it.
    #[schemars(range(min = 1))]
    pub attempt: u32,
    pub category: Option<String>,
    pub failure_scenario: Option<String>,
    pub file: String,
    #[schemars(regex(pattern = r"^[0-9a-f]{16}$"))]
    pub fingerprint: String,
    #[schemars(required, extend("type" = ["integer", "null"]))]
    pub line: Option<u64>,
    pub summary: String,
}

impl Counts {
    /// Total rows dropped, over every reason.
    pub fn dropped(&self) -> usize {
        self.blocked_on_dropped.values().sum()
    }
}

/// Count severities of classified findings (carried ones included in `total` and `blocker`).
pub fn count(findings: &[ClassifiedFinding]) -> Counts {
    let blocker = findings.iter().filter(|f| f.severity == Severity::Blocker).count();
    Counts {
        total: findings.len(),
        blocker,
        suggestion: findings.len() - blocker,
        carried: findings.iter().filter(|f| f.carried).count(),
        ..Counts::default()
    }
}

/// The `PREMERGE_TRIAGE` summary line (without a newline). `JOINED=` and `INVALID=`
/// (findings dropped, every reason) are appended only when non-zero, and `ALLOWED=0`
/// only when every finding was invalid ([`fences_everything`]), so a clean attempt's
/// line is what it always was.
pub fn triage_line(attempt: u32, counts: &Counts, waves: usize) -> String {
    let mut line = format!(
        "PREMERGE_TRIAGE TOTAL={} BLOCKER={} SUGGESTION={} WAVES={} ATTEMPT={} BLOCKED={} DROPPED={}",
        counts.total,
        counts.blocker,
        counts.suggestion,
        waves,
        attempt,
        counts.blocked_on_admitted,
        counts.dropped()
    );
    if counts.blocked_on_joined > 0 {
        line.push_str(&format!(" JOINED={}", counts.blocked_on_joined));
    }
    let invalid: usize = counts.findings_dropped.values().sum();
    if invalid > 0 {
        line.push_str(&format!(" INVALID={invalid}"));
    }
    if fences_everything(counts, waves) {
        line.push_str(" ALLOWED=0");
    }
    line
}

/// Whether an attempt's findings were all dropped as invalid, leaving a plan that
/// allows no file: the open loop's fence then refuses every changed path (probe D16),
/// which the triage line and a note on stderr say.
pub fn fences_everything(counts: &Counts, waves: usize) -> bool {
    waves == 0 && counts.findings_dropped.values().sum::<usize>() > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(index: usize, file: &str, line: Option<u64>, title: &str, sev: Option<&str>, cat: Option<&str>) -> Finding {
        Finding {
            index,
            lens: None,
            severity: sev.map(str::to_string),
            file: file.to_string(),
            line,
            title: title.to_string(),
            description: None,
            category: cat.map(str::to_string),
            verdict: None,
            suggestion: None,
        }
    }

    #[test]
    fn fingerprint_is_line_independent_and_folds_case_and_space() {
        assert_eq!(fingerprint("a.rs", "Off  by one"), fingerprint("a.rs", " off by ONE "));
        assert_ne!(fingerprint("a.rs", "x"), fingerprint("b.rs", "x"));
        // The separator keeps `ab` + `c` apart from `a` + `bc`.
        assert_ne!(fingerprint("ab", "c"), fingerprint("a", "bc"));
        let fp = fingerprint("src/a.rs", "off by one");
        assert_eq!(fp.len(), 16);
        assert!(fp.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    }

    #[test]
    fn fingerprint_matches_a_hand_computed_digest() {
        // printf 'a.rs\x1fx' | sha256sum
        let mut h = Sha256::new();
        h.update(b"a.rs\x1fx");
        let full: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(fingerprint("a.rs", "X"), full[..16]);
    }

    #[test]
    fn severity_rules() {
        let c = classify(
            &[
                f(0, "a", None, "one", Some("Blocker"), None),
                f(1, "a", None, "two", None, Some("style")),
                f(2, "a", None, "three", None, Some("security")),
                f(3, "a", None, "four", None, None),
                f(4, "a", None, "five", Some("note"), Some("something-else")),
            ],
            10,
        )
        .unwrap();
        let sev: Vec<_> = c.iter().map(|c| (c.severity, c.severity_source)).collect();
        assert_eq!(
            sev,
            [
                (Severity::Blocker, SeveritySource::Explicit),
                (Severity::Suggestion, SeveritySource::Category),
                (Severity::Blocker, SeveritySource::Category),
                (Severity::Blocker, SeveritySource::Default),
                (Severity::Suggestion, SeveritySource::Explicit),
            ]
        );
    }

    #[test]
    fn contradiction_unknown_duplicate_bound_and_unsafe_are_refused() {
        let e = classify(&[f(0, "a", None, "x", Some("blocker"), Some("Style"))], 10).unwrap_err();
        assert!(matches!(e, WavesError::Contradiction { .. }), "{e}");
        let e = classify(&[f(0, "a", None, "x", Some("suggestion"), Some("security"))], 10).unwrap_err();
        assert!(matches!(e, WavesError::Contradiction { .. }), "{e}");
        let e = classify(&[f(0, "a", None, "x", Some("urgent"), None)], 10).unwrap_err();
        assert!(matches!(e, WavesError::UnknownSeverity { .. }), "{e}");
        let e = classify(
            &[f(0, "a", Some(3), "Off by one", None, None), f(1, "a", Some(3), "off  by ONE", None, None)],
            10,
        )
        .unwrap_err();
        assert_eq!(e, WavesError::Duplicate { index: 1, first: 0, file: "a".into(), line: "3".into() });
        // Same summary on another line is a different finding.
        assert!(classify(&[f(0, "a", Some(3), "x", None, None), f(1, "a", Some(4), "x", None, None)], 10).is_ok());
        let e = classify(&[f(0, "a", None, "x", None, None), f(1, "b", None, "x", None, None)], 1).unwrap_err();
        assert_eq!(e, WavesError::TooManyFindings { count: 2, max: 1 });
        let e = classify(&[f(0, "../a", None, "x", None, None)], 10).unwrap_err();
        assert!(matches!(e, WavesError::UnsafePath { reason: "parent_component", .. }), "{e}");
    }

    #[test]
    fn lexical_predicate() {
        for (p, want) in [
            ("src/a.rs", None),
            ("a", None),
            ("", Some("empty_path")),
            ("/etc/passwd", Some("absolute_path")),
            ("a/../b", Some("parent_component")),
            ("..", Some("parent_component")),
            ("a\nb", Some("control_character")),
            ("a\0b", Some("control_character")),
            ("a\u{85}b", Some("control_character")),
            ("./a", Some("non_canonical_path")),
            ("a//b", Some("non_canonical_path")),
            ("a/", Some("non_canonical_path")),
            ("a\\b", Some("non_canonical_path")),
            (".git/config", Some("git_internal")),
            ("sub/.GIT/hooks/pre-push", Some("git_internal")),
            (".github/workflows/ci.yml", None),
        ] {
            assert_eq!(lexical_problem(p), want, "{p:?}");
        }
    }

    #[test]
    fn waves_group_by_file_order_by_best_rank_and_cut() {
        let c = classify(
            &[
                f(0, "b", Some(1), "x", None, None),
                f(1, "a", Some(1), "x", None, None),
                f(2, "b", Some(9), "y", None, None),
                f(3, "c", Some(1), "x", Some("suggestion"), None),
                f(4, "d", Some(1), "x", None, None),
            ],
            10,
        )
        .unwrap();
        let p = plan_waves(3, 2, &c).unwrap();
        let files: Vec<Vec<(&str, &str, usize)>> = p
            .waves
            .iter()
            .map(|w| w.iter().map(|e| (e.file.as_str(), e.owner.as_str(), e.findings.len())).collect())
            .collect();
        assert_eq!(files, vec![vec![("b", "w01-01", 2), ("a", "w01-02", 1)], vec![("d", "w02-01", 1)]]);
        assert_eq!(p.attempt, 3);
        assert!(plan_waves(1, 0, &c).is_err());
    }

    #[test]
    fn artefact_structs_serialise_canonically() {
        let mut c =
            classify(&[f(0, "b", Some(1), "x", None, Some("bug")), f(1, "a", None, "y", Some("note"), None)], 10)
                .unwrap();
        let row = carry::CarryRow { file: "c".into(), from_file: "b".into(), reason: "r".into() };
        c.push(synthesise(&[&row], 2));
        let plan = plan_waves(1, 8, &c).unwrap();
        let mut counts = count(&c);
        counts.blocked_on_dropped.insert("duplicate".into(), 1);
        assert_eq!(to_artefact_json(&plan).unwrap(), crate::canonical::to_pretty(&plan).unwrap());
        assert_eq!(to_artefact_json(&c).unwrap(), crate::canonical::to_pretty(&c).unwrap());
        assert_eq!(to_artefact_json(&counts).unwrap(), crate::canonical::to_pretty(&counts).unwrap());
    }

    #[test]
    fn triage_line_shape() {
        let mut c = Counts { total: 5, blocker: 3, suggestion: 2, blocked_on_admitted: 1, ..Counts::default() };
        c.blocked_on_dropped.insert("duplicate".into(), 2);
        assert_eq!(
            triage_line(2, &c, 1),
            "PREMERGE_TRIAGE TOTAL=5 BLOCKER=3 SUGGESTION=2 WAVES=1 ATTEMPT=2 BLOCKED=1 DROPPED=2"
        );
        // Every finding invalid: nothing allowed, and the line says so.
        let all_invalid = Counts { findings_dropped: [("invalid_finding".to_string(), 2)].into(), ..Counts::default() };
        assert!(triage_line(1, &all_invalid, 0).ends_with(" INVALID=2 ALLOWED=0"));
        assert!(
            !triage_line(1, &Counts::default(), 0).contains("ALLOWED"),
            "a clean round allows nothing and says nothing"
        );
    }
}
