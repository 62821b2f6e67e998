//! The comparison of two Rust inventories: one function per kind of constraint.

use super::*;

pub(super) fn finding(
    rule: RuleId,
    line: u32,
    symbol: &str,
    before: String,
    after: String,
    in_test: bool,
) -> RawFinding {
    RawFinding { line, rule, symbol: symbol.to_string(), before, after, in_test }
}

/// Which rule (if any) a type change breaks, looking inside matching generic wrappers.
pub(super) fn type_rule(old: &Ty, new: &Ty, old_inv: &Inventory, new_inv: &Inventory) -> Option<RuleId> {
    if old == new || ref_option_moved(old, new) || ref_option_moved(new, old) {
        return None;
    }
    if new.is_option() && !old.is_option() {
        return Some(OPTION_WIDENED);
    }
    if new.is_erased(new_inv.value_imported) && !old.is_erased(old_inv.value_imported) {
        return Some(TYPE_ERASED);
    }
    if old.is_nonzero() && !new.is_nonzero() && new.int_range().is_some() {
        return Some(NONZERO_DROPPED);
    }
    if let (Some(o), Some(n)) = (old.int_range(), new.int_range())
        && strictly_wider(o, n)
    {
        return Some(INTEGER_WIDENED);
    }
    if let Some(b) = old.base()
        && old.args().is_empty()
        && old_inv.enums.contains(b)
        && new.is_stringy()
    {
        return Some(ENUM_TO_STRING);
    }
    match (old, new) {
        (Ty::Named { name: a, args: xs }, Ty::Named { name: b, args: ys }) if a == b && xs.len() == ys.len() => {
            xs.iter().zip(ys).find_map(|(x, y)| type_rule(x, y, old_inv, new_inv))
        }
        (Ty::Ref { mutable: a, inner: x }, Ty::Ref { mutable: b, inner: y }) if a == b => {
            type_rule(x, y, old_inv, new_inv)
        }
        _ => None,
    }
}

/// `&Option<T>` on one side and `Option<&T>` on the other (the `ref_option` lint
/// rewrites one as the other): the same values are admitted, and `None` was already one.
fn ref_option_moved(a: &Ty, b: &Ty) -> bool {
    let Ty::Ref { mutable, inner } = a else { return false };
    if !inner.is_option() || !b.is_option() {
        return false;
    }
    matches!((inner.args(), b.args()), ([x], [Ty::Ref { mutable: m, inner: y }]) if m == mutable && **y == *x)
}

/// The types of each tuple struct's or tuple variant's fields (`Owner.0`, `Owner.1`...),
/// sorted: fields only reordered keep the same list.
fn tuple_types(inv: &Inventory) -> BTreeMap<&str, Vec<String>> {
    let mut out: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for ((sym, key), slot) in &inv.slots {
        if let Some((owner, i)) = sym.rsplit_once('.')
            && key == "field"
            && i.bytes().all(|b| b.is_ascii_digit())
        {
            out.entry(owner).or_default().push(slot.ty.squashed());
        }
    }
    out.values_mut().for_each(|v| v.sort());
    out
}

pub(super) fn compare_slots(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    let (old_tuples, new_tuples) = (tuple_types(old), tuple_types(new));
    let reordered = |sym: &str| {
        sym.rsplit_once('.').is_some_and(|(owner, i)| {
            i.bytes().all(|b| b.is_ascii_digit())
                && old_tuples.get(owner).is_some_and(|t| new_tuples.get(owner) == Some(t))
        })
    };
    for (key, o) in &old.slots {
        let Some(n) = new.slots.get(key) else { continue };
        if key.1 == "field" && reordered(&key.0) {
            continue;
        }
        if let Some(rule) = type_rule(&o.ty, &n.ty, old, new) {
            if rule == OPTION_WIDENED && key.1 == "field" && old.quiet_option.contains(&key.0) {
                continue;
            }
            out.push(finding(rule, n.line, &key.0, o.show(), n.show(), n.in_test));
        }
    }
}

