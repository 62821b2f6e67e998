//! Guard memories: the durable record that a constraint was removed, written by the
//! widening scan and searched by whoever touches the file next (people, agents, the
//! stop gate, the review step-back).
//!
//! This module builds memories from findings (pure: [`plan`], [`content`],
//! [`metadata`]); [`crate::store::memory_db`] stores and searches them in the embedded
//! SQLite database. One memory per `(file, symbol)` per cycle; the cycle is the issue
//! (`issue-<N>`) or, without one, the head commit.
//!
//! API for other areas: [`crate::store::memory_db::search_by_files`] (memories
//! touching some files), [`crate::store::memory_db::search`] (full text, optionally
//! restricted to files), [`crate::store::memory_db::list`].

pub mod backend;
pub mod listing;
pub mod text;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use crate::widen::engine::Finding;

/// The instruction a memory carries when no more specific one fits its finding (a
/// removed check, `unsafe` code, a value made optional or a member made public each
/// have their own: see [`text::instruction`]).
#[cfg(test)]
pub(crate) const INSTRUCTION: &str =
    "Verify what now guarantees the old invariant before writing code that relies on the wider constraint.";

/// The cycle a scan belongs to: the issue when known, else the head commit.
pub fn cycle(issue: Option<u64>, commit: Option<&str>) -> String {
    match (issue, commit) {
        (Some(n), _) => format!("issue-{n}"),
        (None, Some(c)) => format!("commit-{c}"),
        (None, None) => "worktree".to_string(),
    }
}

/// A memory: what the scan writes and what `premerge memory list|search` prints
/// (inside [`Memory`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewMemory {
    pub cycle: String,
    pub file: String,
    pub symbol: String,
    /// The first finding's rule (findings on one symbol share one memory).
    pub rule: String,
    pub language: String,
    pub line: u32,
    pub before: String,
    pub after: String,
    pub issue: Option<u64>,
    pub commit: Option<String>,
    pub content: String,
    /// Canonical metadata (rule, rules, file, symbol, commit, issue, cycle).
    pub metadata: Value,
}

/// A stored memory: its row id and bookkeeping around the memory itself (whose
/// fields read through, `m.file`, `m.symbol`, and serialise inline).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Memory {
    pub id: i64,
    #[serde(flatten)]
    pub memory: NewMemory,
    pub created_at: String,
    /// `embedded`, `sent` (also written to the external backend) or `failed: <why>`.
    pub backend: String,
}

impl std::ops::Deref for Memory {
    type Target = NewMemory;
    fn deref(&self) -> &NewMemory {
        &self.memory
    }
}

/// The memory text for the findings on one `(file, symbol)`, written from the
/// findings themselves: each one's change in its own words, the bound the old
/// constraint implied where its text shows one, the rule's invariant, and an
/// instruction that fits the kind of constraint lost.
pub fn content(file: &str, symbol: &str, findings: &[&Finding], issue: Option<u64>, commit: Option<&str>) -> String {
    let mut s = format!("Guard memory for {file} `{symbol}`: ");
    let parts: Vec<String> = findings
        .iter()
        .map(|f| {
            let mut p = format!("{} ({})", text::change(f), f.rule);
            if let Some(bound) = text::old_bound(f) {
                p.push_str(&format!("; {bound}"));
            }
            p.push_str(&format!("; old invariant: {}", text::invariant(f)));
            p
        })
        .collect();
    s.push_str(&parts.join("; also "));
    match (issue, commit) {
        (Some(n), _) => s.push_str(&format!(". Removed in issue #{n}")),
        (None, Some(c)) => s.push_str(&format!(". Removed in commit {}", &c[..c.len().min(12)])),
        (None, None) => s.push_str(". Removed in uncommitted changes"),
    }
    s.push('.');
    let mut said = Vec::new();
    for f in findings {
        let i = text::instruction(f);
        if !said.contains(&i) {
            s.push(' ');
            s.push_str(&i);
            said.push(i);
        }
    }
    s
}

/// The metadata of one memory.
pub fn metadata(
    cycle: &str,
    file: &str,
    symbol: &str,
    rules: &[&str],
    issue: Option<u64>,
    commit: Option<&str>,
) -> Value {
    json!({
        "kind": "guard",
        "rule": rules.first().copied().unwrap_or(""),
        "rules": rules,
        "file": file,
        "symbol": symbol,
        "commit": commit,
        "issue": issue,
        "cycle": cycle,
    })
}

