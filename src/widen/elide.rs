//! Body elision: the function bodies a parse can leave out.
//!
//! Most of a source file is function bodies, and most bodies hold nothing a detector
//! records, or are the same text in both versions of the file. A lexer (brackets,
//! strings, comments: the window's) finds each function item's body; tree-sitter then
//! parses each version with its included ranges set to everything but the inside of
//! the bodies left out, so a body reads as `{}` while every node keeps the file's own
//! byte offsets and lines (a detector that reads a body's text still reads all of it).
//!
//! A body is left out of one version when
//! - it holds none of the detector's trigger tokens: the walk would skip it anyway
//!   (the same test the walk makes on the tree), so leaving it out changes nothing; or
//! - its text is the body of a function in the other version too. It contributes the
//!   same to both inventories, except where the comparison looks across the file (a
//!   guard found elsewhere counts as moved, `unsafe` is matched file-wide): the text of
//!   these bodies is handed to the detector's window test ([`super::window::Outside`]),
//!   which refuses whenever it could matter, and the file is then parsed with the
//!   trigger-free bodies alone left out.
//!
//! Off with the window (`PREMERGE_SCAN_WINDOW=0`), which gives the reference answer the
//! equivalence tests compare with.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use super::window::{Token, is_ident_byte, rust_tokens, script_tokens};

/// How a detector lets bodies be left out.
pub(crate) struct Elision {
    pub lexer: BodyLexer,
    /// Whether a body's inside may hold something the walk records; a body for which
    /// this is false is left out.
    pub triggers: fn(&str) -> bool,
    /// Whether a body's or a test module's inside may hold what the comparison looks
    /// up across the file (an enum's name, `unsafe` code); such a body is never left
    /// out for being shared, nor such a module for being test code.
    pub unshared: fn(&str) -> bool,
}

/// The whole words of `text` among `words` (the automaton of those words): each
/// match not inside a longer identifier, with the byte before it.
pub(in crate::widen) fn words<'t>(
    text: &'t str,
    words: &'t aho_corasick::AhoCorasick,
) -> impl Iterator<Item = (&'t str, Option<u8>)> + 't {
    let b = text.as_bytes();
    words.find_iter(text).filter_map(move |m| {
        let before = m.start().checked_sub(1).map(|i| b[i]);
        let whole = !before.is_some_and(is_ident_byte) && !b.get(m.end()).is_some_and(|&c| is_ident_byte(c));
        whole.then(|| (&text[m.range()], before))
    })
}

/// Which lexer finds the function bodies of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyLexer {
    Rust,
    /// TypeScript and JavaScript without JSX.
    Script,
}

/// The function bodies and test modules of a file, braces included.
#[derive(Debug, Default, PartialEq, Eq)]
pub(in crate::widen) struct Bodies {
    /// Function bodies, in order of their opening brace (a function nested in
    /// another's body comes after it).
    pub fns: Vec<Range<usize>>,
    /// The name of the function of each body.
    pub names: Vec<Range<usize>>,
    /// The blocks of modules marked `#[cfg(test)]`, in order.
    pub tests: Vec<Range<usize>>,
    /// The comments a parse may leave out, in order: every line comment (its newline
    /// stays), and a block comment with whitespace on both sides (so that no two
    /// tokens meet where it was).
    pub comments: Vec<Range<usize>>,
}

impl Bodies {
    fn comment(&mut self, src: &[u8], at: usize, end: usize) {
        let space = |c: Option<&u8>| c.is_none_or(|c| c.is_ascii_whitespace());
        let line = src[at + 1] == b'/';
        if line || (space(at.checked_sub(1).and_then(|p| src.get(p))) && space(src.get(end))) {
            self.comments.push(at..end);
        }
    }
}

