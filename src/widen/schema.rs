//! JSON Schema detector (JSON and YAML, including OpenAPI and Swagger documents):
//! walks the old and the new schema side by side, subschema by subschema, and reports
//! each keyword whose constraint the new version removes or loosens.
//!
//! Only documents that are schemas are read: a `$schema` key, a top-level `type` or
//! `properties` in JSON Schema's shape, or an OpenAPI document (`openapi`: its
//! `components.schemas`; `swagger`: its `definitions`; and for both, everything under
//! `paths` and the security requirements: see [`openapi`]). Any other JSON or YAML
//! (package manifests, CI files, multi-document YAML) yields nothing. The keyword rules
//! beyond bounds, types and enums live in [`keywords`].
//!
//! Only a subschema present in both versions is compared, so a brand-new property,
//! nullable or optional, is never a finding, and neither is a deleted one. Tightening,
//! key order and formatting are never findings.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity};

mod keywords;
pub(super) mod lines;
mod openapi;

use lines::{KeyLines, json_key_lines, yaml_key_lines};
use openapi::Direction;

const SCHEMA: &[Language] = &[Language::JsonSchema];

const REQUIRED_REMOVED: RuleId = RuleId::SchemaRequiredRemoved;
const NULLABLE_ADDED: RuleId = RuleId::SchemaNullableAdded;
const RANGE_LOOSENED: RuleId = RuleId::SchemaRangeLoosened;
const LENGTH_LOOSENED: RuleId = RuleId::SchemaLengthLoosened;
const PATTERN_REMOVED: RuleId = RuleId::SchemaPatternRemoved;
const MULTIPLE_OF_REMOVED: RuleId = RuleId::SchemaMultipleOfRemoved;
const ITEMS_LOOSENED: RuleId = RuleId::SchemaItemCountLoosened;
const ENUM_WIDENED: RuleId = RuleId::SchemaEnumWidened;
const CONST_DROPPED: RuleId = RuleId::SchemaConstDropped;
const ADDITIONAL_ALLOWED: RuleId = RuleId::SchemaAdditionalPropertiesAllowed;
const TYPE_WIDENED: RuleId = RuleId::SchemaTypeWidened;

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: REQUIRED_REMOVED,
        languages: SCHEMA,
        family: Family::Optionality,
        description: "An existing property is removed from its object's `required` list (a property deleted outright, or added as optional, is not reported).",
        severity: Severity::High,
        message: "{symbol} is now optional: {before} became {after}",
        invariant: "Every valid instance carried this property, so consumers could read it without checking for absence.",
    },
    RuleDef {
        id: NULLABLE_ADDED,
        languages: SCHEMA,
        family: Family::Optionality,
        description: "An existing property becomes nullable: `nullable: true` (OpenAPI 3.0) or `x-nullable: true` (Swagger 2) added, `null` added to its `type`, or a null alternative added to `anyOf`/`oneOf`.",
        severity: Severity::High,
        message: "{symbol} may now be null: {before} became {after}",
        invariant: "The value was never null, so consumers used it without a null check.",
    },
    RuleDef {
        id: RANGE_LOOSENED,
        languages: SCHEMA,
        family: Family::NumericRange,
        description: "`minimum`, `maximum`, `exclusiveMinimum` or `exclusiveMaximum` is removed or moved outwards.",
        severity: Severity::Medium,
        message: "{symbol} accepts a wider numeric range: {before} became {after}",
        invariant: "Numbers stayed within the old bounds, which arithmetic and storage downstream may assume.",
    },
    RuleDef {
        id: LENGTH_LOOSENED,
        languages: SCHEMA,
        family: Family::NumericRange,
        description: "`minLength` or `maxLength` is removed or loosened.",
        severity: Severity::Medium,
        message: "{symbol} accepts strings of other lengths: {before} became {after}",
        invariant: "String lengths stayed within the old bounds, which columns, buffers and displays may be sized for.",
    },
    RuleDef {
        id: PATTERN_REMOVED,
        languages: SCHEMA,
        family: Family::NumericRange,
        description: "A string's `pattern` is removed, made one every string matches (`\"\"`, `.*`, `^.*$`), or loses its `^` or `$` anchor; any other changed pattern is not reported (its direction is unknown).",
        severity: Severity::Medium,
        message: "{symbol} no longer has to match {before} (now {after})",
        invariant: "Every string matched the pattern, so parsers of its format never saw anything else.",
    },
    RuleDef {
        id: MULTIPLE_OF_REMOVED,
        languages: SCHEMA,
        family: Family::NumericRange,
        description: "`multipleOf` is removed or replaced by a proper divisor of the old step.",
        severity: Severity::Medium,
        message: "{symbol} no longer has to be a multiple of the old step: {before} became {after}",
        invariant: "Numbers were whole multiples of the step (cents, a grid, a block size).",
    },
    RuleDef {
        id: ITEMS_LOOSENED,
        languages: SCHEMA,
        family: Family::NumericRange,
        description: "An array's `minItems` or `maxItems` is removed or loosened, or `uniqueItems: true` is dropped.",
        severity: Severity::Medium,
        message: "{symbol} accepts other arrays: {before} became {after}",
        invariant: "Arrays kept the old item count (and uniqueness), so consumers could index or size them safely.",
    },
    RuleDef {
        id: ENUM_WIDENED,
        languages: SCHEMA,
        family: Family::EnumErasure,
        description: "An `enum` is removed, or a value is added to it.",
        severity: Severity::High,
        message: "{symbol} accepts values outside the old set: {before} became {after}",
        invariant: "The value was one of a closed set, so consumers could match on it exhaustively.",
    },
    RuleDef {
        id: CONST_DROPPED,
        languages: SCHEMA,
        family: Family::EnumErasure,
        description: "A `const` is dropped (and not replaced by an `enum` of that single value).",
        severity: Severity::High,
        message: "{symbol} is no longer fixed: {before} became {after}",
        invariant: "The value was always exactly the constant, so consumers never had to inspect it.",
    },
    RuleDef {
        id: ADDITIONAL_ALLOWED,
        languages: SCHEMA,
        family: Family::MutabilityExposure,
        description: "`additionalProperties: false` (or `unevaluatedProperties: false`) is removed or relaxed.",
        severity: Severity::Medium,
        message: "{symbol} accepts unknown properties: {before} became {after}",
        invariant: "Objects had no properties beyond the declared ones, so a typo or an unexpected field was rejected.",
    },
    RuleDef {
        id: TYPE_WIDENED,
        languages: SCHEMA,
        family: Family::TypeErasure,
        description: "A `type` admits more (`integer` to `number`, a type array gaining a member, `type` removed) or an OpenAPI width `format` widens (`int32` to `int64`, `float` to `double`).",
        severity: Severity::High,
        message: "{symbol} accepts more types: {before} became {after}",
        invariant: "Values had the old type, so consumers decoded them without handling the other types.",
    },
    keywords::ALTERNATIVE_ADDED_RULE,
    keywords::ALL_OF_MEMBER_REMOVED_RULE,
    keywords::CONTAINS_LOOSENED_RULE,
    keywords::DEPENDENCY_REMOVED_RULE,
    keywords::CONDITIONAL_REMOVED_RULE,
    keywords::STRUCTURE_REMOVED_RULE,
    openapi::SECURITY_REMOVED_RULE,
];

