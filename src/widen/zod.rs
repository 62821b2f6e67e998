//! TypeScript and JavaScript zod schemas: the constraints a `const UserSchema =
//! z.object({...})` declares for each property (`UserSchema.name`), compared between
//! the two versions of a file: bounds (`.min`, `.max`, `.length`, `.gt`, `.positive`,
//! `.int`...), formats (`.email`, `.url`, `.regex`...), optionality (`.optional()`,
//! `.nullable()`, `.nullish()`, `.partial()`), closed sets (`z.enum`, `z.literal`, a
//! union of them), unknown keys (`.strict()`) and refinements (`.refine`,
//! `.superRefine`).
//!
//! A pass of its own beside the TypeScript detector, run only where both versions
//! mention `zod` (a substring test, so files without zod cost nothing), over the whole
//! file: schemas are top-level declarations, which the change window may leave out.
//! The walk is iterative (an explicit stack of schema nodes and a loop down each
//! method chain): nesting depth is input-sized.
//!
//! Deliberately not findings: a schema or property removed (its data went with it), a
//! regular expression or a refinement rewritten (what it admits cannot be told), a
//! non-literal bound changed (not removed), narrowing, reordering and formatting.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::detector::Grammar;
use super::syntax::{collapse_whitespace, compact, field, kind_of, line, named_children, strip_parens, text};
use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity, ts, window};

#[path = "zod_checks.rs"]
mod checks;
#[path = "ts_zod_paths.rs"]
mod paths;
use paths::INNER;

const BOTH: &[Language] = &[Language::Typescript, Language::Javascript];

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: RuleId::TsZodOptionalAdded,
        languages: BOTH,
        family: Family::Optionality,
        description: "A zod schema or property accepts a missing or null value it refused: `.optional()`, `.nullable()` or `.nullish()` added (or `z.optional(...)`/`z.nullable(...)` around it), or `.partial()` added to an object.",
        severity: Severity::High,
        message: "{symbol} may now be absent: `{before}` became `{after}`",
        invariant: "Every parsed value had this field set, so code reading the parsed data never saw it missing.",
    },
    RuleDef {
        id: RuleId::TsZodBoundLoosened,
        languages: BOTH,
        family: Family::NumericRange,
        description: "A zod bound admits more: `.min`/`.gte`/`.gt`/`.positive`/`.nonnegative`/`.nonempty` lowered or removed, `.max`/`.lte`/`.lt`/`.negative`/`.nonpositive` raised or removed, `.length(n)` removed, or `.int()`, `.finite()`, `.safe()`, `.multipleOf(n)` removed.",
        severity: Severity::Medium,
        message: "{symbol} accepts values outside the old bounds: `{before}` became `{after}`",
        invariant: "Parsed values, lengths or counts stayed within the declared bounds, which storage and consumers may rely on.",
    },
    RuleDef {
        id: RuleId::TsZodFormatRemoved,
        languages: BOTH,
        family: Family::CheckRemoved,
        description: "A zod string format check is removed with no other format in its place: `.email()`, `.url()`, `.uuid()`, `.regex(...)`, `.datetime()`, `.startsWith(...)` and the like, or a `z.email()` base made `z.string()`.",
        severity: Severity::Medium,
        message: "{symbol} accepts strings of any form: `{before}` became `{after}`",
        invariant: "Parsed strings had the declared format, so code using them as addresses, identifiers or dates could rely on it.",
    },
    RuleDef {
        id: RuleId::TsZodEnumWidened,
        languages: BOTH,
        family: Family::EnumErasure,
        description: "A zod closed set admits more: `z.enum([...])`, `z.literal(...)` or a union gains a member (a set whose every member was renamed is not judged), or becomes `z.string()`, `z.number()`, `z.any()` or `z.unknown()`; or a schema becomes one alternative of a union (`z.union([old, z.literal(\"\")])`, `old.or(...)`).",
        severity: Severity::High,
        message: "{symbol} accepts values outside its old set: `{before}` became `{after}`",
        invariant: "The parsed value was one of a closed set, so every consumer could handle each case.",
    },
    RuleDef {
        id: RuleId::TsZodCoerceAdded,
        languages: BOTH,
        family: Family::TypeErasure,
        description: "A zod schema starts coercing its input: `z.number()`, `z.date()`, `z.boolean()`... became `z.coerce.number()`..., so any value that converts (a string, `null`, an object with `valueOf`) now passes.",
        severity: Severity::Medium,
        message: "{symbol} now converts what it is given before checking it: `{before}` became `{after}`",
        invariant: "Only a value of the schema's own type passed; nothing was converted on the way in.",
    },
    RuleDef {
        id: RuleId::TsZodStrictRemoved,
        languages: BOTH,
        family: Family::MutabilityExposure,
        description: "A zod object schema stops refusing unknown keys: `.strict()` (or `z.strictObject`) removed or replaced by `.passthrough()`, `.strip()` or `.catchall(...)`.",
        severity: Severity::Medium,
        message: "{symbol} no longer refuses unknown keys: `{before}` became `{after}`",
        invariant: "Input with keys the schema does not name was rejected, so misspelt or unexpected fields never passed silently.",
    },
    RuleDef {
        id: RuleId::TsZodRefinementRemoved,
        languages: BOTH,
        family: Family::CheckRemoved,
        description: "A `.refine(...)`, `.superRefine(...)` or `.check(...)` is removed from a zod schema that still exists, with no other refinement added to it.",
        severity: Severity::High,
        message: "{symbol}: the refinement {before} was removed",
        invariant: "Every parsed value passed the refinement's predicate.",
    },
];

