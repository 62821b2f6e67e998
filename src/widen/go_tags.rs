//! Go struct tags read by validators: go-playground's `validate:"required,max=64"` and
//! gin's `binding:"required"`, per struct field (`CreateUser.Name`, a field of an
//! anonymous struct inside it `Request.Body.Name`), compared between the two versions
//! of a file: `required` removed (or `omitempty` added as the first rule, the only
//! place the validator reads it), a bound (`min`, `max`, `len`, `gt`, `gte`, `lt`,
//! `lte`) lowered, raised or removed, `oneof` (or `eq=a|eq=b`) gaining values, and any
//! other check (`email`, `uuid`, `alphanum`...) removed with none added in its place.
//!
//! A pass of its own beside the Go detector, run only where both versions hold
//! `validate:"` or `binding:"` (a substring test). Tags are read the way Go's
//! `reflect.StructTag.Get` reads them; what follows a `dive` applies to a collection's
//! items, whose bounds and `oneof` are compared too (reported on the field). A type
//! renamed in the change (its exact field set found under one new name only) is
//! compared under its new name. The walk over types is iterative (an explicit stack).
//!
//! Not findings: a field or type removed, a tag narrowed, a check replaced by another
//! (what the new one admits cannot be told), a bound whose value is not a number
//! changed (not removed), a field renamed, a type renamed while its fields change, the
//! bounds of a field whose type changed (a `string` with `lte=500` made a struct).

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::syntax::{collapse_whitespace, field, kind_of, line, named_children, text};
use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity};

const GO: &[Language] = &[Language::Go];

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: RuleId::GoTagRequiredRemoved,
        languages: GO,
        family: Family::Optionality,
        description: "A struct field's `validate` or `binding` tag no longer requires a value: `required` removed (or the tag with it), or `omitempty` added or moved to the front (the validator reads it only as the first rule).",
        severity: Severity::High,
        message: "{symbol} may now be empty: tag `{before}` became `{after}`",
        invariant: "Validated input always carried a non-zero value for this field.",
    },
    RuleDef {
        id: RuleId::GoTagBoundLoosened,
        languages: GO,
        family: Family::NumericRange,
        description: "A `validate` or `binding` bound admits more: `min`/`gte`/`gt` lowered or removed, `max`/`lte`/`lt` raised or removed, `len` removed.",
        severity: Severity::Medium,
        message: "{symbol} accepts values outside the old bounds: tag `{before}` became `{after}`",
        invariant: "Validated values, lengths or counts stayed within the tag's bounds, which storage and consumers may rely on.",
    },
    RuleDef {
        id: RuleId::GoTagOneofWidened,
        languages: GO,
        family: Family::EnumErasure,
        description: "A `validate` or `binding` tag's `oneof=...` (or a rule of `eq=` alternatives, `eq=a|eq=b`) gains values or is removed.",
        severity: Severity::High,
        message: "{symbol} accepts values outside its old set: tag `{before}` became `{after}`",
        invariant: "The validated value was one of a closed set, so every consumer could handle each case.",
    },
    RuleDef {
        id: RuleId::GoTagCheckRemoved,
        languages: GO,
        family: Family::CheckRemoved,
        description: "A `validate` or `binding` check other than a bound, `required` or `oneof` (`email`, `uuid`, `url`, `alphanum`, `e164`...) is removed, with no other check added to the field.",
        severity: Severity::Medium,
        message: "{symbol} is no longer checked by `{before}`: tag became `{after}`",
        invariant: "Validated values passed the removed check, so code using them could rely on their form.",
    },
];

/// The tag keys whose values are validation rules.
pub(super) const KEYS: &[&str] = &["validate", "binding"];

/// Whether the old version may hold a validation tag (the pass's prefilter). The new
/// one need not: a change that removes every tag of the file loosens each of them.
pub(crate) fn may_hold(before: &str, _after: &str) -> bool {
    KEYS.iter().any(|k| memchr::memmem::find(before.as_bytes(), format!("{k}:\"").as_bytes()).is_some())
}

/// The tag findings of a Go file. A version that does not parse gives none (the Go
/// detector reports the error).
pub(crate) fn detect(before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    if !may_hold(before, after) {
        return Ok(Vec::new());
    }
    let lang: tree_sitter::Language = tree_sitter_go::LANGUAGE.into();
    let Some((old, new)) = super::syntax::both_versions(&lang, before, after, fields) else {
        return Ok(Vec::new());
    };
    Ok(compare(&old, &new))
}

