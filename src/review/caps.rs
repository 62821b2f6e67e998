//! The caps review routing emits, and the operator-facing explanation of each
//! (`premerge explain-cap CAP [--files N]`).

use super::route::ROUND_CAP;
use super::seam::SEAM_MIN_FILES;

/// Round 1 found the same finding shape in [`SEAM_MIN_FILES`] or more files.
pub(crate) const REPEAT_FINDING_SEAM: &str = "repeat-finding-seam";
/// A round at or past [`ROUND_CAP`] still had findings.
pub(crate) const ROUND_CAP_NAME: &str = "round-cap";

/// Every cap premerge's review routing emits, byte-sorted.
pub(crate) const CAPS: &[&str] = &[REPEAT_FINDING_SEAM, ROUND_CAP_NAME];

/// The explanation of `cap`, `None` when premerge never emits it. `files` is the
/// number of files a seam spans (the `files` field of its `cap-hit` event).
/// Why `explain-cap` refuses its arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExplainError {
    /// A cap premerge never emits.
    #[error("unknown cap `{0}`: premerge emits {caps}", caps = CAPS.join(", "))]
    Unknown(String),
    /// `--files N` below the seam threshold: no seam of that size exists to explain.
    #[error(
        "--files {0}: a seam spans at least {SEAM_MIN_FILES} files; {0} file(s) never trigger {REPEAT_FINDING_SEAM}"
    )]
    TooFewFiles(u64),
}

/// [`explain`] that refuses a seam smaller than [`SEAM_MIN_FILES`] and an unknown cap.
pub(crate) fn explain_checked(cap: &str, files: Option<u64>) -> Result<String, ExplainError> {
    if cap == REPEAT_FINDING_SEAM
        && let Some(n) = files
        && n < SEAM_MIN_FILES as u64
    {
        return Err(ExplainError::TooFewFiles(n));
    }
    explain(cap, files).ok_or_else(|| ExplainError::Unknown(cap.to_string()))
}

pub(crate) fn explain(cap: &str, files: Option<u64>) -> Option<String> {
    match cap {
        REPEAT_FINDING_SEAM => {
            let across = match files {
                Some(n) => format!("across {n} files"),
                None => format!("across {SEAM_MIN_FILES} or more files"),
            };
            Some(format!(
                "repeat-finding-seam: the same finding shape {across} is a missing seam, not separate defects.\n\
                 Patching each instance would entrench the duplication: every fix makes another copy that has to\n\
                 be kept in step with the others. So round 1 of the review goes to a step-back instead of the fix\n\
                 loop: the brief (step-back-NN.md in the run directory) names the seam, its files and the guard\n\
                 memories touching them, and asks which element of the specification under-specifies the shared\n\
                 behaviour. The answer (sddElement, diagnosis, proposedRevision) is in handoff-NN.json.\n\
                 Later rounds do not re-escalate. Turn it off with PREMERGE_SEAM_ESCALATION=0\n\
                 (config key review.seam_escalation).\n"
            ))
        }
        ROUND_CAP_NAME => Some(format!(
            "round-cap: round {ROUND_CAP} of the review still had findings, so the cycle stops fixing and hands off.\n\
             Two fix rounds are enough for a lens loop to converge on local defects; findings that survive them\n\
             mean the loop is not converging (the fixes miss, or each fix causes new findings), and more rounds\n\
             would spend effort without progress. A person (or the next pipeline stage) takes the findings from\n\
             here: nextStep is \"handoff\".\n"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cap_explains_and_caps_are_sorted() {
        for c in CAPS {
            assert!(explain(c, None).is_some(), "{c}");
        }
        assert!(CAPS.windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()));
        assert!(explain(REPEAT_FINDING_SEAM, Some(4)).unwrap().contains("across 4 files"));
        assert!(explain("nope", None).is_none());
        assert_eq!(explain_checked(REPEAT_FINDING_SEAM, Some(1)), Err(ExplainError::TooFewFiles(1)));
        assert_eq!(explain_checked(REPEAT_FINDING_SEAM, Some(2)), Err(ExplainError::TooFewFiles(2)));
        assert!(explain_checked(REPEAT_FINDING_SEAM, Some(3)).is_ok());
        assert!(matches!(explain_checked("nope", None), Err(ExplainError::Unknown(_))));
    }
}
