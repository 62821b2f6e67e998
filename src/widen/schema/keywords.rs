//! JSON Schema keywords beyond bounds, types and enums: alternatives (`anyOf`,
//! `oneOf`), `allOf` members, `contains`, dependencies, conditionals and the keywords
//! that shape objects and tuples (`propertyNames`, `patternProperties`, `prefixItems`).
//! Each is reported when the new version drops or relaxes it on a subschema both
//! versions have; adding or tightening one is never a finding.

use serde_json::{Map, Value};

use super::{Family, RuleDef, RuleId, SCHEMA, Severity, Walk, admits_null, keyword, render};

pub(super) const ALTERNATIVE_ADDED: RuleId = RuleId::SchemaAlternativeAdded;
pub(super) const ALL_OF_MEMBER_REMOVED: RuleId = RuleId::SchemaAllOfMemberRemoved;
pub(super) const CONTAINS_LOOSENED: RuleId = RuleId::SchemaContainsLoosened;
pub(super) const DEPENDENCY_REMOVED: RuleId = RuleId::SchemaDependencyRemoved;
pub(super) const CONDITIONAL_REMOVED: RuleId = RuleId::SchemaConditionalRemoved;
pub(super) const STRUCTURE_REMOVED: RuleId = RuleId::SchemaStructureRemoved;

pub(super) const ALTERNATIVE_ADDED_RULE: RuleDef = RuleDef {
    id: ALTERNATIVE_ADDED,
    languages: SCHEMA,
    family: Family::TypeErasure,
    description: "An `anyOf` or `oneOf` gains an alternative that none of the old ones equals (a null alternative is `schema-nullable-added`).",
    severity: Severity::High,
    message: "{symbol} accepts another shape: {before} became {after}",
    invariant: "Every value matched one of the old alternatives, so consumers handled each of them and nothing else.",
};

pub(super) const ALL_OF_MEMBER_REMOVED_RULE: RuleDef = RuleDef {
    id: ALL_OF_MEMBER_REMOVED,
    languages: SCHEMA,
    family: Family::CheckRemoved,
    description: "A member of an `allOf` is removed while the `allOf` stays (an `allOf` removed whole is judged by its members' keywords, merged into their owner).",
    severity: Severity::High,
    message: "{symbol} no longer has to match every old member: {before} became {after}",
    invariant: "Every value matched all the old members, so each member's constraints held together.",
};

pub(super) const CONTAINS_LOOSENED_RULE: RuleDef = RuleDef {
    id: CONTAINS_LOOSENED,
    languages: SCHEMA,
    family: Family::NumericRange,
    description: "An array's `contains` is removed, `minContains` lowered or removed, or `maxContains` raised or removed.",
    severity: Severity::Medium,
    message: "{symbol} accepts arrays with other matching items: {before} became {after}",
    invariant: "Arrays held the old number of items matching `contains`, so consumers could find the item they look for.",
};

pub(super) const DEPENDENCY_REMOVED_RULE: RuleDef = RuleDef {
    id: DEPENDENCY_REMOVED,
    languages: SCHEMA,
    family: Family::CheckRemoved,
    description: "A `dependentRequired` entry (or a name in it), a `dependentSchemas` entry, or a draft-7 `dependencies` entry is removed.",
    severity: Severity::High,
    message: "{symbol} no longer ties properties together: {before} became {after}",
    invariant: "When the trigger property was present, the dependent properties (or schema) were too.",
};

pub(super) const CONDITIONAL_REMOVED_RULE: RuleDef = RuleDef {
    id: CONDITIONAL_REMOVED,
    languages: SCHEMA,
    family: Family::CheckRemoved,
    description: "An `if` (with its `then`/`else`) is removed, or the `then` or `else` of an `if` that stays.",
    severity: Severity::High,
    message: "{symbol} lost a conditional constraint: {before} became {after}",
    invariant: "Values meeting (or failing) the `if` also met the `then` (or `else`) schema.",
};

