//! Go detector: struct fields and function parameters (never method receivers, whose
//! `T`/`*T` is a calling convention, not a constraint), package-level constants, and the
//! guards of function bodies (`if ... { return ..., errors.New(...) }`, `panic`).

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::syntax::{
    Body, Check, Slot, compact, field, kind_of, line, named_children, one_line, pair_slots, removed_checks,
    slot_finding, text,
};
use super::{Family, Language, RawFinding, RuleDef, RuleId, Severity};

const GO: &[Language] = &[Language::Go];

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: RuleId::GoPointerWidened,
        languages: GO,
        family: Family::Optionality,
        description: "A struct field changes from a value type `T` to a pointer `*T`, so it can be nil.",
        severity: Severity::High,
        message: "`{symbol}` may be nil now: `{before}` became `{after}`",
        invariant: "The field always held a value; code could read it without a nil check.",
    },
    RuleDef {
        id: RuleId::GoIntWidened,
        languages: GO,
        family: Family::NumericRange,
        description: "A field or parameter's integer type changes to one that admits values the old one could not hold (`uint8` to `int`, `uint32` to `int32`).",
        severity: Severity::Medium,
        message: "`{symbol}` admits a wider range now: `{before}` became `{after}`",
        invariant: "The type itself bounded the value (non-negative, at most the old type's maximum).",
    },
    RuleDef {
        id: RuleId::GoEnumErased,
        languages: GO,
        family: Family::EnumErasure,
        description: "A field or parameter typed by a named type with declared constants (Go's enum idiom) becomes the underlying basic type.",
        severity: Severity::Medium,
        message: "`{symbol}` is no longer restricted to the named constants: `{before}` became `{after}`",
        invariant: "Values came from the named type's constants, so switches over them could be exhaustive.",
    },
    RuleDef {
        id: RuleId::GoTypeErased,
        languages: GO,
        family: Family::TypeErasure,
        description: "A field or parameter's concrete type is replaced by `any` or `interface{}`.",
        severity: Severity::Medium,
        message: "`{symbol}` lost its type: `{before}` became `{after}`",
        invariant: "The compiler checked every use of the value against its concrete type.",
    },
    RuleDef {
        id: RuleId::GoConstMadeVar,
        languages: GO,
        family: Family::MutabilityExposure,
        description: "A package-level `const` becomes a `var`.",
        severity: Severity::Low,
        message: "`{symbol}` can be reassigned at run time now: `{before}` became `{after}`",
        invariant: "The value was fixed at compile time, so every reader saw the same value.",
    },
    RuleDef {
        id: RuleId::GoErrorGuardRemoved,
        languages: GO,
        family: Family::CheckRemoved,
        description: "A guard `if cond { return ..., <new error> }` is removed from a function body (propagating `if err != nil` blocks are not guards).",
        severity: Severity::High,
        message: "the guard `{before}` was removed from `{symbol}`",
        invariant: "The function refused inputs or states that failed the guard's condition before doing any work.",
    },
    RuleDef {
        id: RuleId::GoPanicRemoved,
        languages: GO,
        family: Family::CheckRemoved,
        description: "A `panic(...)` (alone or as `if cond { panic(...) }`) is removed from a function body.",
        severity: Severity::High,
        message: "the panic `{before}` was removed from `{symbol}`",
        invariant: "Execution never continued past that point in the state the panic refused.",
    },
    RuleDef {
        id: RuleId::GoEarlyReturnRemoved,
        languages: GO,
        family: Family::CheckRemoved,
        description: "A silent early return (`if x == nil { return }`, `if err != nil { return nil }`: a body of only a `return` of nothing, `nil` or `false`) is removed from a function that stays, and its condition is checked nowhere else in it.",
        severity: Severity::Medium,
        message: "the early return `{before}` was removed from `{symbol}`",
        invariant: "The function did nothing in the state the condition describes (nil, already done, a failed call), so the rest of its body never ran there.",
    },
];

/// Identifier node kinds of the Go grammar.
const IDENTS: &[&str] = &["identifier", "field_identifier", "type_identifier", "package_identifier"];

