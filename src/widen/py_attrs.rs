//! attrs classes: the validators an `@attr.s`/`@define`/`@frozen` class declares for its
//! fields (`x = attr.ib(validator=instance_of(int))`, `x: str = field(validator=[...])`,
//! a `@x.validator` method), compared between the two versions of a file.
//!
//! A pass of its own beside the Python detector, run only where both versions mention
//! `attr` (a substring test: `attr` and `attrs` alike). A class is an attrs class when a
//! decorator's callee ends in `s`, `attrs`, `define`, `frozen`, `mutable` or `dataclass`
//! and is `attr.`/`attrs.` dotted or the file imports from `attr`/`attrs`. A field is a
//! class attribute assigned `attr.ib(...)`, `attr.attrib(...)`, `attrs.field(...)` or
//! `field(...)`. Validators are read from `validator=` (one, a list or a tuple,
//! `and_(...)` opened) and from methods decorated `@name.validator`; each is known by
//! its function's last dotted segment (`attr.validators.instance_of` is
//! `instance_of`), `optional(...)` around it noted. Symbols are `Class.field`.
//!
//! A class made mutable (`frozen=True` removed, `@frozen` made `@define`) is the Python
//! detector's `py-frozen-dataclass-unfrozen`, which reads attrs decorators.
//!
//! Not findings: a class or field removed, a validator rewritten (another in its place,
//! or the same validator given other arguments that are not comparable), narrowing and
//! formatting. Every walk is iterative (explicit stacks).

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::py_decl::{self, call};
use super::syntax::{compact, field, kind_of, line, named_children, one_line, text};
use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity};

const PY: &[Language] = &[Language::Python];

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: RuleId::PyAttrsValidatorRemoved,
        languages: PY,
        family: Family::CheckRemoved,
        description: "A validator is taken from an attrs field (`validator=` on `attr.ib`/`field`, one or in a list, or a `@field.validator` method) with no other validator added to the field.",
        severity: Severity::Medium,
        message: "{symbol}: the validator `{before}` was removed",
        invariant: "Every instance was built with a value that passed the removed validator.",
    },
    RuleDef {
        id: RuleId::PyAttrsOptionalAdded,
        languages: PY,
        family: Family::Optionality,
        description: "An attrs field's validator is wrapped in `optional(...)`: `None` now passes it.",
        severity: Severity::High,
        message: "{symbol} may now be None: `{before}` became `{after}`",
        invariant: "Every instance held a value the validator accepted, never None, so code reading the field did not handle None.",
    },
    RuleDef {
        id: RuleId::PyAttrsInstanceOfWidened,
        languages: PY,
        family: Family::TypeErasure,
        description: "An attrs `instance_of(...)` validator admits more types: a type added to its tuple, or `instance_of(object)`.",
        severity: Severity::Medium,
        message: "{symbol} accepts other types: `{before}` became `{after}`",
        invariant: "Every instance held a value of the validated types, so code using the field could rely on its type.",
    },
    RuleDef {
        id: RuleId::PyAttrsBoundLoosened,
        languages: PY,
        family: Family::NumericRange,
        description: "An attrs bound validator admits more: `max_len`/`lt`/`le` raised, `min_len`/`gt`/`ge` lowered, or `in_(...)` gaining members.",
        severity: Severity::Medium,
        message: "{symbol} accepts values outside the old bounds: `{before}` became `{after}`",
        invariant: "Every instance held a value within the validated bounds or set, which storage and consumers may rely on.",
    },
];

/// Longest `before`/`after` rendering of a validator.
const MAX_RENDER: usize = 160;

/// The last segment of an attrs class decorator's callee.
const CLASS_DECORATORS: &[&str] = &["s", "attrs", "define", "frozen", "mutable", "dataclass"];

/// The last segment of a call that declares a field.
const FIELD_CALLS: &[&str] = &["ib", "attrib", "field"];

/// Validators whose one argument is an upper bound, and those whose one is a lower.
const UPPER: &[&str] = &["max_len", "lt", "le"];
const LOWER: &[&str] = &["min_len", "gt", "ge"];

