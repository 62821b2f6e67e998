//! The change window: the top-level declarations an edit touches, so that a detector
//! can parse and walk those alone instead of the whole file.
//!
//! A lexer (brackets, strings, comments: no grammar) cuts each version into its
//! top-level declarations: the places where one ends and the next begins. The two
//! sequences of declarations are matched by a diff of their texts; the window is what
//! the diff does not match, in each version a few runs of whole declarations. So an
//! edit in several places (a range of many commits, a file edited throughout) leaves
//! out every declaration between the edits, not only a common prefix and suffix.
//! Everything outside (the [`Outside`]) is matched text, the same declarations in the
//! same order in both versions, at top level in both, so it contributes the same
//! constraints to both inventories.
//!
//! A detector uses the window only when it can also show, from the outside text alone,
//! that nothing there could change what the window's declarations are compared with:
//! no symbol of the window is named outside it, no check of the window could be
//! matched by one outside it, and so on, each a substring test that can only err
//! towards walking the whole file. The lexer is conservative in the same way: anything
//! it cannot classify for certain (a `/` in a script that is not a comment, an
//! unterminated string, unbalanced brackets) means no window.
//!
//! The window's declarations are parsed with tree-sitter's included ranges (one tree
//! for all the runs of a version), in the file's own coordinates, so byte offsets and
//! line numbers are the file's.

use tree_sitter::{Point, Range, Tree};

use super::syntax::compact;

/// Which lexer finds the declaration boundaries of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lexer {
    Rust,
    /// TypeScript and JavaScript without JSX.
    Script,
}

/// The declarations an edit touches, in each version: sorted, disjoint byte ranges,
/// each a run of whole top-level declarations. Every declaration outside them is
/// matched, in order, by one of the same text in the other version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Window {
    pub old: Vec<std::ops::Range<usize>>,
    pub new: Vec<std::ops::Range<usize>>,
    /// Where the old version's top-level declarations begin and end: no declaration
    /// spans a cut ([`Outside::may_declare_members`] reads the outside piece by piece).
    pub old_cuts: Vec<usize>,
}

/// More top-level declarations than this in either version and the window is not
/// sought: the declarations are matched by a diff whose cost grows with their number.
const MAX_PIECES: usize = 20_000;

/// The window of an edit, or `None` when either version does not lex cleanly or the
/// window would save little parsing (its declarations in both versions together hold
/// at least as many bytes as the larger version).
///
/// Each version is cut into top-level declarations by its own lexer boundaries; the
/// two sequences are matched by a diff of their texts, so that an edit in several
/// places of a file (a range of many commits, one file edited throughout) leaves the
/// declarations between the edits out of the window, not only a common prefix and
/// suffix.
pub(in crate::widen) fn find(lexer: Lexer, before: &str, after: &str) -> Option<Window> {
    find_with(lexer, before, after, true)
}

/// [`find`], with or without the early refusal of [`mostly_gone`] (the same answer).
fn find_with(lexer: Lexer, before: &str, after: &str, early: bool) -> Option<Window> {
    let bounds = |src: &str| match lexer {
        Lexer::Rust => rust_boundaries(src),
        Lexer::Script => script_boundaries(src),
    };
    let old = bounds(before)?;
    if old.len() > MAX_PIECES || (early && mostly_gone(before, &old, after)) {
        return None;
    }
    let new = bounds(after)?;
    if new.len() > MAX_PIECES {
        return None;
    }
    let pieces = |b: &[usize]| -> Vec<(usize, usize)> { b.windows(2).map(|w| (w[0], w[1])).collect() };
    let (old_p, new_p) = (pieces(&old), pieces(&new));
    let old_text: Vec<&str> = old_p.iter().map(|&(a, b)| &before[a..b]).collect();
    let new_text: Vec<&str> = new_p.iter().map(|&(a, b)| &after[a..b]).collect();
    let mut window = Window { old: Vec::new(), new: Vec::new(), old_cuts: Vec::new() };
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &old_text, &new_text) {
        let (tag, o, n) = op.as_tag_tuple();
        if tag == similar::DiffTag::Equal {
            continue;
        }
        let span =
            |p: &[(usize, usize)], r: std::ops::Range<usize>| (!r.is_empty()).then(|| p[r.start].0..p[r.end - 1].1);
        push_merged(&mut window.old, span(&old_p, o));
        push_merged(&mut window.new, span(&new_p, n));
    }
    let size = |v: &[std::ops::Range<usize>]| v.iter().map(|r| r.len()).sum::<usize>();
    let parsed = size(&window.old) + size(&window.new);
    let changed = !(window.old.is_empty() && window.new.is_empty());
    window.old_cuts = old;
    (changed && parsed < before.len().max(after.len())).then_some(window)
}