/// The values each integer type can hold (`int`/`uint` taken at 64 bits, as on every
/// platform Go code is usually built for).
const INT_RANGES: &[(&str, i128, i128)] = &[
    ("int8", -(1 << 7), (1 << 7) - 1),
    ("int16", -(1 << 15), (1 << 15) - 1),
    ("int32", -(1 << 31), (1 << 31) - 1),
    ("rune", -(1 << 31), (1 << 31) - 1),
    ("int64", -(1 << 63), (1 << 63) - 1),
    ("int", -(1 << 63), (1 << 63) - 1),
    ("uint8", 0, (1 << 8) - 1),
    ("byte", 0, (1 << 8) - 1),
    ("uint16", 0, (1 << 16) - 1),
    ("uint32", 0, (1 << 32) - 1),
    ("uint64", 0, (1 << 64) - 1),
    ("uint", 0, (1 << 64) - 1),
    ("uintptr", 0, (1 << 64) - 1),
];

/// Basic types a named "enum" type can be declared over.
const BASIC: &[&str] = &[
    "string", "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "byte", "rune",
];

/// The Go detector.
pub(crate) struct GoDetector;

impl super::detector::Grammar for GoDetector {
    type Inventory = Inventory;

    fn rules(&self) -> &'static [RuleDef] {
        RULES
    }

    fn grammar(&self, _path: &str) -> tree_sitter::Language {
        tree_sitter_go::LANGUAGE.into()
    }

    fn build(&self, tree: &tree_sitter::Tree, src: &str) -> Inventory {
        Inventory::build(tree.root_node(), src)
    }

    fn compare(&self, b: &Inventory, a: &Inventory) -> Vec<RawFinding> {
        let mut out = Vec::new();
        for (bs, as_) in pair_slots(&b.slots, &a.slots) {
            if let Some(rule) = classify(bs, as_, b) {
                out.push(slot_finding(rule, bs, as_));
            }
        }
        for (name, (_, shown)) in &b.consts {
            if !a.consts.contains_key(name)
                && let Some((line, var_shown)) = a.vars.get(name)
            {
                out.push(RawFinding {
                    line: *line,
                    rule: RuleId::GoConstMadeVar,
                    symbol: name.clone(),
                    before: shown.clone(),
                    after: var_shown.clone(),
                    in_test: false,
                });
            }
        }
        out.extend(removed_checks(&b.body, &a.body));
        let discarded = errors_discarded(b, a);
        // An `if err != nil { return nil }` whose error now goes into `_` is reported
        // once, as the error dropped.
        out.extend(
            removed_returns(b, a)
                .into_iter()
                .filter(|r| !discarded.iter().any(|d| d.symbol == r.symbol && d.before == r.before)),
        );
        out.extend(discarded);
        out
    }
}

/// The early returns of `b` gone from `a` ([`super::early_return::removed`]).
fn removed_returns(b: &Inventory, a: &Inventory) -> Vec<RawFinding> {
    super::early_return::removed(&b.body, &b.returns, &a.body, &a.returns)
}

/// An error that was passed up (`if err != nil { return ... }`) and is now dropped
/// into `_`: the function goes on as if the call had succeeded. Counted per function:
/// fewer propagations and more `_` assignments than before, one finding per error
/// dropped, at the new `_` assignment.
fn errors_discarded(b: &Inventory, a: &Inventory) -> Vec<RawFinding> {
    let mut out = Vec::new();
    let none = Vec::new();
    for (owner, old_props) in &b.propagated {
        if !a.body.owners.contains_key(owner) {
            continue;
        }
        let new_props = a.propagated.get(owner).unwrap_or(&none);
        let old_drops = b.discarded.get(owner).unwrap_or(&none);
        let new_drops = a.discarded.get(owner).unwrap_or(&none);
        let lost = old_props.len().saturating_sub(new_props.len());
        let dropped = new_drops.len().saturating_sub(old_drops.len());
        let kept: BTreeSet<&str> = new_props.iter().map(|p| p.1.as_str()).collect();
        let gone = old_props.iter().filter(|p| !kept.contains(p.1.as_str()));
        let fresh = new_drops.iter().filter(|d| !old_drops.iter().any(|o| o.1 == d.1));
        for ((_, before), (line, after)) in gone.zip(fresh).take(lost.min(dropped)) {
            out.push(RawFinding {
                line: *line,
                rule: RuleId::GoErrorGuardRemoved,
                symbol: owner.clone(),
                before: before.clone(),
                after: after.clone(),
                in_test: false,
            });
        }
    }
    out
}

