//! pydantic models: the constraints a `class User(BaseModel)` declares for each field
//! (`User.name`) and for the model (`User`), compared between the two versions of a
//! file: `Field(...)` and constrained-type bounds (`ge`, `gt`, `le`, `lt`, `min_length`,
//! `max_length`, `max_digits`, `decimal_places`, `multiple_of`, `pattern`) in the default
//! or in the annotation (`conint(...)`, `constr(...)`, `Annotated[int, Field(ge=0)]`,
//! annotated-types' `Ge(0)`, `MaxLen(64)`), a required field given a default,
//! validators (`@field_validator`, `@validator`, `@model_validator`, `@root_validator`),
//! `extra="forbid"` and `frozen` in the model's configuration (`model_config =
//! ConfigDict(...)`, `class Config:`, class keywords).
//!
//! A pass of its own beside the Python detector, run only where both versions mention
//! a pydantic base (`BaseModel`, `BaseSettings`, `RootModel`, `SQLModel`; a substring
//! test, or `pydantic` named in both). A model is a class deriving one of those, or a
//! class of the same file that is a model, or, in a module that names `pydantic`, a
//! class deriving a base from another module named like a model base (`DispatchBase`,
//! `MealieModel`: [`FOREIGN_BASE_ENDINGS`]).
//!
//! What the Python detector already reports is left to it, so that one change is one
//! finding: `Optional[...]` or `X | None` added to an annotation (`py-optional-widened`),
//! a bound keyword removed from a `Field(...)` default or a constrained annotation
//! replaced by its plain type (`py-constrained-type-erased`), and `frozen=True` removed
//! from `model_config` (`py-frozen-dataclass-unfrozen`).
//!
//! Not findings: a model or field removed, a bound given by a constant changed (only
//! its removal is judged), a pattern or validator rewritten (what the new one admits
//! cannot be told), narrowing, reordering and formatting.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::py_decl::{self, Bound, Class, bound_loosened, call, calls_within, is_false, is_true, number, string};
use super::syntax::{compact, field, kind_of, line, named_children, one_line, text};
use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity};

const PY: &[Language] = &[Language::Python];

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: RuleId::PyPydanticBoundLoosened,
        languages: PY,
        family: Family::NumericRange,
        description: "A pydantic field's bound admits more: `ge`/`gt`/`min_length` lowered or removed, `le`/`lt`/`max_length`/`max_digits`/`decimal_places` raised or removed, or `multiple_of`/`pattern` removed, in a `Field(...)` default or in a constrained annotation (`conint(...)`, `constr(...)`, `Annotated[..., Field(...)]`, `Ge(...)`, `MaxLen(...)`) that stays, or in a FastAPI route parameter's `Query(...)`, `Path(...)`, `Body(...)`...",
        severity: Severity::Medium,
        message: "{symbol} accepts values outside the old bounds: `{before}` became `{after}`",
        invariant: "Validated values and lengths stayed within the field's declared bounds, which storage and consumers may rely on.",
    },
    RuleDef {
        id: RuleId::PyPydanticOptionalAdded,
        languages: PY,
        family: Family::Optionality,
        description: "A required pydantic field gets a default (`= None`, `= 0`, `Field(None)`, `Field(default=...)`, `default_factory=`), so input may leave it out, where its annotation did not change to admit `None` (that change is `py-optional-widened`).",
        severity: Severity::High,
        message: "{symbol} may now be left out: `{before}` became `{after}`",
        invariant: "Every validated model had this field given by its input, so code reading it never saw a value the input did not set.",
    },
    RuleDef {
        id: RuleId::PyPydanticValidatorRemoved,
        languages: PY,
        family: Family::CheckRemoved,
        description: "A pydantic validator (`@field_validator`, `@validator`, `@model_validator`, `@root_validator`) is removed from a model that stays, or stops naming a field, with no other validator added for that field or model.",
        severity: Severity::High,
        message: "{symbol}: the validator {before} was removed",
        invariant: "Every validated model passed the validator's checks on this field.",
    },
    RuleDef {
        id: RuleId::PyPydanticExtraAllowed,
        languages: PY,
        family: Family::MutabilityExposure,
        description: "A pydantic model stops refusing unknown fields: `extra=\"forbid\"` (in `model_config`, `class Config:` or a class keyword, or inherited from a model of the same file) removed or changed to `allow` or `ignore`.",
        severity: Severity::Medium,
        message: "{symbol} no longer refuses unknown fields: `{before}` became `{after}`",
        invariant: "Input with fields the model does not declare was rejected, so misspelt or unexpected fields never passed silently.",
    },
    RuleDef {
        id: RuleId::PyPydanticFrozenRemoved,
        languages: PY,
        family: Family::MutabilityExposure,
        description: "A pydantic model declared frozen by a class keyword (`frozen=True`) or a `class Config:` (`frozen = True`, `allow_mutation = False`) becomes mutable (`model_config`'s `frozen=True` is `py-frozen-dataclass-unfrozen`).",
        severity: Severity::Medium,
        message: "instances of {symbol} are mutable now: `{before}` became `{after}`",
        invariant: "Model instances never changed after validation, so they could be shared, hashed and cached safely.",
    },
];