/// Longest `before`/`after` rendering of a schema: a chain of a dozen methods fits.
const MAX_RENDER: usize = 160;

/// Longest rendering of one method call or base inside it (an object literal or a
/// long refinement is elided), so that the changed part stays in view.
const MAX_PART: usize = 72;

/// Whether both versions may hold a zod schema (the pass's prefilter).
pub(crate) fn may_hold(before: &str, after: &str) -> bool {
    let finder = memchr::memmem::Finder::new(b"zod");
    finder.find(before.as_bytes()).is_some() && finder.find(after.as_bytes()).is_some()
}

/// The zod findings of a TypeScript or JavaScript file. A version that does not parse
/// gives none (the TypeScript detector reports the error).
#[cfg(test)]
pub(crate) fn detect(path: &str, before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    detect_with(path, before, after, false)
}

/// [`detect`], reading only the declarations the edit touches when `window` allows it
/// and they stand alone ([`windowed`]): the same findings, for a fraction of the parse.
pub(crate) fn detect_with(path: &str, before: &str, after: &str, window: bool) -> Result<Vec<RawFinding>, DetectError> {
    if !may_hold(before, after) {
        return Ok(Vec::new());
    }
    let lang = Grammar::grammar(&ts::ScriptDetector, path);
    if window
        && !before.is_empty()
        && let Some(found) = windowed(&lang, path, before, after)
    {
        return Ok(found);
    }
    let Some((old, new)) = super::syntax::both_versions(&lang, before, after, Inventory::build) else {
        return Ok(Vec::new());
    };
    Ok(compare(&old, &new))
}

/// The findings from the top-level declarations the edit touches (the change window,
/// [`window::find`]) and the zod imports, parsed alone; `None` (parse both versions
/// whole) when there is no window, a version's part does not parse cleanly, or a
/// declaration outside the window could carry the name of a schema inside it.
///
/// Why it gives the whole parse's answer: a schema's slots are read from its own
/// statement and the names zod is imported under, and compared by symbol, slot by
/// slot. A statement outside the window is the same text in both versions; the zod
/// imports are parsed with the window in both, so its schemas' slots are equal on both
/// sides and give no finding. Only a symbol shared between a statement inside and one
/// outside (a top-level name declared twice) could make the whole parse answer
/// differently, and that is refused.
fn windowed(lang: &tree_sitter::Language, path: &str, before: &str, after: &str) -> Option<Vec<RawFinding>> {
    let lexer = Grammar::window(&ts::ScriptDetector, path)?;
    let w = window::find(lexer, before, after)?;
    let new_cuts = window::script_boundaries(after)?;
    let read = |src: &str, cuts: &[usize], touched: &[std::ops::Range<usize>]| -> Option<Inventory> {
        let ranges = with_zod_imports(src, cuts, touched);
        let tree = window::parse_ranges(lang, src, &ranges)?;
        Some(Inventory::build(tree.root_node(), src))
    };
    let old = read(before, &w.old_cuts, &w.old)?;
    let new = read(after, &new_cuts, &w.new)?;
    let outside = window::Outside::of(before, &w);
    let names: BTreeSet<&str> = old.slots.keys().chain(new.slots.keys()).filter_map(|s| s.split('.').next()).collect();
    if outside.may_declare_any(lexer, &names) {
        return None;
    }
    // A closed set that now names a schema declared outside the window: its members
    // are read from the whole file.
    let named_outside = new.slots.iter().any(|(symbol, a)| {
        old.slots.get(symbol).is_some_and(|b| b.members.is_some())
            && a.base.strip_prefix("ref:").is_some_and(|n| !new.slots.contains_key(n) && outside.may_declare(lexer, n))
    });
    // A bound written with a constant declared outside the window (`.max(MAX)`,
    // `const MAX = 3000` above it): its value is read from the whole file.
    let bound_outside = old.slots.values().chain(new.slots.values()).any(|slot| {
        [&slot.bound_names.0, &slot.bound_names.1].into_iter().flatten().any(|n| outside.may_declare(lexer, n))
    });
    // A numeric constant edited may bound a schema outside the window.
    let constant_edited = !old.numbers.is_empty() || !new.numbers.is_empty();
    if named_outside || bound_outside || constant_edited {
        return None;
    }
    Some(compare(&old, &new))
}

