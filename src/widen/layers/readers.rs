//! The layers read through their own detectors' readers: SQL columns (the schema the
//! migrations of a sequence build, folded in the order the tool applies them), OpenAPI
//! and JSON Schema properties, and zod schemas.

use std::collections::BTreeMap;

use serde_json::Value as Json;

use super::{Contributor, Declaration, Kind, Layer, Value};
use crate::widen::schema::lines::{KeyLines, json_key_lines, yaml_key_lines};
use crate::widen::{migrations, schema, sql, sql_model, sql_types, zod};

/// One version of a JSON or YAML document: its schemas by key path
/// ([`schema::schema_roots`]) and where each key is written.
struct Document {
    doc: Json,
    lines: KeyLines,
}

impl Document {
    /// Read as the JSON Schema detector reads it; `None` when it is no schema.
    fn read(path: &str, text: &str) -> Option<Document> {
        if schema::is_jsonc_path(path) {
            return None;
        }
        let yaml = schema::is_yaml_path(path);
        let doc = schema::load(text, yaml).ok()??;
        let lines = if yaml { yaml_key_lines(text) } else { json_key_lines(text) };
        Some(Document { doc, lines })
    }

    fn roots(&self) -> Vec<(Vec<String>, &Json)> {
        schema::schema_roots(&self.doc)
    }

    fn line(&self, path: &[String]) -> u32 {
        self.lines.locate(path)
    }
}

fn ext(path: &str) -> String {
    path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default()
}

/// A declaration builder for one field.
#[derive(Clone, Copy)]
struct Site<'a> {
    layer: Layer,
    origin: &'a str,
    path: &'a str,
    line: u32,
    symbol: &'a str,
    entity: &'a str,
    field: &'a str,
}

impl Site<'_> {
    fn push(&self, out: &mut Vec<Declaration>, kind: Kind, value: Value, shown: &str) {
        out.push(Declaration {
            layer: self.layer,
            origin: self.origin.to_string(),
            path: self.path.to_string(),
            line: self.line,
            symbol: self.symbol.to_string(),
            entity: self.entity.to_string(),
            field: self.field.to_string(),
            kind,
            value,
            shown: shown.to_string(),
        });
    }
}

/// A migration's place in its sequence (`None`: a lone file), its path and its text.
type Member<'a> = (Option<migrations::OrderKey>, &'a str, &'a str);

/// SQL columns: `table.column`, NOT NULL (or part of the primary key) and a character
/// type's length. Each migration sequence (`migrations::slot`) is folded in its order
/// and is one origin; a `.sql` file of no sequence (a `schema.sql`) is one on its own.
/// A column's site is the file and line that last defined it.
pub(crate) struct SqlColumns;

impl Contributor for SqlColumns {
    fn reads(&self, path: &str) -> bool {
        ext(path) == "sql"
    }

    fn may_hold(&self, text: &str) -> bool {
        let t = text.as_bytes();
        [b"CREATE" as &[u8], b"create", b"Create"].iter().any(|k| memchr::memmem::find(t, k).is_some())
            || [b"ALTER" as &[u8], b"alter"].iter().any(|k| memchr::memmem::find(t, k).is_some())
    }

    fn declare(&self, files: &[(&str, &str)], out: &mut Vec<Declaration>) {
        // Sequences by their directory, each file in its order; lone files on their own.
        let mut sets: BTreeMap<String, Vec<Member>> = BTreeMap::new();
        for (path, text) in files {
            match migrations::slot(path) {
                Some(slot) => sets.entry(format!("{}/", slot.set)).or_default().push((Some(slot.order), path, text)),
                None => sets.entry((*path).to_string()).or_default().push((None, path, text)),
            }
        }
        for (origin, mut members) in sets {
            members.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.as_bytes().cmp(b.1.as_bytes())));
            let mut model = sql_model::Schema::default();
            // (table key, column key) -> (display, line) as last seen, and its file.
            let mut seen: BTreeMap<(String, String), (String, u32)> = BTreeMap::new();
            let mut at: BTreeMap<(String, String), String> = BTreeMap::new();
            for (_, path, text) in &members {
                for stmt in sql::statements(path, text) {
                    model.apply(&stmt);
                }
                for (tkey, table) in &model.tables {
                    for (ckey, col) in &table.columns {
                        let k = (tkey.clone(), ckey.clone());
                        let now = (col.display.clone(), col.line);
                        if seen.get(&k) != Some(&now) {
                            seen.insert(k.clone(), now);
                            at.insert(k, (*path).to_string());
                        }
                    }
                }
            }
            for (tkey, table) in &model.tables {
                let entity = table.display.rsplit('.').next().unwrap_or(&table.display).trim_matches(['"', '`']);
                for (ckey, col) in &table.columns {
                    let Some(path) = at.get(&(tkey.clone(), ckey.clone())) else { continue };
                    let symbol = format!("{entity}.{}", col.shown);
                    let site = Site {
                        layer: Layer::Sql,
                        origin: &origin,
                        path,
                        line: col.line,
                        symbol: &symbol,
                        entity,
                        field: &col.shown,
                    };
                    site.push(out, Kind::Declared, Value::Holds, &col.display);
                    if table.not_null(ckey) {
                        site.push(out, Kind::Required, Value::Holds, &col.display);
                    }
                    if let Some(Some(n)) = sql_types::text_bound(&col.data_type) {
                        site.push(out, Kind::MaxLength, Value::Number(n as f64), &col.display);
                    }
                }
            }
        }
    }
}

