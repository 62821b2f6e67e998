//! Python detector: annotated class attributes (dataclasses, pydantic models, typed
//! classes), module constants, function parameters and return types, frozen dataclasses
//! and models, and the guards of function bodies (`assert`, `if ...: raise`).
//!
//! Annotations are read as type expressions (`Optional[X]`, `Union[X, None]`, `X | None`,
//! `Literal[...]`, `Annotated[X, ...]`, `Final[X]`), whichever spelling a codebase uses, so
//! that respelling one nullable form as another is never reported.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::syntax::{
    Body, Check, Slot, compact, field, kind_of, line, named_children, one_line, pair_slots, removed_checks,
    slot_finding, text,
};
use super::{Family, Language, RawFinding, RuleDef, RuleId, Severity};

const PY: &[Language] = &[Language::Python];

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: RuleId::PyOptionalWidened,
        languages: PY,
        family: Family::Optionality,
        description: "An annotation that did not admit `None` now does (`X` to `Optional[X]` or `X | None`, also with the type changed: `Path` to `str | None`); a slot whose default was already `None` is not reported.",
        severity: Severity::High,
        message: "`{symbol}` may now be None: `{before}` became `{after}`",
        invariant: "Code reading the value could rely on it never being None.",
    },
    RuleDef {
        id: RuleId::PyLiteralErased,
        languages: PY,
        family: Family::EnumErasure,
        description: "A `Literal[...]` annotation, or an `Enum` class declared in the file, is replaced by its plain type (`str`, `int`, `bool`).",
        severity: Severity::Medium,
        message: "`{symbol}` accepts any value of the plain type now: `{before}` became `{after}`",
        invariant: "The value was one of a closed set that every branch on it could handle exhaustively.",
    },
    RuleDef {
        id: RuleId::PyTypeErased,
        languages: PY,
        family: Family::TypeErasure,
        description: "A concrete annotation is replaced by `Any`, `typing.Any` or `object`.",
        severity: Severity::Medium,
        message: "`{symbol}` lost its type: `{before}` became `{after}`",
        invariant: "Type checkers verified every use of the value against its concrete type.",
    },
    RuleDef {
        id: RuleId::PyContainerWidened,
        languages: PY,
        family: Family::TypeErasure,
        description: "A collection annotation became a more abstract one holding the same items (`list[T]` to `Sequence[T]`, `Sequence[T]` to `Iterable[T]`, `dict[K, V]` to `Mapping[K, V]`).",
        severity: Severity::Low,
        message: "`{symbol}` takes a more abstract collection: `{before}` became `{after}`",
        invariant: "The value had the old collection's operations (indexing, `len`, a second pass, mutation), and code using it could count on them.",
    },
    RuleDef {
        id: RuleId::PyConstrainedTypeErased,
        languages: PY,
        family: Family::NumericRange,
        description: "A constrained type (`conint(...)`, `PositiveInt`, pydantic's `EmailStr`/`HttpUrl`, `Annotated[int, Field(ge=0)]`, a `Field(ge=..., max_length=...)` bound) loses its constraint.",
        severity: Severity::Medium,
        message: "`{symbol}` lost a validated bound: `{before}` became `{after}`",
        invariant: "Validation rejected values outside the bound, so code downstream never saw them.",
    },
    RuleDef {
        id: RuleId::PyFinalRemoved,
        languages: PY,
        family: Family::MutabilityExposure,
        description: "A `Final` annotation is removed from a constant or attribute.",
        severity: Severity::Low,
        message: "`{symbol}` may be reassigned now: `{before}` became `{after}`",
        invariant: "The name kept its first value for the whole program, as type checkers enforced.",
    },
    RuleDef {
        id: RuleId::PyFrozenDataclassUnfrozen,
        languages: PY,
        family: Family::MutabilityExposure,
        description: "A frozen dataclass, attrs class or pydantic model (`frozen=True`) becomes mutable.",
        severity: Severity::Medium,
        message: "instances of `{symbol}` are mutable now: `{before}` became `{after}`",
        invariant: "Instances never changed after construction, so they could be shared, hashed and cached safely.",
    },
    RuleDef {
        id: RuleId::PyAssertRemoved,
        languages: PY,
        family: Family::CheckRemoved,
        description: "An `assert` statement is removed from a function body.",
        severity: Severity::High,
        message: "the assertion `{before}` was removed from `{symbol}`",
        invariant: "The asserted condition held at that point on every run that got past it.",
    },
    RuleDef {
        id: RuleId::PyRaiseGuardRemoved,
        languages: PY,
        family: Family::CheckRemoved,
        description: "An `if ...: raise` guard is removed from a function body.",
        severity: Severity::High,
        message: "the guard `{before}` was removed from `{symbol}`",
        invariant: "The function refused inputs or states that failed the guard's condition before doing any work.",
    },
    RuleDef {
        id: RuleId::PyEarlyReturnRemoved,
        languages: PY,
        family: Family::CheckRemoved,
        description: "A silent early return (`if not x: return`, a body of only `return`, `return None` or `return False`) is removed from a function that stays, and its condition is checked nowhere else in it.",
        severity: Severity::Medium,
        message: "the early return `{before}` was removed from `{symbol}`",
        invariant: "The function did nothing in the state the condition describes (nothing given, already done), so the rest of its body never ran there.",
    },
    RuleDef {
        id: RuleId::PyLiteralWidened,
        languages: PY,
        family: Family::EnumErasure,
        description: "A `Literal[...]` annotation (or a union of them) gains a value and keeps every old one (`Literal[\"a\", \"b\"]` to `Literal[\"a\", \"b\", \"c\"]`).",
        severity: Severity::Medium,
        message: "`{symbol}` admits more values now: `{before}` became `{after}`",
        invariant: "The value was one of a closed set that every branch on it handled; a new value reaches code that has no branch for it.",
    },
    RuleDef {
        id: RuleId::PyUnionWidened,
        languages: PY,
        family: Family::TypeErasure,
        description: "A union annotation gains a member other than `None` and keeps every old one (`str | Sequence[str]` to `str | Sequence[str] | Sentinel`); not a parameter whose function now tells the types apart with `isinstance(param, ...)`.",
        severity: Severity::Medium,
        message: "`{symbol}` admits another type now: `{before}` became `{after}`",
        invariant: "Every value was one of the old union's types, so code handling each of them handled them all.",
    },
];

