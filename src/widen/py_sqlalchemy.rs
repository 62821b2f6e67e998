//! SQLAlchemy models and alembic migrations: the constraints a mapped column declares
//! (`Column(String(64), nullable=False, unique=True)`, `mapped_column(...)` under a
//! `Mapped[...]` annotation), a table's `__table_args__` (`UniqueConstraint`,
//! `CheckConstraint`, a unique `Index`), and the operations of an alembic revision's
//! `upgrade()` (`op.alter_column`, `op.drop_constraint`, `op.drop_index`), compared
//! between the two versions of a file.
//!
//! A pass of its own beside the Python detector, run only where both versions mention
//! `Column(` or `mapped_column(`, or where a file under `alembic/` or `versions/`
//! mentions an `op.` call this pass judges (also an added one: a new revision is judged
//! on its `upgrade()` alone; `downgrade()` is never read). Symbols: `Class.attribute`
//! for a column, `Class` for a table constraint, `table.column` and `table` for alembic
//! operations (their tables are named as the database names them).
//!
//! A nullability that comes from the annotation alone (`Mapped[str]` to
//! `Mapped[Optional[str]]`, no `nullable=` on either side) is the Python detector's
//! finding (`py-optional-widened`), not this pass's.
//!
//! Not findings: a column, table or revision removed, a length given by a constant
//! changed, a constraint rewritten under the same name, an `alter_column` whose old
//! type is not stated (`existing_type=`), narrowing and formatting.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::py_decl::{self, Call, call, calls_within, is_false, is_true, number, string};
use super::syntax::{compact, field, kind_of, line, named_children, one_line, text};
use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity};

const PY: &[Language] = &[Language::Python];

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: RuleId::PySqlalchemyNullableAllowed,
        languages: PY,
        family: Family::Optionality,
        description: "A SQLAlchemy column accepts NULL where it refused it: `nullable=True` added or `nullable=False` removed from a `Column(...)`/`mapped_column(...)` (a `Column` is nullable unless it says otherwise or is a primary key), or an alembic revision's `upgrade()` calls `op.alter_column(..., nullable=True)`.",
        severity: Severity::High,
        message: "{symbol} may now be NULL: `{before}` became `{after}`",
        invariant: "Every stored row had a value in this column, so code reading it never handled None.",
    },
    RuleDef {
        id: RuleId::PySqlalchemyLengthWidened,
        languages: PY,
        family: Family::NumericRange,
        description: "A SQLAlchemy string column's length grows or goes: `String(n)`/`Unicode(n)`/`VARCHAR(n)` enlarged, or replaced by a type without a length (`Text`, `String`); in an alembic `op.alter_column`, `type_=` longer than `existing_type=`.",
        severity: Severity::Medium,
        message: "{symbol} holds longer values now: `{before}` became `{after}`",
        invariant: "Stored strings fitted the declared length, which forms, other layers and consumers may rely on.",
    },
    RuleDef {
        id: RuleId::PySqlalchemyConstraintRemoved,
        languages: PY,
        family: Family::CheckRemoved,
        description: "A SQLAlchemy constraint is removed: `unique=True` taken from a column, a `UniqueConstraint`, `CheckConstraint` or unique `Index` taken from `__table_args__`, or an alembic revision's `upgrade()` calls `op.drop_constraint(...)` or `op.drop_index(...)` of an index its name or a `unique=True` of the same file says is unique.",
        severity: Severity::High,
        message: "{symbol}: the constraint `{before}` was removed or loosened to `{after}`",
        invariant: "The database refused rows that broke the constraint, so code could rely on it holding for every stored row.",
    },
    RuleDef {
        id: RuleId::PySqlalchemyNumberWidened,
        languages: PY,
        family: Family::NumericRange,
        description: "A SQLAlchemy integer column admits more numbers: `SmallInteger` made `Integer`, `Integer` (or a `Mapped[int]` with no type) made `BigInteger`, an integer made `Numeric`/`Float` (fractions); in an alembic `op.alter_column`, `type_=` wider than `existing_type=`.",
        severity: Severity::Medium,
        message: "{symbol} accepts numbers outside its old type: `{before}` became `{after}`",
        invariant: "Stored numbers fitted the column's integer type, which other layers (a 32-bit field, a JSON number) may rely on.",
    },
];

