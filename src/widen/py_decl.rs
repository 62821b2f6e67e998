//! What the Python declared-constraint passes (pydantic, Django, SQLAlchemy) read alike:
//! the classes of a module with their bases, class keywords and body statements, calls
//! with their positional and keyword arguments, number and string literals.
//!
//! Only declarations are read (module level, class bodies, classes nested in classes),
//! never function bodies: constraints these libraries declare live in class bodies. Every
//! walk is iterative (an explicit stack): nesting depth is input-sized.

use tree_sitter::Node;

use super::syntax::{compact, field, kind_of, line, named_children, text};

/// One class of the module, nested classes included (`Outer.Inner`).
pub(super) struct Class<'t> {
    /// Dotted: `User`, `User.Meta`.
    pub(super) symbol: String,
    pub(super) line: u32,
    /// Each positional base, compacted, its subscript cut (`RootModel[int]` is
    /// `RootModel`), its module kept (`models.Model`).
    pub(super) bases: Vec<String>,
    /// Class keywords (`class M(BaseModel, extra="forbid")`).
    pub(super) keywords: Vec<(String, Node<'t>)>,
    /// The statements of the body (decorated definitions as they are).
    pub(super) body: Vec<Node<'t>>,
}

impl Class<'_> {
    /// Whether a base's last dotted segment is one of `names`.
    pub(super) fn derives(&self, names: &[&str]) -> bool {
        self.bases.iter().any(|b| names.contains(&last_segment(b)))
    }
}

/// `a.b.C` is `C`.
pub(super) fn last_segment(s: &str) -> &str {
    s.rsplit('.').next().unwrap_or(s)
}

/// Every class of the module in source order (an outer class before those nested in
/// it), read from module level, `if`/`try` blocks at module level (`if TYPE_CHECKING:`)
/// and class bodies.
pub(super) fn classes<'t>(root: Node<'t>, src: &str) -> Vec<Class<'t>> {
    let mut out = Vec::new();
    // (outer class symbol, statement), in reverse so that pops come in source order.
    let mut stack: Vec<(Option<String>, Node<'t>)> =
        named_children(root).into_iter().rev().map(|n| (None, n)).collect();
    while let Some((outer, node)) = stack.pop() {
        match kind_of(node) {
            "decorated_definition" => {
                if let Some(def) = field(node, "definition") {
                    stack.push((outer, def));
                }
            }
            "if_statement" | "try_statement" | "else_clause" | "elif_clause" | "block" if outer.is_none() => {
                for child in named_children(node).into_iter().rev() {
                    stack.push((None, child));
                }
            }
            "class_definition" => {
                let Some(name) = field(node, "name") else { continue };
                let symbol = match &outer {
                    Some(o) => format!("{o}.{}", text(name, src)),
                    None => text(name, src).to_string(),
                };
                let mut bases = Vec::new();
                let mut keywords = Vec::new();
                if let Some(args) = field(node, "superclasses") {
                    for arg in named_children(args) {
                        match kind_of(arg) {
                            "keyword_argument" => {
                                if let (Some(k), Some(v)) = (field(arg, "name"), field(arg, "value")) {
                                    keywords.push((text(k, src).to_string(), v));
                                }
                            }
                            "comment" => {}
                            _ => {
                                let t = compact(text(arg, src));
                                bases.push(t.split('[').next().unwrap_or(&t).to_string());
                            }
                        }
                    }
                }
                let body: Vec<Node<'t>> = field(node, "body").map(named_children).unwrap_or_default();
                for stmt in body.iter().rev() {
                    if matches!(kind_of(*stmt), "class_definition" | "decorated_definition") {
                        stack.push((Some(symbol.clone()), *stmt));
                    }
                }
                out.push(Class { symbol, line: line(node), bases, keywords, body });
            }
            _ => {}
        }
    }
    out
}

/// The assignment a body statement holds (`name: T = value`, `name = value`), as
/// (name, annotation, value, the statement).
pub(super) fn assignment<'t>(stmt: Node<'t>, src: &str) -> Option<(String, Option<Node<'t>>, Option<Node<'t>>)> {
    let a = match kind_of(stmt) {
        "expression_statement" => stmt.named_child(0)?,
        "assignment" => stmt,
        _ => return None,
    };
    if kind_of(a) != "assignment" {
        return None;
    }
    let left = field(a, "left")?;
    if kind_of(left) != "identifier" {
        return None;
    }
    Some((text(left, src).to_string(), field(a, "type"), field(a, "right")))
}