/// Identifier node kinds of the Python grammar.
const IDENTS: &[&str] = &["identifier"];

/// Pydantic `Field(...)` / `constr(...)` keywords that bound a value.
pub(super) const BOUND_KEYWORDS: &[&str] = &[
    "ge",
    "gt",
    "le",
    "lt",
    "min_length",
    "max_length",
    "min_items",
    "max_items",
    "pattern",
    "regex",
    "multiple_of",
    "max_digits",
    "decimal_places",
];

/// Constrained types and the plain type each one narrows (pydantic and annotated-types).
const CONSTRAINED: &[(&str, &str)] = &[
    ("PositiveInt", "int"),
    ("NegativeInt", "int"),
    ("NonNegativeInt", "int"),
    ("NonPositiveInt", "int"),
    ("PositiveFloat", "float"),
    ("NegativeFloat", "float"),
    ("NonNegativeFloat", "float"),
    ("NonPositiveFloat", "float"),
    ("conint", "int"),
    ("confloat", "float"),
    ("constr", "str"),
    ("conbytes", "bytes"),
    ("condecimal", "Decimal"),
    ("conlist", "list"),
    ("conset", "set"),
    // pydantic's checked strings: each refuses what is no address or URL.
    ("EmailStr", "str"),
    ("NameEmail", "str"),
    ("AnyUrl", "str"),
    ("AnyHttpUrl", "str"),
    ("HttpUrl", "str"),
];

/// Metadata calls inside `Annotated[...]` that bound a value.
const BOUND_METADATA: &[&str] =
    &["Field", "Ge", "Gt", "Le", "Lt", "MinLen", "MaxLen", "Len", "Interval", "MultipleOf", "StringConstraints"];

/// The Python detector.
pub(crate) struct PythonDetector;

impl super::detector::Grammar for PythonDetector {
    type Inventory = Inventory;

    fn rules(&self) -> &'static [RuleDef] {
        RULES
    }

    fn grammar(&self, _path: &str) -> tree_sitter::Language {
        tree_sitter_python::LANGUAGE.into()
    }

    fn build(&self, tree: &tree_sitter::Tree, src: &str) -> Inventory {
        Inventory::build(tree.root_node(), src)
    }

    fn compare(&self, b: &Inventory, a: &Inventory) -> Vec<RawFinding> {
        let mut out = Vec::new();
        for (bs, as_) in pair_slots(&b.slots, &a.slots) {
            out.extend(classify(bs, as_, b).into_iter().map(|r| slot_finding(r, bs, as_)));
        }
        out.extend(removed_checks(&b.body, &a.body));
        out.extend(removed_returns(b, a));
        out
    }
}

/// Whether a function body tests `name` with `isinstance(name, ...)`.
fn narrows(body: &str, name: &str) -> bool {
    body.match_indices("isinstance(").any(|(i, m)| {
        let rest = body[i + m.len()..].trim_start();
        rest.strip_prefix(name).is_some_and(|r| r.trim_start().starts_with(','))
    })
}

/// The early returns of `b` gone from `a` ([`super::early_return::removed`]).
fn removed_returns(b: &Inventory, a: &Inventory) -> Vec<RawFinding> {
    super::early_return::removed(&b.body, &b.returns, &a.body, &a.returns)
}

