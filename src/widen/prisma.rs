//! Prisma schema files (`*.prisma`): the constraints a `model` declares for each field
//! (`User.email`) and the values an `enum` admits, compared between the two versions of
//! a file: a field made optional (`String` to `String?`), `@db.VarChar(n)` enlarged or
//! removed, `@unique`/`@@unique([...])` removed, the model's identity (`@id`/`@@id`)
//! changed, an enum gaining a value.
//!
//! Prisma's schema language has no parser among the crate's dependencies and a simple
//! shape: blocks (`model X {`, `enum X {`, `type X {`, `view X {` ... `}`), one field or
//! block attribute (`@@unique([a, b])`) per line, attributes `@name(args)`. It is read
//! line by line, comments (`//`, `///`) removed outside string literals, a line whose
//! brackets are still open joined with the next. Anything that is not such a line
//! inside such a block is ignored (`datasource`, `generator`). Nothing here recurses.
//!
//! Deliberately not findings: a model, field or enum removed or renamed, a `@default`
//! added (a missing value now gets one: the stored column still refuses none), a list
//! field (`Post[]`, never null in Prisma), a unique key replaced by a narrower one (a
//! subset of its fields), narrowing.

use std::collections::{BTreeMap, BTreeSet};

use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity};

const PRISMA: &[Language] = &[Language::Prisma];

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: RuleId::PrismaFieldMadeOptional,
        languages: PRISMA,
        family: Family::Optionality,
        description: "A Prisma model field's type gains `?` (`String` to `String?`): the column becomes nullable and the client's type admits `null`.",
        severity: Severity::High,
        message: "{symbol} may now be null: `{before}` became `{after}`",
        invariant: "Every row had a value in this column, so code reading it never handled null.",
    },
    RuleDef {
        id: RuleId::PrismaVarcharWidened,
        languages: PRISMA,
        family: Family::NumericRange,
        description: "A Prisma string field's `@db.VarChar(n)` (or `@db.Char`, `@db.NVarChar`, `@db.NChar`) is enlarged, or removed (the field becomes the database's unbounded text).",
        severity: Severity::Medium,
        message: "{symbol} accepts longer strings: `{before}` became `{after}`",
        invariant: "Stored strings stayed within the declared length, which other layers (forms, APIs, indexes) may rely on.",
    },
    RuleDef {
        id: RuleId::PrismaNumberWidened,
        languages: PRISMA,
        family: Family::NumericRange,
        description: "A Prisma `Int` field becomes `BigInt`, `Float` or `Decimal`: the column holds values past 32 bits, or fractions.",
        severity: Severity::Medium,
        message: "{symbol} holds a wider range of numbers: `{before}` became `{after}`",
        invariant: "Values fitted a 32-bit integer, which the client's `number`, other layers and arithmetic may rely on.",
    },
    RuleDef {
        id: RuleId::PrismaUniqueRemoved,
        languages: PRISMA,
        family: Family::CheckRemoved,
        description: "A Prisma model loses a uniqueness guarantee: a field's `@unique` or a `@@unique([...])` is removed with no unique key over a subset of its fields in its place.",
        severity: Severity::High,
        message: "{symbol} is no longer guaranteed unique: `{before}` became `{after}`",
        invariant: "No two rows shared these values, so a lookup by them found at most one row.",
    },
    RuleDef {
        id: RuleId::PrismaIdChanged,
        languages: PRISMA,
        family: Family::CheckRemoved,
        description: "A Prisma model's identity (`@id` on a field, or `@@id([...])`) is removed or moved to other fields, and no unique key over a subset of the old fields is left in its place.",
        severity: Severity::High,
        message: "{symbol} no longer identifies rows by the same fields: `{before}` became `{after}`",
        invariant: "The old identity fields were unique and present in every row, so rows were found and referenced by them.",
    },
    RuleDef {
        id: RuleId::PrismaRelationRemoved,
        languages: PRISMA,
        family: Family::CheckRemoved,
        description: "A Prisma relation (`@relation(fields: [...], references: [...])`) is removed while its scalar fields stay: the foreign key goes, and the column need no longer point at an existing row. Not judged under `relationMode = \"prisma\"`, where the database holds no key.",
        severity: Severity::High,
        message: "{symbol} need no longer reference an existing row: `{before}` became `{after}`",
        invariant: "Every value in these columns named an existing row of the related model, so a join or lookup through them always found one.",
    },
    RuleDef {
        id: RuleId::PrismaEnumValueAdded,
        languages: PRISMA,
        family: Family::EnumErasure,
        description: "A Prisma `enum` gains a value.",
        severity: Severity::Medium,
        message: "{symbol} admits a value it did not: `{before}` became `{after}`",
        invariant: "Stored values were one of a closed set, so every consumer could handle each case.",
    },
];

