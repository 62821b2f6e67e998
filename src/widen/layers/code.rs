//! The layers read from program types with tree-sitter: TypeScript interfaces and
//! object type aliases, Go structs (the field's type and its validation tag, two
//! layers) and Rust structs. Only top-level declarations and their direct fields are
//! read (`Type.field`); the walks visit the root's children and each body's children,
//! never deeper, so no input-sized recursion.

use std::collections::BTreeSet;

use tree_sitter::Node;

use super::{Contributor, Declaration, Kind, Layer, Value};
use crate::widen::syntax::{collapse_whitespace, field, kind_of, line, named_children, text, with_parser};
use crate::widen::{Language, go_tags};

/// Longest constraint text shown for a site.
const MAX_SHOWN: usize = 120;

fn shown(node: Node, src: &str) -> String {
    let s = collapse_whitespace(text(node, src));
    match s.char_indices().nth(MAX_SHOWN) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s,
    }
}

/// The root of a version that parses cleanly (a half-parsed file gives nothing).
fn parsed<T>(lang: &tree_sitter::Language, src: &str, read: impl FnOnce(Node) -> T) -> Option<T> {
    let tree = with_parser(lang, |p| p.parse(src, None)).flatten()?;
    (!tree.root_node().has_error()).then(|| read(tree.root_node()))
}

/// One field of one type.
struct FieldSite<'a> {
    layer: Layer,
    path: &'a str,
    line: u32,
    entity: &'a str,
    field: &'a str,
    shown: String,
}

impl FieldSite<'_> {
    fn push(&self, out: &mut Vec<Declaration>, kind: Kind, value: Value) {
        out.push(Declaration {
            layer: self.layer,
            origin: self.path.to_string(),
            path: self.path.to_string(),
            line: self.line,
            symbol: format!("{}.{}", self.entity, self.field),
            entity: self.entity.to_string(),
            field: self.field.to_string(),
            kind,
            value,
            shown: self.shown.clone(),
        });
    }
}

/// TypeScript interfaces and `type X = { ... }`: a property without `?` whose type
/// admits neither `null` nor `undefined` is required; a union of string literals is a
/// closed set.
pub(crate) struct TsTypes;

impl Contributor for TsTypes {
    fn reads(&self, path: &str) -> bool {
        Language::for_path(path) == Some(Language::Typescript)
    }

    fn may_hold(&self, text: &str) -> bool {
        memchr::memmem::find(text.as_bytes(), b"interface ").is_some()
            || memchr::memmem::find(text.as_bytes(), b"type ").is_some()
    }

    fn declare(&self, files: &[(&str, &str)], out: &mut Vec<Declaration>) {
        for (path, src) in files {
            let lang = if path.to_ascii_lowercase().ends_with(".tsx") {
                tree_sitter_typescript::LANGUAGE_TSX.into()
            } else {
                tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()
            };
            parsed(&lang, src, |root| ts_types(root, path, src, out));
        }
    }
}

fn ts_types(root: Node, path: &str, src: &str, out: &mut Vec<Declaration>) {
    for child in named_children(root) {
        let decl = match kind_of(child) {
            "export_statement" => field(child, "declaration"),
            _ => Some(child),
        };
        let Some(decl) = decl else { continue };
        let body = match kind_of(decl) {
            "interface_declaration" => field(decl, "body"),
            "type_alias_declaration" => field(decl, "value").filter(|v| kind_of(*v) == "object_type"),
            _ => None,
        };
        let (Some(name), Some(body)) = (field(decl, "name"), body) else { continue };
        let entity = text(name, src);
        for prop in named_children(body).into_iter().filter(|p| kind_of(*p) == "property_signature") {
            let Some(key) = field(prop, "name").filter(|k| kind_of(*k) == "property_identifier") else { continue };
            let optional = crate::widen::syntax::children(prop).into_iter().any(|c| kind_of(c) == "?");
            let ty = field(prop, "type").and_then(|t| t.named_child(0));
            let site = FieldSite {
                layer: Layer::TsType,
                path,
                line: line(prop),
                entity,
                field: text(key, src),
                shown: shown(prop, src),
            };
            site.push(out, Kind::Declared, Value::Holds);
            let members = ty.map(|t| union_members(t, src)).unwrap_or_default();
            let nullish = members.iter().any(|m| matches!(m.as_str(), "null" | "undefined"));
            if !optional && !nullish {
                site.push(out, Kind::Required, Value::Holds);
            }
            let literals: Option<BTreeSet<String>> = members
                .iter()
                .filter(|m| !matches!(m.as_str(), "null" | "undefined"))
                .map(|m| {
                    let t = m.trim_matches(['"', '\'']);
                    (t.len() + 2 == m.len()).then(|| t.to_string())
                })
                .collect();
            if let Some(set) = literals.filter(|s| !s.is_empty()) {
                site.push(out, Kind::Members, Value::Members(set));
            }
        }
    }
}

