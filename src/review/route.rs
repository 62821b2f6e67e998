//! The routing table of a review round: which step comes next, which caps fired,
//! and the events that record it.
//!
//! | findings | round            | seam | escalation | nextStep    | cap                   |
//! |----------|------------------|------|------------|-------------|-----------------------|
//! | none     | any              |  -   |     -      | `done`      | -                     |
//! | some     | 1                | yes  |     on     | `step-back` | `repeat-finding-seam` |
//!
//! (A seam here is one of findings that are not suggestions: see [`route`].)
//!
//! | findings | round            | seam | escalation | nextStep    | cap                   |
//! |----------|------------------|------|------------|-------------|-----------------------|
//! | some     | 1, 2             |  -   |     -      | `lens-fix`  | -                     |
//! | some     | >= [`ROUND_CAP`] |  -   |     -      | `handoff`   | `round-cap`           |

use crate::events::Event;
use serde::Serialize;

use super::caps::{REPEAT_FINDING_SEAM, ROUND_CAP_NAME};
use super::seam::{Cluster, seams};
use crate::findings::Finding;

/// The round at which a review cycle with findings stops fixing and hands off to a
/// person. Three: two fix rounds are enough for a lens loop to converge on local
/// defects; a third round with findings means the loop is not converging.
pub(crate) const ROUND_CAP: u32 = 3;

/// Escalation to a step-back happens only in this round: later rounds are already in
/// the fix loop, and re-escalating the same seam would loop between the two paths.
pub(crate) const SEAM_ESCALATION_ROUND: u32 = 1;

/// What the cycle does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NextStep {
    Done,
    LensFix,
    StepBack,
    Handoff,
}

/// The serde name (`lens-fix`): serde writes a unit variant's name into a formatter.
impl std::fmt::Display for NextStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.serialize(f)
    }
}

/// Seam as printed in the route output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeamSummary {
    pub lens: String,
    pub title: String,
    pub files: Vec<String>,
}

/// A routing decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Route {
    pub schema_version: u32,
    pub round: u32,
    /// `ISSUES_FOUND`, or `CLEAN` when the round had no findings.
    pub verdict: &'static str,
    #[serde(rename = "nextStep")]
    pub next_step: NextStep,
    pub cap: Option<&'static str>,
    pub seams: Vec<SeamSummary>,
    pub events: Vec<crate::events::Event>,
    /// The full seam clusters (with their findings), for the step-back brief.
    #[serde(skip)]
    pub seam_clusters: Vec<Cluster>,
}

/// The findings that count towards a seam: all of them, or with `blockers_only` those
/// the fixer-wave classification does not call suggestions. `review seams` and `review
/// route` both ask this, so they agree on what is a seam.
pub(crate) fn seam_candidates(findings: &[Finding], blockers_only: bool) -> Vec<Finding> {
    findings
        .iter()
        .filter(|f| !blockers_only || crate::waves::severity_of(f) != Some(crate::waves::Severity::Suggestion))
        .cloned()
        .collect()
}

