//! `rust-newtype-unchecked-constructor`: a newtype (a tuple struct whose one field is
//! private to its module) that every constructor checked gains a way in that checks
//! nothing. The private field is what made the check an invariant: outside the module a
//! value exists only through the constructors, so when each of them refuses bad input
//! (`if !ok { return Err(..) }`, `assert!`, `bail!`), every value holds the check. A new
//! `impl From<String> for Email { fn from(s) -> Self { Self(s) } }` or a
//! `new_unchecked` lets any value in without it.
//!
//! Read from the walk's inventory ([`super::Inventory`]): the type is a newtype in both
//! versions (`T.0` is its only field and the struct is closed), its constructors are the
//! functions of its `impl` blocks (`T.name`) whose body builds it (`Self(` or `T(`, the
//! body squashed), and a constructor checks when the walk recorded a guard in it. The
//! finding needs at least one constructor before and all of them checking; it names each
//! function that builds the type in the new version without a guard and did not build it
//! before. Not findings: a function that reads `self` (it builds from a value that
//! already held the check: `clone`, `map`), a checked constructor losing its guard
//! (`rust-guard-removed` reports that), a type that had an unchecked constructor already.

use super::super::{Family, Language, RawFinding, RuleDef, RuleId};
use super::{Inventory, compare::finding};

pub(crate) const UNCHECKED_CONSTRUCTOR: RuleId = RuleId::RustNewtypeUncheckedConstructor;

pub(crate) const RULE: RuleDef = RuleDef {
    id: UNCHECKED_CONSTRUCTOR,
    languages: &[Language::Rust],
    family: Family::CheckRemoved,
    description: "A newtype whose every constructor checked its input (its field private to the module) gains a constructor that checks nothing (`impl From<String>`, `new_unchecked`).",
    severity: super::super::Severity::High,
    message: "{symbol}: `{after}` builds the type without the check every constructor made (`{before}`); values that fail it can now exist",
    invariant: "Every value of the type passed the check of one of its constructors: the field is private, so no other code could build one.",
};

/// Whether the squashed body `body` builds `name`: `Self(` or `name(`, not glued to an
/// identifier before it (`MySelf(`, `to_name(`).
fn builds(body: &str, name: &str) -> bool {
    ["Self", name].iter().any(|n| {
        let needle = format!("{n}(");
        body.match_indices(&needle)
            .any(|(at, _)| !body[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':'))
    })
}

/// Whether the squashed body reads `self` (a method of a value that exists already).
fn reads_self(body: &str) -> bool {
    body.match_indices("self").any(|(at, _)| {
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        !body[..at].chars().next_back().is_some_and(ident) && !body[at + 4..].chars().next().is_some_and(ident)
    })
}

/// The newtypes of an inventory: the closed structs whose only field is `.0`.
fn newtypes(inv: &Inventory) -> impl Iterator<Item = &String> {
    let field = |t: &str, i: u8| inv.slots.contains_key(&(format!("{t}.{i}"), "field".to_string()));
    inv.closed.iter().filter(move |t| field(t, 0) && !field(t, 1))
}

/// The constructors of `ty` in `inv`: (function symbol, checks) for each function of its
/// `impl` blocks whose body builds it and does not read `self`.
fn constructors<'i>(inv: &'i Inventory, ty: &str) -> Vec<(&'i String, bool)> {
    let name = ty.rsplit('.').next().unwrap_or(ty);
    let prefix = format!("{ty}.");
    inv.arith
        .iter()
        .filter(|(f, _)| f.strip_prefix(&prefix).is_some_and(|rest| !rest.contains('.')))
        .filter_map(|(f, a)| a.body.as_deref().map(|b| (f, b)))
        .filter(|(_, b)| builds(b, name) && !reads_self(b))
        .map(|(f, b)| (f, inv.guards.get(f).is_some_and(|g| !g.is_empty()) || refuses(b)))
        .collect()
}

/// Whether a squashed body may refuse its input without a guard the walk records: an
/// early `return None` / `return Err(..)`, or `?` passing a failure on (`s.parse()?`).
/// Read generously: a constructor that may check is never reported.
fn refuses(body: &str) -> bool {
    body.contains("returnNone")
        || body.contains("returnErr")
        || body.match_indices('?').any(|(at, _)| body[at + 1..].starts_with([';', ')', '.', ',', '}']))
}