/// The JSON Schema type names (a `type` keyword holding anything else is not a schema's).
const TYPE_NAMES: &[&str] = &["array", "boolean", "integer", "null", "number", "object", "string"];

/// Keywords that mark an object as a JSON Schema when it has no `$schema` key.
const SCHEMA_KEYWORDS: &[&str] = &[
    "$ref",
    "allOf",
    "anyOf",
    "const",
    "enum",
    "format",
    "items",
    "maxLength",
    "maximum",
    "minLength",
    "minimum",
    "oneOf",
    "pattern",
    "properties",
    "required",
    "type",
];

/// Longest rendering of a keyword in `before`/`after`.
const MAX_RENDER: usize = 160;

pub fn detect(path: &str, before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    if is_jsonc_path(path) {
        return Ok(Vec::new());
    }
    let yaml = is_yaml_path(path);
    let old = load(before, yaml).map_err(|e| DetectError(format!("old version: {e}")))?;
    let new = load(after, yaml).map_err(|e| DetectError(format!("new version: {e}")))?;
    let (Some(old), Some(new)) = (old, new) else {
        return Ok(Vec::new());
    };
    let old_roots = schema_roots(&old);
    let is_api = ["openapi", "swagger"].iter().any(|k| old.get(k).is_some() && new.get(k).is_some());
    if old_roots.is_empty() && !is_api {
        return Ok(Vec::new());
    }
    let new_roots: BTreeMap<Vec<String>, &Value> = schema_roots(&new).into_iter().collect();
    let lines = if yaml { yaml_key_lines(after) } else { json_key_lines(after) };
    let mut walk = Walk {
        lines: &lines,
        old_doc: &old,
        new_doc: &new,
        out: Vec::new(),
        direction: Direction::Either,
        located: None,
    };
    for (path, b) in old_roots {
        if let Some(a) = new_roots.get(&path) {
            let mut path = path;
            walk.compare(&mut path, b, a);
        }
    }
    if is_api {
        walk.openapi(&old, &new);
    }
    let mut out = walk.out;
    out.sort();
    out.dedup();
    Ok(out)
}

/// Files that are JSON with comments by convention (tsconfig, editor settings): not
/// schemas, and not worth a parse warning.
pub(super) fn is_jsonc_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.starts_with("tsconfig")
        || name.starts_with("jsconfig")
        || name == "devcontainer.json"
        || name == ".devcontainer.json"
        || path.split('/').any(|s| s == ".vscode")
}

