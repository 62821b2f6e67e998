//! Dropped constraints judged by what replaces them: the constraints and unique indexes
//! a migration adds (so that a constraint dropped and added back in the same file is
//! judged on the two definitions, not reported as dropped), the kind a constraint or
//! index name says when no definition of it is in sight (PostgreSQL's implicit names
//! such as `<table>_<column>_key` and `<table>_pkey`, Prisma's `<Model>_<field>_key`,
//! Laravel's `<table>_<column>_unique`), and the rule for a constraint whose kind
//! nothing tells (`sql-constraint-dropped`).
//!
//! The SQL detector (`sql.rs`) asks here for each `DROP CONSTRAINT`, `DROP INDEX`,
//! MySQL `DROP INDEX`/`DROP KEY` and `DROP PRIMARY KEY` of a migration. Nothing here
//! walks a tree: statements are read in order, one level deep.

use std::collections::{BTreeMap, BTreeSet};

use sqlparser::ast::{
    AlterColumnOperation, AlterTableOperation, ColumnOption, Ident, ObjectName, ObjectNamePart, Statement,
};

use super::sql::{Lookup, finding};
use super::sql_model::{
    ConstraintKind, NamedConstraint, Owner, Schema, Table, column_key, ident_key, ident_line, index_key, object_key,
    one_line,
};
use super::{RawFinding, RuleId};

/// One constraint's definition, as far as the file shows it.
#[derive(Debug, Clone)]
pub(super) struct Def {
    pub(super) kind: ConstraintKind,
    /// Its name (an index's name for a unique index), case-folded unless quoted.
    pub(super) name: Option<String>,
    /// The columns it constrains (for a CHECK, the columns it reads).
    pub(super) columns: BTreeSet<String>,
    /// A foreign key's referenced table.
    pub(super) target: Option<String>,
    /// A CHECK's normalised expression.
    pub(super) expr: Option<String>,
    /// The definition, one line.
    pub(super) text: String,
    /// Where the file adds it: the statement's and the operation's index.
    at: (usize, usize),
}

/// What a file does about a constraint it drops, given what it adds.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Nothing at least as strict is added back: the drop stands.
    Dropped,
    /// Added back (under its name, or another) at least as strict: not a finding.
    Kept,
    /// Added back under its name with a weaker definition (this text).
    Weaker(String),
}

/// The constraints and unique indexes one version of a migration adds, by table key.
#[derive(Debug, Default)]
pub(super) struct Added {
    by_table: BTreeMap<String, Vec<Def>>,
    /// Tables the file drops (`DROP TABLE`): their constraints go with them.
    dropped_tables: BTreeSet<String>,
}

impl Added {
    /// What the statements of a migration add.
    pub(super) fn of(stmts: &[Statement]) -> Added {
        let mut added = Added::default();
        for (n, stmt) in stmts.iter().enumerate() {
            match stmt {
                Statement::AlterTable { name, operations, .. } => {
                    let defs = added.by_table.entry(object_key(name)).or_default();
                    let adds = operations.iter().enumerate().filter_map(|(m, op)| match op {
                        AlterTableOperation::AddConstraint { constraint, .. } => Some((m, constraint)),
                        _ => None,
                    });
                    for (m, constraint) in adds {
                        let mut scratch = scratch_table();
                        scratch.add_constraint(constraint);
                        defs.extend(defs_of(&scratch).into_iter().map(|d| Def { at: (n, m), ..d }));
                    }
                }
                // A partial unique index keeps values unique only where its predicate
                // holds: it replaces no unique key.
                Statement::CreateIndex(ci) if ci.unique && ci.predicate.is_none() => {
                    added.by_table.entry(object_key(&ci.table_name)).or_default().push(Def {
                        kind: ConstraintKind::Unique,
                        name: ci.name.as_ref().map(index_key),
                        columns: ci.columns.iter().map(|c| column_key(&c.column.expr)).collect(),
                        target: None,
                        expr: None,
                        text: one_line(&stmt.to_string()),
                        at: (n, 0),
                    });
                }
                Statement::Drop { object_type: sqlparser::ast::ObjectType::Table, names, .. } => {
                    added.dropped_tables.extend(names.iter().map(object_key));
                }
                _ => {}
            }
        }
        added
    }

