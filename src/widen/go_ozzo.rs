//! Go ozzo-validation rules: what `validation.ValidateStruct(&a, validation.Field(&a.Name,
//! validation.Required, validation.Length(1, 64), is.Email))` declares for each field
//! (`Address.Name`: the receiver's type, or the enclosing function's name, then the
//! field), compared between the two versions of a file: `Required` removed (or made
//! `NilOrNotEmpty`, `Nil`, `Empty`, conditional with `.When(...)`, or `Skip` added), a
//! bound (`Length`, `RuneLength`, `Min`, `Max`, `.Exclusive()`) loosened, `In(...)`
//! gaining values or removed, and any other rule (`is.Email`, `Match(...)`, `By(...)`,
//! `NotIn(...)`) removed with none added in its place, or an `is` rule replaced by a
//! weaker one of its family (`is.Email` by `is.EmailFormat`). A `Field(...)` taken out of a
//! `ValidateStruct` that stays, while the file's struct still declares the field, has
//! lost every rule it had.
//!
//! A pass of its own beside the Go detector, run only where both versions mention
//! `ozzo-validation` (a substring test: the import path). Rules are read under the
//! name the package is imported as; `validation.Key("name", ...)` inside
//! `validation.Map(...)` names a map key as a field, and `validation.Validate(x.F,
//! ...)` a value. `.Error(...)` and `.ErrorObject(...)` after a rule change only its
//! message and are left out. The walk over the tree is iterative (an explicit stack).
//!
//! Not findings: a struct or field removed, a rule rewritten (another in its place:
//! what it admits cannot be told, unless both are `is` rules of one family), a bound given by a constant changed (judged only
//! when removed), narrowing and formatting.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::syntax::{collapse_whitespace, compact, field, kind_of, line, named_children, text};
use super::zod::{Bound, bound_loosened, cap};
use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity};

const GO: &[Language] = &[Language::Go];

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: RuleId::GoOzzoRequiredRemoved,
        languages: GO,
        family: Family::Optionality,
        description: "An ozzo-validation field no longer requires a value: `validation.Required` removed (or made `NilOrNotEmpty`, `Nil`, `Empty`, or conditional with `.When(...)`), or `validation.Skip` added.",
        severity: Severity::High,
        message: "{symbol} may now be empty: `{before}` became `{after}`",
        invariant: "Validated input always carried a non-empty value for this field.",
    },
    RuleDef {
        id: RuleId::GoOzzoBoundLoosened,
        languages: GO,
        family: Family::NumericRange,
        description: "An ozzo-validation bound admits more: `Length`/`RuneLength`'s minimum lowered or maximum raised (0: no maximum) or the rule removed, `Min` lowered, `Max` raised, `.Exclusive()` dropped, or either removed.",
        severity: Severity::Medium,
        message: "{symbol} accepts values outside the old bounds: `{before}` became `{after}`",
        invariant: "Validated values and lengths stayed within the declared bounds, which storage and consumers may rely on.",
    },
    RuleDef {
        id: RuleId::GoOzzoInWidened,
        languages: GO,
        family: Family::EnumErasure,
        description: "An ozzo-validation `In(...)` gains values or is removed (a set whose every value was renamed is not judged).",
        severity: Severity::High,
        message: "{symbol} accepts values outside its old set: `{before}` became `{after}`",
        invariant: "The validated value was one of a closed set, so every consumer could handle each case.",
    },
    RuleDef {
        id: RuleId::GoOzzoRuleRemoved,
        languages: GO,
        family: Family::CheckRemoved,
        description: "An ozzo-validation rule other than `Required`, a bound or `In` (`is.Email`, `validation.Match(...)`, `validation.By(...)`, `NotIn`...) is removed from a field with no other rule added to it, or replaced by a weaker rule of the same family (`is.Email` by `is.EmailFormat`, which skips the mail-server lookup; `is.Host` by `is.URL`; `is.UUIDv4` by `is.UUID`; `is.Alpha` by `is.UTFLetter`...).",
        severity: Severity::Medium,
        message: "{symbol} is no longer checked by `{before}`: the field's rules became `{after}`",
        invariant: "Validated values passed the removed rule, so code using them could rely on their form.",
    },
];