/// A bound as a tag states it.
#[derive(Debug, Clone, PartialEq)]
struct Bound {
    /// `NaN` when not a number (a duration, a field reference).
    value: f64,
    exclusive: bool,
}

/// What one field's validation tags declare (the `validate` and `binding` keys
/// together: gin reads `binding`, the validator `validate`).
#[derive(Debug, Default, Clone)]
struct Field {
    line: u32,
    /// The validation tags as written, one line (`validate:"required,max=64"`).
    shown: String,
    required: bool,
    omitempty: bool,
    lower: Option<Bound>,
    upper: Option<Bound>,
    oneof: Option<BTreeSet<String>>,
    /// Every other rule, by its text (`email`, `startswith=ab`).
    checks: BTreeSet<String>,
    /// The validation keys' values as written, to find them under another key.
    values: Vec<String>,
    /// The whole tag, for [`not_input`] and [`moved_to_another_key`].
    tag: String,
    /// The bounds and set after the first `dive`: each item's (a slice's strings).
    items: Items,
    /// The field's type as written, without a leading `*` (empty for a struct type
    /// declared in place).
    ty: String,
}

/// What the rules after a `dive` declare of each item (up to a second `dive` or a
/// map's `keys`, which are not read).
#[derive(Debug, Default, Clone)]
struct Items {
    lower: Option<Bound>,
    upper: Option<Bound>,
    oneof: Option<BTreeSet<String>>,
}

/// Every struct field with a validation tag, by `Type.Field`.
fn fields(root: Node, src: &str) -> BTreeMap<String, Field> {
    let mut out = BTreeMap::new();
    // (symbol prefix, struct_type node).
    let mut stack: Vec<(String, Node)> = Vec::new();
    let mut decls = vec![root];
    while let Some(n) = decls.pop() {
        for child in named_children(n) {
            match kind_of(child) {
                "type_declaration" => decls.push(child),
                "type_spec" => {
                    if let (Some(name), Some(ty)) = (field(child, "name"), field(child, "type"))
                        && kind_of(ty) == "struct_type"
                    {
                        stack.push((text(name, src).to_string(), ty));
                    }
                }
                _ => {}
            }
        }
    }
    while let Some((prefix, st)) = stack.pop() {
        let decls = named_children(st)
            .into_iter()
            .filter(|c| kind_of(*c) == "field_declaration_list")
            .flat_map(named_children)
            .filter(|c| kind_of(*c) == "field_declaration");
        for fd in decls {
            let names: Vec<String> = named_children(fd)
                .into_iter()
                .filter(|c| kind_of(*c) == "field_identifier")
                .map(|n| text(n, src).to_string())
                .collect();
            let ty = field(fd, "type");
            for name in &names {
                let symbol = format!("{prefix}.{name}");
                if let Some(ty) = ty.filter(|t| kind_of(*t) == "struct_type") {
                    stack.push((symbol.clone(), ty));
                }
                // Every field, tagged or not: a tag removed whole loosens as much as its rules.
                let tag = field(fd, "tag").map_or("", |t| text(t, src));
                let mut f = read_tag(tag, line(fd));
                f.ty = ty
                    .filter(|t| kind_of(*t) != "struct_type")
                    .map_or(String::new(), |t| text(t, src).trim_start_matches('*').to_string());
                out.insert(symbol, f);
            }
        }
    }
    out
}

/// Every `key:"value"` pair of a struct tag, in order, as `reflect.StructTag.Lookup`
/// reads them (pairs separated by spaces; escapes inside a value kept as written, which
/// no validation rule uses); reading stops at the first malformed pair, as it does.
fn pairs(tag: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = tag.trim_matches('`');
    loop {
        rest = rest.trim_start();
        let Some(colon) = rest.find(':') else { return out };
        let name = &rest[..colon];
        let Some(after) = rest[colon + 1..].strip_prefix('"') else { return out };
        // The closing quote: the first one not escaped.
        let mut end = None;
        let mut escaped = false;
        for (i, c) in after.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => {
                    end = Some(i);
                    break;
                }
                _ => escaped = false,
            }
        }
        let Some(end) = end else { return out };
        out.push((name, &after[..end]));
        rest = &after[end + 1..];
    }
}

/// The value of `key` in a struct tag, as `reflect.StructTag.Lookup` finds it.
pub(super) fn lookup<'s>(tag: &'s str, key: &str) -> Option<&'s str> {
    pairs(tag).into_iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

