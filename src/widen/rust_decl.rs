//! Rust declared constraints on struct fields: serde's `#[serde(default)]` added to a
//! field that had to be present (on the field, or on the struct for all of them), and
//! the `validator` crate's `#[validate(...)]` rules (`length(min, max)`,
//! `range(min, max)`, `email`, `url`, `regex(...)`, `custom(...)`...) loosened or
//! removed, per field (`CreateUser.name`).
//!
//! A pass of its own beside the Rust detector, run only where the old version mentions
//! `Deserialize` or `validate(` and the new one `serde(` or `validate(` (substring
//! tests), over the whole file: structs are items the change window may leave out. The
//! walk goes through modules with an explicit stack; structs inside function bodies
//! are not read. (`#[serde(deny_unknown_fields)]` removed is the Rust detector's own
//! `rust-deny-unknown-fields-removed`.)
//!
//! Deliberately not findings: a struct or field removed or renamed, `default` added to
//! an `Option` field (serde already reads a missing `Option` as `None`), a bound given
//! by a constant changed (only its removal is judged), a rule replaced by another (a
//! regular expression rewritten, `email` to `custom`), narrowing.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::syntax::{collapse_whitespace, field, kind_of, line, named_children, text};
use super::zod::{Bound, bound_loosened, cap, number_literal};
use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity};

const RUST: &[Language] = &[Language::Rust];

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: RuleId::RustSerdeDefaultAdded,
        languages: RUST,
        family: Family::Optionality,
        description: "A struct field that deserialising required (not an `Option`, no default) gets `#[serde(default)]` or `#[serde(default = \"...\")]`, on the field or on the struct.",
        severity: Severity::Medium,
        message: "{symbol} may now be missing from the input: `{before}` became `{after}`",
        invariant: "Every deserialised value came with this field from its source; a missing one was an error, not a silent default.",
    },
    RuleDef {
        id: RuleId::RustValidateBoundLoosened,
        languages: RUST,
        family: Family::NumericRange,
        description: "A `validator` crate bound admits more: `length(min, max, equal)` or `range(min, max, exclusive_min, exclusive_max)` widened or removed from a field's `#[validate(...)]`.",
        severity: Severity::Medium,
        message: "{symbol} accepts values outside the old bounds: `{before}` became `{after}`",
        invariant: "Validated values and lengths stayed within the declared bounds, which storage and consumers may rely on.",
    },
    RuleDef {
        id: RuleId::RustValidateCheckRemoved,
        languages: RUST,
        family: Family::CheckRemoved,
        description: "A `validator` crate check other than a bound (`email`, `url`, `regex(...)`, `contains(...)`, `custom(...)`, `required`, `nested`, `must_match(...)`...) is removed from a field, with no other check added to it.",
        severity: Severity::Medium,
        message: "{symbol} is no longer checked by `{before}`: it became `{after}`",
        invariant: "Validated values passed the removed check, so code using them could rely on their form.",
    },
];

/// Longest rendering of a field's attributes in a finding.
const MAX_RENDER: usize = 160;

/// Whether the versions may hold what this pass reads (its prefilter).
pub(crate) fn may_hold(before: &str, after: &str) -> bool {
    let has = |s: &str, n: &str| memchr::memmem::find(s.as_bytes(), n.as_bytes()).is_some();
    (has(before, "Deserialize") || has(before, "validate(")) && (has(after, "serde(") || has(after, "validate("))
}

/// The findings of a Rust file. A version that does not parse gives none (the Rust
/// detector reports the error).
#[cfg(test)]
pub(crate) fn detect(before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    detect_with(before, after, true)
}

/// [`detect`], each version parsed without its function bodies (which the pass never
/// reads: [`super::detector::without_bodies`]) unless `window` is off (the reference
/// parse, every version whole). A syntax error inside a body left out then no longer
/// hides the file's findings, as with the Rust detector's own elided parse.
pub(crate) fn detect_with(before: &str, after: &str, window: bool) -> Result<Vec<RawFinding>, DetectError> {
    if !may_hold(before, after) {
        return Ok(Vec::new());
    }
    let read = |src: &str| {
        let tree = super::detector::without_bodies(&super::rust::RustDetector, "a.rs", src, window)?;
        Some(fields(tree.root_node(), src))
    };
    let Some(old) = read(before) else { return Ok(Vec::new()) };
    let Some(new) = read(after) else { return Ok(Vec::new()) };
    Ok(compare(&old, &new))
}

