//! Refinement proposals as text: file names, the `refinement_proposal@1` document,
//! the deterministic suggested-change outline, and reading the front matter back.
//!
//! A proposal is `<stripe with / as -->-<YYYYMMDDTHHMMSSZ>[-N].md`; `-N` (N >= 2)
//! separates proposals of one stripe written in the same second.

use serde_json::Value;

use super::projection::{Projection, projection_description};
use super::{ALGORITHM, StripeId};

/// The front-matter kind every proposal carries.
pub(crate) const KIND: &str = "refinement_proposal@1";

/// Largest number of recurring items listed in the outline: enough to see the
/// pattern, short enough that a proposal stays readable; the rest are counted.
pub(crate) const OUTLINE_ITEMS: usize = 20;

/// Why a proposal file could not be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ProposalError {
    /// The file does not start with a `---` front-matter block.
    #[error("no front matter (expected a `---` block at the top)")]
    NoFrontMatter,
    /// The front matter's `kind` is missing or not `refinement_proposal@1`.
    #[error("front matter `kind` is not `refinement_proposal@1`")]
    Kind,
    /// The front matter has no valid `stripe`.
    #[error("front matter `stripe`: {0}")]
    Stripe(String),
    /// The front matter has no `created` time.
    #[error("front matter has no `created` time")]
    Created,
}

/// The parts of a proposal's file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProposalName {
    /// The stripe as written in the name (`/` as `--`).
    pub stem: String,
    /// `YYYYMMDDTHHMMSSZ`.
    pub timestamp: String,
    /// 1 for the first proposal of the second, N for `-N`.
    pub seq: u32,
}

/// `YYYYMMDDTHHMMSSZ` of a UTC time.
pub(crate) fn file_timestamp(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let fmt = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    t.format(&fmt).expect("a fixed UTC format cannot fail")
}

/// The file name of a proposal of `stripe` written at `timestamp`, `seq` counting
/// same-second proposals from 1.
pub fn file_name(stripe: &StripeId, timestamp: &str, seq: u32) -> String {
    if seq <= 1 {
        format!("{}-{timestamp}.md", stripe.file_stem())
    } else {
        format!("{}-{timestamp}-{seq}.md", stripe.file_stem())
    }
}

fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 16
        && b[8] == b'T'
        && b[15] == b'Z'
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[9..15].iter().all(u8::is_ascii_digit)
}

/// Parse a proposal file name; `None` when it is not one.
pub(crate) fn parse_file_name(name: &str) -> Option<ProposalName> {
    let base = name.strip_suffix(".md")?;
    let colon = base.rfind(':')?;
    let (head, tail) = (&base[..colon], &base[colon + 1..]);
    // tail: <8 hex>-<timestamp>[-N]
    let hash = tail.get(..super::HASH_LEN)?;
    let rest = tail.get(super::HASH_LEN..)?.strip_prefix('-')?;
    let timestamp = rest.get(..16)?;
    if !is_timestamp(timestamp) {
        return None;
    }
    let seq = match &rest[16..] {
        "" => 1,
        s => {
            let n: u32 = s.strip_prefix('-')?.parse().ok()?;
            if n < 2 || s.starts_with("-0") {
                return None;
            }
            n
        }
    };
    let (scope, signal) = head.split_once(':')?;
    // Validate the parts with the `/` of the scope restored (`+`, or `--` in names
    // written before `+`; a scope may itself hold `--`, so either reading may be right).
    let restored = if scope.contains('+') { scope.replacen('+', "/", 1) } else { scope.replacen("--", "/", 1) };
    StripeId::new(&restored, signal, hash).ok().or_else(|| StripeId::new(scope, signal, hash).ok())?;
    Some(ProposalName { stem: format!("{head}:{hash}"), timestamp: timestamp.to_string(), seq })
}

/// What the front matter of a proposal says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrontMatter {
    pub stripe: StripeId,
    /// RFC 3339, UTC.
    pub created: String,
    pub workflow: Option<String>,
}

