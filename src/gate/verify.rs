//! The post-verifier: before a `continue` is honoured, facts re-read from the
//! repository must still support it. Each check is best-effort against confusion
//! (a stale pointer, a racing commit), not a defence against an adversary.

use super::rules::{Decision, Verdict};
use super::{Evidence, Failure, FailureKind};

/// Facts read again from the repository after the authority answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recheck {
    /// HEAD now.
    pub head: Option<String>,
    /// Whether the pointer's plan commit exists in the object database (`None`: no plan commit cited).
    pub plan_commit_exists: Option<bool>,
    /// Blob id of the cited plan file in the working tree now (`None`: missing).
    pub plan_file_blob: Option<String>,
    /// Whether the incremental commit descends from the plan commit (`None`: not both cited).
    pub incremental_descends: Option<bool>,
}

/// Which post-verifier check refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PostCheck {
    PlanCommitMissing,
    PlanFileMissingOrChanged,
    NotDescendant,
    HeadMoved,
    AllCreatedThisSession,
}

impl PostCheck {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            PostCheck::PlanCommitMissing => "post-verifier: the plan commit does not exist",
            PostCheck::PlanFileMissingOrChanged => {
                "post-verifier: the plan file is missing or changed since evidence was collected"
            }
            PostCheck::NotDescendant => "post-verifier: the incremental commit does not descend from the plan commit",
            PostCheck::HeadMoved => "post-verifier: HEAD moved since evidence was collected",
            PostCheck::AllCreatedThisSession => "post-verifier: every artefact was created in this session",
        }
    }
}

/// Run the five checks on a `continue` (anything else passes untouched).
pub(crate) fn post_verify(ev: &Evidence, v: &Verdict, now: &Recheck) -> Result<(), PostCheck> {
    if v.decision != Decision::Continue {
        return Ok(());
    }
    if now.plan_commit_exists == Some(false) {
        return Err(PostCheck::PlanCommitMissing);
    }
    if let Some(path) = &v.pointer.plan_file {
        let before = ev.plan(path).and_then(|p| p.worktree_blob.as_ref());
        if before.is_none() || now.plan_file_blob.as_ref() != before {
            return Err(PostCheck::PlanFileMissingOrChanged);
        }
    }
    if now.incremental_descends == Some(false) {
        return Err(PostCheck::NotDescendant);
    }
    if now.head != ev.head {
        return Err(PostCheck::HeadMoved);
    }
    if ev.plan_files.iter().all(|p| p.created_this_session) {
        return Err(PostCheck::AllCreatedThisSession);
    }
    Ok(())
}

/// [`post_verify`] as a fail-open failure.
pub(crate) fn post_verify_failure(ev: &Evidence, v: &Verdict, now: &Recheck) -> Result<(), Failure> {
    post_verify(ev, v, now).map_err(|c| Failure::new(FailureKind::InvalidEvidence, c.describe()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::fixture;
    use crate::gate::rules::{Pointer, Rule};

    fn ev() -> Evidence {
        fixture::evidence(vec![fixture::plan("PLAN.md", 1, false)], 1)
    }

    fn verdict() -> Verdict {
        Verdict {
            decision: Decision::Continue,
            rule: Rule::U1DurableArtifactContinuationSafe,
            pointer: Pointer {
                plan_file: Some("PLAN.md".into()),
                plan_commit_sha: Some("a".repeat(40)),
                incremental_commit_sha: Some("c".repeat(40)),
            },
            rationale: String::new(),
            finding: None,
        }
    }

    fn good() -> Recheck {
        Recheck {
            head: Some("c".repeat(40)),
            plan_commit_exists: Some(true),
            plan_file_blob: Some("b".repeat(40)),
            incremental_descends: Some(true),
        }
    }

    #[test]
    fn each_check_fails_on_its_own() {
        assert_eq!(post_verify(&ev(), &verdict(), &good()), Ok(()));
        let r = Recheck { plan_commit_exists: Some(false), ..good() };
        assert_eq!(post_verify(&ev(), &verdict(), &r), Err(PostCheck::PlanCommitMissing));
        let r = Recheck { plan_file_blob: Some("e".repeat(40)), ..good() };
        assert_eq!(post_verify(&ev(), &verdict(), &r), Err(PostCheck::PlanFileMissingOrChanged));
        let r = Recheck { plan_file_blob: None, ..good() };
        assert_eq!(post_verify(&ev(), &verdict(), &r), Err(PostCheck::PlanFileMissingOrChanged));
        let r = Recheck { incremental_descends: Some(false), ..good() };
        assert_eq!(post_verify(&ev(), &verdict(), &r), Err(PostCheck::NotDescendant));
        let r = Recheck { head: Some("f".repeat(40)), ..good() };
        assert_eq!(post_verify(&ev(), &verdict(), &r), Err(PostCheck::HeadMoved));
        let mut e = ev();
        e.plan_files[0].created_this_session = true;
        assert_eq!(post_verify(&e, &verdict(), &good()), Err(PostCheck::AllCreatedThisSession));
    }

    #[test]
    fn allow_is_never_post_verified() {
        let v = Verdict {
            decision: Decision::Allow,
            rule: Rule::LegitError,
            pointer: Pointer::default(),
            rationale: String::new(),
            finding: None,
        };
        let r = Recheck {
            head: None,
            plan_commit_exists: Some(false),
            plan_file_blob: None,
            incremental_descends: Some(false),
        };
        assert_eq!(post_verify(&ev(), &v, &r), Ok(()));
    }
}
