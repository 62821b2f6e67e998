//! TypeScript and JavaScript yup schemas: what a `yup.object({ name: yup.string()
//! .max(64).required() })` declares for each property (`SignupForm.schema.name`),
//! compared between the two versions of a file: presence (`.required()`,
//! `.defined()`, null refused), bounds (`.min`, `.max`, `.length`, `.lessThan`,
//! `.moreThan`, `.positive`, `.negative`, `.integer`), string checks (`.email`,
//! `.url`, `.uuid`, `.matches`, `.datetime`) and custom `.test(...)`s, closed sets
//! (`.oneOf([...])`) and unknown keys or coercion refused (`.noUnknown()`,
//! `.strict()`).
//!
//! A pass of its own beside the TypeScript detector, run only where both versions
//! mention `yup` (a substring test) and import it. yup is known under the names it is
//! imported as (`import * as Yup from "yup"`, `import { string, object } from "yup"`).
//! Schemas are read wherever they stand ([`super::ts_decl::schemas`]): yup schemas
//! mostly live inside form components. Object properties come from `object({...})`
//! and `.shape({...})`, array items from `array(item)` and `.of(item)` (`X.tags.[]`).
//! The walk down a schema is a loop (an explicit stack of schemas, a loop down each
//! method chain).
//!
//! Not findings: a schema or property removed, a check or test rewritten (another in
//! its place: what it admits cannot be told), a bound given by a reference or a
//! constant changed (judged only when removed), narrowing and formatting.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::detector::Grammar;
use super::regex_weaker;
use super::syntax::{compact, field, kind_of, line, named_children, strip_parens, text};
use super::ts_decl::{self, Imports};
use super::zod::{Bound, bound_loosened, cap, elide, number_literal};
use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity, ts};

const BOTH: &[Language] = &[Language::Typescript, Language::Javascript];

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: RuleId::TsYupOptionalAdded,
        languages: BOTH,
        family: Family::Optionality,
        description: "A yup schema accepts a missing, null or (for strings) empty value it refused: `.required()` or `.defined()` removed, or `.optional()`, `.notRequired()`, `.nullable()` added.",
        severity: Severity::High,
        message: "{symbol} may now be absent: `{before}` became `{after}`",
        invariant: "Every validated value had this field set, so code reading it never saw it missing or null.",
    },
    RuleDef {
        id: RuleId::TsYupBoundLoosened,
        languages: BOTH,
        family: Family::NumericRange,
        description: "A yup bound admits more: `.min`/`.moreThan`/`.positive` lowered or removed, `.max`/`.lessThan`/`.negative` raised or removed, `.length(n)` removed, or `.integer()` removed.",
        severity: Severity::Medium,
        message: "{symbol} accepts values outside the old bounds: `{before}` became `{after}`",
        invariant: "Validated values, lengths or counts stayed within the declared bounds, which storage and consumers may rely on.",
    },
    RuleDef {
        id: RuleId::TsYupCheckRemoved,
        languages: BOTH,
        family: Family::CheckRemoved,
        description: "A yup check is removed with no other added to the schema: a string format (`.email()`, `.url()`, `.uuid()`, `.matches(...)`, `.datetime()`), a custom `.test(...)`, or `.notOneOf([...])`; or a `.matches(/.../)` pattern rewritten into a recognisably weaker one (an anchor dropped, a quantifier widened).",
        severity: Severity::Medium,
        message: "{symbol} is no longer checked by `{before}`: the schema became `{after}`",
        invariant: "Every validated value passed the removed check, so code using it could rely on its form.",
    },
    RuleDef {
        id: RuleId::TsYupEnumWidened,
        languages: BOTH,
        family: Family::EnumErasure,
        description: "A yup `.oneOf([...])` gains members or is removed (a set whose every member was renamed is not judged).",
        severity: Severity::High,
        message: "{symbol} accepts values outside its old set: `{before}` became `{after}`",
        invariant: "The validated value was one of a closed set, so every consumer could handle each case.",
    },
    RuleDef {
        id: RuleId::TsYupStrictRemoved,
        languages: BOTH,
        family: Family::MutabilityExposure,
        description: "A yup schema stops refusing what it refused: `.noUnknown()` removed from an object (unknown keys pass), or `.strict()` removed (input is coerced and transformed before it is checked).",
        severity: Severity::Medium,
        message: "{symbol} no longer refuses unknown keys or unconverted input: `{before}` became `{after}`",
        invariant: "Input with unknown keys or of another type was rejected, never passed through or silently converted.",
    },
];

/// Longest `before`/`after` rendering of a schema.
const MAX_RENDER: usize = 160;

