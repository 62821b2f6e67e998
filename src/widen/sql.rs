//! SQL DDL detector: compares the tables each version of a `.sql` file defines
//! (`CREATE TABLE`, folded with the `ALTER TABLE`s that follow it) and reads the
//! `ALTER TABLE` operations a migration adds, reporting the constraints that disappear:
//! `NOT NULL`, `CHECK`, `UNIQUE`, `PRIMARY KEY`, `FOREIGN KEY`, a `VARCHAR(n)` bound and
//! an enum-typed column.
//!
//! What is deliberately not a finding: a table or column dropped outright (the data goes
//! with it), a constraint renamed or moved between column and table level, a `CHECK`
//! reworded over the same columns, any constraint added (narrowing), and down-migrations
//! (`down.sql`, `*.down.sql`, a `down/` directory, Flyway `U<n>__` undo scripts, the down
//! half of a goose or dbmate file), which exist to undo an earlier tightening.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use sqlparser::ast::{
    AlterColumnOperation, AlterTableOperation, ColumnOption, DataType, ObjectName, ObjectType, Statement,
};
use sqlparser::dialect::{Dialect, GenericDialect, MySqlDialect, PostgreSqlDialect};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use super::sql_constraints::{
    self as constraints, Added, Verdict, dropped_mysql_index, dropped_primary_key, unknown_constraint_dropped,
};
use super::sql_model::*;
use super::sql_types::{TypeLoosening, type_loosening};
use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity};

const SQL: &[Language] = &[Language::Sql];

const NOT_NULL_DROPPED: RuleId = RuleId::SqlNotNullDropped;
const CHECK_REMOVED: RuleId = RuleId::SqlCheckRemoved;
const UNIQUE_DROPPED: RuleId = RuleId::SqlUniqueDropped;
const PRIMARY_KEY_DROPPED: RuleId = RuleId::SqlPrimaryKeyDropped;
const FOREIGN_KEY_DROPPED: RuleId = RuleId::SqlForeignKeyDropped;
const VARCHAR_WIDENED: RuleId = RuleId::SqlVarcharWidened;
const ENUM_TO_TEXT: RuleId = RuleId::SqlEnumToText;
const NUMERIC_WIDENED: RuleId = RuleId::SqlNumericWidened;
const TYPE_TO_TEXT: RuleId = RuleId::SqlTypeToText;
const UNIQUE_INDEX_DROPPED: RuleId = RuleId::SqlUniqueIndexDropped;
const CONSTRAINT_DROPPED: RuleId = RuleId::SqlConstraintDropped;

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: NOT_NULL_DROPPED,
        languages: SQL,
        family: Family::Optionality,
        description: "A column loses NOT NULL: in a CREATE TABLE edit, by ALTER COLUMN ... DROP NOT NULL, or by a MySQL MODIFY/CHANGE COLUMN that restates it as nullable.",
        severity: Severity::High,
        message: "{symbol} may now be NULL: {before} became {after}",
        invariant: "Every row had a value in this column, so readers never had to handle NULL.",
    },
    RuleDef {
        id: CHECK_REMOVED,
        languages: SQL,
        family: Family::CheckRemoved,
        description: "A CHECK constraint (column or table level) is removed, in a CREATE TABLE edit or by ALTER TABLE ... DROP CONSTRAINT; a check moved, renamed or reworded over the same columns is not reported.",
        severity: Severity::High,
        message: "{symbol} lost its check {before}",
        invariant: "The database rejected every row that violated the check expression, so stored values satisfied it.",
    },
    RuleDef {
        id: UNIQUE_DROPPED,
        languages: SQL,
        family: Family::CheckRemoved,
        description: "A UNIQUE constraint is removed (in a CREATE TABLE edit or by DROP CONSTRAINT) or widened to more columns.",
        severity: Severity::High,
        message: "{symbol} is no longer guaranteed unique (was {before})",
        invariant: "No two rows shared these column values, so a lookup by them returned at most one row.",
    },
    RuleDef {
        id: PRIMARY_KEY_DROPPED,
        languages: SQL,
        family: Family::CheckRemoved,
        description: "A PRIMARY KEY is removed (MySQL's `DROP PRIMARY KEY` included, unless the migration adds one back over the same or fewer columns) or widened to more columns while the table and its columns remain (a key moved between column and table level is not reported).",
        severity: Severity::High,
        message: "{symbol} no longer identifies rows alone: primary key {before} became {after}",
        invariant: "Every row was identified by a unique, non-NULL key.",
    },
    RuleDef {
        id: FOREIGN_KEY_DROPPED,
        languages: SQL,
        family: Family::CheckRemoved,
        description: "A FOREIGN KEY / REFERENCES constraint is removed, in a CREATE TABLE edit or by DROP CONSTRAINT / DROP FOREIGN KEY.",
        severity: Severity::High,
        message: "{symbol} no longer has to reference an existing row (was {before})",
        invariant: "Every value in these columns pointed at an existing row of the referenced table.",
    },
    RuleDef {
        id: VARCHAR_WIDENED,
        languages: SQL,
        family: Family::NumericRange,
        description: "A VARCHAR(n) or CHAR(n) column becomes TEXT, unbounded, or gets a larger n (in a CREATE TABLE edit or by ALTER COLUMN ... TYPE on a column the file shows).",
        severity: Severity::Medium,
        message: "{symbol} accepts longer strings: {before} became {after}",
        invariant: "Stored strings were at most n characters long, which fixed-size consumers may rely on.",
    },
    RuleDef {
        id: ENUM_TO_TEXT,
        languages: SQL,
        family: Family::EnumErasure,
        description: "A column of an enum type (CREATE TYPE ... AS ENUM, or MySQL's inline ENUM) becomes free text (TEXT, VARCHAR, CHAR).",
        severity: Severity::High,
        message: "{symbol} accepts any string: {before} became {after}",
        invariant: "The column held only the labels of the enum type, so every reader could match on a closed set.",
    },
    RuleDef {
        id: NUMERIC_WIDENED,
        languages: SQL,
        family: Family::NumericRange,
        description: "A number column's type admits more values: a wider integer (`INT` to `BIGINT`), more digits or decimals in `NUMERIC(p,s)`, an integer made `NUMERIC`/`REAL`, `REAL` made `DOUBLE PRECISION`; judged against the type the earlier migrations gave the column.",
        severity: Severity::Medium,
        message: "{symbol} accepts a wider range of numbers: {before} became {after}",
        invariant: "Stored numbers fitted the old type, which readers decoding them into fixed-width values may rely on.",
    },
    RuleDef {
        id: TYPE_TO_TEXT,
        languages: SQL,
        family: Family::TypeErasure,
        description: "A column of a known non-character type (number, boolean, date or time, uuid, json, bytea) becomes TEXT or VARCHAR; judged against the type the earlier migrations gave the column.",
        severity: Severity::High,
        message: "{symbol} accepts any string: {before} became {after}",
        invariant: "Every stored value parsed as the old type, so readers converted it without a failure path.",
    },
    RuleDef {
        id: UNIQUE_INDEX_DROPPED,
        languages: SQL,
        family: Family::CheckRemoved,
        description: "A unique index (`CREATE UNIQUE INDEX name`, in this file or an earlier migration, or an index whose name says it is unique: `_key`, `_unique`, `uq_`...) is dropped by `DROP INDEX name` (MySQL: `ALTER TABLE ... DROP INDEX name`), or removed from a schema file, with no unique key over its columns left and none created again in the same migration.",
        severity: Severity::High,
        message: "{symbol} is no longer guaranteed unique (was {before})",
        invariant: "No two rows shared the indexed values, so a lookup by them returned at most one row.",
    },
    RuleDef {
        id: CONSTRAINT_DROPPED,
        languages: SQL,
        family: Family::CheckRemoved,
        description: "`ALTER TABLE ... DROP CONSTRAINT name` drops a constraint whose kind neither the file, nor an earlier migration, nor its name tells (a name such as `<table>_<column>_key` or `fk_...` is reported under its own kind's rule); a constraint added back under its name in the same migration is not reported.",
        severity: Severity::High,
        message: "{symbol}: the constraint was dropped ({after}); whatever it enforced no longer holds",
        invariant: "Every row satisfied the dropped constraint, whatever its kind (a check, a key, a reference or an exclusion).",
    },
];