/// The bodies of the function items of a Rust file and of its `#[cfg(test)]` modules.
/// `None` when the file does not lex.
///
/// A function item is `fn` followed by a name (`fn(u8)` is a pointer type); its body
/// is the first `{` at the bracket depth of the `fn`, unless a `;` (a declaration
/// without a body) or a closing bracket comes first. A test module is `mod` and a
/// name, then `{`, right after `#[cfg(test)]` (and a visibility).
pub(in crate::widen) fn rust_bodies(src: &str) -> Option<Bodies> {
    let b = src.as_bytes();
    let mut out = Bodies::default();
    // Opening brackets: whether each opened a function body or a test module (at the
    // index in its list).
    let mut open: Vec<Option<(bool, usize)>> = Vec::new();
    // The depth of a `fn` whose body, or of a test `mod` whose block, has not begun.
    let mut pending: Option<(bool, usize)> = None;
    // A `fn` or `mod` just seen (and whether the `mod` is a test module): a name must
    // follow for it to be an item.
    let mut keyword: Option<bool> = None;
    let mut name = 0..0;
    rust_tokens(src, |i, token| {
        if let Token::Comment(end) = token {
            out.comment(b, i, end);
            return Some(());
        }
        if let Some(test) = keyword.take()
            && let Token::Word(end) = token
        {
            pending = Some((test, open.len()));
            name = i..end;
        }
        match token {
            Token::Word(end) => match &b[i..end] {
                b"fn" => keyword = Some(false),
                b"mod" if is_test_module(&src[..i]) => keyword = Some(true),
                _ => {}
            },
            Token::Punct(b'{') => {
                let block = pending.filter(|&(_, depth)| depth == open.len()).map(|(test, _)| {
                    if !test {
                        out.names.push(name.clone());
                    }
                    let list = if test { &mut out.tests } else { &mut out.fns };
                    list.push(i..i);
                    (test, list.len() - 1)
                });
                if block.is_some() {
                    pending = None;
                }
                open.push(block);
            }
            Token::Punct(b'(' | b'[') => open.push(None),
            Token::Punct(b'}' | b')' | b']') => {
                if let Some((test, at)) = open.pop()? {
                    let list = if test { &mut out.tests } else { &mut out.fns };
                    list[at].end = i + 1;
                }
                if pending.is_some_and(|(_, d)| d > open.len()) {
                    pending = None;
                }
            }
            Token::Punct(b';') if pending.is_some_and(|(_, d)| d == open.len()) => pending = None,
            Token::Punct(_) | Token::Comment(_) => {}
        }
        Some(())
    })?;
    open.is_empty().then_some(out)
}

/// Whether the text before a `mod` keyword ends with `#[cfg(test)]`, a visibility
/// between them allowed.
fn is_test_module(head: &str) -> bool {
    let mut head = head.trim_end();
    if let Some(rest) = head.strip_suffix(')')
        && let Some(open) = rest.rfind('(')
        && rest[..open].trim_end().ends_with("pub")
    {
        head = rest[..open].trim_end();
    }
    head = head.strip_suffix("pub").unwrap_or(head).trim_end();
    let mut from = head.len().saturating_sub(40);
    while !head.is_char_boundary(from) {
        from -= 1;
    }
    super::syntax::compact(&head[from..]).ends_with("#[cfg(test)]")
}

/// Words after which a `(` opens a parenthesised expression, never a call's
/// arguments: operators written as words.
pub(in crate::widen) const SCRIPT_OPERATOR_WORDS: &[&str] =
    &["return", "typeof", "await", "void", "in", "of", "case", "throw", "delete", "yield", "instanceof", "else", "do"];

/// Words before a `(` that make it no function's parameter list: control flow, and
/// the [`SCRIPT_OPERATOR_WORDS`].
fn not_a_function(word: &str) -> bool {
    const CONTROL: &[&str] = &["if", "for", "while", "switch", "catch", "with", "new", "super", "import"];
    CONTROL.contains(&word) || SCRIPT_OPERATOR_WORDS.contains(&word)
}

