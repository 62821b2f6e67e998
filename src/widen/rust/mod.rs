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
use tree_sitter::{Node, Tree};

use super::window;
use super::{DetectError, RawFinding, RuleDef, RuleId};

mod checked;
mod compare;
mod newtype;
mod rules;
#[cfg(test)]
mod tests;
mod ty;
mod unwrap;
mod walk;

use compare::*;
pub(crate) use rules::*;
use ty::*;

/// Rust that tree-sitter-rust 0.24 (the newest release) does not parse, blanked with
/// spaces of the same length so that lines and offsets stay: the Rust 2024 `safe`
/// qualifier in `unsafe extern` blocks (`pub safe fn`, `safe static`), and `#[cfg(...)]`
/// on a field of a struct pattern (`let P { a, #[cfg(x)] b, .. } = p`). Neither holds a
/// constraint the detector reads. `None` when the text has neither.
fn repair(src: &str) -> Option<String> {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut changed = false;
    for (at, _) in src.match_indices("safe") {
        let rest = src[at + 4..].trim_start();
        let whole = !b.get(at.wrapping_sub(1)).is_some_and(|&c| ident(c)) && at + 4 < b.len() && !ident(b[at + 4]);
        if whole && (rest.starts_with("fn ") || rest.starts_with("static ")) {
            out[at..at + 4].fill(b' ');
            changed = true;
        }
    }
    for (at, _) in src.match_indices("#[cfg(") {
        // Only after `{` or `,` (a field), and never `#[cfg(test)]`, which marks test code.
        let before = src[..at].trim_end();
        if !(before.ends_with('{') || before.ends_with(',')) || src[at..].starts_with("#[cfg(test)]") {
            continue;
        }
        let mut depth = 0usize;
        let Some(end) = src[at..].char_indices().find_map(|(i, c)| {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(at + i + 1);
                    }
                }
                _ => {}
            }
            None
        }) else {
            continue;
        };
        for c in &mut out[at..end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        changed = true;
    }
    // Only ASCII bytes were replaced by spaces, so the text is still UTF-8.
    changed.then(|| String::from_utf8(out).expect("ASCII replaced by ASCII"))
}

/// Guards and assertions longer than this are cut (with `...`) in `before`.
const MAX_SNIPPET_CHARS: usize = 120;

/// The Rust detector.
pub(crate) struct RustDetector;

impl super::detector::Grammar for RustDetector {
    type Inventory = Inventory;

