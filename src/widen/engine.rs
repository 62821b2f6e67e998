//! The scan engine: picks the detector of each changed file, guards it against bad
//! input, and applies the policies (ignored paths, severity overrides, inline allow
//! comments, test code) to what the detectors report.
//!
//! Pure: it takes file contents as bytes and returns values. Reading blobs is the
//! command's job. Files are scanned in parallel (rayon); the result is sorted, so the
//! output never depends on scheduling.

use std::collections::BTreeMap;

use globset::{Glob, GlobSet, GlobSetBuilder};
use rayon::prelude::*;
use serde::Serialize;

use super::migrations::History;
use super::syntax::compact;
use super::{Family, Language, RawFinding, RuleId, Severity, catalogue, detector, window};

mod store;
pub use store::Findings;
pub(crate) use store::Found;

/// Default `scan.max_file_bytes`: 1 MiB. Hand-written source files are far smaller;
/// a larger "source" file is almost always generated or vendored, and parsing it
/// twice would dominate the scan's time for no useful signal.
pub(crate) const DEFAULT_MAX_FILE_BYTES: u64 = 1 << 20;

/// How many leading bytes are searched for a NUL to call a file binary (git's own
/// heuristic looks at the first 8000 bytes).
const BINARY_SNIFF_BYTES: usize = 8000;

/// Errors in the scan policy (bad configuration values).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    /// A `scan.ignore` pattern that is not a valid glob.
    #[error("scan.ignore: `{pattern}` is not a valid glob: {why}")]
    BadGlob { pattern: String, why: String },
    /// A `scan.severity` entry naming no rule of the catalogue.
    #[error("scan.severity: unknown rule `{rule}`")]
    UnknownRule { rule: String },
    /// A `scan.severity` value other than high, medium, low or off.
    #[error("scan.severity.{rule}: `{value}` is not one of high, medium, low, off")]
    BadSeverity { rule: String, value: String },
}

/// The policies the engine applies to detector output.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Files larger than this (either version) are skipped with a note.
    pub max_file_bytes: u64,
    /// Report findings inside test code (at low severity) instead of dropping them.
    pub include_tests: bool,
    /// Paths never scanned.
    pub ignore: GlobSet,
    /// Per-rule severity override; `None` silences the rule.
    pub severity: BTreeMap<String, Option<Severity>>,
    /// Parse only the declarations an edit touches when they stand alone (the change
    /// window), else leave out the function bodies that cannot matter
    /// ([`super::elide`]); `false` (`PREMERGE_SCAN_WINDOW=0`) parses every changed file
    /// whole: the same findings, slower (`scripts/check-window.sh` compares the two).
    pub window: bool,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            include_tests: false,
            ignore: GlobSet::empty(),
            severity: BTreeMap::new(),
            window: true,
        }
    }
}

impl Policy {
    /// What the detectors may leave out of their parse under this policy.
    pub(crate) fn parse(&self) -> detector::Parse {
        detector::Parse { window: self.window, skip_tests: self.window && !self.include_tests }
    }

    /// Build a policy from configuration values, validating globs, rule ids and severities.
    pub fn new(
        max_file_bytes: u64,
        include_tests: bool,
        ignore: &[String],
        severity: &BTreeMap<String, String>,
    ) -> Result<Policy, PolicyError> {
        let mut b = GlobSetBuilder::new();
        for p in ignore {
            let g = Glob::new(p).map_err(|e| PolicyError::BadGlob { pattern: p.clone(), why: e.kind().to_string() })?;
            b.add(g);
        }
        let ignore = b.build().map_err(|e| PolicyError::BadGlob { pattern: ignore.join(", "), why: e.to_string() })?;
        let mut sev = BTreeMap::new();
        for (rule, value) in severity {
            if catalogue::get(rule).is_none() {
                return Err(PolicyError::UnknownRule { rule: rule.clone() });
            }
            let v = catalogue::parse_severity_override(value)
                .ok_or_else(|| PolicyError::BadSeverity { rule: rule.clone(), value: value.clone() })?;
            sev.insert(rule.clone(), v);
        }
        Ok(Policy { max_file_bytes, include_tests, ignore, severity: sev, window: true })
    }
}

