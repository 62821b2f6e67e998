//! The published JSON Schemas (draft 2020-12) of the artefacts this area writes:
//! `classified-NN.json`, `fix-waves-NN.json`, `blocked-on-NN.json`, the lines of
//! `events.jsonl`, and the findings input `premerge plan` and `review route` read. `premerge schema <artefact>` prints them; `docs/artefacts.md`
//! explains each field.

use serde_json::{Value, json};

use super::carry::{ARTIFACT_INVALID, DROP_REASONS};

/// Artefact names `premerge schema` accepts.
pub const ARTEFACTS: &[&str] = &["blocked-on", "classified", "events", "findings", "fix-waves"];

fn nullable(t: &str) -> Value {
    json!({"type": [t, "null"]})
}

fn wave_finding() -> Value {
    json!({
        "type": "object",
        "required": ["fingerprint", "line", "summary", "failure_scenario", "category", "carried"],
        "properties": {
            "fingerprint": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
            "line": {"type": ["integer", "null"], "minimum": 1},
            "summary": {"type": "string"},
            "failure_scenario": nullable("string"),
            "category": nullable("string"),
            "carried": {"type": "boolean"},
            "carried_from": {"type": "string"},
            "carried_reasons": {
                "description": "Every blocked-on row merged into this carried finding: who needs the file changed, and why.",
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["from_file", "reason"],
                    "properties": {"from_file": {"type": "string"}, "reason": {"type": "string"}}
                }
            }
        }
    })
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

/// The schema of one artefact, `None` for an unknown name.
pub fn schema(artefact: &str) -> Option<Value> {
    let body = match artefact {
        "fix-waves" => json!({
            "type": "object",
            "required": ["schema_version", "attempt", "max_per_wave", "waves"],
            "properties": {
                "schema_version": {"const": 1},
                "attempt": {"type": "integer", "minimum": 1},
                "max_per_wave": {"type": "integer", "minimum": 1},
                "waves": {"type": "array", "items": {
                    "type": "array", "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["file", "owner", "findings"],
                        "properties": {
                            "file": {"type": "string", "minLength": 1},
                            "owner": {"type": "string", "pattern": "^w[0-9]{2,}-[0-9]{2,}$"},
                            "findings": {"type": "array", "items": wave_finding()}
                        }
                    }
                }}
            }
        }),
        "classified" => {
            let mut reasons: Vec<&str> = DROP_REASONS.to_vec();
            reasons.push(ARTIFACT_INVALID);
            let finding = merge(
                wave_finding(),
                json!({
                    "required": ["fingerprint", "file", "line", "summary", "failure_scenario", "category",
                                 "severity", "severity_source", "rank", "carried", "lens", "verdict"],
                }),
            );
            let mut finding = finding;
            if let Some(Value::Object(p)) = finding.get_mut("properties") {
                p.insert("file".into(), json!({"type": "string", "minLength": 1}));
                p.insert("severity".into(), json!({"enum": ["blocker", "suggestion"]}));
                p.insert("severity_source".into(), json!({"enum": ["explicit", "category", "default", "carried"]}));
                p.insert("rank".into(), json!({"type": "integer", "minimum": 0}));
                p.insert("lens".into(), nullable("string"));
                p.insert("verdict".into(), nullable("string"));
            }
            let count = json!({"type": "integer", "minimum": 0});
            json!({
                "type": "object",
                "required": ["schema_version", "attempt", "shape", "carry", "counts", "findings"],
                "properties": {
                    "schema_version": {"const": 1},
                    "attempt": {"type": "integer", "minimum": 1},
                    "shape": {"enum": ["lens", "reviewer", "sarif"]},
                    "carry": {
                        "type": "object",
                        "required": ["enabled", "source", "present"],
                        "properties": {
                            "enabled": {"type": "boolean"},
                            "source": nullable("string"),
                            "present": {"type": "boolean"},
                            "cap": {"type": "integer", "minimum": 0}
                        }
                    },
                    "counts": {
                        "type": "object",
                        "required": ["total", "blocker", "suggestion", "carried", "blocked_on_admitted",
                                     "blocked_on_dropped", "skipped_without_location", "skipped_outside_repo"],
                        "properties": {
                            "total": count, "blocker": count, "suggestion": count, "carried": count,
                            "blocked_on_admitted": count,
                            "blocked_on_dropped": {
                                "type": "object",
                                "propertyNames": {"enum": reasons},
                                "additionalProperties": {"type": "integer", "minimum": 1}
                            },
                            "skipped_without_location": count, "skipped_outside_repo": count,
                            "blocked_on_joined": count,
                            "findings_dropped": {
                                "type": "object",
                                "additionalProperties": {"type": "integer", "minimum": 1}
                            },
                            "suggestions_carried": count
                        }
                    },
                    "dropped_findings": {"type": "array", "items": {
                        "type": "object",
                        "required": ["index", "reason", "detail"],
                        "properties": {
                            "index": {"type": "integer", "minimum": 0},
                            "reason": {"type": "string"},
                            "detail": {"type": "string"}
                        }
                    }},
                    "carried_suggestions": {"type": "array", "items": {
                        "type": "object",
                        "required": ["attempt", "file", "fingerprint", "line", "summary"],
                        "properties": {
                            "attempt": {"type": "integer", "minimum": 1},
                            "file": {"type": "string"},
                            "fingerprint": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
                            "line": {"type": ["integer", "null"]},
                            "summary": {"type": "string"},
                            "failure_scenario": nullable("string"),
                            "category": nullable("string")
                        }
                    }},
                    "findings": {"type": "array", "items": finding}
                }
            })
        }
        "blocked-on" => json!({
            "type": "object",
            "required": ["schema_version", "attempt", "blocked_on"],
            "properties": {
                "schema_version": {"const": 1},
                "attempt": {"type": "integer", "minimum": 1},
                "blocked_on": {
                    "description": "Rows as fixers reported them; validated only when the next attempt carries them.",
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["file", "from_file", "reason"],
                        "properties": {
                            "file": {"type": "string"},
                            "from_file": {"type": "string"},
                            "reason": {"type": "string"}
                        }
                    }
                },
                "dropped": {
                    "description": "Rows `blocked record` did not record, by reason (`over_record_cap`, `unknown_key`).",
                    "type": "object",
                    "additionalProperties": {"type": "integer", "minimum": 1}
                }
            }
        }),
        "findings" => findings_input(),
        "events" => json!({
            "description": "One line of events.jsonl (a run directory's append-only log).",
            "type": "object",
            "required": ["kind", "ts"],
            "properties": {
                "kind": {"type": "string"},
                "ts": {"type": "string", "format": "date-time"},
                "attempt": {"type": "integer", "minimum": 0},
                "mode": {"enum": ["off", "shadow", "enforce"]},
                "strays": {"type": "array", "items": {"type": "string"}},
                "decision": {"type": "string"}
            },
            "additionalProperties": true
        }),
        _ => return None,
    };
    let title = match artefact {
        "fix-waves" => "premerge fix-waves-NN.json: the wave plan of one attempt",
        "classified" => "premerge classified-NN.json: every finding of one attempt, classified",
        "blocked-on" => "premerge blocked-on-NN.json: what attempt NN's fixers were blocked on",
        "findings" => "premerge findings input: lens findings, reviewer findings or SARIF 2.1.0",
        _ => "premerge events.jsonl line",
    };
    Some(merge(envelope(artefact, title), body))
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