fn classify(bs: &Slot<SlotInfo>, as_: &Slot<SlotInfo>, before: &Inventory) -> Vec<RuleId> {
    let (b, a) = (&bs.info, &as_.info);
    let mut rules = Vec::new();
    if b.frozen && !a.frozen {
        rules.push(RuleId::PyFrozenDataclassUnfrozen);
    }
    // A bound dropped as the type became a project's own (`int` with `le=` to `Int32`)
    // may have moved into that type: not judged.
    let moved = match (&b.ty, &a.ty) {
        (Some(bt), Some(at)) => super::py_decl::gains_own_type(&bt.key, &at.key),
        _ => false,
    };
    if b.bounds.iter().any(|k| !a.bounds.contains(k)) && !moved {
        rules.push(RuleId::PyConstrainedTypeErased);
    }
    let (Some(bt), Some(at)) = (&b.ty, &a.ty) else {
        return rules;
    };
    if bt.final_ && !at.final_ {
        rules.push(RuleId::PyFinalRemoved);
    }
    // A parameter's union gaining a type its function now tells apart with
    // `isinstance` is a new case handled, not an old one no longer checked.
    rules.extend(
        classify_type(bt, at, b.default_none, before).filter(|r| !(*r == RuleId::PyUnionWidened && a.narrowed)),
    );
    rules.sort();
    rules.dedup();
    rules
}

/// How an annotation loosened, if it did. `b_default_none`: the old slot defaulted to
/// None, so it already admitted None.
fn classify_type(bt: &PyType, at: &PyType, b_default_none: bool, before: &Inventory) -> Option<RuleId> {
    if bt.key == at.key {
        return None;
    }
    let core =
        |t: &PyType| -> BTreeSet<String> { t.members.iter().filter(|m| !m.none).map(|m| m.key.clone()).collect() };
    let (bcore, acore) = (core(bt), core(at));
    let erased =
        |s: &BTreeSet<String>| s.iter().any(|m| matches!(m.as_str(), "Any" | "typing.Any" | "t.Any" | "object"));
    let b_members: Vec<&PyMember> = bt.members.iter().filter(|m| !m.none).collect();
    let a_members: Vec<&PyMember> = at.members.iter().filter(|m| !m.none).collect();
    if erased(&acore) && !erased(&bcore) {
        return Some(RuleId::PyTypeErased);
    }
    if !b_members.is_empty()
        && b_members.iter().all(|m| {
            let plains = match &m.literal {
                Some(kinds) => kinds.clone(),
                None => before.enums.get(&m.key).cloned().unwrap_or_default(),
            };
            !plains.is_empty() && plains.iter().any(|p| acore.contains(*p))
        })
    {
        return Some(RuleId::PyLiteralErased);
    }
    if !b_members.is_empty() && b_members.iter().all(|m| m.constrained.is_some_and(|plain| acore.contains(plain))) {
        return Some(RuleId::PyConstrainedTypeErased);
    }
    // A default of None already admitted None: `x: X = None` to `x: Optional[X] = None`
    // only writes down what was true.
    let b_none = b_default_none || bt.members.iter().any(|m| m.none);
    let a_none = at.members.iter().any(|m| m.none);
    let unwrapped: BTreeSet<String> = b_members.iter().map(|m| m.plain.clone()).collect();
    let a_plain: BTreeSet<String> = a_members.iter().map(|m| m.plain.clone()).collect();
    if !b_none && a_none && !unwrapped.is_empty() && unwrapped.is_subset(&a_plain) {
        return Some(RuleId::PyOptionalWidened);
    }
    // None gained while the type changed too (`Path` to `str | None`): whatever the
    // new type admits, None is a value the old one refused.
    if !b_none && a_none && !b_members.is_empty() && !a_members.is_empty() {
        return Some(RuleId::PyOptionalWidened);
    }
    // A collection made more abstract, holding the same items (`Sequence[str]` to
    // `Iterable[str]`).
    if let ([bm], [am]) = (b_members.as_slice(), a_members.as_slice())
        && let (Some((bh, bargs)), Some((ah, aargs))) = (collection(&bm.key), collection(&am.key))
        && bargs == aargs
        && CONTAINER_KINDS.iter().any(|(kind, of)| *kind == bh && of.contains(&ah))
    {
        return Some(RuleId::PyContainerWidened);
    }
    // A closed set that gained members: literal values, or a union's types (a new
    // member other than None; a gained None is the optional rule's, and an old None
    // must stay). Neither can be what the container comparison below reads (one
    // non-Literal member on each side).
    if let (Some(bv), Some(av)) = (literal_values(&b_members), literal_values(&a_members))
        && bv.len() < av.len()
        && bv.is_subset(&av)
    {
        return Some(RuleId::PyLiteralWidened);
    }
    if !bcore.is_empty()
        && acore.len() >= 2
        && bcore.len() < acore.len()
        && bcore.is_subset(&acore)
        && (a_none || !b_none)
    {
        return Some(RuleId::PyUnionWidened);
    }
    // The same container on both sides (`list[int]` to `list[int | None]`): compare what
    // it holds.
    if let ([bm], [am]) = (b_members.as_slice(), a_members.as_slice())
        && let (Some((bh, bargs)), Some((ah, aargs))) = (generic(&bm.key), generic(&am.key))
        && bh == ah
        && !matches!(bh, "Literal" | "Annotated" | "Optional" | "Union" | "Final" | "ClassVar")
    {
        let (bargs, aargs) = (split_top(bargs, ','), split_top(aargs, ','));
        if bargs.len() == aargs.len() {
            return bargs.iter().zip(&aargs).find_map(|(b, a)| classify_type(&py_type(b), &py_type(a), false, before));
        }
    }
    None
}