/// The bodies of the functions of a TypeScript or JavaScript file (without JSX),
/// braces included, in order of their opening brace; `None` when the file does not
/// lex for certain ([`script_tokens`]) or its brackets do not balance. Functions have
/// no names here: script bodies are left out only when they hold no trigger, never
/// for being shared.
///
/// A body is the `{` right after an arrow's `=>`, or after the `)` of a parameter list
/// (a `(` that follows a name other than [`not_a_function`] words, `function`, a `>` closing
/// type parameters or a `]` closing a computed name), or after the return type written
/// there (`): Promise<T> {`; a `{` after `:`, `|`, `&` or `,` is an object type). The
/// lexer can be fooled (`a < b > (c)` then a block): every body left out is checked
/// against the tree afterwards, and a mistake means a whole parse.
pub(in crate::widen) fn script_bodies(src: &str) -> Option<Bodies> {
    let b = src.as_bytes();
    let mut out = Bodies::default();
    // Opening brackets: a body's index in `out.fns`, or whether a `(` opens parameters.
    #[derive(Clone, Copy)]
    enum Open {
        Body(usize),
        Params,
        Other,
    }
    let mut open: Vec<Open> = Vec::new();
    // The previous token: a word, or a punctuation byte (`=>` is `>` after `=`).
    let mut prev: Option<Token> = None;
    let mut prev_at = 0;
    let mut arrow = false;
    // After a parameter list at a depth: whether its return type has begun.
    let mut after_params: Option<(usize, bool)> = None;
    let mut angle = 0usize;
    script_tokens(src, |i, token| {
        if let Token::Comment(end) = token {
            out.comment(b, i, end);
            return Some(());
        }
        let depth = open.len();
        let word_before = |t: Option<Token>| match t {
            Some(Token::Word(end)) => Some(&src[prev_at..end]),
            _ => None,
        };
        match token {
            Token::Punct(b'{') => {
                let in_type = after_params.filter(|&(d, _)| d == depth).is_some_and(|(_, typed)| typed);
                let body = if in_type {
                    // A return type: a body after a name, `>`, `]`, `)` or a type literal's `}`.
                    angle == 0
                        && matches!(prev, Some(Token::Word(_)) | Some(Token::Punct(b'>' | b']' | b')' | b'}')))
                        && !arrow
                } else {
                    arrow || (after_params.is_some_and(|(d, _)| d == depth) && prev == Some(Token::Punct(b')')))
                };
                if body {
                    out.fns.push(i..i);
                    out.names.push(0..0);
                    open.push(Open::Body(out.fns.len() - 1));
                    after_params = None;
                } else {
                    open.push(Open::Other);
                }
            }
            Token::Punct(b'(') => {
                let params = match prev {
                    Some(Token::Word(_)) => word_before(prev).is_some_and(|w| !not_a_function(w)),
                    Some(Token::Punct(b'>' | b']')) => !arrow,
                    _ => false,
                };
                open.push(if params { Open::Params } else { Open::Other });
            }
            Token::Punct(b'[') => open.push(Open::Other),
            Token::Punct(c @ (b'}' | b')' | b']')) => {
                let closed = open.pop()?;
                if let Open::Body(at) = closed {
                    out.fns[at].end = i + 1;
                }
                if after_params.is_some_and(|(d, _)| d > open.len()) {
                    after_params = None;
                }
                if c == b')' && matches!(closed, Open::Params) {
                    after_params = Some((open.len(), false));
                    angle = 0;
                }
            }
            Token::Punct(b':') if after_params == Some((depth, false)) && prev == Some(Token::Punct(b')')) => {
                after_params = Some((depth, true));
            }
            Token::Punct(b'<') if after_params.is_some() => angle += 1,
            Token::Punct(b'>') if after_params.is_some() && prev != Some(Token::Punct(b'=')) => {
                angle = angle.saturating_sub(1)
            }
            // The `=` of a function type's `=>` in a return type does not end it.
            Token::Punct(b';' | b',' | b'=') if after_params.is_some_and(|(d, _)| d == depth) => {
                let arrow_type = b.get(i + 1) == Some(&b'>');
                if !(after_params.is_some_and(|(_, typed)| typed) && (angle > 0 || arrow_type)) {
                    after_params = None;
                }
            }
            _ => {}
        }
        arrow = prev == Some(Token::Punct(b'=')) && token == Token::Punct(b'>') && prev_at + 1 == i;
        prev_at = i;
        prev = Some(token);
        Some(())
    })?;
    open.is_empty().then_some(out)
}

/// What a version leaves out: the insides of some bodies and test modules (sorted,
/// disjoint), and of those the bodies left out because the other version has the same
/// body, and the test modules.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Elided {
    pub inside: Vec<Range<usize>>,
    pub shared: Vec<Range<usize>>,
    /// The test modules left out.
    pub tests: Vec<Range<usize>>,
    /// The comments left out (outside the bodies left out).
    pub comments: Vec<Range<usize>>,
}

impl Elided {
    /// How many bytes it leaves out.
    pub(in crate::widen) fn bytes(&self) -> usize {
        self.inside.iter().chain(&self.comments).map(|r| r.len()).sum()
    }