/// Whether two versions are the same code, told apart only by their comments: the
/// same text once each comment is taken out (with its line where it was all the line
/// held, else with the blanks on one side of it; a comment glued to the code before
/// it becomes one space, so that no two tokens join). Every detector with a window
/// reads no comment (the parse leaves them out, [`super::elide`]), so such a pair
/// has nothing to compare: a comment edit needs no parse at all. `false` when either
/// version does not lex.
pub(in crate::widen) fn same_code(lexer: Lexer, before: &str, after: &str) -> bool {
    match (without_comments(lexer, before), without_comments(lexer, after)) {
        (Some(old), Some(new)) => old == new,
        _ => false,
    }
}

/// `src` with its comments taken out as [`same_code`] says; `None` when it does not
/// lex.
fn without_comments(lexer: Lexer, src: &str) -> Option<String> {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut from = 0;
    let mut on = |at: usize, token: Token| -> Option<()> {
        let Token::Comment(end) = token else { return Some(()) };
        let mut start = at;
        while start > from && matches!(b[start - 1], b' ' | b'\t') {
            start -= 1;
        }
        let line_start = start == 0 || b[start - 1] == b'\n';
        if line_start && matches!(b.get(end), None | Some(b'\n')) {
            // A line of its own: the line goes.
            out.push_str(&src[from..start]);
            from = (end + 1).min(src.len());
        } else if line_start {
            // Code follows on its line: the indentation stays, the comment and the
            // blanks after it go.
            out.push_str(&src[from..at]);
            from = end;
            while matches!(b.get(from), Some(b' ' | b'\t')) {
                from += 1;
            }
        } else if start < at {
            // After code and blanks: the blanks and the comment go (one space stays
            // where code follows at once).
            out.push_str(&src[from..start]);
            if !matches!(b.get(end), None | Some(b'\n' | b'\r' | b' ' | b'\t')) {
                out.push(' ');
            }
            from = end;
        } else {
            // Glued to the code before it: one space keeps the tokens apart.
            out.push_str(&src[from..at]);
            out.push(' ');
            from = end;
        }
        Some(())
    };
    match lexer {
        Lexer::Rust => rust_tokens(src, &mut on)?,
        Lexer::Script => script_tokens(src, &mut on)?,
    }
    out.push_str(&src[from..]);
    Some(out)
}

/// Whether the window is sure to be refused as too large, from the old version's
/// declarations (between `cuts`) alone: one not found in `after` at all is in the
/// window, and what of `after` the found ones cannot cover is in its new part. Both
/// are lower bounds, so a "yes" is the answer [`find`] would give after lexing the
/// new version and diffing the declarations, which a file edited throughout (a change
/// to every signature) is spared. Asked only where the search is cheap.
fn mostly_gone(before: &str, cuts: &[usize], after: &str) -> bool {
    const MAX_SEARCHED: usize = 256 * 1024;
    if cuts.len().saturating_mul(after.len()) > MAX_SEARCHED {
        return false;
    }
    let gone = gone_bytes(before, cuts, after);
    let new_part = after.len().saturating_sub(before.len() - gone);
    gone + new_part >= before.len().max(after.len())
}

/// The bytes of the old version's declarations (between `cuts`) that `after` does
/// not hold anywhere. A declaration found in `after` has each of its whole lines
/// (those between two of its newlines) among `after`'s lines, so with many
/// declarations, a set of those lines made once settles most of them without a
/// search of `after` each.
fn gone_bytes(before: &str, cuts: &[usize], after: &str) -> usize {
    let declarations = cuts.windows(2).map(|w| &before[w[0]..w[1]]);
    if cuts.len() <= 8 {
        return declarations.filter(|d| !after.contains(d)).map(str::len).sum();
    }
    let lines: foldhash::HashSet<&str> = after.split('\n').collect();
    let absent = |d: &&str| {
        let whole_line_missing = match (d.find('\n'), d.rfind('\n')) {
            (Some(first), Some(last)) if first < last => d[first + 1..last].split('\n').any(|l| !lines.contains(l)),
            _ => false,
        };
        whole_line_missing || !after.contains(d)
    };
    declarations.filter(absent).map(str::len).sum()
}

/// Appends `r` to sorted ranges, joined to the last one where they touch.
fn push_merged(v: &mut Vec<std::ops::Range<usize>>, r: Option<std::ops::Range<usize>>) {
    let Some(r) = r else { return };
    match v.last_mut() {
        Some(last) if last.end == r.start => last.end = r.end,
        _ => v.push(r),
    }
}