/// A lower and an upper bound.
#[derive(Debug, Default, Clone)]
struct Range {
    lower: Option<Bound>,
    upper: Option<Bound>,
}

/// What one struct field declares.
#[derive(Debug, Default, Clone)]
struct Field {
    line: u32,
    /// The field's `serde` and `validate` attributes (and the struct's `default`), on
    /// one line.
    shown: String,
    option: bool,
    /// `default` on the field or on its struct.
    default: bool,
    length: Range,
    range: Range,
    /// Every other validator rule, by name (`email`, `regex`, `custom`).
    checks: BTreeSet<String>,
}

/// Every named field of every struct outside function bodies, by `Struct.field`.
fn fields(root: Node, src: &str) -> BTreeMap<String, Field> {
    let mut out = BTreeMap::new();
    // Item lists still to read: the file, then each inline module's body.
    let mut lists = vec![root];
    while let Some(list) = lists.pop() {
        let mut attrs: Vec<&str> = Vec::new();
        for item in named_children(list) {
            match kind_of(item) {
                "attribute_item" => {
                    attrs.push(text(item, src));
                    continue;
                }
                "mod_item" => lists.extend(field(item, "body")),
                "struct_item" => read_struct(item, &attrs, src, &mut out),
                _ => {}
            }
            attrs.clear();
        }
    }
    out
}

fn read_struct(item: Node, attrs: &[&str], src: &str, out: &mut BTreeMap<String, Field>) {
    let (Some(name), Some(body)) = (field(item, "name"), field(item, "body")) else { return };
    if kind_of(body) != "field_declaration_list" {
        return;
    }
    let container_default = attrs.iter().any(|a| serde_default(a));
    let name = text(name, src);
    let mut own: Vec<&str> = Vec::new();
    for member in named_children(body) {
        match kind_of(member) {
            "attribute_item" => {
                own.push(text(member, src));
                continue;
            }
            "field_declaration" => {}
            _ => {
                own.clear();
                continue;
            }
        }
        let (Some(key), Some(ty)) = (field(member, "name"), field(member, "type")) else {
            own.clear();
            continue;
        };
        let ty = text(ty, src);
        let mut f = Field {
            line: line(key),
            option: ty.starts_with("Option<") || ty.contains("::Option<"),
            default: container_default || own.iter().any(|a| serde_default(a)),
            ..Field::default()
        };
        let mut shown: Vec<String> = Vec::new();
        if container_default {
            shown.push("#[serde(default)] on the struct".to_string());
        }
        for a in &own {
            if let Some(args) = inside(a, "validate") {
                read_validate(&mut f, args);
            } else if inside(a, "serde").is_none() {
                continue;
            }
            shown.push(collapse_whitespace(a));
        }
        f.shown = cap(&shown.join(" "), MAX_RENDER);
        out.insert(format!("{name}.{}", text(key, src)), f);
        own.clear();
    }
}

/// The arguments of `#[name(...)]`.
fn inside<'a>(attr: &'a str, name: &str) -> Option<&'a str> {
    let rest = attr.strip_prefix("#[")?.trim_start().strip_prefix(name)?.trim_start().strip_prefix('(')?;
    let end = rest.rfind(')')?;
    Some(&rest[..end])
}

/// Whether a `#[serde(...)]` attribute says `default` (or `default = "path"`).
fn serde_default(attr: &str) -> bool {
    inside(attr, "serde").is_some_and(|args| {
        items(args)
            .iter()
            .any(|i| i.strip_prefix("default").is_some_and(|r| r.is_empty() || r.trim_start().starts_with('=')))
    })
}