pub(super) fn compare_visibility(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    for (sym, (orank, otext, _, _)) in &old.fields {
        if let Some((nrank, ntext, line, in_test)) = new.fields.get(sym)
            && nrank > orank
        {
            out.push(finding(FIELD_MADE_PUBLIC, *line, sym, otext.clone(), ntext.clone(), *in_test));
        }
    }
    for (sym, (orank, otext, _, _)) in &old.fn_vis {
        if let Some((nrank, ntext, line, in_test)) = new.fn_vis.get(sym)
            && nrank > orank
        {
            out.push(finding(FN_MADE_PUBLIC, *line, sym, otext.clone(), ntext.clone(), *in_test));
        }
    }
}

/// Separates a type parameter from the `impl` block its bounds belong to in the
/// inventory's keys (never shown).
pub(super) const IMPL_MARK: char = '\u{1}';

pub(super) fn show_bound(param: &str, bounds: &[String]) -> String {
    let param = param.split(IMPL_MARK).next().unwrap_or(param);
    if bounds.is_empty() { param.to_string() } else { format!("{param}: {}", bounds.join(" + ")) }
}

/// A trait bound's identity across re-exports and paths: its last segment without
/// generic arguments (`serde::Serialize` and `serde_core::Serialize` are one bound).
pub(super) fn bound_key(b: &str) -> &str {
    let head = b.split('<').next().unwrap_or(b);
    head.rsplit("::").next().unwrap_or(head)
}

/// Whether a bound constrains the type (lifetimes and `?Sized` do not add a trait).
pub(super) fn is_trait_bound(b: &str) -> bool {
    !b.starts_with('\'') && !b.starts_with('?')
}

pub(super) fn compare_bounds(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    for ((item, param), ob) in &old.bounds {
        let (Some(nb), Some(owner)) = (new.bounds.get(&(item.clone(), param.clone())), new.owners.get(item)) else {
            continue;
        };
        let kept: BTreeSet<&str> = nb.iter().map(|b| bound_key(b)).collect();
        let removed = ob.iter().filter(|b| is_trait_bound(b)).any(|b| !kept.contains(bound_key(b)));
        // A bound swapped for another (a renamed trait) is not a removal: the count must drop.
        let count = |v: &[String]| v.iter().filter(|b| is_trait_bound(b)).count();
        if removed && count(nb) < count(ob) {
            out.push(finding(
                BOUND_REMOVED,
                owner.line,
                item,
                show_bound(param, ob),
                show_bound(param, nb),
                owner.in_test,
            ));
        }
    }
}

pub(super) fn compare_guards(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    let empty = Vec::new();
    // Pass one: each function's guards that still stand in it. What is left of a key's
    // occurrences in the new file after those is what a removed guard may have moved
    // into (a helper, another function): one removed guard per such occurrence. A guard
    // that also stood in a sibling function before, and still does, is not "moved"
    // there: it was removed.
    let mut kept: Vec<(&String, Vec<&Guard>, Vec<&str>)> = Vec::new();
    let mut spare: BTreeMap<&str, usize> = BTreeMap::new();
    for g in new.guards.values().flatten() {
        *spare.entry(g.key.as_str()).or_default() += 1;
    }
    for (func, og) in &old.guards {
        if !new.owners.contains_key(func) {
            continue;
        }
        let ng = new.guards.get(func).unwrap_or(&empty);
        let mut remaining: Vec<&str> = ng.iter().map(|g| g.key.as_str()).collect();
        let mut gone = Vec::new();
        for g in og {
            match remaining.iter().position(|k| *k == g.key) {
                Some(i) => {
                    remaining.remove(i);
                    if let Some(n) = spare.get_mut(g.key.as_str()) {
                        *n = n.saturating_sub(1);
                    }
                }
                None => gone.push(g),
            }
        }
        kept.push((func, gone, remaining));
    }
    // Pass two: a guard gone from its function and found nowhere it was not before was
    // removed, unless a guard new to the function stands in for it (a reworded check).
    for (func, gone, remaining) in kept {
        let owner = &new.owners[func];
        let mut removed = Vec::new();
        for g in gone {
            match spare.get_mut(g.key.as_str()).filter(|n| **n > 0) {
                Some(n) => *n -= 1,
                None => removed.push(g),
            }
        }
        let added = remaining.iter().filter(|k| !old.guard_keys.contains(**k)).count();
        for g in removed.into_iter().skip(added) {
            out.push(finding(g.rule, owner.line, func, g.text.clone(), String::new(), owner.in_test));
        }
    }
}