/// Longest `before`/`after` rendering of a declaration.
const MAX_RENDER: usize = 160;

/// The types whose first argument (or `length=`) is a length.
const STRING_TYPES: &[&str] = &["String", "Unicode", "VARCHAR", "NVARCHAR", "CHAR", "NCHAR", "LargeBinary", "Binary"];

/// The alembic operations this pass judges.
const OPS: &[&str] = &["op.alter_column", "op.drop_constraint", "op.drop_index"];

/// Whether a path is where alembic revisions live.
fn revision_path(path: &str) -> bool {
    path.contains("alembic/") || path.contains("versions/")
}

/// Whether both versions may hold a mapped column, or the file is an alembic revision
/// with an operation this pass judges (the pass's prefilter).
pub(crate) fn may_hold(path: &str, before: &str, after: &str) -> bool {
    py_decl::both_mention(before, after, &["Column(", "mapped_column("])
        || (revision_path(path) && added_may_fire(after))
}

/// Whether an added file may yield a finding: an alembic revision's operation.
pub(crate) fn added_may_fire(after: &str) -> bool {
    py_decl::both_mention(after, after, OPS) && py_decl::both_mention(after, after, &["def upgrade"])
}

/// The SQLAlchemy and alembic findings of a Python file. A version that does not parse
/// gives none (the Python detector reports the error).
pub(crate) fn detect(path: &str, before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    if !may_hold(path, before, after) {
        return Ok(Vec::new());
    }
    let revision = revision_path(path);
    let read = |root: Node, src: &str| Inventory::build(root, src, revision);
    let Some((old, new)) = super::syntax::both_versions(&py_decl::grammar(), before, after, read) else {
        return Ok(Vec::new());
    };
    Ok(compare(&old, &new))
}

#[derive(Debug, Default)]
struct Column {
    line: u32,
    shown: String,
    /// Nullable as the database sees it.
    nullable: bool,
    /// `nullable=` is written.
    explicit: bool,
    /// A string type's length (`NaN`: a constant); `None`: no string type with a length.
    length: Option<f64>,
    /// A string type is declared at all.
    typed: bool,
    unique: bool,
    /// `primary_key=True`.
    primary: bool,
    /// The integer type's rank ([`number_rank`]), from the type argument or, with none,
    /// a `Mapped[int]` annotation (SQLAlchemy maps `int` to `Integer`).
    number: Option<u8>,
}

/// A finding one version's alembic `upgrade()` gives on its own.
type Found = (RuleId, String, String, u32);

#[derive(Debug, Default)]
struct Inventory {
    columns: BTreeMap<String, Column>,
    /// `__table_args__` constraints, by class then by name (or text).
    table_args: BTreeMap<String, BTreeMap<String, String>>,
    found: Vec<Found>,
    /// Columns an alembic `upgrade()` makes NOT NULL (`op.alter_column(...,
    /// nullable=False)`, `op.add_column(t, sa.Column(..., nullable=False))`), by
    /// `table.column`, with the call shown.
    not_null: BTreeMap<String, String>,
    /// Columns an `upgrade()` adds, by `table.column`, with the call's line.
    added_columns: BTreeMap<String, u32>,
}

fn cap(s: String) -> String {
    match s.char_indices().nth(MAX_RENDER) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s,
    }
}

/// An integer type's width (1 small, 2 integer, 3 big), 4 for a type holding fractions;
/// `None` for any other type. A bare name (`Integer`) or a call (`sa.BigInteger()`).
fn number_rank(n: Node, src: &str) -> Option<u8> {
    let t = compact(text(n, src));
    let head = t.split('(').next().unwrap_or(&t);
    Some(match py_decl::last_segment(head) {
        "SmallInteger" | "SMALLINT" => 1,
        "Integer" | "INTEGER" | "INT" => 2,
        "BigInteger" | "BIGINT" => 3,
        "Numeric" | "NUMERIC" | "Float" | "FLOAT" | "REAL" | "Double" | "DOUBLE" | "DOUBLE_PRECISION" | "DECIMAL" => 4,
        _ => return None,
    })
}