/// Parses the `ranges` of `src` alone (sorted, disjoint), in the file's coordinates;
/// `None` when the parser gives up or the ranges have a syntax error. With no range,
/// an empty tree.
pub(in crate::widen) fn parse_ranges(
    lang: &tree_sitter::Language,
    src: &str,
    ranges: &[std::ops::Range<usize>],
) -> Option<Tree> {
    super::syntax::with_parser(lang, |parser| {
        if ranges.is_empty() {
            return parser.parse("", None);
        }
        parser.set_included_ranges(&included(src, ranges)).ok()?;
        let tree = parser.parse(src, None)?;
        (!tree.root_node().has_error()).then_some(tree)
    })?
}

/// `ranges` (sorted, disjoint) as tree-sitter's included ranges, their points found in
/// one pass over the text: a file can have hundreds of ranges when function bodies are
/// left out ([`super::elide`]).
fn included(src: &str, ranges: &[std::ops::Range<usize>]) -> Vec<Range> {
    let mut at = Point::new(0, 0);
    let mut from = 0;
    let mut point = |byte: usize| {
        let b = &src.as_bytes()[from..byte];
        match memchr::memrchr(b'\n', b) {
            Some(last) => at = Point::new(at.row + memchr::memchr_iter(b'\n', b).count(), byte - (from + last + 1)),
            None => at.column += byte - from,
        }
        from = byte;
        at
    };
    ranges
        .iter()
        .map(|r| Range { start_byte: r.start, start_point: point(r.start), end_byte: r.end, end_point: point(r.end) })
        .collect()
}

/// The text outside a window, the same in both versions, and the tests a detector
/// asks of it. Each test answers "maybe" whenever the outside could hold what is
/// asked about, so a "no" is certain.
pub(crate) struct Outside<'s> {
    parts: Vec<&'s str>,
    /// The parts cut where top-level declarations begin and end (where known; else
    /// the parts): each declaration outside lies within one piece.
    pieces: Vec<&'s str>,
    compacted: std::cell::OnceCell<Vec<String>>,
    /// The `impl` headers of each piece (Rust), found on first need.
    impl_headers: Vec<std::cell::OnceCell<Vec<std::ops::Range<usize>>>>,
    /// Every word of the outside (a maximal run of identifier bytes), for many lookups.
    words: std::cell::OnceCell<foldhash::HashSet<&'s str>>,
}

/// More top-level names than this in a window and the outside is not searched for
/// each (a search per name costs a pass over the outside text): the file is parsed
/// whole.
pub(in crate::widen) const MAX_WINDOW_NAMES: usize = 256;

