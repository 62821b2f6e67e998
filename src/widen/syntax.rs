//! Machinery shared by the TypeScript/JavaScript, Python and Go detectors: parsing with
//! tree-sitter (a tree with errors is a `DetectError`), one-line source text, and the
//! comparison of two constraint inventories (typed slots paired by key, checks matched by
//! condition so that a reworded or moved check is not reported as removed).

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::{Node, Parser, Tree};

use crate::widen::{DetectError, RawFinding, RuleId};

/// The tree of one version, or why it cannot be used: no tree at all, or a tree with
/// syntax errors (refused, so a half-parsed file never yields findings built on a guess).
pub(in crate::widen) fn refuse(tree: Option<Tree>, which: &str, path: &str) -> Result<Tree, DetectError> {
    let tree = tree.ok_or_else(|| DetectError(format!("{path}: the {which} version could not be parsed")))?;
    refuse_errors(&tree, which, path)?;
    Ok(tree)
}

fn refuse_errors(tree: &Tree, which: &str, path: &str) -> Result<(), DetectError> {
    let root = tree.root_node();
    if root.has_error() {
        let line = first_error_line(root).unwrap_or(1);
        return Err(DetectError(format!("{path}: the {which} version does not parse (syntax error near line {line})")));
    }
    Ok(())
}

/// Parse `after` reusing `old`, the tree of `before`: the two texts differ only between
/// their common prefix and their common suffix, so that span is one edit, and
/// tree-sitter reuses every subtree outside it. The result is the tree a fresh parse
/// of `after` gives; a change spread over the whole file simply reuses nothing. Also
/// returns the old tree as edited, and the edit.
fn reparse(parser: &mut Parser, old: &Tree, before: &str, after: &str) -> Option<(Tree, Tree, tree_sitter::InputEdit)> {
    let edit = edit_between(before, after);
    let mut edited = old.clone();
    edited.edit(&edit);
    Some((parser.parse(after, Some(&edited))?, edited, edit))
}

/// What an incremental parse left as it was: the one edit between the two texts and
/// the ranges (new coordinates) whose syntax tree changed. A top-level declaration
/// outside both has the same text and the same tree in the two versions, so its
/// inventory is the same but for line numbers, and the old version's walk can take it
/// from the new version's instead of walking it again.
#[derive(Debug, Clone)]
pub(crate) struct Unchanged {
    edit: tree_sitter::InputEdit,
    changed: Vec<std::ops::Range<usize>>,
}

impl Unchanged {
    /// Whether the new version's `[start, end)` lies outside the edit and every changed range.
    pub(crate) fn holds(&self, start: usize, end: usize) -> bool {
        (end <= self.edit.start_byte || start >= self.edit.new_end_byte)
            && !self.changed.iter().any(|r| r.start < end && start < r.end)
    }

    /// The new version's range of the old version's `[start, end)`, when the text there
    /// is outside the edit.
    pub(crate) fn counterpart(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        let e = &self.edit;
        if end <= e.start_byte {
            return Some((start, end));
        }
        if start >= e.old_end_byte {
            return Some((start - e.old_end_byte + e.new_end_byte, end - e.old_end_byte + e.new_end_byte));
        }
        None
    }

    /// What to add to a new-version line at byte `start` to get its old-version line.
    pub(crate) fn line_shift(&self, start: usize) -> i64 {
        let e = &self.edit;
        if start >= e.new_end_byte { e.old_end_position.row as i64 - e.new_end_position.row as i64 } else { 0 }
    }
}

/// An inventory that can be built one top-level unit at a time.
pub(in crate::widen) trait Part: Default + Clone {
    /// Adds the part of a later unit exactly as walking it after the units already here
    /// would have.
    fn absorb(&mut self, later: Self);
    /// Moves every line recorded by `delta`.
    fn shift_lines(&mut self, delta: i64);
}

