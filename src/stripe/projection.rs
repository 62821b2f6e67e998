//! Evidence rows and the `stripe/v2` projection of each signal.
//!
//! Evidence is a JSON array of row objects (or `{"rows": [...]}`). Every row has an
//! `id` (a string or a number: it names the row in the proposal and in events, and is
//! never hashed) and the fields its signal projects. A row that lacks a field of its
//! signal's projection (or carries it empty, or not as a string or number) does not
//! qualify and does not contribute; zero qualifying rows means nothing to propose.
//!
//! The projection per signal (stripe/v2), each a sorted (byte order), deduplicated
//! JSON array:
//!
//! | signal                   | row fields                   | item                      |
//! |--------------------------|------------------------------|---------------------------|
//! | `confidence_low_streak`  | `rule_id`                    | the rule id               |
//! | `user_correction_streak` | `audit_kind`                 | the audit kind            |
//! | `tests_failed`           | `test`                       | the test name             |
//! | `routed_back`            | `task_id`, `phase`           | `[task_id, phase]`        |
//! | `repeat_seam`            | `title`                      | the normalised seam title |
//! | `blocker_recurring`      | `fingerprint`                | the finding fingerprint   |
//! | `fence_violation`        | `path`                       | the stray path            |
//! | `widening_repeat`        | `file`, `symbol`, `rule`     | `[file, symbol, rule]`    |
//! | `TRACE-001`              | `clause` (else `op`, `path`) | the clause (or `[op, path]`) |
//! | anything else            | `op`, `path`                 | `[op, path]`              |
//!
//! stripe/v2 differs from stripe/v1 in two places only: the default projection keeps
//! the whole path (v1 cut it to 64 characters, so two files under one long directory
//! shared a stripe and the second halted the pipeline), and `TRACE-001` rows that name
//! a clause are projected by it (v1 ignored them). The hash does not include the
//! version, so every stripe whose evidence v1 projected the same way keeps its id:
//! open proposals written by v1 are still found.
//!
//! A number is projected as its JSON text (`7` and `"7"` are the same task id).
//! A seam title is normalised: lowercased, every run of characters that are not
//! letters or digits becomes one space, trimmed.

use serde_json::{Map, Value};

/// The audit signal whose class is "the same set of clauses" (seed 002's
/// `task-audit:TRACE-001`): a row that names a `clause` is projected by it.
pub(crate) const CLAUSE_SIGNAL: &str = "TRACE-001";

/// Why an evidence document was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceError {
    /// The text is not JSON.
    #[error("not JSON: {0}")]
    Json(String),
    /// The top level is neither an array nor an object with a `rows` array.
    #[error("expected a JSON array of row objects or {{\"rows\": [...]}}")]
    Shape,
    /// A row is not a JSON object.
    #[error("rows[{index}] is not an object (every evidence row must be a JSON object with an `id`)")]
    RowNotObject { index: usize },
    /// A row has no usable `id`.
    #[error("rows[{index}] has no `id` (a non-empty string or a number)")]
    RowId { index: usize },
}

/// One evidence row: its id and its fields.
#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceRow {
    pub id: String,
    pub fields: Map<String, Value>,
}

/// A validated evidence document.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Evidence {
    pub rows: Vec<EvidenceRow>,
}

impl Evidence {
    /// Parse evidence text.
    pub fn parse(text: &str) -> Result<Evidence, EvidenceError> {
        let v: Value = serde_json::from_str(text).map_err(|e| EvidenceError::Json(e.to_string()))?;
        Evidence::from_value(&v)
    }

    /// Validate an evidence value (an array of rows, or `{"rows": [...]}`).
    pub fn from_value(v: &Value) -> Result<Evidence, EvidenceError> {
        let rows = match v {
            Value::Array(a) => a,
            Value::Object(o) => match o.get("rows") {
                Some(Value::Array(a)) => a,
                _ => return Err(EvidenceError::Shape),
            },
            _ => return Err(EvidenceError::Shape),
        };
        Evidence::from_rows(rows)
    }

    /// Validate a slice of row values.
    pub(crate) fn from_rows(rows: &[Value]) -> Result<Evidence, EvidenceError> {
        let mut out = Vec::with_capacity(rows.len());
        for (index, row) in rows.iter().enumerate() {
            let Value::Object(fields) = row else { return Err(EvidenceError::RowNotObject { index }) };
            let id = match fields.get("id") {
                Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => return Err(EvidenceError::RowId { index }),
            };
            out.push(EvidenceRow { id, fields: fields.clone() });
        }
        Ok(Evidence { rows: out })
    }
}