/// One changed file, both versions as bytes (`None`: absent on that side).
#[derive(Debug, Clone)]
pub struct FileInput {
    /// Repository path of the new version (the old one for a deletion).
    pub path: String,
    pub before: Option<Vec<u8>>,
    pub after: Option<Vec<u8>>,
}

/// A finding after policies: what `premerge scan` reports. Its fields are in byte
/// order of their names, so that serialized straight it is canonical JSON (the scan
/// prints tens of thousands without building a JSON tree for each; tested against
/// `canonical::to_compact`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub after: String,
    pub before: String,
    pub file: String,
    pub language: Language,
    pub line: u32,
    /// The other layers' declarations of the same field that still hold a stricter
    /// constraint than this change left ([`super::layers`]); left out of the JSON
    /// when empty, so findings without links serialize as before.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub linked: Vec<super::layers::Linked>,
    pub message: String,
    pub rule: String,
    pub severity: Severity,
    pub symbol: String,
}

/// Why a file produced no findings although it was looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoteKind {
    /// Skipped on purpose: binary, invalid UTF-8, over the size limit.
    Skipped,
    /// A version failed to parse: no findings for the file, and a warning.
    ParseFailed,
}

/// A note about one file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Note {
    pub file: String,
    pub kind: NoteKind,
    pub reason: String,
}

/// The engine's answer for a set of files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Sorted by (file, line, rule, symbol), byte order.
    pub findings: Vec<Finding>,
    /// Sorted by (file, kind, reason).
    pub notes: Vec<Note>,
    /// How many files a detector ran on.
    pub files_scanned: usize,
}

/// Earlier answers of the detectors: the raw findings of one file's pair of versions,
/// by a key the caller derives from whatever identifies the pair (the path and both
/// blob ids). The engine never opens a file: the command hands it a cache, and the
/// cache decides what it keeps. A cache must be safe to call from the scan's threads.
pub(crate) trait FindingsCache: Sync {
    /// The findings stored for `key`, if any (a damaged entry is a miss).
    fn get(&self, key: &str) -> Option<Vec<RawFinding>>;
    /// Remember the findings of `key`.
    fn put(&self, key: &str, findings: &[RawFinding]);
}

/// Inventories of single versions of files, by the grammar that read them
/// ([`super::stored::kind`]) and the version's blob id, as bytes the detector encoded.
/// Like [`FindingsCache`], the engine never opens a file: the command hands it one.
pub(crate) trait InventoryCache: Sync {
    /// The inventory stored for this version, if any.
    fn get(&self, kind: &str, oid: &str) -> Option<Vec<u8>>;
    /// Offer a version's inventory (the version of `path`), encoded if the store
    /// keeps it, when it writes it (after the scan).
    fn put(&self, kind: &str, oid: &str, path: &str, encode: detector::Encode);
}

/// A cache that remembers nothing.
pub(crate) struct NoCache;

impl FindingsCache for NoCache {
    fn get(&self, _key: &str) -> Option<Vec<RawFinding>> {
        None
    }
    fn put(&self, _key: &str, _findings: &[RawFinding]) {}
}

/// Scan many files in parallel.
pub fn scan(inputs: &[FileInput], policy: &Policy) -> Report {
    scan_with_history(inputs, policy, &History::default())
}

/// [`scan`], judging each changed migration after the earlier ones of its sequence.
pub fn scan_with_history(inputs: &[FileInput], policy: &Policy, history: &History) -> Report {
    scan_cached(inputs, &[], policy, history, Caches { findings: &NoCache, inventories: None })
}

/// How the caches know one changed file: the scan cache's key of its pair of versions
/// and each version's blob id (`None`: no id, such as a version read from the working
/// tree, or no such version).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Ids {
    pub pair: Option<String>,
    pub old: Option<String>,
    pub new: Option<String>,
}

/// The caches a scan may use.
#[derive(Clone, Copy)]
pub(crate) struct Caches<'a> {
    pub findings: &'a dyn FindingsCache,
    pub inventories: Option<&'a dyn InventoryCache>,
}