    /// The whole text of `len` bytes without the insides and comments left out.
    #[cfg(test)]
    fn kept(&self, len: usize) -> Vec<Range<usize>> {
        self.kept_within(std::slice::from_ref(&(0..len)))
    }

    /// `ranges` (sorted, disjoint, each holding what it leaves out whole) without the
    /// insides and comments left out: the included ranges of the parse.
    pub(in crate::widen) fn kept_within(&self, ranges: &[Range<usize>]) -> Vec<Range<usize>> {
        let mut holes: Vec<&Range<usize>> = self.inside.iter().chain(&self.comments).collect();
        holes.sort_by_key(|h| h.start);
        let mut holes = holes.into_iter().peekable();
        let mut out = Vec::new();
        for r in ranges {
            let mut at = r.start;
            while let Some(h) = holes.next_if(|h| h.start < r.end) {
                out.push(at..h.start);
                at = h.end;
            }
            out.push(at..r.end);
        }
        out.retain(|r| !r.is_empty());
        out
    }
}

/// The bodies each version leaves out: those for which [`Elision::triggers`] is false,
/// and with `share` those whose text (braces included) is a body of a function of the
/// same name in the other version too (as many copies as the other version has), for which [`Elision::unshared`] is
/// false and whose inside is not among the texts `share` holds (refused before); with
/// `tests`, the test modules for which [`Elision::unshared`] is false and whose
/// inside `share` does not hold. `None` when either version does not lex or less than
/// a quarter of the two versions would be left out (the plain parse is then as good).
pub(in crate::widen) fn find<'a>(
    e: &Elision,
    before: &'a str,
    after: &'a str,
    share: Option<&BTreeSet<&str>>,
    tests: bool,
) -> Option<(Elided, Elided)> {
    let bodies = |src: &str| match e.lexer {
        BodyLexer::Rust => rust_bodies(src),
        BodyLexer::Script => script_bodies(src),
    };
    let (old, new) = (bodies(before)?, bodies(after)?);
    // How many times each body's text stands in a version: a body is shared only
    // while the other version has a copy of its text not yet paired with another.
    // Bodies pair by the name of their function and their text: a body that moved to
    // another function is not shared (where its guards stand decides which function
    // a removed guard counts against).
    let texts = |src: &'a str, bodies: &Bodies| -> BTreeMap<(&'a str, &'a str), usize> {
        let mut m = BTreeMap::new();
        if share.is_some() {
            for (r, name) in bodies.fns.iter().zip(&bodies.names) {
                *m.entry((&src[name.clone()], &src[r.clone()])).or_default() += 1;
            }
        }
        m
    };
    let (old_texts, new_texts) = (texts(before, &old), texts(after, &new));
    let refused = |text: &str| share.is_some_and(|r| r.contains(text));
    let side = |src: &'a str, bodies: &Bodies, mut other: BTreeMap<(&'a str, &'a str), usize>| {
        let mut out = Elided::default();
        let mut covered = 0;
        // Test modules first: a body inside one left out goes with it.
        let mut modules = (bodies.tests.iter())
            .map(|r| r.start + 1..r.end - 1)
            .filter(|inside| tests && !refused(&src[inside.clone()]) && !(e.unshared)(&src[inside.clone()]))
            .peekable();
        for (r, name) in bodies.fns.iter().zip(&bodies.names) {
            while let Some(m) = modules.next_if(|m| m.start <= r.start) {
                if m.start >= covered {
                    out.tests.push(m.clone());
                    out.inside.push(m.clone());
                    covered = m.end;
                }
            }
            if r.start < covered || r.len() < 2 {
                continue;
            }
            let inside = r.start + 1..r.end - 1;
            let text = &src[inside.clone()];
            let free = !(e.triggers)(text);
            let copy = other.get_mut(&(&src[name.clone()], &src[r.clone()])).filter(|n| **n > 0);
            let shared = !free && copy.is_some() && !refused(text) && !(e.unshared)(text);
            if shared && let Some(n) = copy {
                *n -= 1;
            }
            if free || shared {
                if shared {
                    out.shared.push(inside.clone());
                }
                out.inside.push(inside);
                covered = r.end;
            }
        }
        for m in modules.filter(|m| m.start >= covered) {
            out.tests.push(m.clone());
            out.inside.push(m);
        }
        out.comments = comments_outside(&out.inside, &bodies.comments);
        out
    };
    let (o, n) = (side(before, &old, new_texts), side(after, &new, old_texts));
    ((o.bytes() + n.bytes()) * 4 >= before.len() + after.len()).then_some((o, n))
}