/// The inventories of both versions from their top-level units `(start, end, unit)`.
/// The new version's units are walked one at a time; an old unit whose counterpart in
/// the new version is [`Unchanged`] is not walked again: its part is taken from the new
/// version, lines moved back.
pub(in crate::widen) fn build_pair<P: Part, U>(
    old_units: Vec<(usize, usize, U)>,
    new_units: Vec<(usize, usize, U)>,
    unchanged: &Unchanged,
    mut walk_old: impl FnMut(U) -> P,
    mut walk_new: impl FnMut(U) -> P,
) -> (P, P) {
    let mut new = P::default();
    let mut kept: BTreeMap<(usize, usize), P> = BTreeMap::new();
    for (start, end, unit) in new_units {
        let part = walk_new(unit);
        if unchanged.holds(start, end) {
            kept.insert((start, end), part.clone());
        }
        new.absorb(part);
    }
    let mut old = P::default();
    for (start, end, unit) in old_units {
        let same = unchanged.counterpart(start, end).and_then(|range| Some((range.0, kept.remove(&range)?)));
        match same {
            Some((new_start, mut part)) => {
                part.shift_lines(unchanged.line_shift(new_start));
                old.absorb(part);
            }
            None => old.absorb(walk_old(unit)),
        }
    }
    (old, new)
}

/// [`reparse`], also telling what it left unchanged.
pub(in crate::widen) fn reparse_tracking(
    parser: &mut Parser,
    old: &Tree,
    before: &str,
    after: &str,
) -> Option<(Tree, Unchanged)> {
    let (new, edited, edit) = reparse(parser, old, before, after)?;
    let changed = edited.changed_ranges(&new).map(|r| r.start_byte..r.end_byte).collect();
    Some((new, Unchanged { edit, changed }))
}

/// Below this size a file is parsed on one thread whatever changed: a second thread
/// would cost more than it saves.
const REWRITE_MIN_BYTES: usize = 16 * 1024;

/// Whether `after` is a large file whose edit from `before` covers at least half of it:
/// an incremental parse would reuse little, so the two versions can as well be parsed
/// side by side.
pub(in crate::widen) fn rewritten(before: &str, after: &str) -> bool {
    if after.len() < REWRITE_MIN_BYTES {
        return false;
    }
    let edit = edit_between(before, after);
    (edit.new_end_byte - edit.start_byte) * 2 >= after.len()
}