impl<'s> Outside<'s> {
    /// The outside of `window` in the old version `before`: the text between its
    /// ranges (each part a run of whole declarations).
    pub(crate) fn of(before: &'s str, window: &Window) -> Outside<'s> {
        let mut parts = Vec::with_capacity(window.old.len() + 1);
        let mut at = 0;
        for r in &window.old {
            parts.push(&before[at..r.start]);
            at = r.end;
        }
        parts.push(&before[at..]);
        parts.retain(|p| !p.is_empty());
        let mut pieces = Vec::new();
        let mut at = 0;
        for &cut in &window.old_cuts {
            // A piece between two cuts, when the window holds none of it.
            if cut > at && !window.old.iter().any(|r| r.start < cut && at < r.end) {
                pieces.push(&before[at..cut]);
            }
            at = cut;
        }
        // Without cuts: the parts themselves.
        if window.old_cuts.is_empty() {
            pieces = parts.clone();
        }
        Outside::new(parts, pieces)
    }

    /// An outside made of the given texts, each the same in both versions.
    pub(crate) fn from_parts(mut parts: Vec<&'s str>) -> Outside<'s> {
        parts.retain(|p| !p.is_empty());
        let pieces = parts.clone();
        Outside::new(parts, pieces)
    }

    fn new(parts: Vec<&'s str>, pieces: Vec<&'s str>) -> Outside<'s> {
        let impl_headers = pieces.iter().map(|_| Default::default()).collect();
        let (compacted, words) = Default::default();
        Outside { parts, pieces, compacted, impl_headers, words }
    }

    /// Whether `s` occurs in the outside text.
    pub(crate) fn contains(&self, s: &str) -> bool {
        self.parts.iter().any(|p| p.contains(s))
    }

    /// Whether `s` occurs in the outside text with every whitespace character removed
    /// (how a condition's formatting-blind key would appear there).
    pub(crate) fn contains_compact(&self, s: &str) -> bool {
        let compacted = self.compacted.get_or_init(|| self.parts.iter().map(|p| compact(p)).collect());
        compacted.iter().any(|p| p.contains(s))
    }

    /// Whether `word` occurs as a whole word (not inside a longer identifier).
    pub(crate) fn contains_word(&self, word: &str) -> bool {
        self.parts.iter().any(|p| whole_words(p, word).next().is_some())
    }

    /// [`Outside::contains_word`] for an identifier, from a set of the outside's words
    /// made once: for a detector that asks about many names.
    pub(crate) fn has_word(&self, word: &str) -> bool {
        let words = self.words.get_or_init(|| {
            self.parts.iter().flat_map(|p| p.split(|c: char| c.is_ascii() && !is_ident_byte(c as u8))).collect()
        });
        words.contains(word)
    }

    /// Whether a declaration outside could carry the name `name` (a symbol's first
    /// segment): an identifier as a whole word, anything else (a test title, a
    /// generic self type) as text, with or without its whitespace.
    pub(crate) fn may_name(&self, name: &str) -> bool {
        if is_identifier(name) {
            return self.contains_word(name);
        }
        self.contains(name) || self.contains_compact(&compact(name))
    }

    /// Whether one Rust declaration outside could both give symbols the first segment
    /// `root` ([`Outside::may_declare`]: an item of that name, an `impl` whose header
    /// names it) and declare a member named one of `members` within it: the member's
    /// name after a declaring keyword (`fn`, `const`, `type`...), before a single `:`
    /// (a field), or where a variant stands (first on its line, or after `{`, `,`, `(`,
    /// `]`, `|`, `#` or a comment's `/`). A mere use (`Vec::new()`, `self.len`)
    /// declares nothing, nor does a member of another type's `impl`.
    pub(crate) fn may_declare_members(&self, root: &str, members: &std::collections::BTreeSet<&str>) -> bool {
        // A first segment that is no identifier (a slice or tuple type's `impl`) is
        // looked for as text anywhere, without its members.
        if !is_identifier(root) {
            return self.may_name(root);
        }
        if !self.has_word(root) || !members.iter().any(|m| self.has_word(m)) {
            return false;
        }
        (self.pieces.iter().zip(&self.impl_headers))
            .any(|(p, h)| rust_declares(p, root, h) && members.iter().any(|m| rust_declares_member(p, m)))
    }

    /// Whether a declaration outside could give symbols one of the first segments in
    /// `names` ([`Outside::may_declare`]); a window with more than [`MAX_WINDOW_NAMES`]
    /// of them counts as a yes.
    pub(crate) fn may_declare_any(&self, lexer: Lexer, names: &std::collections::BTreeSet<&str>) -> bool {
        names.len() > MAX_WINDOW_NAMES || names.iter().any(|name| self.may_declare(lexer, name))
    }

    /// Whether a declaration outside could give symbols the first segment `name`: an
    /// identifier written where a declaration puts its name (after a declaring keyword,
    /// in an `impl` header, before `=` or `:`, as a method, as a test title), anything
    /// else anywhere ([`Outside::may_name`]). A mere use of the name (a type, a call
    /// inside an expression) declares nothing.
    pub(crate) fn may_declare(&self, lexer: Lexer, name: &str) -> bool {
        if !is_identifier(name) {
            return self.may_name(name);
        }
        match lexer {
            // By piece: a keyword or an `impl` header and the name it declares are in
            // one declaration.
            Lexer::Rust => (self.pieces.iter().zip(&self.impl_headers)).any(|(p, h)| rust_declares(p, name, h)),
            Lexer::Script => {
                self.parts.iter().any(|p| whole_words(p, name).any(|at| script_declares_at(p, at, name.len())))
            }
        }
    }
}

/// Whether `name` is one identifier token.
pub(in crate::widen) fn is_identifier(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(is_ident_byte)
}

/// The offsets where `word` occurs in `text` as a whole word.
fn whole_words<'t>(text: &'t str, word: &'t str) -> impl Iterator<Item = usize> + 't {
    let b = text.as_bytes();
    text.match_indices(word).map(|(at, _)| at).filter(move |&at| {
        !b[..at].last().is_some_and(|&c| is_ident_byte(c)) && !b.get(at + word.len()).is_some_and(|&c| is_ident_byte(c))
    })
}

/// Whether the identifier `name` is declared in the Rust text `p`: after a declaring
/// keyword, or in one of `p`'s `impl` headers (`headers`, found on first need).
fn rust_declares(p: &str, name: &str, headers: &std::cell::OnceCell<Vec<std::ops::Range<usize>>>) -> bool {
    whole_words(p, name).any(|at| {
        rust_declares_at(p, at) || headers.get_or_init(|| rust_impl_headers(p)).iter().any(|r| r.contains(&at))
    })
}

/// Whether `name` may be declared as a member (see [`Outside::may_declare_members`])
/// somewhere in the Rust text `p`.
fn rust_declares_member(p: &str, name: &str) -> bool {
    whole_words(p, name).any(|at| {
        let head = &p[..at];
        let rest = p[at + name.len()..].trim_start();
        let field = rest.starts_with(':') && !rest.starts_with("::");
        let first_on_line = head.rsplit('\n').next().is_some_and(|l| l.trim().is_empty());
        let variant_place = matches!(word_before(head).1, Some(b'{' | b',' | b'(' | b']' | b'|' | b'#' | b'/'));
        rust_declares_at(p, at) || field || first_on_line || variant_place
    })
}

/// Whether the name at `at` in Rust text follows a declaring keyword.
fn rust_declares_at(text: &str, at: usize) -> bool {
    let head = &text[..at];
    let mut word = word_before(head).0;
    if word == "mut" {
        // `static mut NAME`
        word = word_before(&head[..head.trim_end().len() - 3]).0;
    }
    RUST_DECLARING.contains(&word)
}

/// Whether the name of `len` bytes at `at` in script text stands where a declaration
/// puts its name.
fn script_declares_at(text: &str, at: usize, len: usize) -> bool {
    let head = &text[..at];
    let (word, prev) = word_before(head);
    let rest = &text[at + len..];
    let next = rest.trim_start().bytes().next();
    // First on its line (a method of an object literal, perhaps after a comment line),
    // or after a block comment.
    let line_start = head.rsplit('\n').next().is_some_and(|l| l.trim().is_empty());
    let method = matches!(next, Some(b'(' | b'<'))
        && (line_start
            || matches!(prev, None | Some(b'{' | b',' | b';' | b'}' | b'*' | b'/'))
            || SCRIPT_MODIFIERS.contains(&word));
    SCRIPT_DECLARING.contains(&word)
        || matches!(next, Some(b'=' | b':' | b'!'))
        || matches!(prev, Some(b'"' | b'\'' | b'`'))
        || method
        || rest.is_empty()
}

/// Rust keywords after which a name is declared.
const RUST_DECLARING: &[&str] = &["fn", "struct", "enum", "union", "trait", "mod", "type", "const", "static"];

/// Script keywords after which a name is declared.
const SCRIPT_DECLARING: &[&str] =
    &["function", "class", "interface", "namespace", "module", "enum", "type", "const", "let", "var"];

/// Modifiers that can stand before a method's name.
const SCRIPT_MODIFIERS: &[&str] = &[
    "async",
    "get",
    "set",
    "static",
    "public",
    "private",
    "protected",
    "readonly",
    "abstract",
    "override",
    "declare",
    "export",
    "default",
    "accessor",
];

/// The identifier that ends `head` after trailing whitespace (empty if none), and the
/// last non-whitespace byte.
pub(in crate::widen) fn word_before(head: &str) -> (&str, Option<u8>) {
    let trimmed = head.trim_end();
    let start = trimmed.bytes().rposition(|c| !is_ident_byte(c)).map_or(0, |i| i + 1);
    (&trimmed[start..], trimmed.bytes().next_back())
}

/// The byte ranges of the `impl` headers of a Rust text, each from `impl` to the `{`
/// or `;` that ends it outside any bracket (`impl<F: Fn() -> u8> A for [u8; 4] {`).
fn rust_impl_headers(text: &str) -> Vec<std::ops::Range<usize>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    for at in whole_words(text, "impl") {
        let (mut depth, mut i) = (0i32, at + 4);
        while i < b.len() {
            match b[i] {
                b'-' if b.get(i + 1) == Some(&b'>') => i += 1,
                b'<' | b'(' | b'[' => depth += 1,
                b'>' | b')' | b']' => depth -= 1,
                b'{' | b';' if depth <= 0 => break,
                _ => {}
            }
            i += 1;
        }
        out.push(at..i);
    }
    out
}

