//! The window's own tests: its lexers, its ranges and what it refuses.

use super::*;
use tree_sitter::Parser;

#[test]
fn included_ranges_have_the_points_of_their_bytes() {
    use super::super::syntax::point_at;
    let src = "fn a() {\n    1\n}\n\nfn b() { 2 }\nfn c() {\n\n    é\n}\n";
    let ranges = [0..9, 14..16, 19..29, 30..33, 40..src.len()];
    let got = included(src, &ranges);
    for (r, g) in ranges.iter().zip(&got) {
        assert_eq!((g.start_byte, g.end_byte), (r.start, r.end));
        assert_eq!(g.start_point, point_at(src.as_bytes(), r.start), "{r:?}");
        assert_eq!(g.end_point, point_at(src.as_bytes(), r.end), "{r:?}");
    }
}

fn top_level_ranges(lang: &tree_sitter::Language, src: &str) -> Option<Vec<(usize, usize)>> {
    let mut parser = Parser::new();
    parser.set_language(lang).unwrap();
    let tree = parser.parse(src, None)?;
    let root = tree.root_node();
    if root.has_error() {
        return None;
    }
    let mut cursor = root.walk();
    Some(root.children(&mut cursor).map(|n| (n.start_byte(), n.end_byte())).collect())
}

/// Every boundary the lexers report falls between two top-level declarations of
/// tree-sitter's own parse, never inside one: over this crate's whole source and
/// every Rust, TypeScript and JavaScript fixture.
#[test]
fn boundaries_never_cut_a_declaration() {
    let rust: tree_sitter::Language = tree_sitter_rust::LANGUAGE.into();
    let ts: tree_sitter::Language = tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into();
    let js: tree_sitter::Language = tree_sitter_javascript::LANGUAGE.into();
    let mut checked = 0;
    let sets = [
        (check::corpus(&["src", "tests", "benches", "fixtures"], &[".rs"]), &rust, Lexer::Rust),
        (check::corpus(&["fixtures", "tests/fixtures"], &[".ts"]), &ts, Lexer::Script),
        (check::corpus(&["fixtures"], &[".js"]), &js, Lexer::Script),
    ];
    for (files, lang, lexer) in sets {
        for (name, src) in files {
            let Some(decls) = top_level_ranges(lang, &src) else { continue };
            let bounds = match lexer {
                Lexer::Rust => rust_boundaries(&src),
                Lexer::Script => script_boundaries(&src),
            };
            // A `/` that opens no comment is refused by design (a regular expression
            // and a division look alike to the lexer: the file is parsed whole), so a
            // file with a regular-expression literal may be refused; no other may.
            let regex_literal = ["(/", ", /", "= /"].iter().any(|p| src.contains(p));
            if bounds.is_none() && regex_literal && lexer == Lexer::Script {
                continue;
            }
            let bounds = bounds.unwrap_or_else(|| panic!("{name}: tree-sitter parses it, the lexer refuses it"));
            for b in &bounds {
                let cut = decls.iter().find(|(s, e)| s < b && b < e);
                assert!(cut.is_none(), "{name}: boundary {b} cuts the declaration at {cut:?}");
            }
            checked += bounds.len();
        }
    }
    assert!(checked > 2000, "the corpora exercise the lexers ({checked} boundaries)");
}

/// The text between consecutive boundaries.
fn pieces(src: &str, bounds: Option<Vec<usize>>) -> Option<Vec<&str>> {
    Some(bounds?.windows(2).map(|w| &src[w[0]..w[1]]).collect())
}

/// Cases as the pieces the boundaries should cut the source into.
fn assert_cuts(lex: fn(&str) -> Option<Vec<usize>>, cases: &[&[&str]]) {
    for want in cases {
        let src = want.concat();
        assert_eq!(pieces(&src, lex(&src)).as_deref(), Some(*want), "{src:?}");
    }
}

