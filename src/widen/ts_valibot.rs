//! TypeScript and JavaScript valibot schemas: what `v.object({ email: v.pipe(v.string(),
//! v.email(), v.maxLength(64)) })` declares for each property (`Signup.email`), compared
//! between the two versions of a file: wrappers that admit a missing or null value
//! (`v.optional`, `v.nullable`, `v.nullish`, `v.undefinedable`, `v.exactOptional`,
//! `v.partial`), the bounds of a pipe's actions (`v.minLength`, `v.maxValue`,
//! `v.integer`...), its other validating actions (`v.email`, `v.regex`, `v.check`...),
//! closed sets (`v.picklist`, `v.literal`, `v.union`) and unknown keys refused
//! (`v.strictObject`, `v.strictTuple`).
//!
//! A pass of its own beside the TypeScript detector, run only where both versions
//! mention `valibot` (a substring test: it is imported from the module of that name,
//! under any name: `import * as v from "valibot"`, `import { object, pipe } from
//! "valibot"`). Schemas are read wherever they stand ([`super::ts_decl::schemas`]).
//! Actions are read from `v.pipe(schema, ...actions)` and, as valibot before 0.31 wrote
//! them, from an array of actions given to the schema (`v.string([v.email()])`). The
//! walk down a schema is a loop (an explicit stack of schemas, a loop through its
//! wrappers and pipes).
//!
//! Not findings: a schema or property removed, an action rewritten (another
//! validating action in its place: what it admits cannot be told), a bound given by a
//! constant changed (judged only when removed), transformations (`v.trim()`,
//! `v.transform(...)`, `v.toLowerCase()`...) and metadata added or removed, narrowing
//! and formatting.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::detector::Grammar;
use super::regex_weaker;
use super::syntax::{collapse_whitespace, compact, field, kind_of, line, named_children, strip_parens, text};
use super::ts_decl::{self, Imports};
use super::zod::{Bound, bound_loosened, cap, elide, number_literal};
use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity, ts};

const BOTH: &[Language] = &[Language::Typescript, Language::Javascript];

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: RuleId::TsValibotOptionalAdded,
        languages: BOTH,
        family: Family::Optionality,
        description: "A valibot schema accepts a missing or null value it refused: wrapped in `v.optional`, `v.nullable`, `v.nullish`, `v.undefinedable` or `v.exactOptional`, or an object wrapped in `v.partial`.",
        severity: Severity::High,
        message: "{symbol} may now be absent: `{before}` became `{after}`",
        invariant: "Every parsed value held this field, so code reading the parsed data met neither a missing value nor null.",
    },
    RuleDef {
        id: RuleId::TsValibotBoundLoosened,
        languages: BOTH,
        family: Family::NumericRange,
        description: "A valibot bound admits more: `v.minLength`/`v.minValue`/`v.gtValue`/`v.minSize`/`v.nonEmpty`... lowered or removed, `v.maxLength`/`v.maxValue`/`v.ltValue`/`v.maxSize`... raised or removed, `v.length`/`v.value`/`v.size` removed, or `v.integer()`, `v.finite()`, `v.safeInteger()`, `v.multipleOf(n)` removed.",
        severity: Severity::Medium,
        message: "{symbol} accepts values outside the old bounds: `{before}` became `{after}`",
        invariant: "Parsed values, lengths or counts stayed within the declared bounds, which storage and consumers may rely on.",
    },
    RuleDef {
        id: RuleId::TsValibotCheckRemoved,
        languages: BOTH,
        family: Family::CheckRemoved,
        description: "A validating action (`v.email()`, `v.url()`, `v.uuid()`, `v.regex(...)`, `v.isoDate()`, `v.startsWith(...)`, `v.check(...)`...) is removed from a valibot pipe with no other validating action added to it, or a `v.regex(/.../)` pattern is rewritten into a recognisably weaker one (an anchor dropped, a quantifier widened).",
        severity: Severity::Medium,
        message: "{symbol} is no longer checked by `{before}`: the schema became `{after}`",
        invariant: "Every parsed value passed the removed action, so code using it could rely on its form.",
    },
    RuleDef {
        id: RuleId::TsValibotEnumWidened,
        languages: BOTH,
        family: Family::EnumErasure,
        description: "A valibot closed set admits more: `v.picklist([...])`, `v.literal(...)` or `v.union([...])` gains a member (a set whose every member was renamed is not judged), or becomes `v.string()`, `v.number()`, `v.any()` or `v.unknown()`.",
        severity: Severity::High,
        message: "{symbol} accepts values outside its old set: `{before}` became `{after}`",
        invariant: "The parsed value was one of a closed set, so every consumer could handle each case.",
    },
    RuleDef {
        id: RuleId::TsValibotStrictRemoved,
        languages: BOTH,
        family: Family::MutabilityExposure,
        description: "A valibot object or tuple stops refusing unknown entries: `v.strictObject` made `v.object`, `v.looseObject` or `v.objectWithRest`, or `v.strictTuple` made `v.tuple` or `v.looseTuple`.",
        severity: Severity::Medium,
        message: "{symbol} no longer refuses unknown keys: `{before}` became `{after}`",
        invariant: "Input with entries the schema does not name was rejected, so misspelt or unexpected fields never passed silently.",
    },
];

