//! The frozen rule enumeration, the decisions, and the structural validation of an
//! authority's answer: the rule must be one of [`Rule::ALL`], the decision must agree
//! with the rule's class, and every evidence pointer must match the collected
//! artefacts verbatim. Whatever fails here makes the gate fall open.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Evidence, Failure, FailureKind};

/// What a rule lets the authority decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleClass {
    Continue,
    Allow,
    Escalate,
}

/// Every rule an authority may cite. Frozen: adding a rule is a reviewed change to
/// this enumeration, the `CHECK` constraint of `gate_events.rule` and `docs/gate.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Rule {
    /// A committed plan and a commit since it: continuing loses nothing.
    #[serde(rename = "U1_DURABLE_ARTIFACT_CONTINUATION_SAFE")]
    U1DurableArtifactContinuationSafe,
    /// The plan file names the next step explicitly.
    #[serde(rename = "U2_PLAN_FILE_NEXT_STEP_EXPLICIT")]
    U2PlanFileNextStepExplicit,
    /// A commit made in this session proves the work advances in increments.
    #[serde(rename = "U3_RECENT_COMMIT_PROVES_INCREMENTAL")]
    U3RecentCommitProvesIncremental,
    /// The agent stops to ask a design question.
    #[serde(rename = "U_LEGIT_DESIGN_QUESTION")]
    LegitDesignQuestion,
    /// The agent needs information only the user has.
    #[serde(rename = "U_LEGIT_MISSING_INFO")]
    LegitMissingInfo,
    /// The agent hit an error it cannot resolve alone.
    #[serde(rename = "U_LEGIT_ERROR")]
    LegitError,
    /// The work is done.
    #[serde(rename = "U_LEGIT_COMPLETION")]
    LegitCompletion,
    /// The stop concerns the stop gate itself.
    #[serde(rename = "U_META_SELF_REFERENCE")]
    MetaSelfReference,
    /// Not enough signal to decide: let the stop happen and flag it for an operator.
    #[serde(rename = "U_AMBIGUOUS_INSUFFICIENT_SIGNAL")]
    AmbiguousInsufficientSignal,
}

impl Rule {
    pub(crate) const ALL: [Rule; 9] = [
        Rule::U1DurableArtifactContinuationSafe,
        Rule::U2PlanFileNextStepExplicit,
        Rule::U3RecentCommitProvesIncremental,
        Rule::LegitDesignQuestion,
        Rule::LegitMissingInfo,
        Rule::LegitError,
        Rule::LegitCompletion,
        Rule::MetaSelfReference,
        Rule::AmbiguousInsufficientSignal,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Rule::U1DurableArtifactContinuationSafe => "U1_DURABLE_ARTIFACT_CONTINUATION_SAFE",
            Rule::U2PlanFileNextStepExplicit => "U2_PLAN_FILE_NEXT_STEP_EXPLICIT",
            Rule::U3RecentCommitProvesIncremental => "U3_RECENT_COMMIT_PROVES_INCREMENTAL",
            Rule::LegitDesignQuestion => "U_LEGIT_DESIGN_QUESTION",
            Rule::LegitMissingInfo => "U_LEGIT_MISSING_INFO",
            Rule::LegitError => "U_LEGIT_ERROR",
            Rule::LegitCompletion => "U_LEGIT_COMPLETION",
            Rule::MetaSelfReference => "U_META_SELF_REFERENCE",
            Rule::AmbiguousInsufficientSignal => "U_AMBIGUOUS_INSUFFICIENT_SIGNAL",
        }
    }

    pub fn parse(id: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.id() == id)
    }

    pub fn class(self) -> RuleClass {
        match self {
            Rule::U1DurableArtifactContinuationSafe
            | Rule::U2PlanFileNextStepExplicit
            | Rule::U3RecentCommitProvesIncremental => RuleClass::Continue,
            Rule::LegitDesignQuestion
            | Rule::LegitMissingInfo
            | Rule::LegitError
            | Rule::LegitCompletion
            | Rule::MetaSelfReference => RuleClass::Allow,
            Rule::AmbiguousInsufficientSignal => RuleClass::Escalate,
        }
    }
}