fn classify(bs: &Slot<SlotInfo>, as_: &Slot<SlotInfo>, before: &Inventory) -> Option<RuleId> {
    let (b, a) = (bs.info.ty.as_str(), as_.info.ty.as_str());
    if b == a {
        return None;
    }
    if bs.info.field && a.strip_prefix('*') == Some(b) {
        return Some(RuleId::GoPointerWidened);
    }
    // The one type that differs inside an unchanged shell: `[]uint8` to `[]int`,
    // `map[string]Event` to `map[string]any`.
    let (b, a) = differing_part(b, a);
    let erased = |t: &str| t == "any" || t == "interface{}";
    if erased(a) && !erased(b) {
        return Some(RuleId::GoTypeErased);
    }
    let range = |t: &str| INT_RANGES.iter().find(|(n, _, _)| *n == t).map(|(_, lo, hi)| (*lo, *hi));
    if let (Some((blo, bhi)), Some((alo, ahi))) = (range(b), range(a))
        && (alo < blo || ahi > bhi)
    {
        return Some(RuleId::GoIntWidened);
    }
    if before.enum_types.get(b).is_some_and(|underlying| underlying == a) {
        return Some(RuleId::GoEnumErased);
    }
    None
}

/// Two formatting-blind types without their common prefix and suffix, cut only between
/// tokens so that `uint8`/`int` never shrink to `uint8`/`int` minus a shared `int`.
fn differing_part<'t>(b: &'t str, a: &'t str) -> (&'t str, &'t str) {
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
    let mut start = b.chars().zip(a.chars()).take_while(|(x, y)| x == y).map(|(x, _)| x.len_utf8()).sum::<usize>();
    while start > 0 && b[..start].ends_with(word) {
        start -= b[..start].chars().next_back().map_or(1, char::len_utf8);
    }
    let (b_rest, a_rest) = (&b[start..], &a[start..]);
    let mut end = b_rest
        .chars()
        .rev()
        .zip(a_rest.chars().rev())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum::<usize>()
        .min(b_rest.len().min(a_rest.len()));
    while end > 0 && b_rest[b_rest.len() - end..].starts_with(word) {
        end -= b_rest[b_rest.len() - end..].chars().next().map_or(1, char::len_utf8);
    }
    (&b_rest[..b_rest.len() - end], &a_rest[..a_rest.len() - end])
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct SlotInfo {
    /// The type, formatting-blind.
    ty: String,
    /// A struct field (rather than a parameter).
    field: bool,
}

#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Inventory {
    slots: Vec<Slot<SlotInfo>>,
    body: Body,
    /// Package-level constants and variables: name to (line, shown text).
    consts: BTreeMap<String, (u32, String)>,
    vars: BTreeMap<String, (u32, String)>,
    /// Named types over a basic type that have typed constants: name to underlying type.
    enum_types: BTreeMap<String, String>,
    /// Function symbol -> its `if err != nil { return ... }` (line, shown text).
    propagated: BTreeMap<String, Vec<(u32, String)>>,
    /// Function symbol -> assignments that drop a value into `_` last (`_ = f()`,
    /// `n, _ := f()`), where an error usually goes: (line, shown text).
    discarded: BTreeMap<String, Vec<(u32, String)>>,
    /// Silent early returns (`if x == nil { return }`), apart from `body.checks` so
    /// that the guard rules' matching stays exactly as it was without them.
    returns: Vec<Check>,
}