/// OpenAPI component schemas, Swagger definitions and JSON Schema documents: each
/// property of a root schema's `properties` (`$ref`s and compositions not followed).
/// The entity is the component's name, or a JSON Schema's `title`, else its file stem.
pub(crate) struct SchemaProperties;

impl Contributor for SchemaProperties {
    fn reads(&self, path: &str) -> bool {
        matches!(ext(path).as_str(), "json" | "yaml" | "yml")
    }

    fn may_hold(&self, text: &str) -> bool {
        memchr::memmem::find(text.as_bytes(), b"properties").is_some()
    }

    fn declare(&self, files: &[(&str, &str)], out: &mut Vec<Declaration>) {
        for (path, text) in files {
            let Some(doc) = Document::read(path, text) else { continue };
            for (root, value) in doc.roots() {
                let stem = path.rsplit('/').next().unwrap_or(path).split('.').next().unwrap_or("");
                let entity = match root.last() {
                    Some(name) => name.as_str(),
                    None => value.get("title").and_then(Json::as_str).unwrap_or(stem),
                };
                let Some(props) = value.get("properties").and_then(Json::as_object) else { continue };
                let required: Vec<&str> = value
                    .get("required")
                    .and_then(Json::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Json::as_str)
                    .collect();
                for (name, prop) in props {
                    let Some(prop) = prop.as_object() else { continue };
                    let mut at = root.clone();
                    at.extend(["properties".to_string(), name.clone()]);
                    let symbol = schema::pointer(&at);
                    let site = Site {
                        layer: Layer::JsonSchema,
                        origin: path,
                        path,
                        line: doc.line(&at),
                        symbol: &symbol,
                        entity,
                        field: name,
                    };
                    site.push(out, Kind::Declared, Value::Holds, name);
                    let nullable = prop.get("nullable").and_then(Json::as_bool) == Some(true)
                        || prop.get("type").and_then(Json::as_array).is_some_and(|t| t.iter().any(|t| t == "null"));
                    let keyword = |key: &str| {
                        let mut k = at.clone();
                        k.push(key.to_string());
                        doc.line(&k)
                    };
                    if required.contains(&name.as_str()) && !nullable {
                        let mut k = root.clone();
                        k.push("required".to_string());
                        let site = Site { line: doc.line(&k), ..site };
                        site.push(out, Kind::Required, Value::Holds, &format!("required: [{name}]"));
                    }
                    for (key, kind) in [
                        ("maxLength", Kind::MaxLength),
                        ("minLength", Kind::MinLength),
                        ("maximum", Kind::Maximum),
                        ("minimum", Kind::Minimum),
                    ] {
                        if let Some(n) = prop.get(key).and_then(Json::as_f64) {
                            let site = Site { line: keyword(key), ..site };
                            site.push(out, kind, Value::Number(n), &format!("{key}: {n}"));
                        }
                    }
                    if let Some(members) = prop.get("enum").and_then(Json::as_array) {
                        let set: Option<std::collections::BTreeSet<String>> =
                            members.iter().map(|m| m.as_str().map(str::to_string)).collect();
                        if let Some(set) = set {
                            let shown = format!("enum: [{}]", set.iter().cloned().collect::<Vec<_>>().join(", "));
                            let site = Site { line: keyword("enum"), ..site };
                            site.push(out, Kind::Members, Value::Members(set), &shown);
                        }
                    }
                }
            }
        }
    }
}

/// zod: each property of a top-level schema (`UserSchema.name`; deeper properties are
/// not linked). A string's bounds are lengths, a number's are values.
pub(crate) struct ZodSchemas;

impl Contributor for ZodSchemas {
    fn reads(&self, path: &str) -> bool {
        matches!(ext(path).as_str(), "ts" | "tsx" | "mts" | "cts" | "js" | "jsx" | "mjs" | "cjs")
    }

    fn may_hold(&self, text: &str) -> bool {
        memchr::memmem::find(text.as_bytes(), b"zod").is_some()
    }

    fn declare(&self, files: &[(&str, &str)], out: &mut Vec<Declaration>) {
        for (path, text) in files {
            for d in zod::declared(path, text) {
                let Some((entity, field)) = d.symbol.split_once('.').filter(|(_, f)| !f.contains('.')) else {
                    continue;
                };
                let site =
                    Site { layer: Layer::Zod, origin: path, path, line: d.line, symbol: &d.symbol, entity, field };
                site.push(out, Kind::Declared, Value::Holds, &d.text);
                if !d.optional {
                    site.push(out, Kind::Required, Value::Holds, &d.text);
                }
                if let Some(m) = &d.members {
                    let set = m.iter().map(|s| s.trim_matches(['"', '\'', '`']).to_string()).collect();
                    site.push(out, Kind::Members, Value::Members(set), &d.text);
                }
                let (lower, upper) = match d.base.as_str() {
                    "string" => (Kind::MinLength, Kind::MaxLength),
                    "number" => (Kind::Minimum, Kind::Maximum),
                    _ => continue,
                };
                if let Some(n) = d.min {
                    site.push(out, lower, Value::Number(n), &d.text);
                }
                if let Some(n) = d.max {
                    site.push(out, upper, Value::Number(n), &d.text);
                }
            }
        }
    }
}