/// Group findings by `(file, symbol)` into the memories a scan writes, byte-sorted.
pub fn plan(findings: &[Finding], cycle: &str, issue: Option<u64>, commit: Option<&str>) -> Vec<NewMemory> {
    let mut groups: BTreeMap<(Vec<u8>, Vec<u8>), Vec<&Finding>> = BTreeMap::new();
    for f in findings {
        groups.entry((f.file.as_bytes().to_vec(), f.symbol.as_bytes().to_vec())).or_default().push(f);
    }
    groups
        .into_values()
        .map(|fs| {
            let first = fs[0];
            let mut rules: Vec<&str> = fs.iter().map(|f| f.rule.as_str()).collect();
            rules.dedup();
            NewMemory {
                cycle: cycle.to_string(),
                file: first.file.clone(),
                symbol: first.symbol.clone(),
                rule: first.rule.clone(),
                language: first.language.as_str().to_string(),
                line: first.line,
                before: first.before.clone(),
                after: first.after.clone(),
                issue,
                commit: commit.map(str::to_string),
                content: content(&first.file, &first.symbol, &fs, issue, commit),
                metadata: metadata(cycle, &first.file, &first.symbol, &rules, issue, commit),
            }
        })
        .collect()
}

/// A finding and one of the sites it is linked to.
type LinkedTo<'a> = (&'a Finding, &'a crate::widen::layers::Linked);

/// The memories of the sites a finding is linked to across layers (one per site's
/// `(file, symbol)`, byte-sorted; a site that is itself a finding's `(file, symbol)`
/// keeps that finding's memory): each says what the site still holds, which change
/// loosened the same field elsewhere, and what to check before relying on either.
pub fn plan_linked(findings: &[Finding], cycle: &str, issue: Option<u64>, commit: Option<&str>) -> Vec<NewMemory> {
    let own: std::collections::BTreeSet<(&str, &str)> =
        findings.iter().map(|f| (f.file.as_str(), f.symbol.as_str())).collect();
    let mut groups: BTreeMap<(Vec<u8>, Vec<u8>), Vec<LinkedTo>> = BTreeMap::new();
    for f in findings {
        for l in f.linked.iter().filter(|l| !own.contains(&(l.path.as_str(), l.symbol.as_str()))) {
            groups.entry((l.path.as_bytes().to_vec(), l.symbol.as_bytes().to_vec())).or_default().push((f, l));
        }
    }
    groups
        .into_values()
        .map(|links| {
            let (first, site) = links[0];
            let mut rules: Vec<&str> = links.iter().map(|(f, _)| f.rule.as_str()).collect();
            rules.dedup();
            let changes: Vec<String> = links
                .iter()
                .map(|(f, _)| format!("{} `{}` {} ({})", f.file, f.symbol, text::change(f), f.rule))
                .collect();
            let when = match (issue, commit) {
                (Some(n), _) => format!("in issue #{n}"),
                (None, Some(c)) => format!("in commit {}", &c[..c.len().min(12)]),
                (None, None) => "in uncommitted changes".to_string(),
            };
            let content = format!(
                "Guard memory for {} `{}` ({} layer): it still holds `{}` for a field another layer loosened {when}: \
                 {}. Values the loosened layer now accepts may fail, be cut or surprise here; decide which \
                 constraint is meant and make the layers agree before relying on either.",
                site.path,
                site.symbol,
                site.layer.as_str(),
                site.constraint,
                changes.join("; also ")
            );
            let language = crate::widen::Language::for_path(&site.path).map_or(first.language.as_str(), |l| l.as_str());
            NewMemory {
                cycle: cycle.to_string(),
                file: site.path.clone(),
                symbol: site.symbol.clone(),
                rule: first.rule.clone(),
                language: language.to_string(),
                line: site.line,
                before: site.constraint.clone(),
                after: site.constraint.clone(),
                issue,
                commit: commit.map(str::to_string),
                content,
                metadata: metadata(cycle, &site.path, &site.symbol, &rules, issue, commit),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::widen::{Language, Severity};

    fn f(file: &str, symbol: &str, rule: &str) -> Finding {
        Finding {
            rule: rule.into(),
            language: Language::Rust,
            file: file.into(),
            symbol: symbol.into(),
            line: 3,
            before: "limit: u8".into(),
            after: "limit: u64".into(),
            message: String::new(),
            severity: Severity::Medium,
            linked: Vec::new(),
        }
    }

    #[test]
    fn one_memory_per_file_and_symbol() {
        let fs = [
            f("a.rs", "Q.limit", "rust-integer-widened"),
            f("a.rs", "Q.limit", "rust-field-made-public"),
            f("b.rs", "Q.limit", "rust-integer-widened"),
        ];
        let p = plan(&fs, "issue-7", Some(7), Some("abc"));
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].cycle, "issue-7");
        assert_eq!(p[0].metadata["rules"], json!(["rust-integer-widened", "rust-field-made-public"]));
        assert!(p[0].content.contains("`limit: u8` became `limit: u64`"));
        assert!(p[0].content.contains("issue #7"));
        assert!(p[0].content.contains("the old type `u8` kept the value between 0 and 255"), "{}", p[0].content);
        assert!(p[0].content.contains(INSTRUCTION), "{}", p[0].content);
    }

    #[test]
    fn cycle_is_the_issue_else_the_commit() {
        assert_eq!(cycle(Some(4), Some("c")), "issue-4");
        assert_eq!(cycle(None, Some("c")), "commit-c");
        assert_eq!(cycle(None, None), "worktree");
    }
}