/// Whether both versions may hold an attrs class (the pass's prefilter).
pub(crate) fn may_hold(before: &str, after: &str) -> bool {
    py_decl::both_mention(before, after, &["attr"])
}

/// The attrs findings of a Python file. A version that does not parse gives none (the
/// Python detector reports the error).
pub(crate) fn detect(before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    if !may_hold(before, after) {
        return Ok(Vec::new());
    }
    let Some((old, new)) = super::syntax::both_versions(&py_decl::grammar(), before, after, fields) else {
        return Ok(Vec::new());
    };
    Ok(compare(&old, &new))
}

/// One validator as a field declares it.
#[derive(Debug, Clone)]
struct Validator {
    /// The function's last dotted segment (`instance_of`), or the name given (`check_x`).
    name: String,
    /// Its arguments, compacted (`(int,str)`).
    args: String,
    optional: bool,
    shown: String,
}

/// What one field declares.
#[derive(Debug, Default)]
struct FieldDecl {
    line: u32,
    validators: Vec<Validator>,
}

fn cap(s: &str) -> String {
    super::zod::cap(&one_line(s), MAX_RENDER)
}

/// Whether a decorator makes its class an attrs class.
fn attrs_decorator(decorator: Node, src: &str, imports_attrs: bool) -> bool {
    let t = compact(text(decorator, src));
    let head = t.trim_start_matches('@').split('(').next().unwrap_or("").to_string();
    let last = py_decl::last_segment(&head);
    let dotted = head.starts_with("attr.") || head.starts_with("attrs.");
    CLASS_DECORATORS.contains(&last) && (dotted || (imports_attrs && !head.contains('.') && last != "s"))
}

/// Every attrs field, by `Class.field`.
fn fields(root: Node, src: &str) -> BTreeMap<String, FieldDecl> {
    let mut out = BTreeMap::new();
    let imports_attrs = src.contains("from attr import") || src.contains("from attrs import");
    for class in py_decl::classes(root, src) {
        let Some(def) = class.body.first().and_then(|s| s.parent()).and_then(|b| b.parent()) else { continue };
        let decorated = def.parent().filter(|p| kind_of(*p) == "decorated_definition");
        let decorators = decorated.map(named_children).unwrap_or_default();
        if !decorators.iter().any(|d| kind_of(*d) == "decorator" && attrs_decorator(*d, src, imports_attrs)) {
            continue;
        }
        let mut methods: Vec<(String, Validator)> = Vec::new();
        for stmt in &class.body {
            if let Some((name, _, Some(value))) = py_decl::assignment(*stmt, src)
                && let Some(c) = call(value, src).filter(|c| FIELD_CALLS.contains(&c.name.as_str()))
            {
                let validators = c.keyword("validator").map(|v| read_validators(v, src)).unwrap_or_default();
                out.insert(format!("{}.{name}", class.symbol), FieldDecl { line: line(*stmt), validators });
                continue;
            }
            // `@name.validator` on a method: a validator of the field `name`.
            if kind_of(*stmt) == "decorated_definition" {
                let Some(method) = field(*stmt, "definition").filter(|d| kind_of(*d) == "function_definition") else {
                    continue;
                };
                let Some(method_name) = field(method, "name").map(|n| text(n, src).to_string()) else { continue };
                for d in named_children(*stmt).into_iter().filter(|d| kind_of(*d) == "decorator") {
                    let t = compact(text(d, src));
                    if let Some(target) = t.strip_prefix('@').and_then(|t| t.strip_suffix(".validator")) {
                        let shown = format!("@{target}.validator def {method_name}");
                        methods.push((
                            target.to_string(),
                            Validator { name: format!("@{method_name}"), args: String::new(), optional: false, shown },
                        ));
                    }
                }
            }
        }
        for (target, v) in methods {
            if let Some(f) = out.get_mut(&format!("{}.{target}", class.symbol)) {
                f.validators.push(v);
            }
        }
    }
    out
}