/// One step of the walk. The walk keeps its own stack of steps instead of recursing: a
/// generated file (`1 + 1 + ...` thousands of terms long) makes a tree as deep as the
/// file is long, deeper than any thread's stack.
enum Step<'a> {
    Visit(Node<'a>),
    /// A type's declaration is walked: leave its scope.
    LeaveType,
    /// A function's body is walked: the scope outside it back.
    LeaveFunction {
        scope: Vec<String>,
        is_test: bool,
    },
}

/// One step of reading a struct's fields ([`Walker::struct_fields`]).
enum FieldStep<'a> {
    /// Read the fields of a struct type.
    Struct(Node<'a>),
    /// Record one named field (and read its struct type, if it is one).
    Field { decl: Node<'a>, ty: Node<'a>, name: String },
    /// A nested struct's fields are read: leave its scope.
    Leave,
}

struct Walker<'a> {
    src: &'a str,
    inv: Inventory,
    scope: Vec<String>,
    test_depth: usize,
    /// `panic` calls already counted as the body of an `if` guard.
    guarded_panics: BTreeSet<usize>,
    /// Named types over a basic type, and the types constants are declared with.
    named_basic: BTreeMap<String, String>,
    const_types: BTreeSet<String>,
    /// The steps the current one asks for, in order: run after it, before anything
    /// already waiting (where a recursive walk would have called them).
    later: Vec<Step<'a>>,
}

impl Inventory {
    fn build(root: Node, src: &str) -> Inventory {
        let mut w = Walker {
            src,
            inv: Inventory::default(),
            scope: Vec::new(),
            test_depth: 0,
            guarded_panics: BTreeSet::new(),
            named_basic: BTreeMap::new(),
            const_types: BTreeSet::new(),
            later: Vec::new(),
        };
        for decl in named_children(root) {
            match kind_of(decl) {
                "const_declaration" => w.package_values(decl, "const"),
                "var_declaration" => w.package_values(decl, "var"),
                _ => {}
            }
        }
        let mut stack = vec![Step::Visit(root)];
        while let Some(step) = stack.pop() {
            match step {
                Step::Visit(node) => w.visit(node),
                Step::LeaveType => {
                    w.scope.pop();
                }
                Step::LeaveFunction { scope, is_test } => {
                    w.scope = scope;
                    w.test_depth -= usize::from(is_test);
                }
            }
            stack.extend(w.later.drain(..).rev());
        }
        let Walker { mut inv, named_basic, const_types, .. } = w;
        inv.enum_types = named_basic.into_iter().filter(|(name, _)| const_types.contains(name)).collect();
        inv
    }
}

impl<'a> Walker<'a> {
    fn symbol(&self, name: &str) -> String {
        let mut parts = self.scope.clone();
        parts.push(name.to_string());
        parts.join(".")
    }

    /// Visits the named children of `node` after the current step.
    fn visit_children(&mut self, node: Node<'a>) {
        super::syntax::for_each_named(node, |child| self.later.push(Step::Visit(child)));
    }

    /// Records a check of the current owner.
    fn push_check(&mut self, rule: RuleId, owner: &str, cond: Node, display: String) {
        let check = Check::new(rule, owner, cond, self.src, display, self.test_depth > 0, IDENTS);
        self.inv.body.checks.push(check);
    }

    fn visit(&mut self, node: Node<'a>) {
        match kind_of(node) {
            "type_spec" => self.type_spec(node),
            "const_spec" => {
                if let Some(t) = field(node, "type") {
                    self.const_types.insert(compact(text(t, self.src)));
                }
            }
            "function_declaration" | "method_declaration" => self.function(node),
            "if_statement" => {
                self.guard(node);
                self.visit_children(node);
            }
            "call_expression" => {
                if let (Some(owner), Some(f)) = (self.owner(), field(node, "function")) {
                    self.inv.body.note_call(&owner, f, self.src);
                }
                self.visit_children(node);
            }
            "expression_statement" => {
                self.bare_panic(node);
                self.visit_children(node);
            }
            "assignment_statement" | "short_var_declaration" => {
                let last_blank = field(node, "left")
                    .and_then(|l| named_children(l).into_iter().last())
                    .is_some_and(|last| text(last, self.src) == "_");
                if let Some(owner) = self.owner().filter(|_| last_blank) {
                    let shown = one_line(text(node, self.src));
                    self.inv.discarded.entry(owner).or_default().push((line(node), shown));
                }
                self.visit_children(node);
            }
            _ => self.visit_children(node),
        }
    }