/// The `comments` outside the `inside` ranges (both sorted).
fn comments_outside(inside: &[Range<usize>], comments: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut inside = inside.iter().peekable();
    let mut out = Vec::new();
    for c in comments {
        while inside.next_if(|r| r.end <= c.start).is_some() {}
        if inside.peek().is_none_or(|r| r.start >= c.end) {
            out.push(c.clone());
        }
    }
    out
}

/// What the change window's parse of `ranges` of `src` (sorted runs of whole top-level
/// declarations) can leave out: the insides of the bodies for which
/// [`Elision::triggers`] is false, and the comments, by the same test as [`find`]'s on
/// a whole version (the window holds both versions' changed declarations, so no body
/// in it is shared). `None` when a range does not lex.
pub(in crate::widen) fn within(e: &Elision, src: &str, ranges: &[Range<usize>]) -> Option<Elided> {
    let mut out = Elided::default();
    for r in ranges {
        let text = &src[r.clone()];
        let bodies = match e.lexer {
            BodyLexer::Rust => rust_bodies(text),
            BodyLexer::Script => script_bodies(text),
        }?;
        let shift = |x: &Range<usize>| x.start + r.start..x.end + r.start;
        let mut inside = Vec::new();
        let mut covered = 0;
        for f in &bodies.fns {
            if f.start < covered || f.len() < 2 {
                continue;
            }
            if !(e.triggers)(&text[f.start + 1..f.end - 1]) {
                inside.push(f.start + 1..f.end - 1);
                covered = f.end;
            }
        }
        out.comments.extend(comments_outside(&inside, &bodies.comments).iter().map(shift));
        out.inside.extend(inside.iter().map(shift));
    }
    Some(out)
}