/// A row that entered the projection, with its one-line summary for the proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contribution {
    pub row_id: String,
    pub summary: String,
}

/// The normalised projection of a signal's evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    pub signal: String,
    /// Sorted, deduplicated items: the hash input.
    pub items: Vec<Value>,
    /// The qualifying rows, in evidence order.
    pub contributing: Vec<Contribution>,
    /// Rows that did not carry the projection's fields.
    pub ignored: usize,
}

impl Projection {
    /// Whether there is anything to propose.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// The row fields projected for `signal`, in item order.
pub(crate) fn projection_fields(signal: &str) -> &'static [&'static str] {
    match signal {
        "confidence_low_streak" => &["rule_id"],
        "user_correction_streak" => &["audit_kind"],
        "tests_failed" => &["test"],
        "routed_back" => &["task_id", "phase"],
        "repeat_seam" => &["title"],
        "blocker_recurring" => &["fingerprint"],
        "fence_violation" => &["path"],
        "widening_repeat" => &["file", "symbol", "rule"],
        _ => &["op", "path"],
    }
}

/// The fields a row of `signal` is projected by: [`projection_fields`], except that a
/// `TRACE-001` row naming a `clause` is projected by the clause alone.
fn row_fields(signal: &str, row: &EvidenceRow) -> &'static [&'static str] {
    if signal == CLAUSE_SIGNAL && scalar(row.fields.get("clause")).is_some() {
        &["clause"]
    } else {
        projection_fields(signal)
    }
}

/// A short description of the projection of `signal`, for proposals and docs.
pub(crate) fn projection_description(signal: &str) -> &'static str {
    match signal {
        "confidence_low_streak" => "the sorted set of `rule_id`s",
        "user_correction_streak" => "the sorted set of `audit_kind`s",
        "tests_failed" => "the sorted set of test names (`test`)",
        "routed_back" => "the sorted set of `[task_id, phase]`",
        "repeat_seam" => "the sorted set of normalised seam titles (`title`)",
        "blocker_recurring" => "the sorted set of finding fingerprints (`fingerprint`)",
        "fence_violation" => "the sorted set of stray paths (`path`)",
        "widening_repeat" => "the sorted set of `[file, symbol, rule]`",
        CLAUSE_SIGNAL => "the sorted set of clauses (`clause`), or `[op, path]` for rows without one",
        _ => "the sorted set of `[op, path]`",
    }
}

/// Lowercase, collapse every run of non-alphanumeric characters to one space, trim.
pub(crate) fn normalise_title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut gap = false;
    for c in s.chars() {
        if c.is_alphanumeric() {
            if gap && !out.is_empty() {
                out.push(' ');
            }
            gap = false;
            out.extend(c.to_lowercase());
        } else {
            gap = true;
        }
    }
    out
}

fn scalar(v: Option<&Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        let mut t: String = flat.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    } else {
        flat
    }
}

/// Largest length of a row summary in a proposal table: one readable line.
const SUMMARY_CHARS: usize = 120;

