//! Findings input: the three shapes premerge accepts, detected automatically and
//! normalised into one owned [`Finding`] list.
//!
//! - lens findings: `{"findings":[{lens, severity, path, line, title, description, suggestion}]}`
//!   or a bare array of those;
//! - reviewer findings: `{file, line, summary, failure_scenario, category, verdict, severity}`
//!   (a bare array, or under `"findings"`);
//! - SARIF 2.1.0: one finding per result location, `ruleId` as the lens.
//!
//! Pure: the caller reads the file (and enforces its size limit) and passes the text
//! and the repository root used to make absolute paths and `file://` URIs relative.

pub mod canonical;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// Which shape a findings document had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    Lens,
    Reviewer,
    Sarif,
}

/// One finding, whatever shape it came in as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Position of the source record in the input (0-based; SARIF: result index).
    pub index: usize,
    /// Lens name (lens findings) or SARIF `ruleId`; `None` for reviewer findings.
    pub lens: Option<String>,
    /// `blocker`, `suggestion`, SARIF `level`, or whatever the producer wrote.
    pub severity: Option<String>,
    /// Repository-relative path, `/`-separated.
    pub file: String,
    /// 1-based line, when given.
    pub line: Option<u64>,
    /// Lens `title`, reviewer `summary`, SARIF `message.text`.
    pub title: String,
    /// Lens `description`, reviewer `failure_scenario`.
    pub description: Option<String>,
    pub category: Option<String>,
    pub verdict: Option<String>,
    pub suggestion: Option<String>,
}

/// A parsed findings document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Findings {
    pub shape: Shape,
    pub findings: Vec<Finding>,
    /// SARIF results with no physical location (nothing to route to a file).
    pub skipped_without_location: usize,
    /// SARIF locations outside the repository root.
    pub skipped_outside_repo: usize,
    /// Records that could not become a finding, in input order, each with its reason
    /// (`invalid_finding`, `outside_repo`). [`parse`] refuses the document on the first;
    /// [`parse_lenient`] keeps them here so the caller can count them.
    pub dropped: Vec<DroppedRecord>,
}

/// A record of the findings document that did not become a finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DroppedRecord {
    /// Position of the record in the input (SARIF: result index).
    pub index: usize,
    /// `invalid_finding` (malformed) or `outside_repo` (a path outside the repository).
    pub reason: &'static str,
    /// JSON path of the offending value and why: `$.findings[3].path: is required`.
    pub detail: String,
}

/// The drop reason of a malformed finding record.
pub(crate) const INVALID_FINDING: &str = "invalid_finding";
/// The drop reason of a finding whose path is outside the repository.
pub(crate) const OUTSIDE_REPO: &str = "outside_repo";

/// A findings document that does not fit any accepted shape.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{path}: {why}")]
pub struct FindingsError {
    /// JSON path of the offending value (`$.findings[3].line`).
    pub path: String,
    pub why: String,
}

fn err(path: &str, why: impl Into<String>) -> FindingsError {
    FindingsError { path: path.to_string(), why: why.into() }
}

/// Parse a findings document, refusing it on its first malformed record or path outside
/// the repository. `repo_root` is the absolute repository root, used to relativise
/// absolute paths and `file://` URIs.
pub fn parse(text: &str, repo_root: &str) -> Result<Findings, FindingsError> {
    let f = parse_lenient(text, repo_root)?;
    if let Some(d) = f.dropped.first() {
        let (path, why) = d.detail.split_once(": ").unwrap_or(("$", d.detail.as_str()));
        return Err(err(path, why));
    }
    Ok(f)
}

/// Parse a findings document, dropping (and listing in [`Findings::dropped`]) every
/// record that is malformed or names a path outside the repository. Only a document
/// that is not JSON or none of the accepted shapes is an error.
pub(crate) fn parse_lenient(text: &str, repo_root: &str) -> Result<Findings, FindingsError> {
    let doc: Value = serde_json::from_str(text).map_err(|e| err("$", format!("not valid JSON: {e}")))?;
    match &doc {
        Value::Object(o) if o.contains_key("runs") || o.get("version").and_then(Value::as_str) == Some("2.1.0") => {
            parse_sarif(&doc, repo_root)
        }
        Value::Object(o) => match o.get("findings") {
            Some(Value::Array(items)) => parse_records(items, "$.findings", repo_root),
            Some(_) => Err(err("$.findings", "must be an array")),
            None => Err(err("$", "expected a findings array, an object with `findings`, or a SARIF 2.1.0 log")),
        },
        Value::Array(items) => parse_records(items, "$", repo_root),
        _ => Err(err("$", "expected a findings array, an object with `findings`, or a SARIF 2.1.0 log")),
    }
}