/// The keys by which a request binder (encoding/json, gin's form, query, URI and header
/// binding, XML, YAML) fills a field from input.
const INPUT_KEYS: &[&str] = &["json", "form", "query", "uri", "header", "xml", "yaml", "params"];

/// Whether a field's tag takes it out of every input: `json:"-"` and no other binding
/// key that still names it. Such a field is set by the server, so its validation no
/// longer guards input and removing it loosens nothing.
fn not_input(tag: &str) -> bool {
    let bound: Vec<(&str, &str)> = pairs(tag).into_iter().filter(|(k, _)| INPUT_KEYS.contains(k)).collect();
    bound.iter().any(|(k, v)| *k == "json" && *v == "-") && bound.iter().all(|(_, v)| *v == "-")
}

/// Whether the rules of `old` (a field's validation values) stand, every one, under
/// another key of `tag`: the field moved to another validator's tag (`binding:"required"`
/// to `vd:"required"`), which these rules do not read, so they do not judge it.
fn moved_to_another_key(old: &[String], tag: &str) -> bool {
    let old: BTreeSet<&str> = old.iter().flat_map(|v| v.split(',')).map(str::trim).filter(|r| !r.is_empty()).collect();
    !old.is_empty()
        && pairs(tag).into_iter().filter(|(k, _)| !KEYS.contains(k) && !INPUT_KEYS.contains(k)).any(|(_, v)| {
            let there: BTreeSet<&str> = v.split(',').map(str::trim).collect();
            old.is_subset(&there)
        })
}

/// A field's validation rules from its tag (none when it has no validation key).
fn read_tag(tag: &str, line: u32) -> Field {
    let values: Vec<(&str, &str)> = KEYS.iter().filter_map(|k| lookup(tag, k).map(|v| (*k, v))).collect();
    let mut f = Field {
        line,
        shown: collapse_whitespace(&values.iter().map(|(k, v)| format!("{k}:\"{v}\"")).collect::<Vec<_>>().join(" ")),
        values: values.iter().map(|(_, v)| v.to_string()).collect(),
        tag: tag.to_string(),
        ..Field::default()
    };
    for (_, value) in values {
        // What follows `dive` constrains a collection's items: their bounds and set are
        // compared apart (`items`).
        let mut items = value.split(',').map(str::trim).skip_while(|r| *r != "dive").skip(1);
        if !value.contains("keys") {
            for rule in items.by_ref().take_while(|r| *r != "dive") {
                let (name, arg) = rule.split_once('=').unwrap_or((rule, ""));
                let number = || Some(Bound { value: arg.trim().parse().unwrap_or(f64::NAN), exclusive: false });
                let i = &mut f.items;
                match name {
                    "min" | "gte" => i.lower = number(),
                    "gt" => i.lower = number().map(|b| Bound { exclusive: true, ..b }),
                    "max" | "lte" => i.upper = number(),
                    "lt" => i.upper = number().map(|b| Bound { exclusive: true, ..b }),
                    "len" => (i.lower, i.upper) = (number(), number()),
                    "oneof" => i.oneof = Some(arg.split_whitespace().map(str::to_string).collect()),
                    _ => {}
                }
            }
        }
        for (at, rule) in value.split(',').map(str::trim).take_while(|r| *r != "dive").enumerate() {
            // `eq=a|eq=b`: one of a closed set, as `oneof=a b` is.
            if let Some(set) = eq_alternatives(rule) {
                f.oneof = Some(set);
                continue;
            }
            let (name, arg) = rule.split_once('=').unwrap_or((rule, ""));
            let number = || Some(Bound { value: arg.trim().parse().unwrap_or(f64::NAN), exclusive: false });
            match name {
                "required" => f.required = true,
                // The validator reads `omitempty` only as a field's first rule: written
                // after others, an empty value still meets every rule.
                "omitempty" => f.omitempty |= at == 0,
                "min" | "gte" => f.lower = number(),
                "gt" => f.lower = number().map(|b| Bound { exclusive: true, ..b }),
                "max" | "lte" => f.upper = number(),
                "lt" => f.upper = number().map(|b| Bound { exclusive: true, ..b }),
                "len" => (f.lower, f.upper) = (number(), number()),
                "oneof" => f.oneof = Some(arg.split_whitespace().map(str::to_string).collect()),
                "" => {}
                _ => {
                    f.checks.insert(rule.to_string());
                }
            }
        }
    }
    f
}