/// A byte that can be part of an identifier in Rust, TypeScript or JavaScript (any
/// byte of a non-ASCII character counts).
pub(super) fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// The first segment of a dotted symbol or slot key (`type A.b`, `f(x)`, `f->`,
/// `Query.limit`): the name of the top-level declaration it belongs to.
pub(in crate::widen) fn root(symbol: &str) -> &str {
    let s = symbol.strip_prefix("type ").unwrap_or(symbol);
    let head = &s[..s.find(['.', '(']).unwrap_or(s.len())];
    head.strip_suffix("->").unwrap_or(head)
}

/// Rust keywords that begin an item: after a `}` at top level, one of them (or `#`,
/// or the end) shows that the item ended there. (`const X: S = S {} ;` does not.)
const RUST_ITEM_STARTS: &[&str] = &[
    "pub",
    "fn",
    "struct",
    "enum",
    "union",
    "impl",
    "trait",
    "mod",
    "use",
    "const",
    "static",
    "type",
    "unsafe",
    "async",
    "extern",
    "macro_rules",
];

/// A token of source text outside literals: a word (an identifier or a keyword,
/// ending at the byte given), a punctuation byte, or a comment (ending at the byte
/// given: a line comment before its newline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    Word(usize),
    Punct(u8),
    Comment(usize),
}