fn parse_records(items: &[Value], base: &str, root: &str) -> Result<Findings, FindingsError> {
    let mut shape = None;
    let mut findings = Vec::with_capacity(items.len());
    let mut dropped = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match parse_record(item, i, base, root, &mut shape) {
            Ok(f) => findings.push(f),
            Err((reason, e)) => dropped.push(DroppedRecord { index: i, reason, detail: e.to_string() }),
        }
    }
    Ok(Findings {
        shape: shape.unwrap_or(Shape::Reviewer),
        findings,
        skipped_without_location: 0,
        skipped_outside_repo: 0,
        dropped,
    })
}

fn parse_record(
    item: &Value,
    i: usize,
    base: &str,
    root: &str,
    shape: &mut Option<Shape>,
) -> Result<Finding, (&'static str, FindingsError)> {
    let invalid = |e: FindingsError| (INVALID_FINDING, e);
    let p = format!("{base}[{i}]");
    let Value::Object(o) = item else {
        return Err(invalid(err(&p, "must be an object")));
    };
    let this = if o.contains_key("path") || o.contains_key("title") || o.contains_key("lens") {
        Shape::Lens
    } else if o.contains_key("file") || o.contains_key("summary") {
        Shape::Reviewer
    } else {
        return Err(invalid(err(&p, "neither a lens finding (path, title) nor a reviewer finding (file, summary)")));
    };
    match *shape {
        Some(s) if s != this => {
            return Err(invalid(err(&p, format!("mixes {this:?} and {s:?} findings in one document").to_lowercase())));
        }
        _ => {}
    }
    let rec = match this {
        Shape::Lens => typed::<LensRecord>(item, &p).map(Record::from),
        _ => typed::<ReviewerRecord>(item, &p).map(Record::from),
    }
    .map_err(invalid)?;
    let file_key = if this == Shape::Lens { "path" } else { "file" };
    let file = relativise(&rec.file, root)
        .ok_or_else(|| (OUTSIDE_REPO, err(&format!("{p}.{file_key}"), "path is outside the repository")))?;
    if file.is_empty() {
        return Err(invalid(err(&format!("{p}.{file_key}"), "must not be empty")));
    }
    let f = Finding {
        index: i,
        lens: rec.lens,
        severity: rec.severity,
        file,
        line: rec.line,
        title: rec.title,
        description: rec.description,
        category: rec.category,
        verdict: rec.verdict,
        suggestion: rec.suggestion,
    };
    // The document's shape is the shape of its first well-formed record.
    shape.get_or_insert(this);
    Ok(f)
}

/// A lens finding as it is read. (The fields both shapes share are repeated rather
/// than flattened: `serde(flatten)` would lose the JSON path of an error in them.)
#[derive(Deserialize)]
struct LensRecord {
    #[serde(deserialize_with = "string")]
    path: String,
    #[serde(deserialize_with = "string")]
    title: String,
    #[serde(default, deserialize_with = "opt_string")]
    lens: Option<String>,
    #[serde(default, deserialize_with = "opt_string")]
    description: Option<String>,
    #[serde(default, deserialize_with = "opt_string")]
    severity: Option<String>,
    #[serde(default, deserialize_with = "opt_line")]
    line: Option<u64>,
    #[serde(default, deserialize_with = "opt_string")]
    category: Option<String>,
    #[serde(default, deserialize_with = "opt_string")]
    verdict: Option<String>,
    #[serde(default, deserialize_with = "opt_string")]
    suggestion: Option<String>,
}

/// A reviewer finding as it is read.
#[derive(Deserialize)]
struct ReviewerRecord {
    #[serde(deserialize_with = "string")]
    file: String,
    #[serde(deserialize_with = "string")]
    summary: String,
    #[serde(default, deserialize_with = "opt_string")]
    failure_scenario: Option<String>,
    #[serde(default, deserialize_with = "opt_string")]
    severity: Option<String>,
    #[serde(default, deserialize_with = "opt_line")]
    line: Option<u64>,
    #[serde(default, deserialize_with = "opt_string")]
    category: Option<String>,
    #[serde(default, deserialize_with = "opt_string")]
    verdict: Option<String>,
    #[serde(default, deserialize_with = "opt_string")]
    suggestion: Option<String>,
}