/// The bases that make a class a pydantic model.
const BASES: &[&str] = &["BaseModel", "BaseSettings", "RootModel", "GenericModel", "SQLModel"];

/// Longest `before`/`after` rendering of a declaration.
const MAX_RENDER: usize = 160;

/// The keywords the Python detector reads in a `Field(...)` default: one of them
/// removed is its finding (`py-constrained-type-erased`), not this pass's.
use super::python::BOUND_KEYWORDS as DETECTOR_KEYWORDS;

/// Calls whose keywords bound a value or a length.
const KEYWORD_BOUNDS: &[&str] = &[
    "Field",
    "constr",
    "conint",
    "confloat",
    "conlist",
    "conset",
    "confrozenset",
    "conbytes",
    "condecimal",
    "condate",
    "StringConstraints",
    "Interval",
];

/// Whether both versions may hold a pydantic model, or a FastAPI route's validated
/// parameters (the pass's prefilter).
pub(crate) fn may_hold(before: &str, after: &str) -> bool {
    py_decl::both_mention(before, after, BASES) || py_decl::both_mention(before, after, &["pydantic", "fastapi"])
}

/// FastAPI's parameter declarations: their keywords bound the value as `Field`'s do
/// (`limit: int = Query(default=20, ge=1, le=100)`).
const PARAMETER_CALLS: &[&str] = &["Query", "Path", "Header", "Cookie", "Body", "Form"];

/// The parameters of the module's top-level functions (a FastAPI route, decorated or
/// not) whose default is a [`PARAMETER_CALLS`] call, as the fields of a model named by
/// the function (`list_workflows.limit`). Only their bounds are compared: whether such
/// a parameter is required is FastAPI's reading of the call, not read here.
fn route_parameters(root: Node, src: &str, out: &mut BTreeMap<String, Model>) {
    for item in named_children(root) {
        let def = match kind_of(item) {
            "decorated_definition" => field(item, "definition"),
            _ => Some(item),
        };
        let Some(def) = def.filter(|d| kind_of(*d) == "function_definition") else { continue };
        let (Some(name), Some(params)) = (field(def, "name"), field(def, "parameters")) else { continue };
        let mut m = Model { line: line(def), ..Model::default() };
        let typed = |p: &Node| matches!(kind_of(*p), "typed_default_parameter" | "typed_parameter");
        for p in named_children(params).into_iter().filter(typed) {
            // `typed_parameter` holds its name as its first child, not as a field.
            let Some(param) = field(p, "name").or_else(|| p.named_child(0)) else { continue };
            let is_parameter = |c: &py_decl::Call| PARAMETER_CALLS.contains(&py_decl::last_segment(&c.name));
            // The default (`= Query(ge=1)`) and the annotation (`Annotated[int, Query(ge=1)]`).
            let mut calls: Vec<py_decl::Call> = field(p, "value").and_then(|v| call(v, src)).into_iter().collect();
            calls.extend(field(p, "type").map(|t| calls_within(t, src)).unwrap_or_default());
            calls.retain(is_parameter);
            if calls.is_empty() {
                continue;
            }
            let mut f = Field {
                line: line(p),
                shown: cap(one_line(text(p, src))),
                annotation: field(p, "type").map(|t| compact(text(t, src))).unwrap_or_default(),
                ..Field::default()
            };
            for c in &calls {
                read_bounds(c, src, &mut f);
            }
            // Kept without bounds too: a bound removed is judged against it.
            m.fields.insert(text(param, src).to_string(), f);
        }
        if !m.fields.is_empty() {
            out.entry(text(name, src).to_string()).or_insert(m);
        }
    }
}