pub(super) const STRUCTURE_REMOVED_RULE: RuleDef = RuleDef {
    id: STRUCTURE_REMOVED,
    languages: SCHEMA,
    family: Family::MutabilityExposure,
    description: "`propertyNames` is removed, a `patternProperties` pattern is removed, or `prefixItems` is removed or shortened.",
    severity: Severity::Medium,
    message: "{symbol} accepts objects or tuples of another shape: {before} became {after}",
    invariant: "Property names, or the items at each tuple position, had the old schema, so consumers read them by position or pattern.",
};

impl Walk<'_> {
    /// Every keyword rule of this module on one subschema.
    pub(super) fn keywords(&mut self, path: &[String], bo: &Map<String, Value>, ao: &Map<String, Value>) {
        self.alternatives(path, bo, ao);
        self.all_of(path, bo, ao);
        self.contains(path, bo, ao);
        self.dependencies(path, bo, ao);
        self.conditional(path, bo, ao);
        self.structure(path, bo, ao);
    }

    fn alternatives(&mut self, path: &[String], bo: &Map<String, Value>, ao: &Map<String, Value>) {
        for key in ["anyOf", "oneOf"] {
            let (Some(old), Some(new)) = (list(bo, key), list(ao, key)) else { continue };
            let null_only = |v: &Value| v.as_object().is_some_and(|o| admits_null(o) && only_null(o));
            let added = new.iter().any(|n| !old.contains(n) && !null_only(n));
            // A member edited in place (same count) is compared position by position.
            if added && new.len() > old.len() {
                self.push(ALTERNATIVE_ADDED, path, keyword(bo, key), keyword(ao, key));
            }
        }
    }

    fn all_of(&mut self, path: &[String], bo: &Map<String, Value>, ao: &Map<String, Value>) {
        let (Some(old), Some(new)) = (list(bo, "allOf"), list(ao, "allOf")) else { return };
        if new.len() < old.len() && old.iter().any(|o| !new.contains(o)) {
            self.push(ALL_OF_MEMBER_REMOVED, path, keyword(bo, "allOf"), keyword(ao, "allOf"));
        }
    }

    fn contains(&mut self, path: &[String], bo: &Map<String, Value>, ao: &Map<String, Value>) {
        if !bo.contains_key("contains") {
            return;
        }
        let mut keys = Vec::new();
        if !ao.contains_key("contains") {
            keys.extend(["contains", "minContains", "maxContains"]);
        } else {
            let num = |o: &Map<String, Value>, k: &str| o.get(k).and_then(Value::as_f64);
            // `minContains` defaults to 1 while `contains` stands.
            if num(ao, "minContains").unwrap_or(1.0) < num(bo, "minContains").unwrap_or(1.0) {
                keys.push("minContains");
            }
            if let Some(old_max) = num(bo, "maxContains")
                && num(ao, "maxContains").is_none_or(|new| new > old_max)
            {
                keys.push("maxContains");
            }
        }
        self.report_keys(CONTAINS_LOOSENED, path, bo, ao, &keys);
    }

    fn dependencies(&mut self, path: &[String], bo: &Map<String, Value>, ao: &Map<String, Value>) {
        for key in ["dependentRequired", "dependentSchemas", "dependencies"] {
            let Some(old) = bo.get(key).and_then(Value::as_object) else { continue };
            let new = ao.get(key).and_then(Value::as_object);
            for (trigger, was) in old {
                let now = new.and_then(|n| n.get(trigger));
                let loosened = match (was, now) {
                    (_, None) => true,
                    // A list of required names: any name dropped.
                    (Value::Array(was), Some(Value::Array(now))) => was.iter().any(|n| !now.contains(n)),
                    _ => false,
                };
                if loosened {
                    let mut at = path.to_vec();
                    at.extend([key.to_string(), trigger.clone()]);
                    let after = now.map(|v| format!("{trigger}: {}", render(v))).unwrap_or_default();
                    self.push(DEPENDENCY_REMOVED, &at, format!("{trigger}: {}", render(was)), after);
                }
            }
        }
    }

    fn conditional(&mut self, path: &[String], bo: &Map<String, Value>, ao: &Map<String, Value>) {
        if !bo.contains_key("if") {
            return;
        }
        let keys: Vec<&str> = if !ao.contains_key("if") {
            vec!["if", "then", "else"]
        } else {
            ["then", "else"].into_iter().filter(|k| bo.contains_key(*k) && !ao.contains_key(*k)).collect()
        };
        // `if` alone constrains nothing: only a lost `then` or `else` loosens.
        if keys.iter().any(|k| *k != "if" && bo.contains_key(*k)) {
            self.report_keys(CONDITIONAL_REMOVED, path, bo, ao, &keys);
        }
    }

    fn structure(&mut self, path: &[String], bo: &Map<String, Value>, ao: &Map<String, Value>) {
        let mut keys = Vec::new();
        if bo.contains_key("propertyNames") && !ao.contains_key("propertyNames") {
            keys.push("propertyNames");
        }
        if let Some(old) = bo.get("patternProperties").and_then(Value::as_object) {
            let new = ao.get("patternProperties").and_then(Value::as_object);
            if old.keys().any(|p| !new.is_some_and(|n| n.contains_key(p))) {
                keys.push("patternProperties");
            }
        }
        if let Some(old) = list(bo, "prefixItems")
            && list(ao, "prefixItems").is_none_or(|new| new.len() < old.len())
        {
            keys.push("prefixItems");
        }
        self.report_keys(STRUCTURE_REMOVED, path, bo, ao, &keys);
    }
}