/// A call's parts: the callee's last dotted segment, the positional arguments and the
/// keyword arguments.
pub(super) struct Call<'t> {
    /// The line the call starts on.
    pub(super) line: u32,
    pub(super) name: String,
    pub(super) positional: Vec<Node<'t>>,
    pub(super) keywords: Vec<(String, Node<'t>)>,
}

impl<'t> Call<'t> {
    pub(super) fn keyword(&self, name: &str) -> Option<Node<'t>> {
        self.keywords.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }
}

/// `node` read as a call, or `None`.
pub(super) fn call<'t>(node: Node<'t>, src: &str) -> Option<Call<'t>> {
    if kind_of(node) != "call" {
        return None;
    }
    let callee = compact(text(field(node, "function")?, src));
    let args = field(node, "arguments")?;
    let mut positional = Vec::new();
    let mut keywords = Vec::new();
    for arg in named_children(args) {
        match kind_of(arg) {
            "keyword_argument" => {
                if let (Some(k), Some(v)) = (field(arg, "name"), field(arg, "value")) {
                    keywords.push((text(k, src).to_string(), v));
                }
            }
            "comment" => {}
            _ => positional.push(arg),
        }
    }
    let name = last_segment(&callee).to_string();
    Some(Call { line: line(node), name, positional, keywords })
}

/// Every call inside `node` (itself included), outermost first: an explicit stack.
pub(super) fn calls_within<'t>(node: Node<'t>, src: &str) -> Vec<Call<'t>> {
    let mut out = Vec::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if let Some(c) = call(n, src) {
            out.push(c);
        }
        let mut children = named_children(n);
        children.reverse();
        stack.extend(children);
    }
    out
}

/// A number literal's value (`64`, `1_000`, `0.5`, `-1`, `1e3`); `NaN` for anything else
/// (a constant, an expression).
pub(super) fn number(node: Node, src: &str) -> f64 {
    let t = compact(text(node, src)).replace('_', "");
    t.parse().unwrap_or(f64::NAN)
}

/// A plain string literal's content (no f-string, no concatenation); `None` otherwise.
pub(super) fn string(node: Node, src: &str) -> Option<String> {
    if kind_of(node) != "string" || named_children(node).iter().any(|c| kind_of(*c) == "interpolation") {
        return None;
    }
    let t = text(node, src);
    let t = t.trim_start_matches(['r', 'R', 'u', 'U', 'b', 'B']);
    for q in ["\"\"\"", "'''", "\"", "'"] {
        if let Some(inner) = t.strip_prefix(q).and_then(|s| s.strip_suffix(q)) {
            return Some(inner.to_string());
        }
    }
    None
}

/// Whether a value is the literal `True`.
pub(super) fn is_true(node: Node, src: &str) -> bool {
    kind_of(node) == "true" || text(node, src) == "True"
}

/// Whether a value is the literal `False`.
pub(super) fn is_false(node: Node, src: &str) -> bool {
    kind_of(node) == "false" || text(node, src) == "False"
}

/// Whether both versions contain one of `needles` (each version at least one): the
/// passes' prefilter, one substring search per needle.
pub(super) fn both_mention(before: &str, after: &str, needles: &[&str]) -> bool {
    let has = |s: &str| needles.iter().any(|n| memchr::memmem::find(s.as_bytes(), n.as_bytes()).is_some());
    has(before) && has(after)
}

/// Names typing, pydantic and annotated-types give an annotation: never a project's own
/// type.
const LIBRARY_TYPE_NAMES: &[&str] = &[
    "Annotated",
    "Optional",
    "Union",
    "List",
    "Dict",
    "Set",
    "Tuple",
    "Sequence",
    "Mapping",
    "Literal",
    "Field",
    "Gt",
    "Ge",
    "Lt",
    "Le",
    "MinLen",
    "MaxLen",
    "Len",
    "Interval",
    "MultipleOf",
    "StringConstraints",
    "Decimal",
    "UUID",
    "Any",
    "None",
    "Mapped",
    "PositiveInt",
    "NegativeInt",
    "NonNegativeInt",
    "NonPositiveInt",
    "PositiveFloat",
    "NegativeFloat",
    "NonNegativeFloat",
    "NonPositiveFloat",
    "StrictInt",
    "StrictStr",
    "StrictFloat",
    "StrictBool",
    "EmailStr",
    "NameEmail",
    "AnyUrl",
    "AnyHttpUrl",
    "HttpUrl",
    "SecretStr",
];