/// The values of a rule made only of `eq=` alternatives (`eq=nick|eq=theme`): the
/// closed set it admits.
fn eq_alternatives(rule: &str) -> Option<BTreeSet<String>> {
    if !rule.contains('|') {
        return None;
    }
    rule.split('|').map(|alt| alt.trim().strip_prefix("eq=").map(str::to_string)).collect()
}

/// Whether `new` admits a value below (`lower`) or above the old bound.
fn loosened(old: &Option<Bound>, new: &Option<Bound>, lower: bool) -> bool {
    match (old, new) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(o), Some(n)) if o.value.is_nan() || n.value.is_nan() => false,
        (Some(o), Some(n)) => {
            let wider = if lower { n.value < o.value } else { n.value > o.value };
            wider || (n.value == o.value && o.exclusive && !n.exclusive)
        }
    }
}

/// Types the change renamed: a type only the new version declares, whose fields (by
/// name, nested ones included) are exactly those of one type only the old version
/// declares, and no other type of either side has that field set. New name to old.
fn renamed_types(old: &BTreeMap<String, Field>, new: &BTreeMap<String, Field>) -> BTreeMap<String, String> {
    let by_type = |m: &BTreeMap<String, Field>| {
        let mut types: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for symbol in m.keys() {
            if let Some((ty, rest)) = symbol.split_once('.') {
                types.entry(ty.to_string()).or_default().insert(rest.to_string());
            }
        }
        types
    };
    let (before, after) = (by_type(old), by_type(new));
    let gone: Vec<(&String, &BTreeSet<String>)> = before.iter().filter(|(t, _)| !after.contains_key(*t)).collect();
    let came: Vec<(&String, &BTreeSet<String>)> = after.iter().filter(|(t, _)| !before.contains_key(*t)).collect();
    let mut out = BTreeMap::new();
    for (name, fields) in &came {
        let olds: Vec<&&String> = gone.iter().filter(|(_, f)| f == fields).map(|(t, _)| t).collect();
        let news = came.iter().filter(|(_, f)| f == fields).count();
        if let ([old_name], 1) = (olds.as_slice(), news) {
            out.insert((*name).clone(), (**old_name).clone());
        }
    }
    out
}