/// Longest rendering of an enum's values or a field's declaration in a finding.
const MAX_RENDER: usize = 160;

/// The database string types whose length argument bounds a field.
const LENGTH_TYPES: &[&str] = &["@db.VarChar", "@db.Char", "@db.NVarChar", "@db.NChar"];

/// The findings of a Prisma schema file.
pub(crate) fn detect(_path: &str, before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    Ok(compare(&Schema::read(before), &Schema::read(after)))
}

/// One field of a model.
#[derive(Debug, Clone)]
struct Field {
    line: u32,
    /// The declaration, on one line, comments removed.
    shown: String,
    optional: bool,
    list: bool,
    base: String,
    /// `@db.VarChar(n)` and the like: the length, `NaN` when not a number.
    length: Option<f64>,
    unique: bool,
    id: bool,
    /// `@relation(fields: [...])`: the scalar fields this relation field holds the
    /// foreign key on (empty on a field that is no relation, or its back side).
    relation: BTreeSet<String>,
}

/// One model (or view, or composite type).
#[derive(Debug, Default)]
struct Model {
    line: u32,
    fields: BTreeMap<String, Field>,
    /// `@@unique([...])`: the fields and the attribute as written.
    uniques: Vec<(BTreeSet<String>, String)>,
    /// `@@id([...])`.
    id: Option<(BTreeSet<String>, String)>,
}

impl Model {
    /// The identity: `@@id`, else the field marked `@id`.
    fn identity(&self) -> Option<(BTreeSet<String>, String)> {
        self.id.clone().or_else(|| {
            let (name, f) = self.fields.iter().find(|(_, f)| f.id)?;
            Some((BTreeSet::from([name.clone()]), f.shown.clone()))
        })
    }

    /// Every set of fields the model keeps unique (keys and the identity).
    fn unique_sets(&self) -> Vec<BTreeSet<String>> {
        let own = self.fields.iter().filter(|(_, f)| f.unique || f.id).map(|(n, _)| BTreeSet::from([n.clone()]));
        own.chain(self.uniques.iter().map(|(s, _)| s.clone())).chain(self.id.iter().map(|(s, _)| s.clone())).collect()
    }
}

#[derive(Debug, Default)]
struct Enum {
    line: u32,
    values: BTreeSet<String>,
    /// The values in declaration order, for the message.
    order: Vec<String>,
}

#[derive(Debug, Default)]
struct Schema {
    models: BTreeMap<String, Model>,
    enums: BTreeMap<String, Enum>,
    /// `relationMode = "prisma"` (formerly `referentialIntegrity`): relations are the
    /// client's, with no foreign key in the database, so removing one drops no key.
    client_relations: bool,
}

/// What the block being read is.
enum Block {
    Model(String),
    Enum(String),
    /// `datasource`, `generator`, anything else: skipped to its `}`.
    Other,
}

