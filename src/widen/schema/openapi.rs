//! OpenAPI and Swagger documents beyond their component schemas: the parameters,
//! request bodies, responses and headers of every operation under `paths` (inline, or
//! through `components.parameters|requestBodies|responses|headers` and `$ref`), and
//! the security requirements of the document and of each operation.
//!
//! Pointers (`symbol`): the JSON pointer of the key path, with a parameter named by
//! its `name` instead of its index (`#/paths/~1users/get/parameters/limit/schema`),
//! a media type and a status code as written
//! (`#/paths/~1users/post/requestBody/content/application~1json/schema/properties/age`,
//! `#/paths/~1users/get/responses/200/headers/X-Rate-Limit`).
//!
//! Direction: a request that accepts more (a parameter made optional, a bound
//! raised) widens what the server's handlers receive; a response that may carry more
//! (a property no longer required, a new enum value) widens what clients receive.
//! Both remove an invariant somebody's code relies on, so both are reported, and the
//! pointer says which side it is on. What direction changes: a `readOnly` property is
//! never sent in a request, and a `writeOnly` property never in a response, so their
//! loosening on that side is not a finding.
//!
//! A `$ref` the two versions share is not followed at its use: the component is
//! compared once, where it lives. A `$ref` that changed (or an inline object replaced
//! by one) is resolved inside the document, at most `MAX_REF_HOPS` hops, so a cycle
//! ends there.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::{Family, MAX_REF_HOPS, REQUIRED_REMOVED, RuleDef, RuleId, SCHEMA, Severity, Walk, render};

pub(super) const SECURITY_REMOVED: RuleId = RuleId::SchemaSecurityRemoved;

pub(super) const SECURITY_REMOVED_RULE: RuleDef = RuleDef {
    id: SECURITY_REMOVED,
    languages: SCHEMA,
    family: Family::CheckRemoved,
    description: "An OpenAPI security requirement is loosened, for the document or an operation: a scheme or a scope removed from a requirement, an alternative added that asks for less than every old one, or the requirements removed.",
    severity: Severity::High,
    message: "{symbol} asks less of callers: {before} became {after}",
    invariant: "Every call carried the old credentials and scopes, so handlers could assume an authenticated, authorised caller.",
};

/// Which side of an exchange a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    /// A component schema, used on either side.
    Either,
    Request,
    Response,
}

const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

