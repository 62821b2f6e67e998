//! Across layers: one field is often declared several times (a SQL column, an OpenAPI
//! property, a zod schema, a TypeScript interface, a Go or Rust struct). When a change
//! loosens one of them, the others that still hold the old, stricter constraint are
//! where the loosened value will fail, truncate or surprise. This module links them.
//!
//! What belongs here: the link index (declarations as `(entity, field, constraint
//! kind, value)` contributed by each layer through [`Contributor`]), the naming
//! conventions that decide which declarations are one field ([`entity_key`],
//! [`field_key`]), and [`link`], which adds the sites to a finding. The reading of one
//! layer's files reuses that layer's own reader (`sql`, `schema`, `zod`) through small
//! accessors; TypeScript, Go and Rust type declarations are read in [`code`].
//!
//! Pure: the command reads the files at the head revision (only when a finding of a
//! linkable rule exists) and hands them over as text.
//!
//! Conservative by design: a link needs the entity AND the field to match, the same
//! constraint kind on both sides, and exactly one candidate entity in the other layer;
//! anything ambiguous links nothing.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::engine::Finding;
use super::{Family, RuleId};

mod code;
mod readers;

/// Files read to build the index, at most. Application repositories hold tens to a few
/// hundred migration, schema and model files; past this the repository is a monorepo
/// whose declarations are too many to link by name alone, and the listing already costs
/// more than the scan. What is left out is said in a note.
pub(crate) const MAX_INDEX_FILES: usize = 2_000;

/// Bytes read to build the index, at most (all files together): 32 MiB keeps the
/// index's memory well under the scan's 200 MiB budget (issue 30, part 5).
pub(crate) const MAX_INDEX_BYTES: u64 = 32 << 20;

/// Largest single file read into the index: a hand-written schema, model or migration
/// is far smaller; a larger one is generated (a bundled client, a dump) and parsing it
/// would cost more than the link is worth.
pub(crate) const MAX_INDEX_FILE_BYTES: u64 = 512 << 10;

/// Directory levels listed at the head revision: deep enough for
/// `apps/api/src/modules/users/dto/create-user.dto.ts`, shallow enough that a vendored
/// tree is not walked to its leaves.
pub(crate) const MAX_TREE_DEPTH: usize = 12;

/// Directories never read for declarations: dependencies and build output.
const SKIPPED_DIRS: &[&str] = &["node_modules", "vendor", "dist", "build", "target", ".git", "third_party", ".next"];

/// A layer of an application that declares fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    /// A SQL column (`CREATE TABLE`, `ALTER TABLE` in migrations), `table.column`.
    Sql,
    /// An OpenAPI component schema or JSON Schema property.
    JsonSchema,
    /// A zod schema's property.
    Zod,
    /// A Go struct field's `validate:`/`binding:` tag.
    GoTag,
    /// A Go struct field's type (a pointer may be nil; a value is always there).
    GoType,
    /// A Rust struct field's type (`Option<T>` or not).
    RustType,
    /// A TypeScript interface or object type's property.
    TsType,
}

impl Layer {
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Sql => "sql",
            Layer::JsonSchema => "json-schema",
            Layer::Zod => "zod",
            Layer::GoTag => "go-tag",
            Layer::GoType => "go-type",
            Layer::RustType => "rust-type",
            Layer::TsType => "ts-type",
        }
    }

    /// The layer a rule's findings are declared in (`None`: a rule of no linkable
    /// layer, such as Python's for now).
    fn of_rule(rule: &str) -> Option<Layer> {
        [
            ("sql-", Layer::Sql),
            ("schema-", Layer::JsonSchema),
            ("ts-zod-", Layer::Zod),
            ("go-tag-", Layer::GoTag),
            ("go-", Layer::GoType),
            ("rust-", Layer::RustType),
            ("ts-", Layer::TsType),
        ]
        .into_iter()
        .find_map(|(prefix, layer)| rule.starts_with(prefix).then_some(layer))
    }
}

/// A kind of constraint that two layers can both state and that can be compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// Not a constraint: the field is declared here (every field has one).
    Declared,
    /// A value must be present and not null.
    Required,
    MaxLength,
    MinLength,
    Maximum,
    Minimum,
    /// A closed set of values.
    Members,
}

/// A constraint's value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// For [`Kind::Declared`] and [`Kind::Required`].
    Holds,
    Number(f64),
    /// Members without their quotes.
    Members(BTreeSet<String>),
}