/// yup's schema constructors: a call chain built on one of these is a schema.
const BASES: &[&str] =
    &["string", "number", "boolean", "bool", "date", "object", "array", "mixed", "tuple", "lazy", "ref"];

/// String checks, by method name.
const FORMATS: &[&str] = &["email", "url", "uuid", "matches", "datetime"];

/// Whether both versions may hold a yup schema (the pass's prefilter).
pub(crate) fn may_hold(before: &str, after: &str) -> bool {
    let finder = memchr::memmem::Finder::new(b"yup");
    finder.find(before.as_bytes()).is_some() && finder.find(after.as_bytes()).is_some()
}

/// The yup findings of a TypeScript or JavaScript file. A version that does not parse
/// gives none (the TypeScript detector reports the error).
pub(crate) fn detect(path: &str, before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    if !may_hold(before, after) {
        return Ok(Vec::new());
    }
    let lang = Grammar::grammar(&ts::ScriptDetector, path);
    let Some((old, new)) = super::syntax::both_versions(&lang, before, after, inventory) else {
        return Ok(Vec::new());
    };
    Ok(compare(&old, &new))
}

/// What one schema declares.
#[derive(Debug, Default, Clone)]
struct Slot {
    line: u32,
    /// The schema's chain on one line, object literals elided.
    text: String,
    base: String,
    /// `.required()` (for a string: not empty either).
    required: bool,
    /// Refuses `undefined` (`.defined()`, `.required()`).
    defined: bool,
    nullable: bool,
    lower: Option<Bound>,
    upper: Option<Bound>,
    integer: bool,
    /// String checks, `.test(...)`s and `.notOneOf(...)`: compacted text to shown text.
    checks: BTreeMap<String, String>,
    /// `.oneOf([...])`'s members, compacted, quotes unified.
    members: Option<BTreeSet<String>>,
    no_unknown: bool,
    strict: bool,
}

/// Every schema of one version and the property schemas under them, by symbol.
fn inventory(root: Node, src: &str) -> BTreeMap<String, Slot> {
    let mut out = BTreeMap::new();
    let imports = Imports::of(root, src, "yup");
    if imports.is_empty() {
        return out;
    }
    let mut stack: Vec<(String, Node)> =
        ts_decl::schemas(root, src, |n| chain(n, src, &imports).is_some()).into_iter().rev().collect();
    while let Some((symbol, node)) = stack.pop() {
        let Some((slot, children)) = read(node, src, &imports) else { continue };
        for (key, child) in children.into_iter().rev() {
            stack.push((format!("{symbol}.{key}"), child));
        }
        out.entry(symbol).or_insert(slot);
    }
    out
}

/// A yup schema's chain: the base constructor's name and arguments, and each method
/// call after it, innermost first (name, arguments, the call's text from the name on).
/// `None` when the chain is not built on a yup constructor.
#[allow(clippy::type_complexity, reason = "a local triple, named where it is read")]
fn chain<'t>(
    node: Node<'t>,
    src: &str,
    imports: &Imports,
) -> Option<(String, Node<'t>, Vec<(String, Node<'t>, String)>)> {
    let mut methods = Vec::new();
    let mut cur = strip_parens(node);
    loop {
        if kind_of(cur) != "call_expression" {
            return None;
        }
        let func = field(cur, "function")?;
        let args = field(cur, "arguments")?;
        if let Some(base) = imports.function(func, src) {
            if !BASES.contains(&base.as_str()) {
                return None;
            }
            methods.reverse();
            return Some((base, args, methods));
        }
        if kind_of(func) != "member_expression" {
            return None;
        }
        let property = field(func, "property")?;
        let part = elide(&src[property.start_byte()..cur.end_byte()]);
        methods.push((text(property, src).to_string(), args, format!(".{part}")));
        cur = strip_parens(field(func, "object")?);
    }
}

