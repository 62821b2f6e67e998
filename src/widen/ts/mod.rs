//! TypeScript and JavaScript detector: the typed members of interfaces, type literals,
//! type aliases and classes, function parameters and return types (TypeScript only), and
//! the guards of function bodies (`if (...) throw`, `invariant(...)`, `assert(...)`) in
//! both languages. `.ts`/`.mts`/`.cts` use the TypeScript grammar, `.tsx` the TSX
//! grammar, `.js`/`.jsx`/`.mjs`/`.cjs` the JavaScript grammar.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::syntax::{
    Body, Check, Slot, children, compact, field, kind_of, line, named_children, one_line, pair_slots, removed_checks,
    slot_finding, text,
};
use super::window;
use super::{Family, Language, RawFinding, RuleDef, RuleId, Severity};

pub(crate) use rules::RULES;

/// Identifier node kinds of the TypeScript and JavaScript grammars.
const IDENTS: &[&str] =
    &["identifier", "property_identifier", "private_property_identifier", "shorthand_property_identifier", "this"];

/// Test-framework calls whose callback is test code (mocha, jest, vitest, node:test).
const TEST_CALLS: &[&str] = &[
    "describe",
    "it",
    "test",
    "suite",
    "context",
    "beforeEach",
    "afterEach",
    "beforeAll",
    "afterAll",
    "before",
    "after",
];

/// Calls that assert their first argument.
const ASSERT_FIRST_ARG: &[&str] = &["invariant", "assert", "console.assert", "assert.ok"];

/// The TypeScript and JavaScript detector.
pub(crate) struct ScriptDetector;

impl super::detector::Grammar for ScriptDetector {
    type Inventory = Inventory;

    fn rules(&self) -> &'static [RuleDef] {
        RULES
    }

    fn grammar(&self, path: &str) -> tree_sitter::Language {
        match Language::for_path(path) {
            Some(Language::Javascript) => tree_sitter_javascript::LANGUAGE.into(),
            _ if path.to_ascii_lowercase().ends_with(".tsx") => tree_sitter_typescript::LANGUAGE_TSX.into(),
            _ => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        }
    }

    fn build(&self, tree: &tree_sitter::Tree, src: &str) -> Inventory {
        Inventory::build(tree.root_node(), src)
    }

    fn build_pair(
        &self,
        old: &tree_sitter::Tree,
        before: &str,
        new: &tree_sitter::Tree,
        after: &str,
        unchanged: &super::syntax::Unchanged,
    ) -> (Inventory, Inventory) {
        Inventory::build_pair(old.root_node(), before, new.root_node(), after, Some(unchanged))
    }

    /// JSX files are never windowed.
    fn window(&self, path: &str) -> Option<window::Lexer> {
        (!path.to_ascii_lowercase().ends_with('x')).then_some(window::Lexer::Script)
    }

    fn stands_alone(&self, old: &Inventory, new: &Inventory, outside: &window::Outside) -> bool {
        stands_alone(old, new, outside)
    }

    /// Bodies holding nothing the walk records are left out of the parse (JSX files
    /// are parsed whole). None is left out for being shared: a body's calls are
    /// looked up across the file (a removed check may now sit in a helper it calls).
    fn elide(&self, path: &str) -> Option<super::elide::Elision> {
        (!path.to_ascii_lowercase().ends_with('x')).then_some(super::elide::Elision {
            lexer: super::elide::BodyLexer::Script,
            triggers: body_may_hold,
            unshared: |_| true,
        })
    }

    fn left_out_block(&self, block: Node, parent: Option<Node>) -> bool {
        kind_of(block) == "statement_block"
            && parent.is_some_and(|f| {
                matches!(
                    kind_of(f),
                    "function_declaration"
                        | "function_expression"
                        | "function"
                        | "generator_function_declaration"
                        | "generator_function"
                        | "method_definition"
                        | "arrow_function"
                )
            })
    }

    fn compare(&self, b: &Inventory, a: &Inventory) -> Vec<RawFinding> {
        let mut out = Vec::new();
        for (bs, as_) in pair_slots(&b.slots, &a.slots) {
            if bs.info.private && !as_.info.private {
                out.push(slot_finding(RuleId::TsPrivateMadePublic, bs, as_));
            }
            if bs.info.readonly && !as_.info.readonly {
                out.push(slot_finding(RuleId::TsReadonlyRemoved, bs, as_));
            }
            if !bs.info.optional && as_.info.optional {
                out.push(slot_finding(RuleId::TsPropertyMadeOptional, bs, as_));
            }
            if let (Some(bt), Some(at)) = (&bs.info.ty, &as_.info.ty)
                && let Some(rule) = classify(bt, at, bs.info.optional, b)
            {
                out.push(slot_finding(rule, bs, as_));
            }
        }
        out.extend(removed_checks(&b.body, &a.body).into_iter().filter(|f| !widened_guard(f, &b.body, &a.body)));
        out.extend(removed_returns(b, a));
        out.retain(|f| !shapes::moot_guard(f, b, a));
        for (bs, as_) in pair_slots(&b.generics, &a.generics) {
            if let Some(bt) = &bs.info
                && constraint_loosened(bt, as_.info.as_ref())
                && !renamed(bt, as_.info.as_ref(), b, a)
            {
                out.push(slot_finding(RuleId::TsGenericConstraintLoosened, bs, as_));
            }
        }
        out
    }
}

