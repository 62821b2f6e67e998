//! Findings rendered where reviewers and CI already look: SARIF 2.1.0 for code
//! scanning ([`sarif`]), GitHub workflow commands for annotations ([`github`]), Markdown
//! for a pull-request comment ([`markdown`]), and the escaping every reviewer-facing
//! text format shares ([`text`]).
//!
//! The commands that report findings or strays (`scan`, `fence check`, `review route`,
//! `seams`)
//! turn what they found into one [`Report`] (the builders here) and hand it to
//! [`write`]; nothing else in them knows a format. Pure: owned values in, bytes out; no
//! file system, git, process or clock.

pub mod github;
pub mod html;
pub mod markdown;
pub mod rules;
pub mod sarif;
pub mod text;

use std::io::Write;

use sha2::{Digest, Sha256};

use crate::findings::Finding as ReviewFinding;
use crate::review::route::Route;
use crate::widen::engine::Finding as ScanFinding;
use rules::Rule;

/// How serious a result is, in the three levels SARIF and GitHub annotations share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warning,
    Note,
}

impl Level {
    /// SARIF's `level` value.
    pub const fn sarif(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "note",
        }
    }

    /// The GitHub workflow command: `error`, `warning` or `notice`.
    pub const fn github(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "notice",
        }
    }

    /// A widening finding's severity.
    pub(crate) const fn of_scan(s: crate::widen::Severity) -> Level {
        match s {
            crate::widen::Severity::High => Level::Error,
            crate::widen::Severity::Medium => Level::Warning,
            crate::widen::Severity::Low => Level::Note,
        }
    }

    /// A review finding's severity, by the fixer-wave classification: a blocker is an
    /// error, a suggestion a note, anything the classification cannot place a warning.
    pub(crate) fn of_review(f: &ReviewFinding) -> Level {
        match crate::waves::severity_of(f) {
            Some(crate::waves::Severity::Blocker) => Level::Error,
            Some(crate::waves::Severity::Suggestion) => Level::Note,
            None => Level::Warning,
        }
    }
}

/// One place a result points at: a repository-relative path (bytes: a stray's name
/// need not be UTF-8) and a 1-based line when known.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    pub path: Vec<u8>,
    pub line: Option<u64>,
}

/// One result of any reporting command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub rule: &'static Rule,
    pub level: Level,
    /// Where it is; the first is the primary location (code scanning shows that one).
    pub locations: Vec<Location>,
    /// Plain text; renderers escape it for their format.
    pub message: String,
    /// A short title for an annotation (the rule id, with the symbol when there is one).
    pub title: String,
    /// The fields the fingerprint hashes: controller-normalised, never a line number,
    /// so a result keeps its identity when the code around it moves.
    pub identity: Vec<String>,
    /// Other places the result names (SARIF `relatedLocations`): for a widening
    /// finding, the other layers' declarations of the field still holding a stricter
    /// constraint.
    pub related: Vec<Related>,
}

/// A place a result relates to, with what it is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Related {
    pub location: Location,
    pub message: String,
}

impl Item {
    /// `partialFingerprints["premerge/v1"]`: SHA-256 (hex, 32 characters kept) of the
    /// canonical JSON of the rule id, the primary path and the identity fields.
    pub fn fingerprint(&self) -> String {
        let path = self.locations.first().map(|l| crate::diff::json_path(&l.path).0).unwrap_or_default();
        let parts: Vec<&str> =
            [self.rule.id, path.as_str()].into_iter().chain(self.identity.iter().map(String::as_str)).collect();
        let canonical = serde_json::to_string(&parts).unwrap_or_default();
        let digest = Sha256::digest(canonical.as_bytes());
        let mut hex = String::with_capacity(FINGERPRINT_HEX);
        for b in digest.iter().take(FINGERPRINT_HEX / 2) {
            use std::fmt::Write as _;
            let _ = write!(hex, "{b:02x}");
        }
        hex
    }
}

/// Hex digits of a result's fingerprint: 128 bits, far beyond any collision among one
/// repository's alerts, and short enough to read.
const FINGERPRINT_HEX: usize = 32;

/// What one command found, in the order every renderer prints it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    items: Vec<Item>,
}