    /// Whether the file adds a primary key to `table`.
    pub(super) fn adds_primary_key(&self, table: &str) -> bool {
        self.by_table.get(table).is_some_and(|v| v.iter().any(|d| d.kind == ConstraintKind::PrimaryKey))
    }

    /// Whether the file drops the table itself.
    pub(super) fn drops_table(&self, table: &str) -> bool {
        self.dropped_tables.contains(table)
    }

    /// What the file does about the constraint `name` of `table` it drops at `at`
    /// (statement and operation index), whose old definition is `old` when known.
    /// Unknown, it is kept only when added back under its own name (nothing else can be
    /// shown to replace it). Only what comes after the drop adds back a constraint of
    /// the same name (one added before it is what the drop removes); an equivalent under
    /// another name counts wherever the file adds it.
    pub(super) fn verdict(
        &self,
        table: Option<&str>,
        name: Option<&str>,
        at: (usize, usize),
        old: Option<&Def>,
    ) -> Verdict {
        let mut candidates: Vec<&Def> = match table {
            Some(t) => self.by_table.get(t).map(|v| v.iter().collect()).unwrap_or_default(),
            // `DROP INDEX name` does not say its table: an index added back under the
            // same name, on any table, is the only candidate.
            None => self.by_table.values().flatten().filter(|d| d.name.as_deref() == name).collect(),
        };
        candidates.retain(|d| d.name.as_deref() != name || name.is_none() || d.at > at);
        candidates.sort_by_key(|d| d.at);
        let same_name = candidates.iter().find(|d| name.is_some() && d.name.as_deref() == name);
        match old {
            Some(o) if candidates.iter().any(|d| holds(o, d)) => Verdict::Kept,
            Some(_) => same_name.map_or(Verdict::Dropped, |d| Verdict::Weaker(d.text.clone())),
            None if same_name.is_some() => Verdict::Kept,
            None => Verdict::Dropped,
        }
    }
}

/// Whether `new` keeps at least what `old` guaranteed (the comparison a `CREATE TABLE`
/// edit makes in `sql::compare_schemas`, applied to a constraint added back): a foreign key over the same
/// columns to the same table (what happens on delete or update is not a loosening of
/// the reference), a unique or primary key over a subset of the old key's columns, a
/// check with the same expression or over the same columns (a reworded check is not
/// judged, as in a `CREATE TABLE` edit).
fn holds(old: &Def, new: &Def) -> bool {
    use ConstraintKind::*;
    match (old.kind, new.kind) {
        (ForeignKey, ForeignKey) => new.columns == old.columns && new.target == old.target,
        (Unique | PrimaryKey, Unique | PrimaryKey) => !new.columns.is_empty() && new.columns.is_subset(&old.columns),
        (Check, Check) => new.expr == old.expr || (!old.columns.is_empty() && new.columns == old.columns),
        _ => false,
    }
}

fn scratch_table() -> Table {
    Table {
        display: String::new(),
        line: 1,
        columns: BTreeMap::new(),
        checks: Vec::new(),
        uniques: Vec::new(),
        primary_keys: Vec::new(),
        foreign_keys: Vec::new(),
    }
}

/// Every constraint of a table, as definitions.
fn defs_of(t: &Table) -> Vec<Def> {
    let def = |kind, owner: &Owner, columns: &BTreeSet<String>, target: Option<&String>, expr, text: &str| Def {
        kind,
        name: owner.name.clone(),
        columns: columns.iter().chain(&owner.column).cloned().collect(),
        target: target.cloned(),
        expr,
        text: text.to_string(),
        at: (0, 0),
    };
    let mut out = Vec::new();
    for c in &t.checks {
        out.push(def(ConstraintKind::Check, &c.owner, &c.reads, None, Some(c.expr.clone()), &c.text));
    }
    for k in &t.uniques {
        out.push(def(ConstraintKind::Unique, &k.owner, &k.columns, None, None, &k.text));
    }
    for k in &t.primary_keys {
        out.push(def(ConstraintKind::PrimaryKey, &k.owner, &k.columns, None, None, &k.text));
    }
    for k in &t.foreign_keys {
        out.push(def(ConstraintKind::ForeignKey, &k.owner, &k.columns, Some(&k.target), None, &k.text));
    }
    out
}