/// The values of a union of `Literal[...]` members, formatting-blind; `None` when a
/// member is not a literal (or there is none).
fn literal_values(members: &[&PyMember]) -> Option<BTreeSet<String>> {
    let mut values = BTreeSet::new();
    for m in members {
        match generic(&m.key) {
            Some(("Literal", inner)) => values.extend(split_top(inner, ',').into_iter().map(|v| v.trim().to_string())),
            _ => return None,
        }
    }
    (!values.is_empty()).then_some(values)
}

/// An annotation, read as a type expression.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct PyType {
    key: String,
    final_: bool,
    members: Vec<PyMember>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct PyMember {
    /// Formatting-blind text.
    key: String,
    /// The member with `Annotated`/constraints unwrapped to its plain type.
    plain: String,
    none: bool,
    /// For `Literal[...]`, the plain types of its values.
    #[serde(deserialize_with = "super::stored::opt_word_set")]
    literal: Option<BTreeSet<super::stored::Word>>,
    /// For a constrained type, the plain type it narrows.
    #[serde(deserialize_with = "super::stored::opt_word")]
    constrained: Option<super::stored::Word>,
}

/// Splits `s` at top-level occurrences of `sep` (outside brackets and quotes).
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0);
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '(' | '{') => depth += 1,
            (None, ']' | ')' | '}') => depth -= 1,
            (None, c) if c == sep && depth == 0 => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// `Name[args]` as (`Name`'s last dotted segment, `args`).
/// The more abstract collection types each collection type is one of (the builtins
/// and `collections.abc`, as `typing` spells them too).
const CONTAINER_KINDS: &[(&str, &[&str])] = &[
    ("list", &["MutableSequence", "Sequence", "Reversible", "Collection", "Iterable"]),
    ("deque", &["MutableSequence", "Sequence", "Reversible", "Collection", "Iterable"]),
    ("MutableSequence", &["Sequence", "Reversible", "Collection", "Iterable"]),
    ("Sequence", &["Reversible", "Collection", "Iterable"]),
    ("Reversible", &["Iterable"]),
    ("set", &["MutableSet", "AbstractSet", "Collection", "Iterable"]),
    ("frozenset", &["AbstractSet", "Collection", "Iterable"]),
    ("MutableSet", &["AbstractSet", "Collection", "Iterable"]),
    ("AbstractSet", &["Collection", "Iterable"]),
    ("dict", &["MutableMapping", "Mapping"]),
    ("defaultdict", &["dict", "MutableMapping", "Mapping"]),
    ("OrderedDict", &["dict", "MutableMapping", "Mapping"]),
    ("MutableMapping", &["Mapping"]),
    ("Collection", &["Iterable"]),
    ("Iterator", &["Iterable"]),
];

/// A collection annotation's kind (its head without the module, `typing`'s capitalised
/// builtins lowered) and its arguments (empty when bare).
fn collection(key: &str) -> Option<(&str, &str)> {
    let (head, args) = match generic(key) {
        Some(g) => g,
        None => (key.rsplit('.').next().unwrap_or(key), ""),
    };
    let head = match head {
        "List" => "list",
        "Dict" => "dict",
        "FrozenSet" => "frozenset",
        "Deque" => "deque",
        "DefaultDict" => "defaultdict",
        // `typing.Set` is the builtin; `collections.abc.Set` the abstract one: which one
        // a bare `Set` is cannot be told here, so it is neither.
        "Set" => return None,
        other => other,
    };
    Some((head, args))
}

fn generic(s: &str) -> Option<(&str, &str)> {
    let open = s.find('[')?;
    let inner = s[open + 1..].strip_suffix(']')?;
    let head = &s[..open];
    Some((head.rsplit('.').next().unwrap_or(head), inner))
}