impl Report {
    /// A report of these items, sorted by primary path (bytes), line, rule and message,
    /// so the output is the same on every run whatever order they were found in.
    pub fn new(mut items: Vec<Item>) -> Report {
        items.sort_by(|a, b| {
            a.locations
                .first()
                .cmp(&b.locations.first())
                .then(a.rule.id.as_bytes().cmp(b.rule.id.as_bytes()))
                .then(a.message.as_bytes().cmp(b.message.as_bytes()))
        });
        Report { items }
    }

    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// The rules the items name, each once, byte-sorted by id (SARIF's `ruleIndex`
    /// points into this list).
    pub fn rules(&self) -> Vec<&'static Rule> {
        let mut rules: Vec<&'static Rule> = self.items.iter().map(|i| i.rule).collect();
        rules.sort_by(|a, b| a.id.as_bytes().cmp(b.id.as_bytes()));
        rules.dedup_by(|a, b| a.id == b.id);
        rules
    }
}

/// The machine formats a reporting command can write besides its own text and JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// One SARIF 2.1.0 log, pretty canonical JSON.
    Sarif,
    /// One GitHub workflow command per result.
    Github,
}

/// Write `report` as `target`: the one call each command makes.
pub fn write(out: &mut dyn Write, target: Target, report: &Report) -> anyhow::Result<()> {
    match target {
        Target::Sarif => out.write_all(crate::canonical::to_pretty(&sarif::log(report))?.as_bytes())?,
        Target::Github => out.write_all(github::render(report).as_bytes())?,
    }
    Ok(())
}