#[test]
fn rust_lexer_reads_literals_and_comments() {
    assert_cuts(
        rust_boundaries,
        &[
            // A brace in a string, a char, a raw string, a nested comment, a byte char.
            &["fn a() { let s = \"}\"; }", "\nfn b() {}", "\n"],
            &["fn a() { let c = '}'; }", "\nfn b() {}", "\n"],
            &["fn a() { r#\"}\"# ; }", "\nfn b() {}", "\n"],
            &["fn a() { /* } /* } */ } */ }", "\nfn b() {}", "\n"],
            &["fn a<'a>(x: &'a str) { b'}'; }", "\nfn b() {}", "\n"],
            &["fn a() { '\\''; '\\u{7D}'; }", "\nfn b() {}", "\n"],
            // `}` then `;`: the item goes on; a macro call after `}` is not an item.
            &["const X: S = S {};", "\nconst Y: S = S {}\n;", "\nfn c() {}\nm! {}", "\n"],
            &["use a::b;", "\n#[test]\nfn t() {}", "\n"],
            &["#!/usr/bin/env run\nfn a() {}", "\n"],
        ],
    );
    for broken in ["fn a() {", "fn a() { \"x }", "fn a() /* x", "fn a() {}}", "fn a() { r#\"x\" }"] {
        assert_eq!(rust_boundaries(broken), None, "{broken:?}");
    }
}

#[test]
fn script_lexer_reads_templates_and_refuses_slashes() {
    assert_cuts(
        script_boundaries,
        &[
            &["const a = `${x}}`;", "\nexport function f() {}", "\n"],
            &["const a = `${ {b: `}`}.b }`;", "\nlet c = 1;", "\n"],
            // A `}` the next line could continue is no boundary.
            &["const o = {}\n(f)()\n"],
            &["function f() {}", "\nexport const g = 1\n"],
            &["const s = '}' + \"{\";", "\n"],
            &["// a / b } {\nconst c = 1;", "\n"],
        ],
    );
    for refused in ["const a = b / c;", "const r = /}/;", "const s = 'x\n';", "f(`${a`);", "}"] {
        assert_eq!(script_boundaries(refused), None, "{refused:?}");
    }
}

#[test]
fn window_spans_the_touched_declarations() {
    let before = "fn a() {}\nfn b(x: u8) {}\nfn c() {}\n";
    let after = "fn a() {}\nfn b(x: u64) {}\nfn c() {}\n";
    let w = find(Lexer::Rust, before, after).unwrap();
    assert_eq!(w.old.iter().map(|r| &before[r.clone()]).collect::<Vec<_>>(), ["\nfn b(x: u8) {}"]);
    assert_eq!(w.new.iter().map(|r| &after[r.clone()]).collect::<Vec<_>>(), ["\nfn b(x: u64) {}"]);
    // Edits in two places: the declarations between them stay outside, and so do
    // declarations that only moved past an edit.
    let decls: Vec<String> = (0..8).map(|i| format!("fn f{i}() {{}}\n")).collect();
    let before = format!("{}fn a(x: u8) {{}}\n{}fn z(y: u8) {{}}\n", decls[..4].concat(), decls[4..].concat());
    let after = format!("{}fn a(x: u64) {{}}\n{}fn z(y: u64) {{}}\n", decls[..4].concat(), decls[4..].concat());
    let w = find(Lexer::Rust, &before, &after).unwrap();
    let texts = |src: &str, v: &[std::ops::Range<usize>]| -> Vec<String> {
        v.iter().map(|r| src[r.clone()].trim().to_string()).collect()
    };
    assert_eq!(texts(&before, &w.old), ["fn a(x: u8) {}", "fn z(y: u8) {}"]);
    assert_eq!(texts(&after, &w.new), ["fn a(x: u64) {}", "fn z(y: u64) {}"]);
    let outside = Outside::of(&before, &w);
    assert!(outside.contains("fn f0()") && outside.contains("fn f7()") && !outside.contains("fn a("));
    // An added declaration: nothing of the old version is in the window.
    let added = format!("{before}fn n() {{}}\n");
    let w = find(Lexer::Rust, &before, &added).unwrap();
    assert_eq!((w.old.len(), texts(&added, &w.new)), (0, vec!["fn n() {}".to_string()]));
    assert_eq!(parse_ranges(&tree_sitter_rust::LANGUAGE.into(), &before, &w.old).unwrap().root_node().child_count(), 0);
    // A change to most of the file parses it whole.
    assert_eq!(find(Lexer::Rust, "fn a(x: u8) {}\n", "fn a(x: u16) {}\n"), None);
}