impl Schema {
    fn read(src: &str) -> Schema {
        let mut schema = Schema::default();
        let mut block: Option<Block> = None;
        for (line, text) in logical_lines(src) {
            let words: Vec<&str> = text.split_whitespace().collect();
            let Some(open) = &block else {
                // A block header: `model User {`.
                if text.ends_with('{') {
                    block = Some(match words.as_slice() {
                        ["model" | "view" | "type", name, "{"] => {
                            schema.models.insert(name.to_string(), Model { line, ..Model::default() });
                            Block::Model(name.to_string())
                        }
                        ["enum", name, "{"] => {
                            schema.enums.insert(name.to_string(), Enum { line, ..Enum::default() });
                            Block::Enum(name.to_string())
                        }
                        _ => Block::Other,
                    });
                }
                continue;
            };
            if text.starts_with('}') {
                block = None;
                continue;
            }
            match open {
                Block::Model(name) => {
                    if let Some(model) = schema.models.get_mut(name) {
                        read_model_line(model, line, &text, &words);
                    }
                }
                Block::Enum(name) => {
                    if let (Some(e), Some(value)) = (schema.enums.get_mut(name), words.first())
                        && !value.starts_with('@')
                    {
                        e.values.insert(value.to_string());
                        e.order.push(value.to_string());
                    }
                }
                Block::Other => {
                    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
                    if compact == "relationMode=\"prisma\"" || compact == "referentialIntegrity=\"prisma\"" {
                        schema.client_relations = true;
                    }
                }
            }
        }
        schema
    }
}

/// One line of a model's block: a field or a block attribute.
fn read_model_line(model: &mut Model, line: u32, text: &str, words: &[&str]) {
    if text.starts_with("@@") {
        let attrs = attributes(text);
        for (name, args) in attrs {
            let fields = field_list(&args);
            if fields.is_empty() {
                continue;
            }
            match name.as_str() {
                "@@unique" => model.uniques.push((fields, text.to_string())),
                "@@id" => model.id = Some((fields, text.to_string())),
                _ => {}
            }
        }
        return;
    }
    let [name, ty, ..] = words else { return };
    if !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return;
    }
    let rest = text.split_once(ty).map_or("", |(_, r)| r);
    let attrs = attributes(rest);
    let has = |n: &str| attrs.iter().any(|(a, _)| a == n);
    let length = attrs
        .iter()
        .find(|(a, _)| LENGTH_TYPES.contains(&a.as_str()))
        .map(|(_, args)| args.trim().parse::<f64>().unwrap_or(f64::NAN));
    let base = ty.trim_end_matches(['?', '!']).trim_end_matches("[]").to_string();
    // The key's own fields, wherever `fields:` stands among the arguments.
    let relation = attrs
        .iter()
        .find(|(a, _)| a == "@relation")
        .and_then(|(_, args)| args.find("fields").map(|at| field_list(&args[at..])))
        .unwrap_or_default();
    model.fields.insert(
        name.to_string(),
        Field {
            line,
            shown: cap(text),
            optional: ty.ends_with('?'),
            list: ty.ends_with("[]") || ty.ends_with("[]?"),
            base,
            length,
            unique: has("@unique"),
            id: has("@id"),
            relation,
        },
    );
}

/// The attributes of a field or block line: each `@name` (or `@@name`, `@db.VarChar`)
/// and the text inside its parentheses (empty without).
fn attributes(s: &str) -> Vec<(String, String)> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            in_string = !(c == b'"' && bytes[i - 1] != b'\\');
            i += 1;
            continue;
        }
        if c == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        if c != b'@' {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'_' | b'.' | b'@')) {
            i += 1;
        }
        let name = s[start..i].to_string();
        let mut args = String::new();
        if bytes.get(i) == Some(&b'(') {
            let open = i + 1;
            let mut depth = 0usize;
            let mut quoted = false;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' if bytes[i - 1] != b'\\' => quoted = !quoted,
                    b'(' if !quoted => depth += 1,
                    b')' if !quoted => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            args = s[open..i.min(s.len())].to_string();
            i += 1;
        }
        out.push((name, args));
    }
    out
}

