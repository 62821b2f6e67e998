//! The walk that builds a Rust inventory from a syntax tree.

use std::rc::Rc;

use tree_sitter::Node;

use super::*;

/// One step of the walk. The walk keeps its own stack of steps instead of recursing: a
/// generated file (`1 + 1 + ...` or `((((...))))` thousands deep) makes a tree as deep
/// as the file is long, deeper than any thread's stack.
pub(super) enum Step<'t> {
    /// Visit `n` with its outer attributes; `func` is the innermost function.
    Visit { n: Node<'t>, attrs: Vec<String>, func: Option<Rc<str>>, in_test: bool },
    /// An item's inside is walked: leave its scope (and a trait's or `impl`'s, give
    /// back whether the walk is inside a trait).
    Leave { in_trait: Option<bool> },
}

impl<'a> Walk<'a> {
    /// Walks the tree under `n` (an item with outer attributes `attrs`, or the root),
    /// one [`Step`] at a time.
    pub(super) fn run(&mut self, n: Node<'a>, attrs: Vec<String>) {
        let mut scope = Vec::new();
        let mut later = Vec::new();
        let mut stack = vec![Step::Visit { n, attrs, func: None, in_test: false }];
        while let Some(step) = stack.pop() {
            match step {
                Step::Visit { n, attrs, func, in_test } => self.visit(n, attrs, &mut scope, func, in_test, &mut later),
                Step::Leave { in_trait } => {
                    scope.pop();
                    if let Some(outer) = in_trait {
                        self.in_trait = outer;
                    }
                }
            }
            stack.extend(later.drain(..).rev());
        }
    }

    pub(super) fn t(&self, n: Node) -> String {
        text(n, self.src).to_string()
    }

    pub(super) fn slot(&mut self, symbol: &str, key: String, label: String, ty: Node, in_test: bool) {
        let slot = Slot {
            label,
            ty: Ty::of(ty, self.src),
            text: collapse_whitespace(text(ty, self.src)),
            line: line_of(ty),
            in_test,
        };
        self.inv.slots.insert((symbol.to_string(), key), slot);
    }

    pub(super) fn bounds_of(&mut self, item: &Parts, symbol: &str) {
        self.bounds_keyed(item, symbol, "");
    }

    /// The bounds of an item's type parameters, keyed `(symbol, param + impl)`: an
    /// `impl` block's bounds are its own (`IMPL_MARK`, the implemented trait and the
    /// self type), so deleting a whole `impl` (moved to another module) removes no bound
    /// from the type's other `impl` blocks.
    pub(super) fn bounds_keyed(&mut self, item: &Parts, symbol: &str, impl_key: &str) {
        let mut params = Vec::new();
        if let Some(tp) = item.field("type_parameters") {
            let mut c = tp.walk();
            for p in tp.named_children(&mut c).filter(|p| kind_of(p) == "type_parameter") {
                let Some(name) = field(p, "name") else { continue };
                params.push(self.t(name));
                let key = (symbol.to_string(), format!("{}{impl_key}", self.t(name)));
                let entry = self.inv.bounds.entry(key).or_default();
                if let Some(b) = field(p, "bounds") {
                    let mut bc = b.walk();
                    entry.extend(b.named_children(&mut bc).map(|x| compact(text(x, self.src))));
                }
            }
        }
        for wc in item.all().filter(|ch| kind_of(ch) == "where_clause") {
            let mut wcur = wc.walk();
            for pred in wc.named_children(&mut wcur).filter(|p| kind_of(p) == "where_predicate") {
                let (Some(left), Some(b)) = (field(pred, "left"), field(pred, "bounds")) else {
                    continue;
                };
                let left = compact(text(left, self.src));
                let mut bc = b.walk();
                let items: Vec<String> = b.named_children(&mut bc).map(|x| compact(text(x, self.src))).collect();
                self.inv.bounds.entry((symbol.to_string(), format!("{left}{impl_key}"))).or_default().extend(items);
            }
        }
    }

