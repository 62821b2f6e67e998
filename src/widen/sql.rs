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
    AlterColumnOperation, AlterTableOperation, CharacterLength, ColumnDef, ColumnOption, CreateTable, DataType, Ident,
    ObjectName, ObjectNamePart, Spanned, Statement, TableConstraint, UserDefinedTypeRepresentation,
};
use sqlparser::dialect::{Dialect, GenericDialect, MySqlDialect, PostgreSqlDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer};

use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity};

const SQL: &[Language] = &[Language::Sql];

const NOT_NULL_DROPPED: RuleId = RuleId::SqlNotNullDropped;
const CHECK_REMOVED: RuleId = RuleId::SqlCheckRemoved;
const UNIQUE_DROPPED: RuleId = RuleId::SqlUniqueDropped;
const PRIMARY_KEY_DROPPED: RuleId = RuleId::SqlPrimaryKeyDropped;
const FOREIGN_KEY_DROPPED: RuleId = RuleId::SqlForeignKeyDropped;
const VARCHAR_WIDENED: RuleId = RuleId::SqlVarcharWidened;
const ENUM_TO_TEXT: RuleId = RuleId::SqlEnumToText;

pub const RULES: &[RuleDef] = &[
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
        description: "A PRIMARY KEY is removed or widened to more columns while the table and its columns remain (a key moved between column and table level is not reported).",
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
];

/// Longest rendering of a constraint in `before`/`after`; a DDL line rarely needs more.
const MAX_RENDER: usize = 160;

