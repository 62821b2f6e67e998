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
}

/// A finding one version's alembic `upgrade()` gives on its own.
type Found = (RuleId, String, String, u32);

#[derive(Debug, Default)]
struct Inventory {
    columns: BTreeMap<String, Column>,
    /// `__table_args__` constraints, by class then by name (or text).
    table_args: BTreeMap<String, BTreeMap<String, String>>,
    found: Vec<Found>,
}

fn cap(s: String) -> String {
    match s.char_indices().nth(MAX_RENDER) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s,
    }
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
        let Some(body) = named_children(root)
            .into_iter()
            .filter_map(|n| if kind_of(n) == "decorated_definition" { field(n, "definition") } else { Some(n) })
            .find(|n| {
                kind_of(*n) == "function_definition" && field(*n, "name").is_some_and(|f| text(f, src) == "upgrade")
            })
            .and_then(|f| field(f, "body"))
        else {
            return;
        };
        // Unique indexes the revision creates, by name, for a later drop.
        let mut unique_indexes: BTreeSet<String> = BTreeSet::new();
        for c in calls_within(body, src) {
            let first = c.positional.first().and_then(|n| string(*n, src));
            let second = c.positional.get(1).and_then(|n| string(*n, src));
            match c.name.as_str() {
                "create_index" if c.keyword("unique").is_some_and(|v| is_true(v, src)) => {
                    unique_indexes.extend(first);
                }
                "alter_column" => {
                    let table =
                        first.or_else(|| c.keyword("table_name").and_then(|n| string(n, src))).unwrap_or_default();
                    let col =
                        second.or_else(|| c.keyword("column_name").and_then(|n| string(n, src))).unwrap_or_default();
                    let symbol = format!("{table}.{col}");
                    let line = c.line;
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
                        if wider {
                            let shown = format!(
                                "existing_type={} → type_={}",
                                one_line(text(old, src)),
                                one_line(text(new, src))
                            );
                            self.found.push((RuleId::PySqlalchemyLengthWidened, symbol, shown, line));
                        }
                    }
                }
                "drop_constraint" => {
                    let table =
                        second.or_else(|| c.keyword("table_name").and_then(|n| string(n, src))).unwrap_or_default();
                    let name =
                        first.or_else(|| c.keyword("constraint_name").and_then(|n| string(n, src))).unwrap_or_default();
                    let shown = format!("op.drop_constraint(\"{name}\")");
                    self.found.push((RuleId::PySqlalchemyConstraintRemoved, table, shown, c.line));
                }
                "drop_index" => {
                    let name =
                        first.or_else(|| c.keyword("index_name").and_then(|n| string(n, src))).unwrap_or_default();
                    let lower = name.to_ascii_lowercase();
                    let unique = unique_indexes.contains(&name)
                        || lower.contains("unique")
                        || lower.starts_with("uq_")
                        || lower.starts_with("ux_")
                        || lower.ends_with("_key")
                        || lower.ends_with("_uniq");
                    if unique {
                        let table =
                            second.or_else(|| c.keyword("table_name").and_then(|n| string(n, src))).unwrap_or_default();
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
    let type_arg = c.positional.iter().copied().chain(c.keyword("type_")).find(|n| is_type_name(*n, src));
    if let Some(t) = type_arg {
        col.typed = true;
        col.length = type_length(t, src);
    }
    col
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
    }
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