/// `touched` (sorted, disjoint ranges of whole declarations) with every declaration
/// between `cuts` that mentions both `import` and `zod` joined in, sorted and merged:
/// the names zod goes by must be read with the schemas that use them.
fn with_zod_imports(src: &str, cuts: &[usize], touched: &[std::ops::Range<usize>]) -> Vec<std::ops::Range<usize>> {
    let mut ranges: Vec<std::ops::Range<usize>> = touched.to_vec();
    let finder = memchr::memmem::Finder::new(b"zod");
    for piece in cuts.windows(2) {
        let text = &src.as_bytes()[piece[0]..piece[1]];
        if finder.find(text).is_some() && memchr::memmem::find(text, b"import").is_some() {
            ranges.push(piece[0]..piece[1]);
        }
    }
    ranges.sort_by_key(|r| (r.start, r.end));
    let mut merged: Vec<std::ops::Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// What one version of a file declares per zod schema symbol, for the cross-layer
/// index ([`super::layers`]): the bounds as inclusive numbers (an exclusive integer
/// bound moved by one; a bound that is no number left out), the closed set, and whether
/// the value may be missing or null. A version that does not parse gives nothing.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Declared {
    pub(super) symbol: String,
    pub(super) line: u32,
    /// The schema's chain on one line (object literals elided).
    pub(super) text: String,
    /// `string`, `number`, `object`, ... (what the bounds measure).
    pub(super) base: String,
    pub(super) min: Option<f64>,
    pub(super) max: Option<f64>,
    pub(super) members: Option<BTreeSet<String>>,
    pub(super) optional: bool,
}

/// [`Declared`] for every schema of one version (only where it mentions `zod`).
pub(super) fn declared(path: &str, src: &str) -> Vec<Declared> {
    if memchr::memmem::find(src.as_bytes(), b"zod").is_none() {
        return Vec::new();
    }
    let lang = Grammar::grammar(&ts::ScriptDetector, path);
    let Some(inv) = super::syntax::with_parser(&lang, |p| p.parse(src, None))
        .flatten()
        .and_then(|tree| (!tree.root_node().has_error()).then(|| Inventory::build(tree.root_node(), src)))
    else {
        return Vec::new();
    };
    let inclusive = |b: &Option<Bound>, step: f64| {
        b.as_ref()
            .filter(|b| b.value.is_finite())
            .map(|b| if b.exclusive && b.value.fract() == 0.0 { b.value + step } else { b.value })
    };
    inv.slots
        .into_iter()
        .map(|(symbol, s)| Declared {
            symbol,
            line: s.line,
            text: s.text,
            min: inclusive(&s.lower, 1.0),
            max: inclusive(&s.upper, -1.0),
            members: s.members,
            optional: s.optional || s.nullable || s.partial,
            base: s.base,
        })
        .collect()
}

/// A bound as `.min(3)` or `.positive()` says it.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::widen) struct Bound {
    /// `NaN` when the argument is not a number literal (a date, a constant).
    pub(in crate::widen) value: f64,
    pub(in crate::widen) exclusive: bool,
}

/// What one schema (a top-level one or a property's) declares.
#[derive(Debug, Default, Clone)]
struct Slot {
    line: u32,
    /// The schema's chain on one line, object literals elided.
    text: String,
    /// The base: `string`, `number`, `object`, `enum`, `ref:Name` for another schema.
    base: String,
    /// A closed set's members (`z.enum`, `z.literal`, a union), compacted.
    members: Option<BTreeSet<String>>,
    lower: Option<Bound>,
    upper: Option<Bound>,
    /// The constant a bound was written with (`.max(MAX_LENGTH)`), lower and upper:
    /// resolved against the file's numeric constants once it is read.
    bound_names: (Option<String>, Option<String>),
    /// `.int()`, `.finite()`, `.safe()`, `.multipleOf(n)`: flags by method name.
    flags: BTreeSet<String>,
    formats: BTreeSet<String>,
    /// The lengths a fully anchored `.regex(/^...$/)` admits ([`checks::regex_length`]).
    regex_len: Option<(u64, Option<u64>)>,
    optional: bool,
    nullable: bool,
    partial: bool,
    strict: bool,
    /// `z.coerce.*`: the input is converted before it is checked.
    coerce: bool,
    /// `z.preprocess(fn, x)`: read as `x`, whose input `fn` converts first.
    preprocessed: bool,
    /// Refinements: each one's text compacted (to compare) and on one line (to show).
    refinements: Vec<(String, String)>,
    /// `.or(...)` calls: each admits another schema's values besides this one's.
    alternatives: usize,
    /// A bare name where a schema stands (`role: roleSchema`): what it admits is
    /// declared elsewhere.
    bare: bool,
    /// The whole schema compacted, quotes unified, when it is short (to find it again
    /// as one member of a union in the other version); empty otherwise.
    whole: String,
}

const FORMATS: &[&str] = &[
    "email",
    "url",
    "httpUrl",
    "uuid",
    "uuidv4",
    "uuidv6",
    "uuidv7",
    "guid",
    "cuid",
    "cuid2",
    "ulid",
    "nanoid",
    "xid",
    "ksuid",
    "regex",
    "datetime",
    "date",
    "time",
    "duration",
    "ip",
    "ipv4",
    "ipv6",
    "cidr",
    "cidrv4",
    "cidrv6",
    "emoji",
    "base64",
    "base64url",
    "jwt",
    "e164",
    "hostname",
    "startsWith",
    "endsWith",
    "includes",
    "hex",
];