pub fn detect(path: &str, before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    detect_after(path, before, after, &[])
}

/// [`detect`] for a migration that runs after `earlier` (the texts of the migrations
/// before it, in the order the tool applies them): the old version is judged as the
/// schema those migrations built, then the file's own old version on top. An earlier
/// file that does not parse adds nothing (its tables stay unknown, as without history).
pub(crate) fn detect_after(
    path: &str,
    before: &str,
    after: &str,
    earlier: &[&str],
) -> Result<Vec<RawFinding>, DetectError> {
    if is_down_migration(path) {
        return Ok(Vec::new());
    }
    let (old, new) = match (parse(up_half(&untemplated(before))), parse(up_half(&untemplated(after)))) {
        (Ok(old), Ok(new)) => (old, new),
        // A template whose control flow leaves no SQL behind is not SQL until rendered.
        _ if before.contains("{{") || after.contains("{{") => return Ok(Vec::new()),
        (Err(e), _) => return Err(DetectError(format!("old version: {e}"))),
        (_, Err(e)) => return Err(DetectError(format!("new version: {e}"))),
    };

    let mut old_schema = Schema::default();
    for text in earlier {
        if let Ok(stmts) = parse(up_half(&untemplated(text))) {
            for stmt in &stmts {
                old_schema.apply(stmt);
            }
        }
    }
    for stmt in &old {
        old_schema.apply(stmt);
    }

    // Operations first: their line (the ALTER itself) is the better pointer, and the
    // table comparison below then only adds what the operations did not already say.
    let mut out = scan_operations(&old, &new, &old_schema);
    let said: BTreeSet<(RuleId, String)> = out.iter().map(|f| (f.rule, f.symbol.clone())).collect();
    let mut new_schema = Schema::default();
    for stmt in &new {
        new_schema.apply(stmt);
    }
    out.extend(
        compare_schemas(&old_schema, &new_schema).into_iter().filter(|f| !said.contains(&(f.rule, f.symbol.clone()))),
    );
    // Test code is recognised by path in the engine; nothing here is test-only.
    out.sort();
    Ok(out)
}

/// The up statements of one version as [`detect_after`] reads them (none for a down
/// migration or a text that does not parse), for [`super::layers`].
pub(super) fn statements(path: &str, text: &str) -> Vec<Statement> {
    (!is_down_migration(path)).then(|| parse(up_half(&untemplated(text))).ok()).flatten().unwrap_or_default()
}

