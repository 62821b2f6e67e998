//! Rust detector (tree-sitter-rust): builds an inventory of constraints per symbol
//! for each version of a file (typed slots, field visibility, generic bounds, guard
//! macros, serde and exhaustiveness attributes, `unsafe` sites, the crate's
//! `forbid(unsafe_code)`) and reports what the new version loosens or removes.
//!
//! Direction is always checked: `u64` to `u8` or `Option<T>` to `T` is narrowing and
//! never a finding. A constraint whose owner is gone (a deleted type or function)
//! is not a finding; a guard whose condition still appears elsewhere in the file
//! (moved into a helper) or that was replaced by another guard in the same function
//! (reworded) is not a finding either.

use std::collections::{BTreeMap, BTreeSet};

use super::syntax::{Parts, collapse_whitespace, compact, field, kind_of, text};
use tree_sitter::{Node, Parser, Tree};

use super::window;
use super::{DetectError, Language, RawFinding, RuleDef, Severity};

const RUST: &[Language] = &[Language::Rust];

pub const OPTION_WIDENED: &str = "rust-option-widened";
pub const INTEGER_WIDENED: &str = "rust-integer-widened";
pub const NONZERO_DROPPED: &str = "rust-nonzero-dropped";
pub const ENUM_TO_STRING: &str = "rust-enum-to-string";
pub const TYPE_ERASED: &str = "rust-type-erased";
pub const BOUND_REMOVED: &str = "rust-generic-bound-removed";
pub const ASSERT_REMOVED: &str = "rust-assert-removed";
pub const GUARD_REMOVED: &str = "rust-guard-removed";
pub const DENY_UNKNOWN_FIELDS_REMOVED: &str = "rust-deny-unknown-fields-removed";
pub const NON_EXHAUSTIVE_REMOVED: &str = "rust-non-exhaustive-removed";
pub const FIELD_MADE_PUBLIC: &str = "rust-field-made-public";
pub const STATIC_MADE_MUT: &str = "rust-static-made-mut";
pub const UNSAFE_INTRODUCED: &str = "rust-unsafe-introduced";
pub const FORBID_UNSAFE_REMOVED: &str = "rust-forbid-unsafe-removed";

pub const RULES: &[RuleDef] = &[
    RuleDef {
        id: OPTION_WIDENED,
        languages: RUST,
        family: "optionality",
        description: "A field, parameter, return or alias type `T` became `Option<T>`.",
        severity: Severity::High,
        message: "{symbol}: `{before}` became `{after}`; the value may now be absent",
        invariant: "The value was always present; code written since may assume it still is.",
    },
    RuleDef {
        id: INTEGER_WIDENED,
        languages: RUST,
        family: "numeric-range",
        description: "An integer type became one whose range strictly contains the old one (`u8` to `u64`, `u32` to `i64`).",
        severity: Severity::Medium,
        message: "{symbol}: `{before}` became `{after}`; values outside the old range are now representable",
        invariant: "The value fitted the old type's range (a `u8` is at most 255), which bounded sizes, loops and allocations.",
    },
    RuleDef {
        id: NONZERO_DROPPED,
        languages: RUST,
        family: "numeric-range",
        description: "A `NonZero*` type (`NonZeroU32`, `NonZero<u32>`) became a plain integer.",
        severity: Severity::High,
        message: "{symbol}: `{before}` became `{after}`; zero is now a valid value",
        invariant: "The value was never zero (safe divisor, non-empty count, valid id).",
    },
    RuleDef {
        id: ENUM_TO_STRING,
        languages: RUST,
        family: "enum-erasure",
        description: "A value typed by an enum declared in the file became a `String` or `&str`.",
        severity: Severity::High,
        message: "{symbol}: `{before}` became `{after}`; any string is now accepted",
        invariant: "The value was one of the enum's variants, checked by the compiler in every match.",
    },
    RuleDef {
        id: TYPE_ERASED,
        languages: RUST,
        family: "type-erasure",
        description: "A concrete type became `serde_json::Value` or a `dyn Any`.",
        severity: Severity::High,
        message: "{symbol}: `{before}` became `{after}`; the shape is no longer checked by the compiler",
        invariant: "The value had a known, compiler-checked shape.",
    },
    RuleDef {
        id: BOUND_REMOVED,
        languages: RUST,
        family: "type-erasure",
        description: "A trait bound on a generic parameter was removed (`T: Ord` to `T`), inline or in a `where` clause.",
        severity: Severity::Medium,
        message: "{symbol}: bound `{before}` became `{after}`",
        invariant: "Every type argument implemented the removed trait, which the item's callers and body could rely on.",
    },
    RuleDef {
        id: ASSERT_REMOVED,
        languages: RUST,
        family: "check-removed",
        description: "An `assert!`, `assert_eq!`, `assert_ne!` or `debug_assert*!` was removed from a function that still exists.",
        severity: Severity::Medium,
        message: "{symbol}: the check `{before}` was removed",
        invariant: "The asserted condition held whenever the function ran past the check.",
    },
    RuleDef {
        id: GUARD_REMOVED,
        languages: RUST,
        family: "check-removed",
        description: "An `ensure!` or an `if` guard that bails, panics or returns `Err` was removed from a function that still exists.",
        severity: Severity::Medium,
        message: "{symbol}: the guard `{before}` was removed",
        invariant: "Inputs failing the guard were rejected before the rest of the function ran.",
    },
    RuleDef {
        id: DENY_UNKNOWN_FIELDS_REMOVED,
        languages: RUST,
        family: "mutability-exposure",
        description: "`#[serde(deny_unknown_fields)]` was removed from a type.",
        severity: Severity::Medium,
        message: "{symbol}: `{before}` was removed; unknown fields are now silently accepted",
        invariant: "Input with unexpected fields (typos, wrong versions) was rejected instead of half-read.",
    },
    RuleDef {
        id: NON_EXHAUSTIVE_REMOVED,
        languages: RUST,
        family: "mutability-exposure",
        description: "`#[non_exhaustive]` was removed from a type or variant.",
        severity: Severity::Low,
        message: "{symbol}: `{before}` was removed; other crates may now match or build it exhaustively",
        invariant: "Other crates could not construct or exhaustively match the type, so it could grow safely.",
    },
    RuleDef {
        id: FIELD_MADE_PUBLIC,
        languages: RUST,
        family: "mutability-exposure",
        description: "A struct field became more visible (private to `pub(crate)`, `pub(crate)` to `pub`).",
        severity: Severity::Medium,
        message: "{symbol}: `{before}` became `{after}`; code outside the module can now set it directly",
        invariant: "Only the type's own module wrote the field, so its constructors and setters upheld its invariants.",
    },
    RuleDef {
        id: STATIC_MADE_MUT,
        languages: RUST,
        family: "mutability-exposure",
        description: "A `static` became `static mut`.",
        severity: Severity::High,
        message: "{symbol}: `{before}` became `{after}`",
        invariant: "The value never changed after initialisation, so reading it needed no synchronisation.",
    },
    RuleDef {
        id: UNSAFE_INTRODUCED,
        languages: RUST,
        family: "unsafe",
        description: "An `unsafe` block, function or impl appeared in a function, type or module that had none.",
        severity: Severity::High,
        message: "{symbol}: `unsafe` introduced: `{after}`",
        invariant: "The code was memory-safe by construction, checked by the compiler.",
    },
    RuleDef {
        id: FORBID_UNSAFE_REMOVED,
        languages: RUST,
        family: "unsafe",
        description: "The crate-level `#![forbid(unsafe_code)]` was removed or weakened.",
        severity: Severity::High,
        message: "{symbol}: `{before}` became `{after}`; the crate may now contain `unsafe` code",
        invariant: "No `unsafe` code could appear anywhere in the crate.",
    },
];