/// The members of a union type, as written (an explicit stack: unions nest leftwards).
fn union_members(ty: Node, src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![ty];
    while let Some(n) = stack.pop() {
        match kind_of(n) {
            "union_type" => stack.extend(named_children(n)),
            "literal_type" | "predefined_type" | "type_identifier" | "null" | "undefined" => {
                out.push(text(n, src).trim().to_string())
            }
            _ => out.push(text(n, src).to_string()),
        }
    }
    out
}

/// Go structs, two layers: the field's type (`go-type`: a value that is not a pointer,
/// slice, map, interface, channel, function or a `Null*` type is always there) and its
/// `validate:`/`binding:` tag (`go-tag`: `required`, `min`/`max`/`len`/`gte`/`lte` as
/// lengths on strings and values on numbers, `oneof`). Rules after `dive` are not read.
pub(crate) struct GoStructs;

impl Contributor for GoStructs {
    fn reads(&self, path: &str) -> bool {
        Language::for_path(path) == Some(Language::Go)
    }

    fn may_hold(&self, text: &str) -> bool {
        memchr::memmem::find(text.as_bytes(), b"struct").is_some()
    }

    fn declare(&self, files: &[(&str, &str)], out: &mut Vec<Declaration>) {
        let lang: tree_sitter::Language = tree_sitter_go::LANGUAGE.into();
        for (path, src) in files {
            parsed(&lang, src, |root| go_structs(root, path, src, out));
        }
    }
}

