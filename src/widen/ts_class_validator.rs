//! TypeScript and JavaScript class-validator decorators: the constraints a DTO class
//! declares on each property (`@MaxLength(64) name: string` is `CreateUser.name`),
//! compared between the two versions of a file: bounds (`@MaxLength`, `@MinLength`,
//! `@Length`, `@Min`, `@Max`, `@IsPositive`, `@ArrayMaxSize`..., `@IsInt`), formats
//! (`@IsEmail`, `@IsUrl`, `@IsUUID`, `@Matches`...), closed sets (`@IsIn([...])`,
//! `@IsEnum(E)`), `@IsOptional()` added and `@IsNotEmpty()`/`@IsDefined()` removed.
//!
//! A pass of its own beside the TypeScript detector, run only where both versions
//! mention `class-validator` (a substring test), over the whole file: DTO classes are
//! top-level declarations, which the change window may leave out. Only decorators
//! imported from `class-validator` are read (under their local names, aliases and a
//! namespace import `cv.MaxLength` included): a decorator of the same name from
//! another library is not a class-validator constraint. A decorator with the option
//! `each: true` constrains an array's items: its constraints belong to the slot
//! `Class.prop.[]` (as zod's array items do). The walk is flat (top-level classes,
//! their members, each member's decorators): no recursion.
//!
//! Deliberately not findings: a class or property removed or renamed, a bound given by
//! a constant changed (only its removal is judged), a `@Matches` pattern rewritten, an
//! `@IsEnum` pointed at another enum, narrowing, reordering and formatting.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::detector::Grammar;
use super::syntax::{compact, field, kind_of, line, named_children, strip_parens, text};
use super::zod::{Bound, bound_loosened, cap, elide, number_literal};
use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity, ts};

const BOTH: &[Language] = &[Language::Typescript, Language::Javascript];

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: RuleId::TsClassValidatorOptionalAdded,
        languages: BOTH,
        family: Family::Optionality,
        description: "A class-validator property that was validated gains `@IsOptional()`: a missing or null value now skips every other check.",
        severity: Severity::High,
        message: "{symbol} may now be absent: `{before}` became `{after}`",
        invariant: "Every validated object had this property set, so code reading it never saw it missing.",
    },
    RuleDef {
        id: RuleId::TsClassValidatorNotEmptyRemoved,
        languages: BOTH,
        family: Family::Optionality,
        description: "`@IsNotEmpty()` or `@IsDefined()` is removed from a class-validator property that still exists.",
        severity: Severity::Medium,
        message: "{symbol} may now be empty: `{before}` became `{after}`",
        invariant: "Every validated object carried a non-empty value for this property.",
    },
    RuleDef {
        id: RuleId::TsClassValidatorBoundLoosened,
        languages: BOTH,
        family: Family::NumericRange,
        description: "A class-validator bound admits more: `@MaxLength`, `@Max`, `@ArrayMaxSize` raised or removed, `@MinLength`, `@Min`, `@ArrayMinSize` lowered or removed, `@Length(a, b)` widened, `@IsPositive`/`@IsNegative`/`@ArrayNotEmpty` removed, or `@IsInt()`/`@IsDivisibleBy(n)` removed.",
        severity: Severity::Medium,
        message: "{symbol} accepts values outside the old bounds: `{before}` became `{after}`",
        invariant: "Validated values, lengths or counts stayed within the declared bounds, which storage and consumers may rely on.",
    },
    RuleDef {
        id: RuleId::TsClassValidatorFormatRemoved,
        languages: BOTH,
        family: Family::CheckRemoved,
        description: "A class-validator format check is removed with no other format in its place: `@IsEmail()`, `@IsUrl()`, `@IsUUID()`, `@Matches(...)`, `@IsISO8601()`, `@IsPhoneNumber()` and the like.",
        severity: Severity::Medium,
        message: "{symbol} accepts strings of any form: `{before}` became `{after}`",
        invariant: "Validated strings had the declared format, so code using them as addresses, identifiers or dates could rely on it.",
    },
    RuleDef {
        id: RuleId::TsClassValidatorEnumWidened,
        languages: BOTH,
        family: Family::EnumErasure,
        description: "A class-validator closed set admits more: `@IsIn([...])` gains a member or is removed, or `@IsEnum(E)` is removed (with no `@IsIn`/`@IsEnum` in its place).",
        severity: Severity::High,
        message: "{symbol} accepts values outside its old set: `{before}` became `{after}`",
        invariant: "The validated value was one of a closed set, so every consumer could handle each case.",
    },
];

