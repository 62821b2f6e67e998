//! `rust-checked-arithmetic-removed`: a function's overflow-checked arithmetic
//! (`a.checked_mul(b)`, which returns `None` on overflow) replaced in the same function
//! by a form that does not report overflow: `a.wrapping_mul(b)`, `a.saturating_mul(b)`,
//! `a.overflowing_mul(b)`, `a.unchecked_mul(b)`, the plain method (`a.pow(b)` for
//! `checked_pow`) or the operator (`a * b`, `a *= b`).
//!
//! The walk records, for each function, the checked calls it makes (method-call form
//! only: `u32::checked_mul(a, b)` and calls inside macro arguments are not read) and
//! the function body squashed (whitespace removed), in which the comparison looks for a
//! replacement by text. A checked call that disappeared with no replacement in its
//! function (the computation removed or moved) is not a finding.

use std::collections::BTreeMap;

use tree_sitter::Node;

use super::super::syntax::{collapse_whitespace, compact, field, kind_of, text};
use super::super::{Family, Language, RawFinding, RuleDef, RuleId};
use super::{Inventory, compare::finding};

pub(crate) const CHECKED_ARITHMETIC_REMOVED: RuleId = RuleId::RustCheckedArithmeticRemoved;

pub(crate) const RULE: RuleDef = RuleDef {
    id: CHECKED_ARITHMETIC_REMOVED,
    languages: &[Language::Rust],
    family: Family::CheckRemoved,
    description: "Overflow-checked arithmetic (`checked_*`) replaced in the same function by a wrapping, saturating, overflowing or unchecked form, or by the plain operator.",
    severity: super::super::Severity::Medium,
    message: "{symbol}: `{before}` became `{after}`; an overflow is no longer reported",
    invariant: "An overflow (or division by zero) was detected and handled as `None` instead of producing a wrapped, clamped or panicking result.",
};

/// Bodies larger than this are not kept for the replacement search (their checked
/// calls are still recorded, and a checked call replaced there is not reported).
const MAX_BODY_BYTES: usize = 64 * 1024;

/// One function's checked arithmetic.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct Arith {
    /// Checked calls in source order: (operation without `checked_`, receiver and
    /// arguments squashed, text as written on one line).
    calls: Vec<(String, String, String, String)>,
    /// The body squashed, when under [`MAX_BODY_BYTES`].
    pub(super) body: Option<String>,
    /// `unwrap()` / `expect(..)` calls in source order ([`super::unwrap`]).
    #[serde(default)]
    pub(super) unwraps: Vec<super::unwrap::Unwrap>,
}

/// Record the checked calls and the squashed body of the function `symbol`.
pub(super) fn record(body: Node, src: &str, symbol: &str, inv: &mut Inventory) {
    let t = text(body, src);
    let mut arith =
        Arith { calls: Vec::new(), body: (t.len() <= MAX_BODY_BYTES).then(|| compact(t)), unwraps: Vec::new() };
    if t.contains("checked_") {
        collect(body, src, &mut arith.calls);
    }
    if super::unwrap::may_hold(t) {
        super::unwrap::collect(body, src, &mut arith.unwraps);
    }
    inv.arith.insert(symbol.to_string(), arith);
}

/// The checked calls under `n` in source order.
fn collect(n: Node, src: &str, out: &mut Vec<(String, String, String, String)>) {
    method_calls(n, src, |call, recv, name, args| {
        if let Some(op) = name.strip_prefix("checked_") {
            let a = text(args, src);
            let inner = a.get(1..a.len().saturating_sub(1)).unwrap_or("");
            out.push((op.to_string(), compact(text(recv, src)), compact(inner), collapse_whitespace(text(call, src))));
        }
    });
}

/// Every method call `recv.name(args)` under `n`, in source order, given as (the call,
/// its receiver, the method's name, its argument list); an explicit stack, since an
/// expression may nest as deep as the file is long. Functions nested in this one are
/// their own symbols and macro arguments are not read, so neither is entered.
pub(super) fn method_calls<'t>(n: Node<'t>, src: &'t str, mut f: impl FnMut(Node<'t>, Node<'t>, &'t str, Node<'t>)) {
    let mut stack = vec![n];
    while let Some(n) = stack.pop() {
        if kind_of(n) == "call_expression"
            && let Some(callee) = field(n, "function").filter(|c| kind_of(*c) == "field_expression")
            && let (Some(recv), Some(name), Some(args)) =
                (field(callee, "value"), field(callee, "field"), field(n, "arguments"))
        {
            f(n, recv, text(name, src), args);
        }
        let mut c = n.walk();
        let at = stack.len();
        stack
            .extend(n.named_children(&mut c).filter(|ch| !matches!(kind_of(ch), "function_item" | "macro_invocation")));
        // Reversed, so that the first child comes out first.
        stack[at..].reverse();
    }
}

/// The operator a `checked_<op>` stands for.
fn operator(op: &str) -> Option<&'static str> {
    Some(match op {
        "add" => "+",
        "sub" => "-",
        "mul" => "*",
        "div" => "/",
        "rem" => "%",
        "shl" => "<<",
        "shr" => ">>",
        _ => return None,
    })
}

/// Occurrences of `needle` in `hay` that stand alone: not preceded by part of an
/// identifier or path and not followed by part of an identifier.
pub(super) fn count(hay: &str, needle: &str) -> usize {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    hay.match_indices(needle)
        .filter(|(at, _)| {
            let before = hay[..*at].chars().next_back();
            let after = hay[at + needle.len()..].chars().next();
            let glued_before = before.is_some_and(|c| ident(c) || c == '.' || c == ':');
            let glued_after = needle.ends_with(ident) && after.is_some_and(ident);
            !glued_before && !glued_after
        })
        .count()
}

/// The replacements of `recv.checked_<op>(args)`, squashed, with how each is shown.
fn replacements(op: &str, recv: &str, args: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = ["wrapping_", "saturating_", "overflowing_", "unchecked_", ""]
        .iter()
        .map(|p| {
            let s = format!("{recv}.{p}{op}({args})");
            (s.clone(), s)
        })
        .collect();
    if let Some(sym) = operator(op) {
        v.push((format!("{recv}{sym}={args}"), format!("{recv} {sym}= {args}")));
        v.push((format!("{recv}{sym}{args}"), format!("{recv} {sym} {args}")));
    }
    if op == "neg" && args.is_empty() {
        v.push((format!("-{recv}"), format!("-{recv}")));
    }
    v
}

pub(super) fn compare(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    for (func, o) in &old.arith {
        let (Some(n), Some(owner)) = (new.arith.get(func), new.owners.get(func)) else { continue };
        let (Some(old_body), Some(new_body)) = (&o.body, &n.body) else { continue };
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for (op, recv, args, shown) in &o.calls {
            let call = format!("{recv}.checked_{op}({args})");
            // The k-th occurrence of a call is gone when the new body has fewer than k.
            let k = seen.entry(call.clone()).or_default();
            *k += 1;
            if count(new_body, &call) >= *k {
                continue;
            }
            let found = replacements(op, recv, args)
                .into_iter()
                .find(|(squashed, _)| count(new_body, squashed) > count(old_body, squashed));
            if let Some((_, after)) = found {
                out.push(finding(CHECKED_ARITHMETIC_REMOVED, owner.line, func, shown.clone(), after, owner.in_test));
            }
        }
    }
}