/// Whether the window's inventories compare exactly as the whole files' would, given
/// the `outside` text (the same in both versions): slots pair and checks match by
/// symbol, helpers and type names are looked up file-wide; none of it may meet
/// anything outside.
fn stands_alone(old: &Inventory, new: &Inventory, outside: &window::Outside) -> bool {
    let mut roots = BTreeSet::new();
    for inv in [old, new] {
        let body = &inv.body;
        let symbols = (inv.slots.iter().flat_map(|s| [&s.key, &s.symbol]))
            .chain(body.owners.keys())
            .chain(body.checks.iter().map(|c| &c.owner))
            .chain(inv.returns.iter().map(|c| &c.owner))
            .chain(inv.generics.iter().map(|s| &s.symbol))
            .chain(body.conditions.iter().map(|c| &c.0))
            .chain(body.calls.iter().map(|c| &c.0))
            .chain(&inv.enums)
            .chain(inv.literal_aliases.keys());
        roots.extend(symbols.map(|s| window::root(s)));
    }
    // A test call without a title names its callback after the call itself.
    let test_call = |root: &&str| TEST_CALLS.contains(root) && outside.may_name(root);
    if outside.may_declare_any(window::Lexer::Script, &roots) || roots.iter().any(test_call) {
        return false;
    }
    // A new call to a function outside that holds checks would stand in for a check.
    if new.body.calls.iter().any(|call| !old.body.calls.contains(call) && outside.may_name(&call.1)) {
        return false;
    }
    // Whether a constraint's type was renamed in the file is a file-wide question.
    for (b, a) in pair_slots(&old.generics, &new.generics) {
        let keys = [b, a].map(|s| s.info.as_ref().map(TsType::member_keys).unwrap_or_default());
        if b.info.as_ref().map(|t| &t.key) != a.info.as_ref().map(|t| &t.key)
            && keys.iter().flatten().any(|k| outside.may_declare(window::Lexer::Script, k))
        {
            return false;
        }
    }
    // Whether a type names an enum or a literal alias of the file is a file-wide question.
    if outside.contains_word("enum") || outside.contains_word("type") {
        for (b, a) in pair_slots(&old.slots, &new.slots) {
            if let (Some(bt), Some(at)) = (&b.info.ty, &a.info.ty)
                && bt.key != at.key
                && bt.member_keys().iter().any(|k| outside.may_declare(window::Lexer::Script, k))
            {
                return false;
            }
        }
    }
    true
}