const ENUM_BASES: &[&str] = &["enum", "nativeEnum", "literal", "union", "discriminatedUnion"];
const OPEN_BASES: &[&str] = &["string", "number", "any", "unknown"];
const REFINEMENTS: &[&str] = &["refine", "superRefine", "check"];

#[derive(Debug, Default)]
struct Inventory {
    slots: BTreeMap<String, Slot>,
    /// The file's top-level numeric constants (`const MAX = 3000;`), by name: `None`
    /// when declared twice. Bounds written with one take its value.
    numbers: BTreeMap<String, Option<f64>>,
}

impl Inventory {
    fn build(root: Node, src: &str) -> Inventory {
        let names = zod_names(root, src);
        let mut inv = Inventory::default();
        // (symbol, schema node): every top-level `const X = ...`, then each property.
        // The flag: the node is a property's (or an item's) schema, where a bare name
        // (`role: roleSchema`) is a schema too.
        let mut stack: Vec<(String, Node, bool)> = Vec::new();
        // Top-level functions (`function POST() {...}`, `const handler = () => {...}`):
        // the `const`s declared directly in their bodies, as `POST.schema` (route
        // handlers declare their input schema there).
        let mut bodies: Vec<(String, Node)> = Vec::new();
        for child in named_children(root) {
            let decl = match kind_of(child) {
                "export_statement" => field(child, "declaration"),
                "lexical_declaration" | "variable_declaration" | "function_declaration" => Some(child),
                _ => None,
            };
            if let Some(f) = decl.filter(|d| kind_of(*d) == "function_declaration") {
                if let (Some(name), Some(body)) = (field(f, "name"), field(f, "body")) {
                    bodies.push((text(name, src).to_string(), body));
                }
                continue;
            }
            let Some(decl) = decl.filter(|d| matches!(kind_of(*d), "lexical_declaration" | "variable_declaration"))
            else {
                continue;
            };
            for (name, value) in declarators(decl, src) {
                if let Some(body) = function_body(value) {
                    bodies.push((name.clone(), body));
                }
                // `const schemaFor = (kind) => base(kind).extend({...})`: the schema it
                // builds, under its name.
                let value = expression_body(value).unwrap_or(value);
                stack.push((name, value, false));
            }
        }
        for (function, body) in bodies {
            for statement in named_children(body) {
                if matches!(kind_of(statement), "lexical_declaration" | "variable_declaration") {
                    for (name, value) in declarators(statement, src) {
                        stack.push((format!("{function}.{name}"), value, false));
                    }
                }
            }
        }
        let mut covered = BTreeSet::new();
        inv.read_all(stack, src, &names, &mut covered);
        // Then the schemas no declaration names directly: an argument (`.input(z.object
        // ({...}))`, `tool({ inputSchema: z.object(...) })`), a value in a plain object
        // of schemas, a `const` nested in a block; each under the path that leads to it.
        let anonymous = paths::anonymous_schemas(root, src, &names, &covered);
        let mut count: BTreeMap<&str, usize> = BTreeMap::new();
        for (symbol, _) in &anonymous {
            *count.entry(symbol.as_str()).or_default() += 1;
        }
        // A path two schemas share cannot tell which is which in the other version: neither is read.
        let unique: Vec<(String, Node, bool)> = anonymous
            .iter()
            .filter(|(symbol, _)| count.get(symbol.as_str()) == Some(&1) && !inv.slots.contains_key(symbol))
            .map(|(symbol, node)| (symbol.clone(), *node, false))
            .collect();
        inv.read_all(unique, src, &names, &mut covered);
        checks::resolve_bounds(&mut inv.slots, &mut inv.numbers, root, src);
        inv
    }

    /// Reads each schema of `stack` and the property schemas under it, recording the
    /// byte ranges read in `covered`.
    fn read_all<'t>(
        &mut self,
        mut stack: Vec<(String, Node<'t>, bool)>,
        src: &str,
        names: &BTreeSet<String>,
        covered: &mut BTreeSet<(usize, usize)>,
    ) {
        while let Some((symbol, node, property)) = stack.pop() {
            let Some((slot, children)) = read_schema(node, src, names, property) else {
                continue;
            };
            covered.insert((node.start_byte(), node.end_byte()));
            // A schema's own declaration wins over a property of the same path.
            if !self.slots.contains_key(&symbol) {
                self.slots.insert(symbol.clone(), slot);
            }
            for (key, child) in children {
                stack.push((format!("{symbol}.{key}"), child, true));
            }
        }
    }
}

/// The `name = value` pairs of a declaration whose name is one identifier.
fn declarators<'t>(decl: Node<'t>, src: &str) -> Vec<(String, Node<'t>)> {
    named_children(decl)
        .into_iter()
        .filter(|d| kind_of(*d) == "variable_declarator")
        .filter_map(|d| Some((field(d, "name")?, field(d, "value")?)))
        .filter(|(name, _)| kind_of(*name) == "identifier")
        .map(|(name, value)| (text(name, src).to_string(), value))
        .collect()
}