/// Read the front matter of a proposal document.
pub(crate) fn parse_front_matter(text: &str) -> Result<FrontMatter, ProposalError> {
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(ProposalError::NoFrontMatter);
    }
    let (mut kind, mut stripe, mut created, mut workflow) = (None, None, None, None);
    let mut closed = false;
    for line in lines {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            let v = v.trim().to_string();
            match k.trim() {
                "kind" => kind = Some(v),
                "stripe" => stripe = Some(v),
                "created" => created = Some(v),
                "workflow" => workflow = Some(v),
                _ => {}
            }
        }
    }
    if !closed {
        return Err(ProposalError::NoFrontMatter);
    }
    if kind.as_deref() != Some(KIND) {
        return Err(ProposalError::Kind);
    }
    let stripe = match stripe {
        Some(s) => StripeId::parse(&s).map_err(|e| ProposalError::Stripe(e.to_string()))?,
        None => return Err(ProposalError::Stripe("missing".into())),
    };
    let created = created.filter(|c| !c.is_empty()).ok_or(ProposalError::Created)?;
    Ok(FrontMatter { stripe, created, workflow })
}

/// How serious the class of problem a signal names is, with the reason shown to the reader.
pub(crate) fn risk_class(signal: &str) -> (&'static str, &'static str) {
    match signal {
        "fence_violation" => {
            ("high", "fixers keep writing outside their allowed set: the plan or the ownership is wrong")
        }
        "blocker_recurring" => ("high", "the same blockers survive repeated fix attempts: the loop is not converging"),
        "tests_failed" => ("medium", "the same tests keep failing across runs"),
        "routed_back" => ("medium", "the same task keeps being routed back at the same phase"),
        "repeat_seam" => ("medium", "review keeps finding the same problem across files: a shared root cause"),
        "widening_repeat" => ("medium", "the same constraint was widened again in a later cycle"),
        "confidence_low_streak" | "user_correction_streak" => {
            ("low", "a quality signal of the agent's own work; nothing shipped is known to be wrong")
        }
        _ => ("low", "an unclassified signal; judge from the evidence"),
    }
}

fn advice(signal: &str) -> &'static str {
    match signal {
        "repeat_seam" => {
            "Find the shared helper, type or convention behind the repeated finding and fix it once there, instead of file by file."
        }
        "blocker_recurring" => {
            "Read why the fixers could not clear these blockers (blocked-on reports, attempt logs); split or re-own the work before another attempt."
        }
        "fence_violation" => {
            "Check whether the stray paths belong in the wave plan (missing owner) or whether the fixer's brief invites edits outside its files."
        }
        "widening_repeat" => {
            "Decide whether the widened constraint is intended; if so record it as policy, if not restore it and add a test that pins it."
        }
        "tests_failed" => {
            "Reproduce the failing tests locally; fix the test or the code, or quarantine a flaky test with an owner."
        }
        "routed_back" => {
            "Compare the task's acceptance criteria with what the phase checks; the task or the check needs to change."
        }
        "confidence_low_streak" => "Review the rules the agent keeps failing and sharpen their guidance or examples.",
        "user_correction_streak" => "Review what users keep correcting and fold it into the agent's instructions.",
        _ => "Investigate the common cause of the listed items and change the process or code that produces them.",
    }
}

fn item_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(item_text).collect::<Vec<_>>().join(" · "),
        other => other.to_string(),
    }
}

/// The deterministic suggested-change outline of a stripe, built from its evidence.
pub fn outline(stripe: &StripeId, projection: &Projection) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "Outline (deterministic; no generator configured):\n\n1. The `{}` pattern recurred under scope `{}`: {} evidence row(s), {} distinct item(s).\n2. Recurring items:\n",
        stripe.signal(),
        stripe.scope(),
        projection.contributing.len(),
        projection.items.len()
    ));
    for item in projection.items.iter().take(OUTLINE_ITEMS) {
        s.push_str(&format!("   - `{}`\n", item_text(item).replace('`', "'")));
    }
    if projection.items.len() > OUTLINE_ITEMS {
        s.push_str(&format!("   - … and {} more\n", projection.items.len() - OUTLINE_ITEMS));
    }
    s.push_str(&format!("3. {}\n", advice(stripe.signal())));
    s.push_str(&format!(
        "4. When the change has landed: `premerge proposal apply {stripe}`; if it is not worth doing: `premerge proposal reject {stripe} --reason TEXT`.\n"
    ));
    s
}