/// Longest `before`/`after` rendering of a property's decorators: a dozen fit.
const MAX_RENDER: usize = 160;

/// The module name a file imports the decorators from (also the prefilter's needle).
const MODULE: &str = "class-validator";

/// String format checks: removing one with no other in its place admits any string.
const FORMATS: &[&str] = &[
    "IsEmail",
    "IsUrl",
    "IsUUID",
    "Matches",
    "IsISO8601",
    "IsDateString",
    "IsRFC3339",
    "IsMilitaryTime",
    "IsPhoneNumber",
    "IsMobilePhone",
    "IsAlpha",
    "IsAlphanumeric",
    "IsAscii",
    "IsNumberString",
    "IsDecimal",
    "IsHexColor",
    "IsRgbColor",
    "IsHexadecimal",
    "IsIP",
    "IsPort",
    "IsFQDN",
    "IsJWT",
    "IsJSON",
    "IsMongoId",
    "IsBase64",
    "IsDataURI",
    "IsMACAddress",
    "IsISBN",
    "IsISSN",
    "IsISIN",
    "IsCreditCard",
    "IsCurrency",
    "IsPostalCode",
    "IsLocale",
    "IsSemVer",
    "IsLatLong",
    "IsLatitude",
    "IsLongitude",
    "IsTimeZone",
    "IsStrongPassword",
    "IsISO31661Alpha2",
    "IsISO31661Alpha3",
    "IsISO4217CurrencyCode",
    "IsLowercase",
    "IsUppercase",
    "IsHash",
    "IsBIC",
    "IsIBAN",
    "IsEthereumAddress",
    "IsBtcAddress",
    "Contains",
    "NotContains",
];

/// Checks that keep a number whole or a multiple: their removal admits more numbers.
const FLAGS: &[&str] = &["IsInt", "IsDivisibleBy"];

/// Checks that refuse a missing or empty value.
const NOT_EMPTY: &[&str] = &["IsNotEmpty", "IsDefined"];

/// Whether both versions may use class-validator (the pass's prefilter).
pub(crate) fn may_hold(before: &str, after: &str) -> bool {
    let finder = memchr::memmem::Finder::new(MODULE.as_bytes());
    finder.find(before.as_bytes()).is_some() && finder.find(after.as_bytes()).is_some()
}

/// The class-validator findings of a TypeScript or JavaScript file. A version that does
/// not parse gives none (the TypeScript detector reports the error).
pub(crate) fn detect(path: &str, before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    if !may_hold(before, after) {
        return Ok(Vec::new());
    }
    let lang = Grammar::grammar(&ts::ScriptDetector, path);
    let Some((old, new)) = super::syntax::both_versions(&lang, before, after, props) else {
        return Ok(Vec::new());
    };
    Ok(compare(&old, &new))
}

/// A lower and an upper bound of one measure (a value, a length, an item count).
#[derive(Debug, Default, Clone)]
struct Range {
    lower: Option<Bound>,
    upper: Option<Bound>,
}

/// A closed set as `@IsIn` or `@IsEnum` states it.
#[derive(Debug, Clone)]
enum Closed {
    /// `@IsIn([...])` with a literal list: its members, compacted, quotes unified.
    Members(BTreeSet<String>),
    /// `@IsEnum(E)`, or `@IsIn(CONSTANT)`: only its removal can be judged.
    Opaque,
}

/// What one property's (or its items') decorators declare.
#[derive(Debug, Default, Clone)]
struct Prop {
    line: u32,
    /// The class-validator decorators as written, on one line.
    shown: String,
    /// Whether any class-validator decorator stands on it (the property is validated).
    validated: bool,
    optional: bool,
    not_empty: BTreeSet<String>,
    value: Range,
    length: Range,
    count: Range,
    flags: BTreeSet<String>,
    formats: BTreeSet<String>,
    closed: Option<Closed>,
}

/// The names class-validator's decorators go by in one file: local name to the
/// library's name, and the namespaces it is imported as.
#[derive(Debug, Default)]
struct Imports {
    names: BTreeMap<String, String>,
    namespaces: BTreeSet<String>,
}