/// Longest `before`/`after` rendering of a schema.
const MAX_RENDER: usize = 160;

/// Wrappers around a schema: each admits (or refuses again) a missing or null value.
const WRAPPERS: &[&str] = &[
    "optional",
    "undefinedable",
    "exactOptional",
    "nullable",
    "nullish",
    "nonOptional",
    "nonNullable",
    "nonNullish",
    "partial",
    "required",
    "pipe",
    "pipeAsync",
    "optionalAsync",
    "nullableAsync",
    "nullishAsync",
];

/// Schema constructors: a call of one of these (or of a wrapper) is a schema.
const BASES: &[&str] = &[
    "string",
    "number",
    "bigint",
    "boolean",
    "date",
    "object",
    "strictObject",
    "looseObject",
    "objectWithRest",
    "array",
    "tuple",
    "strictTuple",
    "looseTuple",
    "record",
    "picklist",
    "literal",
    "union",
    "variant",
    "enum",
    "any",
    "unknown",
    "file",
    "blob",
];

/// Bound actions: the measure each bounds, whether it is a lower bound, and whether
/// the bound excludes its value. `length`, `value`, `size` are both bounds at once.
const BOUNDS: &[(&str, &str, Side)] = &[
    ("minLength", "length", Side::Lower),
    ("maxLength", "length", Side::Upper),
    ("length", "length", Side::Both),
    ("nonEmpty", "length", Side::NonEmpty),
    ("minValue", "value", Side::Lower),
    ("maxValue", "value", Side::Upper),
    ("gtValue", "value", Side::Above),
    ("ltValue", "value", Side::Below),
    ("value", "value", Side::Both),
    ("minSize", "size", Side::Lower),
    ("maxSize", "size", Side::Upper),
    ("size", "size", Side::Both),
    ("minWords", "words", Side::Lower),
    ("maxWords", "words", Side::Upper),
    ("minBytes", "bytes", Side::Lower),
    ("maxBytes", "bytes", Side::Upper),
    ("minGraphemes", "graphemes", Side::Lower),
    ("maxGraphemes", "graphemes", Side::Upper),
    ("minEntries", "entries", Side::Lower),
    ("maxEntries", "entries", Side::Upper),
];

#[derive(Debug, Clone, Copy)]
enum Side {
    Lower,
    Upper,
    Both,
    NonEmpty,
    Above,
    Below,
}

/// Actions that restrict the kind of number: removed, more numbers pass.
const FLAGS: &[&str] = &["integer", "finite", "safeInteger", "multipleOf"];

/// Actions that transform or describe, never refuse (besides `to...` conversions).
const NOT_CHECKS: &[&str] = &[
    "transform",
    "rawTransform",
    "trim",
    "trimStart",
    "trimEnd",
    "brand",
    "flavor",
    "readonly",
    "title",
    "description",
    "metadata",
    "args",
    "returns",
    "mapItems",
    "sortItems",
    "filterItems",
    "reduceItems",
    "normalize",
];

/// Whether both versions may hold a valibot schema (the pass's prefilter).
pub(crate) fn may_hold(before: &str, after: &str) -> bool {
    let finder = memchr::memmem::Finder::new(b"valibot");
    finder.find(before.as_bytes()).is_some() && finder.find(after.as_bytes()).is_some()
}

