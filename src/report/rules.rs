//! The rules a report's results name: every widening-scan rule of the catalogue, and
//! the pipeline's own (`fence-stray-path`, `review-finding`, `review-seam`,
//! `copied-block`), with the
//! texts SARIF carries (name, short and full description) and the anchor of each in
//! `docs/rules.md`, whose pipeline section [`rules_doc`] generates beside the catalogue.

use std::borrow::Cow;
use std::sync::LazyLock;

use super::Level;

/// Where premerge's documentation is read on the web: `tool.driver.informationUri`, and
/// with `docs/rules.md#<rule id>` each rule's `helpUri`. premerge has no published home
/// yet; this is the placeholder host its JSON Schemas' ids already use
/// (`https://premerge.invalid/schema/`), kept in this one place so a real one replaces it.
pub const DOCS_BASE: &str = "https://premerge.invalid/";

/// The document every rule's help points into.
pub const RULES_DOC: &str = "docs/rules.md";

/// One rule as a report names it.
#[derive(Debug, PartialEq, Eq)]
pub struct Rule {
    /// Stable id, kebab-case: the heading (and so the anchor) of its entry in `docs/rules.md`.
    pub id: &'static str,
    /// SARIF's `name`: the id in PascalCase.
    pub name: Cow<'static, str>,
    /// One line: what the rule reports.
    pub short: &'static str,
    /// What it reports and why it matters.
    pub full: Cow<'static, str>,
    /// The level a result of the rule has unless its own severity says otherwise.
    pub level: Level,
}

impl Rule {
    /// `helpUri`: the rule's entry in `docs/rules.md`.
    pub fn help_uri(&self) -> String {
        format!("{DOCS_BASE}{RULES_DOC}#{}", self.id)
    }
}

/// A path a change touched that the attempt's wave plan does not name.
pub static FENCE_STRAY_PATH: Rule = Rule {
    id: "fence-stray-path",
    name: Cow::Borrowed("FenceStrayPath"),
    short: "A change touches a path outside the fix attempt's allowed set.",
    full: Cow::Borrowed(
        "The commit fence allows an attempt to change only the files of its wave plan \
         (fix-waves-NN.json); this path changed and is not one of them, so the fence refuses the change. \
         Undo the change, or have a later attempt's plan name the file.",
    ),
    level: Level::Error,
};

/// One finding of a review round, as the reviewer or lens reported it.
pub static REVIEW_FINDING: Rule = Rule {
    id: "review-finding",
    name: Cow::Borrowed("ReviewFinding"),
    short: "A finding of a review round, routed by premerge review route.",
    full: Cow::Borrowed(
        "A reviewer's or a lens's finding, passed through as it was reported (its lens or category is the \
         annotation's title); a blocker is an error, a suggestion a note, anything else a warning.",
    ),
    level: Level::Warning,
};

/// The same finding in several files: a seam routed to a step-back.
pub static REVIEW_SEAM: Rule = Rule {
    id: "review-seam",
    name: Cow::Borrowed("ReviewSeam"),
    short: "The same finding (one lens, one normalised title) in three or more files.",
    full: Cow::Borrowed(
        "Findings that share a lens and a normalised title across three or more files point at a missing \
         shared piece rather than separate defects; premerge review route sends the round to a design-level \
         step-back instead of fixing each copy. The result has a location in every file of the seam.",
    ),
    level: Level::Warning,
};

/// A block a change copies into several files (`premerge seams`).
pub static COPIED_BLOCK: Rule = Rule {
    id: "copied-block",
    name: Cow::Borrowed("CopiedBlock"),
    short: "A change copies the same block of code into three or more files.",
    full: Cow::Borrowed(
        "The copy detector (premerge seams, and the pre-push hook's signal) found blocks that are copies of one \
         another, names and literals aside, in several files the change touches: a shared piece would keep \
         them from drifting apart. A signal, never a refusal. The result has a location at each copy.",
    ),
    level: Level::Note,
};

/// A widening finding whose rule id the catalogue does not know (a stored finding of
/// an older catalogue): reported rather than lost.
static WIDENING_UNKNOWN: Rule = Rule {
    id: "widening",
    name: Cow::Borrowed("Widening"),
    short: "A removed or loosened invariant found by the widening scan.",
    full: Cow::Borrowed("A removed or loosened invariant found by the widening scan."),
    level: Level::Warning,
};

/// The pipeline's own rules, in the order `docs/rules.md` lists them.
pub static PIPELINE: [&Rule; 4] = [&FENCE_STRAY_PATH, &REVIEW_FINDING, &REVIEW_SEAM, &COPIED_BLOCK];

/// Every widening rule of the catalogue as a report rule, in catalogue order.
static SCAN: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    crate::widen::catalogue::all()
        .map(|r| Rule {
            id: r.id.as_str(),
            name: Cow::Owned(pascal(r.id.as_str())),
            short: r.description,
            full: Cow::Owned(format!("{} Invariant lost: {}", r.description, r.invariant)),
            level: Level::of_scan(r.severity),
        })
        .collect()
});

/// The report rule of a widening rule id.
pub fn scan_rule(id: &str) -> &'static Rule {
    SCAN.iter().find(|r| r.id == id).unwrap_or(&WIDENING_UNKNOWN)
}

/// `rust-option-widened` -> `RustOptionWidened`.
fn pascal(id: &str) -> String {
    id.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

/// `docs/rules.md`: the widening catalogue, then the pipeline's rules, one heading
/// each (the anchors `helpUri` points at). `premerge scan --rules-doc` prints it.
pub fn rules_doc() -> String {
    let mut s = crate::widen::catalogue::rules_doc();
    s.push_str(
        "\n## Pipeline results\n\n\
         Reported by `premerge fence check`, `premerge review route` and `premerge seams` with `--format sarif` or\n\
         `--format github` (generated from `src/report/rules.rs`), beside the widening rules above.\n",
    );
    for r in PIPELINE {
        s.push_str(&format!("\n### {}\n\n{}\n\n", r.id, r.short));
        s.push_str(&format!("- Level: {}\n", r.level.sarif()));
        s.push_str(&format!("- {}\n", r.full));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogue_rule_has_a_report_rule_and_an_anchor() {
        let doc = rules_doc();
        for r in crate::widen::catalogue::all() {
            let rule = scan_rule(r.id.as_str());
            assert_eq!(rule.id, r.id.as_str());
            assert!(doc.contains(&format!("\n### {}\n", rule.id)), "{}", rule.id);
        }
        for r in PIPELINE {
            assert!(doc.contains(&format!("\n### {}\n", r.id)), "{}", r.id);
        }
        assert_eq!(scan_rule("rust-option-widened").name, "RustOptionWidened");
        assert_eq!(scan_rule("no-such-rule").id, "widening");
        assert_eq!(FENCE_STRAY_PATH.help_uri(), "https://premerge.invalid/docs/rules.md#fence-stray-path");
    }
}
