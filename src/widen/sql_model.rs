//! The SQL schema model: the tables, columns, constraints, enum types and unique
//! indexes that a sequence of DDL statements builds, folded statement by statement.
//! The SQL detector replays a file's old version (after the repository's earlier
//! migrations, when it is one) into this model and judges the new statements against it.

use std::collections::{BTreeMap, BTreeSet};

use sqlparser::ast::{
    AlterColumnOperation, AlterIndexOperation, AlterTableOperation, ColumnDef, ColumnOption, CreateTable, DataType,
    Expr, Ident, ObjectName, ObjectNamePart, ObjectType, Spanned, Statement, TableConstraint,
    UserDefinedTypeRepresentation,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, Tokenizer};

/// Longest rendering of a constraint in `before`/`after`; a DDL line rarely needs more.
pub(super) const MAX_RENDER: usize = 160;
// ---------------------------------------------------------------------------------
// The schema model: what one version of the file says the tables look like.

#[derive(Debug, Default, Clone)]
pub(super) struct Schema {
    pub(super) tables: BTreeMap<String, Table>,
    /// Names of enum types (`CREATE TYPE ... AS ENUM`).
    pub(super) enums: BTreeSet<String>,
    /// Unique indexes (`CREATE UNIQUE INDEX`), by the index name's last part (index
    /// names are per schema, and `DROP INDEX` names them without the table).
    pub(super) unique_indexes: BTreeMap<String, UniqueIndex>,
    /// Names of the other indexes (plain or partial), so that a name that looks like a
    /// unique index's (`sql_constraints::unique_by_name`) is not taken for one.
    pub(super) plain_indexes: BTreeSet<String>,
}

/// A `CREATE UNIQUE INDEX`: what `DROP INDEX` by its name takes away.
#[derive(Debug, Clone)]
pub(super) struct UniqueIndex {
    /// The table's key and its name as written.
    pub(super) table: String,
    pub(super) table_shown: String,
    pub(super) columns: BTreeSet<String>,
    /// The statement, one line.
    pub(super) text: String,
}

#[derive(Debug, Clone)]
pub(super) struct Table {
    /// The table name as written (for the symbol).
    pub(super) display: String,
    pub(super) line: u32,
    pub(super) columns: BTreeMap<String, Column>,
    pub(super) checks: Vec<Check>,
    pub(super) uniques: Vec<Key>,
    pub(super) primary_keys: Vec<Key>,
    pub(super) foreign_keys: Vec<ForeignKey>,
}

#[derive(Debug, Clone)]
pub(super) struct Column {
    /// The column name as written, without quotes (for the symbol).
    pub(super) shown: String,
    /// The definition, one line (for `before`/`after`).
    pub(super) display: String,
    pub(super) line: u32,
    pub(super) data_type: DataType,
    /// An explicit `NOT NULL` (a primary key's implied one is counted apart).
    pub(super) not_null: bool,
}

/// Where a constraint was declared: on one column, or at table level (maybe named).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Owner {
    pub(super) column: Option<String>,
    pub(super) name: Option<String>,
    /// Where the constraint is written, in its own version of the file.
    pub(super) line: u32,
}

#[derive(Debug, Clone)]
pub(super) struct Check {
    pub(super) owner: Owner,
    /// Normalized expression text, to recognise the same check after a move or rename.
    pub(super) expr: String,
    /// The columns the expression reads, to recognise a reworded check.
    pub(super) reads: BTreeSet<String>,
    pub(super) text: String,
}

#[derive(Debug, Clone)]
pub(super) struct Key {
    pub(super) owner: Owner,
    pub(super) columns: BTreeSet<String>,
    pub(super) text: String,
}

#[derive(Debug, Clone)]
pub(super) struct ForeignKey {
    pub(super) owner: Owner,
    pub(super) columns: BTreeSet<String>,
    pub(super) target: String,
    pub(super) text: String,
}

/// Which kind of constraint a name denotes, as far as the file lets us see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ConstraintKind {
    Check,
    Unique,
    PrimaryKey,
    ForeignKey,
}