    /// Package-level `const X = ...` / `var X = ...` (grouped or not).
    fn package_values(&mut self, decl: Node, keyword: &str) {
        let mut specs = Vec::new();
        let mut stack = named_children(decl);
        while let Some(n) = stack.pop() {
            match kind_of(n) {
                "const_spec" | "var_spec" => specs.push(n),
                "var_spec_list" => stack.extend(named_children(n)),
                _ => {}
            }
        }
        for spec in specs {
            let shown = format!("{keyword} {}", one_line(text(spec, self.src)));
            for name in named_children(spec).into_iter().filter(|c| kind_of(c) == "identifier") {
                let entry = (line(spec), shown.clone());
                let map = if keyword == "const" { &mut self.inv.consts } else { &mut self.inv.vars };
                map.insert(text(name, self.src).to_string(), entry);
            }
        }
    }

    fn type_spec(&mut self, node: Node<'a>) {
        let (Some(name), Some(ty)) = (field(node, "name").map(|n| text(n, self.src).to_string()), field(node, "type"))
        else {
            return;
        };
        let underlying = text(ty, self.src);
        if BASIC.contains(&underlying) {
            self.named_basic.insert(self.symbol(&name), underlying.to_string());
        }
        self.scope.push(name);
        if kind_of(ty) == "struct_type" {
            self.struct_fields(ty);
            self.scope.pop();
        } else {
            self.later.push(Step::Visit(ty));
            self.later.push(Step::LeaveType);
        }
    }

    /// The fields of a struct type, nested anonymous structs' fields under their field's
    /// name, in source order; an explicit stack, since structs may nest as deep as the
    /// file is long.
    fn struct_fields(&mut self, st: Node<'a>) {
        let mut stack = vec![FieldStep::Struct(st)];
        while let Some(step) = stack.pop() {
            match step {
                FieldStep::Struct(st) => {
                    let mut fields = Vec::new();
                    let decls = named_children(st)
                        .into_iter()
                        .filter(|c| kind_of(c) == "field_declaration_list")
                        .flat_map(named_children)
                        .filter(|c| kind_of(c) == "field_declaration");
                    for fd in decls {
                        // An embedded field has no name and promotes its type's fields: nothing to pair.
                        let Some(ty) = field(fd, "type") else {
                            continue;
                        };
                        let names = named_children(fd).into_iter().filter(|c| kind_of(c) == "field_identifier");
                        fields.extend(names.map(|n| FieldStep::Field {
                            decl: fd,
                            ty,
                            name: text(n, self.src).to_string(),
                        }));
                    }
                    stack.extend(fields.into_iter().rev());
                }
                FieldStep::Field { decl: fd, ty, name } => {
                    self.inv.slots.push(Slot {
                        key: self.symbol(&name),
                        symbol: self.symbol(&name),
                        line: line(fd),
                        display: format!("{name} {}", one_line(text(ty, self.src))),
                        in_test: self.test_depth > 0,
                        info: SlotInfo { ty: compact(text(ty, self.src)), field: true },
                    });
                    if kind_of(ty) == "struct_type" {
                        self.scope.push(name);
                        stack.push(FieldStep::Leave);
                        stack.push(FieldStep::Struct(ty));
                    }
                }
                FieldStep::Leave => {
                    self.scope.pop();
                }
            }
        }
    }