/// The comma-separated items of an argument list, at the top level (not inside
/// parentheses, brackets or strings), trimmed.
fn items(args: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quoted, mut start) = (0i32, false, 0);
    let bytes = args.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b'"' if i == 0 || bytes[i - 1] != b'\\' => quoted = !quoted,
            b'(' | b'[' | b'{' if !quoted => depth += 1,
            b')' | b']' | b'}' if !quoted => depth -= 1,
            b',' if !quoted && depth == 0 => {
                out.push(args[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(args[start..].trim());
    out.retain(|i| !i.is_empty());
    out
}

/// What one `#[validate(...)]` declares.
fn read_validate(f: &mut Field, args: &str) {
    for item in items(args) {
        let name_end = item.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(item.len());
        let (name, rest) = item.split_at(name_end);
        let inner = rest.trim_start().strip_prefix('(').and_then(|r| r.strip_suffix(')'));
        let bounds = || -> BTreeMap<&str, f64> {
            inner
                .map(items)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.trim(), number_literal(v)))
                .collect()
        };
        let bound = |value: Option<&f64>, exclusive| value.map(|&value| Bound { value, exclusive });
        match name {
            "length" => {
                let b = bounds();
                f.length.lower = bound(b.get("min").or(b.get("equal")), false);
                f.length.upper = bound(b.get("max").or(b.get("equal")), false);
            }
            "range" => {
                let b = bounds();
                f.range.lower = bound(b.get("min"), false).or(bound(b.get("exclusive_min"), true));
                f.range.upper = bound(b.get("max"), false).or(bound(b.get("exclusive_max"), true));
            }
            "" => {}
            _ => {
                f.checks.insert(name.to_string());
            }
        }
    }
}

fn loosened(old: &Range, new: &Range) -> bool {
    bound_loosened(&old.lower, &new.lower, true) || bound_loosened(&old.upper, &new.upper, false)
}