/// The definition of the constraint `name` of `table` in the first schema that has it:
/// by its declared name, else an unnamed constraint whose PostgreSQL implicit name is
/// `name` (`users_email_key` for `email TEXT UNIQUE`, `users_pkey`, `posts_author_id_fkey`,
/// `items_qty_check`).
pub(super) fn old_constraint(schemas: [&Schema; 2], table: &str, name: &str) -> Option<Def> {
    let tables = || schemas.into_iter().filter_map(|s| s.tables.get(table));
    tables().find_map(|t| defs_of(t).into_iter().find(|d| d.name.as_deref() == Some(name))).or_else(|| {
        tables().find_map(|t| defs_of(t).into_iter().find(|d| d.name.is_none() && implicit_name(table, d) == name))
    })
}

/// The name PostgreSQL gives an unnamed constraint: the table, the columns (for a
/// CHECK, the column it reads), and the kind's suffix. Columns are joined in byte
/// order, which is the declared order for the one-column keys that are most of them.
fn implicit_name(table: &str, d: &Def) -> String {
    let columns = d.columns.iter().map(String::as_str).collect::<Vec<_>>().join("_");
    match d.kind {
        ConstraintKind::PrimaryKey => format!("{table}_pkey"),
        ConstraintKind::Unique => format!("{table}_{columns}_key"),
        ConstraintKind::ForeignKey => format!("{table}_{columns}_fkey"),
        ConstraintKind::Check => format!("{table}_{columns}_check"),
    }
}

/// The primary key of `table` in the first schema that has one.
pub(super) fn old_primary_key(schemas: [&Schema; 2], table: &str) -> Option<Def> {
    schemas
        .into_iter()
        .filter_map(|s| s.tables.get(table))
        .find_map(|t| defs_of(t).into_iter().find(|d| d.kind == ConstraintKind::PrimaryKey))
}

/// The unique index `name` as a definition, from the first schema that has it.
pub(super) fn old_unique_index(schemas: [&Schema; 2], name: &str) -> Option<(Def, String)> {
    schemas.into_iter().find_map(|s| {
        let i = s.unique_indexes.get(name)?;
        let def = Def {
            kind: ConstraintKind::Unique,
            name: Some(name.to_string()),
            columns: i.columns.clone(),
            target: None,
            expr: None,
            text: i.text.clone(),
            at: (0, 0),
        };
        Some((def, i.table.clone()))
    })
}

/// Whether an index name says the index is unique, by the names tools give unique
/// indexes: PostgreSQL's and Prisma's `_key` (the index behind `<table>_<column>_key`),
/// Laravel's `_unique`, and the common hand-written `uq_`/`uk_`/`ux_`/`unique_` prefixes
/// and `_uniq`/`_uk`/`_ux`/`_unique_idx` suffixes. A name that says nothing (`_idx`,
/// `ix_`) is an ordinary index, never guessed unique.
pub(super) fn unique_by_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    let suffixes = ["_key", "_unique", "_uniq", "_uk", "_ux", "_unique_idx", "_uniq_idx", "_unique_index"];
    let prefixes = ["uq_", "uk_", "ux_", "unique_", "uniq_", "uix_"];
    // `_pkey` ends in `_key` too, but a primary key's index is never dropped alone.
    !n.ends_with("_pkey") && (suffixes.iter().any(|s| n.ends_with(s)) || prefixes.iter().any(|p| n.starts_with(p)))
}

