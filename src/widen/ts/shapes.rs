//! The shapes the enriched sample showed, as the TypeScript detector reads and
//! compares them: a type parameter's constraint loosened
//! (`ts-generic-constraint-loosened`) and the silent early returns that
//! `ts-early-return-removed` weighs.

use std::collections::BTreeSet;

use tree_sitter::Node;

use super::super::syntax::{Check, Slot, compact, field, kind_of, line, named_children, one_line, text};
use super::{IDENTS, Inventory, RuleId, TsType, Walker, ts_type, window};

/// How far up from `x.y` [`Walker::dereference`] looks for the function's own body: a
/// deeper expression is left unread (it could only add a condition).
const MAX_DEREFERENCE_DEPTH: usize = 24;

impl Walker<'_> {
    /// `x.y` (no `?.`) read whenever the function runs, in an `if` condition or a call
    /// (`if (space.ownerId !== user)`, `notify(order.id)`): a missing `x` fails there, so
    /// the function still refuses it. Noted as the conditions `!x`, `x == null`... of the
    /// function: a removed `if (!x) throw` then left its check to the lookup (which
    /// throws itself, or the compiler would refuse the read) or to the read itself. Read
    /// only in an `if` condition or a call, whose tokens keep the body from being left
    /// out of the parse (so the elided and whole parses agree); not in a nested block, a
    /// callback, the right side of `&&`, `||`, `??` or a branch of `? :`.
    pub(super) fn dereference(&mut self, node: Node) {
        let Some(owner) = self.owner() else { return };
        let Some(object) = field(node, "object") else { return };
        let object = compact(text(object, self.src));
        if object.contains("?.") || !object.bytes().all(|b| b.is_ascii_alphanumeric() || b"_$.".contains(&b)) {
            return;
        }
        if super::super::syntax::children(node).into_iter().any(|c| kind_of(c) == "optional_chain") {
            return;
        }
        let (mut cur, mut anchored) = (node, false);
        for _ in 0..MAX_DEREFERENCE_DEPTH {
            let Some(parent) = cur.parent() else { return };
            match kind_of(parent) {
                "statement_block" => {
                    let Some(function) = parent.parent() else { return };
                    let named = match kind_of(function) {
                        "function_declaration" | "method_definition" | "generator_function_declaration" => true,
                        "arrow_function" | "function_expression" | "function" => function.parent().is_some_and(|p| {
                            matches!(kind_of(p), "variable_declarator" | "pair" | "public_field_definition")
                        }),
                        _ => false,
                    };
                    if named && anchored {
                        for key in [
                            format!("!{object}"),
                            format!("{object}==null"),
                            format!("{object}===null"),
                            format!("{object}===undefined"),
                            format!("{object}==undefined"),
                        ] {
                            self.inv.body.conditions.insert((owner.clone(), key));
                        }
                    }
                    return;
                }
                "if_statement" => {
                    if field(parent, "condition") != Some(cur) {
                        return;
                    }
                    anchored = true;
                }
                "call_expression" => anchored = true,
                "binary_expression" => {
                    let op = field(parent, "operator").map(|o| text(o, self.src));
                    if matches!(op, Some("&&" | "||" | "??")) && field(parent, "right") == Some(cur) {
                        return;
                    }
                }
                "ternary_expression" => {
                    if field(parent, "condition") != Some(cur) {
                        return;
                    }
                }
                "member_expression"
                | "subscript_expression"
                | "arguments"
                | "await_expression"
                | "variable_declarator"
                | "lexical_declaration"
                | "variable_declaration"
                | "expression_statement"
                | "return_statement"
                | "parenthesized_expression"
                | "pair"
                | "object"
                | "array"
                | "assignment_expression"
                | "unary_expression"
                | "template_substitution"
                | "template_string"
                | "as_expression"
                | "non_null_expression"
                | "spread_element" => {}
                _ => return,
            }
            cur = parent;
        }
    }

    /// The type parameters of a declaration (`interface I<T extends A>`), if it has any.
    pub(super) fn type_parameters(&mut self, symbol: &str, node: Node) {
        if let Some(params) = field(node, "type_parameters") {
            self.type_parameters_of(symbol, params);
        }
    }

    /// Each `T extends A` of a `<...>` list, keyed `symbol<T>`.
    pub(super) fn type_parameters_of(&mut self, symbol: &str, params: Node) {
        for p in named_children(params) {
            if kind_of(p) != "type_parameter" {
                continue;
            }
            let Some(name) = field(p, "name") else { continue };
            let constraint = field(p, "constraint").and_then(|c| c.named_child(0));
            let to = field(p, "value").map_or(p.end_byte(), |v| v.start_byte());
            let display =
                one_line(self.src.get(p.start_byte()..to).unwrap_or("")).trim_end_matches('=').trim_end().to_string();
            self.inv.generics.push(Slot {
                key: format!("{symbol}<{}>", text(name, self.src)),
                symbol: symbol.to_string(),
                line: line(p),
                display,
                in_test: self.test_depth > 0,
                info: constraint.map(|c| ts_type(c, self.src)),
            });
        }
    }

    /// `if (cond) return;` or `if (cond) { return null; }`: a guard whose body is only a
    /// return of nothing (`undefined`, `null`, `false`), with no `else`.
    pub(super) fn early_return(&mut self, owner: &str, cond: Node, cons: Node) {
        if cons.parent().is_some_and(|p| field(p, "alternative").is_some()) {
            return;
        }
        let ret = match kind_of(cons) {
            "return_statement" => cons,
            "statement_block" => {
                match named_children(cons).into_iter().filter(|s| kind_of(s) != "comment").collect::<Vec<_>>()[..] {
                    [only] if kind_of(only) == "return_statement" => only,
                    _ => return,
                }
            }
            _ => return,
        };
        let silent = match ret.named_child(0) {
            None => true,
            Some(v) => matches!(compact(text(v, self.src)).as_str(), "null" | "undefined" | "false" | "void0"),
        };
        if !silent {
            return;
        }
        let display = format!("if {} {}", one_line(text(cond, self.src)), one_line(text(ret, self.src)));
        let check =
            Check::new(RuleId::TsEarlyReturnRemoved, owner, cond, self.src, display, self.test_depth > 0, IDENTS);
        self.inv.returns.push(check);
    }
}

