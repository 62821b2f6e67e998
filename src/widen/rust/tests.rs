//! Unit tests of the Rust detector: direction of type changes, the change window and
//! the incremental walk against whole files, and the cases the fixtures do not pin.

use super::*;
use crate::widen::Language;
use crate::widen::detector;

const PATH: &str = "src/lib.rs";

fn detect(path: &str, before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    detector::run(Language::Rust, path, before, after, true)
}

fn detect_with(before: &str, after: &str, window: bool) -> Result<Vec<RawFinding>, DetectError> {
    detector::run(Language::Rust, PATH, before, after, window)
}

fn windowed(before: &str, after: &str) -> Option<(Inventory, Inventory)> {
    detector::windowed(&RustDetector, window::Lexer::Rust, PATH, before, after)
}

fn side_by_side(before: &str, after: &str) -> Result<(Inventory, Inventory), DetectError> {
    detector::side_by_side(&RustDetector, PATH, before, after)
}

fn incremental(before: &str, after: &str) -> Result<(Inventory, Inventory), DetectError> {
    detector::incremental(&RustDetector, PATH, before, after)
}

fn parse(src: &str, side: &'static str) -> Result<Tree, DetectError> {
    detector::tree_of(&RustDetector, PATH, src, side)
}

fn parse_new(after: &str, old: &Tree, before: &str) -> Result<(Tree, super::super::syntax::Unchanged), DetectError> {
    let mut p = tree_sitter::Parser::new();
    p.set_language(&tree_sitter_rust::LANGUAGE.into()).expect("the Rust grammar loads");
    let (tree, unchanged) = super::super::syntax::reparse_tracking(&mut p, old, before, after).unzip();
    Ok((refuse_errors(tree, "new")?, unchanged.expect("a tree comes with its unchanged ranges")))
}

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
    use super::super::detector::Grammar;
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
    let (taken, found) = check::same_with_and_without(
        &pairs,
        &|b, a, w| detect_with(b, a, w),
        &|b, a| windowed(b, a).is_some(),
        RustDetector.elide(PATH).as_ref(),
    );
    assert!(taken > 300, "the window took {taken} of {} pairs", pairs.len());
    assert!(found > 60, "the windowed pairs gave findings to compare ({found})");
}

/// An `impl` block changed beside its `struct` and the type's other `impl` blocks
/// takes the window: the methods and fields inside it are declared nowhere outside.
/// The same change where another block of the type outside declares a method of the
/// same name does not.
#[test]
fn an_impl_beside_its_struct_takes_the_window() {
    let filler =
        "fn pad(v: &[u8]) -> usize {\n    v.iter().map(|b| *b as usize).sum::<usize>() + v.len() * 3\n}\n".repeat(6);
    let set = |check: &str| {
        format!("impl Query {{\n    pub fn set(&mut self, x: u8) {{\n{check}        self.limit = x;\n    }}\n}}\n")
    };
    let around = |middle: &str| {
        format!(
            "pub struct Query {{\n    pub limit: u8,\n}}\n{filler}impl Query {{\n    pub fn new() -> Query {{\n        \
             Query {{ limit: 0 }}\n    }}\n}}\n{middle}fn use_it(q: &mut Query) {{\n    q.set(3);\n}}\n"
        )
    };
    let (before, after) = (around(&set("        assert!(x < 10);\n")), around(&set("")));
    assert!(windowed(&before, &after).is_some(), "the changed impl stands alone");
    let found = detect_with(&before, &after, true).unwrap();
    assert_eq!(found, detect_with(&before, &after, false).unwrap());
    assert_eq!(found.iter().map(|f| (f.rule, f.symbol.as_str())).collect::<Vec<_>>(), [(ASSERT_REMOVED, "Query.set")]);
    // Another block of the type declares `set` too (one per platform): it is outside
    // and counts for the whole file, so the window is refused.
    let twin = "#[cfg(windows)]\nimpl Query {\n    pub fn set(&mut self, x: u8) {\n        self.limit = x;\n    }\n}\n";
    let (before, after) = (format!("{twin}{before}"), format!("{twin}{after}"));
    assert!(windowed(&before, &after).is_none(), "a method of the same name outside");
    assert_eq!(detect_with(&before, &after, true).unwrap(), detect_with(&before, &after, false).unwrap());
}