/// Refusing a window early, from the old version's declarations alone, refuses
/// only windows the diff would refuse: every pair of the window corpus and its
/// edits, both ways, and a change to every declaration.
#[test]
fn an_early_refusal_is_the_diffs_answer() {
    let every = |widened: bool| -> String {
        (0..12)
            .map(|k| format!("pub fn f{k}(x: {}) -> u32 {{\n    x + {k}\n}}\n", if widened { "u64" } else { "u8" }))
            .collect()
    };
    let (before, after) = (every(false), every(true));
    assert!(mostly_gone(&before, &rust_boundaries(&before).unwrap(), &after));
    assert!(find_with(Lexer::Rust, &before, &after, false).is_none());
    let halved: String = before.lines().take(12).map(|l| format!("{l}\n")).collect();
    assert!(!mostly_gone(&before, &rust_boundaries(&before).unwrap(), &halved), "declarations only deleted");
    let edits: &[(&str, &str)] = &[("u8", "u64"), ("pub ", ""), ("fn ", "fn x_"), (";", ";\n")];
    let (mut early, mut searched_some) = (0, 0);
    for (lexer, exts) in [(Lexer::Rust, &[".rs"][..]), (Lexer::Script, &[".ts", ".js"][..])] {
        for (name, text) in check::corpus(&["src/widen", "fixtures"], exts) {
            for after in check::edits(&text, edits, 3) {
                for (b, a) in [(&text, &after), (&after, &text)] {
                    let plain = find_with(lexer, b, a, false);
                    assert_eq!(find_with(lexer, b, a, true), plain, "{name}");
                    let cuts = match lexer {
                        Lexer::Rust => rust_boundaries(b),
                        Lexer::Script => script_boundaries(b),
                    };
                    if let Some(c) = &cuts {
                        // The lines' shortcut answers what a search of every declaration would.
                        let searched: usize =
                            c.windows(2).map(|w| &b[w[0]..w[1]]).filter(|d| !a.contains(d)).map(str::len).sum();
                        assert_eq!(gone_bytes(b, c, a), searched, "{name}");
                        searched_some += usize::from(searched > 0);
                    }
                    early += usize::from(cuts.is_some_and(|c| mostly_gone(b, &c, a)));
                }
            }
        }
    }
    assert!(early > 20, "pairs refused early: {early}");
    assert!(searched_some > 100, "pairs with a declaration gone: {searched_some}");
}