    pub(super) fn fields(&mut self, list: Node, owner: &str, in_test: bool, visibility: bool) {
        let mut c = list.walk();
        match kind_of(list) {
            "field_declaration_list" => {
                for f in list.named_children(&mut c).filter(|f| kind_of(f) == "field_declaration") {
                    let (Some(name), Some(ty)) = (field(f, "name"), field(f, "type")) else {
                        continue;
                    };
                    let name = self.t(name);
                    let symbol = format!("{owner}.{name}");
                    self.slot(&symbol, "field".into(), format!("{name}: "), ty, in_test);
                    if visibility {
                        let shown = collapse_whitespace(self.t(f).trim_end_matches(','));
                        self.inv.fields.insert(symbol, (visibility_rank(f, self.src), shown, line_of(f), in_test));
                    }
                }
            }
            "ordered_field_declaration_list" => {
                let tys: Vec<Node> = list.children_by_field_name("type", &mut c).collect();
                for (i, ty) in tys.into_iter().enumerate() {
                    let symbol = format!("{owner}.{i}");
                    self.slot(&symbol, "field".into(), format!("{i}: "), ty, in_test);
                }
            }
            _ => {}
        }
    }

    /// Visit `n` with its outer attributes and the symbol scope so far; `func` is the
    /// innermost function. What is inside `n` is pushed to `later`, in order.
    fn visit(
        &mut self,
        n: Node<'a>,
        attrs: Vec<String>,
        scope: &mut Vec<String>,
        func: Option<Rc<str>>,
        in_test: bool,
        later: &mut Vec<Step<'a>>,
    ) {
        let kind = kind_of(n);
        let name_of = |n: Node| field(n, "name").map(|x| text(x, self.src).to_string());
        match kind {
            "inner_attribute_item" => {
                let s = compact(&self.t(n));
                if s.contains("unsafe_code") {
                    if s.starts_with("#![forbid(") {
                        self.inv.forbid_unsafe = Some((line_of(n), collapse_whitespace(&self.t(n))));
                    } else {
                        self.inv.unsafe_lint = Some(collapse_whitespace(&self.t(n)));
                    }
                }
                return;
            }
            "use_declaration" => {
                let s = compact(&self.t(n));
                if s.contains("serde_json::Value") || (s.contains("serde_json::{") && s.contains("Value")) {
                    self.inv.value_imported = true;
                }
                return;
            }
            "mod_item"
            | "struct_item"
            | "enum_item"
            | "union_item"
            | "trait_item"
            | "impl_item"
            | "function_item"
            | "function_signature_item"
            | "type_item"
            | "const_item"
            | "static_item" => {}
            "macro_invocation" => {
                if let (Some(f), Some(g)) = (func.as_deref(), guard_of_macro(n, self.src)) {
                    self.inv.guard_keys.insert(g.key.clone());
                    self.inv.guards.entry(f.to_string()).or_default().push(g);
                }
                // Macro bodies are token trees, not syntax: nothing else to see inside.
                return;
            }
            "if_expression" => {
                if let (Some(f), Some(g)) = (func.as_deref(), guard_of_if(n, self.src)) {
                    self.inv.guard_keys.insert(g.key.clone());
                    self.inv.guards.entry(f.to_string()).or_default().push(g);
                }
            }
            "unsafe_block" => {
                let owner = func.as_deref().map(str::to_string).unwrap_or_else(|| dotted(scope, "crate"));
                let shown = snippet(self.t(n).lines().next().unwrap_or("unsafe"));
                let site = (line_of(n), compact(&self.t(n)), shown);
                self.inv.unsafe_sites.entry(owner).or_default().push(site);
            }
            _ => {}
        }
        let in_test = in_test || attrs.iter().any(|a| is_test_attr(a));
        let is_item = matches!(
            kind,
            "impl_item"
                | "mod_item"
                | "struct_item"
                | "enum_item"
                | "union_item"
                | "trait_item"
                | "function_item"
                | "function_signature_item"
                | "type_item"
                | "const_item"
                | "static_item"
        );
        // An item's parts are read in one pass: its name, bounds, parameters, modifiers.
        let parts = is_item.then(|| Parts::of(n));
        let own_name = match (kind, &parts) {
            ("impl_item", _) => Some(impl_name(n, self.src)),
            (_, Some(p)) => p.field("name").map(|x| text(x, self.src).to_string()),
            _ => None,
        };
        let (Some(name), Some(parts)) = (own_name, parts) else {
            self.children(n, func, in_test, later);
            return;
        };
        let symbol = dotted(scope, &name);
        self.inv.owners.entry(symbol.clone()).or_insert(Owner { line: line_of(n), in_test });
        match kind {
            "struct_item" | "union_item" | "enum_item" => {
                if kind == "enum_item" {
                    self.inv.enums.insert(name.clone());
                }
                self.attrs(&attrs, &symbol);
                self.bounds_of(&parts, &symbol);
                let public = visibility_rank(n, self.src) == 3;
                let mut variants = Vec::new();
                if let Some(body) = parts.field("body") {
                    if kind == "enum_item" {
                        let mut c = body.walk();
                        for v in body.named_children(&mut c).filter(|v| kind_of(v) == "enum_variant") {
                            let Some(vname) = name_of(v) else { continue };
                            variants.push((vname.clone(), line_of(v)));
                            let vsym = format!("{symbol}.{vname}");
                            self.inv.owners.entry(vsym.clone()).or_insert(Owner { line: line_of(v), in_test });
                            let vattrs = attributes(v, self.src);
                            self.attrs(&vattrs, &vsym);
                            if let Some(vb) = field(v, "body") {
                                self.fields(vb, &vsym, in_test, false);
                            }
                        }
                    } else {
                        // A struct its derives fill from outside data is built with any
                        // field values whatever their visibility: a field made `pub`
                        // widens nothing.
                        let outside = filled_from_outside(&attrs);
                        self.fields(body, &symbol, in_test, !outside);
                        self.quiet_option(body, &symbol, &attrs);
                        if has_private_field(body, self.src) {
                            self.inv.closed.insert(symbol.clone());
                        }
                    }
                }
                if kind == "enum_item" {
                    if variants.is_empty() {
                        self.inv.closed.insert(symbol.clone());
                    }
                    if public {
                        let open = attrs.iter().any(|a| a == "#[non_exhaustive]");
                        self.inv.variants.insert(symbol.clone(), (open, variants));
                    }
                }
            }
            "function_item" | "function_signature_item" => {
                self.bounds_of(&parts, &symbol);
                // A trait's method, or one of an `impl` of a trait, has no visibility
                // of its own (and shares its symbol with an inherent method of the type).
                if let Some(name) = parts.field("name").filter(|_| !self.in_trait) {
                    let head = collapse_whitespace(&self.src[n.start_byte()..name.end_byte()]);
                    self.inv.fn_vis.insert(symbol.clone(), (visibility_rank(n, self.src), head, line_of(n), in_test));
                }
                if let Some(body) = parts.field("body").filter(|_| kind == "function_item") {
                    super::checked::record(body, self.src, &symbol, &mut self.inv);
                }
                if let Some(params) = parts.field("parameters") {
                    let mut c = params.walk();
                    for p in params.named_children(&mut c).filter(|p| kind_of(p) == "parameter") {
                        let (Some(pat), Some(ty)) = (field(p, "pattern"), field(p, "type")) else {
                            continue;
                        };
                        let pat = collapse_whitespace(&self.t(pat));
                        self.slot(&symbol, format!("param:{pat}"), format!("{pat}: "), ty, in_test);
                    }
                }
                if let Some(ret) = parts.field("return_type") {
                    self.slot(&symbol, "return".into(), "-> ".into(), ret, in_test);
                }
                if parts.all().any(|ch| kind_of(ch) == "function_modifiers" && text(ch, self.src).contains("unsafe")) {
                    let head = snippet(self.t(n).lines().next().unwrap_or(""));
                    self.inv.unsafe_sites.entry(symbol.clone()).or_default().push((
                        line_of(n),
                        format!("fn:{name}"),
                        head,
                    ));
                }
            }
            "impl_item" => {
                let part = |f| parts.field(f).map(|t| compact(text(t, self.src))).unwrap_or_default();
                let key = format!("{IMPL_MARK}{}{IMPL_MARK}{}", part("trait"), part("type"));
                self.bounds_keyed(&parts, &symbol, &key);
                let mut c = n.walk();
                if n.children(&mut c).any(|ch| kind_of(ch) == "unsafe") {
                    let head = snippet(self.t(n).lines().next().unwrap_or(""));
                    let key = format!("impl:{}", compact(&head));
                    self.inv.unsafe_sites.entry(symbol.clone()).or_default().push((line_of(n), key, head));
                }
            }
            "trait_item" => {
                self.bounds_of(&parts, &symbol);
                // Supertraits bound `Self`: removing one (a `Sealed` marker, say) lets
                // more types implement the trait.
                let own = self.inv.bounds.entry((symbol.clone(), "Self".into())).or_default();
                if let Some(b) = parts.field("bounds") {
                    let mut bc = b.walk();
                    own.extend(b.named_children(&mut bc).map(|x| compact(text(x, self.src))));
                }
                let mut c = n.walk();
                if n.children(&mut c).any(|ch| kind_of(ch) == "unsafe") {
                    let head = snippet(self.t(n).lines().next().unwrap_or(""));
                    self.inv.unsafe_sites.entry(symbol.clone()).or_default().push((
                        line_of(n),
                        format!("trait:{name}"),
                        head,
                    ));
                }
            }
            "type_item" => {
                self.bounds_of(&parts, &symbol);
                if let Some(ty) = field(n, "type") {
                    self.slot(&symbol, "alias".into(), format!("type {name} = "), ty, in_test);
                }
            }
            "const_item" | "static_item" => {
                if let Some(ty) = field(n, "type") {
                    self.slot(&symbol, "type".into(), format!("{name}: "), ty, in_test);
                }
                if kind == "static_item" {
                    let mut c = n.walk();
                    let mutable = n.children(&mut c).any(|ch| kind_of(ch) == "mutable_specifier");
                    let head = collapse_whitespace(self.t(n).split('=').next().unwrap_or(""))
                        .trim_end_matches(';')
                        .to_string();
                    self.inv.statics.insert(symbol.clone(), (mutable, head));
                }
            }
            _ => {}
        }
        scope.push(name);
        let f = if matches!(kind, "function_item") { Some(Rc::from(symbol.as_str())) } else { func };
        let mut in_trait = None;
        match kind {
            // Signatures, fields, variants and aliases were read above: they hold types
            // and patterns, never a check, an item or `unsafe` code. Only a function's
            // body and a constant's value are walked further.
            "function_item" | "function_signature_item" | "const_item" | "static_item" if self.prune => {
                let inner = if kind == "function_item" || kind == "function_signature_item" { "body" } else { "value" };
                if let Some(part) = parts.field(inner) {
                    later.push(Step::Visit { n: part, attrs: Vec::new(), func: f, in_test });
                }
            }
            "struct_item" | "enum_item" | "union_item" | "type_item" if self.prune => {}
            "trait_item" | "impl_item" => {
                in_trait = Some(self.in_trait);
                self.in_trait = kind == "trait_item" || parts.field("trait").is_some();
                self.children(n, f, in_test, later);
            }
            _ => self.children(n, f, in_test, later),
        }
        later.push(Step::Leave { in_trait });
    }