/// A guard outside the window matters only where a function's new guard may reword
/// one it lost (`compare_guards` counts a new key the old file held anywhere as a
/// reworded check, not an added one): then the window is refused. A function added
/// beside a guard of the same text outside (a new flag written like the others) and a
/// check reworded to a key found nowhere take the window, with the whole files'
/// findings.
#[test]
fn a_guard_outside_refuses_the_window_only_for_a_reworded_check() {
    let filler = (0..8)
        .map(|i| {
            format!("fn pad{i}(v: &[u8]) -> usize {{\n    v.iter().map(|b| *b as usize).sum::<usize>() + {i}\n}}\n")
        })
        .collect::<String>();
    let file = |f_check: &str, extra: &str| {
        format!(
            "fn g(x: u8, y: Result<(), ()>) {{\n    assert!(x < 10);\n    assert!(y.is_ok());\n}}\n{filler}\
             pub fn f(x: u8, z: u8) -> u8 {{\n    {f_check}\n    x + z\n}}\n{extra}"
        )
    };
    let added = "pub fn h(x: u8) -> u8 {\n    assert!(x < 10);\n    x\n}\n";
    let cases = [
        // Reworded to a check `g` holds: the old file held the key, so the check
        // counts as removed; the window alone would not know that.
        ("assert!(x > 0);", "assert!(x < 10);", "", false, 1),
        // Reworded to a key found nowhere: a reworded check, no finding.
        ("assert!(x > 0);", "assert!(z != 3);", "", true, 0),
        // A new function with a guard like `g`'s, and `f` unchanged but for a type.
        ("assert!(x > 0);", "assert!(x > 0);", added, true, 0),
        // Removed outright, its key still in `g`: removed.
        ("assert!(x < 10);", "let _ = x;", "", true, 1),
    ];
    for (old_check, new_check, extra, takes, removed) in cases {
        let (before, after) = (file(old_check, ""), file(new_check, extra));
        assert_eq!(windowed(&before, &after).is_some(), takes, "{old_check} -> {new_check} {extra}");
        let found = detect_with(&before, &after, true).unwrap();
        assert_eq!(found, detect_with(&before, &after, false).unwrap(), "{old_check} -> {new_check}");
        assert_eq!(found.iter().filter(|f| f.rule == ASSERT_REMOVED).count(), removed, "{old_check} -> {new_check}");
    }
}

/// The tokens that make a body worth parsing: the guard macros, not every macro; an
/// `if` only beside what a guard's block leaves by.
#[test]
fn a_body_holds_something_only_with_what_the_walk_records() {
    for free in [
        "let s = format!(\"{x}\"); println!(\"{s}\"); vec![1, 2]",
        "if x > 1 { return Ok(()) } else { y() }",
        "let a = b != c; !a",
        "// assert!(x)\n\"unsafe { }\"",
        "x.wrapping_mul(3)",
    ] {
        assert!(!body_may_hold(free), "{free}");
    }
    for holds in [
        "assert!(x < 3)",
        "std::debug_assert_eq!(a, b)",
        "ensure! (x, \"e\")",
        "if x > 1 { return Err(e) }",
        "if x { bail!(\"no\") }",
        // `guard_of_if` reads the text: a string that looks like a leaving block counts.
        "if x { let s = \"a;bail!\"; }",
        "unsafe { f() }",
        "#![allow(unused)]",
        "fn inner() {}",
        "use serde_json::Value;",
        "x.checked_mul(3)",
        // Text with a trigger that does not lex.
        "if x { \"open }",
    ] {
        assert!(body_may_hold(holds), "{holds}");
    }
}

