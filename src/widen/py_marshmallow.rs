//! marshmallow schemas: what a schema's fields declare (`fields.String(required=True,
//! validate=[Length(max=64)])`, `field_for(Model, "name", validate=...)`), compared
//! between the two versions of a file.
//!
//! A pass of its own beside the Python detector, run only where both versions mention
//! `marshmallow` (a substring test). A schema is a class deriving a base whose name ends
//! in `Schema` (`Schema`, `ma.ModelSchema`, `SQLAlchemyAutoSchema`), or a schema of the
//! same file. A field is a class attribute assigned a call: `fields.X(...)`, `ma.X(...)`,
//! `field_for(...)`, `auto_field(...)`, or a project's own field class (a name ending in
//! `Field`). Symbols are `Schema.field`.
//!
//! Not findings: a schema or field removed, a validator rewritten (what the new one
//! admits cannot be told: a validator removed counts only where none is added to the
//! field), narrowing and formatting.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::py_decl::{self, Call, call, is_true};
use super::syntax::{compact, kind_of, line, named_children, one_line, text};
use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity};

const PY: &[Language] = &[Language::Python];

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: RuleId::PyMarshmallowValidatorRemoved,
        languages: PY,
        family: Family::CheckRemoved,
        description: "A validator is taken from a marshmallow field's `validate=` (one call or a list; `Length`, `Range`, `OneOf`, `URL`, `Regexp` or a function), or `validate=` removed, with no other validator added to the field.",
        severity: Severity::Medium,
        message: "{symbol}: the validator `{before}` was removed",
        invariant: "Every value loaded through the schema passed the removed validator.",
    },
    RuleDef {
        id: RuleId::PyMarshmallowOptionalAdded,
        languages: PY,
        family: Family::Optionality,
        description: "A marshmallow field accepts a missing or null value it refused: `required=True` removed, or `allow_none=True` added.",
        severity: Severity::High,
        message: "{symbol} may now be missing or null: `{before}` became `{after}`",
        invariant: "Every loaded payload gave this field a value, so code reading it never handled a missing key or None.",
    },
];

/// Longest `before`/`after` rendering of a declaration.
const MAX_RENDER: usize = 160;

/// Calls that build a field whatever their name.
const FIELD_CALLS: &[&str] = &["field_for", "auto_field"];

/// Whether both versions may hold a marshmallow schema (the pass's prefilter).
pub(crate) fn may_hold(before: &str, after: &str) -> bool {
    py_decl::both_mention(before, after, &["marshmallow"])
}

/// The marshmallow findings of a Python file. A version that does not parse gives none
/// (the Python detector reports the error).
pub(crate) fn detect(before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    if !may_hold(before, after) {
        return Ok(Vec::new());
    }
    let Some((old, new)) = super::syntax::both_versions(&py_decl::grammar(), before, after, fields) else {
        return Ok(Vec::new());
    };
    Ok(compare(&old, &new))
}

/// What one field declares.
#[derive(Debug, Default)]
struct FieldDecl {
    line: u32,
    shown: String,
    required: bool,
    allow_none: bool,
    /// Each validator of `validate=`: compacted (compared so), as written (shown).
    validators: BTreeMap<String, String>,
}

fn cap(s: String) -> String {
    let s = s.replace("( ", "(").replace(", )", ")").replace(",)", ")");
    match s.char_indices().nth(MAX_RENDER) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s,
    }
}

/// Whether a call builds a field: `fields.String(...)`, `ma.Email(...)`,
/// `field_for(...)`, `ConfigValueField(...)`.
fn is_field(c: &Call, callee: &str) -> bool {
    FIELD_CALLS.contains(&c.name.as_str())
        || c.name.ends_with("Field")
        || callee.starts_with("fields.")
        || callee.starts_with("ma.")
}