/// Whether a number type `new` admits more than an integer type `old`.
fn number_widened(old: Option<u8>, new: Option<u8>) -> bool {
    matches!((old, new), (Some(o), Some(n)) if o <= 3 && n > o)
}

/// A type expression's string length: `String(64)`, `sa.String(length=64)`.
fn length_of(c: &Call, src: &str) -> Option<f64> {
    if !STRING_TYPES.contains(&c.name.as_str()) {
        return None;
    }
    c.keyword("length").or_else(|| c.positional.first().copied()).map(|n| number(n, src))
}

/// A type argument (a call or a bare name like `Text`): its length, if a string type.
fn type_length(n: Node, src: &str) -> Option<f64> {
    call(n, src).and_then(|c| length_of(&c, src))
}

fn is_type_name(n: Node, src: &str) -> bool {
    let t = compact(text(n, src));
    let head = t.split('(').next().unwrap_or(&t);
    let last = py_decl::last_segment(head);
    last.chars().next().is_some_and(char::is_uppercase)
        && !matches!(last, "ForeignKey" | "Sequence" | "Identity" | "Computed")
}

impl Inventory {
    fn build(root: Node, src: &str, revision: bool) -> Inventory {
        let mut inv = Inventory::default();
        for class in py_decl::classes(root, src) {
            for stmt in &class.body {
                let Some((name, ty, Some(value))) = py_decl::assignment(*stmt, src) else { continue };
                if name == "__table_args__" {
                    let args = inv.table_args.entry(class.symbol.clone()).or_default();
                    let items =
                        if matches!(kind_of(value), "tuple" | "list") { named_children(value) } else { vec![value] };
                    for item in items {
                        let Some(c) = call(item, src) else { continue };
                        let unique_index = c.name == "Index" && c.keyword("unique").is_some_and(|v| is_true(v, src));
                        if !matches!(c.name.as_str(), "UniqueConstraint" | "CheckConstraint" | "PrimaryKeyConstraint")
                            && !unique_index
                        {
                            continue;
                        }
                        let key = c
                            .keyword("name")
                            .and_then(|n| string(n, src))
                            .or_else(|| {
                                (c.name == "Index")
                                    .then(|| c.positional.first().and_then(|n| string(*n, src)))
                                    .flatten()
                            })
                            .unwrap_or_else(|| compact(text(item, src)));
                        args.insert(key, cap(one_line(text(item, src))));
                    }
                    continue;
                }
                let Some(c) = call(value, src).filter(|c| matches!(c.name.as_str(), "Column" | "mapped_column")) else {
                    continue;
                };
                inv.columns.insert(format!("{}.{name}", class.symbol), column(&c, *stmt, ty, src));
            }
        }
        if revision {
            inv.upgrade(root, src);
        }
        inv
    }