/// How a type annotation changed, or `None` when it did not loosen.
/// `b_optional`: the old slot was optional, so it already admitted `undefined`.
fn classify(b: &TsType, a: &TsType, b_optional: bool, before: &Inventory) -> Option<RuleId> {
    if b.key == a.key {
        return None;
    }
    let core =
        |t: &TsType| -> BTreeSet<String> { t.members.iter().filter(|m| !m.nullish).map(|m| m.key.clone()).collect() };
    let (bcore, acore) = (core(b), core(a));
    let erased = |set: &BTreeSet<String>| {
        set.iter().any(|m| matches!(m.as_str(), "any" | "unknown" | "object" | "Object" | "{}"))
    };
    if erased(&acore) && !erased(&bcore) {
        return Some(RuleId::TsTypeErased);
    }
    let b_core_members: Vec<&Member> = b.members.iter().filter(|m| !m.nullish).collect();
    // Every literal kind of the old union is covered by its primitive in the new type.
    let literal_primitives: Option<BTreeSet<&str>> =
        b_core_members.iter().map(|m| m.literal).collect::<Option<BTreeSet<&str>>>().or_else(|| {
            match b_core_members.as_slice() {
                [only] => before.literal_aliases.get(&only.key).cloned(),
                _ => None,
            }
        });
    if let Some(prims) = literal_primitives
        && !prims.is_empty()
        && prims.iter().all(|p| acore.contains(*p))
    {
        return Some(RuleId::TsLiteralUnionErased);
    }
    if let [only] = b_core_members.as_slice()
        && before.enums.contains(&only.key)
        && (acore.contains("string") || acore.contains("number"))
    {
        return Some(RuleId::TsEnumErased);
    }
    if let [only] = b_core_members.as_slice()
        && let Some(mutable) = strip_readonly(&only.text)
        && acore.len() == 1
        && mutable.iter().any(|m| acore.contains(&compact(m)))
    {
        return Some(RuleId::TsReadonlyRemoved);
    }
    // A type that already admitted absence (a nullish member, or `?`) does not widen by
    // spelling it differently.
    let b_null = b_optional || b.members.iter().any(|m| m.nullish);
    let a_null = a.members.iter().any(|m| m.nullish);
    if !b_null && a_null && !bcore.is_empty() && bcore.is_subset(&acore) {
        return Some(RuleId::TsNullableWidened);
    }
    // The same container on both sides: compare what it holds.
    let a_core_members: Vec<&Member> = a.members.iter().filter(|m| !m.nullish).collect();
    // A closed set of literals that gained one (never what the container comparison
    // below reads: that needs one non-literal member on each side).
    let all_literal = |ms: &[&Member]| !ms.is_empty() && ms.iter().all(|m| m.literal.is_some());
    if all_literal(&b_core_members)
        && all_literal(&a_core_members)
        && bcore.len() < acore.len()
        && bcore.is_subset(&acore)
        && (a_null || !b.members.iter().any(|m| m.nullish))
    {
        return Some(RuleId::TsLiteralUnionWidened);
    }
    if let ([bm], [am]) = (b_core_members.as_slice(), a_core_members.as_slice())
        && let (Some((bh, bargs)), Some((ah, aargs))) = (&bm.args, &am.args)
        && bh == ah
        && bargs.len() == aargs.len()
    {
        // `Omit<T, 'a' | 'b'>`, `Record<'a' | 'b', V>`: a union of keys names
        // properties, not values admitted; its gaining a key is no widening.
        let keys = match bh.as_str() {
            "Omit" | "Pick" | "Exclude" | "Extract" => Some(1),
            "Record" => Some(0),
            _ => None,
        };
        return bargs
            .iter()
            .zip(aargs)
            .enumerate()
            .filter(|(i, _)| Some(*i) != keys)
            .find_map(|(_, (bt, at))| classify(bt, at, false, before));
    }
    None
}

/// Whether a removed throw guard's condition is now one alternative of a guard of the
/// same function (`if (!order) throw` folded into `if (!allowed || !order || ...)
/// throw`): the function still refuses every case it refused, and more.
fn widened_guard(f: &RawFinding, b: &Body, a: &Body) -> bool {
    f.rule == RuleId::TsThrowGuardRemoved
        && b.checks.iter().filter(|c| c.owner == f.symbol && c.display == f.before).any(|old| {
            a.checks.iter().any(|c| c.rule == old.rule && c.owner == old.owner && c.disjuncts.contains(&old.key))
        })
}

/// The early returns of `b` gone from `a` ([`super::early_return::removed`]).
fn removed_returns(b: &Inventory, a: &Inventory) -> Vec<RawFinding> {
    super::early_return::removed(&b.body, &b.returns, &a.body, &a.returns)
}