/// The outcome of one evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Block the stop: the agent gets a reminder and continues.
    Continue,
    /// Let the stop happen.
    Allow,
    /// Let the stop happen and flag it for an operator.
    Escalate,
    /// The authority said continue but the session hit the continue ceiling.
    ForceAllow,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Continue => "continue",
            Decision::Allow => "allow",
            Decision::Escalate => "escalate",
            Decision::ForceAllow => "force_allow",
        }
    }

    /// The decision an authority may give (not `force_allow`, which only premerge assigns).
    fn parse_authority(s: &str) -> Option<Decision> {
        match s {
            "continue" => Some(Decision::Continue),
            "allow" => Some(Decision::Allow),
            "escalate" => Some(Decision::Escalate),
            _ => None,
        }
    }

    fn class(self) -> RuleClass {
        match self {
            Decision::Continue => RuleClass::Continue,
            Decision::Allow | Decision::ForceAllow => RuleClass::Allow,
            Decision::Escalate => RuleClass::Escalate,
        }
    }
}

/// Where a `continue` points: values that must match the collected evidence verbatim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pointer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_commit_sha: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incremental_commit_sha: Option<String>,
}

/// A validated authority answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    pub rule: Rule,
    pub pointer: Pointer,
    /// The authority's free text: logged, never shown to the agent.
    pub rationale: String,
    /// The built-in authority's own sentence naming the session fact that refuted the
    /// stop (a failed test run, open plan steps, an instruction the user never gave),
    /// shown in the reminder through `text::quote`. Never set from an external answer.
    pub finding: Option<String>,
}

/// The wire shape of an authority's answer (unknown fields ignored).
#[derive(Debug, Deserialize)]
struct Answer {
    decision: String,
    rule: String,
    #[serde(default)]
    evidence: Option<Pointer>,
    #[serde(default)]
    rationale: Option<String>,
}

/// Parse and validate an external authority's stdout against the evidence.
pub fn parse_answer(stdout: &str, evidence: &Evidence) -> Result<Verdict, Failure> {
    let value: Value = serde_json::from_str(stdout.trim())
        .map_err(|e| Failure::new(FailureKind::Malformed, format!("answer is not JSON: {e}")))?;
    let answer: Answer = serde_json::from_value(value)
        .map_err(|e| Failure::new(FailureKind::Malformed, format!("answer has the wrong shape: {e}")))?;
    let decision = Decision::parse_authority(&answer.decision).ok_or_else(|| {
        Failure::new(FailureKind::Malformed, format!("unknown decision `{}`", clip(&answer.decision)))
    })?;
    let rule = Rule::parse(&answer.rule).ok_or_else(|| {
        Failure::new(FailureKind::InvalidRule, format!("rule `{}` is not enumerated", clip(&answer.rule)))
    })?;
    let verdict = Verdict {
        decision,
        rule,
        pointer: answer.evidence.unwrap_or_default(),
        rationale: answer.rationale.unwrap_or_default(),
        finding: None,
    };
    validate(&verdict, evidence)?;
    Ok(verdict)
}

/// The structural checks every verdict passes, the built-in authority's included:
/// class agreement, required pointers, verbatim pointer match.
pub fn validate(v: &Verdict, evidence: &Evidence) -> Result<(), Failure> {
    if v.decision == Decision::ForceAllow || v.decision.class() != v.rule.class() {
        return Err(Failure::new(
            FailureKind::InvalidRule,
            format!("decision `{}` disagrees with the class of {}", v.decision.as_str(), v.rule.id()),
        ));
    }
    if v.decision != Decision::Continue {
        return Ok(());
    }
    let p = &v.pointer;
    let need = |present: bool, field: &str| {
        if present {
            Ok(())
        } else {
            Err(Failure::new(FailureKind::MissingPointer, format!("{} requires `{field}`", v.rule.id())))
        }
    };
    match v.rule {
        Rule::U1DurableArtifactContinuationSafe => {
            need(p.plan_file.is_some(), "plan_file")?;
            need(p.plan_commit_sha.is_some(), "plan_commit_sha")?;
            need(p.incremental_commit_sha.is_some(), "incremental_commit_sha")?;
        }
        Rule::U2PlanFileNextStepExplicit => need(p.plan_file.is_some(), "plan_file")?,
        Rule::U3RecentCommitProvesIncremental => need(p.incremental_commit_sha.is_some(), "incremental_commit_sha")?,
        _ => {}
    }
    let invalid = |what: String| Err(Failure::new(FailureKind::InvalidEvidence, what));
    let plan = match &p.plan_file {
        Some(path) => match evidence.plan(path) {
            Some(a) => Some(a),
            None => return invalid(format!("plan_file `{}` is not a collected plan file", clip(path))),
        },
        None => None,
    };
    if let Some(sha) = &p.plan_commit_sha {
        let Some(plan) = plan else {
            return invalid("plan_commit_sha without plan_file".to_string());
        };
        let matches = [&plan.introducing_commit, &plan.latest_commit].iter().any(|c| c.as_deref() == Some(sha));
        if !matches {
            return invalid(format!("plan_commit_sha `{}` is not a commit of `{}`", clip(sha), plan.path));
        }
    }
    if let Some(sha) = &p.incremental_commit_sha
        && !evidence.commits_since_start.iter().any(|c| &c.sha == sha)
    {
        return invalid(format!("incremental_commit_sha `{}` is not a commit of this session", clip(sha)));
    }
    if v.rule == Rule::U2PlanFileNextStepExplicit && plan.is_some_and(|a| a.open_steps() == 0) {
        return invalid("the cited plan file has no unchecked step".to_string());
    }
    Ok(())
}