    /// The operations of `def upgrade()`.
    fn upgrade(&mut self, root: Node, src: &str) {
        let Some(body) = function_body(root, src, "upgrade") else {
            return;
        };
        let names = string_names(body, src);
        let calls = calls_within(body, src);
        let redone = Redone::of(&calls, src, &names);
        // Unique indexes the revision creates, by name, for a later drop.
        let mut unique_indexes: BTreeSet<String> = BTreeSet::new();
        // Indexes `downgrade()` creates unique: the old version of an index the
        // upgrade drops (and re-creates non-unique, or not at all).
        let restored = function_body(root, src, "downgrade").map(|d| restored_unique(d, src)).unwrap_or_default();
        for c in calls {
            let first = c.positional.first().and_then(|n| name_of(*n, src, &names));
            let second = c.positional.get(1).and_then(|n| string(*n, src));
            match c.name.as_str() {
                "create_index" if c.keyword("unique").is_some_and(|v| is_true(v, src)) => {
                    unique_indexes.extend(first);
                }
                "add_column" => {
                    let table = first.or_else(|| c.keyword("table_name").and_then(|n| string(n, src)));
                    let column = c.positional.get(1).or(c.keyword("column").as_ref()).and_then(|n| call(*n, src));
                    let name = column.as_ref().and_then(|k| k.positional.first().and_then(|n| string(*n, src)));
                    if let (Some(table), Some(column), Some(name)) = (table, column, name) {
                        let symbol = format!("{table}.{name}");
                        if column.keyword("nullable").is_some_and(|v| is_false(v, src)) {
                            self.not_null.insert(symbol.clone(), format!("op.add_column({symbol}, nullable=False)"));
                        }
                        self.added_columns.insert(symbol, c.line);
                    }
                }
                "alter_column" => {
                    let table =
                        first.or_else(|| c.keyword("table_name").and_then(|n| string(n, src))).unwrap_or_default();
                    let col =
                        second.or_else(|| c.keyword("column_name").and_then(|n| string(n, src))).unwrap_or_default();
                    let symbol = format!("{table}.{col}");
                    let line = c.line;
                    if c.keyword("nullable").is_some_and(|v| is_false(v, src)) {
                        self.not_null.insert(symbol.clone(), format!("op.alter_column({symbol}, nullable=False)"));
                    }
                    if c.keyword("nullable").is_some_and(|v| is_true(v, src)) {
                        let before = c
                            .keyword("existing_nullable")
                            .map(|v| format!("existing_nullable={}", text(v, src)))
                            .unwrap_or_else(|| "NOT NULL".to_string());
                        if !c.keyword("existing_nullable").is_some_and(|v| is_true(v, src)) {
                            self.found.push((RuleId::PySqlalchemyNullableAllowed, symbol.clone(), before, line));
                        }
                    }
                    if let (Some(old), Some(new)) = (c.keyword("existing_type"), c.keyword("type_")) {
                        let (o, n) = (type_length(old, src), type_length(new, src));
                        let wider = match (o, n) {
                            (Some(o), Some(n)) => !o.is_nan() && !n.is_nan() && n > o,
                            (Some(o), None) => !o.is_nan() && is_type_name(new, src),
                            _ => false,
                        };
                        let shown =
                            format!("existing_type={} → type_={}", one_line(text(old, src)), one_line(text(new, src)));
                        if number_widened(number_rank(old, src), number_rank(new, src)) {
                            self.found.push((RuleId::PySqlalchemyNumberWidened, symbol.clone(), shown.clone(), line));
                        }
                        if wider {
                            self.found.push((RuleId::PySqlalchemyLengthWidened, symbol, shown, line));
                        }
                    }
                }
                "drop_constraint" => {
                    let table =
                        second.or_else(|| c.keyword("table_name").and_then(|n| string(n, src))).unwrap_or_default();
                    let name = first
                        .or_else(|| c.keyword("constraint_name").and_then(|n| name_of(n, src, &names)))
                        .unwrap_or_default();
                    let foreign = c.keyword("type_").and_then(|n| string(n, src)).as_deref() == Some("foreignkey")
                        || name.ends_with("_fkey")
                        || name.starts_with("fk_");
                    if redone.covers(&table, &name, foreign) {
                        continue;
                    }
                    let shown = format!("op.drop_constraint(\"{name}\")");
                    self.found.push((RuleId::PySqlalchemyConstraintRemoved, table, shown, c.line));
                }
                "drop_index" => {
                    let name = first
                        .or_else(|| c.keyword("index_name").and_then(|n| name_of(n, src, &names)))
                        .unwrap_or_default();
                    let lower = name.to_ascii_lowercase();
                    let unique = unique_indexes.contains(&name)
                        || lower.contains("unique")
                        || lower.starts_with("uq_")
                        || lower.starts_with("ux_")
                        || lower.ends_with("_key")
                        || lower.ends_with("_uniq");
                    let partial = redone.partial_indexes.contains(&name);
                    if partial && !unique_indexes.contains(&name) && (unique || restored.contains_key(&name)) {
                        // Re-created unique over the rows a `WHERE` selects: the others
                        // (soft-deleted ones) may now repeat the key.
                        let table =
                            second.or_else(|| c.keyword("table_name").and_then(|n| string(n, src))).unwrap_or_default();
                        let shown =
                            format!("op.drop_index(\"{name}\") (re-created unique only where a condition holds)");
                        self.found.push((RuleId::PySqlalchemyConstraintRemoved, table, shown, c.line));
                        continue;
                    }
                    if redone.unique_index(&name) && !unique_indexes.contains(&name) {
                        // Re-created unique under the same name (a unique index the
                        // upgrade created before this drop stays the finding it was).
                        continue;
                    }
                    let table =
                        second.or_else(|| c.keyword("table_name").and_then(|n| string(n, src))).unwrap_or_default();
                    if let (false, Some(columns)) = (unique, restored.get(&name)) {
                        // Unique before (the downgrade puts it back so), not after.
                        let symbol = match columns.as_slice() {
                            [one] => format!("{table}.{one}"),
                            _ => table.clone(),
                        };
                        let shown = format!("op.drop_index(\"{name}\") (unique, per downgrade())");
                        self.found.push((RuleId::PySqlalchemyConstraintRemoved, symbol, shown, c.line));
                    } else if unique {
                        self.found.push((
                            RuleId::PySqlalchemyConstraintRemoved,
                            table,
                            format!("op.drop_index(\"{name}\")"),
                            c.line,
                        ));
                    }
                }
                _ => {}
            }
        }
    }
}