impl Walk<'_> {
    /// Everything an OpenAPI 3 or Swagger 2 document constrains outside its schemas.
    pub(super) fn openapi(&mut self, old: &Value, new: &Value) {
        let components: &[(&[&str], Kind)] = &[
            (&["components", "parameters"], Kind::Parameter),
            (&["components", "requestBodies"], Kind::Body),
            (&["components", "responses"], Kind::Response),
            (&["components", "headers"], Kind::Header),
            // Swagger 2.
            (&["parameters"], Kind::Parameter),
            (&["responses"], Kind::Response),
        ];
        for (container, kind) in components {
            let (Some(b), Some(a)) = (at(old, container), at(new, container)) else { continue };
            for (name, bv, av) in pairs(b, a) {
                let mut path: Vec<String> = container.iter().map(|s| s.to_string()).collect();
                path.push(name.clone());
                self.exchange(*kind, &mut path, bv, av);
            }
        }
        self.security(&["security".to_string()], old.get("security"), new.get("security"));
        let (Some(bp), Some(ap)) = (old.get("paths"), new.get("paths")) else { return };
        for (route, b_item, a_item) in pairs(bp, ap) {
            let mut path = vec!["paths".to_string(), route.clone()];
            self.parameters(&mut path, b_item.get("parameters"), a_item.get("parameters"));
            for method in METHODS {
                let (Some(b_op), Some(a_op)) = (b_item.get(*method), a_item.get(*method)) else { continue };
                path.push(method.to_string());
                self.operation(&mut path, b_op, a_op, old, new);
                path.pop();
            }
        }
    }

    fn operation(&mut self, path: &mut Vec<String>, b: &Value, a: &Value, old: &Value, new: &Value) {
        self.parameters(path, b.get("parameters"), a.get("parameters"));
        if let (Some(bb), Some(ab)) = (b.get("requestBody"), a.get("requestBody")) {
            path.push("requestBody".into());
            self.exchange(Kind::Body, path, bb, ab);
            path.pop();
        }
        if let (Some(br), Some(ar)) = (b.get("responses"), a.get("responses")) {
            for (code, bv, av) in pairs(br, ar) {
                path.extend(["responses".to_string(), code.clone()]);
                self.exchange(Kind::Response, path, bv, av);
                path.truncate(path.len() - 2);
            }
        }
        // An operation's own `security` replaces the document's; without one, the
        // document's applies and is compared once, at `#/security`.
        if b.get("security").is_some() || a.get("security").is_some() {
            let effective = |op: &Value, doc: &Value| op.get("security").or_else(|| doc.get("security")).cloned();
            path.push("security".into());
            self.security(path, effective(b, old).as_ref(), effective(a, new).as_ref());
            path.pop();
        }
    }

    /// Parameters matched by `in` and `name` (a parameter's identity), named by `name`.
    fn parameters(&mut self, path: &mut Vec<String>, b: Option<&Value>, a: Option<&Value>) {
        let (Some(Value::Array(bl)), Some(Value::Array(al))) = (b, a) else { return };
        let keyed = |list: &[Value], doc: &Value| -> BTreeMap<(String, String), usize> {
            let mut m = BTreeMap::new();
            for (i, p) in list.iter().enumerate() {
                let Some(p) = resolve(doc, p) else { continue };
                let field = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                m.entry((field("in"), field("name"))).or_insert(i);
            }
            m
        };
        let (bm, am) = (keyed(bl, self.old_doc), keyed(al, self.new_doc));
        for ((place, name), bi) in &bm {
            let Some(ai) = am.get(&(place.clone(), name.clone())) else { continue };
            path.extend(["parameters".to_string(), name.clone()]);
            let located: Vec<String> = path[..path.len() - 1].iter().cloned().chain([ai.to_string()]).collect();
            let saved = self.located.replace((path.len(), located));
            self.exchange(Kind::Parameter, path, &bl[*bi], &al[*ai]);
            self.located = saved;
            path.truncate(path.len() - 2);
        }
    }

    /// One parameter, request body, response or header of both versions.
    fn exchange(&mut self, kind: Kind, path: &mut Vec<String>, b: &Value, a: &Value) {
        // The same reference on both sides: compared where the component lives.
        if b.get("$ref").is_some() && b.get("$ref") == a.get("$ref") {
            return;
        }
        let (Some(bo), Some(ao)) = (resolve(self.old_doc, b), resolve(self.new_doc, a)) else { return };
        let saved = self.direction;
        self.direction = match kind {
            Kind::Parameter | Kind::Body => Direction::Request,
            Kind::Response | Kind::Header => Direction::Response,
        };
        if matches!(kind, Kind::Parameter | Kind::Body | Kind::Header)
            && bo.get("required") == Some(&Value::Bool(true))
            && ao.get("required") != Some(&Value::Bool(true))
        {
            let after = ao.get("required").map(|v| format!("required: {}", render(v))).unwrap_or_default();
            self.push(REQUIRED_REMOVED, path, "required: true".into(), after);
        }
        // OpenAPI 3: `schema`, or `content` by media type.
        let mut compared = false;
        if let (Some(bs), Some(as_)) = (bo.get("schema"), ao.get("schema")) {
            path.push("schema".into());
            self.compare(path, bs, as_);
            path.pop();
            compared = true;
        }
        if let (Some(bc), Some(ac)) = (bo.get("content"), ao.get("content")) {
            for (media, bm, am) in pairs(bc, ac) {
                if let (Some(bs), Some(as_)) = (bm.get("schema"), am.get("schema")) {
                    path.extend(["content".to_string(), media.clone(), "schema".to_string()]);
                    self.compare(path, bs, as_);
                    path.truncate(path.len() - 3);
                }
            }
            compared = true;
        }
        // Swagger 2 parameters and headers carry their schema keywords inline.
        if !compared && matches!(kind, Kind::Parameter | Kind::Header) {
            let strip = |o: &Map<String, Value>| {
                let mut o = o.clone();
                o.remove("required");
                Value::Object(o)
            };
            self.compare(path, &strip(bo), &strip(ao));
        }
        if kind == Kind::Response
            && let (Some(bh), Some(ah)) = (bo.get("headers"), ao.get("headers"))
        {
            for (name, bv, av) in pairs(bh, ah) {
                path.extend(["headers".to_string(), name.clone()]);
                self.exchange(Kind::Header, path, bv, av);
                path.truncate(path.len() - 2);
            }
        }
        self.direction = saved;
    }

    fn security(&mut self, path: &[String], b: Option<&Value>, a: Option<&Value>) {
        let Some(old) = b.and_then(requirements) else { return };
        if old.is_empty() || old.iter().any(BTreeMap::is_empty) {
            // No security, or an anonymous alternative: nothing to loosen.
            return;
        }
        let new = a.and_then(requirements).unwrap_or_default();
        // Each new alternative must ask at least what some old alternative asked.
        let covers = |n: &Requirement, o: &Requirement| {
            o.iter().all(|(scheme, scopes)| n.get(scheme).is_some_and(|ns| scopes.is_subset(ns)))
        };
        let loosened = new.is_empty() || new.iter().any(|n| !old.iter().any(|o| covers(n, o)));
        if loosened {
            let show = |v: Option<&Value>| v.map(|v| format!("security: {}", render(v))).unwrap_or_default();
            self.push(SECURITY_REMOVED, path, show(b), show(a));
        }
    }
}