    /// Visit the children of `n` (pushed to `later`, in order), handing each item the
    /// attributes written before it.
    fn children(&mut self, n: Node<'a>, func: Option<Rc<str>>, in_test: bool, later: &mut Vec<Step<'a>>) {
        if self.prune && kind_of(n) == "block" && !TRIGGERS.any_in(text(n, self.src)) {
            self.skipped += 1;
            return;
        }
        let src = self.src;
        for_each_item(n, src, |attrs, k, _| later.push(Step::Visit { n: k, attrs, func: func.clone(), in_test }));
    }

    /// Records the fields of a struct body whose becoming `Option<T>` widens no value
    /// the scan reads: a field a builder defaults (its own or the struct's
    /// `#[builder(default)]`: a builder's setter has no null to give, and leaving the
    /// field out was already accepted), and a private field of a struct whose derives
    /// read nothing in ([`inert_derives`]: only its module's code builds it, and the
    /// compiler makes every read of it handle the absence), and a prost message field
    /// ([`protobuf_field`]). A `#[serde(default)]` does
    /// not quiet it: the default covers a missing key, while an explicit `null` was an
    /// error for the plain type and is accepted by the `Option` (docs/scan.md, "Round 6
    /// figures": one convention for both held-out corpora).
    pub(super) fn quiet_option(&mut self, list: Node, owner: &str, attrs: &[String]) {
        if kind_of(list) != "field_declaration_list" {
            return;
        }
        // A database row's columns have no default from a builder's: the default
        // narrowing is for structs that only input fills.
        let row = attrs.iter().any(|a| ROW_DERIVES.iter().any(|d| a.contains(d)));
        let all = defaulted(attrs) && !row;
        let inert = inert_derives(attrs);
        let mut c = list.walk();
        for f in list.named_children(&mut c).filter(|f| kind_of(f) == "field_declaration") {
            let Some(name) = field(f, "name") else { continue };
            let private = visibility_rank(f, self.src) == 0 && inert;
            let own = super::attributes(f, self.src);
            if all || private || (!row && defaulted(&own)) || protobuf_field(&own) {
                self.inv.quiet_option.insert(format!("{owner}.{}", self.t(name)));
            }
        }
    }