/// One constraint one layer declares on one field: what a family contributes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Declaration {
    pub layer: Layer,
    /// What declares the entity: its file, or for SQL the migration sequence (a table
    /// built over several migrations is one entity).
    pub origin: String,
    /// Where this constraint is written.
    pub path: String,
    pub line: u32,
    /// The symbol the layer's detector gives the field (`users.name`, `User.name`).
    pub symbol: String,
    /// The entity and the field as written (`users`, `created_at`).
    pub entity: String,
    pub field: String,
    pub kind: Kind,
    pub value: Value,
    /// The constraint as written there, one line (`VARCHAR(255)`, `maxLength: 255`).
    pub shown: String,
}

/// A family that contributes declarations to the index: which files it reads, a
/// cheap test of their text, and the declarations of all of them at once (SQL folds a
/// sequence of migrations; the others read file by file).
pub(crate) trait Contributor: Sync {
    /// Whether a repository path is a file of this family's kind (by its name).
    fn reads(&self, path: &str) -> bool;
    /// Whether the text may hold a declaration (a substring test).
    fn may_hold(&self, text: &str) -> bool;
    /// The declarations of the files (path, text), in path order.
    fn declare(&self, files: &[(&str, &str)], out: &mut Vec<Declaration>);
}

/// The families wired today.
fn contributors() -> [&'static dyn Contributor; 6] {
    [
        &readers::SqlColumns,
        &readers::SchemaProperties,
        &readers::ZodSchemas,
        &code::TsTypes,
        &code::GoStructs,
        &code::RustStructs,
    ]
}

/// A site still holding a stricter constraint than the loosened one: what a finding's
/// `linked` lists. Fields in byte order of their names (canonical JSON).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Linked {
    /// The constraint as written there.
    pub constraint: String,
    pub layer: Layer,
    pub line: u32,
    pub path: String,
    pub symbol: String,
}

/// The constraint kinds a family of rules loosens (empty: not linkable).
fn kinds_of(family: Family) -> &'static [Kind] {
    match family {
        Family::Optionality => &[Kind::Required],
        Family::NumericRange => &[Kind::MaxLength, Kind::MinLength, Kind::Maximum, Kind::Minimum],
        Family::EnumErasure => &[Kind::Members],
        // A `VARCHAR(255)` or an enum made `TEXT`: its length bound or its set is gone.
        Family::TypeErasure => &[Kind::MaxLength, Kind::Members],
        _ => &[],
    }
}

/// Whether a finding of this rule can have linked sites.
pub(crate) fn linkable(rule: &str) -> bool {
    // Rules about a function, not a field's declaration: nothing to link.
    const NOT_FIELDS: &[&str] = &["-early-return-removed", "-generic-constraint-loosened", "-generic-bound-removed"];
    Layer::of_rule(rule).is_some()
        && !NOT_FIELDS.iter().any(|s| rule.ends_with(s))
        && RuleId::parse(rule).is_some_and(|r| !kinds_of(r.def().family).is_empty())
}

/// The last segment of a finding's symbol: the field's name as declared.
fn field_of(symbol: &str) -> &str {
    let tail = symbol.rsplit('/').next().unwrap_or(symbol);
    tail.rsplit('.').next().unwrap_or(tail)
}

/// The names a file must contain (ASCII case aside) to hold a declaration of one of
/// these findings' fields: each field as written, its snake_case and its folded form.
pub(crate) fn field_names(findings: &[Finding]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for f in findings.iter().filter(|f| linkable(&f.rule)) {
        let name = field_of(&f.symbol);
        if name.is_empty() {
            continue;
        }
        out.insert(name.to_ascii_lowercase());
        out.insert(field_key(name));
        out.insert(snake(name));
    }
    out
}

fn snake(name: &str) -> String {
    let mut s = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 && !s.ends_with('_') {
            s.push('_');
        }
        s.push(c.to_ascii_lowercase());
    }
    s
}

/// A field's key: ASCII-lowercased with `_` and `-` removed, so that `created_at`,
/// `createdAt` and `CreatedAt` are one field.
pub(crate) fn field_key(name: &str) -> String {
    name.chars().filter(|c| !matches!(c, '_' | '-')).map(|c| c.to_ascii_lowercase()).collect()
}