#[test]
fn a_member_counts_only_inside_a_declaration_of_its_type() {
    let text = "pub struct Replacer {\n    buf: Vec<u8>,\n}\n\
                impl Other {\n    fn new() -> Other { Other }\n    fn clear(&mut self) {}\n}\n\
                fn helper() {\n    let r = Replacer::new();\n    r.clear();\n}\n\
                enum Mode {\n    /// doc\n    Fast,\n    #[default] Slow(u8),\n}\n\
                impl Tr for Replacer {\n    const LIMIT: u8 = 3;\n}\n";
    let w = Window { old: Vec::new(), new: Vec::new(), old_cuts: rust_boundaries(text).unwrap() };
    let outside = Outside::of(text, &w);
    let set = |names: &[&'static str]| names.iter().copied().collect::<std::collections::BTreeSet<&str>>();
    assert!(!outside.may_declare_members("Replacer", &set(&["new", "clear"])), "another type's, or a use");
    assert!(outside.may_declare_members("Replacer", &set(&["buf"])), "a field");
    assert!(outside.may_declare_members("Replacer", &set(&["LIMIT"])), "in an impl of a trait for it");
    assert!(outside.may_declare_members("Other", &set(&["new"])));
    assert!(outside.may_declare_members("Mode", &set(&["Fast"])), "a variant after a doc comment");
    assert!(outside.may_declare_members("Mode", &set(&["Slow"])), "a variant after an attribute");
    assert!(!outside.may_declare_members("Mode", &set(&["Medium"])));
    assert!(!outside.may_declare_members("Absent", &set(&["buf"])));
    // Without the declarations' bounds, one text holds the type and the member.
    let whole = Outside::from_parts(vec![text]);
    assert!(whole.may_declare_members("Replacer", &set(&["new"])));
}

#[test]
fn outside_tests_answer_maybe_when_unsure() {
    let text = "fn set_ratio(r: f64) {}\nimpl Query<T> {}\n// describe(\"a b\")\n";
    let w = Window { old: Vec::new(), new: Vec::new(), old_cuts: Vec::new() };
    let outside = Outside::of(text, &w);
    assert!(outside.may_name("set_ratio"));
    assert!(!outside.may_name("set"), "a whole word only");
    assert!(!outside.may_name("ratio"));
    assert!(outside.may_name("a b"));
    assert!(outside.may_name("Query<T>"));
    assert!(outside.contains_compact("r:f64"));
    // Where a declaration puts its name, and where a use does not.
    let rust = "struct Used;\nstatic mut COUNT: u8 = 0;\nfn f(q: &mut Query) -> Query { g(Query::new()) }\n\
                impl<F: Fn() -> u8> Trait for Handler<F> where F: Copy {}\n";
    let outside = Outside::of(rust, &w);
    for declared in ["Used", "COUNT", "f", "Handler", "Trait", "F"] {
        assert!(outside.may_declare(Lexer::Rust, declared), "{declared}");
    }
    for used in ["Query", "new", "g", "q"] {
        assert!(!outside.may_declare(Lexer::Rust, used), "{used}");
    }
    let script = "const a = () => 1;\nexport default {\n  // loads\n  load() {},\n  save: () => {},\n};\n\
                  describe(\"Store\", () => {});\nfunction* gen() {}\nlet x: Store = new Store(run(1));\n";
    let outside = Outside::of(script, &w);
    for declared in ["a", "load", "save", "Store", "gen", "x"] {
        assert!(outside.may_declare(Lexer::Script, declared), "{declared}");
    }
    assert!(!outside.may_declare(Lexer::Script, "run"), "a call inside an expression");
    // Too many names to search for each: treated as a yes.
    let names: Vec<String> = (0..=MAX_WINDOW_NAMES).map(|i| format!("absent_{i}")).collect();
    let few: std::collections::BTreeSet<&str> = names.iter().take(3).map(String::as_str).collect();
    let many: std::collections::BTreeSet<&str> = names.iter().map(String::as_str).collect();
    assert!(!outside.may_declare_any(Lexer::Script, &few));
    assert!(outside.may_declare_any(Lexer::Script, &many));
    assert_eq!(root("type A.b"), "A");
    assert_eq!(root("f(x)"), "f");
    assert_eq!(root("f->"), "f");
    assert_eq!(root("Query.limit"), "Query");
}

/// Comment edits alone are the same code; any edit outside comments is not, nor one
/// that joins two tokens a comment kept apart, nor a `//` inside a string.
#[test]
fn same_code_tells_comment_edits_from_code_edits() {
    let rust = "/// A record.\npub struct S {\n    pub a: u8, // small\n    /* kept */ pub b: u8,\n}\n";
    for same in [
        "/// An updated record.\npub struct S {\n    pub a: u8, // small\n    /* kept */ pub b: u8,\n}\n",
        "pub struct S {\n    pub a: u8,\n    pub b: u8,\n}\n",
        "/// A record.\n// Two lines now.\npub struct S {\n    pub a: u8, /* small */\n    pub b: u8,\n}\n",
    ] {
        assert!(same_code(Lexer::Rust, rust, same), "{same}");
    }
    for differs in [
        "/// A record.\npub struct S {\n    pub a: u64, // small\n    /* kept */ pub b: u8,\n}\n",
        "/// A record.\npub struct S {\n    pub a: u8, // small\n\n    /* kept */ pub b: u8,\n}\n",
        "pub struct S {\n    pub a: u8,\n}\n",
    ] {
        assert!(!same_code(Lexer::Rust, rust, differs), "{differs}");
    }
    assert!(!same_code(Lexer::Rust, "let x = a/*c*/b;\n", "let x = ab;\n"));
    assert!(same_code(Lexer::Rust, "let x = a/*c*/b;\n", "let x = a/*d*/b;\n"));
    assert!(!same_code(Lexer::Rust, "let x = a /*c*/b;\n", "let x = ab;\n"));
    assert!(same_code(Lexer::Rust, "let x = a /*c*/b;\n", "let x = a b;\n"));
    assert!(!same_code(Lexer::Rust, "let s = \"// a\";\n", "let s = \"// b\";\n"));
    assert!(!same_code(Lexer::Rust, "let s = \"open;\n", "let s = \"open;\n// x\n"), "does not lex");
    let ts = "/** A user. */\nexport interface U {\n  id: string; // key\n}\n";
    assert!(same_code(Lexer::Script, ts, "/** The user. */\nexport interface U {\n  id: string;\n}\n"));
    assert!(!same_code(Lexer::Script, ts, "/** A user. */\nexport interface U {\n  id?: string; // key\n}\n"));
    assert!(!same_code(Lexer::Script, "const r = /a/;\n", "const r = /b/;\n"));
}