fn parse(text: &str) -> Result<Vec<Statement>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    // PostgreSQL first (enum types, ALTER COLUMN), then the permissive generic dialect,
    // then MySQL (MODIFY COLUMN, inline ENUM); the first dialect's error is the one shown.
    let dialects: [&dyn Dialect; 3] = [&PostgreSqlDialect {}, &GenericDialect {}, &MySqlDialect {}];
    let mut first_error = None;
    for dialect in dialects {
        match parse_sql(dialect, text) {
            Ok(stmts) => return Ok(stmts),
            Err(e) => {
                first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    let first_error = first_error.unwrap_or_default();
    dialects.into_iter().find_map(|d| parse_each(d, text)).ok_or(first_error)
}

/// What `Parser::parse_sql` does, refusing a statement whose operator chains
/// ([`operator_depth`]) would build a syntax tree deeper than [`MAX_OPERATOR_DEPTH`].
fn parse_sql(dialect: &dyn Dialect, text: &str) -> Result<Vec<Statement>, String> {
    let parser_error = |e: sqlparser::parser::ParserError| e.to_string();
    let tokens = Tokenizer::new(dialect, text).tokenize_with_location().map_err(|e| parser_error(e.into()))?;
    if tokens.split(|t| t.token == Token::SemiColon).any(|s| operator_depth(s) > MAX_OPERATOR_DEPTH) {
        return Err(format!("a statement chains more than {MAX_OPERATOR_DEPTH} operators (not parsed)"));
    }
    Parser::new(dialect).with_tokens_with_locations(tokens).parse_statements().map_err(parser_error)
}

/// Statement by statement, skipping what the parser does not know (`DO` blocks,
/// pg_dump's sequence options, MySQL's `CONVERT TO CHARACTER SET`) as long as it can
/// hold nothing this detector reports. `None` when the text does not tokenize, a table
/// or type definition fails, or a failing `ALTER TABLE` might loosen something.
fn parse_each(dialect: &dyn Dialect, text: &str) -> Option<Vec<Statement>> {
    let tokens = Tokenizer::new(dialect, text).tokenize_with_location().ok()?;
    let mut out = Vec::new();
    for chunk in tokens.split(|t| t.token == Token::SemiColon) {
        let words: Vec<String> = chunk
            .iter()
            .filter_map(|t| match &t.token {
                Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
                _ => None,
            })
            .collect();
        if words.is_empty() {
            continue;
        }
        if operator_depth(chunk) > MAX_OPERATOR_DEPTH {
            return None;
        }
        let mut parser = Parser::new(dialect).with_tokens_with_locations(chunk.to_vec());
        match parser.parse_statement() {
            Ok(stmt) => out.push(stmt),
            // PL/pgSQL `DO` blocks wrap DDL in exception handlers: read the DDL.
            Err(_) if words.first().is_some_and(|w| w == "DO") => out.extend(do_block_body(dialect, chunk)),
            Err(_) if must_parse(&words) => return None,
            Err(_) => {}
        }
    }
    Some(out)
}

/// The statements of a `DO $$ BEGIN ... [EXCEPTION ...] END $$` block's body, the
/// handler part left out, with their lines as they are in the file. A body the
/// parser cannot read (procedural code) yields what it can, or nothing.
fn do_block_body(dialect: &dyn Dialect, chunk: &[TokenWithSpan]) -> Vec<Statement> {
    let Some((body, line)) = chunk.iter().find_map(|t| match &t.token {
        Token::DollarQuotedString(s) => Some((s.value.as_str(), t.span.start.line)),
        _ => None,
    }) else {
        return Vec::new();
    };
    // Words with their offsets, to find the outer block's `BEGIN` and the `EXCEPTION`
    // or `END` that closes it (nested blocks, `END IF` and `END LOOP` stay inside).
    let lower = body.to_ascii_lowercase();
    let mut words = Vec::new();
    let mut word_start = None;
    for (i, c) in lower.char_indices().chain([(lower.len(), ' ')]) {
        match (c.is_alphanumeric() || c == '_', word_start) {
            (true, None) => word_start = Some(i),
            (false, Some(s)) => {
                words.push((s, &lower[s..i]));
                word_start = None;
            }
            _ => {}
        }
    }
    let mut depth = 0usize;
    let (mut start, mut end) = (None, body.len());
    for (n, (at, w)) in words.iter().enumerate() {
        match *w {
            "begin" => {
                depth += 1;
                if depth == 1 && start.is_none() {
                    start = Some(at + w.len());
                }
            }
            "end" if !matches!(words.get(n + 1).map(|x| x.1), Some("if" | "loop" | "case")) => {
                if depth == 1 {
                    end = *at;
                    break;
                }
                depth = depth.saturating_sub(1);
            }
            "exception" if depth == 1 => {
                end = *at;
                break;
            }
            _ => {}
        }
    }
    let Some(start) = start.filter(|s| *s <= end) else {
        return Vec::new();
    };
    // Pad with the lines above the body (and of the body before `begin`), so spans
    // point into the file.
    let above = usize::try_from(line.saturating_sub(1)).unwrap_or(0) + body[..start].matches('\n').count();
    let text = format!("{}{}", "\n".repeat(above), &body[start..end]);
    parse_each(dialect, &text).unwrap_or_default()
}

/// Whether an unparsed statement with these words may matter: a table or type
/// definition, or an `ALTER TABLE` that drops something, makes something NULL or
/// changes a type.
fn must_parse(words: &[String]) -> bool {
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    match w.as_slice() {
        ["CREATE", "TABLE" | "TYPE", ..] | ["CREATE", "TEMP" | "TEMPORARY" | "UNLOGGED", "TABLE", ..] => true,
        ["ALTER", "TABLE", ..] => w.iter().enumerate().any(|(i, word)| {
            matches!(*word, "DROP" | "TYPE" | "MODIFY" | "CHANGE") || (*word == "NULL" && (i == 0 || w[i - 1] != "NOT"))
        }),
        _ => false,
    }
}

/// A down-migration exists to undo an earlier tightening; loosening is its purpose.
pub(super) fn is_down_migration(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let mut segments: Vec<&str> = lower.split('/').collect();
    let name = segments.pop().unwrap_or_default();
    if segments.iter().any(|s| matches!(*s, "down" | "downgrade" | "downgrades" | "rollback" | "rollbacks")) {
        return true;
    }
    let stem = name.strip_suffix(".sql").unwrap_or(name);
    if stem == "down"
        || stem == "rollback"
        || stem == "downgrade"
        || [".down", "_down", "-down", ".rollback", "_rollback", ".undo"].iter().any(|suffix| stem.ends_with(suffix))
    {
        return true;
    }
    // Flyway undo migrations: `U7__drop_check.sql`, `U1_2__x.sql`.
    let original = path.rsplit('/').next().unwrap_or(path);
    original.starts_with('U') && original[1..].starts_with(|c: char| c.is_ascii_digit()) && original.contains("__")
}

/// Migration tools that template their SQL (`{{ index .Options "Namespace" }}users`,
/// `{{ .Namespace }}.users`, Jinja, Go templates) prefix names with an expression;
/// dropping each `{{ ... }}` (and the dot after a schema template) leaves the SQL
/// around it (`users`) and keeps every line where it was.
fn untemplated(text: &str) -> Cow<'_, str> {
    if !text.contains("{{") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start..].find("}}") else {
            rest = &rest[start..];
            break;
        };
        let expr = &rest[start..start + len + 2];
        out.extend(expr.chars().filter(|c| *c == '\n'));
        rest = &rest[start + len + 2..];
        // A template that names the schema (`{{ .Namespace }}.users`) leaves `users`.
        if let Some(r) = rest.strip_prefix('.')
            && r.starts_with(|c: char| c.is_alphabetic() || c == '_' || c == '"')
        {
            rest = r;
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// goose (`-- +goose Down`) and dbmate (`-- migrate:down`) keep both halves in one
/// file; only the up half describes the schema going forward. Cutting at the marker
/// keeps every line number of the up half.
fn up_half(text: &str) -> &str {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim().to_ascii_lowercase();
        if t.starts_with("--") {
            let marker = t.trim_start_matches('-').trim();
            if marker == "+goose down" || marker == "migrate:down" {
                return &text[..offset];
            }
        }
        offset += line.len();
    }
    text
}

// ---------------------------------------------------------------------------------
// Comparing the two models (a CREATE TABLE edited in place).

fn compare_schemas(old: &Schema, new: &Schema) -> Vec<RawFinding> {
    let mut out = Vec::new();
    let enums: BTreeSet<&String> = old.enums.iter().chain(new.enums.iter()).collect();
    for (key, before) in &old.tables {
        // A table dropped (or renamed) is not a loosened table.
        let Some(after) = new.tables.get(key) else {
            continue;
        };
        let table = &after.display;
        for (name, b) in &before.columns {
            let Some(a) = after.columns.get(name) else {
                continue;
            };
            let symbol = format!("{table}.{}", a.shown);
            if b.not_null && !after.not_null(name) {
                out.push(finding(NOT_NULL_DROPPED, &symbol, a.line, &b.display, &a.display));
            }
            if let Some(rule) = type_rule(&b.data_type, &a.data_type, |n| enums.contains(&n)) {
                out.push(finding(rule, &symbol, a.line, &b.display, &a.display));
            }
        }
        let symbol_of = |owner: &Owner| constraint_symbol(table, owner, after);
        // A constraint over a column that was dropped or renamed went with the column.
        let columns_gone = |cols: Vec<&String>| {
            cols.into_iter().any(|c| before.columns.contains_key(c) && !after.columns.contains_key(c))
        };
        let line_of =
            |owner: &Owner| owner.column.as_ref().and_then(|c| after.columns.get(c)).map_or(after.line, |c| c.line);
        for c in &before.checks {
            if columns_gone(c.reads.iter().chain(&c.owner.column).collect()) {
                continue;
            }
            let kept = after.checks.iter().any(|x| {
                x.expr == c.expr
                    || (c.owner.name.is_some() && x.owner.name == c.owner.name)
                    || (!c.reads.is_empty() && x.reads == c.reads)
            });
            if !kept {
                out.push(finding(CHECK_REMOVED, &symbol_of(&c.owner), line_of(&c.owner), &c.text, ""));
            }
        }
        // A key over fewer columns is at least as strict; one over more columns is looser.
        let stricter_key = |cols: &BTreeSet<String>, keys: &[Key]| {
            keys.iter().any(|k| !k.columns.is_empty() && k.columns.is_subset(cols))
        };
        // A key widened to more columns is shown as what it became; a table-level one
        // points at its new line, a column's at the column.
        let widened = |k: &Key| {
            let mut keys = after.uniques.iter().chain(&after.primary_keys);
            match keys.find(|x| k.columns.is_subset(&x.columns)) {
                Some(x) if k.owner.column.is_none() => (x.owner.line, x.text.as_str()),
                Some(x) => (line_of(&k.owner), x.text.as_str()),
                None => (line_of(&k.owner), ""),
            }
        };
        for (rule, keys, also) in [
            (UNIQUE_DROPPED, &before.uniques, &after.primary_keys),
            (PRIMARY_KEY_DROPPED, &before.primary_keys, &after.uniques),
        ] {
            let same_kind = if rule == UNIQUE_DROPPED { &after.uniques } else { &after.primary_keys };
            for k in keys {
                if columns_gone(k.columns.iter().collect()) {
                    continue;
                }
                if !stricter_key(&k.columns, same_kind) && !stricter_key(&k.columns, also) {
                    let (line, now) = widened(k);
                    out.push(finding(rule, &symbol_of(&k.owner), line, &k.text, now));
                }
            }
        }
        for fk in &before.foreign_keys {
            if columns_gone(fk.columns.iter().collect()) {
                continue;
            }
            let kept = after.foreign_keys.iter().any(|x| x.columns == fk.columns && x.target == fk.target);
            if !kept {
                out.push(finding(FOREIGN_KEY_DROPPED, &symbol_of(&fk.owner), line_of(&fk.owner), &fk.text, ""));
            }
        }
    }
    for (name, index) in &old.unique_indexes {
        // Only indexes of tables both versions define: an index of an earlier
        // migration's table is not restated by this file.
        let Some(table) = new.tables.get(&index.table) else {
            continue;
        };
        let columns_gone = index.columns.iter().any(|c| !table.columns.contains_key(c));
        if new.unique_indexes.contains_key(name) || columns_gone || new.unique_over(&index.table, &index.columns, None)
        {
            continue;
        }
        let symbol = format!("{}.{name}", table.display);
        out.push(finding(UNIQUE_INDEX_DROPPED, &symbol, table.line, &index.text, ""));
    }
    out
}

/// `table.column` for a column constraint, `table.name` for a named table constraint,
/// `table` otherwise.
fn constraint_symbol(table: &str, owner: &Owner, after: &Table) -> String {
    if let Some(col) = &owner.column {
        let shown = after.columns.get(col).map_or(col.clone(), |c| c.shown.clone());
        return format!("{table}.{shown}");
    }
    match &owner.name {
        Some(n) => format!("{table}.{n}"),
        None => table.to_string(),
    }
}

/// The rule a column type change breaks, if any.
fn type_rule(old: &DataType, new: &DataType, is_enum: impl Fn(String) -> bool) -> Option<RuleId> {
    Some(match type_loosening(old, new, is_enum)? {
        TypeLoosening::CharacterBound => VARCHAR_WIDENED,
        TypeLoosening::EnumToText => ENUM_TO_TEXT,
        TypeLoosening::Numeric => NUMERIC_WIDENED,
        TypeLoosening::ToText => TYPE_TO_TEXT,
    })
}

// ---------------------------------------------------------------------------------
// Operations a migration adds (`ALTER TABLE ...`), read one by one.

fn scan_operations(old: &[Statement], new: &[Statement], old_schema: &Schema) -> Vec<RawFinding> {
    // The same operation already present in the old version is not new.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for stmt in old {
        match stmt {
            Statement::AlterTable { name, operations, .. } => {
                for op in operations {
                    *seen.entry(op_key(name, op)).or_default() += 1;
                }
            }
            Statement::Drop { object_type: ObjectType::Index, .. } => {
                *seen.entry(norm(&stmt.to_string())).or_default() += 1
            }
            _ => {}
        }
    }
    let mut dropped = BTreeSet::new();
    for stmt in new {
        if let Statement::AlterTable { name, operations, .. } = stmt {
            for op in operations {
                if let AlterTableOperation::DropColumn { column_names, .. } = op {
                    dropped.extend(column_names.iter().map(|c| (object_key(name), ident_key(c))));
                }
            }
        }
    }
    // What the schema is after each statement of the new version, from the old one on.
    let mut so_far = old_schema.clone();
    let mut out = Vec::new();
    // Each retyped column's last new type: a column retyped twice is judged once, its
    // final type against the type it had before this file.
    let mut retyped: BTreeMap<(String, String), Retype> = BTreeMap::new();
    // What the migration adds: a constraint dropped and added back is judged on the two
    // definitions (`sql_constraints`).
    let added = Added::of(new);
    let (old_added, set_not_null) = (constraints::added_columns(old), constraints::set_not_null(new));
    for (n, stmt) in new.iter().enumerate() {
        match stmt {
            Statement::AlterTable { name, operations, .. } => {
                let table = object_key(name);
                // What the file says so far, else what the old version said.
                let view = Lookup { first: &so_far, second: old_schema, dropped: &dropped };
                for (m, op) in operations.iter().enumerate() {
                    let count = seen.entry(op_key(name, op)).or_default();
                    if *count > 0 {
                        *count -= 1;
                        continue;
                    }
                    let shown = object_shown(name);
                    if let AlterTableOperation::AlterColumn {
                        column_name,
                        op: col_op @ AlterColumnOperation::SetDataType { data_type, .. },
                    } = op
                    {
                        retyped.insert(
                            (table.clone(), ident_key(column_name)),
                            Retype {
                                symbol: format!("{shown}.{}", column_name.value),
                                line: ident_line(column_name),
                                after: one_line(&format!("ALTER COLUMN {column_name} {col_op}")),
                                data_type: data_type.clone(),
                            },
                        );
                        continue;
                    }
                    if let AlterTableOperation::DropPrimaryKey = op {
                        out.extend(dropped_primary_key(&shown, &table, object_line(name), &view, (&added, (n, m))));
                    }
                    out.extend(loosening_op(&shown, &table, op, &view, (&added, (n, m))));
                    out.extend(constraints::add_column_edited_nullable(&shown, &table, op, &old_added, &set_not_null));
                    out.extend(redefined_column(&shown, &table, op, &view));
                }
            }
            Statement::Drop { object_type: ObjectType::Index, names, .. } => {
                let count = seen.entry(norm(&stmt.to_string())).or_default();
                if *count > 0 {
                    *count -= 1;
                } else {
                    let view = Lookup { first: &so_far, second: old_schema, dropped: &dropped };
                    for name in names {
                        out.extend(constraints::dropped_unique_index(name, &view, (&added, (n, 0))));
                    }
                }
            }
            _ => {}
        }
        so_far.apply(stmt);
    }
    for ((table, column), r) in retyped {
        // A column this file created has no earlier type to loosen.
        let Some(original) = old_schema.column(&table, &column) else {
            continue;
        };
        let is_enum = |n: String| old_schema.enums.contains(&n) || so_far.enums.contains(&n);
        if let Some(rule) = type_rule(&original.data_type, &r.data_type, is_enum) {
            out.push(finding(rule, &r.symbol, r.line, &original.display, &r.after));
        }
    }
    out
}