/// Calls `f(at, token)` for each token of Rust text, in order, skipping whitespace,
/// literals and a shebang line. `None` when the text does not lex (an
/// unterminated string or comment) or `f` returns `None`.
pub(super) fn rust_tokens(src: &str, mut f: impl FnMut(usize, Token) -> Option<()>) -> Option<()> {
    let b = src.as_bytes();
    let mut i = 0;
    // A shebang line (`#!` not followed by `[`) is not code.
    if b.starts_with(b"#!") && !src[2..].trim_start().starts_with('[') {
        i = memchr::memchr(b'\n', b).unwrap_or(b.len());
    }
    while i < b.len() {
        match b[i] {
            b'/' if matches!(b.get(i + 1), Some(b'/' | b'*')) => {
                let end = match b[i + 1] {
                    b'/' => memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |n| i + n),
                    _ => rust_block_comment(b, i)?,
                };
                f(i, Token::Comment(end))?;
                i = end;
            }
            b'"' => i = quoted(b, i + 1, b'"', true)?,
            b'\'' => i = rust_quote(b, i)?,
            c if c.is_ascii_whitespace() => i += 1,
            c if c.is_ascii_digit() => i = skip_while(b, i, |c| c.is_ascii_alphanumeric() || c == b'_'),
            c if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => {
                let end = skip_while(b, i, is_ident_byte);
                i = match rust_prefixed_literal(b, i, end)? {
                    Some(literal_end) => literal_end,
                    None => {
                        f(i, Token::Word(end))?;
                        end
                    }
                };
            }
            c => {
                f(i, Token::Punct(c))?;
                i += 1;
            }
        }
    }
    Some(())
}

/// The byte offsets in a Rust file where a top-level item may begin: 0, after a `;`
/// or an item-ending `}` at bracket depth 0, and the end. `None` when the file does not
/// lex (unbalanced brackets, an unterminated string or comment).
pub(in crate::widen) fn rust_boundaries(src: &str) -> Option<Vec<usize>> {
    boundaries(src, |f| rust_tokens(src, f), rust_item_follows)
}

/// The boundaries of a token walk: 0, after a `;` at bracket depth 0, after a `}` at
/// depth 0 that `follows` says ends a declaration, and the end.
fn boundaries(
    src: &str,
    walk: impl FnOnce(&mut dyn FnMut(usize, Token) -> Option<()>) -> Option<()>,
    follows: fn(&[u8], usize) -> Option<bool>,
) -> Option<Vec<usize>> {
    let mut cuts = Cuts::new();
    walk(&mut |i, token| match token {
        Token::Word(_) | Token::Comment(_) => Some(()),
        Token::Punct(b'}') => {
            cuts.close()?;
            if cuts.depth == 0 && follows(src.as_bytes(), i + 1)? {
                cuts.out.push(i + 1);
            }
            Some(())
        }
        Token::Punct(c) => cuts.bracket_or_semicolon(c, i),
    })?;
    cuts.finish(src.len())
}

/// What the two lexers share: the bracket depth and the boundaries found so far.
struct Cuts {
    out: Vec<usize>,
    depth: usize,
}

impl Cuts {
    fn new() -> Cuts {
        Cuts { out: vec![0], depth: 0 }
    }

    /// A byte `c` at `i` outside literals and comments: an opening bracket deepens, a
    /// closing one (but `}`, which each lexer handles) rises, a `;` at depth 0 ends a
    /// declaration; `None` when a bracket closes that was never opened.
    fn bracket_or_semicolon(&mut self, c: u8, i: usize) -> Option<()> {
        match c {
            b'(' | b'[' | b'{' => self.depth += 1,
            b')' | b']' => self.close()?,
            b';' if self.depth == 0 => self.out.push(i + 1),
            _ => {}
        }
        Some(())
    }