/// Project `evidence` for `signal` (algorithm `stripe/v2`).
pub fn project(signal: &str, evidence: &Evidence) -> Projection {
    let mut items: Vec<Vec<String>> = Vec::new();
    let mut contributing = Vec::new();
    let mut ignored = 0;
    for row in &evidence.rows {
        let fields = row_fields(signal, row);
        let Some(mut values) = fields.iter().map(|f| scalar(row.fields.get(*f))).collect::<Option<Vec<String>>>()
        else {
            ignored += 1;
            continue;
        };
        if signal == "repeat_seam" {
            values[0] = normalise_title(&values[0]);
        } else if fields == ["clause"] {
            // `§1.3`, `§ 1.3` and ` §1.3 ` are one clause.
            values[0] = values[0].split_whitespace().collect();
        }
        if values.iter().any(|v| v.is_empty()) {
            ignored += 1;
            continue;
        }
        let mut summary = fields.iter().zip(&values).map(|(f, v)| format!("{f}={v}")).collect::<Vec<_>>().join(", ");
        // Free text is shown to the reader, never hashed.
        if let Some(Value::String(s)) = row.fields.get("summary").or_else(|| row.fields.get("message")) {
            summary.push_str(" — ");
            summary.push_str(s);
        }
        contributing.push(Contribution { row_id: row.id.clone(), summary: one_line(&summary, SUMMARY_CHARS) });
        items.push(values);
    }
    items.sort();
    items.dedup();
    let items = items
        .into_iter()
        .map(|v| {
            if v.len() == 1 {
                Value::String(v.into_iter().next().expect("one element"))
            } else {
                Value::Array(v.into_iter().map(Value::String).collect())
            }
        })
        .collect();
    Projection { signal: signal.to_string(), items, contributing, ignored }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(v: Value) -> Evidence {
        Evidence::from_value(&v).unwrap()
    }

    #[test]
    fn rows_must_be_objects_with_ids() {
        assert_eq!(Evidence::parse("[1]").unwrap_err(), EvidenceError::RowNotObject { index: 0 });
        assert_eq!(Evidence::parse(r#"[{"id":"a"},{"x":1}]"#).unwrap_err(), EvidenceError::RowId { index: 1 });
        assert_eq!(Evidence::parse(r#"{"row":[]}"#).unwrap_err(), EvidenceError::Shape);
        assert!(matches!(Evidence::parse("nope"), Err(EvidenceError::Json(_))));
        assert_eq!(Evidence::parse(r#"{"rows":[{"id":7}]}"#).unwrap().rows[0].id, "7");
    }

    #[test]
    fn order_ids_and_free_text_do_not_change_the_items() {
        let a = ev(json!([
            {"id": "r1", "rule_id": "B", "summary": "first"},
            {"id": "r2", "rule_id": "A"},
            {"id": "r3", "rule_id": "B", "ts": "2026-01-01"},
        ]));
        let b = ev(json!([
            {"id": "x9", "rule_id": "A", "summary": "other words"},
            {"id": "x8", "rule_id": "B"},
        ]));
        let pa = project("confidence_low_streak", &a);
        let pb = project("confidence_low_streak", &b);
        assert_eq!(pa.items, pb.items);
        assert_eq!(pa.items, vec![json!("A"), json!("B")]);
        assert_eq!(pa.contributing.len(), 3);
        assert_eq!(pa.contributing[0].summary, "rule_id=B — first");
    }

    #[test]
    fn rows_without_the_fields_do_not_qualify() {
        let p = project("routed_back", &ev(json!([{"id": 1, "task_id": 7}, {"id": 2, "task_id": 7, "phase": ""}])));
        assert!(p.is_empty());
        assert_eq!(p.ignored, 2);
        let p = project("routed_back", &ev(json!([{"id": 1, "task_id": 7, "phase": "review"}])));
        assert_eq!(p.items, vec![json!(["7", "review"])]);
    }

    #[test]
    fn seam_titles_are_normalised_and_default_paths_truncated() {
        assert_eq!(normalise_title("  Missing   Error-Handling!! in `parse` "), "missing error handling in parse");
        let p = project(
            "repeat_seam",
            &ev(
                json!([{"id": "a", "title": "Missing error handling"}, {"id": "b", "title": "missing ERROR handling."}]),
            ),
        );
        assert_eq!(p.items, vec![json!("missing error handling")]);
        let long = "d/".repeat(40);
        let p = project("custom_signal", &ev(json!([{"id": "a", "op": "write", "path": long}])));
        assert_eq!(p.items, vec![json!(["write", "d/".repeat(40)])], "stripe/v2 keeps the whole path");
    }

    /// Stripes audit D1: two files under one long directory are two classes.
    #[test]
    fn long_paths_under_one_directory_are_different_items() {
        let dir = "src/main/java/com/example/payments/gateway/adapters/stripe/webhooks";
        let a =
            project("TRACE-001", &ev(json!([{"id": "a", "op": "edit", "path": format!("{dir}/RefundHandler.java")}])));
        let b =
            project("TRACE-001", &ev(json!([{"id": "b", "op": "edit", "path": format!("{dir}/DisputeHandler.java")}])));
        assert_ne!(a.items, b.items);
    }

    /// Stripes audit D3: TRACE-001 rows that name clauses are projected by clause;
    /// the summary and the row id never enter the items.
    #[test]
    fn trace_rows_are_projected_by_clause() {
        let p = project(
            "TRACE-001",
            &ev(json!([{"id": "c1", "clause": "§1.3", "summary": "no AC"}, {"id": "c2", "clause": "§ 1.5"}])),
        );
        assert_eq!((p.items.clone(), p.ignored), (vec![json!("§1.3"), json!("§1.5")], 0));
        let q = project("TRACE-001", &ev(json!([{"id": "x", "clause": " §1.5"}, {"id": "y", "clause": "§1.3"}])));
        assert_eq!(p.items, q.items);
        // Another signal does not read `clause`.
        assert!(project("deterministic_drift", &ev(json!([{"id": "c1", "clause": "§1.3"}]))).is_empty());
    }
}
