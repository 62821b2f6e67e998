//! Every line of `events.jsonl`, as one type.
//!
//! [`Event`] is internally tagged by `kind`: the variant's name on disk is the
//! `kind` string readers match on (`plan`, `fence_pre_push`, `cap-hit`, ...), and its
//! fields are the line's other keys. [`crate::store::append_event`] takes only an
//! [`Event`], adds `ts` and writes it as canonical JSON (sorted keys), so a line's
//! bytes depend on its values alone, never on the order fields are declared in.
//!
//! The kinds are a contract (scripts and `premerge drain` read them): add variants and
//! optional fields, never rename one. `docs/artefacts.md` lists them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::Mode;

/// One line of `events.jsonl` (without its `ts`, which the writer adds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind")]
pub enum Event {
    /// `plan` wrote `classified-NN.json` and `fix-waves-NN.json`.
    #[serde(rename = "plan")]
    Plan {
        attempt: u32,
        waves: usize,
        blocker: usize,
        blocked_on_admitted: usize,
        /// Total of `blocked_on_dropped_reasons`.
        blocked_on_dropped: usize,
        blocked_on_joined: usize,
        blocked_on_dropped_reasons: BTreeMap<String, usize>,
        findings_dropped: BTreeMap<String, usize>,
        suggestions_carried: usize,
    },
    /// `blocked record` merged a fixer's return into `blocked-on-NN.json`.
    #[serde(rename = "blocked_recorded")]
    BlockedRecorded { attempt: u32, from_file: String, added: usize, dropped: BTreeMap<String, usize> },
    /// `converge` decided.
    #[serde(rename = "converge")]
    Converge { attempt: u32, decision: crate::waves::converge::Decision },
    /// The pre-push fence judged a push inside an open fix loop.
    #[serde(rename = "fence_pre_push")]
    FencePrePush {
        /// `shadow` or `enforce`.
        mode: Mode,
        attempt: u32,
        /// The loop's id, `(unreadable)` when its record is not.
        #[serde(rename = "loop")]
        loop_id: String,
        /// Stray paths; a name that is not UTF-8 is escaped (`"w\377.rs"`).
        strays: Vec<String>,
        refused: bool,
        why: String,
    },
    /// `plan --attempt 1` opened a fix loop.
    #[serde(rename = "loop_opened")]
    LoopOpened {
        #[serde(rename = "loop")]
        loop_id: String,
        attempt: u32,
        run_dir: String,
    },
    /// A later `plan` advanced the open fix loop.
    #[serde(rename = "loop_advanced")]
    LoopAdvanced {
        #[serde(rename = "loop")]
        loop_id: String,
        attempt: u32,
        run_dir: String,
    },
    /// A fix loop closed (`by`: `operator` or `converge STOP_*`).
    #[serde(rename = "loop_closed")]
    LoopClosed {
        #[serde(rename = "loop")]
        loop_id: String,
        by: String,
        attempt: u32,
    },
    /// A stripe's first proposal was written.
    #[serde(rename = "refinement_proposal_emitted")]
    ProposalEmitted {
        stripe: String,
        scope: String,
        signal: String,
        algorithm: String,
        evidence_row_ids: Vec<String>,
        proposal_path: String,
        workflow_id: Option<String>,
    },
    /// The same stripe recurred while its proposal is open.
    #[serde(rename = "stripe_repeat_halt")]
    StripeRepeatHalt {
        stripe: String,
        existing_proposal_path: String,
        new_evidence_row_ids: Vec<String>,
        halted_workflow_id: Option<String>,
        mode: Mode,
    },
    /// `proposal apply` moved an open proposal to `applied/`.
    #[serde(rename = "proposal_applied")]
    ProposalApplied {
        stripe: String,
        from: String,
        proposal_path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// `proposal reject` moved an open proposal to `rejected/`.
    #[serde(rename = "proposal_rejected")]
    ProposalRejected {
        stripe: String,
        from: String,
        proposal_path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A scan wrote a guard memory.
    #[serde(rename = "guard-memory-written")]
    GuardMemoryWritten(GuardMemory),
    /// A scan found the memory already stored for this cycle.
    #[serde(rename = "guard-memory-duplicate-skipped")]
    GuardMemoryDuplicateSkipped(GuardMemory),
    /// The memory backend command failed (the embedded copy is kept); `error` says why.
    #[serde(rename = "guard-memory-backend-failed")]
    GuardMemoryBackendFailed(GuardMemory),
    /// `review route` hit a cap.
    #[serde(rename = "cap-hit")]
    CapHit {
        cap: String,
        #[serde(rename = "nextStep")]
        next_step: crate::review::route::NextStep,
        round: u32,
        /// Findings of the round (the round cap).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        findings: Option<usize>,
        /// Files the seams span (the repeat-finding-seam cap).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        files: Option<usize>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        issue: Option<u64>,
    },
    /// `review route` escalated repeat-finding seams to a step back.
    #[serde(rename = "step-back-triggered")]
    StepBackTriggered {
        round: u32,
        seams: usize,
        files: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        issue: Option<u64>,
    },
    /// The step-back brief and handoff were written (and dispatched when configured).
    #[serde(rename = "step-back-handoff")]
    StepBackHandoff {
        round: u32,
        /// The handoff's `status`.
        status: Value,
        brief: String,
        handoff: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        issue: Option<u64>,
    },
    /// A background job started draining the queue.
    #[serde(rename = "background-job-started")]
    BackgroundJobStarted { pid: u32, entries_done: u64 },
    /// A background job finished.
    #[serde(rename = "background-job-finished")]
    BackgroundJobFinished { pid: u32, entries_done: u64 },
    /// A stop-gate evaluation the database could not store: the row as `gate log` shows it.
    #[serde(rename = "gate-evaluation")]
    GateEvaluation(Box<crate::store::gate_db::EventRow>),
    /// `fence check` compared a change with an attempt's allowed set (what the
    /// reviewer's comment, `show attempt --format markdown`, shows as the fence's result).
    #[serde(rename = "fence_check")]
    FenceCheck {
        attempt: u32,
        /// The owner checked with `--owner`; absent for the whole allowed set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner: Option<String>,
        /// Changed paths compared.
        changed: usize,
        /// Stray paths; a name that is not UTF-8 is escaped (`"w\377.rs"`).
        strays: Vec<String>,
        /// Whether the check refused (strays, or no trustworthy plan).
        refused: bool,
        /// `ok`, or `untrustworthy` when there was no plan the fence could read.
        plan: String,
    },
}

/// The fields of a guard-memory event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GuardMemory {
    /// Row id in `premerge.db`.
    pub id: i64,
    pub cycle: String,
    pub file: String,
    pub symbol: String,
    pub rule: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Event {
    /// The `kind` string this event is written under.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Plan { .. } => "plan",
            Event::BlockedRecorded { .. } => "blocked_recorded",
            Event::Converge { .. } => "converge",
            Event::FencePrePush { .. } => "fence_pre_push",
            Event::LoopOpened { .. } => "loop_opened",
            Event::LoopAdvanced { .. } => "loop_advanced",
            Event::LoopClosed { .. } => "loop_closed",
            Event::ProposalEmitted { .. } => "refinement_proposal_emitted",
            Event::StripeRepeatHalt { .. } => "stripe_repeat_halt",
            Event::ProposalApplied { .. } => "proposal_applied",
            Event::ProposalRejected { .. } => "proposal_rejected",
            Event::GuardMemoryWritten(_) => "guard-memory-written",
            Event::GuardMemoryDuplicateSkipped(_) => "guard-memory-duplicate-skipped",
            Event::GuardMemoryBackendFailed(_) => "guard-memory-backend-failed",
            Event::CapHit { .. } => "cap-hit",
            Event::StepBackTriggered { .. } => "step-back-triggered",
            Event::StepBackHandoff { .. } => "step-back-handoff",
            Event::BackgroundJobStarted { .. } => "background-job-started",
            Event::BackgroundJobFinished { .. } => "background-job-finished",
            Event::GateEvaluation(_) => "gate-evaluation",
            Event::FenceCheck { .. } => "fence_check",
        }
    }

