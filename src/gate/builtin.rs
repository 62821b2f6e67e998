//! The built-in deterministic authority: phrase classes of the stop reason, the
//! plan's unchecked steps and the session's commits. It never cites anything that
//! is not in the evidence, and its verdicts pass the same validation as an external
//! authority's.

use super::rules::{Decision, Pointer, Rule, Verdict};
use super::{Evidence, PlanArtefact};

/// Phrasings of a stop "to save context": the drift the gate exists to catch.
const CONTEXT_PHRASES: &[&str] = &[
    "preserve context",
    "preserving context",
    "save context",
    "conserve context",
    "context window",
    "context limit",
    "context budget",
    "running low on context",
    "remaining context",
    "fresh session",
    "new session",
    "next session",
    "fresh conversation",
    "new conversation",
    "pick this up later",
    "pick up where",
    "good stopping point",
    "natural stopping point",
    "token budget",
];

/// The stop concerns the stop gate itself.
const SELF_PHRASES: &[&str] = &["stop gate", "stop hook", "stop-hook", "premerge gate"];

const ERROR_PHRASES: &[&str] = &[
    "error:",
    "failed with",
    "fails with",
    "cannot proceed",
    "can't proceed",
    "unable to proceed",
    "permission denied",
    "blocked by",
    "is broken",
    "crashed",
    "panicked",
    "compilation error",
    "build fails",
    "build failed",
];

const MISSING_INFO_PHRASES: &[&str] = &[
    "need more information",
    "need more details",
    "could you provide",
    "can you provide",
    "please provide",
    "need access to",
    "need the credentials",
    "missing credentials",
    "i don't have access",
    "i do not have access",
];

const QUESTION_PHRASES: &[&str] = &[
    "would you like",
    "do you want",
    "should i ",
    "which option",
    "which approach",
    "do you prefer",
    "would you prefer",
    "please confirm",
    "let me know",
];

const COMPLETION_PHRASES: &[&str] = &[
    "all steps are complete",
    "all steps complete",
    "all tasks are complete",
    "all tasks complete",
    "the plan is complete",
    "is now complete",
    "are now complete",
    "work is complete",
    "work is done",
    "everything is done",
    "all done",
    "finished the",
    "i have finished",
    "i've finished",
    "successfully implemented",
    "implementation is complete",
    "tests pass",
    "tests are passing",
    "all checks pass",
];

fn any(text: &str, phrases: &[&str]) -> bool {
    phrases.iter().any(|p| text.contains(p))
}

/// The built-in authority's verdict.
pub fn decide(stop_reason: Option<&str>, evidence: &Evidence) -> Verdict {
    let Some(reason) = stop_reason.map(str::to_lowercase).filter(|r| !r.trim().is_empty()) else {
        return allow_like(Rule::AmbiguousInsufficientSignal, "no stop reason available");
    };
    if any(&reason, SELF_PHRASES) {
        return allow_like(Rule::MetaSelfReference, "the stop reason concerns the stop gate itself");
    }
    if any(&reason, CONTEXT_PHRASES) {
        return match continuation(evidence) {
            Some(v) => v,
            None => allow_like(
                Rule::AmbiguousInsufficientSignal,
                "context-preservation phrasing but no durable artefact to continue from",
            ),
        };
    }
    if any(&reason, ERROR_PHRASES) {
        return allow_like(Rule::LegitError, "the stop reason reports an error");
    }
    if any(&reason, MISSING_INFO_PHRASES) {
        return allow_like(Rule::LegitMissingInfo, "the stop reason asks for information");
    }
    if any(&reason, QUESTION_PHRASES) || reason.trim_end().ends_with('?') {
        return allow_like(Rule::LegitDesignQuestion, "the stop reason asks the user a question");
    }
    if any(&reason, COMPLETION_PHRASES) {
        return allow_like(Rule::LegitCompletion, "the stop reason reports completion");
    }
    allow_like(Rule::AmbiguousInsufficientSignal, "no phrasing class matched")
}

fn allow_like(rule: Rule, why: &str) -> Verdict {
    let decision = match rule.class() {
        super::RuleClass::Escalate => Decision::Escalate,
        _ => Decision::Allow,
    };
    Verdict { decision, rule, pointer: Pointer::default(), rationale: format!("built-in: {why}") }
}

