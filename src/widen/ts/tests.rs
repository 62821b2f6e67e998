//! Unit tests of the TypeScript and JavaScript detector.

use super::*;
use crate::widen::DetectError;

fn detect(path: &str, before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    detect_with(path, before, after, true)
}

fn detect_with(path: &str, before: &str, after: &str, window: bool) -> Result<Vec<RawFinding>, DetectError> {
    crate::widen::detector::run(Language::Typescript, path, before, after, window)
}

fn windowed(_lang: &tree_sitter::Language, before: &str, after: &str) -> Option<(Inventory, Inventory)> {
    crate::widen::detector::windowed(&ScriptDetector, window::Lexer::Script, "src/a.ts", before, after)
}

fn side_by_side(
    _lang: &tree_sitter::Language,
    path: &str,
    before: &str,
    after: &str,
) -> Result<(Inventory, Inventory), DetectError> {
    crate::widen::detector::side_by_side(&ScriptDetector, path, before, after)
}

fn incremental(
    _lang: tree_sitter::Language,
    path: &str,
    before: &str,
    after: &str,
) -> Result<(Inventory, Inventory), DetectError> {
    crate::widen::detector::incremental(&ScriptDetector, path, before, after)
}

/// Skipping trigger-free function bodies changes no inventory: every TypeScript and
/// JavaScript fixture, both versions, walked with and without skipping.
#[test]
fn skipping_trigger_free_bodies_changes_no_inventory() {
    let mut sources = vec![
        (
            "ts".to_string(),
            "export function h(x: number): number {\n  return x * 3 + 1;\n}\nconst k = (a: number) => a + 1;\n"
                .to_string(),
        ),
        (
            "ts".to_string(),
            "function f(x: number) {\n  let o: { a?: string } = {};\n  type T = 'a' | 'b';\n  return x;\n}\n"
                .to_string(),
        ),
        (
            "js".to_string(),
            "function g(a) {\n  return a.b.c;\n}\nfunction t(a) { if (!a) throw new Error('x'); }\n".to_string(),
        ),
    ];
    for (ext, before, after) in crate::widen::testing::pairs("ts-", EXTS) {
        sources.extend([before, after].into_iter().filter(|t| !t.is_empty()).map(|t| (ext.clone(), t)));
    }
    assert!(sources.len() > 30, "the TypeScript fixtures were read ({})", sources.len());
    let mut skipped = 0;
    for (ext, src) in &sources {
        let path = format!("src/a.{ext}");
        let lang: tree_sitter::Language = match (Language::for_path(&path), ext.as_str()) {
            (Some(Language::Javascript), _) => tree_sitter_javascript::LANGUAGE.into(),
            (_, "tsx") => tree_sitter_typescript::LANGUAGE_TSX.into(),
            _ => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        };
        let tree = super::super::syntax::parse(lang, src, "new", &path).unwrap();
        let (pruned, n) = Inventory::walk(tree.root_node(), src, true);
        let (full, none) = Inventory::walk(tree.root_node(), src, false);
        assert_eq!(none, 0);
        assert_eq!(pruned, full, "{src}");
        skipped += n;
    }
    assert!(skipped >= 3, "trigger-free bodies are skipped ({skipped})");
}