    fn close(&mut self) -> Option<()> {
        self.depth = self.depth.checked_sub(1)?;
        Some(())
    }

    /// The boundaries, the end included; `None` when a bracket is left open.
    fn finish(mut self, len: usize) -> Option<Vec<usize>> {
        if self.depth != 0 {
            return None;
        }
        if self.out.last() != Some(&len) {
            self.out.push(len);
        }
        Some(self.out)
    }
}

/// After an identifier `b[start..end]`: the end of the literal it prefixes (`r"..."`,
/// `r#"..."#`, `b"..."`, `br"..."`, `c"..."`, `b'x'`), `Some(None)` when it prefixes
/// none, `None` when the literal is unterminated.
fn rust_prefixed_literal(b: &[u8], start: usize, end: usize) -> Option<Option<usize>> {
    let word = &b[start..end];
    let next = b.get(end).copied();
    match (word, next) {
        (b"b", Some(b'\'')) => rust_quote(b, end).map(Some),
        (b"b" | b"c", Some(b'"')) => quoted(b, end + 1, b'"', true).map(Some),
        (b"r" | b"br" | b"cr", Some(b'"' | b'#')) => {
            let hashes = skip_while(b, end, |c| c == b'#') - end;
            // `r#ident` is a raw identifier, not a string.
            if b.get(end + hashes) != Some(&b'"') {
                return Some(None);
            }
            let mut closing = vec![b'"'];
            closing.extend(std::iter::repeat_n(b'#', hashes));
            let body = end + hashes + 1;
            let at = memchr::memmem::find(&b[body..], &closing)?;
            Some(Some(body + at + closing.len()))
        }
        _ => Some(None),
    }
}

/// At a `'`: past a character literal (`'a'`, `'\n'`, `'\u{1F600}'`, `'}'`), or past
/// the quote alone for a lifetime or label (`'a`, `'static`).
fn rust_quote(b: &[u8], at: usize) -> Option<usize> {
    match b.get(at + 1)? {
        b'\\' => {
            // An escape: the closing quote comes within a `\u{10FFFF}`.
            let from = at + 3;
            let window = &b[from.min(b.len())..(from + 10).min(b.len())];
            memchr::memchr(b'\'', window).map(|n| from + n + 1)
        }
        &c => {
            let width = utf8_width(c);
            if b.get(at + 1 + width) == Some(&b'\'') { Some(at + 2 + width) } else { Some(at + 1) }
        }
    }
}

