//! Checks of a zod chain that stand in for its bounds in another spelling: the schema
//! a `.pipe(...)` hands the value to (`z.string().transform(clean).pipe(z.string()
//! .min(1).max(255))` keeps both bounds), and a fully anchored `.regex(/^\d{6}$/)`
//! whose every match has a length within the old `.length(6)` (a bound rewritten as a
//! pattern that implies it is no loosening), and a bound written with a numeric
//! constant of the file (`.max(MAX_LENGTH)`), read as the constant's value.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::super::regex_weaker;
use super::super::syntax::{compact, field, kind_of, named_children, strip_parens, text};
use super::{Bound, MAX_RENDER, Slot, cap, declarators, number_literal, read_method};

/// How many methods of a piped schema are read. A chain a person writes holds a
/// handful; the cap bounds the loop on generated text.
const MAX_PIPED_METHODS: usize = 64;

/// Reads the file's top-level numeric constants and gives each bound written with
/// one (`.max(MAX_LENGTH)`, `const MAX_LENGTH = 3000;`) that constant's value, so
/// that raising the constant is judged as raising the bound. A constant declared
/// twice, with `let`, or as anything but a number literal, stays unread (only the
/// bound's removal is judged).
pub(super) fn resolve_bounds(
    slots: &mut BTreeMap<String, Slot>,
    consts: &mut BTreeMap<String, Option<f64>>,
    root: Node,
    src: &str,
) {
    for child in named_children(root) {
        let decl = match kind_of(child) {
            "export_statement" => field(child, "declaration"),
            _ => Some(child),
        };
        let Some(decl) = decl.filter(|d| kind_of(*d) == "lexical_declaration") else { continue };
        // Only `const`: a `let` may be reassigned before the schema reads it.
        if !text(decl, src).starts_with("const") {
            continue;
        }
        for (name, value) in declarators(decl, src) {
            let v = number_literal(&compact(text(strip_parens(value), src)));
            if v.is_nan() {
                continue;
            }
            let twice = consts.contains_key(&name);
            consts.insert(name, (!twice).then_some(v));
        }
    }
    for slot in slots.values_mut() {
        let (lower, upper) = slot.bound_names.clone();
        let mut shown = BTreeSet::new();
        for (name, bound) in [(lower, &mut slot.lower), (upper, &mut slot.upper)] {
            if let (Some(name), Some(b)) = (name, bound.as_mut())
                && let Some(Some(v)) = consts.get(&name)
            {
                b.value = *v;
                shown.insert(format!("{name} = {v}"));
            }
        }
        // The value beside the chain: the chain reads the same in both versions.
        if !shown.is_empty() {
            let values: Vec<String> = shown.into_iter().collect();
            slot.text = cap(&format!("{} ({})", slot.text, values.join(", ")), MAX_RENDER);
        }
    }
}

/// The bounds, flags and formats of the schema `inner` (the argument of `.pipe`), added
/// to `slot` where it declares none of its own. Only `inner`'s own method chain is read
/// (a loop, never a recursion): a schema nested inside it (an object's property, a
/// further pipe's argument) is not.
pub(super) fn pipe(slot: &mut Slot, inner: Node, src: &str) {
    let mut piped = Slot::default();
    let mut ignored = Vec::new();
    let mut cur = strip_parens(inner);
    for _ in 0..MAX_PIPED_METHODS {
        if kind_of(cur) != "call_expression" {
            break;
        }
        let (Some(func), Some(args)) = (field(cur, "function"), field(cur, "arguments")) else {
            break;
        };
        let (Some(object), Some(property)) = (field(func, "object"), field(func, "property")) else {
            break;
        };
        let name = text(property, src);
        // Only what refuses a value: a nested schema's properties or alternatives are
        // not this slot's.
        if !matches!(name, "extend" | "and" | "or" | "pipe" | "optional" | "nullable" | "nullish" | "default") {
            read_method(&mut piped, &mut ignored, name, args, src);
        }
        cur = strip_parens(object);
    }
    if slot.lower.is_none() {
        slot.lower = piped.lower;
    }
    if slot.upper.is_none() {
        slot.upper = piped.upper;
    }
    if slot.regex_len.is_none() {
        slot.regex_len = piped.regex_len;
    }
    slot.flags.extend(piped.flags);
    slot.formats.extend(piped.formats);
}