/// Last words that name the role of a type rather than its entity: `UserSchema`,
/// `UserModel`, `UserEntity`, `UserDto`, `UserRecord`, `UserRow`, `user_table`, and the
/// request and response types that carry an entity's fields (`UserRequest`,
/// `SysUserInsertReq`, `UserResponse`, `UserInput`, `UserPayload`, `UserParams`). Only a
/// whole last word is stripped (`Narrow` keeps its `row`), and only one.
pub(crate) const ROLE_SUFFIXES: &[&str] = &[
    "schema", "model", "entity", "dto", "record", "row", "table", "request", "req", "response", "resp", "input",
    "payload", "params",
];

/// Verbs that name what a request does to its entity: one is stripped when it is the
/// first or the last word left after the role suffix (`CreateUserRequest`,
/// `SysUserInsertReq`, `NewUser`, `UserUpdate`), and only when a word remains.
pub(crate) const ACTION_WORDS: &[&str] = &["create", "update", "insert", "new", "patch"];

/// An entity's key: its words (split at `_`, `-` and lower-to-upper case changes),
/// lowercased, one role suffix dropped ([`ROLE_SUFFIXES`]), then one action word at
/// either end ([`ACTION_WORDS`]), the last word made singular (`ies` to `y`; `ses`,
/// `xes`, `ches`, `shes` lose `es`; another final `s` not after `s` is dropped), joined:
/// `users`, `User`, `UserSchema`, `CreateUserRequest`, `user_accounts` and
/// `UserAccount` give `user` four times, then `useraccount` twice.
pub(crate) fn entity_key(name: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.' | ' ') {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        current.push(c.to_ascii_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    if words.len() > 1 && words.last().is_some_and(|w| ROLE_SUFFIXES.contains(&w.as_str())) {
        words.pop();
    }
    if words.len() > 1 {
        if words.first().is_some_and(|w| ACTION_WORDS.contains(&w.as_str())) {
            words.remove(0);
        } else if words.last().is_some_and(|w| ACTION_WORDS.contains(&w.as_str())) {
            words.pop();
        }
    }
    if let Some(last) = words.last_mut() {
        *last = singular(last);
    }
    words.concat()
}

fn singular(word: &str) -> String {
    if let Some(stem) = word.strip_suffix("ies").filter(|s| !s.is_empty()) {
        return format!("{stem}y");
    }
    for ending in ["sses", "xes", "ches", "shes"] {
        if word.len() > ending.len() && word.ends_with(ending) {
            return word[..word.len() - 2].to_string();
        }
    }
    match word.strip_suffix('s') {
        Some(stem) if !stem.is_empty() && !stem.ends_with('s') => stem.to_string(),
        _ => word.to_string(),
    }
}

/// The declarations of every layer, keyed for linking.
#[derive(Debug, Default)]
pub(crate) struct Index {
    decls: Vec<Declaration>,
    /// `(entity_key, field_key)` to positions in `decls`.
    by_field: BTreeMap<(String, String), Vec<usize>>,
}

impl Index {
    /// Build the index from the files of the head revision (path, text), in path order.
    /// Each family reads the files of its kind whose text it may hold.
    pub(crate) fn build(files: &[(String, String)]) -> Index {
        let mut decls = Vec::new();
        for family in contributors() {
            let mine: Vec<(&str, &str)> = files
                .iter()
                .filter(|(p, t)| family.reads(p) && family.may_hold(t))
                .map(|(p, t)| (p.as_str(), t.as_str()))
                .collect();
            if !mine.is_empty() {
                family.declare(&mine, &mut decls);
            }
        }
        Index::from_declarations(decls)
    }

    pub(crate) fn from_declarations(decls: Vec<Declaration>) -> Index {
        let mut by_field: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
        for (i, d) in decls.iter().enumerate() {
            by_field.entry((entity_key(&d.entity), field_key(&d.field))).or_default().push(i);
        }
        Index { decls, by_field }
    }