pub fn detect(path: &str, before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
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
        match Parser::parse_sql(dialect, text) {
            Ok(stmts) => return Ok(stmts),
            Err(e) => {
                first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    let first_error = first_error.unwrap_or_default();
    dialects.into_iter().find_map(|d| parse_each(d, text)).ok_or(first_error)
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
        let mut parser = Parser::new(dialect).with_tokens_with_locations(chunk.to_vec());
        match parser.parse_statement() {
            Ok(stmt) => out.push(stmt),
            Err(_) if must_parse(&words) => return None,
            Err(_) => {}
        }
    }
    Some(out)
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
fn is_down_migration(path: &str) -> bool {
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
/// Jinja, Go templates) prefix names with an expression; dropping each `{{ ... }}`
/// leaves the SQL around it (`users`) and keeps every line where it was.
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
// The schema model: what one version of the file says the tables look like.

#[derive(Debug, Default)]
struct Schema {
    tables: BTreeMap<String, Table>,
    /// Names of enum types (`CREATE TYPE ... AS ENUM`).
    enums: BTreeSet<String>,
}

#[derive(Debug, Clone)]
struct Table {
    /// The table name as written (for the symbol).
    display: String,
    line: u32,
    columns: BTreeMap<String, Column>,
    checks: Vec<Check>,
    uniques: Vec<Key>,
    primary_keys: Vec<Key>,
    foreign_keys: Vec<ForeignKey>,
}

#[derive(Debug, Clone)]
struct Column {
    /// The column name as written, without quotes (for the symbol).
    shown: String,
    /// The definition, one line (for `before`/`after`).
    display: String,
    line: u32,
    data_type: DataType,
    /// An explicit `NOT NULL` (a primary key's implied one is counted apart).
    not_null: bool,
}

/// Where a constraint was declared: on one column, or at table level (maybe named).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owner {
    column: Option<String>,
    name: Option<String>,
    /// Where the constraint is written, in its own version of the file.
    line: u32,
}

#[derive(Debug, Clone)]
struct Check {
    owner: Owner,
    /// Normalized expression text, to recognise the same check after a move or rename.
    expr: String,
    /// The columns the expression reads, to recognise a reworded check.
    reads: BTreeSet<String>,
    text: String,
}

#[derive(Debug, Clone)]
struct Key {
    owner: Owner,
    columns: BTreeSet<String>,
    text: String,
}

#[derive(Debug, Clone)]
struct ForeignKey {
    owner: Owner,
    columns: BTreeSet<String>,
    target: String,
    text: String,
}

/// Which kind of constraint a name denotes, as far as the file lets us see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConstraintKind {
    Check,
    Unique,
    PrimaryKey,
    ForeignKey,
}

impl Schema {
    /// Fold one statement into the model. Statements about tables the file never
    /// created are ignored here (the operation scan reads them).
    fn apply(&mut self, stmt: &Statement) {
        match stmt {
            Statement::CreateTable(ct) => {
                let table = table_of(ct);
                self.tables.insert(object_key(&ct.name), table);
            }
            Statement::CreateType { name, representation: UserDefinedTypeRepresentation::Enum { .. } } => {
                self.enums.insert(object_key(name));
            }
            Statement::AlterTable { name, operations, .. } => {
                let Some(table) = self.tables.get_mut(&object_key(name)) else {
                    return;
                };
                for op in operations {
                    table.apply(op);
                }
            }
            Statement::Drop { names, .. } => {
                for name in names {
                    let key = object_key(name);
                    self.tables.remove(&key);
                }
            }
            _ => {}
        }
    }

    fn column(&self, table: &str, column: &str) -> Option<&Column> {
        self.tables.get(table)?.columns.get(column)
    }

    /// The constraint a name denotes in this model.
    fn constraint(&self, table: &str, name: &str) -> Option<NamedConstraint> {
        let t = self.tables.get(table)?;
        let found = |kind, owner: &Owner, text: &String| {
            (owner.name.as_deref() == Some(name)).then(|| NamedConstraint {
                kind,
                text: text.clone(),
                column: owner.column.as_ref().map(|c| t.columns.get(c).map_or(c.clone(), |c| c.shown.clone())),
            })
        };
        t.checks
            .iter()
            .find_map(|c| found(ConstraintKind::Check, &c.owner, &c.text))
            .or_else(|| t.uniques.iter().find_map(|k| found(ConstraintKind::Unique, &k.owner, &k.text)))
            .or_else(|| t.primary_keys.iter().find_map(|k| found(ConstraintKind::PrimaryKey, &k.owner, &k.text)))
            .or_else(|| t.foreign_keys.iter().find_map(|k| found(ConstraintKind::ForeignKey, &k.owner, &k.text)))
    }
}

/// A constraint found by name: its kind, its text, and its column when declared on one.
#[derive(Debug)]
struct NamedConstraint {
    kind: ConstraintKind,
    text: String,
    column: Option<String>,
}

fn table_of(ct: &CreateTable) -> Table {
    let mut table = Table {
        display: object_shown(&ct.name),
        line: object_line(&ct.name),
        columns: BTreeMap::new(),
        checks: Vec::new(),
        uniques: Vec::new(),
        primary_keys: Vec::new(),
        foreign_keys: Vec::new(),
    };
    for col in &ct.columns {
        table.add_column(col);
    }
    for c in &ct.constraints {
        table.add_constraint(c);
    }
    table
}

impl Table {
    fn add_column(&mut self, col: &ColumnDef) {
        let key = ident_key(&col.name);
        let mut column = Column {
            shown: col.name.value.clone(),
            display: one_line(&col.to_string()),
            line: ident_line(&col.name),
            data_type: col.data_type.clone(),
            not_null: false,
        };
        for opt in &col.options {
            let owner = Owner { column: Some(key.clone()), name: opt.name.as_ref().map(ident_key), line: column.line };
            self.add_column_option(&key, &col.name.value, owner, &opt.option, &mut column);
        }
        self.columns.insert(key, column);
    }

    fn add_column_option(&mut self, key: &str, shown: &str, owner: Owner, option: &ColumnOption, column: &mut Column) {
        let one = || BTreeSet::from([key.to_string()]);
        match option {
            ColumnOption::NotNull => column.not_null = true,
            ColumnOption::Null => column.not_null = false,
            ColumnOption::Unique { is_primary, .. } => {
                let k = Key { owner, columns: one(), text: format!("{shown} {option}") };
                if *is_primary {
                    self.primary_keys.push(k);
                } else {
                    self.uniques.push(k);
                }
            }
            ColumnOption::ForeignKey { foreign_table, .. } => self.foreign_keys.push(ForeignKey {
                owner,
                columns: one(),
                target: object_key(foreign_table),
                text: one_line(&format!("{shown} {option}")),
            }),
            ColumnOption::Check(expr) => self.checks.push(check(owner, &expr.to_string())),
            _ => {}
        }
    }

    fn add_constraint(&mut self, c: &TableConstraint) {
        let text = one_line(&c.to_string());
        match c {
            TableConstraint::Check { name, expr, .. } => {
                self.checks.push(Check { text, ..check(table_owner(name, c), &expr.to_string()) });
            }
            TableConstraint::Unique { name, columns, .. } => self.uniques.push(Key {
                owner: table_owner(name, c),
                columns: columns.iter().map(|c| norm(&c.column.expr.to_string())).collect(),
                text,
            }),
            TableConstraint::PrimaryKey { name, columns, .. } => self.primary_keys.push(Key {
                owner: table_owner(name, c),
                columns: columns.iter().map(|c| norm(&c.column.expr.to_string())).collect(),
                text,
            }),
            TableConstraint::ForeignKey { name, columns, foreign_table, .. } => self.foreign_keys.push(ForeignKey {
                owner: table_owner(name, c),
                columns: columns.iter().map(ident_key).collect(),
                target: object_key(foreign_table),
                text,
            }),
            _ => {}
        }
    }

    fn apply(&mut self, op: &AlterTableOperation) {
        match op {
            AlterTableOperation::AddColumn { column_def, .. } => self.add_column(column_def),
            AlterTableOperation::AddConstraint { constraint, .. } => self.add_constraint(constraint),
            AlterTableOperation::DropColumn { column_names, .. } => {
                for name in column_names {
                    self.columns.remove(&ident_key(name));
                }
            }
            AlterTableOperation::DropConstraint { name, .. } | AlterTableOperation::DropForeignKey { name } => {
                let name = ident_key(name);
                let other = |o: &Owner| o.name.as_deref() != Some(name.as_str());
                self.checks.retain(|c| other(&c.owner));
                self.uniques.retain(|c| other(&c.owner));
                self.primary_keys.retain(|c| other(&c.owner));
                self.foreign_keys.retain(|c| other(&c.owner));
            }
            AlterTableOperation::DropPrimaryKey => self.primary_keys.clear(),
            AlterTableOperation::AlterColumn { column_name, op } => {
                let Some(col) = self.columns.get_mut(&ident_key(column_name)) else {
                    return;
                };
                match op {
                    AlterColumnOperation::SetNotNull => col.not_null = true,
                    AlterColumnOperation::DropNotNull => col.not_null = false,
                    AlterColumnOperation::SetDataType { data_type, .. } => {
                        col.data_type = data_type.clone();
                    }
                    _ => {}
                }
            }
            AlterTableOperation::ModifyColumn { col_name, data_type, options, .. } => {
                if let Some(col) = self.columns.get_mut(&ident_key(col_name)) {
                    col.data_type = data_type.clone();
                    col.not_null = options.contains(&ColumnOption::NotNull);
                }
            }
            AlterTableOperation::ChangeColumn { old_name, new_name, data_type, options, .. } => {
                if let Some(mut col) = self.columns.remove(&ident_key(old_name)) {
                    col.data_type = data_type.clone();
                    col.not_null = options.contains(&ColumnOption::NotNull);
                    col.display = one_line(&format!("{new_name} {data_type}"));
                    col.shown = new_name.value.clone();
                    self.columns.insert(ident_key(new_name), col);
                }
            }
            _ => {}
        }
    }

    /// Whether `column` cannot be NULL here, explicitly or as part of the primary key.
    fn not_null(&self, column: &str) -> bool {
        self.columns.get(column).is_some_and(|c| c.not_null)
            || self.primary_keys.iter().any(|k| k.columns.contains(column))
    }
}

fn check(owner: Owner, expr: &str) -> Check {
    let text = match &owner {
        Owner { column: Some(_), name: Some(n), .. } => format!("CONSTRAINT {n} CHECK ({expr})"),
        _ => format!("CHECK ({expr})"),
    };
    Check { owner, expr: norm(expr), reads: columns_read(expr), text: one_line(&text) }
}

fn table_owner(name: &Option<Ident>, c: &TableConstraint) -> Owner {
    let line = u32::try_from(c.span().start.line).unwrap_or(u32::MAX);
    Owner { column: None, name: name.as_ref().map(ident_key), line }
}

/// Keywords that build an expression rather than name a column.
const EXPR_KEYWORDS: &[Keyword] = &[
    Keyword::ALL,
    Keyword::AND,
    Keyword::ANY,
    Keyword::AS,
    Keyword::BETWEEN,
    Keyword::CASE,
    Keyword::DISTINCT,
    Keyword::ELSE,
    Keyword::END,
    Keyword::ESCAPE,
    Keyword::FALSE,
    Keyword::FROM,
    Keyword::ILIKE,
    Keyword::IN,
    Keyword::INTERVAL,
    Keyword::IS,
    Keyword::LIKE,
    Keyword::NOT,
    Keyword::NULL,
    Keyword::OR,
    Keyword::SIMILAR,
    Keyword::SOME,
    Keyword::THEN,
    Keyword::TO,
    Keyword::TRUE,
    Keyword::UNKNOWN,
    Keyword::WHEN,
];

/// The identifiers an expression reads (words that are neither keywords nor function
/// names), lowercased.
fn columns_read(expr: &str) -> BTreeSet<String> {
    let dialect = PostgreSqlDialect {};
    let Ok(tokens) = Tokenizer::new(&dialect, expr).tokenize() else {
        return BTreeSet::new();
    };
    let significant: Vec<&Token> = tokens.iter().filter(|t| !matches!(t, Token::Whitespace(_))).collect();
    let mut out = BTreeSet::new();
    for (i, tok) in significant.iter().enumerate() {
        if let Token::Word(w) = tok {
            let is_call = matches!(significant.get(i + 1), Some(Token::LParen));
            let is_cast_type = i > 0 && matches!(significant.get(i - 1), Some(Token::DoubleColon));
            // Column names are often keywords too (`name`, `status`), so only the
            // keywords an expression is built from are left out.
            let is_operator = w.quote_style.is_none() && EXPR_KEYWORDS.contains(&w.keyword);
            if !is_call && !is_cast_type && !is_operator {
                out.insert(if w.quote_style.is_some() { w.value.clone() } else { w.value.to_ascii_lowercase() });
            }
        }
    }
    out
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
            if let Some(rule) = type_loosening(&b.data_type, &a.data_type, |n| enums.contains(&n)) {
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

/// Which rule, if any, a column type change from `old` to `new` breaks.
fn type_loosening(old: &DataType, new: &DataType, is_enum: impl Fn(String) -> bool) -> Option<RuleId> {
    let was_enum = match old {
        DataType::Enum(..) => true,
        DataType::Custom(name, _) => is_enum(object_key(name)),
        _ => false,
    };
    if was_enum {
        return text_bound(new).map(|_| ENUM_TO_TEXT);
    }
    let old_bound = text_bound(old)??;
    match text_bound(new)? {
        None => Some(VARCHAR_WIDENED),
        Some(n) if n > old_bound => Some(VARCHAR_WIDENED),
        Some(_) => None,
    }
}

/// For a character type: `Some(Some(n))` when bounded by n, `Some(None)` when unbounded;
/// `None` for any other type.
fn text_bound(t: &DataType) -> Option<Option<u64>> {
    let len = |l: &Option<CharacterLength>| match l {
        Some(CharacterLength::IntegerLength { length, .. }) => Some(*length),
        _ => None,
    };
    Some(match t {
        DataType::Varchar(l) | DataType::CharacterVarying(l) | DataType::CharVarying(l) | DataType::Nvarchar(l) => {
            len(l)
        }
        // CHAR without a length is CHAR(1) in the standard.
        DataType::Char(l) | DataType::Character(l) => len(l).or(Some(1)),
        DataType::String(n) => *n,
        DataType::Text | DataType::TinyText | DataType::MediumText | DataType::LongText | DataType::Clob(_) => None,
        DataType::Custom(name, _) if object_key(name) == "citext" => None,
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------
// Operations a migration adds (`ALTER TABLE ...`), read one by one.

fn scan_operations(old: &[Statement], new: &[Statement], old_schema: &Schema) -> Vec<RawFinding> {
    // The same operation already present in the old version is not new.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for stmt in old {
        if let Statement::AlterTable { name, operations, .. } = stmt {
            for op in operations {
                *seen.entry(op_key(name, op)).or_default() += 1;
            }
        }
    }
    let mut so_far = Schema::default();
    let mut out = Vec::new();
    for stmt in new {
        if let Statement::AlterTable { name, operations, .. } = stmt {
            let table = object_key(name);
            // What the file says so far, else what the old version said.
            let view = Lookup { first: &so_far, second: old_schema };
            for op in operations {
                let count = seen.entry(op_key(name, op)).or_default();
                if *count > 0 {
                    *count -= 1;
                    continue;
                }
                let shown = object_shown(name);
                out.extend(loosening_op(&shown, &table, op, &view));
                out.extend(redefined_column(&shown, &table, op, &view));
            }
        }
        so_far.apply(stmt);
    }
    out
}

fn op_key(table: &ObjectName, op: &AlterTableOperation) -> String {
    norm(&format!("{table} {op}"))
}

struct Lookup<'a> {
    first: &'a Schema,
    second: &'a Schema,
}

impl Lookup<'_> {
    fn column(&self, table: &str, column: &str) -> Option<&Column> {
        self.first.column(table, column).or_else(|| self.second.column(table, column))
    }

    fn constraint(&self, table: &str, name: &str) -> Option<NamedConstraint> {
        self.first.constraint(table, name).or_else(|| self.second.constraint(table, name))
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
        && let Some(rule) = type_loosening(&known.data_type, data_type, |n| view.is_enum(n))
    {
        out.push(finding(rule, &symbol, line, &known.display, &after));
    }
    out
}

fn loosening_op(shown: &str, table: &str, op: &AlterTableOperation, view: &Lookup<'_>) -> Option<RawFinding> {
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
                AlterColumnOperation::SetDataType { data_type, .. } => {
                    let known = known?;
                    let rule = type_loosening(&known.data_type, data_type, |n| view.is_enum(n))?;
                    Some(finding(rule, &symbol, line, &known.display, &after))
                }
                _ => None,
            }
        }
        AlterTableOperation::DropConstraint { name, .. } | AlterTableOperation::DropForeignKey { name } => {
            let key = ident_key(name);
            let guessed = || {
                // MySQL's DROP FOREIGN KEY says the kind itself.
                let kind = match op {
                    AlterTableOperation::DropForeignKey { .. } => Some(ConstraintKind::ForeignKey),
                    _ => kind_by_name(&key),
                };
                kind.map(|kind| NamedConstraint { kind, text: format!("CONSTRAINT {name}"), column: None })
            };
            let known = view.constraint(table, &key).or_else(guessed)?;
            let rule = match known.kind {
                ConstraintKind::Check => CHECK_REMOVED,
                ConstraintKind::Unique => UNIQUE_DROPPED,
                ConstraintKind::PrimaryKey => PRIMARY_KEY_DROPPED,
                ConstraintKind::ForeignKey => FOREIGN_KEY_DROPPED,
            };
            // A constraint declared on a column belongs to that column.
            let symbol = format!("{shown}.{}", known.column.as_deref().unwrap_or(&name.value));
            let after = match op {
                AlterTableOperation::DropForeignKey { .. } => format!("DROP FOREIGN KEY {name}"),
                _ => format!("DROP CONSTRAINT {name}"),
            };
            Some(finding(rule, &symbol, ident_line(name), &known.text, &after))
        }
        _ => None,
    }
}

/// PostgreSQL's default constraint names end in `_check`, `_key`, `_pkey`, `_fkey`;
/// the common hand-written prefixes (`chk_`, `uq_`, `pk_`, `fk_`) say the same.
fn kind_by_name(name: &str) -> Option<ConstraintKind> {
    let n = name.to_ascii_lowercase();
    let has = |suffixes: &[&str], prefixes: &[&str]| {
        suffixes.iter().any(|s| n.ends_with(s)) || prefixes.iter().any(|p| n.starts_with(p))
    };
    if has(&["_check", "_chk"], &["chk_", "ck_", "check_"]) {
        Some(ConstraintKind::Check)
    } else if has(&["_pkey"], &["pk_"]) {
        Some(ConstraintKind::PrimaryKey)
    } else if has(&["_fkey", "_fk"], &["fk_"]) {
        Some(ConstraintKind::ForeignKey)
    } else if has(&["_key", "_unique", "_uniq", "_uk"], &["uq_", "uk_", "unique_"]) {
        Some(ConstraintKind::Unique)
    } else {
        None
    }
}

// ---------------------------------------------------------------------------------
// Small helpers.

fn finding(rule: RuleId, symbol: &str, line: u32, before: &str, after: &str) -> RawFinding {
    RawFinding {
        line: line.max(1),
        rule,
        symbol: symbol.to_string(),
        before: one_line(before),
        after: one_line(after),
        in_test: false,
    }
}

/// Unquoted identifiers are case-insensitive in SQL; quoted ones keep their case.
fn ident_key(ident: &Ident) -> String {
    if ident.quote_style.is_some() { ident.value.clone() } else { ident.value.to_ascii_lowercase() }
}

fn object_key(name: &ObjectName) -> String {
    name.0
        .iter()
        .map(|part| match part {
            ObjectNamePart::Identifier(i) => ident_key(i),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// A table name for a symbol: its parts as written, without quotes.
fn object_shown(name: &ObjectName) -> String {
    name.0
        .iter()
        .map(|part| match part {
            ObjectNamePart::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

fn ident_line(ident: &Ident) -> u32 {
    u32::try_from(ident.span.start.line).unwrap_or(u32::MAX)
}

fn object_line(name: &ObjectName) -> u32 {
    name.0
        .iter()
        .rev()
        .find_map(|part| match part {
            ObjectNamePart::Identifier(i) => Some(ident_line(i)),
            _ => None,
        })
        .unwrap_or(1)
}

/// Comparison form of SQL text: lowercase, single spaces.
fn norm(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_lowercase()
}

fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(MAX_RENDER) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