/// The endings of a base class's name that, in a module importing pydantic, make a
/// class deriving it from another module a model: projects derive their models from a
/// base of their own (`DispatchBase`, `MealieModel`, `CamelModel`, `ApiSchema`).
const FOREIGN_BASE_ENDINGS: &[&str] = &["Model", "Base", "Schema"];

/// Bases with those endings that are no pydantic model: SQLAlchemy's and Django's.
const NOT_MODELS: &[&str] = &["Base", "DeclarativeBase", "Model", "TypedDict", "NamedTuple"];

/// Whether a class of a module importing pydantic derives a base from another module
/// named like a model base.
fn foreign_model(class: &Class, local: &BTreeMap<String, Model>) -> bool {
    class.bases.iter().any(|b| {
        let last = py_decl::last_segment(b);
        !local.contains_key(b.as_str())
            && !NOT_MODELS.contains(&last)
            && FOREIGN_BASE_ENDINGS.iter().any(|e| last.ends_with(e))
    })
}

/// The pydantic findings of a Python file. A version that does not parse gives none
/// (the Python detector reports the error).
pub(crate) fn detect(before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    if !may_hold(before, after) {
        return Ok(Vec::new());
    }
    let Some((old, new)) = super::syntax::both_versions(&py_decl::grammar(), before, after, models) else {
        return Ok(Vec::new());
    };
    Ok(compare(&old, &new))
}

/// One bound dimension of a field: what a keyword or a call bounds, and from which side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Dim {
    Value,
    Length,
    Digits,
    Places,
}

/// What one field declares.
#[derive(Debug, Default)]
struct Field {
    line: u32,
    shown: String,
    /// The annotation, compacted.
    annotation: String,
    /// The annotation admits `None`.
    none_in_type: bool,
    /// No default: the input must give it.
    required: bool,
    default_none: bool,
    /// The [`DETECTOR_KEYWORDS`] of a `Field(...)` default.
    field_keywords: BTreeSet<String>,
    /// The annotation holds a bounding call.
    annotation_bounded: bool,
    lower: BTreeMap<Dim, Bound>,
    upper: BTreeMap<Dim, Bound>,
    /// `multiple_of`, `pattern`.
    flags: BTreeSet<&'static str>,
}

/// A validator: its method's name and its definition compacted (a renamed method with
/// the same body is the same validator).
#[derive(Debug, Clone, PartialEq)]
struct Validator {
    name: String,
    body: String,
    shown: String,
}

#[derive(Debug, Default)]
struct Model {
    line: u32,
    fields: BTreeMap<String, Field>,
    /// Validators by target: a field's name, or "" for the model.
    validators: BTreeMap<String, Vec<Validator>>,
    /// `extra`'s value, the declaration that says it, and whether the model says it
    /// itself (not inherited from a model of the file).
    extra: Option<(String, String, bool)>,
    /// Frozen by the model's own declaration, and the declaration that says so (an
    /// inherited one is the parent's finding).
    frozen: Option<String>,
    /// `model_config`'s text holds `frozen=True` (the Python detector's reading).
    frozen_by_model_config: bool,
}

fn cap(s: String) -> String {
    match s.char_indices().nth(MAX_RENDER) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s,
    }
}

/// Every model of a module, by symbol.
fn models(root: Node, src: &str) -> BTreeMap<String, Model> {
    let mut out: BTreeMap<String, Model> = BTreeMap::new();
    let imports_pydantic = memchr::memmem::find(src.as_bytes(), b"pydantic").is_some();
    for class in py_decl::classes(root, src) {
        let parent = class.bases.iter().find_map(|b| out.get(b.as_str()));
        if !class.derives(BASES) && parent.is_none() && !(imports_pydantic && foreign_model(&class, &out)) {
            continue;
        }
        let inherited_extra = parent.and_then(|p| p.extra.clone()).map(|(v, shown, _)| (v, shown, false));
        let mut m = read_model(&class, src);
        if m.extra.is_none() {
            m.extra = inherited_extra;
        }
        out.insert(class.symbol.clone(), m);
    }
    route_parameters(root, src, &mut out);
    out
}