/// Either record shape, normalised.
struct Record {
    file: String,
    title: String,
    description: Option<String>,
    lens: Option<String>,
    severity: Option<String>,
    line: Option<u64>,
    category: Option<String>,
    verdict: Option<String>,
    suggestion: Option<String>,
}

impl From<LensRecord> for Record {
    fn from(r: LensRecord) -> Record {
        Record {
            file: r.path,
            title: r.title,
            description: r.description,
            lens: r.lens,
            severity: r.severity,
            line: r.line,
            category: r.category,
            verdict: r.verdict,
            suggestion: r.suggestion,
        }
    }
}

impl From<ReviewerRecord> for Record {
    fn from(r: ReviewerRecord) -> Record {
        Record {
            file: r.file,
            title: r.summary,
            description: r.failure_scenario,
            lens: None,
            severity: r.severity,
            line: r.line,
            category: r.category,
            verdict: r.verdict,
            suggestion: r.suggestion,
        }
    }
}

/// Deserialize `item` as `T`, naming the offending value by its JSON path under `p`
/// (`$.findings[3].line: must be a positive integer`, `$[0].path: is required`).
fn typed<T: for<'de> Deserialize<'de>>(item: &Value, p: &str) -> Result<T, FindingsError> {
    serde_path_to_error::deserialize(item).map_err(|e| {
        let mut path = p.to_string();
        for seg in e.path().iter() {
            match seg {
                serde_path_to_error::Segment::Seq { index } => path.push_str(&format!("[{index}]")),
                serde_path_to_error::Segment::Map { key } => {
                    path.push('.');
                    path.push_str(key);
                }
                serde_path_to_error::Segment::Enum { variant } => {
                    path.push('.');
                    path.push_str(variant);
                }
                serde_path_to_error::Segment::Unknown => {}
            }
        }
        let why = e.inner().to_string();
        // A missing field is reported at its parent: name the field itself.
        match why.strip_prefix("missing field `").and_then(|r| r.strip_suffix('`')) {
            Some(field) => err(&format!("{path}.{field}"), "is required"),
            None => err(&path, why),
        }
    })
}

fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => Ok(s),
        _ => Err(serde::de::Error::custom("must be a string")),
    }
}

fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s)),
        _ => Err(serde::de::Error::custom("must be a string")),
    }
}

fn opt_line<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::Number(n) => n
            .as_u64()
            .filter(|n| *n >= 1)
            .map(Some)
            .ok_or_else(|| serde::de::Error::custom("must be a positive integer")),
        _ => Err(serde::de::Error::custom("must be a positive integer or null")),
    }
}

/// Make a path repository-relative and `/`-separated. `None` when it is absolute
/// (or a `file://` URI) outside `root`.
pub fn relativise(raw: &str, root: &str) -> Option<String> {
    let mut s = raw.to_string();
    if let Some(rest) = s.strip_prefix("file://") {
        // file:///abs/path or file://host/abs/path; premerge only reads local paths.
        let rest = rest.strip_prefix("localhost").unwrap_or(rest);
        s = percent_decode(rest);
    }
    let s = s.replace('\\', "/");
    if s.starts_with('/') {
        let root = root.trim_end_matches('/');
        let rel = s.strip_prefix(root)?.strip_prefix('/')?;
        return Some(clean(rel));
    }
    Some(clean(&s))
}

/// A repository-relative path without empty or `.` components: `src//a.rs`,
/// `./src/a.rs` and `.//etc/passwd` are `src/a.rs`, `src/a.rs` and `etc/passwd`, so a
/// doubled slash can never turn a relative path into an absolute one. `..` stays for
/// the planner's containment check to judge.
fn clean(p: &str) -> String {
    p.split('/').filter(|c| !c.is_empty() && *c != ".").collect::<Vec<_>>().join("/")
}

/// `%XX` decoded (an invalid escape stays as written; bytes that are not UTF-8 become U+FFFD).
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// The local path a SARIF URI names: `file://[host]/abs` or a relative reference,
/// percent-decoded either way (SARIF URIs are RFC 3986 references: `a%20b.py` is the
/// file `a b.py`).
fn sarif_path(uri: &str) -> String {
    match uri.strip_prefix("file://") {
        Some(rest) => percent_decode(rest.strip_prefix("localhost").unwrap_or(rest)),
        None => percent_decode(uri.strip_prefix("file:").unwrap_or(uri)),
    }
}