/// [`scan_with_history`] with caches: `ids[i]` names `inputs[i]` to them (a missing
/// entry: nothing cached). The findings cache answers for a pair of versions scanned
/// before; the inventory store for a single version read before. SQL migrations are
/// never cached: their findings depend on the earlier migrations too. Policies apply
/// after the caches, so changing `premerge.toml` never needs a fresh scan.
pub(crate) fn scan_cached(
    inputs: &[FileInput],
    ids: &[Ids],
    policy: &Policy,
    history: &History,
    caches: Caches,
) -> Report {
    let mut scan = Partial::default();
    scan.add(inputs, ids, policy, history, caches);
    let moved = scan.moved_checks().map(|mut moved| {
        let new: Vec<_> = inputs.par_iter().map(|i| moved.found(i.after.as_deref())).collect();
        for (i, new) in inputs.iter().zip(new) {
            // The old version matters only where the new one holds a check.
            let old = if new.is_empty() { Default::default() } else { moved.found(i.before.as_deref()) };
            moved.added(&i.path, new, &old);
        }
        moved
    });
    scan.finish(moved.as_ref())
}

/// A scan fed the change a part at a time ([`Partial::add`]), so that a caller can
/// read a few hundred files, scan them and drop their texts before reading the next:
/// what a scan holds is then its findings, not every changed file (issue 30 part 5:
/// the peak memory of a large change). The whole change's pass, checks moved to
/// another file ([`MovedChecks`]), runs after the last part, over texts the caller
/// reads again; [`Partial::finish`] applies it and puts everything in order.
#[derive(Debug, Default)]
pub(crate) struct Partial {
    /// Compact, spilled past a few MiB ([`store`]): a change of 60,000 files has
    /// 240,000 findings, which as [`Finding`]s were most of the scan's peak memory.
    findings: Findings,
    /// The removed checks found: record index, file and the check squashed (for
    /// [`MovedChecks`]).
    checks: Vec<(u64, String, String)>,
    notes: Vec<Note>,
    files_scanned: usize,
}

impl Partial {
    /// Scan some more files (in parallel); `ids[i]` names `inputs[i]` to the caches.
    pub(crate) fn add(
        &mut self,
        inputs: &[FileInput],
        ids: &[Ids],
        policy: &Policy,
        history: &History,
        caches: Caches,
    ) {
        let parts: Vec<(Vec<Found>, Option<Note>, bool)> =
            inputs.par_iter().enumerate().map(|(i, f)| scan_one(f, policy, history, ids.get(i), caches)).collect();
        for (input, (found, note, scanned)) in inputs.iter().zip(parts) {
            if let (Some(lang), false) = (Language::for_path(&input.path), found.is_empty()) {
                let first = self.findings.push_file(&input.path, lang, &found);
                for (i, f) in found.iter().enumerate() {
                    if let Some(needle) = MovedChecks::needle(f.rule, &f.before) {
                        self.checks.push((first + i as u64, input.path.clone(), needle));
                    }
                }
            }
            self.notes.extend(note);
            self.files_scanned += usize::from(scanned);
        }
    }

    /// The removed checks found so far that another file of the change may have taken
    /// in (`None`: no such finding, so no file needs to be read again).
    pub(crate) fn moved_checks(&self) -> Option<MovedChecks> {
        MovedChecks::of(self.checks.iter().map(|c| c.2.clone()))
    }

    /// The findings, checks moved to another file left out (`moved`, after every
    /// file's versions went through it), and the notes in their one order.
    pub(crate) fn finish_streamed(self, moved: Option<&MovedChecks>) -> (Findings, Vec<Note>, usize) {
        let Partial { mut findings, checks, mut notes, files_scanned } = self;
        if let Some(moved) = moved {
            for (index, file, needle) in &checks {
                if moved.moved(file, needle) {
                    findings.drop_record(*index);
                }
            }
        }
        notes.sort_by(|a, b| {
            a.file.as_bytes().cmp(b.file.as_bytes()).then(a.kind.cmp(&b.kind)).then(a.reason.cmp(&b.reason))
        });
        (findings, notes, files_scanned)
    }