impl Schema {
    /// Fold one statement into the model. Statements about tables the file never
    /// created are ignored here (the operation scan reads them).
    pub(super) fn apply(&mut self, stmt: &Statement) {
        match stmt {
            Statement::CreateTable(ct) => {
                let table = table_of(ct);
                self.tables.insert(object_key(&ct.name), table);
            }
            Statement::CreateType { name, representation: UserDefinedTypeRepresentation::Enum { .. } } => {
                self.enums.insert(object_key(name));
            }
            Statement::AlterTable { name, operations, .. } => {
                let mut key = object_key(name);
                for op in operations {
                    match op {
                        // Followed so that what an earlier migration declared stays
                        // known under the names later migrations use (Prisma renames
                        // `"Comment"` to `"comments"` and its columns to snake_case).
                        AlterTableOperation::RenameTable { table_name } => {
                            let new = object_key(table_name);
                            self.rename_table(&key, &new, object_shown(table_name));
                            key = new;
                            continue;
                        }
                        AlterTableOperation::RenameColumn { old_column_name, new_column_name } => {
                            let (from, to) = (ident_key(old_column_name), ident_key(new_column_name));
                            for index in self.unique_indexes.values_mut().filter(|i| i.table == key) {
                                rename_in(&mut index.columns, &from, &to);
                            }
                        }
                        _ => {}
                    }
                    if let Some(table) = self.tables.get_mut(&key) {
                        table.apply(op);
                    }
                }
            }
            Statement::AlterIndex { name, operation: AlterIndexOperation::RenameIndex { index_name } } => {
                let (from, to) = (index_key(name), index_key(index_name));
                if let Some(index) = self.unique_indexes.remove(&from) {
                    self.unique_indexes.insert(to.clone(), index);
                }
                if self.plain_indexes.remove(&from) {
                    self.plain_indexes.insert(to);
                }
            }
            // A partial unique index (`WHERE ...`) keeps values unique only where its
            // predicate holds: it neither is nor replaces a unique key.
            Statement::CreateIndex(ci) if ci.unique && ci.predicate.is_none() => {
                if let Some(name) = &ci.name {
                    self.unique_indexes.insert(
                        index_key(name),
                        UniqueIndex {
                            table: object_key(&ci.table_name),
                            table_shown: object_shown(&ci.table_name),
                            columns: ci.columns.iter().map(|c| column_key(&c.column.expr)).collect(),
                            text: one_line(&stmt.to_string()),
                        },
                    );
                }
            }
            Statement::CreateIndex(ci) => {
                self.plain_indexes.extend(ci.name.as_ref().map(index_key));
            }
            Statement::Drop { object_type: ObjectType::Table, names, .. } => {
                for name in names {
                    let key = object_key(name);
                    self.tables.remove(&key);
                    self.unique_indexes.retain(|_, i| i.table != key);
                }
            }
            Statement::Drop { object_type: ObjectType::Index, names, .. } => {
                for name in names {
                    self.unique_indexes.remove(&index_key(name));
                }
            }
            _ => {}
        }
    }

    /// `ALTER TABLE from RENAME TO to`: the table, and the unique indexes over it, move
    /// to the new name (an index keeps its own name, as in PostgreSQL).
    fn rename_table(&mut self, from: &str, to: &str, shown: String) {
        if let Some(mut table) = self.tables.remove(from) {
            table.display = shown.clone();
            self.tables.insert(to.to_string(), table);
        }
        for index in self.unique_indexes.values_mut().filter(|i| i.table == from) {
            index.table = to.to_string();
            index.table_shown = shown.clone();
        }
    }

    /// Whether a unique key, primary key or unique index (other than the index named
    /// `except`) covers a subset of `columns` of `table`.
    pub(super) fn unique_over(&self, table: &str, columns: &BTreeSet<String>, except: Option<&str>) -> bool {
        let covers = |cols: &BTreeSet<String>| !cols.is_empty() && cols.is_subset(columns);
        let keys =
            self.tables.get(table).is_some_and(|t| t.uniques.iter().chain(&t.primary_keys).any(|k| covers(&k.columns)));
        keys || self
            .unique_indexes
            .iter()
            .any(|(name, i)| Some(name.as_str()) != except && i.table == table && covers(&i.columns))
    }

    pub(super) fn column(&self, table: &str, column: &str) -> Option<&Column> {
        self.tables.get(table)?.columns.get(column)
    }