/// Longest `before`/`after` rendering of a field's rules.
const MAX_RENDER: usize = 160;

/// The import path's mark: `github.com/go-ozzo/ozzo-validation` (and `/v4`, `/is`).
const IMPORT: &str = "ozzo-validation";

/// Rules of the `is` subpackage replaced by a weaker one of the same family: every
/// value the first admits, the second admits too, and more. `Email` looks the
/// domain's mail server up where `EmailFormat` only reads the text; a host name is a
/// URL without a scheme (`URL` takes a path and a query too); the versioned UUIDs,
/// the IP versions and the ISBN lengths are each one case of the general rule; ASCII
/// letters and digits are cases of their Unicode classes, and of letters-or-digits;
/// an integer is a float, a DNS name a host.
const WEAKER_IS: &[(&str, &str)] = &[
    ("Email", "EmailFormat"),
    ("Host", "URL"),
    ("DNSName", "Host"),
    ("DNSName", "URL"),
    ("UUIDv3", "UUID"),
    ("UUIDv4", "UUID"),
    ("UUIDv5", "UUID"),
    ("IPv4", "IP"),
    ("IPv6", "IP"),
    ("ISBN10", "ISBN"),
    ("ISBN13", "ISBN"),
    ("Int", "Float"),
    ("Alpha", "Alphanumeric"),
    ("Digit", "Alphanumeric"),
    ("Alpha", "UTFLetter"),
    ("Digit", "UTFDigit"),
    ("Digit", "UTFNumeric"),
    ("Alphanumeric", "UTFLetterNumeric"),
    ("UTFLetter", "UTFLetterNumeric"),
];

/// Rule methods that change only the error a rule reports.
const MESSAGE_ONLY: &[&str] = &[".Error(", ".ErrorObject("];

/// Whether both versions may use ozzo-validation (the pass's prefilter).
pub(crate) fn may_hold(before: &str, after: &str) -> bool {
    let finder = memchr::memmem::Finder::new(IMPORT.as_bytes());
    finder.find(before.as_bytes()).is_some() && finder.find(after.as_bytes()).is_some()
}

/// The ozzo-validation findings of a Go file. A version that does not parse gives
/// none (the Go detector reports the error).
pub(crate) fn detect(before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    if !may_hold(before, after) {
        return Ok(Vec::new());
    }
    let lang: tree_sitter::Language = tree_sitter_go::LANGUAGE.into();
    let Some((old, new)) = super::syntax::both_versions(&lang, before, after, inventory) else {
        return Ok(Vec::new());
    };
    Ok(compare(&old, &new))
}

/// What one field's rules declare.
#[derive(Debug, Default, Clone)]
struct Rules {
    line: u32,
    /// The rules as written, one line.
    shown: String,
    required: bool,
    skip: bool,
    /// Per measure (`length`, `value`): lower and upper bound.
    bounds: BTreeMap<&'static str, (Option<Bound>, Option<Bound>)>,
    members: Option<BTreeSet<String>>,
    /// Every other rule: compacted text to text on one line.
    checks: BTreeMap<String, String>,
    /// The `is` rules among `checks`: rule name (`Email`) to its key there.
    is_rules: BTreeMap<String, String>,
}

/// One version: each validated field's rules, the owners validated, and the fields
/// the file's struct types declare (`Type.Field`).
#[derive(Debug, Default)]
struct Inventory {
    fields: BTreeMap<String, Rules>,
    owners: BTreeSet<String>,
    declared: BTreeSet<String>,
}