/// [`within`] the whole text: the trigger-free bodies and the comments of one version,
/// whatever the other version holds.
pub(in crate::widen) fn whole(e: &Elision, src: &str) -> Option<Elided> {
    within(e, src, std::slice::from_ref(&(0..src.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bodies(src: &str) -> Vec<&str> {
        rust_bodies(src).unwrap().fns.into_iter().map(|r| &src[r]).collect()
    }

    #[test]
    fn function_bodies_are_found_and_nothing_else() {
        let src = r#"
struct S { f: fn(u8) -> u8 }
impl S {
    pub fn a(&self) -> u8 { (self.f)(1) }
    fn b<T: Fn() -> u8>(t: T) -> [u8; 2] where T: Copy { let x = "}{"; [t(), 0] }
}
trait T { fn decl(&self); fn provided(&self) { if true { } } }
const C: fn() = { fn inner() {} inner };
macro_rules! m { () => { fn made() { } } }
fn outer() { fn nested() -> u8 { b'}' } let _ = || { 1 }; }
"#;
        assert_eq!(
            bodies(src),
            vec![
                "{ (self.f)(1) }",
                r#"{ let x = "}{"; [t(), 0] }"#,
                "{ if true { } }",
                "{}",
                "{ }",
                "{ fn nested() -> u8 { b'}' } let _ = || { 1 }; }",
                "{ b'}' }",
            ]
        );
    }

    #[test]
    fn names_and_test_modules_are_found() {
        let src = "fn a() { 1 }\n#[cfg(test)]\nmod tests {\n    fn b() {}\n}\n#[cfg(test)] pub(crate) mod t2 { }\n\
                   mod plain { fn c() {} }\n#[cfg(not(test))]\nmod x {}\n#[cfg(test)]\nmod decl;\n";
        let b = rust_bodies(src).unwrap();
        let names: Vec<&str> = b.names.iter().map(|r| &src[r.clone()]).collect();
        assert_eq!(names, ["a", "b", "c"]);
        let tests: Vec<&str> = b.tests.iter().map(|r| &src[r.clone()]).collect();
        assert_eq!(tests, ["{\n    fn b() {}\n}", "{ }"]);
    }

    #[test]
    fn comments_are_left_out_where_no_tokens_meet() {
        let src =
            "/// doc\nfn a() { 1 } // tail\nconst X: u8 = 1/* glued */+2; /* spaced */\nconst S: &str = \"// not\";\n";
        let b = rust_bodies(src).unwrap();
        let comments: Vec<&str> = b.comments.iter().map(|r| &src[r.clone()]).collect();
        assert_eq!(comments, ["/// doc", "// tail", "/* spaced */"]);
        let e = Elision { lexer: BodyLexer::Rust, triggers: |_| false, unshared: |_| true };
        let (o, _) = find(&e, src, "", None, false).unwrap();
        let kept: String = o.kept(src.len()).into_iter().map(|r| &src[r]).collect();
        assert_eq!(kept, "\nfn a() {} \nconst X: u8 = 1/* glued */+2; \nconst S: &str = \"// not\";\n");
    }

    #[test]
    fn a_window_leaves_out_its_trigger_free_bodies_and_comments() {
        let src = "fn a() { 1 }\n// note\nfn b() { if x { y() } }\nfn c() { 2 + 3 }\n";
        let e = Elision { lexer: BodyLexer::Rust, triggers: |t| t.contains("if"), unshared: |_| true };
        // The window holds `b` and `c`, not `a`.
        let window = vec![std::ops::Range { start: 21, end: src.len() }];
        let left = within(&e, src, &window).unwrap();
        let shown: Vec<&str> = left.inside.iter().map(|r| &src[r.clone()]).collect();
        assert_eq!(shown, [" 2 + 3 "]);
        let kept: String = left.kept_within(&window).into_iter().map(|r| &src[r]).collect();
        assert_eq!(kept, "fn b() { if x { y() } }\nfn c() {}\n");
        assert_eq!(within(&e, src, &[Range { start: 0, end: 13 }]).unwrap().inside, vec![8..11]);
        assert_eq!(within(&e, "fn a() { \"open }", &[Range { start: 0, end: 16 }]), None, "a range that does not lex");
    }

    #[test]
    fn text_that_does_not_lex_gives_none() {
        assert_eq!(rust_bodies("fn a() { \"open"), None);
        assert_eq!(rust_bodies("fn a() { {"), None);
        assert_eq!(rust_bodies("fn a() } }"), None);
    }

    #[test]
    fn bodies_without_triggers_or_shared_are_left_out() {
        let e = Elision {
            lexer: BodyLexer::Rust,
            triggers: |t| t.contains("if") || t.contains("unsafe"),
            unshared: |t| t.contains("unsafe"),
        };
        let before = "fn a() { 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 }\nfn b() { if x { store(); } }\nfn c() { if y { } }\nfn d() { unsafe { } }\nfn e() { if x { store(); } }\n";
        let after = "fn a() { 2 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 }\nfn b() { if x { store(); } }\nfn c() { if z { } }\nfn d() { unsafe { } }\n";
        let (o, n) = find(&e, before, after, Some(&BTreeSet::new()), false).unwrap();
        let shown = |src: &'static str, e: &Elided| e.inside.iter().map(|r| &src[r.clone()]).collect::<Vec<_>>();
        // `b`'s body is shared once (the new version has one copy of it, the old two);
        // `d`'s holds `unsafe`, which is never shared.
        assert_eq!(shown(before, &o), vec![" 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 ", " if x { store(); } "]);
        assert_eq!(shown(after, &n), vec![" 2 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 ", " if x { store(); } "]);
        assert_eq!((o.shared.len(), n.shared.len()), (1, 1));
        let refused = BTreeSet::from([" if x { store(); } "]);
        let (o, n) = find(&e, before, after, Some(&refused), false).unwrap();
        assert_eq!(shown(before, &o), vec![" 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 "], "a refused text is not shared");
        assert!(n.shared.is_empty());
        let (o, _) = find(&e, before, after, None, false).unwrap();
        assert_eq!(shown(before, &o), vec![" 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 "]);
        assert_eq!(
            find(&e, "fn a() { 1 }\nfn c() { if y { } }\n", "", None, false),
            None,
            "less than a quarter left out"
        );
        let long = "fn a() { 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10 + 11 + 12 + 13 + 14 }\nfn c() { if y { } }\n";
        let (o, _) = find(&e, long, "", None, false).unwrap();
        assert_eq!(o.kept(long.len()), vec![0..8, 68..long.len()]);
        assert!(o.shared.is_empty());
    }
}