    /// The sites other layers declare that hold a stricter constraint than `f`'s own
    /// layer now does, byte-sorted. Empty when anything is unclear.
    pub(crate) fn sites(&self, f: &Finding) -> Vec<Linked> {
        let Some(layer) = Layer::of_rule(&f.rule) else { return Vec::new() };
        let Some(rule) = RuleId::parse(&f.rule) else { return Vec::new() };
        let kinds = kinds_of(rule.def().family);
        if kinds.is_empty() {
            return Vec::new();
        }
        // The changed field's own declaration at the head revision: by its symbol, in
        // its file (SQL: in any migration, the sequence being folded).
        let own: Vec<&Declaration> = self
            .decls
            .iter()
            .filter(|d| d.kind == Kind::Declared && d.layer == layer && d.symbol == f.symbol)
            .filter(|d| d.layer == Layer::Sql || d.path == f.file)
            .collect();
        let owners: BTreeSet<(&str, &str)> = own.iter().map(|d| (d.origin.as_str(), d.entity.as_str())).collect();
        let ([own], 1) = (own.as_slice(), owners.len()) else { return Vec::new() };
        let key = (entity_key(&own.entity), field_key(&own.field));
        let Some(at) = self.by_field.get(&key) else { return Vec::new() };
        let mine = |d: &Declaration| d.layer == own.layer && d.origin == own.origin && d.symbol == own.symbol;
        let now = |k: Kind| at.iter().map(|&i| &self.decls[i]).find(|d| mine(d) && d.kind == k).map(|d| &d.value);
        // Candidates by layer; a layer with two candidate entities is ambiguous.
        let mut by_layer: BTreeMap<Layer, Vec<&Declaration>> = BTreeMap::new();
        // The same field's declaration beside the changed one (a Go tag's field type,
        // in the same struct) is the changed site itself, not a candidate.
        let beside = |d: &Declaration| d.path == own.path && d.symbol == own.symbol;
        for d in at.iter().map(|&i| &self.decls[i]).filter(|d| d.layer != own.layer && !beside(d)) {
            by_layer.entry(d.layer).or_default().push(d);
        }
        let mut out = Vec::new();
        for decls in by_layer.values() {
            let entities: BTreeSet<(&str, &str)> =
                decls.iter().map(|d| (d.origin.as_str(), d.entity.as_str())).collect();
            if entities.len() != 1 {
                continue;
            }
            for d in decls.iter().filter(|d| kinds.contains(&d.kind)) {
                // A Go value is never nil, yet may be empty: it says nothing about a
                // validation tag's `required` (non-zero), nor the tag about nil.
                let go = [Layer::GoTag, Layer::GoType];
                if d.kind == Kind::Required && go.contains(&d.layer) && go.contains(&own.layer) {
                    continue;
                }
                if stricter(d.kind, &d.value, now(d.kind)) {
                    out.push(Linked {
                        constraint: d.shown.clone(),
                        layer: d.layer,
                        line: d.line,
                        path: d.path.clone(),
                        symbol: d.symbol.clone(),
                    });
                }
            }
        }
        // Path, line, layer, symbol, constraint: where a reader goes first.
        out.sort_by(|a, b| {
            (a.path.as_bytes(), a.line, a.layer, a.symbol.as_bytes(), a.constraint.as_bytes()).cmp(&(
                b.path.as_bytes(),
                b.line,
                b.layer,
                b.symbol.as_bytes(),
                b.constraint.as_bytes(),
            ))
        });
        out.dedup();
        out
    }
}

/// Whether a site's constraint refuses something the changed declaration now admits
/// (`now`: its value of the same kind, `None` when it no longer states one).
fn stricter(kind: Kind, site: &Value, now: Option<&Value>) -> bool {
    match (kind, site, now) {
        (Kind::Declared, ..) => false,
        (_, _, None) => true,
        (Kind::MaxLength | Kind::Maximum, Value::Number(s), Some(Value::Number(n))) => s < n,
        (Kind::MinLength | Kind::Minimum, Value::Number(s), Some(Value::Number(n))) => s > n,
        (Kind::Members, Value::Members(s), Some(Value::Members(n))) => !n.is_subset(s),
        _ => false,
    }
}

/// Add to each linkable finding the sites the index links it to.
pub(crate) fn link(findings: &mut [Finding], index: &Index) {
    for f in findings.iter_mut().filter(|f| linkable(&f.rule)) {
        f.linked = index.sites(f);
    }
}

/// Whether a repository path may be read for the index: a file some family reads,
/// outside dependency and build directories and test code.
pub(crate) fn wanted(path: &str) -> bool {
    let mut dirs = path.split('/');
    dirs.next_back();
    if dirs.any(|d| SKIPPED_DIRS.contains(&d)) || super::engine::is_test_path(path) {
        return false;
    }
    contributors().iter().any(|c| c.reads(path))
}

#[cfg(test)]
mod tests;