/// The validators of a `validator=` value: one, a list or tuple, `and_(...)` opened,
/// `optional(...)` noted on what it wraps. An explicit stack.
fn read_validators(value: Node, src: &str) -> Vec<Validator> {
    let mut out = Vec::new();
    // (node, inside `optional(...)`, the text of that `optional(...)`: shown for it).
    let mut stack: Vec<(Node, bool, Option<Node>)> = vec![(value, false, None)];
    while let Some((node, optional, wrapper)) = stack.pop() {
        if matches!(kind_of(node), "list" | "tuple") {
            let items = named_children(node).into_iter().rev().filter(|n| kind_of(*n) != "comment");
            stack.extend(items.map(|n| (n, optional, None)));
            continue;
        }
        let shown = cap(text(wrapper.unwrap_or(node), src));
        match call(node, src) {
            Some(c) if c.name == "and_" => stack.extend(c.positional.iter().rev().map(|n| (*n, optional, None))),
            Some(c) if c.name == "optional" && c.positional.len() == 1 => {
                stack.push((c.positional[0], true, Some(node)))
            }
            Some(c) => {
                let args = field(node, "arguments").map_or(String::new(), |a| compact(text(a, src)));
                out.push(Validator { name: c.name, args, optional, shown });
            }
            None => {
                let t = compact(text(node, src));
                out.push(Validator {
                    name: py_decl::last_segment(&t).to_string(),
                    args: String::new(),
                    optional,
                    shown,
                });
            }
        }
    }
    out
}

/// The items of a validator's one argument: `(int, str)` or `int`, `["a", "b"]`.
fn items(args: &str) -> BTreeSet<String> {
    let inner = args.strip_prefix('(').and_then(|a| a.strip_suffix(')')).unwrap_or(args);
    let inner = inner.trim_matches(|c| matches!(c, '(' | ')' | '[' | ']' | '{' | '}'));
    inner.split(',').filter(|s| !s.is_empty()).map(|s| s.replace('\'', "\"")).collect()
}

/// How a new validator of the same name compares with the old one.
enum Change {
    Same,
    TypesWidened,
    BoundLoosened,
    /// Other arguments: rewritten, not judged.
    Rewritten,
}