/// Whether a function body's text may build a tuple struct (`Self(..)`, `Email(..)`): a
/// cheap test before the walk, so that such a body is read rather than left out.
pub(super) fn may_build(body: &str) -> bool {
    let b = body.as_bytes();
    memchr::memchr_iter(b'(', b).any(|at| {
        let start = b[..at].iter().rposition(|c| !(c.is_ascii_alphanumeric() || *c == b'_')).map_or(0, |p| p + 1);
        std::str::from_utf8(&b[start..at]).is_ok_and(|w| builds_by_name(w, &b[..start]))
    })
}

/// Whether a body's text may build one of the types `tys` (by symbol): `Self(` or a
/// type's name followed by `(`.
pub(super) fn may_build_any(body: &str, tys: &std::collections::BTreeSet<&str>) -> bool {
    let squashed = super::super::syntax::compact(body);
    body.contains("Self(") || tys.iter().any(|t| builds(&squashed, t.rsplit('.').next().unwrap_or(t)))
}

/// Whether the word `w`, followed by `(` and preceded by `head`, may build a tuple
/// struct: a capitalised name that is not a path's last segment (`Value::String(`, an
/// enum's variant) nor one of the prelude's wrappers.
pub(super) fn builds_by_name(w: &str, head: &[u8]) -> bool {
    w.starts_with(|c: char| c.is_ascii_uppercase())
        && !matches!(w, "Some" | "Ok" | "Err" | "Box" | "Vec")
        && !head.ends_with(b"::")
}

/// The types (by symbol) that a function of `inv` builds without a guard and without
/// reading `self`: the window must see the type and its other constructors.
pub(super) fn unchecked_builders(inv: &Inventory) -> impl Iterator<Item = &str> {
    inv.arith.iter().filter_map(|(f, a)| {
        let (ty, _) = f.rsplit_once('.')?;
        let name = ty.rsplit('.').next().unwrap_or(ty);
        let body = a.body.as_deref()?;
        let guarded = inv.guards.get(f).is_some_and(|g| !g.is_empty()) || refuses(body);
        (builds(body, name) && !reads_self(body) && !guarded).then_some(ty)
    })
}

pub(super) fn compare(old: &Inventory, new: &Inventory, out: &mut Vec<RawFinding>) {
    for ty in newtypes(new).filter(|t| newtypes(old).any(|o| o == *t)) {
        let before = constructors(old, ty);
        if before.is_empty() || before.iter().any(|(_, checks)| !checks) {
            continue;
        }
        let checked: Vec<&str> = before.iter().map(|(f, _)| f.rsplit('.').next().unwrap_or(f)).collect();
        for (f, checks) in constructors(new, ty) {
            if checks || before.iter().any(|(g, _)| *g == f) {
                continue;
            }
            let (line, in_test) = new.owners.get(f).map_or((1, false), |o| (o.line, o.in_test));
            let name = f.rsplit('.').next().unwrap_or(f);
            let head = new.fn_vis.get(f).map_or_else(|| format!("fn {name}"), |v| v.1.clone());
            let was = format!("{ty}: checked in {}", checked.join(", "));
            out.push(finding(UNCHECKED_CONSTRUCTOR, line, f, was, head, in_test));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn building_is_told_from_names_that_end_alike() {
        assert!(builds("{Ok(Self(s))}", "Email"));
        assert!(builds("{Email(s.to_lowercase())}", "Email"));
        assert!(!builds("{MySelf(s)}", "Email"));
        assert!(!builds("{to_email(s)}", "Email"));
        assert!(!builds("{Self::new(s)}", "Email"));
        assert!(!builds("{other::Email(s)}", "Email"));
    }

    #[test]
    fn a_refusal_is_read_without_a_guard() {
        assert!(refuses("{if v<0{returnNone;}Some(Cents(v))}"));
        assert!(refuses("{letn:u16=s.parse()?;Ok(Self(n))}"));
        assert!(!refuses("{Self(s)}"));
        assert!(!refuses("{Self(if a {b} else {c})}"));
    }

    #[test]
    fn self_is_read_as_a_word() {
        assert!(reads_self("{Self(self.0.trim().to_string())}"));
        assert!(!reads_self("{Self(myself)}"));
        assert!(!reads_self("{Self(s)}"));
    }
}