    fn rules(&self) -> &'static [RuleDef] {
        RULES
    }

    /// `unsafe` introduced fires in an added file, and only where the keyword appears.
    fn added_may_fire(&self, after: &str) -> bool {
        after.contains("unsafe")
    }

    fn grammar(&self, _path: &str) -> tree_sitter::Language {
        tree_sitter_rust::LANGUAGE.into()
    }

    fn refuse(&self, tree: Option<Tree>, _path: &str, side: &'static str) -> Result<Tree, DetectError> {
        refuse_errors(tree, side)
    }

    fn build(&self, tree: &Tree, src: &str) -> Inventory {
        Inventory::build(tree, src)
    }

    fn build_pair(
        &self,
        old: &Tree,
        before: &str,
        new: &Tree,
        after: &str,
        unchanged: &super::syntax::Unchanged,
    ) -> (Inventory, Inventory) {
        Inventory::build_pair(old, before, new, after, Some(unchanged))
    }

    fn window(&self, _path: &str) -> Option<window::Lexer> {
        Some(window::Lexer::Rust)
    }

    fn repair(&self, src: &str) -> Option<String> {
        repair(src)
    }

    fn elide(&self, _path: &str) -> Option<super::elide::Elision> {
        Some(super::elide::Elision { lexer: super::elide::BodyLexer::Rust, triggers: body_may_hold, unshared })
    }

    fn left_out_block(&self, block: Node, parent: Option<Node>) -> bool {
        let parent = parent.map(kind_of);
        matches!((kind_of(block), parent), ("block", Some("function_item")) | ("declaration_list", Some("mod_item")))
    }

    /// Shared bodies and test modules hold no enum, `serde_json` import, inner
    /// attribute or `unsafe` ([`unshared`]); what else they hold that the comparison
    /// looks up across the file is guards: a guard's key
    /// that one version has and the other lacks must not be in a text left out, where
    /// the whole file would have found it. Only keys that a function in both versions
    /// has matter (the comparison weighs no other function's guards) and, with test
    /// findings not reported, one outside test code.
    fn shared_conflicts<'t>(
        &self,
        old: &Inventory,
        new: &Inventory,
        skip_tests: bool,
        texts: &[&'t str],
    ) -> Vec<&'t str> {
        // The comparison weighs a function's guards only where the function is in both
        // versions: a key only new or gone functions have changes nothing.
        let weighed = |key: &str| {
            [old, new].iter().any(|inv| {
                inv.guards.iter().any(|(f, guards)| {
                    let (Some(o), Some(n)) = (old.owners.get(f), new.owners.get(f)) else { return false };
                    !(skip_tests && (o.in_test || n.in_test)) && guards.iter().any(|g| g.key == key)
                })
            })
        };
        let keys: Vec<&String> =
            old.guard_keys.symmetric_difference(&new.guard_keys).filter(|key| weighed(key)).collect();
        // A type built without a guard is judged by its other constructors' guards
        // ([`newtype::compare`]): the shared bodies that may build it are read.
        let built: BTreeSet<&str> = newtype::unchecked_builders(new).collect();
        if keys.is_empty() && built.is_empty() {
            return Vec::new();
        }
        (texts.iter().copied())
            .filter(|text| {
                let part = window::Outside::from_parts(vec![text]);
                keys.iter().any(|key| guard_may_be_in(key, &part)) || newtype::may_build_any(text, &built)
            })
            .collect()
    }

    fn stands_alone(&self, old: &Inventory, new: &Inventory, outside: &window::Outside) -> bool {
        // A lint level for `unsafe_code` outside is a file-wide fact the window cannot see.
        !outside.contains("unsafe_code") && stands_alone(old, new, outside)
    }

    fn compare(&self, old: &Inventory, new: &Inventory) -> Vec<RawFinding> {
        let mut out = Vec::new();
        compare_slots(old, new, &mut out);
        compare_visibility(old, new, &mut out);
        compare_bounds(old, new, &mut out);
        compare_guards(old, new, &mut out);
        compare_attrs(old, new, &mut out);
        compare_statics(old, new, &mut out);
        compare_unsafe(old, new, &mut out);
        compare_variants(old, new, &mut out);
        compare_forbid(old, new, &mut out);
        checked::compare(old, new, &mut out);
        unwrap::compare(old, new, &mut out);
        newtype::compare(old, new, &mut out);
        out
    }
}