/// `side` run on both versions at once, on two threads: for a [`rewritten`] file.
/// An error of the old version is reported first, as when the two run in turn.
pub(in crate::widen) fn side_by_side<T: Send>(
    before: &str,
    after: &str,
    side: impl Fn(&str, &'static str) -> Result<T, DetectError> + Sync,
) -> Result<(T, T), DetectError> {
    let (old, new) = rayon::join(|| side(before, "old"), || side(after, "new"));
    Ok((old?, new?))
}

/// The single edit that turns `a` into `b`, on UTF-8 character boundaries.
pub(in crate::widen) fn edit_between(a: &str, b: &str) -> tree_sitter::InputEdit {
    let (ab, bb) = (a.as_bytes(), b.as_bytes());
    let mut pre = ab.iter().zip(bb).take_while(|(x, y)| x == y).count();
    while pre > 0 && !(a.is_char_boundary(pre) && b.is_char_boundary(pre)) {
        pre -= 1;
    }
    let room = (ab.len() - pre).min(bb.len() - pre);
    let mut suf = ab.iter().rev().zip(bb.iter().rev()).take(room).take_while(|(x, y)| x == y).count();
    while suf > 0 && !(a.is_char_boundary(ab.len() - suf) && b.is_char_boundary(bb.len() - suf)) {
        suf -= 1;
    }
    let (old_end, new_end) = (ab.len() - suf, bb.len() - suf);
    tree_sitter::InputEdit {
        start_byte: pre,
        old_end_byte: old_end,
        new_end_byte: new_end,
        start_position: point_at(ab, pre),
        old_end_position: point_at(ab, old_end),
        new_end_position: point_at(bb, new_end),
    }
}

/// What `read` takes from each of two versions, each parsed with `lang`; `None` when
/// either does not parse cleanly (the language's own detector reports the error). The
/// declared-constraint passes (zod, Go tags) compare two such inventories.
pub(in crate::widen) fn both_versions<T>(
    lang: &tree_sitter::Language,
    before: &str,
    after: &str,
    read: impl Fn(tree_sitter::Node, &str) -> T,
) -> Option<(T, T)> {
    let one = |src: &str| -> Option<T> {
        let tree = with_parser(lang, |p| p.parse(src, None)).flatten()?;
        (!tree.root_node().has_error()).then(|| read(tree.root_node(), src))
    };
    Some((one(before)?, one(after)?))
}

/// `f` with a parser for `lang`, taken from this thread's own (a parser's buffers
/// are reused from one file to the next: thousands of small files are parsed in a
/// large scan). Its included ranges are reset to the whole text before `f`. `None`
/// when the grammar does not load.
pub(in crate::widen) fn with_parser<R>(lang: &tree_sitter::Language, f: impl FnOnce(&mut Parser) -> R) -> Option<R> {
    thread_local! {
        static PARSERS: std::cell::RefCell<Vec<(tree_sitter::Language, Parser)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    let fresh = || {
        let mut parser = Parser::new();
        parser.set_language(lang).ok().map(|_| parser)
    };
    PARSERS.with(|cell| match cell.try_borrow_mut() {
        Ok(mut parsers) => {
            let at = match parsers.iter().position(|(l, _)| l == lang) {
                Some(at) => at,
                None => {
                    parsers.push((lang.clone(), fresh()?));
                    parsers.len() - 1
                }
            };
            let parser = &mut parsers[at].1;
            parser.set_included_ranges(&[]).ok()?;
            Some(f(parser))
        }
        // Only a parse inside a parse would find it taken: a parser of its own.
        Err(_) => fresh().map(|mut parser| f(&mut parser)),
    })
}

/// The row and column of `byte` in `text`.
pub(in crate::widen) fn point_at(text: &[u8], byte: usize) -> tree_sitter::Point {
    let head = &text[..byte];
    let row = memchr::memchr_iter(b'\n', head).count();
    let column = byte - memchr::memrchr(b'\n', head).map_or(0, |i| i + 1);
    tree_sitter::Point { row, column }
}

/// One version parsed from scratch, refused with errors (for tests; the detectors
/// parse through [`super::detector`]).
#[cfg(test)]
pub(in crate::widen) fn parse(
    lang: tree_sitter::Language,
    src: &str,
    which: &str,
    path: &str,
) -> Result<Tree, DetectError> {
    let mut parser = Parser::new();
    parser.set_language(&lang).map_err(|e| DetectError(format!("{path}: cannot load the grammar: {e}")))?;
    refuse(parser.parse(src, None), which, path)
}

/// Both versions, the new one reparsed incrementally, and what it left unchanged (for tests).
#[cfg(test)]
pub(in crate::widen) fn parse_pair_tracking(
    lang: tree_sitter::Language,
    before: &str,
    after: &str,
    path: &str,
) -> Result<(Tree, Tree, Unchanged), DetectError> {
    let mut parser = Parser::new();
    parser.set_language(&lang).map_err(|e| DetectError(format!("{path}: cannot load the grammar: {e}")))?;
    let old = refuse(parser.parse(before, None), "old", path)?;
    let (new, unchanged) = reparse_tracking(&mut parser, &old, before, after).unzip();
    Ok((old, refuse(new, "new", path)?, unchanged.expect("a new tree comes with what it left unchanged")))
}

#[cfg(test)]
mod reparse_tests {
    use super::*;

    /// An incremental parse must give exactly the tree a fresh parse gives.
    #[test]
    fn incremental_tree_equals_fresh_tree() {
        let lang: tree_sitter::Language = tree_sitter_python::LANGUAGE.into();
        let cases = [
            ("def f(x):\n    assert x > 0\n    return x\n", "def f(x):\n    return x\n"),
            ("x = 1\n", "x: int = 1\ny = 'é'\n"),
            ("a = 'é'\nb = 2\n", "a = 'è'\nb = 2\n"),
            ("", "z = 3\n"),
            ("class A:\n    x: int\n", "class A:\n    x: int | None\n"),
        ];
        for (before, after) in cases {
            let (_, incremental, _) = parse_pair_tracking(lang.clone(), before, after, "t.py").unwrap();
            let fresh = parse(lang.clone(), after, "new", "t.py").unwrap();
            assert_eq!(incremental.root_node().to_sexp(), fresh.root_node().to_sexp(), "{before:?} -> {after:?}");
        }
    }
}

/// The line of the first error or missing node in document order, walked with one cursor
/// (no recursion: a tree may be as deep as its input is long).
fn first_error_line(node: Node) -> Option<u32> {
    let mut cursor = node.walk();
    loop {
        let n = cursor.node();
        if n.is_error() || n.is_missing() {
            return Some(line(n));
        }
        // Down into a subtree holding an error, else on to the next sibling holding one
        // (up as long as there is none): the same order a recursive search takes.
        if n.has_error() && cursor.goto_first_child() {
            if cursor.node().has_error() {
                continue;
            }
        } else if cursor.depth() == 0 {
            return None;
        }
        loop {
            if cursor.goto_next_sibling() {
                if cursor.node().has_error() {
                    break;
                }
            } else if cursor.depth() == 0 || !cursor.goto_parent() || cursor.depth() == 0 {
                return None;
            }
        }
    }
}

/// How many (grammar, field name) pairs [`field`] remembers per thread; the detectors
/// use about fifteen names each.
const FIELD_CACHE_SLOTS: usize = 256;

thread_local! {
    /// Field ids by (grammar address, field name address): tree-sitter's own lookup by
    /// name compares the name with every field of the grammar, on every call.
    static FIELD_IDS: std::cell::RefCell<[(usize, usize, u16); FIELD_CACHE_SLOTS]> =
        const { std::cell::RefCell::new([(0, 0, 0); FIELD_CACHE_SLOTS]) };
}

/// The address `Language`'s `Hash` writes: its grammar pointer, the grammar's identity.
struct GrammarAddress(usize);

impl std::hash::Hasher for GrammarAddress {
    fn finish(&self) -> u64 {
        self.0 as u64
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ usize::from(*b);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = n;
    }
}

/// The identity of a grammar: the address of its parse tables.
fn grammar_address(language: &tree_sitter::Language) -> usize {
    use std::hash::Hash;
    let mut h = GrammarAddress(0);
    language.hash(&mut h);
    h.0
}

/// `node.child_by_field_name(name)`, with the field's id cached per grammar: the same
/// answer, without a string comparison per field of the grammar on every call.
pub(in crate::widen) fn field<'t>(node: Node<'t>, name: &'static str) -> Option<Node<'t>> {
    let id = field_id(node, name);
    if id == 0 { None } else { node.child_by_field_id(id) }
}

/// The id of field `name` in the grammar of `node` (0: the grammar has no such field).
fn field_id(node: Node, name: &'static str) -> u16 {
    let language = node.language();
    let (grammar, key) = (grammar_address(&language), name.as_ptr() as usize);
    let slot = (grammar ^ key.rotate_left(21)).wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as usize)
        >> (usize::BITS - FIELD_CACHE_SLOTS.trailing_zeros());
    FIELD_IDS.with(|cache| {
        let mut cache = cache.borrow_mut();
        let (g, k, id) = cache[slot];
        if g == grammar && k == key {
            return id;
        }
        // 0 is no field: tree-sitter numbers fields from 1.
        let id = language.field_id_for_name(name).map_or(0, |id| id.get());
        cache[slot] = (grammar, key, id);
        id
    })
}

/// The children of one node, read in one cursor pass with the field each fills. A
/// declaration whose name, parameters, return type and body are all looked at pays one
/// pass instead of one search of its children per part.
pub(in crate::widen) struct Parts<'t> {
    node: Node<'t>,
    children: Vec<(u16, Node<'t>)>,
}

impl<'t> Parts<'t> {
    pub(super) fn of(node: Node<'t>) -> Parts<'t> {
        let mut children = Vec::with_capacity(node.child_count());
        let mut cursor = node.walk();
        if cursor.goto_first_child() {
            loop {
                children.push((cursor.field_id().map_or(0, |f| f.get()), cursor.node()));
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        Parts { node, children }
    }

    /// The first child in field `name`: what `node.child_by_field_name(name)` answers.
    pub(super) fn field(&self, name: &'static str) -> Option<Node<'t>> {
        let id = field_id(self.node, name);
        if id == 0 {
            return None;
        }
        self.children.iter().find(|(f, _)| *f == id).map(|(_, n)| *n)
    }

    /// Every child, named or not, in order.
    pub(super) fn all(&self) -> impl Iterator<Item = Node<'t>> + '_ {
        self.children.iter().map(|(_, n)| *n)
    }
}

#[cfg(test)]
mod field_tests {
    use super::*;

    /// The byte-level `compact` and `collapse_whitespace` agree with the definitions by
    /// `char::is_whitespace`, vertical tab and non-ASCII spaces included.
    #[test]
    fn whitespace_helpers_follow_char_is_whitespace() {
        let cases = ["a b", " x\t\n\u{0B}y\u{0C}\r ", "é \u{A0}ü\u{2028}z", "", "   ", "u8", "Option < T >"];
        for s in cases {
            let by_char: String = s.chars().filter(|c| !c.is_whitespace()).collect();
            assert_eq!(compact(s), by_char, "{s:?}");
            assert_eq!(collapse_whitespace(s), s.split_whitespace().collect::<Vec<_>>().join(" "), "{s:?}");
        }
    }

    /// The cached lookup answers exactly what tree-sitter's lookup by name answers, for
    /// every node and field name of grammars whose field tables differ, interleaved.
    #[test]
    fn cached_field_and_kind_lookups_equal_tree_sitters() {
        let sources: [(tree_sitter::Language, &str); 3] = [
            (
                tree_sitter_rust::LANGUAGE.into(),
                "fn f<T: Ord>(x: u8) -> u8 where T: Copy { if x > 1 { x } else { 0 } }\nimpl<T> A<T> { pub unsafe fn g(&self, y: &mut [u8]) {} }\nstruct S { a: u8 }",
            ),
            (
                tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
                "function g(a?: string, readonly b = 2): number { return f(a); }\nclass C { private x?: number = 1; m<T>(y: T): void {} }\ninterface I { k: 'a' | 'b' }",
            ),
            (tree_sitter_javascript::LANGUAGE.into(), "const h = (a) => { if (a) throw new E(a); };"),
        ];
        let names = [
            "name",
            "type",
            "body",
            "parameters",
            "return_type",
            "condition",
            "value",
            "function",
            "left",
            "right",
            "pattern",
            "type_parameters",
            "arguments",
            "consequence",
            "key",
        ];
        let trees: Vec<_> = sources
            .iter()
            .map(|(lang, src)| {
                let mut p = Parser::new();
                p.set_language(lang).unwrap();
                p.parse(src, None).unwrap()
            })
            .collect();
        let mut checked = 0;
        for _ in 0..2 {
            for tree in &trees {
                let mut stack = vec![tree.root_node()];
                while let Some(n) = stack.pop() {
                    assert_eq!(kind_of(n), n.kind());
                    for name in names {
                        assert_eq!(field(n, name), n.child_by_field_name(name), "{} {name}", kind_of(n));
                        checked += usize::from(n.child_by_field_name(name).is_some());
                    }
                    stack.extend(children(n));
                }
            }
        }
        assert!(checked > 20, "the sources exercise the fields ({checked})");
    }
}

thread_local! {
    /// Node kind names by grammar address, indexed by kind id.
    static KIND_NAMES: std::cell::RefCell<Vec<(usize, Vec<&'static str>)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `node.kind()` from a per-thread table: tree-sitter's binding measures and validates
/// the name's C string on every call, and the walkers ask every node.
pub(in crate::widen) fn kind_of<'t>(node: impl std::borrow::Borrow<Node<'t>>) -> &'static str {
    let node = *node.borrow();
    let language = node.language();
    let grammar = grammar_address(&language);
    let id = usize::from(node.kind_id());
    KIND_NAMES.with(|names| {
        let mut names = names.borrow_mut();
        let table = match names.iter().position(|(g, _)| *g == grammar) {
            Some(i) => &names[i].1,
            None => {
                let table: Vec<&'static str> = (0..language.node_kind_count())
                    .map(|id| u16::try_from(id).ok().and_then(|id| language.node_kind_for_id(id)).unwrap_or(""))
                    .collect();
                names.push((grammar, table));
                &names[names.len() - 1].1
            }
        };
        table.get(id).copied().unwrap_or_else(|| node.kind())
    })
}

/// The tokens without which a stretch of source cannot hold any node a walker reacts
/// to. A walker that finds none of its triggers in a block's text skips the block: the
/// test is a superset one (`diff` holds `if`), so a skip never loses a node, and a body
/// of plain arithmetic or field access costs one scan of its bytes instead of a walk of
/// its tree.
pub(crate) struct Triggers(aho_corasick::AhoCorasick);

impl Triggers {
    pub(super) fn new(tokens: &[&str]) -> Triggers {
        Triggers(aho_corasick::AhoCorasick::new(tokens).expect("a handful of literal tokens always builds"))
    }

    /// Whether `text` holds at least one trigger.
    pub(crate) fn any_in(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
}

/// The source text of a node.
pub(in crate::widen) fn text<'s>(node: Node, src: &'s str) -> &'s str {
    src.get(node.byte_range()).unwrap_or("")
}

/// 1-based line of a node's first byte.
pub(in crate::widen) fn line(node: Node) -> u32 {
    u32::try_from(node.start_position().row + 1).unwrap_or(u32::MAX)
}

/// Source text on one line: whitespace runs collapsed, trailing `;`/`,` dropped.
pub(in crate::widen) fn one_line(s: &str) -> String {
    let mut joined = collapse_whitespace(s);
    let kept = joined.trim_end_matches([';', ',']).trim_end().len();
    joined.truncate(kept);
    joined
}

/// Whitespace runs as one space, none at either end.
pub(in crate::widen) fn collapse_whitespace(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Text with every whitespace character removed: the formatting-blind comparison key.
pub(in crate::widen) fn compact(s: &str) -> String {
    if s.is_ascii() {
        // ASCII whitespace as `char::is_whitespace` sees it: tab to carriage return, space.
        let kept: Vec<u8> = s.bytes().filter(|b| !matches!(b, b'\t'..=b'\r' | b' ')).collect();
        return String::from_utf8(kept).expect("bytes of an ASCII string are UTF-8");
    }
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Named children of a node, in order. A leaf (most nodes of a tree) costs no cursor
/// and no allocation.
pub(in crate::widen) fn named_children(node: Node) -> Vec<Node> {
    let count = node.named_child_count();
    if count == 0 {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(count);
    for_each_named(node, |child| out.push(child));
    out
}

/// Calls `f` on each named child of `node`, in order, with one cursor and no vector:
/// every walker reaches a node's children through here (pushing them as steps).
pub(in crate::widen) fn for_each_named<'t>(node: Node<'t>, mut f: impl FnMut(Node<'t>)) {
    if node.named_child_count() == 0 {
        return;
    }
    let mut cursor = node.walk();
    if !cursor.goto_first_child() {
        return;
    }
    loop {
        let child = cursor.node();
        if child.is_named() {
            f(child);
        }
        if !cursor.goto_next_sibling() {
            break;
        }
    }
}

/// All children of a node (named or not), in order.
pub(in crate::widen) fn children(node: Node) -> Vec<Node> {
    let count = node.child_count();
    if count == 0 {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(count);
    let mut cursor = node.walk();
    out.extend(node.children(&mut cursor));
    out
}

/// Unwraps `( expr )` so that `if ((x))` and `if x` compare equal.
pub(in crate::widen) fn strip_parens(mut node: Node) -> Node {
    while kind_of(node) == "parenthesized_expression" && node.named_child_count() == 1 {
        match node.named_child(0) {
            Some(inner) => node = inner,
            None => break,
        }
    }
    node
}

/// A typed declaration slot (a field, a parameter, a return type, a type alias): one
/// constraint whose old and new versions are compared when the same `key` exists in both.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(in crate::widen) struct Slot<T> {
    /// Identity within one version: owner symbol plus member (`Query.limit`, `f(x)`).
    pub key: String,
    /// The symbol a finding names.
    pub symbol: String,
    pub line: u32,
    /// The declaration as a reader sees it, on one line.
    pub display: String,
    pub in_test: bool,
    pub info: T,
}

/// Pairs the slots present in both versions; a key declared twice in one version is
/// ambiguous (overloads, redeclarations) and left out rather than guessed.
pub(in crate::widen) fn pair_slots<'a, T>(
    before: &'a [Slot<T>],
    after: &'a [Slot<T>],
) -> Vec<(&'a Slot<T>, &'a Slot<T>)> {
    let index = |slots: &'a [Slot<T>]| {
        let mut map: BTreeMap<&'a str, Option<&'a Slot<T>>> = BTreeMap::new();
        for slot in slots {
            map.entry(slot.key.as_str()).and_modify(|v| *v = None).or_insert(Some(slot));
        }
        map
    };
    let b = index(before);
    let a = index(after);
    b.iter().filter_map(|(key, slot)| Some(((*slot)?, (*a.get(key)?)?))).collect()
}

/// A finding for a slot that loosened between the two versions.
pub(in crate::widen) fn slot_finding<T>(rule: RuleId, before: &Slot<T>, after: &Slot<T>) -> RawFinding {
    RawFinding {
        line: after.line,
        rule,
        symbol: after.symbol.clone(),
        before: before.display.clone(),
        after: after.display.clone(),
        in_test: after.in_test,
    }
}

/// A runtime check inside a function body (a guard that throws/raises/returns an error,
/// an assertion, a panic).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(in crate::widen) struct Check {
    pub rule: RuleId,
    /// The owning function's symbol.
    pub owner: String,
    /// The condition, formatting-blind: equal keys are the same check.
    pub key: String,
    /// The condition with identifiers numbered by first appearance, so that a check moved
    /// into a helper whose parameter has another name still matches.
    pub shape: String,
    /// The identifiers the condition reads: a reworded check reads the same ones.
    pub idents: BTreeSet<String>,
    /// The alternatives of a condition `a || b` (`a or b`), formatting-blind; empty when
    /// the condition is not a disjunction.
    pub disjuncts: Vec<String>,
    pub display: String,
    pub in_test: bool,
}

impl Check {
    /// Builds a check from its condition node; `ident_kinds` are the grammar's identifier
    /// node kinds.
    pub(in crate::widen) fn new(
        rule: RuleId,
        owner: &str,
        cond: Node,
        src: &str,
        display: String,
        in_test: bool,
        ident_kinds: &[&str],
    ) -> Check {
        let cond = strip_parens(cond);
        let mut shape = String::new();
        let mut idents = BTreeSet::new();
        let mut numbering: BTreeMap<String, usize> = BTreeMap::new();
        leaves(cond, &mut |leaf| {
            let t = text(leaf, src);
            if ident_kinds.contains(&kind_of(leaf)) {
                idents.insert(t.to_string());
                let next = numbering.len();
                let n = *numbering.entry(t.to_string()).or_insert(next);
                shape.push_str(&format!("${n}"));
            } else {
                shape.push_str(&compact(t));
            }
        });
        let mut disjuncts = Vec::new();
        collect_disjuncts(cond, src, &mut disjuncts);
        if disjuncts.len() < 2 {
            disjuncts.clear();
        }
        Check {
            rule,
            owner: owner.to_string(),
            key: compact(text(cond, src)),
            shape,
            idents,
            disjuncts,
            display,
            in_test,
        }
    }
}

/// Whether `after` keeps only some of the alternatives of `before`'s condition
/// (`a || b` to `a`): a weakened check, not a reworded one.
fn drops_alternatives(before: &Check, after: &Check) -> bool {
    let kept: Vec<&String> =
        if after.disjuncts.is_empty() { vec![&after.key] } else { after.disjuncts.iter().collect() };
    !before.disjuncts.is_empty()
        && kept.len() < before.disjuncts.len()
        && kept.iter().all(|k| before.disjuncts.contains(k))
}

/// `a || b || c` (`a or b or c`) as its alternatives, left to right; an explicit stack,
/// since a generated condition may chain thousands of alternatives.
fn collect_disjuncts(node: Node, src: &str, out: &mut Vec<String>) {
    let mut stack = vec![node];
    while let Some(node) = stack.pop() {
        let node = strip_parens(node);
        let op = field(node, "operator").map(|o| text(o, src));
        if matches!(kind_of(node), "binary_expression" | "boolean_operator") && matches!(op, Some("||" | "or")) {
            // Right pushed first so that the left side comes out first.
            stack.extend(["right", "left"].into_iter().filter_map(|side| field(node, side)));
        } else {
            out.push(compact(text(node, src)));
        }
    }
}

/// Calls `f` on every leaf of `node` in document order (a string literal is one leaf);
/// a cursor walk, never recursion.
fn leaves(node: Node, f: &mut dyn FnMut(Node)) {
    // A string literal is one token, whatever the grammar splits it into.
    let is_leaf = |n: Node| {
        n.child_count() == 0
            || matches!(kind_of(n), "string" | "interpreted_string_literal" | "raw_string_literal" | "template_string")
    };
    let mut cursor = node.walk();
    loop {
        let n = cursor.node();
        if is_leaf(n) {
            f(n);
        } else if cursor.goto_first_child() {
            continue;
        }
        // On to the next sibling, up as long as there is none, never above `node`.
        loop {
            if cursor.depth() == 0 {
                return;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}

/// The checks of one version of a file, by owning function.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(in crate::widen) struct Body {
    pub checks: Vec<Check>,
    /// Every function-like owner of checks, with its line.
    pub owners: BTreeMap<String, u32>,
    /// Every `if` condition, by owner, formatting-blind: a guard whose condition still
    /// guards something in the same function was reworked (another error, a log and a
    /// return), not removed.
    pub conditions: BTreeSet<(String, String)>,
    /// Every call by owner, as (owner, callee's last name segment): a guard replaced by a
    /// new call to a checking helper of the same file moved, it did not vanish.
    pub calls: BTreeSet<(String, String)>,
}

impl Body {
    /// Records that `owner` calls `callee` (`this.#check`, `pkg.Validate`, `validate`).
    pub(in crate::widen) fn note_call(&mut self, owner: &str, callee: Node, src: &str) {
        let t = compact(text(callee, src));
        let last = t.rsplit('.').next().unwrap_or(&t);
        if !last.is_empty() {
            self.calls.insert((owner.to_string(), last.to_string()));
        }
    }

    /// Whether `owner` newly calls (compared with `before`) a function of this version
    /// that holds checks.
    fn calls_new_checking_helper(&self, before: &Body, owner: &str) -> bool {
        let helpers: BTreeSet<&str> =
            self.checks.iter().map(|c| c.owner.rsplit('.').next().unwrap_or(&c.owner)).collect();
        self.calls.range((owner.to_string(), String::new())..).take_while(|(o, _)| o == owner).any(|(o, callee)| {
            helpers.contains(callee.as_str()) && !before.calls.contains(&(o.clone(), callee.clone()))
        })
    }

    pub(in crate::widen) fn note_condition(&mut self, owner: &str, cond: Node, src: &str) {
        let key = compact(text(strip_parens(cond), src));
        self.conditions.insert((owner.to_string(), key));
    }
}

/// Two conditions this alike (character-level similarity ratio) in the same function are
/// one check reworded: `!inSlice(v, cmd.Valid)` to `!inSlice(v, valid)`.
const REWORDED_RATIO: f32 = 0.75;

/// The checks of `before` that are gone from `after`. A check is not reported when its
/// owner is gone (a deleted or renamed function: the whole declaration went), when the
/// same owner still has the same condition (a new message, another error), when the owner
/// has a new check reading at least the identifiers the old one read or a nearly identical
/// condition (reworded, extended), when a new check elsewhere in the file has the same
/// condition, or the same shape in a function that is new (moved into a helper whose
/// parameter has another name), or when the owner newly calls a function of the file that
/// holds checks (replaced by a checking helper). The finding's line is the owner's line in
/// the new version.
pub(in crate::widen) fn removed_checks(before: &Body, after: &Body) -> Vec<RawFinding> {
    let (b_checks, a_checks) = (&before.checks, &after.checks);
    let mut after_used = vec![false; a_checks.len()];
    let mut before_done = vec![false; b_checks.len()];
    // Same owner, same condition.
    for (i, b) in b_checks.iter().enumerate() {
        if let Some(j) =
            (0..a_checks.len()).find(|&j| !after_used[j] && a_checks[j].owner == b.owner && a_checks[j].key == b.key)
        {
            after_used[j] = true;
            before_done[i] = true;
        } else if after.conditions.contains(&(b.owner.clone(), b.key.clone()))
            || (!b.disjuncts.is_empty()
                && b.disjuncts.iter().all(|d| after.conditions.contains(&(b.owner.clone(), d.clone()))))
        {
            // The condition still guards something, whole or split into its alternatives.
            before_done[i] = true;
        }
    }
    // Same owner, reworded: a new check reading the same identifiers, or nearly the same.
    for (i, b) in b_checks.iter().enumerate() {
        if before_done[i] {
            continue;
        }
        if let Some(j) = (0..a_checks.len()).find(|&j| {
            let a = &a_checks[j];
            !after_used[j]
                && a.owner == b.owner
                && !drops_alternatives(b, a)
                && ((!b.idents.is_empty() && b.idents.is_subset(&a.idents))
                    || similar::TextDiff::from_chars(b.key.as_str(), a.key.as_str()).ratio() >= REWORDED_RATIO)
        }) {
            after_used[j] = true;
            before_done[i] = true;
        }
    }
    // Moved elsewhere in the file: a new check with the same condition, or with the same
    // shape in a function that did not exist before (a helper).
    for (i, b) in b_checks.iter().enumerate() {
        if before_done[i] {
            continue;
        }
        if let Some(j) = (0..a_checks.len()).find(|&j| {
            !after_used[j]
                && (a_checks[j].key == b.key
                    || (a_checks[j].shape == b.shape && !before.owners.contains_key(&a_checks[j].owner)))
        }) {
            after_used[j] = true;
            before_done[i] = true;
        }
    }
    b_checks
        .iter()
        .zip(before_done)
        .filter(|(_, done)| !done)
        .filter(|(b, _)| !after.calls_new_checking_helper(before, &b.owner))
        .filter_map(|(b, _)| {
            let line = *after.owners.get(&b.owner)?;
            Some(RawFinding {
                line,
                rule: b.rule,
                symbol: b.owner.clone(),
                before: b.display.clone(),
                after: String::new(),
                in_test: b.in_test,
            })
        })
        .collect()
}

/// Sorts findings the way every consumer expects them: by line, rule, symbol.
pub(in crate::widen) fn finish(mut findings: Vec<RawFinding>) -> Vec<RawFinding> {
    findings.sort();
    findings.dedup();
    findings
}