/// A column's new type, as the last `ALTER COLUMN ... TYPE` of a file set it.
struct Retype {
    symbol: String,
    line: u32,
    after: String,
    data_type: DataType,
}

fn op_key(table: &ObjectName, op: &AlterTableOperation) -> String {
    norm(&format!("{table} {op}"))
}

pub(super) struct Lookup<'a> {
    pub(super) first: &'a Schema,
    pub(super) second: &'a Schema,
    /// `(table, column)` pairs the new version drops anywhere in the file.
    pub(super) dropped: &'a BTreeSet<(String, String)>,
}

impl Lookup<'_> {
    fn column(&self, table: &str, column: &str) -> Option<&Column> {
        self.first.column(table, column).or_else(|| self.second.column(table, column))
    }

    pub(super) fn column_shown(&self, table: &str, column: &str) -> Option<String> {
        self.column(table, column).map(|c| c.shown.clone())
    }

    pub(super) fn constraint(&self, table: &str, name: &str) -> Option<NamedConstraint> {
        self.first.constraint(table, name).or_else(|| self.second.constraint(table, name))
    }

    /// Whether a unique key, primary key or unique index (other than `except`) still
    /// covers a subset of `columns`, so values over them stay unique.
    pub(super) fn unique_over(&self, table: &str, columns: &BTreeSet<String>, except: Option<&str>) -> bool {
        [self.first, self.second].into_iter().any(|s| s.unique_over(table, columns, except))
    }

    fn is_enum(&self, name: String) -> bool {
        self.first.enums.contains(&name) || self.second.enums.contains(&name)
    }
}