impl Imports {
    fn of(root: Node, src: &str) -> Imports {
        let mut out = Imports::default();
        for child in named_children(root) {
            if kind_of(child) != "import_statement" {
                continue;
            }
            if !field(child, "source").is_some_and(|s| text(s, src).contains(MODULE)) {
                continue;
            }
            // Flat: an import clause is at most three levels deep.
            let mut stack = named_children(child);
            while let Some(n) = stack.pop() {
                match kind_of(n) {
                    "namespace_import" => {
                        if let Some(id) = n.named_child(0) {
                            out.namespaces.insert(text(id, src).to_string());
                        }
                    }
                    "import_specifier" => {
                        let Some(name) = field(n, "name") else { continue };
                        let local = field(n, "alias").unwrap_or(name);
                        out.names.insert(text(local, src).to_string(), text(name, src).to_string());
                    }
                    "import_clause" | "named_imports" => stack.extend(named_children(n)),
                    _ => {}
                }
            }
        }
        out
    }

    /// The library's name of the decorator a call invokes, if it is one of its.
    fn decorator(&self, func: Node, src: &str) -> Option<String> {
        match kind_of(func) {
            "identifier" => self.names.get(text(func, src)).cloned(),
            "member_expression" => {
                let object = field(func, "object")?;
                let property = field(func, "property")?;
                (kind_of(object) == "identifier" && self.namespaces.contains(text(object, src)))
                    .then(|| text(property, src).to_string())
            }
            _ => None,
        }
    }
}

/// Every property of every top-level class, by `Class.prop` (and `Class.prop.[]` for
/// the decorators with `each: true`).
fn props(root: Node, src: &str) -> BTreeMap<String, Prop> {
    let imports = Imports::of(root, src);
    let mut out = BTreeMap::new();
    if imports.names.is_empty() && imports.namespaces.is_empty() {
        return out;
    }
    for child in named_children(root) {
        let class = match kind_of(child) {
            "export_statement" => field(child, "declaration"),
            _ => Some(child),
        };
        let Some(class) = class.filter(|c| matches!(kind_of(*c), "class_declaration" | "abstract_class_declaration"))
        else {
            continue;
        };
        let (Some(name), Some(body)) = (field(class, "name"), field(class, "body")) else { continue };
        let class_name = text(name, src);
        for member in named_children(body) {
            if !matches!(kind_of(member), "public_field_definition" | "field_definition") {
                continue;
            }
            let Some(key) = field(member, "name").or_else(|| field(member, "property")) else { continue };
            if kind_of(key) == "private_property_identifier" {
                continue;
            }
            let at = line(key);
            let key = text(key, src).trim_matches(|c| c == '"' || c == '\'' || c == '`');
            let symbol = format!("{class_name}.{key}");
            let mut own = Prop { line: at, ..Prop::default() };
            let mut items = Prop { line: at, ..Prop::default() };
            let mut shown = (Vec::new(), Vec::new());
            let mut cursor = member.walk();
            for deco in member.children_by_field_name("decorator", &mut cursor) {
                let Some(call) = deco.named_child(0).filter(|c| kind_of(*c) == "call_expression") else { continue };
                let (Some(func), Some(args)) = (field(call, "function"), field(call, "arguments")) else { continue };
                let Some(name) = imports.decorator(func, src) else { continue };
                // `{ each: true }`: the check applies to each item of an array.
                let each = named_children(args)
                    .into_iter()
                    .any(|a| kind_of(a) == "object" && compact(text(a, src)).contains("each:true"));
                let (slot, list) = if each { (&mut items, &mut shown.1) } else { (&mut own, &mut shown.0) };
                list.push(elide(&format!("@{}", text(deco, src).trim_start_matches('@'))));
                read_decorator(slot, &name, args, src);
            }
            for (mut prop, list, symbol) in [(own, shown.0, symbol.clone()), (items, shown.1, format!("{symbol}.[]"))] {
                prop.validated = !list.is_empty();
                prop.shown = cap(&list.join(" "), MAX_RENDER);
                out.insert(symbol, prop);
            }
        }
    }
    out
}

