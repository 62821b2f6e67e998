//! The stop gate: decides whether a coding agent's stop is allowed or whether the
//! agent is told to continue, under structural constraints that bound what a wrong
//! decision can cost (one wasted turn) and guarantee that no failure strands the agent.
//!
//! Pure logic only: payload parsing ([`payload`]), the frozen rule enumeration and
//! the authority's answer validation ([`rules`]), the built-in deterministic
//! authority ([`builtin`]), the post-verifier ([`verify`]), the circuit breaker
//! ([`breaker`]), reminder and re-grounding texts ([`text`]) and the merge of the
//! agent's hook settings ([`settings`]). One stop judged end to end, with the
//! repository, the database and the authority's process, is [`judge`]; the rows are
//! `store::gate_db`, git is `git::gate`.

pub(crate) mod agent_hook;
pub mod breaker;
pub mod builtin;
#[cfg(test)]
mod corpus_tests;
pub(crate) mod judge;
pub mod payload;
pub mod readings;
pub mod reasons;
pub mod rules;
pub mod session;
pub mod settings;
pub mod text;
pub mod verify;

use serde::Serialize;

pub use rules::{Decision, Rule, RuleClass, Verdict};

/// How many `continue` decisions one session may receive; the next one becomes
/// `force_allow` and marks the session stuck. Far below Claude Code's own limit of
/// 8 consecutive blocks: an authority that keeps answering `continue` for the same
/// session is more likely wrong than the agent is, and two reminders are enough to
/// correct a drifting stop.
pub const CONTINUE_CEILING: u32 = 2;

/// Why an evaluation fell open (allowed the stop) instead of following the authority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The Stop-hook JSON on stdin did not parse or lacked `session_id`.
    MalformedPayload,
    /// The external authority ran longer than `gate.authority_timeout_ms`.
    Timeout,
    /// The authority's answer was not the expected JSON shape.
    Malformed,
    /// The cited rule is not in the enumeration, or its class disagrees with the decision.
    InvalidRule,
    /// An evidence pointer does not match the collected artefacts, or the post-verifier refused it.
    InvalidEvidence,
    /// A `continue` lacks a pointer its rule requires.
    MissingPointer,
    /// The external authority could not be started or exited non-zero.
    AuthorityUnavailable,
    /// The circuit breaker of the external authority is open.
    BreakerOpen,
    /// The database could not be opened, read or written.
    DatabaseError,
    /// Evidence could not be collected from the repository.
    EvidenceUnavailable,
    /// The configuration did not load.
    ConfigError,
}

impl FailureKind {
    /// Every kind, in the order of the `CHECK` constraint in `sql/003_gate.sql`.
    #[cfg(test)]
    pub(crate) const ALL: [FailureKind; 11] = [
        FailureKind::MalformedPayload,
        FailureKind::Timeout,
        FailureKind::Malformed,
        FailureKind::InvalidRule,
        FailureKind::InvalidEvidence,
        FailureKind::MissingPointer,
        FailureKind::AuthorityUnavailable,
        FailureKind::BreakerOpen,
        FailureKind::DatabaseError,
        FailureKind::EvidenceUnavailable,
        FailureKind::ConfigError,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::MalformedPayload => "malformed_payload",
            FailureKind::Timeout => "timeout",
            FailureKind::Malformed => "malformed",
            FailureKind::InvalidRule => "invalid_rule",
            FailureKind::InvalidEvidence => "invalid_evidence",
            FailureKind::MissingPointer => "missing_pointer",
            FailureKind::AuthorityUnavailable => "authority_unavailable",
            FailureKind::BreakerOpen => "breaker_open",
            FailureKind::DatabaseError => "database_error",
            FailureKind::EvidenceUnavailable => "evidence_unavailable",
            FailureKind::ConfigError => "config_error",
        }
    }

    /// Whether this failure counts against the external authority's circuit breaker:
    /// only failures of the authority process itself, not of its judgement.
    pub(crate) fn trips_breaker(self) -> bool {
        matches!(self, FailureKind::Timeout | FailureKind::Malformed | FailureKind::AuthorityUnavailable)
    }
}

/// A fail-open reason: the kind and a one-line detail for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    pub detail: String,
}

impl Failure {
    pub fn new(kind: FailureKind, detail: impl Into<String>) -> Failure {
        Failure { kind, detail: detail.into() }
    }
}

/// A plan file found in HEAD by `gate.plan_globs`: one durable artefact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanArtefact {
    /// Repository-relative path, `/`-separated.
    pub path: String,
    /// The commit that introduced the path (walking first parents from HEAD), if found.
    pub introducing_commit: Option<String>,
    /// The newest commit that changed the file.
    pub latest_commit: Option<String>,
    /// Introduced by a commit made during this session.
    pub created_this_session: bool,
    /// Changed by a commit made during this session.
    pub modified_this_session: bool,
    /// Whether the file exists in the working tree.
    pub exists: bool,
    /// Git blob id of the working-tree file when evidence was collected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree_blob: Option<String>,
    /// The first unchecked steps (`- [ ] ...`) of the working-tree file, sanitised.
    pub unchecked_steps: Vec<String>,
    /// How many unchecked steps the file has in all.
    pub unchecked_count: usize,
    /// How many unchecked steps the file has at HEAD (what was committed): steps
    /// checked in the work tree but not at HEAD were checked during this session.
    #[serde(default)]
    pub head_unchecked_count: usize,
    /// The first unchecked steps at HEAD, sanitised.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub head_unchecked_steps: Vec<String>,
}

impl PlanArtefact {
    /// Open steps, counting a step checked in the work tree but not at HEAD as open:
    /// what a continue may point to.
    pub fn open_steps(&self) -> usize {
        self.unchecked_count.max(self.head_unchecked_count)
    }

