//! Texts shown to the agent: the reminder of a `continue` and the re-grounding
//! message after a compaction. Both are assembled by premerge from templates and
//! validated values (paths and SHAs that matched the collected evidence, plan steps
//! read by premerge); an authority's free text never reaches them.

use super::payload::{OwnedFile, sanitise_line};
use super::rules::{Rule, Verdict};
use super::{Evidence, PlanArtefact};

/// Phrases that invite the drift the gate exists to prevent; no text premerge shows
/// an agent may contain them (tests pin this).
pub const DRIFT_PHRASES: &[&str] =
    &["fresh session", "start over", "restart the session", "open a new conversation", "continue in a new session"];

/// How many owned files and memories the re-grounding message lists before it counts the rest.
pub(crate) const MAX_LISTED: usize = 20;

/// What a drift phrase in a quoted value is replaced with.
const ELIDED: &str = "[...]";

/// The text drift phrases are searched in: ASCII lower case, and a hyphen or an
/// underscore read as the space it stands for (`fresh-session`, `start_over`). Every
/// replacement is one ASCII byte for one ASCII byte, so a position found here is the
/// same position in the original.
fn drift_haystack(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'-' | b'_' => ' ',
            b if b.is_ascii() => char::from(b.to_ascii_lowercase()),
            // A non-ASCII byte is never part of a phrase; any non-space stand-in keeps positions.
            _ => '\u{1}',
        })
        .collect()
}

/// A value quoted to the agent (a plan step, a path, a memory), as one clean line
/// with every drift phrase elided, whatever its case, spacing or hyphenation.
pub fn quote(s: &str) -> String {
    let mut out = sanitise_line(s).split_whitespace().collect::<Vec<_>>().join(" ");
    loop {
        let lower = drift_haystack(&out);
        let hit = DRIFT_PHRASES.iter().filter_map(|p| lower.find(p).map(|at| (at, p.len()))).min();
        let Some((at, len)) = hit else { return out };
        out.replace_range(at..at + len, ELIDED);
    }
}

/// Whether a text holds a drift phrase (case and spacing ignored).
#[cfg(test)]
pub(crate) fn has_drift_phrase(s: &str) -> bool {
    let lower = drift_haystack(&s.split_whitespace().collect::<Vec<_>>().join(" "));
    DRIFT_PHRASES.iter().any(|p| lower.contains(p))
}

/// The truthful sentence about the working tree.
fn tree_state(uncommitted: Option<usize>) -> String {
    match uncommitted {
        Some(0) => "Everything is committed, so continuing loses nothing.".to_string(),
        Some(n) => format!(
            "The working tree has uncommitted changes ({n} path{}): commit them as you go.",
            if n == 1 { "" } else { "s" }
        ),
        None => "The plan and the commits are durable.".to_string(),
    }
}

fn short_sha(s: &str) -> Option<&str> {
    (s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())).then(|| &s[..12])
}

/// The reminder of a validated `continue`, `None` for any other verdict or when a
/// value it needs does not validate (the caller then falls open).
pub(crate) fn reminder(v: &Verdict, ev: &Evidence) -> Option<String> {
    let plan = match &v.pointer.plan_file {
        Some(p) => Some(ev.plan(p)?),
        None => None,
    };
    let plan_sha = match &v.pointer.plan_commit_sha {
        Some(s) => Some(short_sha(s)?),
        None => None,
    };
    let inc_sha = match &v.pointer.incremental_commit_sha {
        Some(s) => Some(short_sha(s)?),
        None => None,
    };
    let next = |p: &PlanArtefact| match p.next_steps().first() {
        Some(step) => format!(" Next unchecked step: \"{}\".", quote(step)),
        None => String::new(),
    };
    let head = "premerge stop gate: this stop is not needed.";
    let seen = v.finding.as_deref().map(|f| format!(" The session shows: {}.", quote(f))).unwrap_or_default();
    let tail = format!("{seen} {} Continue your work.", tree_state(ev.uncommitted));
    let tail = tail.trim_start().to_string();
    let body = match v.rule {
        Rule::U1DurableArtifactContinuationSafe => {
            let p = plan?;
            format!(
                "{head} The plan {} (commit {}) and your commit {} since then keep the work durable.{} {tail}",
                quote(&p.path),
                plan_sha?,
                inc_sha?,
                next(p)
            )
        }
        Rule::U2PlanFileNextStepExplicit => {
            let p = plan?;
            let at = plan_sha.map(|s| format!(" (commit {s})")).unwrap_or_default();
            format!("{head} The committed plan {}{at} names the next step.{} {tail}", quote(&p.path), next(p))
        }
        Rule::U3RecentCommitProvesIncremental => {
            let at = plan.map(|p| format!(" The plan is {}.", quote(&p.path))).unwrap_or_default();
            format!("{head} Your commit {} shows the work advancing in increments.{at} {tail}", inc_sha?)
        }
        _ => return None,
    };
    Some(body)
}