/// The expression an arrow function returns when that is its body (`(k) => schema`).
fn expression_body(value: Node) -> Option<Node> {
    let value = strip_parens(value);
    (kind_of(value) == "arrow_function")
        .then(|| field(value, "body"))
        .flatten()
        .filter(|b| kind_of(*b) != "statement_block")
        .map(strip_parens)
}

/// The block body of a function expression or arrow function (`None` for an
/// expression body or anything else).
fn function_body(value: Node) -> Option<Node> {
    let value = strip_parens(value);
    matches!(kind_of(value), "arrow_function" | "function_expression" | "function")
        .then(|| field(value, "body"))
        .flatten()
        .filter(|b| kind_of(*b) == "statement_block")
}

/// The names zod is imported under (`import { z } from "zod"`, `import * as z from
/// "zod/v4"`, a local module re-exporting it), and `z` always.
fn zod_names(root: Node, src: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::from(["z".to_string()]);
    for child in named_children(root) {
        if kind_of(child) != "import_statement" {
            continue;
        }
        if !field(child, "source").is_some_and(|s| text(s, src).contains("zod")) {
            continue;
        }
        // The import clause's identifiers: the default, `* as z`, `{ z as zod }`.
        let mut stack = named_children(child);
        while let Some(n) = stack.pop() {
            match kind_of(n) {
                "identifier" => {
                    names.insert(text(n, src).to_string());
                }
                "import_specifier" => {
                    if let Some(n) = field(n, "alias").or_else(|| field(n, "name")) {
                        names.insert(text(n, src).to_string());
                    }
                }
                "import_clause" | "named_imports" | "namespace_import" => stack.extend(named_children(n)),
                _ => {}
            }
        }
    }
    names
}

