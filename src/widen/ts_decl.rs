//! What the yup and valibot passes ([`super::ts_yup`], [`super::ts_valibot`]) read
//! alike in a TypeScript or JavaScript file: the names a validation library is imported
//! under, every schema expression of the file wherever it stands (a top-level `const`,
//! a `const` inside a React component, a property of a form's options, a JSX
//! attribute), the dotted path that names each, and the key/value pairs of an object
//! literal of property schemas.
//!
//! Every walk is a loop: an explicit stack down the tree, parent links up.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::syntax::{field, kind_of, named_children, strip_parens, text};

/// The names one module is imported under.
#[derive(Debug, Default)]
pub(super) struct Imports {
    /// `import * as v from "valibot"`, `import yup from "yup"`: the module's object.
    pub(super) namespaces: BTreeSet<String>,
    /// `import { object as obj } from "yup"`: local name to the exported one.
    pub(super) named: BTreeMap<String, String>,
}

impl Imports {
    /// The module's imports in the file (`module`, or a path under it: `yup/lib`,
    /// `valibot/...`), `require` left out.
    pub(super) fn of(root: Node, src: &str, module: &str) -> Imports {
        let mut out = Imports::default();
        for child in named_children(root) {
            if kind_of(child) != "import_statement" {
                continue;
            }
            let Some(source) = field(child, "source") else { continue };
            let source = unquote(text(source, src));
            if source != module && !source.starts_with(&format!("{module}/")) {
                continue;
            }
            let mut stack = named_children(child);
            while let Some(n) = stack.pop() {
                match kind_of(n) {
                    // The default import, or `* as v` (the identifier under the namespace import).
                    "identifier" => {
                        out.namespaces.insert(text(n, src).to_string());
                    }
                    "import_specifier" => {
                        if let Some(name) = field(n, "name") {
                            let local = field(n, "alias").unwrap_or(name);
                            out.named.insert(text(local, src).to_string(), text(name, src).to_string());
                        }
                    }
                    "import_clause" | "named_imports" | "namespace_import" => stack.extend(named_children(n)),
                    _ => {}
                }
            }
        }
        out
    }

    /// Whether nothing is imported from the module.
    pub(super) fn is_empty(&self) -> bool {
        self.namespaces.is_empty() && self.named.is_empty()
    }

    /// The module's function a callee names (`v.pipe`, `yup.string`, an imported
    /// `string`), by its exported name.
    pub(super) fn function(&self, callee: Node, src: &str) -> Option<String> {
        let callee = strip_parens(callee);
        match kind_of(callee) {
            "identifier" => self.named.get(text(callee, src)).cloned(),
            "member_expression" => {
                let object = strip_parens(field(callee, "object")?);
                (kind_of(object) == "identifier" && self.namespaces.contains(text(object, src)))
                    .then(|| field(callee, "property").map(|p| text(p, src).to_string()))
                    .flatten()
            }
            _ => None,
        }
    }
}

/// A string literal without its quotes.
pub(super) fn unquote(s: &str) -> String {
    s.trim_matches(|c| c == '"' || c == '\'' || c == '`').to_string()
}

/// Every schema of the file (a node `is_schema` accepts, the outermost one of a nest:
/// a schema's property schemas are its own to read), with the path that names it
/// ([`path`]). A path two schemas share names neither (the other version could not
/// tell which is which); a schema with no path is left out.
pub(super) fn schemas<'t>(root: Node<'t>, src: &str, is_schema: impl Fn(Node<'t>) -> bool) -> Vec<(String, Node<'t>)> {
    let mut found: Vec<(String, Node<'t>)> = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if kind_of(node) == "call_expression" && is_schema(node) {
            if let Some(symbol) = path(node, src) {
                found.push((symbol, node));
            }
            continue;
        }
        let mut children = named_children(node);
        children.reverse();
        stack.extend(children);
    }
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for (symbol, _) in &found {
        *count.entry(symbol.clone()).or_default() += 1;
    }
    found.retain(|(symbol, _)| count.get(symbol) == Some(&1));
    found
}

/// The dotted path to a schema: from the outermost, the names of the declarations
/// around it (a `const`, a function, a class and its fields, a method), the keys of the
/// object properties and the JSX attributes it sits in, and the methods it is an
/// argument of (`SignupForm.validationSchema`, `router.create.input`). `None` outside
/// any named declaration. A loop up the parents.
pub(super) fn path(node: Node, src: &str) -> Option<String> {
    let mut segments = Vec::new();
    let mut named = false;
    let mut cur = node;
    while let Some(parent) = cur.parent() {
        match kind_of(parent) {
            "pair" if field(parent, "value") == Some(cur) => {
                segments.push(unquote(text(field(parent, "key")?, src)));
            }
            "variable_declarator"
            | "function_declaration"
            | "class_declaration"
            | "abstract_class_declaration"
            | "method_definition"
            | "public_field_definition" => {
                let name = field(parent, "name")?;
                if !matches!(kind_of(name), "identifier" | "property_identifier" | "type_identifier") {
                    return None;
                }
                segments.push(text(name, src).to_string());
                named = true;
            }
            "jsx_attribute" => {
                if let Some(name) = parent.named_child(0) {
                    segments.push(text(name, src).to_string());
                    named = true;
                }
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

/// The `key: value` pairs of an object literal (`None` for anything else); a
/// shorthand `{ name }` has no schema in place and is left out.
pub(super) fn properties<'t>(obj: Node<'t>, src: &str) -> Option<Vec<(String, Node<'t>)>> {
    let obj = strip_parens(obj);
    if kind_of(obj) != "object" {
        return None;
    }
    Some(
        named_children(obj)
            .into_iter()
            .filter(|p| kind_of(*p) == "pair")
            .filter_map(|p| Some((unquote(text(field(p, "key")?, src)), field(p, "value")?)))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::widen::detector::Grammar;

    fn with_root<R>(src: &str, f: impl Fn(Node, &str) -> R) -> R {
        let lang = Grammar::grammar(&crate::widen::ts::ScriptDetector, "a.tsx");
        crate::widen::syntax::both_versions(&lang, src, src, f).unwrap().0
    }

    #[test]
    fn imports_and_paths_are_read() {
        let src = "import * as Y from \"yup\";\nimport { string as str, object } from 'yup';\nimport x from \"other\";\n\
                   export function Form() {\n  const schema = Y.object({ a: str() });\n  return <F validationSchema={object({})} />;\n}\n\
                   const twice = [Y.string(), Y.string()];\n";
        let (ns, named, found) = with_root(src, |root, src| {
            let imports = Imports::of(root, src, "yup");
            let found: Vec<String> =
                schemas(root, src, |n| field(n, "function").is_some_and(|f| imports.function(f, src).is_some()))
                    .into_iter()
                    .map(|(s, _)| s)
                    .collect();
            (imports.namespaces, imports.named, found)
        });
        assert_eq!(ns, BTreeSet::from(["Y".to_string()]));
        assert_eq!(named.get("str").map(String::as_str), Some("string"));
        assert_eq!(named.get("object").map(String::as_str), Some("object"));
        // The two `Y.string()` of one array share a path: neither is named.
        assert_eq!(found, ["Form.schema", "Form.validationSchema"]);
    }
}