/// The valibot findings of a TypeScript or JavaScript file. A version that does not
/// parse gives none (the TypeScript detector reports the error).
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
    text: String,
    base: String,
    optional: bool,
    nullable: bool,
    partial: bool,
    strict: bool,
    /// Per measure (`length`, `value`...): its lower and upper bound.
    bounds: BTreeMap<&'static str, (Option<Bound>, Option<Bound>)>,
    flags: BTreeSet<String>,
    /// Validating actions: compacted text to shown text.
    checks: BTreeMap<String, String>,
    members: Option<BTreeSet<String>>,
}

/// Every schema of one version and the property schemas under them, by symbol.
fn inventory(root: Node, src: &str) -> BTreeMap<String, Slot> {
    let mut out = BTreeMap::new();
    let imports = Imports::of(root, src, "valibot");
    if imports.is_empty() {
        return out;
    }
    let is_schema = |n: Node| {
        field(n, "function")
            .and_then(|f| imports.function(f, src))
            .is_some_and(|f| WRAPPERS.contains(&f.as_str()) || BASES.contains(&f.as_str()))
    };
    let mut stack: Vec<(String, Node)> = ts_decl::schemas(root, src, is_schema).into_iter().rev().collect();
    while let Some((symbol, node)) = stack.pop() {
        let Some((slot, children)) = read(node, src, &imports) else { continue };
        for (key, child) in children.into_iter().rev() {
            stack.push((format!("{symbol}.{key}"), child));
        }
        out.entry(symbol).or_insert(slot);
    }
    out
}

/// The valibot function a call names, with the call's arguments.
fn called<'t>(node: Node<'t>, src: &str, imports: &Imports) -> Option<(String, Vec<Node<'t>>)> {
    let node = strip_parens(node);
    if kind_of(node) != "call_expression" {
        return None;
    }
    let name = imports.function(field(node, "function")?, src)?;
    let args = named_children(field(node, "arguments")?).into_iter().filter(|a| kind_of(*a) != "comment").collect();
    Some((name, args))
}