    /// The constraint a name denotes in this model.
    pub(super) fn constraint(&self, table: &str, name: &str) -> Option<NamedConstraint> {
        let t = self.tables.get(table)?;
        let found = |kind, owner: &Owner, text: &String, cols: &BTreeSet<String>| {
            (owner.name.as_deref() == Some(name)).then(|| NamedConstraint {
                kind,
                text: text.clone(),
                column: owner.column.as_ref().map(|c| t.columns.get(c).map_or(c.clone(), |c| c.shown.clone())),
                columns: cols.iter().chain(&owner.column).cloned().collect(),
            })
        };
        t.checks
            .iter()
            .find_map(|c| found(ConstraintKind::Check, &c.owner, &c.text, &c.reads))
            .or_else(|| t.uniques.iter().find_map(|k| found(ConstraintKind::Unique, &k.owner, &k.text, &k.columns)))
            .or_else(|| {
                t.primary_keys.iter().find_map(|k| found(ConstraintKind::PrimaryKey, &k.owner, &k.text, &k.columns))
            })
            .or_else(|| {
                t.foreign_keys.iter().find_map(|k| found(ConstraintKind::ForeignKey, &k.owner, &k.text, &k.columns))
            })
    }
}

/// A constraint found by name: its kind, its text, and its column when declared on one.
#[derive(Debug)]
pub(super) struct NamedConstraint {
    /// The columns it constrains (for a CHECK, the columns it reads).
    pub(super) columns: BTreeSet<String>,
    pub(super) kind: ConstraintKind,
    pub(super) text: String,
    pub(super) column: Option<String>,
}