/// `DROP CONSTRAINT name` of a constraint nothing tells the kind of (no definition in
/// the file or an earlier migration, a name without a kind's suffix or prefix): every
/// constraint restricts rows, so dropping one loosens the table whatever it was. Not
/// when the migration drops the table too.
pub(super) fn unknown_constraint_dropped(
    shown: &str,
    table: &str,
    name: &Ident,
    op: &AlterTableOperation,
    added: &Added,
) -> Option<RawFinding> {
    if added.drops_table(table) || !matches!(op, AlterTableOperation::DropConstraint { .. }) {
        return None;
    }
    let symbol = format!("{shown}.{}", name.value);
    Some(finding(
        RuleId::SqlConstraintDropped,
        &symbol,
        ident_line(name),
        &format!("CONSTRAINT {name}"),
        &format!("DROP CONSTRAINT {name}"),
    ))
}

/// The suffixes PostgreSQL and Prisma give a constraint or index named after its table
/// and one column (`polls_slug_key`, `users_team_id_fkey`), and Laravel's `_unique`.
const COLUMN_NAMED_SUFFIXES: &[&str] = &["_key", "_fkey", "_unique", "_check", "_idx"];

/// Whether `key`, a constraint or index name with no definition in view, is the name
/// the database (or Prisma) gives one over a column this migration drops
/// (`<table>_<column>_key`, case-folded): the constraint goes with its column, which
/// is what the migration removes (labelled corpus: unique indexes and foreign keys
/// dropped just before their columns).
pub(super) fn named_for_dropped_column(key: &str, dropped: &BTreeSet<(String, String)>) -> bool {
    let key = key.to_ascii_lowercase();
    dropped.iter().any(|(table, column)| {
        let stem = format!("{}_{}", table.to_ascii_lowercase(), column.to_ascii_lowercase());
        key.strip_prefix(&stem).is_some_and(|rest| COLUMN_NAMED_SUFFIXES.contains(&rest))
    })
}

/// `DROP INDEX name` (PostgreSQL, SQLite, Prisma's migrations) of an index no earlier
/// statement shows, reported as a unique index dropped when its name says it is one
/// (`User_email_key`, `users_email_unique`, `uq_users_email`) and no plain index of
/// that name is known, unless the migration creates a unique index of the same name
/// again.
pub(super) fn guessed_unique_index(
    name: &ObjectName,
    view: &Lookup<'_>,
    added: &Added,
    at: (usize, usize),
) -> Option<RawFinding> {
    let key = index_key(name);
    let plain = view.first.plain_indexes.contains(&key) || view.second.plain_indexes.contains(&key);
    if plain
        || !unique_by_name(&key)
        || named_for_dropped_column(&key, view.dropped)
        || added.verdict(None, Some(&key), at, None) == Verdict::Kept
    {
        return None;
    }
    let shown = name.0.last().map_or(String::new(), |p| p.to_string());
    let symbol = shown.trim_matches(|c| c == '"' || c == '`').to_string();
    let line = name.0.last().and_then(|p| match p {
        ObjectNamePart::Identifier(i) => Some(ident_line(i)),
        _ => None,
    });
    Some(finding(
        RuleId::SqlUniqueIndexDropped,
        &symbol,
        line.unwrap_or(1),
        &format!("UNIQUE INDEX {shown}"),
        &format!("DROP INDEX {name}"),
    ))
}