/// A rewritten file parsed side by side gives the inventories (errors included) of
/// the incremental path: the corpus module repeated past the size where that
/// starts, with edits spread over the whole file.
#[test]
fn side_by_side_equals_incremental() {
    use super::super::window::check;
    let lang: tree_sitter::Language = tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into();
    let mut checked = 0;
    for (name, text) in check::corpus(&["tests/fixtures/window"], &[".ts"]) {
        let text = text.repeat(5);
        let spread = [text.replace(": ", ":  "), text.replace("throw ", "void "), text.replace("{", "{ (")];
        for after in spread.into_iter().filter(|a| super::super::syntax::rewritten(&text, a)) {
            for (b, a) in [(text.as_str(), after.as_str()), (after.as_str(), text.as_str())] {
                check::assert_same(
                    &name,
                    &side_by_side(&lang, "c.ts", b, a),
                    &incremental(lang.clone(), "c.ts", b, a),
                    true,
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 6, "every edit compared both ways");
}

/// The change window gives exactly the findings of whole files: over every
/// TypeScript/JavaScript fixture and a corpus module holding every kind of
/// statement, with lines deleted and types, modifiers and checks changed, both ways.
#[test]
fn window_gives_the_findings_of_whole_files() {
    use super::super::window::check;
    let edits: &[(&str, &str)] = &[
        ("?:", ":"),
        (": string", ": any"),
        (": number", ": number | null"),
        (": Role", ": string"),
        (": Level", ": string"),
        ("readonly ", ""),
        ("private ", ""),
        ("throw ", "void "),
        ("invariant(", "void ("),
        ("assert(", "void ("),
        ("validate(account)", "void account"),
        ("enum Role", "enum Rank"),
        ("Role", "Rank"),
        ("\"dark\" | \"light\"", "string"),
        ("fontSize: number", "fontSize?: number"),
        ("Array<number>", "Array<number | undefined>"),
        ("if (low > high) throw", "if (low > high) void"),
        ("if (step <= 0) throw", "if (step <= 0) void"),
        ("private count", "count"),
        ("y: number }", "y?: number }"),
    ];
    let mut pairs = Vec::new();
    for (name, text) in check::corpus(&["fixtures", "tests/fixtures/window"], &[".ts", ".js"]) {
        for after in check::edits(&text, edits, 40) {
            pairs.push((name.clone(), after.clone(), text.clone()));
            pairs.push((name.clone(), text.clone(), after));
        }
    }
    let detect = |b: &str, a: &str, w: bool| detect_with("src/corpus.ts", b, a, w);
    let lang: tree_sitter::Language = tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into();
    let (taken, found) = check::same_with_and_without(&pairs, &detect, &|b, a| windowed(&lang, b, a).is_some(), None);
    assert!(taken > 120, "the window took {taken} of {} pairs", pairs.len());
    assert!(found >= 16, "the windowed pairs gave findings to compare ({found})");
}

/// Leaving trigger-free function bodies out of the parse ([`crate::widen::elide`])
/// gives exactly the findings of whole files: every TypeScript/JavaScript fixture and
/// the corpus module, with the window test's edits both ways, plus files whose bodies
/// only return arithmetic (the kind left out) beside a check that is removed, and
/// bodies the lexer could take wrongly (a type literal in a return type, a block
/// after a call, a comparison before parentheses), which the check of the tree must
/// catch.
#[test]
fn elided_bodies_give_the_findings_of_whole_files() {
    use super::super::detector::{Grammar, elided};
    use super::super::window::check::{self, assert_same};
    use rayon::prelude::*;
    let edits: &[(&str, &str)] = &[
        ("?:", ":"),
        (": string", ": any"),
        (": number", ": number | null"),
        ("readonly ", ""),
        ("throw ", "void "),
        ("invariant(", "void ("),
        ("assert(", "void ("),
        ("if (low > high) throw", "if (low > high) void"),
    ];
    let helpers: String = (0..8)
        .map(|k| format!("export function helper{k}(x: number): number {{\n  return (x ?? 0) * {k} + 1;\n}}\n\n"))
        .collect();
    let tricky = "export function typed(a: number): { lo: number } {\n  return { lo: a };\n}\n\
                  export function union(a: number): string | { b: number } {\n  return (a > 1 ? 'x' : 'y');\n}\n\
                  export const arrow = (x: number): number => {\n  return (x);\n};\n\
                  export class K {\n  get v(): number {\n    return (1);\n  }\n  m<T>(t: T): T {\n    return (t);\n  }\n}\n\
                  declare function over(a: number): void;\nexport const cmp = a < b > (c);\n";
    let mut pairs = vec![
        (
            "a check removed beside arithmetic bodies".to_string(),
            format!(
                "export function set(r: number) {{\n  if (r > 1) throw new Error('r');\n  return r;\n}}\n{helpers}{tricky}"
            ),
            format!("export function set(r: number | null) {{\n  return r;\n}}\n{helpers}{tricky}"),
        ),
        (
            "arithmetic bodies changed".to_string(),
            format!("export interface U {{\n  id: string;\n}}\n{helpers}{tricky}"),
            format!("export interface U {{\n  id?: string;\n}}\n{}{tricky}", helpers.replace("* ", "* 7 + ")),
        ),
    ];
    for (name, b, a) in pairs.clone() {
        pairs.push((format!("{name}, reversed"), a, b));
    }
    for (name, text) in check::corpus(&["fixtures", "tests/fixtures/window"], &[".ts", ".js"]) {
        for after in check::edits(&text, edits, 40) {
            pairs.push((name.clone(), after.clone(), text.clone()));
            pairs.push((name.clone(), text.clone(), after));
        }
    }
    let path = "src/corpus.ts";
    let e = ScriptDetector.elide(path).expect("scripts elide bodies");
    assert!(ScriptDetector.elide("src/view.tsx").is_none(), "JSX is parsed whole");
    let (taken, found) = pairs
        .par_iter()
        .map(|(name, before, after)| {
            let Some((old, new, _)) = elided(&ScriptDetector, &e, path, before, after, false, None) else {
                return (0, 0);
            };
            let got = Ok(crate::widen::syntax::finish(ScriptDetector.compare(&old, &new)));
            let whole = detect_with(path, before, after, false);
            assert_same(&format!("{name}, whole files against elided bodies"), &whole, &got, false);
            (1, got.map_or(0, |f| f.len()))
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    assert!(taken >= 4, "elision took {taken} of {} pairs", pairs.len());
    assert!(found >= 4, "the elided pairs gave findings to compare ({found})");
    // A block after a call, which the lexer takes for a body: the tree says otherwise,
    // and the file is parsed whole.
    let fooled = format!("{helpers}foo(x)\n{{ bar }}\n");
    assert!(script_bodies_of(&fooled).contains(&"{ bar }"), "the lexer is fooled");
    assert!(elided(&ScriptDetector, &e, path, &fooled, &fooled.replace("* 1", "* 2"), false, None).is_none());
}

fn script_bodies_of(src: &str) -> Vec<&str> {
    super::super::elide::script_bodies(src).unwrap().fns.into_iter().map(|r| &src[r]).collect()
}

/// The script body lexer finds function bodies, and the tree check refuses what it
/// takes wrongly.
#[test]
fn script_bodies_are_found_and_checked() {
    use super::super::elide::script_bodies;
    let src = "function f(a: number): Promise<{ x: 1 }> { return (a); }\nconst g = (x) => { x };\n\
               class C { m(): number { return (1); } }\nif (a) { b }\nfoo(x)\n{ bar }\n";
    let found: Vec<&str> = script_bodies(src).unwrap().fns.into_iter().map(|r| &src[r]).collect();
    assert_eq!(found, ["{ return (a); }", "{ x }", "{ return (1); }", "{ bar }"]);
    assert!(script_bodies("const r = a / b;").is_none(), "a division does not lex for certain");
}

/// Taking unchanged statements from the new version's walk gives exactly the
/// inventories of two full walks, lines included: every TypeScript/JavaScript
/// fixture, and edits that shift the statements after them either way.
#[test]
fn reused_statements_give_the_full_inventories() {
    let helpers = "export function h(x: number): number {\n  return x * 3;\n}\n\nexport interface U { id: string; k?: 'a' | 'b' }\nfunction t(a) { if (!a) throw new Error('x'); }\n".repeat(3);
    let mut pairs = vec![
        (
            "ts".to_string(),
            format!(
                "export interface Q {{\n  id: string;\n}}\n\nfunction f(r) {{\n  invariant(r > 0, 'r');\n}}\n{helpers}"
            ),
            format!("export interface Q {{\n  id?: string;\n}}\n\nfunction f(r) {{\n}}\n{helpers}"),
        ),
        (
            "ts".to_string(),
            format!("{helpers}enum E {{ A }}\n"),
            format!("// one\n// two\n\n{helpers}enum E {{ A, B }}\n"),
        ),
        (
            "ts".to_string(),
            format!("function a() {{}}\n{helpers}"),
            format!("function a() {{}}\nfunction a(x?: number) {{}}\n{helpers}"),
        ),
    ];
    pairs.extend(crate::widen::testing::pairs("ts-", EXTS));
    let mut reused = 0;
    for (ext, before, after) in &pairs {
        if before.is_empty() {
            continue;
        }
        let path = format!("src/a.{ext}");
        let lang: tree_sitter::Language = match (Language::for_path(&path), ext.as_str()) {
            (Some(Language::Javascript), _) => tree_sitter_javascript::LANGUAGE.into(),
            (_, "tsx") => tree_sitter_typescript::LANGUAGE_TSX.into(),
            _ => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        };
        let (b_tree, a_tree, unchanged) =
            super::super::syntax::parse_pair_tracking(lang, before, after, &path).unwrap();
        let (b_root, a_root) = (b_tree.root_node(), a_tree.root_node());
        let full = Inventory::build_pair(b_root, before, a_root, after, None);
        let pair = Inventory::build_pair(b_root, before, a_root, after, Some(&unchanged));
        assert_eq!(pair, full, "{before}\n---\n{after}");
        reused += named_children(b_root)
            .iter()
            .filter(|n| unchanged.counterpart(n.start_byte(), n.end_byte()).is_some_and(|(s, e)| unchanged.holds(s, e)))
            .count();
    }
    assert!(reused > 20, "statements were reused ({reused})");
}

/// Every extension the fixtures use.
const EXTS: &[&str] = &["ts", "tsx", "js", "mjs", "cjs", "jsx", "mts", "cts"];

fn run(before: &str, after: &str) -> Vec<RawFinding> {
    detect("src/a.ts", before, after).expect("parses")
}

#[test]
fn syntax_error_is_a_detect_error() {
    let err = detect("src/a.ts", "let x = 1;", "function (").unwrap_err();
    assert!(err.0.contains("new version"), "{err}");
}

#[test]
fn checks_in_test_callbacks_are_marked() {
    let before = "describe('q', () => {\n  it('works', () => {\n    invariant(x > 0);\n  });\n});\n";
    let after = "describe('q', () => {\n  it('works', () => {\n    run();\n  });\n});\n";
    let got = run(before, after);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].symbol, "q.works");
    assert!(got[0].in_test);
}

#[test]
fn javascript_guards_are_seen() {
    let before = "function f(x) {\n  if (x < 0) throw new Error('neg');\n  return x;\n}\n";
    let after = "function f(x) {\n  return x;\n}\n";
    let got = detect("lib/a.js", before, after).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].rule, RuleId::TsThrowGuardRemoved);
    assert_eq!(got[0].before, "if (x < 0) throw new Error('neg')");
}

#[test]
fn tsx_parses_with_the_tsx_grammar() {
    let before = "interface P { n: number }\nconst C = (p: P) => <div>{p.n}</div>;\n";
    let after = "interface P { n?: number }\nconst C = (p: P) => <div>{p.n}</div>;\n";
    let got = detect("src/c.tsx", before, after).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].rule, RuleId::TsPropertyMadeOptional);
}