pub(super) fn table_of(ct: &CreateTable) -> Table {
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
    pub(super) fn add_column(&mut self, col: &ColumnDef) {
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

    pub(super) fn add_column_option(
        &mut self,
        key: &str,
        shown: &str,
        owner: Owner,
        option: &ColumnOption,
        column: &mut Column,
    ) {
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

    pub(super) fn add_constraint(&mut self, c: &TableConstraint) {
        let text = one_line(&c.to_string());
        match c {
            TableConstraint::Check { name, expr, .. } => {
                self.checks.push(Check { text, ..check(table_owner(name, c), &expr.to_string()) });
            }
            TableConstraint::Unique { name, columns, .. } => self.uniques.push(Key {
                owner: table_owner(name, c),
                columns: columns.iter().map(|c| column_key(&c.column.expr)).collect(),
                text,
            }),
            TableConstraint::PrimaryKey { name, columns, .. } => self.primary_keys.push(Key {
                owner: table_owner(name, c),
                columns: columns.iter().map(|c| column_key(&c.column.expr)).collect(),
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

    pub(super) fn apply(&mut self, op: &AlterTableOperation) {
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
            AlterTableOperation::RenameColumn { old_column_name, new_column_name } => {
                self.rename_column(&ident_key(old_column_name), new_column_name);
            }
            AlterTableOperation::RenameConstraint { old_name, new_name } => {
                let (from, to) = (ident_key(old_name), ident_key(new_name));
                let owners = (self.checks.iter_mut().map(|c| &mut c.owner))
                    .chain(self.uniques.iter_mut().map(|k| &mut k.owner))
                    .chain(self.primary_keys.iter_mut().map(|k| &mut k.owner))
                    .chain(self.foreign_keys.iter_mut().map(|k| &mut k.owner));
                for owner in owners.filter(|o| o.name.as_deref() == Some(from.as_str())) {
                    owner.name = Some(to.clone());
                }
            }
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

    /// `RENAME COLUMN from TO to`: the column and every constraint naming it follow.
    fn rename_column(&mut self, from: &str, to: &Ident) {
        let Some(mut column) = self.columns.remove(from) else {
            return;
        };
        let key = ident_key(to);
        column.shown = to.value.clone();
        self.columns.insert(key.clone(), column);
        for check in &mut self.checks {
            rename_in(&mut check.reads, from, &key);
        }
        for k in self.uniques.iter_mut().chain(&mut self.primary_keys) {
            rename_in(&mut k.columns, from, &key);
        }
        for k in &mut self.foreign_keys {
            rename_in(&mut k.columns, from, &key);
        }
        let owners = (self.checks.iter_mut().map(|c| &mut c.owner))
            .chain(self.uniques.iter_mut().map(|k| &mut k.owner))
            .chain(self.primary_keys.iter_mut().map(|k| &mut k.owner))
            .chain(self.foreign_keys.iter_mut().map(|k| &mut k.owner));
        for owner in owners.filter(|o| o.column.as_deref() == Some(from)) {
            owner.column = Some(key.clone());
        }
    }

    /// Whether `column` cannot be NULL here, explicitly or as part of the primary key.
    pub(super) fn not_null(&self, column: &str) -> bool {
        self.columns.get(column).is_some_and(|c| c.not_null)
            || self.primary_keys.iter().any(|k| k.columns.contains(column))
    }
}

pub(super) fn check(owner: Owner, expr: &str) -> Check {
    let text = match &owner {
        Owner { column: Some(_), name: Some(n), .. } => format!("CONSTRAINT {n} CHECK ({expr})"),
        _ => format!("CHECK ({expr})"),
    };
    Check { owner, expr: norm(expr), reads: columns_read(expr), text: one_line(&text) }
}

pub(super) fn table_owner(name: &Option<Ident>, c: &TableConstraint) -> Owner {
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

/// Most operators a statement may chain into one expression. sqlparser reads
/// `a + b + c ...` into a tree one level per operator without recursing, but drops,
/// prints and compares that tree by recursion: 100,000 terms overflow a hook thread's
/// 2 MiB stack. The longest chains migrations write (a `CHECK` over a few columns, an
/// `IN` list, a generated column) hold tens; a deeper statement is refused and the
/// file left out with a note, as sqlparser's own recursion limit does with brackets.
pub(super) const MAX_OPERATOR_DEPTH: usize = 1_000;

/// How deep the operators of one statement's tokens may nest an expression: the
/// operators chained since the last `,` or `(`, plus those of each enclosing bracket
/// at the point it opened (a bracket's inside hangs below the operator before it).
pub(super) fn operator_depth(tokens: &[sqlparser::tokenizer::TokenWithSpan]) -> usize {
    let (mut open, mut run, mut deepest) = (Vec::new(), 0usize, 0usize);
    let mut above = 0usize;
    for t in tokens {
        match &t.token {
            Token::LParen | Token::LBracket => {
                open.push(run);
                above += run;
                run = 0;
            }
            Token::RParen | Token::RBracket => {
                run = open.pop().unwrap_or(0);
                above -= run.min(above);
            }
            Token::Comma | Token::SemiColon => run = 0,
            token if is_operator(token) => {
                run += 1;
                deepest = deepest.max(above + run);
            }
            _ => {}
        }
    }
    deepest
}

/// Whether a token joins two operands (or follows one: `IS NULL`, `::int`), so that a
/// run of them makes one expression deeper per token. Literals, names, brackets and
/// separators do not; every other symbol does, whatever the dialect makes of it.
fn is_operator(token: &Token) -> bool {
    use Token as T;
    match token {
        T::Word(w) => {
            w.quote_style.is_none()
                && matches!(
                    w.keyword,
                    Keyword::AND
                        | Keyword::OR
                        | Keyword::XOR
                        | Keyword::IS
                        | Keyword::LIKE
                        | Keyword::ILIKE
                        | Keyword::SIMILAR
                        | Keyword::IN
                        | Keyword::BETWEEN
                        | Keyword::COLLATE
                        | Keyword::AT
                        | Keyword::REGEXP
                        | Keyword::RLIKE
                        | Keyword::OVERLAPS
                        | Keyword::DIV
                )
        }
        T::EOF
        | T::Number(..)
        | T::Char(_)
        | T::SingleQuotedString(_)
        | T::DoubleQuotedString(_)
        | T::TripleSingleQuotedString(_)
        | T::TripleDoubleQuotedString(_)
        | T::DollarQuotedString(_)
        | T::SingleQuotedByteStringLiteral(_)
        | T::DoubleQuotedByteStringLiteral(_)
        | T::TripleSingleQuotedByteStringLiteral(_)
        | T::TripleDoubleQuotedByteStringLiteral(_)
        | T::SingleQuotedRawStringLiteral(_)
        | T::DoubleQuotedRawStringLiteral(_)
        | T::TripleSingleQuotedRawStringLiteral(_)
        | T::TripleDoubleQuotedRawStringLiteral(_)
        | T::NationalStringLiteral(_)
        | T::EscapedStringLiteral(_)
        | T::UnicodeStringLiteral(_)
        | T::HexStringLiteral(_)
        | T::Whitespace(_)
        | T::Comma
        | T::LParen
        | T::RParen
        | T::Period
        | T::Colon
        | T::SemiColon
        | T::Backslash
        | T::LBracket
        | T::RBracket
        | T::LBrace
        | T::RBrace
        | T::Placeholder(_) => false,
        _ => true,
    }
}

/// The identifiers an expression reads (words that are neither keywords nor function
/// names), lowercased.
pub(super) fn columns_read(expr: &str) -> BTreeSet<String> {
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

/// An index's key: the last part of its name (`public.users_email_idx` is `users_email_idx`).
pub(super) fn index_key(name: &ObjectName) -> String {
    match name.0.last() {
        Some(ObjectNamePart::Identifier(i)) => ident_key(i),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// Unquoted identifiers are case-insensitive in SQL; quoted ones keep their case.
pub(super) fn ident_key(ident: &Ident) -> String {
    if ident.quote_style.is_some() { ident.value.clone() } else { ident.value.to_ascii_lowercase() }
}

/// An object's key: its name without the schema it is qualified by (migrations write
/// `auth.users`, `{{ .Namespace }}.users` and `users` for one table), case-folded
/// unless quoted.
pub(super) fn object_key(name: &ObjectName) -> String {
    name.0
        .last()
        .into_iter()
        .map(|part| match part {
            ObjectNamePart::Identifier(i) => ident_key(i),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// A table name for a symbol: its parts as written, without quotes.
pub(super) fn object_shown(name: &ObjectName) -> String {
    name.0
        .iter()
        .map(|part| match part {
            ObjectNamePart::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

pub(super) fn ident_line(ident: &Ident) -> u32 {
    u32::try_from(ident.span.start.line).unwrap_or(u32::MAX)
}

pub(super) fn object_line(name: &ObjectName) -> u32 {
    name.0
        .iter()
        .rev()
        .find_map(|part| match part {
            ObjectNamePart::Identifier(i) => Some(ident_line(i)),
            _ => None,
        })
        .unwrap_or(1)
}

/// A column named in an index or a table constraint, keyed as a column definition is
/// ([`ident_key`]: `"pollId"` and `pollid` are two columns, `"id"` and `id` one);
/// an expression (`lower(email)`) by its comparison form.
pub(super) fn column_key(expr: &Expr) -> String {
    match expr {
        Expr::Identifier(ident) => ident_key(ident),
        other => norm(&other.to_string()),
    }
}

fn rename_in(columns: &mut BTreeSet<String>, from: &str, to: &str) {
    if columns.remove(from) {
        columns.insert(to.to_string());
    }
}

/// Comparison form of SQL text: lowercase, single spaces.
pub(super) fn norm(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_lowercase()
}

pub(super) fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(MAX_RENDER) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod operator_tests {
    use super::*;

    fn depth(sql: &str) -> usize {
        let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location().unwrap();
        operator_depth(&tokens)
    }

    /// A chain counts one level per operator; a comma ends it; a bracket's inside hangs
    /// below the chain it opened in.
    #[test]
    fn operator_depth_follows_the_tree_sqlparser_builds() {
        assert_eq!(depth("SELECT a + b + c"), 2);
        assert_eq!(depth("SELECT f(a + b, c + d)"), 1);
        assert_eq!(depth("SELECT (a + (b + c)) + d"), 2);
        assert_eq!(depth("SELECT a + (b + (c + d))"), 3);
        assert_eq!(depth("INSERT INTO t VALUES (-1, -2, 'a' || 'b'), (-3, x IS NULL)"), 1);
        assert_eq!(depth("SELECT 'a + b + c', \"x+y\" -- + + +"), 0);
        let long = format!("SELECT {}", vec!["1"; MAX_OPERATOR_DEPTH + 2].join(" + "));
        assert_eq!(depth(&long), MAX_OPERATOR_DEPTH + 1);
    }
}