fn py_type(annotation: &str) -> PyType {
    let key = compact(annotation);
    // A forward reference (`"Optional[Node]"`) is the same type as its unquoted spelling.
    let key = match key.strip_prefix(['"', '\'']) {
        Some(inner) if inner.ends_with(['"', '\'']) => inner[..inner.len() - 1].to_string(),
        _ => key,
    };
    let mut t = PyType { key: key.clone(), ..PyType::default() };
    let mut body = key.as_str();
    loop {
        match generic(body) {
            Some(("Final", inner)) => {
                t.final_ = true;
                body = inner;
            }
            Some(("ClassVar", inner)) => body = inner,
            _ => break,
        }
    }
    if body.rsplit('.').next() == Some("Final") {
        // Bare `Final`: the type is inferred from the value.
        t.final_ = true;
        return t;
    }
    collect_members(body, &mut t.members, 0);
    t
}

/// How deep an annotation is read into its unions, `Optional`s and `Annotated`s; below
/// that a type is one member, by its text. No annotation a person writes comes near
/// it, and the bound keeps the recursive reading within a few kilobytes of stack
/// however deep a generated annotation nests.
const MAX_TYPE_DEPTH: usize = 64;

fn collect_members(s: &str, out: &mut Vec<PyMember>, depth: usize) {
    if depth >= MAX_TYPE_DEPTH {
        out.push(member(s, depth));
        return;
    }
    let parts = split_top(s, '|');
    if parts.len() > 1 {
        for p in parts {
            collect_members(p, out, depth + 1);
        }
        return;
    }
    match generic(s) {
        Some(("Optional", inner)) => {
            collect_members(inner, out, depth + 1);
            out.push(member("None", depth));
        }
        Some(("Union", inner)) => {
            for p in split_top(inner, ',') {
                collect_members(p, out, depth + 1);
            }
        }
        _ => out.push(member(s, depth)),
    }
}

/// One member of a union, `depth` levels inside the annotation.
fn member(s: &str, depth: usize) -> PyMember {
    let mut m =
        PyMember { key: s.to_string(), plain: s.to_string(), none: s == "None", literal: None, constrained: None };
    let head = s.split(['(', '[']).next().unwrap_or(s);
    let head = head.rsplit('.').next().unwrap_or(head);
    if let Some((_, plain)) = CONSTRAINED.iter().find(|(c, _)| *c == head) {
        m.constrained = Some(plain);
        m.plain = plain.to_string();
    }
    match generic(s) {
        Some(("Literal", values)) => {
            m.literal = Some(split_top(values, ',').into_iter().filter_map(literal_kind).collect());
        }
        Some(("Annotated", inner)) if depth < MAX_TYPE_DEPTH => {
            let parts = split_top(inner, ',');
            let base = member(parts[0], depth + 1);
            let bounded = parts[1..].iter().any(|meta| {
                let name = meta.split('(').next().unwrap_or(meta);
                let name = name.rsplit('.').next().unwrap_or(name);
                BOUND_METADATA.contains(&name)
                    && (name != "Field" || BOUND_KEYWORDS.iter().any(|k| meta.contains(&format!("{k}="))))
            });
            m.plain = base.plain.clone();
            m.literal = base.literal;
            m.none = base.none;
            m.constrained = base.constrained;
            if bounded {
                m.constrained = CONSTRAINED
                    .iter()
                    .map(|(_, p)| *p)
                    .chain(["int", "float", "str", "bytes", "Decimal", "list", "set"])
                    .find(|p| *p == base.plain);
            }
        }
        _ => {}
    }
    m
}

fn literal_kind(v: &str) -> Option<&'static str> {
    let v = v.trim();
    if v.starts_with(['"', '\'']) {
        Some("str")
    } else if v.starts_with(['b', 'B']) && v[1..].starts_with(['"', '\'']) {
        Some("bytes")
    } else if v == "True" || v == "False" {
        Some("bool")
    } else if v.trim_start_matches('-').parse::<i64>().is_ok() {
        Some("int")
    } else {
        None
    }
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct SlotInfo {
    ty: Option<PyType>,
    default_none: bool,
    /// Bounding keywords of a `Field(...)` default (`ge=0`), by keyword.
    bounds: BTreeSet<String>,
    /// For a class slot: the class is frozen.
    frozen: bool,
    /// For a parameter: its function's body tests it with `isinstance(name, ...)`, so
    /// a type the union gains is one the function tells apart and handles.
    #[serde(default)]
    narrowed: bool,
}

#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Inventory {
    slots: Vec<Slot<SlotInfo>>,
    body: Body,
    /// Enum classes declared in the file, with the plain types their values may have.
    #[serde(deserialize_with = "super::stored::word_sets")]
    enums: BTreeMap<String, BTreeSet<super::stored::Word>>,
    /// Silent early returns (`if not x: return`), apart from `body.checks` so that the
    /// guard rules' matching stays exactly as it was without them.
    returns: Vec<Check>,
}

