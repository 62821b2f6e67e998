//! Converge: should the fix loop run another attempt? Decided from the blocker
//! fingerprints of this attempt and the previous one. Carried findings are left out of
//! the arithmetic: they are consequences a fixer reported, not reviewer findings, and
//! counting them would let carry alone look like progress or regression.

use std::collections::BTreeSet;

use serde::Serialize;

use super::{ClassifiedFinding, Severity};

/// The attempt ceiling: at this attempt the loop stops whatever the findings say. Five
/// rounds of review and fix is where a pipeline's cost outgrows what a person takes to
/// finish the change by hand.
pub(crate) const MAX_ATTEMPTS: u32 = 5;

/// Blockers growing past this ratio of the previous attempt's count (3/2: half as many
/// again) mean the fixes are making things worse; kept as a fraction so the comparison
/// is exact integer arithmetic.
pub(crate) const REGRESSION_RATIO: (usize, usize) = (3, 2);

/// One decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Decision {
    /// Blockers remain and progress was made: run another attempt.
    Continue,
    /// No blockers: done.
    StopGreen,
    /// Every blocker of the previous attempt survived: fixing is not working.
    StopNoProgress,
    /// Blockers grew past [`REGRESSION_RATIO`].
    StopRegressed,
    /// The attempt ceiling [`MAX_ATTEMPTS`] is reached.
    StopExhausted,
}

/// The serde name (`STOP_GREEN`): serde writes a unit variant's name into a formatter.
impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.serialize(f)
    }
}

/// The decision with the numbers behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub decision: Decision,
    pub attempt: u32,
    pub blockers: usize,
    pub previous: Option<usize>,
    /// Previous fingerprints gone now.
    pub fixed: usize,
    /// Fingerprints not seen in the previous attempt.
    pub new: usize,
}

/// Fingerprints of the reviewer (not carried) blockers.
pub(crate) fn blocker_fingerprints(findings: &[ClassifiedFinding]) -> BTreeSet<String> {
    findings.iter().filter(|f| f.severity == Severity::Blocker && !f.carried).map(|f| f.fingerprint.clone()).collect()
}

/// Decide. `previous` is `None` for the first attempt.
pub fn decide(attempt: u32, now: &BTreeSet<String>, previous: Option<&BTreeSet<String>>) -> Verdict {
    let fixed = previous.map_or(0, |p| p.difference(now).count());
    let new = previous.map_or(now.len(), |p| now.difference(p).count());
    let decision = if now.is_empty() {
        Decision::StopGreen
    } else if let Some(p) = previous
        && now.len() * REGRESSION_RATIO.1 > p.len() * REGRESSION_RATIO.0
    {
        Decision::StopRegressed
    } else if let Some(p) = previous
        && p.is_subset(now)
    {
        Decision::StopNoProgress
    } else if attempt >= MAX_ATTEMPTS {
        Decision::StopExhausted
    } else {
        Decision::Continue
    };
    Verdict { decision, attempt, blockers: now.len(), previous: previous.map(BTreeSet::len), fixed, new }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn table() {
        assert_eq!(decide(1, &s(&[]), None).decision, Decision::StopGreen);
        assert_eq!(decide(1, &s(&["a"]), None).decision, Decision::Continue);
        assert_eq!(decide(2, &s(&["a", "b"]), Some(&s(&["a", "b"]))).decision, Decision::StopNoProgress);
        assert_eq!(decide(2, &s(&["a", "b", "c"]), Some(&s(&["a", "b"]))).decision, Decision::StopNoProgress);
        // 4 > 2 * 3/2: regressed, even though `a` was fixed.
        assert_eq!(decide(2, &s(&["b", "c", "d", "e"]), Some(&s(&["a", "b"]))).decision, Decision::StopRegressed);
        // 3 == 2 * 3/2 is not past the ratio.
        assert_eq!(decide(2, &s(&["b", "c", "d"]), Some(&s(&["a", "b"]))).decision, Decision::Continue);
        assert_eq!(decide(MAX_ATTEMPTS, &s(&["b"]), Some(&s(&["a", "b"]))).decision, Decision::StopExhausted);
        assert_eq!(decide(MAX_ATTEMPTS, &s(&[]), Some(&s(&["a"]))).decision, Decision::StopGreen);
        let v = decide(3, &s(&["b", "c"]), Some(&s(&["a", "b"])));
        assert_eq!((v.fixed, v.new, v.previous), (1, 1, Some(2)));
    }
}