fn list<'v>(o: &'v Map<String, Value>, key: &str) -> Option<&'v Vec<Value>> {
    o.get(key).and_then(Value::as_array)
}

/// `{type: null}` or `{nullable: true}` with nothing else to say.
fn only_null(o: &Map<String, Value>) -> bool {
    o.keys().all(|k| matches!(k.as_str(), "type" | "nullable" | "x-nullable" | "description" | "title"))
}

/// A `pattern` every string matches, or the old one with an anchor dropped (so it
/// matches anywhere in the string instead of the whole string).
pub(super) fn pattern_loosened(old: &str, new: &str) -> bool {
    const TRIVIAL: &[&str] = &["", ".*", "^.*$", "^.*", ".*$", "(.*)", "^(.*)$", "[\\s\\S]*", "^[\\s\\S]*$"];
    if old == new || TRIVIAL.contains(&old) {
        return false;
    }
    if TRIVIAL.contains(&new) {
        return true;
    }
    let core = |p: &str| p.trim_start_matches('^').trim_end_matches('$').to_string();
    let anchors = |p: &str| (p.starts_with('^'), p.ends_with('$') && !p.ends_with("\\$"));
    let (os, oe) = anchors(old);
    let (ns, ne) = anchors(new);
    core(old) == core(new) && ((os && !ns) || (oe && !ne))
}

#[cfg(test)]
mod tests {
    use super::pattern_loosened;

    #[test]
    fn patterns_loosen_to_trivial_or_unanchored() {
        assert!(pattern_loosened("^[a-z]+$", ""));
        assert!(pattern_loosened("^[a-z]+$", ".*"));
        assert!(pattern_loosened("^[a-z]+$", "[a-z]+$"));
        assert!(pattern_loosened("^[a-z]+$", "^[a-z]+"));
        assert!(!pattern_loosened("[a-z]+", "^[a-z]+$"));
        assert!(!pattern_loosened("^[a-z]+$", "^[a-z0-9]+$"), "a changed pattern's direction is unknown");
        assert!(!pattern_loosened(".*", ""));
        assert!(!pattern_loosened("^\\d+\\$", "^\\d+\\$"));
    }
}