/// Whether the window's inventories compare exactly as the whole files' would, given
/// the `outside` text (the same in both versions): the comparisons look constraints up
/// by symbol, and by a few file-wide sets; neither may meet anything outside.
fn stands_alone(old: &Inventory, new: &Inventory, outside: &window::Outside) -> bool {
    // First segments that must not be declared outside at all, and members (the last
    // segment of `Type.method`, `Type.field`, `Enum.Variant`) by the first segment
    // they sit under: such a symbol is only outside where one declaration there names
    // both.
    let mut roots = BTreeSet::new();
    let mut members: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for inv in [old, new] {
        let keyed = (inv.slots.keys().map(|k| &k.0))
            .chain(inv.fields.keys())
            .chain(inv.fn_vis.keys())
            .chain(inv.bounds.keys().map(|k| &k.0))
            .chain(inv.guards.keys())
            .chain(inv.attrs.keys().map(|k| &k.0))
            .chain(inv.statics.keys())
            .chain(inv.unsafe_sites.keys())
            .chain(inv.closed.iter())
            .chain(inv.variants.keys())
            .chain(inv.arith.keys());
        // A symbol that is only an owner (an `impl` block's type, an item with nothing
        // recorded) is looked up for the line of findings on its other entries alone:
        // if it has none, another item of its name outside changes no finding.
        let owners = inv.owners.keys().filter(|s| s.contains('.'));
        for symbol in keyed.chain(owners) {
            match member(symbol) {
                Some(last) => {
                    members.entry(window::root(symbol)).or_default().insert(last);
                }
                None => {
                    roots.insert(window::root(symbol));
                }
            }
        }
    }
    if outside.may_declare_any(window::Lexer::Rust, &roots) || members.len() > window::MAX_WINDOW_NAMES {
        return false;
    }
    if members.iter().any(|(root, last)| outside.may_declare_members(root, last)) {
        return false;
    }
    // Guards outside stand in unchanged functions, each kept as it was: they cancel
    // out of the count of where a removed guard may have moved. What they change is
    // whether a guard new to a function that had guards counts as a reworded check
    // (its key stood somewhere in the old file) or an added one (`compare_guards`):
    // for such a key that the window's old version lacks, the outside must not hold it.
    let reworded = (new.guards.iter().filter(|(f, _)| old.guards.contains_key(*f)))
        .flat_map(|(_, guards)| guards.iter().map(|g| &g.key))
        .filter(|key| !old.guard_keys.contains(*key));
    if reworded.into_iter().any(|key| guard_may_be_in(key, outside)) {
        return false;
    }
    // A function that builds its own type without a guard is judged against the type
    // and its other constructors ([`newtype::compare`]), which may stand outside.
    if newtype::unchecked_builders(new).any(|ty| outside.may_declare(window::Lexer::Rust, window::root(ty))) {
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

/// The last segment of a symbol of several (`Type.method` gives `method`), when it is
/// a name: a tuple field (`Type.0`) is named by its position, which any tuple type has.
fn member(symbol: &str) -> Option<&str> {
    let (_, last) = symbol.rsplit_once('.')?;
    let last = last.strip_suffix("->").unwrap_or(last);
    (window::is_identifier(last) && !last.starts_with(|c: char| c.is_ascii_digit())).then_some(last)
}

/// Whether a guard with `key` may stand in `text`.
fn guard_may_be_in(key: &str, text: &window::Outside) -> bool {
    // `eq(a,b)` stands for `assert_eq!(a, b)`: its squashed text holds `a,b`.
    let eq_args = ["eq(", "ne("].iter().find_map(|p| key.strip_prefix(p)?.strip_suffix(')'));
    match (key.strip_prefix("if:"), eq_args) {
        (Some(cond), _) => text.contains_compact(cond),
        (None, Some(args)) => text.contains_compact(args),
        (None, None) => text.contains_compact(key),
    }
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

/// The first error or missing node under `n` in document order, searched with an
/// explicit stack (a tree may be as deep as its input is long).
fn first_error(n: Node) -> Option<Node> {
    let mut stack = vec![n];
    while let Some(n) = stack.pop() {
        if n.is_error() || n.is_missing() {
            return Some(n);
        }
        let mut c = n.walk();
        let at = stack.len();
        stack.extend(n.children(&mut c).filter(|ch| ch.has_error()));
        // Reversed, so that the first child comes out first.
        stack[at..].reverse();
    }
    None
}

fn snippet(s: &str) -> String {
    let l = collapse_whitespace(s);
    if l.chars().count() <= MAX_SNIPPET_CHARS {
        return l;
    }
    let cut: String = l.chars().take(MAX_SNIPPET_CHARS).collect();
    format!("{cut}...")
}

/// A typed position: a field, parameter, return type, constant or alias.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Guard {
    rule: RuleId,
    /// The condition, squashed: its identity across formatting and messages.
    key: String,
    text: String,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Owner {
    line: u32,
    in_test: bool,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Inventory {
    /// (symbol, slot key) -> slot.
    slots: BTreeMap<(String, String), Slot>,
    /// `Type.field` -> (visibility rank, field text, line, in test).
    fields: BTreeMap<String, (u8, String, u32, bool)>,
    /// Function symbol -> (visibility rank, its head up to the name, line, in test).
    fn_vis: BTreeMap<String, (u8, String, u32, bool)>,
    /// (item symbol, type parameter) -> bounds in source order.
    bounds: BTreeMap<(String, String), Vec<String>>,
    /// Functions and items: symbol -> where it is.
    owners: BTreeMap<String, Owner>,
    /// Function symbol -> guards in source order.
    guards: BTreeMap<String, Vec<Guard>>,
    /// Every guard key anywhere in the file.
    guard_keys: BTreeSet<String>,
    /// (item symbol, attribute rule) -> attribute text.
    attrs: BTreeMap<(String, RuleId), String>,
    /// Static symbol -> (mutable, text).
    statics: BTreeMap<String, (bool, String)>,
    /// Owner symbol -> unsafe sites (line, squashed text, shown text).
    unsafe_sites: BTreeMap<String, Vec<(u32, String, String)>>,
    /// `#![forbid(unsafe_code)]`: (line, text); other unsafe_code lint levels: text.
    forbid_unsafe: Option<(u32, String)>,
    unsafe_lint: Option<String>,
    enums: BTreeSet<String>,
    value_imported: bool,
    /// Structs and unions with a field private to their module, and enums without a
    /// variant: types no other module can build or match field by field, so
    /// `#[non_exhaustive]` on them adds nothing.
    closed: BTreeSet<String>,
    /// Public enums: symbol -> (`#[non_exhaustive]`, variants with their lines).
    variants: BTreeMap<String, (bool, Vec<(String, u32)>)>,
    /// Function symbol -> its checked arithmetic and squashed body ([`checked`]).
    arith: BTreeMap<String, checked::Arith>,
    /// Struct fields whose becoming `Option` widens no value the scan reads
    /// ([`walk::quiet_option`]): absence was already accepted, or nothing outside the
    /// module fills them.
    #[serde(default)]
    quiet_option: BTreeSet<String>,
}

struct Walk<'a> {
    src: &'a str,
    inv: Inventory,
    /// Skip blocks holding none of [`TRIGGERS`], and the parts of items that hold only
    /// types (off only to test that skipping changes nothing).
    prune: bool,
    /// How many blocks were skipped.
    skipped: usize,
    /// Inside a trait or an `impl` of a trait: its functions have no visibility.
    in_trait: bool,
}

/// What the walk reacts to inside a block, as the tokens each needs: inner attributes
/// (`#`), `use` declarations, items (their keywords), macro calls (`!`), `if`
/// expressions and `unsafe` blocks. A block holding none of them holds nothing the
/// inventory records.
static TRIGGERS: std::sync::LazyLock<super::syntax::Triggers> =
    std::sync::LazyLock::new(|| super::syntax::Triggers::new(&[&["#", "!"], TRIGGER_KEYWORDS].concat()));

/// The keywords among [`TRIGGERS`].
const TRIGGER_KEYWORDS: &[&str] =
    &["if", "unsafe", "use", "mod", "struct", "enum", "union", "trait", "impl", "fn", "type", "const", "static"];

/// Whether a function body's inside may hold what the walk records, read from the
/// tokens (strings and comments count for nothing): an `unsafe`, `use` or item
/// keyword, a `#`, a call of checked arithmetic (which [`checked::record`] reads), an
/// `unwrap` or `expect` (which [`unwrap::collect`] reads), a
/// guard macro (`assert!` and the others [`guard_of_macro`] reads; any other macro's
/// tokens are not looked into), or an `if` together with what a guard's block leaves
/// by (`bail`, `panic`, `unreachable`, `Err` anywhere in the text: [`guard_of_if`]).
/// Text that does not lex counts as holding something.
fn body_may_hold(text: &str) -> bool {
    // Most bodies hold none of it even as text: no need to lex them.
    if !TRIGGERS.any_in(text) && !text.contains("checked_") && !unwrap::may_hold(text) && !newtype::may_build(text) {
        return false;
    }
    let b = text.as_bytes();
    // As text: `guard_of_if` reads the block's text, strings and comments included.
    let leaves = GUARD_LEAVES.iter().any(|w| text.contains(w));
    let (mut word, mut saw_if) = (None, false);
    let found = window::rust_tokens(text, |i, token| {
        let hit = match token {
            window::Token::Word(end) => {
                let w = &text[i..end];
                saw_if |= w == "if";
                (w != "if" && TRIGGER_KEYWORDS.contains(&w))
                    || w.contains("checked_")
                    || w == "unwrap"
                    || w == "expect"
                    || (b.get(end) == Some(&b'(') && newtype::builds_by_name(w, &b[..i]))
            }
            window::Token::Punct(b'#') => true,
            window::Token::Punct(b'!') => {
                word.is_some_and(|w| GUARD_MACROS.contains(&w)) && b.get(i + 1) != Some(&b'=')
            }
            _ => false,
        };
        // A comment between a name and its `!` keeps the name.
        match token {
            window::Token::Comment(_) => {}
            window::Token::Word(end) => word = Some(&text[i..end]),
            _ => word = None,
        }
        // Stop at the first: `None` ends the walk.
        (!(hit || saw_if && leaves)).then_some(())
    });
    found.is_none()
}

/// The macros whose calls are guards ([`guard_of_macro`]).
const GUARD_MACROS: &[&str] =
    &["assert", "debug_assert", "assert_eq", "assert_ne", "debug_assert_eq", "debug_assert_ne", "ensure"];

/// What the block of an `if` guard holds one of ([`guard_of_if`]).
const GUARD_LEAVES: &[&str] = &["bail", "panic", "unreachable", "Err"];

/// Whether a function body or a test module may hold what the comparison looks up
/// across the file rather than by the symbols of the text itself: an enum's name, a
/// `serde_json` import (they decide how a changed type is read), an inner attribute
/// (the `unsafe_code` lint levels), `unsafe` code (matched file-wide). Such a text is
/// not left out for being shared, or for being test code. Everything else declared
/// inside (a nested function, type, `impl`, macro) is named after the function or
/// module around it, and its guards are checked by [`Grammar::shared_conflicts`].
///
/// [`Grammar::shared_conflicts`]: super::detector::Grammar::shared_conflicts
fn unshared(text: &str) -> bool {
    static WORDS: std::sync::LazyLock<aho_corasick::AhoCorasick> = std::sync::LazyLock::new(|| {
        aho_corasick::AhoCorasick::new(["unsafe", "enum", "serde_json"]).expect("a handful of words always builds")
    });
    text.contains("#!") || super::elide::words(text, &WORDS).next().is_some()
}

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
        let mut w = Walk { src, inv: Inventory::default(), prune: true, skipped: 0, in_trait: false };
        w.run(item, attrs);
        w.inv
    }

    /// The inventory and how many blocks the walk skipped.
    fn walk(tree: &Tree, src: &str, prune: bool) -> (Inventory, usize) {
        let mut w = Walk { src, inv: Inventory::default(), prune, skipped: 0, in_trait: false };
        w.run(tree.root_node(), Vec::new());
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
            fn_vis,
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
            closed,
            variants,
            arith,
            quiet_option,
        } = o;
        self.slots.extend(slots);
        self.fields.extend(fields);
        self.fn_vis.extend(fn_vis);
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
        self.closed.extend(closed);
        self.variants.extend(variants);
        self.arith.extend(arith);
        self.quiet_option.extend(quiet_option);
    }

    /// Moves every line this inventory records by `delta`.
    fn shift_lines(&mut self, delta: i64) {
        if delta == 0 {
            return;
        }
        let shift = |l: &mut u32| *l = u32::try_from(i64::from(*l) + delta).unwrap_or(1);
        self.slots.values_mut().for_each(|s| shift(&mut s.line));
        self.fields.values_mut().for_each(|f| shift(&mut f.2));
        self.fn_vis.values_mut().for_each(|f| shift(&mut f.2));
        self.owners.values_mut().for_each(|o| shift(&mut o.line));
        self.unsafe_sites.values_mut().flatten().for_each(|site| shift(&mut site.0));
        self.variants.values_mut().flat_map(|v| &mut v.1).for_each(|v| shift(&mut v.1));
        if let Some(f) = &mut self.forbid_unsafe {
            shift(&mut f.0);
        }
    }
}