/// Whether a type parameter constrained by `b` admits more types under `a` (`None`:
/// unconstrained): the constraint removed; widened to a catch-all; a union that keeps
/// every old member and adds one; or one named type replaced by another (`extends
/// APIGatewayProxyEventV2` to `extends LambdaEvent`, which may be a union holding it).
/// A constraint only reformatted, or one whose new members are all among the old ones
/// (narrowed), is not.
pub(super) fn constraint_loosened(b: &TsType, a: Option<&TsType>) -> bool {
    let Some(a) = a else { return true };
    if b.key == a.key {
        return false;
    }
    let members = |t: &TsType| -> BTreeSet<String> { t.members.iter().map(|m| m.key.clone()).collect() };
    let (bm, am) = (members(b), members(a));
    let catch_all = |set: &BTreeSet<String>| {
        set.iter().any(|m| matches!(m.as_str(), "any" | "unknown" | "object" | "Object" | "{}"))
    };
    if catch_all(&am) {
        return !catch_all(&bm);
    }
    if am.is_subset(&bm) {
        return false;
    }
    if bm.is_subset(&am) {
        return true;
    }
    // One named type for another: a plain name on both sides (no generic arguments, no
    // literal, no object type), so that a reshaped constraint is not guessed at.
    let named = |t: &TsType| match t.members.as_slice() {
        [only] => only.args.is_none() && only.literal.is_none() && window::is_identifier(&only.key),
        _ => false,
    };
    named(b) && named(a)
}

/// Whether the constraint `bt` became `at` because its type was renamed: the old name
/// is declared in the old version of the file alone and the new one in the new version
/// alone (`type ResolverDef` became `export type TRPCResolverDef`), or one name holds
/// the other (`AnyRouter` to `AnyTRPCRouter`, an import renamed elsewhere).
pub(super) fn renamed(bt: &TsType, at: Option<&TsType>, b: &Inventory, a: &Inventory) -> bool {
    let Some(at) = at else { return false };
    let (old, new) = (&bt.key, &at.key);
    let in_file = b.type_names.contains(old)
        && !a.type_names.contains(old)
        && a.type_names.contains(new)
        && !b.type_names.contains(new);
    let names = window::is_identifier(old) && window::is_identifier(new);
    in_file || (names && (new.contains(old.as_str()) || old.contains(new.as_str())))
}

/// Whether a guard of `b` that [`super::super::syntax::removed_checks`] or the early
/// return comparison found gone (a throw guard, an assertion, a silent early return;
/// `f`) is moot in `a`, the function refusing what it refused:
/// - its subject was renamed: the same function has a new guard of the same shape
///   (identifiers numbered by first appearance) ending in the same `throw` or `return`
///   (`if (!isUnifyAllowed) throw new NotAllowed("...")` to `if (!isDirectoriesAllowed)
///   throw new NotAllowed("...")`);
/// - its subject went away: the condition reads a parameter the function no longer
///   has (`if (depth >= 3) return false;` gone with `depth`): what the guard refused
///   cannot reach the function any more, and the caller that held the value holds the
///   question.
pub(super) fn moot_guard(f: &super::RawFinding, b: &Inventory, a: &Inventory) -> bool {
    if !matches!(f.rule, RuleId::TsThrowGuardRemoved | RuleId::TsInvariantRemoved | RuleId::TsEarlyReturnRemoved) {
        return false;
    }
    let Some(check) = b
        .body
        .checks
        .iter()
        .chain(&b.returns)
        .find(|c| c.rule == f.rule && c.owner == f.symbol && c.display == f.before)
    else {
        return false;
    };
    subject_renamed(check, b, a) || parameter_gone(check, b, a)
}

/// What a guard does when its condition holds: its display after the condition.
fn consequence(c: &Check) -> Option<&str> {
    [" throw ", " return"].iter().find_map(|k| c.display.find(k).map(|i| &c.display[i..]))
}

fn subject_renamed(check: &Check, b: &Inventory, a: &Inventory) -> bool {
    let Some(does) = consequence(check) else {
        return false;
    };
    let old = |c: &Check| b.body.checks.iter().chain(&b.returns).any(|o| o.owner == c.owner && o.key == c.key);
    a.body.checks.iter().chain(&a.returns).any(|c| {
        c.rule == check.rule
            && c.owner == check.owner
            && c.shape == check.shape
            && consequence(c) == Some(does)
            && !old(c)
    })
}

fn parameter_gone(check: &Check, b: &Inventory, a: &Inventory) -> bool {
    check.idents.iter().any(|name| {
        let key = format!("{}({name})", check.owner);
        b.slots.iter().any(|s| s.key == key) && !a.slots.iter().any(|s| s.key == key)
    })
}