/// Everything a proposal document says.
#[derive(Debug, Clone)]
pub struct ProposalDoc<'a> {
    pub stripe: &'a StripeId,
    pub projection: &'a Projection,
    /// RFC 3339, UTC.
    pub created: &'a str,
    pub workflow: Option<&'a str>,
    /// The suggested change (generator output or [`outline`]); never empty.
    pub suggested_change: &'a str,
    /// `generator` or `outline`.
    pub suggested_by: &'a str,
}

fn cell(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|")
}

/// Render a proposal as markdown with `refinement_proposal@1` front matter.
pub fn render(doc: &ProposalDoc) -> String {
    let st = doc.stripe;
    let p = doc.projection;
    let mut s = String::new();
    s.push_str(&format!("---\nkind: {KIND}\nstripe: {st}\nalgorithm: {ALGORITHM}\n"));
    s.push_str(&format!("scope: {}\nsignal: {}\ncreated: {}\n", st.scope(), st.signal(), doc.created));
    if let Some(w) = doc.workflow {
        s.push_str(&format!("workflow: {}\n", cell(w)));
    }
    s.push_str(&format!("evidence_rows: {}\nsuggested_by: {}\n---\n\n", p.contributing.len(), doc.suggested_by));
    s.push_str(&format!("# Refinement proposal {st}\n\n"));
    s.push_str(&format!("## Stripe\n\n{st}\n\n"));
    s.push_str(&format!(
        "## Triggering signal\n\nSignal `{}` under scope `{}` ({ALGORITHM}: the hash is over {}).\n",
        st.signal(),
        st.scope(),
        projection_description(st.signal())
    ));
    if let Some(w) = doc.workflow {
        s.push_str(&format!("Workflow: `{}`.\n", cell(w).replace('`', "'")));
    }
    if p.ignored > 0 {
        s.push_str(&format!("{} evidence row(s) without the projected fields were ignored.\n", p.ignored));
    }
    s.push_str("\n## Evidence rows\n\n| row id | summary |\n|---|---|\n");
    for c in &p.contributing {
        s.push_str(&format!("| {} | {} |\n", cell(&c.row_id), cell(&c.summary)));
    }
    s.push_str(&format!("\n## Suggested change\n\n{}\n", doc.suggested_change.trim_end()));
    let (class, why) = risk_class(st.signal());
    s.push_str(&format!(
        "\n## Risk class\n\n{class}: {why}.\n\nThis proposal is informational: premerge never applies a suggested change by itself.\n"
    ));
    s
}

/// `text` with a `## Rejection rationale` section holding `reason` appended.
pub(crate) fn append_rejection(text: &str, reason: &str) -> String {
    let mut s = text.trim_end().to_string();
    s.push_str(&format!("\n\n## Rejection rationale\n\n{}\n", reason.trim()));
    s
}

/// Seconds from `created` (RFC 3339) to `now`; `None` when `created` does not parse.
pub fn age_seconds(created: &str, now: time::OffsetDateTime) -> Option<i64> {
    let t = time::OffsetDateTime::parse(created, &time::format_description::well_known::Rfc3339).ok()?;
    Some((now - t).whole_seconds())
}