/// The body of a module-level `def NAME()`.
fn function_body<'t>(root: Node<'t>, src: &str, name: &str) -> Option<Node<'t>> {
    named_children(root)
        .into_iter()
        .filter_map(|n| if kind_of(n) == "decorated_definition" { field(n, "definition") } else { Some(n) })
        .find(|n| kind_of(*n) == "function_definition" && field(*n, "name").is_some_and(|f| text(f, src) == name))
        .and_then(|f| field(f, "body"))
}

/// Names a function body assigns a plain string (`constraint_name = "fk_x"`), so an
/// operation naming its constraint through one reads the same as one spelling it out.
fn string_names(body: Node, src: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        if kind_of(n) == "assignment"
            && let (Some(left), Some(right)) = (field(n, "left"), field(n, "right"))
            && kind_of(left) == "identifier"
            && let Some(value) = string(right, src)
        {
            out.insert(text(left, src).to_string(), value);
        }
        stack.extend(named_children(n));
    }
    out
}

/// A constraint or index name as an operation gives it: a string, `op.f("name")`, or a
/// name the body assigned a string.
fn name_of(n: Node, src: &str, names: &BTreeMap<String, String>) -> Option<String> {
    match kind_of(n) {
        "identifier" => names.get(text(n, src)).cloned(),
        "call" => {
            call(n, src).filter(|c| c.name == "f").and_then(|c| c.positional.first().and_then(|a| string(*a, src)))
        }
        _ => string(n, src),
    }
}

/// What an `upgrade()` puts back after a drop: the constraints it creates, so a
/// constraint dropped and re-created (a foreign key given `ondelete="CASCADE"`, a
/// constraint renamed with its column) is judged on what changed, not as removed.
#[derive(Default)]
struct Redone {
    /// Foreign keys created, by source table.
    foreign_keys: BTreeSet<String>,
    /// Constraints created by name: (table, name).
    named: BTreeSet<(String, String)>,
    /// Columns dropped: (table, column); a constraint over a dropped column goes with it.
    dropped_columns: BTreeSet<(String, String)>,
    /// Unique indexes created, by name.
    unique_indexes: BTreeSet<String>,
    /// Unique indexes created with a condition (`postgresql_where=`, `sqlite_where=`),
    /// by name: unique over some rows only.
    partial_indexes: BTreeSet<String>,
}