/// What one class-validator decorator declares.
fn read_decorator(p: &mut Prop, name: &str, args: Node, src: &str) {
    let arg = |i: u32| args.named_child(i).map(strip_parens);
    let number = |i: u32| arg(i).map_or(f64::NAN, |a| number_literal(text(a, src)));
    let bound = |value: f64, exclusive| Some(Bound { value, exclusive });
    match name {
        "IsOptional" => p.optional = true,
        _ if NOT_EMPTY.contains(&name) => {
            p.not_empty.insert(name.to_string());
        }
        "MinLength" => p.length.lower = bound(number(0), false),
        "MaxLength" => p.length.upper = bound(number(0), false),
        "Length" => {
            p.length.lower = bound(number(0), false);
            // `@Length(min)` sets no upper bound; an options object is not one.
            if arg(1).is_some_and(|a| kind_of(a) != "object") {
                p.length.upper = bound(number(1), false);
            }
        }
        "Min" => p.value.lower = bound(number(0), false),
        "Max" => p.value.upper = bound(number(0), false),
        "IsPositive" => p.value.lower = bound(0.0, true),
        "IsNegative" => p.value.upper = bound(0.0, true),
        "ArrayMinSize" => p.count.lower = bound(number(0), false),
        "ArrayMaxSize" => p.count.upper = bound(number(0), false),
        "ArrayNotEmpty" => p.count.lower = bound(1.0, false),
        _ if FLAGS.contains(&name) => {
            p.flags.insert(name.to_string());
        }
        _ if FORMATS.contains(&name) => {
            p.formats.insert(name.to_string());
        }
        "IsIn" => {
            // `<Kind[]>['a', 'b']` and `['a', 'b'] as Kind[]`: the list under its type.
            let list = arg(0).map(untyped);
            p.closed = Some(match list {
                Some(list) if kind_of(list) == "array" => Closed::Members(
                    named_children(list).into_iter().map(|m| compact(text(m, src)).replace('\'', "\"")).collect(),
                ),
                _ => Closed::Opaque,
            });
        }
        "IsEnum" => p.closed = Some(Closed::Opaque),
        _ => {}
    }
}

/// An expression without the type assertions around it (`<T[]>[...]`, `[...] as T[]`,
/// `[...] satisfies T[]`), each a level of a flat loop.
fn untyped(mut node: Node) -> Node {
    while matches!(kind_of(node), "type_assertion" | "as_expression" | "satisfies_expression") {
        // `<T>x` holds the type first; `x as T` the expression first.
        let inner = if kind_of(node) == "type_assertion" { node.named_child(1) } else { node.named_child(0) };
        let Some(inner) = inner else { break };
        node = strip_parens(inner);
    }
    node
}

/// The checks of an array's items (`each: true`) together with the property's own: a
/// check that loses `each: true` still validates a value that is no array (class-validator
/// applies `each` only to arrays, sets and maps), so moving it from the items to the
/// property admits nothing new.
fn with_own(items: &Prop, own: Option<&Prop>) -> Prop {
    let Some(own) = own else {
        return items.clone();
    };
    // `@IsOptional()` stays the property's own: the items never had it.
    let mut p = items.clone();
    p.not_empty.extend(own.not_empty.iter().cloned());
    p.flags.extend(own.flags.iter().cloned());
    p.formats.extend(own.formats.iter().cloned());
    for (mine, theirs) in [(&mut p.value, &own.value), (&mut p.length, &own.length), (&mut p.count, &own.count)] {
        if mine.lower.is_none() {
            mine.lower = theirs.lower.clone();
        }
        if mine.upper.is_none() {
            mine.upper = theirs.upper.clone();
        }
    }
    if p.closed.is_none() {
        p.closed = own.closed.clone();
    }
    p
}

fn loosened(old: &Range, new: &Range) -> bool {
    bound_loosened(&old.lower, &new.lower, true) || bound_loosened(&old.upper, &new.upper, false)
}