/// MySQL's `MODIFY COLUMN` / `CHANGE COLUMN` restate a column whole: an explicit `NULL`,
/// or a known `NOT NULL` column restated without it, drops NOT NULL; the new type is
/// compared with the known one.
fn redefined_column(shown: &str, table: &str, op: &AlterTableOperation, view: &Lookup<'_>) -> Vec<RawFinding> {
    let (name, data_type, options) = match op {
        AlterTableOperation::ModifyColumn { col_name, data_type, options, .. } => (col_name, data_type, options),
        AlterTableOperation::ChangeColumn { old_name, data_type, options, .. } => (old_name, data_type, options),
        _ => return Vec::new(),
    };
    let known = view.column(table, &ident_key(name));
    let symbol = format!("{shown}.{}", name.value);
    let line = ident_line(name);
    let after = op.to_string();
    let mut out = Vec::new();
    let restated_nullable = options.contains(&ColumnOption::Null)
        || (known.is_some_and(|c| c.not_null) && !options.contains(&ColumnOption::NotNull));
    if restated_nullable {
        let before = known.filter(|c| c.not_null).map_or_else(|| format!("{name} NOT NULL"), |c| c.display.clone());
        out.push(finding(NOT_NULL_DROPPED, &symbol, line, &before, &after));
    }
    if let Some(known) = known
        && let Some(rule) = type_rule(&known.data_type, data_type, |n| view.is_enum(n))
    {
        out.push(finding(rule, &symbol, line, &known.display, &after));
    }
    out
}