fn read_model(class: &Class, src: &str) -> Model {
    let mut m = Model { line: class.line, ..Model::default() };
    let config = |key: &str, value: Node, shown: String, m: &mut Model| match key {
        "extra" => {
            let v = string(value, src).unwrap_or_else(|| py_decl::last_segment(text(value, src)).to_string());
            m.extra = Some((v, shown, true));
        }
        "frozen" if is_true(value, src) => m.frozen = Some(shown),
        "frozen" if is_false(value, src) => m.frozen = None,
        "allow_mutation" if is_false(value, src) => m.frozen = Some(shown),
        _ => {}
    };
    for (k, v) in &class.keywords {
        config(k, *v, format!("{k}={}", one_line(text(*v, src))), &mut m);
    }
    for stmt in &class.body {
        match kind_of(*stmt) {
            "class_definition" if field(*stmt, "name").is_some_and(|n| text(n, src) == "Config") => {
                let body = field(*stmt, "body").map(named_children).unwrap_or_default();
                for s in body {
                    if let Some((name, _, Some(value))) = py_decl::assignment(s, src) {
                        config(&name, value, one_line(text(s, src)), &mut m);
                    }
                }
            }
            "decorated_definition" => read_validator(*stmt, src, &mut m),
            _ => {
                let Some((name, ty, value)) = py_decl::assignment(*stmt, src) else { continue };
                if name == "model_config" {
                    let Some(value) = value else { continue };
                    let shown = cap(one_line(text(*stmt, src)));
                    m.frozen_by_model_config = compact(text(*stmt, src)).contains("frozen=True");
                    for (k, v) in config_pairs(value, src) {
                        config(&k, v, shown.clone(), &mut m);
                    }
                    continue;
                }
                let Some(ty) = ty else { continue };
                let ann = compact(text(ty, src));
                // `Mapped[...]`: a SQLAlchemy column of a class this pass took for a model.
                if name.starts_with('_')
                    || ann.starts_with("ClassVar")
                    || ann.contains(".ClassVar")
                    || ann.starts_with("Mapped[")
                {
                    continue;
                }
                m.fields.insert(name, read_field(*stmt, ty, value, src));
            }
        }
    }
    m
}

/// The `key=value` pairs of a configuration: `ConfigDict(...)`, `dict(...)` or a
/// dictionary literal with string keys.
fn config_pairs<'t>(value: Node<'t>, src: &str) -> Vec<(String, Node<'t>)> {
    if let Some(c) = call(value, src) {
        return c.keywords;
    }
    if kind_of(value) != "dictionary" {
        return Vec::new();
    }
    named_children(value)
        .into_iter()
        .filter(|p| kind_of(*p) == "pair")
        .filter_map(|p| Some((string(field(p, "key")?, src)?, field(p, "value")?)))
        .collect()
}

fn read_field(stmt: Node, ty: Node, value: Option<Node>, src: &str) -> Field {
    let ann = compact(text(ty, src));
    let mut f = Field {
        line: line(stmt),
        shown: cap(one_line(text(stmt, src))),
        annotation: ann.clone(),
        none_in_type: ann == "None"
            || ann.contains("Optional[")
            || ann.contains("|None")
            || ann.contains("None|")
            || ann.contains(",None]"),
        required: value.is_none(),
        default_none: value.is_some_and(|v| kind_of(v) == "none"),
        ..Field::default()
    };
    // The default: `Field(...)` bounds, and whether it gives a default at all.
    if let Some(c) = value.and_then(|v| call(v, src)).filter(|c| c.name == "Field") {
        let first = c.positional.first().copied().or_else(|| c.keyword("default"));
        f.required = match first {
            None => c.keyword("default_factory").is_none(),
            Some(d) => kind_of(d) == "ellipsis",
        };
        f.default_none = first.is_some_and(|d| kind_of(d) == "none");
        for (k, _) in &c.keywords {
            if DETECTOR_KEYWORDS.contains(&k.as_str()) {
                f.field_keywords.insert(k.clone());
            }
        }
        read_bounds(&c, src, &mut f);
    }
    for c in calls_within(ty, src) {
        let before = (f.lower.len(), f.upper.len(), f.flags.len());
        read_bounds(&c, src, &mut f);
        f.annotation_bounded |= before != (f.lower.len(), f.upper.len(), f.flags.len());
    }
    f
}