/// A short age: `45s`, `12m`, `5h`, `3d`.
pub(crate) fn format_age(secs: i64) -> String {
    match secs {
        s if s < 60 => format!("{}s", s.max(0)),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stripe::{Evidence, project};
    use serde_json::json;

    #[test]
    fn file_names_round_trip() {
        let id = StripeId::parse("review/api:repeat_seam:0123abcd").unwrap();
        let n = file_name(&id, "20260102T030405Z", 1);
        assert_eq!(n, "review+api:repeat_seam:0123abcd-20260102T030405Z.md");
        let p = parse_file_name(&n).unwrap();
        assert_eq!(p.stem, id.file_stem());
        // A name written before `+` still parses, with its own (legacy) stem.
        let legacy = parse_file_name("review--api:repeat_seam:0123abcd-20260102T030405Z.md").unwrap();
        assert_eq!(legacy.stem, id.legacy_file_stem());
        assert_eq!((p.timestamp.as_str(), p.seq), ("20260102T030405Z", 1));
        let p = parse_file_name(&file_name(&id, "20260102T030405Z", 3)).unwrap();
        assert_eq!(p.seq, 3);
        for bad in [
            "x.md",
            "review:repeat_seam:0123abcd.md",
            "review:repeat_seam:0123abcd-20260102T030405Z",
            "review:repeat_seam:0123abcd-20260102T030405Z-1.md",
            "review:repeat_seam:0123abcd-20260102T030405Z-02.md",
            "review:repeat_seam:0123ABCD-20260102T030405Z.md",
            "review:repeat_seam:0123abcd-2026010203040Z.md",
        ] {
            assert_eq!(parse_file_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn rendered_document_has_every_section_and_reads_back() {
        let ev =
            Evidence::from_value(&json!([{"id": "r|1", "title": "Missing check", "summary": "two\nlines"}])).unwrap();
        let p = project("repeat_seam", &ev);
        let id = StripeId::compute("review", &p).unwrap();
        let out = outline(&id, &p);
        let doc = ProposalDoc {
            stripe: &id,
            projection: &p,
            created: "2026-01-02T03:04:05Z",
            workflow: Some("wf-1"),
            suggested_change: &out,
            suggested_by: "outline",
        };
        let text = render(&doc);
        for section in
            ["## Stripe\n\n", "## Triggering signal", "## Evidence rows", "## Suggested change", "## Risk class"]
        {
            assert!(text.contains(section), "{section}\n{text}");
        }
        assert!(text.contains(&format!("## Stripe\n\n{id}\n")));
        assert!(text.contains("| r\\|1 | title=missing check — two lines |"), "{text}");
        assert!(text.contains("`missing check`"));
        let fm = parse_front_matter(&text).unwrap();
        assert_eq!(fm.stripe, id);
        assert_eq!(fm.created, "2026-01-02T03:04:05Z");
        assert_eq!(fm.workflow.as_deref(), Some("wf-1"));
        let rejected = append_rejection(&text, "  not now ");
        assert!(rejected.ends_with("\n\n## Rejection rationale\n\nnot now\n"));
        assert_eq!(parse_front_matter(&rejected).unwrap().stripe, id);
    }

    #[test]
    fn broken_front_matter_is_an_error_not_a_panic() {
        assert_eq!(parse_front_matter("hello"), Err(ProposalError::NoFrontMatter));
        assert_eq!(parse_front_matter("---\nkind: x\n"), Err(ProposalError::NoFrontMatter));
        assert_eq!(parse_front_matter("---\nkind: x\n---\n"), Err(ProposalError::Kind));
        assert!(matches!(
            parse_front_matter("---\nkind: refinement_proposal@1\nstripe: A:b:c\n---\n"),
            Err(ProposalError::Stripe(_))
        ));
        assert_eq!(
            parse_front_matter("---\nkind: refinement_proposal@1\nstripe: a:b:0123abcd\n---\n"),
            Err(ProposalError::Created)
        );
    }

    #[test]
    fn ages_are_short() {
        let now = time::OffsetDateTime::parse("2026-01-03T03:04:05Z", &time::format_description::well_known::Rfc3339)
            .unwrap();
        assert_eq!(age_seconds("2026-01-02T03:04:05Z", now), Some(86_400));
        assert_eq!(format_age(86_400), "1d");
        assert_eq!(format_age(90), "1m");
        assert_eq!(age_seconds("yesterday", now), None);
    }
}