fn loosening_op(
    shown: &str,
    table: &str,
    op: &AlterTableOperation,
    view: &Lookup<'_>,
    (added, at): (&Added, (usize, usize)),
) -> Option<RawFinding> {
    match op {
        AlterTableOperation::AlterColumn { column_name, op: col_op } => {
            let col = ident_key(column_name);
            let symbol = format!("{shown}.{}", column_name.value);
            let line = ident_line(column_name);
            let known = view.column(table, &col);
            let after = one_line(&format!("ALTER COLUMN {column_name} {col_op}"));
            match col_op {
                AlterColumnOperation::DropNotNull => {
                    let before = known
                        .filter(|c| c.not_null)
                        .map_or_else(|| format!("{column_name} NOT NULL"), |c| c.display.clone());
                    Some(finding(NOT_NULL_DROPPED, &symbol, line, &before, &after))
                }
                // Type changes are judged per column once the file is read (`scan_operations`).
                _ => None,
            }
        }
        AlterTableOperation::DropConstraint { name, .. } | AlterTableOperation::DropForeignKey { name } => {
            let key = ident_key(name);
            let old = constraints::old_constraint([view.first, view.second], table, &key);
            let verdict = added.verdict(Some(table), Some(&key), at, old.as_ref());
            if verdict == Verdict::Kept {
                return None;
            }
            let guessed = || {
                // MySQL's DROP FOREIGN KEY says the kind itself.
                let kind = match op {
                    AlterTableOperation::DropForeignKey { .. } => Some(ConstraintKind::ForeignKey),
                    _ => super::sql_constraints::kind_by_name(&key),
                };
                kind.map(|kind| NamedConstraint {
                    kind,
                    text: format!("CONSTRAINT {name}"),
                    column: None,
                    columns: BTreeSet::new(),
                })
            };
            let implicit = || constraints::by_implicit_name(view, table, old.as_ref());
            let Some(known) = view.constraint(table, &key).or_else(implicit).or_else(guessed) else {
                return unknown_constraint_dropped(shown, table, name, op, added);
            };
            // A constraint whose columns the file drops goes with them (known by its
            // definition, or by the name the database gave it).
            let goes_with_columns = if known.columns.is_empty() {
                constraints::named_for_dropped_column(&key, view.dropped)
            } else {
                known.columns.iter().all(|c| view.dropped.contains(&(table.to_string(), c.clone())))
            };
            if goes_with_columns {
                return None;
            }
            let rule = match known.kind {
                ConstraintKind::Check => CHECK_REMOVED,
                ConstraintKind::Unique => UNIQUE_DROPPED,
                ConstraintKind::PrimaryKey => PRIMARY_KEY_DROPPED,
                ConstraintKind::ForeignKey => FOREIGN_KEY_DROPPED,
            };
            // A constraint declared on a column belongs to that column.
            let symbol = format!("{shown}.{}", known.column.as_deref().unwrap_or(&name.value));
            let after = match (op, &verdict) {
                // Added back weaker: what it became is the new definition.
                (_, Verdict::Weaker(text)) => text.clone(),
                (AlterTableOperation::DropForeignKey { .. }, _) => format!("DROP FOREIGN KEY {name}"),
                _ => format!("DROP CONSTRAINT {name}"),
            };
            // Added back weaker: what it was is the old definition, where one is known.
            let before = match (&verdict, old) {
                (Verdict::Weaker(_), Some(old)) => old.text,
                _ => known.text,
            };
            Some(finding(rule, &symbol, ident_line(name), &before, &after))
        }
        AlterTableOperation::DropIndex { name } => dropped_mysql_index(shown, table, name, view, (added, at)),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------
// Small helpers.

pub(super) fn finding(rule: RuleId, symbol: &str, line: u32, before: &str, after: &str) -> RawFinding {
    RawFinding {
        line: line.max(1),
        rule,
        symbol: symbol.to_string(),
        before: one_line(before),
        after: one_line(after),
        in_test: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A statement chaining more operators than the scan walks is refused, in one line,
    /// before sqlparser builds (and would drop by recursion) its tree; one just under
    /// the bound is read.
    #[test]
    fn a_statement_chaining_too_many_operators_is_refused() {
        let sum = |n: usize| vec!["1"; n].join(" + ");
        let over = format!("CREATE TABLE t (a integer DEFAULT {});", sum(MAX_OPERATOR_DEPTH + 2));
        let e = parse(&over).unwrap_err();
        assert!(e.contains("more than 1000 operators") && !e.contains('\n'), "{e}");
        let under = format!("CREATE TABLE t (a integer DEFAULT {});", sum(MAX_OPERATOR_DEPTH));
        assert_eq!(parse(&under).unwrap().len(), 1);
    }

    #[test]
    fn down_migration_paths() {
        for p in [
            "migrations/0007_x/down.sql",
            "db/migrate/20240101_add.down.sql",
            "migrations/down/0003.sql",
            "db/V2__x/U2__undo.sql",
            "sql/U3__drop_check.sql",
        ] {
            assert!(is_down_migration(p), "{p}");
        }
        for p in
            ["migrations/0007_x/up.sql", "schema.sql", "migrations/0003_download_stats.sql", "migrations/V3__users.sql"]
        {
            assert!(!is_down_migration(p), "{p}");
        }
    }

    #[test]
    fn goose_down_half_is_cut() {
        let text = "-- +goose Up\nALTER TABLE t ALTER COLUMN a SET NOT NULL;\n-- +goose Down\nALTER TABLE t ALTER COLUMN a DROP NOT NULL;\n";
        let out = detect("db/00001_x.sql", "", text).expect("parses");
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn unknown_statements_are_skipped_not_fatal() {
        let before = "CREATE TABLE users (\n  email TEXT NOT NULL\n);\nDO $$ BEGIN PERFORM 1; END $$;\n";
        let after = "CREATE TABLE users (\n  email TEXT\n);\nDO $$ BEGIN PERFORM 1; END $$;\n";
        let out = detect("db/structure.sql", before, after).expect("DO block skipped");
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!((out[0].rule, out[0].line), (NOT_NULL_DROPPED, 2));
        // A table definition the parser cannot read is still an error.
        let broken = "DO $$ BEGIN PERFORM 1; END $$;\nCREATE TABLE users (email TEXT NOT NULL,,);\n";
        assert!(detect("db/structure.sql", "", broken).is_err());
    }

    #[test]
    fn templated_sql_is_read_without_its_template() {
        let before = "CREATE TABLE {{ index .Options \"Namespace\" }}users (\n  id INT,\n  email TEXT NOT NULL\n);";
        let after = "CREATE TABLE {{ index .Options \"Namespace\" }}users (\n  id INT,\n  email TEXT\n);";
        let out = detect("migrations/20171026_create_users.up.sql", before, after).expect("parses");
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!((out[0].symbol.as_str(), out[0].line), ("users.email", 3));
        // Control flow that leaves no SQL behind is skipped, not an error.
        let text = "{{ if .Cockroach }}ALTER TABLE x{{ else }} ALTER{{ end }} TABLE;";
        assert_eq!(detect("migrations/1_x.up.sql", "", text), Ok(Vec::new()));
    }

    #[test]
    fn each_dialect_gets_a_statement_by_statement_try() {
        // MySQL-only syntax next to a statement no dialect knows.
        let text = "ALTER TABLE `users` CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;\nALTER TABLE `users` CHANGE COLUMN `meta` `meta` JSON NULL DEFAULT NULL;\n";
        let out = detect("migrations/2018_json.up.sql", "", text).expect("MySQL statements parse");
        assert_eq!(out.iter().map(|f| f.rule).collect::<Vec<_>>(), [NOT_NULL_DROPPED]);
    }

    #[test]
    fn parse_failure_is_an_error() {
        let err = detect("schema.sql", "", "CREATE TABLE (").expect_err("invalid SQL");
        assert!(err.0.starts_with("new version:"), "{err}");
    }

    #[test]
    fn check_reads_columns_not_functions() {
        let reads = columns_read("length(name) > 0 AND age BETWEEN 1 AND 99");
        assert_eq!(reads, BTreeSet::from(["age".to_string(), "name".to_string()]));
    }

    proptest::proptest! {
        /// Any token soup, valid or not, yields findings or an error, never a panic.
        #[test]
        fn never_panics(
            before in proptest::collection::vec(proptest::sample::select(SOUP), 0..48),
            after in proptest::collection::vec(proptest::sample::select(SOUP), 0..48),
        ) {
            let (before, after) = (before.join(" "), after.join(" "));
            let _ = detect("db/schema.sql", &before, &after);
            // A file compared with itself has lost nothing.
            if let Ok(found) = detect("db/schema.sql", &after, &after) {
                proptest::prop_assert!(found.is_empty(), "{found:?}");
            }
        }
    }

    const SOUP: &[&str] = &[
        "CREATE",
        "TABLE",
        "TYPE",
        "ALTER",
        "COLUMN",
        "DROP",
        "ADD",
        "CONSTRAINT",
        "t",
        "a",
        "b",
        "c",
        "(",
        ")",
        ",",
        ";",
        "\n",
        "INT",
        "TEXT",
        "VARCHAR(8)",
        "VARCHAR(99)",
        "NOT",
        "NULL",
        "CHECK",
        "a > 0",
        "UNIQUE",
        "PRIMARY KEY",
        "REFERENCES",
        "FOREIGN KEY",
        "AS",
        "ENUM",
        "('x', 'y')",
        "SET",
        "DATA",
        "t_a_check",
        "t_a_key",
        "t_a_fkey",
    ];
}

#[cfg(test)]
mod do_block_tests {
    use super::*;

    #[test]
    fn ddl_inside_a_do_block_is_read() {
        let earlier = "CREATE TABLE users (\n  id INT PRIMARY KEY,\n  email VARCHAR(255) NULL UNIQUE\n);\n";
        let after = "-- relax\ndo $$\nbegin\n  alter table only {{ index .Options \"Namespace\" }}.users\n    drop constraint if exists users_email_key;\nexception\nwhen SQLSTATE '2BP01' then\n  raise notice 'cannot drop';\nend $$;\n";
        let out = detect_after("migrations/2_relax.up.sql", "", after, &[earlier]).expect("parses");
        assert_eq!(out.iter().map(|f| (f.rule, f.line)).collect::<Vec<_>>(), [(UNIQUE_DROPPED, 5)], "{out:?}");
    }

    /// A nested block's handler is not the outer block's end: DDL after it counts.
    #[test]
    fn a_nested_handler_does_not_hide_the_rest_of_the_block() {
        let block = |index: &str| {
            format!(
                "do $$ begin\n  create table tickets (id int primary key, seat int not null);\n  begin\n    create index tickets_seat on tickets using hash (seat);\n  exception when others then\n    create index tickets_seat on tickets (seat);\n  end;\n  if true then\n    perform 1;\n  end if;\n  {index}\nend $$;\n"
            )
        };
        let before = block("create unique index tickets_one_seat on tickets (seat);");
        let same = detect("migrations/1_tickets.up.sql", &before, &format!("-- note\n{before}")).expect("parses");
        assert!(same.is_empty(), "{same:?}");
        let after = block("create index tickets_one_seat on tickets (seat);");
        let out = detect("migrations/1_tickets.up.sql", &before, &after).expect("parses");
        assert_eq!(out.iter().map(|f| f.rule).collect::<Vec<_>>(), [UNIQUE_INDEX_DROPPED], "{out:?}");
    }
}