/// Guards and assertions longer than this are cut (with `...`) in `before`.
const MAX_SNIPPET_CHARS: usize = 120;

/// Compare the two versions of a Rust file.
pub fn detect(_path: &str, before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    detect_with(before, after, true)
}

/// [`detect`], with the change window allowed or not (the tests compare the two).
fn detect_with(before: &str, after: &str, allow_window: bool) -> Result<Vec<RawFinding>, DetectError> {
    // An added file has no old constraints: nothing to parse on that side.
    let (old, new) = match before.is_empty() {
        true => (Inventory::default(), Inventory::build(&parse(after, "new")?, after)),
        false => match allow_window.then(|| windowed(before, after)).flatten() {
            Some(pair) => pair,
            None if super::syntax::rewritten(before, after) => side_by_side(before, after)?,
            None => incremental(before, after)?,
        },
    };
    let mut out = Vec::new();
    compare_slots(&old, &new, &mut out);
    compare_visibility(&old, &new, &mut out);
    compare_bounds(&old, &new, &mut out);
    compare_guards(&old, &new, &mut out);
    compare_attrs(&old, &new, &mut out);
    compare_statics(&old, &new, &mut out);
    compare_unsafe(&old, &new, &mut out);
    compare_forbid(&old, &new, &mut out);
    out.sort();
    out.dedup();
    Ok(out)
}

/// Both inventories, the new version parsed incrementally from the old tree and its
/// unchanged declarations walked once.
fn incremental(before: &str, after: &str) -> Result<(Inventory, Inventory), DetectError> {
    let old_tree = parse(before, "old")?;
    let (new_tree, unchanged) = parse_new(after, &old_tree, before)?;
    Ok(Inventory::build_pair(&old_tree, before, &new_tree, after, Some(&unchanged)))
}

/// Both inventories, each version parsed and walked whole on its own thread: for a
/// rewritten file, where an incremental parse would reuse little.
fn side_by_side(before: &str, after: &str) -> Result<(Inventory, Inventory), DetectError> {
    super::syntax::side_by_side(before, after, |src, which| parse(src, which).map(|tree| Inventory::build(&tree, src)))
}

/// The inventories of the declarations the edit touches alone (see [`window`]), when
/// nothing outside them can change how they compare: the same findings as the whole
/// files give, for a fraction of the parsing.
fn windowed(before: &str, after: &str) -> Option<(Inventory, Inventory)> {
    let w = window::find(window::Lexer::Rust, before, after)?;
    let outside = window::Outside::of(before, &w);
    // A lint level for `unsafe_code` outside is a file-wide fact the window cannot see.
    if outside.contains("unsafe_code") {
        return None;
    }
    let lang = tree_sitter_rust::LANGUAGE.into();
    let old = Inventory::build(&window::parse_range(&lang, before, w.start, w.old_end)?, before);
    let new = Inventory::build(&window::parse_range(&lang, after, w.start, w.new_end)?, after);
    stands_alone(&old, &new, &outside).then_some((old, new))
}

/// Whether the window's inventories compare exactly as the whole files' would, given
/// the `outside` text (the same in both versions): the comparisons look constraints up
/// by symbol, and by a few file-wide sets; neither may meet anything outside.
fn stands_alone(old: &Inventory, new: &Inventory, outside: &window::Outside) -> bool {
    let mut roots = BTreeSet::new();
    for inv in [old, new] {
        let symbols = (inv.slots.keys().map(|k| &k.0))
            .chain(inv.fields.keys())
            .chain(inv.bounds.keys().map(|k| &k.0))
            .chain(inv.owners.keys())
            .chain(inv.guards.keys())
            .chain(inv.attrs.keys().map(|k| &k.0))
            .chain(inv.statics.keys())
            .chain(inv.unsafe_sites.keys());
        roots.extend(symbols.map(|s| window::root(s)));
    }
    if outside.may_declare_any(window::Lexer::Rust, &roots) {
        return false;
    }
    // A guard outside with the same condition would count as the check moved there.
    let guard_outside = |key: &String| match key.strip_prefix("if:") {
        Some(cond) => outside.contains_compact(cond),
        None => {
            (key.starts_with("eq(") && outside.contains("_eq"))
                || (key.starts_with("ne(") && outside.contains("_ne"))
                || outside.contains_compact(key)
        }
    };
    if old.guard_keys.iter().chain(&new.guard_keys).any(guard_outside) {
        return false;
    }
    // `unsafe` sites are matched file-wide, whatever their owner.
    if !(old.unsafe_sites.is_empty() && new.unsafe_sites.is_empty()) && outside.contains("unsafe") {
        return false;
    }
    // Whether a changed type names an enum of the file, or a `Value` that a
    // `serde_json` import outside makes the erased type, are file-wide questions.
    let (enums, value) = (outside.contains_word("enum"), outside.contains("serde_json"));
    for (key, o) in &old.slots {
        let Some(n) = new.slots.get(key).filter(|n| n.ty != o.ty) else { continue };
        if (enums && o.ty.names().iter().any(|name| outside.may_declare(window::Lexer::Rust, name)))
            || (value && o.ty.names().into_iter().chain(n.ty.names()).any(|name| name == "Value"))
        {
            return false;
        }
    }
    true
}

/// Parse one version from scratch.
fn parse(src: &str, side: &str) -> Result<Tree, DetectError> {
    refuse_errors(parser()?.parse(src, None), side)
}

/// Parse the new version incrementally from the old tree, telling what stayed unchanged.
fn parse_new(after: &str, old: &Tree, before: &str) -> Result<(Tree, super::syntax::Unchanged), DetectError> {
    let mut p = parser()?;
    let (tree, unchanged) = match super::syntax::reparse_tracking(&mut p, old, before, after) {
        Some((t, u)) => (Some(t), Some(u)),
        None => (None, None),
    };
    Ok((refuse_errors(tree, "new")?, unchanged.expect("a tree comes with its unchanged ranges")))
}

fn parser() -> Result<Parser, DetectError> {
    let mut p = Parser::new();
    p.set_language(&tree_sitter_rust::LANGUAGE.into())
        .map_err(|e| DetectError(format!("rust grammar unavailable: {e}")))?;
    Ok(p)
}

fn refuse_errors(tree: Option<Tree>, side: &str) -> Result<Tree, DetectError> {
    let tree = tree.ok_or_else(|| DetectError(format!("{side} version: the parser gave up")))?;
    if tree.root_node().has_error() {
        let at = first_error(tree.root_node()).map(|n| n.start_position().row + 1).unwrap_or(1);
        return Err(DetectError(format!("{side} version does not parse as Rust (line {at})")));
    }
    Ok(tree)
}