    pub(super) fn attrs(&mut self, attrs: &[String], symbol: &str) {
        for a in attrs {
            if a.starts_with("#[serde(") && a.contains("deny_unknown_fields") {
                self.inv
                    .attrs
                    .insert((symbol.to_string(), DENY_UNKNOWN_FIELDS_REMOVED), "#[serde(deny_unknown_fields)]".into());
            }
            if a == "#[non_exhaustive]" {
                self.inv.attrs.insert((symbol.to_string(), NON_EXHAUSTIVE_REMOVED), "#[non_exhaustive]".into());
            }
        }
    }
}

/// Whether a struct's derives build its values from outside data, with no constructor
/// of its own in the way: serde's `Deserialize` (unless `#[serde(try_from = ...)]` or
/// `#[serde(from = ...)]` routes it through one), or a database row mapping (diesel's
/// `Queryable`, `Selectable`, `Insertable`, `AsChangeset`; sqlx's `FromRow`).
fn filled_from_outside(attrs: &[String]) -> bool {
    let derived = attrs.iter().any(|a| {
        a.starts_with("#[derive(") && (a.contains("Deserialize") || ROW_DERIVES.iter().any(|d| a.contains(d)))
    });
    let routed = attrs.iter().any(|a| {
        a.starts_with("#[serde(") && (a.contains("try_from=") || a.contains("(from=") || a.contains(",from="))
    });
    derived && !routed
}