/// The field names of `[a, b(sort: Desc)]` (the first list in an attribute's
/// arguments, `fields: [...]` included).
fn field_list(args: &str) -> BTreeSet<String> {
    let Some(open) = args.find('[') else { return BTreeSet::new() };
    let close = args[open..].find(']').map_or(args.len(), |c| open + c);
    args[open + 1..close]
        .split(',')
        .map(|f| f.trim().split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("").to_string())
        .filter(|f| !f.is_empty())
        .collect()
}

/// The lines of a schema with comments removed, blank lines dropped, and a line whose
/// brackets are still open joined with the lines after it; each with its 1-based line.
fn logical_lines(src: &str) -> Vec<(u32, String)> {
    let mut out: Vec<(u32, String)> = Vec::new();
    let mut pending: Option<(u32, String, i64)> = None;
    for (i, raw) in src.lines().enumerate() {
        let line = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let text = strip_comment(raw).trim().to_string();
        if text.is_empty() {
            continue;
        }
        let depth: i64 =
            text.chars().map(|c| i64::from(matches!(c, '(' | '[')) - i64::from(matches!(c, ')' | ']'))).sum();
        let (start, joined, open) = match pending.take() {
            Some((start, mut acc, open)) => {
                acc.push(' ');
                acc.push_str(&text);
                (start, acc, open + depth)
            }
            None => (line, text, depth),
        };
        if open > 0 {
            pending = Some((start, joined, open));
        } else {
            out.push((start, joined));
        }
    }
    if let Some((start, joined, _)) = pending {
        out.push((start, joined));
    }
    out
}

/// A line without its `//` comment (one inside a string literal is kept).
fn strip_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    let mut in_string = false;
    for i in 0..bytes.len() {
        match bytes[i] {
            b'"' if i == 0 || bytes[i - 1] != b'\\' => in_string = !in_string,
            b'/' if !in_string && bytes.get(i + 1) == Some(&b'/') => return &line[..i],
            _ => {}
        }
    }
    line
}

fn cap(s: &str) -> String {
    super::zod::cap(&super::syntax::collapse_whitespace(s), MAX_RENDER)
}