pub(super) fn is_yaml_path(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".yaml") || lower.ends_with(".yml")
}

/// Parse one version. `Ok(None)`: a document that cannot be a schema (absent or empty,
/// several YAML documents, a YAML template, keys JSON cannot hold).
pub(super) fn load(text: &str, yaml: bool) -> Result<Option<Value>, String> {
    // Editors on Windows like to start files with a byte-order mark; JSON forbids it.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(None);
    }
    if !yaml {
        return serde_json::from_str(text).map(Some).map_err(|e| e.to_string());
    }
    if flow_depth_over(text, MAX_YAML_FLOW_DEPTH) {
        return Err(format!("recursion limit exceeded: brackets nested deeper than {MAX_YAML_FLOW_DEPTH} levels"));
    }
    let mut docs = Vec::new();
    for doc in serde_norway::Deserializer::from_str(text) {
        match serde_norway::Value::deserialize(doc) {
            Ok(v) => docs.push(v),
            // Helm and other templated YAML is not YAML until rendered.
            Err(_) if text.contains("{{") => return Ok(None),
            Err(e) => return Err(e.to_string()),
        }
    }
    // Several documents (Kubernetes manifests and the like) are not one schema.
    let Ok([mut doc]) = <[serde_norway::Value; 1]>::try_from(docs) else {
        return Ok(None);
    };
    if doc.apply_merge().is_err() {
        return Ok(None);
    }
    Ok(serde_json::to_value(&doc).ok())
}

/// Deepest `[`/`{` nesting a YAML document is parsed with: serde_norway's recursion limit,
/// reached only after its scanner read all in time quadratic in the depth (100,000: minutes).
const MAX_YAML_FLOW_DEPTH: usize = 128;