/// MySQL's `ALTER TABLE t DROP INDEX name` (or `DROP KEY name`): a unique key of the
/// table by that name (`UNIQUE KEY name (...)`), a unique index created by name, or
/// an index whose name says it is unique; a plain index is no finding.
pub(super) fn dropped_mysql_index(
    shown: &str,
    table: &str,
    name: &Ident,
    view: &Lookup<'_>,
    (added, at): (&Added, (usize, usize)),
) -> Option<RawFinding> {
    let key = ident_key(name);
    let symbol = format!("{shown}.{}", name.value);
    let after = format!("DROP INDEX {name}");
    if let Some(known) = view.constraint(table, &key).filter(|k| k.kind == ConstraintKind::Unique) {
        let old = old_constraint([view.first, view.second], table, &key);
        if added.verdict(Some(table), Some(&key), at, old.as_ref()) == Verdict::Kept {
            return None;
        }
        let symbol = format!("{shown}.{}", known.column.as_deref().unwrap_or(&name.value));
        return Some(finding(RuleId::SqlUniqueDropped, &symbol, ident_line(name), &known.text, &after));
    }
    let index = (view.first.unique_indexes.get(&key).or_else(|| view.second.unique_indexes.get(&key)))
        .filter(|i| i.table == table);
    let plain = view.first.plain_indexes.contains(&key) || view.second.plain_indexes.contains(&key);
    let before = match index {
        Some(i) => i.text.clone(),
        None if !plain && unique_by_name(&key) => format!("UNIQUE INDEX {name}"),
        None => return None,
    };
    let old = old_unique_index([view.first, view.second], &key).map(|(d, _)| d);
    if added.verdict(Some(table), Some(&key), at, old.as_ref()) == Verdict::Kept {
        return None;
    }
    if let Some(i) = index
        && view.unique_over(table, &i.columns, Some(&key))
    {
        return None;
    }
    Some(finding(RuleId::SqlUniqueIndexDropped, &symbol, ident_line(name), &before, &after))
}

/// MySQL's `ALTER TABLE t DROP PRIMARY KEY`, unless the migration adds a primary or
/// unique key over a subset of the old key's columns (or, the old key unknown, any
/// primary key: the usual way to change one).
pub(super) fn dropped_primary_key(
    shown: &str,
    table: &str,
    line: u32,
    view: &Lookup<'_>,
    (added, at): (&Added, (usize, usize)),
) -> Option<RawFinding> {
    let old = old_primary_key([view.first, view.second], table);
    match &old {
        Some(o) if added.verdict(Some(table), None, at, Some(o)) == Verdict::Kept => return None,
        None if added.adds_primary_key(table) => return None,
        _ => {}
    }
    if added.drops_table(table) {
        return None;
    }
    let before = old.map_or_else(|| "PRIMARY KEY".to_string(), |o| o.text);
    Some(finding(RuleId::SqlPrimaryKeyDropped, shown, line, &before, "DROP PRIMARY KEY"))
}