fn compare(old: &BTreeMap<String, Field>, new: &BTreeMap<String, Field>) -> Vec<RawFinding> {
    let mut out = Vec::new();
    for (symbol, a) in new {
        let Some(b) = old.get(symbol) else { continue };
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
        // An `Option` is already read as `None` when missing; a field that became one
        // is the Rust detector's `rust-option-widened`.
        if a.default && !b.default && !b.option && !a.option {
            push(RuleId::RustSerdeDefaultAdded);
        }
        if loosened(&b.length, &a.length) || loosened(&b.range, &a.range) {
            push(RuleId::RustValidateBoundLoosened);
        }
        if !b.checks.is_subset(&a.checks) && a.checks.is_subset(&b.checks) {
            push(RuleId::RustValidateCheckRemoved);
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(before: &str, after: &str) -> Vec<(RuleId, String)> {
        detect(before, after).unwrap().into_iter().map(|f| (f.rule, f.symbol)).collect()
    }

    #[test]
    fn each_loosening_is_found_on_its_field() {
        let before = "use serde::Deserialize;\n#[derive(Deserialize, Validate)]\npub struct CreateUser {\n    #[validate(length(min = 1, max = 64))]\n    pub name: String,\n    #[validate(email)]\n    pub email: String,\n    #[validate(range(min = 18, max = 150))]\n    pub age: u32,\n    pub nick: Option<String>,\n}\nmod inner {\n    #[derive(serde::Deserialize)]\n    struct Settings { theme: String, size: u8 }\n}\n";
        let after = "use serde::Deserialize;\n#[derive(Deserialize, Validate)]\npub struct CreateUser {\n    #[serde(default)]\n    #[validate(length(min = 1, max = 256))]\n    pub name: String,\n    pub email: String,\n    #[validate(range(min = 0, max = 150))]\n    pub age: u32,\n    #[serde(default)]\n    pub nick: Option<String>,\n}\nmod inner {\n    #[derive(serde::Deserialize)]\n    #[serde(rename_all = \"camelCase\", default)]\n    struct Settings { theme: String, size: u8 }\n}\n";
        let got = found(before, after);
        let want = [
            (RuleId::RustValidateBoundLoosened, "CreateUser.age"),
            (RuleId::RustValidateCheckRemoved, "CreateUser.email"),
            (RuleId::RustSerdeDefaultAdded, "CreateUser.name"),
            (RuleId::RustValidateBoundLoosened, "CreateUser.name"),
            (RuleId::RustSerdeDefaultAdded, "Settings.size"),
            (RuleId::RustSerdeDefaultAdded, "Settings.theme"),
        ];
        crate::widen::testing::assert_found(&got, &want);
    }

    #[test]
    fn narrowing_renames_and_replacements_are_not_findings() {
        let before = "#[derive(Deserialize)]\nstruct A {\n    #[validate(length(max = 64), regex(path = *RE))]\n    a: String,\n    #[serde(rename = \"default\")]\n    b: String,\n    #[validate(email)]\n    c: String,\n}\n";
        let after = "#[derive(Deserialize)]\nstruct A {\n    #[validate(length(min = 1, max = 32), regex(path = *OTHER_RE))]\n    a: String,\n    #[serde(rename = \"default\", alias = \"bee\")]\n    b: String,\n    #[validate(custom(function = \"check_mail\"))]\n    c: String,\n}\n";
        assert_eq!(found(before, after), []);
    }

    /// The pass reads no function body, so leaving every body out of its parse changes
    /// none of its findings: on every Rust fixture, and on a file whose structs stand
    /// between functions with braces in strings, structs inside bodies (never read), a
    /// test module's struct of the same name as another's (the later one wins, both
    /// ways) and comments between a field's attributes and the field (read as items
    /// either way: the parse keeps comments).
    #[test]
    fn bodies_left_out_change_no_finding() {
        let mut pairs: Vec<(String, String)> =
            crate::widen::testing::pairs("rust-", &["rs"]).into_iter().map(|(_, b, a)| (b, a)).collect();
        let file = |limit: &str, default: &str| {
            format!(
                "use serde::Deserialize;\nfn f() -> &'static str {{\n    struct Inner {{ a: u8 }}\n    \"}} {{\"\n}}\n\
                 #[derive(Deserialize)]\npub struct Config {{\n    #[validate(length(max = {limit}))]\n    pub name: String,\n    \
                 {default}\n    // why\n    pub size: u8,\n}}\nimpl Config {{\n    pub fn g(&self) -> u8 {{ match self.size {{ 0 => {{ 1 }} _ => 2 }} }}\n}}\n\
                 #[cfg(test)]\nmod tests {{\n    #[derive(serde::Deserialize)]\n    struct Config {{\n        {default}\n        kind: u8,\n    }}\n    \
                 #[test]\n    fn t() {{ assert!(true); }}\n}}\n"
            )
        };
        pairs.push((file("64", ""), file("256", "#[serde(default)]")));
        pairs.push((file("64", "#[serde(default)]"), file("64", "")));
        let lang: tree_sitter::Language = tree_sitter_rust::LANGUAGE.into();
        let nodes = |tree: Option<tree_sitter::Tree>| tree.map_or(0, |t| t.root_node().descendant_count());
        let mut left_out = 0;
        for (before, after) in &pairs {
            assert_eq!(detect_with(before, after, true), detect_with(before, after, false), "{before}\n---\n{after}");
            for src in [before, after] {
                let light =
                    super::super::detector::without_bodies(&super::super::rust::RustDetector, "a.rs", src, true);
                let whole = crate::widen::syntax::with_parser(&lang, |p| p.parse(src.as_str(), None)).flatten();
                left_out += usize::from(light.is_some() && nodes(light) < nodes(whole));
            }
        }
        assert!(left_out > 20, "versions parsed with bodies left out: {left_out}");
        let got = found(&pairs[pairs.len() - 2].0, &pairs[pairs.len() - 2].1);
        crate::widen::testing::assert_found(
            &got,
            &[(RuleId::RustValidateBoundLoosened, "Config.name"), (RuleId::RustSerdeDefaultAdded, "Config.kind")],
        );
    }

    #[test]
    fn items_split_at_the_top_level() {
        assert_eq!(
            items(r#"length(min = 1, max = 2), regex(path = "a,b"), email"#),
            ["length(min = 1, max = 2)", r#"regex(path = "a,b")"#, "email"]
        );
        assert!(serde_default("#[serde(default = \"now\")]"));
        assert!(!serde_default("#[serde(default_with = \"x\")]"));
    }
}