/// Derives that map a struct to a database row (diesel, sqlx, SeaORM).
const ROW_DERIVES: &[&str] = &["Queryable", "Selectable", "Insertable", "AsChangeset", "FromRow", "DeriveEntityModel"];

/// Whether every trait a struct derives only copies, compares, hashes, prints or writes
/// out its values (`Debug`, `Clone`, `PartialEq`, `Serialize`...): none builds a value
/// from input. Any other derive (serde's `Deserialize`, a GraphQL input object, a
/// command-line parser, a database row) may fill private fields from outside.
fn inert_derives(attrs: &[String]) -> bool {
    const INERT: &[&str] =
        &["Debug", "Clone", "Copy", "Default", "PartialEq", "Eq", "Hash", "PartialOrd", "Ord", "Serialize"];
    attrs.iter().filter_map(|a| a.strip_prefix("#[derive(").and_then(|d| d.strip_suffix(")]"))).all(|list| {
        list.split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .all(|d| INERT.contains(&d.rsplit("::").next().unwrap_or(d)))
    })
}

/// Whether a field's (or its struct's) attributes give it a builder's default when
/// the caller leaves it out (`#[builder(default)]`, `#[builder(default = "...")]`):
/// absence was already accepted, and a builder has no null beside it. serde's
/// `default` is not one of these (an explicit null was refused; see `quiet_option`).
fn defaulted(attrs: &[String]) -> bool {
    attrs.iter().any(|a| a.starts_with("#[builder(") && a.contains("default"))
}

/// Whether a field is a protobuf message field prost generates (`#[prost(bool, tag =
/// "1")]`): on the wire a proto3 field is never required (absent reads as its zero
/// value), so its becoming `Option` (`optional` in the `.proto`) only tells absence
/// apart; no input refused before is accepted.
fn protobuf_field(attrs: &[String]) -> bool {
    attrs.iter().any(|a| a.starts_with("#[prost("))
}

/// Whether a struct or union body has a field that is not `pub` (a tuple struct's
/// fields count as well): no other crate can build the type with a literal or match it
/// field by field.
fn has_private_field(body: Node, src: &str) -> bool {
    let mut c = body.walk();
    match kind_of(body) {
        "field_declaration_list" => body
            .named_children(&mut c)
            .filter(|f| kind_of(f) == "field_declaration")
            .any(|f| visibility_rank(f, src) < 3),
        "ordered_field_declaration_list" => {
            // Each field is an optional visibility followed by its type.
            let (mut private, mut public) = (false, false);
            for ch in body.named_children(&mut c) {
                match kind_of(ch) {
                    "visibility_modifier" => public = compact(text(ch, src)) == "pub",
                    "attribute_item" | "line_comment" | "block_comment" => {}
                    _ => {
                        private |= !public;
                        public = false;
                    }
                }
            }
            private
        }
        _ => false,
    }
}