/// One schema: its slot and its property (or item) schemas by key.
fn read<'t>(node: Node<'t>, src: &str, imports: &Imports) -> Option<(Slot, Vec<(String, Node<'t>)>)> {
    let (base, args, methods) = chain(node, src, imports)?;
    let mut slot = Slot { line: line(node), base: base.clone(), ..Slot::default() };
    let mut children = Vec::new();
    let first = args.named_child(0);
    let mut rendered = match first.and_then(|a| ts_decl::properties(a, src)) {
        Some(props) => {
            children.extend(props);
            format!("{}({{…}})", base_callee(node, src))
        }
        None => {
            if base == "array"
                && let Some(item) = first
            {
                children.push(("[]".to_string(), item));
            }
            format!("{}{}", base_callee(node, src), elide(text(args, src)))
        }
    };
    for (name, args, part) in &methods {
        rendered.push_str(part);
        method(&mut slot, &mut children, name, *args, src);
    }
    slot.text = cap(&tidy(&rendered), MAX_RENDER);
    Some((slot, children))
}

/// A rendering without the spaces a multi-line chain leaves inside its brackets
/// (`.of( yup.object(…), )` reads `.of(yup.object(…))`).
pub(super) fn tidy(s: &str) -> String {
    s.replace(" .", ".").replace("( ", "(").replace(", )", ")").replace(",)", ")").replace(" )", ")")
}

/// The base constructor's callee as written (`yup.string`, `Yup.object`, `string`).
fn base_callee(node: Node, src: &str) -> String {
    let mut cur = strip_parens(node);
    // Down the chain to the innermost call: its callee.
    loop {
        let Some(func) = field(cur, "function") else { return String::new() };
        match field(func, "object").map(strip_parens) {
            Some(object) if kind_of(object) == "call_expression" => cur = object,
            _ => return compact(text(func, src)),
        }
    }
}

/// What one method of a chain declares, in the order the chain applies them.
fn method<'t>(slot: &mut Slot, children: &mut Vec<(String, Node<'t>)>, name: &str, args: Node<'t>, src: &str) {
    let first = args.named_child(0);
    let number = || first.map_or(f64::NAN, |a| number_literal(text(a, src)));
    let bound = |value, exclusive| Some(Bound { value, exclusive });
    match name {
        "required" => (slot.required, slot.defined, slot.nullable) = (true, true, false),
        "defined" => slot.defined = true,
        "nonNullable" => slot.nullable = false,
        "optional" => (slot.required, slot.defined) = (false, false),
        "notRequired" => (slot.required, slot.defined, slot.nullable) = (false, false, true),
        "nullable" => slot.nullable = true,
        "shape" => {
            if let Some(props) = first.and_then(|a| ts_decl::properties(a, src)) {
                children.extend(props);
            }
        }
        "of" => {
            if let Some(item) = first {
                children.push(("[]".to_string(), item));
            }
        }
        "min" => slot.lower = bound(number(), false),
        "moreThan" => slot.lower = bound(number(), true),
        "positive" => slot.lower = bound(0.0, true),
        "max" => slot.upper = bound(number(), false),
        "lessThan" => slot.upper = bound(number(), true),
        "negative" => slot.upper = bound(0.0, true),
        "length" => (slot.lower, slot.upper) = (bound(number(), false), bound(number(), false)),
        "integer" => slot.integer = true,
        "oneOf" => {
            slot.members = first
                .filter(|a| kind_of(*a) == "array")
                .map(|a| named_children(a).into_iter().map(|m| compact(text(m, src)).replace('\'', "\"")).collect());
        }
        "noUnknown" => slot.no_unknown = first.is_none_or(|a| text(a, src) != "false"),
        "strict" => slot.strict = first.is_none_or(|a| text(a, src) != "false"),
        _ if FORMATS.contains(&name) || name == "test" || name == "notOneOf" => {
            let key = format!("{name}{}", compact(text(args, src)));
            slot.checks.insert(key, elide(&format!(".{name}{}", text(args, src))));
        }
        _ => {}
    }
}