/// Every schema field of a module, by `Schema.field`.
fn fields(root: Node, src: &str) -> BTreeMap<String, FieldDecl> {
    let mut out = BTreeMap::new();
    let mut schemas: BTreeSet<String> = BTreeSet::new();
    for class in py_decl::classes(root, src) {
        let is_schema = class.bases.iter().any(|b| {
            let last = py_decl::last_segment(b);
            last.ends_with("Schema") || schemas.contains(last)
        });
        if !is_schema {
            continue;
        }
        schemas.insert(py_decl::last_segment(&class.symbol).to_string());
        for stmt in &class.body {
            let Some((name, _, Some(value))) = py_decl::assignment(*stmt, src) else { continue };
            let Some(function) = value.child_by_field_name("function") else { continue };
            let callee = compact(text(function, src));
            let Some(c) = call(value, src).filter(|c| is_field(c, &callee)) else { continue };
            out.insert(format!("{}.{name}", class.symbol), field_decl(&c, *stmt, src));
        }
    }
    out
}

fn field_decl(c: &Call, stmt: Node, src: &str) -> FieldDecl {
    let flag = |k: &str| c.keyword(k).is_some_and(|v| is_true(v, src));
    let mut f = FieldDecl {
        line: line(stmt),
        shown: cap(one_line(text(stmt, src))),
        required: flag("required"),
        allow_none: flag("allow_none"),
        validators: BTreeMap::new(),
    };
    if let Some(v) = c.keyword("validate") {
        let items = if matches!(kind_of(v), "list" | "tuple") { named_children(v) } else { vec![v] };
        f.validators = items
            .into_iter()
            .filter(|i| kind_of(*i) != "comment")
            .map(|i| (compact(text(i, src)), cap(one_line(text(i, src)))))
            .collect();
    }
    f
}

fn compare(old: &BTreeMap<String, FieldDecl>, new: &BTreeMap<String, FieldDecl>) -> Vec<RawFinding> {
    let mut out = Vec::new();
    for (symbol, a) in new {
        let Some(b) = old.get(symbol) else { continue };
        let mut push = |rule, before: &str, after: &str| {
            out.push(RawFinding {
                line: a.line,
                rule,
                symbol: symbol.clone(),
                before: before.to_string(),
                after: after.to_string(),
                in_test: false,
            });
        };
        if (b.required && !a.required) || (a.allow_none && !b.allow_none) {
            push(RuleId::PyMarshmallowOptionalAdded, &b.shown, &a.shown);
        }
        let added = a.validators.keys().any(|v| !b.validators.contains_key(v));
        if let (Some((_, gone)), false) = (b.validators.iter().find(|(v, _)| !a.validators.contains_key(*v)), added) {
            push(RuleId::PyMarshmallowValidatorRemoved, gone, "");
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(before: &str, after: &str) -> Vec<(RuleId, String)> {
        detect(before, after).unwrap().into_iter().map(|f| (f.rule, f.symbol)).collect()
    }

    const HEAD: &str = "from marshmallow import Schema, fields, validate\n\n";

    #[test]
    fn validators_removed_and_fields_made_optional_are_found() {
        let before = format!(
            "{HEAD}class Account(Schema):\n    handle = fields.String(required=True, validate=validate.Length(min=3))\n    bio = fields.String(validate=[validate.Length(max=300)])\n\nclass Admin(Account):\n    level = fields.Integer(required=True)\n"
        );
        let after = format!(
            "{HEAD}class Account(Schema):\n    handle = fields.String(required=True)\n    bio = fields.String(allow_none=True, validate=[validate.Length(max=300)])\n\nclass Admin(Account):\n    level = fields.Integer()\n"
        );
        let want = [
            (RuleId::PyMarshmallowOptionalAdded, "Account.bio"),
            (RuleId::PyMarshmallowOptionalAdded, "Admin.level"),
            (RuleId::PyMarshmallowValidatorRemoved, "Account.handle"),
        ];
        crate::widen::testing::assert_found(&found(&before, &after), &want);
    }

    #[test]
    fn a_validator_replaced_or_a_field_narrowed_is_no_finding() {
        let before = format!(
            "{HEAD}class Account(Schema):\n    handle = fields.String(validate=validate.Length(min=3))\n    bio = fields.String(allow_none=True)\n"
        );
        let after = format!(
            "{HEAD}class Account(Schema):\n    handle = fields.String(validate=validate.Regexp(r\"^[a-z]{{3,}}$\"))\n    bio = fields.String(required=True)\n"
        );
        assert_eq!(found(&before, &after), []);
    }
}
