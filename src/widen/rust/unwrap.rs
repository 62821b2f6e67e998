//! `rust-unwrap-removed`: a function's `x.unwrap()` or `x.expect("..")` removed while
//! the same function now passes `x` itself on (as an argument, a binding's value, a
//! return value, a struct field): the `Option` or `Result` that stopped the function
//! when it held nothing now travels on, and what receives it was written for a value.
//!
//! Read like checked arithmetic ([`super::checked`]): the walk records each function's
//! method-call `unwrap()` / `expect(..)` with its receiver squashed (whitespace
//! removed), and the comparison looks in the new body, squashed, for fewer such calls
//! on that receiver together with more places where the receiver is used as a plain
//! value (followed by `,` `)` `;` `}` `]` or the end). Not findings: the call replaced
//! by `?`, a `match` / `if let` on the receiver, `unwrap_or*` (a chosen fallback), or
//! the computation moved out of the function; calls inside macro arguments are not read.

use std::collections::BTreeMap;

use tree_sitter::Node;

use super::super::syntax::{collapse_whitespace, compact, text};
use super::super::{Family, Language, RawFinding, RuleDef, RuleId};
use super::checked::{count, method_calls};
use super::{Inventory, compare::finding};

pub(crate) const UNWRAP_REMOVED: RuleId = RuleId::RustUnwrapRemoved;

pub(crate) const RULE: RuleDef = RuleDef {
    id: UNWRAP_REMOVED,
    languages: &[Language::Rust],
    family: Family::CheckRemoved,
    description: "`x.unwrap()` or `x.expect(..)` removed from a function that now passes `x` itself on (an `Option` or `Result` travels where a value did).",
    severity: super::super::Severity::Medium,
    message: "{symbol}: `{before}` became `{after}`; an empty value is passed on instead of stopping here",
    invariant: "Past this point the value was present: a `None` or an `Err` stopped the function before it was used.",
};

/// One `unwrap` / `expect` call: (method, receiver squashed, call as written on one line).
pub(super) type Unwrap = (String, String, String);

/// Whether a body's text may hold a call this rule reads (a cheap test before a walk).
pub(super) fn may_hold(body: &str) -> bool {
    body.contains("unwrap") || body.contains("expect")
}

/// The `unwrap()` / `expect(..)` method calls under `n` in source order.
pub(super) fn collect(n: Node, src: &str, out: &mut Vec<Unwrap>) {
    method_calls(n, src, |call, recv, name, args| {
        let argc = args.named_child_count();
        if (name == "unwrap" && argc == 0) || (name == "expect" && argc == 1) {
            out.push((name.to_string(), compact(text(recv, src)), collapse_whitespace(text(call, src))));
        }
    });
}

/// How often `recv` stands in a squashed body as a plain value: not glued to an
/// identifier or path before it, and followed by what ends an argument, a binding's
/// value, a field or a returned expression.
fn passed_on(body: &str, recv: &str) -> usize {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    body.match_indices(recv)
        .filter(|(at, _)| {
            let head = &body[..*at];
            // A path (`a::recv`) or a method (`a.recv`) glues; a field's `name:` does not.
            let glued = head.chars().next_back().is_some_and(|c| ident(c) || c == '.') || head.ends_with("::");
            let after = body[at + recv.len()..].chars().next();
            !glued && after.is_none_or(|c| matches!(c, ',' | ')' | ';' | '}' | ']'))
        })
        .count()
}

pub(super) fn compare(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    for (func, o) in &old.arith {
        let (Some(n), Some(owner)) = (new.arith.get(func), new.owners.get(func)) else { continue };
        let (Some(old_body), Some(new_body)) = (&o.body, &n.body) else { continue };
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for (method, recv, shown) in &o.unwraps {
            let call = match method.as_str() {
                "unwrap" => format!("{recv}.unwrap()"),
                _ => format!("{recv}.expect("),
            };
            // The k-th occurrence of a call is gone when the new body has fewer than k.
            let k = seen.entry(call.clone()).or_default();
            *k += 1;
            if count(new_body, &call) >= *k {
                continue;
            }
            if passed_on(new_body, recv) > passed_on(old_body, recv) {
                out.push(finding(UNWRAP_REMOVED, owner.line, func, shown.clone(), recv.clone(), owner.in_test));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receiver_is_passed_on_only_where_a_value_ends() {
        assert_eq!(passed_on("letv=find(id);use_it(v,find(id));", "find(id)"), 2);
        // Glued to a path or a method, or followed by `?`, `.` or a block: not passed on.
        assert_eq!(passed_on("letv=self.find(id)?;matchfind(id){}find(id).is_some()", "find(id)"), 0);
        assert_eq!(passed_on("x", "x"), 1);
        // A struct field's value is passed on; a path segment is not.
        assert_eq!(passed_on("Header{name:split(l),raw:l}", "split(l)"), 1);
        assert_eq!(passed_on("a::split(l);", "split(l)"), 0);
    }
}