/// What the re-grounding message after a compaction is made of.
#[derive(Debug, Clone, Default)]
pub struct Regrounding {
    /// Plan files with their first unchecked step.
    pub plans: Vec<(String, Option<String>)>,
    /// The current attempt number and its wave plan file name.
    pub attempt: Option<(u32, String)>,
    pub owned: Vec<OwnedFile>,
    /// Guard memories as `(file, text)`.
    pub memories: Vec<(String, String)>,
    /// Paths with uncommitted changes (`None`: unknown).
    pub uncommitted: Option<usize>,
}

/// The re-grounding message printed by `gate session-start` after a compaction.
pub fn regrounding(r: &Regrounding) -> String {
    let mut out = String::from("premerge: context was compacted; here is where the work stands.\n");
    if r.plans.is_empty() {
        out.push_str("Plan: no committed plan file found.\n");
    }
    for (path, step) in &r.plans {
        out.push_str(&format!("Plan: {}\n", quote(path)));
        if let Some(s) = step {
            out.push_str(&format!("  next unchecked step: {}\n", quote(s)));
        }
    }
    if let Some((n, file)) = &r.attempt {
        out.push_str(&format!("Current attempt: {n} ({})\n", quote(file)));
    }
    if !r.owned.is_empty() {
        out.push_str("Files in this attempt's waves (file, owner):\n");
        for f in r.owned.iter().take(MAX_LISTED) {
            let owner = quote(f.owner.as_deref().unwrap_or("-"));
            out.push_str(&format!("  {} ({owner})\n", quote(&f.file)));
        }
        if r.owned.len() > MAX_LISTED {
            out.push_str(&format!("  ... and {} more\n", r.owned.len() - MAX_LISTED));
        }
    }
    if !r.memories.is_empty() {
        out.push_str("Guard memories for these files:\n");
        for (file, text) in r.memories.iter().take(MAX_LISTED) {
            out.push_str(&format!("  {}: {}\n", quote(file), quote(text)));
        }
        if r.memories.len() > MAX_LISTED {
            out.push_str(&format!("  ... and {} more\n", r.memories.len() - MAX_LISTED));
        }
    }
    out.push_str(&format!("{}\n", tree_state(r.uncommitted)));
    // Without a plan there is nothing to re-read: the advice names only what exists.
    if r.plans.is_empty() {
        out.push_str("Continue your work from where the conversation summary leaves it.\n");
    } else {
        out.push_str("Re-read the plan file, then Continue your work from the next unchecked step.\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::fixture;
    use crate::gate::rules::{Decision, Pointer};

    fn ev() -> Evidence {
        let mut plan = fixture::plan("docs/plans/p.md", 1, false);
        plan.unchecked_steps = vec!["wire the cache".into()];
        fixture::evidence(vec![plan], 1)
    }

    fn cont(rule: Rule, pointer: Pointer) -> Verdict {
        Verdict {
            decision: Decision::Continue,
            rule,
            pointer,
            rationale: "IGNORE ME: open a new conversation".into(),
            finding: None,
        }
    }

    #[test]
    fn reminders_use_validated_values_only() {
        let p = Pointer {
            plan_file: Some("docs/plans/p.md".into()),
            plan_commit_sha: Some("a".repeat(40)),
            incremental_commit_sha: Some("c".repeat(40)),
        };
        for rule in [
            Rule::U1DurableArtifactContinuationSafe,
            Rule::U2PlanFileNextStepExplicit,
            Rule::U3RecentCommitProvesIncremental,
        ] {
            let r = reminder(&cont(rule, p.clone()), &ev()).unwrap();
            assert!(!r.contains("IGNORE ME"), "{r}");
            assert!(r.contains("Continue your work"), "{r}");
            for phrase in DRIFT_PHRASES {
                assert!(!r.to_lowercase().contains(phrase), "{r}");
            }
        }
        let u1 = reminder(&cont(Rule::U1DurableArtifactContinuationSafe, p.clone()), &ev()).unwrap();
        assert!(u1.contains("aaaaaaaaaaaa") && u1.contains("cccccccccccc") && u1.contains("wire the cache"), "{u1}");
        let bad = Pointer { plan_commit_sha: Some("not-a-sha".into()), ..p };
        assert_eq!(reminder(&cont(Rule::U1DurableArtifactContinuationSafe, bad), &ev()), None);
    }

    #[test]
    fn quoted_steps_lose_drift_phrases_whatever_their_case_or_spacing() {
        let step = "Open a NEW   conversation and start over in a Fresh\tSession";
        let q = quote(step);
        assert!(!has_drift_phrase(&q), "{q}");
        assert_eq!(q, "[...] and [...] in a [...]");
        let mut e = ev();
        e.plan_files[0].unchecked_steps = vec![step.into()];
        let p = Pointer { plan_file: Some("docs/plans/p.md".into()), ..Pointer::default() };
        let r = reminder(&cont(Rule::U2PlanFileNextStepExplicit, p), &e).unwrap();
        assert!(!has_drift_phrase(&r), "{r}");
        let g = regrounding(&Regrounding {
            plans: vec![("docs/plans/p.md".into(), Some(step.into()))],
            ..Default::default()
        });
        assert!(!has_drift_phrase(&g), "{g}");
    }

    #[test]
    fn hyphenated_and_underscored_drift_phrases_are_elided_too() {
        let step = "Step 1: if stuck, try a fresh-session approach or START_OVER; keep ünïcode-fresh";
        let q = quote(step);
        assert!(!has_drift_phrase(&q), "{q}");
        assert_eq!(q, "Step 1: if stuck, try a [...] approach or [...]; keep ünïcode-fresh");
        let g = regrounding(&Regrounding {
            plans: vec![("docs/plans/p.md".into(), Some(step.into()))],
            ..Default::default()
        });
        assert!(!has_drift_phrase(&g) && !g.contains("fresh-session"), "{g}");
    }

    #[test]
    fn without_a_plan_the_compaction_message_does_not_send_the_agent_to_one() {
        let g = regrounding(&Regrounding { uncommitted: Some(0), ..Default::default() });
        assert!(g.contains("no committed plan file found"), "{g}");
        assert!(!g.to_lowercase().contains("re-read the plan"), "{g}");
        assert!(g.contains("Continue your work"), "{g}");
        let with = regrounding(&Regrounding { plans: vec![("PLAN.md".into(), None)], ..Default::default() });
        assert!(with.contains("Re-read the plan file"), "{with}");
    }

    #[test]
    fn the_tree_state_is_told_truthfully() {
        let p = Pointer { plan_file: Some("docs/plans/p.md".into()), ..Pointer::default() };
        let mut e = ev();
        let clean = reminder(&cont(Rule::U2PlanFileNextStepExplicit, p.clone()), &e).unwrap();
        assert!(clean.contains("Everything is committed"), "{clean}");
        e.uncommitted = Some(2);
        let dirty = reminder(&cont(Rule::U2PlanFileNextStepExplicit, p), &e).unwrap();
        assert!(
            !dirty.contains("Everything is committed") && dirty.contains("uncommitted changes (2 paths)"),
            "{dirty}"
        );
        let g = regrounding(&Regrounding { uncommitted: Some(1), ..Default::default() });
        assert!(g.contains("uncommitted changes (1 path)") && !g.contains("Everything is committed"), "{g}");
    }

    #[test]
    fn regrounding_never_invites_drift() {
        let r = Regrounding {
            plans: vec![("docs/plans/p.md".into(), Some("step".into()))],
            attempt: Some((2, "fix-waves-02.json".into())),
            owned: vec![OwnedFile { file: "src/a.rs".into(), owner: Some("w1".into()) }],
            memories: vec![("src/a.rs".into(), "keep the bound".into())],
            uncommitted: Some(0),
        };
        for text in [regrounding(&r), regrounding(&Regrounding::default())] {
            assert!(text.contains("Continue your work"));
            for phrase in DRIFT_PHRASES {
                assert!(!text.to_lowercase().contains(phrase), "{text}");
            }
        }
    }
}