/// Leaving function bodies out of the parse ([`crate::widen::elide`]) gives exactly
/// the findings of whole files: this crate's Rust source and the fixtures, each with
/// the edits of the window's test (a type widened, a check removed, `unsafe` added,
/// lines deleted), both ways. The pairs must exercise each kind of elision: bodies
/// without triggers alone, bodies shared by both versions, and (where findings in test
/// code are not reported) test modules, after which the findings outside test code
/// must be the same.
#[test]
fn elided_bodies_give_the_findings_of_whole_files() {
    use super::super::detector::{Grammar, elided};
    use super::super::window::check::{self, assert_same};
    use rayon::prelude::*;
    let edits: &[(&str, &str)] = &[
        ("u8", "u64"),
        ("u32", "usize"),
        (": String", ": Option<String>"),
        ("pub(crate) ", "pub "),
        ("assert!(", "let _ = ("),
        ("debug_assert!(", "drop(("),
        ("return Err(", "return Ok(("),
        (") {\n", ") {\n    unsafe { std::hint::unreachable_unchecked() }\n"),
        ("checked_mul(", "wrapping_mul("),
        ("if ", "if true || "),
    ];
    // Shared bodies that hold what the comparison looks across functions for: a guard
    // also written in a nested function, a moved body, a copy more in one version.
    let shared = "fn b(y: u8) {\n    fn inner(x: u8) {\n        assert!(x < 10);\n    }\n    inner(y);\n}\n";
    let filler =
        "fn pad(v: &[u8]) -> usize {\n    v.iter().map(|b| *b as usize).sum::<usize>() + v.len() * 3\n}\n".repeat(4);
    let mut pairs = vec![
        (
            "guard also in a nested function".to_string(),
            format!("fn a(x: u8) {{\n    assert!(x < 10);\n    store(x);\n}}\n{shared}{filler}"),
            format!("fn a(x: u8) {{\n    store(x);\n}}\n{shared}{filler}"),
        ),
        (
            "body moved to another function".to_string(),
            format!("fn a(x: u8) {{\n    if x > 9 {{ panic!() }}\n    store(x);\n}}\nfn c() {{}}\n{filler}"),
            format!(
                "fn a(x: u8) {{\n    store(x);\n}}\nfn c(x: u8) {{\n    if x > 9 {{ panic!() }}\n    store(x);\n}}\n{filler}"
            ),
        ),
        (
            "one copy fewer".to_string(),
            format!("fn a(x: u8) {{\n    assert!(x < 10);\n}}\nfn b(x: u8) {{\n    assert!(x < 10);\n}}\n{filler}"),
            format!("fn a(x: u8) {{\n    assert!(x < 10);\n}}\nfn b(x: u8) {{\n    store(x);\n}}\n{filler}"),
        ),
    ];
    for (name, b, a) in pairs.clone() {
        pairs.push((format!("{name}, reversed"), a, b));
    }
    for (name, text) in check::corpus(&["src/widen", "src/git", "src/store", "fixtures"], &[".rs"]) {
        for after in check::edits(&text, edits, 4) {
            pairs.push((name.clone(), after.clone(), text.clone()));
            pairs.push((name.clone(), text.clone(), after));
        }
    }
    // A test module of this crate's source widened or stripped of its checks too, and
    // a guard outside test code also written in one: with test code left out, the
    // findings outside test code must stay the same.
    let module = "#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {\n        assert!(x < 10);\n    }\n}\n";
    let nested = "fn helper() {\n    struct Q {\n        limit: u8,\n    }\n    impl Q {\n        fn f(&self) {\n            assert!(self.limit < 3);\n        }\n    }\n}\n";
    pairs.push((
        "types and an impl of the same name nested in a shared body and a test module".to_string(),
        format!("pub struct Q {{\n    pub limit: u8,\n}}\nimpl Q {{\n    fn f(&self) {{\n        assert!(self.limit < 3);\n    }}\n}}\n{nested}{filler}#[cfg(test)]\nmod tests {{\n{nested}}}\n"),
        format!("pub struct Q {{\n    pub limit: u64,\n}}\nimpl Q {{\n    fn f(&self) {{\n    }}\n}}\n{nested}{filler}#[cfg(test)]\nmod tests {{\n{nested}}}\n"),
    ));
    pairs.push((
        "guard also in a test module".to_string(),
        format!("fn a(x: u8) {{\n    assert!(x < 10);\n}}\n{filler}{module}"),
        format!("fn a(x: u8) {{\n}}\n{filler}{module}"),
    ));
    let e = RustDetector.elide(PATH).expect("the Rust detector elides bodies");
    let outside_tests = |found: Result<Vec<RawFinding>, DetectError>| {
        found.map(|f| f.into_iter().filter(|f| !f.in_test).collect::<Vec<_>>())
    };
    let (taken, shared, tests, found) = pairs
        .par_iter()
        .map(|(name, before, after)| {
            // The declared-constraint pass (`rust_decl`) runs beside the detector on the
            // whole texts whatever the detector parses: not part of what is compared here.
            let beside = |f: &RawFinding| crate::widen::rust_decl::RULES.iter().any(|r| r.id == f.rule);
            let whole = detect_with(before, after, false).map(|f| f.into_iter().filter(|f| !beside(f)).collect());
            let mut counts = (0, 0, 0, 0);
            for skip_tests in [false, true] {
                let Some((old, new, _)) = elided(&RustDetector, &e, PATH, before, after, skip_tests, None) else {
                    continue;
                };
                let got = Ok(crate::widen::syntax::finish(RustDetector.compare(&old, &new)));
                let what = format!("{name}, whole files against elided bodies (test modules left out: {skip_tests})");
                if skip_tests {
                    // A file whose test module does not parse is scanned without it,
                    // where the whole file is refused: the one difference allowed.
                    if whole.is_ok() {
                        assert_same(&what, &outside_tests(whole.clone()), &outside_tests(got.clone()), false);
                    }
                    let left_out = super::super::elide::find(&e, before, after, Some(&Default::default()), true)
                        .is_some_and(|(o, _)| !o.tests.is_empty());
                    counts.2 += usize::from(left_out);
                } else {
                    match (&whole, &got) {
                        // A body left out that does not parse (syntax newer than the
                        // grammar, an edit that breaks it) leaves the rest of the file
                        // scanned where the whole file is refused: the one difference
                        // allowed, and only where the error lies in a body left out.
                        (Err(e_whole), Ok(_)) => {
                            let why = "whole files refused outside every body left out";
                            assert!(check::error_left_out(e_whole, &e, before, after), "{what}: {why}: {e_whole:?}");
                        }
                        _ => assert_same(&what, &whole, &got, false),
                    }
                    let shares = super::super::elide::find(&e, before, after, Some(&Default::default()), false)
                        .is_some_and(|(o, _)| !o.shared.is_empty());
                    counts = (1, usize::from(shares), counts.2, got.map_or(0, |f| f.len()));
                }
            }
            counts
        })
        .reduce(|| (0, 0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2, a.3 + b.3));
    assert!(taken > 300, "elision took {taken} of {} pairs", pairs.len());
    assert!(shared > 100, "pairs with shared bodies left out: {shared}");
    assert!(tests > 100, "pairs with a test module left out: {tests}");
    assert!(found > 60, "the elided pairs gave findings to compare ({found})");
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
            format!("pub struct Q {{\n    pub limit: u8,\n}}\n\nfn f(r: f64) {{\n    assert!(r > 0.0);\n}}\n{helpers}"),
            format!("pub struct Q {{\n    pub limit: u64,\n}}\n\nfn f(r: f64) {{\n}}\n{helpers}"),
        ),
        (
            format!("{helpers}fn g() {{}}\n"),
            format!("//! doc\n\n\n#![forbid(unsafe_code)]\n{helpers}fn g() {{ unsafe {{ h() }} }}\n"),
        ),
        (format!("fn a() {{}}\n{helpers}"), format!("fn a() {{}}\nfn a() {{ let x = 1; }}\n{helpers}")),
    ];
    // Fixtures in syntax newer than the grammar are compared as the detector reads them: repaired.
    let fixed = |s: String| repair(&s).unwrap_or(s);
    pairs.extend(crate::widen::testing::pairs("rust-", &["rs"]).into_iter().map(|(_, b, a)| (fixed(b), fixed(a))));
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
            .filter(|(start, end, _)| unchanged.counterpart(*start, *end).is_some_and(|(s, e)| unchanged.holds(s, e)))
            .count();
    }
    assert!(reused > 20, "declarations were reused ({reused})");
}