/// The bounds a call states, into the field (the tightest where two state one).
fn read_bounds(c: &py_decl::Call, src: &str, f: &mut Field) {
    let mut put = |dim: Dim, lower: bool, node: Option<Node>, exclusive: bool| {
        let Some(node) = node else { return };
        let b = Bound { value: number(node, src), exclusive };
        let map = if lower { &mut f.lower } else { &mut f.upper };
        let tighter = |old: &Bound| {
            if b.value.is_nan() || old.value.is_nan() {
                return b.value.is_nan();
            }
            if lower { b.value > old.value } else { b.value < old.value }
        };
        match map.get(&dim) {
            Some(old) if !tighter(old) => {}
            _ => {
                map.insert(dim, b);
            }
        }
    };
    let first = c.positional.first().copied();
    match c.name.as_str() {
        "Ge" => put(Dim::Value, true, first, false),
        "Gt" => put(Dim::Value, true, first, true),
        "Le" => put(Dim::Value, false, first, false),
        "Lt" => put(Dim::Value, false, first, true),
        "MinLen" => put(Dim::Length, true, first, false),
        "MaxLen" => put(Dim::Length, false, first, false),
        "Len" => {
            put(Dim::Length, true, first, false);
            put(Dim::Length, false, c.positional.get(1).copied(), false);
        }
        "MultipleOf" => {
            f.flags.insert("multiple_of");
        }
        name if KEYWORD_BOUNDS.contains(&name) || PARAMETER_CALLS.contains(&py_decl::last_segment(name)) => {
            for (k, v) in &c.keywords {
                let v = Some(*v);
                match k.as_str() {
                    "ge" => put(Dim::Value, true, v, false),
                    "gt" => put(Dim::Value, true, v, true),
                    "le" => put(Dim::Value, false, v, false),
                    "lt" => put(Dim::Value, false, v, true),
                    "min_length" | "min_items" => put(Dim::Length, true, v, false),
                    "max_length" | "max_items" => put(Dim::Length, false, v, false),
                    "max_digits" => put(Dim::Digits, false, v, false),
                    "decimal_places" => put(Dim::Places, false, v, false),
                    "multiple_of" => {
                        f.flags.insert("multiple_of");
                    }
                    "pattern" | "regex" => {
                        f.flags.insert("pattern");
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// A decorated method of a model: a validator when a decorator says so.
fn read_validator(stmt: Node, src: &str, m: &mut Model) {
    let Some(def) = field(stmt, "definition").filter(|d| kind_of(*d) == "function_definition") else {
        return;
    };
    let Some(name) = field(def, "name").map(|n| text(n, src).to_string()) else { return };
    for deco in named_children(stmt).into_iter().filter(|d| kind_of(*d) == "decorator") {
        let Some(expr) = deco.named_child(0) else { continue };
        let (kind, targets): (String, Vec<String>) = match call(expr, src) {
            Some(c) => (c.name.clone(), c.positional.iter().filter_map(|p| string(*p, src)).collect()),
            None => (py_decl::last_segment(&compact(text(expr, src))).to_string(), Vec::new()),
        };
        let targets = match kind.as_str() {
            "field_validator" | "validator" if targets.iter().any(|t| t == "*") => vec![String::new()],
            "field_validator" | "validator" => targets,
            "model_validator" | "root_validator" => vec![String::new()],
            _ => continue,
        };
        let body = field(def, "body").map(|b| compact(text(b, src))).unwrap_or_default();
        let shown = format!("`{}` (`def {name}`)", one_line(text(deco, src)));
        for t in targets {
            m.validators.entry(t).or_default().push(Validator {
                name: name.clone(),
                body: body.clone(),
                shown: shown.clone(),
            });
        }
    }
}

fn compare(old: &BTreeMap<String, Model>, new: &BTreeMap<String, Model>) -> Vec<RawFinding> {
    let mut out = Vec::new();
    for (model, a) in new {
        let Some(b) = old.get(model) else { continue };
        let mut push = |rule, line, symbol: String, before: &str, after: &str| {
            out.push(RawFinding {
                line,
                rule,
                symbol,
                before: before.to_string(),
                after: after.to_string(),
                in_test: false,
            });
        };
        for (name, af) in &a.fields {
            let Some(bf) = b.fields.get(name) else { continue };
            let symbol = format!("{model}.{name}");
            // The Python detector's findings on this field: left to it.
            let detector_erased =
                !bf.field_keywords.is_subset(&af.field_keywords) || (bf.annotation_bounded && !af.annotation_bounded);
            let loosened = bf.lower.iter().any(|(d, o)| bound_loosened(Some(*o), af.lower.get(d).copied(), true))
                || bf.upper.iter().any(|(d, o)| bound_loosened(Some(*o), af.upper.get(d).copied(), false))
                || !bf.flags.is_subset(&af.flags);
            // A bound dropped as the type became a project's own (`Int32`): not judged.
            let moved = py_decl::gains_own_type(&bf.annotation, &af.annotation);
            if loosened && !detector_erased && !moved {
                push(RuleId::PyPydanticBoundLoosened, af.line, symbol.clone(), &bf.shown, &af.shown);
            }
            let detector_optional = !bf.none_in_type && af.none_in_type;
            // Any default makes the field one the input may leave out.
            if bf.required && !af.required && !detector_optional {
                push(RuleId::PyPydanticOptionalAdded, af.line, symbol.clone(), &bf.shown, &af.shown);
            }
        }
        for (target, was) in &b.validators {
            if !target.is_empty() && !a.fields.contains_key(target) {
                continue;
            }
            let now = a.validators.get(target).map(Vec::as_slice).unwrap_or_default();
            let same = |x: &Validator, y: &Validator| x.name == y.name || x.body == y.body;
            let removed: Vec<&Validator> = was.iter().filter(|v| !now.iter().any(|n| same(v, n))).collect();
            let added = now.iter().any(|n| !was.iter().any(|v| same(v, n)));
            if let (Some(first), false) = (removed.first(), added) {
                let symbol = if target.is_empty() { model.clone() } else { format!("{model}.{target}") };
                let at = a.fields.get(target).map_or(a.line, |f| f.line);
                push(RuleId::PyPydanticValidatorRemoved, at, symbol, &first.shown, "");
            }
        }
        // A model that inherits both settings is judged at its parent.
        let own = b.extra.as_ref().is_some_and(|e| e.2) || a.extra.as_ref().is_some_and(|e| e.2);
        if let Some((value, shown, _)) = &b.extra
            && value == "forbid"
            && own
            && a.extra.as_ref().is_none_or(|(v, _, _)| v != "forbid")
        {
            let after = a.extra.as_ref().map(|(_, s, _)| s.as_str()).unwrap_or_default();
            push(RuleId::PyPydanticExtraAllowed, a.line, model.clone(), shown, after);
        }
        let detector_unfrozen = b.frozen_by_model_config && !a.frozen_by_model_config;
        if let (Some(shown), None, false) = (&b.frozen, &a.frozen, detector_unfrozen) {
            push(RuleId::PyPydanticFrozenRemoved, a.line, model.clone(), shown, "");
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(before: &str, after: &str) -> Vec<(RuleId, String)> {
        detect(before, after).unwrap().into_iter().map(|f| (f.rule, f.symbol)).collect()
    }

    const HEAD: &str = "from pydantic import BaseModel, Field, conint, field_validator\n\n";

    #[test]
    fn each_loosening_is_found_on_its_field() {
        let before = format!(
            "{HEAD}class User(BaseModel, frozen=True):\n    model_config = ConfigDict(extra=\"forbid\")\n    name: str = Field(max_length=64)\n    age: conint(ge=18)\n    email: str\n\n    @field_validator(\"email\")\n    @classmethod\n    def check(cls, v):\n        return v\n"
        );
        let after = format!(
            "{HEAD}class User(BaseModel):\n    model_config = ConfigDict(extra=\"ignore\")\n    name: str = Field(max_length=256)\n    age: conint(ge=0)\n    email: str = None\n"
        );
        let got = found(&before, &after);
        let want = [
            (RuleId::PyPydanticBoundLoosened, "User.age"),
            (RuleId::PyPydanticBoundLoosened, "User.name"),
            (RuleId::PyPydanticExtraAllowed, "User"),
            (RuleId::PyPydanticFrozenRemoved, "User"),
            (RuleId::PyPydanticOptionalAdded, "User.email"),
            (RuleId::PyPydanticValidatorRemoved, "User.email"),
        ];
        crate::widen::testing::assert_found(&got, &want);
    }

    #[test]
    fn narrowing_rewording_and_the_detectors_own_findings_are_not_reported() {
        let before = format!(
            "{HEAD}class Base(BaseModel):\n    model_config = ConfigDict(extra=\"forbid\", frozen=True)\n\nclass User(Base):\n    name: str = Field(max_length=64, pattern=r\"^a\")\n    age: conint(ge=0)\n    note: str\n\n    @field_validator(\"name\")\n    def check(cls, v):\n        return v\n"
        );
        let after = format!(
            "{HEAD}class Base(BaseModel):\n    model_config = ConfigDict(extra=\"forbid\")\n\nclass User(Base):\n    name: str = Field(max_length=32, pattern=r\"^b\")\n    age: int\n    note: Optional[str] = None\n\n    @field_validator(\"name\")\n    def check_name(cls, v):\n        return v.strip()\n"
        );
        assert_eq!(found(&before, &after), []);
    }

    #[test]
    fn inherited_forbid_overridden_in_a_subclass_is_found() {
        let before = format!(
            "{HEAD}class Base(BaseModel):\n    class Config:\n        extra = Extra.forbid\n\nclass User(Base):\n    name: str\n"
        );
        let after = format!(
            "{HEAD}class Base(BaseModel):\n    class Config:\n        extra = Extra.forbid\n\nclass User(Base):\n    model_config = {{\"extra\": \"allow\"}}\n    name: str\n"
        );
        assert_eq!(found(&before, &after), [(RuleId::PyPydanticExtraAllowed, "User".to_string())]);
    }

    #[test]
    fn deep_nesting_is_walked_without_recursion() {
        let depth = 3000;
        let nested = |leaf: &str| {
            let open = "conlist(".repeat(depth);
            let close = ")".repeat(depth);
            format!("{HEAD}class Deep(BaseModel):\n    x: {open}{leaf}{close}\n")
        };
        // The parse itself may refuse a tree this deep; the walk must not overflow.
        let _ = detect(&nested("int, max_length=1"), &nested("int, max_length=2"));
    }

    #[test]
    fn route_parameter_bounds_are_compared() {
        let head = "from fastapi import APIRouter, Query, Path\n\nrouter = APIRouter()\n\n";
        let before = format!(
            "{head}@router.get(\"/items\")\nasync def list_items(limit: int = Query(default=20, ge=1, le=100), q: str = Query(None, max_length=50)):\n    return []\n\ndef get(item_id: Annotated[int, Path(ge=1)], n: int = 3):\n    return item_id\n"
        );
        let after = format!(
            "{head}@router.get(\"/items\")\nasync def list_items(limit: int = Query(default=20, ge=0, le=100), q: str = Query(None, max_length=20)):\n    return []\n\ndef get(item_id: Annotated[int, Path(ge=0)], n: int = 3, verbose: bool = Query(False)):\n    return item_id\n"
        );
        let want =
            [(RuleId::PyPydanticBoundLoosened, "get.item_id"), (RuleId::PyPydanticBoundLoosened, "list_items.limit")];
        crate::widen::testing::assert_found(&found(&before, &after), &want);
    }

    #[test]
    fn files_without_a_model_base_are_not_parsed() {
        assert!(!may_hold("class A:\n    x: int = 1\n", "class A:\n    x: int = 2\n"));
    }
}