/// Whether `after` names a type `before` did not that is a project's own (capitalised,
/// not a constant, not typing's or pydantic's): a bound dropped as the type became such
/// an alias (`Annotated[int, Le(INT_MAX)]` to `Int32`, declared in another module) may
/// have moved into it, which one file cannot tell.
pub(super) fn gains_own_type(before: &str, after: &str) -> bool {
    let names = |s: &str| -> std::collections::BTreeSet<String> {
        s.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).map(str::to_string).collect()
    };
    let (b, a) = (names(before), names(after));
    a.difference(&b).any(|n| {
        n.starts_with(|c: char| c.is_ascii_uppercase())
            && n.chars().any(|c| c.is_ascii_lowercase())
            && !LIBRARY_TYPE_NAMES.contains(&n.as_str())
    })
}

/// The Python grammar.
pub(super) fn grammar() -> tree_sitter::Language {
    tree_sitter_python::LANGUAGE.into()
}

/// A bound as a keyword or a call states it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Bound {
    /// `NaN` when not a number literal (a constant): judged only when removed.
    pub(super) value: f64,
    pub(super) exclusive: bool,
}

/// Whether `new` admits a value below (`lower`) or above the old bound.
pub(super) fn bound_loosened(old: Option<Bound>, new: Option<Bound>, lower: bool) -> bool {
    let Some(o) = old else { return false };
    let Some(n) = new else { return true };
    if o.value.is_nan() || n.value.is_nan() {
        return false;
    }
    let wider = if lower { n.value < o.value } else { n.value > o.value };
    wider || (n.value == o.value && o.exclusive && !n.exclusive)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_root<R>(src: &str, f: impl Fn(Node, &str) -> R) -> R {
        super::super::syntax::both_versions(&grammar(), src, src, f).unwrap().0
    }

    #[test]
    fn classes_nested_and_guarded_are_read_in_source_order() {
        let src = "if TYPE_CHECKING:\n    pass\nelse:\n    class A(models.Model, metaclass=M):\n        class Meta:\n            pass\n@dec\nclass B(RootModel[int]):\n    x: int = 1\n";
        let got = with_root(src, |root, src| {
            classes(root, src).into_iter().map(|c| (c.symbol, c.bases, c.keywords.len())).collect::<Vec<_>>()
        });
        assert_eq!(
            got,
            [
                ("A".to_string(), vec!["models.Model".to_string()], 1),
                ("A.Meta".to_string(), vec![], 0),
                ("B".to_string(), vec!["RootModel".to_string()], 0)
            ]
        );
    }

    #[test]
    fn literals_read_as_written() {
        let src = "a = f(1_000, -2.5, 'x', r\"y\", f\"{z}\", True, K)\n";
        with_root(src, |root, src| {
            let c = calls_within(root, src).remove(0);
            assert_eq!(c.name, "f");
            let p = &c.positional;
            assert_eq!((number(p[0], src), number(p[1], src)), (1000.0, -2.5));
            assert_eq!(
                (string(p[2], src), string(p[3], src), string(p[4], src)),
                (Some("x".into()), Some("y".into()), None)
            );
            assert!(is_true(p[5], src) && number(p[6], src).is_nan());
        });
    }

    #[test]
    fn a_project_type_gained_is_told_from_library_names_and_constants() {
        assert!(gains_own_type("Annotated[int,Gt(0),Le(INT_MAX)]", "Annotated[Int32,Gt(0)]"));
        assert!(gains_own_type("int|None", "Int32|None"));
        assert!(!gains_own_type("Annotated[int,Le(10)]", "Annotated[int,Le(LIMIT)]"));
        assert!(!gains_own_type("int", "PositiveInt"));
        assert!(!gains_own_type("Annotated[str,MaxLen(9)]", "Optional[str]"));
    }

    #[test]
    fn bounds_compare_as_numbers() {
        let b = |value, exclusive| Some(Bound { value, exclusive });
        assert!(bound_loosened(b(64.0, false), b(128.0, false), false));
        assert!(bound_loosened(b(0.0, true), b(0.0, false), true));
        assert!(bound_loosened(b(1.0, false), None, true));
        assert!(!bound_loosened(b(1.0, false), b(2.0, false), true));
        assert!(!bound_loosened(b(f64::NAN, false), b(3.0, false), false));
        assert!(!bound_loosened(None, None, false));
    }
}