/// One schema: its slot and its property (or item) schemas by key; `None` when the
/// expression is no valibot schema.
fn read<'t>(node: Node<'t>, src: &str, imports: &Imports) -> Option<(Slot, Vec<(String, Node<'t>)>)> {
    let whole = text(node, src);
    let shown = if whole.contains('{') { elide(whole) } else { collapse_whitespace(whole) };
    let mut slot = Slot { line: line(node), text: cap(&super::ts_yup::tidy(&shown), MAX_RENDER), ..Slot::default() };
    let mut children = Vec::new();
    // Wrappers from the outermost in: applied from the innermost out, so that an outer
    // `v.nonOptional(...)` undoes an inner `v.optional(...)`.
    let mut wrappers: Vec<String> = Vec::new();
    let mut actions: Vec<Node<'t>> = Vec::new();
    let mut cur = node;
    let (base, args) = loop {
        let (name, args) = called(cur, src, imports)?;
        if !WRAPPERS.contains(&name.as_str()) {
            break (name, args);
        }
        let mut rest = args.into_iter();
        cur = rest.next()?;
        if name.starts_with("pipe") {
            actions.extend(rest);
        } else {
            wrappers.push(name);
        }
    };
    for w in wrappers.iter().rev() {
        match w.trim_end_matches("Async") {
            "optional" | "undefinedable" | "exactOptional" => slot.optional = true,
            "nullable" => slot.nullable = true,
            "nullish" => (slot.optional, slot.nullable) = (true, true),
            "nonOptional" => slot.optional = false,
            "nonNullable" => slot.nullable = false,
            "nonNullish" => (slot.optional, slot.nullable) = (false, false),
            "partial" => slot.partial = true,
            "required" => slot.partial = false,
            _ => {}
        }
    }
    slot.base = base.clone();
    let first = args.first().copied();
    match base.as_str() {
        "object" | "strictObject" | "looseObject" | "objectWithRest" => {
            slot.strict = base == "strictObject";
            slot.base = "object".to_string();
            children.extend(first.and_then(|o| ts_decl::properties(o, src)).unwrap_or_default());
        }
        "tuple" | "strictTuple" | "looseTuple" => {
            slot.strict = base == "strictTuple";
            slot.base = "tuple".to_string();
        }
        "array" => {
            if let Some(item) = first {
                children.push(("[]".to_string(), item));
            }
        }
        "picklist" => {
            slot.members = first
                .filter(|a| kind_of(*a) == "array")
                .map(|a| named_children(a).into_iter().map(|m| compact(text(m, src)).replace('\'', "\"")).collect());
        }
        "literal" => slot.members = first.map(|a| BTreeSet::from([compact(text(a, src)).replace('\'', "\"")])),
        "union" => {
            slot.members = first
                .filter(|a| kind_of(*a) == "array")
                .map(|a| named_children(a).into_iter().map(|m| member(m, src, imports)).collect());
        }
        _ => {}
    }
    // valibot before 0.31: the pipe is an array of actions given to the schema.
    if !matches!(base.as_str(), "picklist" | "union" | "variant" | "tuple" | "strictTuple" | "looseTuple") {
        for arg in &args {
            let items = named_children(*arg);
            if kind_of(*arg) == "array" && !items.is_empty() && items.iter().all(|i| called(*i, src, imports).is_some())
            {
                actions.extend(items);
            }
        }
    }
    for action in actions {
        if let Some((name, args)) = called(action, src, imports) {
            read_action(&mut slot, &name, &args, action, src);
        }
    }
    Some((slot, children))
}

/// A union's member: a literal's value as written, anything else compacted.
fn member(node: Node, src: &str, imports: &Imports) -> String {
    match called(node, src, imports) {
        Some((name, args)) if name == "literal" && args.len() == 1 => compact(text(args[0], src)).replace('\'', "\""),
        _ => compact(text(node, src)).replace('\'', "\""),
    }
}

/// What one action of a pipe declares.
fn read_action(slot: &mut Slot, name: &str, args: &[Node], action: Node, src: &str) {
    let number = || args.first().map_or(f64::NAN, |a| number_literal(text(*a, src)));
    if let Some((_, measure, side)) = BOUNDS.iter().find(|(n, _, _)| *n == name) {
        let entry = slot.bounds.entry(measure).or_default();
        let at = |value, exclusive| Some(Bound { value, exclusive });
        match side {
            Side::Lower => entry.0 = at(number(), false),
            Side::Above => entry.0 = at(number(), true),
            Side::NonEmpty => entry.0 = at(1.0, false),
            Side::Upper => entry.1 = at(number(), false),
            Side::Below => entry.1 = at(number(), true),
            Side::Both => *entry = (at(number(), false), at(number(), false)),
        }
        return;
    }
    if FLAGS.contains(&name) {
        slot.flags.insert(name.to_string());
        return;
    }
    let converts = name.strip_prefix("to").is_some_and(|r| r.starts_with(|c: char| c.is_ascii_uppercase()));
    if converts || NOT_CHECKS.contains(&name) {
        return;
    }
    let t = text(action, src);
    let arguments = t.find('(').map_or("", |at| &t[at..]);
    slot.checks.insert(format!("{name}{}", compact(arguments)), elide(t));
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
        let admitted_all = matches!(b.base.as_str(), "any" | "unknown");
        if !admitted_all && ((a.optional && !b.optional) || (a.nullable && !b.nullable) || (a.partial && !b.partial)) {
            push(RuleId::TsValibotOptionalAdded, &b.text, &a.text);
        }
        let closed = matches!(b.base.as_str(), "picklist" | "literal" | "union");
        let widened = match (&b.members, &a.members) {
            // Every member replaced: a renamed set, not judged.
            (Some(o), Some(n)) => !n.is_subset(o) && !n.is_disjoint(o),
            _ => closed && matches!(a.base.as_str(), "string" | "number" | "any" | "unknown") && a.checks.is_empty(),
        };
        if widened {
            push(RuleId::TsValibotEnumWidened, &b.text, &a.text);
        }
        if b.strict && !a.strict && a.base == b.base {
            push(RuleId::TsValibotStrictRemoved, &b.text, &a.text);
        }
        if b.base != a.base {
            continue;
        }
        let loosened = b.bounds.iter().any(|(measure, (lower, upper))| {
            let (new_lower, new_upper) = a.bounds.get(measure).cloned().unwrap_or_default();
            bound_loosened(lower, &new_lower, true) || bound_loosened(upper, &new_upper, false)
        });
        if loosened || !b.flags.is_subset(&a.flags) {
            push(RuleId::TsValibotBoundLoosened, &b.text, &a.text);
        }
        let added = a.checks.keys().any(|k| !b.checks.contains_key(k));
        if let (Some((_, gone)), false) = (b.checks.iter().find(|(k, _)| !a.checks.contains_key(*k)), added) {
            push(RuleId::TsValibotCheckRemoved, gone, &a.text);
        }
        // A pattern rewritten into a recognisably weaker one ([`regex_weaker`]).
        let fresh: Vec<(&String, &String)> = a.checks.iter().filter(|(k, _)| !b.checks.contains_key(*k)).collect();
        let weakened = b.checks.iter().filter(|(k, _)| !a.checks.contains_key(*k)).find_map(|(ok, shown)| {
            fresh.iter().find(|(nk, _)| regex_weaker::weakened(ok, nk, "regex")).map(|(_, new)| (shown, *new))
        });
        if let (Some((gone, now)), true) = (weakened, added) {
            push(RuleId::TsValibotCheckRemoved, gone, now);
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(before: &str, after: &str) -> Vec<(RuleId, String)> {
        detect("src/schema.ts", before, after).unwrap().into_iter().map(|f| (f.rule, f.symbol)).collect()
    }

    const HEAD: &str = "import * as v from \"valibot\";\n";

    #[test]
    fn each_loosening_is_found_on_its_property() {
        let before = format!(
            "{HEAD}export const Signup = v.strictObject({{\n  name: v.pipe(v.string(), v.minLength(1), v.maxLength(64)),\n  email: v.pipe(v.string(), v.trim(), v.email()),\n  plan: v.picklist([\"free\", \"pro\"]),\n  seats: v.pipe(v.number(), v.integer(), v.minValue(1)),\n  note: v.string(),\n}});\n"
        );
        let after = format!(
            "{HEAD}export const Signup = v.object({{\n  name: v.pipe(v.string(), v.minLength(1), v.maxLength(256)),\n  email: v.pipe(v.string(), v.trim()),\n  plan: v.picklist([\"free\", \"pro\", \"team\"]),\n  seats: v.pipe(v.number(), v.minValue(0)),\n  note: v.optional(v.string()),\n}});\n"
        );
        let want = [
            (RuleId::TsValibotStrictRemoved, "Signup"),
            (RuleId::TsValibotCheckRemoved, "Signup.email"),
            (RuleId::TsValibotBoundLoosened, "Signup.name"),
            (RuleId::TsValibotOptionalAdded, "Signup.note"),
            (RuleId::TsValibotEnumWidened, "Signup.plan"),
            (RuleId::TsValibotBoundLoosened, "Signup.seats"),
        ];
        crate::widen::testing::assert_found(&found(&before, &after), &want);
    }

    #[test]
    fn named_imports_and_the_old_pipe_are_read() {
        let before = "import { object, string, email, maxLength } from 'valibot';\nconst Login = object({ user: string([email(), maxLength(40)]) });\n";
        let after = "import { object, string, email, maxLength, nullish } from 'valibot';\nconst Login = object({ user: nullish(string([maxLength(80)])) });\n";
        let want = [
            (RuleId::TsValibotBoundLoosened, "Login.user"),
            (RuleId::TsValibotCheckRemoved, "Login.user"),
            (RuleId::TsValibotOptionalAdded, "Login.user"),
        ];
        crate::widen::testing::assert_found(&found(before, after), &want);
    }

    #[test]
    fn narrowing_rewording_and_transforms_are_not_findings() {
        let before = format!(
            "{HEAD}const S = v.object({{ a: v.optional(v.pipe(v.string(), v.maxLength(64))), b: v.pipe(v.string(), v.regex(/^a+$/)), c: v.picklist([\"x\", \"y\"]), d: v.pipe(v.string(), v.trim(), v.email()) }});\n"
        );
        let after = format!(
            "{HEAD}const S = v.object({{\n  a: v.pipe(v.string(), v.maxLength(32)),\n  b: v.pipe(v.string(), v.regex(/^[a-z]+$/)),\n  c: v.picklist([\"x\"]),\n  d: v.pipe(v.string(), v.email(), v.toLowerCase()),\n}});\n"
        );
        assert_eq!(found(&before, &after), []);
    }

    #[test]
    fn deep_nesting_is_walked_without_recursion() {
        let nested = |leaf: &str| {
            let mut s = String::from(leaf);
            for _ in 0..3000 {
                s = format!("v.object({{ a: v.optional({s}) }})");
            }
            format!("{HEAD}const Deep = {s};\n")
        };
        let _ = detect("src/deep.ts", &nested("v.pipe(v.string(), v.maxLength(1))"), &nested("v.string()"));
    }
}