/// Whether `[` and `{` outside quotes and comments nest deeper than `max` somewhere.
fn flow_depth_over(text: &str, max: usize) -> bool {
    let (mut depth, mut quote, mut comment, mut prev) = (0usize, None, false, b'\n');
    for &b in text.as_bytes() {
        match (comment, quote) {
            (true, _) => comment = b != b'\n',
            (false, Some(q)) => quote = (b != q).then_some(q),
            (false, None) => match b {
                b'\'' | b'"' => quote = Some(b),
                b'#' if prev.is_ascii_whitespace() => comment = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > max {
                        return true;
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
        prev = b;
    }
    false
}

/// The schemas a document holds, by their key path: the document itself for a JSON
/// Schema, each component schema for OpenAPI, each definition for Swagger 2.
pub(super) fn schema_roots(doc: &Value) -> Vec<(Vec<String>, &Value)> {
    let Some(obj) = doc.as_object() else {
        return Vec::new();
    };
    let named = |container: &[&str]| -> Vec<(Vec<String>, &Value)> {
        let mut node = doc;
        for key in container {
            match node.get(key) {
                Some(n) => node = n,
                None => return Vec::new(),
            }
        }
        node.as_object()
            .map(|m| {
                m.iter()
                    .map(|(name, schema)| {
                        let mut path: Vec<String> = container.iter().map(|s| s.to_string()).collect();
                        path.push(name.clone());
                        (path, schema)
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    if obj.contains_key("openapi") {
        return named(&["components", "schemas"]);
    }
    if obj.contains_key("swagger") {
        return named(&["definitions"]);
    }
    if is_json_schema(obj) {
        return vec![(Vec::new(), doc)];
    }
    Vec::new()
}

fn is_json_schema(obj: &Map<String, Value>) -> bool {
    if obj.contains_key("$schema") {
        return true;
    }
    if let Some(t) = obj.get("type") {
        return type_set(t).is_some();
    }
    let Some(props) = obj.get("properties").and_then(Value::as_object) else {
        return false;
    };
    !props.is_empty()
        && props.values().all(|p| p.is_object() || p.is_boolean())
        && props.values().any(|p| p.as_object().is_some_and(|o| SCHEMA_KEYWORDS.iter().any(|k| o.contains_key(*k))))
}

/// The type names a `type` keyword admits, or `None` when it is not a valid `type`.
fn type_set(t: &Value) -> Option<BTreeSet<String>> {
    let names: Vec<&str> = match t {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().map(Value::as_str).collect::<Option<_>>()?,
        _ => return None,
    };
    if names.is_empty() || !names.iter().all(|n| TYPE_NAMES.contains(n)) {
        return None;
    }
    Some(names.into_iter().map(str::to_string).collect())
}

// ---------------------------------------------------------------------------------
// The walk over two versions of one schema.

struct Walk<'a> {
    lines: &'a KeyLines,
    old_doc: &'a Value,
    new_doc: &'a Value,
    out: Vec<RawFinding>,
    /// The side of an API exchange the walk is on (`readOnly`/`writeOnly` depend on it).
    direction: Direction,
    /// Where the key path's first n segments are written, when the pointer names a
    /// list item by something other than its index (an OpenAPI parameter by `name`).
    located: Option<(usize, Vec<String>)>,
}

impl Walk<'_> {
    fn push(&mut self, rule: RuleId, path: &[String], before: String, after: String) {
        let line = match &self.located {
            Some((n, at)) if path.len() >= *n => {
                self.lines.locate(&at.iter().chain(&path[*n..]).cloned().collect::<Vec<_>>())
            }
            _ => self.lines.locate(path),
        };
        self.out.push(RawFinding {
            line,
            rule,
            symbol: pointer(path),
            before: one_line(&before),
            after: one_line(&after),
            in_test: false,
        });
    }

    fn compare(&mut self, path: &mut Vec<String>, b: &Value, a: &Value) {
        let (Some(bo), Some(ao)) = (b.as_object(), a.as_object()) else {
            return;
        };
        // A constraint moved behind a `$ref` or into an `allOf` member still holds.
        let (bo, ao) = (&effective(bo, ao, self.old_doc), &effective(ao, bo, self.new_doc));
        self.required(path, bo, ao);
        self.nullable(path, bo, ao);
        self.bounds(path, bo, ao);
        self.pattern_and_step(path, bo, ao);
        self.enum_and_const(path, bo, ao);
        self.closed(path, bo, ao);
        self.types(path, bo, ao);
        self.keywords(path, bo, ao);
        self.recurse(path, bo, ao);
    }

    fn recurse(&mut self, path: &mut Vec<String>, bo: &Map<String, Value>, ao: &Map<String, Value>) {
        // Keyed subschemas: compared name by name, only where both versions have one.
        for container in ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"] {
            let (Some(bm), Some(am)) =
                (bo.get(container).and_then(Value::as_object), ao.get(container).and_then(Value::as_object))
            else {
                continue;
            };
            for (name, b) in bm {
                if let Some(a) = am.get(name) {
                    if container == "properties" && self.absent_on_this_side(b, a) {
                        continue;
                    }
                    path.push(container.to_string());
                    path.push(name.clone());
                    self.compare(path, b, a);
                    path.truncate(path.len() - 2);
                }
            }
        }
        // Single subschemas. `not` is left out: loosening inside it tightens the whole.
        for key in ["items", "additionalProperties", "contains", "propertyNames", "additionalItems"] {
            if let (Some(b), Some(a)) = (bo.get(key), ao.get(key))
                && b.is_object()
                && a.is_object()
            {
                path.push(key.to_string());
                self.compare(path, b, a);
                path.pop();
            }
        }
        // Positional subschemas: only comparable while the list keeps its length.
        // An `allOf` of another length was merged into its owner (see `effective`).
        for key in ["allOf", "anyOf", "oneOf", "prefixItems", "items"] {
            let (Some(bl), Some(al)) = (bo.get(key).and_then(Value::as_array), ao.get(key).and_then(Value::as_array))
            else {
                continue;
            };
            if bl.len() != al.len() {
                continue;
            }
            for (i, (b, a)) in bl.iter().zip(al).enumerate() {
                path.push(key.to_string());
                path.push(i.to_string());
                self.compare(path, b, a);
                path.truncate(path.len() - 2);
            }
        }
    }

    fn required(&mut self, path: &[String], bo: &Map<String, Value>, ao: &Map<String, Value>) {
        let names = |o: &Map<String, Value>| -> Vec<String> {
            o.get("required")
                .and_then(Value::as_array)
                .map(|l| l.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default()
        };
        let (old, new) = (names(bo), names(ao));
        let new_props = ao.get("properties").and_then(Value::as_object);
        for name in &old {
            if new.contains(name) {
                continue;
            }
            // A property deleted outright is not a loosened one.
            let still_there = match new_props {
                Some(props) => props.contains_key(name),
                None => !bo.contains_key("properties"),
            };
            let one_sided = match (bo.get("properties").and_then(|p| p.get(name)), new_props.and_then(|p| p.get(name)))
            {
                (Some(b), Some(a)) => self.absent_on_this_side(b, a),
                _ => false,
            };
            if !still_there || one_sided {
                continue;
            }
            let mut at = path.to_vec();
            at.push("properties".into());
            at.push(name.clone());
            let after = if ao.contains_key("required") {
                format!("required: {}", render(&Value::from(new.clone())))
            } else {
                String::new()
            };
            self.push(REQUIRED_REMOVED, &at, format!("required: {}", render(&Value::from(old.clone()))), after);
        }
    }

    /// Whether a property never travels on the side the walk is on: `readOnly` ones
    /// are not sent in requests, `writeOnly` ones not in responses.
    fn absent_on_this_side(&self, b: &Value, a: &Value) -> bool {
        let key = match self.direction {
            Direction::Either => return false,
            Direction::Request => "readOnly",
            Direction::Response => "writeOnly",
        };
        let flag = |v: &Value| v.get(key) == Some(&Value::Bool(true));
        flag(b) && flag(a)
    }

    fn nullable(&mut self, path: &[String], bo: &Map<String, Value>, ao: &Map<String, Value>) {
        if admits_null(bo) || !admits_null(ao) {
            return;
        }
        // An old `type` that is no valid type (`type: ''`) said nothing to loosen.
        if bo.get("type").is_some_and(|t| type_set(t).is_none()) {
            return;
        }
        // Show the keyword that let null in.
        let key = ["nullable", "x-nullable", "type", "anyOf", "oneOf"]
            .into_iter()
            .find(|k| ao.get(*k).is_some_and(|v| null_member(k, v)))
            .unwrap_or("type");
        let before = match key {
            "nullable" | "x-nullable" => keyword(bo, key),
            _ if bo.contains_key(key) => keyword(bo, key),
            _ => keyword(bo, "type"),
        };
        self.push(NULLABLE_ADDED, path, before, keyword(ao, key));
    }

    fn bounds(&mut self, path: &[String], bo: &Map<String, Value>, ao: &Map<String, Value>) {
        // Numeric range: each side's tightest bound, with draft-4 boolean exclusives.
        let lower_loose = loosened(bound(bo, Side::Lower), bound(ao, Side::Lower), Side::Lower);
        let upper_loose = loosened(bound(bo, Side::Upper), bound(ao, Side::Upper), Side::Upper);
        let mut keys: Vec<&str> = Vec::new();
        if lower_loose {
            keys.extend(["minimum", "exclusiveMinimum"]);
        }
        if upper_loose {
            keys.extend(["maximum", "exclusiveMaximum"]);
        }
        self.report_keys(RANGE_LOOSENED, path, bo, ao, &keys);

        let count_keys = |min: &'static str, max: &'static str| {
            let mut keys = Vec::new();
            if count_loosened(bo.get(min), ao.get(min), Side::Lower) {
                keys.push(min);
            }
            if count_loosened(bo.get(max), ao.get(max), Side::Upper) {
                keys.push(max);
            }
            keys
        };
        let keys = count_keys("minLength", "maxLength");
        self.report_keys(LENGTH_LOOSENED, path, bo, ao, &keys);
        let mut keys = count_keys("minItems", "maxItems");
        let unique = |o: &Map<String, Value>| o.get("uniqueItems") == Some(&Value::Bool(true));
        if unique(bo) && !unique(ao) {
            keys.push("uniqueItems");
        }
        self.report_keys(ITEMS_LOOSENED, path, bo, ao, &keys);
    }

    /// One finding listing the named keywords as they were and as they are.
    fn report_keys(
        &mut self,
        rule: RuleId,
        path: &[String],
        bo: &Map<String, Value>,
        ao: &Map<String, Value>,
        keys: &[&str],
    ) {
        if keys.is_empty() {
            return;
        }
        let list = |o: &Map<String, Value>| {
            keys.iter().map(|k| keyword(o, k)).filter(|s| !s.is_empty()).collect::<Vec<_>>().join(", ")
        };
        self.push(rule, path, list(bo), list(ao));
    }

    fn pattern_and_step(&mut self, path: &[String], bo: &Map<String, Value>, ao: &Map<String, Value>) {
        if let Some(old) = bo.get("pattern").and_then(Value::as_str) {
            match ao.get("pattern").and_then(Value::as_str) {
                None => self.push(PATTERN_REMOVED, path, keyword(bo, "pattern"), String::new()),
                Some(new) if keywords::pattern_loosened(old, new) => {
                    let after = if new.is_empty() { "pattern: \"\"".to_string() } else { keyword(ao, "pattern") };
                    self.push(PATTERN_REMOVED, path, keyword(bo, "pattern"), after)
                }
                Some(_) => {}
            }
        }
        if let Some(old) = bo.get("multipleOf").and_then(Value::as_f64) {
            let loosened = match ao.get("multipleOf").and_then(Value::as_f64) {
                None => true,
                // A proper divisor of the old step admits more numbers.
                Some(new) => new != 0.0 && new < old && (old / new).fract() == 0.0,
            };
            if loosened {
                self.push(MULTIPLE_OF_REMOVED, path, keyword(bo, "multipleOf"), keyword(ao, "multipleOf"));
            }
        }
    }

    fn enum_and_const(&mut self, path: &[String], bo: &Map<String, Value>, ao: &Map<String, Value>) {
        let new_enum = ao.get("enum").and_then(Value::as_array);
        let new_const = ao.get("const");
        if let Some(old) = bo.get("enum").and_then(Value::as_array) {
            let widened = match (new_enum, new_const) {
                (Some(new), _) => new.iter().any(|v| !old.contains(v)),
                (None, Some(c)) => !old.contains(c),
                (None, None) => true,
            };
            if widened {
                let after = if new_enum.is_some() { keyword(ao, "enum") } else { keyword(ao, "const") };
                self.push(ENUM_WIDENED, path, keyword(bo, "enum"), after);
            }
        }
        if let Some(old) = bo.get("const") {
            let kept = match (new_const, new_enum) {
                // A different constant is a change, not a loosening.
                (Some(_), _) => true,
                (None, Some(values)) => values.iter().all(|v| v == old),
                (None, None) => false,
            };
            if !kept {
                self.push(CONST_DROPPED, path, keyword(bo, "const"), keyword(ao, "enum"));
            }
        }
    }

    fn closed(&mut self, path: &[String], bo: &Map<String, Value>, ao: &Map<String, Value>) {
        let is_false = |o: &Map<String, Value>, k: &str| o.get(k) == Some(&Value::Bool(false));
        let closed = |o| is_false(o, "additionalProperties") || is_false(o, "unevaluatedProperties");
        if closed(bo) && !closed(ao) {
            let key =
                if is_false(bo, "additionalProperties") { "additionalProperties" } else { "unevaluatedProperties" };
            self.push(ADDITIONAL_ALLOWED, path, keyword(bo, key), keyword(ao, key));
        }
    }

    fn types(&mut self, path: &[String], bo: &Map<String, Value>, ao: &Map<String, Value>) {
        let Some(old) = bo.get("type").and_then(type_set) else {
            return;
        };
        let widened = match ao.get("type").and_then(type_set) {
            // `null` joining the set is the nullable rule's finding.
            // Only a superset widens; a type swapped for another is a change, not a loosening.
            Some(new) => {
                let admits =
                    |set: &BTreeSet<String>, t: &String| set.contains(t) || (t == "integer" && set.contains("number"));
                old.iter().all(|t| admits(&new, t)) && new.iter().any(|t| t != "null" && !admits(&old, t))
            }
            // `type` dropped for a reference or a composition moves it, not removes it;
            // and a schema that keeps only-object (only-array) keywords is still read as
            // one by every generator and validator config we met (docs/scan.md).
            None => {
                let implied = |t: &str, keys: &[&str]| {
                    old.len() == 1 && old.contains(t) && keys.iter().any(|k| ao.contains_key(*k))
                };
                !["$ref", "allOf", "anyOf", "oneOf", "enum", "const"].iter().any(|k| ao.contains_key(*k))
                    && !implied("object", &["properties", "additionalProperties", "required", "patternProperties"])
                    && !implied("array", &["items", "prefixItems"])
            }
        };
        if widened {
            self.push(TYPE_WIDENED, path, keyword(bo, "type"), keyword(ao, "type"));
            return;
        }
        // OpenAPI's width formats: a wider width, or the width dropped, admits more.
        let width = |o: &Map<String, Value>| {
            let f = o.get("format").and_then(Value::as_str)?;
            NUMBER_WIDTHS
                .iter()
                .find_map(|(family, names)| names.iter().position(|n| *n == f).map(|rank| (*family, rank)))
        };
        let Some((family, old_rank)) = width(bo) else {
            return;
        };
        let last = NUMBER_WIDTHS.iter().find(|(f, _)| *f == family).map_or(0, |(_, names)| names.len() - 1);
        let wider = match (width(ao), ao.get("format")) {
            (Some((f, rank)), _) => f == family && rank > old_rank,
            // Dropping the widest width changes nothing.
            (None, None) => old_rank < last,
            (None, Some(_)) => false,
        };
        if wider {
            self.push(TYPE_WIDENED, path, keyword(bo, "format"), keyword(ao, "format"));
        }
    }
}

/// OpenAPI `format` widths by type, narrowest first.
const NUMBER_WIDTHS: &[(&str, &[&str])] =
    &[("integer", &["int8", "int16", "int32", "int64"]), ("number", &["float", "double"])];

/// Most `$ref` hops followed for one schema; deeper chains are left as they are.
const MAX_REF_HOPS: usize = 8;

/// The keywords that constrain `o`: its own, plus those of the schema its local `$ref`
/// points to and of its `allOf` members, where the other version has a different `$ref`
/// or an `allOf` of another length (otherwise the target is compared where it lives).
fn effective<'a>(o: &'a Map<String, Value>, other: &Map<String, Value>, doc: &Value) -> Cow<'a, Map<String, Value>> {
    let mut pending: Vec<&Value> = Vec::new();
    if o.get("$ref") != other.get("$ref") {
        pending.extend(o.get("$ref"));
    }
    // An `allOf` of the same length on both sides is compared member by member instead.
    let members = |m: &Map<String, Value>| m.get("allOf").and_then(Value::as_array).map(Vec::len);
    if members(o) != members(other) {
        pending.extend(o.get("allOf").and_then(Value::as_array).into_iter().flatten());
    }
    // Most schemas have nothing to merge: no copy then.
    if pending.is_empty() {
        return Cow::Borrowed(o);
    }
    let mut out = o.clone();
    let mut hops = 0;
    while let Some(next) = pending.pop() {
        let target = match next {
            Value::String(r) => {
                hops += 1;
                if hops > MAX_REF_HOPS {
                    continue;
                }
                match r.strip_prefix('#').and_then(|p| doc.pointer(p)) {
                    Some(t) => t,
                    None => continue,
                }
            }
            v => v,
        };
        let Some(t) = target.as_object() else {
            continue;
        };
        pending.extend(t.get("$ref"));
        pending.extend(t.get("allOf").and_then(Value::as_array).into_iter().flatten());
        for (k, v) in t {
            match (k.as_str(), out.get_mut(k)) {
                ("$ref" | "allOf", _) => {}
                (_, None) => {
                    out.insert(k.clone(), v.clone());
                }
                ("required", Some(Value::Array(mine))) => {
                    for name in v.as_array().into_iter().flatten() {
                        if !mine.contains(name) {
                            mine.push(name.clone());
                        }
                    }
                }
                ("properties", Some(Value::Object(mine))) => {
                    for (name, schema) in v.as_object().into_iter().flatten() {
                        mine.entry(name.clone()).or_insert_with(|| schema.clone());
                    }
                }
                _ => {}
            }
        }
    }
    Cow::Owned(out)
}

/// Whether a schema lets `null` through: OpenAPI's `nullable` (`x-nullable` in Swagger
/// 2), `null` in `type`, or a null alternative in `anyOf`/`oneOf` (how 3.1 and most
/// generators spell an optional value). An `enum` listing null is the enum rule's.
fn admits_null(o: &Map<String, Value>) -> bool {
    ["nullable", "x-nullable", "type", "anyOf", "oneOf"].iter().any(|k| o.get(*k).is_some_and(|v| null_member(k, v)))
}

fn null_member(key: &str, v: &Value) -> bool {
    match key {
        "nullable" | "x-nullable" => v == &Value::Bool(true),
        "type" => type_set(v).is_some_and(|t| t.contains("null")),
        _ => v
            .as_array()
            .is_some_and(|alternatives| alternatives.iter().any(|alt| alt.as_object().is_some_and(admits_null))),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Lower,
    Upper,
}

/// A numeric bound: its value and whether it is exclusive.
type Bound = (f64, bool);

/// The tightest bound on one side, from `minimum`/`maximum` and the exclusive keywords
/// (a number since draft 6, a boolean modifier in draft 4).
fn bound(o: &Map<String, Value>, side: Side) -> Option<Bound> {
    let (inclusive, exclusive) = match side {
        Side::Lower => ("minimum", "exclusiveMinimum"),
        Side::Upper => ("maximum", "exclusiveMaximum"),
    };
    let draft4_exclusive = o.get(exclusive) == Some(&Value::Bool(true));
    let candidates = [
        o.get(inclusive).and_then(Value::as_f64).map(|v| (v, draft4_exclusive)),
        o.get(exclusive).and_then(Value::as_f64).map(|v| (v, true)),
    ];
    candidates.into_iter().flatten().reduce(|x, y| if tighter(y, x, side) { y } else { x })
}

/// Whether bound `x` admits strictly less than bound `y`.
fn tighter(x: Bound, y: Bound, side: Side) -> bool {
    match side {
        Side::Lower => x.0 > y.0 || (x.0 == y.0 && x.1 && !y.1),
        Side::Upper => x.0 < y.0 || (x.0 == y.0 && x.1 && !y.1),
    }
}

fn loosened(old: Option<Bound>, new: Option<Bound>, side: Side) -> bool {
    match (old, new) {
        (Some(_), None) => true,
        (Some(o), Some(n)) => tighter(o, n, side),
        (None, _) => false,
    }
}

fn count_loosened(old: Option<&Value>, new: Option<&Value>, side: Side) -> bool {
    let Some(old) = old.and_then(Value::as_f64) else {
        return false;
    };
    match new.and_then(Value::as_f64) {
        None => true,
        Some(new) => match side {
            Side::Lower => new < old,
            Side::Upper => new > old,
        },
    }
}

/// `key: value` as it reads in the schema, or empty when the key is absent.
fn keyword(o: &Map<String, Value>, key: &str) -> String {
    o.get(key).map(|v| format!("{key}: {}", render(v))).unwrap_or_default()
}

/// A short, YAML-flavoured rendering: `[id, name]`, `64`, `^[a-z]+$`, `{type: null}`.
fn render(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(render).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = map.iter().map(|(k, v)| format!("{k}: {}", render(v))).collect();
            format!("{{{}}}", inner.join(", "))
        }
        other => other.to_string(),
    }
}

fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(MAX_RENDER) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// `#/properties/a/properties/b`, with JSON Pointer escapes (`~0`, `~1`).
pub(super) fn pointer(path: &[String]) -> String {
    let mut out = String::from("#");
    for seg in path {
        out.push('/');
        out.push_str(&seg.replace('~', "~0").replace('/', "~1"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_json(text: &str, path: &[&str]) -> u32 {
        let p: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        json_key_lines(text).locate(&p)
    }

    #[test]
    fn json_locator_follows_nesting_not_first_match() {
        let text = "{\n  \"properties\": {\n    \"a\": {\"properties\": {\"name\": {}}},\n    \"name\": {\n      \"type\": \"string\"\n    }\n  }\n}\n";
        assert_eq!(lines_json(text, &["properties", "name"]), 4);
        assert_eq!(lines_json(text, &["properties", "a", "properties", "name"]), 3);
        assert_eq!(lines_json(text, &["properties", "missing"]), 2);
        assert_eq!(lines_json(text, &[]), 1);
    }

    #[test]
    fn yaml_locator_handles_sequences_and_block_scalars() {
        let text = "components:\n  schemas:\n    User:\n      description: |\n        name: not a key\n      properties:\n        name:\n          type: string\n      required:\n        - name\n";
        let lines = yaml_key_lines(text);
        let at = |p: &[&str]| lines.locate(&p.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(at(&["components", "schemas", "User", "properties", "name"]), 7);
        assert_eq!(at(&["components", "schemas", "User", "required"]), 9);
        assert_eq!(at(&["components", "schemas", "User", "name"]), 3);
    }

    #[test]
    fn not_a_schema_yields_nothing() {
        let pkg = r#"{"name": "x", "type": "module", "version": "1.0.0"}"#;
        let pkg2 = r#"{"name": "x", "type": "commonjs", "version": "2.0.0"}"#;
        assert_eq!(detect("package.json", pkg, pkg2), Ok(Vec::new()));
        let ci = "on: push\njobs:\n  a:\n    runs-on: ubuntu\n";
        assert_eq!(detect(".github/workflows/ci.yml", ci, "on: pull_request\n"), Ok(Vec::new()));
        let multi = "a: 1\n---\nb: 2\n";
        assert_eq!(detect("k8s/app.yaml", multi, multi), Ok(Vec::new()));
    }

    #[test]
    fn invalid_input_is_an_error_not_a_panic() {
        let err = detect("schema.json", "{}", "{\"type\": ").expect_err("invalid JSON");
        assert!(err.0.starts_with("new version:"), "{err}");
        let err = detect("schema.yaml", "a: [1,\n", "a: 1\n").expect_err("invalid YAML");
        assert!(err.0.starts_with("old version:"), "{err}");
        assert_eq!(detect("tsconfig.json", "{// c\n}", "{}"), Ok(Vec::new()));
    }

    #[test]
    fn byte_order_mark_is_not_an_error() {
        let b = "\u{feff}{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}}";
        let a = "\u{feff}{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"number\"}}}";
        let out = detect("s.json", b, a).expect("parses");
        assert_eq!(out.iter().map(|f| f.rule).collect::<Vec<_>>(), [TYPE_WIDENED]);
    }

    #[test]
    fn draft4_exclusive_bounds() {
        let b = r#"{"type":"number","minimum":0,"exclusiveMinimum":true}"#;
        let a = r#"{"type":"number","minimum":0}"#;
        let out = detect("s.json", b, a).expect("parses");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].rule, RANGE_LOOSENED);
        // Inclusive 0 to exclusive 0 tightens.
        assert_eq!(detect("s.json", a, b), Ok(Vec::new()));
    }

    /// Schema-shaped JSON: objects keyed by the keywords the walk reads.
    fn schema_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-5i64..300).prop_map(Value::from),
            (-5.0f64..5.0).prop_map(Value::from),
            proptest::sample::select(vec!["string", "integer", "number", "null", "object", "int32", "x"])
                .prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            let keys = proptest::sample::select(vec![
                "type",
                "properties",
                "required",
                "nullable",
                "minimum",
                "exclusiveMinimum",
                "maximum",
                "maxLength",
                "minItems",
                "uniqueItems",
                "pattern",
                "multipleOf",
                "enum",
                "const",
                "additionalProperties",
                "items",
                "anyOf",
                "format",
                "a",
                "b",
                "$schema",
                "openapi",
                "components",
                "schemas",
            ]);
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(keys, inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
            ]
        })
    }

    proptest::proptest! {
        /// Whatever shape the documents have, the walk reports or returns, never panics,
        /// and comparing a document with itself finds nothing.
        #[test]
        fn never_panics_and_identity_is_silent(b in schema_value(), a in schema_value()) {
            let (bt, at) = (b.to_string(), serde_json::to_string_pretty(&a).unwrap_or_default());
            let _ = detect("s.json", &bt, &at);
            proptest::prop_assert_eq!(detect("s.json", &at, &at), Ok(Vec::new()));
            let _ = detect("s.yaml", &bt, &at);
        }
    }
}