fn compare(old: &BTreeMap<String, Field>, new: &BTreeMap<String, Field>) -> Vec<RawFinding> {
    let mut out = Vec::new();
    let renamed = renamed_types(old, new);
    for (symbol, a) in new {
        // The field under its type's old name, when the change renamed the type.
        let old_symbol =
            symbol.split_once('.').and_then(|(ty, rest)| renamed.get(ty).map(|was| format!("{was}.{rest}")));
        let Some(b) = old.get(symbol).or_else(|| old_symbol.and_then(|s| old.get(&s))) else {
            continue;
        };
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
        // A field taken out of the input, or whose rules now stand under another
        // validator's key, is not judged.
        if not_input(&a.tag) || moved_to_another_key(&b.values, &a.tag) {
            continue;
        }
        // `omitempty` skips the rules after it for an empty value: it loosens only
        // rules an empty value failed (a field with no rule, or only an upper bound,
        // took the empty value already).
        let empty_refused = b.required || b.lower.is_some() || b.oneof.is_some() || !b.checks.is_empty();
        if (b.required && !a.required) || (!b.omitempty && a.omitempty && empty_refused) {
            push(RuleId::GoTagRequiredRemoved, &b.shown, &a.shown);
        }
        // A bound means another thing on another type (a string's length, a number's
        // value, a struct's nested rules): a field retyped is not judged on its bounds
        // or set (the Go detector judges the type itself).
        let retyped = !b.ty.is_empty() && !a.ty.is_empty() && b.ty != a.ty;
        let (bi, ai) = (&b.items, &a.items);
        let items_loosened = loosened(&bi.lower, &ai.lower, true) || loosened(&bi.upper, &ai.upper, false);
        if !retyped && (loosened(&b.lower, &a.lower, true) || loosened(&b.upper, &a.upper, false) || items_loosened) {
            push(RuleId::GoTagBoundLoosened, &b.shown, &a.shown);
        }
        let set_widened = |old: &Option<BTreeSet<String>>, new: &Option<BTreeSet<String>>| match (old, new) {
            // As many values as before, one swapped for another (`oneof=name status` to
            // `oneof=name state`): a value renamed, the set no larger.
            (Some(o), Some(n)) => {
                let renamed = n.len() == o.len() && o.difference(n).count() == 1;
                !n.is_subset(o) && !renamed
            }
            (Some(_), None) => true,
            _ => false,
        };
        let widened = set_widened(&b.oneof, &a.oneof) || set_widened(&bi.oneof, &ai.oneof);
        if widened && !retyped {
            push(RuleId::GoTagOneofWidened, &b.shown, &a.shown);
        }
        let removed: Vec<&String> = b.checks.difference(&a.checks).collect();
        if let Some(first) = removed.first()
            && a.checks.is_subset(&b.checks)
        {
            out.push(RawFinding {
                line: a.line,
                rule: RuleId::GoTagCheckRemoved,
                symbol: symbol.clone(),
                before: (*first).clone(),
                after: a.shown.clone(),
                in_test: false,
            });
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_read_as_reflect_reads_them() {
        let tag = r#"`json:"name,omitempty" validate:"required,max=64" binding:"email"`"#;
        assert_eq!(lookup(tag, "validate"), Some("required,max=64"));
        assert_eq!(lookup(tag, "binding"), Some("email"));
        assert_eq!(lookup(tag, "form"), None);
        let f = read_tag(tag, 3);
        assert!(f.required && f.upper.is_some() && f.checks.contains("email"));
    }

    #[test]
    fn loosening_and_narrowing() {
        // `Kept` keeps a validation tag in both versions (the pass's prefilter).
        let src = |tag: &str| {
            format!(
                "package api\n\ntype User struct {{\n\tName string `{tag}`\n\tKept string `validate:\"required\"`\n}}\n"
            )
        };
        let rules = |a: &str, b: &str| -> Vec<RuleId> {
            detect(&src(a), &src(b)).unwrap().into_iter().map(|f| f.rule).collect()
        };
        assert_eq!(
            rules(r#"validate:"required,max=64""#, r#"validate:"max=128""#),
            [RuleId::GoTagBoundLoosened, RuleId::GoTagRequiredRemoved]
        );
        assert_eq!(rules(r#"validate:"max=128""#, r#"validate:"required,max=64""#), []);
        assert_eq!(rules(r#"validate:"oneof=a b""#, r#"validate:"oneof=a b c""#), [RuleId::GoTagOneofWidened]);
        assert_eq!(
            rules(r#"binding:"required,eq=a|eq=b""#, r#"binding:"required,eq=a|eq=b|eq=c""#),
            [RuleId::GoTagOneofWidened]
        );
        assert_eq!(rules(r#"binding:"eq=a|eq=b|eq=c""#, r#"binding:"eq=a|eq=c""#), []);
        assert_eq!(rules(r#"binding:"eq=a|eq=b""#, r#"binding:"eq=a|ne=b""#), [RuleId::GoTagOneofWidened]);
        // `omitempty` counts as the first rule only: moved to the front it skips the
        // others for an empty value; written last it never did.
        assert_eq!(
            rules(r#"binding:"max=32,alphanum,omitempty""#, r#"binding:"omitempty,max=32,alphanum""#),
            [RuleId::GoTagRequiredRemoved]
        );
        assert_eq!(rules(r#"binding:"omitempty,max=32,alphanum""#, r#"binding:"max=32,alphanum,omitempty""#), []);
        assert_eq!(rules(r#"validate:"email""#, r#"validate:"url""#), []);
        // Taken out of the input, moved to another validator's key, or `omitempty`
        // added where an empty value passed already: nothing loosened.
        assert_eq!(rules(r#"json:"bio" validate:"omitempty,max=64""#, r#"json:"-""#), []);
        assert_eq!(
            rules(r#"json:"id" form:"id" validate:"required""#, r#"json:"-" form:"id""#),
            [RuleId::GoTagRequiredRemoved]
        );
        assert_eq!(rules(r#"json:"name" binding:"required,email""#, r#"json:"name" vd:"required,email""#), []);
        assert_eq!(
            rules(r#"json:"name" binding:"required,email""#, r#"json:"name" vd:"required""#),
            [RuleId::GoTagCheckRemoved, RuleId::GoTagRequiredRemoved]
        );
        assert_eq!(rules(r#"json:"bio""#, r#"json:"bio" validate:"omitempty,gt=0,lte=4096""#), []);
        assert_eq!(rules(r#"validate:"max=64""#, r#"validate:"omitempty,max=64""#), []);
        assert_eq!(rules(r#"validate:"min=3""#, r#"validate:"omitempty,min=3""#), [RuleId::GoTagRequiredRemoved]);
    }
}
