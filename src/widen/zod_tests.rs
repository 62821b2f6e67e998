//! Tests of the zod pass.

use super::*;

fn found(before: &str, after: &str) -> Vec<(RuleId, String)> {
    detect("src/schema.ts", before, after).unwrap().into_iter().map(|f| (f.rule, f.symbol)).collect()
}

const HEAD: &str = "import { z } from \"zod\";\n";

#[test]
fn each_loosening_is_found_on_its_property() {
    let before = format!(
        "{HEAD}export const User = z.object({{\n  name: z.string().min(1).max(64),\n  email: z.string().email(),\n  role: z.enum([\"admin\", \"user\"]),\n  age: z.number().int().positive(),\n}}).strict();\n"
    );
    let after = format!(
        "{HEAD}export const User = z.object({{\n  name: z.string().min(1).max(256).optional(),\n  email: z.string(),\n  role: z.enum([\"admin\", \"user\", \"guest\"]),\n  age: z.number().nonnegative(),\n}}).passthrough();\n"
    );
    let got = found(&before, &after);
    let want = [
        (RuleId::TsZodStrictRemoved, "User"),
        (RuleId::TsZodBoundLoosened, "User.age"),
        (RuleId::TsZodFormatRemoved, "User.email"),
        (RuleId::TsZodOptionalAdded, "User.name"),
        (RuleId::TsZodBoundLoosened, "User.name"),
        (RuleId::TsZodEnumWidened, "User.role"),
    ];
    crate::widen::testing::assert_found(&got, &want);
}

#[test]
fn narrowing_and_rewording_are_not_findings() {
    let before = format!(
        "{HEAD}const S = z.object({{ a: z.string().max(64).optional(), b: z.enum([\"x\", \"y\"]), c: z.string().regex(/^a+$/) }}).refine((v) => v.a !== v.c);\n"
    );
    let after = format!(
        "{HEAD}const S = z.object({{\n  a: z.string().max(32),\n  b: z.enum([\"x\"]),\n  c: z.string().regex(/^a*$/),\n}}).refine((v) => v.a !== v.c, {{ message: \"same\" }});\n"
    );
    assert_eq!(found(&before, &after), []);
}

#[test]
fn deep_nesting_is_walked_without_recursion() {
    let depth = 3000;
    let nested = |leaf: &str| {
        let mut s = String::from(leaf);
        for _ in 0..depth {
            s = format!("z.object({{ a: {s} }})");
        }
        format!("{HEAD}const Deep = {s};\n")
    };
    // The parse itself may refuse a tree this deep; the walk must not overflow.
    let _ = detect("src/deep.ts", &nested("z.string().max(1)"), &nested("z.string()"));
}

#[test]
fn files_without_zod_are_not_parsed() {
    assert!(!may_hold("const a = 1;", "const a = 2;"));
    assert_eq!(found("const S = z.string().max(1);", "const S = z.string();"), []);
}
/// Unrelated declarations around a version, so that the edit's window is a small
/// part of the file (the window is not used where it would save little).
fn padded(src: &str) -> String {
    let filler: String = (0..40)
        .map(|i| format!("export function helper{i}(x: number): number {{\n  return x * {i};\n}}\n\n"))
        .collect();
    format!("{filler}{src}\n{filler}")
}

/// The window's answer is the whole parse's, on every zod fixture (padded so that
/// the window applies) and on edits made to test its premises: the import that
/// names zod changed, a schema outside the window referring to one inside, and a
/// name declared both inside and outside (refused, parsed whole).
#[test]
fn the_window_gives_the_whole_parses_findings() {
    let mut cases: Vec<(String, String)> = crate::widen::testing::pairs("ts-zod", &["ts"])
        .into_iter()
        .filter(|(_, b, a)| !b.is_empty() && !a.is_empty())
        .map(|(_, b, a)| (padded(&b), padded(&a)))
        .collect();
    assert!(cases.len() > 15, "zod fixtures read: {}", cases.len());
    let alias = "import * as v from \"zod\";\n";
    cases.push((
        padded(&format!("{alias}export const A = v.string().max(5);\nexport const B = A.optional();\n")),
        padded(&format!("{alias}export const A = v.string().max(9);\nexport const B = A.optional();\n")),
    ));
    cases.push((
        padded("import { z as zz } from \"zod\";\nexport const A = zz.string().max(5);\n"),
        padded("import { z as yy } from \"zod\";\nexport const A = yy.string();\n"),
    ));
    cases.push((
        padded("import { z } from \"zod\";\nconst A = z.string().max(5);\nexport function f() {}\nconst A = z.number();\n"),
        padded("import { z } from \"zod\";\nconst A = z.string().max(5);\nexport function f() { return 1; }\nconst A = z.string();\n"),
    ));
    let mut windowed_cases = 0;
    for (before, after) in &cases {
        let lang = Grammar::grammar(&ts::ScriptDetector, "src/a.ts");
        let whole = detect_with("src/a.ts", before, after, false).unwrap();
        let through = detect_with("src/a.ts", before, after, true).unwrap();
        assert_eq!(through, whole, "before:\n{before}\nafter:\n{after}");
        windowed_cases += usize::from(windowed(&lang, "src/a.ts", before, after).is_some());
    }
    // Most cases take the window (a fixture whose versions do not parse, or the
    // duplicate name, do not).
    assert!(windowed_cases * 4 >= cases.len() * 3, "{windowed_cases} of {} windowed", cases.len());
    let dup = cases.last().unwrap();
    let lang = Grammar::grammar(&ts::ScriptDetector, "src/a.ts");
    assert_eq!(windowed(&lang, "src/a.ts", &dup.0, &dup.1), None, "a name declared twice is parsed whole");
    let renamed = &cases[cases.len() - 2];
    assert_eq!(
        detect_with("src/a.ts", &renamed.0, &renamed.1, true).unwrap().iter().map(|f| f.rule).collect::<Vec<_>>(),
        [RuleId::TsZodBoundLoosened],
        "zod's new import name is read with the window"
    );
}

/// A closed set moved into a schema declared away from the edit: the window leaves the
/// named schema out, so it is refused and the whole parse reads the set's members.
#[test]
fn a_set_named_outside_the_window_is_read_whole() {
    let between: String = (0..40)
        .map(|i| format!("export function helper{i}(x: number): number {{\n  return x * {i};\n}}\n\n"))
        .collect();
    let version = |origin: &str| {
        padded(&format!(
            "{HEAD}export const Origin = z.enum([\"a\", \"b\", \"c\"]);\n\n{between}export const Hook = z.object({{ origin: {origin} }});\n"
        ))
    };
    let (before, after) = (version("z.enum([\"a\", \"b\"])"), version("Origin"));
    let whole = detect_with("src/a.ts", &before, &after, false).unwrap();
    assert_eq!(whole.iter().map(|f| f.rule).collect::<Vec<_>>(), [RuleId::TsZodEnumWidened]);
    assert_eq!(detect_with("src/a.ts", &before, &after, true).unwrap(), whole);
}