/// Route one round. `seam_escalation` is the kill switch (`review.seam_escalation`):
/// off, seams are neither detected nor reported, so the output is exactly what it was
/// before seam escalation existed. `blockers_only` (`review.seam_min_severity =
/// "blocker"`) keeps suggestions out of seams; by default every finding counts, as the
/// source's rule has it: a maintainability lens rates duplication low, and duplication
/// across three files is exactly the missing seam.
pub fn route(
    round: u32,
    findings: &[Finding],
    seam_escalation: bool,
    blockers_only: bool,
    issue: Option<u64>,
) -> Route {
    let counted = seam_candidates(findings, blockers_only);
    let clusters = if seam_escalation && !counted.is_empty() { seams(&counted) } else { Vec::new() };
    let mut r = Route {
        schema_version: 1,
        round,
        verdict: if findings.is_empty() { "CLEAN" } else { "ISSUES_FOUND" },
        next_step: NextStep::LensFix,
        cap: None,
        seams: clusters
            .iter()
            .map(|c| SeamSummary { lens: c.lens.clone(), title: c.title.clone(), files: c.files.clone() })
            .collect(),
        events: Vec::new(),
        seam_clusters: Vec::new(),
    };
    if findings.is_empty() {
        r.next_step = NextStep::Done;
    } else if round >= ROUND_CAP {
        r.next_step = NextStep::Handoff;
        r.cap = Some(ROUND_CAP_NAME);
        r.events.push(Event::CapHit {
            cap: ROUND_CAP_NAME.into(),
            next_step: NextStep::Handoff,
            round,
            findings: Some(findings.len()),
            files: None,
            issue,
        });
    } else if round == SEAM_ESCALATION_ROUND && !clusters.is_empty() {
        let mut files: Vec<&str> = clusters.iter().flat_map(|c| c.files.iter().map(String::as_str)).collect();
        files.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        files.dedup();
        r.next_step = NextStep::StepBack;
        r.cap = Some(REPEAT_FINDING_SEAM);
        r.events.push(Event::StepBackTriggered {
            round,
            seams: clusters.len(),
            files: files.iter().map(|f| f.to_string()).collect(),
            issue,
        });
        r.events.push(Event::CapHit {
            cap: REPEAT_FINDING_SEAM.into(),
            next_step: NextStep::StepBack,
            round,
            findings: None,
            files: Some(files.len()),
            issue,
        });
        r.seam_clusters = clusters;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::seam::tests::lens;
    use serde_json::Value;

    fn seam3() -> Vec<Finding> {
        ["a.rs", "b.rs", "c.rs"].iter().map(|f| lens("ARCH", f, &format!("Duplicated filter in {f}"))).collect()
    }

    #[test]
    fn table() {
        assert_eq!(route(1, &[], true, false, None).next_step, NextStep::Done);
        let r = route(1, &seam3(), true, false, Some(7));
        assert_eq!((r.next_step, r.cap), (NextStep::StepBack, Some(REPEAT_FINDING_SEAM)));
        let ev: Vec<Value> = r.events.iter().map(|e| e.to_value().unwrap()).collect();
        assert_eq!(ev[0]["kind"], "step-back-triggered");
        assert_eq!(ev[1]["files"], 3);
        assert_eq!(ev[1]["issue"], 7);
        let r2 = route(2, &seam3(), true, false, None);
        assert_eq!((r2.next_step, r2.cap, r2.events.len()), (NextStep::LensFix, None, 0));
        assert_eq!(r2.seams.len(), 1, "the seam is still reported as a signal");
        let r3 = route(3, &seam3(), true, false, None);
        assert_eq!((r3.next_step, r3.cap), (NextStep::Handoff, Some(ROUND_CAP_NAME)));
    }

    #[test]
    fn kill_switch_is_exactly_the_plain_route() {
        let plain = vec![lens("ARCH", "a.rs", "x"), lens("ARCH", "b.rs", "y"), lens("ARCH", "c.rs", "z")];
        let off = route(1, &seam3(), false, false, None);
        let mut want = route(1, &plain, true, false, None);
        want.round = off.round;
        assert_eq!(off, want);
        assert_eq!(off.next_step, NextStep::LensFix);
    }

    /// The source's rule: three files, one lens and title, whatever the severity. A
    /// maintainability lens rating duplication `low` still escalates, unless the team
    /// asked for blockers only.
    #[test]
    fn low_severity_duplication_is_a_seam_unless_blockers_only() {
        let low: Vec<Finding> = seam3()
            .into_iter()
            .map(|mut f| {
                f.severity = Some("low".into());
                f
            })
            .collect();
        assert_eq!(route(1, &low, true, false, None).next_step, NextStep::StepBack);
        let strict = route(1, &low, true, true, None);
        assert_eq!((strict.next_step, strict.seams.len()), (NextStep::LensFix, 0));
        let mut mixed = low.clone();
        mixed[0].severity = Some("high".into());
        assert_eq!(route(1, &mixed, true, true, None).seams.len(), 0, "one blocker and two suggestions span one file");
        assert_eq!(route(1, &mixed, true, false, None).seams.len(), 1);
    }
}