#[derive(Clone, Copy, PartialEq)]
enum Scope {
    Class,
    Function,
}

/// One step of the walk. The walk keeps its own stack of steps instead of recursing: a
/// generated file (`1 + 1 + ...` thousands of terms long) makes a tree as deep as the
/// file is long, deeper than any thread's stack.
enum Step<'a> {
    /// Visit a node, with the decorators written above it.
    Visit(Node<'a>, Vec<Node<'a>>),
    /// A class's or function's body is walked: leave its scope.
    Leave { is_test: bool },
}

struct Walker<'a> {
    src: &'a str,
    inv: Inventory,
    scope: Vec<(String, Scope)>,
    test_depth: usize,
    /// The steps the current one asks for, in order: run after it, before anything
    /// already waiting (where a recursive walk would have called them).
    later: Vec<Step<'a>>,
}

impl Inventory {
    fn build(root: Node, src: &str) -> Inventory {
        let mut w = Walker { src, inv: Inventory::default(), scope: Vec::new(), test_depth: 0, later: Vec::new() };
        let mut stack = vec![Step::Visit(root, Vec::new())];
        while let Some(step) = stack.pop() {
            match step {
                Step::Visit(node, decorators) => w.visit(node, &decorators),
                Step::Leave { is_test } => {
                    w.scope.pop();
                    w.test_depth -= usize::from(is_test);
                }
            }
            stack.extend(w.later.drain(..).rev());
        }
        w.inv
    }
}

impl<'a> Walker<'a> {
    fn symbol(&self, name: &str) -> String {
        let mut parts: Vec<&str> = self.scope.iter().map(|(n, _)| n.as_str()).collect();
        parts.push(name);
        parts.join(".")
    }

    fn in_function(&self) -> bool {
        self.scope.iter().any(|(_, s)| *s == Scope::Function)
    }

    fn owner(&self) -> Option<String> {
        self.in_function().then(|| self.scope.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join("."))
    }

    /// Visits the named children of `node` after the current step.
    fn visit_children(&mut self, node: Node<'a>) {
        super::syntax::for_each_named(node, |child| self.later.push(Step::Visit(child, Vec::new())));
    }

    /// Records a check of the current owner.
    fn push_check(&mut self, rule: RuleId, owner: &str, cond: Node, display: String) {
        let check = Check::new(rule, owner, cond, self.src, display, self.test_depth > 0, IDENTS);
        self.inv.body.checks.push(check);
    }