impl Redone {
    fn of(calls: &[Call], src: &str, names: &BTreeMap<String, String>) -> Redone {
        let mut r = Redone::default();
        for c in calls {
            let name = c.positional.first().and_then(|n| name_of(*n, src, names));
            let table = c.positional.get(1).and_then(|n| string(*n, src));
            match c.name.as_str() {
                "create_foreign_key" => {
                    let table = table.or_else(|| c.keyword("source_table").and_then(|n| string(n, src)));
                    if let Some(t) = table {
                        r.foreign_keys.insert(t.clone());
                        r.named.extend(name.map(|n| (t, n)));
                    }
                }
                "create_unique_constraint" | "create_check_constraint" | "create_primary_key" => {
                    if let (Some(n), Some(t)) = (name, table) {
                        r.named.insert((t, n));
                    }
                }
                "drop_column" => {
                    // `op.drop_column(table, column)`: the table is the first argument.
                    let t = c.positional.first().and_then(|n| string(*n, src));
                    if let (Some(t), Some(col)) = (t, table) {
                        r.dropped_columns.insert((t, col));
                    }
                }
                "create_index" if c.keyword("unique").is_some_and(|v| is_true(v, src)) => {
                    let partial = c.keywords.iter().any(|(k, _)| k.ends_with("_where"));
                    if partial {
                        r.partial_indexes.extend(name.clone());
                    }
                    r.unique_indexes.extend(name);
                }
                _ => {}
            }
        }
        r
    }

    /// Whether a dropped constraint is put back (or moot): re-created under its name,
    /// a foreign key re-created on its table, or a constraint over a dropped column.
    fn covers(&self, table: &str, name: &str, foreign: bool) -> bool {
        self.named.contains(&(table.to_string(), name.to_string()))
            || (foreign && self.foreign_keys.contains(table))
            || self.dropped_columns.iter().any(|(t, col)| {
                // The column's name as a whole `_`-separated part of the constraint's.
                t == table && !col.is_empty() && format!("_{name}_").contains(&format!("_{col}_"))
            })
    }

    fn unique_index(&self, name: &str) -> bool {
        self.unique_indexes.contains(name)
    }
}

/// The unique indexes a `downgrade()` creates, by name, with their columns: what the
/// upgrade's drops of the same names took away.
fn restored_unique(body: Node, src: &str) -> BTreeMap<String, Vec<String>> {
    let names = string_names(body, src);
    let mut out = BTreeMap::new();
    for c in calls_within(body, src) {
        if c.name != "create_index" || !c.keyword("unique").is_some_and(|v| is_true(v, src)) {
            continue;
        }
        let Some(name) = c.positional.first().and_then(|n| name_of(*n, src, &names)) else { continue };
        let columns = c
            .positional
            .get(2)
            .or(c.keyword("columns").as_ref())
            .map(|l| named_children(*l).into_iter().filter_map(|s| string(s, src)).collect())
            .unwrap_or_default();
        out.insert(name, columns);
    }
    out
}

fn column(c: &Call, stmt: Node, ty: Option<Node>, src: &str) -> Column {
    let mut col = Column { line: line(stmt), shown: cap(one_line(text(stmt, src))), ..Column::default() };
    let primary = c.keyword("primary_key").is_some_and(|v| is_true(v, src));
    let explicit = c.keyword("nullable");
    col.explicit = explicit.is_some();
    col.nullable = match explicit {
        Some(v) => !is_false(v, src),
        None if primary => false,
        None if c.name == "mapped_column" => {
            // Derived from `Mapped[...]`: `Optional[...]` or `| None` admits NULL.
            let ann = ty.map(|t| compact(text(t, src))).unwrap_or_default();
            ann.is_empty() || ann.contains("Optional[") || ann.contains("|None") || ann.contains("None|")
        }
        None => true,
    };
    col.unique = c.keyword("unique").is_some_and(|v| is_true(v, src));
    col.primary = primary;
    let type_arg = c.positional.iter().copied().chain(c.keyword("type_")).find(|n| is_type_name(*n, src));
    if let Some(t) = type_arg {
        col.typed = true;
        col.length = type_length(t, src);
        col.number = number_rank(t, src);
    } else if c.name == "mapped_column" && c.keyword("type_").is_none() {
        let ann = ty.map(|t| compact(text(t, src))).unwrap_or_default();
        let inner = ann.strip_prefix("Mapped[").and_then(|a| a.strip_suffix(']')).unwrap_or("");
        let inner = inner.strip_prefix("Optional[").and_then(|a| a.strip_suffix(']')).unwrap_or(inner);
        if inner.split('|').any(|p| p == "int") {
            col.number = Some(2);
        }
    }
    col
}

