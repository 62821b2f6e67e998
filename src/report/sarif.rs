//! A [`Report`] as one SARIF 2.1.0 log, ready for GitHub code scanning's upload: one
//! run whose tool is premerge, the rules the results name (id, name, short and full
//! description, `helpUri` into `docs/rules.md`), results with a `ruleIndex`, a `level`,
//! percent-encoded repository-relative URIs under the `%SRCROOT%` base, and
//! `partialFingerprints` that survive line moves.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_encode};
use serde_json::{Value, json};

use super::rules::{DOCS_BASE, Rule};
use super::text::plain;
use super::{Item, Report};

/// The schema a log names (`$schema`): the OASIS 2.1.0 schema with its errata, the one
/// `tests/schemas/sarif-2.1.0.json` vendors.
pub const SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// The URI base every artifact location is relative to: the repository's root.
pub const SRCROOT: &str = "%SRCROOT%";

/// The key of premerge's fingerprint in `partialFingerprints` (versioned: a change to
/// what it hashes takes a new key, so code scanning never matches old and new by accident).
pub const FINGERPRINT_KEY: &str = "premerge/v1";

/// What stays unencoded in an artifact URI: RFC 3986's unreserved characters and `/`
/// (a path's separators). Everything else, spaces, `%`, `#`, `?` and every byte of a
/// name that is not ASCII, is percent-encoded, so any path is a valid relative reference.
const URI_KEEP: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~').remove(b'/');

/// A repository-relative path as a relative URI reference.
pub fn uri_of(path: &[u8]) -> String {
    percent_encode(path, URI_KEEP).to_string()
}

fn rule_json(r: &Rule) -> Value {
    json!({
        "id": r.id,
        "name": r.name,
        "shortDescription": {"text": r.short},
        "fullDescription": {"text": r.full},
        "help": {"text": format!("{} See {}.", r.full, r.help_uri())},
        "helpUri": r.help_uri(),
        "defaultConfiguration": {"level": r.level.sarif()},
    })
}

fn result_json(item: &Item, rule_index: usize) -> Value {
    let locations: Vec<Value> = item
        .locations
        .iter()
        .map(|l| {
            let mut physical = json!({"artifactLocation": {"uri": uri_of(&l.path), "uriBaseId": SRCROOT}});
            if let Some(line) = l.line.filter(|&n| n >= 1) {
                physical["region"] = json!({"startLine": line});
            }
            json!({"physicalLocation": physical})
        })
        .collect();
    let mut result = json!({
        "ruleId": item.rule.id,
        "ruleIndex": rule_index,
        "level": item.level.sarif(),
        "message": {"text": plain(&item.message)},
        "locations": locations,
        "partialFingerprints": {FINGERPRINT_KEY: item.fingerprint()},
    });
    if !item.related.is_empty() {
        let related: Vec<Value> = item
            .related
            .iter()
            .enumerate()
            .map(|(id, r)| {
                let mut physical = json!({"artifactLocation": {"uri": uri_of(&r.location.path), "uriBaseId": SRCROOT}});
                if let Some(line) = r.location.line.filter(|&n| n >= 1) {
                    physical["region"] = json!({"startLine": line});
                }
                json!({"id": id, "physicalLocation": physical, "message": {"text": plain(&r.message)}})
            })
            .collect();
        result["relatedLocations"] = Value::Array(related);
    }
    result
}

/// The log, as a JSON value (the caller writes it as canonical JSON).
pub fn log(report: &Report) -> Value {
    let rules = report.rules();
    let results: Vec<Value> = report
        .items()
        .iter()
        .map(|i| {
            let index = rules.iter().position(|r| r.id == i.rule.id).unwrap_or(0);
            result_json(i, index)
        })
        .collect();
    json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "premerge",
                "version": crate::VERSION,
                "semanticVersion": crate::VERSION,
                "informationUri": DOCS_BASE,
                "rules": rules.iter().map(|r| rule_json(r)).collect::<Vec<_>>(),
            }},
            "originalUriBaseIds": {SRCROOT: {"description": {"text": "The root of the repository's working tree."}}},
            "results": results,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_encode_everything_but_unreserved_characters_and_slashes() {
        assert_eq!(uri_of(b"src/a_b-c.d~e.rs"), "src/a_b-c.d~e.rs");
        assert_eq!(uri_of(b"dir with space/100%#1?.rs"), "dir%20with%20space/100%25%231%3F.rs");
        assert_eq!(uri_of("caf\u{e9}.rs".as_bytes()), "caf%C3%A9.rs");
        assert_eq!(uri_of(b"w\xff.rs"), "w%FF.rs");
    }

    #[test]
    fn rule_index_points_at_the_rule_of_each_result() {
        let r = super::super::from_strays(&[b"z.rs".to_vec(), b"a b.rs".to_vec()], "attempt 1", false);
        let log = log(&r);
        let run = &log["runs"][0];
        for res in run["results"].as_array().unwrap() {
            let i = res["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(run["tool"]["driver"]["rules"][i]["id"], res["ruleId"]);
        }
        assert_eq!(run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "a%20b.rs");
    }
}