fn compare(old: &BTreeMap<String, Slot>, new: &BTreeMap<String, Slot>) -> Vec<RawFinding> {
    let mut out = Vec::new();
    for (symbol, a) in new {
        let Some(b) = old.get(symbol) else { continue };
        let mut push = |rule, before: &str, after: &str| {
            out.push(RawFinding {
                line: a.line,
                rule,
                symbol: symbol.clone(),
                before: before.to_string(),
                after: after.to_string(),
                in_test: false,
            });
        };
        // A `mixed` base admits anything already; a base changed is a rewrite.
        if (b.required && !a.required) || (b.defined && !a.defined) || (a.nullable && !b.nullable) {
            push(RuleId::TsYupOptionalAdded, &b.text, &a.text);
        }
        if b.base != a.base {
            continue;
        }
        let lower = bound_loosened(&b.lower, &a.lower, true);
        if lower || bound_loosened(&b.upper, &a.upper, false) || (b.integer && !a.integer) {
            push(RuleId::TsYupBoundLoosened, &b.text, &a.text);
        }
        let added = a.checks.keys().any(|k| !b.checks.contains_key(k));
        if let (Some((_, gone)), false) = (b.checks.iter().find(|(k, _)| !a.checks.contains_key(*k)), added) {
            push(RuleId::TsYupCheckRemoved, gone, &a.text);
        }
        // A pattern rewritten into a recognisably weaker one ([`regex_weaker`]).
        let fresh: Vec<(&String, &String)> = a.checks.iter().filter(|(k, _)| !b.checks.contains_key(*k)).collect();
        let weakened = b.checks.iter().filter(|(k, _)| !a.checks.contains_key(*k)).find_map(|(ok, shown)| {
            fresh.iter().find(|(nk, _)| regex_weaker::weakened(ok, nk, "matches")).map(|(_, new)| (shown, *new))
        });
        if let (Some((gone, now)), true) = (weakened, added) {
            push(RuleId::TsYupCheckRemoved, gone, now);
        }
        let widened = match (&b.members, &a.members) {
            // Every member replaced: a renamed set, not judged.
            (Some(o), Some(n)) => !n.is_subset(o) && !n.is_disjoint(o),
            (Some(_), None) => true,
            _ => false,
        };
        if widened {
            push(RuleId::TsYupEnumWidened, &b.text, &a.text);
        }
        if (b.no_unknown && !a.no_unknown) || (b.strict && !a.strict) {
            push(RuleId::TsYupStrictRemoved, &b.text, &a.text);
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(before: &str, after: &str) -> Vec<(RuleId, String)> {
        detect("src/form.tsx", before, after).unwrap().into_iter().map(|f| (f.rule, f.symbol)).collect()
    }

    const HEAD: &str = "import * as Yup from \"yup\";\n";

    #[test]
    fn each_loosening_is_found_on_its_property() {
        let before = format!(
            "{HEAD}export function Signup() {{\n  const schema = Yup.object().shape({{\n    name: Yup.string().max(64).required(),\n    email: Yup.string().email().required(),\n    role: Yup.string().oneOf([\"admin\", \"user\"]),\n    age: Yup.number().integer().positive(),\n    tags: Yup.array().of(Yup.string().min(2)),\n  }}).noUnknown();\n  return schema;\n}}\n"
        );
        let after = format!(
            "{HEAD}export function Signup() {{\n  const schema = Yup.object().shape({{\n    name: Yup.string().max(256).required(),\n    email: Yup.string().required(),\n    role: Yup.string().oneOf([\"admin\", \"user\", \"guest\"]),\n    age: Yup.number().nullable(),\n    tags: Yup.array().of(Yup.string()),\n  }});\n  return schema;\n}}\n"
        );
        let want = [
            (RuleId::TsYupStrictRemoved, "Signup.schema"),
            (RuleId::TsYupBoundLoosened, "Signup.schema.age"),
            (RuleId::TsYupOptionalAdded, "Signup.schema.age"),
            (RuleId::TsYupCheckRemoved, "Signup.schema.email"),
            (RuleId::TsYupBoundLoosened, "Signup.schema.name"),
            (RuleId::TsYupEnumWidened, "Signup.schema.role"),
            (RuleId::TsYupBoundLoosened, "Signup.schema.tags.[]"),
        ];
        crate::widen::testing::assert_found(&found(&before, &after), &want);
    }

    #[test]
    fn named_imports_and_required_dropped_are_read() {
        let before =
            "import { object, string } from 'yup';\nconst Login = object({ user: string().required('needed') });\n";
        let after = "import { object, string } from 'yup';\nconst Login = object({ user: string().optional() });\n";
        assert_eq!(found(before, after), [(RuleId::TsYupOptionalAdded, "Login.user".to_string())]);
    }

    #[test]
    fn narrowing_rewording_and_other_libraries_are_not_findings() {
        let before = format!(
            "{HEAD}const S = Yup.object({{ a: Yup.string().max(64), b: Yup.string().matches(/^a+$/), c: Yup.mixed().oneOf([\"x\", \"y\"]) }});\n"
        );
        let after = format!(
            "{HEAD}const S = Yup.object({{\n  a: Yup.string().max(32).required(),\n  b: Yup.string().matches(/^[a-z]+$/, \"letters\"),\n  c: Yup.mixed().oneOf([\"x\"]),\n}});\n"
        );
        assert_eq!(found(&before, &after), []);
        // `yup` mentioned, never imported: another library's `string().max()`.
        let other = |n| format!("// not yup\nimport {{ string }} from \"./mine\";\nconst S = string().max({n});\n");
        assert_eq!(found(&other(5), &other(9)), []);
    }

    #[test]
    fn deep_nesting_is_walked_without_recursion() {
        let nested = |leaf: &str| {
            let mut s = String::from(leaf);
            for _ in 0..3000 {
                s = format!("Yup.object({{ a: {s} }})");
            }
            format!("{HEAD}const Deep = {s};\n")
        };
        let _ = detect("src/deep.ts", &nested("Yup.string().max(1)"), &nested("Yup.string()"));
    }
}