/// A class's primary key as its columns' `primary_key=True` declare it, by class: the
/// columns' attribute names.
fn key_columns(inv: &Inventory) -> BTreeMap<&str, BTreeSet<&str>> {
    let mut out: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (symbol, col) in &inv.columns {
        if let (true, Some((class, attr))) = (col.primary, symbol.rsplit_once('.')) {
            out.entry(class).or_default().insert(attr);
        }
    }
    out
}

/// A primary key that admits duplicates it refused: a column taken out of the key
/// while staying in the table, or the key moved to other columns (a surrogate `id`),
/// so the old key's values may now repeat. One finding per class, on the old key's
/// last column in source order (`Class.attr`, a composite key's columns named in
/// `before`). Not judged: a key declared nowhere in the new
/// version (moved to a mixin or a `PrimaryKeyConstraint`), a key narrowed to fewer of
/// its columns, a one-column key whose column became `unique=True`.
fn primary_keys(old: &Inventory, new: &Inventory, push: &mut impl FnMut(RuleId, u32, &str, &str, &str)) {
    let (was, now) = (key_columns(old), key_columns(new));
    for (class, old_key) in &was {
        let Some(new_key) = now.get(class) else { continue };
        if new_key.is_subset(old_key) {
            continue;
        }
        let kept: Vec<&Column> =
            old_key.iter().filter_map(|attr| new.columns.get(&format!("{class}.{attr}"))).collect();
        let Some(last) = kept.iter().max_by_key(|c| c.line) else { continue };
        let before = format!("primary key ({})", old_key.iter().copied().collect::<Vec<_>>().join(", "));
        let after = format!("primary key ({})", new_key.iter().copied().collect::<Vec<_>>().join(", "));
        if old_key.len() == 1 && kept.iter().any(|c| c.unique) {
            continue;
        }
        let Some(attr) =
            old_key.iter().find(|a| new.columns.get(&format!("{class}.{a}")).map(|c| c.line) == Some(last.line))
        else {
            continue;
        };
        push(RuleId::PySqlalchemyConstraintRemoved, last.line, &format!("{class}.{attr}"), &before, &after);
    }
}