    fn function(&mut self, node: Node<'a>) {
        let Some(name) = field(node, "name").map(|n| text(n, self.src).to_string()) else {
            return;
        };
        // A method is named through its receiver's type; the receiver itself is not a slot.
        let owner_type = field(node, "receiver").and_then(|r| {
            let decl = named_children(r).into_iter().next()?;
            let t = compact(text(field(decl, "type")?, self.src));
            let t = t.trim_start_matches('*');
            Some(t.split('[').next().unwrap_or(t).to_string())
        });
        let symbol = match owner_type {
            Some(t) => format!("{}.{name}", self.symbol(&t)),
            None => self.symbol(&name),
        };
        self.inv.body.owners.entry(symbol.clone()).or_insert(line(node));
        let params = field(node, "parameters");
        let is_test = ["Test", "Benchmark", "Fuzz"].iter().any(|p| name.starts_with(p))
            && params.is_some_and(|p| text(p, self.src).contains("testing."));
        self.test_depth += usize::from(is_test);
        if let Some(params) = params {
            for p in named_children(params).into_iter().filter(|p| kind_of(p) == "parameter_declaration") {
                let Some(ty) = field(p, "type") else {
                    continue;
                };
                for n in named_children(p).into_iter().filter(|c| kind_of(c) == "identifier") {
                    let pname = text(n, self.src);
                    self.inv.slots.push(Slot {
                        key: format!("{symbol}({pname})"),
                        symbol: symbol.clone(),
                        line: line(p),
                        display: format!("{pname} {}", one_line(text(ty, self.src))),
                        in_test: self.test_depth > 0,
                        info: SlotInfo { ty: compact(text(ty, self.src)), field: false },
                    });
                }
            }
        }
        let saved = std::mem::replace(&mut self.scope, symbol.split('.').map(String::from).collect());
        if let Some(body) = field(node, "body") {
            self.later.push(Step::Visit(body));
        }
        self.later.push(Step::LeaveFunction { scope: saved, is_test });
    }

    fn owner(&self) -> Option<String> {
        (!self.scope.is_empty()).then(|| self.scope.join("."))
    }

    /// Statements directly inside a block (through Go's `statement_list`).
    fn statements(block: Node) -> Vec<Node> {
        named_children(block)
            .into_iter()
            .flat_map(|s| if kind_of(s) == "statement_list" { named_children(s) } else { vec![s] })
            .collect()
    }

    fn guard(&mut self, node: Node) {
        let (Some(owner), Some(cond), Some(cons)) =
            (self.owner(), field(node, "condition"), field(node, "consequence"))
        else {
            return;
        };
        self.inv.body.note_condition(&owner, cond, self.src);
        let cond_text = one_line(text(cond, self.src));
        if propagates_error(&cond_text)
            && let Some(ret) = Self::statements(cons).into_iter().find(|s| kind_of(s) == "return_statement")
        {
            let shown = format!("if {cond_text} {{ {} }}", one_line(text(ret, self.src)));
            self.inv.propagated.entry(owner.clone()).or_default().push((line(node), shown));
        }
        for stmt in Self::statements(cons) {
            let rule = if is_panic(stmt, self.src) {
                self.guarded_panics.insert(stmt.id());
                RuleId::GoPanicRemoved
            } else if kind_of(stmt) == "return_statement"
                && self.returns_new_error(stmt)
                && !propagates_error(&cond_text)
            {
                RuleId::GoErrorGuardRemoved
            } else {
                continue;
            };
            let display = format!("if {cond_text} {{ {} }}", one_line(text(stmt, self.src)));
            self.push_check(rule, &owner, cond, display);
            return;
        }
        self.early_return(&owner, node, cond, cons);
    }

    /// `if x == nil { return }`, `if err != nil { return nil }`: a guard without `else`
    /// (and without an initialiser, whose variable only the guard reads) whose block is
    /// only a `return` of nothing, `nil`s or `false`.
    fn early_return(&mut self, owner: &str, node: Node, cond: Node, cons: Node) {
        if field(node, "alternative").is_some() || field(node, "initializer").is_some() {
            return;
        }
        let [ret] = Self::statements(cons).into_iter().filter(|s| kind_of(s) != "comment").collect::<Vec<_>>()[..]
        else {
            return;
        };
        if kind_of(ret) != "return_statement" {
            return;
        }
        let values: Vec<Node> = named_children(ret)
            .into_iter()
            .flat_map(|v| if kind_of(v) == "expression_list" { named_children(v) } else { vec![v] })
            .collect();
        if !values.iter().all(|v| matches!(kind_of(v), "nil" | "false")) {
            return;
        }
        let display = format!("if {} {{ {} }}", one_line(text(cond, self.src)), one_line(text(ret, self.src)));
        let check =
            Check::new(RuleId::GoEarlyReturnRemoved, owner, cond, self.src, display, self.test_depth > 0, IDENTS);
        self.inv.returns.push(check);
    }

