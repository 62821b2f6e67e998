//! Where zod schemas stand when no declaration names them, for the zod pass
//! ([`super`]): the schemas found anywhere in a file outside those already read
//! (arguments, values of plain objects, nested `const`s), the path that names each
//! (`router.create.input`), and the discriminator value that names a discriminated
//! union's variant. Every walk is a loop (an explicit stack down, parents up).

use std::collections::BTreeSet;

use tree_sitter::Node;

use super::super::syntax::{field, kind_of, named_children, strip_parens, text};
use super::{member, read_schema};

/// Every zod schema (a call chain on a zod base) outside the ranges already read, with
/// the path that names it ([`anonymous_symbol`]); a schema inside another is its
/// property, not one of these. An explicit stack over the tree, in document order.
pub(super) fn anonymous_schemas<'t>(
    root: Node<'t>,
    src: &str,
    names: &BTreeSet<String>,
    covered: &BTreeSet<(usize, usize)>,
) -> Vec<(String, Node<'t>)> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if covered.contains(&(node.start_byte(), node.end_byte())) {
            continue;
        }
        // On a zod base, or extending another schema (`base.extend({...})`).
        if kind_of(node) == "call_expression"
            && let Some((slot, children)) = read_schema(node, src, names, false)
            && (!slot.base.starts_with("ref:") || !children.is_empty())
        {
            if let Some(symbol) = anonymous_symbol(node, src) {
                out.push((symbol, node));
            }
            continue;
        }
        let mut children = named_children(node);
        children.reverse();
        stack.extend(children);
    }
    out
}

/// The path to a schema no declaration names directly: from the outermost, the names
/// of the declarations around it (a `const`, a function, a class, a method), the keys
/// of the object properties it sits in, and the methods it is an argument of
/// (`router.create.input`). `None` outside any named declaration (a top-level call's
/// argument has no name both versions would agree on). A loop up the parents.
fn anonymous_symbol(node: Node, src: &str) -> Option<String> {
    let mut segments = Vec::new();
    let mut named = false;
    let mut cur = node;
    while let Some(parent) = cur.parent() {
        match kind_of(parent) {
            "pair" if field(parent, "value") == Some(cur) => {
                let key = field(parent, "key")?;
                segments.push(text(key, src).trim_matches(|c| c == '"' || c == '\'' || c == '`').to_string());
            }
            "variable_declarator"
            | "function_declaration"
            | "class_declaration"
            | "abstract_class_declaration"
            | "method_definition" => {
                let name = field(parent, "name")?;
                if kind_of(name) != "identifier"
                    && kind_of(name) != "property_identifier"
                    && kind_of(name) != "type_identifier"
                {
                    return None;
                }
                segments.push(text(name, src).to_string());
                named = true;
            }
            "arguments" => {
                if let Some(func) = parent.parent().and_then(|call| field(call, "function"))
                    && kind_of(func) == "member_expression"
                    && let Some(property) = field(func, "property")
                {
                    segments.push(text(property, src).to_string());
                }
            }
            _ => {}
        }
        cur = parent;
    }
    segments.reverse();
    named.then(|| segments.join("."))
}

/// A string without its quotes.
pub(super) fn unquote(s: &str) -> String {
    s.trim_matches(|c| c == '"' || c == '\'' || c == '`').to_string()
}

/// The value a discriminated union's variant (`z.object({ kind: z.literal("card"), ...
/// })`, methods after it allowed) gives its discriminator, unquoted; `None` when it is
/// no object or gives none. A loop down the method chain.
pub(super) fn discriminator_value(
    variant: Node,
    discriminator: &str,
    src: &str,
    names: &BTreeSet<String>,
) -> Option<String> {
    let mut cur = strip_parens(variant);
    loop {
        let func = field(cur, "function").filter(|f| kind_of(*f) == "member_expression")?;
        let object = strip_parens(field(func, "object")?);
        if kind_of(object) == "identifier" && names.contains(text(object, src)) {
            let obj = field(cur, "arguments")?.named_child(0).filter(|o| kind_of(*o) == "object")?;
            let value = named_children(obj).into_iter().filter(|p| kind_of(*p) == "pair").find_map(|p| {
                (unquote(text(field(p, "key")?, src)) == discriminator).then(|| field(p, "value")).flatten()
            })?;
            let value = member(value, src, names);
            return Some(unquote(&value).replace('.', "_"));
        }
        cur = object;
    }
}

/// `z.null()` or `z.undefined()` (under any of zod's local names): `null` or `undefined`.
pub(super) fn unit<'s>(node: Node, src: &'s str, names: &BTreeSet<String>) -> Option<&'s str> {
    let node = strip_parens(node);
    let func = field(node, "function").filter(|_| kind_of(node) == "call_expression")?;
    let args = field(node, "arguments")?;
    if kind_of(func) != "member_expression" || args.named_child_count() != 0 {
        return None;
    }
    field(func, "object").filter(|o| names.contains(text(*o, src)))?;
    field(func, "property").map(|p| text(p, src)).filter(|p| matches!(*p, "null" | "undefined"))
}

/// Where a wrapper's rendering (`z.optional(…)`) takes the schema inside it.
pub(super) const INNER: &str = "\u{1}";