/// One schema expression: its slot, and the property schemas under it (by key). `None`
/// when the expression is no zod schema.
fn read_schema<'t>(
    node: Node<'t>,
    src: &str,
    names: &BTreeSet<String>,
    property: bool,
) -> Option<(Slot, Vec<(String, Node<'t>)>)> {
    let mut slot = Slot { line: line(node), ..Slot::default() };
    // Short enough to compare whole: a few members' worth.
    const MAX_WHOLE: usize = 256;
    if node.end_byte() - node.start_byte() <= MAX_WHOLE {
        slot.whole = compact(text(node, src)).replace('\'', "\"");
    }
    let mut children = Vec::new();
    // The method calls from the outermost in, then the base.
    let mut methods: Vec<(String, Node<'t>, String)> = Vec::new();
    let mut cur = strip_parens(node);
    let base_text;
    loop {
        match kind_of(cur) {
            "call_expression" => {
                let func = field(cur, "function")?;
                let args = field(cur, "arguments")?;
                match kind_of(func) {
                    "member_expression" => {
                        let object = strip_parens(field(func, "object")?);
                        let property = text(field(func, "property")?, src).to_string();
                        // `z.coerce.number()`: the base, converting its input first.
                        let coerced = kind_of(object) == "member_expression"
                            && field(object, "object").is_some_and(|o| names.contains(text(o, src)))
                            && field(object, "property").is_some_and(|p| text(p, src) == "coerce");
                        slot.coerce |= coerced;
                        let is_base = coerced || (kind_of(object) == "identifier" && names.contains(text(object, src)));
                        if !is_base {
                            let part = elide(&src[field(func, "property")?.start_byte()..cur.end_byte()]);
                            methods.push((property, args, format!(".{part}")));
                            cur = object;
                            continue;
                        }
                        let first = named_children(args).into_iter().next();
                        // `z.optional(x)`, `z.nullable(x)`: a flag on `x`'s schema.
                        if let ("optional" | "nullable" | "nullish", Some(inner)) = (property.as_str(), first) {
                            slot.optional |= property != "nullable";
                            slot.nullable |= property != "optional";
                            methods.push((String::new(), args, format!("{}.{property}({INNER})", text(object, src))));
                            cur = strip_parens(inner);
                            continue;
                        }
                        // `z.preprocess(fn, x)`: `x` checks what `fn` hands on; the
                        // property's constraints are `x`'s.
                        if let ("preprocess", Some(inner)) =
                            (property.as_str(), named_children(args).into_iter().nth(1))
                        {
                            slot.preprocessed = true;
                            methods.push((
                                String::new(),
                                args,
                                format!("{}.preprocess(…, {INNER})", text(object, src)),
                            ));
                            cur = strip_parens(inner);
                            continue;
                        }
                        // `z.union([x, z.null()])`: `x.nullable()` spelt as a union (and
                        // `z.undefined()` as `.optional()`), read as `x` with the flag.
                        if let ("union", Some(list)) = (property.as_str(), first.filter(|f| kind_of(*f) == "array"))
                            && let [a, b] = named_children(list)[..]
                            && let Some((unit, inner, shape)) = paths::unit(b, src, names)
                                .map(|u| (u, a, format!("{INNER}, {}", text(b, src))))
                                .or_else(|| {
                                    paths::unit(a, src, names).map(|u| (u, b, format!("{}, {INNER}", text(a, src))))
                                })
                            && paths::unit(inner, src, names).is_none()
                        {
                            slot.nullable |= unit == "null";
                            slot.optional |= unit == "undefined";
                            methods.push((String::new(), args, format!("{}.union([{shape}])", text(object, src))));
                            cur = strip_parens(inner);
                            continue;
                        }
                        // An object's properties are slots of their own: its text shows `{…}`.
                        base_text = match first {
                            Some(obj) if kind_of(obj) == "object" => format!("{}.{property}({{…}})", text(object, src)),
                            _ => elide(text(cur, src)),
                        };
                        read_base(&mut slot, &mut children, &property, args, src, names);
                        break;
                    }
                    // `schemaFor(kind).extend({...})`: a schema a function builds, as a
                    // reference (a schema only if zod methods follow).
                    "identifier" if !methods.is_empty() => {
                        slot.base = format!("ref:{}()", text(func, src));
                        base_text = elide(text(cur, src));
                        break;
                    }
                    _ => return None,
                }
            }
            "identifier" => {
                slot.base = format!("ref:{}", text(cur, src));
                base_text = text(cur, src).to_string();
                break;
            }
            "as_expression" | "satisfies_expression" | "non_null_expression" => {
                cur = strip_parens(cur.named_child(0)?);
            }
            _ => return None,
        }
    }
    // A reference to something that is not a schema and carries no zod method is
    // not a schema, unless it stands where a schema must (a property's value).
    if slot.base.starts_with("ref:") && methods.is_empty() && !property {
        return None;
    }
    slot.bare = slot.base.starts_with("ref:") && methods.is_empty();
    let mut rendered = base_text;
    for (name, args, part) in methods.iter().rev() {
        if name.is_empty() {
            // A wrapper (`z.optional(…)`): the schema inside stands for the mark.
            rendered = part.replace(INNER, &rendered);
            continue;
        }
        rendered.push_str(part);
        read_method(&mut slot, &mut children, name, *args, src);
    }
    // `z\n  .object(...)\n  .strict()` reads `z.object(...).strict()`.
    slot.text = cap(&rendered.replace(" .", "."), MAX_RENDER);
    Some((slot, children))
}

/// What a base call (`z.string()`, `z.object({...})`, `z.enum([...])`) declares.
fn read_base<'t>(
    slot: &mut Slot,
    children: &mut Vec<(String, Node<'t>)>,
    base: &str,
    args: Node<'t>,
    src: &str,
    names: &BTreeSet<String>,
) {
    let first = args.named_child(0);
    slot.base = base.to_string();
    if FORMATS.contains(&base) {
        // zod 4's `z.email()`: a string with a format.
        slot.formats.insert(base.to_string());
        slot.base = "string".to_string();
    }
    match base {
        "object" | "strictObject" | "looseObject" => {
            slot.base = "object".to_string();
            slot.strict = base == "strictObject";
            if let Some(obj) = first {
                properties(obj, src, children);
            }
        }
        "array" => {
            if let Some(item) = first {
                children.push(("[]".to_string(), item));
            }
        }
        "enum" => slot.members = first.filter(|a| kind_of(*a) == "array").map(|a| members(a, src, names)),
        "literal" => slot.members = first.map(|a| BTreeSet::from([member(a, src, names)])),
        "union" | "discriminatedUnion" => {
            // `z.discriminatedUnion("kind", [...])`: the list is the second argument.
            let list = named_children(args).into_iter().find(|a| kind_of(*a) == "array");
            slot.members = list.map(|a| members(a, src, names));
            // `z.union([x, z.null()])` admits what `x.nullable()` admits, and
            // `z.undefined()` as a member what `.optional()` does: the same absence,
            // spelt as a member, so rewriting one as the other loosens nothing.
            for unit in
                list.map(named_children).unwrap_or_default().into_iter().filter_map(|v| paths::unit(v, src, names))
            {
                (slot.nullable, slot.optional) =
                    (slot.nullable || unit == "null", slot.optional || unit == "undefined");
            }
            // Each variant's properties, keyed by its discriminator's value (`[kind=card]`):
            // a variant is found again by what it is, not by where it stands.
            let discriminator = first.filter(|f| kind_of(*f) == "string").map(|f| paths::unquote(text(f, src)));
            if let (Some(list), Some(discriminator)) = (list.filter(|_| base == "discriminatedUnion"), discriminator) {
                let mut values = BTreeSet::new();
                let variants = named_children(list);
                for variant in &variants {
                    if let Some(value) = paths::discriminator_value(*variant, &discriminator, src, names) {
                        children.push((format!("[{discriminator}={value}]"), *variant));
                        values.insert(value);
                    }
                }
                // The set it closes is its discriminator's values (each variant's
                // properties are compared as its own slots), when every variant gives one.
                if values.len() == variants.len() {
                    slot.members = Some(values);
                }
            }
        }
        _ => {}
    }
}

/// The `key: schema` pairs of an object literal.
fn properties<'t>(obj: Node<'t>, src: &str, children: &mut Vec<(String, Node<'t>)>) {
    if kind_of(obj) != "object" {
        return;
    }
    for pair in named_children(obj) {
        if kind_of(pair) != "pair" {
            continue;
        }
        let (Some(key), Some(value)) = (field(pair, "key"), field(pair, "value")) else {
            continue;
        };
        let key = text(key, src).trim_matches(|c| c == '"' || c == '\'' || c == '`').to_string();
        children.push((key, value));
    }
}

/// The members of a closed set's list: each literal as written (`z.literal(x)` as `x`),
/// compacted, quotes unified.
fn members(list: Node, src: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
    named_children(list).into_iter().map(|m| member(m, src, names)).collect()
}

fn member(node: Node, src: &str, names: &BTreeSet<String>) -> String {
    let mut node = strip_parens(node);
    // `z.literal("a")` is the member `"a"`.
    if kind_of(node) == "call_expression"
        && let Some(func) = field(node, "function")
        && kind_of(func) == "member_expression"
        && field(func, "object").is_some_and(|o| names.contains(text(o, src)))
        && field(func, "property").is_some_and(|p| text(p, src) == "literal")
        && let Some(arg) = field(node, "arguments").and_then(|a| a.named_child(0))
    {
        node = arg;
    }
    compact(text(node, src)).replace('\'', "\"")
}

/// What one method of a chain declares.
fn read_method<'t>(slot: &mut Slot, children: &mut Vec<(String, Node<'t>)>, name: &str, args: Node<'t>, src: &str) {
    let first = args.named_child(0);
    let number = || first.map_or(f64::NAN, |a| number_literal(text(a, src)));
    let bound = |value, exclusive| Some(Bound { value, exclusive });
    // A bound written with a name (`.max(MAX_LENGTH)`): kept for `resolve_bounds`.
    let named = first.filter(|a| kind_of(*a) == "identifier").map(|a| text(a, src).to_string());
    match name {
        "min" | "gte" | "gt" => slot.bound_names.0 = named,
        "max" | "lte" | "lt" => slot.bound_names.1 = named,
        "length" => slot.bound_names = (named.clone(), named),
        _ => {}
    }
    match name {
        // A default (zod 4's `prefault` too) is what a missing value becomes: the
        // property may be left out.
        "optional" | "default" | "prefault" => slot.optional = true,
        "nullable" => slot.nullable = true,
        "nullish" => (slot.optional, slot.nullable) = (true, true),
        "partial" => slot.partial = true,
        "strict" => slot.strict = true,
        "or" => slot.alternatives += 1,
        "passthrough" | "strip" | "catchall" | "loose" => slot.strict = false,
        "extend" => {
            if let Some(obj) = first {
                properties(obj, src, children);
            }
        }
        // `a.and(b)`: `b`'s properties hold as well, under `&`.
        "and" => {
            if let Some(other) = first {
                children.push(("&".to_string(), other));
            }
        }
        "min" | "gte" => slot.lower = bound(number(), false),
        "gt" => slot.lower = bound(number(), true),
        "nonempty" => slot.lower = bound(1.0, false),
        "positive" => slot.lower = bound(0.0, true),
        "nonnegative" => slot.lower = bound(0.0, false),
        "max" | "lte" => slot.upper = bound(number(), false),
        "lt" => slot.upper = bound(number(), true),
        "negative" => slot.upper = bound(0.0, true),
        "nonpositive" => slot.upper = bound(0.0, false),
        "length" => (slot.lower, slot.upper) = (bound(number(), false), bound(number(), false)),
        "regex" => {
            slot.formats.insert(name.to_string());
            slot.regex_len = first.and_then(|a| checks::regex_length(text(a, src)));
        }
        "pipe" => {
            if let Some(inner) = first {
                checks::pipe(slot, inner, src);
            }
        }
        "int" | "finite" | "safe" | "multipleOf" | "step" => {
            slot.flags.insert(name.to_string());
        }
        _ if FORMATS.contains(&name) => {
            slot.formats.insert(name.to_string());
        }
        // A transform that reports issues (`ctx.addIssue(...)`) refuses input as a
        // refinement does.
        _ if REFINEMENTS.contains(&name) || (name == "transform" && text(args, src).contains("addIssue")) => {
            let args = text(args, src);
            slot.refinements.push((format!("{name}{}", compact(args)), elide(&format!(".{name}{args}"))));
        }
        _ => {}
    }
}

