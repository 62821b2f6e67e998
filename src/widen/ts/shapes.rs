//! The shapes the enriched sample showed, as the TypeScript detector reads and
//! compares them: a type parameter's constraint loosened
//! (`ts-generic-constraint-loosened`) and the silent early returns that
//! `ts-early-return-removed` weighs.

use std::collections::BTreeSet;

use tree_sitter::Node;

use super::super::syntax::{Check, Slot, compact, field, kind_of, line, named_children, one_line, text};
use super::{IDENTS, Inventory, RuleId, TsType, Walker, ts_type, window};

impl Walker<'_> {
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