/// What an exchange is, for its direction and its `required` flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Parameter,
    Body,
    Response,
    Header,
}

/// One security requirement: scheme name to the scopes it demands.
type Requirement = BTreeMap<String, BTreeSet<String>>;

fn requirements(v: &Value) -> Option<Vec<Requirement>> {
    v.as_array()?
        .iter()
        .map(|r| {
            r.as_object().map(|o| {
                o.iter()
                    .map(|(scheme, scopes)| {
                        let scopes = scopes.as_array().into_iter().flatten().filter_map(Value::as_str);
                        (scheme.clone(), scopes.map(str::to_string).collect())
                    })
                    .collect()
            })
        })
        .collect()
}

/// The value at a key path.
fn at<'v>(doc: &'v Value, keys: &[&str]) -> Option<&'v Value> {
    keys.iter().try_fold(doc, |node, k| node.get(k))
}

/// The entries both objects have, in key order.
fn pairs<'v>(b: &'v Value, a: &'v Value) -> Vec<(&'v String, &'v Value, &'v Value)> {
    let (Some(bm), Some(am)) = (b.as_object(), a.as_object()) else { return Vec::new() };
    bm.iter().filter_map(|(k, bv)| am.get(k).map(|av| (k, bv, av))).collect()
}

/// The object a value is, following local `$ref`s (at most `MAX_REF_HOPS`, so a cycle
/// of references ends).
pub(super) fn resolve<'v>(doc: &'v Value, mut v: &'v Value) -> Option<&'v Map<String, Value>> {
    for _ in 0..=MAX_REF_HOPS {
        match v.get("$ref").and_then(Value::as_str) {
            Some(r) => v = r.strip_prefix('#').and_then(|p| doc.pointer(p))?,
            None => return v.as_object(),
        }
    }
    None
}
