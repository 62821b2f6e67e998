//! Seam detection over one review round: cluster findings by (lens or rule id,
//! normalised title); a cluster whose findings span at least [`SEAM_MIN_FILES`]
//! distinct files is a seam, a missing shared piece rather than N separate defects.

use std::collections::BTreeMap;

use serde::Serialize;

use super::title::normalise;
use crate::findings::Finding;

/// A cluster is a seam when its findings span this many distinct files. Three, not
/// two: two copies may be a deliberate pair; a third is a pattern (the `>= 3 files`
/// rule of the repeat-finding escalation, kept singular and deterministic).
pub(crate) const SEAM_MIN_FILES: usize = 3;

/// One original finding inside a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Member {
    pub file: String,
    pub line: Option<u64>,
    /// The title as the producer wrote it.
    pub title: String,
    pub severity: Option<String>,
    pub description: Option<String>,
}

/// Findings that share a lens and a normalised title.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cluster {
    /// Lens name, SARIF rule id, or reviewer category (empty when none was given).
    pub lens: String,
    /// The normalised title.
    pub title: String,
    /// Distinct files, byte-sorted.
    pub files: Vec<String>,
    /// The findings, ordered by file bytes, then line, then input order.
    pub findings: Vec<Member>,
    /// Whether the cluster spans at least [`SEAM_MIN_FILES`] files.
    pub seam: bool,
}

/// The clustering key's lens part: the lens (or rule id); a reviewer finding's category.
fn lens_of(f: &Finding) -> String {
    f.lens.as_deref().or(f.category.as_deref()).unwrap_or("").trim().to_string()
}

/// Cluster a round's findings. Order: seams first, then more files first, then lens
/// and title by bytes, so the output is the same on every run.
pub fn clusters(findings: &[Finding]) -> Vec<Cluster> {
    let mut by_key: BTreeMap<(String, String), Vec<&Finding>> = BTreeMap::new();
    for f in findings {
        by_key.entry((lens_of(f), normalise(&f.title))).or_default().push(f);
    }
    let mut out: Vec<Cluster> = by_key
        .into_iter()
        .map(|((lens, title), mut members)| {
            members.sort_by(|a, b| a.file.as_bytes().cmp(b.file.as_bytes()).then(a.line.cmp(&b.line)));
            let mut files: Vec<String> = members.iter().map(|f| f.file.clone()).collect();
            files.dedup();
            let findings = members
                .iter()
                .map(|f| Member {
                    file: f.file.clone(),
                    line: f.line,
                    title: f.title.clone(),
                    severity: f.severity.clone(),
                    description: f.description.clone(),
                })
                .collect();
            Cluster { seam: files.len() >= SEAM_MIN_FILES, lens, title, files, findings }
        })
        .collect();
    out.sort_by(|a, b| {
        b.seam
            .cmp(&a.seam)
            .then(b.files.len().cmp(&a.files.len()))
            .then(a.lens.as_bytes().cmp(b.lens.as_bytes()))
            .then(a.title.as_bytes().cmp(b.title.as_bytes()))
    });
    out
}

/// Only the clusters that are seams, in [`clusters`] order.
pub fn seams(findings: &[Finding]) -> Vec<Cluster> {
    clusters(findings).into_iter().filter(|c| c.seam).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn lens(lens: &str, file: &str, title: &str) -> Finding {
        Finding {
            index: 0,
            lens: Some(lens.to_string()),
            severity: Some("high".into()),
            file: file.to_string(),
            line: Some(1),
            title: title.to_string(),
            description: None,
            category: None,
            verdict: None,
            suggestion: None,
        }
    }

    #[test]
    fn three_files_fire_two_do_not() {
        let three = [
            lens("ARCH", "a.rs", "Duplicated filter"),
            lens("ARCH", "b.rs", "Duplicated filter"),
            lens("ARCH", "c.rs", "Duplicated filter"),
        ];
        let s = seams(&three);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].files, ["a.rs", "b.rs", "c.rs"]);
        let two = [
            lens("ARCH", "a.rs", "Duplicated filter"),
            lens("ARCH", "b.rs", "Duplicated filter"),
            lens("ARCH", "b.rs", "Duplicated filter"),
        ];
        assert!(seams(&two).is_empty());
    }

    #[test]
    fn titles_and_lenses_must_match() {
        let titles = [lens("A", "a.rs", "One"), lens("A", "b.rs", "Two"), lens("A", "c.rs", "Three")];
        assert!(seams(&titles).is_empty());
        let lenses = [lens("A", "a.rs", "Dup"), lens("B", "b.rs", "Dup"), lens("C", "c.rs", "Dup")];
        assert!(seams(&lenses).is_empty());
        let tokens = [
            lens("A", "src/a.rs", "Duplicated SQL filter builder in src/a.rs"),
            lens("A", "src/b.rs", "duplicated sql filter builder (src/b.rs:88)"),
            lens("A", "src/c.rs", "Duplicated SQL filter builder at line 4"),
        ];
        assert_eq!(seams(&tokens)[0].title, "duplicated sql filter builder");
    }
}