/// The names the package and its `is` subpackage are imported under.
fn package_names(root: Node, src: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut main, mut is) = (BTreeSet::new(), BTreeSet::new());
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        match kind_of(n) {
            "source_file" | "import_declaration" | "import_spec_list" => stack.extend(named_children(n)),
            "import_spec" => {
                let Some(path) = field(n, "path").map(|p| text(p, src).trim_matches(['"', '`']).to_string()) else {
                    continue;
                };
                if !path.contains(IMPORT) {
                    continue;
                }
                let sub = path.ends_with("/is");
                let name = field(n, "name")
                    .map(|a| text(a, src).to_string())
                    .unwrap_or_else(|| if sub { "is".to_string() } else { "validation".to_string() });
                if sub {
                    is.insert(name)
                } else {
                    main.insert(name)
                };
            }
            _ => {}
        }
    }
    (main, is)
}

/// `pkg.Name` for one of `packages`: `Name`.
fn selector<'s>(node: Node, src: &'s str, packages: &BTreeSet<String>) -> Option<&'s str> {
    if kind_of(node) != "selector_expression" {
        return None;
    }
    let operand = field(node, "operand")?;
    (kind_of(operand) == "identifier" && packages.contains(text(operand, src)))
        .then(|| field(node, "field").map(|f| text(f, src)))
        .flatten()
}

fn inventory(root: Node, src: &str) -> Inventory {
    let mut inv = Inventory::default();
    let (main, is) = package_names(root, src);
    if main.is_empty() {
        return inv;
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        match kind_of(n) {
            "type_spec" => {
                if let (Some(name), Some(ty)) = (field(n, "name"), field(n, "type"))
                    && kind_of(ty) == "struct_type"
                {
                    let owner = text(name, src);
                    let list = named_children(ty).into_iter().filter(|c| kind_of(*c) == "field_declaration_list");
                    for fd in list.flat_map(named_children) {
                        for id in named_children(fd).into_iter().filter(|c| kind_of(*c) == "field_identifier") {
                            inv.declared.insert(format!("{owner}.{}", text(id, src)));
                        }
                    }
                }
            }
            "call_expression" => {
                if let Some(func) = field(n, "function")
                    && let Some(name) = selector(func, src, &main)
                    && matches!(name, "Field" | "Key" | "Validate")
                    && let Some(args) = field(n, "arguments")
                {
                    let args: Vec<Node> =
                        named_children(args).into_iter().filter(|a| kind_of(*a) != "comment").collect();
                    if let Some((target, rules)) = args.split_first()
                        && let Some(owner) = owner(n, src)
                        && let Some(name) = target_name(*target, src, name)
                    {
                        let symbol = format!("{owner}.{name}");
                        *seen.entry(symbol.clone()).or_default() += 1;
                        inv.owners.insert(owner);
                        inv.fields.insert(symbol, read_rules(rules, line(n), src, (&main, &is)));
                    }
                }
            }
            _ => {}
        }
        let mut children = named_children(n);
        children.reverse();
        stack.extend(children);
    }
    // A field validated twice in one version cannot be matched with the other's.
    inv.fields.retain(|symbol, _| seen.get(symbol) == Some(&1));
    inv
}

/// The declaration a call sits in: a method's receiver type, or a function's name.
fn owner(node: Node, src: &str) -> Option<String> {
    let mut cur = node;
    while let Some(parent) = cur.parent() {
        match kind_of(parent) {
            "method_declaration" => {
                let receiver = field(parent, "receiver")?;
                let param = named_children(receiver).into_iter().find(|p| kind_of(*p) == "parameter_declaration")?;
                let ty = text(field(param, "type")?, src).trim_start_matches('*');
                return Some(ty.split('[').next().unwrap_or(ty).to_string());
            }
            "function_declaration" => return Some(text(field(parent, "name")?, src).to_string()),
            _ => {}
        }
        cur = parent;
    }
    None
}