/// The lengths a `.regex(...)` argument admits, when it is a regular-expression literal
/// anchored at both ends whose pieces are all single characters or classes, each with
/// at most a quantifier (`/^\d{6}$/` is 6 to 6, `/^[a-z]+$/` 1 or more); `None` for
/// anything else (a group, an alternative, the `m` flag that makes the anchors match
/// at each line, a non-ASCII character whose length in UTF-16 units is not read here).
pub(super) fn regex_length(arg: &str) -> Option<(u64, Option<u64>)> {
    let body = regex_weaker::literal(arg)?;
    let flags = &arg[body.len() + 2..];
    if flags.contains('m') || !body.is_ascii() {
        return None;
    }
    let inner = body.strip_prefix('^')?.strip_suffix('$')?;
    if inner.ends_with('\\') {
        return None;
    }
    let bytes = inner.as_bytes();
    let (mut least, mut most) = (0u64, Some(0u64));
    let mut i = 0;
    while i < bytes.len() {
        // One atom: an escape, a class, `.` or a plain character.
        match bytes[i] {
            // A zero-width assertion, a back-reference or an escape longer than one
            // character (`\x41`, `\u{1F600}`, `\p{L}`) is not read.
            b'\\'
                if matches!(
                    bytes.get(i + 1),
                    Some(b'b' | b'B' | b'x' | b'u' | b'c' | b'p' | b'P' | b'k' | b'0'..=b'9')
                ) =>
            {
                return None;
            }
            b'\\' => i += 2,
            b'[' => {
                let mut j = i + 1;
                while j < bytes.len() && bytes[j] != b']' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                if j >= bytes.len() {
                    return None;
                }
                i = j + 1;
            }
            b'(' | b')' | b'|' | b'^' | b'$' | b'*' | b'+' | b'?' | b'{' | b'}' => return None,
            _ => i += 1,
        }
        // Its quantifier, if any, and a lazy `?` after it (which admits the same lengths).
        let start = i.min(bytes.len());
        let end = match bytes.get(start) {
            Some(b'*' | b'+' | b'?') => start + 1,
            Some(b'{') => start + inner[start..].find('}')? + 1,
            _ => start,
        };
        let (lo, hi) = regex_weaker::quantifier_range(&inner[start..end])?;
        i = end + usize::from(end > start && bytes.get(end) == Some(&b'?'));
        least = least.checked_add(lo)?;
        most = match (most, hi) {
            (Some(m), Some(h)) => Some(m.checked_add(h)?),
            _ => None,
        };
    }
    Some((least, most))
}

/// Whether the new version's pattern holds the old version's length bounds: every
/// value it admits has a length the old `lower` and `upper` admitted.
pub(super) fn pattern_holds(len: Option<(u64, Option<u64>)>, lower: &Option<Bound>, upper: &Option<Bound>) -> bool {
    let Some((least, most)) = len else {
        return false;
    };
    // Bounds are small integers here; the casts read them exactly.
    let above = |b: &Bound| if b.exclusive { least as f64 > b.value } else { least as f64 >= b.value };
    let below = |b: &Bound, m: u64| if b.exclusive { (m as f64) < b.value } else { m as f64 <= b.value };
    lower.as_ref().is_none_or(above) && upper.as_ref().is_none_or(|b| most.is_some_and(|m| below(b, m)))
}

/// When the old slot `b` was a closed set (`z.enum([...])`, literals, a union) and the
/// new one `a` names a top-level schema of the new version (`ref:Name`) that is a
/// closed set holding old members and more: the new slot's text with the set it
/// names (`Source = z.enum([...])`). A set whose members were all replaced is renamed,
/// not widened, as on one slot.
pub(super) fn named_set_gained(b: &Slot, a: &Slot, new: &super::Inventory) -> Option<String> {
    let old = b.members.as_ref()?;
    let name = a.base.strip_prefix("ref:")?;
    let named = new.slots.get(name)?;
    let members = named.members.as_ref()?;
    (!members.is_subset(old) && !members.is_disjoint(old)).then(|| format!("{} ({name} = {})", a.text, named.text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_of_anchored_patterns_are_read() {
        assert_eq!(regex_length(r"/^\d{6}$/"), Some((6, Some(6))));
        assert_eq!(regex_length(r"/^[a-z0-9_-]{3,32}$/i"), Some((3, Some(32))));
        assert_eq!(regex_length(r"/^a+b?$/"), Some((1, None)));
        assert_eq!(regex_length(r"/^\w*?x$/"), Some((1, None)));
        for other in [
            r"/\d{6}/",
            r"/^\d{6}/",
            r"/^(ab){2}$/",
            r"/^a|b$/",
            r"/^\d{6}$/m",
            "pattern",
            r"/^\bab$/",
            r"/^\x41$/",
            r"/^é$/",
        ] {
            assert_eq!(regex_length(other), None, "{other}");
        }
    }

    #[test]
    fn a_pattern_holds_bounds_only_within_them() {
        let b = |value, exclusive| Some(Bound { value, exclusive });
        assert!(pattern_holds(Some((6, Some(6))), &b(6.0, false), &b(6.0, false)));
        assert!(!pattern_holds(Some((6, Some(7))), &b(6.0, false), &b(6.0, false)));
        assert!(!pattern_holds(Some((1, None)), &None, &b(64.0, false)));
        assert!(!pattern_holds(Some((0, Some(5))), &b(0.0, true), &None));
        assert!(!pattern_holds(None, &b(1.0, false), &None));
    }
}