fn go_structs(root: Node, path: &str, src: &str, out: &mut Vec<Declaration>) {
    let specs = named_children(root)
        .into_iter()
        .filter(|c| kind_of(*c) == "type_declaration")
        .flat_map(named_children)
        .filter(|c| kind_of(*c) == "type_spec");
    for spec in specs {
        let (Some(name), Some(st)) =
            (field(spec, "name"), field(spec, "type").filter(|t| kind_of(*t) == "struct_type"))
        else {
            continue;
        };
        let entity = text(name, src);
        let fields = named_children(st)
            .into_iter()
            .filter(|c| kind_of(*c) == "field_declaration_list")
            .flat_map(named_children)
            .filter(|c| kind_of(*c) == "field_declaration");
        for fd in fields {
            let Some(ty) = field(fd, "type") else { continue };
            let ty_text = text(ty, src);
            let always_there = !matches!(
                kind_of(ty),
                "pointer_type" | "slice_type" | "map_type" | "interface_type" | "channel_type" | "function_type"
            ) && !nullable_go_type(ty_text);
            let tag = field(fd, "tag").map_or("", |t| text(t, src));
            for name in named_children(fd).into_iter().filter(|c| kind_of(*c) == "field_identifier") {
                let field_name = text(name, src);
                let mut site = FieldSite {
                    layer: Layer::GoType,
                    path,
                    line: line(fd),
                    entity,
                    field: field_name,
                    shown: shown(fd, src),
                };
                site.push(out, Kind::Declared, Value::Holds);
                if always_there {
                    site.push(out, Kind::Required, Value::Holds);
                }
                let rules: Vec<&str> = go_tags::KEYS
                    .iter()
                    .filter_map(|k| go_tags::lookup(tag, k))
                    .flat_map(|v| v.split(',').map(str::trim).take_while(|r| *r != "dive"))
                    .collect();
                if rules.is_empty() {
                    continue;
                }
                site.layer = Layer::GoTag;
                site.shown = collapse_whitespace(tag.trim_matches('`'));
                site.push(out, Kind::Declared, Value::Holds);
                if rules.contains(&"required") && !rules.contains(&"omitempty") {
                    site.push(out, Kind::Required, Value::Holds);
                }
                let base = ty_text.trim_start_matches('*');
                let (lower, upper) = if base == "string" {
                    (Kind::MinLength, Kind::MaxLength)
                } else if base.starts_with("int") || base.starts_with("uint") || base.starts_with("float") {
                    (Kind::Minimum, Kind::Maximum)
                } else {
                    continue;
                };
                for rule in &rules {
                    let Some((op, arg)) = rule.split_once('=') else { continue };
                    match (op, arg.parse::<f64>()) {
                        ("max" | "lte", Ok(n)) => site.push(out, upper, Value::Number(n)),
                        ("min" | "gte", Ok(n)) => site.push(out, lower, Value::Number(n)),
                        ("len", Ok(n)) => {
                            site.push(out, upper, Value::Number(n));
                            site.push(out, lower, Value::Number(n));
                        }
                        ("oneof", _) => {
                            let set =
                                arg.split(' ').filter(|m| !m.is_empty()).map(|m| m.trim_matches('\'').to_string());
                            site.push(out, Kind::Members, Value::Members(set.collect()));
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

/// A Go type that holds "no value" by design: `sql.NullString`, `null.String`,
/// openapi-generator's `NullableString`, `NullableInt32`.
fn nullable_go_type(ty: &str) -> bool {
    let name = ty.rsplit('.').next().unwrap_or(ty);
    name.starts_with("Null") || ty.starts_with("null.")
}

/// Rust structs with named fields: a field whose type is not `Option<...>` always
/// holds a value.
pub(crate) struct RustStructs;

impl Contributor for RustStructs {
    fn reads(&self, path: &str) -> bool {
        Language::for_path(path) == Some(Language::Rust)
    }

    fn may_hold(&self, text: &str) -> bool {
        memchr::memmem::find(text.as_bytes(), b"struct ").is_some()
    }

    fn declare(&self, files: &[(&str, &str)], out: &mut Vec<Declaration>) {
        let lang: tree_sitter::Language = tree_sitter_rust::LANGUAGE.into();
        for (path, src) in files {
            parsed(&lang, src, |root| rust_structs(root, path, src, out));
        }
    }
}

fn rust_structs(root: Node, path: &str, src: &str, out: &mut Vec<Declaration>) {
    for item in named_children(root).into_iter().filter(|c| kind_of(*c) == "struct_item") {
        let (Some(name), Some(body)) = (field(item, "name"), field(item, "body")) else { continue };
        if kind_of(body) != "field_declaration_list" {
            continue;
        }
        let entity = text(name, src);
        for fd in named_children(body).into_iter().filter(|c| kind_of(*c) == "field_declaration") {
            let (Some(key), Some(ty)) = (field(fd, "name"), field(fd, "type")) else { continue };
            let site = FieldSite {
                layer: Layer::RustType,
                path,
                line: line(fd),
                entity,
                field: text(key, src).trim_start_matches("r#"),
                shown: shown(fd, src),
            };
            site.push(out, Kind::Declared, Value::Holds);
            let ty = collapse_whitespace(text(ty, src));
            let optional =
                ["Option<", "option::Option<"].iter().any(|p| ty.starts_with(p) || ty.contains(&format!("::{p}")));
            if !optional {
                site.push(out, Kind::Required, Value::Holds);
            }
        }
    }
}