/// The field a rule list is for: `&a.Name` (`Field`), `"name"` (`Key`), `a.Name`
/// (`Validate`); nested selectors keep their path after the variable (`Address.City`).
fn target_name(target: Node, src: &str, call: &str) -> Option<String> {
    let t = compact(text(target, src));
    match call {
        "Key" => {
            let key = t.trim_matches(['"', '`']);
            (t.len() >= 2 && t.len() - key.len() == 2).then(|| key.to_string())
        }
        _ => {
            let t = t.strip_prefix('&').unwrap_or(&t);
            let (_, path) = t.split_once('.')?;
            path.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.').then(|| path.to_string())
        }
    }
}

/// A rule's text without the methods that change only its message.
fn without_message(rule: &str) -> &str {
    MESSAGE_ONLY.iter().filter_map(|m| rule.find(m)).min().map_or(rule, |at| &rule[..at])
}

/// `packages`: the names ozzo-validation and its `is` subpackage are imported under.
fn read_rules(rules: &[Node], line: u32, src: &str, packages: (&BTreeSet<String>, &BTreeSet<String>)) -> Rules {
    let (main, is) = packages;
    let shown = rules.iter().map(|r| collapse_whitespace(text(*r, src))).collect::<Vec<_>>().join(", ");
    let mut out = Rules { line, shown: cap(&shown, MAX_RENDER), ..Rules::default() };
    for rule in rules {
        let written = compact(text(*rule, src));
        let key = without_message(&written).to_string();
        // The rule's constructor: `validation.Length(...)` is `Length`, `validation.Required` is `Required`.
        let head = key.split('(').next().unwrap_or(&key);
        let (package, name) = head.split_once('.').unwrap_or(("", head));
        let ours = main.contains(package);
        let args: Vec<f64> = key
            .split_once('(')
            .map(|(_, a)| a.split(')').next().unwrap_or(""))
            .unwrap_or("")
            .split(',')
            .map(|a| a.replace('_', "").parse().unwrap_or(f64::NAN))
            .collect();
        let arg = |i: usize| args.get(i).copied().unwrap_or(f64::NAN);
        let exclusive = key.ends_with(".Exclusive()");
        match (ours, name) {
            (true, "Required") if key == head => out.required = true,
            (true, "Skip") => out.skip = true,
            (true, "Length" | "RuneLength") => {
                let (min, max) = (arg(0), arg(1));
                let lower = (min != 0.0).then_some(Bound { value: min, exclusive: false });
                // A maximum of 0 sets no upper bound.
                let upper = (max != 0.0).then_some(Bound { value: max, exclusive: false });
                out.bounds.insert("length", (lower, upper));
            }
            (true, "Min") => out.bounds.entry("value").or_default().0 = Some(Bound { value: arg(0), exclusive }),
            (true, "Max") => out.bounds.entry("value").or_default().1 = Some(Bound { value: arg(0), exclusive }),
            (true, "In") => {
                let inside = key.strip_prefix(&format!("{head}(")).and_then(|r| r.strip_suffix(')')).unwrap_or("");
                out.members = Some(inside.split(',').filter(|m| !m.is_empty()).map(str::to_string).collect());
            }
            _ => {
                if is.contains(package) && key == head {
                    out.is_rules.insert(name.to_string(), key.clone());
                }
                out.checks.insert(key.clone(), collapse_whitespace(text(*rule, src)));
            }
        }
    }
    if out.skip {
        // Every rule is skipped: none holds.
        out = Rules { line: out.line, shown: out.shown, skip: true, ..Rules::default() };
    }
    out
}