/// Skipping blocks without triggers changes no inventory: every Rust fixture, both
/// versions, walked with and without skipping.
#[test]
fn skipping_trigger_free_blocks_changes_no_inventory() {
    let mut sources = vec![
        "pub fn helper(x: u32) -> u32 {\n    x.wrapping_mul(3) + 1\n}\nfn g() { if x { bail!(\"no\") } }\n".to_string(),
        "fn f() { let y = { fn inner(a: u8) { assert!(a > 0); } 1 }; }\nfn h(v: &[u8]) -> usize { v.len() }\n"
            .to_string(),
    ];
    for (_, before, after) in crate::widen::testing::pairs("rust-", &["rs"]) {
        sources.extend([before, after].into_iter().filter(|t| !t.is_empty()).map(|s| repair(&s).unwrap_or(s)));
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

fn rules(before: &str, after: &str) -> Vec<(String, RuleId, String, String)> {
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
    // A type name that starts with a non-ASCII character is no integer (it once
    // panicked: a byte index inside `é`).
    assert_eq!(w("u8", "é"), None);
    assert_eq!(w("é", "u8"), None);
    assert_eq!(w("u8", "ü16"), None);
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

/// Syntax newer than tree-sitter-rust 0.24: Rust 2024 `safe` items in an `unsafe
/// extern` block, and `#[cfg]` on a field of a struct pattern. Whole files (no window)
/// are read, and a widening beside them is still found.
#[test]
fn newer_syntax_is_repaired_not_skipped() {
    let extern_block = "unsafe extern \"C\" {\n    pub safe fn abs(x: i32) -> i32;\n    pub safe static ERRNO: i32;\n    pub unsafe fn strlen(p: *const u8) -> usize;\n}\n";
    let pattern = "pub fn first(p: P) -> u8 {\n    let P {\n        a,\n        #[cfg(feature = \"b\")]\n        b,\n        ..\n    } = p;\n    a\n}\n";
    for extra in [extern_block, pattern] {
        let before = format!("{extra}\npub struct P {{\n    pub a: u8,\n    pub b: u8,\n}}\n");
        let after = before.replace("pub a: u8", "pub a: u16");
        for window in [false, true] {
            let got = detect_with(&before, &after, window).unwrap_or_else(|e| panic!("{e}\n{before}"));
            assert_eq!(got.iter().map(|f| f.rule).collect::<Vec<_>>(), [INTEGER_WIDENED], "{before}");
        }
    }
    // The repair keeps lines and offsets, and leaves `unsafe fn`, `#[cfg(test)]` and
    // other attributes alone.
    let fixed = repair(extern_block).expect("repaired");
    assert_eq!(fixed.len(), extern_block.len());
    assert!(fixed.contains("pub      fn abs") && fixed.contains("pub unsafe fn strlen"), "{fixed}");
    assert_eq!(repair("mod m {\n    #[cfg(test)]\n    mod tests {}\n}\n"), None);
    assert_eq!(repair("fn f() { let unsafe_fn = 1; }"), None);
}

/// A newtype's unchecked constructor is judged against constructors the change does not
/// touch: the window and the bodies left out must give what whole files give.
#[test]
fn newtype_constructors_are_read_whatever_the_parse() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/rust-newtype-unchecked-constructor");
    let mut fired = 0;
    for case in std::fs::read_dir(dir).unwrap() {
        let case = case.unwrap().path();
        let before = std::fs::read_to_string(case.join("before.rs")).unwrap();
        let after = std::fs::read_to_string(case.join("after.rs")).unwrap();
        let whole = detect_with(&before, &after, false).unwrap();
        assert_eq!(detect_with(&before, &after, true).unwrap(), whole, "{}", case.display());
        fired += whole.iter().filter(|f| f.rule == RuleId::RustNewtypeUncheckedConstructor).count();
    }
    assert!(fired >= 2, "the fires cases report the rule ({fired})");
}