/// A value read without failing: the SARIF walk judges a value of the wrong type in its
/// own order (a result's `ruleId`, then its message, then each location in turn), and
/// skips many of them, so the types below only record what they found.
#[derive(Default)]
enum Lenient<T> {
    #[default]
    Absent,
    Null,
    Found(T),
    Wrong,
}

impl<T> Lenient<T> {
    fn found(self) -> Option<T> {
        match self {
            Lenient::Found(t) => Some(t),
            _ => None,
        }
    }
}

/// What a lenient value may be read as. `OBJECT` types accept a JSON object only (a
/// derived struct would also take an array, which the SARIF walk never did).
trait Read: serde::de::DeserializeOwned {
    const OBJECT: bool = false;
}

impl Read for String {}
impl Read for u64 {}
impl<T: Read> Read for Vec<Lenient<T>> {}
impl<T: Read> Read for std::collections::BTreeMap<String, Lenient<T>> {
    const OBJECT: bool = true;
}

impl<'de, T: Read> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Null => Lenient::Null,
            v if T::OBJECT && !v.is_object() => Lenient::Wrong,
            v => T::deserialize(v).map_or(Lenient::Wrong, Lenient::Found),
        })
    }
}

/// `$.version`: absent, null or `2.1.0`.
#[derive(Deserialize)]
struct SarifVersion {
    #[serde(default, deserialize_with = "sarif_version")]
    #[allow(dead_code)]
    version: (),
}

fn sarif_version<'de, D: Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(()),
        Value::String(v) if v == "2.1.0" => Ok(()),
        v => Err(serde::de::Error::custom(format!("SARIF version {v} is not supported (only 2.1.0)"))),
    }
}

/// `$.runs`, each run judged in turn.
#[derive(Deserialize)]
struct SarifRuns {
    #[serde(default, deserialize_with = "runs_array")]
    runs: Option<Vec<Value>>,
}

fn runs_array<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Value>>, D::Error> {
    match Value::deserialize(d)? {
        Value::Array(r) => Ok(Some(r)),
        _ => Err(serde::de::Error::custom("a SARIF log needs a `runs` array")),
    }
}

#[derive(Deserialize)]
struct SarifRun {
    /// uriBaseId -> absolute base (%SRCROOT% and friends); anything but an object is ignored.
    #[serde(default, rename = "originalUriBaseIds")]
    bases: Lenient<std::collections::BTreeMap<String, Lenient<SarifBase>>>,
    #[serde(default, deserialize_with = "opt_array")]
    results: Option<Vec<Value>>,
}

fn opt_array<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Value>>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::Array(r) => Ok(Some(r)),
        _ => Err(serde::de::Error::custom("must be an array")),
    }
}

#[derive(Deserialize)]
struct SarifBase {
    #[serde(default)]
    uri: Lenient<String>,
}
impl Read for SarifBase {
    const OBJECT: bool = true;
}

#[derive(Deserialize)]
struct SarifResult {
    #[serde(default, rename = "ruleId")]
    rule_id: Lenient<String>,
    #[serde(default)]
    rule: Lenient<SarifRule>,
    #[serde(default)]
    message: Lenient<SarifMessage>,
    #[serde(default)]
    level: Lenient<String>,
    #[serde(default)]
    kind: Lenient<String>,
    #[serde(default)]
    locations: Lenient<Vec<Lenient<SarifLocation>>>,
}

#[derive(Deserialize)]
struct SarifRule {
    #[serde(default)]
    id: Lenient<String>,
}
impl Read for SarifRule {
    const OBJECT: bool = true;
}

#[derive(Deserialize)]
struct SarifMessage {
    #[serde(default)]
    text: Lenient<String>,
    #[serde(default)]
    markdown: Lenient<String>,
}
impl Read for SarifMessage {
    const OBJECT: bool = true;
}

#[derive(Deserialize)]
struct SarifLocation {
    #[serde(default, rename = "physicalLocation")]
    physical: Lenient<SarifPhysical>,
}
impl Read for SarifLocation {
    const OBJECT: bool = true;
}

#[derive(Deserialize)]
struct SarifPhysical {
    #[serde(default, rename = "artifactLocation")]
    artifact: Lenient<SarifArtifact>,
    #[serde(default)]
    region: Lenient<SarifRegion>,
}
impl Read for SarifPhysical {
    const OBJECT: bool = true;
}

#[derive(Deserialize)]
struct SarifArtifact {
    #[serde(default)]
    uri: Lenient<String>,
    #[serde(default, rename = "uriBaseId")]
    uri_base_id: Lenient<String>,
}
impl Read for SarifArtifact {
    const OBJECT: bool = true;
}