fn compare(old: &Inventory, new: &Inventory) -> Vec<RawFinding> {
    let mut out = Vec::new();
    let none = Rules::default();
    for (symbol, b) in &old.fields {
        let a = match new.fields.get(symbol) {
            Some(a) => a,
            // A `Field(...)` taken out of a validation that stays, for a field the
            // file's struct still declares: every rule it had is gone.
            None => {
                let owner = symbol.split('.').next().unwrap_or("");
                if !(new.owners.contains(owner) && new.declared.contains(symbol)) {
                    continue;
                }
                &none
            }
        };
        let line = if a.line == 0 { b.line } else { a.line };
        let mut push = |rule, before: &str, after: &str| {
            out.push(RawFinding {
                line,
                rule,
                symbol: symbol.clone(),
                before: before.to_string(),
                after: after.to_string(),
                in_test: false,
            });
        };
        if b.required && !a.required {
            push(RuleId::GoOzzoRequiredRemoved, &b.shown, &a.shown);
        }
        let loosened = b.bounds.iter().any(|(measure, (lower, upper))| {
            let (new_lower, new_upper) = a.bounds.get(measure).cloned().unwrap_or_default();
            bound_loosened(lower, &new_lower, true) || bound_loosened(upper, &new_upper, false)
        });
        if loosened {
            push(RuleId::GoOzzoBoundLoosened, &b.shown, &a.shown);
        }
        let widened = match (&b.members, &a.members) {
            (Some(o), Some(n)) => !n.is_subset(o) && !n.is_disjoint(o),
            (Some(_), None) => true,
            _ => false,
        };
        if widened {
            push(RuleId::GoOzzoInWidened, &b.shown, &a.shown);
        }
        let added = a.checks.keys().any(|k| !b.checks.contains_key(k));
        if let (Some((_, gone)), false) = (b.checks.iter().find(|(k, _)| !a.checks.contains_key(*k)), added) {
            push(RuleId::GoOzzoRuleRemoved, gone, &a.shown);
        } else if let Some(gone) = weakened_is_rule(b, a) {
            push(RuleId::GoOzzoRuleRemoved, gone, &a.shown);
        }
    }
    out.sort();
    out
}