    /// The next steps to quote: the work tree's, else HEAD's.
    pub fn next_steps(&self) -> &[String] {
        if self.unchecked_steps.is_empty() { &self.head_unchecked_steps } else { &self.unchecked_steps }
    }
}

/// A commit made during the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionCommit {
    pub sha: String,
    pub summary: String,
}

/// Everything the authority may cite, collected by premerge (never by the agent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct Evidence {
    /// HEAD when evidence was collected.
    pub head: Option<String>,
    /// HEAD when the session started (`session-start`, else the first evaluation).
    pub session_start_head: Option<String>,
    pub plan_files: Vec<PlanArtefact>,
    /// Commits reachable from HEAD but not from the session's start, newest first.
    pub commits_since_start: Vec<SessionCommit>,
    /// Whether a history walk stopped at its bound (introducing commits may be unknown).
    pub truncated: bool,
    /// How many paths of the working tree have uncommitted changes (`None`: unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uncommitted: Option<usize>,
}

impl Evidence {
    pub fn plan(&self, path: &str) -> Option<&PlanArtefact> {
        self.plan_files.iter().find(|p| p.path == path)
    }
}

/// The stop reason and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StopReason {
    pub text: Option<String>,
    /// `payload`, `transcript` or `none`.
    pub source: &'static str,
}

/// The mode the gate runs in after the kill switch and the stored mode are applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Switches {
    /// The kill switch is on (database flag or `gate.enabled = false`): allow everything.
    Killed,
    Mode(crate::config::Mode),
}

/// Resolve the effective mode. Precedence, strongest first: the kill switch (the
/// database flag set by `gate kill-switch --set`, or `gate.enabled = false` /
/// `PREMERGE_GATE=0`); then `PREMERGE_GATE_MODE` in the environment (a per-run
/// override); then the mode stored by `gate set --mode`; then `gate.mode` from
/// `premerge.toml` / git config; then the default.
pub(crate) fn resolve_switches(
    db_kill: bool,
    cfg_enabled: bool,
    env_mode: Option<crate::config::Mode>,
    db_mode: Option<crate::config::Mode>,
    cfg_mode: crate::config::Mode,
) -> Switches {
    if db_kill || !cfg_enabled {
        return Switches::Killed;
    }
    Switches::Mode(env_mode.or(db_mode).unwrap_or(cfg_mode))
}

/// The continue ceiling as a function of the session's continue count after this
/// continue was counted: the `CONTINUE_CEILING + 1`-th continue is force-allowed.
pub(crate) fn ceiling_decision(count_after_increment: u32) -> Decision {
    if count_after_increment > CONTINUE_CEILING { Decision::ForceAllow } else { Decision::Continue }
}

/// Evidence builders shared by the unit tests of this area.
#[cfg(test)]
pub(crate) mod fixture {
    use super::{Evidence, PlanArtefact, SessionCommit};

    /// A plan file committed in commit `a…a` with `steps` unchecked steps.
    pub(crate) fn plan(path: &str, steps: usize, created_this_session: bool) -> PlanArtefact {
        PlanArtefact {
            path: path.into(),
            introducing_commit: Some("a".repeat(40)),
            latest_commit: Some("a".repeat(40)),
            created_this_session,
            modified_this_session: created_this_session,
            exists: true,
            worktree_blob: Some("b".repeat(40)),
            unchecked_steps: (0..steps.min(5)).map(|i| format!("step {i}")).collect(),
            unchecked_count: steps,
            head_unchecked_count: steps,
            head_unchecked_steps: (0..steps.min(5)).map(|i| format!("step {i}")).collect(),
        }
    }

    /// Evidence at HEAD `c…c`, session started at `a…a`, with `commits` session commits
    /// (the newest, when there is one, is `c…c`).
    pub(crate) fn evidence(plan_files: Vec<PlanArtefact>, commits: usize) -> Evidence {
        let shas = ["c", "d", "e", "f"];
        Evidence {
            head: Some("c".repeat(40)),
            session_start_head: Some("a".repeat(40)),
            plan_files,
            commits_since_start: (0..commits)
                .map(|i| SessionCommit { sha: shas[i % shas.len()].repeat(40), summary: format!("commit {i}") })
                .collect(),
            truncated: false,
            uncommitted: Some(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Mode;

    #[test]
    fn third_continue_is_force_allowed() {
        assert_eq!(ceiling_decision(1), Decision::Continue);
        assert_eq!(ceiling_decision(2), Decision::Continue);
        assert_eq!(ceiling_decision(3), Decision::ForceAllow);
        assert_eq!(ceiling_decision(9), Decision::ForceAllow);
    }

    #[test]
    fn kill_switch_wins_over_every_mode() {
        for m in [Mode::Off, Mode::Shadow, Mode::Enforce] {
            assert_eq!(resolve_switches(true, true, Some(m), Some(m), m), Switches::Killed);
            assert_eq!(resolve_switches(false, false, Some(m), Some(m), m), Switches::Killed);
        }
    }

    #[test]
    fn env_mode_beats_stored_mode_beats_config() {
        let r = resolve_switches(false, true, Some(Mode::Shadow), Some(Mode::Off), Mode::Enforce);
        assert_eq!(r, Switches::Mode(Mode::Shadow));
        let r = resolve_switches(false, true, None, Some(Mode::Off), Mode::Enforce);
        assert_eq!(r, Switches::Mode(Mode::Off));
        let r = resolve_switches(false, true, None, None, Mode::Shadow);
        assert_eq!(r, Switches::Mode(Mode::Shadow));
    }

    #[test]
    fn failure_kind_names_are_unique() {
        let mut names: Vec<_> = FailureKind::ALL.iter().map(|k| k.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FailureKind::ALL.len());
    }
}