    /// The report: [`Partial::finish_streamed`] with every finding in memory.
    pub(crate) fn finish(self, moved: Option<&MovedChecks>) -> Report {
        let (findings, notes, files_scanned) = self.finish_streamed(moved);
        // Only a temporary file that changed under the scan fails this: its findings
        // are then lost, as a damaged cache's are.
        let findings = findings.to_vec().unwrap_or_default();
        Report { findings, notes, files_scanned }
    }
}

/// Checks shorter than this (squashed) are too generic to be recognised elsewhere.
const MIN_MOVED_CHECK_CHARS: usize = 8;

/// How many files that added a check are remembered: two tell whether one of them is
/// another file than the finding's own.
const MOVED_CHECK_FILES: usize = 2;

/// A removed check that appears, verbatim up to whitespace, in the new version of
/// another file of the same change (and not in its old version) was moved into a
/// helper there, not removed. Detectors see one file; this pass sees the change.
/// One Aho-Corasick automaton over the distinct removed checks keeps it linear in
/// the size of the change, however many checks were removed. Fed every changed file
/// in the change's order ([`MovedChecks::found`], [`MovedChecks::added`]), a part at a
/// time or all at once: the same answer.
#[derive(Debug)]
pub(crate) struct MovedChecks {
    /// The distinct removed checks, squashed, in byte order.
    needles: Vec<String>,
    automaton: aho_corasick::AhoCorasick,
    /// Needle index -> the first files whose change added it.
    added: BTreeMap<usize, Vec<String>>,
}

impl MovedChecks {
    /// A removed check's text squashed, for a finding of rule `rule` (`None`: not a
    /// removed check, or one too short to recognise).
    fn needle(rule: RuleId, before: &str) -> Option<String> {
        if rule.family() != Family::CheckRemoved {
            return None;
        }
        Some(compact(before.trim_end_matches("..."))).filter(|n| n.chars().count() >= MIN_MOVED_CHECK_CHARS)
    }

    fn of(needles: impl Iterator<Item = String>) -> Option<MovedChecks> {
        let needles: Vec<String> = needles.collect::<std::collections::BTreeSet<_>>().into_iter().collect();
        if needles.is_empty() {
            return None;
        }
        let automaton = aho_corasick::AhoCorasick::new(&needles).ok()?;
        Some(MovedChecks { needles, automaton, added: BTreeMap::new() })
    }

    /// The removed checks a version of a file holds (none for an absent version or
    /// one that is not UTF-8).
    pub(crate) fn found(&self, version: Option<&[u8]>) -> std::collections::BTreeSet<usize> {
        let Some(text) = version.and_then(|b| std::str::from_utf8(b).ok()) else { return Default::default() };
        self.automaton.find_overlapping_iter(&compact(text)).map(|m| m.pattern().as_usize()).collect()
    }

    /// Record what the change of `path` added: the checks its new version holds
    /// (`new`) and its old one did not (`old`).
    pub(crate) fn added(
        &mut self,
        path: &str,
        new: std::collections::BTreeSet<usize>,
        old: &std::collections::BTreeSet<usize>,
    ) {
        for id in new.into_iter().filter(|n| !old.contains(n)) {
            let files = self.added.entry(id).or_default();
            if files.len() < MOVED_CHECK_FILES {
                files.push(path.to_string());
            }
        }
    }

    /// Whether the removed check `needle` of `file` went into another file.
    fn moved(&self, file: &str, needle: &str) -> bool {
        let Ok(id) = self.needles.binary_search_by(|n| n.as_str().cmp(needle)) else { return false };
        // A test that now calls the check (a validator's new unit test) is not
        // where production code's check went: only test code may move into tests.
        // A down migration undoes the change; it never holds where a check went.
        let moved_to =
            |p: &String| p != file && (!is_test_path(p) || is_test_path(file)) && !super::sql::is_down_migration(p);
        self.added.get(&id).is_some_and(|files| files.iter().any(moved_to))
    }
}

/// Scan one file.
pub fn scan_file(input: &FileInput, policy: &Policy) -> Report {
    scan(std::slice::from_ref(input), policy)
}

/// Path, line, rule and symbol, each in byte order.
fn finding_order(a: &Finding, b: &Finding) -> std::cmp::Ordering {
    (a.file.as_bytes().cmp(b.file.as_bytes()))
        .then(a.line.cmp(&b.line))
        .then(a.rule.as_bytes().cmp(b.rule.as_bytes()))
        .then(a.symbol.as_bytes().cmp(b.symbol.as_bytes()))
}