/// The strongest continue rule the evidence supports, if any.
fn continuation(ev: &Evidence) -> Option<Verdict> {
    // Only a plan that predates the session is a durable artefact: a plan written in
    // this session may be the rationalisation itself.
    let durable: Vec<&PlanArtefact> = ev.plan_files.iter().filter(|p| p.exists && !p.created_this_session).collect();
    let with_steps = durable.iter().copied().filter(|p| p.unchecked_count > 0).max_by_key(|p| p.modified_this_session);
    let newest = ev.commits_since_start.first();
    let cont = |rule, pointer, why: &str| Verdict {
        decision: Decision::Continue,
        rule,
        pointer,
        rationale: format!("built-in: context-preservation phrasing; {why}"),
    };
    match (with_steps, newest) {
        (Some(plan), Some(commit)) if plan.latest_commit.is_some() => Some(cont(
            Rule::U1DurableArtifactContinuationSafe,
            Pointer {
                plan_file: Some(plan.path.clone()),
                plan_commit_sha: plan.latest_commit.clone(),
                incremental_commit_sha: Some(commit.sha.clone()),
            },
            "committed plan with unchecked steps and a commit since the session started",
        )),
        (Some(plan), _) => Some(cont(
            Rule::U2PlanFileNextStepExplicit,
            Pointer {
                plan_file: Some(plan.path.clone()),
                plan_commit_sha: plan.latest_commit.clone(),
                ..Pointer::default()
            },
            "committed plan with unchecked steps",
        )),
        (None, Some(commit)) if !durable.is_empty() => Some(cont(
            Rule::U3RecentCommitProvesIncremental,
            Pointer { incremental_commit_sha: Some(commit.sha.clone()), ..Pointer::default() },
            "commits since the session started next to a committed plan",
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::rules::validate;
    use crate::gate::{PlanArtefact, fixture};

    fn plan(steps: usize, created: bool) -> PlanArtefact {
        fixture::plan("docs/plans/p.md", steps, created)
    }

    fn ev(plans: Vec<PlanArtefact>, commits: usize) -> Evidence {
        fixture::evidence(plans, commits)
    }

    const DRIFT: &str = "I'll stop here to preserve context and continue in a fresh session.";

    #[test]
    fn every_rule_path() {
        let cases: Vec<(Option<&str>, Evidence, Rule)> = vec![
            (Some(DRIFT), ev(vec![plan(2, false)], 1), Rule::U1DurableArtifactContinuationSafe),
            (Some(DRIFT), ev(vec![plan(2, false)], 0), Rule::U2PlanFileNextStepExplicit),
            (Some(DRIFT), ev(vec![plan(0, false)], 2), Rule::U3RecentCommitProvesIncremental),
            (Some(DRIFT), ev(vec![plan(2, true)], 2), Rule::AmbiguousInsufficientSignal),
            (Some(DRIFT), ev(vec![], 0), Rule::AmbiguousInsufficientSignal),
            (Some("Which approach do you prefer for the cache?"), ev(vec![], 0), Rule::LegitDesignQuestion),
            (Some("Could you provide the staging URL?"), ev(vec![], 0), Rule::LegitMissingInfo),
            (Some("cargo build failed with a linker error: cannot proceed"), ev(vec![], 0), Rule::LegitError),
            (Some("All steps are complete and the tests pass."), ev(vec![plan(2, false)], 1), Rule::LegitCompletion),
            (Some("Paused: the stop hook keeps firing"), ev(vec![plan(2, false)], 1), Rule::MetaSelfReference),
            (Some("Here is a summary of the diff."), ev(vec![], 0), Rule::AmbiguousInsufficientSignal),
            (None, ev(vec![plan(2, false)], 1), Rule::AmbiguousInsufficientSignal),
        ];
        for (reason, evidence, rule) in cases {
            let v = decide(reason, &evidence);
            assert_eq!(v.rule, rule, "{reason:?}");
            validate(&v, &evidence).unwrap_or_else(|f| panic!("{reason:?}: built-in verdict invalid: {f:?}"));
        }
    }
}