fn compare(old: &Schema, new: &Schema) -> Vec<RawFinding> {
    let mut out = Vec::new();
    let mut push = |line, rule, symbol: String, before: &str, after: &str| {
        out.push(RawFinding {
            line,
            rule,
            symbol,
            before: before.to_string(),
            after: after.to_string(),
            in_test: false,
        });
    };
    for (model_name, a) in &new.models {
        let Some(b) = old.models.get(model_name) else { continue };
        for (name, fa) in &a.fields {
            let Some(fb) = b.fields.get(name) else { continue };
            let symbol = format!("{model_name}.{name}");
            if fa.optional && !fb.optional && !fb.list {
                push(fa.line, RuleId::PrismaFieldMadeOptional, symbol.clone(), &fb.shown, &fa.shown);
            }
            let longer = match (fb.length, fa.length) {
                (Some(o), Some(n)) => n > o,
                // A bound that is no number (an env value) is judged only when removed.
                (Some(_), None) => fa.base == "String",
                _ => false,
            };
            if longer {
                push(fa.line, RuleId::PrismaVarcharWidened, symbol.clone(), &fb.shown, &fa.shown);
            }
            // `Int` to a wider numeric scalar (lists too: each item widens).
            if fb.base == "Int" && matches!(fa.base.as_str(), "BigInt" | "Float" | "Decimal") {
                push(fa.line, RuleId::PrismaNumberWidened, symbol.clone(), &fb.shown, &fa.shown);
            }
        }
        // Uniqueness: each old key needs a new key over a subset of its fields, unless
        // one of its fields is gone (the data went with it).
        let kept = a.unique_sets();
        let keys =
            b.fields.iter().filter(|(_, f)| f.unique).map(|(n, f)| (BTreeSet::from([n.clone()]), f.shown.clone()));
        for (set, shown) in keys.chain(b.uniques.iter().cloned()) {
            if !set.iter().all(|f| a.fields.contains_key(f)) {
                continue;
            }
            if kept.iter().any(|k| !k.is_empty() && k.is_subset(&set)) {
                continue;
            }
            let (symbol, line, after) = match set.iter().next().filter(|_| set.len() == 1) {
                Some(f) => (format!("{model_name}.{f}"), a.fields[f].line, a.fields[f].shown.clone()),
                None => {
                    let now: Vec<&str> = a.uniques.iter().map(|(_, s)| s.as_str()).collect();
                    (model_name.clone(), a.line, cap(&now.join(" ")))
                }
            };
            push(line, RuleId::PrismaUniqueRemoved, symbol, &shown, &after);
        }
        // Relations: an old foreign key whose scalar fields are all still there needs a
        // relation over the same fields in the new model (under any name); gone with its
        // columns, the data went with it.
        let keys_in_database = !old.client_relations && !new.client_relations;
        for (rel_name, fb) in b.fields.iter().filter(|(_, f)| keys_in_database && !f.relation.is_empty()) {
            let set = &fb.relation;
            if !set.iter().all(|f| a.fields.contains_key(f)) || a.fields.values().any(|f| &f.relation == set) {
                continue;
            }
            // Named by its own column: the only one, or the one no other relation of the
            // model shares (`[itemId, projectId]` beside a relation on `projectId`).
            let shared = |f: &String| b.fields.iter().any(|(n, o)| n != rel_name && o.relation.contains(f));
            let own: Vec<&String> = set.iter().filter(|f| set.len() == 1 || !shared(f)).collect();
            let (symbol, line, after) = match own.as_slice() {
                [f] => (format!("{model_name}.{f}"), a.fields[*f].line, a.fields[*f].shown.clone()),
                _ => (format!("{model_name}.{rel_name}"), a.line, String::new()),
            };
            push(line, RuleId::PrismaRelationRemoved, symbol, &fb.shown, &after);
        }
        // The identity: moved to other fields, it loosens only when the old fields are
        // no longer kept unique (a `@@unique` over them in its place keeps them).
        if let Some((set, shown)) = b.identity() {
            let now = a.identity();
            let still_unique = kept.iter().any(|k| !k.is_empty() && k.is_subset(&set));
            if !still_unique {
                let after = now.map(|(_, s)| s).unwrap_or_default();
                push(a.line, RuleId::PrismaIdChanged, model_name.clone(), &shown, &after);
            }
        }
    }
    for (name, a) in &new.enums {
        let Some(b) = old.enums.get(name) else { continue };
        if !a.values.is_subset(&b.values) {
            push(
                a.line,
                RuleId::PrismaEnumValueAdded,
                name.clone(),
                &cap(&b.order.join(" ")),
                &cap(&a.order.join(" ")),
            );
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(before: &str, after: &str) -> Vec<(RuleId, String)> {
        detect("prisma/schema.prisma", before, after).unwrap().into_iter().map(|f| (f.rule, f.symbol)).collect()
    }

    const BEFORE: &str = r#"datasource db {
  provider = "postgresql"
  url      = env("DATABASE_URL") // the "url"
}

model User {
  id    Int    @id @default(autoincrement())
  email String @unique @db.VarChar(255)
  name  String @db.VarChar(64) // shown
  role  Role
  posts Post[]
  org   Int
  slug  String

  @@unique([org, slug])
}

model Membership {
  userId Int
  orgId  Int

  @@id([userId, orgId])
}

enum Role {
  USER
  ADMIN
}
"#;

    #[test]
    fn each_loosening_is_found() {
        let after = r#"datasource db {
  provider = "postgresql"
  url      = env("DATABASE_URL")
}

model User {
  id    Int     @id @default(autoincrement())
  email String  @db.VarChar(500)
  name  String? @db.Text
  role  Role    @default(USER)
  posts Post[]
  org   Int
  slug  String

  @@unique([org, slug, email])
}

model Membership {
  id     Int @id @default(autoincrement())
  userId Int
  orgId  Int
}

enum Role {
  USER
  ADMIN
  GUEST
}
"#;
        let got = found(BEFORE, after);
        let want = [
            (RuleId::PrismaIdChanged, "Membership"),
            (RuleId::PrismaEnumValueAdded, "Role"),
            (RuleId::PrismaUniqueRemoved, "User"),
            (RuleId::PrismaUniqueRemoved, "User.email"),
            (RuleId::PrismaVarcharWidened, "User.email"),
            (RuleId::PrismaFieldMadeOptional, "User.name"),
            (RuleId::PrismaVarcharWidened, "User.name"),
        ];
        crate::widen::testing::assert_found(&got, &want);
    }

    #[test]
    fn defaults_narrowing_and_reformatting_are_not_findings() {
        let after = r#"datasource db {
  provider = "postgresql"
  url      = env("DATABASE_URL")
}

/// Users.
model User {
  id    Int    @id @default(autoincrement())
  email String @unique @db.VarChar(200)
  name  String @default("") @db.VarChar(64)
  role  Role   @default(USER)
  posts Post[]
  org   Int
  slug  String @unique

  @@unique([
    org,
    slug,
  ])
}

model Membership {
  userId Int
  orgId  Int

  @@id([userId, orgId], name: "pk")
}

enum Role {
  ADMIN
  USER
}
"#;
        assert_eq!(found(BEFORE, after), []);
    }

    #[test]
    fn attributes_and_comments_are_read_outside_strings() {
        assert_eq!(
            attributes(r#"String @default("a @unique // b") @db.VarChar(10)"#),
            [
                ("@default".to_string(), r#""a @unique // b""#.to_string()),
                ("@db.VarChar".to_string(), "10".to_string())
            ]
        );
        assert_eq!(strip_comment(r#"x String @default("//") // c"#), r#"x String @default("//") "#);
    }

    #[test]
    fn a_relation_removed_while_its_column_stays_is_found() {
        let before = r#"model Post {
  id       Int   @id
  authorId Int
  author   User  @relation(fields: [authorId], references: [id], onDelete: Cascade)
  tagA     Int
  tagB     Int
  tag      Tag   @relation("PostTag", references: [a, b], fields: [tagA, tagB])
  editorId Int
  editor   User  @relation("Editor", fields: [editorId], references: [id])
  ownerId  Int
  owner    User  @relation("Owner", fields: [ownerId], references: [id])
  projId   Int
  project  Proj  @relation(fields: [projId], references: [id])
  itemId   Int
  item     Item  @relation(fields: [itemId, projId], references: [id, projId])
}
"#;
        // The author's key goes and its column stays: found, on the column. The pair
        // key goes with both columns kept: found, on the relation field. The editor's
        // relation is renamed and changes its delete rule: kept. The owner's relation
        // goes with its column: the data went with it.
        let after = r#"model Post {
  id       Int   @id
  authorId Int
  tagA     Int
  tagB     Int
  editorId Int
  reviewer User  @relation("Editor", fields: [editorId], references: [id], onDelete: SetNull)
  projId   Int
  project  Proj  @relation(fields: [projId], references: [id])
  itemId   Int
}
"#;
        assert_eq!(
            found(before, after),
            [
                (RuleId::PrismaRelationRemoved, "Post.tag".to_string()),
                (RuleId::PrismaRelationRemoved, "Post.authorId".to_string()),
                (RuleId::PrismaRelationRemoved, "Post.itemId".to_string()),
            ]
        );
        assert!(found(before, before).is_empty());
        // Relations the client emulates (no foreign key in the database): nothing drops.
        let mode = "datasource db {\n  provider = \"mysql\"\n  relationMode = \"prisma\"\n}\n";
        assert!(found(&format!("{mode}{before}"), &format!("{mode}{after}")).is_empty());
    }
}