    fn visit(&mut self, node: Node<'a>, decorators: &[Node<'a>]) {
        match kind_of(node) {
            "decorated_definition" => {
                let decos: Vec<Node> = named_children(node).into_iter().filter(|c| kind_of(c) == "decorator").collect();
                if let Some(def) = field(node, "definition") {
                    self.later.push(Step::Visit(def, decos));
                }
            }
            "class_definition" => self.class(node, decorators),
            "function_definition" => self.function(node),
            "call" => {
                if let (Some(owner), Some(f)) = (self.owner(), field(node, "function")) {
                    self.inv.body.note_call(&owner, f, self.src);
                }
                self.visit_children(node);
            }
            "assignment" => {
                self.assignment(node);
                self.visit_children(node);
            }
            "assert_statement" => {
                if let (Some(owner), Some(cond)) = (self.owner(), node.named_child(0)) {
                    self.push_check(RuleId::PyAssertRemoved, &owner, cond, one_line(text(node, self.src)));
                }
                self.visit_children(node);
            }
            "if_statement" | "elif_clause" => {
                self.raise_guard(node);
                self.visit_children(node);
            }
            _ => self.visit_children(node),
        }
    }

    fn class(&mut self, node: Node<'a>, decorators: &[Node<'a>]) {
        let Some(name) = field(node, "name").map(|n| text(n, self.src).to_string()) else {
            return;
        };
        let symbol = self.symbol(&name);
        let bases = field(node, "superclasses").map(|s| compact(text(s, self.src))).unwrap_or_default();
        let enum_kinds: Option<BTreeSet<&'static str>> = split_top(bases.trim_matches(['(', ')']), ',')
            .into_iter()
            .map(|b| b.rsplit('.').next().unwrap_or(b))
            .find_map(|b| match b {
                "StrEnum" => Some(BTreeSet::from(["str"])),
                "IntEnum" | "IntFlag" => Some(BTreeSet::from(["int"])),
                "Enum" | "Flag" => Some(BTreeSet::from(["str", "int"])),
                _ => None,
            });
        if let Some(kinds) = enum_kinds {
            self.inv.enums.insert(name.clone(), kinds);
        }
        // Frozen by decorator (`@dataclass(frozen=True)`, `@attrs.frozen`) or by pydantic
        // configuration (`model_config = ConfigDict(frozen=True)`).
        let mut frozen_by: Option<Node> = decorators.iter().copied().find(|d| {
            let t = compact(text(*d, self.src));
            let head = t.trim_start_matches('@').split('(').next().unwrap_or("").to_string();
            t.contains("frozen=True") || head.rsplit('.').next() == Some("frozen")
        });
        let body = field(node, "body");
        if frozen_by.is_none()
            && let Some(body) = body
        {
            frozen_by = named_children(body).into_iter().filter_map(|s| s.named_child(0)).find(|a| {
                kind_of(a) == "assignment"
                    && field(*a, "left").is_some_and(|l| text(l, self.src) == "model_config")
                    && compact(text(*a, self.src)).contains("frozen=True")
            });
        }
        let shown = frozen_by
            .or_else(|| decorators.first().copied())
            .map(|d| one_line(text(d, self.src)))
            .unwrap_or_else(|| format!("class {name}"));
        self.inv.slots.push(Slot {
            key: format!("class {symbol}"),
            symbol: symbol.clone(),
            line: line(node),
            display: shown,
            in_test: self.test_depth > 0,
            info: SlotInfo { frozen: frozen_by.is_some(), ..SlotInfo::default() },
        });
        let is_test = name.starts_with("Test");
        self.test_depth += usize::from(is_test);
        self.scope.push((name, Scope::Class));
        if let Some(body) = body {
            self.visit_children(body);
        }
        self.later.push(Step::Leave { is_test });
    }

    fn function(&mut self, node: Node<'a>) {
        let Some(name) = field(node, "name").map(|n| text(n, self.src).to_string()) else {
            return;
        };
        let symbol = self.symbol(&name);
        self.inv.body.owners.entry(symbol.clone()).or_insert(line(node));
        let is_test = name.starts_with("test");
        self.test_depth += usize::from(is_test);
        if let Some(params) = field(node, "parameters") {
            let body = field(node, "body").map(|b| text(b, self.src)).unwrap_or_default();
            for p in named_children(params) {
                self.parameter(&symbol, p, body);
            }
        }
        if let Some(ret) = field(node, "return_type") {
            self.inv.slots.push(Slot {
                key: format!("{symbol}->"),
                symbol: symbol.clone(),
                line: line(ret),
                display: format!("-> {}", one_line(text(ret, self.src))),
                in_test: self.test_depth > 0,
                info: SlotInfo { ty: Some(py_type(text(ret, self.src))), ..SlotInfo::default() },
            });
        }
        self.scope.push((name, Scope::Function));
        if let Some(body) = field(node, "body") {
            self.visit_children(body);
        }
        self.later.push(Step::Leave { is_test });
    }

    /// One typed parameter; `body`: its function's body.
    fn parameter(&mut self, symbol: &str, p: Node, body: &str) {
        let (name, ty, default) = match kind_of(p) {
            "typed_parameter" => {
                (named_children(p).into_iter().find(|c| kind_of(c) == "identifier"), field(p, "type"), None)
            }
            "typed_default_parameter" => (field(p, "name"), field(p, "type"), field(p, "value")),
            _ => return,
        };
        let (Some(name), Some(ty)) = (name, ty) else {
            return;
        };
        let mut info = self.slot_info(ty, default);
        info.narrowed = narrows(body, text(name, self.src));
        self.inv.slots.push(Slot {
            key: format!("{symbol}({})", text(name, self.src)),
            symbol: symbol.to_string(),
            line: line(p),
            display: one_line(text(p, self.src)),
            in_test: self.test_depth > 0,
            info,
        });
    }

    /// `name: T` or `name: T = value` in a class body or at module level.
    fn assignment(&mut self, node: Node) {
        if self.in_function() {
            return;
        }
        let (Some(left), Some(ty)) = (field(node, "left"), field(node, "type")) else {
            return;
        };
        if kind_of(left) != "identifier" {
            return;
        }
        let name = text(left, self.src);
        let info = self.slot_info(ty, field(node, "right"));
        self.inv.slots.push(Slot {
            key: self.symbol(name),
            symbol: self.symbol(name),
            line: line(node),
            display: one_line(text(node, self.src)),
            in_test: self.test_depth > 0,
            info,
        });
    }

    fn slot_info(&self, ty: Node, default: Option<Node>) -> SlotInfo {
        let mut info = SlotInfo {
            ty: Some(py_type(text(ty, self.src))),
            default_none: default.is_some_and(|d| kind_of(d) == "none"),
            ..SlotInfo::default()
        };
        // `Field(...)` (pydantic) and `field(...)` (dataclasses): bounds, and a default
        // of None given as `default=None` or as pydantic's first positional argument.
        let callee = default
            .filter(|d| kind_of(d) == "call")
            .and_then(|d| Some((field(d, "function")?, field(d, "arguments")?)));
        if let Some((f, args)) = callee {
            let name = text(f, self.src).rsplit('.').next().unwrap_or("");
            if name != "Field" && name != "field" {
                return info;
            }
            for (i, arg) in named_children(args).into_iter().enumerate() {
                if kind_of(arg) != "keyword_argument" {
                    info.default_none |= i == 0 && name == "Field" && kind_of(arg) == "none";
                    continue;
                }
                let key = field(arg, "name").map(|k| text(k, self.src)).unwrap_or("");
                if name == "Field" && BOUND_KEYWORDS.contains(&key) {
                    info.bounds.insert(key.to_string());
                }
                if key == "default" && field(arg, "value").is_some_and(|v| kind_of(v) == "none") {
                    info.default_none = true;
                }
            }
        }
        info
    }

    /// `if cond: raise ...` (also in an `elif`).
    fn raise_guard(&mut self, node: Node) {
        let (Some(owner), Some(cond), Some(cons)) =
            (self.owner(), field(node, "condition"), field(node, "consequence"))
        else {
            return;
        };
        self.inv.body.note_condition(&owner, cond, self.src);
        let Some(raise) = named_children(cons).into_iter().find(|s| kind_of(s) == "raise_statement") else {
            return self.early_return(&owner, node, cond, cons);
        };
        if in_handler_that_reraises(node) {
            return;
        }
        let display = format!("if {}: {}", one_line(text(cond, self.src)), one_line(text(raise, self.src)));
        self.push_check(RuleId::PyRaiseGuardRemoved, &owner, cond, display);
    }
}