/// PostgreSQL's default constraint names end in `_check`, `_key`, `_pkey`, `_fkey`;
/// the common hand-written prefixes (`chk_`, `uq_`, `pk_`, `fk_`) say the same.
pub(super) fn kind_by_name(name: &str) -> Option<ConstraintKind> {
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

/// `DROP INDEX name` of a unique index the file or an earlier migration created, or of
/// one whose name says it is unique (`unique_by_name`) where no index of
/// that name is known; not when the migration creates an index or key at least as
/// strict ([`Added`]).
pub(super) fn dropped_unique_index(
    name: &ObjectName,
    view: &Lookup<'_>,
    (added, at): (&Added, (usize, usize)),
) -> Option<RawFinding> {
    let key = index_key(name);
    let Some(index) = view.first.unique_indexes.get(&key).or_else(|| view.second.unique_indexes.get(&key)) else {
        return guessed_unique_index(name, view, added, at);
    };
    if let Some((old, table)) = old_unique_index([view.first, view.second], &key)
        && added.verdict(Some(&table), Some(&key), at, Some(&old)) == Verdict::Kept
    {
        return None;
    }
    if view.unique_over(&index.table, &index.columns, Some(&key)) {
        return None;
    }
    // An index over columns the migration drops goes with them (PostgreSQL drops it
    // anyway; Prisma writes the `DROP INDEX` first): the values are gone, not freed.
    if !index.columns.is_empty()
        && index.columns.iter().all(|c| view.dropped.contains(&(index.table.clone(), c.clone())))
    {
        return None;
    }
    // The index's name as the database knows it: `"User_email_key"` (Prisma quotes every
    // name) is the index `User_email_key`, as the unknown-index path names it too.
    let last = name.0.last().map_or(String::new(), |p| match p {
        ObjectNamePart::Identifier(i) => i.value.clone(),
        _ => p.to_string(),
    });
    let symbol = format!("{}.{last}", index.table_shown);
    let line = name.0.last().and_then(|p| match p {
        ObjectNamePart::Identifier(i) => Some(ident_line(i)),
        _ => None,
    });
    Some(finding(RuleId::SqlUniqueIndexDropped, &symbol, line.unwrap_or(1), &index.text, &format!("DROP INDEX {name}")))
}

/// The constraint an implicit PostgreSQL name denotes (`site_name_key` for `name
/// VARCHAR(20) UNIQUE` in `CREATE TABLE site`), as [`Lookup::constraint`] gives a named
/// one: its column is the one it was declared on, shown as the table writes it.
pub(super) fn by_implicit_name(view: &Lookup<'_>, table: &str, old: Option<&Def>) -> Option<NamedConstraint> {
    let d = old.filter(|d| d.name.is_none())?;
    let column = match d.columns.iter().collect::<Vec<_>>().as_slice() {
        [only] => Some(view.column_shown(table, only).unwrap_or_else(|| (*only).clone())),
        _ => None,
    };
    Some(NamedConstraint { columns: d.columns.clone(), kind: d.kind, text: d.text.clone(), column })
}

/// The columns a version's `ALTER TABLE ... ADD COLUMN` operations declare, by
/// `(table, column)`, with whether each was declared `NOT NULL` (or primary key) and
/// its definition: an unreleased migration edited in place restates them.
pub(super) fn added_columns(stmts: &[Statement]) -> BTreeMap<(String, String), (bool, String)> {
    let mut out = BTreeMap::new();
    for stmt in stmts {
        let Statement::AlterTable { name, operations, .. } = stmt else { continue };
        for op in operations {
            if let AlterTableOperation::AddColumn { column_def, .. } = op {
                let not_null = column_def
                    .options
                    .iter()
                    .any(|o| matches!(o.option, ColumnOption::NotNull | ColumnOption::Unique { is_primary: true, .. }));
                let key = (object_key(name), ident_key(&column_def.name));
                out.entry(key).or_insert((not_null, one_line(&column_def.to_string())));
            }
        }
    }
    out
}

/// An `ADD COLUMN` the file's old version declared `NOT NULL`, restated without it
/// (the migration edited before release): the column the migration builds now admits
/// NULL (LemmyNet/lemmy `9a84180b`). A column the old version did not add is no edit.
pub(super) fn add_column_edited_nullable(
    shown: &str,
    table: &str,
    op: &AlterTableOperation,
    old_added: &BTreeMap<(String, String), (bool, String)>,
    set_not_null: &BTreeSet<(String, String)>,
) -> Option<RawFinding> {
    let AlterTableOperation::AddColumn { column_def, .. } = op else { return None };
    let key = (table.to_string(), ident_key(&column_def.name));
    // Added nullable, filled, then set NOT NULL further down: the same end state.
    if set_not_null.contains(&key) {
        return None;
    }
    let (was_not_null, before) = old_added.get(&key)?;
    let now_not_null = column_def
        .options
        .iter()
        .any(|o| matches!(o.option, ColumnOption::NotNull | ColumnOption::Unique { is_primary: true, .. }));
    (*was_not_null && !now_not_null).then(|| {
        finding(
            RuleId::SqlNotNullDropped,
            &format!("{shown}.{}", column_def.name.value),
            ident_line(&column_def.name),
            before,
            &one_line(&format!("ADD COLUMN {column_def}")),
        )
    })
}

/// The `(table, column)` pairs a version sets `NOT NULL` on (`ALTER COLUMN ... SET NOT
/// NULL`), anywhere in the file.
pub(super) fn set_not_null(stmts: &[Statement]) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for stmt in stmts {
        let Statement::AlterTable { name, operations, .. } = stmt else { continue };
        for op in operations {
            if let AlterTableOperation::AlterColumn { column_name, op: AlterColumnOperation::SetNotNull } = op {
                out.insert((object_key(name), ident_key(column_name)));
            }
        }
    }
    out
}