#[derive(Deserialize)]
struct SarifRegion {
    #[serde(default, rename = "startLine")]
    start_line: Lenient<u64>,
}
impl Read for SarifRegion {
    const OBJECT: bool = true;
}

/// The level of a SARIF result: its `level`, else `none` for a result whose `kind` is
/// not `fail` (a pass, a review item), else `warning`: SARIF 2.1.0's default (§3.27.10).
fn sarif_level(level: Lenient<String>, kind: Lenient<String>) -> String {
    match (level.found(), kind.found()) {
        (Some(level), _) => level,
        (None, Some(kind)) if kind != "fail" => "none".to_string(),
        _ => "warning".to_string(),
    }
}

fn parse_sarif(doc: &Value, root: &str) -> Result<Findings, FindingsError> {
    typed::<SarifVersion>(doc, "$")?;
    let Some(runs) = typed::<SarifRuns>(doc, "$")?.runs else {
        return Err(err("$.runs", "a SARIF log needs a `runs` array"));
    };
    let mut out = Findings {
        shape: Shape::Sarif,
        findings: Vec::new(),
        skipped_without_location: 0,
        skipped_outside_repo: 0,
        dropped: Vec::new(),
    };
    let mut result_index = 0;
    for (ri, run) in runs.iter().enumerate() {
        let rp = format!("$.runs[{ri}]");
        if !run.is_object() {
            return Err(err(&rp, "must be an object"));
        }
        let run = typed::<SarifRun>(run, &rp)?;
        let bases = run.bases.found().unwrap_or_default();
        let Some(results) = run.results else { continue };
        for (i, res) in results.iter().enumerate() {
            let p = format!("{rp}.results[{i}]");
            // A malformed result is dropped (counted); the rest of the log still counts.
            let before = out.findings.len();
            if let Err(e) = sarif_result(res, &p, result_index, &bases, root, &mut out) {
                out.findings.truncate(before);
                out.dropped.push(DroppedRecord { index: result_index, reason: INVALID_FINDING, detail: e.to_string() });
            }
            result_index += 1;
        }
    }
    Ok(out)
}