pub(super) fn compare_attrs(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    for ((sym, rule), text) in &old.attrs {
        // A type that became one no other crate can build or match field by field (a
        // struct or union with a private field, an enum without variants) lost nothing
        // with `#[non_exhaustive]`.
        if *rule == NON_EXHAUSTIVE_REMOVED && new.closed.contains(sym) {
            continue;
        }
        if let Some(owner) = new.owners.get(sym)
            && !new.attrs.contains_key(&(sym.clone(), *rule))
        {
            out.push(finding(*rule, owner.line, sym, text.clone(), String::new(), owner.in_test));
        }
    }
}

pub(super) fn compare_statics(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    for (sym, (omut, otext)) in &old.statics {
        if let (Some((true, ntext)), Some(owner)) = (new.statics.get(sym), new.owners.get(sym))
            && !omut
        {
            out.push(finding(STATIC_MADE_MUT, owner.line, sym, otext.clone(), ntext.clone(), owner.in_test));
        }
    }
}

pub(super) fn compare_unsafe(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    let empty = Vec::new();
    // Every unsafe site of the old file, by text: a site that only moved (its function
    // renamed, split or reordered) was not introduced.
    let mut old_sites: Vec<&str> = old.unsafe_sites.values().flatten().map(|s| s.1.as_str()).collect();
    for (owner, sites) in &new.unsafe_sites {
        let before = old.unsafe_sites.get(owner).unwrap_or(&empty);
        let mut fresh = None;
        for s in sites {
            match old_sites.iter().position(|k| *k == s.1) {
                Some(i) => {
                    old_sites.swap_remove(i);
                }
                None => fresh = fresh.or(Some(s)),
            }
        }
        // Only an owner that was entirely safe counts: more or edited `unsafe` inside
        // code that already had some (blocks added inside an `unsafe fn` for the
        // `unsafe_op_in_unsafe_fn` lint, say) introduces no new kind of risk.
        let Some((line, _, shown)) = fresh.filter(|_| before.is_empty()) else { continue };
        let in_test = new.owners.get(owner).is_some_and(|o| o.in_test);
        out.push(finding(UNSAFE_INTRODUCED, *line, owner, String::new(), shown.clone(), in_test));
    }
}

pub(super) fn compare_forbid(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    if let (Some((line, text)), None) = (&old.forbid_unsafe, &new.forbid_unsafe) {
        let after = new.unsafe_lint.clone().unwrap_or_default();
        out.push(finding(FORBID_UNSAFE_REMOVED, *line, "crate", text.clone(), after, false));
    }
}

/// A public enum without `#[non_exhaustive]` that gained a variant: every exhaustive
/// `match` on it elsewhere was written for the old set of values.
pub(super) fn compare_variants(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    for (sym, (old_open, old_variants)) in &old.variants {
        let Some((new_open, new_variants)) = new.variants.get(sym) else { continue };
        if *old_open || *new_open {
            continue;
        }
        let known: BTreeSet<&str> = old_variants.iter().map(|v| v.0.as_str()).collect();
        let kept = new_variants.iter().filter(|v| known.contains(v.0.as_str())).count();
        // A renamed variant is not a new value: the old ones must all stay.
        if kept < known.len() {
            continue;
        }
        let in_test = new.owners.get(sym).is_some_and(|o| o.in_test);
        let before = old_variants.iter().map(|v| v.0.as_str()).collect::<Vec<_>>().join(" | ");
        for (name, line) in new_variants.iter().filter(|v| !known.contains(v.0.as_str())) {
            let after = format!("{before} | {name}");
            out.push(finding(ENUM_VARIANT_ADDED, *line, sym, before.clone(), after, in_test));
        }
    }
}