fn change(old: &Validator, new: &Validator) -> Change {
    if old.args == new.args {
        return Change::Same;
    }
    let number = |a: &str| a.trim_matches(['(', ')']).replace('_', "").parse::<f64>().ok();
    match old.name.as_str() {
        "instance_of" => {
            let (o, n) = (items(&old.args), items(&new.args));
            if (o.is_subset(&n) && n.len() > o.len()) || n.contains("object") {
                return Change::TypesWidened;
            }
        }
        "in_" => {
            let (o, n) = (items(&old.args), items(&new.args));
            if !n.is_subset(&o) && !n.is_disjoint(&o) {
                return Change::BoundLoosened;
            }
        }
        name if UPPER.contains(&name) || LOWER.contains(&name) => {
            if let (Some(o), Some(n)) = (number(&old.args), number(&new.args))
                && (if UPPER.contains(&name) { n > o } else { n < o })
            {
                return Change::BoundLoosened;
            }
        }
        _ => {}
    }
    Change::Rewritten
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
        let old_names: BTreeSet<&str> = b.validators.iter().map(|v| v.name.as_str()).collect();
        let added = a.validators.iter().any(|v| !old_names.contains(v.name.as_str()));
        let mut removed = None;
        for o in &b.validators {
            let Some(n) = a.validators.iter().find(|n| n.name == o.name) else {
                removed = removed.or(Some(o));
                continue;
            };
            if n.optional && !o.optional {
                push(RuleId::PyAttrsOptionalAdded, &o.shown, &n.shown);
            }
            match change(o, n) {
                Change::TypesWidened => push(RuleId::PyAttrsInstanceOfWidened, &o.shown, &n.shown),
                Change::BoundLoosened => push(RuleId::PyAttrsBoundLoosened, &o.shown, &n.shown),
                Change::Same | Change::Rewritten => {}
            }
        }
        if let (Some(gone), false) = (removed, added) {
            push(RuleId::PyAttrsValidatorRemoved, &gone.shown, "");
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

    const HEAD: &str = "import attr\nfrom attr.validators import instance_of, optional, max_len, in_\n\n";

    #[test]
    fn each_loosening_is_found_on_its_field() {
        let before = format!(
            "{HEAD}@attr.s(frozen=True)\nclass Job:\n    name = attr.ib(validator=[instance_of(str), max_len(64)])\n    owner = attr.ib(validator=instance_of(str))\n    size = attr.ib(validator=instance_of(int))\n    state = attr.ib(validator=in_([\"new\", \"done\"]))\n    retries = attr.ib()\n\n    @retries.validator\n    def _check_retries(self, attribute, value):\n        if value < 0:\n            raise ValueError(\"negative\")\n"
        );
        let after = format!(
            "{HEAD}@attr.s(frozen=True)\nclass Job:\n    name = attr.ib(validator=[instance_of(str), max_len(256)])\n    owner = attr.ib(validator=optional(instance_of(str)))\n    size = attr.ib(validator=instance_of((int, float)))\n    state = attr.ib(validator=in_([\"new\", \"done\", \"failed\"]))\n    retries = attr.ib()\n"
        );
        let want = [
            (RuleId::PyAttrsBoundLoosened, "Job.name"),
            (RuleId::PyAttrsOptionalAdded, "Job.owner"),
            (RuleId::PyAttrsValidatorRemoved, "Job.retries"),
            (RuleId::PyAttrsInstanceOfWidened, "Job.size"),
            (RuleId::PyAttrsBoundLoosened, "Job.state"),
        ];
        crate::widen::testing::assert_found(&found(&before, &after), &want);
    }

    #[test]
    fn define_and_field_with_a_validator_dropped() {
        let before = "from attrs import define, field, validators\n\n@define\nclass Point:\n    x: int = field(validator=validators.ge(0))\n    y: int = field(validator=[validators.instance_of(int), validators.ge(0)])\n";
        let after = "from attrs import define, field, validators\n\n@define\nclass Point:\n    x: int = field()\n    y: int = field(validator=[validators.instance_of(int), validators.ge(-10)])\n";
        let want = [(RuleId::PyAttrsValidatorRemoved, "Point.x"), (RuleId::PyAttrsBoundLoosened, "Point.y")];
        crate::widen::testing::assert_found(&found(before, after), &want);
    }

    #[test]
    fn narrowing_rewording_and_plain_classes_are_not_findings() {
        let before = format!(
            "{HEAD}@attr.s\nclass Job:\n    name = attr.ib(validator=optional(instance_of(str)))\n    size = attr.ib(validator=instance_of((int, float)))\n    tag = attr.ib(validator=max_len(8))\n\nclass Plain:\n    name = attr.ib(validator=instance_of(str))\n"
        );
        let after = format!(
            "{HEAD}@attr.s\nclass Job:\n    name = attr.ib(validator=instance_of(str))\n    size = attr.ib(validator=instance_of(int))\n    tag = attr.ib(validator=attr.validators.matches_re(r\"^[a-z]{{1,8}}$\"))\n\nclass Plain:\n    name = attr.ib()\n"
        );
        assert_eq!(found(&before, &after), []);
    }

    /// `frozen=True` removed from an attrs class is the Python detector's rule.
    #[test]
    fn an_attrs_class_made_mutable_is_the_python_detectors() {
        let before = "import attrs\n\n@attrs.define(frozen=True)\nclass Key:\n    id: str\n";
        let after = "import attrs\n\n@attrs.define\nclass Key:\n    id: str\n";
        let got = crate::widen::detector::run(Language::Python, "a.py", before, after, false).unwrap();
        assert!(got.iter().any(|f| f.rule == RuleId::PyFrozenDataclassUnfrozen), "{got:?}");
    }
}