impl Walker<'_> {
    /// `if not x: return` (`return None`, `return False`): an `if` without `elif` or
    /// `else` whose block is only that return.
    fn early_return(&mut self, owner: &str, node: Node, cond: Node, cons: Node) {
        if kind_of(node) != "if_statement" || field(node, "alternative").is_some() {
            return;
        }
        let [ret] = named_children(cons).into_iter().filter(|s| kind_of(s) != "comment").collect::<Vec<_>>()[..] else {
            return;
        };
        if kind_of(ret) != "return_statement"
            || !ret.named_child(0).is_none_or(|v| matches!(kind_of(v), "none" | "false"))
        {
            return;
        }
        let display = format!("if {}: {}", one_line(text(cond, self.src)), one_line(text(ret, self.src)));
        let check =
            Check::new(RuleId::PyEarlyReturnRemoved, owner, cond, self.src, display, self.test_depth > 0, IDENTS);
        self.inv.returns.push(check);
    }
}

/// Whether `node` sits in an `except` handler whose body ends with a `raise`: every
/// path through such a handler raises, so an `if ...: raise` inside it only chooses
/// which exception leaves (error translation), and removing it lets nothing through.
fn in_handler_that_reraises(node: Node) -> bool {
    let mut cur = node.parent();
    while let Some(n) = cur {
        match kind_of(n) {
            "except_clause" | "except_group_clause" => {
                let body = named_children(n).into_iter().rev().find(|c| kind_of(c) == "block");
                return body
                    .and_then(|b| named_children(b).into_iter().rev().find(|c| !kind_of(c).ends_with("comment")))
                    .is_some_and(|last| kind_of(last) == "raise_statement");
            }
            "function_definition" | "class_definition" => return false,
            _ => cur = n.parent(),
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::widen::DetectError;

    fn detect(path: &str, before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
        crate::widen::detector::run(Language::Python, path, before, after, true)
    }

    #[test]
    fn syntax_error_is_a_detect_error() {
        let err = detect("a.py", "def f(:\n", "x = 1\n").unwrap_err();
        assert!(err.0.contains("old version"), "{err}");
    }

    #[test]
    fn asserts_in_test_functions_are_marked() {
        let before = "def test_limit():\n    q = Query()\n    assert q.limit == 10\n";
        let after = "def test_limit():\n    q = Query()\n";
        let got = detect("a.py", before, after).unwrap();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].symbol, "test_limit");
        assert!(got[0].in_test);
    }

    #[test]
    fn methods_of_test_classes_are_test_code() {
        let before = "class TestQuery:\n    def check(self):\n        assert self.q.limit > 0\n";
        let after = "class TestQuery:\n    def check(self):\n        pass\n";
        let got = detect("a.py", before, after).unwrap();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].symbol, "TestQuery.check");
        assert!(got[0].in_test);
        let plain = detect("a.py", &before.replace("TestQuery", "Query"), &after.replace("TestQuery", "Query"));
        assert!(!plain.unwrap()[0].in_test);
    }

    #[test]
    fn every_nullable_spelling_is_nullable() {
        for t in ["Optional[int]", "int | None", "Union[int, None]", "typing.Optional[int]", "None | int"] {
            let parsed = py_type(t);
            assert!(parsed.members.iter().any(|m| m.none), "{t}");
            assert!(parsed.members.iter().any(|m| m.key == "int"), "{t}");
        }
    }
}