fn compare(old: &Inventory, new: &Inventory) -> Vec<RawFinding> {
    let mut out = Vec::new();
    let mut push = |rule, line, symbol: &str, before: &str, after: &str| {
        out.push(RawFinding {
            line,
            rule,
            symbol: symbol.to_string(),
            before: before.to_string(),
            after: after.to_string(),
            in_test: false,
        });
    };
    for (symbol, a) in &new.columns {
        let Some(b) = old.columns.get(symbol) else { continue };
        if !b.nullable && a.nullable && (a.explicit || b.explicit) {
            push(RuleId::PySqlalchemyNullableAllowed, a.line, symbol, &b.shown, &a.shown);
        }
        let wider = match (b.length, a.length) {
            (Some(o), Some(n)) => !o.is_nan() && !n.is_nan() && n > o,
            (Some(o), None) => !o.is_nan() && a.typed,
            _ => false,
        };
        if wider {
            push(RuleId::PySqlalchemyLengthWidened, a.line, symbol, &b.shown, &a.shown);
        }
        if b.unique && !a.unique {
            push(RuleId::PySqlalchemyConstraintRemoved, a.line, symbol, &b.shown, &a.shown);
        }
        if number_widened(b.number, a.number) {
            push(RuleId::PySqlalchemyNumberWidened, a.line, symbol, &b.shown, &a.shown);
        }
    }
    primary_keys(old, new, &mut push);
    let empty = BTreeMap::new();
    for (class, was) in &old.table_args {
        // The class stays (a column of it, or table arguments): the arguments it lost.
        let line = new.columns.iter().find(|(k, _)| k.starts_with(&format!("{class}."))).map(|(_, c)| c.line);
        let Some(line) = line.or_else(|| new.table_args.contains_key(class).then_some(1)) else { continue };
        let now = new.table_args.get(class).unwrap_or(&empty);
        for (name, shown) in was {
            if !now.contains_key(name) {
                push(RuleId::PySqlalchemyConstraintRemoved, line, class, shown, "");
            }
        }
    }
    // A NOT NULL the old `upgrade()` set on a column it adds, gone from the new one:
    // the column stays nullable (a revision edited before it ran).
    for (symbol, shown) in &old.not_null {
        if let (false, Some(line)) = (new.not_null.contains_key(symbol), new.added_columns.get(symbol)) {
            push(RuleId::PySqlalchemyNullableAllowed, *line, symbol, shown, "left nullable by upgrade()");
        }
    }
    let had: BTreeSet<(RuleId, &str, &str)> =
        old.found.iter().map(|(r, s, b, _)| (*r, s.as_str(), b.as_str())).collect();
    for (rule, symbol, before, line) in &new.found {
        if !had.contains(&(*rule, symbol.as_str(), before.as_str())) {
            let after = match rule {
                RuleId::PySqlalchemyNullableAllowed => "nullable=True",
                _ => "",
            };
            push(*rule, *line, symbol, before, after);
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(path: &str, before: &str, after: &str) -> Vec<(RuleId, String)> {
        let mut v: Vec<(RuleId, String)> =
            detect(path, before, after).unwrap().into_iter().map(|f| (f.rule, f.symbol)).collect();
        v.sort();
        v
    }

    #[test]
    fn each_column_loosening_is_found() {
        let before = "from sqlalchemy import Column, String, CheckConstraint\n\nclass User(Base):\n    __table_args__ = (CheckConstraint(\"age >= 0\", name=\"age_nonneg\"),)\n    email = Column(String(120), nullable=False, unique=True)\n    name: Mapped[str] = mapped_column(String(50))\n    bio = Column(String(200))\n";
        let after = "from sqlalchemy import Column, String, CheckConstraint\n\nclass User(Base):\n    email = Column(String(255))\n    name: Mapped[Optional[str]] = mapped_column(String(50))\n    bio = Column(Text)\n";
        let got = found("app/models.py", before, after);
        let want = [
            (RuleId::PySqlalchemyConstraintRemoved, "User"),
            (RuleId::PySqlalchemyConstraintRemoved, "User.email"),
            (RuleId::PySqlalchemyLengthWidened, "User.bio"),
            (RuleId::PySqlalchemyLengthWidened, "User.email"),
            (RuleId::PySqlalchemyNullableAllowed, "User.email"),
        ];
        crate::widen::testing::assert_found(&got, &want);
    }

    #[test]
    fn an_added_revision_is_judged_on_its_upgrade_alone() {
        let after = "from alembic import op\nimport sqlalchemy as sa\n\ndef upgrade():\n    op.alter_column(\"users\", \"email\", existing_type=sa.String(120), type_=sa.String(255), nullable=True)\n    op.drop_constraint(\"uq_users_email\", \"users\", type_=\"unique\")\n    op.drop_index(\"ix_users_name\", table_name=\"users\")\n\ndef downgrade():\n    op.drop_constraint(\"ck_users_age\", \"users\")\n";
        assert!(added_may_fire(after));
        let got = found("alembic/versions/0007_widen.py", "", after);
        assert_eq!(
            got,
            [
                (RuleId::PySqlalchemyConstraintRemoved, "users".to_string()),
                (RuleId::PySqlalchemyLengthWidened, "users.email".to_string()),
                (RuleId::PySqlalchemyNullableAllowed, "users.email".to_string()),
            ]
        );
        assert_eq!(found("app/ops.py", "", after), []);
    }
}