    fn bare_panic(&mut self, node: Node) {
        if !is_panic(node, self.src) || self.guarded_panics.contains(&node.id()) {
            return;
        }
        let Some(owner) = self.owner() else { return };
        let Some(call) = node.named_child(0) else { return };
        self.push_check(RuleId::GoPanicRemoved, &owner, call, one_line(text(node, self.src)));
    }

    /// `return ..., errors.New(..)` / `fmt.Errorf(..)` / `ErrSentinel` / `&FooError{..}`.
    fn returns_new_error(&self, ret: Node) -> bool {
        let Some(last) = named_children(ret)
            .into_iter()
            .next()
            .and_then(|list| named_children(list).into_iter().last().or(Some(list)))
        else {
            return false;
        };
        let mut e = last;
        if kind_of(e) == "unary_expression"
            && let Some(inner) = field(e, "operand")
        {
            e = inner;
        }
        let t = compact(text(e, self.src));
        match kind_of(e) {
            "call_expression" => {
                let f = field(e, "function").map(|f| compact(text(f, self.src))).unwrap_or_default();
                let last = f.rsplit('.').next().unwrap_or(&f);
                f == "errors.New"
                    || last.ends_with("Errorf")
                    || last.ends_with("Error")
                    || last.starts_with("Wrap")
                    || (last.starts_with("New") && last.contains("Err"))
            }
            "identifier" | "selector_expression" => {
                let last = t.rsplit('.').next().unwrap_or(&t);
                last.starts_with("Err")
                    || (last.starts_with("err") && last[3..].starts_with(|c: char| c.is_uppercase()))
            }
            "composite_literal" => field(e, "type").is_some_and(|ty| text(ty, self.src).ends_with("Error")),
            _ => false,
        }
    }
}

/// `panic(...)` as a statement.
fn is_panic(stmt: Node, src: &str) -> bool {
    kind_of(stmt) == "expression_statement"
        && stmt.named_child(0).is_some_and(|c| {
            kind_of(c) == "call_expression" && field(c, "function").is_some_and(|f| text(f, src) == "panic")
        })
}

/// `err != nil` and the like: passing an error up is error handling, not a guard.
fn propagates_error(cond: &str) -> bool {
    compact(cond).strip_suffix("!=nil").is_some_and(|subject| subject.to_ascii_lowercase().contains("err"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::widen::DetectError;

    fn detect(path: &str, before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
        crate::widen::detector::run(Language::Go, path, before, after, true)
    }

    #[test]
    fn the_differing_part_is_whole_tokens() {
        assert_eq!(differing_part("[]uint8", "[]int"), ("uint8", "int"));
        assert_eq!(differing_part("map[string]Event", "map[string]any"), ("Event", "any"));
        assert_eq!(differing_part("int32", "int64"), ("int32", "int64"));
        assert_eq!(differing_part("chan<- int8", "chan<- int16"), ("int8", "int16"));
    }

    #[test]
    fn syntax_error_is_a_detect_error() {
        let err = detect("a.go", "package a\n", "package a\nfunc (\n").unwrap_err();
        assert!(err.0.contains("new version"), "{err}");
    }

    #[test]
    fn panics_in_test_functions_are_marked() {
        let before =
            "package a\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {\n\tif x < 0 {\n\t\tpanic(\"neg\")\n\t}\n}\n";
        let after = "package a\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {\n}\n";
        let got = detect("a.go", before, after).unwrap();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].symbol, "TestX");
        assert!(got[0].in_test);
        assert_eq!(got[0].before, "if x < 0 { panic(\"neg\") }");
    }
}