fn compare(old: &BTreeMap<String, Prop>, new: &BTreeMap<String, Prop>) -> Vec<RawFinding> {
    let mut out = Vec::new();
    for (symbol, a) in new {
        let Some(b) = old.get(symbol).filter(|b| b.validated) else {
            continue;
        };
        let merged;
        let a = match symbol.strip_suffix(".[]") {
            Some(prop) => {
                merged = with_own(a, new.get(prop));
                &merged
            }
            None => a,
        };
        let mut push = |rule| {
            out.push(RawFinding {
                line: a.line,
                rule,
                symbol: symbol.clone(),
                before: b.shown.clone(),
                after: a.shown.clone(),
                in_test: false,
            });
        };
        if a.optional && !b.optional {
            push(RuleId::TsClassValidatorOptionalAdded);
        }
        if !b.not_empty.is_empty() && a.not_empty.is_empty() {
            push(RuleId::TsClassValidatorNotEmptyRemoved);
        }
        let flags_lost = !b.flags.is_subset(&a.flags);
        if loosened(&b.value, &a.value) || loosened(&b.length, &a.length) || loosened(&b.count, &a.count) || flags_lost
        {
            push(RuleId::TsClassValidatorBoundLoosened);
        }
        if !b.formats.is_subset(&a.formats) && a.formats.is_subset(&b.formats) {
            push(RuleId::TsClassValidatorFormatRemoved);
        }
        let widened = match (&b.closed, &a.closed) {
            (Some(Closed::Members(o)), Some(Closed::Members(n))) => !n.is_subset(o),
            (Some(_), None) => true,
            _ => false,
        };
        if widened {
            push(RuleId::TsClassValidatorEnumWidened);
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(before: &str, after: &str) -> Vec<(RuleId, String)> {
        detect("src/dto.ts", before, after).unwrap().into_iter().map(|f| (f.rule, f.symbol)).collect()
    }

    const HEAD: &str =
        "import { IsEmail, IsIn, IsInt, IsNotEmpty, IsOptional, Max, MaxLength, Min } from 'class-validator';\n";

    #[test]
    fn each_loosening_is_found_on_its_property() {
        let before = format!(
            "{HEAD}export class CreateUser {{\n  @IsNotEmpty() @MaxLength(64)\n  name: string;\n  @IsEmail()\n  email: string;\n  @IsIn(['admin', 'user'])\n  role: string;\n  @IsInt() @Min(1) @Max(120)\n  age: number;\n  @MaxLength(8, {{ each: true }})\n  tags: string[];\n}}\n"
        );
        let after = format!(
            "{HEAD}export class CreateUser {{\n  @IsOptional() @MaxLength(256)\n  name?: string;\n  email: string;\n  @IsIn(['admin', 'user', 'guest'])\n  role: string;\n  @Min(0) @Max(120)\n  age: number;\n  @MaxLength(16, {{ each: true }})\n  tags: string[];\n}}\n"
        );
        let got = found(&before, &after);
        let want = [
            (RuleId::TsClassValidatorBoundLoosened, "CreateUser.age"),
            (RuleId::TsClassValidatorFormatRemoved, "CreateUser.email"),
            (RuleId::TsClassValidatorBoundLoosened, "CreateUser.name"),
            (RuleId::TsClassValidatorNotEmptyRemoved, "CreateUser.name"),
            (RuleId::TsClassValidatorOptionalAdded, "CreateUser.name"),
            (RuleId::TsClassValidatorEnumWidened, "CreateUser.role"),
            (RuleId::TsClassValidatorBoundLoosened, "CreateUser.tags.[]"),
        ];
        crate::widen::testing::assert_found(&got, &want);
    }

    #[test]
    fn narrowing_other_libraries_and_unvalidated_properties_are_not_findings() {
        let before = format!(
            "{HEAD}import {{ Max as Top }} from './own';\nclass A {{\n  @MaxLength(64) @IsIn(['a', 'b'])\n  a: string;\n  @Top(5)\n  b: number;\n  c: string;\n}}\n"
        );
        let after = format!(
            "{HEAD}import {{ Max as Top }} from './own';\nclass A {{\n  @IsIn(['a'])\n  @MaxLength(32)\n  a: string;\n  @Top(50)\n  b: number;\n  @IsOptional()\n  c?: string;\n}}\n"
        );
        assert_eq!(found(&before, &after), []);
    }

    #[test]
    fn a_namespace_import_and_aliases_are_read() {
        let before = "import * as cv from 'class-validator';\nimport { MaxLength as Most } from 'class-validator';\nclass A { @cv.Min(3) @Most(5) x: string; }\n";
        let after = "import * as cv from 'class-validator';\nimport { MaxLength as Most } from 'class-validator';\nclass A { @cv.Min(1) @Most(5) x: string; }\n";
        assert_eq!(found(before, after), [(RuleId::TsClassValidatorBoundLoosened, "A.x".to_string())]);
    }

    #[test]
    fn files_without_class_validator_are_not_parsed() {
        assert!(!may_hold("class A { @MaxLength(1) a: string }", "class A { a: string }"));
    }
}