/// A number literal's value (`64`, `1_000`, `0.5`, `-1`, `1e3`); `NaN` for anything else.
pub(in crate::widen) fn number_literal(s: &str) -> f64 {
    s.trim().replace('_', "").parse().unwrap_or(f64::NAN)
}

/// Text on one line, the inside of a long object or array literal elided
/// (`z.object({…})`). Reads only the ends of a long text: the walk renders every
/// nested schema, so the cost stays linear in the file.
pub(in crate::widen) fn elide(s: &str) -> String {
    if s.len() <= MAX_PART {
        return collapse_whitespace(s);
    }
    if let (Some(open), Some(close)) = (s.find(['{', '[']), s.rfind(['}', ']']))
        && open < close
        && open < MAX_PART
        && s.len() - close < MAX_PART
    {
        return format!("{}…{}", collapse_whitespace(&s[..=open]), collapse_whitespace(&s[close..]));
    }
    let mut end = (MAX_PART * 4).min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    cap(&collapse_whitespace(&s[..end]), MAX_PART)
}

pub(in crate::widen) fn cap(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

/// Whether `new` admits a value below (`lower`) or above the old bound.
pub(in crate::widen) fn bound_loosened(old: &Option<Bound>, new: &Option<Bound>, lower: bool) -> bool {
    let (Some(o), n) = (old, new) else {
        return false;
    };
    let Some(n) = n else {
        return true;
    };
    if o.value.is_nan() || n.value.is_nan() {
        // Not numbers: only a removal is judged.
        return false;
    }
    let wider = if lower { n.value < o.value } else { n.value > o.value };
    wider || (n.value == o.value && o.exclusive && !n.exclusive)
}

fn compare(old: &Inventory, new: &Inventory) -> Vec<RawFinding> {
    let mut out = Vec::new();
    for (symbol, a) in &new.slots {
        let Some(b) = old.slots.get(symbol) else {
            continue;
        };
        // A closed set moved into a schema the file names (`source: z.enum(["a", "b"])`
        // to `source: Source`, `const Source = z.enum(["a", "b", "c"])`): its members.
        if let Some(gained) = checks::named_set_gained(b, a, new) {
            out.push(RawFinding {
                line: a.line,
                rule: RuleId::TsZodEnumWidened,
                symbol: symbol.clone(),
                before: b.text.clone(),
                after: gained,
                in_test: false,
            });
        }
        // A bare name for another schema on one side: what the name admits is not read
        // here, so the two cannot be compared.
        if (b.bare || a.bare) && a.base != b.base {
            continue;
        }
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
        // `z.undefined()` already admitted the missing value, `z.null()` null, `z.any()` both.
        let had_undefined = matches!(b.base.as_str(), "undefined" | "void" | "any" | "unknown");
        let had_null = matches!(b.base.as_str(), "null" | "any" | "unknown");
        if (a.optional && !b.optional && !had_undefined)
            || (a.nullable && !b.nullable && !had_null)
            || (a.partial && !b.partial)
        {
            push(RuleId::TsZodOptionalAdded, &b.text, &a.text);
        }
        let closed_before = ENUM_BASES.contains(&b.base.as_str());
        let gained = match (&b.members, &a.members) {
            // A set whose every member was replaced (`["12h", "24h"]` to `["hours12",
            // "hours24"]`) was renamed, not widened: no old member is admitted twice.
            (Some(o), Some(n)) => !n.is_subset(o) && !n.is_disjoint(o),
            // The old schema, now one alternative of a union (`z.union([z.string().email(),
            // z.literal("")])`), or given another with `.or(...)`.
            (None, Some(n)) => n.len() > 1 && !b.whole.is_empty() && n.contains(&b.whole),
            _ => closed_before && OPEN_BASES.contains(&a.base.as_str()) && a.formats.is_empty(),
        } || a.alternatives > b.alternatives;
        // A conversion put in front (`z.union([z.number(), z.bigint()])` to
        // `z.preprocess(toNumber, z.number())`) may map every value the old set held
        // onto the new schema: what the function admits is not read.
        let converted = a.preprocessed && !b.preprocessed;
        if gained && !converted {
            push(RuleId::TsZodEnumWidened, &b.text, &a.text);
        }
        if b.base == a.base {
            let flags_lost = !b.flags.is_subset(&a.flags);
            // A new anchored pattern whose matches all have a length the old bounds
            // admitted holds them (`.length(6)` to `.regex(/^\d{6}$/)`).
            let loosened = (bound_loosened(&b.lower, &a.lower, true) || bound_loosened(&b.upper, &a.upper, false))
                && !(a.regex_len != b.regex_len && checks::pattern_holds(a.regex_len, &b.lower, &b.upper));
            if loosened || flags_lost {
                push(RuleId::TsZodBoundLoosened, &b.text, &a.text);
            }
            let lost = !b.formats.is_subset(&a.formats);
            if lost && a.formats.is_subset(&b.formats) {
                push(RuleId::TsZodFormatRemoved, &b.text, &a.text);
            }
        }
        if a.coerce && !b.coerce && a.base == b.base {
            push(RuleId::TsZodCoerceAdded, &b.text, &a.text);
        }
        if b.strict && !a.strict {
            push(RuleId::TsZodStrictRemoved, &b.text, &a.text);
        }
        let mut kept: Vec<&String> = a.refinements.iter().map(|r| &r.0).collect();
        let mut removed = Vec::new();
        for (r, shown) in &b.refinements {
            match kept.iter().position(|k| *k == r) {
                Some(i) => {
                    kept.remove(i);
                }
                None => removed.push(shown),
            }
        }
        // A refinement added in its place is a reworded one, and one whose schema is now
        // another named schema (`getSafeUrl.optional()`) may live there: not judged.
        let named = a.base != b.base && a.base.starts_with("ref:");
        if let (Some(first), true, false) = (removed.first(), kept.is_empty(), named) {
            push(RuleId::TsZodRefinementRemoved, first, "");
        }
    }
    out.sort();
    out
}

#[cfg(test)]
#[path = "zod_tests.rs"]
mod tests;