/// The mutable spellings of a read-only type, or `None` when the type is not read-only.
fn strip_readonly(t: &str) -> Option<Vec<String>> {
    if let Some(rest) = t.strip_prefix("readonly ") {
        let rest = rest.trim();
        let mut out = vec![rest.to_string()];
        if let Some(elem) = rest.strip_suffix("[]") {
            out.push(format!("Array<{elem}>"));
        }
        return Some(out);
    }
    let generic =
        |prefix: &str| t.strip_prefix(prefix).and_then(|r| r.strip_suffix('>')).map(|inner| inner.trim().to_string());
    if let Some(inner) = generic("ReadonlyArray<") {
        return Some(vec![format!("{inner}[]"), format!("Array<{inner}>")]);
    }
    if let Some(inner) = generic("Readonly<") {
        return Some(vec![inner]);
    }
    for (ro, rw) in [("ReadonlyMap<", "Map"), ("ReadonlySet<", "Set")] {
        if let Some(inner) = generic(ro) {
            return Some(vec![format!("{rw}<{inner}>")]);
        }
    }
    None
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct TsType {
    /// The whole type, formatting-blind.
    key: String,
    members: Vec<Member>,
}

impl TsType {
    /// The key of every member of this type, generic and array arguments included.
    fn member_keys(&self) -> Vec<&str> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(ty) = stack.pop() {
            for m in &ty.members {
                out.push(m.key.as_str());
                if let Some((_, args)) = &m.args {
                    stack.extend(args);
                }
            }
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Member {
    /// Formatting-blind text.
    key: String,
    /// One-line text.
    text: String,
    nullish: bool,
    /// For a literal type, the primitive it belongs to (`string`, `number`, `boolean`).
    #[serde(deserialize_with = "super::stored::opt_word")]
    literal: Option<super::stored::Word>,
    /// For a generic or array type, the container (`Promise`, `[]`) and its arguments, so
    /// that `Promise<User>` to `Promise<User | undefined>` is seen.
    args: Option<(String, Vec<TsType>)>,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct SlotInfo {
    ty: Option<TsType>,
    optional: bool,
    readonly: bool,
    private: bool,
}

/// How deep a type is read into its unions, parentheses and arguments; below that a
/// type is one member, by its text. No type a person writes comes near it, and the
/// bound keeps every function over [`TsType`] (its reading, comparison, encoding and
/// drop, all recursive) within a few kilobytes of stack however deep a generated type
/// nests.
const MAX_TYPE_DEPTH: usize = 64;

fn ts_type(node: Node, src: &str) -> TsType {
    ts_type_within(node, src, 0)
}

/// [`ts_type`] for a type `depth` levels inside the slot's type.
fn ts_type_within(node: Node, src: &str, depth: usize) -> TsType {
    let mut members = Vec::new();
    collect_members(node, src, &mut members, depth);
    TsType { key: compact(text(node, src)), members }
}

fn collect_members(node: Node, src: &str, out: &mut Vec<Member>, depth: usize) {
    let deep = depth >= MAX_TYPE_DEPTH;
    match kind_of(node) {
        "union_type" | "parenthesized_type" | "type_annotation" if !deep => {
            super::syntax::for_each_named(node, |child| collect_members(child, src, out, depth + 1));
        }
        _ => {
            let t = text(node, src);
            let key = compact(t);
            let literal = if kind_of(node) == "template_literal_type" {
                Some("string")
            } else if kind_of(node) == "literal_type" {
                match node.named_child(0).map(|c| kind_of(c)) {
                    Some("string") => Some("string"),
                    Some("number") | Some("unary_expression") => Some("number"),
                    Some("true") | Some("false") => Some("boolean"),
                    _ => None,
                }
            } else {
                None
            };
            let args = match kind_of(node) {
                _ if deep => None,
                "generic_type" => field(node, "name").map(|n| {
                    let args = field(node, "type_arguments")
                        .map(|ta| named_children(ta).into_iter().map(|a| ts_type_within(a, src, depth + 1)).collect())
                        .unwrap_or_default();
                    (compact(text(n, src)), args)
                }),
                "array_type" => {
                    node.named_child(0).map(|e| ("[]".to_string(), vec![ts_type_within(e, src, depth + 1)]))
                }
                _ => None,
            };
            out.push(Member { nullish: key == "null" || key == "undefined", key, text: one_line(t), literal, args });
        }
    }
}

/// What the walk reacts to inside a function body, as the tokens each needs: calls
/// (`(`, or a backtick for a tagged template), nested functions (`(` or `=>`), `if`
/// guards, type aliases, enums, and classes, interfaces, namespaces and type literals
/// (`{`). A body whose inside holds none of them holds nothing the inventory records.
static TRIGGERS: std::sync::LazyLock<super::syntax::Triggers> =
    std::sync::LazyLock::new(|| super::syntax::Triggers::new(TRIGGER_TOKENS));

/// The tokens of [`TRIGGERS`], the call's `(` first.
const TRIGGER_TOKENS: &[&str] = &["(", "`", "{", "=>", "if", "type", "enum"];

/// Whether the inside of a function body may hold something the walk records: one of
/// [`TRIGGERS`], where a `(` counts only as a call's (after a name that is not an
/// operator word such as `return` or `typeof`, or after `)`, `]`, `>`, `.`, `!`): a
/// parenthesised expression holds nothing the walk reacts to.
fn body_may_hold(inside: &str) -> bool {
    static OTHERS: std::sync::LazyLock<super::syntax::Triggers> =
        std::sync::LazyLock::new(|| super::syntax::Triggers::new(&TRIGGER_TOKENS[1..]));
    if OTHERS.any_in(inside) {
        return true;
    }
    memchr::memchr_iter(b'(', inside.as_bytes()).any(|i| match window::word_before(&inside[..i]) {
        (word, Some(c)) if window::is_ident_byte(c) => !super::elide::SCRIPT_OPERATOR_WORDS.contains(&word),
        (_, Some(b')' | b']' | b'>' | b'.' | b'!')) => true,
        _ => false,
    })
}

/// Whether a function body may hold something the walk records: the inside of a
/// `{ ... }` block (its own braces excluded), or an arrow function's whole expression.
fn may_hold_anything(body: Node, src: &str) -> bool {
    let t = text(body, src);
    let inside = match kind_of(body) {
        "statement_block" => t.strip_prefix('{').and_then(|t| t.strip_suffix('}')).unwrap_or(t),
        _ => t,
    };
    TRIGGERS.any_in(inside)
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Inventory {
    slots: Vec<Slot<SlotInfo>>,
    body: Body,
    enums: BTreeSet<String>,
    /// Type aliases that are unions of literals, with the primitives they draw from.
    #[serde(deserialize_with = "super::stored::word_sets")]
    literal_aliases: BTreeMap<String, BTreeSet<super::stored::Word>>,
    /// Silent early returns (`if (c) return;`), apart from `body.checks` so that the
    /// guard rules' matching stays exactly as it was without them.
    returns: Vec<Check>,
    /// Type parameters (`f<T>`), with their constraints.
    generics: Vec<Slot<Option<TsType>>>,
    /// The names of the interfaces, classes and type aliases declared in the file (a
    /// constraint whose type was renamed in the file is not loosened).
    type_names: BTreeSet<String>,
}

/// One step of the walk, which keeps its own stack instead of recursing: generated code
/// (`1 + 1 + ...`, `[[[...]]]`) makes a tree as deep as the file is long.
enum Step<'a> {
    Visit(Node<'a>),
    /// A declaration's members are walked: leave its scope.
    PopScope,
    /// An inline object type's properties are walked: the function's scope back.
    RestoreScope(Vec<String>),
    /// A parameter (function symbol, node) after one whose inline object type waits.
    Parameter(String, Node<'a>),
    /// A function's name, symbol, return type and body, after its parameters.
    FunctionRest(String, String, Option<Node<'a>>, Option<Node<'a>>),
    /// A test framework's callback (title, function), after its callee.
    TestCallback(String, Node<'a>),
    /// A test callback is walked.
    EndTest,
}

struct Walker<'a> {
    src: &'a str,
    /// Skip function bodies holding none of [`TRIGGERS`] (off only to test that skipping
    /// changes nothing).
    prune: bool,
    /// How many bodies were skipped.
    skipped: usize,
    inv: Inventory,
    scope: Vec<String>,
    /// How many test-framework callbacks enclose the current node.
    test_depth: usize,
    /// The steps the current one asks for, in order: run after it, before anything
    /// already waiting (where a recursive walk would have called them).
    later: Vec<Step<'a>>,
}

impl Inventory {
    fn build(root: Node, src: &str) -> Inventory {
        Inventory::walk(root, src, true).0
    }

    /// The inventories of both versions. The new version is walked one top-level
    /// statement at a time; a statement that `unchanged` says is the same in both
    /// versions is not walked again in the old one: its part of the new inventory is
    /// taken instead, lines moved back. Without `unchanged`, both are walked in full.
    fn build_pair(
        old_root: Node,
        before: &str,
        new_root: Node,
        after: &str,
        unchanged: Option<&super::syntax::Unchanged>,
    ) -> (Inventory, Inventory) {
        let Some(unchanged) = unchanged else {
            return (Inventory::build(old_root, before), Inventory::build(new_root, after));
        };
        let units = |root| named_children(root).into_iter().map(|n| (n.start_byte(), n.end_byte(), n)).collect();
        super::syntax::build_pair(
            units(old_root),
            units(new_root),
            unchanged,
            |item| Inventory::item(item, before),
            |item| Inventory::item(item, after),
        )
    }

    /// The part of the inventory one top-level statement contributes.
    fn item(item: Node, src: &str) -> Inventory {
        let mut w = Walker::new(src, true);
        w.run(item);
        w.inv
    }

    /// The inventory and how many function bodies the walk skipped.
    fn walk(root: Node, src: &str, prune: bool) -> (Inventory, usize) {
        let mut w = Walker::new(src, prune);
        w.run(root);
        (w.inv, w.skipped)
    }
}

impl super::syntax::Part for Inventory {
    /// Adds the part `o` of a later statement exactly as walking it after the ones
    /// already here would have: owners keep their first line, aliases their last value,
    /// lists and sets grow.
    fn absorb(&mut self, o: Inventory) {
        // Destructured, so that a new field cannot be forgotten here.
        let Inventory { slots, body, enums, literal_aliases, returns, generics, type_names } = o;
        let Body { checks, owners, conditions, calls } = body;
        self.slots.extend(slots);
        self.body.checks.extend(checks);
        for (k, v) in owners {
            self.body.owners.entry(k).or_insert(v);
        }
        self.body.conditions.extend(conditions);
        self.body.calls.extend(calls);
        self.enums.extend(enums);
        self.literal_aliases.extend(literal_aliases);
        self.returns.extend(returns);
        self.generics.extend(generics);
        self.type_names.extend(type_names);
    }

    /// Moves every line this inventory records by `delta`.
    fn shift_lines(&mut self, delta: i64) {
        if delta == 0 {
            return;
        }
        let shift = |l: &mut u32| *l = u32::try_from(i64::from(*l) + delta).unwrap_or(1);
        self.slots.iter_mut().for_each(|s| shift(&mut s.line));
        self.generics.iter_mut().for_each(|s| shift(&mut s.line));
        self.body.owners.values_mut().for_each(shift);
    }
}

impl<'a> Walker<'a> {
    fn new(src: &'a str, prune: bool) -> Walker<'a> {
        Walker {
            src,
            prune,
            skipped: 0,
            inv: Inventory::default(),
            scope: Vec::new(),
            test_depth: 0,
            later: Vec::new(),
        }
    }

    /// Walks the tree under `root`, one [`Step`] at a time.
    fn run(&mut self, root: Node<'a>) {
        let mut stack = vec![Step::Visit(root)];
        while let Some(step) = stack.pop() {
            match step {
                Step::Visit(node) => self.visit(node),
                Step::PopScope => {
                    self.scope.pop();
                }
                Step::RestoreScope(scope) => self.scope = scope,
                Step::Parameter(symbol, node) => self.parameter(&symbol, node),
                Step::FunctionRest(name, symbol, ret, body) => self.function_rest(name, symbol, ret, body),
                Step::TestCallback(title, callback) => {
                    self.test_depth += 1;
                    self.function(title, callback);
                    self.later.push(Step::EndTest);
                }
                Step::EndTest => self.test_depth -= 1,
            }
            stack.extend(self.later.drain(..).rev());
        }
    }

    fn symbol(&self, name: &str) -> String {
        let mut s = String::with_capacity(self.scope.iter().map(|p| p.len() + 1).sum::<usize>() + name.len());
        for part in &self.scope {
            s.push_str(part);
            s.push('.');
        }
        s.push_str(name);
        s
    }

    fn field_text(&self, node: Node, name: &'static str) -> Option<String> {
        field(node, name).map(|n| text(n, self.src).to_string())
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

    fn scoped(&mut self, name: String, node: Node<'a>) {
        self.scope.push(name);
        self.visit_children(node);
        self.later.push(Step::PopScope);
    }

    fn visit(&mut self, node: Node<'a>) {
        match kind_of(node) {
            "interface_declaration"
            | "class_declaration"
            | "abstract_class_declaration"
            | "class"
            | "internal_module"
            | "module" => match self.field_text(node, "name") {
                Some(name) => {
                    self.type_parameters(&self.symbol(&name), node);
                    self.inv.type_names.insert(name.clone());
                    self.scoped(name, node)
                }
                None => self.visit_children(node),
            },
            "enum_declaration" => {
                if let Some(name) = self.field_text(node, "name") {
                    self.inv.enums.insert(name);
                }
            }
            "type_alias_declaration" => self.type_alias(node),
            "property_signature" | "public_field_definition" | "field_definition" => self.member(node),
            "function_declaration"
            | "generator_function_declaration"
            | "method_definition"
            | "function_signature"
            | "method_signature"
            | "abstract_method_signature" => match self.field_text(node, "name") {
                Some(name) => self.function(name, node),
                None => self.visit_children(node),
            },
            "variable_declarator" | "pair" | "assignment_expression" => self.binding(node),
            "if_statement" => {
                self.throw_guard(node);
                self.visit_children(node);
            }
            "expression_statement" => {
                self.assertion(node);
                self.visit_children(node);
            }
            "call_expression" => self.call(node),
            "member_expression" => {
                self.dereference(node);
                self.visit_children(node);
            }
            _ => self.visit_children(node),
        }
    }

    fn type_alias(&mut self, node: Node<'a>) {
        let (Some(name), Some(value)) = (self.field_text(node, "name"), field(node, "value")) else {
            return;
        };
        self.type_parameters(&self.symbol(&name), node);
        self.inv.type_names.insert(name.clone());
        if kind_of(value) == "object_type" {
            self.scoped(name, value);
            return;
        }
        let ty = ts_type(value, self.src);
        let literals: Option<BTreeSet<&'static str>> =
            ty.members.iter().filter(|m| !m.nullish).map(|m| m.literal).collect();
        if let Some(prims) = literals.filter(|p| !p.is_empty()) {
            self.inv.literal_aliases.insert(name.clone(), prims);
        }
        self.inv.slots.push(Slot {
            key: format!("type {}", self.symbol(&name)),
            symbol: self.symbol(&name),
            line: line(node),
            display: one_line(text(node, self.src)),
            in_test: self.test_depth > 0,
            info: SlotInfo { ty: Some(ty), ..SlotInfo::default() },
        });
        self.scoped(name, value);
    }

    /// A property of an interface, type literal or class.
    fn member(&mut self, node: Node<'a>) {
        let Some(name_node) = field(node, "name").or_else(|| field(node, "property")) else {
            return self.visit_children(node);
        };
        let raw = text(name_node, self.src);
        let name = raw.trim_start_matches('#').to_string();
        let mut info = SlotInfo { private: raw.starts_with('#'), ..SlotInfo::default() };
        for child in children(node) {
            match kind_of(child) {
                "?" => info.optional = true,
                "readonly" => info.readonly = true,
                "accessibility_modifier" => info.private |= matches!(text(child, self.src), "private" | "protected"),
                _ => {}
            }
        }
        let type_node = field(node, "type");
        info.ty = type_node.map(|t| ts_type(t, self.src));
        // Show the declaration without decorators or initialiser: that is the constraint.
        let from = children(node)
            .into_iter()
            .find(|c| kind_of(c) != "decorator")
            .map_or(node.start_byte(), |c| c.start_byte());
        let to = field(node, "value").map_or(node.end_byte(), |v| v.start_byte());
        let display = one_line(self.src.get(from..to).unwrap_or("")).trim_end_matches('=').trim_end().to_string();
        self.inv.slots.push(Slot {
            // `#x` and `x` pair (the private-to-public change); the symbol keeps the spelling.
            key: self.symbol(&name),
            symbol: self.symbol(raw),
            line: line(name_node),
            display,
            in_test: self.test_depth > 0,
            info,
        });
        self.scoped(name, node);
    }

    /// `const f = (...) => ...`, `{ f: function () {} }`, `obj.f = () => ...`.
    fn binding(&mut self, node: Node<'a>) {
        let (name, value) = match kind_of(node) {
            "variable_declarator" => (field(node, "name"), field(node, "value")),
            "pair" => (field(node, "key"), field(node, "value")),
            _ => (field(node, "left"), field(node, "right")),
        };
        match (name, value) {
            (Some(n), Some(v))
                if !text(n, self.src).contains(['[', '('])
                    && matches!(
                        kind_of(v),
                        "arrow_function" | "function_expression" | "function" | "generator_function"
                    ) =>
            {
                let name = text(n, self.src);
                let name = name.rsplit('.').next().unwrap_or(name).to_string();
                self.function(name, v)
            }
            _ => self.visit_children(node),
        }
    }

    fn function(&mut self, name: String, node: Node<'a>) {
        let symbol = self.symbol(&name);
        self.inv.body.owners.entry(symbol.clone()).or_insert(line(node));
        let parts = super::syntax::Parts::of(node);
        if let Some(params) = parts.field("type_parameters") {
            self.type_parameters_of(&symbol, params);
        }
        // Once a parameter's inline object type waits to be walked, what follows it
        // waits too, so that the inventory is filled in source order.
        let waiting = self.later.len();
        if let Some(params) = parts.field("parameters") {
            super::syntax::for_each_named(params, |p| {
                if self.later.len() == waiting {
                    self.parameter(&symbol, p);
                } else {
                    self.later.push(Step::Parameter(symbol.clone(), p));
                }
            });
        }
        let (ret, body) = (parts.field("return_type"), parts.field("body"));
        if self.later.len() == waiting {
            self.function_rest(name, symbol, ret, body);
        } else {
            self.later.push(Step::FunctionRest(name, symbol, ret, body));
        }
    }

    /// A function's return type and body, after its parameters.
    fn function_rest(&mut self, name: String, symbol: String, ret: Option<Node<'a>>, body: Option<Node<'a>>) {
        if let Some(ret) = ret
            && let Some(ty) = ret.named_child(0)
        {
            self.inv.slots.push(Slot {
                key: format!("{symbol}->"),
                symbol: symbol.clone(),
                line: line(ret),
                display: format!("returns {}", one_line(text(ty, self.src))),
                in_test: self.test_depth > 0,
                info: SlotInfo { ty: Some(ts_type(ty, self.src)), ..SlotInfo::default() },
            });
        }
        self.scope.push(name);
        if let Some(body) = body {
            if self.prune && !may_hold_anything(body, self.src) {
                self.skipped += 1;
            } else {
                self.later.push(Step::Visit(body));
            }
        }
        self.later.push(Step::PopScope);
    }

    fn parameter(&mut self, symbol: &str, p: Node<'a>) {
        let kind = kind_of(p);
        if !matches!(kind, "required_parameter" | "optional_parameter") {
            return;
        }
        // The parameter's children in one pass: its pattern, type, default, modifiers.
        let parts = super::syntax::Parts::of(p);
        let Some(pattern) = parts.field("pattern") else {
            return;
        };
        let name = text(pattern, self.src);
        let ty = parts.field("type");
        let mut info = SlotInfo {
            optional: kind == "optional_parameter",
            ty: ty.map(|t| ts_type(t, self.src)),
            ..SlotInfo::default()
        };
        for child in parts.all() {
            match kind_of(child) {
                "readonly" => info.readonly = true,
                "accessibility_modifier" => info.private |= matches!(text(child, self.src), "private" | "protected"),
                _ => {}
            }
        }
        // A default value makes a parameter optional to callers without loosening the
        // value the body sees.
        let value = parts.field("value");
        if value.is_some() {
            info.optional = false;
        }
        let display = match value {
            Some(v) => one_line(&self.src[p.start_byte()..v.start_byte()]).trim_end_matches('=').trim_end().to_string(),
            None => one_line(text(p, self.src)),
        };
        self.inv.slots.push(Slot {
            key: format!("{symbol}({})", compact(name)),
            symbol: symbol.to_string(),
            line: line(p),
            display,
            in_test: self.test_depth > 0,
            info,
        });
        // An inline object type (`opts: { message?: string | null }`): its properties
        // are slots of the parameter, `f(opts).message`, as an interface's would be.
        if let Some(object) = ty.and_then(|t| t.named_child(0)).filter(|t| kind_of(t) == "object_type") {
            let scope = std::mem::replace(&mut self.scope, vec![format!("{symbol}({})", compact(name))]);
            self.visit_children(object);
            self.later.push(Step::RestoreScope(scope));
        }
    }

    fn owner(&self) -> Option<String> {
        (!self.scope.is_empty()).then(|| self.scope.join("."))
    }

    /// `if (cond) throw ...` or `if (cond) { ...; throw ...; }`.
    fn throw_guard(&mut self, node: Node) {
        let (Some(owner), Some(cond), Some(cons)) =
            (self.owner(), field(node, "condition"), field(node, "consequence"))
        else {
            return;
        };
        self.inv.body.note_condition(&owner, cond, self.src);
        let throw = if kind_of(cons) == "throw_statement" {
            Some(cons)
        } else if kind_of(cons) == "statement_block" {
            named_children(cons).into_iter().find(|s| kind_of(s) == "throw_statement")
        } else {
            None
        };
        let Some(throw) = throw else {
            return self.early_return(&owner, cond, cons);
        };
        let display = format!("if {} {}", one_line(text(cond, self.src)), one_line(text(throw, self.src)));
        self.push_check(RuleId::TsThrowGuardRemoved, &owner, cond, display);
    }

    /// `invariant(cond, msg)`, `assert(cond)`, `assert.equal(a, b)`, `console.assert(c)`.
    fn assertion(&mut self, node: Node) {
        let Some(owner) = self.owner() else { return };
        let Some(mut call) = node.named_child(0) else {
            return;
        };
        if kind_of(call) == "await_expression"
            && let Some(inner) = call.named_child(0)
        {
            call = inner;
        }
        if kind_of(call) != "call_expression" {
            return;
        }
        let (Some(func), Some(args)) = (field(call, "function"), field(call, "arguments")) else {
            return;
        };
        let fname = compact(text(func, self.src));
        let args = named_children(args);
        let subject = if ASSERT_FIRST_ARG.contains(&fname.as_str()) {
            args.first().copied()
        } else if fname.starts_with("assert.") {
            // `assert.equal(actual, expected, message)`: the comparison is the check.
            Some(call)
        } else {
            None
        };
        let Some(subject) = subject else { return };
        self.push_check(RuleId::TsInvariantRemoved, &owner, subject, one_line(text(call, self.src)));
    }

    /// `describe("x", () => ...)`, `it.each(...)("y", ...)`: the callback is test code,
    /// named by its title.
    fn call(&mut self, node: Node<'a>) {
        let func = field(node, "function");
        if let (Some(owner), Some(f)) = (self.owner(), func) {
            self.inv.body.note_call(&owner, f, self.src);
        }
        let head = func.map(|f| {
            let t = compact(text(f, self.src));
            t.split(['.', '(']).next().unwrap_or("").to_string()
        });
        let args = field(node, "arguments").map(named_children).unwrap_or_default();
        let is_test = head.as_deref().is_some_and(|h| TEST_CALLS.contains(&h));
        let callback = args
            .iter()
            .rev()
            .find(|a| matches!(kind_of(*a), "arrow_function" | "function_expression" | "function"))
            .copied();
        match (is_test, callback) {
            (true, Some(cb)) => {
                let title = args
                    .first()
                    .filter(|a| matches!(kind_of(*a), "string" | "template_string"))
                    .map(|a| text(*a, self.src).trim_matches(['"', '\'', '`']).to_string())
                    .unwrap_or_else(|| head.unwrap_or_default());
                if let Some(f) = func {
                    self.later.push(Step::Visit(f));
                }
                self.later.push(Step::TestCallback(title, cb));
            }
            _ => self.visit_children(node),
        }
    }
}

mod rules;
mod shapes;
use shapes::{constraint_loosened, renamed};

#[cfg(test)]
mod tests;