fn sarif_result(
    res: &Value,
    p: &str,
    index: usize,
    bases: &std::collections::BTreeMap<String, Lenient<SarifBase>>,
    root: &str,
    out: &mut Findings,
) -> Result<(), FindingsError> {
    if !res.is_object() {
        return Err(err(p, "must be an object"));
    }
    let res = typed::<SarifResult>(res, p)?;
    let rule = match res.rule_id {
        Lenient::Found(s) => Some(s),
        Lenient::Absent | Lenient::Null => res.rule.found().and_then(|r| r.id.found()),
        Lenient::Wrong => return Err(err(&format!("{p}.ruleId"), "must be a string")),
    };
    // `text` when present (whatever its type), else `markdown`.
    let text = res
        .message
        .found()
        .and_then(|m| match m.text {
            Lenient::Absent => m.markdown.found(),
            t => t.found(),
        })
        .ok_or_else(|| err(&format!("{p}.message.text"), "is required"))?;
    let level = sarif_level(res.level, res.kind);
    let locs = match res.locations {
        Lenient::Absent | Lenient::Null => Vec::new(),
        Lenient::Found(l) => l,
        Lenient::Wrong => return Err(err(&format!("{p}.locations"), "must be an array")),
    };
    let no_locations = locs.is_empty();
    let mut outside = 0;
    let mut placed = Vec::new();
    for (li, loc) in locs.into_iter().enumerate() {
        let lp = format!("{p}.locations[{li}].physicalLocation");
        let Some(phys) = loc.found().and_then(|l| l.physical.found()) else { continue };
        let art = match phys.artifact {
            Lenient::Absent => continue,
            Lenient::Found(a) => a.uri.found().map(|u| (u, a.uri_base_id.found())),
            Lenient::Null | Lenient::Wrong => None,
        };
        let Some((uri, base_id)) = art else {
            return Err(err(&format!("{lp}.artifactLocation.uri"), "is required"));
        };
        let full = match base_id {
            Some(id) if !uri.starts_with("file:") && !uri.starts_with('/') => {
                match bases.get(&id).and_then(|b| match b {
                    Lenient::Found(b) => match &b.uri {
                        Lenient::Found(u) => Some(u.as_str()),
                        _ => None,
                    },
                    _ => None,
                }) {
                    Some(base) => format!("{}/{}", sarif_path(base).trim_end_matches('/'), sarif_path(&uri)),
                    // An unresolved base id (%SRCROOT% by convention) means the root.
                    None => sarif_path(&uri),
                }
            }
            _ => sarif_path(&uri),
        };
        let Some(file) = relativise(&full, root) else {
            outside += 1;
            continue;
        };
        let line = match phys.region.found().map(|r| r.start_line) {
            None | Some(Lenient::Absent) | Some(Lenient::Null) => None,
            Some(Lenient::Found(n)) if n >= 1 => Some(n),
            Some(_) => return Err(err(&format!("{lp}.region.startLine"), "must be a positive integer")),
        };
        placed.push(Finding {
            index,
            lens: rule.clone(),
            severity: Some(level.clone()),
            file,
            line,
            title: text.clone(),
            description: None,
            category: None,
            verdict: None,
            suggestion: None,
        });
    }
    if no_locations {
        out.skipped_without_location += 1;
    }
    out.skipped_outside_repo += outside;
    out.findings.extend(placed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lens_object_and_bare_array() {
        let t = r#"{"findings":[{"lens":"ARCH","severity":"high","path":"src/a.rs","line":3,"title":"Dup","description":"d"}]}"#;
        let f = parse(t, "/repo").unwrap();
        assert_eq!(f.shape, Shape::Lens);
        assert_eq!(f.findings[0].file, "src/a.rs");
        let t = r#"[{"lens":"ARCH","path":"./src/a.rs","title":"Dup"}]"#;
        assert_eq!(parse(t, "/repo").unwrap().findings[0].file, "src/a.rs");
    }

    #[test]
    fn reviewer_shape() {
        let t = r#"[{"file":"/repo/a.py","line":null,"summary":"s","failure_scenario":"x","category":"bug"}]"#;
        let f = parse(t, "/repo").unwrap();
        assert_eq!(f.shape, Shape::Reviewer);
        assert_eq!(f.findings[0].file, "a.py");
        assert_eq!(f.findings[0].description.as_deref(), Some("x"));
    }

    #[test]
    fn errors_name_the_json_path() {
        let e =
            parse(r#"{"findings":[{"path":"a","title":"t"},{"path":"b","title":"t","line":"x"}]}"#, "/r").unwrap_err();
        assert_eq!(e.path, "$.findings[1].line");
        let e = parse(r#"[{"file":"a","summary":"s"},{"path":"b","title":"t"}]"#, "/r").unwrap_err();
        assert_eq!(e.path, "$[1]");
        let e = parse(r#"[{"file":"/elsewhere/a","summary":"s"}]"#, "/r").unwrap_err();
        assert_eq!(e.path, "$[0].file");
    }

    /// The typed record parse names each bad field by its path, in the words the
    /// hand-written walk used: every field of both shapes, each kind of mistake.
    #[test]
    fn typed_records_keep_the_path_messages() {
        let cases = [
            (r#"[{"lens":"A","title":"t"}]"#, "$[0].path: is required"),
            (
                r#"{"findings":[{"path":"a","title":"t"},{"path":"b","title":"t","line":0}]}"#,
                "$.findings[1].line: must be a positive integer",
            ),
            (r#"[{"file":"a","summary":3}]"#, "$[0].summary: must be a string"),
            (r#"[{"file":"a"}]"#, "$[0].summary: is required"),
            (r#"[{"file":"a","summary":"s","line":"x"}]"#, "$[0].line: must be a positive integer or null"),
            (r#"[{"file":"a","summary":"s","line":-1}]"#, "$[0].line: must be a positive integer"),
            (r#"[{"file":"a","summary":"s","line":1.5}]"#, "$[0].line: must be a positive integer"),
            (r#"[{"file":"a","summary":"s","severity":5}]"#, "$[0].severity: must be a string"),
            (r#"[{"file":"a","summary":"s","failure_scenario":{}}]"#, "$[0].failure_scenario: must be a string"),
            (r#"[{"path":"a","title":"t","lens":1}]"#, "$[0].lens: must be a string"),
            (r#"[{"path":"a","title":"t","description":true}]"#, "$[0].description: must be a string"),
            (r#"[{"path":"a","title":"t","verdict":[1]}]"#, "$[0].verdict: must be a string"),
            (r#"[{"path":"a","title":"t","suggestion":2}]"#, "$[0].suggestion: must be a string"),
            (r#"[{"path":"a","title":"t","category":2}]"#, "$[0].category: must be a string"),
            (r#"[{"file":null,"summary":"s"}]"#, "$[0].file: must be a string"),
            (r#"[{"file":"","summary":"s"}]"#, "$[0].file: must not be empty"),
        ];
        for (doc, want) in cases {
            assert_eq!(parse(doc, "/r").unwrap_err().to_string(), want, "{doc}");
        }
        // Nulls of optional fields and unknown keys are accepted, as before.
        let f = parse(r#"[{"file":"a","summary":"s","line":null,"verdict":null,"extra":1}]"#, "/r").unwrap();
        assert_eq!((f.findings[0].line, f.findings[0].verdict.as_deref()), (None, None));
    }

    #[test]
    fn percent_decoding_keeps_invalid_escapes() {
        assert_eq!(percent_decode("a%20b%2Fc"), "a b/c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%ff"), "\u{fffd}");
    }

    #[test]
    fn sarif_locations_uri_forms() {
        let t = r#"{"version":"2.1.0","runs":[{"originalUriBaseIds":{"SRC":{"uri":"file:///repo/"}},
          "results":[{"ruleId":"E1","level":"error","message":{"text":"m"},"locations":[
            {"physicalLocation":{"artifactLocation":{"uri":"file:///repo/src/a%20b.py"},"region":{"startLine":4}}},
            {"physicalLocation":{"artifactLocation":{"uri":"c.py","uriBaseId":"SRC"}}},
            {"physicalLocation":{"artifactLocation":{"uri":"file:///other/x.py"}}}]},
            {"ruleId":"E2","message":{"text":"n"}}]}]}"#;
        let f = parse(t, "/repo").unwrap();
        let files: Vec<_> = f.findings.iter().map(|f| f.file.as_str()).collect();
        assert_eq!(files, ["src/a b.py", "c.py"]);
        assert_eq!(f.findings[0].line, Some(4));
        assert_eq!(f.skipped_outside_repo, 1);
        assert_eq!(f.skipped_without_location, 1);
    }

    #[test]
    fn sarif_level_defaults_to_warning_and_uris_are_decoded() {
        let t = r#"{"version":"2.1.0","runs":[{"originalUriBaseIds":{"SRC":{"uri":"file:///repo/sub%20dir/"}},
          "results":[
            {"ruleId":"A","message":{"text":"m"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"src/a%20b.py"}}}]},
            {"ruleId":"B","kind":"pass","message":{"text":"m"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"x%2Fy.py"}}}]},
            {"ruleId":"C","level":"error","message":{"text":"m"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"c%25.py","uriBaseId":"SRC"}}}]}]}]}"#;
        let f = parse(t, "/repo").unwrap();
        let got: Vec<(&str, Option<&str>)> =
            f.findings.iter().map(|f| (f.file.as_str(), f.severity.as_deref())).collect();
        assert_eq!(
            got,
            [("src/a b.py", Some("warning")), ("x/y.py", Some("none")), ("sub dir/c%.py", Some("error"))],
            "decoded once, never twice"
        );
    }

    #[test]
    fn lenient_parse_drops_and_names_each_bad_record() {
        let t = r#"{"findings":[{"path":"a","title":"t"},{"lens":"L","title":"no path"},3,
            {"path":"b","title":"t","line":0},{"path":"/elsewhere/x","title":"t"},{"file":"c","summary":"mixed"}]}"#;
        let f = parse_lenient(t, "/r").unwrap();
        assert_eq!(f.findings.len(), 1);
        let d: Vec<(usize, &str)> = f.dropped.iter().map(|d| (d.index, d.reason)).collect();
        assert_eq!(
            d,
            [(1, INVALID_FINDING), (2, INVALID_FINDING), (3, INVALID_FINDING), (4, OUTSIDE_REPO), (5, INVALID_FINDING)]
        );
        assert_eq!(f.dropped[0].detail, "$.findings[1].path: is required");
        // The strict parse refuses on the first, naming its JSON path.
        assert_eq!(parse(t, "/r").unwrap_err().path, "$.findings[1].path");
        // A malformed SARIF result is dropped; the rest of the log still counts.
        let t = r#"{"runs":[{"results":[{"ruleId":"X","message":{}},{"ruleId":"Y","message":{"text":"m"},
            "locations":[{"physicalLocation":{"artifactLocation":{"uri":"a.py"}}}]}]}]}"#;
        let f = parse_lenient(t, "/r").unwrap();
        assert_eq!((f.findings.len(), f.dropped.len()), (1, 1));
        assert_eq!(f.findings[0].index, 1);
    }

    /// The typed SARIF read keeps the walk's leniency and its order of judgement: a
    /// result with several mistakes is named by the first one the walk checks
    /// (`ruleId`, message, then each location in turn), whatever the key order.
    #[test]
    fn typed_sarif_keeps_leniency_and_order() {
        let one = |res: &str| {
            let t = format!(r#"{{"runs":[{{"results":[{res}]}}]}}"#);
            match parse(&t, "/r") {
                Ok(f) => {
                    Ok(f.findings.iter().map(|f| (f.file.clone(), f.title.clone(), f.lens.clone())).collect::<Vec<_>>())
                }
                Err(e) => Err(e.to_string()),
            }
        };
        let loc = r#"{"physicalLocation":{"artifactLocation":{"uri":"a.py"}}}"#;
        let p = "$.runs[0].results[0]";
        assert_eq!(one(r#"{"locations":3,"message":{},"ruleId":1}"#), Err(format!("{p}.ruleId: must be a string")));
        assert_eq!(one(r#"{"locations":3,"message":{}}"#), Err(format!("{p}.message.text: is required")));
        assert_eq!(one(r#"{"locations":3,"message":{"text":"m"}}"#), Err(format!("{p}.locations: must be an array")));
        // markdown only when text is absent; a message that is not an object has no text.
        let ok = |t: &str, r: Option<&str>| Ok(vec![("a.py".to_string(), t.to_string(), r.map(str::to_string))]);
        assert_eq!(one(&format!(r#"{{"message":{{"markdown":"md"}},"locations":[{loc}]}}"#)), ok("md", None));
        assert_eq!(
            one(&format!(r#"{{"message":{{"text":null,"markdown":"md"}},"locations":[{loc}]}}"#)),
            Err(format!("{p}.message.text: is required"))
        );
        assert_eq!(one(r#"{"message":["m"]}"#), Err(format!("{p}.message.text: is required")));
        // ruleId falls back to rule.id; locations that are not objects, or have no
        // physical location, are skipped; a later location's mistake is still named.
        assert_eq!(
            one(&format!(r#"{{"rule":{{"id":"R"}},"message":{{"text":"m"}},"locations":[3,null,{{}},[1],{loc}]}}"#)),
            ok("m", Some("R"))
        );
        assert_eq!(
            one(&format!(
                r#"{{"message":{{"text":"m"}},"locations":[{loc},{{"physicalLocation":{{"artifactLocation":null}}}}]}}"#
            )),
            Err(format!("{p}.locations[1].physicalLocation.artifactLocation.uri: is required"))
        );
        // A bad startLine of a location outside the repository is never judged.
        let out = r#"{"physicalLocation":{"artifactLocation":{"uri":"/elsewhere/x"},"region":{"startLine":"x"}}}"#;
        assert_eq!(one(&format!(r#"{{"message":{{"text":"m"}},"locations":[{out}]}}"#)), Ok(vec![]));
        // Whole-log mistakes: version before runs, then each run in turn.
        assert_eq!(
            parse(r#"{"runs":5,"version":"2.0"}"#, "/r").unwrap_err().to_string(),
            r#"$.version: SARIF version "2.0" is not supported (only 2.1.0)"#
        );
        assert_eq!(
            parse(r#"{"runs":null}"#, "/r").unwrap_err().to_string(),
            "$.runs: a SARIF log needs a `runs` array"
        );
        assert_eq!(parse(r#"{"runs":[[]]}"#, "/r").unwrap_err().to_string(), "$.runs[0]: must be an object");
        assert_eq!(
            parse(r#"{"runs":[{"results":null},{"results":{}}]}"#, "/r").unwrap_err().to_string(),
            "$.runs[1].results: must be an array"
        );
    }

    #[test]
    fn sarif_errors_name_the_json_path() {
        let e = parse(r#"{"version":"2.0.0","runs":[]}"#, "/r").unwrap_err();
        assert_eq!(e.path, "$.version");
        let e = parse(r#"{"runs":[{"results":[{"ruleId":"X","message":{}}]}]}"#, "/r").unwrap_err();
        assert_eq!(e.path, "$.runs[0].results[0].message.text");
        let t = r#"{"runs":[{"results":[{"ruleId":"X","message":{"text":"m"},"locations":[
            {"physicalLocation":{"artifactLocation":{"uri":"a.py"},"region":{"startLine":0}}}]}]}]}"#;
        assert_eq!(
            parse(t, "/r").unwrap_err().path,
            "$.runs[0].results[0].locations[0].physicalLocation.region.startLine"
        );
    }
}