    /// The line as written, without `ts`: a JSON object with `kind` and the fields.
    pub(crate) fn to_value(&self) -> serde_json::Result<Value> {
        serde_json::to_value(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(e: &Event) -> String {
        crate::canonical::to_compact(e).unwrap()
    }

    #[test]
    fn kind_is_the_tag_written() {
        let e = Event::Converge { attempt: 2, decision: crate::waves::converge::Decision::Continue };
        assert_eq!(line(&e), r#"{"attempt":2,"decision":"CONTINUE","kind":"converge"}"#);
        assert_eq!(e.to_value().unwrap()["kind"], e.kind());
    }

    #[test]
    fn renamed_fields_and_absent_options_keep_the_old_keys() {
        let e = Event::CapHit {
            cap: "round-cap".into(),
            next_step: crate::review::route::NextStep::Handoff,
            round: 5,
            findings: Some(3),
            files: None,
            issue: None,
        };
        assert_eq!(line(&e), r#"{"cap":"round-cap","findings":3,"kind":"cap-hit","nextStep":"handoff","round":5}"#);
        let e = Event::LoopClosed { loop_id: "l1".into(), by: "operator".into(), attempt: 1 };
        assert_eq!(line(&e), r#"{"attempt":1,"by":"operator","kind":"loop_closed","loop":"l1"}"#);
        // A workflow id that is absent is written as null, as it always was.
        let e = Event::StripeRepeatHalt {
            stripe: "s:x:0123abcd".into(),
            existing_proposal_path: "p.md".into(),
            new_evidence_row_ids: vec!["1".into()],
            halted_workflow_id: None,
            mode: Mode::Shadow,
        };
        assert_eq!(
            line(&e),
            r#"{"existing_proposal_path":"p.md","halted_workflow_id":null,"kind":"stripe_repeat_halt","mode":"shadow","new_evidence_row_ids":["1"],"stripe":"s:x:0123abcd"}"#
        );
    }

    #[test]
    fn a_written_line_reads_back_as_the_same_event() {
        let events = [
            Event::GuardMemoryBackendFailed(GuardMemory {
                id: 3,
                cycle: "c".into(),
                file: "a.rs".into(),
                symbol: "S.f".into(),
                rule: "r".into(),
                error: Some("exit 1".into()),
            }),
            Event::GateEvaluation(Box::new(crate::store::gate_db::EventRow {
                ts: "2026-11-30T00:00:00Z".into(),
                mode: Mode::Shadow,
                ..Default::default()
            })),
            Event::BackgroundJobFinished { pid: 7, entries_done: 2 },
        ];
        for e in events {
            let mut v = e.to_value().unwrap();
            v["ts"] = Value::String("2026-11-30T00:00:00Z".into());
            let back: Event = serde_json::from_value(v).unwrap();
            assert_eq!(back, e);
        }
        // An unknown kind is not an event this version writes.
        assert!(serde_json::from_str::<Event>(r#"{"kind":"nope","ts":"t"}"#).is_err());
    }
}