/// An `is` rule of the old version replaced by a weaker one of its family
/// (`is.Email` by `is.EmailFormat`, `WEAKER_IS`): the old rule's text.
fn weakened_is_rule<'r>(old: &'r Rules, new: &Rules) -> Option<&'r str> {
    WEAKER_IS.iter().find_map(|(strong, weak)| {
        let key = old.is_rules.get(*strong)?;
        let replaced = !new.is_rules.contains_key(*strong) && new.is_rules.contains_key(*weak);
        (replaced && !old.is_rules.contains_key(*weak)).then(|| old.checks.get(key).map(String::as_str)).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(before: &str, after: &str) -> Vec<(RuleId, String)> {
        detect(before, after).unwrap().into_iter().map(|f| (f.rule, f.symbol)).collect()
    }

    const HEAD: &str = "package model\n\nimport (\n\t\"regexp\"\n\n\tvalidation \"github.com/go-ozzo/ozzo-validation/v4\"\n\t\"github.com/go-ozzo/ozzo-validation/v4/is\"\n)\n\ntype Signup struct {\n\tName  string\n\tEmail string\n\tPlan  string\n\tAge   int\n\tCode  string\n}\n\n";

    fn version(rules: &str) -> String {
        format!("{HEAD}func (s Signup) Validate() error {{\n\treturn validation.ValidateStruct(&s,\n{rules}\n\t)\n}}\n")
    }

    #[test]
    fn each_loosening_is_found_on_its_field() {
        let before = version(
            "\t\tvalidation.Field(&s.Name, validation.Required, validation.Length(1, 64)),\n\t\tvalidation.Field(&s.Email, validation.Required, is.Email),\n\t\tvalidation.Field(&s.Plan, validation.In(\"free\", \"pro\")),\n\t\tvalidation.Field(&s.Age, validation.Min(18), validation.Max(120).Exclusive()),\n\t\tvalidation.Field(&s.Code, validation.Match(regexp.MustCompile(\"^[0-9]+$\"))),",
        );
        let after = version(
            "\t\tvalidation.Field(&s.Name, validation.Required, validation.Length(1, 0)),\n\t\tvalidation.Field(&s.Email, validation.NilOrNotEmpty, is.Email),\n\t\tvalidation.Field(&s.Plan, validation.In(\"free\", \"pro\", \"team\")),\n\t\tvalidation.Field(&s.Age, validation.Min(18), validation.Max(120)),",
        );
        let want = [
            (RuleId::GoOzzoBoundLoosened, "Signup.Age"),
            (RuleId::GoOzzoRuleRemoved, "Signup.Code"),
            (RuleId::GoOzzoRequiredRemoved, "Signup.Email"),
            (RuleId::GoOzzoBoundLoosened, "Signup.Name"),
            (RuleId::GoOzzoInWidened, "Signup.Plan"),
        ];
        crate::widen::testing::assert_found(&found(&before, &after), &want);
    }

    #[test]
    fn narrowing_messages_and_rewritten_rules_are_not_findings() {
        let before = version(
            "\t\tvalidation.Field(&s.Name, validation.Required, validation.Length(1, 64)),\n\t\tvalidation.Field(&s.Email, is.EmailFormat),\n\t\tvalidation.Field(&s.Plan, validation.In(\"free\", \"pro\")),\n\t\tvalidation.Field(&s.Code, is.UUID),",
        );
        // A rule of the same family made stricter (`EmailFormat` to `Email`, `UUID`
        // to `UUIDv4`) and a rule swapped for an unrelated one are not loosenings.
        let after = version(
            "\t\tvalidation.Field(&s.Name, validation.Required.Error(\"name is required\"), validation.Length(2, 32)),\n\t\tvalidation.Field(&s.Email, is.Email),\n\t\tvalidation.Field(&s.Plan, validation.In(\"free\")),\n\t\tvalidation.Field(&s.Code, is.UUIDv4),",
        );
        assert_eq!(found(&before, &after), []);
        let before = version("\t\tvalidation.Field(&s.Email, is.Email),\n\t\tvalidation.Field(&s.Code, is.Digit),");
        let after = version("\t\tvalidation.Field(&s.Email, is.URL),\n\t\tvalidation.Field(&s.Code, is.Alpha),");
        assert_eq!(found(&before, &after), []);
    }

    #[test]
    fn a_weaker_rule_of_the_same_family_is_a_loosening() {
        let before = version(
            "\t\tvalidation.Field(&s.Email, validation.Required, is.Email, validation.By(unique)),\n\t\tvalidation.Field(&s.Code, is.Host),\n\t\tvalidation.Field(&s.Name, is.Alpha),",
        );
        let after = version(
            "\t\tvalidation.Field(&s.Email, validation.Required, is.EmailFormat, validation.By(unique)),\n\t\tvalidation.Field(&s.Code, is.URL.Error(\"bad\")),\n\t\tvalidation.Field(&s.Name, is.UTFLetter),",
        );
        let want = [
            (RuleId::GoOzzoRuleRemoved, "Signup.Code"),
            (RuleId::GoOzzoRuleRemoved, "Signup.Email"),
            (RuleId::GoOzzoRuleRemoved, "Signup.Name"),
        ];
        crate::widen::testing::assert_found(&found(&before, &after), &want);
    }

    #[test]
    fn skip_added_and_a_field_taken_out_lose_their_rules() {
        let before = version(
            "\t\tvalidation.Field(&s.Name, validation.Required),\n\t\tvalidation.Field(&s.Email, is.Email),\n\t\tvalidation.Field(&s.Age, validation.Min(18)),",
        );
        let after = version(
            "\t\tvalidation.Field(&s.Name, validation.Skip, validation.Required),\n\t\tvalidation.Field(&s.Age, validation.Min(18)),",
        );
        let want = [(RuleId::GoOzzoRuleRemoved, "Signup.Email"), (RuleId::GoOzzoRequiredRemoved, "Signup.Name")];
        crate::widen::testing::assert_found(&found(&before, &after), &want);
    }
}