fn is_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0)
}

/// Whether a path is test code by convention (test directories and test file names
/// of the languages the scan covers).
pub(crate) fn is_test_path(path: &str) -> bool {
    let mut parts = path.split('/').collect::<Vec<_>>();
    let name = parts.pop().unwrap_or("");
    if parts.iter().any(|d| matches!(*d, "tests" | "test" | "__tests__" | "testdata" | "spec")) {
        return true;
    }
    let stem = name.split('.').next().unwrap_or("");
    name.starts_with("test_")
        || stem.ends_with("_test")
        || name == "conftest.py"
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// Returns (findings, note, whether a detector ran).
fn scan_one(
    input: &FileInput,
    policy: &Policy,
    history: &History,
    ids: Option<&Ids>,
    caches: Caches,
) -> (Vec<Found>, Option<Note>, bool) {
    let path = input.path.as_str();
    let Some(lang) = Language::for_path(path) else { return (Vec::new(), None, false) };
    // A deleted file takes its constraints with it: not a widening.
    let Some(after) = input.after.as_deref() else { return (Vec::new(), None, false) };
    if policy.ignore.is_match(path) {
        return (Vec::new(), None, false);
    }
    let test_path = is_test_path(path);
    if test_path && !policy.include_tests {
        // Every finding of a test file would be dropped below: not worth a parse.
        return (Vec::new(), None, false);
    }
    let note = |kind, reason: String| (Vec::new(), Some(Note { file: path.to_string(), kind, reason }), false);
    let before = input.before.as_deref().unwrap_or(b"");
    for (side, bytes) in [("old", before), ("new", after)] {
        if bytes.len() as u64 > policy.max_file_bytes {
            return note(
                NoteKind::Skipped,
                format!(
                    "{side} version is {} bytes, over scan.max_file_bytes ({})",
                    bytes.len(),
                    policy.max_file_bytes
                ),
            );
        }
        if is_binary(bytes) {
            return note(NoteKind::Skipped, format!("{side} version is binary"));
        }
    }
    if before == after {
        // A mode change or a pure rename: the same text constrains the same things.
        return (Vec::new(), None, false);
    }
    let (Ok(before), Ok(after)) = (std::str::from_utf8(before), std::str::from_utf8(after)) else {
        return note(NoteKind::Skipped, "not valid UTF-8".to_string());
    };
    if before.is_empty() && !super::added_may_fire(lang, after) {
        // No old constraint to loosen: nothing to parse.
        return (Vec::new(), None, false);
    }
    if policy.window && comments_alone_changed(lang, path, before, after) {
        // The detector ran in effect: the same code has the same constraints.
        return (Vec::new(), None, true);
    }
    let known = ids.and_then(|ids| {
        Some(detector::Known { store: caches.inventories?, old: ids.old.as_deref(), new: ids.new.as_deref() })
    });
    let detect = || detector::run_known(lang, path, before, after, policy.parse(), known);
    let raw = match (lang, ids.and_then(|i| i.pair.as_deref())) {
        (Language::Sql, _) => detector::run_sql_after(path, before, after, &history.earlier(path)),
        // A Django migration is judged against the app's earlier ones: never cached.
        (Language::Python, _) if super::migrations::slot(path).is_some() && !history.is_empty() => {
            detector::run_python_after(path, before, after, policy.parse(), known, &history.earlier(path))
        }
        (_, Some(key)) => match caches.findings.get(key) {
            Some(found) => Ok(found),
            None => {
                let found = detect();
                if let Ok(found) = &found {
                    caches.findings.put(key, found);
                }
                found
            }
        },
        (_, None) => detect(),
    };
    let raw = match raw {
        Ok(r) => r,
        Err(e) => return note(NoteKind::ParseFailed, e.0),
    };
    let lines: Vec<&str> = after.lines().collect();
    let mut findings: Vec<Found> = raw.into_iter().filter_map(|f| apply(f, test_path, &lines, policy)).collect();
    // In order already (`syntax::finish` sorts by line, rule id and symbol), which
    // this checks in one pass: the store relies on it.
    findings.sort_by(|a, b| {
        (a.line.cmp(&b.line))
            .then(a.rule.as_str().as_bytes().cmp(b.rule.as_str().as_bytes()))
            .then(a.symbol.as_bytes().cmp(b.symbol.as_bytes()))
    });
    (findings, None, true)
}

/// Whether an edit of a file changes its comments alone ([`window::same_code`]), in a
/// language whose detector has a change window (Rust; TypeScript and JavaScript but
/// JSX, as [`detector::Grammar::window`] says): nothing for its detector to find, no
/// parse needed. A comment edit is the commonest change a large range carries in
/// files it does not otherwise touch.
fn comments_alone_changed(lang: Language, path: &str, before: &str, after: &str) -> bool {
    use detector::Grammar as _;
    let lexer = match lang {
        Language::Rust => super::rust::RustDetector.window(path),
        Language::Typescript | Language::Javascript => super::ts::ScriptDetector.window(path),
        _ => None,
    };
    lexer.is_some_and(|lexer| window::same_code(lexer, before, after))
}

/// Whether the new line carries `premerge: allow(<rule-id>)` (a comma-separated list
/// of ids is accepted).
fn allowed(line: Option<&&str>, rule: &str) -> bool {
    let Some(line) = line else { return false };
    let mut rest = *line;
    while let Some(i) = rest.find("premerge: allow(") {
        rest = &rest[i + "premerge: allow(".len()..];
        let Some(end) = rest.find(')') else { return false };
        if rest[..end].split(',').any(|id| id.trim() == rule) {
            return true;
        }
        rest = &rest[end..];
    }
    false
}

fn apply(f: RawFinding, test_path: bool, lines: &[&str], p: &Policy) -> Option<Found> {
    let rule = f.rule.def();
    let mut severity = match p.severity.get(f.rule.as_str()) {
        Some(None) => return None,
        Some(Some(s)) => *s,
        None => rule.severity,
    };
    if f.in_test || test_path {
        if !p.include_tests {
            return None;
        }
        severity = Severity::Low;
    }
    if f.line >= 1 && allowed(lines.get(f.line as usize - 1), f.rule.as_str()) {
        return None;
    }
    Some(Found { line: f.line, rule: f.rule, severity, symbol: f.symbol, before: f.before, after: f.after })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_paths_follow_language_conventions() {
        for p in ["tests/a.rs", "src/__tests__/x.ts", "pkg/a_test.go", "test_api.py", "a/b.spec.ts", "x.test.js"] {
            assert!(is_test_path(p), "{p}");
        }
        for p in ["src/testing.rs", "src/latest.py", "contest.go", "src/attest/a.rs"] {
            assert!(!is_test_path(p), "{p}");
        }
    }

    #[test]
    fn allow_comment_lists() {
        assert!(allowed(Some(&"x: u64, // premerge: allow(rust-integer-widened)"), "rust-integer-widened"));
        assert!(allowed(Some(&"// premerge: allow(a, rust-x)"), "rust-x"));
        assert!(!allowed(Some(&"// premerge: allow(rust-xy)"), "rust-x"));
        assert!(!allowed(None, "rust-x"));
    }

    #[test]
    fn bad_input_is_noted_not_scanned() {
        let p = Policy { max_file_bytes: 10, ..Policy::default() };
        let big = FileInput { path: "a.rs".into(), before: None, after: Some(vec![b'a'; 11]) };
        assert_eq!(scan_file(&big, &p).notes[0].kind, NoteKind::Skipped);
        let bin = FileInput { path: "a.rs".into(), before: Some(b"a\0b".to_vec()), after: Some(b"x".to_vec()) };
        assert!(scan_file(&bin, &Policy::default()).notes[0].reason.contains("binary"));
        let utf = FileInput { path: "a.rs".into(), before: None, after: Some(vec![0xff, 0xfe, b'a']) };
        assert!(scan_file(&utf, &Policy::default()).notes[0].reason.contains("UTF-8"));
        let other = FileInput { path: "a.txt".into(), before: None, after: Some(b"\0".to_vec()) };
        assert_eq!(scan_file(&other, &Policy::default()), Report::default());
    }

    #[test]
    fn a_check_moved_to_another_changed_file_is_not_removed() {
        let f = |path: &str, before: &str, after: &str| FileInput {
            path: path.into(),
            before: Some(before.as_bytes().to_vec()),
            after: Some(after.as_bytes().to_vec()),
        };
        let a = f("src/a.rs", "fn g(x: u8) {\n    assert!(x < 10);\n}\n", "fn g(x: u8) {\n    check(x);\n}\n");
        let moved = f("src/b.rs", "", "pub fn check(x: u8) {\n    assert!(x <  10);\n}\n");
        let unrelated = f("src/b.rs", "", "pub fn check(x: u8) {}\n");
        assert!(scan(&[a.clone(), moved.clone()], &Policy::default()).findings.is_empty());
        assert_eq!(scan(&[a.clone(), unrelated], &Policy::default()).findings.len(), 1);
        // The same check text appearing in a new test is no move.
        let test = FileInput { path: "tests/check_test.rs".into(), ..moved };
        assert_eq!(scan(&[a, test], &Policy::default()).findings.len(), 1);
    }

    /// A file whose comments alone changed has nothing to find (and counts as
    /// scanned); a code edit beside a comment edit is found as before, and with the
    /// window off (the reference parse) the answers are the same.
    #[test]
    fn a_comment_edit_alone_finds_nothing() {
        let f = |path: &str, before: &str, after: &str| FileInput {
            path: path.into(),
            before: Some(before.as_bytes().to_vec()),
            after: Some(after.as_bytes().to_vec()),
        };
        let rs = "/// A record.\npub struct S {\n    pub a: u8,\n}\n";
        let ts = "/** A user. */\nexport interface U {\n  id: string;\n}\n";
        let cases = [
            (f("a.rs", rs, "/// An updated record.\npub struct S {\n    pub a: u8, // why\n}\n"), 0),
            (f("a.rs", rs, "/// An updated record.\npub struct S {\n    pub a: u64, // why\n}\n"), 1),
            (f("u.ts", ts, "/** The user. */\nexport interface U {\n  // a key\n  id: string;\n}\n"), 0),
            (f("u.ts", ts, "/** The user. */\nexport interface U {\n  id?: string;\n}\n"), 1),
        ];
        let reference = Policy { window: false, ..Policy::default() };
        for (input, found) in cases {
            let r = scan_file(&input, &Policy::default());
            assert_eq!((r.findings.len(), r.files_scanned), (found, 1), "{input:?}");
            assert_eq!(r, scan_file(&input, &reference), "{input:?}");
        }
    }

    /// Findings are in path, line, rule and symbol order whatever order the files
    /// came in (git gives them in path order; a caller may not).
    #[test]
    fn findings_are_in_one_order_whatever_the_input_order() {
        let f = |path: &str| FileInput {
            path: path.into(),
            before: Some(b"pub struct S {\n    pub b: u8,\n    pub a: u8,\n}\npub fn f(x: u8) {}\n".to_vec()),
            after: Some(b"pub struct S {\n    pub b: u64,\n    pub a: u64,\n}\npub fn f(x: u64) {}\n".to_vec()),
        };
        let key = |f: &Finding| (f.file.clone(), f.line, f.rule.clone(), f.symbol.clone());
        let paths = ["b/x.rs", "a.rs", "b.rs", "a/z.rs", "a-b.rs"];
        let mut expected: Vec<_> = paths.iter().flat_map(|p| scan_file(&f(p), &Policy::default()).findings).collect();
        expected.sort_by(finding_order);
        assert_eq!(expected.len(), 15, "three findings a file");
        for order in [[0, 1, 2, 3, 4], [1, 3, 4, 2, 0], [4, 3, 2, 1, 0]] {
            let inputs: Vec<FileInput> = order.iter().map(|&i| f(paths[i])).collect();
            let got = scan(&inputs, &Policy::default()).findings;
            assert_eq!(got.iter().map(key).collect::<Vec<_>>(), expected.iter().map(key).collect::<Vec<_>>());
        }
        // Within a file: line order.
        let lines: Vec<u32> = scan_file(&f("a.rs"), &Policy::default()).findings.iter().map(|f| f.line).collect();
        assert_eq!(lines, [2, 3, 5]);
    }

    /// A scan fed a part at a time (as `premerge scan` reads a large change) answers
    /// what one pass over every file answers: the same findings in the same order,
    /// whatever the order of the files, and a check moved into a file of a later part
    /// is still recognised as moved.
    #[test]
    fn a_scan_in_parts_answers_as_one_pass() {
        let f = |path: &str, before: &str, after: &str| FileInput {
            path: path.into(),
            before: Some(before.as_bytes().to_vec()),
            after: Some(after.as_bytes().to_vec()),
        };
        let widened = |p: &str| f(p, "pub struct S {\n    pub a: u8,\n}\n", "pub struct S {\n    pub a: u64,\n}\n");
        let removed = f("src/m.rs", "fn g(x: u8) {\n    assert!(x < 10);\n}\n", "fn g(x: u8) {\n    check(x);\n}\n");
        let kept = f("src/n.rs", "fn h(y: u8) {\n    assert!(y > 3);\n}\n", "fn h(y: u8) {\n    y;\n}\n");
        let helper = f("src/z.rs", "", "pub fn check(x: u8) {\n    assert!(x < 10);\n}\n");
        let inputs = [widened("src/b.rs"), removed, widened("src/a.rs"), kept, widened("src/y.rs"), helper];
        let whole = scan(&inputs, &Policy::default());
        let rules: Vec<&str> = whole.findings.iter().map(|f| f.rule.as_str()).collect();
        assert_eq!(
            rules,
            ["rust-integer-widened", "rust-integer-widened", "rust-assert-removed", "rust-integer-widened"]
        );
        for size in [1, 2, 4] {
            let mut partial = Partial::default();
            for part in inputs.chunks(size) {
                partial.add(
                    part,
                    &[],
                    &Policy::default(),
                    &History::default(),
                    Caches { findings: &NoCache, inventories: None },
                );
            }
            let mut moved = partial.moved_checks().expect("two checks were removed");
            for i in &inputs {
                let new = moved.found(i.after.as_deref());
                let old = moved.found(i.before.as_deref());
                moved.added(&i.path, new, &old);
            }
            assert_eq!(partial.finish(Some(&moved)), whole, "parts of {size}");
        }
    }

    #[test]
    fn added_files_are_parsed_only_where_a_rule_can_fire() {
        let added = |path: &str, text: &str| FileInput {
            path: path.into(),
            before: None,
            after: Some(text.as_bytes().to_vec()),
        };
        // Broken, but no rule could fire on an added TypeScript file: not parsed at all.
        let ts = scan_file(&added("src/a.ts", "export function f( {"), &Policy::default());
        assert_eq!((ts.notes.len(), ts.files_scanned), (0, 0));
        // Rust with `unsafe` is parsed (unsafe introduced can fire), so its error shows.
        let rs = scan_file(&added("src/a.rs", "fn f() { unsafe { g( } }"), &Policy::default());
        assert_eq!(rs.notes[0].kind, NoteKind::ParseFailed);
        let rs = scan_file(&added("src/b.rs", "pub fn f() {\n    unsafe { g() }\n}\n"), &Policy::default());
        assert_eq!(rs.findings.iter().map(|f| f.rule.as_str()).collect::<Vec<_>>(), ["rust-unsafe-introduced"]);
        // A migration arrives as a new file.
        let sql = scan_file(
            &added("migrations/2_relax.sql", "ALTER TABLE users ALTER COLUMN email DROP NOT NULL;\n"),
            &Policy::default(),
        );
        assert_eq!(sql.files_scanned, 1);
        assert!(!sql.findings.is_empty(), "{sql:?}");
    }

    #[test]
    fn policy_validates_configuration() {
        let bad = BTreeMap::from([("no-such-rule".to_string(), "low".to_string())]);
        assert!(matches!(Policy::new(1, false, &[], &bad), Err(PolicyError::UnknownRule { .. })));
        assert!(matches!(
            Policy::new(1, false, &["[".to_string()], &BTreeMap::new()),
            Err(PolicyError::BadGlob { .. })
        ));
    }
}
