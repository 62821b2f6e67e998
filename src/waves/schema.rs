//! The published JSON Schemas (draft 2020-12) of the artefacts this area writes:
//! `classified-NN.json`, `fix-waves-NN.json`, `blocked-on-NN.json`, the lines of
//! `events.jsonl`, and the findings input `premerge plan` and `review route` read. `premerge schema <artefact>` prints them; `docs/artefacts.md`
//! explains each field.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::WavePlan;
use super::carry::{ARTIFACT_INVALID, DROP_REASONS};
use crate::events::Event;
use crate::store::run_dir::Classified;

/// Artefact names `premerge schema` accepts.
pub const ARTEFACTS: &[&str] = &["blocked-on", "classified", "events", "findings", "fix-waves", "status"];

/// `blocked-on-NN.json`: what attempt NN's fixers were blocked on. `blocked record`
/// writes it; the next attempt's `plan --carry-blocked` reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct BlockedOnFile {
    #[schemars(range(min = 1))]
    pub attempt: u32,
    /// Rows as fixers reported them; validated only when the next attempt carries them.
    pub blocked_on: Vec<BlockedOnRow>,
    /// Rows `blocked record` did not record, by reason (`over_record_cap`, `unknown_key`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("additionalProperties" = {"type": "integer", "minimum": 1}))]
    pub dropped: BTreeMap<String, usize>,
    #[schemars(extend("const" = 1))]
    pub schema_version: u32,
}

/// One row of `blocked-on-NN.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct BlockedOnRow {
    /// The file the fixer needed changed (outside its own).
    pub file: String,
    /// The file the reporting fixer owned.
    pub from_file: String,
    pub reason: String,
}

/// One line of `events.jsonl`: an [`Event`] and the time it was appended.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct EventsLine {
    /// RFC 3339, UTC.
    #[schemars(extend("format" = "date-time"))]
    ts: String,
    #[serde(flatten)]
    event: Event,
}

fn nullable(t: &str) -> Value {
    json!({"type": [t, "null"]})
}

/// The derived schema of `T` as JSON.
fn derived<T: JsonSchema>() -> Value {
    schemars::schema_for!(T).to_value()
}

/// The findings input: lens findings, reviewer findings, or a SARIF 2.1.0 log.
fn findings_input() -> Value {
    let str_or_null = nullable("string");
    let line = json!({"type": ["integer", "null"], "minimum": 1});
    let lens = json!({
        "description": "A lens finding. `path` is repository-relative, absolute inside the repository, or a file:// URI.",
        "type": "object",
        "required": ["path", "title"],
        "properties": {
            "lens": str_or_null, "severity": str_or_null, "path": {"type": "string", "minLength": 1},
            "line": line, "title": {"type": "string"}, "description": str_or_null,
            "suggestion": str_or_null, "category": str_or_null
        }
    });
    let reviewer = json!({
        "description": "A reviewer finding.",
        "type": "object",
        "required": ["file", "summary"],
        "properties": {
            "file": {"type": "string", "minLength": 1}, "line": line, "summary": {"type": "string"},
            "failure_scenario": str_or_null, "category": str_or_null, "verdict": str_or_null,
            "severity": str_or_null
        }
    });
    let sarif = json!({
        "description": "A SARIF 2.1.0 log: one finding per result location; `level` defaults to `warning`; URIs are percent-decoded.",
        "type": "object",
        "required": ["runs"],
        "properties": {
            "version": {"const": "2.1.0"},
            "runs": {"type": "array", "items": {"type": "object", "properties": {
                "results": {"type": "array", "items": {
                    "type": "object",
                    "required": ["message"],
                    "properties": {
                        "ruleId": {"type": "string"},
                        "level": {"enum": ["none", "note", "warning", "error"]},
                        "message": {"type": "object", "properties": {"text": {"type": "string"}}},
                        "locations": {"type": "array"}
                    }
                }}
            }}}
        }
    });
    json!({
        "description": "What `premerge plan --findings` and `premerge review route --findings` read. A record that does not fit is dropped and counted as `invalid_finding` by `plan` (refused with `plan --strict`).",
        "oneOf": [
            {"type": "array", "items": {"oneOf": [lens.clone(), reviewer.clone()]}},
            {"type": "object", "required": ["findings"], "properties": {
                "findings": {"type": "array", "items": {"oneOf": [lens, reviewer]}}
            }},
            sarif
        ]
    })
}

fn envelope(id: &str, title: &str) -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": format!("https://premerge.invalid/schema/{id}.json"),
        "title": title,
    })
}

fn merge(mut a: Value, b: Value) -> Value {
    if let (Value::Object(a), Value::Object(b)) = (&mut a, b) {
        a.extend(b);
    }
    a
}

/// The schema of one artefact, `None` for an unknown name. Every artefact's schema
/// but the findings input's is derived from the type that writes it.
pub fn schema(artefact: &str) -> Option<Value> {
    let body = match artefact {
        "fix-waves" => derived::<WavePlan>(),
        "classified" => {
            let mut s = derived::<Classified>();
            // The drop reasons are constants of the carry, not a type: named here.
            let mut reasons: Vec<&str> = DROP_REASONS.to_vec();
            reasons.push(ARTIFACT_INVALID);
            if let Some(Value::Object(p)) = s.pointer_mut("/$defs/Counts/properties/blocked_on_dropped") {
                p.insert("propertyNames".into(), json!({"enum": reasons}));
            }
            s
        }
        "blocked-on" => derived::<BlockedOnFile>(),
        "findings" => findings_input(),
        "events" => derived::<EventsLine>(),
        "status" => derived::<crate::overview::StatusDoc>(),
        _ => return None,
    };
    let title = match artefact {
        "fix-waves" => "premerge fix-waves-NN.json: the wave plan of one attempt",
        "classified" => "premerge classified-NN.json: every finding of one attempt, classified",
        "blocked-on" => "premerge blocked-on-NN.json: what attempt NN's fixers were blocked on",
        "findings" => "premerge findings input: lens findings, reviewer findings or SARIF 2.1.0",
        "status" => "premerge status --format json: the loop, proposals, gate, memories and background job",
        _ => "premerge events.jsonl line",
    };
    Some(merge(body, envelope(artefact, title)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_artefact_has_a_schema() {
        for a in ARTEFACTS {
            let s = schema(a).unwrap();
            assert!(s.get("$schema").is_some() && (s.get("properties").is_some() || s.get("oneOf").is_some()), "{a}");
        }
        assert!(schema("nope").is_none());
    }
}