fn utf8_width(lead: u8) -> usize {
    match lead {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// Past a Rust block comment starting at `at` (they nest).
fn rust_block_comment(b: &[u8], at: usize) -> Option<usize> {
    let (mut i, mut open) = (at + 2, 1usize);
    while open > 0 {
        match (b.get(i)?, b.get(i + 1)) {
            (b'/', Some(b'*')) => {
                open += 1;
                i += 2;
            }
            (b'*', Some(b'/')) => {
                open -= 1;
                i += 2;
            }
            _ => i += 1,
        }
    }
    Some(i)
}

/// Past the string whose body starts at `from` and ends at an unescaped `close`;
/// `None` when it never ends, or (unless `multiline`) a line ends first.
fn quoted(b: &[u8], from: usize, close: u8, multiline: bool) -> Option<usize> {
    let mut i = from;
    loop {
        match *b.get(i)? {
            b'\\' => i += 2,
            c if c == close => return Some(i + 1),
            b'\n' if !multiline => return None,
            _ => i += 1,
        }
    }
}

fn skip_while(b: &[u8], mut i: usize, keep: impl Fn(u8) -> bool) -> usize {
    while i < b.len() && keep(b[i]) {
        i += 1;
    }
    i
}

/// Past whitespace and comments (`//`, `/* */`, nested when `nested`) from `i`;
/// `None` when a comment never ends.
fn skip_trivia(b: &[u8], mut i: usize, nested: bool) -> Option<usize> {
    loop {
        i = skip_while(b, i, |c| c.is_ascii_whitespace());
        match (b.get(i), b.get(i + 1)) {
            (Some(b'/'), Some(b'/')) => i = memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |n| i + n),
            (Some(b'/'), Some(b'*')) if nested => i = rust_block_comment(b, i)?,
            (Some(b'/'), Some(b'*')) => i = memchr::memmem::find(&b[i + 2..], b"*/").map(|n| i + 2 + n + 2)?,
            _ => return Some(i),
        }
    }
}

/// Whether what follows `i` (after whitespace and comments) starts an item: `#`, an
/// item keyword, or the end of the file.
fn rust_item_follows(b: &[u8], i: usize) -> Option<bool> {
    let j = skip_trivia(b, i, true)?;
    let word = &b[j..skip_while(b, j, is_ident_byte)];
    Some(j == b.len() || b[j] == b'#' || RUST_ITEM_STARTS.iter().any(|k| k.as_bytes() == word))
}

/// Keywords that cannot continue an expression: after a `}` at top level, one of them
/// on the next token (or the end) shows that the statement ended there, automatic
/// semicolon or not (`const o = {}` then `(f)()` would be a call).
const SCRIPT_STATEMENT_STARTS: &[&str] =
    &["export", "function", "class", "interface", "enum", "const", "import", "var"];

/// Calls `f(at, token)` for each token of TypeScript or JavaScript text (without
/// JSX), in order, skipping whitespace, strings, the text of template
/// literals (a substitution's `${` and its closing `}` are not tokens, what is inside
/// is) and a shebang line. A number is a word. `None` when the text does not lex for
/// certain: a `/` that is not a comment (division and regular expressions need the
/// grammar to tell apart), an unterminated string, template or comment, a `}` closing
/// nothing; or when `f` returns `None`.
pub(super) fn script_tokens(src: &str, mut f: impl FnMut(usize, Token) -> Option<()>) -> Option<()> {
    let b = src.as_bytes();
    // The `{` depth, and the depths at which each open template substitution began.
    let (mut depth, mut substitutions) = (0usize, Vec::new());
    let mut i = 0;
    if b.starts_with(b"#!") {
        i = memchr::memchr(b'\n', b).unwrap_or(b.len());
    }
    while i < b.len() {
        match b[i] {
            b'/' if matches!(b.get(i + 1), Some(b'/' | b'*')) => {
                let end = match b[i + 1] {
                    b'/' => memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |n| i + n),
                    _ => memchr::memmem::find(&b[i + 2..], b"*/").map(|n| i + 2 + n + 2)?,
                };
                f(i, Token::Comment(end))?;
                i = end;
            }
            b'/' => return None,
            b'"' | b'\'' => i = quoted(b, i + 1, b[i], false)?,
            b'`' => i = template(b, i + 1, depth, &mut substitutions)?,
            c if c.is_ascii_whitespace() => i += 1,
            c if is_ident_byte(c) => {
                let end = skip_while(b, i, is_ident_byte);
                f(i, Token::Word(end))?;
                i = end;
            }
            b'}' if substitutions.last() == Some(&depth) => {
                // The end of a `${...}`: the template goes on.
                substitutions.pop();
                i = template(b, i + 1, depth, &mut substitutions)?;
            }
            c => {
                match c {
                    b'{' => depth += 1,
                    b'}' => depth = depth.checked_sub(1)?,
                    _ => {}
                }
                f(i, Token::Punct(c))?;
                i += 1;
            }
        }
    }
    substitutions.is_empty().then_some(())
}

/// From inside a template literal at `from`: past its closing backtick, or past the
/// `${` of a substitution, whose `{` depth is remembered in `substitutions`.
fn template(b: &[u8], from: usize, depth: usize, substitutions: &mut Vec<usize>) -> Option<usize> {
    let mut i = from;
    loop {
        match *b.get(i)? {
            b'\\' => i += 2,
            b'`' => return Some(i + 1),
            b'$' if b.get(i + 1) == Some(&b'{') => {
                substitutions.push(depth);
                return Some(i + 2);
            }
            _ => i += 1,
        }
    }
}

/// The byte offsets in a TypeScript or JavaScript file (without JSX) where a top-level
/// statement may begin: 0, after a `;` at bracket depth 0, after a `}` at depth 0 that
/// a statement keyword follows, and the end. `None` when the file does not lex for
/// certain ([`script_tokens`]) or its brackets do not balance.
pub(in crate::widen) fn script_boundaries(src: &str) -> Option<Vec<usize>> {
    boundaries(src, |f| script_tokens(src, f), script_statement_follows)
}

fn script_statement_follows(b: &[u8], i: usize) -> Option<bool> {
    let j = skip_trivia(b, i, false)?;
    let word = &b[j..skip_while(b, j, is_ident_byte)];
    Some(j == b.len() || SCRIPT_STATEMENT_STARTS.iter().any(|k| k.as_bytes() == word))
}

/// What the tests of the window share: corpora of real source, the edits made to them,
/// and the check that a detector finds the same with and without the window.
#[cfg(test)]
pub(in crate::widen) mod check;

#[cfg(test)]
mod tests;