/// The items among the children of `n` as the walk meets them: each with the outer
/// attributes written before it (siblings in tree-sitter-rust, collected on the way, as
/// looking back from each item would be quadratic) and the byte where the first of
/// those (or the item itself) starts. Comments are skipped.
fn for_each_item<'t>(n: Node<'t>, src: &str, mut f: impl FnMut(Vec<String>, Node<'t>, usize)) {
    let (mut pending, mut first) = (Vec::new(), None);
    super::syntax::for_each_named(n, |k| match kind_of(k) {
        "attribute_item" => {
            pending.push(compact(text(k, src)));
            first.get_or_insert(k.start_byte());
        }
        "line_comment" | "block_comment" => {}
        _ => f(std::mem::take(&mut pending), k, first.take().unwrap_or(k.start_byte())),
    });
}

/// The top-level declarations of a file, as `(start, end, (attributes, item))`.
type Unit<'t> = (usize, usize, (Vec<String>, Node<'t>));

fn top_level<'t>(root: Node<'t>, src: &str) -> Vec<Unit<'t>> {
    let mut out = Vec::new();
    for_each_item(root, src, |attrs, item, start| out.push((start, item.end_byte(), (attrs, item))));
    out
}

fn first_error(n: Node) -> Option<Node> {
    if n.is_error() || n.is_missing() {
        return Some(n);
    }
    let mut c = n.walk();
    n.children(&mut c).filter(|ch| ch.has_error()).find_map(first_error)
}

fn snippet(s: &str) -> String {
    let l = collapse_whitespace(s);
    if l.chars().count() <= MAX_SNIPPET_CHARS {
        return l;
    }
    let cut: String = l.chars().take(MAX_SNIPPET_CHARS).collect();
    format!("{cut}...")
}

/// A type, reduced to what direction checks need.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ty {
    /// A path type with generic arguments (`u8`, `Option<T>`, `serde_json::Value`).
    Named {
        name: String,
        args: Vec<Ty>,
    },
    Ref {
        mutable: bool,
        inner: Box<Ty>,
    },
    /// Anything else, by squashed text.
    Other(String),
}

impl Ty {
    fn of(n: Node, src: &str) -> Ty {
        let text = |n: Node| text(n, src).to_string();
        match kind_of(n) {
            "primitive_type" | "type_identifier" | "scoped_type_identifier" => {
                Ty::Named { name: compact(&text(n)), args: Vec::new() }
            }
            "generic_type" => {
                let name = field(n, "type").map(|t| compact(&text(t))).unwrap_or_default();
                let mut args = Vec::new();
                if let Some(ta) = field(n, "type_arguments") {
                    let mut c = ta.walk();
                    for a in ta.named_children(&mut c) {
                        if kind_of(a) != "lifetime" {
                            args.push(Ty::of(a, src));
                        }
                    }
                }
                Ty::Named { name, args }
            }
            "reference_type" => {
                let mut c = n.walk();
                let mutable = n.children(&mut c).any(|ch| kind_of(ch) == "mutable_specifier");
                let inner = field(n, "type").map(|t| Ty::of(t, src)).unwrap_or(Ty::Other(String::new()));
                Ty::Ref { mutable, inner: Box::new(inner) }
            }
            _ => Ty::Other(compact(&text(n))),
        }
    }

    /// The last path segment of a named type (`std::option::Option` -> `Option`).
    fn base(&self) -> Option<&str> {
        match self {
            Ty::Named { name, .. } => Some(name.rsplit("::").next().unwrap_or(name)),
            _ => None,
        }
    }

    /// The last path segment of every named type in this one, arguments included.
    fn names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(ty) = stack.pop() {
            match ty {
                Ty::Named { args, .. } => {
                    out.extend(ty.base());
                    stack.extend(args);
                }
                Ty::Ref { inner, .. } => stack.push(inner),
                Ty::Other(_) => {}
            }
        }
        out
    }

    fn args(&self) -> &[Ty] {
        match self {
            Ty::Named { args, .. } => args,
            _ => &[],
        }
    }

    fn is_option(&self) -> bool {
        self.base() == Some("Option") && self.args().len() == 1
    }

    fn squashed(&self) -> String {
        match self {
            Ty::Named { name, args } if args.is_empty() => name.clone(),
            Ty::Named { name, args } => {
                format!("{name}<{}>", args.iter().map(Ty::squashed).collect::<Vec<_>>().join(","))
            }
            Ty::Ref { mutable, inner } => format!("&{}{}", if *mutable { "mut" } else { "" }, inner.squashed()),
            Ty::Other(s) => s.clone(),
        }
    }

    /// `(signed, bits)` of an integer type, `NonZero*` included.
    fn int_range(&self) -> Option<(bool, u32)> {
        let base = self.base()?;
        let plain = |s: &str| -> Option<(bool, u32)> {
            let signed = s.starts_with('i');
            let bits = match &s[1..] {
                "size" => 64,
                b => b.parse().ok()?,
            };
            (s.starts_with('i') || s.starts_with('u')).then_some((signed, bits))
        };
        if let Some(rest) = base.strip_prefix("NonZero") {
            return if rest.is_empty() {
                self.args().first().and_then(Ty::int_range)
            } else {
                plain(&rest.to_ascii_lowercase())
            };
        }
        if !self.args().is_empty() || !matches!(base.len(), 2..=5) {
            return None;
        }
        plain(base).filter(|(_, b)| matches!(b, 8 | 16 | 32 | 64 | 128))
    }

    fn is_nonzero(&self) -> bool {
        self.base().is_some_and(|b| b.starts_with("NonZero")) && self.int_range().is_some()
    }

    fn is_stringy(&self) -> bool {
        let s = self.squashed();
        matches!(s.as_str(), "String" | "std::string::String" | "Box<str>" | "Arc<str>" | "Rc<str>")
            || (s.starts_with('&') && s.ends_with("str") && !s.contains('<'))
            || (s.starts_with("Cow<") && s.ends_with("str>"))
    }

    fn is_erased(&self, value_imported: bool) -> bool {
        let s = self.squashed();
        s == "serde_json::Value"
            || (s == "Value" && value_imported)
            || s.contains("dynAny")
            || s.contains("dynstd::any::Any")
    }
}

/// Whether `new` holds every value of `old` and more (integer ranges).
fn strictly_wider(old: (bool, u32), new: (bool, u32)) -> bool {
    let contains = match (old.0, new.0) {
        (false, false) | (true, true) => old.1 <= new.1,
        (false, true) => old.1 < new.1,
        (true, false) => false,
    };
    contains && old != new
}

/// A typed position: a field, parameter, return type, constant or alias.
#[derive(Debug, Clone, PartialEq)]
struct Slot {
    /// What the `before`/`after` text shows in front of the type (`limit: `, `-> `).
    label: String,
    ty: Ty,
    /// The type's source text on one line.
    text: String,
    line: u32,
    in_test: bool,
}