/// Whitespace runs as one space, ends trimmed: the form a fingerprint hashes, so a
/// reformatted line keeps its result's identity.
fn normalised(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The widening scan's findings.
pub fn from_scan(findings: &[ScanFinding]) -> Report {
    let items = findings
        .iter()
        .map(|f| Item {
            rule: rules::scan_rule(&f.rule),
            level: Level::of_scan(f.severity),
            locations: vec![Location { path: f.file.clone().into_bytes(), line: Some(u64::from(f.line)) }],
            message: scan_message(f),
            title: format!("{}: {}", f.rule, f.symbol),
            identity: vec![f.symbol.clone(), normalised(&f.before), normalised(&f.after)],
            related: f
                .linked
                .iter()
                .map(|l| Related {
                    location: Location { path: l.path.clone().into_bytes(), line: Some(u64::from(l.line)) },
                    message: linked_site(l),
                })
                .collect(),
        })
        .collect();
    Report::new(items)
}

/// A widening finding's message, and when other layers still hold a stricter
/// constraint on the field, where (annotations show no related locations).
fn scan_message(f: &ScanFinding) -> String {
    if f.linked.is_empty() {
        return f.message.clone();
    }
    let sites: Vec<String> = f.linked.iter().map(|l| format!("{}:{} {}", l.path, l.line, linked_site(l))).collect();
    format!("{}; other layers still hold the old constraint: {}", f.message, sites.join("; "))
}

/// One linked site in words: `users.name (sql): name VARCHAR(255) NOT NULL`.
pub(crate) fn linked_site(l: &crate::widen::layers::Linked) -> String {
    format!("{} ({}): {}", l.symbol, l.layer.as_str(), l.constraint)
}

/// The fence's stray paths of `scope` (`attempt 2`, `owner w01-01 of attempt 2`).
/// `no_plan`: there was no trustworthy plan, so every changed path is refused.
pub fn from_strays(strays: &[Vec<u8>], scope: &str, no_plan: bool) -> Report {
    let why = if no_plan {
        format!("no trustworthy wave plan for {scope}: the fence allows nothing")
    } else {
        format!("outside the allowed set of {scope} (the files of its wave plan)")
    };
    let items = strays
        .iter()
        .map(|p| Item {
            rule: &rules::FENCE_STRAY_PATH,
            level: Level::Error,
            locations: vec![Location { path: p.clone(), line: None }],
            message: format!("{} changed {why}", crate::waves::fence::display_path_bytes(p)),
            title: rules::FENCE_STRAY_PATH.id.to_string(),
            identity: Vec::new(),
            related: Vec::new(),
        })
        .collect();
    Report::new(items)
}

/// A review round: every finding, and every seam the route reported (one result with
/// a location in each of its files).
pub fn from_route(findings: &[ReviewFinding], route: &Route) -> Report {
    let mut items: Vec<Item> = findings
        .iter()
        .map(|f| {
            let lens = f.lens.as_deref().or(f.category.as_deref()).unwrap_or("").trim().to_string();
            let title = crate::review::title::normalise(&f.title);
            Item {
                rule: &rules::REVIEW_FINDING,
                level: Level::of_review(f),
                locations: vec![Location { path: f.file.clone().into_bytes(), line: f.line }],
                message: match f.description.as_deref().filter(|d| !d.trim().is_empty()) {
                    Some(d) => format!("{}: {}", f.title, d),
                    None => f.title.clone(),
                },
                title: if lens.is_empty() { rules::REVIEW_FINDING.id.to_string() } else { lens.clone() },
                identity: vec![lens, title],
                related: Vec::new(),
            }
        })
        .collect();
    let clusters = crate::review::seam::clusters(findings);
    for s in &route.seams {
        // The first line of each file in the seam's cluster, when the findings gave one.
        let cluster = clusters.iter().find(|c| c.lens == s.lens && c.title == s.title);
        let line_of =
            |file: &str| cluster.and_then(|c| c.findings.iter().find(|m| m.file == file)).and_then(|m| m.line);
        let mut identity = vec![s.lens.clone(), s.title.clone()];
        identity.extend(s.files.iter().cloned());
        items.push(Item {
            rule: &rules::REVIEW_SEAM,
            level: Level::Warning,
            locations: s.files.iter().map(|f| Location { path: f.clone().into_bytes(), line: line_of(f) }).collect(),
            message: format!(
                "the same finding in {} files ({}, lens {}): a missing shared piece, routed to a step-back: {}",
                s.files.len(),
                s.files.join(", "),
                if s.lens.is_empty() { "-" } else { s.lens.as_str() },
                s.title
            ),
            title: rules::REVIEW_SEAM.id.to_string(),
            identity,
            related: Vec::new(),
        });
    }
    Report::new(items)
}

/// The copy detector's clusters: one result per cluster, a location at each copy.
pub fn from_copies(clusters: &[crate::review::clones::CloneCluster]) -> Report {
    let items = clusters
        .iter()
        .map(|c| {
            let tokens = c.blocks.first().map_or(0, |b| b.tokens);
            let mut identity = vec![tokens.to_string()];
            identity.extend(c.files.iter().cloned());
            Item {
                rule: &rules::COPIED_BLOCK,
                level: Level::Note,
                locations: c
                    .blocks
                    .iter()
                    .map(|b| Location { path: b.file.clone().into_bytes(), line: Some(u64::from(b.start_line)) })
                    .collect(),
                message: format!(
                    "a block of {tokens} tokens copied into {} files ({}): one shared piece would keep them together",
                    c.files.len(),
                    c.files.join(", ")
                ),
                title: rules::COPIED_BLOCK.id.to_string(),
                identity,
                related: Vec::new(),
            }
        })
        .collect();
    Report::new(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stray(p: &str) -> Vec<u8> {
        p.as_bytes().to_vec()
    }

    #[test]
    fn items_sort_by_path_line_rule_whatever_their_order() {
        let a = from_strays(&[stray("b.rs"), stray("a.rs")], "attempt 1", false);
        let b = from_strays(&[stray("a.rs"), stray("b.rs")], "attempt 1", false);
        assert_eq!(a, b);
        assert_eq!(a.items()[0].locations[0].path, b"a.rs");
        assert_eq!(a.rules().len(), 1);
    }

    #[test]
    fn a_fingerprint_ignores_the_line_and_whitespace_but_not_the_change() {
        use crate::widen::{Language, Severity};
        let f = |line: u32, before: &str| ScanFinding {
            rule: "rust-integer-widened".into(),
            language: Language::Rust,
            file: "src/q.rs".into(),
            symbol: "Query.limit".into(),
            line,
            before: before.into(),
            after: "limit: u64".into(),
            message: "m".into(),
            severity: Severity::Medium,
            linked: Vec::new(),
        };
        let fp = |x: ScanFinding| from_scan(&[x]).items()[0].fingerprint();
        assert_eq!(fp(f(3, "limit: u8")), fp(f(40, "limit:  u8 ")));
        assert_ne!(fp(f(3, "limit: u8")), fp(f(3, "limit: u16")));
        assert_eq!(fp(f(3, "limit: u8")).len(), FINGERPRINT_HEX);
    }
}