/// A value echoed into a log line: at most 80 characters, no control characters.
fn clip(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::fixture;

    fn evidence() -> Evidence {
        fixture::evidence(vec![fixture::plan("docs/plans/p.md", 1, false)], 1)
    }

    fn answer(decision: &str, rule: &str, ev: &str) -> String {
        format!(r#"{{"decision":"{decision}","rule":"{rule}","evidence":{ev},"rationale":"because","extra":1}}"#)
    }

    #[test]
    fn rule_ids_round_trip_and_classes_are_fixed() {
        for r in Rule::ALL {
            assert_eq!(Rule::parse(r.id()), Some(r));
        }
        let continues = Rule::ALL.iter().filter(|r| r.class() == RuleClass::Continue).count();
        let escalates = Rule::ALL.iter().filter(|r| r.class() == RuleClass::Escalate).count();
        assert_eq!((continues, escalates), (3, 1));
    }

    #[test]
    fn valid_u1_answer_passes() {
        let ev = evidence();
        let p = format!(
            r#"{{"plan_file":"docs/plans/p.md","plan_commit_sha":"{}","incremental_commit_sha":"{}"}}"#,
            "a".repeat(40),
            "c".repeat(40)
        );
        let v = parse_answer(&answer("continue", "U1_DURABLE_ARTIFACT_CONTINUATION_SAFE", &p), &ev).unwrap();
        assert_eq!(v.rule, Rule::U1DurableArtifactContinuationSafe);
        assert_eq!(v.rationale, "because");
    }

    #[test]
    fn failures_have_their_kinds() {
        let ev = evidence();
        let kind = |s: &str| parse_answer(s, &ev).unwrap_err().kind;
        assert_eq!(kind("not json"), FailureKind::Malformed);
        assert_eq!(kind(r#"{"decision":"maybe","rule":"U_LEGIT_ERROR"}"#), FailureKind::Malformed);
        assert_eq!(kind(r#"{"decision":"allow","rule":"U9_INVENTED"}"#), FailureKind::InvalidRule);
        assert_eq!(kind(r#"{"decision":"continue","rule":"U_LEGIT_ERROR"}"#), FailureKind::InvalidRule);
        assert_eq!(kind(r#"{"decision":"allow","rule":"U2_PLAN_FILE_NEXT_STEP_EXPLICIT"}"#), FailureKind::InvalidRule);
        let u1_plan_only =
            answer("continue", "U1_DURABLE_ARTIFACT_CONTINUATION_SAFE", r#"{"plan_file":"docs/plans/p.md"}"#);
        assert_eq!(kind(&u1_plan_only), FailureKind::MissingPointer);
        let u3_none = answer("continue", "U3_RECENT_COMMIT_PROVES_INCREMENTAL", "{}");
        assert_eq!(kind(&u3_none), FailureKind::MissingPointer);
        let u2_other = answer("continue", "U2_PLAN_FILE_NEXT_STEP_EXPLICIT", r#"{"plan_file":"docs/plans/q.md"}"#);
        assert_eq!(kind(&u2_other), FailureKind::InvalidEvidence);
        let u3_foreign = answer(
            "continue",
            "U3_RECENT_COMMIT_PROVES_INCREMENTAL",
            &format!(r#"{{"incremental_commit_sha":"{}"}}"#, "d".repeat(40)),
        );
        assert_eq!(kind(&u3_foreign), FailureKind::InvalidEvidence);
    }
}