impl Slot {
    fn show(&self) -> String {
        format!("{}{}", self.label, self.text)
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Guard {
    rule: &'static str,
    /// The condition, squashed: its identity across formatting and messages.
    key: String,
    text: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Owner {
    line: u32,
    in_test: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Inventory {
    /// (symbol, slot key) -> slot.
    slots: BTreeMap<(String, String), Slot>,
    /// `Type.field` -> (visibility rank, field text, line, in test).
    fields: BTreeMap<String, (u8, String, u32, bool)>,
    /// (item symbol, type parameter) -> bounds in source order.
    bounds: BTreeMap<(String, String), Vec<String>>,
    /// Functions and items: symbol -> where it is.
    owners: BTreeMap<String, Owner>,
    /// Function symbol -> guards in source order.
    guards: BTreeMap<String, Vec<Guard>>,
    /// Every guard key anywhere in the file.
    guard_keys: BTreeSet<String>,
    /// (item symbol, attribute rule) -> attribute text.
    attrs: BTreeMap<(String, &'static str), String>,
    /// Static symbol -> (mutable, text).
    statics: BTreeMap<String, (bool, String)>,
    /// Owner symbol -> unsafe sites (line, squashed text, shown text).
    unsafe_sites: BTreeMap<String, Vec<(u32, String, String)>>,
    /// `#![forbid(unsafe_code)]`: (line, text); other unsafe_code lint levels: text.
    forbid_unsafe: Option<(u32, String)>,
    unsafe_lint: Option<String>,
    enums: BTreeSet<String>,
    value_imported: bool,
}

struct Walk<'a> {
    src: &'a str,
    inv: Inventory,
    /// Skip blocks holding none of [`TRIGGERS`], and the parts of items that hold only
    /// types (off only to test that skipping changes nothing).
    prune: bool,
    /// How many blocks were skipped.
    skipped: usize,
}

/// What the walk reacts to inside a block, as the tokens each needs: inner attributes
/// (`#`), `use` declarations, items (their keywords), macro calls (`!`), `if`
/// expressions and `unsafe` blocks. A block holding none of them holds nothing the
/// inventory records.
static TRIGGERS: std::sync::LazyLock<super::syntax::Triggers> = std::sync::LazyLock::new(|| {
    super::syntax::Triggers::new(&[
        "#", "!", "if", "unsafe", "use", "mod", "struct", "enum", "union", "trait", "impl", "fn", "type", "const",
        "static",
    ])
});

fn line_of(n: Node) -> u32 {
    n.start_position().row as u32 + 1
}

/// The outer attributes written before an item (siblings in tree-sitter-rust).
fn attributes<'t>(n: Node<'t>, src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = n.prev_sibling();
    while let Some(p) = cur {
        match kind_of(p) {
            "attribute_item" => out.push(compact(text(p, src))),
            "line_comment" | "block_comment" => {}
            _ => break,
        }
        cur = p.prev_sibling();
    }
    out
}

fn is_test_attr(a: &str) -> bool {
    a == "#[cfg(test)]" || a == "#[test]" || a.ends_with("::test]") || a.starts_with("#[test(") || a.contains("::test(")
}

/// The name an `impl` block contributes to symbols: its self type's last segment.
fn impl_name(n: Node, src: &str) -> String {
    let Some(mut t) = field(n, "type") else { return "impl".to_string() };
    // `impl Trait for &'a mut T`, `impl<T> Foo<T>`: the name is the underlying type's.
    while matches!(kind_of(t), "reference_type" | "generic_type" | "pointer_type") {
        match field(t, "type") {
            Some(inner) => t = inner,
            None => break,
        }
    }
    match kind_of(t) {
        "scoped_type_identifier" => field(t, "name").map(|n| text(n, src).to_string()),
        _ => None,
    }
    .unwrap_or_else(|| compact(text(t, src)))
}

fn dotted(scope: &[String], name: &str) -> String {
    if scope.is_empty() { name.to_string() } else { format!("{}.{name}", scope.join(".")) }
}

/// Visibility rank: private 0, restricted 1, crate 2, public 3.
fn visibility_rank(n: Node, src: &str) -> u8 {
    let mut c = n.walk();
    let Some(v) = n.children(&mut c).find(|ch| kind_of(ch) == "visibility_modifier") else { return 0 };
    match compact(text(v, src)).as_str() {
        "pub" => 3,
        "pub(crate)" | "crate" => 2,
        "pub(self)" => 0,
        _ => 1,
    }
}

/// Split a macro's token tree `(a, b, "c, d")` into its top-level arguments.
fn macro_args(tt: &str) -> Vec<String> {
    let inner = tt.get(1..tt.len().saturating_sub(1)).unwrap_or("");
    let (mut out, mut cur, mut depth, mut in_str, mut esc) = (Vec::new(), String::new(), 0i32, false, false);
    for ch in inner.chars() {
        if in_str {
            cur.push(ch);
            match (esc, ch) {
                (true, _) => esc = false,
                (false, '\\') => esc = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match ch {
            '"' => in_str = true,
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(compact(&cur));
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.trim().is_empty() {
        out.push(compact(&cur));
    }
    out
}

/// What a guard macro checks, or `None` when the macro is not a guard.
fn guard_of_macro(n: Node, src: &str) -> Option<Guard> {
    let name = field(n, "macro").map(|m| text(m, src))?;
    let name = name.rsplit("::").next().unwrap_or(name);
    let mut c = n.walk();
    let tt = n.children(&mut c).find(|ch| kind_of(ch) == "token_tree").map(|t| text(t, src)).unwrap_or("");
    let args = macro_args(tt);
    let (rule, key) = match name {
        "assert" | "debug_assert" => (ASSERT_REMOVED, args.first()?.clone()),
        "assert_eq" | "debug_assert_eq" => (ASSERT_REMOVED, format!("eq({},{})", args.first()?, args.get(1)?)),
        "assert_ne" | "debug_assert_ne" => (ASSERT_REMOVED, format!("ne({},{})", args.first()?, args.get(1)?)),
        "ensure" => (GUARD_REMOVED, args.first()?.clone()),
        _ => return None,
    };
    Some(Guard { rule, key, text: snippet(text(n, src)) })
}

/// An `if` without `else` whose block leaves the function (bail!, panic!, return Err).
fn guard_of_if(n: Node, src: &str) -> Option<Guard> {
    if field(n, "alternative").is_some() {
        return None;
    }
    let cond = field(n, "condition")?;
    let block = field(n, "consequence")?;
    let body = compact(text(block, src));
    let leaves =
        ["{bail!", "{panic!", "{unreachable!", "{returnErr(", "{anyhow::bail!"].iter().any(|p| body.starts_with(p))
            || body.contains(";bail!")
            || body.contains(";returnErr(");
    if !leaves {
        return None;
    }
    let cond_text = collapse_whitespace(text(cond, src));
    Some(Guard {
        rule: GUARD_REMOVED,
        key: format!("if:{}", compact(&cond_text)),
        text: snippet(&format!("if {cond_text} {{ .. }}")),
    })
}

impl Inventory {
    fn build(tree: &Tree, src: &str) -> Inventory {
        Inventory::walk(tree, src, true).0
    }

    /// The inventories of both versions. The new version is walked one top-level
    /// declaration at a time; a declaration that `unchanged` says is the same in both
    /// versions is not walked again in the old one: its part of the new inventory is
    /// taken instead, lines moved back. Without `unchanged`, both are walked in full.
    fn build_pair(
        old_tree: &Tree,
        before: &str,
        new_tree: &Tree,
        after: &str,
        unchanged: Option<&super::syntax::Unchanged>,
    ) -> (Inventory, Inventory) {
        let Some(unchanged) = unchanged else {
            return (Inventory::build(old_tree, before), Inventory::build(new_tree, after));
        };
        super::syntax::build_pair(
            top_level(old_tree.root_node(), before),
            top_level(new_tree.root_node(), after),
            unchanged,
            |(attrs, item)| Inventory::item(item, attrs, before),
            |(attrs, item)| Inventory::item(item, attrs, after),
        )
    }

    /// The part of the inventory one top-level declaration contributes.
    fn item(item: Node, attrs: Vec<String>, src: &str) -> Inventory {
        let mut w = Walk { src, inv: Inventory::default(), prune: true, skipped: 0 };
        w.visit(item, attrs, &mut Vec::new(), None, false);
        w.inv
    }

    /// The inventory and how many blocks the walk skipped.
    fn walk(tree: &Tree, src: &str, prune: bool) -> (Inventory, usize) {
        let mut w = Walk { src, inv: Inventory::default(), prune, skipped: 0 };
        let root = tree.root_node();
        w.visit(root, Vec::new(), &mut Vec::new(), None, false);
        (w.inv, w.skipped)
    }
}

impl super::syntax::Part for Inventory {
    /// Adds the part `o` of a later declaration, exactly as walking it after the ones
    /// already here would have: maps keyed once keep the first entry (owners), maps
    /// written by insertion keep the last, lists and sets grow.
    fn absorb(&mut self, o: Inventory) {
        // Destructured, so that a new field cannot be forgotten here.
        let Inventory {
            slots,
            fields,
            bounds,
            owners,
            guards,
            guard_keys,
            attrs,
            statics,
            unsafe_sites,
            forbid_unsafe,
            unsafe_lint,
            enums,
            value_imported,
        } = o;
        self.slots.extend(slots);
        self.fields.extend(fields);
        for (k, v) in bounds {
            self.bounds.entry(k).or_default().extend(v);
        }
        for (k, v) in owners {
            self.owners.entry(k).or_insert(v);
        }
        for (k, v) in guards {
            self.guards.entry(k).or_default().extend(v);
        }
        self.guard_keys.extend(guard_keys);
        self.attrs.extend(attrs);
        self.statics.extend(statics);
        for (k, v) in unsafe_sites {
            self.unsafe_sites.entry(k).or_default().extend(v);
        }
        if forbid_unsafe.is_some() {
            self.forbid_unsafe = forbid_unsafe;
        }
        if unsafe_lint.is_some() {
            self.unsafe_lint = unsafe_lint;
        }
        self.enums.extend(enums);
        self.value_imported |= value_imported;
    }

    /// Moves every line this inventory records by `delta`.
    fn shift_lines(&mut self, delta: i64) {
        if delta == 0 {
            return;
        }
        let shift = |l: &mut u32| *l = u32::try_from(i64::from(*l) + delta).unwrap_or(1);
        self.slots.values_mut().for_each(|s| shift(&mut s.line));
        self.fields.values_mut().for_each(|f| shift(&mut f.2));
        self.owners.values_mut().for_each(|o| shift(&mut o.line));
        self.unsafe_sites.values_mut().flatten().for_each(|site| shift(&mut site.0));
        if let Some(f) = &mut self.forbid_unsafe {
            shift(&mut f.0);
        }
    }
}

impl Walk<'_> {
    fn t(&self, n: Node) -> String {
        text(n, self.src).to_string()
    }

    fn slot(&mut self, symbol: &str, key: String, label: String, ty: Node, in_test: bool) {
        let slot = Slot {
            label,
            ty: Ty::of(ty, self.src),
            text: collapse_whitespace(text(ty, self.src)),
            line: line_of(ty),
            in_test,
        };
        self.inv.slots.insert((symbol.to_string(), key), slot);
    }

    fn bounds_of(&mut self, item: &Parts, symbol: &str) {
        let mut params = Vec::new();
        if let Some(tp) = item.field("type_parameters") {
            let mut c = tp.walk();
            for p in tp.named_children(&mut c).filter(|p| kind_of(p) == "type_parameter") {
                let Some(name) = field(p, "name") else { continue };
                params.push(self.t(name));
                let key = (symbol.to_string(), self.t(name));
                let entry = self.inv.bounds.entry(key).or_default();
                if let Some(b) = field(p, "bounds") {
                    let mut bc = b.walk();
                    entry.extend(b.named_children(&mut bc).map(|x| compact(text(x, self.src))));
                }
            }
        }
        for wc in item.all().filter(|ch| kind_of(ch) == "where_clause") {
            let mut wcur = wc.walk();
            for pred in wc.named_children(&mut wcur).filter(|p| kind_of(p) == "where_predicate") {
                let (Some(left), Some(b)) = (field(pred, "left"), field(pred, "bounds")) else {
                    continue;
                };
                let left = compact(text(left, self.src));
                let mut bc = b.walk();
                let items: Vec<String> = b.named_children(&mut bc).map(|x| compact(text(x, self.src))).collect();
                self.inv.bounds.entry((symbol.to_string(), left)).or_default().extend(items);
            }
        }
    }

    fn fields(&mut self, list: Node, owner: &str, in_test: bool, visibility: bool) {
        let mut c = list.walk();
        match kind_of(list) {
            "field_declaration_list" => {
                for f in list.named_children(&mut c).filter(|f| kind_of(f) == "field_declaration") {
                    let (Some(name), Some(ty)) = (field(f, "name"), field(f, "type")) else {
                        continue;
                    };
                    let name = self.t(name);
                    let symbol = format!("{owner}.{name}");
                    self.slot(&symbol, "field".into(), format!("{name}: "), ty, in_test);
                    if visibility {
                        let shown = collapse_whitespace(self.t(f).trim_end_matches(','));
                        self.inv.fields.insert(symbol, (visibility_rank(f, self.src), shown, line_of(f), in_test));
                    }
                }
            }
            "ordered_field_declaration_list" => {
                let tys: Vec<Node> = list.children_by_field_name("type", &mut c).collect();
                for (i, ty) in tys.into_iter().enumerate() {
                    let symbol = format!("{owner}.{i}");
                    self.slot(&symbol, "field".into(), format!("{i}: "), ty, in_test);
                }
            }
            _ => {}
        }
    }

    /// Visit `n` with its outer attributes and the symbol scope so far; `func` is the
    /// innermost function.
    fn visit(&mut self, n: Node, attrs: Vec<String>, scope: &mut Vec<String>, func: Option<&str>, in_test: bool) {
        let kind = kind_of(n);
        let name_of = |n: Node| field(n, "name").map(|x| text(x, self.src).to_string());
        match kind {
            "inner_attribute_item" => {
                let s = compact(&self.t(n));
                if s.contains("unsafe_code") {
                    if s.starts_with("#![forbid(") {
                        self.inv.forbid_unsafe = Some((line_of(n), collapse_whitespace(&self.t(n))));
                    } else {
                        self.inv.unsafe_lint = Some(collapse_whitespace(&self.t(n)));
                    }
                }
                return;
            }
            "use_declaration" => {
                let s = compact(&self.t(n));
                if s.contains("serde_json::Value") || (s.contains("serde_json::{") && s.contains("Value")) {
                    self.inv.value_imported = true;
                }
                return;
            }
            "mod_item"
            | "struct_item"
            | "enum_item"
            | "union_item"
            | "trait_item"
            | "impl_item"
            | "function_item"
            | "function_signature_item"
            | "type_item"
            | "const_item"
            | "static_item" => {}
            "macro_invocation" => {
                if let (Some(f), Some(g)) = (func, guard_of_macro(n, self.src)) {
                    self.inv.guard_keys.insert(g.key.clone());
                    self.inv.guards.entry(f.to_string()).or_default().push(g);
                }
                // Macro bodies are token trees, not syntax: nothing else to see inside.
                return;
            }
            "if_expression" => {
                if let (Some(f), Some(g)) = (func, guard_of_if(n, self.src)) {
                    self.inv.guard_keys.insert(g.key.clone());
                    self.inv.guards.entry(f.to_string()).or_default().push(g);
                }
            }
            "unsafe_block" => {
                let owner = func.map(str::to_string).unwrap_or_else(|| dotted(scope, "crate"));
                let shown = snippet(self.t(n).lines().next().unwrap_or("unsafe"));
                let site = (line_of(n), compact(&self.t(n)), shown);
                self.inv.unsafe_sites.entry(owner).or_default().push(site);
            }
            _ => {}
        }
        let in_test = in_test || attrs.iter().any(|a| is_test_attr(a));
        let is_item = matches!(
            kind,
            "impl_item"
                | "mod_item"
                | "struct_item"
                | "enum_item"
                | "union_item"
                | "trait_item"
                | "function_item"
                | "function_signature_item"
                | "type_item"
                | "const_item"
                | "static_item"
        );
        // An item's parts are read in one pass: its name, bounds, parameters, modifiers.
        let parts = is_item.then(|| Parts::of(n));
        let own_name = match (kind, &parts) {
            ("impl_item", _) => Some(impl_name(n, self.src)),
            (_, Some(p)) => p.field("name").map(|x| text(x, self.src).to_string()),
            _ => None,
        };
        let (Some(name), Some(parts)) = (own_name, parts) else {
            self.children(n, scope, func, in_test);
            return;
        };
        let symbol = dotted(scope, &name);
        self.inv.owners.entry(symbol.clone()).or_insert(Owner { line: line_of(n), in_test });
        match kind {
            "struct_item" | "union_item" | "enum_item" => {
                if kind == "enum_item" {
                    self.inv.enums.insert(name.clone());
                }
                self.attrs(&attrs, &symbol);
                self.bounds_of(&parts, &symbol);
                if let Some(body) = parts.field("body") {
                    if kind == "enum_item" {
                        let mut c = body.walk();
                        for v in body.named_children(&mut c).filter(|v| kind_of(v) == "enum_variant") {
                            let Some(vname) = name_of(v) else { continue };
                            let vsym = format!("{symbol}.{vname}");
                            self.inv.owners.entry(vsym.clone()).or_insert(Owner { line: line_of(v), in_test });
                            let vattrs = attributes(v, self.src);
                            self.attrs(&vattrs, &vsym);
                            if let Some(vb) = field(v, "body") {
                                self.fields(vb, &vsym, in_test, false);
                            }
                        }
                    } else {
                        self.fields(body, &symbol, in_test, true);
                    }
                }
            }
            "function_item" | "function_signature_item" => {
                self.bounds_of(&parts, &symbol);
                if let Some(params) = parts.field("parameters") {
                    let mut c = params.walk();
                    for p in params.named_children(&mut c).filter(|p| kind_of(p) == "parameter") {
                        let (Some(pat), Some(ty)) = (field(p, "pattern"), field(p, "type")) else {
                            continue;
                        };
                        let pat = collapse_whitespace(&self.t(pat));
                        self.slot(&symbol, format!("param:{pat}"), format!("{pat}: "), ty, in_test);
                    }
                }
                if let Some(ret) = parts.field("return_type") {
                    self.slot(&symbol, "return".into(), "-> ".into(), ret, in_test);
                }
                if parts.all().any(|ch| kind_of(ch) == "function_modifiers" && text(ch, self.src).contains("unsafe")) {
                    let head = snippet(self.t(n).lines().next().unwrap_or(""));
                    self.inv.unsafe_sites.entry(symbol.clone()).or_default().push((
                        line_of(n),
                        format!("fn:{name}"),
                        head,
                    ));
                }
            }
            "impl_item" => {
                self.bounds_of(&parts, &symbol);
                let mut c = n.walk();
                if n.children(&mut c).any(|ch| kind_of(ch) == "unsafe") {
                    let head = snippet(self.t(n).lines().next().unwrap_or(""));
                    let key = format!("impl:{}", compact(&head));
                    self.inv.unsafe_sites.entry(symbol.clone()).or_default().push((line_of(n), key, head));
                }
            }
            "trait_item" => self.bounds_of(&parts, &symbol),
            "type_item" => {
                self.bounds_of(&parts, &symbol);
                if let Some(ty) = field(n, "type") {
                    self.slot(&symbol, "alias".into(), format!("type {name} = "), ty, in_test);
                }
            }
            "const_item" | "static_item" => {
                if let Some(ty) = field(n, "type") {
                    self.slot(&symbol, "type".into(), format!("{name}: "), ty, in_test);
                }
                if kind == "static_item" {
                    let mut c = n.walk();
                    let mutable = n.children(&mut c).any(|ch| kind_of(ch) == "mutable_specifier");
                    let head = collapse_whitespace(self.t(n).split('=').next().unwrap_or(""))
                        .trim_end_matches(';')
                        .to_string();
                    self.inv.statics.insert(symbol.clone(), (mutable, head));
                }
            }
            _ => {}
        }
        scope.push(name);
        let f = if matches!(kind, "function_item") { Some(symbol.clone()) } else { func.map(str::to_string) };
        match kind {
            // Signatures, fields, variants and aliases were read above: they hold types
            // and patterns, never a check, an item or `unsafe` code. Only a function's
            // body and a constant's value are walked further.
            "function_item" | "function_signature_item" | "const_item" | "static_item" if self.prune => {
                let inner = if kind == "function_item" || kind == "function_signature_item" { "body" } else { "value" };
                if let Some(part) = parts.field(inner) {
                    self.visit(part, Vec::new(), scope, f.as_deref(), in_test);
                }
            }
            "struct_item" | "enum_item" | "union_item" | "type_item" if self.prune => {}
            _ => self.children(n, scope, f.as_deref(), in_test),
        }
        scope.pop();
    }

    /// Visit the children of `n`, handing each item the attributes written before it.
    fn children(&mut self, n: Node, scope: &mut Vec<String>, func: Option<&str>, in_test: bool) {
        if self.prune && kind_of(n) == "block" && !TRIGGERS.any_in(text(n, self.src)) {
            self.skipped += 1;
            return;
        }
        let src = self.src;
        for_each_item(n, src, |attrs, k, _| self.visit(k, attrs, scope, func, in_test));
    }

    fn attrs(&mut self, attrs: &[String], symbol: &str) {
        for a in attrs {
            if a.starts_with("#[serde(") && a.contains("deny_unknown_fields") {
                self.inv
                    .attrs
                    .insert((symbol.to_string(), DENY_UNKNOWN_FIELDS_REMOVED), "#[serde(deny_unknown_fields)]".into());
            }
            if a == "#[non_exhaustive]" {
                self.inv.attrs.insert((symbol.to_string(), NON_EXHAUSTIVE_REMOVED), "#[non_exhaustive]".into());
            }
        }
    }
}

fn finding(rule: &'static str, line: u32, symbol: &str, before: String, after: String, in_test: bool) -> RawFinding {
    RawFinding { line, rule, symbol: symbol.to_string(), before, after, in_test }
}

/// Which rule (if any) a type change breaks, looking inside matching generic wrappers.
fn type_rule(old: &Ty, new: &Ty, old_inv: &Inventory, new_inv: &Inventory) -> Option<&'static str> {
    if old == new {
        return None;
    }
    if new.is_option() && !old.is_option() {
        return Some(OPTION_WIDENED);
    }
    if new.is_erased(new_inv.value_imported) && !old.is_erased(old_inv.value_imported) {
        return Some(TYPE_ERASED);
    }
    if old.is_nonzero() && !new.is_nonzero() && new.int_range().is_some() {
        return Some(NONZERO_DROPPED);
    }
    if let (Some(o), Some(n)) = (old.int_range(), new.int_range())
        && strictly_wider(o, n)
    {
        return Some(INTEGER_WIDENED);
    }
    if let Some(b) = old.base()
        && old.args().is_empty()
        && old_inv.enums.contains(b)
        && new.is_stringy()
    {
        return Some(ENUM_TO_STRING);
    }
    match (old, new) {
        (Ty::Named { name: a, args: xs }, Ty::Named { name: b, args: ys }) if a == b && xs.len() == ys.len() => {
            xs.iter().zip(ys).find_map(|(x, y)| type_rule(x, y, old_inv, new_inv))
        }
        (Ty::Ref { mutable: a, inner: x }, Ty::Ref { mutable: b, inner: y }) if a == b => {
            type_rule(x, y, old_inv, new_inv)
        }
        _ => None,
    }
}

fn compare_slots(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    for (key, o) in &old.slots {
        let Some(n) = new.slots.get(key) else { continue };
        if let Some(rule) = type_rule(&o.ty, &n.ty, old, new) {
            out.push(finding(rule, n.line, &key.0, o.show(), n.show(), n.in_test));
        }
    }
}

fn compare_visibility(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    for (sym, (orank, otext, _, _)) in &old.fields {
        if let Some((nrank, ntext, line, in_test)) = new.fields.get(sym)
            && nrank > orank
        {
            out.push(finding(FIELD_MADE_PUBLIC, *line, sym, otext.clone(), ntext.clone(), *in_test));
        }
    }
}

fn show_bound(param: &str, bounds: &[String]) -> String {
    if bounds.is_empty() { param.to_string() } else { format!("{param}: {}", bounds.join(" + ")) }
}

/// A trait bound's identity across re-exports and paths: its last segment without
/// generic arguments (`serde::Serialize` and `serde_core::Serialize` are one bound).
fn bound_key(b: &str) -> &str {
    let head = b.split('<').next().unwrap_or(b);
    head.rsplit("::").next().unwrap_or(head)
}

/// Whether a bound constrains the type (lifetimes and `?Sized` do not add a trait).
fn is_trait_bound(b: &str) -> bool {
    !b.starts_with('\'') && !b.starts_with('?')
}

fn compare_bounds(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    for ((item, param), ob) in &old.bounds {
        let (Some(nb), Some(owner)) = (new.bounds.get(&(item.clone(), param.clone())), new.owners.get(item)) else {
            continue;
        };
        let kept: BTreeSet<&str> = nb.iter().map(|b| bound_key(b)).collect();
        let removed = ob.iter().filter(|b| is_trait_bound(b)).any(|b| !kept.contains(bound_key(b)));
        // A bound swapped for another (a renamed trait) is not a removal: the count must drop.
        let count = |v: &[String]| v.iter().filter(|b| is_trait_bound(b)).count();
        if removed && count(nb) < count(ob) {
            out.push(finding(
                BOUND_REMOVED,
                owner.line,
                item,
                show_bound(param, ob),
                show_bound(param, nb),
                owner.in_test,
            ));
        }
    }
}

fn compare_guards(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    let empty = Vec::new();
    for (func, og) in &old.guards {
        let Some(owner) = new.owners.get(func) else { continue };
        let ng = new.guards.get(func).unwrap_or(&empty);
        let mut remaining: Vec<&str> = ng.iter().map(|g| g.key.as_str()).collect();
        let mut removed = Vec::new();
        for g in og {
            match remaining.iter().position(|k| *k == g.key) {
                Some(i) => {
                    remaining.remove(i);
                }
                // Still checked somewhere in the file: moved into a helper, not removed.
                None if new.guard_keys.contains(&g.key) => {}
                None => removed.push(g),
            }
        }
        // Guards new to this function stand in for removed ones: a reworded check.
        let added = remaining.iter().filter(|k| !old.guard_keys.contains(**k)).count();
        for g in removed.into_iter().skip(added) {
            out.push(finding(g.rule, owner.line, func, g.text.clone(), String::new(), owner.in_test));
        }
    }
}

fn compare_attrs(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    for ((sym, rule), text) in &old.attrs {
        if let Some(owner) = new.owners.get(sym)
            && !new.attrs.contains_key(&(sym.clone(), *rule))
        {
            out.push(finding(rule, owner.line, sym, text.clone(), String::new(), owner.in_test));
        }
    }
}

fn compare_statics(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    for (sym, (omut, otext)) in &old.statics {
        if let (Some((true, ntext)), Some(owner)) = (new.statics.get(sym), new.owners.get(sym))
            && !omut
        {
            out.push(finding(STATIC_MADE_MUT, owner.line, sym, otext.clone(), ntext.clone(), owner.in_test));
        }
    }
}

fn compare_unsafe(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    let empty = Vec::new();
    // Every unsafe site of the old file, by text: a site that only moved (its function
    // renamed, split or reordered) was not introduced.
    let mut old_sites: Vec<&str> = old.unsafe_sites.values().flatten().map(|s| s.1.as_str()).collect();
    for (owner, sites) in &new.unsafe_sites {
        let before = old.unsafe_sites.get(owner).unwrap_or(&empty);
        let mut fresh = None;
        for s in sites {
            match old_sites.iter().position(|k| *k == s.1) {
                Some(i) => {
                    old_sites.swap_remove(i);
                }
                None => fresh = fresh.or(Some(s)),
            }
        }
        // Only an owner that was entirely safe counts: more or edited `unsafe` inside
        // code that already had some (blocks added inside an `unsafe fn` for the
        // `unsafe_op_in_unsafe_fn` lint, say) introduces no new kind of risk.
        let Some((line, _, shown)) = fresh.filter(|_| before.is_empty()) else { continue };
        let in_test = new.owners.get(owner).is_some_and(|o| o.in_test);
        out.push(finding(UNSAFE_INTRODUCED, *line, owner, String::new(), shown.clone(), in_test));
    }
}

fn compare_forbid(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    if let (Some((line, text)), None) = (&old.forbid_unsafe, &new.forbid_unsafe) {
        let after = new.unsafe_lint.clone().unwrap_or_default();
        out.push(finding(FORBID_UNSAFE_REMOVED, *line, "crate", text.clone(), after, false));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rewritten file parsed side by side gives the inventories (errors included) of
    /// the incremental path: this crate's large source files with edits spread over
    /// the whole file.
    #[test]
    fn side_by_side_equals_incremental() {
        use super::super::window::check;
        let mut checked = 0;
        for (name, text) in check::corpus(&["src"], &[".rs"]) {
            if text.len() < 16 * 1024 {
                continue;
            }
            let spread = [text.replace(": ", ":  "), text.replace("u32", "u64").replace("assert!(", "drop(")];
            for after in spread.into_iter().filter(|a| super::super::syntax::rewritten(&text, a)) {
                for (b, a) in [(text.as_str(), after.as_str()), (after.as_str(), text.as_str())] {
                    check::assert_same(&name, &side_by_side(b, a), &incremental(b, a), true);
                    checked += 1;
                }
            }
        }
        assert!(checked >= 8, "large files to compare ({checked})");
        // Small files and local edits stay on one thread.
        assert!(!super::super::syntax::rewritten("fn a() {}", "fn b() {}"));
    }

    /// The change window gives exactly the findings of whole files: over every Rust
    /// fixture and edits of this crate's own source (lines deleted; types widened,
    /// checks, attributes and `unsafe` added or removed), both ways round.
    #[test]
    fn window_gives_the_findings_of_whole_files() {
        use super::super::window::check;
        let edits: &[(&str, &str)] = &[
            ("u8", "u64"),
            ("u32", "usize"),
            (": String", ": Option<String>"),
            (": &str", ": serde_json::Value"),
            ("pub(crate) ", "pub "),
            ("#[non_exhaustive]", ""),
            ("assert!(", "let _ = ("),
            ("ensure!(", "let _ = ("),
            ("bail!(", "drop("),
            ("return Err(", "return Ok(("),
            (") {\n", ") {\n    unsafe { std::hint::unreachable_unchecked() }\n"),
            ("static ", "static mut "),
            ("T: ", "T: Ord + "),
        ];
        let mut pairs = Vec::new();
        for (name, text) in check::corpus(&["src/widen", "src/git", "fixtures"], &[".rs"]) {
            for after in check::edits(&text, edits, 4) {
                pairs.push((name.clone(), after.clone(), text.clone()));
                pairs.push((name.clone(), text.clone(), after));
            }
        }
        let (taken, found) =
            check::same_with_and_without(&pairs, &|b, a, w| detect_with(b, a, w), &|b, a| windowed(b, a).is_some());
        assert!(taken > 300, "the window took {taken} of {} pairs", pairs.len());
        assert!(found > 60, "the windowed pairs gave findings to compare ({found})");
    }

    /// Taking unchanged declarations from the new version's walk gives exactly the
    /// inventories of two full walks, lines included: every Rust fixture, and edits
    /// that shift the declarations after them by several lines either way.
    #[test]
    fn reused_declarations_give_the_full_inventories() {
        let helpers =
            "pub fn helper(x: u32) -> u32 {\n    x + 1\n}\n\n#[derive(Debug)]\npub struct S<T: Ord> { pub a: T }\n"
                .repeat(3);
        let mut pairs = vec![
            (
                format!(
                    "pub struct Q {{\n    pub limit: u8,\n}}\n\nfn f(r: f64) {{\n    assert!(r > 0.0);\n}}\n{helpers}"
                ),
                format!("pub struct Q {{\n    pub limit: u64,\n}}\n\nfn f(r: f64) {{\n}}\n{helpers}"),
            ),
            (
                format!("{helpers}fn g() {{}}\n"),
                format!("//! doc\n\n\n#![forbid(unsafe_code)]\n{helpers}fn g() {{ unsafe {{ h() }} }}\n"),
            ),
            (format!("fn a() {{}}\n{helpers}"), format!("fn a() {{}}\nfn a() {{ let x = 1; }}\n{helpers}")),
        ];
        pairs.extend(super::super::syntax::fixtures::pairs("rust-", &["rs"]).into_iter().map(|(_, b, a)| (b, a)));
        let mut reused = 0;
        for (before, after) in &pairs {
            if before.is_empty() {
                continue;
            }
            let old_tree = parse(before, "old").unwrap();
            let (new_tree, unchanged) = parse_new(after, &old_tree, before).unwrap();
            let full = Inventory::build_pair(&old_tree, before, &new_tree, after, None);
            let pair = Inventory::build_pair(&old_tree, before, &new_tree, after, Some(&unchanged));
            assert_eq!(pair, full, "{before}\n---\n{after}");
            reused += top_level(old_tree.root_node(), before)
                .iter()
                .filter(|(start, end, _)| {
                    unchanged.counterpart(*start, *end).is_some_and(|(s, e)| unchanged.holds(s, e))
                })
                .count();
        }
        assert!(reused > 20, "declarations were reused ({reused})");
    }

    /// Skipping blocks without triggers changes no inventory: every Rust fixture, both
    /// versions, walked with and without skipping.
    #[test]
    fn skipping_trigger_free_blocks_changes_no_inventory() {
        let mut sources = vec![
            "pub fn helper(x: u32) -> u32 {\n    x.wrapping_mul(3) + 1\n}\nfn g() { if x { bail!(\"no\") } }\n"
                .to_string(),
            "fn f() { let y = { fn inner(a: u8) { assert!(a > 0); } 1 }; }\nfn h(v: &[u8]) -> usize { v.len() }\n"
                .to_string(),
        ];
        for (_, before, after) in super::super::syntax::fixtures::pairs("rust-", &["rs"]) {
            sources.extend([before, after].into_iter().filter(|t| !t.is_empty()));
        }
        assert!(sources.len() > 40, "the Rust fixtures were read ({})", sources.len());
        let mut skipped = 0;
        for src in &sources {
            let tree = parse(src, "new").unwrap();
            let (pruned, n) = Inventory::walk(&tree, src, true);
            let (full, none) = Inventory::walk(&tree, src, false);
            assert_eq!(none, 0);
            assert_eq!(pruned, full, "{src}");
            skipped += n;
        }
        assert!(skipped >= 2, "trigger-free blocks are skipped ({skipped})");
    }

    fn rules(before: &str, after: &str) -> Vec<(String, &'static str, String, String)> {
        detect("src/x.rs", before, after).unwrap().into_iter().map(|f| (f.symbol, f.rule, f.before, f.after)).collect()
    }

    #[test]
    fn integer_ranges_are_directional() {
        let w = |a: &str, b: &str| {
            rules(&format!("struct S {{ a: {a} }}"), &format!("struct S {{ a: {b} }}")).first().map(|r| r.1)
        };
        assert_eq!(w("u8", "u64"), Some(INTEGER_WIDENED));
        assert_eq!(w("u32", "i64"), Some(INTEGER_WIDENED));
        assert_eq!(w("i32", "i64"), Some(INTEGER_WIDENED));
        assert_eq!(w("u64", "u8"), None);
        assert_eq!(w("i32", "u64"), None);
        assert_eq!(w("u32", "i32"), None);
        assert_eq!(w("u64", "usize"), None);
        assert_eq!(w("NonZeroU32", "u32"), Some(NONZERO_DROPPED));
        assert_eq!(w("NonZero<u8>", "u64"), Some(NONZERO_DROPPED));
        assert_eq!(w("NonZeroU8", "NonZeroU64"), Some(INTEGER_WIDENED));
        assert_eq!(w("Vec<u8>", "Vec<u16>"), Some(INTEGER_WIDENED));
        assert_eq!(w("Option<u8>", "u8"), None);
    }

    #[test]
    fn parse_failure_is_an_error() {
        assert!(detect("a.rs", "fn f() {}", "fn f( {").is_err());
    }

    #[test]
    fn macro_arguments_split_at_top_level() {
        assert_eq!(macro_args(r#"(a(b, c), "x, y", z)"#), ["a(b,c)", r#""x,y""#, "z"]);
    }
}
